// Residency and staging of the Vulkan frame's splats (see vulkan_residency.h).
#include "render/vulkan_residency.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "core/covariance.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/sh.h"
#include "deform/gpu_passes.h"
#include "render/vulkan_util.h"

namespace sf {

namespace {

using namespace gpu_layout;
using deform_layout::SkinPush;
using namespace vulkan_util;

// Calls add(key, fill) for every static input array of a frame in a fixed order; fill(dst) writes the
// array's packed bytes. An array is keyed by its address and packed size; packed influences by the two
// arrays they come from (joints0 and joints1, weights0 and weights1).
template <class Add>
void forEachStatic(std::span<const RenderObject> objects, std::span<const RenderMesh> meshes, Add&& add) {
  auto raw = [&](const void* data, size_t bytes) {
    add(StaticKey{data, nullptr, bytes}, [=](uint8_t* dst) { std::memcpy(dst, data, bytes); });
  };
  auto skin = [&](const SkinSource& s) {
    raw(s.positions.data(), s.positions.size_bytes());
    raw(s.normals.data(), s.normals.size_bytes());
    raw(s.morph_positions.data(), s.morph_positions.size_bytes());
    raw(s.morph_normals.data(), s.morph_normals.size_bytes());
    if (!s.skinned()) return;
    const size_t bytes = s.vertexCount() * SF_SKIN_INFLUENCES * 4;
    auto influences = [s](bool joints, uint8_t* dst) {
      std::vector<uint32_t> j;
      std::vector<float> w;
      packSkinInfluences(s.joints0, s.weights0, s.joints1, s.weights1, j, w);
      if (joints)
        std::memcpy(dst, j.data(), j.size() * 4);
      else
        std::memcpy(dst, w.data(), w.size() * 4);
    };
    add(StaticKey{s.joints0.data(), s.joints1.data(), bytes}, [=](uint8_t* dst) { influences(true, dst); });
    add(StaticKey{s.weights0.data(), s.weights1.data(), bytes},
        [=](uint8_t* dst) { influences(false, dst); });
  };
  for (const RenderObject& o : objects)
    if (o.deform) {
      raw(o.deform->bindings.data(), o.deform->bindings.size());
      raw(o.deform->indices.data(), o.deform->indices.size_bytes());
      if (!o.deform->skin.empty()) skin(o.deform->skin);
    }
  for (const RenderMesh& mesh : meshes)
    if (!mesh.skin.empty()) skin(mesh.skin);
}

}  // namespace

gpu::Buffer& VulkanStaging::buffer(VkDeviceSize bytes) {
  if (readback_.size < bytes)
    readback_ = ctx_.createBuffer(std::max<VkDeviceSize>(bytes, 1 << 20), true, "staging");
  return readback_;
}

void VulkanStaging::upload(gpu::Buffer& dst, const void* data, size_t bytes, size_t offset) {
  for (size_t at = 0; at < bytes; at += kStagingChunk) {
    const size_t n = std::min(kStagingChunk, bytes - at);
    gpu::Buffer& st = buffer(n);
    std::memcpy(st.mapped, static_cast<const uint8_t*>(data) + at, n);
    VkCommandBuffer cmd = ctx_.begin();
    VkBufferCopy region{0, offset + at, n};
    vkCmdCopyBuffer(cmd, st.buffer, dst.buffer, 1, &region);
    ctx_.submit(cmd, "uploading the scene's data");
  }
}

std::vector<uint8_t> VulkanStaging::download(const gpu::Buffer& src, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  for (size_t at = 0; at < bytes; at += kStagingChunk) {
    const size_t n = std::min(kStagingChunk, bytes - at);
    gpu::Buffer& st = buffer(n);
    VkCommandBuffer cmd = ctx_.begin();
    VkBufferCopy region{at, 0, n};
    vkCmdCopyBuffer(cmd, src.buffer, st.buffer, 1, &region);
    ctx_.submit(cmd, "reading a buffer back");
    std::memcpy(out.data() + at, st.mapped, n);
  }
  return out;
}

uint64_t VulkanResidency::placeObjects(std::span<const RenderObject> objects, const RenderSettings& settings,
                                       uint64_t* bytes) {
  std::vector<Resident> placed(objects.size());
  std::vector<bool> kept(residents.size(), false);
  std::vector<bool> upload_rest(objects.size(), false);
  for (size_t o = 0; o < objects.size(); ++o) {
    const GaussianCloud& c = *objects[o].cloud;
    Resident& r = placed[o];
    const RenderObject& ro = objects[o];
    r.cloud = &c, r.size = ro.count(), r.half_sh = drawsHalfSh(ro, settings);
    r.sh_floats = r.size * static_cast<size_t>(r.half_sh ? halfShWords(c.shStride()) : c.shStride());
    r.overwritten = (!ro.positions.empty() || ro.deform || ro.gpu_source ? kOverwritesShape : 0u) |
                    (ro.gpu_source ? kOverwritesLook : 0u);
    for (size_t k = 0; k < residents.size(); ++k)
      if (!kept[k] && residents[k].cloud == r.cloud && residents[k].size == r.size &&
          residents[k].sh_floats == r.sh_floats && residents[k].half_sh == r.half_sh) {
        kept[k] = true;
        r.slots = residents[k].slots, r.sh = residents[k].sh;
        upload_rest[o] =
            objects[o].dynamic || (residents[k].overwritten & ~r.overwritten) != 0;  // rest values back
        break;
      }
  }
  for (size_t k = 0; k < residents.size(); ++k)
    if (!kept[k]) slot_sink.free(residents[k].slots), sh_sink.free(residents[k].sh);
  try {
    for (size_t o = 0; o < objects.size(); ++o)
      if (placed[o].slots.count == 0 && placed[o].size > 0) {
        placed[o].slots = slot_sink.allocate(placed[o].size);
        placed[o].sh = sh_sink.allocate(shBlocks(placed[o].sh_floats));
        upload_rest[o] = !objects[o].gpu_source || objects[o].gpu_source->needsRestValues();
      }
  } catch (...) {  // too many splats: start the next frame from empty sinks (every object uploaded again)
    slot_sink.clear(), sh_sink.clear();
    residents.clear();
    throw;
  }
  residents = std::move(placed);
  slots = static_cast<uint32_t>(slot_sink.size());
  if (!means.size || slot_sink.size() > slot_capacity || sh_sink.size() > sh_capacity) {
    // Grow: new arrays, the old contents copied over on the GPU (kept objects are not uploaded again).
    slot_capacity = std::max<uint64_t>(slot_sink.size(), slot_capacity + slot_capacity / 2);
    sh_capacity = std::max<uint64_t>(sh_sink.size(), sh_capacity + sh_capacity / 2);
    const uint64_t n = std::max<uint64_t>(slot_capacity, 1);
    gpu::Buffer old[4] = {std::move(positions), std::move(covariances), std::move(opacities), std::move(sh)};
    positions = ctx_.createBuffer(n * 12, false, "positions");
    covariances = ctx_.createBuffer(n * 24, false, "covariances");
    opacities = ctx_.createBuffer(n * 4, false, "opacities");
    sh = ctx_.createBuffer(std::max<uint64_t>(sh_capacity, 1) * kShBlockFloats * 4, false, "sh");
    if (old[0].size) {
      VkCommandBuffer cmd = ctx_.begin();
      gpu::Buffer* grown[4] = {&positions, &covariances, &opacities, &sh};
      for (int k = 0; k < 4; ++k) {
        VkBufferCopy region{0, 0, old[k].size};
        vkCmdCopyBuffer(cmd, old[k].buffer, grown[k]->buffer, 1, &region);
      }
      ctx_.submit(cmd, "growing the splat buffers");
    }
    means = ctx_.createBuffer(n * 8, false, "means");
    conic_opacity = ctx_.createBuffer(n * 16, false, "conic_opacity");
    color_depth = ctx_.createBuffer(n * 16, false, "color_depth");
    rects = ctx_.createBuffer(n * 8, false, "rects");
    touched = ctx_.createBuffer(n * 4, false, "touched");
    shapes = ctx_.createBuffer(n * 4, false, "shape words");
  }
  uint64_t uploaded = 0, uploaded_bytes = 0;
  for (size_t o = 0; o < objects.size(); ++o) {
    if (!upload_rest[o] || residents[o].size == 0) continue;
    const GaussianCloud& c = *objects[o].cloud;
    const uint64_t first = residents[o].slots.first;
    std::vector<Cov6> cov(c.size());
    for (size_t i = 0; i < c.size(); ++i) cov[i] = covarianceFromScaleRotation(c.scales[i], c.rotations[i]);
    staging_.upload(positions, c.positions.data(), c.size() * 12, first * 12);
    staging_.upload(covariances, cov.data(), c.size() * 24, first * 24);
    staging_.upload(opacities, c.opacities.data(), c.size() * 4, first * 4);
    const size_t sh_at = residents[o].sh.first * kShBlockFloats * 4;
    if (residents[o].half_sh) {
      // Packed a staging piece at a time (a whole SH-3 capture's packed copy would be 112 bytes a splat).
      const size_t stride = c.shStride(), words = halfShWords(stride);
      const size_t per_piece = VulkanStaging::kStagingChunk / (words * 4);
      std::vector<uint32_t> packed;
      for (size_t first_splat = 0; first_splat < c.size(); first_splat += per_piece) {
        const size_t n = std::min(per_piece, c.size() - first_splat);
        packed.resize(n * words);
        parallelForRange(n, 16384, [&](size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i)
            packHalfSh(&c.sh[(first_splat + i) * stride], stride, &packed[i * words]);
        });
        staging_.upload(sh, packed.data(), packed.size() * 4, sh_at + first_splat * words * 4);
      }
    } else {
      staging_.upload(sh, c.sh.data(), c.sh.size() * 4, sh_at);
    }
    uploaded += c.size();
    uploaded_bytes += c.size() * (12 + 24 + 4) + residents[o].sh_floats * 4;
  }
  if (bytes) *bytes = uploaded_bytes;
  return uploaded;
}

