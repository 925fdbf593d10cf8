// Budgeted training with the MCMC strategy: Kheradmand et al. 2024 ("3D Gaussian Splatting as Markov Chain
// Monte Carlo": relocation with the binomial opacity/scale correction, noise on low-opacity gaussians) with
// gsplat's MCMCStrategy defaults, driven as the destructible-hull article's trainer drives it.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

#include "core/clock.h"
#include "core/covariance.h"
#include "core/error.h"
#include "core/image.h"
#include "core/parallel.h"
#include "model/gltf_model.h"
#include "train/random.h"
#include "train/views.h"

namespace sf::train {

namespace {

// Adam over one parameter group (Kingma and Ba 2015; eps 1e-15 as gsplat's trainers use).
struct Adam {
  std::vector<float> m, v;
  void resize(size_t n) { m.assign(n, 0.0f), v.assign(n, 0.0f); }
  void step(std::vector<float>& param, const std::vector<float>& grad, float lr, int t) {
    constexpr float b1 = 0.9f, b2 = 0.999f, eps = 1e-15f;
    const float c1 = 1.0f - std::pow(b1, static_cast<float>(t)),
                c2 = 1.0f - std::pow(b2, static_cast<float>(t));
    const float step_size = lr / c1, inv_c2 = 1.0f / std::sqrt(c2);
    for (size_t i = 0; i < param.size(); ++i) {
      m[i] = b1 * m[i] + (1.0f - b1) * grad[i];
      v[i] = b2 * v[i] + (1.0f - b2) * grad[i] * grad[i];
      param[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_c2 + eps);
    }
  }
  void reset(size_t first, size_t count) {
    std::fill(m.begin() + static_cast<std::ptrdiff_t>(first),
              m.begin() + static_cast<std::ptrdiff_t>(first + count), 0.0f);
    std::fill(v.begin() + static_cast<std::ptrdiff_t>(first),
              v.begin() + static_cast<std::ptrdiff_t>(first + count), 0.0f);
  }
};

// A rotation whose local z axis is n (any unit or zero n: identity for zero).
Quat frameOf(Vec3 n) {
  if (!(dot(n, n) > 1e-12f)) return Quat{};
  n = normalize(n);
  const Vec3 helper = std::abs(n.x) < 0.9f ? Vec3{1, 0, 0} : Vec3{0, 1, 0};
  const Vec3 t = normalize(cross(helper, n)), b = cross(n, t);
  Mat3 r;
  for (int k = 0; k < 3; ++k) r.m[k][0] = t[k], r.m[k][1] = b[k], r.m[k][2] = n[k];
  return quatFromRotationMatrix(r);
}

}  // namespace

std::string TrainOptions::validate() const {
  auto positive = [](float v) { return v > 0 && std::isfinite(v); };
  if (budget == 0) return "the budget must be at least 1";
  if (steps < 1) return "steps must be at least 1";
  if (refine_every < 1) return "refine_every must be at least 1";
  if (log_every < 1) return "log_every must be at least 1";
  if (validate_every < 0) return "validate_every must be 0 (off) or more";
  if (validate_every % log_every != 0)
    return "validate_every (" + std::to_string(validate_every) + ") must be a multiple of log_every (" +
           std::to_string(log_every) + "): a validation is recorded on its step's log entry";
  if (steps_per_submission < 1 || steps_per_submission > kMaxStepsPerSubmission)
    return "steps_per_submission must be in 1.." + std::to_string(kMaxStepsPerSubmission);
  if (!(alpha_weight >= 0 && std::isfinite(alpha_weight)) || !(entropy >= 0 && std::isfinite(entropy)))
    return "alpha and entropy weights must be finite and >= 0";
  if (!(min_opacity > 0 && min_opacity < 1)) return "min_opacity must be in (0, 1)";
  if (!(noise_lr >= 0 && std::isfinite(noise_lr))) return "noise_lr must be finite and >= 0";
  if (!positive(lr_means) || !positive(lr_means_final) || !positive(lr_quats) || !positive(lr_scales) ||
      !positive(lr_opacities) || !positive(lr_colors))
    return "learning rates must be finite and > 0";
  if (!(scene_extent >= 0 && std::isfinite(scene_extent)))
    return "scene_extent must be 0 (from the cameras) or more";
  return {};
}

std::array<uint32_t, 10> opacityHistogram(const GaussianParams& p) {
  std::array<uint32_t, 10> h{};
  for (size_t i = 0; i < p.size(); ++i)
    ++h[static_cast<size_t>(std::min(9, static_cast<int>(opacityOf(p, i) * 10.0f)))];
  return h;
}

size_t liveCount(const GaussianParams& p, float min_opacity) {
  size_t live = 0;
  for (size_t i = 0; i < p.size(); ++i) live += opacityOf(p, i) > min_opacity;
  return live;
}

void checkFiniteParams(const GaussianParams& p, int step) {
  for (const std::vector<float>* v : {&p.means, &p.quats, &p.log_scales, &p.opacity_logits, &p.color_logits})
    for (float x : *v)
      if (!std::isfinite(x))
        throw Error("train: a parameter became non-finite at step " + std::to_string(step));
}

float sceneExtent(const Dataset& ds) {
  Vec3 centre{0, 0, 0};
  for (const View& v : ds.train) centre = centre + v.camera.position() / static_cast<float>(ds.train.size());
  float extent = 0;
  for (const View& v : ds.train) extent = std::max(extent, 1.1f * length(v.camera.position() - centre));
  return extent > 0 ? extent : 1.0f;
}

GaussianParams initialParams(const InitialPoints& pts, const TrainOptions& o) {
  if (pts.positions.empty()) throw Error("train: no initial points");
  if (o.budget == 0) throw Error("train: the budget must be at least 1");
  if (pts.colors.size() != pts.positions.size() ||
      (!pts.normals.empty() && pts.normals.size() != pts.positions.size()))
    throw Error("train: initial points, colours and normals differ in count");
  GaussianParams p;
  p.resize(o.budget);
  uint64_t rng = 0x5eedull ^ (static_cast<uint64_t>(o.seed) << 20);
  for (size_t i = 0; i < o.budget; ++i) {
    const size_t src = i % pts.positions.size();
    const Vec3 pos = pts.positions[src], col = pts.colors[src];
    const Quat q = pts.normals.empty() ? Quat{} : frameOf(pts.normals[src]);
    const float qv[4] = {q.w, q.x, q.y, q.z};
    for (size_t k = 0; k < 3; ++k) {
      p.means[3 * i + k] = pos[static_cast<int>(k)];
      p.log_scales[3 * i + k] = o.init_log_scale;
      p.color_logits[3 * i + k] = logit(std::clamp(col[static_cast<int>(k)], 0.02f, 0.98f));
    }
    for (size_t k = 0; k < 4; ++k) p.quats[4 * i + k] = qv[k] + normal01(rng) * o.quat_noise;
    p.opacity_logits[i] = 0.0f;
  }
  return p;
}

InitialPoints visualHullPoints(const Dataset& ds, size_t count, uint32_t seed) {
  if (ds.train.empty()) throw Error("train: the dataset has no train views");
  InitialPoints out;
  uint64_t rng = 0x7157ull ^ (static_cast<uint64_t>(seed) << 24);
  const size_t max_tries = std::max<size_t>(count * 400, 100000);
  const float half = 0.5f * kCubeSize;
  for (size_t tries = 0; tries < max_tries && out.positions.size() < count; ++tries) {
    const Vec3 p{static_cast<float>((uniform01(rng) * 2 - 1) * half),
                 static_cast<float>((uniform01(rng) * 2 - 1) * half),
                 static_cast<float>((uniform01(rng) * 2 - 1) * half)};
    Vec3 sum{0, 0, 0};
    size_t seen = 0;
    bool inside = true;
    for (const View& v : ds.train) {
      const Camera& c = v.camera;
      const Vec3 q = transformPoint(c.world_to_camera, p);
      if (!(q.z > 1e-3f)) continue;
      const float u = c.fx * q.x / q.z + c.cx, w = c.fy * q.y / q.z + c.cy;
      if (!(u >= 0 && w >= 0 && u < static_cast<float>(c.width) && w < static_cast<float>(c.height)))
        continue;
      const size_t pix = static_cast<size_t>(w) * static_cast<size_t>(c.width) + static_cast<size_t>(u);
      const float a = v.rgba[4 * pix + 3];
      if (a < 0.5f) {
        inside = false;
        break;
      }
      sum = sum + Vec3{v.rgba[4 * pix], v.rgba[4 * pix + 1], v.rgba[4 * pix + 2]} / a;
      ++seen;
    }
    if (!inside || seen == 0) continue;
    out.positions.push_back(p);
    out.colors.push_back(sum / static_cast<float>(seen));
  }
  if (out.positions.empty())
    throw Error("train: no point of the cube lies inside every train view's silhouette (alpha >= 0.5)");
  return out;
}

std::pair<float, float> relocationCorrection(float opacity, int n) {
  const double o = opacity;
  const double new_o = 1.0 - std::pow(1.0 - o, 1.0 / n);
  double denom = 0;
  for (int i = 1; i <= n; ++i) {
    double binom = 1;  // C(i - 1, k)
    for (int k = 0; k <= i - 1; ++k) {
      denom +=
          binom * ((k % 2 ? -1.0 : 1.0) / std::sqrt(static_cast<double>(k + 1))) * std::pow(new_o, k + 1);
      binom = binom * static_cast<double>(i - 1 - k) / static_cast<double>(k + 1);
    }
  }
  return {static_cast<float>(new_o), static_cast<float>(o / denom)};
}

size_t relocateDead(GaussianParams& p, float min_opacity, uint64_t& rng,
                    const std::function<void(size_t)>& reset) {
  constexpr int kMaxCopies = 51;  // gsplat's binomial table size
  const size_t n = p.size();
  std::vector<size_t> dead, alive;
  std::vector<double> cdf;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    const float o = opacityOf(p, i);
    if (o <= min_opacity) {
      dead.push_back(i);
    } else {
      alive.push_back(i);
      total += o;
      cdf.push_back(total);
    }
  }
  if (dead.empty() || alive.empty()) return 0;
  // Sources sampled with replacement in proportion to opacity.
  std::vector<size_t> source(dead.size());
  std::vector<int> copies(n, 0);
  for (size_t d = 0; d < dead.size(); ++d) {
    const double u = uniform01(rng) * total;
    const size_t k = std::min(alive.size() - 1,
                              static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin()));
    source[d] = alive[k];
    ++copies[alive[k]];
  }
  // Each sampled source: new opacity and scale shared by it and its copies.
  for (size_t i = 0; i < n; ++i) {
    if (!copies[i]) continue;
    const auto [new_o, factor] = relocationCorrection(opacityOf(p, i), std::min(kMaxCopies, copies[i] + 1));
    p.opacity_logits[i] = logit(std::clamp(new_o, min_opacity, 1.0f - 1e-6f));
    const float log_factor = std::log(std::max(factor, 1e-12f));
    for (size_t k = 0; k < 3; ++k) p.log_scales[3 * i + k] += log_factor;
    reset(i);
  }
  for (size_t d = 0; d < dead.size(); ++d) {
    const size_t to = dead[d], from = source[d];
    for (size_t k = 0; k < 3; ++k) {
      p.means[3 * to + k] = p.means[3 * from + k];
      p.log_scales[3 * to + k] = p.log_scales[3 * from + k];
      p.color_logits[3 * to + k] = p.color_logits[3 * from + k];
    }
    for (size_t k = 0; k < 4; ++k) p.quats[4 * to + k] = p.quats[4 * from + k];
    p.opacity_logits[to] = p.opacity_logits[from];
    reset(to);
  }
  return dead.size();
}

