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
    case 0:
      return 0;
    case 9:
      return 1;
    case 24:
      return 2;
    case 45:
      return 3;
    default:
      return -1;
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
  const Vec3 wide{std::sqrt(scale.x * scale.x + f2), std::sqrt(scale.y * scale.y + f2),
                  std::sqrt(scale.z * scale.z + f2)};
  const double ratio =
      (static_cast<double>(scale.x) * scale.y * scale.z) / (static_cast<double>(wide.x) * wide.y * wide.z);
  scale = wide;
  opacity *= static_cast<float>(ratio);
}

std::string plyAntialiasComments(const GaussianCloud& cloud) {
  std::string out;
  if (cloud.antialiased) out += "comment SplatRenderMode: mip\n";
  if (cloud.screen_filter != kScreenFilterInria)
    out += "comment splatforge screen_filter " + std::to_string(cloud.screen_filter) + "\n";
  return out;
}

PlyVertexLayout plyVertexLayout(const ply::Header& h, const ByteReader& r) {
  using Target = PlyVertexLayout::Target;
  const int vi = h.find("vertex");
  if (vi < 0) r.failAt(0, "PLY has no 'vertex' element");
  const ply::Element& v = h.elements[static_cast<size_t>(vi)];
  PlyVertexLayout l;
  l.element = static_cast<size_t>(vi);
  l.count = v.count;
  l.row_bytes = v.rowBytes();
  l.fields.resize(v.properties.size());
  int rest_count = 0, max_rest = -1;
  int seen_scale = 0, seen_rot = 0, seen_pos = 0, seen_dc = 0, seen_norm = 0, seen_color = 0;
  bool seen_opacity = false;
  uint32_t offset = 0;
  std::vector<uint8_t> is_rest(v.properties.size(), 0);
  for (size_t i = 0; i < v.properties.size(); ++i) {
    const ply::Property& p = v.properties[i];
    const std::string& n = p.name;
    PlyVertexLayout::Field& f = l.fields[i];
    f.type = p.type;
    f.offset = offset;
    offset += static_cast<uint32_t>(ply::scalarSize(p.type));
    int idx = 0;
    auto bind = [&](Target target, int index) { f.target = target, f.index = static_cast<uint32_t>(index); };
    if (p.is_list) {
      bind(Target::kSkip, 0);  // list properties are skipped
    } else if (n == "x" || n == "y" || n == "z") {
      bind(Target::kPosition, n[0] - 'x');
      ++seen_pos;
    } else if (n == "nx" || n == "ny" || n == "nz") {
      bind(Target::kNormal, n[1] - 'x');
      ++seen_norm;
    } else if (parseIndexed(n, "f_dc_", &idx) && idx < 3) {
      bind(Target::kSh, idx);  // the DC coefficient's channel idx
      ++seen_dc;
    } else if (parseIndexed(n, "f_rest_", &idx)) {
      bind(Target::kSh, idx);  // turned into its SH float below, once the degree is known
      is_rest[i] = 1;
      ++rest_count;
      max_rest = std::max(max_rest, idx);
    } else if (n == "opacity") {
      bind(Target::kOpacity, 0);
      seen_opacity = true;
    } else if (parseIndexed(n, "scale_", &idx) && idx < 3) {
      bind(Target::kScale, idx);
      ++seen_scale;
    } else if (parseIndexed(n, "rot_", &idx) && idx < 4) {
      bind(Target::kRot, idx);
      ++seen_rot;
    } else if (n == "red" || n == "green" || n == "blue") {
      bind(Target::kColor8, n == "red" ? 0 : (n == "green" ? 1 : 2));
      ++seen_color;
    } else if (n == "id" && p.type == ScalarType::kInt32) {
      bind(Target::kId, 0);
      l.ids = true;
    } else if (n == "filter_3D") {
      bind(Target::kFilter3d, 0);
      l.filter_3d = true;
    } else {
      bind(Target::kExtra, static_cast<int>(l.extras.size()));
      l.extras.push_back({n, p.type, {}});
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
  l.sh_degree = shDegreeForRestCount(rest_count);
  if (l.sh_degree < 0 || max_rest != rest_count - 1)
    r.failAt(0, "f_rest properties: found " + std::to_string(rest_count) + " (highest index " +
                    std::to_string(max_rest) + "); expected f_rest_0..f_rest_N-1 with N in {0, 9, 24, 45}");
  l.normals = seen_norm == 3;
  const bool use_color8 = seen_dc != 3;
  const int coeffs_per_channel = shCoeffCount(l.sh_degree) - 1;
  for (size_t i = 0; i < l.fields.size(); ++i) {
    PlyVertexLayout::Field& f = l.fields[i];
    if (is_rest[i]) {
      // f_rest is channel-major: index = channel * coeffs_per_channel + (coefficient - 1).
      const int idx = static_cast<int>(f.index), channel = idx / coeffs_per_channel,
                coeff = idx % coeffs_per_channel + 1;
      f.index = static_cast<uint32_t>(coeff * 3 + channel);
    }
    if ((f.target == Target::kColor8 && !use_color8) || (f.target == Target::kNormal && !l.normals))
      f.target = Target::kSkip;
  }
  GaussianCloud flags;
  applyPlyAntialiasComments(h.comments, flags);
  // A Mip-Splatting PLY (it alone writes filter_3D) is drawn with its 2D mip filter: compensated opacity and
  // a variance of 0.1 pixels^2. The written file holds the filtered gaussians and says so in its comments.
  l.antialiased = flags.antialiased || l.filter_3d;
  l.screen_filter = l.filter_3d ? kScreenFilterMip : flags.screen_filter;
  return l;
}

namespace {

// What a row holds before activation.
struct RawVertex {
  float scale[3] = {0, 0, 0};
  float rot[4] = {1, 0, 0, 0};
  float filter = 0;
};

void startVertex(const PlyVertexLayout& l, PlyVertex& out) {
  out.position = out.normal = Vec3{};
  out.opacity = 0;
  out.id = 0;
  std::fill_n(out.sh, shCoeffCount(l.sh_degree) * 3, 0.0f);
}

void applyField(const PlyVertexLayout::Field& f, double value, RawVertex& raw, PlyVertex& out) {
  using Target = PlyVertexLayout::Target;
  const float v = static_cast<float>(value);
  const int i = static_cast<int>(f.index);
  switch (f.target) {
    case Target::kPosition:
      out.position[i] = v;
      break;
    case Target::kNormal:
      out.normal[i] = v;
      break;
    case Target::kSh:
      out.sh[f.index] = v;
      break;
    case Target::kColor8:
      out.sh[f.index] = colorToShDc(v / 255.0f);
      break;
    case Target::kOpacity:
      out.opacity = sigmoid(v);
      break;
    case Target::kScale:
      raw.scale[f.index] = v;
      break;
    case Target::kRot:
      raw.rot[f.index] = v;
      break;
    case Target::kId:
      out.id = static_cast<int32_t>(value);
      break;
    case Target::kFilter3d:
      raw.filter = v;
      break;
    case Target::kExtra:
      if (out.extras) out.extras[f.index] = value;
      break;
    case Target::kSkip:
      break;
  }
}

void finishVertex(const PlyVertexLayout& l, const RawVertex& raw, PlyVertex& out) {
  out.scale = {std::exp(raw.scale[0]), std::exp(raw.scale[1]), std::exp(raw.scale[2])};
  out.rotation = normalize(Quat{raw.rot[0], raw.rot[1], raw.rot[2], raw.rot[3]});
  if (l.filter_3d) bakeSmoothingFilter(out.scale, out.opacity, raw.filter);
}

}  // namespace

void decodePlyVertex(const PlyVertexLayout& layout, const double* values, PlyVertex& out) {
  RawVertex raw;
  startVertex(layout, out);
  for (size_t i = 0; i < layout.fields.size(); ++i) applyField(layout.fields[i], values[i], raw, out);
  finishVertex(layout, raw, out);
}

void decodePlyVertexRow(const PlyVertexLayout& layout, const uint8_t* row, PlyVertex& out) {
  RawVertex raw;
  startVertex(layout, out);
  for (const PlyVertexLayout::Field& f : layout.fields)
    if (f.target != PlyVertexLayout::Target::kSkip)
      applyField(f, ply::loadScalar(row + f.offset, f.type, false), raw, out);
  finishVertex(layout, raw, out);
}

GaussianCloud readPly(std::span<const uint8_t> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  const ply::Header h = ply::parseHeader(r);
  const PlyVertexLayout layout = plyVertexLayout(h, r);
  const ply::Element& v = h.elements[layout.element];

  const size_t n = static_cast<size_t>(v.count);
  // visitElement bounds-checks the data before the loop; keep allocation bounded by the file size too.
  if (v.count > bytes.size())
    r.failAt(0, "vertex count " + std::to_string(v.count) + " exceeds the file size");
  // Reject counts the data cannot hold before allocating (binary rows have a fixed minimum size; ASCII
  // values need at least two characters each).
  const uint64_t min_row = h.encoding == ply::Encoding::kAscii ? 2 * v.properties.size() : v.rowBytes();
  if (min_row > 0 && v.count > (bytes.size() - h.data_offset) / min_row)
    r.failAt(h.data_offset, "truncated: vertex count " + std::to_string(v.count) + " needs at least " +
                                std::to_string(v.count * min_row) + " bytes of data, the file has " +
                                std::to_string(bytes.size() - h.data_offset));
  checkGaussianBudget(path, v.count, layout.sh_degree,
                      v.count * (sizeof(double) * layout.extras.size() + (layout.normals ? sizeof(Vec3) : 0) +
                                 sizeof(int32_t)));
  GaussianCloud cloud;
  cloud.resize(n, layout.sh_degree);
  std::vector<ExtraChannel> extras = layout.extras;
  for (ExtraChannel& e : extras) e.values.resize(n);
  if (layout.normals) cloud.normals.resize(n);
  if (layout.ids) cloud.ids.resize(n);
  std::vector<double> row_extras(extras.size());

  ply::visitElement(r, h, layout.element, [&](uint64_t row, const double* values) {
    PlyVertex g;
    g.sh = cloud.sh.data() + row * static_cast<size_t>(cloud.shStride());
    g.extras = row_extras.data();
    decodePlyVertex(layout, values, g);
    cloud.positions[row] = g.position;
    cloud.scales[row] = g.scale;
    cloud.rotations[row] = g.rotation;
    cloud.opacities[row] = g.opacity;
    if (layout.normals) cloud.normals[row] = g.normal;
    if (layout.ids) cloud.ids[row] = g.id;
    for (size_t k = 0; k < extras.size(); ++k) extras[k].values[row] = row_extras[k];
  });
  cloud.extras = std::move(extras);
  cloud.antialiased = layout.antialiased;
  cloud.screen_filter = layout.screen_filter;
  return cloud;
}

std::vector<uint8_t> writePly(const GaussianCloud& cloud) {
  const size_t n = cloud.size();
  const int rest = shCoeffCount(cloud.sh_degree) - 1;
  std::string header =
      "ply\nformat binary_little_endian 1.0\ncomment written by splatforge\n" + plyAntialiasComments(cloud);
  header += "element vertex " + std::to_string(n) + "\n";
  auto prop = [&](const char* type, const std::string& name) {
    header += std::string("property ") + type + " " + name + "\n";
  };
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
        case ScalarType::kInt8:
          put(static_cast<int8_t>(d));
          break;
        case ScalarType::kUint8:
          put(static_cast<uint8_t>(d));
          break;
        case ScalarType::kInt16:
          put(static_cast<int16_t>(d));
          break;
        case ScalarType::kUint16:
          put(static_cast<uint16_t>(d));
          break;
        case ScalarType::kInt32:
          put(static_cast<int32_t>(d));
          break;
        case ScalarType::kUint32:
          put(static_cast<uint32_t>(d));
          break;
        case ScalarType::kFloat32:
          put(static_cast<float>(d));
          break;
        case ScalarType::kFloat64:
          put(d);
          break;
      }
    }
  }
  return out;
}

}  // namespace sf
