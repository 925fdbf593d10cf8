// .ksplat reading (src/io/ksplat.h, docs/formats/ksplat.md).
//
// Oracle: no ksplat writer runs headless here (GaussianSplats3D's writer is part of its three.js viewer
// package), so this file builds .ksplat bytes itself from the layout GaussianSplats3D's SplatBuffer writes:
// the 4096-byte header, 1024-byte section headers, buckets formed the way its
// computeBucketsForUncompressedSplatArray forms them (a block grid; a bucket full at bucket_size splats is
// closed, later splats of that block open a new one; full buckets first, then the partial ones), positions
// as round(offset x range / (block / 2)) + range, half floats at levels 1-2, 8-bit SH at level 2 as
// floor((v - min) / (max - min) x 255), colour as floor((0.5 + C0 dc) x 255) and opacity as floor(o x 255).
// The decoder must return exactly what those bytes hold (the decode of each stored value, computed here);
// splat-transform 3 reads the same files (ksplat -> PLY) to the values our reader gives.
#include "io/ksplat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/half.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/formats.h"
#include "support/peer_tools.h"
#include "support/test_support.h"

namespace sf {
namespace {

using Bytes = std::vector<uint8_t>;

template <typename T>
void put(Bytes& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}

struct SectionSpec {
  size_t begin, end;  // rows of the source cloud
  int degree;         // SH degree stored for the section
  uint32_t bucket_size = 16;
  float block_size = 0.5f;
};

struct Built {
  Bytes bytes;
  GaussianCloud expected;
};

// Encodes `cloud` as .ksplat version 0.1 at `level`, one section per spec (see the file comment).
Built buildKsplat(const GaussianCloud& cloud, int level, const std::vector<SectionSpec>& sections,
                  float sh_min = -1.5f, float sh_max = 1.5f) {
  static const size_t kRecordBase[3] = {44, 24, 24};
  static const size_t kShBytes[3] = {4, 2, 1};
  static const int kComponents[4] = {0, 9, 24, 45};
  constexpr uint32_t kRange = 32767;
  int max_degree = 0;
  size_t total = 0;
  for (const SectionSpec& s : sections) max_degree = std::max(max_degree, s.degree), total += s.end - s.begin;
  Built out;
  out.expected.resize(total, max_degree);
  Bytes header(4096 + 1024 * sections.size(), 0);
  header[0] = 0;
  header[1] = 1;
  put<uint32_t>(header, 4, static_cast<uint32_t>(sections.size()));
  put<uint32_t>(header, 8, static_cast<uint32_t>(sections.size()));
  put<uint32_t>(header, 12, static_cast<uint32_t>(total));
  put<uint32_t>(header, 16, static_cast<uint32_t>(total));
  put<uint16_t>(header, 20, static_cast<uint16_t>(level));
  put<float>(header, 36, sh_min);
  put<float>(header, 40, sh_max);
  Bytes body;
  size_t row = 0;
  for (size_t si = 0; si < sections.size(); ++si) {
    const SectionSpec& spec = sections[si];
    const size_t n = spec.end - spec.begin;
    const size_t record =
        kRecordBase[level] + static_cast<size_t>(kComponents[spec.degree]) * kShBytes[level];
    // Buckets (levels 1-2): the viewer's block grid.
    std::vector<std::vector<size_t>> buckets;
    std::vector<std::array<float, 3>> centres;
    size_t full = 0;
    if (level == 0) {
      buckets.push_back({});
      for (size_t i = spec.begin; i < spec.end; ++i) buckets[0].push_back(i);
      centres.push_back({0, 0, 0});
    } else if (n > 0) {
      Vec3 lo = cloud.positions[spec.begin], hi = lo;
      for (size_t i = spec.begin; i < spec.end; ++i)
        for (int a = 0; a < 3; ++a)
          lo[a] = std::min(lo[a], cloud.positions[i][a]), hi[a] = std::max(hi[a], cloud.positions[i][a]);
      const float b = spec.block_size;
      const auto yb = static_cast<long>(std::ceil((hi.y - lo.y) / b)),
                 zb = static_cast<long>(std::ceil((hi.z - lo.z) / b));
      std::map<long, size_t> open;  // block id -> index into partial
      std::vector<std::vector<size_t>> partial;
      std::vector<std::array<float, 3>> partial_centres, full_centres;
      std::vector<std::vector<size_t>> full_buckets;
      for (size_t i = spec.begin; i < spec.end; ++i) {
        const Vec3 p = cloud.positions[i];
        long idx[3];
        std::array<float, 3> c;
        for (int a = 0; a < 3; ++a) {
          idx[a] = static_cast<long>(std::floor((p[a] - lo[a]) / b));
          c[static_cast<size_t>(a)] = static_cast<float>(idx[a]) * b + lo[a] + b / 2;
        }
        const long id = idx[0] * (yb * zb) + idx[1] * zb + idx[2];
        auto it = open.find(id);
        if (it == open.end()) {
          it = open.emplace(id, partial.size()).first;
          partial.push_back({});
          partial_centres.push_back(c);
        }
        partial[it->second].push_back(i);
        if (partial[it->second].size() >= spec.bucket_size) {
          full_buckets.push_back(partial[it->second]);
          full_centres.push_back(partial_centres[it->second]);
          partial[it->second].clear();
          open.erase(it);
        }
      }
      buckets = full_buckets;
      centres = full_centres;
      full = buckets.size();
      for (const auto& [id, k] : open) {  // ascending block id, as the viewer's object keys iterate
        buckets.push_back(partial[k]);
        centres.push_back(partial_centres[k]);
      }
    }
    const size_t partial_count = level == 0 ? 0 : buckets.size() - full;
    const size_t bucket_bytes = level == 0 ? 0 : partial_count * 4 + buckets.size() * 12;
    Bytes sec(bucket_bytes + n * record, 0);
    if (level > 0) {
      for (size_t k = 0; k < partial_count; ++k)
        put<uint32_t>(sec, 4 * k, static_cast<uint32_t>(buckets[full + k].size()));
      for (size_t k = 0; k < buckets.size(); ++k)
        for (size_t a = 0; a < 3; ++a) put<float>(sec, partial_count * 4 + k * 12 + a * 4, centres[k][a]);
    }
    size_t out_row = 0;
    for (size_t bk = 0; bk < buckets.size(); ++bk)
      for (size_t src : buckets[bk]) {
        const size_t at = bucket_bytes + out_row * record;
        const size_t dst = row + out_row;
        ++out_row;
        const Vec3 p = cloud.positions[src];
        const Vec3 s = cloud.scales[src];
        const Quat q = normalize(cloud.rotations[src]);
        const float qv[4] = {q.w, q.x, q.y, q.z};
        if (level == 0) {
          for (size_t a = 0; a < 3; ++a)
            put<float>(sec, at + 4 * a, p[static_cast<int>(a)]),
                put<float>(sec, at + 12 + 4 * a, s[static_cast<int>(a)]);
          for (size_t k = 0; k < 4; ++k) put<float>(sec, at + 24 + 4 * k, qv[k]);
          out.expected.positions[dst] = p;
          out.expected.scales[dst] = s;
          out.expected.rotations[dst] = normalize(Quat{qv[0], qv[1], qv[2], qv[3]});
        } else {
          const double half_block = spec.block_size / 2.0;
          Vec3 ep, es;
          for (size_t a = 0; a < 3; ++a) {
            const double v =
                std::floor((p[static_cast<int>(a)] - centres[bk][a]) * (kRange / half_block) + 0.5) + kRange;
            const auto u = static_cast<uint16_t>(std::clamp(v, 0.0, 2.0 * kRange + 1));
            put<uint16_t>(sec, at + 2 * a, u);
            ep[static_cast<int>(a)] = static_cast<float>(
                (static_cast<double>(u) - kRange) * (half_block / kRange) + centres[bk][a]);
            const uint16_t hs = floatToHalf(s[static_cast<int>(a)]);
            put<uint16_t>(sec, at + 6 + 2 * a, hs);
            es[static_cast<int>(a)] = halfToFloat(hs);
          }
          float eq[4];
          for (size_t k = 0; k < 4; ++k) {
            const uint16_t hq = floatToHalf(qv[k]);
            put<uint16_t>(sec, at + 12 + 2 * k, hq);
            eq[k] = halfToFloat(hq);
          }
          out.expected.positions[dst] = ep;
          out.expected.scales[dst] = es;
          out.expected.rotations[dst] = normalize(Quat{eq[0], eq[1], eq[2], eq[3]});
        }
        const size_t colour = at + (level == 0 ? 40 : 20);
        auto src_sh = cloud.shOf(src);
        for (size_t k = 0; k < 3; ++k) {
          const auto b =
              static_cast<uint8_t>(std::clamp(std::floor((0.5f + kShC0 * src_sh[k]) * 255.0f), 0.0f, 255.0f));
          sec[colour + k] = b;
          out.expected.shOf(dst)[k] = colorToShDc(static_cast<float>(b) / 255.0f);
        }
        const auto ob =
            static_cast<uint8_t>(std::clamp(std::floor(cloud.opacities[src] * 255.0f), 0.0f, 255.0f));
        sec[colour + 3] = ob;
        out.expected.opacities[dst] = static_cast<float>(ob) / 255.0f;
        // SH: band by band, each band channel by channel (R of its coefficients, then G, then B).
        size_t component = 0;
        const size_t sh_at = colour + 4;
        const int band_first[4] = {0, 1, 4, 9};
        for (int band = 1; band <= spec.degree; ++band)
          for (int ch = 0; ch < 3; ++ch)
            for (int c = band_first[band]; c < band_first[band] + 2 * band + 1; ++c, ++component) {
              const float v =
                  c < shCoeffCount(cloud.sh_degree) ? src_sh[static_cast<size_t>(c * 3 + ch)] : 0.0f;
              float e = v;
              if (level == 0) {
                put<float>(sec, sh_at + 4 * component, v);
              } else if (level == 1) {
                const uint16_t hv = floatToHalf(v);
                put<uint16_t>(sec, sh_at + 2 * component, hv);
                e = halfToFloat(hv);
              } else {
                const float t = (std::clamp(v, sh_min, sh_max) - sh_min) / (sh_max - sh_min);
                const auto b = static_cast<uint8_t>(std::clamp(std::floor(t * 255.0f), 0.0f, 255.0f));
                sec[sh_at + component] = b;
                e = sh_min + static_cast<float>(b) / 255.0f * (sh_max - sh_min);
              }
              out.expected.shOf(dst)[static_cast<size_t>(c * 3 + ch)] = e;
            }
      }
    const size_t h = 4096 + 1024 * si;
    put<uint32_t>(header, h + 0, static_cast<uint32_t>(n));
    put<uint32_t>(header, h + 4, static_cast<uint32_t>(n));
    if (level > 0) {
      put<uint32_t>(header, h + 8, spec.bucket_size);
      put<uint32_t>(header, h + 12, static_cast<uint32_t>(buckets.size()));
      put<float>(header, h + 16, spec.block_size);
      put<uint16_t>(header, h + 20, 12);
      put<uint32_t>(header, h + 24, kRange);
      put<uint32_t>(header, h + 32, static_cast<uint32_t>(full));
      put<uint32_t>(header, h + 36, static_cast<uint32_t>(partial_count));
    }
    put<uint32_t>(header, h + 28, static_cast<uint32_t>(sec.size()));
    put<uint16_t>(header, h + 40, static_cast<uint16_t>(spec.degree));
    body.insert(body.end(), sec.begin(), sec.end());
    row += n;
  }
  out.bytes = header;
  out.bytes.insert(out.bytes.end(), body.begin(), body.end());
  return out;
}

void expectDecodes(const Built& b, const GaussianCloud& got, const std::string& label) {
  ASSERT_EQ(got.size(), b.expected.size()) << label;
  ASSERT_EQ(got.sh_degree, b.expected.sh_degree) << label;
  size_t bad = 0;
  std::string first;
  auto check = [&](size_t i, const std::string& what, float e, float g, float tol) {
    if (!(std::abs(e - g) <= tol * (1 + std::abs(e))) && bad++ == 0)
      first = "row " + std::to_string(i) + " " + what + ": expected " + std::to_string(e) + ", got " +
              std::to_string(g);
  };
  for (size_t i = 0; i < got.size(); ++i) {
    for (int a = 0; a < 3; ++a) {
      check(i, "position", b.expected.positions[i][a], got.positions[i][a], 1e-6f);
      check(i, "scale", b.expected.scales[i][a], got.scales[i][a], 0.0f);
    }
    const Quat e = b.expected.rotations[i], g = got.rotations[i];
    check(i, "rotation w", e.w, g.w, 1e-6f), check(i, "rotation x", e.x, g.x, 1e-6f);
    check(i, "rotation y", e.y, g.y, 1e-6f), check(i, "rotation z", e.z, g.z, 1e-6f);
    check(i, "opacity", b.expected.opacities[i], got.opacities[i], 0.0f);
    for (size_t k = 0; k < got.shOf(i).size(); ++k)
      check(i, "sh[" + std::to_string(k) + "]", b.expected.shOf(i)[k], got.shOf(i)[k], 1e-6f);
  }
  EXPECT_EQ(bad, 0u) << label << ": " << bad << " values differ from the stored ones; first: " << first;
}

using test::errorOf;

TEST(Ksplat, DecodesEveryCompressionLevelAndShDegree) {
  for (int level = 0; level <= 2; ++level)
    for (int degree = 0; degree <= 3; ++degree) {
      const GaussianCloud cloud =
          test::randomCloud(300, degree, static_cast<uint32_t>(100 + level * 4 + degree));
      const Built b = buildKsplat(cloud, level, {{0, 300, degree}});
      const std::string label = "level " + std::to_string(level) + ", SH degree " + std::to_string(degree);
      expectDecodes(b, readKsplat(b.bytes, "t.ksplat"), label);
    }
}

TEST(Ksplat, BucketsFullAndPartialAcrossSections) {
  const GaussianCloud cloud = test::randomCloud(500, 2, 120);
  // Small buckets and blocks: many full and many partially filled buckets; a second section of SH degree 0
  // and an empty third one.
  const Built b = buildKsplat(cloud, 1, {{0, 300, 2, 4, 0.3f}, {300, 500, 0, 7, 1.0f}, {500, 500, 1}});
  const GaussianCloud got = readKsplat(b.bytes, "sections.ksplat");
  expectDecodes(b, got, "three sections");
  for (size_t i = 300; i < 500; ++i)  // the degree-0 section has no higher coefficients
    for (size_t k = 3; k < 27; ++k) ASSERT_EQ(got.shOf(i)[k], 0.0f);
}

TEST(Ksplat, EightBitShUsesTheHeaderRange) {
  const GaussianCloud cloud = test::randomCloud(50, 1, 121);
  const Built b = buildKsplat(cloud, 2, {{0, 50, 1}}, -0.4f, 0.3f);
  expectDecodes(b, readKsplat(b.bytes, "range.ksplat"), "SH range [-0.4, 0.3]");
  // A zero range means the viewer's default of [-1.5, 1.5].
  const Built d = buildKsplat(cloud, 2, {{0, 50, 1}});
  Bytes zeroed = d.bytes;
  put<float>(zeroed, 36, 0.0f);
  put<float>(zeroed, 40, 0.0f);
  expectDecodes(d, readKsplat(zeroed, "default.ksplat"), "default SH range");
}

TEST(KsplatPeer, SplatTransform3ReadsTheSameValues) {
  SF_REQUIRE_PEER_TOOL(tool, "splat-transform-3/bin/cli.mjs");
  const std::string dir = test::tempDir("KsplatPeer");
  // Every section of a file has one SH degree, as GaussianSplats3D writes them. (splat-transform 3.7
  // misplaces the coefficients of a section whose degree is below the file's highest: it spaces the channels
  // by the section's coefficient count, not the file's; such files are covered by our own tests above.)
  const std::pair<int, int> runs[] = {{0, 3}, {1, 2}, {2, 1}, {2, 3}, {1, 0}};
  for (const auto& [level, degree] : runs) {
    const GaussianCloud cloud =
        test::randomCloud(400, degree, static_cast<uint32_t>(130 + level * 4 + degree));
    // Section sizes are multiples of 4 splats: the peer views each bucket table as a Float32Array, which
    // needs 4-byte alignment, and level 2's records are odd-sized (24 + 9 bytes at SH degree 1).
    const Built b = buildKsplat(
        cloud, level, {{0, 148, degree, 8, 0.4f}, {148, 260, degree}, {260, 400, degree, 32, 2.0f}});
    const std::string stem = dir + "/l" + std::to_string(level) + "d" + std::to_string(degree);
    const std::string in = stem + ".ksplat", out = stem + ".ply";
    writeFileAtomic(in, b.bytes);
    const LoadedSplats ours = loadSplats(in);
    EXPECT_EQ(ours.format, SplatFormat::kKsplat);
    expectDecodes(b, ours.cloud, "level " + std::to_string(level));
    ASSERT_TRUE(test::succeeded(test::runPeer("splat-transform-3/bin/cli.mjs", {"-q", "-w", in, out})));
    const LoadedSplats peer = loadSplats(out);
    ASSERT_EQ(peer.cloud.size(), ours.cloud.size());
    ASSERT_EQ(peer.cloud.sh_degree, ours.cloud.sh_degree);
    size_t bad = 0;
    std::string first;
    auto check = [&](size_t i, const char* what, float a, float p, float tol) {
      if (!(std::abs(a - p) <= tol * (1 + std::abs(a))) && bad++ == 0)
        first = "row " + std::to_string(i) + " " + what + ": ours " + std::to_string(a) + ", peer " +
                std::to_string(p);
    };
    for (size_t i = 0; i < ours.cloud.size(); ++i) {
      const GaussianCloud& o = ours.cloud;
      const GaussianCloud& p = peer.cloud;
      for (int a = 0; a < 3; ++a) {
        check(i, "position", o.positions[i][a], p.positions[i][a], 1e-6f);
        check(i, "scale", o.scales[i][a], p.scales[i][a], 1e-5f);
      }
      check(
          i, "rotation", 0.0f,
          std::min(
              std::abs(o.rotations[i].w - p.rotations[i].w) + std::abs(o.rotations[i].x - p.rotations[i].x) +
                  std::abs(o.rotations[i].y - p.rotations[i].y) +
                  std::abs(o.rotations[i].z - p.rotations[i].z),
              std::abs(o.rotations[i].w + p.rotations[i].w) + std::abs(o.rotations[i].x + p.rotations[i].x) +
                  std::abs(o.rotations[i].y + p.rotations[i].y) +
                  std::abs(o.rotations[i].z + p.rotations[i].z)),
          1e-5f);
      check(i, "opacity", o.opacities[i], p.opacities[i], 2e-6f);
      for (size_t k = 0; k < o.shOf(i).size(); ++k) check(i, "sh", o.shOf(i)[k], p.shOf(i)[k], 1e-5f);
    }
    EXPECT_EQ(bad, 0u) << "level " << level << ", SH degree " << degree << ": " << bad
                       << " values differ from splat-transform's; first: " << first;
  }
}

Built smallFile() {
  return buildKsplat(test::randomCloud(40, 1, 140), 1, {{0, 40, 1, 4, 1.0f}});
}

TEST(KsplatBadInput, EveryTruncatedPrefixIsRefused) {
  const Built b = smallFile();
  for (size_t n = 0; n < b.bytes.size(); ++n) {
    const Bytes prefix(b.bytes.begin(), b.bytes.begin() + static_cast<ptrdiff_t>(n));
    const std::string err = errorOf([&] { readKsplat(prefix, "cut.ksplat"); });
    ASSERT_NE(err.find("cut.ksplat: byte "), std::string::npos) << "prefix of " << n << " bytes: " << err;
  }
}

TEST(KsplatBadInput, HeaderAndSectionProblems) {
  const Built b = smallFile();
  const size_t sec = 4096;
  struct Case {
    const char* what;
    size_t at;
    std::function<void(Bytes&)> mutate;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"version 0.2", 0, [](Bytes& x) { x[1] = 2; }, "unsupported ksplat version 0.2"},
      {"version 1.1", 0, [](Bytes& x) { x[0] = 1; }, "unsupported ksplat version 1.1"},
      {"level 3", 20, [](Bytes& x) { put<uint16_t>(x, 20, 3); }, "unknown compression level 3"},
      {"many sections", 4, [](Bytes& x) { put<uint32_t>(x, 4, 1000000); }, "section headers end at byte"},
      {"count mismatch", 16, [](Bytes& x) { put<uint32_t>(x, 16, 41); },
       "header declares 41 splats, its sections hold 40"},
      {"over capacity", sec, [&](Bytes& x) { put<uint32_t>(x, sec, 41); }, "more than its capacity of 40"},
      {"SH degree 4", sec + 40, [&](Bytes& x) { put<uint16_t>(x, sec + 40, 4); }, "SH degree 4"},
      {"bucket record 16", sec + 20, [&](Bytes& x) { put<uint16_t>(x, sec + 20, 16); },
       "bucket record of 16 bytes"},
      {"block NaN", sec + 16, [&](Bytes& x) { put<float>(x, sec + 16, NAN); }, "is not a positive number"},
      {"too few buckets", sec + 32, [&](Bytes& x) { put<uint32_t>(x, sec + 32, 1000); }, "full and"},
      {"capacity past the end", sec, [&](Bytes& x) { put<uint32_t>(x, sec + 4, 4000000); },
       "past the end of the file"},
      {"non-finite SH range", 36, [](Bytes& x) { put<float>(x, 36, INFINITY); }, "is not finite"},
      {"full buckets of size 0", sec + 8, [&](Bytes& x) { put<uint32_t>(x, sec + 8, 0); },
       "full buckets of size 0"},
  };
  for (const Case& c : cases) {
    Bytes x = b.bytes;
    c.mutate(x);
    const std::string err = errorOf([&] { readKsplat(x, "bad.ksplat"); });
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.what << ": " << err;
    EXPECT_NE(err.find("bad.ksplat: byte " + std::to_string(c.at) + ":"), std::string::npos)
        << c.what << ": " << err;
  }
  // Partially filled bucket lengths that do not cover the section's splats.
  const uint32_t full = [&] {
    uint32_t v;
    std::memcpy(&v, &b.bytes[sec + 32], 4);
    return v;
  }();
  uint32_t partial;
  std::memcpy(&partial, &b.bytes[sec + 36], 4);
  ASSERT_GT(partial, 0u) << "fixture should have partially filled buckets (" << full << " full)";
  Bytes x = b.bytes;
  for (uint32_t k = 0; k < partial; ++k) put<uint32_t>(x, 4096 + 1024 + 4 * k, 0);
  const std::string err = errorOf([&] { readKsplat(x, "lengths.ksplat"); });
  EXPECT_NE(err.find("lies in none of its"), std::string::npos) << err;
}

TEST(KsplatBadInput, RandomCorruptionDecodesOrThrows) {
  const Built b = smallFile();
  std::mt19937 rng(150);
  for (int trial = 0; trial < 400; ++trial) {
    Bytes x = b.bytes;
    // Mostly the headers and bucket table, where a change moves everything else.
    for (int k = 0; k < 3; ++k) {
      const size_t at =
          trial % 2 ? 4096 + rng() % (x.size() - 4096) : rng() % 48 + (trial % 4 == 0 ? 4096 : 0);
      x[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    try {
      readKsplat(x, "fuzz.ksplat");
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("fuzz.ksplat"), std::string::npos) << e.what();
    }
  }
}

TEST(KsplatBadInput, LimitsAreCheckedBeforeAllocating) {
  const Built b = smallFile();
  const LoadLimits saved = loadLimits();
  LoadLimits l = saved;
  l.max_gaussians = 10;
  setLoadLimits(l);
  const std::string err = errorOf([&] { readKsplat(b.bytes, "big.ksplat"); });
  setLoadLimits(saved);
  EXPECT_NE(err.find("declares 40 gaussians"), std::string::npos) << err;
}

TEST(KsplatFormats, DetectionAndWriting) {
  const Built b = smallFile();
  const LoadedSplats l = decodeSplats(b.bytes, "dir/scene.KSPLAT");
  EXPECT_EQ(l.format, SplatFormat::kKsplat);
  EXPECT_STREQ(formatName(SplatFormat::kKsplat), "ksplat");
  const std::string err = errorOf([&] { writeFormatForPath("out.ksplat"); });
  EXPECT_NE(err.find("read-only"), std::string::npos) << err;
}

}  // namespace
}  // namespace sf
