// Residency and staging of the Vulkan frame's splats (internal to the renderer, not public API):
// - VulkanStaging: the renderer's one host-visible staging buffer, and uploads and readbacks through it in
//   pieces of at most 64 MiB;
// - VulkanResidency: the splat sinks (render/splat_sink.h) and the slot arrays they index (which objects keep
//   their ranges, whose rest values are uploaded), the static inputs of deformed objects and skinned meshes
//   (packed once, checked every frame), and each frame's own splat inputs (position / covariance / shape
//   overrides, the deform pass's inputs, sort depths) staged for the copies at the start of the frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "deform/deform_shared.h"
#include "gpu/gpu.h"
#include "render/cpu_renderer.h"
#include "render/gpu_shared.h"
#include "render/splat_sink.h"

namespace sf {

class VulkanStaging {
 public:
  explicit VulkanStaging(gpu::Context& ctx) : ctx_(ctx) {}

  // Host-visible staging for uploads and readbacks, grown as needed.
  gpu::Buffer& buffer(VkDeviceSize bytes);
  VkDeviceSize size() const { return readback_.size; }

  void upload(gpu::Buffer& dst, const void* data, size_t bytes, size_t offset = 0);
  std::vector<uint8_t> download(const gpu::Buffer& src, size_t bytes);

  // Uploads and downloads go through the staging buffer in pieces of at most kStagingChunk bytes, so that
  // a large scene does not hold a host-visible copy of its largest array for the renderer's life.
  static constexpr size_t kStagingChunk = size_t{64} << 20;

 private:
  gpu::Context& ctx_;
  gpu::Buffer readback_;
};

// One deformed object's passes of a frame: its bound mesh skinned first on the GPU (skin), then its splats.
struct DeformDispatch {
  deform_layout::GpuDeformPush push;
  size_t vertices, palette;  // offsets in the per-frame deform data
  bool skin = false;         // skin the bound mesh on the GPU first
  deform_layout::SkinPush skin_push{};
  size_t skin_palette = 0, morph_weights = 0, skinned_offset = 0;
};

// A frame's own splat inputs as VulkanResidency::stageFrame left them in dynamic_staging: objects with
// per-frame centres and covariances (and shape words), copied into their slot ranges at the start of the
// frame's command buffer, and the deform passes' inputs.
struct StagedSplats {
  std::vector<VkBufferCopy> pos_copies, cov_copies, shape_copies;
  std::vector<DeformDispatch> deforms;
  size_t deform_bytes = 0, override_bytes = 0;  // staged: overrides first, then the deform inputs
};

// An array of a frame's static inputs: its address, the address of the array packed with it (a skin's second
// joint / weight set), and its packed size.
using StaticKey = std::tuple<const void*, const void*, size_t>;

class VulkanResidency {
 public:
  VulkanResidency(gpu::Context& ctx, VulkanStaging& staging) : ctx_(ctx), staging_(staging) {}

  // Places this frame's objects in the sinks: an object seen last frame (same cloud, size and SH stride,
  // matched in order) keeps its ranges; objects gone free theirs; new ones get ranges. Uploads the rest
  // values of new objects, dynamic ones, and ones overwritten last frame (overrides, deform, GPU source) but
  // not in this one; an object written on the GPU whose source writes every slot in every frame
  // (GpuSplatSource::needsRestValues false) is never uploaded. Returns the slots uploaded; `bytes`, when
  // given, gets their bytes.
  // Objects drawn with half-precision SH (drawsHalfSh under `settings`) hold their SH in the half layout
  // (core/sh.h; Resident::sh_words words a slot).
  uint64_t placeObjects(std::span<const RenderObject> objects, const RenderSettings& settings,
                        uint64_t* bytes = nullptr);

  // Packs and uploads the frame's static inputs when their set changed (see static_key), measuring then the
  // largest index each static array holds; every frame checks this frame's inputs against those bounds (the
  // vertex count, the palette, the morph weights change per frame), so nothing out of range reaches the GPU.
  void uploadStatic(std::span<const RenderObject> objects, std::span<const RenderMesh> meshes);

  VkDeviceAddress staticAddress(const void* id, size_t bytes, const void* id2 = nullptr) const;

  // The skin pass's push constants for a source, static addresses filled in; the frame's palette, morph
  // weights and outputs are patched by the caller (patchSkinFrame).
  deform_layout::SkinPush skinPush(const SkinSource& s, bool normals) const;

