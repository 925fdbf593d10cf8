// INRIA 3DGS PLY reading and writing (docs/formats/ply.md).
#include "io/ply.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/limits.h"
#include "io/byte_reader.h"
#include "io/ply_parser.h"

namespace sf {

namespace {

// Where a vertex property's value goes in the cloud.
enum class Target : uint8_t { kPosition, kNormal, kDc, kRest, kOpacity, kScale, kRot, kColor8, kId, kFilter3d, kExtra };

struct Binding {
  Target target = Target::kExtra;
  int index = 0;  // component, coefficient or extra-channel index
};

bool parseIndexed(const std::string& name, const char* prefix, int* index) {
  size_t n = std::strlen(prefix);
  if (name.size() <= n || name.compare(0, n, prefix) != 0) return false;
  int v = 0;
  for (size_t i = n; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > 100000) return false;
    v = v * 10 + (name[i] - '0');
  }
  *index = v;
  return true;
}

int shDegreeForRestCount(int rest) {
  switch (rest) {
    case 0: return 0;
    case 9: return 1;
    case 24: return 2;
    case 45: return 3;
    default: return -1;
  }
}

}  // namespace

// "SplatRenderMode: mip" / "SplatRenderMode: default" come from gsplat's and nerfstudio's exporters,
// "train_flags antialiasing" from the INRIA proposal. Unknown comments change nothing.
void applyPlyAntialiasComments(const std::vector<std::string>& comments, GaussianCloud& cloud) {
  for (const std::string& line : comments) {
    const size_t b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t\r");
    const std::string c = b == std::string::npos ? std::string() : line.substr(b, e - b + 1);
    if (c == "SplatRenderMode: mip" || c == "train_flags antialiasing") cloud.antialiased = true;
    if (c == "SplatRenderMode: default") cloud.antialiased = false;
    const std::string ours = "splatforge screen_filter ";
    if (c.compare(0, ours.size(), ours) == 0) {
      char* end = nullptr;
      const float v = std::strtof(c.c_str() + ours.size(), &end);
      if (end != c.c_str() + ours.size() && v >= 0.0f && v <= 16.0f) cloud.screen_filter = v;
    }
  }
}

void bakeSmoothingFilter(Vec3& scale, float& opacity, float filter_3d) {
  // An isotropic gaussian convolved with the splat: variances add along every axis; the integral is kept.
  const float f2 = filter_3d * filter_3d;
  const Vec3 wide{std::sqrt(scale.x * scale.x + f2), std::sqrt(scale.y * scale.y + f2), std::sqrt(scale.z * scale.z + f2)};
  const double ratio = (static_cast<double>(scale.x) * scale.y * scale.z) / (static_cast<double>(wide.x) * wide.y * wide.z);
  scale = wide;
  opacity *= static_cast<float>(ratio);
}

std::string plyAntialiasComments(const GaussianCloud& cloud) {
  std::string out;
  if (cloud.antialiased) out += "comment SplatRenderMode: mip\n";
  if (cloud.screen_filter != kScreenFilterInria) out += "comment splatforge screen_filter " + std::to_string(cloud.screen_filter) + "\n";
  return out;
}

