#include "deform/gpu_skinning.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "deform/gpu_passes.h"
#include "gpu/gpu.h"

namespace sf {

namespace {

using namespace deform_layout;

// Records one skinning dispatch (instances along y) between timestamps and waits for it.
double dispatchSkin(gpu::Context& ctx, const SkinPass& pass, VkQueryPool queries, const SkinPush& p,
                    uint32_t instances) {
  const auto lock = ctx.lock();  // the context may be another thread's too (gpu::Context::lock)
  VkCommandBuffer cmd = ctx.begin();
  vkCmdResetQueryPool(cmd, queries, 0, 2);
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0);
  pass.record(cmd, p, instances);
  gpu::computeBarrier(cmd);
  VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0,
                       nullptr, 0, nullptr);
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1);
  ctx.submit(cmd);
  uint64_t ticks[2];
  SF_VK_CHECK(vkGetQueryPoolResults(ctx.device(), queries, 0, 2, sizeof(ticks), ticks, 8,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  return static_cast<double>(ticks[1] - ticks[0]) * ctx.timestampPeriodNs() * 1e-6;
}

VkQueryPool createQueries(gpu::Context& ctx, const char* name) {
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  VkQueryPool pool = VK_NULL_HANDLE;
  SF_VK_CHECK(vkCreateQueryPool(ctx.device(), &qi, nullptr, &pool));
  ctx.setName(VK_OBJECT_TYPE_QUERY_POOL, reinterpret_cast<uint64_t>(pool), name);
  return pool;
}

gpu::Buffer hostBuffer(gpu::Context& ctx, const void* data, size_t bytes, const char* name) {
  gpu::Buffer b = ctx.createBuffer(bytes, true, name);
  if (bytes) std::memcpy(b.mapped, data, bytes);
  return b;
}

}  // namespace

struct GpuSkinner::Impl {
  gpu::Context& ctx;
  SkinPass pass;
  VkQueryPool queries = VK_NULL_HANDLE;

  explicit Impl(gpu::Context& c) : ctx(c), pass(c), queries(createQueries(c, "skin timestamps")) {}
  ~Impl() { vkDestroyQueryPool(ctx.device(), queries, nullptr); }

  // A host-visible buffer holding `data` (per-call inputs are small; GpuSkinnedCrowd keeps them resident).
  gpu::Buffer upload(const void* data, size_t bytes, const char* name) {
    return hostBuffer(ctx, data, bytes, name);
  }
};

GpuSkinner::GpuSkinner(gpu::Context& ctx) : impl_(std::make_unique<Impl>(ctx)) {}
GpuSkinner::~GpuSkinner() = default;

