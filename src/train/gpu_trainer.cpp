// The GPU trainer's host side: buffers, the activation source, the frame tail, the step loop
// (train/gpu_trainer.h).
#include "train/gpu_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/clock.h"
#include "core/error.h"
#include "gpu/gpu.h"
#include "render/frame_passes.h"
#include "render/vulkan_renderer.h"
#include "train/random.h"
#include "train/train_shared.h"

namespace sf::train {

namespace {

const uint32_t kTrainActivate[] = {
#include "train_activate.inc"
};
const uint32_t kTrainAdam[] = {
#include "train_adam.inc"
};
const uint32_t kTrainGaussianBackward[] = {
#include "train_gaussian_backward.inc"
};
const uint32_t kTrainLoss[] = {
#include "train_loss.inc"
};
const uint32_t kTrainNoise[] = {
#include "train_noise.inc"
};
const uint32_t kTrainRasterBackward[] = {
#include "train_raster_backward.inc"
};

using train_layout::GpuActivatePush;
using train_layout::GpuTrainPush;
constexpr uint32_t kWg = SF_TRAIN_WG;
constexpr uint32_t kTile = 16;
// Steps are recorded in batches of up to kMaxStepsPerSubmission, one submission each: the host waits once per
// batch (TrainOptions::steps_per_submission), and a batch ends early at a step after which the host works (a
// relocation, a log line).
static_assert(kMaxStepsPerSubmission == kMaxFramesPerSubmission,
              "a training step is one frame of the renderer's submission");
constexpr size_t kStepsPerSubmission = kMaxStepsPerSubmission;

uint32_t ceilDiv(uint64_t a, uint32_t b) {
  return static_cast<uint32_t>((a + b - 1) / b);
}

// Flat layout of the groups (train_shared.h) <-> GaussianParams.
std::vector<float> flatten(const GaussianParams& p) {
  std::vector<float> f;
  f.reserve(SF_TRAIN_PARAMS * p.size());
  for (const std::vector<float>* v : {&p.means, &p.quats, &p.log_scales, &p.opacity_logits, &p.color_logits})
    f.insert(f.end(), v->begin(), v->end());
  return f;
}
void unflatten(const std::vector<float>& f, size_t n, std::vector<float>* groups[5]) {
  const size_t widths[5] = {3, 4, 3, 1, 3};
  size_t at = 0;
  for (int g = 0; g < 5; ++g) {
    groups[g]->assign(f.begin() + static_cast<std::ptrdiff_t>(at),
                      f.begin() + static_cast<std::ptrdiff_t>(at + widths[g] * n));
    at += widths[g] * n;
  }
}

// The tail's passes timed per step (GPU timestamps around them).
constexpr size_t kTailPasses = 3;
const char* const kTailPassNames[kTailPasses] = {"loss", "raster backward",
                                                 "gaussian backward + noise + Adam"};

class Pipelines {
 public:
  explicit Pipelines(gpu::Context& ctx)
      : activate(ctx, kTrainActivate, sizeof(GpuActivatePush), kWg, "train activate"),
        loss(ctx, kTrainLoss, sizeof(GpuTrainPush), kWg, "train loss"),
        raster_backward(ctx, kTrainRasterBackward, sizeof(GpuTrainPush), kTile, "train raster backward"),
        gaussian_backward(ctx, kTrainGaussianBackward, sizeof(GpuTrainPush), kWg, "train gaussian backward"),
        noise(ctx, kTrainNoise, sizeof(GpuTrainPush), kWg, "train noise"),
        adam(ctx, kTrainAdam, sizeof(GpuTrainPush), kWg, "train adam") {}
  gpu::ComputePipeline activate, loss, raster_backward, gaussian_backward, noise, adam;
};

template <typename Push>
void dispatch(VkCommandBuffer cmd, const gpu::ComputePipeline& pl, const Push& p, uint32_t x,
              uint32_t y = 1) {
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl.pipeline());
  vkCmdPushConstants(cmd, pl.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push), &p);
  if (x && y) vkCmdDispatch(cmd, x, y, 1);
}
// A 1D pass over `items` threads as rows of at most 65535 workgroups (the smallest maxComputeWorkGroupCount
// Vulkan allows; the shaders' linearIndex() undoes it).
template <typename Push>
void dispatch1d(VkCommandBuffer cmd, const gpu::ComputePipeline& pl, const Push& p, uint64_t items) {
  const uint64_t groups = (items + kWg - 1) / kWg;
  const uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(groups, 65535)),
                 y = static_cast<uint32_t>((groups + 65534) / 65535);
  dispatch(cmd, pl, p, x, y);
}

