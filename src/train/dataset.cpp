// NeRF-synthetic folders (docs/formats/nerf-synthetic.md): writing ours, reading ours and other tools' as
// untrusted input.
#include "train/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/limits.h"
#include "core/parallel.h"
#include "io/file.h"
#include "io/image_io.h"
#include "io/json.h"

namespace sf::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSplits[3] = {"train", "val", "test"};
constexpr size_t kMaxFrames = 1000000;

const std::vector<View>& splitOf(const Dataset& d, size_t s) {
  return s == 0 ? d.train : s == 1 ? d.val : d.test;
}
std::vector<View>& splitOf(Dataset& d, size_t s) {
  return s == 0 ? d.train : s == 1 ? d.val : d.test;
}

std::string transformsPath(const std::string& dir, size_t split) {
  return (fs::path(dir) / (std::string("transforms_") + kSplits[split] + ".json")).string();
}

// Horizontal field of view of a camera the folder can describe; throws naming the view otherwise.
double angleOf(const View& v, const std::string& where) {
  const Camera& c = v.camera;
  if (const char* why = c.validate()) throw Error(where + ": " + why);
  const float w = static_cast<float>(c.width), h = static_cast<float>(c.height);
  if (std::abs(c.fx - c.fy) > 1e-5f * c.fx || std::abs(c.cx - 0.5f * w) > 1e-3f ||
      std::abs(c.cy - 0.5f * h) > 1e-3f)
    throw Error(where +
                ": a NeRF-synthetic folder holds cameras with fx = fy and the principal point on the image "
                "centre only (fx " +
                std::to_string(c.fx) + ", fy " + std::to_string(c.fy) + ", cx " + std::to_string(c.cx) +
                ", cy " + std::to_string(c.cy) + ")");
  if (v.rgba.size() != static_cast<size_t>(c.width) * static_cast<size_t>(c.height) * 4)
    throw Error(where + ": " + std::to_string(v.rgba.size()) + " image values for a " +
                std::to_string(c.width) + " x " + std::to_string(c.height) + " RGBA camera");
  return 2.0 * std::atan(0.5 * static_cast<double>(w) / static_cast<double>(c.fx));
}

json matrixJson(const Mat4& m) {
  json rows = json::array();
  for (int r = 0; r < 4; ++r) {
    json row = json::array();
    for (int c = 0; c < 4; ++c) row.push_back(static_cast<double>(m.m[r][c]));
    rows.push_back(row);
  }
  return rows;
}

uint8_t quantise(float v) {
  return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f));
}

// Premultiplied float RGBA -> straight-alpha RGBA8. Colour is divided by the quantised alpha, so that reading
// (premultiplying by it) lands within half a step of the original.
RgbaImage8 straightRgba8(const View& v) {
  RgbaImage8 img;
  img.width = v.camera.width, img.height = v.camera.height;
  img.rgba.resize(v.rgba.size());
  for (size_t p = 0; p < v.rgba.size(); p += 4) {
    const uint8_t a = quantise(v.rgba[p + 3]);
    const float af = static_cast<float>(a) / 255.0f;
    for (size_t c = 0; c < 3; ++c) img.rgba[p + c] = a ? quantise(v.rgba[p + c] / af) : 0;
    img.rgba[p + 3] = a;
  }
  return img;
}

// Area resampling of premultiplied RGBA (separable box over each output pixel's footprint).
std::vector<float> resampleArea(const std::vector<float>& src, int w, int h, int w2, int h2) {
  auto weights = [](int n, int n2) {  // per output index: (first input, weights)
    std::vector<std::pair<int, std::vector<float>>> out(static_cast<size_t>(n2));
    const double step = static_cast<double>(n) / static_cast<double>(n2);
    for (int o = 0; o < n2; ++o) {
      const double a = o * step, b = (o + 1) * step;
      const int i0 = static_cast<int>(std::floor(a)), i1 = std::min(n, static_cast<int>(std::ceil(b)));
      auto& [first, wts] = out[static_cast<size_t>(o)];
      first = i0;
      for (int i = i0; i < i1; ++i)
        wts.push_back(static_cast<float>((std::min<double>(b, i + 1) - std::max<double>(a, i)) / step));
    }
    return out;
  };
  const auto wx = weights(w, w2), wy = weights(h, h2);
  std::vector<float> rows(static_cast<size_t>(w2) * static_cast<size_t>(h) * 4, 0.0f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w2; ++x) {
      const auto& [first, wts] = wx[static_cast<size_t>(x)];
      float* o = &rows[(static_cast<size_t>(y) * static_cast<size_t>(w2) + static_cast<size_t>(x)) * 4];
      for (size_t k = 0; k < wts.size(); ++k) {
        const float* s =
            &src[(static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(first) + k) * 4];
        for (int c = 0; c < 4; ++c) o[c] += wts[k] * s[c];
      }
    }
  std::vector<float> out(static_cast<size_t>(w2) * static_cast<size_t>(h2) * 4, 0.0f);
  for (int y = 0; y < h2; ++y) {
    const auto& [first, wts] = wy[static_cast<size_t>(y)];
    for (size_t k = 0; k < wts.size(); ++k) {
      const float* s = &rows[(static_cast<size_t>(first) + k) * static_cast<size_t>(w2) * 4];
      float* o = &out[static_cast<size_t>(y) * static_cast<size_t>(w2) * 4];
      for (size_t i = 0; i < static_cast<size_t>(w2) * 4; ++i) o[i] += wts[k] * s[i];
    }
  }
  return out;
}

