// SPL2, the splat-hull file (docs/formats/spl2.md): decoding, encoding, the heading buckets and shell orders,
// and the conversions to and from gaussians.
#include "io/spl2.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "core/error.h"
#include "core/limits.h"
#include "io/byte_reader.h"
#include "io/byte_writer.h"
#include "io/file.h"

namespace sf {

namespace {

static_assert(sizeof(Vec3) == 12, "Vec3 is read and written as three float32");
static_assert(sizeof(std::array<float, 4>) == 16, "attrs are read and written as four float32");

constexpr size_t kHeaderBytes = 16;
constexpr uint64_t kSplatBytes = 5 * 12 + 4 + 16;  // pos, ax0, ax1, normal, color; opacity; attrs
constexpr size_t kChunkHeaderBytes = 16;           // "CHNK", version, n_chunks, n_splats
constexpr size_t kChunkRecordBytes = 28;
constexpr uint32_t kChunkVersion = 1;
// The most shell orders a file may declare. Each order costs 4 bytes per shell splat in the file, but a file
// without shell splats could otherwise declare 2^31 empty orders for free.
constexpr int64_t kMaxBuckets = 65536;

const char* const kBlockNames[2] = {"core", "shell"};

bool finite3(Vec3 v) {
  return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}

bool isByteValue(float v) {
  return v >= 0.0f && v <= 255.0f && v == std::floor(v);
}

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// "core pos of splat 3" and the like (row: index within the block).
std::string fieldOf(int block, const char* field, size_t row) {
  std::string s = kBlockNames[block];
  s += ' ';
  s += field;
  s += " of row ";
  s += std::to_string(row);
  return s;
}

// A unit vector perpendicular to `v` (any, when v is zero).
Vec3 anyPerpendicular(Vec3 v) {
  const Vec3 a{std::fabs(v.x), std::fabs(v.y), std::fabs(v.z)};
  const Vec3 other = a.x <= a.y && a.x <= a.z ? Vec3{1, 0, 0} : (a.y <= a.z ? Vec3{0, 1, 0} : Vec3{0, 0, 1});
  Vec3 p = normalize(cross(v, other));
  return length(p) > 0 ? p : Vec3{1, 0, 0};
}

// The display encoding of a linear value in [0, 1] (the sRGB transfer function).
float linearToSrgbValue(float c) {
  c = std::clamp(c, 0.0f, 1.0f);
  return c <= 0.0031308f ? 12.92f * c : 1.055f * std::pow(c, 1.0f / 2.4f) - 0.055f;
}

template <typename T>
void readArray(ByteReader& r, std::vector<T>& out, size_t n, const char* what) {
  auto s = r.bytes(uint64_t{n} * sizeof(T), what);
  out.resize(n);
  if (n > 0) std::memcpy(out.data(), s.data(), s.size());
}

template <typename T>
void putArray(std::vector<uint8_t>& out, const std::vector<T>& v) {
  if (v.empty()) return;
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(T));
}

// Everything encodeSpl2 refuses, as a message; empty when the hull can be written.
std::string hullProblem(const Spl2Hull& hull) {
  const Spl2Block* blocks[2] = {&hull.core, &hull.shell};
  for (int b = 0; b < 2; ++b) {
    const Spl2Block& k = *blocks[b];
    const size_t n = k.pos.size();
    const std::string name = kBlockNames[b];
    if (k.ax0.size() != n || k.ax1.size() != n || k.normal.size() != n || k.color.size() != n ||
        k.opacity.size() != n || k.attrs.size() != n)
      return name + " block: its arrays differ in size (pos has " + std::to_string(n) + " entries)";
    if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      return name + " block: more splats than an int32 count holds";
    for (size_t i = 0; i < n; ++i) {
      const std::pair<const char*, Vec3> vecs[] = {{"pos", k.pos[i]},
                                                   {"ax0", k.ax0[i]},
                                                   {"ax1", k.ax1[i]},
                                                   {"normal", k.normal[i]},
                                                   {"color", k.color[i]}};
      for (const auto& [field, v] : vecs)
        if (!finite3(v)) return fieldOf(b, field, i) + " is not finite (NaN or infinity)";
      if (!std::isfinite(k.opacity[i])) return fieldOf(b, "opacity", i) + " is not finite (NaN or infinity)";
      if (!(k.opacity[i] >= 0.0f && k.opacity[i] <= 1.0f))
        return fieldOf(b, "opacity", i) + " " + num(k.opacity[i]) + " lies outside [0, 1]";
      for (int c = 0; c < 4; ++c)
        if (!isByteValue(k.attrs[i][static_cast<size_t>(c)]))
          return fieldOf(b, "attrs", i) + " channel " + std::to_string(c) + ": " +
                 num(k.attrs[i][static_cast<size_t>(c)]) + " is not an integer in [0, 255]";
    }
  }
  const size_t n_shell = hull.shell.size();
  if (static_cast<int64_t>(hull.orders.size()) > kMaxBuckets)
    return std::to_string(hull.orders.size()) + " shell orders, more than the " +
           std::to_string(kMaxBuckets) + " SPL2 allows";
  std::vector<uint8_t> seen(n_shell);
  for (size_t b = 0; b < hull.orders.size(); ++b) {
    const std::vector<int32_t>& order = hull.orders[b];
    if (order.size() != n_shell)
      return "order " + std::to_string(b) + " has " + std::to_string(order.size()) + " entries, the shell " +
             std::to_string(n_shell);
    std::fill(seen.begin(), seen.end(), uint8_t{0});
    for (size_t j = 0; j < order.size(); ++j) {
      const int32_t v = order[j];
      if (v < 0 || static_cast<size_t>(v) >= n_shell || seen[static_cast<size_t>(v)])
        return "order " + std::to_string(b) + " is not a permutation of the shell's indices (entry " +
               std::to_string(j) + ": " + std::to_string(v) + ")";
      seen[static_cast<size_t>(v)] = 1;
    }
  }
  if (!hull.has_chunks) return {};
  const size_t n = hull.size();
  if (hull.chunk_of.size() != n || hull.material_of.size() != n)
    return "CHNK: chunk_of and material_of need one entry per splat (" + std::to_string(n) + "), have " +
           std::to_string(hull.chunk_of.size()) + " and " + std::to_string(hull.material_of.size());
  if (hull.chunks.empty() || hull.chunks.size() > static_cast<size_t>(kSpl2MaxChunks))
    return "CHNK: " + std::to_string(hull.chunks.size()) + " chunks (expected 1.." +
           std::to_string(kSpl2MaxChunks) + ")";
  std::vector<uint32_t> counts(hull.chunks.size());
  for (size_t c = 0; c < hull.chunks.size(); ++c) {
    const Spl2Chunk& k = hull.chunks[c];
    const std::string name = "CHNK: chunk " + std::to_string(c) + ": ";
    if (!finite3(k.centroid) || !std::isfinite(k.radius) || !std::isfinite(k.area))
      return name + "centroid, radius or area is not finite";
    if (!(k.radius >= 0) || !(k.area >= 0)) return name + "negative radius or area";
    if (k.material >= kSpl2Materials)
      return name + "material " + std::to_string(k.material) + " (expected 0..5)";
    if (k.part > 7) return name + "part " + std::to_string(k.part) + " (expected 0..7)";
  }
  for (size_t i = 0; i < n; ++i) {
    const uint16_t c = hull.chunk_of[i];
    const uint8_t m = hull.material_of[i];
    if (c >= hull.chunks.size())
      return "CHNK: splat " + std::to_string(i) + " is in chunk " + std::to_string(c) + " of " +
             std::to_string(hull.chunks.size());
    if (m >= kSpl2Materials)
      return "CHNK: splat " + std::to_string(i) + " has material " + std::to_string(m) + " (expected 0..5)";
    if (m != hull.chunks[c].material)
      return "CHNK: splat " + std::to_string(i) + " has material " + std::to_string(m) + ", its chunk " +
             std::to_string(c) + " material " + std::to_string(hull.chunks[c].material);
    ++counts[c];
  }
  for (size_t c = 0; c < hull.chunks.size(); ++c)
    if (counts[c] != hull.chunks[c].count)
      return "CHNK: chunk " + std::to_string(c) + " declares " + std::to_string(hull.chunks[c].count) +
             " splats, " + std::to_string(counts[c]) + " carry it";
  return {};
}

// The gaussian frame of one hull splat: unit axes e0, e1 (in the plane of ax0 and ax1) and e2 = e0 x e1.
Mat3 splatFrame(Vec3 ax0, Vec3 ax1, Vec3 normal) {
  Vec3 e0 = normalize(ax0);
  if (!(length(e0) > 0)) e0 = anyPerpendicular(normal);
  Vec3 e1 = normalize(ax1 - e0 * dot(ax1, e0));
  if (!(length(e1) > 0)) e1 = normalize(cross(normal, e0));
  if (!(length(e1) > 0)) e1 = anyPerpendicular(e0);
  const Vec3 e2 = cross(e0, e1);
  Mat3 m;
  for (int r = 0; r < 3; ++r) {
    m.m[r][0] = e0[r];
    m.m[r][1] = e1[r];
    m.m[r][2] = e2[r];
  }
  return m;
}

const ExtraChannel* findChannel(const GaussianCloud& cloud, const char* name) {
  for (const ExtraChannel& e : cloud.extras)
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace

const char* spl2MaterialName(int material) {
  static const char* const names[kSpl2Materials] = {"default", "chitin", "bone", "flesh", "circuit", "core"};
  return material >= 0 && material < kSpl2Materials ? names[material] : "unknown";
}

void Spl2Block::resize(size_t n) {
  pos.resize(n);
  ax0.resize(n);
  ax1.resize(n);
  normal.resize(n);
  color.resize(n);
  opacity.resize(n);
  attrs.resize(n);
}

float spl2CoreRadius(float opacity) {
  return std::sqrt(std::log(std::max(opacity, 0.55f) / 0.5f) / 4.5f) * 1.2f;
}

Vec3 spl2BucketCamera(int bucket, int n_buckets, float elevation_deg, float distance) {
  assert(n_buckets > 0);
  const double azimuth = (bucket + 0.5) * 2.0 * std::numbers::pi / n_buckets;
  const double elevation = static_cast<double>(elevation_deg) * std::numbers::pi / 180.0;
  const double d = distance, h = d * std::cos(elevation);
  return {static_cast<float>(h * std::sin(azimuth)), static_cast<float>(d * std::sin(elevation)),
          static_cast<float>(h * std::cos(azimuth))};
}

int spl2Bucket(Vec3 camera, int n_buckets) {
  assert(n_buckets > 0);
  if (!finite3(camera) || n_buckets <= 0) return 0;
  double azimuth =
      std::atan2(static_cast<double>(camera.x), static_cast<double>(camera.z));  // 0 on +z, towards +x
  if (azimuth < 0) azimuth += 2.0 * std::numbers::pi;
  const double b = std::floor(azimuth * n_buckets / (2.0 * std::numbers::pi));
  return static_cast<int>(std::clamp(b, 0.0, static_cast<double>(n_buckets - 1)));
}

std::vector<std::vector<int32_t>> spl2ShellOrders(std::span<const Vec3> shell_pos, int n_buckets,
                                                  float elevation_deg) {
  assert(n_buckets >= 0);
  assert(shell_pos.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()));
  std::vector<std::vector<int32_t>> orders(static_cast<size_t>(std::max(n_buckets, 0)));
  std::vector<double> key(shell_pos.size());
  for (int b = 0; b < n_buckets; ++b) {
    // View depth along the bucket camera's axis (it looks at the origin), as the frame sorts: dot(p - cam,
    // f).
    const Vec3 cam = spl2BucketCamera(b, n_buckets, elevation_deg);
    const double len = std::sqrt(static_cast<double>(cam.x) * cam.x + static_cast<double>(cam.y) * cam.y +
                                 static_cast<double>(cam.z) * cam.z);
    const double fx = -cam.x / len, fy = -cam.y / len, fz = -cam.z / len;
    for (size_t i = 0; i < shell_pos.size(); ++i) {
      const double d = (static_cast<double>(shell_pos[i].x) - cam.x) * fx +
                       (static_cast<double>(shell_pos[i].y) - cam.y) * fy +
                       (static_cast<double>(shell_pos[i].z) - cam.z) * fz;
      key[i] = std::isnan(d) ? -std::numeric_limits<double>::infinity() : d;  // a strict weak order even then
    }
    std::vector<int32_t>& order = orders[static_cast<size_t>(b)];
    order.resize(shell_pos.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t c) {
      const double ka = key[static_cast<size_t>(a)], kc = key[static_cast<size_t>(c)];
      return ka != kc ? ka > kc : a < c;  // far first; ties by index
    });
  }
  return orders;
}