  // Appends a source's per-frame inputs to `packed`: its palette (LBS rows or dual quaternions; returns the
  // offset) and its morph weights (offset in *weights_at).
  static size_t packSkinFrame(const SkinSource& s, std::vector<uint8_t>& packed, size_t* weights_at);
  static void patchSkinFrame(deform_layout::SkinPush& p, VkDeviceAddress palette, VkDeviceAddress weights);

  // Stages this frame's own splat inputs (after placeObjects and uploadStatic): the overrides and the deform
  // passes' inputs, to be copied by recordOverrides and recordDeformInputs, and the sort depths, which
  // preprocess reads straight from the staging buffer (set in `objects_gpu`, the objects' records).
  StagedSplats stageFrame(std::span<const RenderObject> objects,
                          std::span<gpu_layout::GpuObject> objects_gpu);
  // The frame's copies of what stageFrame staged: overrides into their slot ranges, the deform inputs.
  void recordOverrides(VkCommandBuffer cmd, const StagedSplats& staged) const;
  void recordDeformInputs(VkCommandBuffer cmd, const StagedSplats& staged) const;

  // Where an object written on the GPU (RenderObject::gpu_source) writes its splats: its slot ranges.
  GpuSplatTargets targets(const gpu_layout::GpuObject& g) const;

  // Every buffer released and every capacity forgotten (VulkanRenderer::Impl::dropResources).
  void drop();

  // The splat sinks (render/splat_sink.h): slots, and SH blocks of kShBlockFloats floats (64 bytes; an
  // object's SH starts at a block and its stride differs per object). Every object of the last frame owns a
  // range of each; the arrays below are sized to the capacities. A block index fits the GpuObject's 32-bit
  // sh_base up to 2^36 SH floats (1.4 billion SH-3 gaussians): device memory, not the index, bounds a scene.
  static constexpr uint64_t kShBlockFloats = 16;
  static uint64_t shBlocks(uint64_t floats) { return (floats + kShBlockFloats - 1) / kShBlockFloats; }
  SplatSink slot_sink{UINT32_MAX / 8}, sh_sink{UINT32_MAX};
  struct Resident {
    const GaussianCloud* cloud = nullptr;
    size_t size = 0, sh_floats = 0;  // sh_floats: the object's SH words, in the half layout when half_sh
    bool half_sh = false;
    SplatSink::Range slots, sh;
    uint32_t overwritten =
        0;  // what this frame writes over the rest values: kOverwritesShape | kOverwritesLook
  };
  static constexpr uint32_t kOverwritesShape = 1,
                            kOverwritesLook = 2;  // centres + covariances; opacities + SH
  std::vector<Resident> residents;                // per object of the last frame
  uint64_t slot_capacity = 0, sh_capacity = 0;    // slots; SH blocks
  uint32_t slots = 0;  // slot_sink.size(): the frame's slot count, free ranges included (left out by "clear")
  gpu::Buffer positions, covariances, opacities, sh;
  // Per-slot preprocess outputs.
  gpu::Buffer means, conic_opacity, color_depth, rects, touched;
  // Per-slot shape words, rewritten in every frame that reads them (so not kept when the slots grow).
  gpu::Buffer shapes;
  // Static inputs of deformed objects and skinned meshes (splat bindings, triangle lists, bind poses, packed
  // influences, morph deltas): one device buffer, packed again only when the set of source arrays changes
  // (keyed by address and packed size; an array shared by several objects is packed once).
  std::vector<StaticKey> static_key;
  std::map<StaticKey, size_t> static_at;
  gpu::Buffer static_inputs;
  struct DeformBounds {  // per deformed object of the packed set: the largest index its static arrays hold
    int64_t vertex = -1, skin_joint = -1, binding_joint = -1;
  };
  std::vector<DeformBounds> deform_bounds;
  gpu::Buffer skinned;  // posed vertices of GPU-skinned deformed objects, this frame
  gpu::Buffer deform_data;
  gpu::Buffer dynamic_staging;  // the frame's overrides, deform inputs and sort depths (stageFrame)

 private:
  // The largest joint index a skin source's vertices use with a positive weight (-1 without any).
  static int64_t maxJoint(const SkinSource& s);

  gpu::Context& ctx_;
  VulkanStaging& staging_;
};

}  // namespace sf
