// SOG reading and writing (src/io/sog.h, docs/formats/sog.md).
//
// Oracles:
//  * splat-transform 3.7 and 2.7 (npm, run with node, SOG written on the CPU with -g cpu) convert our PLY of
//  a
//    random cloud to .sog (and an unpacked meta.json); our reader must give back the original cloud within
//    SOG's quantisation, gaussian by gaussian (the peer stores gaussians in Morton order, so rows are matched
//    by position, which the quantisation leaves unambiguous);
//  * the same tools read our .sog / meta.json and write PLY, which our PLY reader must read to the values our
//    SOG reader gives (the same file decoded by two readers) and to the original within our quantisation;
//  * a version-1 SOG built here from closed-form values (images encoded with libwebp directly, the ZIP built
//    with zlib, deflate entries and data descriptors included), decoded against those values and
//    cross-checked with splat-transform reading the same files;
//  * the real capture biker.ply through splat-transform to SOG, compared with biker.ply read by us.
//
// Bounds (derived from the layout; "step" is one quantisation step):
//  position  per axis, l = sign(x) ln(|x| + 1) in 16 bits between the cloud's min and max l: step =
//            (l_max - l_min) / 65535; error <= (|x| + 1) step when the writer truncates (splat-transform:
//            `x & 0xff` of a float), half that when it rounds (ours); + 1e-6 (|x| + 1) float slack.
//  rotation  smallest three components, each times sqrt(2) in 8 bits: per component error
//            d = 2 / 255 / sqrt(2) truncating, half rounding; the largest component (>= 1/2) is rebuilt
//            from the others and moves by at most 3 d, so |q - q'| <= sqrt(3 d^2 + 9 d^2) < 3.5 d (q ~ -q).
//  ln(scale), DC, SH rest  256-entry codebooks chosen by the writer: the codebook is not an oracle, but every
//            value must decode to the codebook entry nearest to it, so it must be the nearest of the (at most
//            256) distinct decoded values D: |v - v'| <= min over d in D of |v - d| (+ 1e-5 float slack). The
//            SH rest goes through a k-means palette first; with n = 1024 both writers give every gaussian
//            its own palette entry, so the same property holds; larger clouds are checked for the palette
//            size and an error well below the data's variance.
//  opacity   8 bits of the opacity: truncated by splat-transform (0 <= o - o' < 1/255), rounded by us
//            (|o - o'| <= 0.5/255); + 1e-6.
// Set SF_DEBUG_MAXIMA=1 to print the measured maxima.
#include "io/sog.h"

#include <gtest/gtest.h>
#include <webp/decode.h>
#include <webp/encode.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/ply.h"
#include "io/sog_quantize.h"
#include "io/zip.h"
#include "support/peer_tools.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using nlohmann::json;

constexpr const char* kSt3 = "splat-transform-3/bin/cli.mjs";
constexpr const char* kSt2 = "splat-transform-2/bin/cli.mjs";

bool debugMaxima() {
  return std::getenv("SF_DEBUG_MAXIMA") != nullptr;
}

double logEncode(double x) {
  return std::copysign(std::log1p(std::abs(x)), x);
}

Bytes fileBytes(const std::string& path) {
  return readFile(path);
}

void writeBytes(const std::string& path, const Bytes& bytes) {
  writeFileAtomic(path, bytes);
}

// ----- fixtures built here, independently of the library's writers ---------------------------------------

// Lossless WebP with exact RGB (libwebp directly).
Bytes webpLossless(const std::vector<uint8_t>& rgba, int w, int h) {
  WebPConfig config;
  WebPConfigInit(&config);
  WebPConfigLosslessPreset(&config, 0);
  config.exact = 1;
  WebPPicture pic;
  WebPPictureInit(&pic);
  pic.use_argb = 1;
  pic.width = w;
  pic.height = h;
  WebPMemoryWriter writer;
  WebPMemoryWriterInit(&writer);
  pic.writer = WebPMemoryWrite;
  pic.custom_ptr = &writer;
  const bool ok = WebPPictureImportRGBA(&pic, rgba.data(), w * 4) && WebPEncode(&config, &pic);
  WebPPictureFree(&pic);
  Bytes out(writer.mem, writer.mem + writer.size);
  WebPMemoryWriterClear(&writer);
  EXPECT_TRUE(ok);
  return out;
}

Bytes webpLossy(const std::vector<uint8_t>& rgba, int w, int h) {
  uint8_t* out = nullptr;
  const size_t size = WebPEncodeRGBA(rgba.data(), w, h, w * 4, 90, &out);
  Bytes b(out, out + size);
  WebPFree(out);
  return b;
}

std::vector<uint8_t> webpDecode(const Bytes& webp, int* w, int* h) {
  uint8_t* px = WebPDecodeRGBA(webp.data(), webp.size(), w, h);
  std::vector<uint8_t> out(px, px + static_cast<size_t>(*w) * static_cast<size_t>(*h) * 4);
  WebPFree(px);
  return out;
}

template <typename T>
void putLE(Bytes& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

// A ZIP archive from APPNOTE's layout, with zlib: stored or raw-deflated entries; `descriptor` writes the
// sizes and CRC after the data with zeros in the local header (flag 0x8), as streaming writers do.
Bytes zipArchive(const std::vector<std::pair<std::string, Bytes>>& files, bool use_deflate, bool descriptor) {
  Bytes out, central;
  uint16_t count = 0;
  for (const auto& [name, data] : files) {
    Bytes body = data;
    if (use_deflate) {
      z_stream z{};
      deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      body.resize(deflateBound(&z, static_cast<uLong>(data.size())));
      z.next_in = const_cast<Bytef*>(data.data());
      z.avail_in = static_cast<uInt>(data.size());
      z.next_out = body.data();
      z.avail_out = static_cast<uInt>(body.size());
      EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
      body.resize(z.total_out);
      deflateEnd(&z);
    }
    const auto crc = static_cast<uint32_t>(crc32(0, data.data(), static_cast<uInt>(data.size())));
    const auto offset = static_cast<uint32_t>(out.size());
    const uint16_t flags = static_cast<uint16_t>(descriptor ? 0x808 : 0x800);
    const uint16_t method = use_deflate ? 8 : 0;
    putLE<uint32_t>(out, 0x04034b50);
    putLE<uint16_t>(out, 20);
    putLE<uint16_t>(out, flags);
    putLE<uint16_t>(out, method);
    putLE<uint32_t>(out, 0);  // time, date
    putLE<uint32_t>(out, descriptor ? 0 : crc);
    putLE<uint32_t>(out, descriptor ? 0 : static_cast<uint32_t>(body.size()));
    putLE<uint32_t>(out, descriptor ? 0 : static_cast<uint32_t>(data.size()));
    putLE<uint16_t>(out, static_cast<uint16_t>(name.size()));
    putLE<uint16_t>(out, 0);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), body.begin(), body.end());
    if (descriptor) {
      putLE<uint32_t>(out, 0x08074b50);
      putLE<uint32_t>(out, crc);
      putLE<uint32_t>(out, static_cast<uint32_t>(body.size()));
      putLE<uint32_t>(out, static_cast<uint32_t>(data.size()));
    }
    putLE<uint32_t>(central, 0x02014b50);
    putLE<uint16_t>(central, 20);
    putLE<uint16_t>(central, 20);
    putLE<uint16_t>(central, flags);
    putLE<uint16_t>(central, method);
    putLE<uint32_t>(central, 0);
    putLE<uint32_t>(central, crc);
    putLE<uint32_t>(central, static_cast<uint32_t>(body.size()));
    putLE<uint32_t>(central, static_cast<uint32_t>(data.size()));
    putLE<uint16_t>(central, static_cast<uint16_t>(name.size()));
    for (int i = 0; i < 4; ++i) putLE<uint16_t>(central, 0);  // extra, comment, disk, internal attributes
    putLE<uint32_t>(central, 0);
    putLE<uint32_t>(central, offset);
    central.insert(central.end(), name.begin(), name.end());
    ++count;
  }
  const auto cd_offset = static_cast<uint32_t>(out.size());
  out.insert(out.end(), central.begin(), central.end());
  putLE<uint32_t>(out, 0x06054b50);
  putLE<uint16_t>(out, 0);
  putLE<uint16_t>(out, 0);
  putLE<uint16_t>(out, count);
  putLE<uint16_t>(out, count);
  putLE<uint32_t>(out, static_cast<uint32_t>(central.size()));
  putLE<uint32_t>(out, cd_offset);
  putLE<uint16_t>(out, 0);
  return out;
}

