// Morph targets, linear blend skinning and dual-quaternion skinning (Kavan, Collins, Zara, O'Sullivan:
// "Geometric Skinning with Approximate Dual Quaternion Blending", ACM TOG 2008; scale and shear are
// handled by blending the stretch part of each matrix linearly before the dual quaternions, as in
// their section 4.3).
#include "anim/skinning.h"

#include <cmath>

#include "core/error.h"

namespace sf::anim {

namespace {

// Cofactor matrix (det * inverse transpose), sign-corrected so it maps normals like the inverse transpose
// even for mirroring matrices; avoids dividing by a tiny determinant.
Mat3 normalMatrix(const Mat3& m) {
  Vec3 r0 = m.row(0), r1 = m.row(1), r2 = m.row(2);
  Vec3 c0 = cross(r1, r2), c1 = cross(r2, r0), c2 = cross(r0, r1);
  float sign = dot(r0, c0) < 0 ? -1.0f : 1.0f;
  Mat3 n;
  for (int j = 0; j < 3; ++j) {
    n.m[0][j] = c0[j] * sign;
    n.m[1][j] = c1[j] * sign;
    n.m[2][j] = c2[j] * sign;
  }
  return n;
}

Vec3 rotate(Quat q, Vec3 v) {
  Vec3 u{q.x, q.y, q.z};
  Vec3 t = 2.0f * cross(u, v);
  return v + q.w * t + cross(u, t);
}

float qdot(Quat a, Quat b) {
  return a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z;
}

// Collects up to 8 influences of vertex v, normalised; returns the count (0 when the weights sum to 0).
int influences(const SkinningJob& job, size_t v, int* joints, float* weights) {
  int n = 0;
  float sum = 0;
  for (int set = 0; set < 2; ++set) {
    std::span<const JointIndices4> js = set == 0 ? job.joints0 : job.joints1;
    std::span<const JointWeights4> ws = set == 0 ? job.weights0 : job.weights1;
    if (js.empty()) continue;
    for (size_t k = 0; k < 4; ++k) {
      float w = ws[v][k];
      if (!(w > 0)) continue;
      joints[n] = js[v][k];
      weights[n] = w;
      sum += w;
      ++n;
    }
  }
  if (!(sum > 0) || !std::isfinite(sum)) return 0;
  for (int i = 0; i < n; ++i) weights[i] /= sum;
  return n;
}

// Calls skin(v, joints, weights, n) for every vertex with influences; a vertex without any is copied
// (its normal normalised), as both skinning methods require.
template <typename SkinVertex>
void forEachSkinnedVertex(const SkinningJob& job, SkinVertex skin) {
  int joints[8];
  float weights[8];
  for (size_t v = 0; v < job.positions.size(); ++v) {
    int n = influences(job, v, joints, weights);
    if (n == 0) {
      job.out_positions[v] = job.positions[v];
      if (!job.normals.empty()) job.out_normals[v] = normalize(job.normals[v]);
      continue;
    }
    skin(v, joints, weights, n);
  }
}

void skinLinear(const SkinningJob& job) {
  forEachSkinnedVertex(job, [&](size_t v, const int* joints, const float* weights, int n) {
    Mat4 m;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) {
        float s = 0;
        for (int i = 0; i < n; ++i) s += weights[i] * job.palette[static_cast<size_t>(joints[i])].m[r][c];
        m.m[r][c] = s;
      }
    job.out_positions[v] = transformPoint(m, job.positions[v]);
    if (!job.normals.empty()) job.out_normals[v] = normalize(normalMatrix(m.linear()) * job.normals[v]);
  });
}

void skinDualQuaternion(const SkinningJob& job) {
  forEachSkinnedVertex(job, [&](size_t v, const int* joints, const float* weights, int n) {
    const DualQuatJoint& first = job.dq_palette[static_cast<size_t>(joints[0])];
    Quat real{0, 0, 0, 0}, dual{0, 0, 0, 0};
    Mat3 stretch = Mat3::diagonal({0, 0, 0});
    for (int i = 0; i < n; ++i) {
      const DualQuatJoint& d = job.dq_palette[static_cast<size_t>(joints[i])];
      float w = qdot(d.real, first.real) < 0 ? -weights[i] : weights[i];  // same hemisphere as the first
      real = {real.w + w * d.real.w, real.x + w * d.real.x, real.y + w * d.real.y, real.z + w * d.real.z};
      dual = {dual.w + w * d.dual.w, dual.x + w * d.dual.x, dual.y + w * d.dual.y, dual.z + w * d.dual.z};
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) stretch.m[r][c] += weights[i] * d.stretch.m[r][c];
    }
    float len = std::sqrt(qdot(real, real));
    if (!(len > 1e-12f)) {  // opposite rotations cancelled out: fall back to the strongest joint
      int best = 0;
      for (int i = 1; i < n; ++i)
        if (weights[i] > weights[best]) best = i;
      const DualQuatJoint& d = job.dq_palette[static_cast<size_t>(joints[best])];
      real = d.real, dual = d.dual, len = 1;
    }
    real = {real.w / len, real.x / len, real.y / len, real.z / len};
    dual = {dual.w / len, dual.x / len, dual.y / len, dual.z / len};
    Vec3 rv{real.x, real.y, real.z}, dv{dual.x, dual.y, dual.z};
    Vec3 translation = 2.0f * (real.w * dv - dual.w * rv + cross(rv, dv));
    job.out_positions[v] = rotate(real, stretch * job.positions[v]) + translation;
    if (!job.normals.empty())
      job.out_normals[v] = normalize(rotate(real, normalMatrix(stretch) * job.normals[v]));
  });
}

}  // namespace