// Everything one training run holds on the device.
class GpuState : public GpuSplatSource, public FrameTail {
 public:
  GpuState(VulkanRenderer& renderer, size_t n, int width, int height, size_t views)
      : renderer_(renderer), ctx_(renderer.context()), n_(n), width_(width), height_(height) {
    // The device check comes first: the pipelines use 64-bit integer atomics.
    if (std::string why = gpuTrainingUnsupported(renderer); !why.empty()) throw Error(why);
    if (n == 0 || n > (1u << 26)) throw Error("train: the GPU trainer takes 1 to 2^26 gaussians");
    pipes_ = std::make_unique<Pipelines>(ctx_);
    const VkDeviceSize pixels = static_cast<VkDeviceSize>(width) * static_cast<VkDeviceSize>(height);
    params_ = ctx_.createBuffer(n * SF_TRAIN_PARAMS * 4, false, "train params");
    grads_ = ctx_.createBuffer(n * SF_TRAIN_PARAMS * 4, false, "train grads");
    moments_ = ctx_.createBuffer(n * SF_TRAIN_PARAMS * 8, false, "train moments");
    grad2d_ = ctx_.createBuffer(n * SF_TRAIN_GRAD2D * 8, false, "train 2D gradient sums");
    targets_ = ctx_.createBuffer(std::max<VkDeviceSize>(1, views) * pixels * 16, false, "train views");
    pixel_grads_ = ctx_.createBuffer(pixels * 16, false, "train pixel gradients");
    partial_count_ = ceilDiv(pixels, kWg);
    partials_ = ctx_.createBuffer(static_cast<VkDeviceSize>(partial_count_) * kStepsPerSubmission * 4, true,
                                  "train loss partials");  // per step of a batch
    fill(moments_, 0);
    fill(grad2d_, 0);
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = static_cast<uint32_t>(kStepsPerSubmission * (kTailPasses + 1));
    SF_VK_CHECK(vkCreateQueryPool(ctx_.device(), &qi, nullptr, &queries_));
    cloud_.resize(n, 0);  // gives the frame its slot count and SH layout; the values come from the activation
    push_.params = params_.address, push_.grads = grads_.address, push_.moments = moments_.address,
    push_.grad2d = grad2d_.address;
    push_.pixel_grads = pixel_grads_.address, push_.partials = partials_.address;
    push_.count = static_cast<uint32_t>(n);
  }

  ~GpuState() override { vkDestroyQueryPool(ctx_.device(), queries_, nullptr); }
  GpuState(const GpuState&) = delete;
  GpuState& operator=(const GpuState&) = delete;

  void uploadView(size_t index, std::span<const float> rgba) {
    upload(targets_, rgba.data(), rgba.size_bytes(),
           index * static_cast<size_t>(width_) * static_cast<size_t>(height_) * 16);
  }
  void setParams(const GaussianParams& p) {
    const std::vector<float> f = flatten(p);
    upload(params_, f.data(), f.size() * 4, 0);
  }
  GaussianParams params() {
    GaussianParams p;
    std::vector<float>* groups[5] = {&p.means, &p.quats, &p.log_scales, &p.opacity_logits, &p.color_logits};
    unflatten(downloadFloats(params_, n_ * SF_TRAIN_PARAMS), n_, groups);
    return p;
  }
  ParamGrads grads() {
    ParamGrads g;
    std::vector<float>* groups[5] = {&g.means, &g.quats, &g.log_scales, &g.opacity_logits, &g.color_logits};
    unflatten(downloadFloats(grads_, n_ * SF_TRAIN_PARAMS), n_, groups);
    return g;
  }
  std::vector<float> moments() { return downloadFloats(moments_, n_ * SF_TRAIN_PARAMS * 2); }
  void setMoments(const std::vector<float>& m) { upload(moments_, m.data(), m.size() * 4, 0); }