// n_chunks is the largest chunk number + 1; a number no splat carries gets an empty record (count 0). A chunk
// takes its first member's material (encodeSpl2 refuses members that disagree). sigma = |ax| / 3, the core's
// divided by spl2CoreRadius(opacity) as well: the gaussian's in-plane standard deviations (spl2ToCloud's
// scales). Sums in double.
void spl2ComputeChunkTable(Spl2Hull& hull) {
  const size_t n = hull.size();
  assert(hull.chunk_of.size() == n && hull.material_of.size() == n);
  const size_t count = std::min({n, hull.chunk_of.size(), hull.material_of.size()});
  size_t n_chunks = 0;
  for (size_t h = 0; h < count; ++h) n_chunks = std::max(n_chunks, size_t{hull.chunk_of[h]} + 1);
  struct Acc {
    double sum[3] = {0, 0, 0}, area = 0, radius = 0;
    uint32_t count = 0, parts[8] = {};
  };
  std::vector<Acc> acc(n_chunks);
  hull.chunks.assign(n_chunks, Spl2Chunk{});
  const size_t n_core = hull.core.size();
  auto blockOf = [&](size_t h) -> const Spl2Block& { return h < n_core ? hull.core : hull.shell; };
  auto rowOf = [&](size_t h) { return h < n_core ? h : h - n_core; };
  for (size_t h = 0; h < count; ++h) {
    const Spl2Block& b = blockOf(h);
    const size_t i = rowOf(h);
    Acc& a = acc[hull.chunk_of[h]];
    if (a.count == 0) hull.chunks[hull.chunk_of[h]].material = hull.material_of[h];
    for (int k = 0; k < 3; ++k) a.sum[k] += static_cast<double>(b.pos[i][k]);
    const double r = h < n_core ? static_cast<double>(spl2CoreRadius(b.opacity[i])) : 1.0;
    const double s0 = static_cast<double>(length(b.ax0[i])) / 3.0 / r,
                 s1 = static_cast<double>(length(b.ax1[i])) / 3.0 / r;
    a.area += std::numbers::pi * s0 * s1;
    ++a.count;
    const float y = b.attrs[i][1];
    ++a.parts[y >= 0.0f && y < 128.0f ? static_cast<int>(y) / 16 : 7];  // attrs.y / 16, at most 7
  }
  for (size_t c = 0; c < n_chunks; ++c) {
    const Acc& a = acc[c];
    Spl2Chunk& k = hull.chunks[c];
    k.count = a.count;
    if (a.count == 0) continue;  // an unused chunk number: an empty record
    for (int d = 0; d < 3; ++d) k.centroid[d] = static_cast<float>(a.sum[d] / a.count);
    k.area = static_cast<float>(a.area);
    uint32_t best = 0;
    for (uint32_t p = 1; p < 8; ++p)
      if (a.parts[p] > a.parts[best]) best = p;
    k.part = static_cast<uint8_t>(best);
  }
  for (size_t h = 0; h < count; ++h) {
    const Vec3 p = blockOf(h).pos[rowOf(h)];
    Acc& a = acc[hull.chunk_of[h]];
    const Vec3 c = hull.chunks[hull.chunk_of[h]].centroid;
    const double dx = static_cast<double>(p.x) - c.x, dy = static_cast<double>(p.y) - c.y,
                 dz = static_cast<double>(p.z) - c.z;
    a.radius = std::max(a.radius, std::sqrt(dx * dx + dy * dy + dz * dz));
  }
  for (size_t c = 0; c < n_chunks; ++c) hull.chunks[c].radius = static_cast<float>(acc[c].radius);
}

