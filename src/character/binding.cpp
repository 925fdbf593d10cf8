// Splat bindings: frames, binding, nearest-triangle search, the CPU deform reference and bindings.bin.
#include "character/binding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/geometry.h"
#include "core/parallel.h"

namespace sf::character {

namespace {

Mat3 fromColumns(Vec3 a, Vec3 b, Vec3 c) {
  Mat3 m;
  for (int r = 0; r < 3; ++r) m.m[r][0] = a[r], m.m[r][1] = b[r], m.m[r][2] = c[r];
  return m;
}

void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
void putF(std::vector<uint8_t>& out, float f) {
  uint32_t v;
  std::memcpy(&v, &f, 4);
  put32(out, v);
}
uint32_t get32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
float getF(const uint8_t* p) {
  uint32_t v = get32(p);
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}

constexpr char kMagic[8] = {'S', 'F', 'B', 'I', 'N', 'D', '0', '1'};
constexpr uint32_t kVersion = 1;

}  // namespace

Mat3 triangleFrame(Vec3 v0, Vec3 v1, Vec3 v2) {
  const Vec3 e1 = v1 - v0, e2 = v2 - v0, c = cross(e1, e2);
  const float len = length(c);
  const Vec3 n = len > 0 ? c / std::sqrt(len) : Vec3{};
  return fromColumns(e1, e2, n);
}

SplatBinding bindToTriangle(Vec3 centre, const Cov6& covariance, uint32_t t, Vec3 v0, Vec3 v1, Vec3 v2) {
  const Mat3 b = triangleFrame(v0, v1, v2);
  if (!(std::abs(determinant(b)) > 0))
    throw Error("triangle " + std::to_string(t) + " is degenerate (zero area); cannot bind to it");
  const Mat3 inv = inverse(b);
  SplatBinding s;
  s.kind = BindingKind::kTriangle;
  s.triangle = t;
  const Vec3 c = inv * (centre - v0);
  s.coords = {c.x, c.y, c.z};
  s.covariance = covarianceUpper(inv * covarianceMatrix(covariance) * transpose(inv));
  return s;
}

SplatBinding bindToJoints(Vec3 centre, const Cov6& covariance, std::array<uint16_t, 4> joints,
                          std::array<float, 4> weights) {
  SplatBinding s;
  s.kind = BindingKind::kJoints;
  s.joints = joints;
  s.weights = weights;
  s.coords = {centre.x, centre.y, centre.z};
  s.covariance = covariance;
  return s;
}

std::vector<uint32_t> nearestTriangles(std::span<const Vec3> points, std::span<const Vec3> vertices,
                                       std::span<const uint32_t> indices) {
  const size_t tris = indices.size() / 3;
  std::vector<uint32_t> usable;
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
  double edge_sum = 0;
  for (size_t t = 0; t < tris; ++t) {
    const Vec3 a = vertices[indices[t * 3]], b = vertices[indices[t * 3 + 1]],
               c = vertices[indices[t * 3 + 2]];
    if (!(length(cross(b - a, c - a)) > 0)) continue;
    usable.push_back(static_cast<uint32_t>(t));
    for (const Vec3& v : {a, b, c})
      for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], v[k]), hi[k] = std::max(hi[k], v[k]);
    edge_sum += length(b - a) + length(c - b) + length(a - c);
  }
  if (usable.empty()) throw Error("the mesh has no triangle of non-zero area to bind to");
  // Uniform grid with cells about two mean edges wide (at most 128 per axis).
  const float cell =
      std::max(2.0f * static_cast<float>(edge_sum / (3.0 * static_cast<double>(usable.size()))), 1e-6f);
  int dims[3];
  for (int k = 0; k < 3; ++k) dims[k] = std::clamp(static_cast<int>((hi[k] - lo[k]) / cell) + 1, 1, 128);
  Vec3 size;
  for (int k = 0; k < 3; ++k) size[k] = std::max((hi[k] - lo[k]) / static_cast<float>(dims[k]), 1e-9f);
  auto cellOf = [&](Vec3 p, int k) {
    return std::clamp(static_cast<int>((p[k] - lo[k]) / size[k]), 0, dims[k] - 1);
  };
  const size_t cells =
      static_cast<size_t>(dims[0]) * static_cast<size_t>(dims[1]) * static_cast<size_t>(dims[2]);
  std::vector<std::vector<uint32_t>> grid(cells);
  for (uint32_t t : usable) {
    Vec3 tlo{INFINITY, INFINITY, INFINITY}, thi{-INFINITY, -INFINITY, -INFINITY};
    for (int j = 0; j < 3; ++j) {
      const Vec3 v = vertices[indices[t * 3 + static_cast<uint32_t>(j)]];
      for (int k = 0; k < 3; ++k) tlo[k] = std::min(tlo[k], v[k]), thi[k] = std::max(thi[k], v[k]);
    }
    for (int z = cellOf(tlo, 2); z <= cellOf(thi, 2); ++z)
      for (int y = cellOf(tlo, 1); y <= cellOf(thi, 1); ++y)
        for (int x = cellOf(tlo, 0); x <= cellOf(thi, 0); ++x)
          grid[(static_cast<size_t>(z) * static_cast<size_t>(dims[1]) + static_cast<size_t>(y)) *
                   static_cast<size_t>(dims[0]) +
               static_cast<size_t>(x)]
              .push_back(t);
  }
  const float min_size = std::min({size.x, size.y, size.z});
  std::vector<uint32_t> out(points.size());
  parallelForRange(points.size(), 256, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const Vec3 p = points[i];
      const int c[3] = {cellOf(p, 0), cellOf(p, 1), cellOf(p, 2)};
      float best = INFINITY;
      uint32_t best_t = usable[0];
      const int max_ring = std::max({dims[0], dims[1], dims[2]});
      for (int r = 0; r <= max_ring; ++r) {
        // Every triangle within distance (r * min_size) of p lies in the rings examined so far, and points
        // outside the grid box are clamped into it, so stop once the best beats the ring's reach.
        for (int z = c[2] - r; z <= c[2] + r; ++z)
          for (int y = c[1] - r; y <= c[1] + r; ++y)
            for (int x = c[0] - r; x <= c[0] + r; ++x) {
              if (std::max({std::abs(z - c[2]), std::abs(y - c[1]), std::abs(x - c[0])}) != r) continue;
              if (x < 0 || y < 0 || z < 0 || x >= dims[0] || y >= dims[1] || z >= dims[2]) continue;
              for (uint32_t t :
                   grid[(static_cast<size_t>(z) * static_cast<size_t>(dims[1]) + static_cast<size_t>(y)) *
                            static_cast<size_t>(dims[0]) +
                        static_cast<size_t>(x)]) {
                const Vec3 q = closestPointOnTriangle(
                    p, vertices[indices[t * 3]], vertices[indices[t * 3 + 1]], vertices[indices[t * 3 + 2]]);
                const Vec3 d = q - p;
                const float d2 = dot(d, d);
                if (d2 < best || (d2 == best && t < best_t)) best = d2, best_t = t;
              }
            }
        // Unexamined triangles lie at least r cells from pc (p clamped into the box), and since pc is the
        // projection of p onto the box, |q - p|^2 >= |q - pc|^2 + |pc - p|^2 for any q inside it.
        Vec3 pc;
        for (int k = 0; k < 3; ++k) pc[k] = std::clamp(p[k], lo[k], hi[k]);
        const float outside = length(pc - p), inner = static_cast<float>(r) * min_size;
        const float reach = std::sqrt(inner * inner + outside * outside);
        if (best < INFINITY && std::sqrt(best) <= reach) break;
      }
      out[i] = best_t;
    }
  });
  return out;
}

