// PlayCanvas compressed PLY reader (docs/formats/compressed-ply.md): per 256 splats a "chunk" row of
// float bounds; per splat four packed uint32 (position 11/10/11, rotation smallest-three 2+10+10+10,
// log-scale 11/10/11, colour RGBA 8/8/8/8); optional "sh" element of uchar f_rest_*. And the writer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "core/limits.h"
#include "core/morton.h"
#include "io/byte_reader.h"
#include "io/byte_writer.h"
#include "io/ply.h"
#include "io/ply_parser.h"

namespace sf {

namespace {

constexpr size_t kChunkSplats = 256;
const char* const kChunkBounds[12] = {"min_x",       "min_y",       "min_z",       "max_x",
                                      "max_y",       "max_z",       "min_scale_x", "min_scale_y",
                                      "min_scale_z", "max_scale_x", "max_scale_y", "max_scale_z"};
const char* const kChunkColor[6] = {"min_r", "min_g", "min_b", "max_r", "max_g", "max_b"};
const char* const kPacked[4] = {"packed_position", "packed_rotation", "packed_scale", "packed_color"};

float unorm(uint32_t v, int bits) {
  return static_cast<float>(v & ((1u << bits) - 1u)) / static_cast<float>((1u << bits) - 1u);
}
float lerp(float a, float b, float t) {
  return a * (1.0f - t) + b * t;
}

Vec3 unpack111011(uint32_t v) {
  return {unorm(v >> 21, 11), unorm(v >> 11, 10), unorm(v, 11)};
}

Quat unpackRotation(uint32_t v) {
  const float norm = std::sqrt(2.0f);
  float a = (unorm(v >> 20, 10) - 0.5f) * norm;
  float b = (unorm(v >> 10, 10) - 0.5f) * norm;
  float c = (unorm(v, 10) - 0.5f) * norm;
  float m = std::sqrt(std::max(0.0f, 1.0f - (a * a + b * b + c * c)));
  float q[4];
  uint32_t largest = v >> 30;  // index in (w, x, y, z) = rot_0..rot_3 order
  float rest[3] = {a, b, c};
  for (uint32_t i = 0, k = 0; i < 4; ++i) q[i] = i == largest ? m : rest[k++];
  return normalize(Quat{q[0], q[1], q[2], q[3]});
}

const ply::Element* findElement(const ply::Header& h, const char* name) {
  int i = h.find(name);
  return i < 0 ? nullptr : &h.elements[static_cast<size_t>(i)];
}

}  // namespace

bool isCompressedPly(std::span<const uint8_t> bytes) {
  if (!ply::looksLikePly(bytes)) return false;
  try {
    ByteReader r(bytes, "");
    ply::Header h = ply::parseHeader(r);
    const ply::Element* v = findElement(h, "vertex");
    return findElement(h, "chunk") != nullptr && v != nullptr && v->find("packed_position") >= 0;
  } catch (const Error&) {
    return false;
  }
}

GaussianCloud readCompressedPly(std::span<const uint8_t> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  ply::Header h = ply::parseHeader(r);
  if (h.encoding != ply::Encoding::kBinaryLittleEndian)
    r.failAt(0, "compressed PLY must be binary_little_endian");
  int ci = h.find("chunk"), vi = h.find("vertex"), si = h.find("sh");
  if (ci < 0 || vi < 0) r.failAt(0, "compressed PLY needs 'chunk' and 'vertex' elements");
  const ply::Element& chunk = h.elements[static_cast<size_t>(ci)];
  const ply::Element& vert = h.elements[static_cast<size_t>(vi)];

  int bound_index[12], color_index[6], packed_index[4];
  for (int k = 0; k < 12; ++k)
    if ((bound_index[k] = chunk.find(kChunkBounds[k])) < 0)
      r.failAt(0, std::string("chunk element lacks property ") + kChunkBounds[k]);
  bool has_color_bounds = true;
  for (int k = 0; k < 6; ++k) has_color_bounds &= (color_index[k] = chunk.find(kChunkColor[k])) >= 0;
  for (int k = 0; k < 4; ++k) {
    packed_index[k] = vert.find(kPacked[k]);
    if (packed_index[k] < 0) r.failAt(0, std::string("vertex element lacks property ") + kPacked[k]);
    if (vert.properties[static_cast<size_t>(packed_index[k])].type != ScalarType::kUint32)
      r.failAt(0, std::string("vertex property ") + kPacked[k] + " must be uint");
  }
  const uint64_t n = vert.count;
  if (chunk.count != (n + kChunkSplats - 1) / kChunkSplats)
    r.failAt(0, "chunk count " + std::to_string(chunk.count) + " does not match ceil(" + std::to_string(n) +
                    " / 256)");
  int degree = 0;
  const ply::Element* sh_el = si >= 0 ? &h.elements[static_cast<size_t>(si)] : nullptr;
  if (sh_el) {
    size_t m = sh_el->properties.size();
    degree = m == 9 ? 1 : m == 24 ? 2 : m == 45 ? 3 : -1;
    if (degree < 0) r.failAt(0, "sh element has " + std::to_string(m) + " properties; expected 9, 24 or 45");
    if (sh_el->count != n) r.failAt(0, "sh element count does not match the vertex count");
    for (size_t k = 0; k < m; ++k)
      if (sh_el->properties[k].name != "f_rest_" + std::to_string(k) ||
          sh_el->properties[k].type != ScalarType::kUint8)
        r.failAt(0, "sh element property " + std::to_string(k) + " must be 'uchar f_rest_" +
                        std::to_string(k) + "'");
  }
  // Each vertex row is 16 bytes: reject impossible counts before allocating.
  if (n > bytes.size() / 16)
    r.failAt(0, "vertex count " + std::to_string(n) + " exceeds what the file can hold");

  checkGaussianBudget(path, n, degree, chunk.count * 18 * sizeof(float));
  std::vector<float> bounds(static_cast<size_t>(chunk.count) * 18, 0.0f);
  ply::visitElement(r, h, static_cast<size_t>(ci), [&](uint64_t row, const double* values) {
    float* b = bounds.data() + row * 18;
    for (int k = 0; k < 12; ++k) b[k] = static_cast<float>(values[bound_index[k]]);
    for (int k = 0; k < 6; ++k)
      b[12 + k] = has_color_bounds ? static_cast<float>(values[color_index[k]]) : (k < 3 ? 0.0f : 1.0f);
  });

  GaussianCloud cloud;
  cloud.resize(static_cast<size_t>(n), degree);
  ply::visitElement(r, h, static_cast<size_t>(vi), [&](uint64_t i, const double* values) {
    const float* b = bounds.data() + (i / kChunkSplats) * 18;
    uint32_t packed[4];
    for (int k = 0; k < 4; ++k) packed[k] = static_cast<uint32_t>(values[packed_index[k]]);
    Vec3 p = unpack111011(packed[0]);
    cloud.positions[i] = {lerp(b[0], b[3], p.x), lerp(b[1], b[4], p.y), lerp(b[2], b[5], p.z)};
    cloud.rotations[i] = unpackRotation(packed[1]);
    Vec3 s = unpack111011(packed[2]);
    cloud.scales[i] = {std::exp(lerp(b[6], b[9], s.x)), std::exp(lerp(b[7], b[10], s.y)),
                       std::exp(lerp(b[8], b[11], s.z))};
    uint32_t c = packed[3];
    float* sh = cloud.sh.data() + i * static_cast<size_t>(cloud.shStride());
    for (int k = 0; k < 3; ++k) {
      float t = static_cast<float>((c >> (24 - 8 * k)) & 0xffu) / 255.0f;
      sh[k] = colorToShDc(lerp(b[12 + k], b[15 + k], t));
    }
    cloud.opacities[i] = static_cast<float>(c & 0xffu) / 255.0f;
  });
  if (sh_el) {
    const int rest = shCoeffCount(degree) - 1;
    ply::visitElement(r, h, static_cast<size_t>(si), [&](uint64_t i, const double* values) {
      float* sh = cloud.sh.data() + i * static_cast<size_t>(cloud.shStride());
      for (int k = 0; k < 3 * rest; ++k) {
        double v = values[k];
        float t = v == 0 ? 0.0f : (v == 255 ? 1.0f : static_cast<float>((v + 0.5) / 256.0));
        int channel = k / rest, coeff = k % rest + 1;  // channel-major, as in the INRIA layout
        sh[coeff * 3 + channel] = (t - 0.5f) * 8.0f;
      }
    });
  }
  applyPlyAntialiasComments(h.comments, cloud);
  return cloud;
}

namespace {

uint32_t quantise(float t, int bits) {
  const float top = static_cast<float>((1u << bits) - 1u);
  return static_cast<uint32_t>(std::clamp(std::floor(t * top + 0.5f), 0.0f, top));
}

// t of v within [lo, hi]: 0 at or below lo, 1 at or above hi, 0 for a degenerate range.
float normalise(float v, float lo, float hi) {
  if (hi - lo < 1e-5f) return 0.0f;
  return std::clamp((v - lo) / (hi - lo), 0.0f, 1.0f);
}

uint32_t pack111011(Vec3 t) {
  return quantise(t.x, 11) << 21 | quantise(t.y, 10) << 11 | quantise(t.z, 11);
}

uint32_t packRotation(Quat rotation) {
  const Quat q = normalize(rotation);
  const float v[4] = {q.w, q.x, q.y, q.z};  // rot_0..rot_3
  uint32_t largest = 0;
  for (uint32_t k = 1; k < 4; ++k)
    if (std::abs(v[k]) > std::abs(v[largest])) largest = k;
  const float sign = v[largest] < 0 ? -1.0f : 1.0f;
  uint32_t packed = largest << 30;
  int shift = 20;
  for (uint32_t k = 0; k < 4; ++k) {
    if (k == largest) continue;
    packed |= quantise(v[k] * sign * 0.70710678118654752f + 0.5f, 10) << shift;
    shift -= 10;
  }
  return packed;
}

}  // namespace

std::vector<uint32_t> compressedPlyOrder(const GaussianCloud& cloud) {
  const size_t n = cloud.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (n == 0) return order;
  Vec3 lo = cloud.positions[0], hi = lo;
  for (const Vec3& p : cloud.positions)
    for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
  std::vector<uint32_t> code(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t c = 0;
    for (int k = 0; k < 3; ++k)
      c |= static_cast<uint32_t>(spreadBits3(quantise(normalise(cloud.positions[i][k], lo[k], hi[k]), 10))
                                 << (2 - k));  // 30 bits
    code[i] = c;
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return code[a] < code[b]; });
  return order;
}