// A SOG as meta.json plus named files, to mutate and re-archive.
struct SogFixture {
  json meta;
  std::map<std::string, Bytes> files;

  static SogFixture fromArchive(const Bytes& archive) {
    SogFixture f;
    ZipReader zip(archive, "fixture.sog");
    for (const ZipEntry& e : zip.entries()) {
      Bytes data = zip.read(e);
      if (e.name == "meta.json")
        f.meta = json::parse(data.begin(), data.end());
      else
        f.files[e.name] = data;
    }
    return f;
  }
  Bytes archive(bool use_deflate = false, bool descriptor = false) const {
    std::vector<std::pair<std::string, Bytes>> entries;
    const std::string text = meta.dump();
    entries.push_back({"meta.json", Bytes(text.begin(), text.end())});
    for (const auto& [name, data] : files) entries.push_back({name, data});
    return zipArchive(entries, use_deflate, descriptor);
  }
  void writeUnpacked(const std::string& dir) const {
    for (const auto& [name, data] : files) writeBytes(dir + "/" + name, data);
    const std::string text = meta.dump();
    writeBytes(dir + "/meta.json", Bytes(text.begin(), text.end()));
  }
};

// ----- comparison ----------------------------------------------------------------------------------------

float quatDistance(Quat a, Quat b) {
  const float plus = std::sqrt((a.w - b.w) * (a.w - b.w) + (a.x - b.x) * (a.x - b.x) +
                               (a.y - b.y) * (a.y - b.y) + (a.z - b.z) * (a.z - b.z));
  const float minus = std::sqrt((a.w + b.w) * (a.w + b.w) + (a.x + b.x) * (a.x + b.x) +
                                (a.y + b.y) * (a.y + b.y) + (a.z + b.z) * (a.z + b.z));
  return std::min(plus, minus);
}

// For each decoded row, its original row: among the originals within `window` of its position (each used
// once), the one whose other values are nearest. Near-duplicate positions occur in real captures, closer
// than the position quantisation, so the position alone would not decide.
std::vector<size_t> matchByPosition(const GaussianCloud& original, const GaussianCloud& decoded,
                                    float window) {
  std::vector<size_t> by_x(original.size());
  for (size_t i = 0; i < by_x.size(); ++i) by_x[i] = i;
  std::sort(by_x.begin(), by_x.end(),
            [&](size_t a, size_t b) { return original.positions[a].x < original.positions[b].x; });
  std::vector<float> xs(by_x.size());
  for (size_t i = 0; i < by_x.size(); ++i) xs[i] = original.positions[by_x[i]].x;
  auto attributes = [&](size_t o, size_t d) {
    float e = quatDistance(normalize(original.rotations[o]), decoded.rotations[d]) +
              std::abs(original.opacities[o] - decoded.opacities[d]);
    for (int a = 0; a < 3; ++a)
      e += std::abs(std::log(original.scales[o][a]) - std::log(decoded.scales[d][a]));
    for (size_t k = 0; k < 3; ++k) e += std::abs(original.shOf(o)[k] - decoded.shOf(d)[k]);
    return e;
  };
  // Every (decoded, original) pair within the window, taken in order of increasing difference while both
  // are free: a global greedy matching, so one near-duplicate cannot take another's partner early.
  struct Pair {
    float score;
    uint32_t d, o;
  };
  std::vector<Pair> pairs;
  for (size_t d = 0; d < decoded.size(); ++d) {
    const Vec3 p = decoded.positions[d];
    size_t lo = static_cast<size_t>(std::lower_bound(xs.begin(), xs.end(), p.x - window) - xs.begin());
    for (size_t k = lo; k < xs.size() && xs[k] <= p.x + window; ++k) {
      const size_t o = by_x[k];
      const Vec3 q = original.positions[o];
      if (std::abs(q.y - p.y) > window || std::abs(q.z - p.z) > window) continue;
      const float dist =
          std::sqrt((q.x - p.x) * (q.x - p.x) + (q.y - p.y) * (q.y - p.y) + (q.z - p.z) * (q.z - p.z));
      pairs.push_back({attributes(o, d) + 100.0f * dist, static_cast<uint32_t>(d), static_cast<uint32_t>(o)});
    }
  }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) {
    return a.score < b.score || (a.score == b.score && (a.d < b.d || (a.d == b.d && a.o < b.o)));
  });
  std::vector<uint8_t> used(original.size(), 0);
  std::vector<size_t> match(decoded.size(), SIZE_MAX);
  for (const Pair& pr : pairs) {
    if (used[pr.o] || match[pr.d] != SIZE_MAX) continue;
    used[pr.o] = 1;
    match[pr.d] = pr.o;
  }
  return match;
}

// Every original value's decoded value is the nearest of the distinct decoded values (see the file comment).
struct NearestCheck {
  explicit NearestCheck(std::string label) : what(std::move(label)) {}
  std::string what;
  std::vector<float> originals, decoded;
  void add(float o, float d) { originals.push_back(o), decoded.push_back(d); }
  void expect(size_t max_distinct = 256) const {
    std::vector<float> set = decoded;
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    EXPECT_LE(set.size(), max_distinct) << what << ": more distinct values than codebook entries";
    double max_err = 0;
    size_t bad = 0, first_bad = SIZE_MAX;
    for (size_t i = 0; i < originals.size(); ++i) {
      const float o = originals[i];
      const auto it = std::lower_bound(set.begin(), set.end(), o);
      float nearest = INFINITY;
      if (it != set.end()) nearest = std::min(nearest, std::abs(*it - o));
      if (it != set.begin()) nearest = std::min(nearest, std::abs(*(it - 1) - o));
      const float err = std::abs(decoded[i] - o);
      max_err = std::max(max_err, static_cast<double>(err));
      if (err > nearest + 1e-5f * (1.0f + std::abs(o))) {
        if (first_bad == SIZE_MAX) first_bad = i;
        ++bad;
      }
    }
    EXPECT_EQ(bad, 0u) << what << ": " << bad
                       << " values did not decode to the nearest codebook entry (first: value "
                       << (first_bad == SIZE_MAX ? 0.0f : originals[first_bad]) << " -> "
                       << (first_bad == SIZE_MAX ? 0.0f : decoded[first_bad]) << ")";
    if (debugMaxima())
      std::printf("  %-28s max error %.6g (%zu distinct decoded values)\n", what.c_str(), max_err,
                  set.size());
  }
};

struct Expectation {
  bool truncating = false;     // splat-transform truncates positions, rotations and opacity; we round
  bool exact_palette = false;  // n <= palette size: every SH vector its own entry
  size_t palette_limit = 65536;
};

