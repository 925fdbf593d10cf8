// Small helpers the Vulkan renderer's files share (internal to the renderer, not public API): rounding, the
// row-major 3x4 copies the GPU records hold, the 16-byte aligned packing of per-frame data, and the one way
// a compute dispatch is recorded with the frame's push constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/math.h"
#include "gpu/gpu.h"
#include "render/gpu_shared.h"

namespace sf::vulkan_util {

inline uint32_t ceilDiv(uint64_t a, uint64_t b) {
  return static_cast<uint32_t>((a + b - 1) / b);
}

inline void copyRows(float dst[12], const Mat4& m) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) dst[r * 4 + c] = m.m[r][c];
}

// Appends `bytes` to a packing of mesh data, 16-byte aligned; returns the offset.
// `data` null reserves zeroed bytes.
inline size_t pack(std::vector<uint8_t>& out, const void* data, size_t bytes) {
  size_t at = (out.size() + 15) & ~size_t{15};
  out.resize(at + bytes);
  if (bytes && data) std::memcpy(out.data() + at, data, bytes);
  return at;
}

// A dispatch with push constants of the pass's own layout (GpuPush; preprocess: GpuPreprocessPush).
template <typename Push>
void dispatchWith(VkCommandBuffer cmd, const gpu::ComputePipeline& pl, const Push& p, uint32_t x,
                  uint32_t y = 1) {
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl.pipeline());
  vkCmdPushConstants(cmd, pl.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push), &p);
  if (x && y) vkCmdDispatch(cmd, x, y, 1);
}

inline void dispatch(VkCommandBuffer cmd, const gpu::ComputePipeline& pl, const gpu_layout::GpuPush& p,
                     uint32_t x, uint32_t y = 1) {
  dispatchWith(cmd, pl, p, x, y);
}

// A dispatch whose workgroup counts a pass wrote into the frame's counters (3 words at `counter_word`).
inline void dispatchIndirect(VkCommandBuffer cmd, const gpu::ComputePipeline& pl,
                             const gpu_layout::GpuPush& p, const gpu::Buffer& counters,
                             uint32_t counter_word) {
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl.pipeline());
  vkCmdPushConstants(cmd, pl.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(gpu_layout::GpuPush), &p);
  vkCmdDispatchIndirect(cmd, counters.buffer, counter_word * 4u);
}

}  // namespace sf::vulkan_util