std::vector<uint8_t> encodeSpl2(const Spl2Hull& hull) {
  const std::string problem = hullProblem(hull);
  if (!problem.empty()) throw Error("cannot write SPL2: " + problem);
  const size_t n = hull.size();
  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + n * kSplatBytes + hull.orders.size() * hull.shell.size() * 4 +
              (hull.has_chunks ? kChunkHeaderBytes + 2 * n + 2 + hull.chunks.size() * kChunkRecordBytes : 0));
  out.insert(out.end(), {'S', 'P', 'L', '2'});
  putLE(out, static_cast<int32_t>(hull.core.size()));
  putLE(out, static_cast<int32_t>(hull.shell.size()));
  putLE(out, static_cast<int32_t>(hull.orders.size()));
  for (const Spl2Block* k : {&hull.core, &hull.shell}) {
    for (const std::vector<Vec3>* v : {&k->pos, &k->ax0, &k->ax1, &k->normal, &k->color}) putArray(out, *v);
    putArray(out, k->opacity);
    putArray(out, k->attrs);
  }
  for (const std::vector<int32_t>& order : hull.orders) putArray(out, order);
  if (hull.has_chunks) {
    out.insert(out.end(), {'C', 'H', 'N', 'K'});
    putLE(out, kChunkVersion);
    putLE(out, static_cast<uint32_t>(hull.chunks.size()));
    putLE(out, static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i)
      putLE(out, static_cast<uint16_t>(spl2PackChunk(hull.chunk_of[i], hull.material_of[i])));
    if (n % 2 != 0) putLE(out, uint16_t{0});
    for (const Spl2Chunk& c : hull.chunks) {
      putLE(out, c.centroid.x);
      putLE(out, c.centroid.y);
      putLE(out, c.centroid.z);
      putLE(out, c.radius);
      putLE(out, c.area);
      putLE(out, c.count);
      putLE(out, c.material);
      putLE(out, c.part);
      putLE(out, uint16_t{0});
    }
  }
  return out;
}

