// A level-of-detail stream's pool on the GPU (lod/gpu_pool.h).
#include "lod/gpu_pool.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/clock.h"
#include "core/covariance.h"
#include "core/error.h"
#include "core/parallel.h"
#include "render/frame_passes.h"

namespace sf::lod {
namespace {

const uint32_t kGatherShader[] = {
#include "lod_gather.inc"
};

struct GatherPush {
  VkDeviceAddress selection;
  VkDeviceAddress pool[4];   // positions, covariances, opacities, sh
  VkDeviceAddress host[4];   // positions, covariances, opacities, sh (of the rows uploaded with theirs)
  VkDeviceAddress host_mix;  // per host row {from, to, t}
  VkDeviceAddress target[4];
  uint32_t rows, sh_stride;
};

constexpr uint32_t kHostRow = 0x80000000u;
constexpr size_t kStagingBytes = size_t{64} << 20;  // chunk uploads go through pieces of at most this

size_t align16(size_t x) {
  return (x + 15) & ~size_t{15};
}

// One gaussian's words as the frame's slots hold them: centre, object-space covariance, opacity, SH.
struct RowArrays {
  uint8_t *positions, *covariances, *opacities, *sh;
  size_t stride_bytes;
  void put(size_t row, Vec3 p, Vec3 scale, Quat rotation, float opacity, const float* coeffs) const {
    const Cov6 cov = covarianceFromScaleRotation(scale, rotation);  // as VulkanResidency::placeObjects
    std::memcpy(positions + row * 12, &p, 12);
    std::memcpy(covariances + row * 24, &cov, 24);
    std::memcpy(opacities + row * 4, &opacity, 4);
    if (coeffs) std::memcpy(sh + row * stride_bytes, coeffs, stride_bytes);
  }
};

}  // namespace

GatherPass::GatherPass(gpu::Context& ctx)
    : pipeline_(std::make_unique<gpu::ComputePipeline>(ctx, kGatherShader, sizeof(GatherPush), 256,
                                                       "lod_gather")) {}
GatherPass::~GatherPass() = default;

GpuPool::GpuPool(gpu::Context& ctx, std::shared_ptr<const GatherPass> pass, const LodStream& stream)
    : ctx_(ctx), pass_(std::move(pass)), capacity_(stream.poolNodes()) {
  const Hierarchy& h = stream.hierarchy();
  if (capacity_ >= (uint64_t{1} << 31))
    throw Error(h.dir + ": a GPU pool of " + std::to_string(capacity_) +
                " slots is too large (at most 2147483647: slots are 31-bit in the frame's selection)");
  stride_ = static_cast<uint32_t>(shCoeffCount(h.index.sh_degree) * 3);
  stamp_.assign(h.chunks.size() + 1, 0);
  slots_.resize(h.chunks.size() + 1);
}

GpuPool::~GpuPool() = default;

uint32_t GpuPool::takeSlot() {
  ++used_;
  if (!free_.empty()) {
    const uint32_t s = free_.back();
    free_.pop_back();
    return s;
  }
  if (next_ >= capacity_)  // the stream holds at most capacity_ nodes: never reached
    throw Error("level-of-detail GPU pool: no free slot of " + std::to_string(capacity_));
  return static_cast<uint32_t>(next_++);
}

void GpuPool::grow(uint64_t slots) {
  if (slots <= allocated_) return;
  const uint64_t n = std::min(capacity_, std::max(slots, allocated_ + allocated_ / 2));
  gpu::Buffer old[4] = {std::move(positions_), std::move(covariances_), std::move(opacities_),
                        std::move(sh_)};
  positions_ = ctx_.createBuffer(n * 12, false, "lod pool positions");
  covariances_ = ctx_.createBuffer(n * 24, false, "lod pool covariances");
  opacities_ = ctx_.createBuffer(n * 4, false, "lod pool opacities");
  sh_ = ctx_.createBuffer(std::max<uint64_t>(n * stride_ * 4, 4), false, "lod pool sh");
  if (allocated_) {
    VkCommandBuffer cmd = ctx_.begin();
    gpu::Buffer* grown[4] = {&positions_, &covariances_, &opacities_, &sh_};
    for (int k = 0; k < 4; ++k) {
      const VkBufferCopy region{0, 0, old[k].size};
      vkCmdCopyBuffer(cmd, old[k].buffer, grown[k]->buffer, 1, &region);
    }
    ctx_.submit(cmd, "growing the level-of-detail pool");
  }
  allocated_ = n;
}

void GpuPool::prepare(LodStream& stream) {
  try {
    prepareFrame(stream);
  } catch (...) {
    // Nothing of the pool is trusted after a failed upload: the next frame places every chunk again.
    std::fill(stamp_.begin(), stamp_.end(), 0);
    for (std::vector<uint32_t>& s : slots_) s.clear();
    free_.clear();
    next_ = used_ = 0;
    rows_ = host_rows_ = 0;
    given_ = false;
    throw;
  }
}

void GpuPool::prepareFrame(LodStream& stream) {
  const Clock::time_point t0 = Clock::now();
  auto lock = ctx_.lock();
  const Hierarchy& h = stream.hierarchy();
  const size_t chunks = h.chunks.size();
  const std::vector<uint64_t>& stamps = stream.installStamps();
  // Chunks the stream evicted (or evicted and read again) give their slots back, in reverse so that the next
  // chunk takes them in order (long runs to copy).
  for (size_t c = 0; c < chunks; ++c) {
    if (stamp_[c] == 0 || stamp_[c] == stamps[c]) continue;
    free_.insert(free_.end(), slots_[c].rbegin(), slots_[c].rend());
    used_ -= slots_[c].size();
    slots_[c].clear();
    stamp_[c] = 0;
  }
  // Chunks installed since the last frame (the top chunk on the first) take slots.
  struct Placed {
    uint32_t chunk;  // kNone: the top chunk
    size_t count;
  };
  std::vector<Placed> fresh;
  uint64_t fresh_nodes = 0;
  if (h.index.has_top && stamp_[chunks] == 0) {
    fresh.push_back({kNone, h.top.nodes.size()});
    stamp_[chunks] = 1;
  }
  for (size_t c = 0; c < chunks; ++c)
    if (stamps[c] != 0 && stamp_[c] != stamps[c]) {
      fresh.push_back({static_cast<uint32_t>(c), h.chunks[c].nodes.size()});
      stamp_[c] = stamps[c];
    }
  for (const Placed& p : fresh) {
    std::vector<uint32_t>& s = slots_[p.chunk == kNone ? chunks : p.chunk];
    s.resize(p.count);
    for (uint32_t& slot : s) slot = takeSlot();
    fresh_nodes += p.count;
  }
  grow(next_);
  // Their nodes uploaded: packed in pieces of at most kStagingBytes (in parallel), one copy per run of
  // consecutive slots.
  const size_t row_bytes = 40 + size_t{stride_} * 4;
  const size_t batch = std::min<size_t>(std::max<size_t>(1, kStagingBytes / row_bytes), fresh_nodes);
  if (fresh_nodes && staging_.size < batch * row_bytes)
    staging_ = ctx_.createBuffer(batch * row_bytes, true, "lod pool staging");
  std::vector<NodeRef> fresh_refs;  // every fresh node, in the order of their slots' lists
  std::vector<uint32_t> fresh_slots;
  fresh_refs.reserve(fresh_nodes), fresh_slots.reserve(fresh_nodes);
  for (const Placed& p : fresh) {
    const std::vector<uint32_t>& s = slots_[p.chunk == kNone ? chunks : p.chunk];
    for (size_t i = 0; i < p.count; ++i)
      fresh_refs.push_back({p.chunk, static_cast<uint32_t>(i)}), fresh_slots.push_back(s[i]);
  }
  for (size_t first = 0; first < fresh_refs.size(); first += batch) {
    const size_t n = std::min(batch, fresh_refs.size() - first);
    uint8_t* base = static_cast<uint8_t*>(staging_.mapped);
    const RowArrays a{base, base + batch * 12, base + batch * 36, base + batch * 40, size_t{stride_} * 4};
    parallelForRange(n, 4096, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        const NodeRef ref = fresh_refs[first + i];
        const Node& node = nodeAt(h, ref);
        a.put(i, node.position, node.scale, node.rotation, node.opacity, shAt(h, ref));
      }
    });
    const size_t sizes[4] = {12, 24, 4, size_t{stride_} * 4};
    const size_t starts[4] = {0, batch * 12, batch * 36, batch * 40};
    gpu::Buffer* dst[4] = {&positions_, &covariances_, &opacities_, &sh_};
    const uint32_t* slot = fresh_slots.data() + first;
    VkCommandBuffer cmd = ctx_.begin();
    for (int k = 0; k < 4; ++k) {
      std::vector<VkBufferCopy> regions;
      for (size_t r = 0; r < n;) {
        size_t e = r + 1;
        while (e < n && slot[e] == slot[e - 1] + 1) ++e;
        regions.push_back({starts[k] + r * sizes[k], uint64_t{slot[r]} * sizes[k], (e - r) * sizes[k]});
        r = e;
      }
      vkCmdCopyBuffer(cmd, staging_.buffer, dst[k]->buffer, static_cast<uint32_t>(regions.size()),
                      regions.data());
    }
    ctx_.submit(cmd, "uploading level-of-detail chunks to the pool");
  }

  // The selection: each row's slot, or its index among the host rows, which follow in full.
  const GaussianCloud& cloud = stream.hostRows();  // its host rows: the rest come from the slots
  const std::vector<NodeRef>& rows = stream.rows();
  if (rows.size() != cloud.size() || static_cast<uint32_t>(cloud.shStride()) != stride_)
    throw Error(h.dir + ": the stream's rows do not match its cloud");
  const std::vector<LodStream::ShMix>& mixes = stream.shMixes();
  // In stretches of rows, in parallel: the host rows each stretch holds, then each stretch written from
  // where the ones before it leave the host rows, the SH mixes and the ghosts' SH.
  constexpr size_t kStretch = 65536;
  const size_t stretches = (rows.size() + kStretch - 1) / kStretch;
  std::vector<uint32_t> host_before(stretches + 1, 0);
  parallelFor(stretches, [&](size_t c) {
    uint32_t n = 0;
    for (size_t i = c * kStretch, end = std::min(rows.size(), i + kStretch); i < end; ++i)
      n += rows[i] == kNoNode ? 1u : 0u;
    host_before[c + 1] = n;
  });
  for (size_t c = 0; c < stretches; ++c) host_before[c + 1] += host_before[c];
  const uint32_t host = host_before[stretches];
  const uint32_t host_sh = host - static_cast<uint32_t>(mixes.size());  // ghosts: their SH uploaded
  if (mixes.size() > host) throw Error(h.dir + ": the stream's SH mixes do not match its rows");
  rows_ = static_cast<uint32_t>(rows.size());
  host_rows_ = host;
  host_at_ = align16(size_t{rows_} * 4);
  const size_t sh_bytes = size_t{stride_} * 4, host_bytes = size_t{host} * 52 + size_t{host_sh} * sh_bytes;
  const size_t frame_bytes = host_at_ + host_bytes;
  if (frame_.size < std::max<size_t>(frame_bytes, 16))
    frame_ = ctx_.createBuffer(std::max<size_t>(frame_bytes + frame_bytes / 4, 1024), true, "lod selection");
  uint8_t* base = static_cast<uint8_t*>(frame_.mapped);
  uint32_t* selection = reinterpret_cast<uint32_t*>(base);
  uint8_t* host_base = base + host_at_;
  const RowArrays a{host_base, host_base + size_t{host} * 12, host_base + size_t{host} * 36,
                    host_base + size_t{host} * 52, sh_bytes};
  uint32_t* mix_words = reinterpret_cast<uint32_t*>(host_base + size_t{host} * 40);
  auto slotOf = [&](NodeRef r) {
    const uint32_t c = r.chunk == kNone ? static_cast<uint32_t>(chunks) : r.chunk;
    if (stamp_[c] == 0 || r.index >= slots_[c].size())
      throw Error(h.dir + ": the cut draws node " + std::to_string(r.index) + " of chunk " +
                  (r.chunk == kNone ? std::string("top") : std::to_string(r.chunk)) +
                  ", which is not in the GPU pool");
    return slots_[c][r.index];
  };
  auto firstMix = [&](size_t row) {
    return static_cast<size_t>(
        std::lower_bound(mixes.begin(), mixes.end(), row,
                         [](const LodStream::ShMix& x, size_t r) { return x.row < r; }) -
        mixes.begin());
  };
  parallelFor(stretches, [&](size_t c) {
    const size_t begin = c * kStretch, end = std::min(rows.size(), begin + kStretch);
    uint32_t k = host_before[c];
    size_t m = firstMix(begin);
    uint32_t g = k - static_cast<uint32_t>(m);
    for (size_t i = begin; i < end; ++i) {
      const NodeRef r = rows[i];
      if (!(r == kNoNode)) {
        selection[i] = slotOf(r);
        continue;
      }
      uint32_t* w = mix_words + size_t{k} * 3;
      a.put(k, cloud.positions[i], cloud.scales[i], cloud.rotations[i], cloud.opacities[i], nullptr);
      if (m < mixes.size() && mixes[m].row == i) {
        const LodStream::ShMix& x = mixes[m++];
        w[0] = slotOf(x.from), w[1] = slotOf(x.to);
        std::memcpy(&w[2], &x.t, 4);
      } else {
        std::memcpy(a.sh + size_t{g} * sh_bytes, cloud.sh.data() + i * stride_, sh_bytes);
        w[0] = kHostRow | g++, w[1] = 0, w[2] = 0;
      }
      selection[i] = kHostRow | k++;
    }
    if (m != firstMix(end) || (end == rows.size() && m != mixes.size()))
      throw Error(h.dir + ": an SH mix names a row that is not computed on the host");
  });
  // Into device memory, once for every frame that draws this cut (the frames in between draw it again).
  if (frame_device_.size < frame_bytes)
    frame_device_ = ctx_.createBuffer(frame_.size, false, "lod selection (device)");
  if (frame_bytes) {
    VkCommandBuffer cmd = ctx_.begin();
    const VkBufferCopy region{0, 0, frame_bytes};
    vkCmdCopyBuffer(cmd, frame_.buffer, frame_device_.buffer, 1, &region);
    ctx_.submit(cmd, "uploading the level-of-detail selection");
  }
  const double ms = msSince(t0);
  const LodStream::GpuFigures figures{used_,      allocated_,  uint64_t{rows_} * 4,     host,  host_sh,
                                      host_bytes, fresh_nodes, fresh_nodes * row_bytes, rows_, ms};
  stream.setGpuFigures(figures);
  given_ = true;
}