void expectWithinSog(const GaussianCloud& original, const GaussianCloud& decoded,
                     const std::vector<size_t>& match, const Expectation& e, const std::string& label) {
  ASSERT_EQ(decoded.size(), original.size()) << label;
  ASSERT_EQ(decoded.sh_degree, original.sh_degree) << label;
  if (debugMaxima()) std::printf("%s (%zu gaussians)\n", label.c_str(), original.size());
  double step[3];
  for (int a = 0; a < 3; ++a) {
    double lo = INFINITY, hi = -INFINITY;
    for (const Vec3& p : original.positions)
      lo = std::min(lo, logEncode(p[a])), hi = std::max(hi, logEncode(p[a]));
    step[a] = (hi - lo) / 65535.0;
  }
  const double position_factor = e.truncating ? 1.0 : 0.5;
  const float rot_d = (e.truncating ? 2.0f : 1.0f) / 255.0f / std::sqrt(2.0f);
  double max_pos_ratio = 0, max_rot = 0, max_op = 0;
  NearestCheck scales(label + ": ln(scale)"), dcs(label + ": SH DC"), rest(label + ": SH rest");
  size_t pos_bad = 0, rot_bad = 0, op_bad = 0, transparent = 0;
  double rest_sq = 0, rest_var = 0;
  const int rest_count = shCoeffCount(original.sh_degree) * 3 - 3;
  std::vector<double> rest_mean(static_cast<size_t>(rest_count), 0.0);
  for (size_t i = 0; i < original.size(); ++i)
    for (int k = 0; k < rest_count; ++k)
      rest_mean[static_cast<size_t>(k)] +=
          original.shOf(i)[static_cast<size_t>(3 + k)] / static_cast<double>(original.size());
  std::set<std::vector<float>> rest_vectors;
  for (size_t d = 0; d < decoded.size(); ++d) {
    const size_t o = match[d];
    ASSERT_NE(o, SIZE_MAX) << label << ": decoded gaussian " << d << " at (" << decoded.positions[d].x << ", "
                           << decoded.positions[d].y << ", " << decoded.positions[d].z
                           << ") matches no original";
    for (int a = 0; a < 3; ++a) {
      const double x = original.positions[o][a];
      const double bound =
          position_factor * (std::abs(x) + 1.0) * step[a] * (1 + 1e-6) + 1e-6 * (std::abs(x) + 1.0);
      const double err = std::abs(x - decoded.positions[d][a]);
      max_pos_ratio = std::max(max_pos_ratio, err / ((std::abs(x) + 1.0) * step[a]));
      if (err > bound) ++pos_bad;
    }
    const float rd = quatDistance(normalize(original.rotations[o]), decoded.rotations[d]);
    max_rot = std::max(max_rot, static_cast<double>(rd));
    if (rd > 3.5f * rot_d + 1e-5f) ++rot_bad;
    const float op = original.opacities[o], dop = decoded.opacities[d];
    max_op = std::max(max_op, static_cast<double>(std::abs(op - dop)));
    if (e.truncating ? (op - dop < -1e-6f || op - dop > 1.0f / 255.0f + 1e-6f)
                     : std::abs(op - dop) > 0.5f / 255.0f + 1e-6f)
      ++op_bad;
    for (int a = 0; a < 3; ++a) scales.add(std::log(original.scales[o][a]), std::log(decoded.scales[d][a]));
    auto so = original.shOf(o), sd = decoded.shOf(d);
    // splat-transform encodes its images with libwebp's default lossless settings, which may rewrite the
    // RGB of fully transparent texels: the DC indices of gaussians stored with opacity byte 0 are lost.
    if (e.truncating && dop == 0.0f)
      ++transparent;
    else
      for (size_t k = 0; k < 3; ++k) dcs.add(so[k], sd[k]);
    std::vector<float> v;
    for (size_t k = 3; k < so.size(); ++k) {
      rest.add(so[k], sd[k]);
      rest_sq += (so[k] - sd[k]) * (so[k] - sd[k]);
      rest_var += (so[k] - rest_mean[k - 3]) * (so[k] - rest_mean[k - 3]);
      v.push_back(sd[k]);
    }
    if (!v.empty()) rest_vectors.insert(v);
  }
  EXPECT_EQ(pos_bad, 0u) << label << ": positions beyond the 16-bit log-encoding bound (max " << max_pos_ratio
                         << " steps x (|x|+1))";
  EXPECT_EQ(rot_bad, 0u) << label << ": rotations beyond the smallest-three bound (max |q - q'| " << max_rot
                         << ")";
  EXPECT_EQ(op_bad, 0u) << label << ": opacities beyond the 8-bit bound (max " << max_op << ")";
  scales.expect();
  dcs.expect();
  if (rest_count > 0) {
    EXPECT_LE(rest_vectors.size(), e.palette_limit)
        << label << ": more distinct SH vectors than palette entries";
    if (e.exact_palette) rest.expect();
    // k-means: the error must be far below the data's own spread (a wrong label or coefficient order
    // gives an error of the order of the variance or more).
    EXPECT_LE(rest_sq, 0.5 * rest_var) << label << ": SH rest error is not below half the data's variance";
    if (debugMaxima())
      std::printf("  SH rest: palette %zu vectors, squared error / variance %.4f\n", rest_vectors.size(),
                  rest_sq / rest_var);
  }
  if (debugMaxima())
    std::printf(
        "  position max %.3f x step(|x|+1); rotation max |q-q'| %.5f (bound %.5f); opacity max %.6f; %zu "
        "transparent\n",
        max_pos_ratio, max_rot, 3.5 * rot_d, max_op, transparent);
}

std::vector<size_t> identityMatch(size_t n) {
  std::vector<size_t> m(n);
  for (size_t i = 0; i < n; ++i) m[i] = i;
  return m;
}

// Two decodes of one file, by two readers: equal up to float rounding (the peer's PLY holds logit opacity
// clamped to [1e-6, 1 - 1e-6] and log-scales, which our PLY reader turns back).
void expectSameDecode(const GaussianCloud& ours, const GaussianCloud& peer, const std::string& label) {
  ASSERT_EQ(ours.size(), peer.size()) << label;
  ASSERT_EQ(ours.sh_degree, peer.sh_degree) << label;
  size_t bad = 0;
  std::string first;
  auto check = [&](size_t i, const char* what, double a, double b, double tol) {
    if (std::abs(a - b) > tol * (1.0 + std::abs(a))) {
      if (bad++ == 0)
        first = "row " + std::to_string(i) + " " + what + ": ours " + std::to_string(a) + ", peer " +
                std::to_string(b);
    }
  };
  for (size_t i = 0; i < ours.size(); ++i) {
    for (int a = 0; a < 3; ++a) {
      check(i, "position", ours.positions[i][a], peer.positions[i][a], 1e-6);
      check(i, "scale", ours.scales[i][a], peer.scales[i][a], 1e-5);
    }
    check(i, "rotation", 0.0, quatDistance(ours.rotations[i], peer.rotations[i]), 1e-5);
    check(i, "opacity", ours.opacities[i], peer.opacities[i], 2e-6);
    auto so = ours.shOf(i), sp = peer.shOf(i);
    for (size_t k = 0; k < so.size(); ++k) check(i, "sh", so[k], sp[k], 1e-6);
  }
  EXPECT_EQ(bad, 0u) << label << ": " << bad << " values differ; first: " << first;
}

GaussianCloud loadPly(const std::string& path) {
  LoadedSplats l = loadSplats(path);
  EXPECT_EQ(l.format, SplatFormat::kPly);
  return std::move(l.cloud);
}

// Restores the load limits when it goes out of scope.
struct LimitsGuard {
  LoadLimits saved = loadLimits();
  ~LimitsGuard() { setLoadLimits(saved); }
};

template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// =====================================================================================================
// Peer writes, we read
// =====================================================================================================