std::string DeformJob::validate() const {
  const size_t n = bindings.size();
  if (out_positions.size() != n || out_covariances.size() != n)
    return "outputs hold " + std::to_string(out_positions.size()) + " / " +
           std::to_string(out_covariances.size()) + " entries for " + std::to_string(n) + " bindings";
  if (indices.size() % 3) return "indices: " + std::to_string(indices.size()) + " is not a multiple of 3";
  for (uint32_t i : indices)
    if (i >= vertices.size())
      return "indices reach vertex " + std::to_string(i) + " of " + std::to_string(vertices.size());
  const size_t tris = indices.size() / 3;
  for (size_t i = 0; i < n; ++i) {
    const SplatBinding& b = bindings[i];
    if (b.kind == BindingKind::kTriangle) {
      if (b.triangle >= tris)
        return "binding " + std::to_string(i) + ": triangle " + std::to_string(b.triangle) + " of " +
               std::to_string(tris);
    } else if (b.kind == BindingKind::kJoints) {
      for (size_t k = 0; k < 4; ++k)
        if (b.weights[k] != 0 && b.joints[k] >= palette.size())
          return "binding " + std::to_string(i) + ": joint " + std::to_string(b.joints[k]) +
                 " outside the palette of " + std::to_string(palette.size());
    } else {
      return "binding " + std::to_string(i) + ": unknown kind " +
             std::to_string(static_cast<uint32_t>(b.kind));
    }
  }
  return {};
}

void DeformJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("deform: " + why);
  parallelForRange(bindings.size(), 1024, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const SplatBinding& b = bindings[i];
      const Vec3 c{b.coords[0], b.coords[1], b.coords[2]};
      if (b.kind == BindingKind::kTriangle) {
        const uint32_t* t = &indices[static_cast<size_t>(b.triangle) * 3];
        const Vec3 v0 = vertices[t[0]];
        const Mat3 f = triangleFrame(v0, vertices[t[1]], vertices[t[2]]);
        out_positions[i] = v0 + f * c;
        out_covariances[i] = covarianceUpper(f * covarianceMatrix(b.covariance) * transpose(f));
      } else {
        float wsum = 0;
        for (float w : b.weights) wsum += w;
        Mat4 m;
        if (wsum > 0) {
          for (int r = 0; r < 3; ++r)
            for (int k = 0; k < 4; ++k) m.m[r][k] = 0;
          for (size_t j = 0; j < 4; ++j) {
            if (b.weights[j] == 0) continue;
            const Mat4& p = palette[b.joints[j]];
            for (int r = 0; r < 3; ++r)
              for (int k = 0; k < 4; ++k) m.m[r][k] += b.weights[j] / wsum * p.m[r][k];
          }
        }
        const Mat3 a = m.linear();
        out_positions[i] = transformPoint(m, c);
        out_covariances[i] = covarianceUpper(a * covarianceMatrix(b.covariance) * transpose(a));
      }
    }
  });
}

std::vector<uint8_t> encodeBindings(std::span<const SplatBinding> bindings) {
  std::vector<uint8_t> out(kMagic, kMagic + 8);
  put32(out, kVersion);
  put32(out, static_cast<uint32_t>(bindings.size()));
  out.reserve(out.size() + bindings.size() * kBindingRecordBytes);
  for (const SplatBinding& b : bindings) {
    put32(out, static_cast<uint32_t>(b.kind));
    put32(out, b.triangle);
    for (size_t k = 0; k < 4; k += 2) put32(out, uint32_t{b.joints[k]} | uint32_t{b.joints[k + 1]} << 16);
    for (float w : b.weights) putF(out, w);
    for (float c : b.coords) putF(out, c);
    for (float c : b.covariance) putF(out, c);
  }
  return out;
}

std::vector<SplatBinding> decodeBindings(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw Error(name + ": offset 0: not a bindings file (magic SFBIND01 expected)");
  const uint32_t version = get32(bytes.data() + 8), count = get32(bytes.data() + 12);
  if (version != kVersion)
    throw Error(name + ": offset 8: bindings version " + std::to_string(version) +
                " unsupported (expected 1)");
  const uint64_t expected = 16 + static_cast<uint64_t>(count) * kBindingRecordBytes;
  if (bytes.size() != expected)
    throw Error(name + ": " + std::to_string(count) + " records need " + std::to_string(expected) +
                " bytes, the file has " + std::to_string(bytes.size()));
  std::vector<SplatBinding> out(count);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* p = bytes.data() + 16 + i * kBindingRecordBytes;
    SplatBinding& b = out[i];
    const uint32_t kind = get32(p);
    if (kind > 1)
      throw Error(name + ": record " + std::to_string(i) + " (offset " +
                  std::to_string(16 + i * kBindingRecordBytes) + "): unknown kind " + std::to_string(kind));
    b.kind = static_cast<BindingKind>(kind);
    b.triangle = get32(p + 4);
    for (size_t k = 0; k < 4; k += 2) {
      const uint32_t j = get32(p + 8 + 2 * k);
      b.joints[k] = static_cast<uint16_t>(j & 0xffff), b.joints[k + 1] = static_cast<uint16_t>(j >> 16);
    }
    for (size_t k = 0; k < 4; ++k) b.weights[k] = getF(p + 16 + 4 * k);
    for (size_t k = 0; k < 3; ++k) b.coords[k] = getF(p + 32 + 4 * k);
    for (size_t k = 0; k < 6; ++k) b.covariance[k] = getF(p + 44 + 4 * k);
    for (float v : b.coords)
      if (!std::isfinite(v)) throw Error(name + ": record " + std::to_string(i) + ": non-finite coordinates");
  }
  return out;
}

}  // namespace sf::character
