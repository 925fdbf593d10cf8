// The Vulkan frame's mesh pass (internal to the renderer, not public API): the meshes of a frame
// (render/mesh.h) packed into one buffer (vertex data, indices, textures, silhouette masks, draw records),
// copied to device-local memory, skinned by the frame's skin pass where they are skinned, and drawn first by
// the graphics pipeline with a depth buffer; the colour and view depth it leaves are what the tile raster
// composites the splats against. An anti-aliased layer (RenderMesh::samples > 1) draws again once per sample
// of its pattern, the meshes that ask for samples shifted to each sample's position, each pass copied out and
// folded into the pixels' state by the resolve dispatch (mesh_resolve.comp), the last writing the resolved
// fragment over the centre pass's. CPU reference: rasterizeMeshes (render/mesh.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "deform/deform_shared.h"
#include "gpu/gpu.h"
#include "render/vulkan_renderer.h"

namespace sf {

class VulkanResidency;
class VulkanStaging;

class VulkanMeshPass {
 public:
  explicit VulkanMeshPass(gpu::Context& ctx) : ctx_(ctx) {}

  // The mesh pass shades lit, camera-lit and unlit meshes; the other modes (dataset views) are the CPU
  // rasterizer's only. Throws sf::Error naming the first mesh it cannot draw.
  static void checkShading(std::span<const RenderMesh> meshes);

  // This frame's meshes: the targets made for the camera's size and the meshes packed (upload); a frame
  // without meshes forgets the last one's skins and vertices. Returns the draws' triangle counts (the draw
  // records sit at *draws_offset of the mesh data). `residency` has this frame's static inputs (skinned
  // meshes).
  std::vector<uint32_t> prepare(std::span<const RenderMesh> meshes, const Camera& cam,
                                const VulkanResidency& residency, size_t* draws_offset);

  // Vertex data, indices, textures and draw records to device-local memory (the frame's "mesh data" pass).
  void recordUpload(VkCommandBuffer cmd) const;
  // Draws the meshes into the targets and copies colour and view depth to the buffers the raster reads
  // (an anti-aliased layer: its sample passes and their resolve too).
  void record(VkCommandBuffer cmd, std::span<const uint32_t> triangles, size_t draws_offset,
              const Camera& cam) const;

  // The last frame's mesh vertices as drawn (VulkanFrameDebug::mesh_positions, mesh_normals).
  void readDebug(VulkanStaging& staging, VulkanFrameDebug& d) const;

  // Every target and buffer released (VulkanRenderer::Impl::dropResources); the pipeline stays.
  void drop();

  // The colour and view depth the raster reads (GpuFrame::mesh_color, mesh_depth).
  gpu::Buffer color, depth;
  // This frame's skinned meshes: the skin pass's dispatches (outputs in the device mesh data).
  std::vector<deform_layout::SkinPush> skins;

 private:
  void ensureTargets(uint32_t w, uint32_t h);
  void ensureSampleBuffers(uint32_t w, uint32_t h);
  // One pass of the draws into the targets, copied to `out_color` / `out_depth`: at the pixel centres
  // (`sample` < 0) or at sample `sample` of the layer's pattern (the meshes drawn at samples shifted there).
  void recordPass(VkCommandBuffer cmd, std::span<const uint32_t> triangles, size_t draws_offset,
                  const Camera& cam, int sample, const gpu::Buffer& out_color,
                  const gpu::Buffer& out_depth) const;
  // Packs the meshes' vertex data, textures and draw records into host_data_; returns the draws'
  // triangle counts (the draw records sit at the returned offset).
  std::vector<uint32_t> upload(std::span<const RenderMesh> meshes, const Camera& cam,
                               const VulkanResidency& residency, size_t* draws_offset);

  gpu::Context& ctx_;
  // Mesh pass (created on the first frame with meshes): render targets, their copies the raster reads,
  // and one host-visible buffer with the frame's vertex data, textures and draw records.
  std::unique_ptr<gpu::GraphicsPipeline> pipeline_;
  // An anti-aliased layer (this frame's meshLayerSamples > 1): its sample count, which meshes are drawn at
  // the samples, the resolve pipeline and its buffers (made on the first such frame).
  uint32_t samples_ = 1;
  std::vector<uint8_t> at_samples_;
  std::unique_ptr<gpu::ComputePipeline> resolve_;
  gpu::Buffer sample_color_, sample_depth_, sample_sum_, sample_state_;
  size_t sample_pixels_ = 0;
  gpu::Image color_target_, depth_target_, zbuffer_;
  gpu::Buffer host_data_, device_data_;  // host_data_: host staging of device_data_
  size_t data_bytes_ = 0;
  struct MeshVertices {
    size_t positions, position_count, normals, normal_count;  // offsets in device_data_
  };
  std::vector<MeshVertices> vertices_;  // per mesh of the last frame (readDebug)
};

}  // namespace sf
