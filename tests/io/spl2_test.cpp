// SPL2, the splat-hull file (io/spl2.h, docs/formats/spl2.md).
//
// What is tested:
//  * the encoder against an independent reader written here from the article's GDScript loader (plain memcpy
//  at
//    computed offsets), and the decoder against an independent writer that lays a file out byte by byte;
//  * round trips: encode/decode (bit-exact, the same bytes again), spl2ToCloud -> cloudToSpl2, and
//    SPL2 -> PLY -> SPL2 through saveSplats / loadSplats;
//  * the helpers: core radius, bucket cameras and buckets, shell orders (permutations, back to front);
//  * untrusted input: every truncation, corrupt counts (huge, negative) refused before allocating, orders
//  that
//    are not permutations, every CHNK check, trailing bytes, attrs that are not bytes, non-finite values,
//    random corruption; each error is a FormatError at the offending byte;
//  * files without CHNK, and the CHNK-less prefix of a file with one;
//  * the format dispatch: detection by magic, writing by extension, exportLosses.
#include "io/spl2.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/math.h"
#include "io/file.h"
#include "io/formats.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

struct ScopedLimits {
  LoadLimits saved = loadLimits();
  explicit ScopedLimits(const LoadLimits& l) { setLoadLimits(l); }
  ~ScopedLimits() { setLoadLimits(saved); }
};

// =====================================================================================================
// Test hulls
// =====================================================================================================

float uniform(std::mt19937& rng, float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(rng);
}
int integer(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

Vec3 randomUnit(std::mt19937& rng) {
  for (;;) {
    const Vec3 v{uniform(rng, -1, 1), uniform(rng, -1, 1), uniform(rng, -1, 1)};
    const float l = length(v);
    if (l > 0.2f && l < 1.0f) return v / l;
  }
}

// The chunk table as the header defines it, computed here in double: centroid = mean centre, radius = largest
// distance from it, area = sum of pi * sigma0 * sigma1 (the gaussian sigmas: |ax| / 3, the core's divided by
// spl2CoreRadius too), part = the most frequent attrs.y / 16 (ties: lowest), material = the members'.
std::vector<Spl2Chunk> referenceChunks(const Spl2Hull& h, size_t n_chunks) {
  struct Acc {
    double sum[3] = {0, 0, 0}, area = 0;
    uint32_t count = 0, parts[8] = {};
    uint8_t material = 0;
  };
  std::vector<Acc> acc(n_chunks);
  std::vector<Vec3> pos;
  for (const Spl2Block* b : {&h.core, &h.shell})
    for (size_t i = 0; i < b->size(); ++i) {
      const size_t k = pos.size();
      Acc& a = acc[h.chunk_of[k]];
      const Vec3 p = b->pos[i];
      pos.push_back(p);
      for (int d = 0; d < 3; ++d) a.sum[d] += static_cast<double>(p[d]);
      const double r = b == &h.core ? static_cast<double>(spl2CoreRadius(b->opacity[i])) : 1.0;
      a.area += std::numbers::pi * (static_cast<double>(length(b->ax0[i])) / 3.0 / r) *
                (static_cast<double>(length(b->ax1[i])) / 3.0 / r);
      ++a.count;
      ++a.parts[std::min(static_cast<int>(b->attrs[i][1]) / 16, 7)];
      a.material = h.material_of[k];
    }
  std::vector<Spl2Chunk> out(n_chunks);
  for (size_t c = 0; c < n_chunks; ++c) {
    Spl2Chunk& k = out[c];
    const Acc& a = acc[c];
    k.count = a.count;
    k.material = a.material;
    k.area = static_cast<float>(a.area);
    for (int d = 0; d < 3; ++d) k.centroid[d] = static_cast<float>(a.sum[d] / a.count);
    uint8_t best = 0;
    for (uint8_t p = 1; p < 8; ++p)
      if (a.parts[p] > a.parts[best]) best = p;
    k.part = best;
  }
  for (size_t i = 0; i < pos.size(); ++i) {
    Spl2Chunk& k = out[h.chunk_of[i]];
    const double dx = static_cast<double>(pos[i].x) - k.centroid.x,
                 dy = static_cast<double>(pos[i].y) - k.centroid.y,
                 dz = static_cast<double>(pos[i].z) - k.centroid.z;
    k.radius = std::max(k.radius, static_cast<float>(std::sqrt(dx * dx + dy * dy + dz * dz)));
  }
  return out;
}

// A valid hull as the bake would write it: in-plane axes orthogonal, unit outward normals along ax0 x ax1
// (either side), core opacities above 0.9, byte-valued attrs (part * 16 + emission), orders for 41 degrees,
// and with `chunks` > 0 a CHNK tail in which every chunk has members and one material.
Spl2Hull makeHull(size_t n_core, size_t n_shell, int n_buckets, int chunks, uint32_t seed) {
  std::mt19937 rng(seed);
  Spl2Hull h;
  h.core.resize(n_core);
  h.shell.resize(n_shell);
  for (Spl2Block* b : {&h.core, &h.shell})
    for (size_t i = 0; i < b->size(); ++i) {
      const bool core = b == &h.core;
      const Vec3 n = randomUnit(rng);
      Vec3 e0 = normalize(cross(n, randomUnit(rng)));
      const Vec3 e1 = cross(n, e0);
      const float op = core ? uniform(rng, 0.91f, 0.99f) : uniform(rng, 0.05f, 0.89f);
      const float factor = 3.0f * (core ? spl2CoreRadius(op) : 1.0f);
      b->pos[i] = {uniform(rng, -0.8f, 0.8f), uniform(rng, -0.8f, 0.8f), uniform(rng, -0.8f, 0.8f)};
      const float s0 = uniform(rng, 0.004f, 0.04f), s1 = uniform(rng, 0.004f, 0.04f);
      b->ax0[i] = e0 * (s0 * factor);
      b->ax1[i] = e1 * (s1 * factor);
      b->normal[i] = integer(rng, 0, 1) ? n : -n;
      b->color[i] = {uniform(rng, 0, 1), uniform(rng, 0, 1), uniform(rng, 0, 1)};
      b->opacity[i] = op;
      b->attrs[i] = {static_cast<float>(integer(rng, 0, 255)),
                     static_cast<float>(integer(rng, 0, 7) * 16 + integer(rng, 0, 15)),
                     static_cast<float>(integer(rng, 0, 3)), static_cast<float>(integer(rng, 0, 255))};
    }
  h.orders = spl2ShellOrders(h.shell.pos, n_buckets, 41.0f);
  if (chunks > 0) {
    const size_t n = h.size();
    h.has_chunks = true;
    h.chunk_of.resize(n);
    h.material_of.resize(n);
    for (size_t i = 0; i < n; ++i) {
      h.chunk_of[i] = static_cast<uint16_t>(i % static_cast<size_t>(chunks));
      h.material_of[i] = static_cast<uint8_t>((h.chunk_of[i] * 5u + 1u) % 6u);
    }
    h.chunks = referenceChunks(h, static_cast<size_t>(chunks));
  }
  return h;
}

// =====================================================================================================
// The independent reader: the article's GDScript loader, memcpy at offsets; then the CHNK tail as specified.
// =====================================================================================================

struct IndependentPart {
  std::vector<float> pos, ax0, ax1, normal, color, opacity, attrs;
};
struct IndependentFile {
  int32_t n_core = 0, n_shell = 0, n_buckets = 0;
  IndependentPart core, shell;
  std::vector<std::vector<int32_t>> orders;
  bool chnk = false;
  uint32_t version = 0, n_chunks = 0, n_splats = 0;
  std::vector<uint16_t> packed;
  struct Record {
    float centroid[3], radius, area;
    uint32_t count;
    uint8_t material, part;
    uint16_t reserved;
  };
  std::vector<Record> records;
  size_t end = 0;  // where reading stopped
};

template <typename T>
T at(const Bytes& buf, size_t offset) {
  T v;
  EXPECT_LE(offset + sizeof(T), buf.size());
  std::memcpy(&v, buf.data() + offset, sizeof(T));
  return v;
}

template <typename T>
std::vector<T> slice(const Bytes& buf, size_t from, size_t to) {  // buf.slice(from, to).to_*_array()
  EXPECT_LE(to, buf.size());
  std::vector<T> out((to - from) / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), buf.data() + from, to - from);
  return out;
}