// A frame's image path: relative, inside dir, ".png" added when it has no extension.
fs::path imagePath(const fs::path& dir, const JsonNode& node) {
  std::string text = node.string();
  while (text.rfind("./", 0) == 0) text.erase(0, 2);
  if (text.empty() || text.find('\0') != std::string::npos)
    node.fail("expected a relative image path such as \"./train/r_000\"");
  fs::path rel(text);
  if (rel.is_absolute() || rel.has_root_name())
    node.fail("expected a relative image path inside the dataset folder, got an absolute one");
  for (const fs::path& part : rel)
    if (part == "..") node.fail("expected an image path inside the dataset folder, got one with \"..\"");
  if (!rel.has_extension()) rel += ".png";
  const fs::path full = dir / rel;
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(dir, ec), canon = fs::weakly_canonical(full, ec);
  if (!ec) {
    auto b = base.begin(), f = canon.begin();
    for (; b != base.end() && f != canon.end(); ++b, ++f)
      if (*b != *f) break;
    if (b != base.end() && !(b->empty() && std::next(b) == base.end()))
      node.fail("the image " + full.string() + " leads outside the dataset folder");
  }
  return full;
}

Mat4 matrixOf(const JsonNode& node) {
  if (!node.value.is_array() || node.value.size() != 4)
    node.fail("expected a 4x4 matrix: an array of 4 rows of 4 numbers");
  Mat4 m;
  for (size_t r = 0; r < 4; ++r) {
    const std::vector<float> row = node.at(r).numbers(4);
    for (size_t c = 0; c < 4; ++c) m.m[r][c] = row[c];
  }
  if (m.m[3][0] != 0 || m.m[3][1] != 0 || m.m[3][2] != 0 || m.m[3][3] != 1)
    node.fail("expected the last row [0, 0, 0, 1]");
  const Mat3 r = m.linear(), rrt = r * transpose(r);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (std::abs(rrt.m[i][j] - (i == j ? 1.0f : 0.0f)) > 1e-3f)
        node.fail("expected a rigid camera-to-world matrix (orthonormal rotation, no scale)");
  if (determinant(r) < 0) node.fail("expected a rigid camera-to-world matrix, got a reflection");
  const float t = std::abs(m.m[0][3]) + std::abs(m.m[1][3]) + std::abs(m.m[2][3]);
  if (!(t < 1e12f)) node.fail("expected a finite camera position");
  return m;
}