namespace {

struct Spl2Counts {
  uint64_t n_core = 0, n_shell = 0, n_buckets = 0;
};

// The header: its magic and counts, each count against the file before anything is allocated, and the load
// against the memory limits.
Spl2Counts readSpl2Header(ByteReader& r, uint64_t size, const std::string& path) {
  auto magic = r.bytes(4, "SPL2 magic");
  if (std::memcmp(magic.data(), "SPL2", 4) != 0)
    r.failAt(0, "not an SPL2 file (its first bytes are not \"SPL2\")");
  const int32_t counts[3] = {r.readLE<int32_t>("n_core"), r.readLE<int32_t>("n_shell"),
                             r.readLE<int32_t>("n_buckets")};
  const char* const count_names[3] = {"n_core", "n_shell", "n_buckets"};
  for (int k = 0; k < 3; ++k)
    if (counts[k] < 0)
      r.failAt(4 + 4 * static_cast<uint64_t>(k),
               std::string(count_names[k]) + " " + std::to_string(counts[k]) + " is negative");
  const uint64_t n_core = static_cast<uint64_t>(counts[0]), n_shell = static_cast<uint64_t>(counts[1]),
                 n_buckets = static_cast<uint64_t>(counts[2]);
  if (counts[2] > kMaxBuckets)
    r.failAt(12, "n_buckets " + std::to_string(n_buckets) + " is more than the " +
                     std::to_string(kMaxBuckets) + " SPL2 allows");
  // Every count against the file before anything is allocated (64-bit: no product overflows).
  const uint64_t core_end = kHeaderBytes + n_core * kSplatBytes, shell_end = core_end + n_shell * kSplatBytes;
  const uint64_t orders_end = shell_end + n_buckets * n_shell * 4;
  auto tooBig = [&](uint64_t offset, const std::string& what, uint64_t end) {
    r.failAt(offset, "truncated: " + what + " end at byte " + std::to_string(end) +
                         ", past the end of the file (" + std::to_string(size) + " bytes)");
  };
  if (core_end > size) tooBig(4, "n_core " + std::to_string(n_core) + " core splats of 80 bytes", core_end);
  if (shell_end > size)
    tooBig(8, "n_shell " + std::to_string(n_shell) + " shell splats of 80 bytes", shell_end);
  if (orders_end > size)
    tooBig(12, "n_buckets " + std::to_string(n_buckets) + " orders of " + std::to_string(n_shell) + " int32",
           orders_end);
  const uint64_t n = n_core + n_shell;
  // What the load holds: the hull, its orders and chunk data, and the cloud decodeSplats makes of it
  // (normals and seven one-value channels as double).
  const uint64_t hull_bytes =
      n * (kSplatBytes + 3) + n_buckets * (n_shell * 4 + sizeof(std::vector<int32_t>));
  checkGaussianBudget(path, n, 0, hull_bytes + n * (12 + 7 * 8));
  return {n_core, n_shell, n_buckets};
}

// Block `b`'s `count` rows, field by field, every value checked: SPL2 refuses non-finite values (the orders
// index the rows, so none can be dropped), opacities outside [0, 1] and attrs that are not bytes.
void readSpl2Block(ByteReader& r, int b, size_t count, Spl2Block& k) {
  const std::pair<const char*, std::vector<Vec3>*> vecs[] = {
      {"pos", &k.pos}, {"ax0", &k.ax0}, {"ax1", &k.ax1}, {"normal", &k.normal}, {"color", &k.color}};
  for (const auto& [field, v] : vecs) {
    const size_t at = r.offset();
    readArray(r, *v, count, field);
    for (size_t i = 0; i < count; ++i)
      if (!finite3((*v)[i]))
        r.failAt(at + 12 * i, fieldOf(b, field, i) +
                                  " is not finite (NaN or infinity); SPL2 refuses non-finite values "
                                  "(the orders index the rows, so none can be dropped)");
  }
  size_t at = r.offset();
  readArray(r, k.opacity, count, "opacity");
  for (size_t i = 0; i < count; ++i) {
    const float o = k.opacity[i];
    if (!std::isfinite(o))
      r.failAt(at + 4 * i, fieldOf(b, "opacity", i) +
                               " is not finite (NaN or infinity); SPL2 refuses non-finite values "
                               "(the orders index the rows, so none can be dropped)");
    if (!(o >= 0.0f && o <= 1.0f))
      r.failAt(at + 4 * i, fieldOf(b, "opacity", i) + " " + num(o) + " lies outside [0, 1]");
  }
  at = r.offset();
  readArray(r, k.attrs, count, "attrs");
  for (size_t i = 0; i < count; ++i)
    for (size_t c = 0; c < 4; ++c) {
      const float v = k.attrs[i][c];
      if (!std::isfinite(v))
        r.failAt(at + 16 * i + 4 * c, fieldOf(b, "attrs", i) + " channel " + std::to_string(c) +
                                          " is not finite (NaN or infinity); SPL2 refuses non-finite values");
      if (!isByteValue(v))
        r.failAt(at + 16 * i + 4 * c, fieldOf(b, "attrs", i) + " channel " + std::to_string(c) + ": " +
                                          num(v) + " is not an integer in [0, 255]");
    }
}

// The shell orders, each a permutation of the shell's rows.
void readShellOrders(ByteReader& r, uint64_t n_shell, std::vector<std::vector<int32_t>>& orders) {
  std::vector<uint8_t> seen(static_cast<size_t>(n_shell));
  for (size_t b = 0; b < orders.size(); ++b) {
    const size_t at = r.offset();
    std::vector<int32_t>& order = orders[b];
    readArray(r, order, static_cast<size_t>(n_shell), "shell order");
    std::fill(seen.begin(), seen.end(), uint8_t{0});
    for (size_t j = 0; j < order.size(); ++j) {
      const int32_t v = order[j];
      std::string why;
      if (v < 0 || static_cast<uint64_t>(v) >= n_shell) {
        why = "is " + std::to_string(v) + ", not a shell index (0.." +
              std::to_string(static_cast<int64_t>(n_shell) - 1) + ")";
      } else if (seen[static_cast<size_t>(v)]) {
        why = "repeats index " + std::to_string(v);
      } else {
        seen[static_cast<size_t>(v)] = 1;
        continue;
      }
      std::string reason = "order of bucket ";
      reason += std::to_string(b);
      reason += " is not a permutation of the shell: entry ";
      reason += std::to_string(j);
      reason += ' ';
      reason += why;
      r.failAt(at + 4 * j, reason);
    }
  }
}

// Chunk record `c` of the CHNK tail, at byte `at`, its values checked.
Spl2Chunk readChunkRecord(ByteReader& r, uint64_t at, uint32_t c) {
  Spl2Chunk k;
  const std::string name = "CHNK chunk " + std::to_string(c) + ": ";
  k.centroid.x = r.readLE<float>("CHNK centroid");
  k.centroid.y = r.readLE<float>("CHNK centroid");
  k.centroid.z = r.readLE<float>("CHNK centroid");
  k.radius = r.readLE<float>("CHNK radius");
  k.area = r.readLE<float>("CHNK area");
  k.count = r.readLE<uint32_t>("CHNK count");
  k.material = r.readLE<uint8_t>("CHNK material");
  k.part = r.readLE<uint8_t>("CHNK part");
  const uint16_t reserved = r.readLE<uint16_t>("CHNK reserved");
  if (!finite3(k.centroid)) r.failAt(at, name + "centroid is not finite (NaN or infinity)");
  if (!(std::isfinite(k.radius) && k.radius >= 0))
    r.failAt(at + 12, name + "radius " + num(k.radius) + " is not a finite number >= 0");
  if (!(std::isfinite(k.area) && k.area >= 0))
    r.failAt(at + 16, name + "area " + num(k.area) + " is not a finite number >= 0");
  if (k.material >= kSpl2Materials)
    r.failAt(at + 24, name + "material " + std::to_string(k.material) + " (expected 0..5)");
  if (k.part > 7) r.failAt(at + 25, name + "part " + std::to_string(k.part) + " (expected 0..7)");
  if (reserved != 0) r.failAt(at + 26, name + "reserved field " + std::to_string(reserved) + " is not zero");
  return k;
}

// Every splat's material against its chunk's, every chunk's count against the splats that carry it.
void checkChunkMembers(const ByteReader& r, const Spl2Hull& hull, uint64_t packed_at, uint64_t records_at) {
  const size_t n_chunks = hull.chunks.size();
  std::vector<uint32_t> members(n_chunks);
  for (size_t i = 0; i < hull.chunk_of.size(); ++i) {
    const uint16_t c = hull.chunk_of[i];
    ++members[c];
    if (hull.material_of[i] != hull.chunks[c].material)
      r.failAt(packed_at + 2 * i, "CHNK splat " + std::to_string(i) + " has material " +
                                      std::to_string(hull.material_of[i]) + ", its chunk " +
                                      std::to_string(c) + " material " +
                                      std::to_string(hull.chunks[c].material));
  }
  for (uint32_t c = 0; c < n_chunks; ++c)
    if (members[c] != hull.chunks[c].count)
      r.failAt(records_at + uint64_t{c} * kChunkRecordBytes + 20,
               "CHNK chunk " + std::to_string(c) + " declares " + std::to_string(hull.chunks[c].count) +
                   " splats, " + std::to_string(members[c]) + " carry it");
}

// The optional CHNK tail, which must end the file: each splat's chunk and material, the chunk records.
void readChunkTail(ByteReader& r, std::span<const uint8_t> bytes, uint64_t n, Spl2Hull& hull) {
  const uint64_t size = bytes.size();
  const size_t tail = r.offset();
  if (r.remaining() < 4 || std::memcmp(bytes.data() + tail, "CHNK", 4) != 0)
    r.failAt(tail,
             std::to_string(r.remaining()) +
                 " bytes after the orders are not a CHNK tail (expected \"CHNK\" or the end of the file)");
  r.skip(4, "CHNK magic");
  const uint32_t version = r.readLE<uint32_t>("CHNK version");
  const uint32_t n_chunks = r.readLE<uint32_t>("CHNK n_chunks");
  const uint32_t n_splats = r.readLE<uint32_t>("CHNK n_splats");
  if (version != kChunkVersion) r.failAt(tail + 4, "CHNK version " + std::to_string(version) + " (known: 1)");
  if (n_chunks < 1 || n_chunks > static_cast<uint32_t>(kSpl2MaxChunks))
    r.failAt(tail + 8, "CHNK n_chunks " + std::to_string(n_chunks) + " (expected 1.." +
                           std::to_string(kSpl2MaxChunks) + ")");
  if (n_splats != n)
    r.failAt(tail + 12, "CHNK n_splats " + std::to_string(n_splats) +
                            " differs from n_core + n_shell = " + std::to_string(n));
  const uint64_t packed_at = tail + kChunkHeaderBytes, records_at = packed_at + (2 * n + 3) / 4 * 4;
  const uint64_t end = records_at + uint64_t{n_chunks} * kChunkRecordBytes;
  if (end > size)
    r.failAt(tail, "truncated: the CHNK tail of " + std::to_string(n) + " splats and " +
                       std::to_string(n_chunks) + " chunks ends at byte " + std::to_string(end) +
                       ", past the end of the file (" + std::to_string(size) + " bytes)");
  if (end < size)
    r.failAt(end, std::to_string(size - end) + " bytes after the CHNK tail (it must end the file)");
  hull.chunk_of.resize(static_cast<size_t>(n));
  hull.material_of.resize(static_cast<size_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const uint16_t p = r.readLE<uint16_t>("CHNK packed chunk");
    const uint32_t chunk = (p - 1u) / 8u, material = (p - 1u) % 8u;
    if (p == 0 || chunk >= n_chunks || material >= static_cast<uint32_t>(kSpl2Materials))
      r.failAt(packed_at + 2 * i, "CHNK splat " + std::to_string(i) + ": packed value " + std::to_string(p) +
                                      " is not 1 + chunk * 8 + material with chunk < " +
                                      std::to_string(n_chunks) + " and material < 6");
    hull.chunk_of[i] = static_cast<uint16_t>(chunk);
    hull.material_of[i] = static_cast<uint8_t>(material);
  }
  while (r.offset() < records_at) {
    const size_t at = r.offset();
    if (r.readLE<uint8_t>("CHNK padding") != 0) r.failAt(at, "CHNK padding byte is not zero");
  }
  hull.chunks.resize(n_chunks);
  for (uint32_t c = 0; c < n_chunks; ++c)
    hull.chunks[c] = readChunkRecord(r, records_at + uint64_t{c} * kChunkRecordBytes, c);
  checkChunkMembers(r, hull, packed_at, records_at);
  hull.has_chunks = true;
}

}  // namespace

