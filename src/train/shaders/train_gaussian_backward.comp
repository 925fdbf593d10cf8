#version 460
// Per gaussian: its summed 2D gradients (the raster backward's fixed-point sums) through the conic, the EWA
// projection with its field-of-view clamp, the covariance R S S^T R^T, the quaternion's normalisation and the
// sigmoids to the parameters (rasterBackward's second stage, train/raster_grad.cpp, the same math), plus the
// annealed entropy term on the opacities. Writes every parameter's gradient and clears the sums.
#include "train_common.glsl"

layout(local_size_x = SF_TRAIN_WG) in;

const float kFixed = float(1u << 16) * float(1u << (SF_TRAIN_FIXED_BITS - 16));

void main() {
  if (frameOverflowed()) return;
  uint i = linearIndex(), n = pc.count;
  if (i >= n) return;
  FrameRef fr = FrameRef(pc.frame);
  TFloats p = pc.params, gr = pc.grads;
  float npix = float(fr.f.width * fr.f.height);
  float g2[SF_TRAIN_GRAD2D];
  for (uint c = 0u; c < SF_TRAIN_GRAD2D; ++c) {
    g2[c] = float(pc.grad2d.v[i * SF_TRAIN_GRAD2D + c]) / (kFixed * npix);
    pc.grad2d.v[i * SF_TRAIN_GRAD2D + c] = 0l;
  }
  float o = sigmoid(p.v[opacityAt(i)]);
  vec3 rgb = vec3(sigmoid(p.v[colorAt(i)]), sigmoid(p.v[colorAt(i) + 1u]), sigmoid(p.v[colorAt(i) + 2u]));
  float g_opacity_logit = pc.entropy_weight * (1.0 - 2.0 * o) / float(n) * o * (1.0 - o);
  vec3 g_color = vec3(0.0), g_mean = vec3(0.0), g_log_scale = vec3(0.0);
  vec4 g_quat = vec4(0.0);
  if (fr.f.touched.v[i] != 0u) {
    g_color = vec3(g2[6], g2[7], g2[8]) * rgb * (1.0 - rgb);
    g_opacity_logit += g2[5] * o * (1.0 - o);

    vec3 mean = vec3(p.v[meanAt(i)], p.v[meanAt(i) + 1u], p.v[meanAt(i) + 2u]);
    vec3 w0 = vec3(fr.f.world_to_camera[0], fr.f.world_to_camera[1], fr.f.world_to_camera[2]);
    vec3 w1 = vec3(fr.f.world_to_camera[4], fr.f.world_to_camera[5], fr.f.world_to_camera[6]);
    vec3 w2 = vec3(fr.f.world_to_camera[8], fr.f.world_to_camera[9], fr.f.world_to_camera[10]);
    vec3 tv = vec3(dot(w0, mean) + fr.f.world_to_camera[3], dot(w1, mean) + fr.f.world_to_camera[7], dot(w2, mean) + fr.f.world_to_camera[11]);
    vec4 q = unitQuat(p, i);
    vec3 r0, r1, r2;
    rotationRows(q, r0, r1, r2);
    vec3 s = exp(vec3(p.v[scaleAt(i)], p.v[scaleAt(i) + 1u], p.v[scaleAt(i) + 2u]));
    // Rows of M = R diag(s) and V = M M^T (row-major as arrays).
    vec3 m[3] = vec3[](r0 * s, r1 * s, r2 * s);
    mat3 v;  // v[col][row]; symmetric
    for (int x = 0; x < 3; ++x)
      for (int y = 0; y < 3; ++y) v[y][x] = dot(m[x], m[y]);

    float width = float(fr.f.width), height = float(fr.f.height);
    float fx = fr.f.fx, fy = fr.f.fy, cx = fr.f.cx, cy = fr.f.cy;
    float tan_fovx = 0.5 * width / fx, tan_fovy = 0.5 * height / fy;
    float lim_x_pos = (width - cx) / fx + 0.3 * tan_fovx, lim_x_neg = cx / fx + 0.3 * tan_fovx;
    float lim_y_pos = (height - cy) / fy + 0.3 * tan_fovy, lim_y_neg = cy / fy + 0.3 * tan_fovy;
    float txtz = tv.x / tv.z, tytz = tv.y / tv.z;
    bool clamp_x = txtz > lim_x_pos || txtz < -lim_x_neg, clamp_y = tytz > lim_y_pos || tytz < -lim_y_neg;
    float cx_ratio = min(lim_x_pos, max(-lim_x_neg, txtz)), cy_ratio = min(lim_y_pos, max(-lim_y_neg, tytz));
    float tx = cx_ratio * tv.z, ty = cy_ratio * tv.z, tz = tv.z;
    float j00 = fx / tz, j02 = -(fx * tx) / (tz * tz);
    float j11 = fy / tz, j12 = -(fy * ty) / (tz * tz);
    vec3 t0 = j00 * w0 + j02 * w2, t1 = j11 * w1 + j12 * w2;
    vec3 vt0 = v * t0, vt1 = v * t1;
    // The raster backward summed the conic's gradient as the 2D covariance's (a, b, c) = (xx, xy, yy).
    float g_a = g2[2], g_b = g2[3], g_cc = g2[4];
    vec3 g_t0 = vt0 * (2.0 * g_a) + vt1 * g_b;
    vec3 g_t1 = vt1 * (2.0 * g_cc) + vt0 * g_b;
    // dL/dM = (G + G^T) M with G = g_a t0 t0' + g_b t0 t1' + g_c t1 t1'; rows of M are m[k].
    vec3 gm[3];
    for (int x = 0; x < 3; ++x) {
      vec3 row = vec3(0.0);
      for (int y = 0; y < 3; ++y) {
        float gxy = g_a * t0[x] * t0[y] + g_b * t0[x] * t1[y] + g_cc * t1[x] * t1[y];
        float gyx = g_a * t0[y] * t0[x] + g_b * t0[y] * t1[x] + g_cc * t1[y] * t1[x];
        row += (gxy + gyx) * m[y];
      }
      gm[x] = row;
    }
    float g_j00 = dot(g_t0, w0), g_j02 = dot(g_t0, w2);
    float g_j11 = dot(g_t1, w1), g_j12 = dot(g_t1, w2);
    float tz2 = tz * tz, tz3 = tz2 * tz;
    float g_tx_c = -g_j02 * fx / tz2, g_ty_c = -g_j12 * fy / tz2;
    float g_tz = -g_j00 * fx / tz2 + g_j02 * 2.0 * fx * tx / tz3 - g_j11 * fy / tz2 + g_j12 * 2.0 * fy * ty / tz3;
    float g_tx = 0.0, g_ty = 0.0;
    if (clamp_x) g_tz += g_tx_c * cx_ratio; else g_tx += g_tx_c;
    if (clamp_y) g_tz += g_ty_c * cy_ratio; else g_ty += g_ty_c;
    float izv = 1.0 / tv.z;
    g_tx += g2[0] * fx * izv;
    g_ty += g2[1] * fy * izv;
    g_tz += -g2[0] * fx * tv.x * izv * izv - g2[1] * fy * tv.y * izv * izv;
    g_mean = g_tx * w0 + g_ty * w1 + g_tz * w2;  // W^T g_tv
    // M = R diag(s): dL/ds_k = R col k . dL/dM col k; dL/dR[x][k] = s_k dL/dM[x][k].
    vec3 rr[3] = vec3[](r0, r1, r2);
    float R[3][3];
    for (int k = 0; k < 3; ++k) {
      float gs = rr[0][k] * gm[0][k] + rr[1][k] * gm[1][k] + rr[2][k] * gm[2][k];
      g_log_scale[k] = gs * s[k];
      for (int x = 0; x < 3; ++x) R[x][k] = s[k] * gm[x][k];
    }
    float qw = q.x, qx = q.y, qy = q.z, qz = q.w;
    float g_w = 2.0 * (-qz * R[0][1] + qy * R[0][2] + qz * R[1][0] - qx * R[1][2] - qy * R[2][0] + qx * R[2][1]);
    float g_x = 2.0 * (qy * R[0][1] + qz * R[0][2] + qy * R[1][0] - 2.0 * qx * R[1][1] - qw * R[1][2] + qz * R[2][0] + qw * R[2][1] - 2.0 * qx * R[2][2]);
    float g_y = 2.0 * (-2.0 * qy * R[0][0] + qx * R[0][1] + qw * R[0][2] + qx * R[1][0] + qz * R[1][2] - qw * R[2][0] + qz * R[2][1] - 2.0 * qy * R[2][2]);
    float g_z = 2.0 * (-2.0 * qz * R[0][0] - qw * R[0][1] + qx * R[0][2] + qw * R[1][0] - 2.0 * qz * R[1][1] + qy * R[1][2] + qx * R[2][0] + qy * R[2][1]);
    uint qa = quatAt(i);
    vec4 raw = vec4(p.v[qa], p.v[qa + 1u], p.v[qa + 2u], p.v[qa + 3u]);
    float len = sqrt(dot(raw, raw));
    vec4 gq = vec4(g_w, g_x, g_y, g_z);
    g_quat = (gq - q * dot(q, gq)) / len;
  }
  for (uint k = 0u; k < 3u; ++k) {
    gr.v[meanAt(i) + k] = g_mean[k];
    gr.v[scaleAt(i) + k] = g_log_scale[k];
    gr.v[colorAt(i) + k] = g_color[k];
  }
  for (uint k = 0u; k < 4u; ++k) gr.v[quatAt(i) + k] = g_quat[k];
  gr.v[opacityAt(i)] = g_opacity_logit;
}