void ValidationSums::add(const View& v, const float* rgb, int channels, Vec3 bg) {
  const size_t pixels = static_cast<size_t>(v.camera.width) * static_cast<size_t>(v.camera.height);
  std::vector<float> target(3 * pixels);
  for (size_t p = 0; p < pixels; ++p) {
    const float a = v.rgba[4 * p + 3];
    for (size_t k = 0; k < 3; ++k) {
      target[3 * p + k] = v.rgba[4 * p + k] + (1.0f - a) * bg[static_cast<int>(k)];
      const double d = rgb[static_cast<size_t>(channels) * p + k] - target[3 * p + k];
      l1 += std::abs(d);
      se += d * d;
    }
  }
  ssim += sf::ssim(rgb, channels, target.data(), 3, v.camera.width, v.camera.height);
  if (renders.size() < keep_renders) {
    std::vector<float>& kept = renders.emplace_back(3 * pixels);
    for (size_t p = 0; p < pixels; ++p)
      for (size_t k = 0; k < 3; ++k) kept[3 * p + k] = rgb[static_cast<size_t>(channels) * p + k];
  }
  values += 3 * pixels;
  ++views;
}

ValidationScore ValidationSums::score() const {
  ValidationScore s;
  s.views = views;
  if (values) {
    s.l1 = l1 / static_cast<double>(values);
    const double mse = se / static_cast<double>(values);
    s.psnr = mse > 1e-30 ? 10.0 * std::log10(1.0 / mse) : 300.0;  // identical: reported as 300 dB
    s.ssim = ssim / static_cast<double>(views);
  }
  return s;
}