void VulkanResidency::uploadStatic(std::span<const RenderObject> objects,
                                   std::span<const RenderMesh> meshes) {
  std::vector<StaticKey> key;
  forEachStatic(objects, meshes, [&](const StaticKey& k, auto&&) { key.push_back(k); });
  if (key != static_key || !static_inputs.size) {
    static_key.clear();  // (until the pack below succeeds)
    deform_bounds.clear();
    for (size_t i = 0; i < meshes.size(); ++i)
      if (!meshes[i].skin.empty())
        if (std::string why = meshes[i].validate(); !why.empty())
          throw Error("mesh " + std::to_string(i) + ": " + why);
    for (size_t i = 0; i < objects.size(); ++i) {
      const SplatDeformSource* ds = objects[i].deform;
      if (!ds) continue;
      const std::string where = "render object " + std::to_string(i) + ": deform source: ";
      if (!ds->skin.empty())
        if (std::string why = ds->skin.validate(); !why.empty()) throw Error(where + why);
      DeformBounds b;
      for (uint32_t v : ds->indices) b.vertex = std::max<int64_t>(b.vertex, v);
      b.skin_joint = maxJoint(ds->skin);
      const size_t triangles = ds->indices.size() / 3;
      for (size_t r = 0; r < ds->bindings.size() / 68; ++r) {
        uint32_t w[4];  // kind, triangle, joints 0|1, joints 2|3 (GpuSplatBinding)
        float weights[4];
        std::memcpy(w, ds->bindings.data() + r * 68, 16);
        std::memcpy(weights, ds->bindings.data() + r * 68 + 16, 16);
        if (w[0] == 0 && w[1] >= triangles)
          throw Error(where + "binding " + std::to_string(r) + " names triangle " + std::to_string(w[1]) +
                      " of " + std::to_string(triangles));
        if (w[0] == 1) {
          const uint32_t joints[4] = {w[2] & 0xffffu, w[2] >> 16, w[3] & 0xffffu, w[3] >> 16};
          for (int k = 0; k < 4; ++k)
            if (weights[k] != 0) b.binding_joint = std::max<int64_t>(b.binding_joint, joints[k]);
        }
      }
      deform_bounds.push_back(b);
    }
    std::vector<uint8_t> all;
    static_at.clear();
    forEachStatic(objects, meshes, [&](const StaticKey& k, auto&& fill) {
      const size_t bytes = std::get<2>(k);
      if (!static_at.emplace(k, (all.size() + 15) & ~size_t{15}).second) return;
      const size_t at = pack(all, nullptr, bytes);
      if (bytes) fill(all.data() + at);
    });
    all.resize(std::max<size_t>(all.size(), 16));
    if (static_inputs.size < all.size())
      static_inputs = ctx_.createBuffer(all.size() + all.size() / 4, false, "static deform inputs");
    staging_.upload(static_inputs, all.data(), all.size());
    static_key = std::move(key);
  }
  // This frame's inputs against the bounds of the static arrays they index.
  size_t d = 0;
  for (size_t i = 0; i < objects.size(); ++i) {
    const SplatDeformSource* ds = objects[i].deform;
    if (!ds) continue;
    const DeformBounds& b = deform_bounds[d++];
    const std::string where = "render object " + std::to_string(i) + ": deform source: ";
    const size_t n = ds->skin.empty() ? ds->vertices.size() : ds->skin.vertexCount();
    if (b.vertex >= static_cast<int64_t>(n))
      throw Error(where + "triangle index " + std::to_string(b.vertex) + " outside " + std::to_string(n) +
                  " vertices");
    if (b.binding_joint >= static_cast<int64_t>(ds->palette.size()))
      throw Error(where + "a binding uses joint " + std::to_string(b.binding_joint) + " of a " +
                  std::to_string(ds->palette.size()) + "-joint palette");
    if (ds->skin.empty()) continue;
    if (ds->skin.morph_weights.size() != ds->skin.targetCount())
      throw Error(where + std::to_string(ds->skin.morph_weights.size()) + " morph weights for " +
                  std::to_string(ds->skin.targetCount()) + " targets");
    if (b.skin_joint >= static_cast<int64_t>(ds->skin.palette.size()))
      throw Error(where + "a vertex uses joint " + std::to_string(b.skin_joint) + " of a " +
                  std::to_string(ds->skin.palette.size()) + "-joint palette");
  }
}

