#include "deform/gpu_skinning.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "deform/skin_shared.h"
#include "gpu/gpu.h"

namespace sf {

namespace {

using namespace skin_layout;

const uint32_t kSkinShader[] = {
#include "skin.inc"
};

}  // namespace

struct GpuSkinner::Impl {
  gpu::Context& ctx;
  gpu::ComputePipeline pipeline;
  VkQueryPool queries = VK_NULL_HANDLE;

  explicit Impl(gpu::Context& c) : ctx(c), pipeline(c, kSkinShader, sizeof(SkinPush), SF_SKIN_WG, "skin") {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2;
    SF_VK_CHECK(vkCreateQueryPool(ctx.device(), &qi, nullptr, &queries));
    ctx.setName(VK_OBJECT_TYPE_QUERY_POOL, reinterpret_cast<uint64_t>(queries), "skin timestamps");
  }
  ~Impl() { vkDestroyQueryPool(ctx.device(), queries, nullptr); }

  // A host-visible buffer holding `data` (these inputs are small; a crowd would keep them resident).
  gpu::Buffer upload(const void* data, size_t bytes, const char* name) {
    gpu::Buffer b = ctx.createBuffer(bytes, true, name);
    if (bytes) std::memcpy(b.mapped, data, bytes);
    return b;
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

  std::vector<uint32_t> joints(n * SF_SKIN_INFLUENCES, 0);
  std::vector<float> weights(n * SF_SKIN_INFLUENCES, 0.0f);
  if (skinned)
    for (size_t v = 0; v < n; ++v)
      for (size_t k = 0; k < 4; ++k) {
        joints[v * SF_SKIN_INFLUENCES + k] = job.joints0[v][k];
        weights[v * SF_SKIN_INFLUENCES + k] = job.weights0[v][k];
        if (!job.joints1.empty()) {
          joints[v * SF_SKIN_INFLUENCES + 4 + k] = job.joints1[v][k];
          weights[v * SF_SKIN_INFLUENCES + 4 + k] = job.weights1[v][k];
        }
      }
  const size_t t_count = targets.size();
  std::vector<Vec3> morph_pos(t_count * n, Vec3{0, 0, 0}), morph_nrm(has_normals ? t_count * n : 0, Vec3{0, 0, 0});
  for (size_t t = 0; t < t_count; ++t) {
    if (!targets[t].positions.empty()) std::copy(targets[t].positions.begin(), targets[t].positions.end(), morph_pos.begin() + static_cast<std::ptrdiff_t>(t * n));
    if (has_normals && !targets[t].normals.empty())
      std::copy(targets[t].normals.begin(), targets[t].normals.end(), morph_nrm.begin() + static_cast<std::ptrdiff_t>(t * n));
  }
  std::vector<float> palette(job.palette.size() * 12), dq(job.dq_palette.size() * SF_SKIN_DQ_FLOATS, 0.0f);
  for (size_t j = 0; j < job.palette.size(); ++j)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) palette[j * 12 + static_cast<size_t>(r * 4 + c)] = job.palette[j].m[r][c];
  for (size_t j = 0; j < job.dq_palette.size(); ++j) {
    const anim::DualQuatJoint& d = job.dq_palette[j];
    float* o = dq.data() + j * SF_SKIN_DQ_FLOATS;
    const float q[8] = {d.real.w, d.real.x, d.real.y, d.real.z, d.dual.w, d.dual.x, d.dual.y, d.dual.z};
    std::memcpy(o, q, sizeof(q));
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) o[8 + r * 3 + c] = d.stretch.m[r][c];
  }

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
  gpu::Buffer b_out_n = m.ctx.createBuffer(std::max<size_t>(job.normals.size(), 1) * 12, true, "skinned normals");

  SkinPush p{};
  p.positions = b_pos.address, p.normals = b_nrm.address, p.joints = b_joints.address, p.weights = b_weights.address;
  p.morph_positions = b_mpos.address, p.morph_normals = b_mnrm.address, p.morph_weights = b_mw.address;
  p.palette = b_pal.address, p.dq_palette = b_dq.address, p.out_positions = b_out.address, p.out_normals = b_out_n.address;
  p.vertex_count = static_cast<uint32_t>(n);
  p.target_count = static_cast<uint32_t>(t_count);
  p.method = job.method == anim::SkinningMethod::kDualQuaternion ? SF_SKIN_METHOD_DQS : SF_SKIN_METHOD_LBS;
  p.flags = (has_normals ? SF_SKIN_FLAG_NORMALS : 0u) | (skinned ? SF_SKIN_FLAG_SKINNED : 0u);

  VkCommandBuffer cmd = m.ctx.begin();
  vkCmdResetQueryPool(cmd, m.queries, 0, 2);
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, m.queries, 0);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, m.pipeline.pipeline());
  vkCmdPushConstants(cmd, m.pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(SkinPush), &p);
  vkCmdDispatch(cmd, static_cast<uint32_t>((n + SF_SKIN_WG - 1) / SF_SKIN_WG), 1, 1);
  gpu::computeBarrier(cmd);
  VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0, nullptr, 0, nullptr);
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m.queries, 1);
  m.ctx.submit(cmd);
  std::memcpy(job.out_positions.data(), b_out.mapped, n * 12);
  if (has_normals) std::memcpy(job.out_normals.data(), b_out_n.mapped, job.normals.size() * 12);
  uint64_t ticks[2];
  SF_VK_CHECK(vkGetQueryPoolResults(m.ctx.device(), m.queries, 0, 2, sizeof(ticks), ticks, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  return static_cast<double>(ticks[1] - ticks[0]) * m.ctx.timestampPeriodNs() * 1e-6;
}

}  // namespace sf