void peerWritesWeRead(const char* tool, const std::string& test, size_t n, int degree, uint32_t seed,
                      bool exact_palette) {
  const std::string dir = test::tempDir(test);
  const GaussianCloud cloud = test::randomCloud(n, degree, seed);
  saveSplats(cloud, dir + "/in.ply");
  const GaussianCloud original = loadPly(dir + "/in.ply");  // what the peer reads
  ASSERT_TRUE(
      test::succeeded(test::runPeer(tool, {"-q", "-w", "-g", "cpu", dir + "/in.ply", dir + "/out.sog"})));
  int version = 0;
  const GaussianCloud decoded = readSog(fileBytes(dir + "/out.sog"), dir + "/out.sog", &version);
  EXPECT_EQ(version, 2);
  const std::vector<size_t> match = matchByPosition(original, decoded, 1e-3f);
  Expectation e;
  e.truncating = true;
  e.exact_palette = exact_palette;
  e.palette_limit =
      n >= 1024
          ? 1024u << std::min(6, static_cast<int>(std::floor(std::log2(static_cast<double>(n) / 1024.0))))
          : n;
  expectWithinSog(original, decoded, match, e,
                  std::string(tool) + " .sog, SH degree " + std::to_string(degree));
}

TEST(SogPeer, SplatTransform3WritesWeReadShDegree3ExactPalette) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  peerWritesWeRead(kSt3, "SogSt3Sh3", 1024, 3, 11, true);
}

TEST(SogPeer, SplatTransform3WritesWeReadShDegree1KMeansPalette) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  peerWritesWeRead(kSt3, "SogSt3Sh1", 3000, 1, 12, false);
}

TEST(SogPeer, SplatTransform3WritesWeReadShDegree0) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  peerWritesWeRead(kSt3, "SogSt3Sh0", 700, 0, 13, true);
}

TEST(SogPeer, SplatTransform2WritesWeReadShDegree2ExactPalette) {
  SF_REQUIRE_PEER_TOOL(tool, kSt2);
  peerWritesWeRead(kSt2, "SogSt2Sh2", 1024, 2, 14, true);
}

TEST(SogPeer, SplatTransform2WritesWeReadShDegree3KMeansPalette) {
  SF_REQUIRE_PEER_TOOL(tool, kSt2);
  peerWritesWeRead(kSt2, "SogSt2Sh3", 2500, 3, 15, false);
}

TEST(SogPeer, SplatTransform3UnpackedMetaJsonWeRead) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  const std::string dir = test::tempDir("SogSt3Unpacked");
  fs::create_directories(dir + "/sog");
  saveSplats(test::randomCloud(512, 1, 16), dir + "/in.ply");
  const GaussianCloud original = loadPly(dir + "/in.ply");
  ASSERT_TRUE(test::succeeded(
      test::runPeer(kSt3, {"-q", "-w", "-g", "cpu", dir + "/in.ply", dir + "/sog/meta.json"})));
  EXPECT_EQ(classifyInput(dir + "/sog/meta.json"), InputKind::kSplatFile);
  LoadedSplats l = loadSplats(dir + "/sog/meta.json");
  EXPECT_EQ(l.format, SplatFormat::kSog);
  EXPECT_EQ(l.version, 2);
  Expectation e;
  e.truncating = true;
  e.exact_palette = true;
  expectWithinSog(original, l.cloud, matchByPosition(original, l.cloud, 1e-3f), e,
                  "splat-transform 3 meta.json");
}

// The real capture: biker.ply through splat-transform 3 to SOG, read back gaussian by gaussian.
TEST(SogPeer, BikerThroughSplatTransform3) {
  SF_REQUIRE_ASSET(ply, "splats/biker.ply");
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  const std::string dir = test::tempDir("SogBiker");
  ASSERT_TRUE(test::succeeded(test::runPeer(kSt3, {"-q", "-w", "-g", "cpu", ply, dir + "/biker.sog"})));
  const GaussianCloud original = loadPly(ply);
  const auto t0 = std::chrono::steady_clock::now();
  LoadedSplats l = loadSplats(dir + "/biker.sog");
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (debugMaxima())
    std::printf("biker.sog (%zu bytes) decoded in %.0f ms\n", static_cast<size_t>(l.file_bytes), ms);
  EXPECT_EQ(l.format, SplatFormat::kSog);
  Expectation e;
  e.truncating = true;
  expectWithinSog(original, l.cloud, matchByPosition(original, l.cloud, 1e-3f), e,
                  "biker.ply via splat-transform 3");
}

// =====================================================================================================
// We write, peer reads (and we read)
// =====================================================================================================

void weWritePeerReads(const char* tool, const std::string& test, size_t n, int degree, uint32_t seed,
                      bool unpacked) {
  const std::string dir = test::tempDir(test);
  const GaussianCloud cloud = test::randomCloud(n, degree, seed);
  const std::string sog = unpacked ? dir + "/sog/meta.json" : dir + "/out.sog";
  if (unpacked) fs::create_directories(dir + "/sog");
  saveSplats(cloud, sog);
  const GaussianCloud ours = loadSplats(sog).cloud;
  ASSERT_TRUE(test::succeeded(test::runPeer(tool, {"-q", "-w", sog, dir + "/peer.ply"})));
  const GaussianCloud peer = loadPly(dir + "/peer.ply");
  expectSameDecode(ours, peer, std::string(tool) + " reading our " + (unpacked ? "meta.json" : ".sog"));
  Expectation e;
  e.exact_palette = n <= 1024;
  expectWithinSog(cloud, ours, matchByPosition(cloud, ours, 1e-3f), e,
                  std::string("our writer, SH degree ") + std::to_string(degree));
}

TEST(SogPeer, WeWriteSplatTransform3ReadsShDegree3) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  weWritePeerReads(kSt3, "SogOursSt3Sh3", 1000, 3, 21, false);
}

TEST(SogPeer, WeWriteSplatTransform3ReadsShDegree2KMeansPalette) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  weWritePeerReads(kSt3, "SogOursSt3Sh2", 5000, 2, 22, false);
}

TEST(SogPeer, WeWriteSplatTransform3ReadsUnpacked) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  weWritePeerReads(kSt3, "SogOursSt3Unpacked", 800, 1, 23, true);
}

TEST(SogPeer, WeWriteSplatTransform2ReadsShDegree1) {
  SF_REQUIRE_PEER_TOOL(tool, kSt2);
  weWritePeerReads(kSt2, "SogOursSt2Sh1", 1500, 1, 24, false);
}

TEST(SogPeer, WeWriteSplatTransform2ReadsShDegree0) {
  SF_REQUIRE_PEER_TOOL(tool, kSt2);
  weWritePeerReads(kSt2, "SogOursSt2Sh0", 300, 0, 25, false);
}

// =====================================================================================================
// Our writer and reader
// =====================================================================================================

TEST(Sog, RoundTripKeepsOrderWithoutMortonAndIsDeterministic) {
  const GaussianCloud cloud = test::randomCloud(900, 3, 31);
  SogWriteOptions options;
  options.morton_order = false;
  const Bytes a = writeSog(cloud, options);
  const GaussianCloud back = readSog(a, "a.sog");
  Expectation e;
  e.exact_palette = true;
  expectWithinSog(cloud, back, identityMatch(cloud.size()), e, "round trip, cloud order");
  // Same bytes again, and with one worker thread.
  EXPECT_EQ(writeSog(cloud, options), a);
  ::setenv("SPLATFORGE_THREADS", "1", 1);
  const Bytes single = writeSog(cloud, options);
  ::unsetenv("SPLATFORGE_THREADS");
  EXPECT_EQ(single, a);
}