void GpuPool::drawAgain(LodStream& stream) const {
  LodStream::GpuFigures f;
  f.slots_used = used_, f.slots_allocated = allocated_, f.rows = rows_;
  stream.setGpuFigures(f);
}

void GpuPool::addPasses(FramePasses& frame, const GpuSplatTargets& targets) const {
  if (targets.count != rows_ || targets.sh_stride != stride_)
    throw Error("level-of-detail GPU pool: the frame gave " + std::to_string(targets.count) + " slots of " +
                std::to_string(targets.sh_stride) + " SH floats for " + std::to_string(rows_) + " rows of " +
                std::to_string(stride_));
  if (rows_ == 0) return;
  const VkDeviceAddress host = frame_device_.address + host_at_;
  GatherPush p{};
  p.selection = frame_device_.address;
  p.pool[0] = positions_.address, p.pool[1] = covariances_.address, p.pool[2] = opacities_.address,
  p.pool[3] = sh_.address;
  p.host[0] = host, p.host[1] = host + uint64_t{host_rows_} * 12,
  p.host[2] = host + uint64_t{host_rows_} * 36, p.host[3] = host + uint64_t{host_rows_} * 52;
  p.host_mix = host + uint64_t{host_rows_} * 40;
  p.target[0] = targets.positions, p.target[1] = targets.covariances, p.target[2] = targets.opacities,
  p.target[3] = targets.sh;
  p.rows = rows_, p.sh_stride = stride_;
  // The pool's slots and this frame's selection were written by earlier submissions (uploads).
  frame.add("level of detail: gather", {}, {targets.slots},
            [pipe = &pass_->pipeline(), p](void* command_buffer) {
              auto cmd = static_cast<VkCommandBuffer>(command_buffer);
              vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipeline());
              vkCmdPushConstants(cmd, pipe->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(GatherPush), &p);
              const uint32_t groups = (p.rows + 255) / 256, x = std::min<uint32_t>(groups, 65535),
                             y = (groups + x - 1) / x;
              vkCmdDispatch(cmd, x, y, 1);
            });
}

}  // namespace sf::lod