ValidationScore validationAt(int step, const std::vector<View>& views, const TrainOptions& o,
                             const std::function<void(ValidationSums&)>& render) {
  ValidationSums sums;
  if (o.on_validation) sums.keep_renders = o.validation_image_views;
  render(sums);
  ValidationImages images;
  images.score = sums.score();
  if (o.on_validation) {
    images.step = step;
    images.views = &views;
    images.rgb = std::move(sums.renders);
    o.on_validation(images);
  }
  return images.score;
}

namespace {
void addRendered(ValidationSums& sums, const GaussianParams& params, const std::vector<View>& views,
                 Vec3 bg) {
  RasterState st;
  for (const View& v : views) {
    rasterForward(params, v.camera, bg, st);
    sums.add(v, st.rgb.data(), 3, bg);
  }
}
}  // namespace

ValidationScore validate(const GaussianParams& params, const std::vector<View>& views, Vec3 bg) {
  ValidationSums sums;
  addRendered(sums, params, views, bg);
  return sums.score();
}

TrainResult trainGaussians(const Dataset& ds, GaussianParams params, const TrainOptions& o) {
  if (ds.train.empty()) throw Error("train: the dataset has no train views");
  if (std::string why = o.validate(); !why.empty()) throw Error("train: " + why);
  if (params.size() > o.budget) throw Error("train: the initial cloud holds more gaussians than the budget");
  if (const char* why = params.validate()) throw Error(std::string("train: ") + why);
  for (const View& v : ds.train)
    if (v.rgba.size() != 4 * static_cast<size_t>(v.camera.width) * static_cast<size_t>(v.camera.height))
      throw Error("train: view " + v.name + ": image size does not match its camera");
  const int refine_stop = o.refine_stop >= 0 ? o.refine_stop : o.steps - 1000;
  const std::vector<View>& val = ds.val.empty() ? ds.test : ds.val;
  const auto t_start = Clock::now();
  const float extent = o.scene_extent > 0 ? o.scene_extent : sceneExtent(ds);

  TrainResult r;
  const size_t n = params.size();
  Adam adam[5];
  std::vector<float>* groups[5] = {&params.means, &params.quats, &params.log_scales, &params.opacity_logits,
                                   &params.color_logits};
  const size_t widths[5] = {3, 4, 3, 1, 3};
  for (int g = 0; g < 5; ++g) adam[g].resize(groups[g]->size());
  auto resetMoments = [&](size_t i) {
    for (int g = 0; g < 5; ++g) adam[g].reset(widths[g] * i, widths[g]);
  };
  auto score = [&](const std::vector<View>& views) {
    const auto t0 = Clock::now();
    const ValidationScore v = validate(params, views, o.validation_background);
    r.validation_seconds += msSince(t0) / 1000.0;
    return v;
  };
  auto scoreVal = [&](int step) {  // the val views, their renders handed to on_validation
    const auto t0 = Clock::now();
    const ValidationScore v = validationAt(
        step, val, o, [&](ValidationSums& sums) { addRendered(sums, params, val, o.validation_background); });
    r.validation_seconds += msSince(t0) / 1000.0;
    return v;
  };
  if (!val.empty()) r.initial = scoreVal(0);
  if (!ds.test.empty()) r.test_initial = score(ds.test);

  ParamGrads grads;
  grads.resize(n);
  RasterState st;
  std::vector<float> d_rgb, d_alpha;
  uint64_t rng = 0x7a1full ^ (static_cast<uint64_t>(o.seed) << 16);
  uint64_t noise_rng = 0x9015eull ^ (static_cast<uint64_t>(o.seed)
                                     << 16);  // its own stream: views and backgrounds as on the GPU
  double loss_sum = 0, fwd_ms = 0, bwd_ms = 0, opt_ms = 0;
  int loss_steps = 0;
  size_t relocated_since = 0;
  for (int step = 0; step < o.steps; ++step) {
    const View& view = ds.train[static_cast<size_t>(nextU64(rng) % ds.train.size())];
    const float grey = o.random_background ? static_cast<float>(uniform01(rng)) : 0.0f;
    const Vec3 bg{grey, grey, grey};
    auto t0 = Clock::now();
    rasterForward(params, view.camera, bg, st);
    const double loss = photometricLoss(st, view.rgba, bg, o.alpha_weight, d_rgb, d_alpha);
    fwd_ms += msSince(t0);
    t0 = Clock::now();
    grads.zero();
    rasterBackward(params, view.camera, bg, st, d_rgb, d_alpha, grads);
    // Entropy o(1 - o), annealed in over the last 40% of the steps.
    const float ent_w =
        o.entropy * std::max(0.0f, (static_cast<float>(step) / static_cast<float>(o.steps) - 0.6f) / 0.4f);
    if (ent_w > 0)
      for (size_t i = 0; i < n; ++i) {
        const float op = opacityOf(params, i);
        grads.opacity_logits[i] += ent_w * (1.0f - 2.0f * op) / static_cast<float>(n) * op * (1.0f - op);
      }
    bwd_ms += msSince(t0);
    t0 = Clock::now();
    // Means decay exponentially from lr_means to lr_means_final over the run.
    const float lr_means =
        extent * o.lr_means *
        std::pow(o.lr_means_final / o.lr_means, static_cast<float>(step) / static_cast<float>(o.steps));
    // MCMC position noise on low-opacity gaussians (before the optimiser's step, as the GPU trainer orders
    // it).
    const float scaler = lr_means * o.noise_lr;
    for (size_t i = 0; i < n; ++i) {
      const float op = opacityOf(params, i);
      const float gate = 1.0f / (1.0f + std::exp(-100.0f * ((1.0f - op) - 0.995f)));
      if (gate * scaler < 1e-12f) continue;
      const Vec3 e{normal01(noise_rng), normal01(noise_rng), normal01(noise_rng)};
      const Cov6 c = covarianceFromScaleRotation(scaleOf(params, i), rotationOf(params, i));
      const Vec3 noise = covarianceMatrix(c) * (e * (gate * scaler));
      for (size_t k = 0; k < 3; ++k) params.means[3 * i + k] += noise[static_cast<int>(k)];
    }
    const float rates[5] = {lr_means, o.lr_quats, o.lr_scales, o.lr_opacities, o.lr_colors};
    std::vector<float>* grad_groups[5] = {&grads.means, &grads.quats, &grads.log_scales,
                                          &grads.opacity_logits, &grads.color_logits};
    for (int g = 0; g < 5; ++g) adam[g].step(*groups[g], *grad_groups[g], rates[g], step + 1);
    // MCMC relocation of the dead in the refine window, between steps.
    if (step >= o.refine_start && step < refine_stop && step % o.refine_every == 0 && step > 0) {
      const size_t moved = relocateDead(params, o.min_opacity, rng, resetMoments);
      relocated_since += moved;
      r.relocated += moved;
    }
    opt_ms += msSince(t0);

    loss_sum += loss;
    ++loss_steps;
    const bool last = step + 1 == o.steps;
    if ((step + 1) % std::max(1, o.log_every) == 0 || last) {
      checkFiniteParams(params, step + 1);
      TrainLogEntry e;
      e.step = step + 1;
      e.loss = loss_sum / loss_steps;
      e.live = liveCount(params, o.min_opacity);
      e.relocated = relocated_since;
      e.opacity_histogram = opacityHistogram(params);
      if (!val.empty() && o.validate_every > 0 && (step + 1) % o.validate_every == 0 && !last) {
        const ValidationScore s = scoreVal(step + 1);
        e.val_l1 = s.l1, e.val_psnr = s.psnr, e.val_ssim = s.ssim;
      }
      r.log.push_back(e);
      if (o.progress) o.progress(step + 1, o.steps, e.loss, e.live);
      loss_sum = 0, loss_steps = 0, relocated_since = 0;
    }
  }
  if (!val.empty()) {
    r.final = scoreVal(o.steps);
    TrainLogEntry& final_entry = r.log.back();
    final_entry.val_l1 = r.final.l1, final_entry.val_psnr = r.final.psnr, final_entry.val_ssim = r.final.ssim;
  }
  if (!ds.test.empty()) r.test_final = score(ds.test);
  r.forward_ms = fwd_ms / o.steps, r.backward_ms = bwd_ms / o.steps, r.optimizer_ms = opt_ms / o.steps;
  r.seconds = msSince(t_start) / 1000.0;
  r.params = std::move(params);
  return r;
}