TEST(Sog, MortonOrderRoundTripAndKMeansPalette) {
  const GaussianCloud cloud = test::randomCloud(6000, 1, 32);
  const Bytes bytes = writeSog(cloud);
  const GaussianCloud back = readSog(bytes, "m.sog");
  Expectation e;
  e.palette_limit = 4096;
  expectWithinSog(cloud, back, matchByPosition(cloud, back, 1e-3f), e,
                  "round trip, Morton order, 6000 gaussians");
}

TEST(Sog, UnpackedEqualsArchive) {
  const std::string dir = test::tempDir("SogUnpackedEqualsArchive");
  const GaussianCloud cloud = test::randomCloud(300, 2, 33);
  saveSplats(cloud, dir + "/c.sog");
  saveSplats(cloud, dir + "/meta.json");
  for (const char* name : {"means_l.webp", "means_u.webp", "quats.webp", "scales.webp", "sh0.webp",
                           "shN_centroids.webp", "shN_labels.webp"})
    EXPECT_TRUE(fs::is_regular_file(dir + "/" + name)) << name;
  const LoadedSplats a = loadSplats(dir + "/c.sog"), b = loadSplats(dir + "/meta.json");
  EXPECT_EQ(a.format, SplatFormat::kSog);
  EXPECT_EQ(b.format, SplatFormat::kSog);
  ASSERT_EQ(a.cloud.size(), b.cloud.size());
  for (size_t i = 0; i < a.cloud.size(); ++i) {
    EXPECT_EQ(a.cloud.positions[i].x, b.cloud.positions[i].x);
    EXPECT_EQ(a.cloud.sh[i * 27 + 20], b.cloud.sh[i * 27 + 20]);
  }
}

// readSog's first steps as the web page takes them (its browser decodes the images between them): the image
// files an unpacked SOG names, in readSog's order, with the paths its messages use (none for a .sog), and
// every image read and its header checked, each the file's bytes at the size libwebp reads.
TEST(Sog, ImageFilesAndInspectionAreReadSogs) {
  const std::string dir = test::tempDir("SogImageFilesAndInspection");
  const GaussianCloud cloud = test::randomCloud(300, 2, 34);
  saveSplats(cloud, dir + "/meta.json");
  const Bytes meta = readFile(dir + "/meta.json");
  const std::vector<std::string> names = {"means_l.webp",   "means_u.webp", "quats.webp",
                                          "scales.webp",    "sh0.webp",     "shN_centroids.webp",
                                          "shN_labels.webp"};
  const std::vector<SogImageFile> files = sogImageFiles(meta, dir + "/meta.json");
  ASSERT_EQ(files.size(), names.size());
  const std::vector<SogImage> images = inspectSog(meta, dir + "/meta.json");
  ASSERT_EQ(images.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(files[i].name, names[i]);
    EXPECT_EQ(files[i].path, dir + "/" + names[i]);
    EXPECT_EQ(images[i].describe, files[i].path);
    EXPECT_EQ(images[i].webp, readFile(files[i].path)) << names[i];
    int w = 0, h = 0;
    ASSERT_TRUE(WebPGetInfo(images[i].webp.data(), images[i].webp.size(), &w, &h)) << names[i];
    EXPECT_EQ(images[i].width, w) << names[i];
    EXPECT_EQ(images[i].height, h) << names[i];
  }
  const Bytes bundle = writeSog(cloud);
  EXPECT_TRUE(sogImageFiles(bundle, "c.sog").empty());
  EXPECT_EQ(inspectSog(bundle, "c.sog").size(), names.size());
}

TEST(Sog, EmptyAndSingleGaussian) {
  for (size_t n : {0u, 1u, 2u}) {
    const GaussianCloud cloud = test::randomCloud(n, 1, 34);
    const GaussianCloud back = readSog(writeSog(cloud), "tiny.sog");
    ASSERT_EQ(back.size(), n);
    if (n > 0) {
      Expectation e;
      e.exact_palette = true;
      expectWithinSog(cloud, back, matchByPosition(cloud, back, 1e-3f), e, "tiny cloud");
    }
  }
}

TEST(Sog, ModelTag) {
  GaussianCloud cloud = test::randomCloud(30, 0, 36);
  cloud.antialiased = true;
  const Bytes bytes = writeSog(cloud);
  SogFixture f = SogFixture::fromArchive(bytes);
  EXPECT_EQ(f.meta.value("model", ""), "antialiased");
  EXPECT_TRUE(readSog(bytes, "aa.sog").antialiased);
  EXPECT_FALSE(SogFixture::fromArchive(writeSog(test::randomCloud(30, 0, 36))).meta.contains("model"));
  f.meta["model"] = "2dgs";
  LoadedSplats flat = decodeSplats(f.archive(), "flat.sog");
  EXPECT_FALSE(flat.cloud.antialiased);
  ASSERT_EQ(flat.warnings.size(), 1u);
  EXPECT_NE(flat.warnings[0].find("'2dgs'"), std::string::npos) << flat.warnings[0];
  f.meta["model"] = "hologram";
  LoadedSplats odd = decodeSplats(f.archive(), "odd.sog");
  ASSERT_EQ(odd.warnings.size(), 1u);
  EXPECT_NE(odd.warnings[0].find("unknown splat model \"hologram\""), std::string::npos) << odd.warnings[0];
}

TEST(Sog, WriterRefusesNonFinite) {
  GaussianCloud cloud = test::randomCloud(4, 0, 35);
  cloud.positions[2].y = NAN;
  EXPECT_NE(errorOf([&] { writeSog(cloud); }).find("non-finite"), std::string::npos);
}

TEST(SogQuantize, ScalarCodebookIsExactForFewValuesAndNearestOtherwise) {
  const std::vector<float> few = {3, 1, 2, 1, 3};
  EXPECT_EQ(sog::buildScalarCodebook(few), (std::vector<float>{1, 2, 3}));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(20000);
  for (float& v : values) v = normal(rng);
  values[7] = 40.0f;  // a far outlier gets an entry of its own
  const std::vector<float> book = sog::buildScalarCodebook(values);
  ASSERT_LE(book.size(), 256u);
  EXPECT_TRUE(std::is_sorted(book.begin(), book.end()));
  EXPECT_NEAR(book.back(), 40.0f, 1e-4f);
  double sq = 0;
  for (float v : values) {
    const float q = book[sog::nearestCodebookIndex(book, v)];
    float nearest = INFINITY;
    for (float c : book) nearest = std::min(nearest, std::abs(c - v));
    EXPECT_EQ(std::abs(q - v), nearest);
    sq += (q - v) * (q - v);
  }
  // A uniform 256-level quantiser over +-4 sigma has an RMS error of 8/256/sqrt(12) = 0.009; k-means beats
  // it.
  EXPECT_LT(std::sqrt(sq / static_cast<double>(values.size())), 0.009);
}

TEST(SogQuantize, VectorPaletteNeverWorseThanItsStart) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const size_t n = 5000, dims = 9;
  std::vector<float> points(n * dims);
  for (float& v : points) v = u(rng);
  auto error = [&](const sog::VectorPalette& p) {
    double e = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t d = 0; d < dims; ++d) {
        const double t = points[i * dims + d] - p.centroids[p.labels[i] * dims + d];
        e += t * t;
      }
    return e;
  };
  const sog::VectorPalette start = sog::buildVectorPalette(points, n, dims, 256, 0);
  const sog::VectorPalette refined = sog::buildVectorPalette(points, n, dims, 256, 10);
  EXPECT_EQ(start.size(), 256u);
  EXPECT_LE(error(refined), error(start));
  // Every label is the exact nearest centroid for most points (the search is approximate only at the end).
  size_t exact = 0;
  for (size_t i = 0; i < n; ++i) {
    double best = INFINITY;
    size_t arg = 0;
    for (size_t c = 0; c < refined.size(); ++c) {
      double e = 0;
      for (size_t d = 0; d < dims; ++d)
        e += std::pow(points[i * dims + d] - refined.centroids[c * dims + d], 2);
      if (e < best) best = e, arg = c;
    }
    exact += arg == refined.labels[i];
  }
  EXPECT_GT(exact, n * 9 / 10);
  // Fewer points than entries: every point is its own centroid.
  const sog::VectorPalette small =
      sog::buildVectorPalette(std::span(points).first(10 * dims), 10, dims, 256, 10);
  EXPECT_EQ(small.size(), 10u);
  EXPECT_EQ(small.centroids, std::vector<float>(points.begin(), points.begin() + 10 * dims));
}