// One split's transforms file; false when it is absent (val and test may be).
bool readSplit(const fs::path& dir, size_t split, int max_size, Dataset& out, uint64_t& held_bytes) {
  const std::string file = transformsPath(dir.string(), split);
  std::error_code ec;
  if (split != 0 && !fs::exists(file, ec)) return false;
  const std::vector<uint8_t> bytes = readFile(file);
  const json doc =
      parseJsonText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), file);
  const JsonNode root{doc, "", file};
  if (!doc.is_object()) root.fail("expected an object with \"camera_angle_x\" and \"frames\"");
  const double angle = root["camera_angle_x"].number();
  if (!(angle > 0 && angle < 3.1))
    root["camera_angle_x"].fail("expected a horizontal field of view in radians, in (0, 3.1)");
  const JsonNode frames = root["frames"];
  if (!frames.value.is_array()) frames.fail("expected an array of frames");
  if (split == 0 && frames.value.empty()) frames.fail("expected at least one frame");
  if (frames.value.size() > kMaxFrames)
    frames.fail("expected at most " + std::to_string(kMaxFrames) + " frames");
  if (split == 0 && root.has("splatforge")) {
    const JsonNode sf = root["splatforge"];
    const double scale = sf["scale"].number();
    if (!(scale > 0)) sf["scale"].fail("expected a positive number");
    out.scale = static_cast<float>(scale);
    out.offset = sf["offset"].vec3();
    out.gltf_axes = true;
  }
  std::vector<View>& views = splitOf(out, split);
  int width = 0, height = 0;
  std::string first_image;
  for (size_t i = 0; i < frames.value.size(); ++i) {
    const JsonNode frame = frames.at(i);
    if (!frame.value.is_object())
      frame.fail("expected an object with \"file_path\" and \"transform_matrix\"");
    const Mat4 c2w = matrixOf(frame["transform_matrix"]);
    const JsonNode path_node = frame["file_path"];
    const fs::path image = imagePath(dir, path_node);
    RgbaImage8 img;
    try {
      img = decodeImage8(readFile(image.string()), image.string());
    } catch (const Error& e) {
      path_node.fail(e.what());
    }
    if (i == 0) {
      width = img.width, height = img.height, first_image = image.string();
    } else if (img.width != width || img.height != height) {
      path_node.fail("the image " + image.string() + " is " + std::to_string(img.width) + " x " +
                     std::to_string(img.height) + ", expected " + std::to_string(width) + " x " +
                     std::to_string(height) + " as " + first_image + " (one size per split)");
    }
    int w = img.width, h = img.height;
    if (max_size > 0 && std::max(w, h) > max_size) {
      const double s = static_cast<double>(max_size) / static_cast<double>(std::max(w, h));
      w = std::max(1, static_cast<int>(std::lround(img.width * s))),
      h = std::max(1, static_cast<int>(std::lround(img.height * s)));
    }
    // The views held so far, this one as float RGBA, and its resampled copy.
    const uint64_t full = static_cast<uint64_t>(img.width) * static_cast<uint64_t>(img.height) * 16;
    const uint64_t kept = static_cast<uint64_t>(w) * static_cast<uint64_t>(h) * 16;
    checkByteBudget(image.string(), held_bytes + full + (kept != full ? kept : 0), "decoded dataset images");
    View v;
    v.camera = cameraFromGl(c2w, img.width, img.height, angle);
    v.rgba.resize(img.rgba.size());
    for (size_t p = 0; p < img.rgba.size(); p += 4) {
      const float a = static_cast<float>(img.rgba[p + 3]) / 255.0f;
      for (size_t c = 0; c < 3; ++c) v.rgba[p + c] = static_cast<float>(img.rgba[p + c]) / 255.0f * a;
      v.rgba[p + 3] = a;
    }
    if (w != img.width || h != img.height) {
      v.rgba = resampleArea(v.rgba, img.width, img.height, w, h);
      const float sx = static_cast<float>(w) / static_cast<float>(img.width),
                  sy = static_cast<float>(h) / static_cast<float>(img.height);
      v.camera.width = w, v.camera.height = h;
      v.camera.fx *= sx, v.camera.cx *= sx, v.camera.fy *= sy, v.camera.cy *= sy;
    }
    held_bytes += kept;
    fs::path stem = fs::path(path_node.string()).lexically_normal().replace_extension();
    std::string name = stem.generic_string();
    while (name.rfind("./", 0) == 0) name.erase(0, 2);
    v.name = name;
    views.push_back(std::move(v));
  }
  return true;
}

}  // namespace

Mat4 cameraToWorldGl(const Camera& camera) {
  const Mat3 r = camera.world_to_camera.linear();
  const Mat3 rt = transpose(r);
  const Vec3 position = -(rt * camera.world_to_camera.translation());
  return Mat4::fromLinearTranslation(rt * Mat3::diagonal({1, -1, -1}), position);
}

Camera cameraFromGl(const Mat4& c2w_gl, int width, int height, double camera_angle_x) {
  const Mat3 r_cv = c2w_gl.linear() *
                    Mat3::diagonal({1, -1, -1});  // camera axes (x right, y down, z forward) in world space
  const Mat3 w2c = transpose(r_cv);
  Camera cam;
  cam.width = width, cam.height = height;
  cam.fx = cam.fy = static_cast<float>(0.5 * static_cast<double>(width) / std::tan(0.5 * camera_angle_x));
  cam.cx = 0.5f * static_cast<float>(width), cam.cy = 0.5f * static_cast<float>(height);
  cam.world_to_camera = Mat4::fromLinearTranslation(w2c, -(w2c * c2w_gl.translation()));
  return cam;
}