int64_t VulkanResidency::maxJoint(const SkinSource& s) {
  int64_t m = -1;
  auto scan = [&](std::span<const std::array<uint16_t, 4>> j, std::span<const std::array<float, 4>> w) {
    for (size_t v = 0; v < j.size(); ++v)
      for (size_t k = 0; k < 4; ++k)
        if (w[v][k] > 0) m = std::max<int64_t>(m, j[v][k]);
  };
  scan(s.joints0, s.weights0);
  scan(s.joints1, s.weights1);
  return m;
}

VkDeviceAddress VulkanResidency::staticAddress(const void* id, size_t bytes, const void* id2) const {
  if (!bytes) return static_inputs.address;  // never read
  return static_inputs.address + static_at.at({id, id2, bytes});
}

SkinPush VulkanResidency::skinPush(const SkinSource& s, bool normals) const {
  SkinPush p{};
  const size_t influence_bytes = s.vertexCount() * SF_SKIN_INFLUENCES * 4;
  normals = normals && !s.normals.empty();
  p.positions = staticAddress(s.positions.data(), s.positions.size_bytes());
  p.normals = normals ? staticAddress(s.normals.data(), s.normals.size_bytes()) : static_inputs.address;
  p.joints = s.skinned() ? staticAddress(s.joints0.data(), influence_bytes, s.joints1.data())
                         : static_inputs.address;
  p.weights = s.skinned() ? staticAddress(s.weights0.data(), influence_bytes, s.weights1.data())
                          : static_inputs.address;
  p.morph_positions = staticAddress(s.morph_positions.data(), s.morph_positions.size_bytes());
  p.morph_normals = staticAddress(s.morph_normals.data(), s.morph_normals.size_bytes());
  p.vertex_count = static_cast<uint32_t>(s.vertexCount());
  p.target_count = static_cast<uint32_t>(s.morph_weights.size());
  p.method = s.dual_quaternion ? SF_SKIN_METHOD_DQS : SF_SKIN_METHOD_LBS;
  p.flags = (normals ? SF_SKIN_FLAG_NORMALS : 0u) | (s.skinned() ? SF_SKIN_FLAG_SKINNED : 0u) |
            (normals && !s.morph_normals.empty() ? SF_SKIN_FLAG_MORPH_NORMALS : 0u) |
            (s.joints1.empty() ? 0u : SF_SKIN_FLAG_EIGHT);
  return p;
}

