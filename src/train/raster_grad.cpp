// The tile rasterizer's forward pass with saved state, and its backward pass (Kerbl et al. 2023,
// diff-gaussian-rasterization backward.cu, derived again for this renderer's exact forward: pixel-index
// means, the off-centre field-of-view clamp, the 0.99 alpha clamp, a background and an alpha output).
#include "train/raster_grad.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "core/covariance.h"
#include "core/gaussian_cloud.h"
#include "core/parallel.h"

namespace sf::train {

namespace {

// Per tile-list entry: the gradient of the loss with respect to the splat's 2D parameters at the pixels of
// that tile. Each entry belongs to one tile, so tiles accumulate without races; entries are summed per
// gaussian afterwards.
struct Grad2D {
  float mean_x = 0, mean_y = 0;
  float conic[3] = {0, 0, 0};
  float opacity = 0;
  float color[3] = {0, 0, 0};
};

}  // namespace

void GaussianParams::resize(size_t n) {
  means.resize(3 * n);
  quats.resize(4 * n);
  log_scales.resize(3 * n);
  opacity_logits.resize(n);
  color_logits.resize(3 * n);
}

const char* GaussianParams::validate() const {
  const size_t n = size();
  if (means.size() != 3 * n || quats.size() != 4 * n || log_scales.size() != 3 * n ||
      color_logits.size() != 3 * n)
    return "parameter arrays differ in size";
  return nullptr;
}

void ParamGrads::resize(size_t n) {
  means.assign(3 * n, 0.0f);
  quats.assign(4 * n, 0.0f);
  log_scales.assign(3 * n, 0.0f);
  opacity_logits.assign(n, 0.0f);
  color_logits.assign(3 * n, 0.0f);
}

void ParamGrads::zero() {
  for (std::vector<float>* v : {&means, &quats, &log_scales, &opacity_logits, &color_logits})
    std::fill(v->begin(), v->end(), 0.0f);
}

Vec3 meanOf(const GaussianParams& p, size_t i) {
  return {p.means[3 * i], p.means[3 * i + 1], p.means[3 * i + 2]};
}
Quat rotationOf(const GaussianParams& p, size_t i) {
  return normalize(Quat{p.quats[4 * i], p.quats[4 * i + 1], p.quats[4 * i + 2], p.quats[4 * i + 3]});
}
Vec3 scaleOf(const GaussianParams& p, size_t i) {
  return {std::exp(p.log_scales[3 * i]), std::exp(p.log_scales[3 * i + 1]),
          std::exp(p.log_scales[3 * i + 2])};
}
float opacityOf(const GaussianParams& p, size_t i) {
  return sigmoid(p.opacity_logits[i]);
}
Vec3 colorOf(const GaussianParams& p, size_t i) {
  return {sigmoid(p.color_logits[3 * i]), sigmoid(p.color_logits[3 * i + 1]),
          sigmoid(p.color_logits[3 * i + 2])};
}

GaussianCloud toCloud(const GaussianParams& params) {
  GaussianCloud c;
  const size_t n = params.size();
  c.resize(n, 0);
  for (size_t i = 0; i < n; ++i) {
    c.positions[i] = meanOf(params, i);
    c.rotations[i] = rotationOf(params, i);
    c.scales[i] = scaleOf(params, i);
    c.opacities[i] = opacityOf(params, i);
    const Vec3 rgb = colorOf(params, i);
    for (int k = 0; k < 3; ++k) c.sh[3 * i + static_cast<size_t>(k)] = (rgb[k] - 0.5f) / kShC0;
  }
  c.color_space = ColorSpace::kSrgb;
  return c;
}

GaussianParams fromCloud(const GaussianCloud& cloud) {
  GaussianParams p;
  const size_t n = cloud.size();
  p.resize(n);
  auto clampUnit = [](float v) { return std::clamp(v, 1e-4f, 1.0f - 1e-4f); };
  for (size_t i = 0; i < n; ++i) {
    const Vec3 m = cloud.positions[i], s = cloud.scales[i];
    const Quat q = normalize(cloud.rotations[i]);
    for (int k = 0; k < 3; ++k) {
      p.means[3 * i + static_cast<size_t>(k)] = m[k];
      p.log_scales[3 * i + static_cast<size_t>(k)] = std::log(std::max(s[k], 1e-8f));
      const float dc = cloud.sh[i * static_cast<size_t>(cloud.shStride()) + static_cast<size_t>(k)];
      p.color_logits[3 * i + static_cast<size_t>(k)] = logit(clampUnit(dc * kShC0 + 0.5f));
    }
    p.quats[4 * i] = q.w, p.quats[4 * i + 1] = q.x, p.quats[4 * i + 2] = q.y, p.quats[4 * i + 3] = q.z;
    p.opacity_logits[i] = logit(clampUnit(cloud.opacities[i]));
  }
  return p;
}

void rasterForward(const GaussianParams& params, const Camera& cam, Vec3 background, RasterState& st) {
  if (const char* why = params.validate()) throw std::invalid_argument(why);
  if (const char* why = cam.validate()) throw std::invalid_argument(why);
  const size_t n = params.size();
  if (n > UINT32_MAX) throw std::length_error("more than 2^32 gaussians");
  st.width = cam.width, st.height = cam.height;
  const int tiles_x = (cam.width + kTileSize - 1) / kTileSize,
            tiles_y = (cam.height + kTileSize - 1) / kTileSize;
  const uint32_t tile_count = static_cast<uint32_t>(tiles_x * tiles_y);

  // 1. Preprocess: the renderer's projectSplat on the activated parameters; the colour is the sigmoid
  // itself (toCloud's DC term evaluates to it up to rounding).
  st.projected.assign(n, ProjectedSplat{});
  st.visible.assign(n, 0);
  const float zero_sh[3] = {0, 0, 0};
  parallelForRange(n, 1024, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const Cov6 cov = covarianceFromScaleRotation(scaleOf(params, i), rotationOf(params, i));
      ProjectedSplat& ps = st.projected[i];
      if (projectSplat(meanOf(params, i), cov, opacityOf(params, i), 0, zero_sh, Vec3{0, 0, 1},
                       ColorSpace::kSrgb, cam, false, &ps)) {
        ps.color = colorOf(params, i);
        st.visible[i] = 1;
      }
    }
  });

  // 2. The frame's tile lists (the same keys and sort as renderCpu).
  std::vector<uint32_t> touched(n, 0);
  for (size_t i = 0; i < n; ++i)
    touched[i] = st.visible[i] ? static_cast<uint32_t>(st.projected[i].touched) : 0u;
  buildTileLists(st.projected, touched, tiles_x, tiles_y, st.lists);
  st.tile_keys = st.lists.order.size();
  const std::vector<uint32_t>& order = st.lists.order;

  // 3. The raster: blendPixel's loop, keeping the final transmittance and the last splat blended.
  const size_t pixels = static_cast<size_t>(cam.width) * static_cast<size_t>(cam.height);
  st.rgb.assign(3 * pixels, 0.0f);
  st.alpha.assign(pixels, 0.0f);
  st.final_t.assign(pixels, 1.0f);
  st.last.assign(pixels, 0);
  parallelFor(tile_count, [&](size_t tile) {
    const int tx = static_cast<int>(tile) % tiles_x, ty = static_cast<int>(tile) / tiles_x;
    const uint32_t b = st.lists.begin[tile], e = st.lists.end[tile];
    for (int py = ty * kTileSize; py < std::min(cam.height, (ty + 1) * kTileSize); ++py)
      for (int px = tx * kTileSize; px < std::min(cam.width, (tx + 1) * kTileSize); ++px) {
        const size_t pix = static_cast<size_t>(py) * static_cast<size_t>(cam.width) + static_cast<size_t>(px);
        float t = 1.0f;
        Vec3 c{0, 0, 0};
        uint32_t last = 0;
        for (uint32_t k = b; k < e; ++k) {
          const ProjectedSplat& s = st.projected[order[k]];
          const float dx = s.mean_x - static_cast<float>(px), dy = s.mean_y - static_cast<float>(py);
          const float power = -0.5f * (s.conic[0] * dx * dx + s.conic[2] * dy * dy) - s.conic[1] * dx * dy;
          if (power > 0.0f) continue;
          const float alpha = std::min(kAlphaMax, s.opacity * std::exp(power));
          if (alpha < kAlphaMin) continue;
          const float test_t = t * (1.0f - alpha);
          if (test_t < kTransmittanceMin) break;
          c = c + s.color * (alpha * t);
          t = test_t;
          last = k - b + 1;
        }
        const Vec3 out = c + background * t;
        st.rgb[3 * pix] = out.x, st.rgb[3 * pix + 1] = out.y, st.rgb[3 * pix + 2] = out.z;
        st.alpha[pix] = 1.0f - t;
        st.final_t[pix] = t;
        st.last[pix] = last;
      }
  });
}