IndependentFile readIndependent(const Bytes& buf) {
  IndependentFile f;
  EXPECT_EQ(std::string(buf.begin(), buf.begin() + 4), "SPL2");
  f.n_core = at<int32_t>(buf, 4);
  f.n_shell = at<int32_t>(buf, 8);
  f.n_buckets = at<int32_t>(buf, 12);
  size_t off = 16;
  for (IndependentPart* part : {&f.core, &f.shell}) {
    const size_t n = static_cast<size_t>(part == &f.core ? f.n_core : f.n_shell);
    for (std::vector<float>* field : {&part->pos, &part->ax0, &part->ax1, &part->normal, &part->color}) {
      *field = slice<float>(buf, off, off + n * 12);
      off += n * 12;
    }
    part->opacity = slice<float>(buf, off, off + n * 4);
    off += n * 4;
    part->attrs = slice<float>(buf, off, off + n * 16);
    off += n * 16;
  }
  for (int32_t b = 0; b < f.n_buckets; ++b) {
    f.orders.push_back(slice<int32_t>(buf, off, off + static_cast<size_t>(f.n_shell) * 4));
    off += static_cast<size_t>(f.n_shell) * 4;
  }
  if (off + 4 <= buf.size() && std::memcmp(buf.data() + off, "CHNK", 4) == 0) {
    f.chnk = true;
    f.version = at<uint32_t>(buf, off + 4);
    f.n_chunks = at<uint32_t>(buf, off + 8);
    f.n_splats = at<uint32_t>(buf, off + 12);
    off += 16;
    f.packed = slice<uint16_t>(buf, off, off + 2 * size_t{f.n_splats});
    off += 2 * size_t{f.n_splats};
    while (off % 4 != 0) {
      EXPECT_EQ(buf[off], 0) << "padding at byte " << off;
      ++off;
    }
    for (uint32_t c = 0; c < f.n_chunks; ++c) {
      IndependentFile::Record r{};
      for (int k = 0; k < 3; ++k) r.centroid[k] = at<float>(buf, off + 4 * static_cast<size_t>(k));
      r.radius = at<float>(buf, off + 12);
      r.area = at<float>(buf, off + 16);
      r.count = at<uint32_t>(buf, off + 20);
      r.material = buf[off + 24];
      r.part = buf[off + 25];
      r.reserved = at<uint16_t>(buf, off + 26);
      f.records.push_back(r);
      off += 28;
    }
  }
  f.end = off;
  return f;
}

void expectMatches(const IndependentFile& f, const Spl2Hull& h) {
  ASSERT_EQ(static_cast<size_t>(f.n_core), h.core.size());
  ASSERT_EQ(static_cast<size_t>(f.n_shell), h.shell.size());
  ASSERT_EQ(static_cast<size_t>(f.n_buckets), h.orders.size());
  for (int p = 0; p < 2; ++p) {
    const IndependentPart& part = p == 0 ? f.core : f.shell;
    const Spl2Block& b = p == 0 ? h.core : h.shell;
    for (size_t i = 0; i < b.size(); ++i) {
      const std::pair<const std::vector<float>*, const std::vector<Vec3>*> fields[] = {
          {&part.pos, &b.pos},
          {&part.ax0, &b.ax0},
          {&part.ax1, &b.ax1},
          {&part.normal, &b.normal},
          {&part.color, &b.color}};
      for (const auto& [file, hull] : fields)
        for (int k = 0; k < 3; ++k)
          ASSERT_EQ((*file)[3 * i + static_cast<size_t>(k)], (*hull)[i][k]) << "part " << p << " row " << i;
      ASSERT_EQ(part.opacity[i], b.opacity[i]);
      for (size_t k = 0; k < 4; ++k) ASSERT_EQ(part.attrs[4 * i + k], b.attrs[i][k]);
    }
  }
  for (size_t b = 0; b < h.orders.size(); ++b) ASSERT_EQ(f.orders[b], h.orders[b]) << "bucket " << b;
  ASSERT_EQ(f.chnk, h.has_chunks);
  if (!h.has_chunks) return;
  EXPECT_EQ(f.version, 1u);
  ASSERT_EQ(f.n_chunks, h.chunks.size());
  ASSERT_EQ(f.n_splats, h.size());
  for (size_t i = 0; i < h.size(); ++i)
    ASSERT_EQ(f.packed[i], 1 + h.chunk_of[i] * 8 + h.material_of[i]) << "splat " << i;
  for (size_t c = 0; c < h.chunks.size(); ++c) {
    const auto& r = f.records[c];
    const Spl2Chunk& k = h.chunks[c];
    for (int d = 0; d < 3; ++d) EXPECT_EQ(r.centroid[d], k.centroid[d]);
    EXPECT_EQ(r.radius, k.radius);
    EXPECT_EQ(r.area, k.area);
    EXPECT_EQ(r.count, k.count);
    EXPECT_EQ(r.material, k.material);
    EXPECT_EQ(r.part, k.part);
    EXPECT_EQ(r.reserved, 0);
  }
}

// Bit-exact equality of two hulls.
void expectSameHull(const Spl2Hull& a, const Spl2Hull& b) {
  ASSERT_EQ(a.core.size(), b.core.size());
  ASSERT_EQ(a.shell.size(), b.shell.size());
  for (int p = 0; p < 2; ++p) {
    const Spl2Block& x = p == 0 ? a.core : a.shell;
    const Spl2Block& y = p == 0 ? b.core : b.shell;
    for (size_t i = 0; i < x.size(); ++i)
      for (int k = 0; k < 3; ++k) {
        ASSERT_EQ(x.pos[i][k], y.pos[i][k]);
        ASSERT_EQ(x.ax0[i][k], y.ax0[i][k]);
        ASSERT_EQ(x.ax1[i][k], y.ax1[i][k]);
        ASSERT_EQ(x.normal[i][k], y.normal[i][k]);
        ASSERT_EQ(x.color[i][k], y.color[i][k]);
      }
    EXPECT_EQ(x.opacity, y.opacity);
    EXPECT_EQ(x.attrs, y.attrs);
  }
  EXPECT_EQ(a.orders, b.orders);
  ASSERT_EQ(a.has_chunks, b.has_chunks);
  EXPECT_EQ(a.chunk_of, b.chunk_of);
  EXPECT_EQ(a.material_of, b.material_of);
  ASSERT_EQ(a.chunks.size(), b.chunks.size());
  for (size_t c = 0; c < a.chunks.size(); ++c) {
    for (int d = 0; d < 3; ++d) EXPECT_EQ(a.chunks[c].centroid[d], b.chunks[c].centroid[d]);
    EXPECT_EQ(a.chunks[c].radius, b.chunks[c].radius);
    EXPECT_EQ(a.chunks[c].area, b.chunks[c].area);
    EXPECT_EQ(a.chunks[c].count, b.chunks[c].count);
    EXPECT_EQ(a.chunks[c].material, b.chunks[c].material);
    EXPECT_EQ(a.chunks[c].part, b.chunks[c].part);
  }
}