// =====================================================================================================
// Version 1, built here from closed-form values
// =====================================================================================================

// A version-1 SOG of 3 gaussians with SH degree 1 (palette of 2 entries), and the values it must decode to.
struct V1Fixture {
  SogFixture sog;
  GaussianCloud expected;
};

V1Fixture versionOneFixture() {
  V1Fixture f;
  const int w = 4, h = 4, n = 3;
  auto image = [&] { return std::vector<uint8_t>(static_cast<size_t>(w * h * 4), 255); };
  std::vector<uint8_t> ml = image(), mu = image(), q = image(), s = image(), c = image(), lab = image();
  const double mins[3] = {-1.0, -0.5, 0.0}, maxs[3] = {1.0, 0.5, 2.0};
  const uint16_t pos[3][3] = {{0, 65535, 32768}, {1000, 2000, 3000}, {65535, 0, 12345}};
  const uint8_t quat[3][4] = {{128, 128, 128, 252}, {0, 255, 64, 253}, {200, 10, 100, 255}};
  const uint8_t scale[3][3] = {{0, 128, 255}, {10, 20, 30}, {255, 255, 0}};
  const uint8_t colour[3][4] = {{0, 255, 128, 200}, {50, 60, 70, 0}, {255, 0, 1, 255}};
  const uint8_t labels[3] = {1, 0, 1};
  const double smin[3] = {-6, -5, -4}, smax[3] = {-1, 0, 1};
  const double cmin[4] = {-2, -1.5, -1, -5}, cmax[4] = {2, 1.5, 1, 5};
  f.expected.resize(n, 1);
  for (int i = 0; i < n; ++i) {
    const size_t t = static_cast<size_t>(i) * 4;
    for (int a = 0; a < 3; ++a) {
      ml[t + static_cast<size_t>(a)] = static_cast<uint8_t>(pos[i][a] & 0xff);
      mu[t + static_cast<size_t>(a)] = static_cast<uint8_t>(pos[i][a] >> 8);
      const double l = mins[a] + (maxs[a] - mins[a]) * pos[i][a] / 65535.0;
      f.expected.positions[static_cast<size_t>(i)][a] =
          static_cast<float>(std::copysign(std::expm1(std::abs(l)), l));
      s[t + static_cast<size_t>(a)] = scale[i][a];
      f.expected.scales[static_cast<size_t>(i)][a] =
          static_cast<float>(std::exp(smin[a] + (smax[a] - smin[a]) * scale[i][a] / 255.0));
    }
    for (int k = 0; k < 4; ++k)
      q[t + static_cast<size_t>(k)] = quat[i][k], c[t + static_cast<size_t>(k)] = colour[i][k];
    // Smallest three: the bytes map to (b/255*2-1)/sqrt2 in the order of the components other than the
    // largest.
    const int largest = quat[i][3] - 252;
    float comps[4] = {0, 0, 0, 0};
    float sum = 0;
    int slot = 0;
    for (int k = 0; k < 4; ++k) {
      if (k == largest) continue;
      comps[k] = (quat[i][slot++] / 255.0f * 2.0f - 1.0f) / std::sqrt(2.0f);
      sum += comps[k] * comps[k];
    }
    comps[largest] = std::sqrt(std::max(0.0f, 1.0f - sum));
    f.expected.rotations[static_cast<size_t>(i)] = normalize(Quat{comps[0], comps[1], comps[2], comps[3]});
    for (int k = 0; k < 3; ++k)
      f.expected.sh[static_cast<size_t>(i) * 12 + static_cast<size_t>(k)] =
          static_cast<float>(cmin[k] + (cmax[k] - cmin[k]) * colour[i][k] / 255.0);
    f.expected.opacities[static_cast<size_t>(i)] =
        sigmoid(static_cast<float>(cmin[3] + (cmax[3] - cmin[3]) * colour[i][3] / 255.0));
    lab[t] = labels[i], lab[t + 1] = 0, lab[t + 2] = 0;
  }
  // Palette: 2 entries of 3 coefficients in a 192 x 1 image; bytes between shN.mins and shN.maxs.
  const double shmin = -0.8, shmax = 0.6;
  std::vector<uint8_t> cen(192 * 4, 255);
  for (int e = 0; e < 2; ++e)
    for (int j = 0; j < 3; ++j)
      for (int ch = 0; ch < 3; ++ch)
        cen[static_cast<size_t>((e * 3 + j) * 4 + ch)] = static_cast<uint8_t>(17 + e * 100 + j * 30 + ch * 7);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 3; ++j)
      for (int ch = 0; ch < 3; ++ch) {
        const uint8_t b = cen[static_cast<size_t>((labels[i] * 3 + j) * 4 + ch)];
        f.expected.sh[static_cast<size_t>(i) * 12 + static_cast<size_t>((1 + j) * 3 + ch)] =
            static_cast<float>(shmin + (shmax - shmin) * b / 255.0);
      }
  f.sog.files["a_l.webp"] = webpLossless(ml, w, h);
  f.sog.files["a_u.webp"] = webpLossless(mu, w, h);
  f.sog.files["q.webp"] = webpLossless(q, w, h);
  f.sog.files["s.webp"] = webpLossless(s, w, h);
  f.sog.files["c.webp"] = webpLossless(c, w, h);
  f.sog.files["cen.webp"] = webpLossless(cen, 192, 1);
  f.sog.files["lab.webp"] = webpLossless(lab, w, h);
  f.sog.meta = {
      {"means",
       {{"shape", {n, 3}},
        {"dtype", "float32"},
        {"mins", {mins[0], mins[1], mins[2]}},
        {"maxs", {maxs[0], maxs[1], maxs[2]}},
        {"files", json::array({"a_l.webp", "a_u.webp"})}}},
      {"scales",
       {{"shape", {n, 3}},
        {"mins", {smin[0], smin[1], smin[2]}},
        {"maxs", {smax[0], smax[1], smax[2]}},
        {"files", json::array({"s.webp"})}}},
      {"quats", {{"shape", {n, 4}}, {"encoding", "quaternion_packed"}, {"files", json::array({"q.webp"})}}},
      {"sh0",
       {{"shape", {n, 1, 4}},
        {"mins", {cmin[0], cmin[1], cmin[2], cmin[3]}},
        {"maxs", {cmax[0], cmax[1], cmax[2], cmax[3]}},
        {"files", json::array({"c.webp"})}}},
      {"shN",
       {{"shape", {n, 3}},
        {"mins", shmin},
        {"maxs", shmax},
        {"quantization", 8},
        {"files", json::array({"cen.webp", "lab.webp"})}}}};
  return f;
}