std::string MorphJob::validate() const {
  if (out_positions.size() != positions.size())
    return "out_positions holds " + std::to_string(out_positions.size()) + " vertices, positions " +
           std::to_string(positions.size());
  if (out_normals.size() != normals.size())
    return "out_normals holds " + std::to_string(out_normals.size()) + " vertices, normals " +
           std::to_string(normals.size());
  if (!normals.empty() && normals.size() != positions.size()) return "normals and positions differ in count";
  if (weights.size() != targets.size())
    return std::to_string(weights.size()) + " weights for " + std::to_string(targets.size()) + " targets";
  for (size_t t = 0; t < targets.size(); ++t) {
    if (!targets[t].positions.empty() && targets[t].positions.size() != positions.size())
      return "target " + std::to_string(t) + ": " + std::to_string(targets[t].positions.size()) +
             " position deltas for " + std::to_string(positions.size()) + " vertices";
    if (!targets[t].normals.empty() && targets[t].normals.size() != normals.size())
      return "target " + std::to_string(t) + ": " + std::to_string(targets[t].normals.size()) +
             " normal deltas for " + std::to_string(normals.size()) + " normals";
  }
  return {};
}

void MorphJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("MorphJob: " + why);
  for (size_t v = 0; v < positions.size(); ++v) out_positions[v] = positions[v];
  for (size_t v = 0; v < normals.size(); ++v) out_normals[v] = normals[v];
  for (size_t t = 0; t < targets.size(); ++t) {
    float w = weights[t];
    if (w == 0) continue;
    for (size_t v = 0; v < targets[t].positions.size(); ++v)
      out_positions[v] = out_positions[v] + w * targets[t].positions[v];
    for (size_t v = 0; v < targets[t].normals.size(); ++v)
      out_normals[v] = out_normals[v] + w * targets[t].normals[v];
  }
}

std::string DualQuatPaletteJob::validate() const {
  if (output.size() != palette.size())
    return "output holds " + std::to_string(output.size()) + " joints, the palette " +
           std::to_string(palette.size());
  return {};
}

void DualQuatPaletteJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("DualQuatPaletteJob: " + why);
  for (size_t j = 0; j < palette.size(); ++j) {
    const Mat4& m = palette[j];
    Mat3 l = m.linear();
    // QR by Gram-Schmidt on the columns: l = q * stretch, q a proper rotation.
    Vec3 c0 = l.col(0), c1 = l.col(1);
    Vec3 q0 = normalize(c0);
    Vec3 q1 = normalize(c1 - dot(q0, c1) * q0);
    Mat3 q;
    if (length(q0) > 0 && length(q1) > 0) {
      Vec3 q2 = cross(q0, q1);
      for (int i = 0; i < 3; ++i) q.m[i][0] = q0[i], q.m[i][1] = q1[i], q.m[i][2] = q2[i];
    }  // else degenerate: identity rotation, everything in the stretch
    DualQuatJoint& out = output[j];
    out.real = quatFromRotationMatrix(q);
    Mat3 rot = rotationMatrix(out.real);  // the rotation the quaternion really encodes
    out.stretch = transpose(rot) * l;
    Vec3 t = m.translation();
    const Quat& r = out.real;
    // dual = 0.5 * (0, t) * r
    out.dual = {-0.5f * (t.x * r.x + t.y * r.y + t.z * r.z), 0.5f * (t.x * r.w + t.y * r.z - t.z * r.y),
                0.5f * (-t.x * r.z + t.y * r.w + t.z * r.x), 0.5f * (t.x * r.y - t.y * r.x + t.z * r.w)};
  }
}

std::string SkinningJob::validate() const {
  const size_t n = positions.size();
  if (out_positions.size() != n)
    return "out_positions holds " + std::to_string(out_positions.size()) + " vertices, positions " +
           std::to_string(n);
  if (!normals.empty() && normals.size() != n) return "normals and positions differ in count";
  if (out_normals.size() != normals.size()) return "out_normals and normals differ in count";
  if (joints0.size() != n || weights0.size() != n)
    return "joints0 and weights0 must hold one entry per vertex";
  if (joints1.size() != weights1.size() || (!joints1.empty() && joints1.size() != n))
    return "joints1 and weights1 must both be empty or hold one entry per vertex";
  size_t joints = method == SkinningMethod::kLinearBlend ? palette.size() : dq_palette.size();
  if (joints == 0) return method == SkinningMethod::kLinearBlend ? "empty palette" : "empty dq_palette";
  for (int set = 0; set < 2; ++set) {
    std::span<const JointIndices4> js = set == 0 ? joints0 : joints1;
    std::span<const JointWeights4> ws = set == 0 ? weights0 : weights1;
    for (size_t v = 0; v < js.size(); ++v)
      for (size_t k = 0; k < 4; ++k)
        if (ws[v][k] > 0 && js[v][k] >= joints)
          return "vertex " + std::to_string(v) + ": joint " + std::to_string(js[v][k]) +
                 " outside the palette of " + std::to_string(joints);
  }
  return {};
}

void SkinningJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("SkinningJob: " + why);
  if (method == SkinningMethod::kLinearBlend)
    skinLinear(*this);
  else
    skinDualQuaternion(*this);
}

}  // namespace sf::anim