namespace {

// The camera terms every gaussian's backward step shares: the world-to-camera rotation and projectSplat's
// field-of-view clamp (tangent units beyond each image edge).
struct BackwardView {
  Mat3 w;
  float lim_x_pos = 0, lim_x_neg = 0, lim_y_pos = 0, lim_y_neg = 0;
};

// The shared camera terms of `cam`.
BackwardView backwardView(const Camera& cam) {
  BackwardView v;
  v.w = cam.world_to_camera.linear();
  const float tan_fovx = 0.5f * static_cast<float>(cam.width) / cam.fx;
  const float tan_fovy = 0.5f * static_cast<float>(cam.height) / cam.fy;
  v.lim_x_pos = (static_cast<float>(cam.width) - cam.cx) / cam.fx + 0.3f * tan_fovx;
  v.lim_x_neg = cam.cx / cam.fx + 0.3f * tan_fovx;
  v.lim_y_pos = (static_cast<float>(cam.height) - cam.cy) / cam.fy + 0.3f * tan_fovy;
  v.lim_y_neg = cam.cy / cam.fy + 0.3f * tan_fovy;
  return v;
}

// Step 1 of the backward pass: per tile, per pixel, back to front from the last splat blended, each tile-list
// entry's dL/d(colour, opacity, mean, conic); then summed per gaussian (n of them).
std::vector<Grad2D> splatGradients2D(size_t n, const Camera& cam, Vec3 background, const RasterState& st,
                                     std::span<const float> d_rgb, std::span<const float> d_alpha) {
  const int tiles_x = (cam.width + kTileSize - 1) / kTileSize;
  const size_t tile_count = st.lists.begin.size();
  const std::vector<uint32_t>& order = st.lists.order;
  std::vector<Grad2D> entry(order.size());
  parallelFor(tile_count, [&](size_t tile) {
    const int tx = static_cast<int>(tile) % tiles_x, ty = static_cast<int>(tile) / tiles_x;
    const uint32_t b = st.lists.begin[tile];
    for (int py = ty * kTileSize; py < std::min(cam.height, (ty + 1) * kTileSize); ++py)
      for (int px = tx * kTileSize; px < std::min(cam.width, (tx + 1) * kTileSize); ++px) {
        const size_t pix = static_cast<size_t>(py) * static_cast<size_t>(cam.width) + static_cast<size_t>(px);
        const Vec3 g_c{d_rgb[3 * pix], d_rgb[3 * pix + 1], d_rgb[3 * pix + 2]};
        const float g_a = d_alpha[pix];
        const float t_final = st.final_t[pix];
        // C = sum c_i a_i T_i + bg T_N, A = 1 - T_N, T_{i+1} = T_i (1 - a_i). Going back to front, `behind`
        // is sum over j > i of c_j a_j T_j.
        const float g_tn = dot(g_c, background) - g_a;  // dL/dT_N
        float t = t_final;
        Vec3 behind{0, 0, 0};
        for (uint32_t k = b + st.last[pix]; k-- > b;) {
          const ProjectedSplat& s = st.projected[order[k]];
          const float dx = s.mean_x - static_cast<float>(px), dy = s.mean_y - static_cast<float>(py);
          const float power = -0.5f * (s.conic[0] * dx * dx + s.conic[2] * dy * dy) - s.conic[1] * dx * dy;
          if (power > 0.0f) continue;
          const float gauss = std::exp(power);
          const float raw = s.opacity * gauss;
          const float alpha = std::min(kAlphaMax, raw);
          if (alpha < kAlphaMin) continue;
          const float one_minus = 1.0f - alpha;
          t /= one_minus;  // T_i, the transmittance in front of this splat
          const float w = alpha * t;
          Grad2D& g = entry[k];
          g.color[0] += w * g_c.x, g.color[1] += w * g_c.y, g.color[2] += w * g_c.z;
          // dC/da_i = c_i T_i - (behind + bg T_N) / (1 - a_i); dT_N/da_i = -T_N / (1 - a_i).
          const float g_alpha = dot(g_c, s.color) * t - (dot(g_c, behind) + g_tn * t_final) / one_minus;
          behind = behind + s.color * w;
          if (raw > kAlphaMax) continue;  // clamped: alpha does not move with opacity or the gaussian
          g.opacity += g_alpha * gauss;
          const float g_power = g_alpha * s.opacity * gauss;
          g.mean_x += g_power * -(s.conic[0] * dx + s.conic[1] * dy);
          g.mean_y += g_power * -(s.conic[2] * dy + s.conic[1] * dx);
          g.conic[0] += g_power * -0.5f * dx * dx;
          g.conic[1] += g_power * -dx * dy;
          g.conic[2] += g_power * -0.5f * dy * dy;
        }
      }
  });
  // Entries to gaussians (sequential over the key order: deterministic).
  std::vector<Grad2D> per(n);
  for (size_t k = 0; k < order.size(); ++k) {
    Grad2D& d = per[order[k]];
    const Grad2D& s = entry[k];
    d.mean_x += s.mean_x, d.mean_y += s.mean_y, d.opacity += s.opacity;
    for (int j = 0; j < 3; ++j) d.conic[j] += s.conic[j], d.color[j] += s.color[j];
  }
  return per;
}

// dL/dR of the rotation matrix of the unit quaternion q (core/math.cpp rotationMatrix) back through q's
// normalisation from raw_q, added to grad_q.
void quatBackward(const Quat& q, const Mat3& gr, const float* raw_q, float* grad_q) {
  const float qw = q.w, qx = q.x, qy = q.y, qz = q.z;
  const auto& R = gr.m;
  const float g_w =
      2.0f * (-qz * R[0][1] + qy * R[0][2] + qz * R[1][0] - qx * R[1][2] - qy * R[2][0] + qx * R[2][1]);
  const float g_x = 2.0f * (qy * R[0][1] + qz * R[0][2] + qy * R[1][0] - 2.0f * qx * R[1][1] - qw * R[1][2] +
                            qz * R[2][0] + qw * R[2][1] - 2.0f * qx * R[2][2]);
  const float g_y = 2.0f * (-2.0f * qy * R[0][0] + qx * R[0][1] + qw * R[0][2] + qx * R[1][0] + qz * R[1][2] -
                            qw * R[2][0] + qz * R[2][1] - 2.0f * qy * R[2][2]);
  const float g_z = 2.0f * (-2.0f * qz * R[0][0] - qw * R[0][1] + qx * R[0][2] + qw * R[1][0] -
                            2.0f * qz * R[1][1] + qy * R[1][2] + qx * R[2][0] + qy * R[2][1]);
  const float len =
      std::sqrt(raw_q[0] * raw_q[0] + raw_q[1] * raw_q[1] + raw_q[2] * raw_q[2] + raw_q[3] * raw_q[3]);
  const float radial = qw * g_w + qx * g_x + qy * g_y + qz * g_z;
  const float gq[4] = {g_w - qw * radial, g_x - qx * radial, g_y - qy * radial, g_z - qz * radial};
  for (int k = 0; k < 4; ++k) grad_q[k] += gq[k] / len;
}

// Step 2 for gaussian i (visible, projected as s): its 2D gradient g through the conic, the EWA projection
// and the covariance to the parameters, added to grads.
void gaussianBackward(const GaussianParams& params, const Camera& cam, const BackwardView& view,
                      const Grad2D& g, const ProjectedSplat& s, size_t i, ParamGrads& grads) {
  const Mat3& w = view.w;
  const float lim_x_pos = view.lim_x_pos, lim_x_neg = view.lim_x_neg;
  const float lim_y_pos = view.lim_y_pos, lim_y_neg = view.lim_y_neg;
  // Colour and opacity through their sigmoids.
  const Vec3 rgb = s.color;
  for (int k = 0; k < 3; ++k)
    grads.color_logits[3 * i + static_cast<size_t>(k)] += g.color[k] * rgb[k] * (1.0f - rgb[k]);
  const float o = s.opacity;
  grads.opacity_logits[i] += g.opacity * o * (1.0f - o);

  // Recompute the projection's intermediates (projectSplat's math).
  const Vec3 p = meanOf(params, i);
  const Vec3 tv = transformPoint(cam.world_to_camera, p);
  const Quat q = rotationOf(params, i);
  const Vec3 scale = scaleOf(params, i);
  const Mat3 r = rotationMatrix(q);
  const Mat3 m = r * Mat3::diagonal(scale);
  const Mat3 v = m * transpose(m);
  const float txtz = tv.x / tv.z, tytz = tv.y / tv.z;
  const bool clamp_x = txtz > lim_x_pos || txtz<-lim_x_neg, clamp_y = tytz> lim_y_pos || tytz < -lim_y_neg;
  const float cx_ratio = std::min(lim_x_pos, std::max(-lim_x_neg, txtz)),
              cy_ratio = std::min(lim_y_pos, std::max(-lim_y_neg, tytz));
  const float tx = cx_ratio * tv.z, ty = cy_ratio * tv.z, tz = tv.z;
  const float j00 = cam.fx / tz, j02 = -(cam.fx * tx) / (tz * tz);
  const float j11 = cam.fy / tz, j12 = -(cam.fy * ty) / (tz * tz);
  const Vec3 t0 = j00 * w.row(0) + j02 * w.row(2);
  const Vec3 t1 = j11 * w.row(1) + j12 * w.row(2);
  const Vec3 vt0 = v * t0, vt1 = v * t1;
  const float a = dot(t0, vt0) + kDilation, bb = dot(t0, vt1), c = dot(t1, vt1) + kDilation;
  const float det = a * c - bb * bb;
  const float inv = 1.0f / det, inv2 = inv * inv;

  // Conic (A, B, C) = (c, -b, a) / det.
  const float gA = g.conic[0], gB = g.conic[1], gC = g.conic[2];
  const float g_a = gA * (-c * c * inv2) + gB * (bb * c * inv2) + gC * (inv - a * c * inv2);
  const float g_b =
      gA * (2.0f * bb * c * inv2) + gB * (-inv - 2.0f * bb * bb * inv2) + gC * (2.0f * a * bb * inv2);
  const float g_cc = gA * (inv - a * c * inv2) + gB * (bb * a * inv2) + gC * (-a * a * inv2);

  // 2D covariance a = t0' V t0, b = t0' V t1, c = t1' V t1 (V symmetric).
  const Vec3 g_t0 = vt0 * (2.0f * g_a) + vt1 * g_b;
  const Vec3 g_t1 = vt1 * (2.0f * g_cc) + vt0 * g_b;
  // dL/dV as a general matrix: g_a t0 t0' + g_b t0 t1' + g_c t1 t1'; symmetrised for V = M M'.
  Mat3 gv;
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 3; ++y) gv.m[x][y] = g_a * t0[x] * t0[y] + g_b * t0[x] * t1[y] + g_cc * t1[x] * t1[y];
  Mat3 gv_sym;
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 3; ++y) gv_sym.m[x][y] = gv.m[x][y] + gv.m[y][x];
  const Mat3 gm = gv_sym * m;  // dL/dM

  // Jacobian entries, then the view-space position (the clamped coordinates follow tz).
  const float g_j00 = dot(g_t0, w.row(0)), g_j02 = dot(g_t0, w.row(2));
  const float g_j11 = dot(g_t1, w.row(1)), g_j12 = dot(g_t1, w.row(2));
  const float tz2 = tz * tz, tz3 = tz2 * tz;
  float g_tx_c = -g_j02 * cam.fx / tz2, g_ty_c = -g_j12 * cam.fy / tz2;
  float g_tz = -g_j00 * cam.fx / tz2 + g_j02 * 2.0f * cam.fx * tx / tz3 - g_j11 * cam.fy / tz2 +
               g_j12 * 2.0f * cam.fy * ty / tz3;
  float g_tx = 0, g_ty = 0;
  if (clamp_x)
    g_tz += g_tx_c * cx_ratio;
  else
    g_tx += g_tx_c;
  if (clamp_y)
    g_tz += g_ty_c * cy_ratio;
  else
    g_ty += g_ty_c;
  // Pixel-index mean: mean_x = fx tv.x / tv.z + cx - 0.5 (unclamped).
  const float izv = 1.0f / tv.z;
  g_tx += g.mean_x * cam.fx * izv;
  g_ty += g.mean_y * cam.fy * izv;
  g_tz += -g.mean_x * cam.fx * tv.x * izv * izv - g.mean_y * cam.fy * tv.y * izv * izv;
  // World position: tv = W p + t.
  const Vec3 g_tv{g_tx, g_ty, g_tz};
  const Vec3 g_p = transpose(w) * g_tv;
  for (int k = 0; k < 3; ++k) grads.means[3 * i + static_cast<size_t>(k)] += g_p[k];

  // M = R diag(s): dL/ds_k = R_col_k . gM_col_k; dL/dR_col_k = s_k gM_col_k.
  Mat3 gr;
  for (int k = 0; k < 3; ++k) {
    const float gs = dot(r.col(k), gm.col(k));
    grads.log_scales[3 * i + static_cast<size_t>(k)] += gs * scale[k];
    for (int x = 0; x < 3; ++x) gr.m[x][k] = scale[k] * gm.m[x][k];
  }
  quatBackward(q, gr, &params.quats[4 * i], &grads.quats[4 * i]);
}

}  // namespace