Spl2Hull decodeSpl2(std::span<const uint8_t> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  const Spl2Counts counts = readSpl2Header(r, bytes.size(), path);
  Spl2Hull hull;
  Spl2Block* blocks[2] = {&hull.core, &hull.shell};
  for (int b = 0; b < 2; ++b)
    readSpl2Block(r, b, static_cast<size_t>(b == 0 ? counts.n_core : counts.n_shell), *blocks[b]);
  hull.orders.resize(static_cast<size_t>(counts.n_buckets));
  readShellOrders(r, counts.n_shell, hull.orders);
  if (r.remaining() > 0) readChunkTail(r, bytes, counts.n_core + counts.n_shell, hull);
  return hull;
}

Spl2Hull loadSpl2(const std::string& path) {
  try {
    const std::vector<uint8_t> bytes = readFile(path);
    return decodeSpl2(bytes, path);
  } catch (const std::bad_alloc&) {
    throw Error(path + ": ran out of memory while loading (the load memory limit is " +
                formatBytes(loadLimits().max_bytes) +
                "; lower it with --max-memory to be refused before allocating)");
  }
}

void saveSpl2(const Spl2Hull& hull, const std::string& path) {
  std::vector<uint8_t> bytes;
  try {
    bytes = encodeSpl2(hull);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  writeFileAtomic(path, bytes);
}

GaussianCloud spl2ToCloud(const Spl2Hull& hull) {
  const size_t n = hull.size();
  GaussianCloud cloud;
  cloud.resize(n, 0);
  cloud.color_space = ColorSpace::kSrgb;
  cloud.normals.resize(n);
  const char* const names[5] = {"hull_core", "hull_ao", "hull_packed", "hull_damage", "hull_seed"};
  for (const char* name : names) cloud.extras.push_back({name, ScalarType::kUint8, std::vector<double>(n)});
  if (hull.has_chunks) {
    cloud.extras.push_back({"hull_chunk", ScalarType::kUint16, std::vector<double>(n)});
    cloud.extras.push_back({"hull_material", ScalarType::kUint8, std::vector<double>(n)});
  }
  size_t out = 0;
  for (int b = 0; b < 2; ++b) {
    const Spl2Block& k = b == 0 ? hull.core : hull.shell;
    for (size_t i = 0; i < k.size(); ++i, ++out) {
      const float radius = b == 0 ? spl2CoreRadius(k.opacity[i]) : 1.0f;
      const float s0 = length(k.ax0[i]) / 3.0f / radius, s1 = length(k.ax1[i]) / 3.0f / radius;
      cloud.positions[out] = k.pos[i];
      cloud.scales[out] = {s0, s1, 0.1f * std::min(s0, s1)};
      cloud.rotations[out] = quatFromRotationMatrix(splatFrame(k.ax0[i], k.ax1[i], k.normal[i]));
      cloud.opacities[out] = k.opacity[i];
      for (int c = 0; c < 3; ++c) cloud.sh[out * 3 + static_cast<size_t>(c)] = colorToShDc(k.color[i][c]);
      cloud.normals[out] = k.normal[i];
      cloud.extras[0].values[out] = b == 0 ? 1.0 : 0.0;
      for (size_t c = 0; c < 4; ++c) cloud.extras[1 + c].values[out] = k.attrs[i][c];
    }
  }
  if (hull.has_chunks)
    for (size_t i = 0; i < n && i < hull.chunk_of.size() && i < hull.material_of.size(); ++i) {
      cloud.extras[5].values[i] = hull.chunk_of[i];
      cloud.extras[6].values[i] = hull.material_of[i];
    }
  return cloud;
}

Spl2Hull cloudToSpl2(const GaussianCloud& cloud, float elevation_deg) {
  const NonFiniteReport bad = findNonFinite(cloud);
  if (bad.rows > 0) throw Error("cannot convert to SPL2: " + bad.describe(cloud.size()));
  const size_t n = cloud.size();
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw Error("cannot convert to SPL2: more gaussians than an int32 count holds");
  const ExtraChannel* core_channel = findChannel(cloud, "hull_core");
  const ExtraChannel* attr_channels[4] = {findChannel(cloud, "hull_ao"), findChannel(cloud, "hull_packed"),
                                          findChannel(cloud, "hull_damage"), findChannel(cloud, "hull_seed")};
  const ExtraChannel* chunk_channel = findChannel(cloud, "hull_chunk");
  const ExtraChannel* material_channel = findChannel(cloud, "hull_material");
  const bool linear = cloud.color_space == ColorSpace::kLinear;

  auto isCore = [&](size_t i) {
    return core_channel ? core_channel->values[i] != 0.0 : cloud.opacities[i] > kSpl2CoreOpacity;
  };
  // Hull order: the core's gaussians in cloud order, then the shell's.
  std::vector<size_t> source;
  source.reserve(n);
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < n; ++i)
      if (isCore(i) == (pass == 0)) source.push_back(i);

  Spl2Hull hull;
  size_t n_core = 0;
  for (size_t i = 0; i < n; ++i) n_core += isCore(i) ? 1 : 0;
  hull.core.resize(n_core);
  hull.shell.resize(n - n_core);
  for (size_t h = 0; h < n; ++h) {
    const size_t i = source[h];
    const bool core = h < n_core;
    Spl2Block& k = core ? hull.core : hull.shell;
    const size_t j = core ? h : h - n_core;
    const Vec3 s = cloud.scales[i];
    const Mat3 rot = rotationMatrix(cloud.rotations[i]);
    // The smallest axis is the one dropped (the last of equal ones); the other two keep their order.
    int drop = 2;
    for (int a = 1; a >= 0; --a)
      if (s[a] < s[drop]) drop = a;
    const int a0 = drop == 0 ? 1 : 0, a1 = drop == 2 ? 1 : 2;
    const float opacity = std::clamp(cloud.opacities[i], 0.0f, 1.0f);
    const float factor = 3.0f * (core ? spl2CoreRadius(opacity) : 1.0f);
    k.pos[j] = cloud.positions[i];
    k.ax0[j] = rot.col(a0) * (s[a0] * factor);
    k.ax1[j] = rot.col(a1) * (s[a1] * factor);
    k.normal[j] = cloud.normals.empty() ? rot.col(drop) : cloud.normals[i];
    auto sh = cloud.shOf(i);
    for (int c = 0; c < 3; ++c) {
      const float v = shDcToColor(sh[static_cast<size_t>(c)]);
      k.color[j][c] = linear ? linearToSrgbValue(v) : v;
    }
    k.opacity[j] = opacity;
    const float defaults[4] = {255.0f, 0.0f, 0.0f,
                               static_cast<float>(hash32(static_cast<uint32_t>(i)) & 0xffu)};
    for (size_t c = 0; c < 4; ++c)
      k.attrs[j][c] =
          attr_channels[c]
              ? static_cast<float>(std::clamp(std::round(attr_channels[c]->values[i]), 0.0, 255.0))
              : defaults[c];
  }
  hull.orders = spl2ShellOrders(hull.shell.pos, kSpl2Buckets, elevation_deg);

  if (!chunk_channel || !material_channel) return hull;
  hull.chunk_of.resize(n);
  hull.material_of.resize(n);
  size_t n_chunks = 0;
  for (size_t h = 0; h < n; ++h) {
    const size_t i = source[h];
    const double c = chunk_channel->values[i], m = material_channel->values[i];
    if (!(c >= 0 && c < kSpl2MaxChunks && c == std::floor(c)))
      throw Error("cannot convert to SPL2: hull_chunk of gaussian " + std::to_string(i) + " is " + num(c) +
                  " (expected an integer 0.." + std::to_string(kSpl2MaxChunks - 1) + ")");
    if (!(m >= 0 && m < kSpl2Materials && m == std::floor(m)))
      throw Error("cannot convert to SPL2: hull_material of gaussian " + std::to_string(i) + " is " + num(m) +
                  " (expected an integer 0..5)");
    hull.chunk_of[h] = static_cast<uint16_t>(c);
    hull.material_of[h] = static_cast<uint8_t>(m);
    n_chunks = std::max(n_chunks, static_cast<size_t>(c) + 1);
  }
  if (n_chunks == 0) {  // no gaussians: no CHNK
    hull.chunk_of.clear();
    hull.material_of.clear();
    return hull;
  }
  // One material per chunk (the table takes the first member's; the message here names the gaussian).
  std::vector<int> material(n_chunks, -1);
  for (size_t h = 0; h < n; ++h) {
    int& m = material[hull.chunk_of[h]];
    if (m < 0) m = hull.material_of[h];
    if (m != hull.material_of[h])
      throw Error("cannot convert to SPL2: gaussian " + std::to_string(source[h]) + " has hull_material " +
                  std::to_string(hull.material_of[h]) + ", other gaussians of its chunk " +
                  std::to_string(hull.chunk_of[h]) + " " + std::to_string(m) + " (a chunk has one material)");
  }
  spl2ComputeChunkTable(hull);
  hull.has_chunks = true;
  return hull;
}

}  // namespace sf