MeshTrainResult trainFromMesh(const std::string& model_path, const ViewsOptions& views,
                              const TrainOptions& options, const TrainFunction& train) {
  if (std::string why = views.validate(); !why.empty()) throw Error("train: " + why);
  const hull::SourceMesh src = loadViewsModel(model_path, views.clip, views.time);
  const Dataset ds = renderViews(src, views);
  const SurfaceSamples s = sampleSurface(src, options.budget, options.seed);
  MeshTrainResult r;
  r.train = train(ds, initialParams(InitialPoints{s.positions, s.normals, s.colors}, options), options);
  r.scale = ds.scale, r.offset = ds.offset;
  r.train_views = ds.train.size(), r.val_views = ds.val.size();
  r.coverage = coverageOf(ds.train);
  return r;
}

std::vector<hull::CoverageView> coverageOf(std::span<const View> views) {
  std::vector<hull::CoverageView> out;
  out.reserve(views.size());
  for (const View& v : views) {
    hull::CoverageView c;
    c.world_to_camera = v.camera.world_to_camera;
    c.fx = v.camera.fx, c.fy = v.camera.fy, c.cx = v.camera.cx, c.cy = v.camera.cy;
    c.width = v.camera.width, c.height = v.camera.height;
    c.covered.resize(static_cast<size_t>(c.width) * static_cast<size_t>(c.height));
    if (v.rgba.size() != 4 * c.covered.size())
      throw Error("view " + v.name + ": " + std::to_string(v.rgba.size()) + " floats for a " +
                  std::to_string(c.width) + " x " + std::to_string(c.height) + " RGBA image");
    for (size_t p = 0; p < c.covered.size(); ++p) c.covered[p] = v.rgba[4 * p + 3] > 1.0f / 255.0f;
    out.push_back(std::move(c));
  }
  return out;
}