  // One step's inputs: the view, its background grey, the loss weights, the learning rates, noise and the
  // Adam step. update: noise and Adam after the gradients.
  struct StepArgs {
    const Camera* cam = nullptr;
    size_t view = 0;
    float grey = 0, alpha_weight = 0, entropy_weight = 0;
    float lr[5] = {};
    float noise_scale = 0;
    uint32_t adam_step = 1, seed = 0;
    bool update = false;
  };
  struct StepResult {
    double loss = 0, forward_ms = 0, tail_ms = 0;
    VulkanPassTimes times;
    double tail_pass_ms[kTailPasses] = {};  // the tail's passes (kTailPassNames)
  };
  // Up to kStepsPerSubmission steps, in order, in one submission: each the frame with the tail.
  std::vector<StepResult> steps(std::span<const StepArgs> args) {
    if (args.empty() || args.size() > kStepsPerSubmission)
      throw Error("train: a batch holds 1 to " + std::to_string(kStepsPerSubmission) + " steps");
    std::vector<FrameView> views(args.size());
    run_push_.resize(args.size());
    run_update_.resize(args.size());
    for (size_t k = 0; k < args.size(); ++k) {
      const StepArgs& a = args[k];
      GpuTrainPush& p = run_push_[k];
      p = push_;
      p.target = targets_.address + a.view * static_cast<size_t>(width_) * static_cast<size_t>(height_) * 16;
      p.partials = partials_.address + k * partial_count_ * 4;
      p.background = a.grey, p.alpha_weight = a.alpha_weight, p.entropy_weight = a.entropy_weight,
      p.noise_scale = a.noise_scale;
      for (int g = 0; g < 5; ++g) p.lr[g] = a.lr[g];
      p.step = a.adam_step, p.seed = a.seed;
      run_update_[k] = a.update;
      views[k].camera = *a.cam;
      views[k].background = {a.grey, a.grey, a.grey};
    }
    tiles_x_ = ceilDiv(static_cast<uint32_t>(width_), kTile),
    tiles_y_ = ceilDiv(static_cast<uint32_t>(height_), kTile);
    RenderObject object(&cloud_);
    object.gpu_source = this;
    const std::vector<VulkanFrameStats> st = renderer_.renderBatchWithTail(
        std::span<const RenderObject>(&object, 1), views, RenderSettings{}, *this);
    if (!st[0].first_slots.empty() && st[0].first_slots[0] != 0)
      throw Error("train: the renderer placed the trained cloud at slot " +
                  std::to_string(st[0].first_slots[0]));
    std::vector<StepResult> out(args.size());
    const auto* partials = static_cast<const float*>(partials_.mapped);
    // The tail's timestamps, per step of the batch (a step rendered again after a key overflow wrote them
    // again, in the same slots).
    std::vector<uint64_t> ticks(args.size() * (kTailPasses + 1));
    SF_VK_CHECK(vkGetQueryPoolResults(ctx_.device(), queries_, 0, static_cast<uint32_t>(ticks.size()),
                                      ticks.size() * 8, ticks.data(), 8,
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    for (size_t k = 0; k < args.size(); ++k) {
      const uint64_t* tk = ticks.data() + k * (kTailPasses + 1);
      for (size_t q = 0; q < kTailPasses; ++q)
        out[k].tail_pass_ms[q] = static_cast<double>(tk[q + 1] - tk[q]) * ctx_.timestampPeriodNs() * 1e-6;
      for (uint32_t i = 0; i < partial_count_; ++i) out[k].loss += partials[k * partial_count_ + i];
      out[k].tail_ms = st[k].times.readback;
      out[k].forward_ms = st[k].times.total - st[k].times.readback;
      out[k].times = st[k].times;
    }
    return out;
  }
  StepResult step(const StepArgs& a) { return steps({&a, 1})[0]; }

  // The validation score of the parameters on the device, rendered by the frame (the activation as its
  // source, as in a step) over each view: what validate() computes with the CPU forward, without moving the
  // parameters or rendering on the host.
  ValidationScore validate(const std::vector<View>& views, Vec3 background) {
    ValidationSums sums;
    addRendered(sums, views, background);
    return sums.score();
  }
  void addRendered(ValidationSums& sums, const std::vector<View>& views, Vec3 background) {
    RenderObject object(&cloud_);
    object.gpu_source = this;
    RenderSettings settings;
    settings.background = background;
    settings.half_raster = false;  // scored as the CPU's validation renders it (fp32 blending)
    for (const View& v :
         views) {  // any size: the frame sizes its image per camera, the train steps' own again
      const ImageRGBA image = renderer_.render(std::span<const RenderObject>(&object, 1), v.camera, settings);
      sums.add(v, image.pixels.data(), 4, background);
    }
  }

  // GpuSplatSource: the parameters activated into the frame's slots.
  void addPasses(FramePasses& frame, const GpuSplatTargets& t) const override {
    GpuActivatePush p{};
    p.params = params_.address;
    p.positions = t.positions, p.covariances = t.covariances, p.opacities = t.opacities, p.sh = t.sh;
    p.count = t.count, p.sh_stride = t.sh_stride;
    frame.add("training: activate", {frame.resource("training: parameters")}, {t.slots},
              [pipes = pipes_.get(), p](void* cmd) {
                dispatch1d(static_cast<VkCommandBuffer>(cmd), pipes->activate, p, p.count);
              });
  }
  // FrameTail: loss, backward, noise, Adam, each a pass of the frame's graph (its barriers between them).
  void addPasses(FramePasses& frame, uint64_t frame_address, uint32_t run) const override {
    GpuTrainPush p = run_push_.at(run);
    p.frame = frame_address;
    const uint64_t pixels = static_cast<uint64_t>(width_) * static_cast<uint64_t>(height_);
    const uint32_t q0 = run * (kTailPasses + 1);
    const FrameResources& fr = frame.frame();
    const FrameResource params = frame.resource("training: parameters"),
                        pixel_grads = frame.resource("training: pixel gradients"),
                        grad2d = frame.resource("training: 2D gradients"),
                        grads = frame.resource("training: gradients");
    const Pipelines* pipes = pipes_.get();
    const VkQueryPool queries = queries_;
    auto stamp = [queries, q0](VkCommandBuffer cmd, uint32_t q) {
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, q0 + q);
    };
    frame.add("training: loss", {fr.image, fr.counters}, {pixel_grads}, [=](void* c) {
      auto cmd = static_cast<VkCommandBuffer>(c);
      vkCmdResetQueryPool(cmd, queries, q0, kTailPasses + 1);
      stamp(cmd, 0);
      dispatch1d(cmd, pipes->loss, p, pixels);
    });
    frame.add("training: raster backward",
              {pixel_grads, fr.image, fr.ranges, fr.pairs, fr.projected, fr.counters}, {grad2d},
              [=, tx = tiles_x_, ty = tiles_y_](void* c) {
                auto cmd = static_cast<VkCommandBuffer>(c);
                stamp(cmd, 1);
                dispatch(cmd, pipes->raster_backward, p, tx, ty);
              });
    const bool update = run_update_.at(run);
    frame.add("training: gaussian backward", {grad2d, params, fr.projected, fr.counters}, {grads, grad2d},
              [=, n = n_](void* c) {
                auto cmd = static_cast<VkCommandBuffer>(c);
                stamp(cmd, 2);
                dispatch1d(cmd, pipes->gaussian_backward, p, n);
                if (!update) stamp(cmd, 3);
              });
    if (!update) return;
    frame.add("training: noise", {fr.counters}, {params},
              [=, n = n_](void* c) { dispatch1d(static_cast<VkCommandBuffer>(c), pipes->noise, p, n); });
    frame.add("training: Adam", {grads, fr.counters}, {params}, [=, n = n_](void* c) {
      auto cmd = static_cast<VkCommandBuffer>(c);
      dispatch1d(cmd, pipes->adam, p, n * SF_TRAIN_PARAMS);
      stamp(cmd, 3);
    });
  }

 private:
  // Each holds the context's lock from the staging buffer's use to the submit's end: the renderer's context
  // may be another thread's too (gpu::Context::lock).
  void fill(gpu::Buffer& b, uint32_t value) {
    const auto lock = ctx_.lock();
    VkCommandBuffer cmd = ctx_.begin();
    vkCmdFillBuffer(cmd, b.buffer, 0, VK_WHOLE_SIZE, value);
    ctx_.submit(cmd);
  }
  void upload(gpu::Buffer& dst, const void* data, size_t bytes, size_t offset) {
    const auto lock = ctx_.lock();
    constexpr size_t kChunk = size_t{64} << 20;
    for (size_t at = 0; at < bytes; at += kChunk) {
      const size_t n = std::min(kChunk, bytes - at);
      if (staging_.size < n)
        staging_ = ctx_.createBuffer(std::max<size_t>(n, size_t{1} << 20), true, "train staging");
      std::memcpy(staging_.mapped, static_cast<const uint8_t*>(data) + at, n);
      VkCommandBuffer cmd = ctx_.begin();
      VkBufferCopy region{0, offset + at, n};
      vkCmdCopyBuffer(cmd, staging_.buffer, dst.buffer, 1, &region);
      ctx_.submit(cmd);
    }
  }
  std::vector<float> downloadFloats(const gpu::Buffer& src, size_t count) {
    const auto lock = ctx_.lock();
    std::vector<float> out(count);
    const size_t bytes = count * 4;
    constexpr size_t kChunk = size_t{64} << 20;
    for (size_t at = 0; at < bytes; at += kChunk) {
      const size_t n = std::min(kChunk, bytes - at);
      if (staging_.size < n)
        staging_ = ctx_.createBuffer(std::max<size_t>(n, size_t{1} << 20), true, "train staging");
      VkCommandBuffer cmd = ctx_.begin();
      VkBufferCopy region{at, 0, n};
      vkCmdCopyBuffer(cmd, src.buffer, staging_.buffer, 1, &region);
      ctx_.submit(cmd);
      std::memcpy(reinterpret_cast<uint8_t*>(out.data()) + at, staging_.mapped, n);
    }
    return out;
  }

  VulkanRenderer& renderer_;
  gpu::Context& ctx_;
  std::unique_ptr<Pipelines> pipes_;
  size_t n_;
  int width_, height_;
  gpu::Buffer params_, grads_, moments_, grad2d_, targets_, pixel_grads_, partials_, staging_;
  uint32_t partial_count_ = 0;
  GaussianCloud cloud_;
  GpuTrainPush push_{};                 // what every step shares (the buffers' addresses, the count)
  std::vector<GpuTrainPush> run_push_;  // per step of the batch being rendered
  std::vector<bool> run_update_;
  uint32_t tiles_x_ = 0, tiles_y_ = 0;
  VkQueryPool queries_ = VK_NULL_HANDLE;  // the tail's timestamps, kTailPasses + 1 per step of a batch
};

}  // namespace