// Equality after a conversion: pos, normal, opacity (to `opacity_tol`), attrs, CHNK's integers and the chunk
// table's centroids and radii (from the exact positions) exact; axes, colours and areas to ~1e-5 relative.
void expectCloseHull(const Spl2Hull& want, const Spl2Hull& got, float opacity_tol) {
  ASSERT_EQ(want.core.size(), got.core.size());
  ASSERT_EQ(want.shell.size(), got.shell.size());
  auto close = [](Vec3 a, Vec3 b, float scale) { return length(a - b) <= 1e-5f * scale + 1e-9f; };
  for (int p = 0; p < 2; ++p) {
    const Spl2Block& x = p == 0 ? want.core : want.shell;
    const Spl2Block& y = p == 0 ? got.core : got.shell;
    for (size_t i = 0; i < x.size(); ++i) {
      SCOPED_TRACE(std::string(p == 0 ? "core" : "shell") + " row " + std::to_string(i));
      for (int k = 0; k < 3; ++k) {
        ASSERT_EQ(x.pos[i][k], y.pos[i][k]);
        ASSERT_EQ(x.normal[i][k], y.normal[i][k]);
      }
      EXPECT_TRUE(close(x.ax0[i], y.ax0[i], length(x.ax0[i])));
      EXPECT_TRUE(close(x.ax1[i], y.ax1[i], length(x.ax1[i])));
      EXPECT_TRUE(close(x.color[i], y.color[i], 1.0f));
      EXPECT_NEAR(x.opacity[i], y.opacity[i], opacity_tol);
      EXPECT_EQ(x.attrs[i], y.attrs[i]);
    }
  }
  EXPECT_EQ(want.orders, got.orders);
  ASSERT_EQ(want.has_chunks, got.has_chunks);
  EXPECT_EQ(want.chunk_of, got.chunk_of);
  EXPECT_EQ(want.material_of, got.material_of);
  ASSERT_EQ(want.chunks.size(), got.chunks.size());
  for (size_t c = 0; c < want.chunks.size(); ++c) {
    const Spl2Chunk &a = want.chunks[c], &b = got.chunks[c];
    for (int d = 0; d < 3; ++d)
      EXPECT_EQ(a.centroid[d], b.centroid[d]) << "chunk " << c;  // from exact positions
    EXPECT_EQ(a.radius, b.radius) << "chunk " << c;
    EXPECT_NEAR(a.area, b.area, 1e-5f * a.area) << "chunk " << c;
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(a.material, b.material);
    EXPECT_EQ(a.part, b.part);
  }
}

// The FormatError decodeSpl2 throws for `bytes` (fails the test when it throws none or another type).
FormatError decodeError(const Bytes& bytes, const std::string& path = "bad.spl2") {
  try {
    decodeSpl2(bytes, path);
  } catch (const FormatError& e) {
    return e;
  }
  ADD_FAILURE() << "decodeSpl2 accepted the file";
  return FormatError(path, ~uint64_t{0}, "(no error)");
}