void rasterBackward(const GaussianParams& params, const Camera& cam, Vec3 background, const RasterState& st,
                    std::span<const float> d_rgb, std::span<const float> d_alpha, ParamGrads& grads) {
  const size_t n = params.size();
  const size_t pixels = static_cast<size_t>(cam.width) * static_cast<size_t>(cam.height);
  if (st.width != cam.width || st.height != cam.height || st.projected.size() != n)
    throw std::invalid_argument("rasterBackward: the state is not of this camera and these parameters");
  if (d_rgb.size() != 3 * pixels || d_alpha.size() != pixels)
    throw std::invalid_argument("rasterBackward: gradient images of the wrong size");
  if (grads.opacity_logits.size() != n) grads.resize(n);

  // 1. Per tile, per pixel: the 2D gradients of each splat.
  const std::vector<Grad2D> per = splatGradients2D(n, cam, background, st, d_rgb, d_alpha);

  // 2. Per gaussian: through the conic, the EWA projection and the covariance to the parameters.
  const BackwardView view = backwardView(cam);
  parallelForRange(n, 1024, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (!st.visible[i]) continue;
      gaussianBackward(params, cam, view, per[i], st.projected[i], i, grads);
    }
  });
}

double photometricLoss(const RasterState& st, std::span<const float> target, Vec3 bg, float alpha_weight,
                       std::vector<float>& d_rgb, std::vector<float>& d_alpha) {
  const size_t pixels = st.alpha.size();
  if (target.size() != 4 * pixels)
    throw std::invalid_argument("photometricLoss: the target is not of the image's size");
  d_rgb.assign(3 * pixels, 0.0f);
  d_alpha.assign(pixels, 0.0f);
  const float w_rgb = 1.0f / static_cast<float>(3 * pixels),
              w_alpha = alpha_weight / static_cast<float>(pixels);
  double rgb_sum = 0, alpha_sum = 0;
  for (size_t p = 0; p < pixels; ++p) {
    const float ta = target[4 * p + 3];
    for (size_t k = 0; k < 3; ++k) {
      const float diff = st.rgb[3 * p + k] - (target[4 * p + k] + (1.0f - ta) * bg[static_cast<int>(k)]);
      rgb_sum += std::abs(diff);
      d_rgb[3 * p + k] = diff > 0 ? w_rgb : diff < 0 ? -w_rgb : 0.0f;
    }
    const float da = st.alpha[p] - ta;
    alpha_sum += std::abs(da);
    d_alpha[p] = da > 0 ? w_alpha : da < 0 ? -w_alpha : 0.0f;
  }
  return rgb_sum / static_cast<double>(3 * pixels) + alpha_weight * alpha_sum / static_cast<double>(pixels);
}

}  // namespace sf::train