std::vector<uint8_t> writeCompressedPly(const GaussianCloud& cloud) {
  const size_t n = cloud.size();
  const size_t chunks = (n + kChunkSplats - 1) / kChunkSplats;
  const int rest = shCoeffCount(cloud.sh_degree) - 1;
  std::string header =
      "ply\nformat binary_little_endian 1.0\ncomment written by splatforge\n" + plyAntialiasComments(cloud);
  header += "element chunk " + std::to_string(chunks) + "\n";
  for (const char* name : kChunkBounds) header += std::string("property float ") + name + "\n";
  for (const char* name : kChunkColor) header += std::string("property float ") + name + "\n";
  header += "element vertex " + std::to_string(n) + "\n";
  for (const char* name : kPacked) header += std::string("property uint ") + name + "\n";
  if (rest > 0) {
    header += "element sh " + std::to_string(n) + "\n";
    for (int k = 0; k < 3 * rest; ++k) header += "property uchar f_rest_" + std::to_string(k) + "\n";
  }
  header += "end_header\n";

  const std::vector<uint32_t> order = compressedPlyOrder(cloud);
  auto color = [&](size_t i, int k) { return shDcToColor(cloud.shOf(i)[static_cast<size_t>(k)]); };
  auto logScale = [&](size_t i, int k) {
    return std::clamp(std::log(std::max(cloud.scales[i][k], kMinStoredScale)), -20.0f, 20.0f);
  };
  std::vector<uint8_t> out(header.begin(), header.end());
  out.reserve(header.size() + chunks * 72 + n * (16 + static_cast<size_t>(3 * rest)));
  std::vector<float> bounds(chunks * 18);
  for (size_t c = 0; c < chunks; ++c) {
    float* b = bounds.data() + c * 18;
    for (int k = 0; k < 3; ++k) {
      b[k] = b[6 + k] = b[12 + k] = INFINITY;
      b[3 + k] = b[9 + k] = b[15 + k] = -INFINITY;
    }
    for (size_t r = c * kChunkSplats; r < std::min(n, (c + 1) * kChunkSplats); ++r) {
      const size_t i = order[r];
      for (int k = 0; k < 3; ++k) {
        const float values[3] = {cloud.positions[i][k], logScale(i, k), color(i, k)};
        for (int f = 0; f < 3; ++f) {
          b[6 * f + k] = std::min(b[6 * f + k], values[f]);
          b[6 * f + 3 + k] = std::max(b[6 * f + 3 + k], values[f]);
        }
      }
    }
    for (int k = 0; k < 18; ++k) putLE(out, b[k]);
  }
  for (size_t r = 0; r < n; ++r) {
    const size_t i = order[r];
    const float* b = bounds.data() + (r / kChunkSplats) * 18;
    Vec3 tp, ts;
    for (int k = 0; k < 3; ++k) {
      tp[k] = normalise(cloud.positions[i][k], b[k], b[3 + k]);
      ts[k] = normalise(logScale(i, k), b[6 + k], b[9 + k]);
    }
    uint32_t rgba = quantise(std::clamp(cloud.opacities[i], 0.0f, 1.0f), 8);
    for (int k = 0; k < 3; ++k)
      rgba |= quantise(normalise(color(i, k), b[12 + k], b[15 + k]), 8) << (24 - 8 * k);
    putLE(out, pack111011(tp));
    putLE(out, packRotation(cloud.rotations[i]));
    putLE(out, pack111011(ts));
    putLE(out, rgba);
  }
  for (size_t r = 0; r < n && rest > 0; ++r) {
    const float* sh = cloud.shOf(order[r]).data();
    for (int channel = 0; channel < 3; ++channel)
      for (int coeff = 1; coeff <= rest; ++coeff) {  // channel-major, as the INRIA f_rest_*
        const float t = sh[coeff * 3 + channel] / 8.0f + 0.5f;
        out.push_back(static_cast<uint8_t>(std::clamp(std::trunc(t * 256.0f), 0.0f, 255.0f)));
      }
  }
  return out;
}

}  // namespace sf