size_t VulkanResidency::packSkinFrame(const SkinSource& s, std::vector<uint8_t>& packed, size_t* weights_at) {
  std::vector<float> rows;
  if (s.dual_quaternion)
    packSkinDualQuats(s.palette, rows);
  else
    packSkinPalette(s.palette, rows);
  *weights_at = pack(packed, s.morph_weights.data(), s.morph_weights.size_bytes());
  return pack(packed, rows.data(), rows.size() * 4);
}

void VulkanResidency::patchSkinFrame(SkinPush& p, VkDeviceAddress palette, VkDeviceAddress weights) {
  p.palette = p.dq_palette = palette;
  p.morph_weights = weights;
}

StagedSplats VulkanResidency::stageFrame(std::span<const RenderObject> objects,
                                         std::span<GpuObject> objects_gpu) {
  StagedSplats staged;
  std::vector<DeformDispatch>& deforms = staged.deforms;
  size_t bytes = 0;
  for (const RenderObject& o : objects) bytes += o.positions.size() * (12 + 24) + o.shapes.size_bytes();
  // Per-frame deform inputs, packed 16-byte aligned.
  std::vector<uint8_t> packed;
  size_t skinned_bytes = 0;
  for (size_t oi = 0; oi < objects.size(); ++oi) {
    const RenderObject& o = objects[oi];
    const uint64_t first = residents[oi].slots.first;
    if (o.deform) {
      DeformDispatch dd{};
      const SplatDeformSource& ds = *o.deform;
      if (!ds.skin.empty()) {
        dd.skin = true;
        dd.skin_push = skinPush(ds.skin, false);
        dd.skin_palette = packSkinFrame(ds.skin, packed, &dd.morph_weights);
        dd.skinned_offset = skinned_bytes;
        skinned_bytes += ds.skin.positions.size_bytes() + 16;
      } else {
        dd.vertices = pack(packed, ds.vertices.data(), ds.vertices.size_bytes());
      }
      std::vector<float> rows;
      packSkinPalette(ds.palette, rows);
      dd.palette = pack(packed, rows.data(), rows.size() * 4);
      dd.push.bindings = staticAddress(ds.bindings.data(), ds.bindings.size());
      dd.push.indices = staticAddress(ds.indices.data(), ds.indices.size_bytes());
      dd.push.out_positions = positions.address + first * 12;
      dd.push.out_covariances = covariances.address + first * 24;
      dd.push.count = static_cast<uint32_t>(o.count());
      deforms.push_back(dd);
    }
  }
  const size_t deform_bytes = staged.deform_bytes = packed.size();
  if (skinned_bytes && skinned.size < skinned_bytes)
    skinned = ctx_.createBuffer(skinned_bytes + skinned_bytes / 2, false, "skinned vertices");
  if (deform_bytes) {
    if (deform_data.size < deform_bytes)
      deform_data = ctx_.createBuffer(deform_bytes + deform_bytes / 2, false, "deform inputs");
    for (DeformDispatch& dd : deforms) {
      dd.push.palette = deform_data.address + dd.palette;
      if (dd.skin) {
        patchSkinFrame(dd.skin_push, deform_data.address + dd.skin_palette,
                       deform_data.address + dd.morph_weights);
        dd.skin_push.out_positions = skinned.address + dd.skinned_offset;
        dd.push.vertices = dd.skin_push.out_positions;
      } else {
        dd.push.vertices = deform_data.address + dd.vertices;
      }
    }
  }
  const size_t override_bytes = staged.override_bytes = bytes;
  bytes += deform_bytes;
  // Sort depths (baked hull shells): read by preprocess straight from the host-visible staging buffer.
  const size_t sort_depth_at = (bytes + 15) / 16 * 16;
  size_t sort_depth_bytes = 0;
  for (const RenderObject& o : objects) sort_depth_bytes += o.sort_depth.size_bytes();
  if (sort_depth_bytes) bytes = sort_depth_at + sort_depth_bytes;
  if (bytes) {
    if (dynamic_staging.size < bytes)
      dynamic_staging = ctx_.createBuffer(bytes + bytes / 2, true, "per-frame splat overrides");
    auto* dst = static_cast<uint8_t*>(dynamic_staging.mapped);
    size_t at = 0;
    for (size_t oi = 0; oi < objects.size(); ++oi) {
      const RenderObject& o = objects[oi];
      const uint64_t slot = residents[oi].slots.first;
      if (!o.positions.empty()) {
        std::memcpy(dst + at, o.positions.data(), o.positions.size_bytes());
        staged.pos_copies.push_back({at, slot * 12, o.positions.size_bytes()});
        at += o.positions.size_bytes();
        std::memcpy(dst + at, o.covariances.data(), o.covariances.size_bytes());
        staged.cov_copies.push_back({at, slot * 24, o.covariances.size_bytes()});
        at += o.covariances.size_bytes();
      }
      if (!o.shapes.empty()) {
        std::memcpy(dst + at, o.shapes.data(), o.shapes.size_bytes());
        staged.shape_copies.push_back({at, slot * 4, o.shapes.size_bytes()});
        at += o.shapes.size_bytes();
      }
    }
    if (deform_bytes) std::memcpy(dst + override_bytes, packed.data(), deform_bytes);
    at = sort_depth_at;
    for (size_t o = 0; o < objects.size(); ++o) {
      if (objects[o].sort_depth.empty()) continue;
      std::memcpy(dst + at, objects[o].sort_depth.data(), objects[o].sort_depth.size_bytes());
      objects_gpu[o].sort_depth = dynamic_staging.address + at;
      objects_gpu[o].flags |= SF_OBJECT_SORT_DEPTH;
      at += objects[o].sort_depth.size_bytes();
    }
  }
  return staged;
}