void writeNerfSynthetic(const Dataset& d, const std::string& dir) {
  // Everything is checked before the folder is touched.
  double angles[3] = {0, 0, 0};
  size_t total = 0;
  for (size_t s = 0; s < 3; ++s) {
    const std::vector<View>& views = splitOf(d, s);
    for (size_t i = 0; i < views.size(); ++i) {
      const std::string where = std::string("dataset ") + kSplits[s] + " view " + std::to_string(i);
      const double a = angleOf(views[i], where);
      if (i == 0)
        angles[s] = a;
      else if (std::abs(a - angles[s]) > 1e-6)
        throw Error(where + ": horizontal field of view " + std::to_string(a) + " differs from the split's " +
                    std::to_string(angles[s]) +
                    " (a NeRF-synthetic folder holds one camera_angle_x per split)");
    }
    total += views.size();
  }
  if (total == 0) throw Error(dir + ": the dataset holds no views");
  if (!(d.scale > 0) || !std::isfinite(d.scale) || !std::isfinite(d.offset.x + d.offset.y + d.offset.z))
    throw Error(dir + ": the dataset's normalisation (scale, offset) must be finite with a positive scale");
  const double fallback_angle = !d.train.empty() ? angles[0] : !d.val.empty() ? angles[1] : angles[2];

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dir + ": cannot create the dataset folder: " + ec.message());
  // No stale transforms file may describe the images while they are rewritten.
  for (size_t s = 0; s < 3; ++s) {
    const std::string file = transformsPath(dir, s);
    fs::remove(file, ec);
    if (ec) throw Error(file + ": cannot remove the old transforms file: " + ec.message());
  }
  struct Job {
    size_t split, index;
  };
  std::vector<Job> jobs;
  for (size_t s = 0; s < 3; ++s) {
    const std::vector<View>& views = splitOf(d, s);
    if (views.empty()) continue;
    fs::create_directories(fs::path(dir) / kSplits[s], ec);
    if (ec)
      throw Error((fs::path(dir) / kSplits[s]).string() + ": cannot create the folder: " + ec.message());
    for (size_t i = 0; i < views.size(); ++i) jobs.push_back({s, i});
  }
  auto stem = [](size_t s, size_t i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s/r_%03zu", kSplits[s], i);
    return std::string(buf);
  };
  parallelFor(jobs.size(), [&](size_t j) {
    const View& v = splitOf(d, jobs[j].split)[jobs[j].index];
    const std::vector<uint8_t> png = encodePng8(straightRgba8(v));
    writeFileAtomic((fs::path(dir) / (stem(jobs[j].split, jobs[j].index) + ".png")).string(), png);
  });
  // Images of an earlier run into this folder that this dataset does not list (more views then, or a
  // split it has no more) are removed: the folder holds exactly what its transforms files describe. Only
  // names of this writer's pattern (r_<digits>.png in a split folder) are touched.
  for (size_t s = 0; s < 3; ++s) {
    const fs::path split = fs::path(dir) / kSplits[s];
    if (!fs::is_directory(split, ec)) continue;
    for (const fs::directory_entry& e : fs::directory_iterator(split, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() < 7 || name.rfind("r_", 0) != 0 || e.path().extension() != ".png") continue;
      const std::string digits = name.substr(2, name.size() - 6);
      if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
        continue;
      const size_t index = std::stoull(digits);
      if (index < splitOf(d, s).size() && name == fs::path(stem(s, index)).filename().string() + ".png")
        continue;
      fs::remove(e.path(), ec);
    }
    if (splitOf(d, s).empty()) fs::remove(split, ec);  // only when empty
  }
  // The transforms files last, train at the very end: the folder reads as a dataset only once complete.
  for (size_t s : {size_t{2}, size_t{1}, size_t{0}}) {
    const std::vector<View>& views = splitOf(d, s);
    json j;
    // As a float32 value, as Blender writes it (the cameras' float focal lengths hold no more).
    j["camera_angle_x"] = static_cast<double>(static_cast<float>(views.empty() ? fallback_angle : angles[s]));
    json frames = json::array();
    for (size_t i = 0; i < views.size(); ++i)
      frames.push_back({{"file_path", "./" + stem(s, i)},
                        {"transform_matrix", matrixJson(cameraToWorldGl(views[i].camera))}});
    j["frames"] = std::move(frames);
    if (s == 0)
      j["splatforge"] = {{"version", 1},
                         {"scale", static_cast<double>(d.scale)},
                         {"offset",
                          {static_cast<double>(d.offset.x), static_cast<double>(d.offset.y),
                           static_cast<double>(d.offset.z)}},
                         {"rule", "p_dataset = p_source * scale + offset"}};
    const std::string text = j.dump(2) + "\n";
    writeFileAtomic(transformsPath(dir, s),
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
}

Dataset readNerfSynthetic(const std::string& dir, int max_size) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(dir + ": not a dataset folder (expected a directory holding transforms_train.json)");
  if (max_size < 0) throw Error(dir + ": the largest image size must be 0 (as stored) or positive");
  Dataset d;
  uint64_t held_bytes = 0;  // float RGBA of the views read so far
  for (size_t s = 0; s < 3; ++s) readSplit(fs::path(dir), s, max_size, d, held_bytes);
  return d;
}

}  // namespace sf::train