std::string gpuTrainingUnsupported(VulkanRenderer& renderer) {
  if (!renderer.context().bufferInt64Atomics())
    return "Vulkan device " + renderer.device().name +
           " lacks 64-bit integer buffer atomics (shaderBufferInt64Atomics), which the GPU trainer needs";
  return {};
}

GpuGradients gpuGradients(VulkanRenderer& renderer, const GaussianParams& params, const Camera& cam,
                          float background, std::span<const float> target, float alpha_weight) {
  if (const char* why = params.validate()) throw Error(std::string("train: ") + why);
  if (target.size() != 4 * static_cast<size_t>(cam.width) * static_cast<size_t>(cam.height))
    throw Error("train: the target is not of the camera's size");
  GpuState s(renderer, params.size(), cam.width, cam.height, 1);
  s.uploadView(0, target);
  s.setParams(params);
  GpuGradients g;
  GpuState::StepArgs a;
  a.cam = &cam, a.grey = background, a.alpha_weight = alpha_weight;
  g.loss = s.step(a).loss;
  g.grads = s.grads();
  return g;
}

TrainResult trainGaussiansVulkan(VulkanRenderer& renderer, const Dataset& ds, GaussianParams params,
                                 const TrainOptions& o) {
  if (ds.train.empty()) throw Error("train: the dataset has no train views");
  if (std::string why = o.validate(); !why.empty()) throw Error("train: " + why);
  if (params.size() > o.budget) throw Error("train: the initial cloud holds more gaussians than the budget");
  if (const char* why = params.validate()) throw Error(std::string("train: ") + why);
  const int width = ds.train[0].camera.width, height = ds.train[0].camera.height;
  for (const View& v : ds.train) {
    if (v.camera.width != width || v.camera.height != height)
      throw Error("train: the GPU trainer needs train views of one size (" + v.name + " differs)");
    if (v.rgba.size() != 4 * static_cast<size_t>(width) * static_cast<size_t>(height))
      throw Error("train: view " + v.name + ": image size does not match its camera");
  }
  const int refine_stop = o.refine_stop >= 0 ? o.refine_stop : o.steps - 1000;
  const std::vector<View>& val = ds.val.empty() ? ds.test : ds.val;
  const auto t_start = Clock::now();
  float extent = o.scene_extent;
  if (!(extent > 0)) extent = sceneExtent(ds);

  const size_t n = params.size();
  GpuState s(renderer, n, width, height, ds.train.size());
  for (size_t v = 0; v < ds.train.size(); ++v) s.uploadView(v, ds.train[v].rgba);
  TrainResult r;
  s.setParams(params);
  auto score = [&](const std::vector<View>& views) {
    const auto t0 = Clock::now();
    const ValidationScore v = s.validate(views, o.validation_background);
    r.validation_seconds += msSince(t0) / 1000.0;
    return v;
  };
  auto scoreVal = [&](int step) {  // the val views, their renders handed to on_validation
    const auto t0 = Clock::now();
    const ValidationScore v = validationAt(
        step, val, o, [&](ValidationSums& sums) { s.addRendered(sums, val, o.validation_background); });
    r.validation_seconds += msSince(t0) / 1000.0;
    return v;
  };
  if (!val.empty()) r.initial = scoreVal(0);
  if (!ds.test.empty()) r.test_initial = score(ds.test);

  uint64_t rng = 0x7a1full ^ (static_cast<uint64_t>(o.seed) << 16);
  double loss_sum = 0, fwd_ms = 0, tail_ms = 0;
  VulkanPassTimes pass_sum;
  double tail_sum[kTailPasses] = {};
  int loss_steps = 0;
  size_t relocated_since = 0;
  auto relocates_after = [&](int step) {
    return step >= o.refine_start && step < refine_stop && step % o.refine_every == 0 && step > 0;
  };
  auto logs_after = [&](int step) {
    return (step + 1) % std::max(1, o.log_every) == 0 || step + 1 == o.steps;
  };
  std::vector<GpuState::StepArgs> batch;
  for (int next = 0; next < o.steps;) {
    // The steps up to the next one after which the host works, in one submission; their views, backgrounds
    // and rates drawn in step order, as one step per submission would.
    batch.clear();
    for (bool host_work = false;
         next < o.steps && batch.size() < static_cast<size_t>(o.steps_per_submission) && !host_work; ++next) {
      GpuState::StepArgs a;
      a.view = static_cast<size_t>(nextU64(rng) % ds.train.size());
      a.cam = &ds.train[a.view].camera;
      a.grey = o.random_background ? static_cast<float>(uniform01(rng)) : 0.0f;
      a.alpha_weight = o.alpha_weight;
      a.entropy_weight =
          o.entropy * std::max(0.0f, (static_cast<float>(next) / static_cast<float>(o.steps) - 0.6f) / 0.4f);
      const float lr_means =
          extent * o.lr_means *
          std::pow(o.lr_means_final / o.lr_means, static_cast<float>(next) / static_cast<float>(o.steps));
      const float rates[5] = {lr_means, o.lr_quats, o.lr_scales, o.lr_opacities, o.lr_colors};
      std::copy(rates, rates + 5, a.lr);
      a.noise_scale = lr_means * o.noise_lr;
      a.adam_step = static_cast<uint32_t>(next + 1), a.seed = o.seed, a.update = true;
      batch.push_back(a);
      host_work = relocates_after(next) || logs_after(next);
    }
    const int step = next - 1;  // the batch's last step
    const auto t_batch = Clock::now();
    const std::vector<GpuState::StepResult> results = s.steps(batch);
    r.step_seconds += msSince(t_batch) / 1000.0;
    for (const GpuState::StepResult& sr : results) {
      fwd_ms += sr.forward_ms, tail_ms += sr.tail_ms;
      const VulkanPassTimes& t = sr.times;
      pass_sum.mesh += t.mesh, pass_sum.preprocess += t.preprocess, pass_sum.bin += t.bin,
          pass_sum.scan += t.scan;
      pass_sum.emit += t.emit, pass_sum.sort += t.sort, pass_sum.raster += t.raster;
      for (size_t q = 0; q < kTailPasses; ++q) tail_sum[q] += sr.tail_pass_ms[q];
      loss_sum += sr.loss;
      ++loss_steps;
    }
    // MCMC relocation between steps, on the CPU (relocateDead), with the moments of every touched gaussian
    // reset.
    if (relocates_after(step)) {
      GaussianParams p = s.params();
      std::vector<float> m = s.moments();
      const size_t widths[5] = {3, 4, 3, 1, 3};
      const size_t firsts[5] = {0, 3 * n, 7 * n, 10 * n, 11 * n};
      const size_t moved = relocateDead(p, o.min_opacity, rng, [&](size_t i) {
        for (int g = 0; g < 5; ++g)
          for (size_t k = 0; k < widths[g]; ++k) {
            m[firsts[g] + widths[g] * i + k] = 0.0f;
            m[SF_TRAIN_PARAMS * n + firsts[g] + widths[g] * i + k] = 0.0f;
          }
      });
      if (moved) {
        s.setParams(p);
        s.setMoments(m);
      }
      relocated_since += moved;
      r.relocated += moved;
    }
    const bool last = step + 1 == o.steps;
    if (logs_after(step)) {
      const GaussianParams p = s.params();
      checkFiniteParams(p, step + 1);
      TrainLogEntry e;
      e.step = step + 1;
      e.loss = loss_sum / loss_steps;
      e.live = liveCount(p, o.min_opacity);
      e.opacity_histogram = opacityHistogram(p);
      e.relocated = relocated_since;
      if (!val.empty() && o.validate_every > 0 && (step + 1) % o.validate_every == 0 && !last) {
        const ValidationScore v = scoreVal(step + 1);
        e.val_l1 = v.l1, e.val_psnr = v.psnr, e.val_ssim = v.ssim;
      }
      r.log.push_back(e);
      if (o.progress) o.progress(step + 1, o.steps, e.loss, e.live);
      loss_sum = 0, loss_steps = 0, relocated_since = 0;
    }
  }
  r.params = s.params();
  if (!val.empty()) {
    r.final = scoreVal(o.steps);
    TrainLogEntry& final_entry = r.log.back();
    final_entry.val_l1 = r.final.l1, final_entry.val_psnr = r.final.psnr, final_entry.val_ssim = r.final.ssim;
  }
  if (!ds.test.empty()) r.test_final = score(ds.test);
  // GPU times from the frame's timestamps: the frame up to its raster, and its tail (backward, noise, Adam).
  r.forward_ms = fwd_ms / o.steps, r.backward_ms = tail_ms / o.steps, r.optimizer_ms = 0;
  const double per = 1.0 / o.steps;
  r.gpu_pass_ms = {{"activation", pass_sum.mesh * per},
                   {"preprocess", pass_sum.preprocess * per},
                   {"bin + tile ranges", (pass_sum.bin + pass_sum.scan) * per},
                   {"emit", pass_sum.emit * per},
                   {"tile sort", pass_sum.sort * per},
                   {"raster", pass_sum.raster * per}};
  for (size_t q = 0; q < kTailPasses; ++q) r.gpu_pass_ms.emplace_back(kTailPassNames[q], tail_sum[q] * per);
  r.seconds = msSince(t_start) / 1000.0;
  return r;
}

}  // namespace sf::train