double GpuSkinner::run(const anim::SkinningJob& job, std::span<const anim::MorphTargetView> targets,
                       std::span<const float> morph_weights) {
  Impl& m = *impl_;
  const size_t n = job.positions.size();
  const bool skinned = !job.palette.empty() || !job.dq_palette.empty();
  if (skinned) {
    if (std::string why = job.validate(); !why.empty()) throw Error("GPU skinning: " + why);
  } else if (job.out_positions.size() != n || job.out_normals.size() != job.normals.size()) {
    throw Error("GPU skinning: output sizes differ from the inputs");
  }
  {  // The morph inputs are checked exactly as the CPU job checks them.
    anim::MorphJob morph;
    morph.positions = job.positions;
    morph.normals = job.normals;
    morph.targets = targets;
    morph.weights = morph_weights;
    morph.out_positions = job.out_positions;
    morph.out_normals = job.out_normals;
    if (std::string why = morph.validate(); !why.empty()) throw Error("GPU skinning: " + why);
  }
  if (n == 0) return 0;
  if (n > UINT32_MAX / 64) throw Error("GPU skinning: too many vertices");
  const bool has_normals = !job.normals.empty();

  std::vector<uint32_t> joints;
  std::vector<float> weights, palette, dq;
  if (skinned) packSkinInfluences(job.joints0, job.weights0, job.joints1, job.weights1, joints, weights);
  const size_t t_count = targets.size();
  std::vector<Vec3> morph_pos(t_count * n, Vec3{0, 0, 0}),
      morph_nrm(has_normals ? t_count * n : 0, Vec3{0, 0, 0});
  for (size_t t = 0; t < t_count; ++t) {
    if (!targets[t].positions.empty())
      std::copy(targets[t].positions.begin(), targets[t].positions.end(),
                morph_pos.begin() + static_cast<std::ptrdiff_t>(t * n));
    if (has_normals && !targets[t].normals.empty())
      std::copy(targets[t].normals.begin(), targets[t].normals.end(),
                morph_nrm.begin() + static_cast<std::ptrdiff_t>(t * n));
  }
  packSkinPalette(job.palette, palette);
  packSkinDualQuats(job.dq_palette, dq);

  gpu::Buffer b_pos = m.upload(job.positions.data(), n * 12, "skin positions");
  gpu::Buffer b_nrm = m.upload(job.normals.data(), job.normals.size() * 12, "skin normals");
  gpu::Buffer b_joints = m.upload(joints.data(), joints.size() * 4, "skin joints");
  gpu::Buffer b_weights = m.upload(weights.data(), weights.size() * 4, "skin weights");
  gpu::Buffer b_mpos = m.upload(morph_pos.data(), morph_pos.size() * 12, "morph position deltas");
  gpu::Buffer b_mnrm = m.upload(morph_nrm.data(), morph_nrm.size() * 12, "morph normal deltas");
  gpu::Buffer b_mw = m.upload(morph_weights.data(), morph_weights.size() * 4, "morph weights");
  gpu::Buffer b_pal = m.upload(palette.data(), palette.size() * 4, "joint palette");
  gpu::Buffer b_dq = m.upload(dq.data(), dq.size() * 4, "dual quaternion palette");
  gpu::Buffer b_out = m.ctx.createBuffer(n * 12, true, "skinned positions");
  gpu::Buffer b_out_n =
      m.ctx.createBuffer(std::max<size_t>(job.normals.size(), 1) * 12, true, "skinned normals");

  SkinPush p{};
  p.positions = b_pos.address, p.normals = b_nrm.address, p.joints = b_joints.address,
  p.weights = b_weights.address;
  p.morph_positions = b_mpos.address, p.morph_normals = b_mnrm.address, p.morph_weights = b_mw.address;
  p.palette = b_pal.address, p.dq_palette = b_dq.address, p.out_positions = b_out.address,
  p.out_normals = b_out_n.address;
  p.vertex_count = static_cast<uint32_t>(n);
  p.target_count = static_cast<uint32_t>(t_count);
  p.method = job.method == anim::SkinningMethod::kDualQuaternion ? SF_SKIN_METHOD_DQS : SF_SKIN_METHOD_LBS;
  p.flags = (has_normals ? SF_SKIN_FLAG_NORMALS | SF_SKIN_FLAG_MORPH_NORMALS : 0u) |
            (skinned ? SF_SKIN_FLAG_SKINNED : 0u) | (job.joints1.empty() ? 0u : SF_SKIN_FLAG_EIGHT);

  p.joint_count = 0;  // one instance
  const double ms = dispatchSkin(m.ctx, m.pass, m.queries, p, 1);
  std::memcpy(job.out_positions.data(), b_out.mapped, n * 12);
  if (has_normals) std::memcpy(job.out_normals.data(), b_out_n.mapped, job.normals.size() * 12);
  return ms;
}

struct GpuSkinnedCrowd::Impl {
  gpu::Context& ctx;
  SkinPass pass;
  VkQueryPool queries;
  size_t vertices = 0, joints = 0, instances = 0;
  bool has_normals = false, eight = false;
  gpu::Buffer positions, normals, joint_ids, weights, palette, dq, out_positions, out_normals, empty;

  Impl(gpu::Context& c) : ctx(c), pass(c), queries(createQueries(c, "crowd skin timestamps")) {}
  ~Impl() { vkDestroyQueryPool(ctx.device(), queries, nullptr); }
};

