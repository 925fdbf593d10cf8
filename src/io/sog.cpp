// SOG reading (meta versions 1 and 2, bundled or unpacked) and writing (version 2). Layout and quantisation:
// docs/formats/sog.md. The images are lossless WebP, whose headers are read here and whose pixels are coded
// per build (io/sog_images.h); the archive is a plain ZIP (io/zip.h).
#include "io/sog.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "core/error.h"
#include "core/limits.h"
#include "core/morton.h"
#include "core/parallel.h"
#include "io/file.h"
#include "io/json.h"
#include "io/sog_images.h"
#include "io/sog_quantize.h"
#include "io/zip.h"

namespace sf {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kMaxImageSide = 16383;                // WebP's limit per side
constexpr size_t kPaletteRow = 64;                  // SH palette entries per row of the centroid image
constexpr int kShCoeffsPerBand[4] = {0, 3, 8, 15};  // higher-order coefficients per colour for bands 0..3
constexpr const char* kMetaName = "meta.json";

// sign(x) ln(|x| + 1) and its inverse: SOG's position encoding, fine near the origin, coarse far away.
double logEncode(double x) {
  return std::copysign(std::log1p(std::abs(x)), x);
}
double logDecode(double v) {
  return std::copysign(std::expm1(std::abs(v)), v);
}

// ----- reading: meta.json -------------------------------------------------------------------------------

// Typed access to the parsed meta.json; every failure names the file and the JSON path.
class Meta {
 public:
  Meta(const json& root, std::string where) : root_(root), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& at, const std::string& why) const {
    throw Error(where_ + ": " + at + ": " + why);
  }
  const json& root() const { return root_; }
  const json& object(const json& parent, const std::string& key, const std::string& at) const {
    const json& v = member(parent, key, at);
    if (!v.is_object()) fail(join(at, key), "expected an object");
    return v;
  }
  const json& member(const json& parent, const std::string& key, const std::string& at) const {
    auto it = parent.find(key);
    if (it == parent.end()) fail(join(at, key), "missing");
    return *it;
  }
  double number(const json& v, const std::string& at) const {
    if (!v.is_number()) fail(at, "expected a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(at, "expected a finite number");
    return d;
  }
  uint64_t integer(const json& v, const std::string& at, uint64_t lo, uint64_t hi) const {
    const double d = number(v, at);
    if (d != std::floor(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi))
      fail(at, "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
    return static_cast<uint64_t>(d);
  }
  // An array of numbers with a size in [min_size, max_size].
  std::vector<double> numbers(const json& parent, const std::string& key, const std::string& at,
                              size_t min_size, size_t max_size) const {
    const std::string here = join(at, key);
    const json& v = member(parent, key, at);
    if (!v.is_array() || v.size() < min_size || v.size() > max_size)
      fail(here, min_size == max_size ? "expected an array of " + std::to_string(min_size) + " numbers"
                                      : "expected an array of " + std::to_string(min_size) + " to " +
                                            std::to_string(max_size) + " numbers");
    std::vector<double> out;
    for (size_t i = 0; i < v.size(); ++i) out.push_back(number(v[i], here + "[" + std::to_string(i) + "]"));
    return out;
  }
  // The image names of "<at>.files", exactly `n` strings.
  std::vector<std::string> files(const json& parent, const std::string& at, size_t n) const {
    const std::string here = join(at, "files");
    const json& v = member(parent, "files", at);
    if (!v.is_array() || v.size() < n)
      fail(here, "expected an array of " + std::to_string(n) + " image names");
    std::vector<std::string> out;
    for (size_t i = 0; i < n; ++i) {
      if (!v[i].is_string() || v[i].get<std::string>().empty())
        fail(here + "[" + std::to_string(i) + "]", "expected an image name");
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }
  static std::string join(const std::string& at, const std::string& key) {
    return at.empty() ? key : at + "." + key;
  }

 private:
  const json& root_;
  std::string where_;
};

// ----- reading: images ----------------------------------------------------------------------------------

// Where the images come from: the archive's entries, or files beside meta.json.
class ImageStore {
 public:
  virtual ~ImageStore() = default;
  // The encoded bytes of the image `name`, which meta.json names at JSON path `at`.
  virtual std::vector<uint8_t> load(const std::string& name, const std::string& at) = 0;
  // How messages name the image.
  virtual std::string describe(const std::string& name) const = 0;
};

class ArchiveImages : public ImageStore {
 public:
  ArchiveImages(const ZipReader& zip, std::string path) : zip_(zip), path_(std::move(path)) {}
  std::vector<uint8_t> load(const std::string& name, const std::string& at) override {
    const ZipEntry* e = zip_.find(name);
    if (!e) throw Error(path_ + ": no entry '" + name + "' in the archive (named by meta.json " + at + ")");
    return zip_.read(*e);
  }
  std::string describe(const std::string& name) const override { return path_ + ": entry '" + name + "'"; }

 private:
  const ZipReader& zip_;
  std::string path_;
};

class DirectoryImages : public ImageStore {
 public:
  explicit DirectoryImages(const std::string& meta_path) : meta_path_(meta_path) {
    const fs::path dir = fs::path(meta_path).parent_path();
    dir_ = dir.empty() ? fs::path(".") : dir;
  }
  std::vector<uint8_t> load(const std::string& name, const std::string& at) override {
    return sog::readImageFile(dir_.string(), name, path(name, at), why(name, at));
  }
  std::string describe(const std::string& name) const override { return (dir_ / name).string(); }

  // The path of the image `name`, relative to meta.json's directory, which its text may not leave: absolute
  // paths and ".." are refused (the scene files' rule, docs/untrusted-input.md; symbolic links leading out
  // are refused where the file is read).
  std::string path(const std::string& name, const std::string& at) const {
    const fs::path p(name);
    if (p.is_absolute()) throw Error(why(name, at) + "is absolute; SOG images must lie beside meta.json");
    for (const fs::path& part : p)
      if (part == "..") throw Error(why(name, at) + "leads outside meta.json's directory");
    return describe(name);
  }

 private:
  std::string why(const std::string& name, const std::string& at) const {
    return meta_path_ + ": " + at + ": image path '" + name + "' ";
  }

  std::string meta_path_;
  fs::path dir_;
};

// A decoded RGBA image.
struct Image {
  std::string name;  // for messages
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;
  size_t texels() const { return static_cast<size_t>(width) * static_cast<size_t>(height); }
  const uint8_t* texel(size_t i) const { return rgba.data() + 4 * i; }
};

// What a WebP file's header says (the RIFF container's chunks up to the image's, as the WebP container
// specification lays them out): whether it is one, lossless (VP8L) or lossy (VP8), animated, and its size.
// Read here rather than by the codec so that every build checks the same before anything is decoded.
struct WebpHeader {
  bool webp = false, lossless = false, animated = false;
  int width = 0, height = 0;
};

WebpHeader readWebpHeader(std::span<const uint8_t> b) {
  auto le = [&](size_t at, int bytes) {  // a little-endian number of 1..4 bytes
    uint32_t v = 0;
    for (int k = bytes - 1; k >= 0; --k) v = v << 8 | b[at + static_cast<size_t>(k)];
    return v;
  };
  auto tag = [&](size_t at, const char* t) { return std::memcmp(b.data() + at, t, 4) == 0; };
  WebpHeader h;
  if (b.size() < 12 || !tag(0, "RIFF") || !tag(8, "WEBP")) return h;
  // Chunks: a four-byte tag, a little-endian size, the data padded to an even size. The first is the image
  // (VP8L, VP8) or VP8X, whose flags and canvas size come before the optional chunks and the image.
  bool extended = false;
  for (uint64_t next = 12; next + 8 <= b.size();) {
    const size_t at = static_cast<size_t>(next), data = at + 8;
    next += 8 + uint64_t{le(at + 4, 4)} + (le(at + 4, 4) & 1);
    if (tag(at, "VP8X")) {
      if (at != 12 || data + 10 > b.size()) return h;
      extended = true;
      h.animated = (b[data] & 0x02) != 0;
      h.width = static_cast<int>(le(data + 4, 3)) + 1;
      h.height = static_cast<int>(le(data + 7, 3)) + 1;
      if (h.animated) {
        h.webp = true;
        return h;
      }
    } else if (tag(at, "VP8L")) {
      // The signature 0x2f, then 14 bits of width - 1, 14 of height - 1, 1 of alpha and 3 of version (0).
      if (data + 5 > b.size() || b[data] != 0x2f || le(data + 1, 4) >> 29 != 0) return h;
      const int w = static_cast<int>(le(data + 1, 4) & 0x3fff) + 1,
                ht = static_cast<int>(le(data + 1, 4) >> 14 & 0x3fff) + 1;
      if (extended && (w != h.width || ht != h.height)) return h;  // the canvas must be the image
      h.width = w, h.height = ht, h.lossless = true, h.webp = true;
      return h;
    } else if (tag(at, "VP8 ")) {
      h.webp = true;  // lossy
      return h;
    } else if (!extended) {
      return h;
    }
  }
  return h;  // no image chunk
}

SogImage inspectImage(ImageStore& store, const std::string& name, const std::string& at) {
  SogImage p;
  p.describe = store.describe(name);
  p.webp = store.load(name, at);
  const WebpHeader f = readWebpHeader(p.webp);
  if (!f.webp) throw Error(p.describe + ": not a WebP image (or its header is truncated)");
  if (f.animated) throw Error(p.describe + ": animated WebP; SOG images are single lossless frames");
  if (!f.lossless)
    throw Error(p.describe +
                ": lossy WebP; SOG images must be lossless (a lossy image would alter the stored indices)");
  if (f.width > kMaxImageSide || f.height > kMaxImageSide)
    throw Error(p.describe + ": image of " + std::to_string(f.width) + "x" + std::to_string(f.height) +
                " texels");
  p.width = f.width;
  p.height = f.height;
  return p;
}

Image decodeImage(const SogImage& p) {
  Image img;
  img.name = p.describe;
  img.width = p.width;
  img.height = p.height;
  img.rgba.resize(img.texels() * 4);
  if (!sog::decodeWebp(p.webp, p.width, p.height, img.rgba))
    throw Error(p.describe + ": corrupt WebP data (" + std::to_string(p.width) + "x" +
                std::to_string(p.height) + " lossless image failed to decode)");
  return img;
}

// What one meta version needs: the images by role, in the order meta.json names them.
struct Layout {
  int version = 2;
  uint64_t count = 0;
  int sh_bands = 0;
  std::vector<std::string> roles;  // "means.files[0]" ...
  std::vector<std::string> names;
};

void requireTexels(const Image& img, uint64_t count) {
  if (img.texels() < count)
    throw Error(img.name + ": " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                " texels, fewer than the " + std::to_string(count) + " gaussians meta.json declares");
}

Quat unpackQuat(const uint8_t* t, const Image& img, size_t i) {
  const int tag = t[3];
  if (tag < 252)
    throw Error(img.name + ": texel " + std::to_string(i) + ": rotation tag " + std::to_string(tag) +
                " is not 252..255 (the index of the largest component + 252)");
  const int largest = tag - 252;
  static constexpr int kOthers[4][3] = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
  const float inv_sqrt2 = 0.70710678118654752f;
  float c[4] = {0, 0, 0, 0};
  float sum = 0;
  for (int k = 0; k < 3; ++k) {
    const float v = (static_cast<float>(t[k]) / 255.0f * 2.0f - 1.0f) * inv_sqrt2;
    c[kOthers[largest][k]] = v;
    sum += v * v;
  }
  c[largest] = std::sqrt(std::max(0.0f, 1.0f - sum));
  return normalize(Quat{c[0], c[1], c[2], c[3]});  // (w, x, y, z) = rot_0..rot_3 of the PLY
}

float codebookValue(const std::vector<float>& codebook, uint8_t index, const Image& img, size_t texel,
                    const char* what) {
  if (index >= codebook.size())
    throw Error(img.name + ": texel " + std::to_string(texel) + ": " + what + " index " +
                std::to_string(index) + " is past its " + std::to_string(codebook.size()) +
                "-entry codebook");
  return codebook[index];
}

std::vector<float> toFloats(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

// The meta.json version: 2, or 1 without a version field; any other is refused.
int sogVersion(const Meta& m) {
  const json& root = m.root();
  if (!root.contains("version")) return 1;
  const json& v = root.at("version");
  if (!v.is_number() || v.get<double>() != 2)
    m.fail("version", "unsupported SOG version " + v.dump() + " (known: 2, and 1 without a version field)");
  return 2;
}

// Whether the kind of splat (splat-transform's "model": absent or "default" for 3D gaussians) is
// "antialiased"; '2dgs' and unknown models are read as 3D gaussians, with a warning.
bool readAntialiasedModel(const json& root, const std::string& meta_where,
                          std::vector<std::string>* warnings) {
  if (!root.contains("model")) return false;
  const json& model = root.at("model");
  const std::string name = model.is_string() ? model.get<std::string>() : model.dump();
  auto warn = [&](const std::string& what) {
    if (warnings) warnings->push_back(meta_where + ": model: " + what);
  };
  if (name == "antialiased") return true;
  if (name == "2dgs")
    warn("'2dgs' (flat 2D gaussian surfels) is read as flat 3D gaussians");
  else if (name != "default")
    warn("unknown splat model " + model.dump() + ", read as 3D gaussians");
  return false;
}

// What meta.json declares before any image is read: its sections, the gaussian count and the SH bands.
struct Declared {
  int version = 1;
  const json* means = nullptr;
  const json* scales = nullptr;
  const json* quats = nullptr;
  const json* sh0 = nullptr;
  const json* shn = nullptr;  // null without an shN section
  uint64_t count = 0;
  int bands = 0;         // version 1 gives it only through the centroid image's width: 0 until it is read
  bool has_shn = false;  // whether the shN images are read
};

// The sections, count and (version 2) SH bands of meta.json.
Declared readDeclared(const Meta& m, int version) {
  const json& root = m.root();
  Declared d;
  d.version = version;
  d.means = &m.object(root, "means", "");
  d.scales = &m.object(root, "scales", "");
  d.quats = &m.object(root, "quats", "");
  d.sh0 = &m.object(root, "sh0", "");
  d.shn = root.contains("shN") ? &m.object(root, "shN", "") : nullptr;
  const uint64_t max_count = static_cast<uint64_t>(kMaxImageSide) * kMaxImageSide;
  if (version == 2) {
    d.count = m.integer(m.member(root, "count", ""), "count", 0, max_count);
  } else {
    const json& shape = m.member(*d.means, "shape", "means");
    if (!shape.is_array() || shape.empty()) m.fail("means.shape", "expected an array [count, 3]");
    d.count = m.integer(shape[0], "means.shape[0]", 0, max_count);
  }
  if (d.shn && version == 2) {
    d.bands = static_cast<int>(m.integer(m.member(*d.shn, "bands", "shN"), "shN.bands", 0, 3));
  }
  d.has_shn = d.shn && (version == 1 || d.bands > 0);
  return d;
}

// The images meta.json names, as (JSON path, name), in the order means_l, means_u, quats, scales, sh0 (, shN
// centroids, shN labels).
std::vector<std::pair<std::string, std::string>> wantedImages(const Meta& m, const Declared& d) {
  std::vector<std::pair<std::string, std::string>> wanted;
  auto want = [&](const json& section, const std::string& at, size_t n) {
    const std::vector<std::string> names = m.files(section, at, n);
    for (size_t i = 0; i < n; ++i) wanted.push_back({at + ".files[" + std::to_string(i) + "]", names[i]});
  };
  want(*d.means, "means", 2);
  want(*d.quats, "quats", 1);
  want(*d.scales, "scales", 1);
  want(*d.sh0, "sh0", 1);
  if (d.has_shn) want(*d.shn, "shN", 2);
  return wanted;
}

// Every image, read and inspected (dimensions) before anything is decoded, within the budget, in the order
// of wantedImages. Sets the SH bands of version 1 from the centroid image's width.
std::vector<SogImage> inspectImages(const Meta& m, Declared& d, ImageStore& store, const std::string& path,
                                    uint64_t container_bytes) {
  std::vector<SogImage> pending;
  uint64_t encoded_bytes = 0, decoded_bytes = 0;
  for (const auto& [at, name] : wantedImages(m, d)) {
    pending.push_back(inspectImage(store, name, at));
    encoded_bytes += pending.back().webp.size();
    decoded_bytes +=
        static_cast<uint64_t>(pending.back().width) * static_cast<uint64_t>(pending.back().height) * 4;
    checkByteBudget(path, container_bytes + encoded_bytes, "SOG images (encoded)");
  }
  // Version 1 gives the SH band count only through the centroid image's width.
  if (d.has_shn && d.version == 1) {
    const int w = pending[5].width;
    d.bands = w == 192 ? 1 : w == 512 ? 2 : w == 960 ? 3 : 0;
    if (d.bands == 0)
      throw Error(pending[5].describe + ": centroid image width " + std::to_string(w) +
                  " is none of 192, 512, 960 (64 palette entries of 3, 8 or 15 coefficients)");
  }
  checkGaussianBudget(path, d.count, d.bands, container_bytes + encoded_bytes + decoded_bytes);
  return pending;
}

// The inspected images decoded, each of the first five with a texel per declared gaussian.
std::vector<Image> decodeImages(const std::vector<SogImage>& pending, const Declared& d) {
  std::vector<Image> images(pending.size());
  parallelFor(pending.size(), [&](size_t i) { images[i] = decodeImage(pending[i]); });
  for (size_t i = 0; i < 5; ++i) requireTexels(images[i], d.count);
  return images;
}

// Positions: 16 bits per axis between mins and maxs of the log-encoded coordinates.
void decodePositions(const Meta& m, const json& means, const Image& means_l, const Image& means_u,
                     GaussianCloud& cloud) {
  const std::vector<double> mins = m.numbers(means, "mins", "means", 3, 3);
  const std::vector<double> maxs = m.numbers(means, "maxs", "means", 3, 3);
  for (size_t i = 0; i < cloud.size(); ++i) {
    const uint8_t* lo = means_l.texel(i);
    const uint8_t* hi = means_u.texel(i);
    float p[3];
    for (int a = 0; a < 3; ++a) {
      const double range = maxs[a] - mins[a];
      const double u = static_cast<double>(lo[a] | (hi[a] << 8)) / 65535.0;
      p[a] = static_cast<float>(logDecode(mins[a] + (range != 0 ? range : 1.0) * u));
    }
    cloud.positions[i] = {p[0], p[1], p[2]};
  }
}

// Version 2 scales, DC colours and opacities: scales and colours through 256-entry codebooks.
void decodeScalesAndColoursV2(const Meta& m, const Declared& d, const Image& scale_img, const Image& sh0_img,
                              GaussianCloud& cloud) {
  const std::vector<float> scale_book = toFloats(m.numbers(*d.scales, "codebook", "scales", 1, 256));
  const std::vector<float> dc_book = toFloats(m.numbers(*d.sh0, "codebook", "sh0", 1, 256));
  for (size_t i = 0; i < cloud.size(); ++i) {
    const uint8_t* s = scale_img.texel(i);
    Vec3 v;
    for (int a = 0; a < 3; ++a) v[a] = std::exp(codebookValue(scale_book, s[a], scale_img, i, "scale"));
    cloud.scales[i] = v;
    const uint8_t* c = sh0_img.texel(i);
    float* sh = cloud.shOf(i).data();
    for (int k = 0; k < 3; ++k) sh[k] = codebookValue(dc_book, c[k], sh0_img, i, "colour");
    cloud.opacities[i] = static_cast<float>(c[3]) / 255.0f;
  }
}

// Version 1 scales, DC colours and opacities: per-channel linear ranges; opacity is a logit in the fourth
// channel's range.
void decodeScalesAndColoursV1(const Meta& m, const Declared& d, const Image& scale_img, const Image& sh0_img,
                              GaussianCloud& cloud) {
  const std::vector<double> smin = m.numbers(*d.scales, "mins", "scales", 3, 3),
                            smax = m.numbers(*d.scales, "maxs", "scales", 3, 3);
  const std::vector<double> cmin = m.numbers(*d.sh0, "mins", "sh0", 4, 4),
                            cmax = m.numbers(*d.sh0, "maxs", "sh0", 4, 4);
  auto lerp = [](double lo, double hi, uint8_t b) {
    return static_cast<float>(lo + (hi - lo) * (b / 255.0));
  };
  for (size_t i = 0; i < cloud.size(); ++i) {
    const uint8_t* s = scale_img.texel(i);
    cloud.scales[i] = {std::exp(lerp(smin[0], smax[0], s[0])), std::exp(lerp(smin[1], smax[1], s[1])),
                       std::exp(lerp(smin[2], smax[2], s[2]))};
    const uint8_t* c = sh0_img.texel(i);
    float* sh = cloud.shOf(i).data();
    for (int k = 0; k < 3; ++k) sh[k] = lerp(cmin[k], cmax[k], c[k]);
    cloud.opacities[i] = sigmoid(lerp(cmin[3], cmax[3], c[3]));
  }
}

// Higher SH bands: each gaussian's label picks an entry of the centroid image's palette, whose coefficients
// go through a codebook (version 2) or a linear range (version 1).
void decodeShPalette(const Meta& m, const Declared& d, const Image& centroids, const Image& labels,
                     GaussianCloud& cloud) {
  const json& shn = *d.shn;
  requireTexels(labels, d.count);
  const int coeffs = kShCoeffsPerBand[d.bands];
  if (centroids.width != static_cast<int>(kPaletteRow) * coeffs)
    throw Error(centroids.name + ": width " + std::to_string(centroids.width) + ", expected " +
                std::to_string(kPaletteRow * static_cast<size_t>(coeffs)) + " (64 palette entries of " +
                std::to_string(coeffs) + " coefficients for SH band count " + std::to_string(d.bands) + ")");
  // Labels are 16 bits, so at most 65536 entries are reachable whatever the image holds.
  uint64_t palette = std::min<uint64_t>(65536, kPaletteRow * static_cast<uint64_t>(centroids.height));
  std::vector<float> book;
  if (d.version == 2) {
    palette = std::min<uint64_t>(palette, m.integer(m.member(shn, "count", "shN"), "shN.count", 0, 65536));
    book = toFloats(m.numbers(shn, "codebook", "shN", 1, 256));
  } else {
    const double lo = m.number(m.member(shn, "mins", "shN"), "shN.mins");
    const double hi = m.number(m.member(shn, "maxs", "shN"), "shN.maxs");
    for (int b = 0; b < 256; ++b) book.push_back(static_cast<float>(lo + (hi - lo) * (b / 255.0)));
  }
  // Each palette entry's coefficients as floats, decoded once.
  std::vector<float> entries(static_cast<size_t>(palette) * static_cast<size_t>(coeffs) * 3);
  for (size_t e = 0; e < palette; ++e)
    for (int j = 0; j < coeffs; ++j) {
      const size_t texel = (e / kPaletteRow) * static_cast<size_t>(centroids.width) +
                           (e % kPaletteRow) * static_cast<size_t>(coeffs) + static_cast<size_t>(j);
      const uint8_t* t = centroids.texel(texel);
      for (int c = 0; c < 3; ++c)
        entries[(e * static_cast<size_t>(coeffs) + static_cast<size_t>(j)) * 3 + static_cast<size_t>(c)] =
            codebookValue(book, t[c], centroids, texel, "SH");
    }
  for (size_t i = 0; i < cloud.size(); ++i) {
    const uint8_t* t = labels.texel(i);
    const uint32_t label = t[0] | (t[1] << 8);
    if (label >= palette)
      throw Error(labels.name + ": texel " + std::to_string(i) + ": palette label " + std::to_string(label) +
                  " is past the palette's " + std::to_string(palette) + " entries");
    // Coefficient j of the palette entry is SH coefficient j + 1 (after the DC term), one colour per
    // channel.
    std::span<float> sh = cloud.shOf(i);
    std::copy_n(&entries[label * static_cast<size_t>(coeffs) * 3], static_cast<size_t>(coeffs) * 3,
                sh.data() + 3);
  }
}

// meta.json (already parsed; `meta_where` names it) read up to its images: its version, model and what it
// declares, the declared count checked against the limits (version 1 gives the SH bands only through an
// image: counted as 0 here, and again with every image's size once their headers are read).
struct SogMeta {
  Meta m;
  bool antialiased = false;
  Declared d;
};

SogMeta readMeta(const json& root, const std::string& meta_where, const std::string& path, int* version_out,
                 std::vector<std::string>* warnings) {
  if (!root.is_object()) throw Error(meta_where + ": expected a JSON object");
  SogMeta s{Meta(root, meta_where), false, {}};
  const int version = sogVersion(s.m);
  if (version_out) *version_out = version;
  s.antialiased = readAntialiasedModel(root, meta_where, warnings);
  s.d = readDeclared(s.m, version);
  checkGaussianBudget(path, s.d.count, s.d.bands);
  return s;
}

// The cloud from meta.json and its decoded images.
GaussianCloud decodeSog(const SogMeta& s, const std::vector<Image>& images) {
  const Meta& m = s.m;
  const Declared& d = s.d;
  const int version = d.version;
  GaussianCloud cloud;
  cloud.resize(static_cast<size_t>(d.count), d.bands);
  cloud.antialiased = s.antialiased;
  decodePositions(m, *d.means, images[0], images[1], cloud);
  const Image& quat_img = images[2];
  for (size_t i = 0; i < cloud.size(); ++i) cloud.rotations[i] = unpackQuat(quat_img.texel(i), quat_img, i);
  if (version == 2)
    decodeScalesAndColoursV2(m, d, images[3], images[4], cloud);
  else
    decodeScalesAndColoursV1(m, d, images[3], images[4], cloud);
  if (d.has_shn) decodeShPalette(m, d, images[5], images[6], cloud);
  return cloud;
}

json parseMetaText(std::span<const uint8_t> text, const std::string& where) {
  return parseJsonText(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), where);
}

// Calls f(meta.json parsed, how messages name it, where its images come from) for `bytes`, a .sog archive
// or the text of a meta.json.
template <class F>
auto withSog(std::span<const uint8_t> bytes, const std::string& path, F&& f) {
  if (looksLikeZip(bytes)) {
    const ZipReader zip(bytes, path);
    const ZipEntry* meta = zip.find(kMetaName);
    if (!meta) throw Error(path + ": no entry 'meta.json' in the archive (not a SOG bundle)");
    const std::string where = path + ": entry 'meta.json'";
    const json root = parseMetaText(zip.read(*meta), where);
    ArchiveImages images(zip, path);
    return f(root, where, images);
  }
  const json root = parseMetaText(bytes, path);
  DirectoryImages images(path);
  return f(root, path, images);
}

// ----- writing ------------------------------------------------------------------------------------------

std::vector<uint32_t> mortonOrder(const GaussianCloud& cloud) {
  const size_t n = cloud.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (n < 2) return order;
  Vec3 lo = cloud.positions[0], hi = lo;
  for (const Vec3& p : cloud.positions)
    for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], p[a]), hi[a] = std::max(hi[a], p[a]);
  std::vector<uint64_t> code(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t c = 0;
    for (int a = 0; a < 3; ++a) {
      const double span = static_cast<double>(hi[a]) - lo[a];
      const double t = span > 0 ? (static_cast<double>(cloud.positions[i][a]) - lo[a]) / span : 0.0;
      c |= spreadBits3(static_cast<uint64_t>(std::clamp(t, 0.0, 1.0) * 2097151.0)) << a;
    }
    code[i] = c;
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return code[a] < code[b]; });
  return order;
}

