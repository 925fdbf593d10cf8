// The Vulkan frame's mesh pass (see vulkan_mesh_pass.h).
#include "render/vulkan_mesh_pass.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "core/error.h"
#include "render/gpu_shared.h"
#include "render/mesh_shared.h"
#include "render/vulkan_residency.h"
#include "render/vulkan_util.h"

namespace sf {

namespace {

using namespace gpu_layout;
using deform_layout::SkinPush;
using namespace vulkan_util;

// SPIR-V of the mesh pipeline, compiled by glslc at build time (shaders/mesh.{vert,frag} -> *.inc).
const uint32_t kMeshVert[] = {
#include "mesh_vert.inc"
};
const uint32_t kMeshFrag[] = {
#include "mesh_frag.inc"
};
const uint32_t kMeshResolve[] = {
#include "mesh_resolve.inc"
};

constexpr VkFormat kMeshColorFormat = VK_FORMAT_R32G32B32A32_SFLOAT,
                   kMeshDepthValueFormat = VK_FORMAT_R32_SFLOAT, kMeshDepthFormat = VK_FORMAT_D32_SFLOAT;

}  // namespace

void VulkanMeshPass::checkShading(std::span<const RenderMesh> meshes) {
  for (size_t i = 0; i < meshes.size(); ++i)
    if (meshes[i].shading != MeshShading::kLit && meshes[i].shading != MeshShading::kUnlit &&
        meshes[i].shading != MeshShading::kCamera)
      throw Error("mesh " + std::to_string(i) + ": shading '" + meshShadingName(meshes[i].shading) +
                  "' is drawn by the CPU rasterizer only (rasterizeMeshes); the Vulkan mesh pass draws lit, "
                  "camera and unlit meshes");
}

std::vector<uint32_t> VulkanMeshPass::prepare(std::span<const RenderMesh> meshes, const Camera& cam,
                                              const VulkanResidency& residency, size_t* draws_offset) {
  skins.clear();
  vertices_.clear();
  samples_ = 1;
  at_samples_.clear();
  if (meshes.empty()) return {};
  ensureTargets(static_cast<uint32_t>(cam.width), static_cast<uint32_t>(cam.height));
  std::vector<uint32_t> triangles = upload(meshes, cam, residency, draws_offset);  // validates the meshes
  samples_ = meshLayerSamples(meshes);
  for (const RenderMesh& m : meshes) at_samples_.push_back(m.samples > 1 ? 1 : 0);
  if (samples_ > 1) ensureSampleBuffers(static_cast<uint32_t>(cam.width), static_cast<uint32_t>(cam.height));
  return triangles;
}

void VulkanMeshPass::ensureSampleBuffers(uint32_t w, uint32_t h) {
  if (!resolve_)
    resolve_ = std::make_unique<gpu::ComputePipeline>(ctx_, kMeshResolve,
                                                      static_cast<uint32_t>(sizeof(GpuMeshResolvePush)),
                                                      SF_MESH_RESOLVE_WG, "mesh resolve");
  const size_t pixels = static_cast<size_t>(w) * h;
  if (pixels == sample_pixels_) return;
  const VkDeviceSize n = static_cast<VkDeviceSize>(pixels);
  sample_color_ = ctx_.createBuffer(n * 16, false, "mesh sample colour");
  sample_depth_ = ctx_.createBuffer(n * 4, false, "mesh sample depth");
  sample_sum_ = ctx_.createBuffer(n * 16, false, "mesh sample sums");
  sample_state_ = ctx_.createBuffer(n * 8, false, "mesh sample state");
  sample_pixels_ = pixels;
}

void VulkanMeshPass::ensureTargets(uint32_t w, uint32_t h) {
  if (!pipeline_) {
    VkFormatProperties fp;
    vkGetPhysicalDeviceFormatProperties(ctx_.physicalDevice(), kMeshDepthFormat, &fp);
    if (!(fp.optimalTilingFeatures & VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT))
      throw Error("Vulkan device " + ctx_.info().name +
                  " cannot render to a D32_SFLOAT depth buffer; meshes cannot be drawn on it");
    const VkFormat colors[2] = {kMeshColorFormat, kMeshDepthValueFormat};
    pipeline_ = std::make_unique<gpu::GraphicsPipeline>(ctx_, kMeshVert, kMeshFrag,
                                                        static_cast<uint32_t>(sizeof(GpuMeshPush)), colors,
                                                        kMeshDepthFormat, VK_COMPARE_OP_GREATER, "mesh");
  }
  if (color_target_.width == w && color_target_.height == h) return;
  const VkImageUsageFlags color_usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
  color_target_ =
      ctx_.createImage(w, h, kMeshColorFormat, color_usage, VK_IMAGE_ASPECT_COLOR_BIT, "mesh colour target");
  depth_target_ = ctx_.createImage(w, h, kMeshDepthValueFormat, color_usage, VK_IMAGE_ASPECT_COLOR_BIT,
                                   "mesh view-depth target");
  zbuffer_ = ctx_.createImage(w, h, kMeshDepthFormat, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                              VK_IMAGE_ASPECT_DEPTH_BIT, "mesh depth buffer");
  color = ctx_.createBuffer(static_cast<VkDeviceSize>(w) * h * 16, false, "mesh colour");
  depth = ctx_.createBuffer(static_cast<VkDeviceSize>(w) * h * 4, false, "mesh depth");
}

std::vector<uint32_t> VulkanMeshPass::upload(std::span<const RenderMesh> meshes, const Camera& cam,
                                             const VulkanResidency& residency, size_t* draws_offset) {
  std::vector<uint8_t> bytes;
  std::vector<GpuMeshDraw> draws(meshes.size());
  std::vector<size_t> offs(meshes.size() * 7, 0);
  std::vector<uint32_t> triangles(meshes.size());
  std::vector<const MeshTexture*> textures;
  std::vector<size_t> texture_offsets;
  struct MeshSkin {
    size_t mesh;
    SkinPush push;
    size_t palette, weights;  // offsets of the frame's palette and morph weights
  };
  std::vector<MeshSkin> mesh_skins;
  for (size_t i = 0; i < meshes.size(); ++i) {
    const RenderMesh& m = meshes[i];
    if (std::string why = m.validate(); !why.empty()) throw Error("mesh " + std::to_string(i) + ": " + why);
    if (m.triangleCount() > UINT32_MAX / 3) throw Error("mesh " + std::to_string(i) + ": too many triangles");
    triangles[i] = m.opacity > 0 ? static_cast<uint32_t>(m.triangleCount()) : 0u;  // opacity 0: nothing drawn
    std::vector<uint32_t> seq;
    std::span<const uint32_t> idx = m.indices;
    if (idx.empty()) {
      seq.resize(m.vertexCount());
      for (size_t k = 0; k < seq.size(); ++k) seq[k] = static_cast<uint32_t>(k);
      idx = seq;
    }
    size_t* o = &offs[i * 7];
    if (!m.skin.empty()) {  // vertices written by the frame's skin pass
      o[0] = pack(bytes, nullptr, m.skin.positions.size_bytes());
      o[1] = pack(bytes, nullptr, m.skin.normals.size_bytes());
      mesh_skins.push_back({i, residency.skinPush(m.skin, true), 0, 0});
      mesh_skins.back().palette = VulkanResidency::packSkinFrame(m.skin, bytes, &mesh_skins.back().weights);
    } else {
      o[0] = pack(bytes, m.positions.data(), m.positions.size_bytes());
      o[1] = pack(bytes, m.normals.data(), m.normals.size_bytes());
    }
    o[2] = pack(bytes, m.uvs.data(), m.uvs.size_bytes());
    o[3] = pack(bytes, m.colors.data(), m.colors.size_bytes());
    o[4] = pack(bytes, idx.data(), idx.size_bytes());
    if (m.texture && !m.uvs.empty()) {
      auto it = std::find(textures.begin(), textures.end(), m.texture);
      if (it == textures.end()) {
        textures.push_back(m.texture);
        texture_offsets.push_back(pack(bytes, m.texture->rgba.data(), m.texture->rgba.size()));
        it = textures.end() - 1;
      }
      o[5] = texture_offsets[static_cast<size_t>(it - textures.begin())];
    }
    const std::vector<std::array<float, 2>> mask = projectMeshMask(m, cam);  // in pixels, as the CPU's
    o[6] = pack(bytes, mask.data(), mask.size() * sizeof(mask[0]));
    GpuMeshDraw& d = draws[i];
    d.mask_count = static_cast<uint32_t>(mask.size());
    d.opacity = m.opacity;
    d.mask_rim = m.mask_rim * static_cast<float>(cam.width);
    const Mat4 to_view = cam.world_to_camera * m.object_to_world;
    copyRows(d.object_to_view, to_view);
    copyRows(d.normal_to_view, Mat4::fromLinearTranslation(transpose(inverse(to_view.linear())), Vec3{}));
    for (size_t c = 0; c < 4; ++c) d.base_color[c] = m.base_color[c];
    d.flags = (m.hasNormals() ? SF_MESH_HAS_NORMALS : 0u) | (m.uvs.empty() ? 0u : SF_MESH_HAS_UVS) |
              (m.colors.empty() ? 0u : SF_MESH_HAS_COLORS) |
              (m.texture && !m.uvs.empty() ? SF_MESH_HAS_TEXTURE : 0u) |
              (m.shading == MeshShading::kUnlit ? SF_MESH_UNLIT : 0u) |
              (m.shading == MeshShading::kCamera ? SF_MESH_CAMERA_LIT : 0u);
    if (d.flags & SF_MESH_HAS_TEXTURE) {
      d.tex_width = static_cast<uint32_t>(m.texture->width),
      d.tex_height = static_cast<uint32_t>(m.texture->height);
      d.wrap_s = m.texture->wrap_s, d.wrap_t = m.texture->wrap_t;
    }
  }
  *draws_offset = pack(bytes, draws.data(), draws.size() * sizeof(GpuMeshDraw));
  if (host_data_.size < bytes.size()) {
    const VkDeviceSize size = std::max<VkDeviceSize>(bytes.size() + bytes.size() / 2, 1 << 16);
    host_data_ = ctx_.createBuffer(size, true, "mesh data staging");
    device_data_ = ctx_.createBuffer(size, false, "mesh data");
  }
  data_bytes_ = bytes.size();
  // Addresses are known only now: patch them into the packed draw records (they point into the
  // device-local copy the frame makes first).
  auto* packed = reinterpret_cast<GpuMeshDraw*>(bytes.data() + *draws_offset);
  for (size_t i = 0; i < meshes.size(); ++i) {
    GpuMeshDraw d = draws[i];
    const size_t* o = &offs[i * 7];
    const VkDeviceAddress base = device_data_.address;
    d.positions = base + o[0], d.normals = base + o[1], d.uvs = base + o[2];
    d.colors = base + o[3], d.indices = base + o[4], d.texels = base + o[5], d.mask = base + o[6];
    std::memcpy(&packed[i], &d, sizeof(d));
  }
  vertices_.clear();
  for (size_t i = 0; i < meshes.size(); ++i)
    vertices_.push_back({offs[i * 7], meshes[i].vertexCount(), offs[i * 7 + 1],
                         meshes[i].hasNormals() ? meshes[i].vertexCount() : 0});
  skins.clear();
  for (MeshSkin& k : mesh_skins) {
    VulkanResidency::patchSkinFrame(k.push, device_data_.address + k.palette,
                                    device_data_.address + k.weights);
    k.push.out_positions = device_data_.address + offs[k.mesh * 7];
    k.push.out_normals = device_data_.address + offs[k.mesh * 7 + 1];
    skins.push_back(k.push);
  }
  std::memcpy(host_data_.mapped, bytes.data(), bytes.size());
  return triangles;
}

void VulkanMeshPass::recordUpload(VkCommandBuffer cmd) const {
  VkBufferCopy copy{0, 0, data_bytes_};
  vkCmdCopyBuffer(cmd, host_data_.buffer, device_data_.buffer, 1, &copy);
}

void VulkanMeshPass::record(VkCommandBuffer cmd, std::span<const uint32_t> triangles, size_t draws_offset,
                            const Camera& cam) const {
  recordPass(cmd, triangles, draws_offset, cam, -1, color, depth);
  if (samples_ > 1) {
    const uint32_t pixels = static_cast<uint32_t>(sample_pixels_);
    for (uint32_t s = 0; s < samples_; ++s) {
      // (The barrier closing the previous pass or resolve lets this pass's copies overwrite what it read.)
      recordPass(cmd, triangles, draws_offset, cam, static_cast<int>(s), sample_color_, sample_depth_);
      GpuMeshResolvePush p{};
      p.color = color.address, p.depth = depth.address;
      p.sample_color = sample_color_.address, p.sample_depth = sample_depth_.address;
      p.sum = sample_sum_.address, p.state = sample_state_.address;
      p.pixels = pixels, p.sample_index = s, p.samples = samples_;
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, resolve_->pipeline());
      vkCmdPushConstants(cmd, resolve_->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(p), &p);
      vkCmdDispatch(cmd, ceilDiv(pixels, SF_MESH_RESOLVE_WG), 1, 1);
      gpu::computeBarrier(cmd);
    }
  }
}