void VulkanResidency::recordOverrides(VkCommandBuffer cmd, const StagedSplats& staged) const {
  if (!staged.pos_copies.empty()) {
    vkCmdCopyBuffer(cmd, dynamic_staging.buffer, positions.buffer,
                    static_cast<uint32_t>(staged.pos_copies.size()), staged.pos_copies.data());
    vkCmdCopyBuffer(cmd, dynamic_staging.buffer, covariances.buffer,
                    static_cast<uint32_t>(staged.cov_copies.size()), staged.cov_copies.data());
  }
  if (!staged.shape_copies.empty())
    vkCmdCopyBuffer(cmd, dynamic_staging.buffer, shapes.buffer,
                    static_cast<uint32_t>(staged.shape_copies.size()), staged.shape_copies.data());
}

void VulkanResidency::recordDeformInputs(VkCommandBuffer cmd, const StagedSplats& staged) const {
  VkBufferCopy region{staged.override_bytes, 0, staged.deform_bytes};
  vkCmdCopyBuffer(cmd, dynamic_staging.buffer, deform_data.buffer, 1, &region);
}

GpuSplatTargets VulkanResidency::targets(const GpuObject& g) const {
  const uint32_t first = g.first_slot;
  GpuSplatTargets t;
  t.positions = positions.address + static_cast<VkDeviceAddress>(first) * 12;
  t.covariances = covariances.address + static_cast<VkDeviceAddress>(first) * 24;
  t.opacities = opacities.address + static_cast<VkDeviceAddress>(first) * 4;
  t.sh = sh.address + static_cast<VkDeviceAddress>(g.sh_base) * kShBlockFloats * 4;
  t.count = g.count;
  t.sh_stride = g.sh_stride;
  t.shapes = shapes.address + static_cast<VkDeviceAddress>(first) * 4;
  return t;
}

void VulkanResidency::drop() {
  residents.clear();
  slot_sink.clear(), sh_sink.clear();
  slot_capacity = sh_capacity = 0, slots = 0;
  for (gpu::Buffer* b : {&positions, &covariances, &opacities, &sh, &means, &conic_opacity, &color_depth,
                         &rects, &touched, &shapes})
    b->reset();
  static_key.clear(), static_at.clear(), deform_bounds.clear();
  static_inputs.reset();
}

}  // namespace sf