// The shortest decimal that reads back as the float v (as a double, so that JSON prints it short).
double shortestDecimal(float v) {
  char buf[32];
  for (int digits = 6; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return std::strtod(buf, nullptr);
}

// The codebook padded to 256 entries with its last value: readers index it by any byte.
json codebookJson(std::vector<float> book) {
  book.resize(256, book.back());
  json out = json::array();
  for (float v : book) out.push_back(shortestDecimal(v));
  return out;
}

struct SogFiles {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> images;  // name, WebP bytes
  std::string meta;
};

// Positions into means_l / means_u (the low and high bytes of 16 bits per axis between the mins and maxs of
// the log-encoded coordinates, returned); texel t holds gaussian order[t].
std::array<std::array<double, 3>, 2> encodePositions(const GaussianCloud& cloud,
                                                     const std::vector<uint32_t>& order,
                                                     std::vector<uint8_t>& means_l,
                                                     std::vector<uint8_t>& means_u) {
  const size_t n = cloud.size();
  std::array<double, 3> mins{0, 0, 0}, maxs{0, 0, 0};
  for (int a = 0; a < 3; ++a) {
    double lo = INFINITY, hi = -INFINITY;
    for (const Vec3& p : cloud.positions) {
      const double v = logEncode(p[a]);
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    if (n > 0) mins[static_cast<size_t>(a)] = lo, maxs[static_cast<size_t>(a)] = hi;
  }
  for (size_t t = 0; t < n; ++t) {
    const Vec3 p = cloud.positions[order[t]];
    for (int a = 0; a < 3; ++a) {
      const size_t ua = static_cast<size_t>(a);
      const double range = maxs[ua] - mins[ua];
      const double u = range > 0 ? std::round(65535.0 * (logEncode(p[a]) - mins[ua]) / range) : 0.0;
      const auto q = static_cast<uint16_t>(std::clamp(u, 0.0, 65535.0));
      means_l[t * 4 + ua] = static_cast<uint8_t>(q & 0xff);
      means_u[t * 4 + ua] = static_cast<uint8_t>(q >> 8);
    }
    means_l[t * 4 + 3] = means_u[t * 4 + 3] = 255;
  }
  return {mins, maxs};
}

// Rotations into quats: the three smaller components of the unit quaternion whose largest is positive,
// scaled by sqrt(2) into [-1, 1], 8 bits each; the fourth byte is 252 + the largest's index (w, x, y, z).
void encodeRotations(const GaussianCloud& cloud, const std::vector<uint32_t>& order,
                     std::vector<uint8_t>& quats) {
  for (size_t t = 0; t < cloud.size(); ++t) {
    const Quat q = normalize(cloud.rotations[order[t]]);
    float c[4] = {q.w, q.x, q.y, q.z};
    int largest = 0;
    for (int k = 1; k < 4; ++k)
      if (std::abs(c[k]) > std::abs(c[largest])) largest = k;
    const float sign = c[largest] < 0 ? -1.0f : 1.0f;
    int out = 0;
    for (int k = 0; k < 4; ++k) {
      if (k == largest) continue;
      const float v = sign * c[k] * 1.41421356237f;
      quats[t * 4 + static_cast<size_t>(out++)] =
          static_cast<uint8_t>(std::clamp(std::lround((v * 0.5f + 0.5f) * 255.0f), 0l, 255l));
    }
    quats[t * 4 + 3] = static_cast<uint8_t>(252 + largest);
  }
}

// Log-scales and DC coefficients into scales / sh0 through one 256-entry codebook each (returned), over all
// three channels; opacity in sh0's fourth byte.
void encodeScalesAndColours(const GaussianCloud& cloud, const std::vector<uint32_t>& order,
                            std::vector<uint8_t>& scales, std::vector<uint8_t>& sh0,
                            std::vector<float>& scale_book, std::vector<float>& dc_book) {
  const size_t n = cloud.size();
  std::vector<float> log_scales(n * 3), dcs(n * 3);
  for (size_t i = 0; i < n; ++i) {
    for (int a = 0; a < 3; ++a)
      log_scales[i * 3 + static_cast<size_t>(a)] = std::log(std::max(cloud.scales[i][a], kMinStoredScale));
    for (size_t k = 0; k < 3; ++k) dcs[i * 3 + k] = cloud.sh[i * static_cast<size_t>(cloud.shStride()) + k];
  }
  parallelFor(2, [&](size_t which) {
    if (which == 0)
      scale_book = sog::buildScalarCodebook(log_scales);
    else
      dc_book = sog::buildScalarCodebook(dcs);
  });
  for (size_t t = 0; t < n; ++t) {
    const size_t i = order[t];
    for (size_t a = 0; a < 3; ++a) {
      scales[t * 4 + a] = sog::nearestCodebookIndex(scale_book, log_scales[i * 3 + a]);
      sh0[t * 4 + a] = sog::nearestCodebookIndex(dc_book, dcs[i * 3 + a]);
    }
    scales[t * 4 + 3] = 255;
    sh0[t * 4 + 3] = static_cast<uint8_t>(std::lround(std::clamp(cloud.opacities[i], 0.0f, 1.0f) * 255.0f));
  }
}

// The higher SH bands' images: the palette's centroids (64 entries a row) and each texel's 16-bit label.
struct ShPaletteImages {
  size_t palette = 0;
  std::vector<float> book;  // the centroids' shared codebook
  std::vector<uint8_t> centroids, labels;
  int centroid_width = 0, centroid_height = 0;
};

// Higher SH bands (cloud.sh_degree > 0, a non-empty cloud): a k-means palette of the coefficient vectors (a
// palette as large as the peer's: at most 64 Ki entries, 1024 x a power of two no larger than n / 1024;
// every vector its own entry when n <= 1024), its coefficients through one shared 256-entry codebook; the
// label image has `texels` texels.
ShPaletteImages encodeShPalette(const GaussianCloud& cloud, const std::vector<uint32_t>& order,
                                int sh_iterations, size_t texels) {
  const size_t n = cloud.size();
  const size_t coeffs = static_cast<size_t>(kShCoeffsPerBand[cloud.sh_degree]);
  const size_t dims = coeffs * 3;
  size_t k = n;
  if (n > 1024)
    k = 1024u << std::min<size_t>(
            6, static_cast<size_t>(std::floor(std::log2(static_cast<double>(n) / 1024.0))));
  // Each gaussian's coefficients after the DC term, in the cloud's [coeff][rgb] order (the distance, and so
  // the clustering, does not depend on the order of the dimensions).
  std::vector<float> points(n * dims);
  for (size_t i = 0; i < n; ++i) {
    auto sh = cloud.shOf(i);
    std::copy(sh.begin() + 3, sh.begin() + 3 + static_cast<ptrdiff_t>(dims),
              points.begin() + static_cast<ptrdiff_t>(i * dims));
  }
  const sog::VectorPalette pal = sog::buildVectorPalette(points, n, dims, k, sh_iterations);
  ShPaletteImages out;
  out.palette = pal.size();
  out.book = sog::buildScalarCodebook(pal.centroids);
  const size_t rows = (out.palette + kPaletteRow - 1) / kPaletteRow;
  const int cw = static_cast<int>(kPaletteRow * coeffs), ch = static_cast<int>(rows);
  out.centroid_width = cw;
  out.centroid_height = ch;
  out.centroids.assign(static_cast<size_t>(cw) * static_cast<size_t>(ch) * 4, 0);
  for (size_t e = 0; e < out.palette; ++e)
    for (size_t j = 0; j < coeffs; ++j) {
      uint8_t* texel =
          &out.centroids[((e / kPaletteRow) * static_cast<size_t>(cw) + (e % kPaletteRow) * coeffs + j) * 4];
      for (size_t c = 0; c < 3; ++c)
        texel[c] = sog::nearestCodebookIndex(out.book, pal.centroids[e * dims + j * 3 + c]);
      texel[3] = 255;
    }
  out.labels.assign(texels * 4, 0);
  for (size_t t = 0; t < n; ++t) {
    const uint32_t label = pal.labels[order[t]];
    out.labels[t * 4] = static_cast<uint8_t>(label & 0xff);
    out.labels[t * 4 + 1] = static_cast<uint8_t>(label >> 8);
    out.labels[t * 4 + 3] = 255;
  }
  return out;
}

SogFiles encodeSogFiles(const GaussianCloud& cloud, const SogWriteOptions& options) {
  const size_t n = cloud.size();
  const std::vector<uint32_t> order = options.morton_order ? mortonOrder(cloud) : [&] {
    std::vector<uint32_t> o(n);
    std::iota(o.begin(), o.end(), 0u);
    return o;
  }();
  // The writer's texture size: a multiple of 4 per side, about square.
  const int width = std::max(4, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n)) / 4.0)) * 4);
  const int height = std::max(4, static_cast<int>(std::ceil(static_cast<double>(n) / width / 4.0)) * 4);
  if (width > kMaxImageSide || height > kMaxImageSide)
    throw Error("SOG output of " + std::to_string(n) + " gaussians needs images larger than WebP's " +
                std::to_string(kMaxImageSide) + " texels per side");
  const size_t texels = static_cast<size_t>(width) * static_cast<size_t>(height);
  auto image = [&] { return std::vector<uint8_t>(texels * 4, 0); };

  std::vector<uint8_t> means_l = image(), means_u = image(), quats = image(), scales = image(), sh0 = image();
  const auto [mins, maxs] = encodePositions(cloud, order, means_l, means_u);
  encodeRotations(cloud, order, quats);
  std::vector<float> scale_book, dc_book;
  encodeScalesAndColours(cloud, order, scales, sh0, scale_book, dc_book);

  json meta = {
      {"version", 2},
      {"asset", {{"generator", "splatforge"}}},
      {"count", n},
      {"means", {{"mins", mins}, {"maxs", maxs}, {"files", json::array({"means_l.webp", "means_u.webp"})}}},
      {"scales", {{"codebook", codebookJson(scale_book)}, {"files", json::array({"scales.webp"})}}},
      {"quats", {{"files", json::array({"quats.webp"})}}},
      {"sh0", {{"codebook", codebookJson(dc_book)}, {"files", json::array({"sh0.webp"})}}}};
  if (cloud.antialiased) meta["model"] = "antialiased";
  std::vector<std::tuple<std::string, const std::vector<uint8_t>*, int, int>> to_encode = {
      {"means_l.webp", &means_l, width, height},
      {"means_u.webp", &means_u, width, height},
      {"quats.webp", &quats, width, height},
      {"scales.webp", &scales, width, height},
      {"sh0.webp", &sh0, width, height}};

  ShPaletteImages shn;
  const int bands = cloud.sh_degree;
  if (bands > 0 && n > 0) {
    shn = encodeShPalette(cloud, order, options.sh_iterations, texels);
    meta["shN"] = {{"count", shn.palette},
                   {"bands", bands},
                   {"codebook", codebookJson(shn.book)},
                   {"files", json::array({"shN_centroids.webp", "shN_labels.webp"})}};
    to_encode.push_back({"shN_centroids.webp", &shn.centroids, shn.centroid_width, shn.centroid_height});
    to_encode.push_back({"shN_labels.webp", &shn.labels, width, height});
  }

  SogFiles files;
  files.images.resize(to_encode.size());
  parallelFor(to_encode.size(), [&](size_t i) {
    const auto& [name, pixels, w, h] = to_encode[i];
    files.images[i] = {name, sog::encodeWebp(*pixels, w, h)};
  });
  files.meta = meta.dump();
  return files;
}