void VulkanMeshPass::recordPass(VkCommandBuffer cmd, std::span<const uint32_t> triangles, size_t draws_offset,
                                const Camera& cam, int sample, const gpu::Buffer& out_color,
                                const gpu::Buffer& out_depth) const {
  float jx = 0, jy = 0;  // the sample's offset from the pixel centre
  if (sample >= 0) {
    const std::array<float, 2> at = meshSamplePattern(samples_)[static_cast<size_t>(sample)];
    jx = at[0] - 0.5f, jy = at[1] - 0.5f;
  }
  const uint32_t width = color_target_.width,
                 height = color_target_.height;  // the frame's image size (prepare)
  const VkPipelineStageFlags color_stage = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
  const VkPipelineStageFlags depth_stage =
      VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT | VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
  // (The mesh data was copied to device-local memory and skinned by earlier passes of the frame graph.)
  // The transitions wait for the targets' last use by an earlier frame of the same submission (back-to-back
  // frames): the copies out of the colour targets, the depth tests on the z-buffer.
  for (const gpu::Image* img : {&color_target_, &depth_target_})
    gpu::imageBarrier(cmd, *img, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
                      VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                      color_stage, VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
  gpu::imageBarrier(
      cmd, zbuffer_, VK_IMAGE_ASPECT_DEPTH_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
      VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL, depth_stage, 0, depth_stage,
      VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT);
  VkRenderingAttachmentInfo color_attachments[2] = {{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO},
                                                    {VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO}};
  color_attachments[0].imageView = color_target_.view;
  color_attachments[1].imageView = depth_target_.view;
  for (auto& a : color_attachments) {
    a.imageLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL;
    a.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    a.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
  }
  color_attachments[1].clearValue.color.float32[0] = static_cast<float>(SF_NO_MESH_DEPTH);
  VkRenderingAttachmentInfo depth_attachment{VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO};
  depth_attachment.imageView = zbuffer_.view;
  depth_attachment.imageLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
  depth_attachment.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
  depth_attachment.storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
  depth_attachment.clearValue.depthStencil.depth = 0.0f;  // reversed depth: nearer is greater
  VkRenderingInfo ri{VK_STRUCTURE_TYPE_RENDERING_INFO};
  ri.renderArea = {{0, 0}, {width, height}};
  ri.layerCount = 1;
  ri.colorAttachmentCount = 2;
  ri.pColorAttachments = color_attachments;
  ri.pDepthAttachment = &depth_attachment;
  vkCmdBeginRendering(cmd, &ri);
  VkViewport vp{0, 0, static_cast<float>(width), static_cast<float>(height), 0, 1};
  VkRect2D sc{{0, 0}, {width, height}};
  vkCmdSetViewport(cmd, 0, 1, &vp);
  vkCmdSetScissor(cmd, 0, 1, &sc);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline_->pipeline());
  for (size_t i = 0; i < triangles.size(); ++i) {
    if (!triangles[i]) continue;
    GpuMeshPush p{};
    p.draws = device_data_.address + draws_offset;
    p.draw_index = static_cast<uint32_t>(i);
    p.fx = cam.fx, p.fy = cam.fy, p.cx = cam.cx, p.cy = cam.cy;
    if (sample >= 0 && at_samples_[i])
      p.cx = cam.cx - jx, p.cy = cam.cy - jy, p.jitter_x = jx, p.jitter_y = jy;
    p.width = static_cast<float>(width), p.height = static_cast<float>(height);
    vkCmdPushConstants(cmd, pipeline_->layout(), VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0,
                       sizeof(p), &p);
    vkCmdDraw(cmd, triangles[i] * 3, 1, 0, 0);
  }
  vkCmdEndRendering(cmd);
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = {width, height, 1};
  for (auto [img, buf] : {std::pair{&color_target_, &out_color}, std::pair{&depth_target_, &out_depth}}) {
    gpu::imageBarrier(cmd, *img, VK_IMAGE_ASPECT_COLOR_BIT, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                      VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, color_stage, VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                      VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    vkCmdCopyImageToBuffer(cmd, img->image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buf->buffer, 1, &region);
  }
  gpu::computeBarrier(cmd);
}

void VulkanMeshPass::readDebug(VulkanStaging& staging, VulkanFrameDebug& d) const {
  for (const MeshVertices& mv : vertices_) {
    auto vecs = [&](size_t at, size_t count) {
      std::vector<Vec3> out(count);
      if (!count) return out;
      // device_data_'s offsets are 16-byte aligned; download() copies whole pieces from offset 0, so read the
      // prefix.
      std::vector<uint8_t> raw = staging.download(device_data_, at + count * 12);
      std::memcpy(out.data(), raw.data() + at, count * 12);
      return out;
    };
    d.mesh_positions.push_back(vecs(mv.positions, mv.position_count));
    d.mesh_normals.push_back(vecs(mv.normals, mv.normal_count));
  }
}

void VulkanMeshPass::drop() {
  vertices_.clear();
  color_target_.reset(), depth_target_.reset(), zbuffer_.reset();
  for (gpu::Buffer* b : {&color, &depth, &host_data_, &device_data_, &sample_color_, &sample_depth_,
                         &sample_sum_, &sample_state_})
    b->reset();
  sample_pixels_ = 0;
  data_bytes_ = 0;
}

}  // namespace sf