GaussianCloud readPly(std::span<const uint8_t> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  ply::Header h = ply::parseHeader(r);
  int vi = h.find("vertex");
  if (vi < 0) r.failAt(0, "PLY has no 'vertex' element");
  const ply::Element& v = h.elements[static_cast<size_t>(vi)];

  GaussianCloud cloud;
  std::vector<Binding> bind(v.properties.size());
  int rest_count = 0, max_rest = -1;
  int seen_scale = 0, seen_rot = 0, seen_pos = 0, seen_dc = 0, seen_norm = 0, seen_color = 0;
  bool seen_opacity = false, has_filter_3d = false;
  for (size_t i = 0; i < v.properties.size(); ++i) {
    const ply::Property& p = v.properties[i];
    const std::string& n = p.name;
    Binding& b = bind[i];
    int idx = 0;
    if (p.is_list) {
      b = {Target::kExtra, -1};  // list properties are skipped
    } else if (n == "x" || n == "y" || n == "z") {
      b = {Target::kPosition, n[0] - 'x'};
      ++seen_pos;
    } else if (n == "nx" || n == "ny" || n == "nz") {
      b = {Target::kNormal, n[1] - 'x'};
      ++seen_norm;
    } else if (parseIndexed(n, "f_dc_", &idx) && idx < 3) {
      b = {Target::kDc, idx};
      ++seen_dc;
    } else if (parseIndexed(n, "f_rest_", &idx)) {
      b = {Target::kRest, idx};
      ++rest_count;
      max_rest = std::max(max_rest, idx);
    } else if (n == "opacity") {
      b = {Target::kOpacity, 0};
      seen_opacity = true;
    } else if (parseIndexed(n, "scale_", &idx) && idx < 3) {
      b = {Target::kScale, idx};
      ++seen_scale;
    } else if (parseIndexed(n, "rot_", &idx) && idx < 4) {
      b = {Target::kRot, idx};
      ++seen_rot;
    } else if (n == "red" || n == "green" || n == "blue") {
      b = {Target::kColor8, n == "red" ? 0 : (n == "green" ? 1 : 2)};
      ++seen_color;
    } else if (n == "id" && p.type == ScalarType::kInt32) {
      b = {Target::kId, 0};
    } else if (n == "filter_3D") {
      b = {Target::kFilter3d, 0};
      has_filter_3d = true;
    } else {
      b = {Target::kExtra, static_cast<int>(cloud.extras.size())};
      cloud.extras.push_back({n, p.type, {}});
    }
  }
  auto missing = [&](const std::string& what) {
    r.failAt(0, "vertex element lacks " + what + " (INRIA 3DGS layout expected)");
  };
  if (seen_pos != 3) missing("x, y, z");
  if (seen_scale != 3) missing("scale_0..scale_2");
  if (seen_rot != 4) missing("rot_0..rot_3");
  if (!seen_opacity) missing("opacity");
  if (seen_dc != 3 && seen_color != 3) missing("f_dc_0..f_dc_2 (or red, green, blue)");
  int degree = shDegreeForRestCount(rest_count);
  if (degree < 0 || max_rest != rest_count - 1)
    r.failAt(0, "f_rest properties: found " + std::to_string(rest_count) +
                    " (highest index " + std::to_string(max_rest) + "); expected f_rest_0..f_rest_N-1 with N in {0, 9, 24, 45}");

  const size_t n = static_cast<size_t>(v.count);
  // visitElement bounds-checks the data before the loop; keep allocation bounded by the file size too.
  if (v.count > bytes.size()) r.failAt(0, "vertex count " + std::to_string(v.count) + " exceeds the file size");
  // Reject counts the data cannot hold before allocating (binary rows have a fixed minimum size; ASCII
  // values need at least two characters each).
  const uint64_t min_row = h.encoding == ply::Encoding::kAscii ? 2 * v.properties.size() : v.rowBytes();
  if (min_row > 0 && v.count > (bytes.size() - h.data_offset) / min_row)
    r.failAt(h.data_offset, "truncated: vertex count " + std::to_string(v.count) + " needs at least " +
                                std::to_string(v.count * min_row) + " bytes of data, the file has " +
                                std::to_string(bytes.size() - h.data_offset));
  checkGaussianBudget(path, v.count, degree,
                      v.count * (sizeof(double) * cloud.extras.size() + (seen_norm == 3 ? sizeof(Vec3) : 0) + sizeof(int32_t)));
  std::vector<ExtraChannel> extras = std::move(cloud.extras);  // resize() clears the optional channels
  cloud.resize(n, degree);
  for (ExtraChannel& e : extras) e.values.resize(n);
  bool has_normals = seen_norm == 3;
  if (has_normals) cloud.normals.resize(n);
  bool has_ids = false;
  for (const Binding& b : bind) has_ids |= b.target == Target::kId;
  if (has_ids) cloud.ids.resize(n);
  const bool use_color8 = seen_dc != 3;
  const int coeffs_per_channel = shCoeffCount(degree) - 1;

  ply::visitElement(r, h, static_cast<size_t>(vi), [&](uint64_t row, const double* values) {
    float s[3] = {0, 0, 0};
    float q[4] = {1, 0, 0, 0};
    float filter = 0;
    float* sh = cloud.sh.data() + row * static_cast<size_t>(cloud.shStride());
    for (size_t i = 0; i < bind.size(); ++i) {
      const Binding& b = bind[i];
      float f = static_cast<float>(values[i]);
      switch (b.target) {
        case Target::kPosition: cloud.positions[row][b.index] = f; break;
        case Target::kNormal: if (has_normals) cloud.normals[row][b.index] = f; break;
        case Target::kDc: sh[b.index] = f; break;
        case Target::kRest: {
          // f_rest is channel-major: index = channel * coeffs_per_channel + (coefficient - 1).
          int channel = b.index / coeffs_per_channel, coeff = b.index % coeffs_per_channel + 1;
          sh[coeff * 3 + channel] = f;
          break;
        }
        case Target::kOpacity: cloud.opacities[row] = sigmoid(f); break;
        case Target::kScale: s[b.index] = f; break;
        case Target::kRot: q[b.index] = f; break;
        case Target::kColor8: if (use_color8) sh[b.index] = colorToShDc(f / 255.0f); break;
        case Target::kId: cloud.ids[row] = static_cast<int32_t>(values[i]); break;
        case Target::kFilter3d: filter = f; break;
        case Target::kExtra: if (b.index >= 0) extras[static_cast<size_t>(b.index)].values[row] = values[i]; break;
      }
    }
    cloud.scales[row] = {std::exp(s[0]), std::exp(s[1]), std::exp(s[2])};
    cloud.rotations[row] = normalize(Quat{q[0], q[1], q[2], q[3]});
    if (has_filter_3d) bakeSmoothingFilter(cloud.scales[row], cloud.opacities[row], filter);
  });
  cloud.extras = std::move(extras);
  applyPlyAntialiasComments(h.comments, cloud);
  // A Mip-Splatting PLY (it alone writes filter_3D) is drawn with its 2D mip filter: compensated opacity and
  // a variance of 0.1 pixels^2. The written file holds the filtered gaussians and says so in its comments.
  if (has_filter_3d) {
    cloud.antialiased = true;
    cloud.screen_filter = kScreenFilterMip;
  }
  return cloud;
}