void expectEqualClouds(const GaussianCloud& expected, const GaussianCloud& got, float tol,
                       const std::string& label) {
  ASSERT_EQ(got.size(), expected.size()) << label;
  ASSERT_EQ(got.sh_degree, expected.sh_degree) << label;
  for (size_t i = 0; i < got.size(); ++i) {
    for (int a = 0; a < 3; ++a) {
      EXPECT_NEAR(got.positions[i][a], expected.positions[i][a],
                  tol * (1 + std::abs(expected.positions[i][a])))
          << label << " row " << i;
      EXPECT_NEAR(got.scales[i][a], expected.scales[i][a], tol * expected.scales[i][a])
          << label << " row " << i;
    }
    EXPECT_LT(quatDistance(got.rotations[i], expected.rotations[i]), 10 * tol) << label << " row " << i;
    EXPECT_NEAR(got.opacities[i], expected.opacities[i], 2e-6f) << label << " row " << i;
    for (size_t k = 0; k < got.shOf(i).size(); ++k)
      EXPECT_NEAR(got.shOf(i)[k], expected.shOf(i)[k], tol) << label << " row " << i << " sh " << k;
  }
}

TEST(Sog, VersionOneDecodesToClosedFormValues) {
  const V1Fixture f = versionOneFixture();
  int version = 0;
  // Stored, deflated, and deflated with data descriptors (zero sizes in the local headers).
  for (auto [use_deflate, descriptor] :
       {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}}) {
    const GaussianCloud got = readSog(f.sog.archive(use_deflate, descriptor), "v1.sog", &version);
    EXPECT_EQ(version, 1);
    expectEqualClouds(f.expected, got, 1e-6f,
                      use_deflate ? (descriptor ? "v1 deflate+descriptor" : "v1 deflate") : "v1 stored");
  }
}

TEST(SogPeer, VersionOneSplatTransform3ReadsAsWeDo) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  const std::string dir = test::tempDir("SogV1Peer");
  const V1Fixture f = versionOneFixture();
  f.sog.writeUnpacked(dir);
  const GaussianCloud ours = loadSplats(dir + "/meta.json").cloud;
  expectEqualClouds(f.expected, ours, 1e-6f, "v1 unpacked");
  ASSERT_TRUE(test::succeeded(test::runPeer(kSt3, {"-q", "-w", dir + "/meta.json", dir + "/peer.ply"})));
  expectSameDecode(ours, loadPly(dir + "/peer.ply"), "splat-transform 3 reading version 1");
}

// =====================================================================================================
// Untrusted input
// =====================================================================================================

SogFixture smallFixture() {
  return SogFixture::fromArchive(writeSog(test::randomCloud(200, 1, 41)));
}

TEST(SogBadInput, TruncatedArchiveIsRefused) {
  const Bytes full = writeSog(test::randomCloud(64, 1, 42));
  std::vector<size_t> sizes;
  for (size_t s = 0; s < full.size(); s += std::max<size_t>(1, full.size() / 150)) sizes.push_back(s);
  for (size_t s = full.size() > 80 ? full.size() - 80 : 0; s < full.size(); ++s) sizes.push_back(s);
  for (size_t s : sizes) {
    const Bytes prefix(full.begin(), full.begin() + static_cast<ptrdiff_t>(s));
    const std::string err = errorOf([&] { decodeSplats(prefix, "cut.sog"); });
    EXPECT_NE(err.find("cut.sog"), std::string::npos) << "prefix of " << s << " bytes: " << err;
  }
}

