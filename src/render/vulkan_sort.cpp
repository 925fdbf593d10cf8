// The Vulkan renderer's GPU scan and radix sort, and the frame's pair buffers (see vulkan_sort.h).
#include "render/vulkan_sort.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "render/vulkan_util.h"

namespace sf {

namespace {

using namespace gpu_layout;
using namespace vulkan_util;

// SPIR-V of the scan and sort passes, compiled by glslc at build time (shaders/*.comp -> *.inc).
const uint32_t kScanReduce[] = {
#include "scan_reduce.inc"
};
const uint32_t kScanBlocks[] = {
#include "scan_blocks.inc"
};
const uint32_t kScanApply[] = {
#include "scan_apply.inc"
};
const uint32_t kSortSetup[] = {
#include "sort_setup.inc"
};
const uint32_t kRadixHistogram[] = {
#include "radix_histogram.inc"
};
const uint32_t kRadixScatter[] = {
#include "radix_scatter.inc"
};
const uint32_t kRadixSmall[] = {
#include "radix_small.inc"
};

}  // namespace

VulkanSort::VulkanSort(gpu::Context& ctx)
    : ctx_(ctx),
      scan_reduce_(ctx, kScanReduce, sizeof(GpuPush), SF_WG_SIZE, "scan_reduce"),
      scan_blocks_(ctx, kScanBlocks, sizeof(GpuPush), SF_WG_SIZE, "scan_blocks"),
      scan_apply_(ctx, kScanApply, sizeof(GpuPush), SF_WG_SIZE, "scan_apply"),
      sort_setup_(ctx, kSortSetup, sizeof(GpuPush), 1, "sort_setup"),
      histogram_(ctx, kRadixHistogram, sizeof(GpuPush), SF_SORT_WG, "radix_histogram", true),
      scatter_(ctx, kRadixScatter, sizeof(GpuPush), SF_SORT_WG, "radix_scatter", true) {
  const gpu::DeviceInfo& d = ctx.info();
  if (d.subgroup_size < 8 || d.subgroup_size > 128 || SF_SORT_WG % d.subgroup_size != 0)
    throw Error("Vulkan device " + d.name + ": subgroup size " + std::to_string(d.subgroup_size) +
                " unsupported (need 8..128)");
  sort_subgroups_ = SF_SORT_WG / d.subgroup_size;
  const uint32_t small_sort_wg = std::min<uint32_t>(1024, SF_SMALL_SORT_SUB_BLOCKS * d.subgroup_size);
  if (ctx.maxWorkgroupInvocations() >= small_sort_wg &&
      ctx.maxSharedMemory() >= SF_SMALL_SORT_SUB_BLOCKS * SF_RADIX * 4) {
    small_sort_ = std::make_unique<gpu::ComputePipeline>(ctx, kRadixSmall, sizeof(GpuPush), small_sort_wg,
                                                         "radix_small", true);
    small_sort_subgroups_ = small_sort_wg / d.subgroup_size;
  }
}

void VulkanSort::ensureKeys(uint64_t capacity, bool radix) {
  const bool have_radix = keys[1].size != 0;
  if (capacity <= key_capacity && keys[0].size && (!radix || have_radix)) return;
  capacity = std::max<uint64_t>({capacity, key_capacity, 1024});
  if (capacity > (1ull << 31)) throw Error("frame needs more than 2^31 tile keys");
  const char* names[6] = {"keys_lo", "keys_hi", "values", "keys_lo_alt", "keys_hi_alt", "values_alt"};
  const bool with_radix = radix || have_radix;
  gpu::Buffer made[6], made_hist, made_sums;
  for (int k = 0; k < 6; ++k)
    if (with_radix || (k != 1 && k != 4)) made[k] = ctx_.createBuffer(capacity * 4, false, names[k]);
  if (with_radix) {
    // sort_setup.comp's blocking: at most SF_SORT_TARGET_SUB_BLOCKS sub-blocks while it shortens them, and
    // blocks of SF_SORT_BLOCK keys beyond.
    const uint32_t blocks =
        std::max<uint32_t>(ceilDiv(capacity, SF_SORT_BLOCK), SF_SORT_TARGET_SUB_BLOCKS / sort_subgroups_);
    const uint64_t hist_entries = static_cast<uint64_t>(blocks) * sort_subgroups_ * SF_RADIX;
    made_hist = ctx_.createBuffer(hist_entries * 4, false, "radix histogram");
    made_sums =
        ctx_.createBuffer((ceilDiv(hist_entries, SF_SCAN_BLOCK) + 1) * 4, false, "histogram block sums");
  }
  for (int k = 0; k < 6; ++k) keys[k] = std::move(made[k]);
  hist = std::move(made_hist), hist_sums = std::move(made_sums);
  key_capacity = static_cast<uint32_t>(capacity);
}

void VulkanSort::dropKeys() {
  for (gpu::Buffer* b : {&hist, &hist_sums}) b->reset();
  for (gpu::Buffer& k : keys) k.reset();
  key_capacity = 0;
}

void VulkanSort::recordScan(VkCommandBuffer cmd, const GpuPush& push, const gpu::Buffer& counters,
                            VkDeviceAddress data, VkDeviceAddress count_addr, VkDeviceAddress sums,
                            uint32_t blocks, int indirect_word) const {
  GpuPush p = push;
  p.scan_data = data, p.scan_count = count_addr, p.scan_sums = sums;
  if (indirect_word >= 0)
    dispatchIndirect(cmd, scan_reduce_, p, counters, static_cast<uint32_t>(indirect_word));
  else
    dispatch(cmd, scan_reduce_, p, blocks);
  gpu::computeBarrier(cmd);
  dispatch(cmd, scan_blocks_, p, 1);
  gpu::computeBarrier(cmd);
  if (indirect_word >= 0)
    dispatchIndirect(cmd, scan_apply_, p, counters, static_cast<uint32_t>(indirect_word));
  else
    dispatch(cmd, scan_apply_, p, blocks);
}

void VulkanSort::recordSortSetup(VkCommandBuffer cmd, const GpuPush& push, const gpu::Buffer& counters,
                                 VkDeviceAddress count_addr, uint32_t desc_word, uint32_t flags) const {
  GpuPush p = push;
  p.scan_data = count_addr;
  p.scan_sums = counters.address + desc_word * 4u;
  p.flags = flags;
  dispatch(cmd, sort_setup_, p, 1);
}

int VulkanSort::recordSort(VkCommandBuffer cmd, const GpuPush& push, const gpu::Buffer& counters,
                           uint32_t desc_word, int lo_passes, int hi_passes, uint32_t carry,
                           uint64_t at_most) const {
  const VkDeviceAddress desc = counters.address + desc_word * 4u;
  const int passes = lo_passes + hi_passes;
  if (small_sort_ && at_most <= SF_SMALL_SORT_MAX) {
    GpuPush p = push;
    p.scan_count = desc;
    p.shift = static_cast<uint32_t>(lo_passes) | static_cast<uint32_t>(hi_passes) << 8;
    p.flags = carry;
    p.subgroups = small_sort_subgroups_;
    dispatch(cmd, *small_sort_, p, at_most > 0 ? 1u : 0u);
    return passes;
  }
  for (int pass = 0; pass < passes; ++pass) {
    if (pass > 0) gpu::computeBarrier(cmd);  // the previous pass's scatter
    GpuPush p = push;
    const bool hi = pass >= lo_passes;
    p.shift = static_cast<uint32_t>(8 * (hi ? pass - lo_passes : pass));
    p.flags = (pass % 2 ? SF_FLAG_SOURCE_ALT : 0u) | (hi ? SF_FLAG_KEY_HI : 0u) | carry;
    p.scan_data = hist.address;
    p.scan_count = desc;
    dispatchIndirect(cmd, histogram_, p, counters, desc_word + SF_SORT_DESC_DISPATCH_SORT);
    gpu::computeBarrier(cmd);
    recordScan(cmd, push, counters, hist.address, desc + SF_SORT_DESC_HIST_COUNT * 4, hist_sums.address, 0,
               static_cast<int>(desc_word + SF_SORT_DESC_DISPATCH_HSCAN));
    gpu::computeBarrier(cmd);
    dispatchIndirect(cmd, scatter_, p, counters, desc_word + SF_SORT_DESC_DISPATCH_SORT);
  }
  return passes;
}

}  // namespace sf