void refuseNonFinite(const GaussianCloud& cloud) {
  NonFiniteReport bad = findNonFinite(cloud);
  if (bad.rows > 0)
    throw Error("cannot write sog: " + bad.describe(cloud.size()) + "; files never carry NaN or infinity");
}

}  // namespace

bool isSogMetaPath(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name == kMetaName;
}

std::vector<SogImageFile> sogImageFiles(std::span<const uint8_t> bytes, const std::string& path) {
  if (looksLikeZip(bytes)) return {};
  const json root = parseMetaText(bytes, path);
  const SogMeta s = readMeta(root, path, path, nullptr, nullptr);
  const DirectoryImages dir(path);
  std::vector<SogImageFile> files;
  for (const auto& [at, name] : wantedImages(s.m, s.d)) files.push_back({name, dir.path(name, at)});
  return files;
}

std::vector<SogImage> inspectSog(std::span<const uint8_t> bytes, const std::string& path) {
  return withSog(bytes, path, [&](const json& root, const std::string& meta_where, ImageStore& store) {
    SogMeta s = readMeta(root, meta_where, path, nullptr, nullptr);
    return inspectImages(s.m, s.d, store, path, bytes.size());
  });
}

GaussianCloud readSog(std::span<const uint8_t> bytes, const std::string& path, int* version,
                      std::vector<std::string>* warnings) {
  return withSog(bytes, path, [&](const json& root, const std::string& meta_where, ImageStore& store) {
    SogMeta s = readMeta(root, meta_where, path, version, warnings);
    return decodeSog(s, decodeImages(inspectImages(s.m, s.d, store, path, bytes.size()), s.d));
  });
}

std::vector<uint8_t> writeSog(const GaussianCloud& cloud, const SogWriteOptions& options) {
  refuseNonFinite(cloud);
  SogFiles files = encodeSogFiles(cloud, options);
  ZipWriter zip;
  zip.add(kMetaName, std::span(reinterpret_cast<const uint8_t*>(files.meta.data()), files.meta.size()));
  for (const auto& [name, data] : files.images) zip.add(name, data);
  return zip.finish();
}

void saveSogUnpacked(const GaussianCloud& cloud, const std::string& meta_path,
                     const SogWriteOptions& options) {
  refuseNonFinite(cloud);
  SogFiles files = encodeSogFiles(cloud, options);
  const fs::path dir = fs::path(meta_path).parent_path();
  for (const auto& [name, data] : files.images) writeFileAtomic((dir / name).string(), data);
  writeFileAtomic(meta_path,
                  std::span(reinterpret_cast<const uint8_t*>(files.meta.data()), files.meta.size()));
}

}  // namespace sf