GaussianCloud toSourceFrame(GaussianCloud cloud, float scale, Vec3 offset) {
  for (size_t i = 0; i < cloud.size(); ++i) {
    cloud.positions[i] = (cloud.positions[i] - offset) / scale;
    cloud.scales[i] = cloud.scales[i] / scale;
  }
  return cloud;
}

GaussianCloud restToBindSpace(const GltfModel& model, int draw, GaussianCloud cloud) {
  if (draw < 0 || static_cast<size_t>(draw) >= model.drawnPrimitives())
    throw Error(model.document().path + ": no draw " + std::to_string(draw));
  GltfModel::Pose pose;
  model.pose(-1, 0.0f, pose);
  const RenderMesh rest = model.renderMeshes(pose, Mat4{})[static_cast<size_t>(draw)];
  const std::span<const Vec3> bind = model.primitiveOf(static_cast<size_t>(draw)).positions;
  if (rest.positions.size() != bind.size() || bind.size() < 4)
    throw Error(model.document().path + ": the bound draw's rest pose has no vertices to fit");
  // Least squares rest = A bind + t, per output row: normal equations over [x y z 1] (double).
  double ata[4][4] = {}, atb[4][3] = {};
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi = -lo;
  for (size_t v = 0; v < bind.size(); ++v) {
    const Vec3 b = bind[v], r = transformPoint(rest.object_to_world, rest.positions[v]);
    const double x[4] = {b.x, b.y, b.z, 1.0};
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) ata[i][j] += x[i] * x[j];
      for (int k = 0; k < 3; ++k) atb[i][k] += x[i] * r[k];
    }
    lo = Vec3{std::min(lo.x, r.x), std::min(lo.y, r.y), std::min(lo.z, r.z)};
    hi = Vec3{std::max(hi.x, r.x), std::max(hi.y, r.y), std::max(hi.z, r.z)};
  }
  // Gauss-Jordan with partial pivoting on [ata | atb].
  double m[4][7];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 7; ++j) m[i][j] = j < 4 ? ata[i][j] : atb[i][j - 4];
  for (int c = 0; c < 4; ++c) {
    int piv = c;
    for (int r = c + 1; r < 4; ++r)
      if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
    if (!(std::abs(m[piv][c]) > 1e-18))
      throw Error(model.document().path + ": the bound draw's vertices are degenerate (flat or coincident)");
    for (int j = 0; j < 7; ++j) std::swap(m[c][j], m[piv][j]);
    for (int r = 0; r < 4; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int j = 0; j < 7; ++j) m[r][j] -= f * m[c][j];
    }
  }
  Mat3 a;
  Vec3 t;
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < 3; ++i) a.m[k][i] = static_cast<float>(m[i][4 + k] / m[i][i]);
    t[k] = static_cast<float>(m[3][4 + k] / m[3][3]);
  }
  const float extent = std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z});
  float residual = 0;
  for (size_t v = 0; v < bind.size(); ++v)
    residual =
        std::max(residual, length(a * bind[v] + t - transformPoint(rest.object_to_world, rest.positions[v])));
  if (!(residual <= 1e-3f * extent))
    throw Error(model.document().path +
                ": the rest pose of the bound mesh is not an affine image of its bind pose (residual " +
                std::to_string(residual) + "); train the character at a pose that is");
  // Inverse of A (adjugate over the determinant).
  const float det = determinant(a);
  if (!(std::abs(det) > 1e-6f * extent * extent * extent))
    throw Error(model.document().path +
                ": the rest pose of the bound mesh is a flattened image of its bind pose (determinant " +
                std::to_string(det) + "); train the character at a pose that is not");
  Mat3 inv;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const int i1 = (j + 1) % 3, i2 = (j + 2) % 3, j1 = (i + 1) % 3, j2 = (i + 2) % 3;
      inv.m[i][j] = (a.m[i1][j1] * a.m[i2][j2] - a.m[i1][j2] * a.m[i2][j1]) / det;
    }
  for (size_t i = 0; i < cloud.size(); ++i) {
    cloud.positions[i] = inv * (cloud.positions[i] - t);
    const Mat3 cov = covarianceMatrix(covarianceFromScaleRotation(cloud.scales[i], cloud.rotations[i]));
    const ScaleRotation sr = decomposeCovariance(covarianceUpper(inv * cov * transpose(inv)));
    cloud.scales[i] = sr.scale, cloud.rotations[i] = sr.rotation;
  }
  return cloud;
}

