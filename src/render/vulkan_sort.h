// The Vulkan renderer's reusable GPU sort and scan (internal to the renderer, not public API): an exclusive
// scan of a uint array, a stable LSD radix sort of (hi, lo) key pairs with values (VulkanRenderer::sortPairs;
// CPU twin: render/radix_sort.h), and the pair buffers the frame's sorts work in (the tile lists' keys and
// values, and what only the radix sort uses). Each records into a caller's command buffer, with the barriers
// between its own dispatches only; the caller orders it with the rest of the frame.
#pragma once

#include <cstdint>
#include <memory>

#include "gpu/gpu.h"
#include "render/gpu_shared.h"

namespace sf {

class VulkanSort {
 public:
  // Throws sf::Error naming the device where its subgroups are not of 8..128 lanes.
  explicit VulkanSort(gpu::Context& ctx);

  // Subgroups per sort workgroup (GpuPush::subgroups of every pass of the frame).
  uint32_t subgroups() const { return sort_subgroups_; }

  // The frame's pair buffers (keys_lo, values and their alternates) for `capacity` pairs; with `radix`, also
  // what only the radix sort of sortPairs uses (keys_hi and its alternate, the histograms). Every buffer is
  // made before any is replaced, and the capacity recorded last, so a failed allocation changes nothing.
  void ensureKeys(uint64_t capacity, bool radix = false);
  // Releases the pair buffers and forgets their capacity (VulkanRenderer::Impl::dropResources).
  void dropKeys();

  // Exclusive scan in place of `data` (count read from `count_addr`), with `sums` as block sums; the
  // total lands at sums[blocks]. `blocks_word` >= 0 takes the block count from an indirect argument.
  // Barriers between its own dispatches only: the caller (the frame graph) orders it with the rest.
  // `push`: the frame's push constants; `counters`: its counters (the indirect arguments).
  void recordScan(VkCommandBuffer cmd, const gpu_layout::GpuPush& push, const gpu::Buffer& counters,
                  VkDeviceAddress data, VkDeviceAddress count_addr, VkDeviceAddress sums, uint32_t blocks,
                  int indirect_word) const;

  // Sort descriptor (counters[desc_word...]) for `count_addr`'s element count.
  void recordSortSetup(VkCommandBuffer cmd, const gpu_layout::GpuPush& push, const gpu::Buffer& counters,
                       VkDeviceAddress count_addr, uint32_t desc_word, uint32_t flags) const;

  // LSD radix sort of keys[0..5] as described by the descriptor at counters[desc_word] (the caller puts a
  // barrier after the setup that wrote it): `lo_passes` 8-bit passes over the low word, then `hi_passes`
  // over the high word; `carry` (SF_FLAG_CARRY_*) moves the other word along. Returns the number of
  // passes; an odd number leaves the result in the alternates. `at_most`: what the host knows of the
  // count (UINT64_MAX: nothing); a sort of at most SF_SMALL_SORT_MAX keys runs in one workgroup.
  int recordSort(VkCommandBuffer cmd, const gpu_layout::GpuPush& push, const gpu::Buffer& counters,
                 uint32_t desc_word, int lo_passes, int hi_passes, uint32_t carry,
                 uint64_t at_most = UINT64_MAX) const;

  // The pair buffers: keys_lo, keys_hi, values, then their alternates (keys_hi and keys_hi_alt, and the
  // histograms, only once a radix sort asked for them), for key_capacity pairs.
  uint32_t key_capacity = 0;
  gpu::Buffer keys[6], hist, hist_sums;

 private:
  gpu::Context& ctx_;
  gpu::ComputePipeline scan_reduce_, scan_blocks_, scan_apply_, sort_setup_, histogram_, scatter_;
  uint32_t sort_subgroups_ = 1;  // subgroups per sort workgroup
  // The one-workgroup sort for sorts the host knows to be small (null where the device's workgroup or shared
  // memory limits are below what it needs), and the subgroups of its workgroup.
  std::unique_ptr<gpu::ComputePipeline> small_sort_;
  uint32_t small_sort_subgroups_ = 0;
};

}  // namespace sf