template <typename T>
void poke(Bytes& b, size_t offset, T v) {
  ASSERT_LE(offset + sizeof(T), b.size());
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

// Offsets of a file's parts (from its counts).
struct Layout {
  size_t n_core, n_shell, n_buckets;
  size_t block(int part) const { return 16 + (part == 0 ? 0 : n_core * 80); }
  // Field f (0 pos, 1 ax0, 2 ax1, 3 normal, 4 color, 5 opacity, 6 attrs) of part p.
  size_t field(int p, int f) const {
    const size_t n = p == 0 ? n_core : n_shell;
    return block(p) + (f <= 5 ? static_cast<size_t>(f) * 12 * n : 5 * 12 * n + 4 * n);
  }
  size_t orders() const { return 16 + (n_core + n_shell) * 80; }
  size_t tail() const { return orders() + n_buckets * n_shell * 4; }
  size_t packed() const { return tail() + 16; }
  size_t records() const { return packed() + ((n_core + n_shell) * 2 + 3) / 4 * 4; }
};
Layout layoutOf(const Spl2Hull& h) {
  return {h.core.size(), h.shell.size(), h.orders.size()};
}

// =====================================================================================================
// Encoder vs the independent reader; decoder vs the independent writer
// =====================================================================================================

TEST(Spl2, IndependentReaderReadsWhatTheEncoderWrites) {
  for (int chunks : {0, 1, 5}) {
    SCOPED_TRACE("chunks " + std::to_string(chunks));
    const Spl2Hull h = makeHull(5, 12, kSpl2Buckets, chunks, 7u + static_cast<uint32_t>(chunks));
    const Bytes bytes = encodeSpl2(h);
    const IndependentFile f = readIndependent(bytes);
    EXPECT_EQ(f.end, bytes.size()) << "the file ends where the loader stops";
    expectMatches(f, h);
  }
  // An even splat count: no padding before the records.
  const Spl2Hull even = makeHull(2, 4, 3, 2, 99);
  const Bytes b = encodeSpl2(even);
  EXPECT_EQ(b.size(), layoutOf(even).records() + 2 * 28);
  EXPECT_EQ(layoutOf(even).records(), layoutOf(even).packed() + 12);
  expectMatches(readIndependent(b), even);
}

// A file laid out by hand, every value at its offset: 3 core and 2 shell splats (an odd total: 2 padding
// bytes), 2 buckets, and a CHNK tail of 2 chunks.
TEST(Spl2, DecoderReadsAFileWrittenByHand) {
  const size_t n_core = 3, n_shell = 2, n_buckets = 2, n = n_core + n_shell;
  const size_t orders_at = 16 + n * 80, tail_at = orders_at + n_buckets * n_shell * 4;
  const size_t packed_at = tail_at + 16, records_at = packed_at + 12;  // 5 * 2 = 10 bytes + 2 padding
  Bytes f(records_at + 2 * 28, 0);
  std::memcpy(f.data(), "SPL2", 4);
  poke<int32_t>(f, 4, 3);
  poke<int32_t>(f, 8, 2);
  poke<int32_t>(f, 12, 2);
  // Value v of field `field` (0..4: vectors, 5 opacity, 6 attrs) of splat i of a part, and what it must read
  // as.
  auto value = [](int part, int field, size_t i, int k) {
    return static_cast<float>(part * 1000 + field * 100) + static_cast<float>(i) +
           0.125f * static_cast<float>(k);
  };
  auto attr = [](int part, size_t i, int k) {
    return static_cast<float>(part * 100 + static_cast<int>(i) * 10 + k);
  };
  size_t off = 16;
  for (int part = 0; part < 2; ++part) {
    const size_t count = part == 0 ? n_core : n_shell;
    for (int field = 0; field < 5; ++field)
      for (size_t i = 0; i < count; ++i)
        for (int k = 0; k < 3; ++k, off += 4) poke<float>(f, off, value(part, field, i, k));
    for (size_t i = 0; i < count; ++i, off += 4) poke<float>(f, off, 0.25f * static_cast<float>(i + 1));
    for (size_t i = 0; i < count; ++i)
      for (int k = 0; k < 4; ++k, off += 4) poke<float>(f, off, attr(part, i, k));
  }
  ASSERT_EQ(off, orders_at);
  poke<int32_t>(f, orders_at, 1);  // bucket 0: 1, 0
  poke<int32_t>(f, orders_at + 4, 0);
  poke<int32_t>(f, orders_at + 8, 0);  // bucket 1: 0, 1
  poke<int32_t>(f, orders_at + 12, 1);
  std::memcpy(f.data() + tail_at, "CHNK", 4);
  poke<uint32_t>(f, tail_at + 4, 1);
  poke<uint32_t>(f, tail_at + 8, 2);
  poke<uint32_t>(f, tail_at + 12, 5);
  const uint16_t chunk[5] = {0, 1, 1, 0, 1};
  const uint8_t material[2] = {3, 5};
  for (size_t i = 0; i < n; ++i)
    poke<uint16_t>(f, packed_at + 2 * i, static_cast<uint16_t>(1 + chunk[i] * 8 + material[chunk[i]]));
  for (size_t c = 0; c < 2; ++c) {
    const size_t r = records_at + 28 * c;
    poke<float>(f, r, 0.5f + static_cast<float>(c));
    poke<float>(f, r + 4, -1.0f);
    poke<float>(f, r + 8, 2.0f);
    poke<float>(f, r + 12, 0.75f);
    poke<float>(f, r + 16, 0.01f * static_cast<float>(c + 1));
    poke<uint32_t>(f, r + 20, c == 0 ? 2u : 3u);
    f[r + 24] = material[c];
    f[r + 25] = static_cast<uint8_t>(6 + c);
  }

  const Spl2Hull h = decodeSpl2(f, "hand.spl2");
  ASSERT_EQ(h.core.size(), n_core);
  ASSERT_EQ(h.shell.size(), n_shell);
  for (int part = 0; part < 2; ++part) {
    const Spl2Block& b = part == 0 ? h.core : h.shell;
    const std::vector<Vec3>* fields[5] = {&b.pos, &b.ax0, &b.ax1, &b.normal, &b.color};
    for (size_t i = 0; i < b.size(); ++i) {
      for (int field = 0; field < 5; ++field)
        for (int k = 0; k < 3; ++k)
          EXPECT_EQ((*fields[field])[i][k], value(part, field, i, k)) << part << " " << field << " " << i;
      EXPECT_EQ(b.opacity[i], 0.25f * static_cast<float>(i + 1));
      for (size_t k = 0; k < 4; ++k) EXPECT_EQ(b.attrs[i][k], attr(part, i, static_cast<int>(k)));
    }
  }
  ASSERT_EQ(h.orders.size(), 2u);
  EXPECT_EQ(h.orders[0], (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(h.orders[1], (std::vector<int32_t>{0, 1}));
  ASSERT_TRUE(h.has_chunks);
  EXPECT_EQ(h.chunk_of, (std::vector<uint16_t>{0, 1, 1, 0, 1}));
  EXPECT_EQ(h.material_of, (std::vector<uint8_t>{3, 5, 5, 3, 5}));
  ASSERT_EQ(h.chunks.size(), 2u);
  EXPECT_EQ(h.chunks[1].centroid.x, 1.5f);
  EXPECT_EQ(h.chunks[1].centroid.y, -1.0f);
  EXPECT_EQ(h.chunks[1].centroid.z, 2.0f);
  EXPECT_EQ(h.chunks[1].radius, 0.75f);
  EXPECT_EQ(h.chunks[1].area, 0.02f);
  EXPECT_EQ(h.chunks[0].count, 2u);
  EXPECT_EQ(h.chunks[1].count, 3u);
  EXPECT_EQ(h.chunks[1].material, 5);
  EXPECT_EQ(h.chunks[1].part, 7);
  // And the encoder writes exactly these bytes back.
  EXPECT_EQ(encodeSpl2(h), f);
}

// =====================================================================================================
// Round trips
// =====================================================================================================

TEST(Spl2, EncodeDecodeIsExact) {
  for (int chunks : {0, 3}) {
    const Spl2Hull h = makeHull(9, 17, kSpl2Buckets, chunks, 21);
    const Bytes bytes = encodeSpl2(h);
    const Spl2Hull back = decodeSpl2(bytes, "x.spl2");
    expectSameHull(h, back);
    EXPECT_EQ(encodeSpl2(back), bytes);
  }
  // Empty hulls, with and without buckets.
  for (int buckets : {0, 64}) {
    Spl2Hull e;
    e.orders.resize(static_cast<size_t>(buckets));
    const Bytes b = encodeSpl2(e);
    EXPECT_EQ(b.size(), 16u);
    const Spl2Hull back = decodeSpl2(b, "e.spl2");
    EXPECT_EQ(back.size(), 0u);
    EXPECT_EQ(back.orders.size(), static_cast<size_t>(buckets));
  }
}

TEST(Spl2, SaveAndLoad) {
  const std::string dir = test::tempDir("Spl2.SaveAndLoad");
  const Spl2Hull h = makeHull(4, 6, kSpl2Buckets, 2, 5);
  const std::string path = dir + "/hull.spl2";
  saveSpl2(h, path);
  expectSameHull(h, loadSpl2(path));
  Spl2Hull broken = h;
  broken.shell.attrs[0][0] = 1.5f;
  const std::string err = test::errorOf([&] { saveSpl2(broken, path); });
  EXPECT_NE(err.find(path), std::string::npos) << err;
  expectSameHull(h, loadSpl2(path));  // untouched
}

TEST(Spl2, ToCloudFollowsTheConventions) {
  const Spl2Hull h = makeHull(3, 4, 8, 2, 13);
  const GaussianCloud c = spl2ToCloud(h);
  ASSERT_EQ(c.size(), 7u);
  EXPECT_EQ(c.sh_degree, 0);
  EXPECT_EQ(c.color_space, ColorSpace::kSrgb);
  ASSERT_EQ(c.normals.size(), 7u);
  const char* names[] = {"hull_core", "hull_ao",    "hull_packed",  "hull_damage",
                         "hull_seed", "hull_chunk", "hull_material"};
  ASSERT_EQ(c.extras.size(), 7u);
  for (size_t k = 0; k < 7; ++k) {
    EXPECT_EQ(c.extras[k].name, names[k]);
    EXPECT_EQ(c.extras[k].type, k == 5 ? ScalarType::kUint16 : ScalarType::kUint8) << names[k];
  }
  for (size_t i = 0; i < 7; ++i) {
    const bool core = i < 3;
    const Spl2Block& b = core ? h.core : h.shell;
    const size_t j = core ? i : i - 3;
    const float r = core ? spl2CoreRadius(b.opacity[j]) : 1.0f;
    EXPECT_EQ(c.positions[i].x, b.pos[j].x);
    EXPECT_NEAR(c.scales[i].x, length(b.ax0[j]) / 3.0f / r, 1e-6f);
    EXPECT_NEAR(c.scales[i].y, length(b.ax1[j]) / 3.0f / r, 1e-6f);
    EXPECT_FLOAT_EQ(c.scales[i].z, 0.1f * std::min(c.scales[i].x, c.scales[i].y));
    const Mat3 rot = rotationMatrix(c.rotations[i]);
    EXPECT_GT(dot(rot.col(0), normalize(b.ax0[j])), 0.99999f);
    EXPECT_GT(dot(rot.col(1), normalize(b.ax1[j])), 0.99999f);
    EXPECT_GT(std::fabs(dot(rot.col(2), b.normal[j])), 0.99999f);
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(0.5f + 0.28209479177387814f * c.sh[3 * i + static_cast<size_t>(k)], b.color[j][k], 1e-6f);
    EXPECT_EQ(c.opacities[i], b.opacity[j]);
    EXPECT_EQ(c.normals[i].x, b.normal[j].x);
    EXPECT_EQ(c.extras[0].values[i], core ? 1.0 : 0.0);
    for (size_t k = 0; k < 4; ++k) EXPECT_EQ(c.extras[1 + k].values[i], static_cast<double>(b.attrs[j][k]));
    EXPECT_EQ(c.extras[5].values[i], h.chunk_of[i]);
    EXPECT_EQ(c.extras[6].values[i], h.material_of[i]);
  }
  EXPECT_EQ(spl2ToCloud(makeHull(2, 2, 4, 0, 1)).extras.size(), 5u) << "no CHNK: no chunk channels";
}

TEST(Spl2, CloudRoundTripReproducesTheHull) {
  for (int chunks : {0, 1, 4}) {
    SCOPED_TRACE("chunks " + std::to_string(chunks));
    const Spl2Hull h = makeHull(11, 23, kSpl2Buckets, chunks, 31u + static_cast<uint32_t>(chunks));
    const Spl2Hull back = cloudToSpl2(spl2ToCloud(h));
    expectCloseHull(h, back, 0.0f);
  }
  // The core by opacity when hull_core is absent: every core opacity of makeHull is above 0.9, every shell
  // one below.
  const Spl2Hull h = makeHull(6, 8, kSpl2Buckets, 0, 3);
  GaussianCloud c = spl2ToCloud(h);
  c.extras.erase(c.extras.begin());
  expectCloseHull(h, cloudToSpl2(c), 0.0f);
}

TEST(Spl2, CloudToSpl2FromAPlainCloud) {
  GaussianCloud c = test::randomCloud(40, 2, 17);
  c.opacities[3] = 0.95f;
  const Spl2Hull h = cloudToSpl2(c, 30.0f);
  EXPECT_FALSE(h.has_chunks);
  ASSERT_EQ(h.size(), 40u);
  size_t want_core = 0;
  for (float o : c.opacities) want_core += o > 0.9f ? 1 : 0;
  EXPECT_EQ(h.core.size(), want_core);
  EXPECT_GE(h.core.size(), 1u);
  EXPECT_EQ(h.orders, spl2ShellOrders(h.shell.pos, kSpl2Buckets, 30.0f));
  // Shell splat j is gaussian i (cloud order, core left out): its two largest axes, 3 sigma long, in axis
  // order.
  size_t j = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.opacities[i] > 0.9f) continue;
    const Vec3 s = c.scales[i];
    const Mat3 rot = rotationMatrix(c.rotations[i]);
    int drop = 2;
    for (int a = 1; a >= 0; --a)
      if (s[a] < s[drop]) drop = a;
    const int a0 = drop == 0 ? 1 : 0, a1 = drop == 2 ? 1 : 2;
    EXPECT_NEAR(length(h.shell.ax0[j] - rot.col(a0) * (3 * s[a0])), 0.0f, 1e-6f);
    EXPECT_NEAR(length(h.shell.ax1[j] - rot.col(a1) * (3 * s[a1])), 0.0f, 1e-6f);
    EXPECT_NEAR(length(h.shell.normal[j] - rot.col(drop)), 0.0f, 1e-6f);
    EXPECT_EQ(h.shell.attrs[j][0], 255.0f);
    EXPECT_EQ(h.shell.attrs[j][1], 0.0f);
    EXPECT_EQ(h.shell.attrs[j][2], 0.0f);
    ++j;
  }
  EXPECT_NO_THROW(decodeSpl2(encodeSpl2(h), "plain.spl2"));
  // Chunk channels that do not form a CHNK table are refused.
  GaussianCloud bad = spl2ToCloud(makeHull(3, 3, 4, 2, 9));
  bad.extras[6].values[0] =
      bad.extras[6].values[0] == 0 ? 1 : 0;  // a splat whose material differs from its chunk's
  EXPECT_NE(test::errorOf([&] { cloudToSpl2(bad); }).find("a chunk has one material"), std::string::npos);
  bad = spl2ToCloud(makeHull(3, 3, 4, 2, 9));
  bad.extras[5].values[1] = 256;
  EXPECT_NE(test::errorOf([&] { cloudToSpl2(bad); }).find("hull_chunk of gaussian"), std::string::npos);
}

TEST(Spl2, PlyRoundTripThroughSaveAndLoadIsLossless) {
  const std::string dir = test::tempDir("Spl2.PlyRoundTrip");
  const Spl2Hull h = makeHull(10, 25, kSpl2Buckets, 3, 77);
  saveSpl2(h, dir + "/a.spl2");
  const LoadedSplats a = loadSplats(dir + "/a.spl2");
  EXPECT_EQ(a.format, SplatFormat::kSpl2);
  EXPECT_EQ(a.cloud.size(), h.size());
  EXPECT_FALSE(a.axes.empty());
  // The engine's frame (y down): the hull frame (y up) turned about z.
  EXPECT_EQ(a.cloud.positions[0].x, -h.core.pos[0].x);
  EXPECT_EQ(a.cloud.positions[0].y, -h.core.pos[0].y);
  EXPECT_EQ(a.cloud.positions[0].z, h.core.pos[0].z);
  saveSplats(a.cloud, dir + "/b.ply");
  const LoadedSplats b = loadSplats(dir + "/b.ply");
  EXPECT_EQ(b.format, SplatFormat::kPly);
  ASSERT_EQ(b.cloud.extras.size(), 7u);
  ASSERT_EQ(b.cloud.normals.size(), h.size());
  saveSplats(b.cloud, dir + "/c.spl2");
  const Spl2Hull c = loadSpl2(dir + "/c.spl2");
  // PLY stores opacity as a logit: it comes back within float rounding of sigmoid(logit(o)).
  expectCloseHull(h, c, 1e-6f);
  // SPL2 -> SPL2 through the dispatch.
  saveSplats(a.cloud, dir + "/d.spl2");
  expectCloseHull(h, loadSpl2(dir + "/d.spl2"), 0.0f);
  // Detection is by the magic, whatever the name.
  fs::copy_file(dir + "/a.spl2", dir + "/hull.bin");
  EXPECT_EQ(loadSplats(dir + "/hull.bin").format, SplatFormat::kSpl2);
}

TEST(Spl2, ComputeChunkTableFollowsTheDefinition) {
  Spl2Hull h = makeHull(13, 29, 4, 5, 88);
  const std::vector<Spl2Chunk> want = h.chunks;  // referenceChunks: the definition, in this file
  h.chunks.clear();
  spl2ComputeChunkTable(h);
  ASSERT_EQ(h.chunks.size(), want.size());
  for (size_t c = 0; c < want.size(); ++c) {
    for (int d = 0; d < 3; ++d) EXPECT_EQ(h.chunks[c].centroid[d], want[c].centroid[d]);
    EXPECT_EQ(h.chunks[c].radius, want[c].radius);
    EXPECT_FLOAT_EQ(h.chunks[c].area, want[c].area);
    EXPECT_EQ(h.chunks[c].count, want[c].count);
    EXPECT_EQ(h.chunks[c].material, want[c].material);
    EXPECT_EQ(h.chunks[c].part, want[c].part);
  }
  EXPECT_NO_THROW(decodeSpl2(encodeSpl2(h), "table.spl2"));
  // Part: the majority of attrs.y / 16, ties to the lower part; a chunk number nobody carries: an empty
  // record.
  Spl2Hull t = makeHull(0, 4, 1, 1, 3);
  t.chunk_of = {0, 2, 0, 0};
  t.material_of = {1, 4, 1, 1};
  t.shell.attrs[0][1] = 5 * 16 + 3;
  t.shell.attrs[2][1] = 2 * 16 + 15;
  t.shell.attrs[3][1] = 5 * 16;
  t.shell.attrs[1][1] = 7 * 16 + 1;
  spl2ComputeChunkTable(t);
  ASSERT_EQ(t.chunks.size(), 3u);
  EXPECT_EQ(t.chunks[0].part, 5);
  EXPECT_EQ(t.chunks[0].count, 3u);
  EXPECT_EQ(t.chunks[0].material, 1);
  EXPECT_EQ(t.chunks[1].count, 0u);
  EXPECT_EQ(t.chunks[1].area, 0.0f);
  EXPECT_EQ(t.chunks[2].part, 7);
  EXPECT_EQ(t.chunks[2].material, 4);
  EXPECT_EQ(t.chunks[2].radius, 0.0f);
  EXPECT_EQ(t.chunks[2].centroid.x, t.shell.pos[1].x);
  t.shell.attrs[3][1] = 2 * 16;  // a tie between parts 2 and 5: the lower
  spl2ComputeChunkTable(t);
  EXPECT_EQ(t.chunks[0].part, 2);
  EXPECT_NO_THROW(decodeSpl2(encodeSpl2(t), "gap.spl2"));
}

// =====================================================================================================
// Helpers: core radius, buckets, orders
// =====================================================================================================

TEST(Spl2, CoreRadius) {
  auto want = [](double op) { return std::sqrt(std::log(std::max(op, 0.55) / 0.5) / 4.5) * 1.2; };
  for (float op : {0.0f, 0.3f, 0.55f, 0.7f, 0.9f, 0.95f, 1.0f})
    EXPECT_NEAR(spl2CoreRadius(op), want(op), 1e-6) << op;
  EXPECT_EQ(spl2CoreRadius(0.1f), spl2CoreRadius(0.55f));
  // At r = spl2CoreRadius / 1.2 the gaussian's alpha (opacity * exp(-4.5 r^2)) is one half.
  const float r = spl2CoreRadius(0.93f) / 1.2f;
  EXPECT_NEAR(0.93f * std::exp(-4.5f * r * r), 0.5f, 1e-5f);
}

TEST(Spl2, BucketCamerasAndBuckets) {
  for (int n : {1, 7, kSpl2Buckets, 360})
    for (float elevation : {0.0f, 41.0f, -30.0f, 89.0f})
      for (int b = 0; b < n; ++b)
        ASSERT_EQ(spl2Bucket(spl2BucketCamera(b, n, elevation), n), b) << n << " " << elevation;
  // Azimuth 0 on +z, increasing towards +x; elevation above the xz plane; the orbit radius.
  const Vec3 c0 = spl2BucketCamera(0, kSpl2Buckets, 41.0f);
  EXPECT_NEAR(length(c0), kSpl2CameraDistance, 1e-5f);
  EXPECT_NEAR(c0.y, kSpl2CameraDistance * std::sin(41.0f * std::numbers::pi_v<float> / 180), 1e-5f);
  EXPECT_GT(c0.z, 0.0f);
  EXPECT_GT(c0.x, 0.0f);
  EXPECT_NEAR(std::atan2(c0.x, c0.z), 0.5 * 2 * std::numbers::pi / kSpl2Buckets, 1e-6);
  const Vec3 c16 = spl2BucketCamera(16, kSpl2Buckets, 0.0f, 2.0f);  // azimuth 90 + 2.8 degrees: about +x
  EXPECT_NEAR(c16.x, 2.0f * std::cos(2.8125f * std::numbers::pi_v<float> / 180), 1e-5f);
  EXPECT_LT(c16.z, 0.0f);
  EXPECT_EQ(spl2Bucket({0, 1, 1}, kSpl2Buckets), 0);
  EXPECT_EQ(spl2Bucket({-1e-6f, 0, 1}, kSpl2Buckets), kSpl2Buckets - 1);
  EXPECT_EQ(spl2Bucket({1, 0, 0}, kSpl2Buckets), 16);
  EXPECT_EQ(spl2Bucket({0, 0, -1}, kSpl2Buckets), 32);
}

TEST(Spl2, ShellOrdersArePermutationsBackToFront) {
  const Spl2Hull h = makeHull(0, 300, 1, 0, 4);
  std::vector<Vec3> pos = h.shell.pos;
  pos.push_back(pos[10]);  // an exact tie: index order
  pos.push_back(pos[10]);
  const auto orders = spl2ShellOrders(pos, kSpl2Buckets, 41.0f);
  ASSERT_EQ(orders.size(), static_cast<size_t>(kSpl2Buckets));
  EXPECT_EQ(orders, spl2ShellOrders(pos, kSpl2Buckets, 41.0f)) << "deterministic";
  for (int b = 0; b < kSpl2Buckets; ++b) {
    const std::vector<int32_t>& order = orders[static_cast<size_t>(b)];
    ASSERT_EQ(order.size(), pos.size());
    std::vector<int32_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      ASSERT_EQ(sorted[i], static_cast<int32_t>(i)) << "bucket " << b;
    const Vec3 cam = spl2BucketCamera(b, kSpl2Buckets, 41.0f);
    // Back to front: view depth along the camera's axis (it looks at the origin) does not increase.
    auto dist = [&](int32_t i) {
      return static_cast<double>(dot(pos[static_cast<size_t>(i)] - cam, normalize(-cam)));
    };
    for (size_t i = 1; i < order.size(); ++i)
      ASSERT_GE(dist(order[i - 1]) + 1e-6, dist(order[i])) << "bucket " << b << " entry " << i;
    const auto tie = std::find(order.begin(), order.end(), 10);
    ASSERT_LE(tie + 2, order.end());
    EXPECT_EQ(tie[1], 300);
    EXPECT_EQ(tie[2], 301);
  }
  // Other bucket counts and elevations.
  EXPECT_EQ(spl2ShellOrders(pos, 4, 0.0f).size(), 4u);
  EXPECT_TRUE(spl2ShellOrders({}, kSpl2Buckets, 41.0f)[5].empty());
  EXPECT_NE(spl2ShellOrders(pos, 4, 0.0f)[0], spl2ShellOrders(pos, 4, 60.0f)[0]);
}

// =====================================================================================================
// Files without CHNK
// =====================================================================================================

TEST(Spl2, FilesWithoutChnk) {
  const Spl2Hull plain = makeHull(4, 9, kSpl2Buckets, 0, 8);
  const Spl2Hull read = decodeSpl2(encodeSpl2(plain), "plain.spl2");
  EXPECT_FALSE(read.has_chunks);
  EXPECT_TRUE(read.chunk_of.empty());
  EXPECT_TRUE(read.chunks.empty());
  // The prefix of a file with CHNK up to its tail is the same hull without chunks: what a reader that does
  // not know CHNK reads.
  const Spl2Hull chunked = makeHull(4, 9, kSpl2Buckets, 3, 8);
  const Bytes full = encodeSpl2(chunked);
  const size_t tail = layoutOf(chunked).tail();
  ASSERT_EQ(std::memcmp(full.data() + tail, "CHNK", 4), 0);
  const Spl2Hull prefix =
      decodeSpl2(Bytes(full.begin(), full.begin() + static_cast<long>(tail)), "prefix.spl2");
  Spl2Hull without = chunked;
  without.has_chunks = false;
  without.chunk_of.clear();
  without.material_of.clear();
  without.chunks.clear();
  expectSameHull(without, prefix);
  EXPECT_EQ(encodeSpl2(without), Bytes(full.begin(), full.begin() + static_cast<long>(tail)));
  EXPECT_EQ(spl2ToCloud(prefix).extras.size(), 5u);
}

// =====================================================================================================
// Untrusted input
// =====================================================================================================

TEST(Spl2Untrusted, EveryTruncationIsRefused) {
  for (int chunks : {0, 3}) {
    const Spl2Hull h = makeHull(3, 4, 6, chunks, 12);
    const Bytes full = encodeSpl2(h);
    const size_t chnk_less = layoutOf(h).tail();
    for (size_t len = 0; len < full.size(); ++len) {
      const Bytes cut(full.begin(), full.begin() + static_cast<long>(len));
      if (chunks > 0 && len == chnk_less) {
        EXPECT_NO_THROW(decodeSpl2(cut, "cut.spl2"));  // the file without its tail
        continue;
      }
      try {
        decodeSpl2(cut, "cut.spl2");
        ADD_FAILURE() << "a prefix of " << len << " of " << full.size() << " bytes decoded";
      } catch (const FormatError& e) {
        EXPECT_LE(e.offset(), len) << e.what();
        EXPECT_EQ(std::string(e.what()).rfind("cut.spl2: byte ", 0), 0u) << e.what();
      }
      // Through the dispatch too (the content is SPL2 only from 4 bytes on).
      EXPECT_THROW(decodeSplats(cut, "cut.spl2"), Error) << len;
    }
  }
}

TEST(Spl2Untrusted, CorruptCountsAreRefusedBeforeAllocating) {
  // Limits far beyond the machine: a reader that allocated from a count before checking it against the file
  // would try to allocate hundreds of GB here (and abort under ASan).
  ScopedLimits huge({.max_gaussians = uint64_t{1} << 40, .max_bytes = uint64_t{1} << 60});
  const Spl2Hull h = makeHull(2, 3, 4, 0, 3);
  const Bytes good = encodeSpl2(h);
  struct Case {
    size_t offset;
    int32_t value;
    size_t error_offset;
    const char* says;
  };
  const Case cases[] = {
      {4, std::numeric_limits<int32_t>::max(), 4, "n_core 2147483647 core splats"},
      {8, std::numeric_limits<int32_t>::max(), 8, "n_shell 2147483647 shell splats"},
      {12, std::numeric_limits<int32_t>::max(), 12, "more than the 65536"},
      {12, 65536, 12, "n_buckets 65536 orders of 3 int32"},
      {4, -1, 4, "n_core -1 is negative"},
      {8, std::numeric_limits<int32_t>::min(), 8, "n_shell -2147483648 is negative"},
      {12, -64, 12, "n_buckets -64 is negative"},
      // One more core splat than the file holds: the core still fits, the shell after it no longer does.
      {4, 3, 8,
       "truncated: n_shell 3 shell splats of 80 bytes end at byte 496, past the end of the file (464 bytes)"},
  };
  for (const Case& c : cases) {
    Bytes b = good;
    poke(b, c.offset, c.value);
    const FormatError e = decodeError(b);
    EXPECT_EQ(e.offset(), c.error_offset) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
  }
  // 16 bytes declaring the most of everything (the bucket cap is checked first, then each count).
  Bytes header(16, 0);
  std::memcpy(header.data(), "SPL2", 4);
  for (size_t k = 1; k < 4; ++k) poke(header, 4 * k, std::numeric_limits<int32_t>::max());
  EXPECT_EQ(decodeError(header).offset(), 12u);
  poke<int32_t>(header, 12, 64);
  EXPECT_EQ(decodeError(header).offset(), 4u);
  poke<int32_t>(header, 4, 0);
  EXPECT_EQ(decodeError(header).offset(), 8u);
  // Without shell splats every order is empty: 65536 of them are allowed, more are refused.
  poke<int32_t>(header, 4, 0);
  poke<int32_t>(header, 8, 0);
  poke<int32_t>(header, 12, 65536);
  EXPECT_EQ(decodeSpl2(header, "many.spl2").orders.size(), 65536u);
  poke<int32_t>(header, 12, 65537);
  EXPECT_EQ(decodeError(header).offset(), 12u);
  // Counts that fit the file but not the load limits: refused by the limits, before the blocks are read.
  ScopedLimits small({.max_gaussians = 4, .max_bytes = uint64_t{1} << 30});
  EXPECT_NE(test::errorOf([&] { decodeSpl2(good, "limits.spl2"); }).find("--max-gaussians"),
            std::string::npos);
}

TEST(Spl2Untrusted, OrdersThatAreNotPermutationsAreRefused) {
  const Spl2Hull h = makeHull(2, 5, 4, 0, 6);
  const Bytes good = encodeSpl2(h);
  const Layout l = layoutOf(h);
  const size_t bucket2 = l.orders() + 2 * 5 * 4;
  struct Case {
    size_t entry;
    int32_t value;
    const char* says;
  };
  const int32_t first = h.orders[2][0];
  const Case cases[] = {
      {3, first, "entry 3 repeats index"},
      {1, 5, "entry 1 is 5, not a shell index (0..4)"},
      {4, -1, "entry 4 is -1, not a shell index"},
      {0, std::numeric_limits<int32_t>::min(), "entry 0 is -2147483648, not a shell index"}};
  for (const Case& c : cases) {
    Bytes b = good;
    poke(b, bucket2 + 4 * c.entry, c.value);
    const FormatError e = decodeError(b);
    const std::string what = e.what();
    EXPECT_NE(what.find("order of bucket 2"), std::string::npos) << what;
    EXPECT_NE(what.find(c.says), std::string::npos) << what;
    // A duplicate is found where the value appears the second time.
    EXPECT_EQ(e.offset(), bucket2 + 4 * c.entry) << what;
  }
}

TEST(Spl2Untrusted, BadChnkFieldsAreRefused) {
  const Spl2Hull h = makeHull(3, 4, 2, 3, 14);  // 7 splats: 2 padding bytes
  const Bytes good = encodeSpl2(h);
  const Layout l = layoutOf(h);
  ASSERT_NO_THROW(decodeSpl2(good, "good.spl2"));
  const size_t t = l.tail(), p = l.packed(), r = l.records();
  ASSERT_EQ(r, p + 16);
  // A packed value that moves splat 0 to another chunk breaks two counts and a material; one that keeps the
  // chunk but changes the material breaks the material only.
  const uint16_t other_material = static_cast<uint16_t>(1 + h.chunk_of[0] * 8 + (h.material_of[0] + 1) % 6);
  struct Case {
    std::function<void(Bytes&)> corrupt;
    size_t offset;
    const char* says;
  };
  const Case cases[] = {
      {[&](Bytes& b) { poke<uint32_t>(b, t + 4, 2); }, t + 4, "CHNK version 2"},
      {[&](Bytes& b) { poke<uint32_t>(b, t + 8, 0); }, t + 8, "n_chunks 0"},
      {[&](Bytes& b) { poke<uint32_t>(b, t + 8, 257); }, t + 8, "n_chunks 257"},
      {[&](Bytes& b) { poke<uint32_t>(b, t + 8, 0xffffffffu); }, t + 8, "n_chunks 4294967295"},
      {[&](Bytes& b) { poke<uint32_t>(b, t + 8, 4); }, t, "truncated"},
      {[&](Bytes& b) { poke<uint32_t>(b, t + 8, 2); }, r + 56, "bytes after the CHNK tail"},
      {[&](Bytes& b) { poke<uint32_t>(b, t + 12, 8); }, t + 12, "n_splats 8"},
      {[&](Bytes& b) { poke<uint16_t>(b, p + 2, 0); }, p + 2, "packed value 0"},
      {[&](Bytes& b) { poke<uint16_t>(b, p + 4, static_cast<uint16_t>(1 + 3 * 8)); }, p + 4, "chunk < 3"},
      {[&](Bytes& b) { poke<uint16_t>(b, p + 6, static_cast<uint16_t>(1 + 6)); }, p + 6, "material < 6"},
      {[&](Bytes& b) { poke<uint16_t>(b, p + 6, static_cast<uint16_t>(1 + 8 + 7)); }, p + 6, "material < 6"},
      {[&](Bytes& b) { poke<uint16_t>(b, p, other_material); }, p, "CHNK splat 0 has material"},
      {[&](Bytes& b) { b[p + 14] = 1; }, p + 14, "padding"},
      {[&](Bytes& b) { b[p + 15] = 0x80; }, p + 15, "padding"},
      {[&](Bytes& b) { poke<float>(b, r + 28 + 4, std::numeric_limits<float>::quiet_NaN()); }, r + 28,
       "centroid is not finite"},
      {[&](Bytes& b) { poke<float>(b, r + 12, -1.0f); }, r + 12, "radius -1"},
      {[&](Bytes& b) { poke<float>(b, r + 16, std::numeric_limits<float>::infinity()); }, r + 16, "area inf"},
      {[&](Bytes& b) { poke<uint32_t>(b, r + 28 + 20, h.chunks[1].count + 1); }, r + 28 + 20, "carry it"},
      {[&](Bytes& b) { b[r + 24] = 6; }, r + 24, "material 6"},
      {[&](Bytes& b) { b[r + 24] = static_cast<uint8_t>((h.chunks[0].material + 1) % 6); }, p,
       "its chunk 0 material"},
      {[&](Bytes& b) { b[r + 2 * 28 + 25] = 8; }, r + 2 * 28 + 25, "part 8"},
      {[&](Bytes& b) { poke<uint16_t>(b, r + 26, 1); }, r + 26, "reserved"},
      {[&](Bytes& b) { b.push_back(0); }, r + 3 * 28, "1 bytes after the CHNK tail"},
      {[&](Bytes& b) { b.pop_back(); }, t, "truncated"},
      {[&](Bytes& b) { b.erase(b.begin() + static_cast<long>(t + 10), b.end()); }, t + 8, "truncated"},
      {[&](Bytes& b) { std::memcpy(b.data() + t, "CHNL", 4); }, t, "not a CHNK tail"},
  };
  for (const Case& c : cases) {
    Bytes b = good;
    c.corrupt(b);
    const FormatError e = decodeError(b);
    EXPECT_EQ(e.offset(), c.offset) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
  }
  // Every chunk count may be zero if no splat carries the chunk: a 4th, empty chunk record is valid.
  Spl2Hull empty_chunk = h;
  empty_chunk.chunks.push_back({});
  EXPECT_NO_THROW(decodeSpl2(encodeSpl2(empty_chunk), "empty_chunk.spl2"));
}

TEST(Spl2Untrusted, TrailingBytesAreRefused) {
  const Spl2Hull h = makeHull(2, 3, 4, 0, 2);
  const size_t end = layoutOf(h).tail();
  for (const std::string& tail :
       {std::string("X"), std::string("CHN"), std::string("garbage!"), std::string(4, '\0')}) {
    Bytes b = encodeSpl2(h);
    b.insert(b.end(), tail.begin(), tail.end());
    const FormatError e = decodeError(b);
    EXPECT_EQ(e.offset(), end) << e.what();
    EXPECT_NE(std::string(e.what()).find("after the orders are not a CHNK tail"), std::string::npos)
        << e.what();
  }
}

TEST(Spl2Untrusted, AttrsMustBeBytes) {
  const Spl2Hull h = makeHull(2, 3, 4, 0, 2);
  const Layout l = layoutOf(h);
  for (float v : {256.0f, 1.5f, -1.0f, 255.5f, std::numeric_limits<float>::quiet_NaN()}) {
    Bytes b = encodeSpl2(h);
    const size_t offset = l.field(1, 6) + 16 * 2 + 4 * 1;  // shell attrs, row 2, channel 1
    poke(b, offset, v);
    const FormatError e = decodeError(b);
    EXPECT_EQ(e.offset(), offset) << e.what();
    EXPECT_NE(std::string(e.what()).find("shell attrs of row 2 channel 1"), std::string::npos) << e.what();
    Spl2Hull bad = h;
    bad.shell.attrs[2][1] = v;
    EXPECT_NE(test::errorOf([&] { encodeSpl2(bad); }).find("shell attrs of row 2"), std::string::npos);
  }
  for (float v : {0.0f, 255.0f, 128.0f}) {
    Bytes b = encodeSpl2(h);
    poke(b, l.field(0, 6), v);
    EXPECT_NO_THROW(decodeSpl2(b, "ok.spl2"));
  }
}

TEST(Spl2Untrusted, NonFiniteValuesAreRefusedNamingBlockFieldAndRow) {
  const Spl2Hull h = makeHull(3, 4, 4, 0, 2);
  const Layout l = layoutOf(h);
  const char* fields[] = {"pos", "ax0", "ax1", "normal", "color", "opacity"};
  for (int part = 0; part < 2; ++part)
    for (int f = 0; f < 6; ++f)
      for (float v : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        Bytes b = encodeSpl2(h);
        const size_t row = 1, offset = l.field(part, f) + (f < 5 ? 12 * row + 8 : 4 * row);
        poke(b, offset, v);
        const FormatError e = decodeError(b);
        const std::string want =
            std::string(part == 0 ? "core " : "shell ") + fields[f] + " of row 1 is not finite";
        EXPECT_EQ(e.offset(), f < 5 ? offset - 8 : offset) << e.what();
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
        // Refused through the dispatch as well, with or without --strict (rows cannot be dropped).
        EXPECT_THROW(decodeSplats(b, "bad.spl2"), FormatError);
      }
  // Opacity outside [0, 1].
  Bytes b = encodeSpl2(h);
  poke(b, l.field(1, 5), 1.5f);
  EXPECT_NE(std::string(decodeError(b).what()).find("shell opacity of row 0 1.5 lies outside [0, 1]"),
            std::string::npos);
}

TEST(Spl2Untrusted, RandomCorruptionDecodesOrThrows) {
  const Bytes good = encodeSpl2(makeHull(3, 5, 4, 2, 40));
  std::mt19937 rng(5);
  for (int round = 0; round < 3000; ++round) {
    Bytes b = good;
    const int flips = integer(rng, 1, 4);
    for (int k = 0; k < flips; ++k)
      b[static_cast<size_t>(integer(rng, 0, static_cast<int>(b.size()) - 1))] =
          static_cast<uint8_t>(integer(rng, 0, 255));
    try {
      const Spl2Hull h = decodeSpl2(b, "x.spl2");
      EXPECT_EQ(encodeSpl2(h), b) << "what decodes encodes to the same bytes";
      decodeSplats(b, "x.spl2");
    } catch (const Error&) {
    }
  }
}

TEST(Spl2Untrusted, EncodeRefusesInconsistentHulls) {
  const Spl2Hull good = makeHull(3, 4, 4, 2, 50);
  ASSERT_NO_THROW(encodeSpl2(good));
  struct Case {
    std::function<void(Spl2Hull&)> corrupt;
    const char* says;
  };
  const Case cases[] = {
      {[](Spl2Hull& h) { h.core.ax1.pop_back(); }, "core block: its arrays differ in size"},
      {[](Spl2Hull& h) { h.orders[1][0] = h.orders[1][1]; }, "order 1 is not a permutation"},
      {[](Spl2Hull& h) { h.orders[3].pop_back(); }, "order 3 has 3 entries"},
      {[](Spl2Hull& h) { h.shell.normal[2].y = std::numeric_limits<float>::infinity(); },
       "shell normal of row 2 is not finite"},
      {[](Spl2Hull& h) { h.core.opacity[0] = -0.5f; }, "outside [0, 1]"},
      {[](Spl2Hull& h) { h.chunk_of.pop_back(); }, "one entry per splat"},
      {[](Spl2Hull& h) { h.chunk_of[0] = 7; }, "is in chunk 7 of 2"},
      {[](Spl2Hull& h) { h.material_of[0] = static_cast<uint8_t>((h.material_of[0] + 1) % 6); },
       "CHNK: splat 0 has material"},
      {[](Spl2Hull& h) { h.chunks[1].count += 1; }, "CHNK: chunk 1 declares"},
      {[](Spl2Hull& h) { h.chunks[0].part = 9; }, "part 9"},
      {[](Spl2Hull& h) { h.chunks[0].radius = std::numeric_limits<float>::quiet_NaN(); }, "not finite"},
      {[](Spl2Hull& h) { h.chunks.clear(); }, "0 chunks"},
      {[](Spl2Hull& h) { h.chunks.resize(257); }, "257 chunks"},
      {[](Spl2Hull& h) { h.orders.resize(65537, h.orders[0]); }, "more than the 65536"},
  };
  for (const Case& c : cases) {
    Spl2Hull h = good;
    c.corrupt(h);
    const std::string err = test::errorOf([&] { encodeSpl2(h); });
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
    EXPECT_EQ(err.rfind("cannot write SPL2: ", 0), 0u) << err;
  }
  // Without has_chunks the chunk arrays are not written (and not checked).
  Spl2Hull plain = good;
  plain.has_chunks = false;
  plain.chunks.clear();
  EXPECT_EQ(decodeSpl2(encodeSpl2(plain), "p.spl2").has_chunks, false);
}

// =====================================================================================================
// The format dispatch
// =====================================================================================================

TEST(Spl2, FormatDispatch) {
  EXPECT_EQ(writeFormatForPath("a/hull.spl2"), SplatFormat::kSpl2);
  EXPECT_EQ(writeFormatForPath("HULL.SPL2"), SplatFormat::kSpl2);
  EXPECT_STREQ(formatName(SplatFormat::kSpl2), "spl2");
  const Bytes bytes = encodeSpl2(makeHull(2, 3, 4, 0, 1));
  EXPECT_EQ(decodeSplats(bytes, "x.ply").format, SplatFormat::kSpl2) << "by the magic, not the name";
  // A headerless .splat whose first float spells "SPL2" is still a .splat.
  Bytes splat(64, 0);
  std::memcpy(splat.data(), "SPL2", 4);
  EXPECT_EQ(decodeSplats(splat, "x.splat").format, SplatFormat::kSplat);
  // A .spl2 without the magic.
  const std::string err = test::errorOf([&] { decodeSplats(Bytes(32, 0), "x.spl2"); });
  EXPECT_NE(err.find("not a spl2 file"), std::string::npos) << err;
  // encodeSplats goes through cloudToSpl2 in the hull frame and back.
  const GaussianCloud c = test::randomCloud(20, 1, 3);
  const LoadedSplats back = decodeSplats(encodeSplats(c, SplatFormat::kSpl2), "c.spl2");
  ASSERT_EQ(back.cloud.size(), 20u);
  EXPECT_EQ(back.cloud.sh_degree, 0);
}

TEST(Spl2, ExportLossesNameWhatSpl2CannotHold) {
  auto has = [](const std::vector<std::string>& lines, const std::string& what) {
    for (const std::string& l : lines)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  GaussianCloud c = test::randomCloud(10, 2, 4);
  c.ids.assign(10, 1);
  c.extras.push_back({"f_custom", ScalarType::kFloat32, std::vector<double>(10, 0.5)});
  c.extras.push_back({"hull_ao", ScalarType::kFloat32, std::vector<double>(10, 3)});
  c.extras.back().values[4] = 300;
  const auto losses = exportLosses(c, SplatFormat::kSpl2);
  EXPECT_TRUE(has(losses, "spl2: SH bands 1-2 are dropped (SPL2 holds one colour) (10 of 10 gaussians)"));
  EXPECT_TRUE(has(losses, "the smallest axis is not stored"));
  EXPECT_TRUE(has(losses, "shell orders are computed afresh"));
  EXPECT_TRUE(has(losses, "no normals"));
  EXPECT_TRUE(has(losses, "ids are not stored"));
  EXPECT_TRUE(has(losses, "extra channel 'f_custom' is not stored"));
  EXPECT_TRUE(has(losses,
                  "channel 'hull_ao' holds values that are not integers in [0, 255]: rounded and clamped (1 "
                  "of 10 gaussians)"));
  EXPECT_FALSE(has(losses, "extra channel 'hull_ao'"));
  // A cloud read from SPL2 loses nothing but its orders (recomputed the same way).
  const GaussianCloud from_hull =
      decodeSplats(encodeSpl2(makeHull(3, 6, kSpl2Buckets, 2, 4)), "h.spl2").cloud;
  const auto none = exportLosses(from_hull, SplatFormat::kSpl2);
  ASSERT_EQ(none.size(), 1u) << none[0];
  EXPECT_EQ(none[0],
            "spl2: shell orders are computed afresh for 64 heading buckets at 41 degrees of elevation "
            "(orders a source file had "
            "are not kept) (6 of 9 gaussians)");
  // And nothing when written as PLY.
  EXPECT_TRUE(exportLosses(from_hull, SplatFormat::kPly).empty());
}

}  // namespace
}  // namespace sf