std::string trainLogJson(const TrainResult& r, const TrainOptions& o) {
  std::string s;
  char buf[512];
  for (const TrainLogEntry& e : r.log) {
    std::snprintf(
        buf, sizeof buf,
        "{\"step\": %d, \"loss\": %.6g, \"live\": %zu, \"relocated\": %zu, \"opacity_histogram\": [", e.step,
        e.loss, e.live, e.relocated);
    s += buf;
    for (size_t k = 0; k < e.opacity_histogram.size(); ++k)
      s += (k ? ", " : "") + std::to_string(e.opacity_histogram[k]);
    s += "]";
    if (e.val_l1 >= 0) {
      std::snprintf(buf, sizeof buf, ", \"val_l1\": %.6g, \"val_psnr\": %.4f, \"val_ssim\": %.6f", e.val_l1,
                    e.val_psnr, e.val_ssim);
      s += buf;
    }
    s += "}\n";
  }
  std::snprintf(buf, sizeof buf,
                "{\"summary\": true, \"budget\": %zu, \"steps\": %d, \"seed\": %u, \"seconds\": %.3f, "
                "\"validation_seconds\": %.3f, \"relocated\": %zu, "
                "\"forward_ms\": %.4f, \"backward_ms\": %.4f, \"optimizer_ms\": %.4f, \"val_views\": %zu, "
                "\"val_l1_initial\": %.6g, \"val_psnr_initial\": %.4f, \"val_l1_final\": %.6g, "
                "\"val_psnr_final\": %.4f, "
                "\"test_views\": %zu, \"test_psnr_initial\": %.4f, \"test_psnr_final\": %.4f",
                o.budget, o.steps, o.seed, r.seconds, r.validation_seconds, r.relocated, r.forward_ms,
                r.backward_ms, r.optimizer_ms, r.final.views, r.initial.l1, r.initial.psnr, r.final.l1,
                r.final.psnr, r.test_final.views, r.test_initial.psnr, r.test_final.psnr);
  s += buf;
  std::snprintf(buf, sizeof buf,
                ", \"val_ssim_initial\": %.6f, \"val_ssim_final\": %.6f, \"test_ssim_initial\": %.6f, "
                "\"test_ssim_final\": %.6f",
                r.initial.ssim, r.final.ssim, r.test_initial.ssim, r.test_final.ssim);
  s += buf;
  if (!r.gpu_pass_ms.empty()) {
    s += ", \"gpu_pass_ms\": {";
    for (size_t k = 0; k < r.gpu_pass_ms.size(); ++k) {
      std::snprintf(buf, sizeof buf, "%s\"%s\": %.4f", k ? ", " : "", r.gpu_pass_ms[k].first,
                    r.gpu_pass_ms[k].second);
      s += buf;
    }
    s += "}";
  }
  s += "}\n";
  return s;
}

}  // namespace sf::train