std::vector<uint8_t> writePly(const GaussianCloud& cloud) {
  const size_t n = cloud.size();
  const int rest = shCoeffCount(cloud.sh_degree) - 1;
  std::string header = "ply\nformat binary_little_endian 1.0\ncomment written by splatforge\n" + plyAntialiasComments(cloud);
  header += "element vertex " + std::to_string(n) + "\n";
  auto prop = [&](const char* type, const std::string& name) { header += std::string("property ") + type + " " + name + "\n"; };
  for (const char* a : {"x", "y", "z"}) prop("float", a);
  if (!cloud.normals.empty())
    for (const char* a : {"nx", "ny", "nz"}) prop("float", a);
  for (int i = 0; i < 3; ++i) prop("float", "f_dc_" + std::to_string(i));
  for (int i = 0; i < 3 * rest; ++i) prop("float", "f_rest_" + std::to_string(i));
  prop("float", "opacity");
  for (int i = 0; i < 3; ++i) prop("float", "scale_" + std::to_string(i));
  for (int i = 0; i < 4; ++i) prop("float", "rot_" + std::to_string(i));
  if (!cloud.ids.empty()) prop("int", "id");
  size_t extra_bytes = 0;
  for (const ExtraChannel& e : cloud.extras) {
    prop(ply::scalarName(e.type), e.name);
    extra_bytes += ply::scalarSize(e.type);
  }
  header += "end_header\n";

  size_t row_floats = 3 + (cloud.normals.empty() ? 0 : 3) + 3 + 3 * static_cast<size_t>(rest) + 1 + 3 + 4;
  size_t row_bytes = row_floats * 4 + (cloud.ids.empty() ? 0 : 4) + extra_bytes;
  std::vector<uint8_t> out(header.size() + n * row_bytes);
  std::memcpy(out.data(), header.data(), header.size());
  uint8_t* p = out.data() + header.size();
  auto put = [&](auto v) {
    std::memcpy(p, &v, sizeof(v));
    p += sizeof(v);
  };
  for (size_t i = 0; i < n; ++i) {
    Vec3 pos = cloud.positions[i];
    put(pos.x), put(pos.y), put(pos.z);
    if (!cloud.normals.empty()) put(cloud.normals[i].x), put(cloud.normals[i].y), put(cloud.normals[i].z);
    auto sh = cloud.shOf(i);
    for (int c = 0; c < 3; ++c) put(sh[static_cast<size_t>(c)]);
    for (int c = 0; c < 3; ++c)
      for (int k = 1; k <= rest; ++k) put(sh[static_cast<size_t>(k * 3 + c)]);
    put(logit(cloud.opacities[i]));
    for (int a = 0; a < 3; ++a) put(std::log(std::max(cloud.scales[i][a], kMinStoredScale)));
    Quat q = cloud.rotations[i];
    put(q.w), put(q.x), put(q.y), put(q.z);
    if (!cloud.ids.empty()) put(cloud.ids[i]);
    for (const ExtraChannel& e : cloud.extras) {
      double d = e.values[i];
      switch (e.type) {
        case ScalarType::kInt8: put(static_cast<int8_t>(d)); break;
        case ScalarType::kUint8: put(static_cast<uint8_t>(d)); break;
        case ScalarType::kInt16: put(static_cast<int16_t>(d)); break;
        case ScalarType::kUint16: put(static_cast<uint16_t>(d)); break;
        case ScalarType::kInt32: put(static_cast<int32_t>(d)); break;
        case ScalarType::kUint32: put(static_cast<uint32_t>(d)); break;
        case ScalarType::kFloat32: put(static_cast<float>(d)); break;
        case ScalarType::kFloat64: put(d); break;
      }
    }
  }
  return out;
}

}  // namespace sf