TEST(SogBadInput, CorruptImagesDecodeOrThrow) {
  const SogFixture base = smallFixture();
  std::mt19937 rng(43);
  for (const auto& [name, data] : base.files) {
    for (int trial = 0; trial < 12; ++trial) {
      SogFixture f = base;
      Bytes& img = f.files[name];
      if (trial < 4) {
        img.resize(img.size() * static_cast<size_t>(trial + 1) / 5);  // truncated image
      } else {
        for (int k = 0; k < 1 + trial; ++k) img[rng() % img.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      }
      try {
        const GaussianCloud c = readSog(f.archive(), "corrupt.sog");
        EXPECT_EQ(c.size(), 200u);
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("corrupt.sog"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(SogBadInput, ArchiveProblemsNameTheEntry) {
  const SogFixture base = smallFixture();
  Bytes archive = base.archive();
  // A flipped byte inside a stored image: the CRC names the entry.
  const ZipReader zip(archive, "x.sog");
  const ZipEntry* quats = zip.find("quats.webp");
  ASSERT_NE(quats, nullptr);
  Bytes flipped = archive;
  flipped[quats->data_offset + quats->compressed_size / 2] ^= 0x55;
  std::string err = errorOf([&] { readSog(flipped, "x.sog"); });
  EXPECT_NE(err.find("entry 'quats.webp'"), std::string::npos) << err;
  EXPECT_NE(err.find("CRC-32"), std::string::npos) << err;
  // Corrupt deflate data.
  Bytes deflated = base.archive(true, false);
  const ZipReader dz(deflated, "d.sog");
  deflated[dz.find("sh0.webp")->data_offset + 3] ^= 0xff;
  err = errorOf([&] { readSog(deflated, "d.sog"); });
  EXPECT_NE(err.find("entry 'sh0.webp'"), std::string::npos) << err;
  // A missing image entry.
  SogFixture missing = base;
  missing.files.erase("scales.webp");
  err = errorOf([&] { readSog(missing.archive(), "m.sog"); });
  EXPECT_NE(err.find("no entry 'scales.webp'"), std::string::npos) << err;
  EXPECT_NE(err.find("scales.files[0]"), std::string::npos) << err;
  // No meta.json at all.
  err = errorOf([&] { readSog(zipArchive({{"a.txt", Bytes{1, 2, 3}}}, false, false), "z.sog"); });
  EXPECT_NE(err.find("no entry 'meta.json'"), std::string::npos) << err;
  // A central directory pointing past the file.
  Bytes bad_cd = archive;
  const size_t eocd = bad_cd.size() - 22;
  const uint32_t huge = 0x7fffffff;
  std::memcpy(&bad_cd[eocd + 16], &huge, 4);
  err = errorOf([&] { readSog(bad_cd, "cd.sog"); });
  EXPECT_NE(err.find("central directory"), std::string::npos) << err;
}

TEST(SogBadInput, MetaProblemsNameTheJsonPath) {
  const SogFixture base = smallFixture();
  struct Case {
    const char* what;
    std::function<void(SogFixture&)> mutate;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"no means", [](SogFixture& f) { f.meta.erase("means"); }, "means: missing"},
      {"version 3", [](SogFixture& f) { f.meta["version"] = 3; }, "unsupported SOG version 3"},
      {"count beyond the images", [](SogFixture& f) { f.meta["count"] = 100000; },
       "fewer than the 100000 gaussians"},
      {"fractional count", [](SogFixture& f) { f.meta["count"] = 1.5; }, "count: expected an integer"},
      {"mins of 2",
       [](SogFixture& f) {
         f.meta["means"]["mins"] = {0, 0};
       },
       "means.mins: expected an array of 3 numbers"},
      {"string in codebook", [](SogFixture& f) { f.meta["scales"]["codebook"][5] = "x"; },
       "scales.codebook[5]: expected a number"},
      {"long codebook", [](SogFixture& f) { f.meta["sh0"]["codebook"] = std::vector<double>(300, 0.0); },
       "sh0.codebook: expected an array of 1 to 256"},
      {"short codebook",
       [](SogFixture& f) {
         f.meta["scales"]["codebook"] = {0.5, 0.25};
       },
       "-entry codebook"},
      {"palette count", [](SogFixture& f) { f.meta["shN"]["count"] = 3; }, "palette label"},
      {"bands 5", [](SogFixture& f) { f.meta["shN"]["bands"] = 5; },
       "shN.bands: expected an integer in 0..3"},
      {"bands 2 on a band-1 palette", [](SogFixture& f) { f.meta["shN"]["bands"] = 2; }, "expected 512"},
      {"file name not a string", [](SogFixture& f) { f.meta["quats"]["files"][0] = 7; },
       "quats.files[0]: expected an image name"},
      {"not webp", [](SogFixture& f) { f.files["quats.webp"] = Bytes(64, 7); }, "not a WebP image"},
      {"lossy webp",
       [](SogFixture& f) {
         f.files["scales.webp"] = webpLossy(std::vector<uint8_t>(16 * 16 * 4, 100), 16, 16);
       },
       "lossy WebP"},
      {"rotation tag",
       [](SogFixture& f) {
         int w = 0, h = 0;
         std::vector<uint8_t> px = webpDecode(f.files["quats.webp"], &w, &h);
         px[4 * 7 + 3] = 17;
         f.files["quats.webp"] = webpLossless(px, w, h);
       },
       "texel 7: rotation tag 17"},
      {"not an object",
       [](SogFixture& f) {
         f.meta = json::array({1, 2});
       },
       "expected a JSON object"},
  };
  for (const Case& c : cases) {
    SogFixture f = base;
    c.mutate(f);
    const std::string err = errorOf([&] { readSog(f.archive(), "meta.sog"); });
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.what << ": " << err;
    EXPECT_NE(err.find("meta.sog"), std::string::npos) << c.what << ": " << err;
  }
  const std::string syntax = errorOf([&] {
    readSog(zipArchive({{"meta.json", Bytes{'{', '"', 'a'}}}, false, false), "s.sog");
  });
  EXPECT_NE(syntax.find("s.sog: entry 'meta.json'"), std::string::npos) << syntax;
}

// The WebP headers are read by the SOG reader itself (the same in the web build, whose pixels the browser
// decodes; io/sog_images.h): each container form is taken as libwebp's WebPGetFeatures takes it. A lossless
// image in the extended container (VP8X, its canvas the image's size) decodes as the simple one does; the
// animation flag, a canvas of another size and a header cut short are refused.
TEST(SogBadInput, WebpHeadersAreReadAsLibwebpReadsThem) {
  const SogFixture base = smallFixture();
  const Bytes simple = base.files.at("quats.webp");
  ASSERT_EQ(std::string(simple.begin() + 12, simple.begin() + 16), "VP8L");
  int w = 0, h = 0;
  ASSERT_TRUE(WebPGetInfo(simple.data(), simple.size(), &w, &h));
  // RIFF, WEBP, a VP8X chunk (flags, three reserved bytes, canvas width - 1 and height - 1 in 24 bits each),
  // then the simple image's VP8L chunk.
  auto extended = [&](uint8_t flags, int cw, int ch) {
    Bytes out = {'R', 'I', 'F', 'F', 0,  0, 0, 0, 'W',   'E', 'B', 'P',
                 'V', 'P', '8', 'X', 10, 0, 0, 0, flags, 0,   0,   0};
    for (int v : {cw - 1, ch - 1})
      for (int k = 0; k < 3; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
    out.insert(out.end(), simple.begin() + 12, simple.end());
    const auto riff = static_cast<uint32_t>(out.size() - 8);
    for (int k = 0; k < 4; ++k) out[static_cast<size_t>(4 + k)] = static_cast<uint8_t>(riff >> (8 * k));
    return out;
  };
  struct Case {
    const char* what;
    Bytes webp;
    const char* expect;  // null: decodes
  };
  const Case cases[] = {
      {"extended lossless", extended(0x10, w, h), nullptr},
      {"animated", extended(0x02, w, h), "animated WebP"},
      {"canvas of another size", extended(0x10, w + 1, h), "not a WebP image"},
      {"header cut short", Bytes(simple.begin(), simple.begin() + 20), "not a WebP image"},
  };
  const GaussianCloud want = readSog(base.archive(), "base.sog");
  for (const Case& c : cases) {
    WebPBitstreamFeatures f;
    const bool libwebp_reads = WebPGetFeatures(c.webp.data(), c.webp.size(), &f) == VP8_STATUS_OK;
    SogFixture mutated = base;
    mutated.files["quats.webp"] = c.webp;
    if (!c.expect) {
      ASSERT_TRUE(libwebp_reads && f.format == 2 && !f.has_animation) << c.what;
      const GaussianCloud got = readSog(mutated.archive(), "x.sog");
      ASSERT_EQ(got.size(), want.size()) << c.what;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(got.rotations[i].w == want.rotations[i].w && got.rotations[i].x == want.rotations[i].x &&
                    got.rotations[i].y == want.rotations[i].y && got.rotations[i].z == want.rotations[i].z)
            << c.what << " row " << i;
    } else {
      EXPECT_TRUE(!libwebp_reads || f.has_animation) << c.what;
      const std::string err = errorOf([&] { readSog(mutated.archive(), "x.sog"); });
      EXPECT_NE(err.find(std::string("x.sog: entry 'quats.webp': ") + c.expect), std::string::npos)
          << c.what << ": " << err;
    }
  }
}

TEST(SogBadInput, LimitsAreCheckedBeforeDecoding) {
  const Bytes archive = writeSog(test::randomCloud(300, 1, 44));
  LimitsGuard guard;
  LoadLimits l = loadLimits();
  l.max_gaussians = 100;
  setLoadLimits(l);
  std::string err = errorOf([&] { readSog(archive, "big.sog"); });
  EXPECT_NE(err.find("declares 300 gaussians"), std::string::npos) << err;
  l = guard.saved;
  l.max_bytes = 20000;  // the archive itself fits; the decoded images do not
  setLoadLimits(l);
  err = errorOf([&] { readSog(archive, "big.sog"); });
  EXPECT_NE(err.find("load memory limit"), std::string::npos) << err;
}

TEST(SogBadInput, UnpackedImagePathsAreConfined) {
  const std::string dir = test::tempDir("SogConfined");
  fs::create_directories(dir + "/sog");
  SogFixture f = smallFixture();
  f.writeUnpacked(dir + "/sog");
  writeBytes(dir + "/outside.webp", f.files["quats.webp"]);
  struct Case {
    std::string name, expect;
  };
  fs::create_symlink(dir + "/outside.webp", dir + "/sog/link.webp");
  for (const Case& c : {Case{"../outside.webp", "leads outside"}, Case{dir + "/outside.webp", "is absolute"},
                        Case{"link.webp", "through a link"}, Case{"missing.webp", "file is missing"}}) {
    SogFixture g = f;
    g.meta["quats"]["files"][0] = c.name;
    const std::string text = g.meta.dump();
    writeBytes(dir + "/sog/meta.json", Bytes(text.begin(), text.end()));
    const std::string err = errorOf([&] { loadSplats(dir + "/sog/meta.json"); });
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": " << err;
  }
}

TEST(SogFormats, DetectionAndExtensions) {
  const GaussianCloud cloud = test::randomCloud(20, 0, 45);
  const Bytes sog = writeSog(cloud);
  LoadedSplats l = decodeSplats(sog, "any.sog");
  EXPECT_EQ(l.format, SplatFormat::kSog);
  EXPECT_EQ(l.version, 2);
  EXPECT_STREQ(formatName(SplatFormat::kSog), "sog");
  EXPECT_EQ(decodeSplats(sog, "no_extension").format, SplatFormat::kSog);  // the ZIP magic decides
  EXPECT_EQ(writeFormatForPath("x/y.SOG"), SplatFormat::kSog);
  EXPECT_EQ(writeFormatForPath("x/meta.json"), SplatFormat::kSog);
  EXPECT_THROW(writeFormatForPath("x/scene.json"), Error);
  EXPECT_EQ(classifyInput("x/meta.json"), InputKind::kSplatFile);
  EXPECT_EQ(classifyInput("x/scene.json"), InputKind::kSceneJson);
  const std::string err = errorOf([&] { decodeSplats(Bytes{1, 2, 3, 4, 5}, "bad.sog"); });
  EXPECT_NE(err.find("not a sog file"), std::string::npos) << err;
}

}  // namespace
}  // namespace sf