GpuSkinnedCrowd::GpuSkinnedCrowd(gpu::Context& ctx, const anim::SkinningJob& mesh, size_t joint_count,
                                 size_t instances)
    : impl_(std::make_unique<Impl>(ctx)) {
  Impl& m = *impl_;
  const size_t n = mesh.positions.size();
  if (mesh.joints0.size() != n || mesh.weights0.size() != n)
    throw Error("GPU crowd: joints0/weights0 must have one entry per vertex");
  if (!mesh.joints1.empty() && (mesh.joints1.size() != n || mesh.weights1.size() != n))
    throw Error("GPU crowd: joints1/weights1 must be empty or have one entry per vertex");
  if (!mesh.normals.empty() && mesh.normals.size() != n)
    throw Error("GPU crowd: normals and positions differ in count");
  if (instances == 0 || instances > 65535) throw Error("GPU crowd: instances must be in 1..65535");
  if (joint_count == 0) throw Error("GPU crowd: joint_count must be positive");
  std::vector<uint32_t> ids;
  std::vector<float> w;
  packSkinInfluences(mesh.joints0, mesh.weights0, mesh.joints1, mesh.weights1, ids, w);
  for (size_t i = 0; i < ids.size(); ++i)
    if (w[i] > 0 && ids[i] >= joint_count)
      throw Error("GPU crowd: vertex " + std::to_string(i / SF_SKIN_INFLUENCES) + " uses joint " +
                  std::to_string(ids[i]) + " of " + std::to_string(joint_count));
  m.vertices = n, m.joints = joint_count, m.instances = instances, m.has_normals = !mesh.normals.empty(),
  m.eight = !mesh.joints1.empty();
  m.positions = hostBuffer(ctx, mesh.positions.data(), n * 12, "crowd positions");
  m.normals = hostBuffer(ctx, mesh.normals.data(), mesh.normals.size() * 12, "crowd normals");
  m.joint_ids = hostBuffer(ctx, ids.data(), ids.size() * 4, "crowd joints");
  m.weights = hostBuffer(ctx, w.data(), w.size() * 4, "crowd weights");
  m.palette = ctx.createBuffer(instances * joint_count * 12 * 4, true, "crowd palettes");
  m.dq = ctx.createBuffer(instances * joint_count * SF_SKIN_DQ_FLOATS * 4, true, "crowd dual quaternions");
  m.out_positions = ctx.createBuffer(instances * n * 12, false, "crowd skinned positions");
  m.out_normals = ctx.createBuffer(std::max<size_t>(m.has_normals ? instances * n : 1, 1) * 12, false,
                                   "crowd skinned normals");
  m.empty = ctx.createBuffer(16, false, "crowd no morph targets");
}

GpuSkinnedCrowd::~GpuSkinnedCrowd() = default;

double GpuSkinnedCrowd::skin(std::span<const Mat4> palettes, anim::SkinningMethod method) {
  Impl& m = *impl_;
  if (palettes.size() != m.instances * m.joints)
    throw Error("GPU crowd: " + std::to_string(palettes.size()) + " palette matrices for " +
                std::to_string(m.instances) + " instances of " + std::to_string(m.joints) + " joints");
  std::vector<float> packed;
  if (method == anim::SkinningMethod::kDualQuaternion) {
    packSkinDualQuats(palettes, packed);
    std::memcpy(m.dq.mapped, packed.data(), packed.size() * 4);
  } else {
    packSkinPalette(palettes, packed);
    std::memcpy(m.palette.mapped, packed.data(), packed.size() * 4);
  }
  SkinPush p{};
  p.positions = m.positions.address, p.normals = m.normals.address, p.joints = m.joint_ids.address,
  p.weights = m.weights.address;
  p.morph_positions = m.empty.address, p.morph_normals = m.empty.address, p.morph_weights = m.empty.address;
  p.palette = m.palette.address, p.dq_palette = m.dq.address, p.out_positions = m.out_positions.address,
  p.out_normals = m.out_normals.address;
  p.vertex_count = static_cast<uint32_t>(m.vertices);
  p.method = method == anim::SkinningMethod::kDualQuaternion ? SF_SKIN_METHOD_DQS : SF_SKIN_METHOD_LBS;
  p.flags = (m.has_normals ? SF_SKIN_FLAG_NORMALS : 0u) | SF_SKIN_FLAG_SKINNED |
            (m.eight ? SF_SKIN_FLAG_EIGHT : 0u);
  p.joint_count = static_cast<uint32_t>(m.joints);
  return dispatchSkin(m.ctx, m.pass, m.queries, p, static_cast<uint32_t>(m.instances));
}

std::vector<Vec3> GpuSkinnedCrowd::positions(size_t instance) {
  Impl& m = *impl_;
  if (instance >= m.instances)
    throw Error("GPU crowd: instance " + std::to_string(instance) + " out of range");
  gpu::Buffer staging = m.ctx.createBuffer(m.vertices * 12, true, "crowd readback");
  const auto lock = m.ctx.lock();  // (gpu::Context::lock)
  VkCommandBuffer cmd = m.ctx.begin();
  VkBufferCopy region{instance * m.vertices * 12, 0, m.vertices * 12};
  vkCmdCopyBuffer(cmd, m.out_positions.buffer, staging.buffer, 1, &region);
  m.ctx.submit(cmd);
  std::vector<Vec3> out(m.vertices);
  std::memcpy(out.data(), staging.mapped, m.vertices * 12);
  return out;
}

}  // namespace sf
