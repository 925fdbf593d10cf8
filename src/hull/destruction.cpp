#include "hull/destruction.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <utility>

#include "core/covariance.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/random.h"
#include "hull/point_grid.h"

namespace sf::hull {

namespace {

constexpr uint32_t kMaxLevel = SF_HULL_MAX_LEVEL;
constexpr int kParts = SF_HULL_PARTS;
constexpr size_t kMaxNeighbours = 24;    // per slot, the nearest kept (a dense patch must not cost O(n^2))
constexpr float kTargetNeighbours = 12;  // the support radius is calibrated for this mean neighbour count
constexpr float kRibSpacing = 0.08f;    // frame lattice pitch, hull units (fixed: ribs of all chunks line up)
constexpr float kRibHalfWidth = 0.07f;  // half-width of a rib, in pitches
constexpr float kDebrisSize = 0.6f;
constexpr float kHotShare = 0.08f, kSparkShare = 0.015f;
constexpr Vec3 kUp{0, 1, 0};  // glTF +y

// ---- Random numbers: stateless hashes, so a value depends only on (seed, event, slot, purpose)
// ---------------

uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t h = splitmix64(a);
  h = mix64(h ^ (b + 0x632be59bd9b4e019ull));
  h = mix64(h ^ (c + 0x8cb92ba72f3d8dd7ull));
  return mix64(h ^ (d + 0xd6e8feb86659fd93ull));
}

float unitOf(uint64_t h) {
  return unitFloat(h);
}  // [0, 1)

// Purposes of the hashes (the last argument), so that two draws for one slot are independent.
enum Salt : uint64_t {
  kSaltDebris = 1,
  kSaltVelocity,
  kSaltHot,
  kSaltTone,
  kSaltChip,
  kSaltBody,
  kSaltCrack
};

Vec3 unitVector(uint64_t h) {  // uniform on the sphere
  const float z = 2.0f * unitOf(h) - 1.0f;
  const float a = 6.2831853f * unitOf(mix64(h ^ 0x5bd1e995ull));
  const float s = std::sqrt(std::max(0.0f, 1.0f - z * z));
  return {s * std::cos(a), s * std::sin(a), z};
}

bool finite(Vec3 v) {
  return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}

Vec3 anyPerpendicular(Vec3 v) {
  const Vec3 a{std::fabs(v.x), std::fabs(v.y), std::fabs(v.z)};
  const Vec3 other = a.x <= a.y && a.x <= a.z ? Vec3{1, 0, 0} : (a.y <= a.z ? Vec3{0, 1, 0} : Vec3{0, 0, 1});
  const Vec3 p = normalize(cross(v, other));
  return length(p) > 0 ? p : Vec3{1, 0, 0};
}

// Squared distance of p from the line through `origin` along the unit `dir`, and the parameter along it.
float lineDistance2(Vec3 p, Vec3 origin, Vec3 dir, float* t) {
  const Vec3 d = p - origin;
  *t = dot(d, dir);
  const Vec3 off = d - dir * *t;
  return dot(off, off);
}

// An integer count from a float product, clamped to [0, limit] before the cast (a huge damage must not
// overflow).
size_t countOf(double value, size_t limit) {
  if (!(value > 0)) return 0;
  return static_cast<size_t>(std::llround(std::min(value, static_cast<double>(limit))));
}

uint32_t levelOf(const HullSlot& s) {
  return s.flags & SF_HULL_LEVEL_MASK;
}
uint32_t kindOf(const HullSlot& s) {
  return (s.flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT;
}
uint32_t kindBits(uint32_t kind) {
  return kind << SF_HULL_KIND_SHIFT;
}

void setVec(float* out, Vec3 v) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
}
Vec3 vecOf(const float* v) {
  return {v[0], v[1], v[2]};
}

// ---- Neighbours
// ---------------------------------------------------------------------------------------------

float channelByte(float v) {  // a baked channel as an integer in [0, 255] (NaN as 0)
  return v > 0 ? std::min(std::floor(v), 255.0f) : 0.0f;
}

}  // namespace

// ---- Names
// --------------------------------------------------------------------------------------------------

HitKind parseHitKind(const std::string& text) {
  if (text == "shot") return HitKind::kShot;
  if (text == "blast") return HitKind::kBlast;
  if (text == "epicenter") return HitKind::kEpicenter;
  if (text == "melee") return HitKind::kMelee;
  if (text == "pierce") return HitKind::kPierce;
  throw Error("unknown hit kind '" + text + "' (expected shot, blast, epicenter, melee or pierce)");
}

const char* hitKindName(HitKind kind) {
  switch (kind) {
    case HitKind::kShot:
      return "shot";
    case HitKind::kBlast:
      return "blast";
    case HitKind::kEpicenter:
      return "epicenter";
    case HitKind::kMelee:
      return "melee";
    case HitKind::kPierce:
      return "pierce";
  }
  return "unknown";
}

Weapon parseWeapon(const std::string& text) {
  if (text == "none") return Weapon::kNone;
  if (text == "cannon") return Weapon::kCannon;
  if (text == "mortar") return Weapon::kMortar;
  if (text == "railgun") return Weapon::kRailgun;
  throw Error("unknown weapon '" + text + "' (expected none, cannon, mortar or railgun)");
}

const char* weaponName(Weapon weapon) {
  switch (weapon) {
    case Weapon::kNone:
      return "none";
    case Weapon::kCannon:
      return "cannon";
    case Weapon::kMortar:
      return "mortar";
    case Weapon::kRailgun:
      return "railgun";
  }
  return "unknown";
}

std::string HullEvent::describe() const {
  const std::string i = std::to_string(index);
  const std::string percent = std::to_string(std::lround(std::clamp(share, 0.0f, 1.0f) * 100.0f));
  switch (type) {
    case kPartDisabled:
      return "part " + i + " disabled (" + percent + "% knocked)";
    case kPartRestored:
      return "part " + i + " restored (" + percent + "% knocked)";
    case kChunkCracked:
      return "chunk " + i + " cracked";
    case kChunkTorn:
      return "chunk " + i + " torn off (" + std::to_string(slots) + " slots)";
    case kIslandDetached:
      return "island at slot " + i + " detached (" + std::to_string(slots) + " slots)";
    case kGunSilenced: {
      char at[32];
      std::snprintf(at, sizeof at, "%.2f", time);
      return "gun " + i + " silent: fire at " + at + " s consumed (part " + std::to_string(slots) +
             " disabled, " + percent + "% knocked)";
    }
  }
  return "event " + i;
}

// ---- Rest records
// -------------------------------------------------------------------------------------------

std::vector<HullRest> hullRestRecords(const Spl2Hull& hull) {
  const size_t n = hull.size();
  const GaussianCloud cloud = spl2ToCloud(hull);
  const bool chunks = hull.has_chunks && hull.chunk_of.size() == n && hull.material_of.size() == n;
  std::vector<HullRest> out(n);
  const size_t n_core = hull.core.size();
  for (size_t h = 0; h < n; ++h) {
    const Spl2Block& b = h < n_core ? hull.core : hull.shell;
    const size_t row = h < n_core ? h : h - n_core;
    HullRest& r = out[h];
    setVec(r.position, cloud.positions[h]);
    setVec(r.normal, b.normal[row]);
    const std::array<float, 4>& a = b.attrs[row];
    r.ao = a[0] / 255.0f;
    const int packed = static_cast<int>(channelByte(a[1]));
    r.emission = static_cast<float>(packed % 16) / 15.0f;
    const Cov6 cov = covarianceFromScaleRotation(cloud.scales[h], cloud.rotations[h]);
    for (size_t k = 0; k < 6; ++k) r.cov[k] = cov[k];
    const uint32_t part = static_cast<uint32_t>(std::min(packed / 16, kParts - 1));
    const uint32_t material = chunks ? hull.material_of[h] : 0u, chunk = chunks ? hull.chunk_of[h] : 0u;
    r.channels = part | (material & 0xFFu) << 8 | chunk << 16;
    r.seed = static_cast<uint32_t>(channelByte(a[3]));
  }
  return out;
}

// ---- State
// --------------------------------------------------------------------------------------------------

struct Destruction::Impl {
  // A healing slot's lerp: its state when its hole began to heal, and the way from there to its original
  // record.
  struct Lerp {
    uint32_t i = 0, level = 0, flags = 0;
    Vec3 position, color;        // the start
    Vec3 to_position, to_color;  // the original record's minus the start's
  };
  // A set of slots changed by one hit, healed together.
  struct Hole {
    std::vector<uint32_t> slots;  // may list slots that have since moved to a newer hole (slot_hole tells)
    // From the start of its healing (`slots` then released): its slots at that time, by index; later some may
    // still move to a newer hole.
    std::vector<Lerp> lerp;
    double progress = 0, rate = 0, t = 0;
    bool healing = false, done = false;
  };

  const Spl2Hull* hull = nullptr;
  DestructionOptions opt;
  size_t n = 0, pool = 0;

  std::vector<HullRest> rest;
  std::vector<Vec3> rest_pos, rest_normal, inward, skin_color;
  std::vector<float> step;  // onion step per slot
  std::vector<uint8_t> material, part;
  std::vector<uint32_t> chunk;

  std::vector<HullSlot> slots, initial;  // initial: the hull slots' original records
  std::vector<uint8_t> levels;  // the hull slots' levels (as in their flags), for the neighbourhood checks
  HullSlot off{};
  std::vector<double> pool_end;    // debris: when it goes off
  std::vector<uint8_t> pool_kind;  // the pool slots' kinds (as in their flags), for the pool's scans
  size_t pool_off = 0;             // pool slots off
  size_t pool_cursor = 0;

  std::vector<HullBody> bodies;
  std::vector<uint8_t> body_alive;
  std::vector<double> body_end;
  std::vector<std::vector<uint32_t>> body_slots;

  std::vector<std::vector<uint32_t>> nbr;
  std::vector<uint32_t> adj_start,
      adj;  // nbr flattened: slot i's neighbours are adj[adj_start[i] .. adj_start[i + 1])
  float radius = 0, spacing = 0;
  Vec3 centroid;
  // The hit searches' bounds (built once): the rest positions' grid (cell: the support radius), and
  // by_height, the slots by descending height (ties by index) with their x and z. `searchable` when every
  // rest position is finite; a search is bounded by the grid while its reach stays below `full_reach` (the
  // rest box's diagonal), and otherwise scans every slot.
  struct Column {
    float x, z;
    uint32_t i;
  };
  std::optional<PointGrid> search_grid;
  std::vector<Column> by_height;
  bool searchable = false;
  Vec3 box_centre;
  float full_reach = 0;
  Vec3 last_point;  // where the last hit landed (the centroid before any)

  std::vector<uint8_t> faded;  // level-3 innards shown as the core (no shallower neighbour left)

  std::vector<Hole> holes;
  std::vector<uint32_t> open_holes;  // holes not yet healed, in creation order
  std::vector<int32_t> slot_hole;    // the hole holding slot i, -1 when at its original record

  // Chunks (CHNK): members, centroid, mean normal; state 0 intact, 1 cracked, 2 torn; the hole that set it.
  bool has_chunks = false;
  std::vector<std::vector<uint32_t>> chunk_members;
  std::vector<Vec3> chunk_centroid, chunk_normal;
  std::vector<uint8_t> chunk_state;
  std::vector<int32_t> chunk_hole;
  int64_t cascade = -1;  // cannon: the chunk its last shot cracked (tears first on the next)

  std::array<uint32_t, kParts> part_count{}, part_knocked{};
  std::array<bool, kParts> part_disabled{};

  // Per-hit scratch (stamps avoid clearing per-slot arrays each hit).
  uint32_t stamp = 0, visit_stamp = 0;
  std::vector<uint32_t> hole_mark, changed_mark, queue_mark, visit_mark;
  std::vector<uint32_t> changed;
  // Scratch of the candidate searches and the support checks (kept between hits: no allocation per hit).
  struct LinePoint {
    float d2, t;
    uint32_t i;
  };
  mutable std::vector<std::pair<float, uint32_t>> scratch_ranked;
  mutable std::vector<float> scratch_d2, scratch_t;
  mutable std::vector<LinePoint> scratch_line;
  std::vector<uint32_t> scratch_slots, scratch_work, scratch_island, scratch_open;
  int32_t cur_hole = -1;
  uint64_t hit_count = 0;
  uint64_t revision = 0;
  double last_time = -std::numeric_limits<double>::infinity();

  Impl(const Spl2Hull& h, const DestructionOptions& o);

  // -- construction
  void buildSupport();
  void buildOnion();
  void buildChunks();
  void buildSearch();

  // -- helpers
  uint64_t rnd(uint64_t slot, uint64_t salt) const { return hash4(opt.seed, hit_count, slot, salt); }
  uint32_t level(uint32_t i) const { return levels[i]; }
  std::span<const uint32_t> around(uint32_t i) const {
    return {adj.data() + adj_start[i], adj.data() + adj_start[i + 1]};
  }
  Vec3 layerColor(uint32_t i, uint32_t lvl) const;
  uint32_t coreFlags(uint32_t i) const;
  void touch(uint32_t i);
  void markChanged(uint32_t i);
  void setLevel(uint32_t i, uint32_t lvl);
  void countLevel(uint32_t i, uint32_t old_level, uint32_t new_level);
  void setPoolKind(size_t k, uint32_t kind);
  int64_t allocPool();
  size_t poolRoom() const;
  void spawnDebris(uint32_t i, Vec3 position, Vec3 velocity, double time);
  Vec3 debrisVelocity(uint32_t i, Vec3 dir, Vec3 bias, float speed_scale) const;
  bool knock(uint32_t i, double time, float debris_prob, Vec3 dir, Vec3 bias);
  size_t spawnBody(const std::vector<uint32_t>& members, Vec3 pivot, Vec3 velocity, double time,
                   uint64_t salt);

  // -- hits
  bool bounded(Vec3 at, float reach) const;
  Vec3 defaultPoint(Vec3 dir) const;
  std::vector<uint32_t> lineCandidates(Vec3 point, Vec3 dir, float facing_sign, size_t k) const;
  std::vector<uint32_t> sphereCandidates(Vec3 point, size_t k) const;
  std::vector<uint32_t> columnCandidates(Vec3 point, size_t k) const;
  bool exitOf(Vec3 point, Vec3 dir, uint32_t* exit, float* t_exit) const;
  void crackChunk(uint32_t c, Vec3 dir, double time, bool chips, std::vector<HullEvent>& events);
  void tearChunk(uint32_t c, Vec3 away, double time, std::vector<HullEvent>& events);
  void supportChecks(double time, std::vector<HullEvent>& events);
  void woundEdges();
  void partEvents(double time, std::vector<HullEvent>& events);
  std::vector<HullEvent> hit(const Hit& h, double time);

  // -- time
  void heal(double time, float amount);
  std::vector<HullEvent> update(double time);
  void finishHole(uint32_t h);
};

Destruction::Impl::Impl(const Spl2Hull& h, const DestructionOptions& o) : hull(&h), opt(o) {
  n = h.size();
  pool = o.debris_pool;
  if (h.has_chunks && (h.chunk_of.size() != n || h.material_of.size() != n))
    throw Error("destruction: the hull's CHNK tail has " + std::to_string(h.chunk_of.size()) + " chunk and " +
                std::to_string(h.material_of.size()) + " material entries for " + std::to_string(n) +
                " splats");
  if (n > (size_t{1} << 31)) throw Error("destruction: too many splats");
  rest = hullRestRecords(h);
  rest_pos.resize(n);
  rest_normal.resize(n);
  skin_color.resize(n);
  material.resize(n);
  part.resize(n);
  chunk.resize(n);
  slots.resize(n + pool);
  initial.resize(n);
  double sum[3] = {0, 0, 0};
  const size_t n_core = h.core.size();
  for (uint32_t i = 0; i < n; ++i) {
    const Spl2Block& b = i < n_core ? h.core : h.shell;
    const size_t row = i < n_core ? i : i - n_core;
    const HullRest& r = rest[i];
    rest_pos[i] = vecOf(r.position);
    rest_normal[i] = normalize(vecOf(r.normal));
    skin_color[i] = b.color[row];
    part[i] = static_cast<uint8_t>(r.channels & 0xFFu);
    material[i] = static_cast<uint8_t>((r.channels >> 8) & 0xFFu);
    chunk[i] = r.channels >> 16;
    ++part_count[part[i]];
    for (int a = 0; a < 3; ++a) sum[a] += static_cast<double>(rest_pos[i][a]);
    HullSlot& s = slots[i];
    s = HullSlot{};
    setVec(s.position, rest_pos[i]);
    s.flags = kindBits(SF_HULL_KIND_SKIN);
    setVec(s.color, skin_color[i]);
    s.opacity = b.opacity[row];
    s.source = i;
    s.normal_sign = 1;
    s.size = 1;
    initial[i] = s;
  }
  if (n > 0)
    centroid = {static_cast<float>(sum[0] / static_cast<double>(n)),
                static_cast<float>(sum[1] / static_cast<double>(n)),
                static_cast<float>(sum[2] / static_cast<double>(n))};
  last_point = centroid;
  off = HullSlot{};
  off.flags = kindBits(SF_HULL_KIND_OFF);
  off.normal_sign = 1;
  off.size = 1;
  for (size_t k = 0; k < pool; ++k) slots[n + k] = off;
  pool_end.assign(pool, 0.0);
  pool_kind.assign(pool, SF_HULL_KIND_OFF);
  pool_off = pool;
  faded.assign(n, 0);
  slot_hole.assign(n, -1);
  levels.assign(n, 0);
  hole_mark.assign(n, 0);
  changed_mark.assign(n, 0);
  queue_mark.assign(n, 0);
  visit_mark.assign(n, 0);
  buildSupport();
  buildOnion();
  buildChunks();
  buildSearch();
}

// The support radius: the hull's splats lie on a surface, so the count within r grows about as r^2; start
// from the bounding box's volume per splat and rescale a few times on a fixed sample until the mean count is
// near the target. Then each slot keeps its nearest kMaxNeighbours, and an edge stays only when both ends
// keep it (the graph is symmetric, which the island flood relies on).
void Destruction::Impl::buildSupport() {
  nbr.assign(n, {});
  adj_start.assign(n + 1, 0);
  adj.clear();
  if (n < 2) {
    radius = spacing = 0.01f;
    return;
  }
  Vec3 lo = rest_pos[0], hi = rest_pos[0];
  for (const Vec3& p : rest_pos)
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], p[a]);
      hi[a] = std::max(hi[a], p[a]);
    }
  const Vec3 ext = hi - lo;
  const float big = std::max({ext.x, ext.y, ext.z, 1e-6f});
  const float volume =
      std::max(ext.x, big * 1e-3f) * std::max(ext.y, big * 1e-3f) * std::max(ext.z, big * 1e-3f);
  float r = 2.0f * std::cbrt(volume / static_cast<float>(n));
  const size_t sample_stride = std::max<size_t>(1, n / 512);
  for (int round = 0; round < 8; ++round) {
    const PointGrid grid(rest_pos, r);
    size_t total = 0, samples = 0;
    for (size_t i = 0; i < n; i += sample_stride, ++samples)
      grid.forWithin(rest_pos[i], r, [&](uint32_t j, float) { total += j != i ? 1 : 0; });
    const float mean = static_cast<float>(total) / static_cast<float>(samples);
    if (mean >= kTargetNeighbours * 0.85f && mean <= kTargetNeighbours * 1.15f) break;
    const float factor = mean > 0 ? std::sqrt(kTargetNeighbours / mean) : 2.0f;
    r *= std::clamp(factor, 0.5f, 2.0f);
  }
  radius = r;
  const PointGrid grid(rest_pos, r);
  std::vector<std::pair<float, uint32_t>> found;
  for (uint32_t i = 0; i < n; ++i) {
    found.clear();
    grid.forWithin(rest_pos[i], r, [&](uint32_t j, float d2) {
      if (j != i) found.push_back({d2, j});
    });
    const size_t keep = std::min(found.size(), kMaxNeighbours);
    std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(keep), found.end());
    nbr[i].reserve(keep);
    for (size_t k = 0; k < keep; ++k) nbr[i].push_back(found[k].second);
  }
  std::vector<std::vector<uint32_t>> mutual(n);
  size_t edges = 0;
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j : nbr[i])
      if (std::find(nbr[j].begin(), nbr[j].end(), i) != nbr[j].end()) mutual[i].push_back(j);
    edges += mutual[i].size();
  }
  nbr = std::move(mutual);
  adj.reserve(edges);
  for (uint32_t i = 0; i < n; ++i) {
    adj.insert(adj.end(), nbr[i].begin(), nbr[i].end());
    adj_start[i + 1] = static_cast<uint32_t>(adj.size());
  }
  // The mean spacing of a surface sampled with this density: pi r^2 / spacing^2 = mean neighbours.
  const float mean = std::max(1.0f, static_cast<float>(edges) / static_cast<float>(n));
  spacing = r * std::sqrt(3.14159265f / mean);
}

// Per slot: the inward direction (-normal mixed a quarter toward the centroid: deep layers converge instead
// of crossing on thin curved parts) and the step, the local thickness / (levels + 1) so that the core stays
// in front of the far wall. Thickness: the first splat of the far wall along the inward ray (its normal along
// the ray), found by sampling the support grid at one radius per step, out to the deepest step allowed.
void Destruction::Impl::buildOnion() {
  inward.resize(n);
  step.resize(n);
  const float max_step = radius, min_step = 0.1f * radius;
  search_grid.emplace(rest_pos, std::max(radius, 1e-6f));  // kept for the hit searches
  for (uint32_t i = 0; i < n; ++i) {
    const Vec3 to_centre = normalize(centroid - rest_pos[i]);
    Vec3 in = normalize(-rest_normal[i] * 0.75f + to_centre * 0.25f);
    if (!(length(in) > 0)) in = length(rest_normal[i]) > 0 ? -rest_normal[i] : to_centre;
    if (!(length(in) > 0)) in = -kUp;
    inward[i] = in;
    float thickness = std::numeric_limits<float>::infinity();
    const int samples = static_cast<int>(kMaxLevel) + 1;
    for (int k = 1; k <= samples && !std::isfinite(thickness); ++k) {
      const Vec3 at = rest_pos[i] + in * (radius * static_cast<float>(k));
      search_grid->forWithin(at, radius, [&](uint32_t j, float) {
        if (j == i || dot(rest_normal[j], in) <= 0.2f) return;
        const float t = dot(rest_pos[j] - rest_pos[i], in);
        if (t > 0.25f * radius) thickness = std::min(thickness, t);
      });
    }
    float s = std::isfinite(thickness) ? thickness / static_cast<float>(kMaxLevel + 1) : max_step;
    s = std::clamp(s, min_step, max_step);
    // Near the centroid the layers would cross it: keep the core in front of it.
    const float to_c = length(centroid - rest_pos[i]);
    if (to_c > 0) s = std::min(s, std::max(to_c / static_cast<float>(kMaxLevel + 1), 0.02f * radius));
    step[i] = s;
  }
}

void Destruction::Impl::buildChunks() {
  has_chunks = hull->has_chunks && n > 0;
  if (!has_chunks) return;
  uint32_t count = 0;
  for (uint32_t i = 0; i < n; ++i) count = std::max(count, chunk[i] + 1);
  chunk_members.assign(count, {});
  chunk_centroid.assign(count, Vec3{});
  chunk_normal.assign(count, Vec3{});
  chunk_state.assign(count, 0);
  chunk_hole.assign(count, -1);
  std::vector<std::array<double, 3>> sum(count, {0, 0, 0});
  for (uint32_t i = 0; i < n; ++i) {
    chunk_members[chunk[i]].push_back(i);
    for (int a = 0; a < 3; ++a) sum[chunk[i]][static_cast<size_t>(a)] += static_cast<double>(rest_pos[i][a]);
    chunk_normal[chunk[i]] = chunk_normal[chunk[i]] + rest_normal[i];
  }
  for (uint32_t c = 0; c < count; ++c) {
    const double m = static_cast<double>(std::max<size_t>(1, chunk_members[c].size()));
    chunk_centroid[c] = {static_cast<float>(sum[c][0] / m), static_cast<float>(sum[c][1] / m),
                         static_cast<float>(sum[c][2] / m)};
    chunk_normal[c] = normalize(chunk_normal[c]);
  }
}

// The hit searches' bounds. A non-finite rest position would fall outside the grid's cells: such a hull is
// always scanned in full.
void Destruction::Impl::buildSearch() {
  searchable = n > 0 && std::all_of(rest_pos.begin(), rest_pos.end(), [](Vec3 p) { return finite(p); });
  if (!searchable) return;
  Vec3 lo = rest_pos[0], hi = rest_pos[0];
  for (const Vec3& p : rest_pos)
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], p[a]);
      hi[a] = std::max(hi[a], p[a]);
    }
  box_centre = (lo + hi) * 0.5f;
  full_reach = length(hi - lo);
  // The order columnCandidates ranks by: (-height, index) ascending.
  std::vector<std::pair<float, uint32_t>> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = {-rest_pos[i].y, i};
  std::sort(order.begin(), order.end());
  by_height.resize(n);
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = order[k].second;
    by_height[k] = {rest_pos[i].x, rest_pos[i].z, i};
  }
}

// ---- Layers
// -------------------------------------------------------------------------------------------------

Vec3 Destruction::Impl::layerColor(uint32_t i, uint32_t lvl) const {
  const float tone = 0.85f + 0.3f * unitOf(hash4(opt.seed, i, lvl, kSaltTone));  // per-slot variation
  switch (lvl) {
    case 0:
      return skin_color[i];
    case 1: {  // dark backing: the skin darkened and half desaturated
      const Vec3 c = skin_color[i];
      const float luma = 0.2126f * c.x + 0.7152f * c.y + 0.0722f * c.z;
      const Vec3 grey{luma, luma, luma};
      return (c * 0.5f + grey * 0.5f) * 0.18f + Vec3{0.015f, 0.015f, 0.015f};
    }
    case 2: {  // frame: ribs on an object-space lattice, dark between them
      const Vec3 p = rest_pos[i] / kRibSpacing;
      bool rib = false;
      for (int a = 0; a < 3; ++a) {
        const float f = p[a] - std::floor(p[a]);
        rib = rib || f < kRibHalfWidth || f > 1.0f - kRibHalfWidth;
      }
      return rib ? Vec3{0.40f, 0.42f, 0.45f} * tone : Vec3{0.06f, 0.06f, 0.07f} * tone;
    }
    case 3:
      switch (material[i]) {
        case 3:
          return Vec3{0.34f, 0.05f, 0.05f} * tone;  // flesh: dark red
        case 1:
          return Vec3{0.26f, 0.14f, 0.05f} * tone;  // chitin: dark amber
        case 2:
          return Vec3{0.30f, 0.22f, 0.16f} * tone;  // bone: marrow brown
        case 4:                                     // circuit: dark cyan-green, a hashed fifth glowing
          return unitOf(hash4(opt.seed, i, 7, kSaltTone)) < 0.2f ? Vec3{0.15f, 0.85f, 0.55f}
                                                                 : Vec3{0.03f, 0.22f, 0.18f} * tone;
        case 5:
          return Vec3{0.05f, 0.05f, 0.06f} * tone;  // core material: near-black
        default:
          return Vec3{0.28f, 0.14f, 0.05f} * tone;  // default: dark orange-brown
      }
    default:
      return {0.03f, 0.03f, 0.03f};
  }
}

// Smouldering hot points (~8%) and rare cold sparks (~1.5%) of the core, fixed per slot.
uint32_t Destruction::Impl::coreFlags(uint32_t i) const {
  const float u = unitOf(hash4(opt.seed, i, 0, kSaltHot));
  if (u < kHotShare) return SF_HULL_FLAG_HOT;
  if (u < kHotShare + kSparkShare) return SF_HULL_FLAG_SPARK;
  return 0;
}

void Destruction::Impl::touch(uint32_t i) {
  slot_hole[i] = cur_hole;
  if (hole_mark[i] != stamp) {
    hole_mark[i] = stamp;
    holes[static_cast<size_t>(cur_hole)].slots.push_back(i);
  }
}

void Destruction::Impl::markChanged(uint32_t i) {
  if (changed_mark[i] != stamp) {
    changed_mark[i] = stamp;
    changed.push_back(i);
  }
}

void Destruction::Impl::countLevel(uint32_t i, uint32_t old_level, uint32_t new_level) {
  if (old_level == 0 && new_level > 0) ++part_knocked[part[i]];
  if (old_level > 0 && new_level == 0) --part_knocked[part[i]];
}

// Puts hull slot i at onion level lvl (> 0): the layer's position, colour and flags; cracks are kept, the
// floor is a wound.
void Destruction::Impl::setLevel(uint32_t i, uint32_t lvl) {
  lvl = std::min(lvl, kMaxLevel);
  HullSlot& s = slots[i];
  countLevel(i, levelOf(s), lvl);
  levels[i] = static_cast<uint8_t>(lvl);
  s.flags = lvl | kindBits(SF_HULL_KIND_LAYER) | (s.flags & SF_HULL_FLAG_CRACKED) | SF_HULL_FLAG_WOUND |
            (lvl == kMaxLevel ? coreFlags(i) : 0u);
  setVec(s.position, rest_pos[i] + inward[i] * (step[i] * static_cast<float>(lvl)));
  setVec(s.color, layerColor(i, lvl));
  faded[i] = 0;
  touch(i);
  markChanged(i);
}

// Free pool slots: off ones, or debris (which may be cut short); body copies are never taken.
size_t Destruction::Impl::poolRoom() const {
  size_t room = 0;
  for (size_t k = 0; k < pool; ++k) {
    const uint32_t kind = pool_kind[k];
    room += kind == SF_HULL_KIND_OFF || kind == SF_HULL_KIND_DEBRIS ? 1 : 0;
  }
  return room;
}

// Pool slot k's kind changes (its record is written by the caller).
void Destruction::Impl::setPoolKind(size_t k, uint32_t kind) {
  pool_off -= pool_kind[k] == SF_HULL_KIND_OFF ? 1 : 0;
  pool_off += kind == SF_HULL_KIND_OFF ? 1 : 0;
  pool_kind[k] = static_cast<uint8_t>(kind);
}

// The next off pool slot from the round-robin cursor; when none is off, the debris splat that dies first.
int64_t Destruction::Impl::allocPool() {
  for (size_t k = 0; k < pool && pool_off > 0; ++k) {
    const size_t at = (pool_cursor + k) % pool;
    if (pool_kind[at] == SF_HULL_KIND_OFF) {
      pool_cursor = (at + 1) % pool;
      return static_cast<int64_t>(n + at);
    }
  }
  int64_t best = -1;
  for (size_t k = 0; k < pool; ++k)
    if (pool_kind[k] == SF_HULL_KIND_DEBRIS &&
        (best < 0 || pool_end[k] < pool_end[static_cast<size_t>(best)]))
      best = static_cast<int64_t>(k);
  if (best < 0) return -1;
  pool_cursor = (static_cast<size_t>(best) + 1) % pool;
  return static_cast<int64_t>(n) + best;
}

void Destruction::Impl::spawnDebris(uint32_t i, Vec3 position, Vec3 velocity, double time) {
  const int64_t at = allocPool();
  if (at < 0) return;
  HullSlot& d = slots[static_cast<size_t>(at)];
  d = off;
  setVec(d.position, position);
  d.flags = kindBits(SF_HULL_KIND_DEBRIS);
  setPoolKind(static_cast<size_t>(at) - n, SF_HULL_KIND_DEBRIS);
  setVec(d.color, {1, 1, 1});  // the pass colours debris by age (white-hot, cooling)
  d.opacity = initial[i].opacity;
  setVec(d.velocity, velocity);
  d.birth = static_cast<float>(time);
  d.source = i;
  d.size = kDebrisSize;
  pool_end[static_cast<size_t>(at) - n] = time + static_cast<double>(opt.debris_life);
}

// Outward along the normal, plus the shot reflected off the surface, plus a random part; `bias` is added as
// is.
Vec3 Destruction::Impl::debrisVelocity(uint32_t i, Vec3 dir, Vec3 bias, float speed_scale) const {
  const Vec3 nrm = rest_normal[i];
  const float speed = (1.0f + unitOf(rnd(i, kSaltVelocity))) * speed_scale;
  const Vec3 reflected = dir - nrm * (2.0f * dot(dir, nrm));
  return nrm * speed + reflected * (0.5f * speed) +
         unitVector(rnd(i, kSaltVelocity + 100)) * (0.35f * speed) + bias * speed;
}

// One layer deeper (a slot at the core stays); with probability debris_prob a debris splat flies from where
// the slot was. Returns whether the slot changed.
bool Destruction::Impl::knock(uint32_t i, double time, float debris_prob, Vec3 dir, Vec3 bias) {
  const uint32_t lvl = level(i);
  if (lvl >= kMaxLevel) return false;
  const Vec3 was = vecOf(slots[i].position);
  setLevel(i, lvl + 1);
  if (debris_prob > 0 && unitOf(rnd(i, kSaltDebris)) < debris_prob)
    spawnDebris(i, was, debrisVelocity(i, dir, bias, 1.0f), time);
  return true;
}

// A rigid body carrying a copy of each member as it is now (normal_sign +1) and an inner copy a little inward
// (normal_sign -1, the innards' colour: a tumbling piece shows its inside). Returns the pool slots used, 0
// when the pool has no room for all of them (then nothing flies).
size_t Destruction::Impl::spawnBody(const std::vector<uint32_t>& members, Vec3 pivot, Vec3 velocity,
                                    double time, uint64_t salt) {
  if (members.empty() || 2 * members.size() > poolRoom()) return 0;
  size_t b = 0;
  while (b < bodies.size() && body_alive[b]) ++b;
  if (b == bodies.size()) {
    bodies.emplace_back();
    body_alive.push_back(0);
    body_end.push_back(0);
    body_slots.emplace_back();
  }
  HullBody& body = bodies[b];
  body = HullBody{};
  setVec(body.pivot, pivot);
  body.birth = static_cast<float>(time);
  setVec(body.velocity, velocity);
  body.life = opt.body_life;
  const float spin = 2.0f + 3.0f * unitOf(rnd(salt, kSaltBody));
  setVec(body.spin, unitVector(rnd(salt, kSaltBody + 100)) * spin);
  body_alive[b] = 1;
  body_end[b] = time + static_cast<double>(opt.body_life);
  body_slots[b].clear();
  for (int copy = 0; copy < 2; ++copy)
    for (uint32_t i : members) {
      const int64_t at = allocPool();
      if (at < 0) break;  // cannot happen: room was checked
      HullSlot& s = slots[static_cast<size_t>(at)];
      s = off;
      const Vec3 p = vecOf(slots[i].position);
      if (copy == 0) {
        setVec(s.position, p);
        for (int c = 0; c < 3; ++c) s.color[c] = slots[i].color[c];
      } else {
        setVec(s.position, p + inward[i] * (0.3f * step[i]));
        setVec(s.color, layerColor(i, 3));
        s.normal_sign = -1;
      }
      s.flags = kindBits(SF_HULL_KIND_BODY);
      setPoolKind(static_cast<size_t>(at) - n, SF_HULL_KIND_BODY);
      s.opacity = initial[i].opacity;
      s.birth = static_cast<float>(time);
      s.source = i;
      s.body = static_cast<uint32_t>(b);
      body_slots[b].push_back(static_cast<uint32_t>(at));
    }
  return body_slots[b].size();
}

// ---- Candidates
// ---------------------------------------------------------------------------------------------
//
// Each search is first bounded with the grid: it gathers the slots near where the hit can take them, keeps
// those whose key (the same expression as the full scan's) is within the reach, and stands when the reach is
// known to hold the scan's answer (k candidates within it; the nearest slot and all within its limit); else
// the reach doubles. The answers depend only on the set of candidates (ranked by (key, slot), ties by slot as
// in the scan's index order), so they are the full scan's bit for bit. A reach past the rest box's diagonal,
// a point far outside the box, or a hull with non-finite rest positions scans every slot.

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The k smallest (key, slot) pairs in order (ties by slot): a selection, then a sort of the k alone.
std::vector<uint32_t> smallest(std::vector<std::pair<float, uint32_t>>& ranked, size_t k) {
  k = std::min(k, ranked.size());
  if (k < ranked.size())
    std::nth_element(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k), ranked.end());
  std::sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k));
  std::vector<uint32_t> out(k);
  for (size_t j = 0; j < k; ++j) out[j] = ranked[j].second;
  return out;
}

}  // namespace

// Whether a search about `at` within `reach` is bounded with the grid (else it scans every slot).
bool Destruction::Impl::bounded(Vec3 at, float reach) const {
  return searchable && reach > 0 && reach < full_reach && length(at - box_centre) <= 2.0f * full_reach;
}

// Where a ray along `dir` aimed at the centroid first meets the hull: of the slots facing the shot, those
// nearest the ray (within one spacing of the nearest), the first along it.
Vec3 Destruction::Impl::defaultPoint(Vec3 dir) const {
  // Bounded: the facing slots within `reach` of the line; once one is found the nearest distance is known,
  // and the limit (nearest + spacing) within the reach means every slot within the limit was gathered.
  std::vector<LinePoint>& near = scratch_line;
  float reach = 2.0f * spacing;
  while (bounded(centroid, reach)) {
    near.clear();
    const float reach2 = reach * reach;
    float best = kInf;
    search_grid->forNearSegment(centroid, dir, -kInf, kInf, reach, [&](uint32_t i) {
      if (!(dot(rest_normal[i], dir) < 0)) return;
      float t;
      const float d2 = lineDistance2(rest_pos[i], centroid, dir, &t);
      if (d2 > reach2) return;
      near.push_back({d2, t, i});
      best = std::min(best, d2);
    });
    if (near.empty()) {
      reach *= 2;
      continue;
    }
    const float limit = std::sqrt(best) + spacing;
    if (limit > reach) {
      reach = limit;  // one more gather: the nearest stays the same
      continue;
    }
    const LinePoint* first = nullptr;  // the least t (ties by slot) within the limit
    for (const LinePoint& c : near)
      if (!(c.d2 > limit * limit) && (!first || c.t < first->t || (c.t == first->t && c.i < first->i)))
        first = &c;
    return first ? rest_pos[first->i] : centroid;
  }

  // Every slot: one pass (distances kept), then one over the kept distances.
  scratch_d2.resize(n);
  scratch_t.resize(n);
  float best_facing = kInf, best_any = best_facing;
  for (uint32_t i = 0; i < n; ++i) {
    const float d2 = lineDistance2(rest_pos[i], centroid, dir, &scratch_t[i]);
    const bool facing = dot(rest_normal[i], dir) < 0;
    scratch_d2[i] = facing ? d2 : -d2 - 1.0f;  // negative: not facing the shot
    if (facing) best_facing = std::min(best_facing, d2);
    best_any = std::min(best_any, d2);
  }
  const bool any_facing = std::isfinite(best_facing);  // else (nothing faces the shot) take any slot
  const float limit = std::sqrt(any_facing ? best_facing : best_any) + spacing;
  float first_t = kInf;
  Vec3 point = centroid;
  for (uint32_t i = 0; i < n; ++i) {
    const float stored = scratch_d2[i];
    if (any_facing && stored < 0) continue;
    const float d2 = stored < 0 ? -stored - 1.0f : stored;
    if (d2 > limit * limit || !(scratch_t[i] < first_t)) continue;
    first_t = scratch_t[i];
    point = rest_pos[i];
  }
  return point;
}

// The k slots nearest the line through `point` along `dir` (ties by index) whose normal faces the given way
// (facing_sign -1: against the shot, the attacked side; +1: the exit side), within a window along the line
// about the point so that a far wall of the same side is not taken.
std::vector<uint32_t> Destruction::Impl::lineCandidates(Vec3 point, Vec3 dir, float facing_sign,
                                                        size_t k) const {
  std::vector<std::pair<float, uint32_t>>& ranked = scratch_ranked;
  ranked.clear();
  if (k == 0) return {};
  const float disc = std::sqrt(static_cast<float>(k) / 3.14159265f) * spacing;
  const float window = std::max(4.0f * radius, 2.0f * disc);
  auto consider = [&](uint32_t i, float reach2) {  // a candidate within reach2 of the line (inf: any)
    if (!(dot(rest_normal[i], dir) * facing_sign > 0)) return;
    float t;
    const float d2 = lineDistance2(rest_pos[i], point, dir, &t);
    if (std::fabs(t) <= window && !(d2 > reach2)) ranked.push_back({d2, i});
  };
  // Bounded: the window's stretch of the line, out to a reach of about 1.5 discs of k slots.
  for (float reach = 1.5f * disc + spacing; bounded(point, reach); reach *= 2) {
    ranked.clear();
    const float reach2 = reach * reach;
    search_grid->forNearSegment(point, dir, -window, window, reach, [&](uint32_t i) { consider(i, reach2); });
    if (ranked.size() >= k) return smallest(ranked, k);
  }
  ranked.clear();
  for (uint32_t i = 0; i < n; ++i) consider(i, kInf);
  return smallest(ranked, k);
}

std::vector<uint32_t> Destruction::Impl::sphereCandidates(Vec3 point, size_t k) const {
  std::vector<std::pair<float, uint32_t>>& ranked = scratch_ranked;
  // Bounded: the slots within a reach of about 1.5 discs of k slots.
  for (float reach = 1.5f * std::sqrt(static_cast<float>(k) / 3.14159265f) * spacing + spacing;
       bounded(point, reach); reach *= 2) {
    ranked.clear();
    const float reach2 = reach * reach;
    const Vec3 box{reach, reach, reach};
    search_grid->forInBox(point - box, point + box, [&](uint32_t i) {
      const float d2 = dot(rest_pos[i] - point, rest_pos[i] - point);
      if (d2 <= reach2) ranked.push_back({d2, i});
    });
    if (ranked.size() >= k) return smallest(ranked, k);
  }
  ranked.resize(n);
  for (uint32_t i = 0; i < n; ++i) ranked[i] = {dot(rest_pos[i] - point, rest_pos[i] - point), i};
  return smallest(ranked, k);
}

// The k highest slots within a wide column about the vertical through the epicentre (wider than the disc of k
// splats, so that the top is taken as a cap rather than a thin core sample).
std::vector<uint32_t> Destruction::Impl::columnCandidates(Vec3 point, size_t k) const {
  const float column = 1.5f * std::sqrt(static_cast<float>(k) / 3.14159265f) * spacing + radius;
  auto inColumn = [&](float x, float z) {
    const float dx = x - point.x, dz = z - point.z;
    return dx * dx + dz * dz <= column * column;
  };
  if (searchable) {  // down the slots by height (the ranking's order) until k are in the column
    std::vector<uint32_t> out;
    out.reserve(std::min(k, n));
    for (size_t j = 0; j < n && out.size() < k; ++j)
      if (inColumn(by_height[j].x, by_height[j].z)) out.push_back(by_height[j].i);
    return out;
  }
  std::vector<std::pair<float, uint32_t>>& ranked = scratch_ranked;
  ranked.clear();
  for (uint32_t i = 0; i < n; ++i)
    if (inColumn(rest_pos[i].x, rest_pos[i].z)) ranked.push_back({-rest_pos[i].y, i});
  return smallest(ranked, k);
}

// Where the flight through `point` along `dir` leaves the hull: of the slots facing along the flight near its
// line (within two radii), beyond the entry, the farthest along it (ties by index).
bool Destruction::Impl::exitOf(Vec3 point, Vec3 dir, uint32_t* exit, float* t_exit) const {
  const float band2 = 4.0f * radius * radius;
  bool found = false;
  auto consider = [&](uint32_t i) {
    if (!(dot(rest_normal[i], dir) > 0)) return;
    float t;
    if (lineDistance2(rest_pos[i], point, dir, &t) > band2 || t <= radius) return;
    if (!found || t > *t_exit || (t == *t_exit && i < *exit)) {
      *exit = i;
      *t_exit = t;
      found = true;
    }
  };
  if (bounded(point, 2.0f * radius)) {
    search_grid->forNearSegment(point, dir, radius, kInf, 2.0f * radius, consider);
  } else {
    for (uint32_t i = 0; i < n; ++i) consider(i);
  }
  return found;
}

// ---- Chunks
// -------------------------------------------------------------------------------------------------

// A crack line across chunk c: through its centroid, in its surface, across the shot; its members within
// about half a spacing are flagged cracked (at least the nearest), and 2..4 of them throw a chip.
void Destruction::Impl::crackChunk(uint32_t c, Vec3 dir, double time, bool chips,
                                   std::vector<HullEvent>& events) {
  if (chunk_state[c] != 0 || chunk_members[c].empty()) return;
  const Vec3 nc = length(chunk_normal[c]) > 0 ? chunk_normal[c] : -dir;
  Vec3 u = normalize(cross(dir, nc));
  if (!(length(u) > 0.1f)) {  // head-on: a hashed direction in the chunk's plane
    const Vec3 a = anyPerpendicular(nc), b = cross(nc, a);
    const float angle = 6.2831853f * unitOf(rnd(c, kSaltCrack));
    u = a * std::cos(angle) + b * std::sin(angle);
  }
  const float width = 0.6f * spacing;
  std::vector<uint32_t> cracked;
  uint32_t nearest = chunk_members[c][0];
  float nearest_d2 = std::numeric_limits<float>::infinity();
  for (uint32_t i : chunk_members[c]) {
    float t;
    const float d2 = lineDistance2(rest_pos[i], chunk_centroid[c], u, &t);
    if (d2 <= width * width) cracked.push_back(i);
    if (d2 < nearest_d2) {
      nearest_d2 = d2;
      nearest = i;
    }
  }
  if (cracked.empty()) cracked.push_back(nearest);
  for (uint32_t i : cracked) {
    slots[i].flags |= SF_HULL_FLAG_CRACKED;
    touch(i);
  }
  if (chips) {
    const size_t count = 2 + rnd(c, kSaltChip) % 3;
    for (size_t k = 0; k < count; ++k) {
      const uint32_t i = cracked[rnd(c, kSaltChip + 1 + k) % cracked.size()];
      spawnDebris(i, vecOf(slots[i].position), debrisVelocity(i, dir, {0, 0, 0}, 0.7f), time);
    }
  }
  chunk_state[c] = 1;
  chunk_hole[c] = cur_hole;
  events.push_back(
      {HullEvent::kChunkCracked, static_cast<int>(c), time, 0.0f, static_cast<int>(cracked.size())});
}

// Tears chunk c off: its skin flies as a body (when the pool has room), its hull slots go one layer deeper.
void Destruction::Impl::tearChunk(uint32_t c, Vec3 away, double time, std::vector<HullEvent>& events) {
  if (chunk_state[c] == 2 || chunk_members[c].empty()) return;
  std::vector<uint32_t> skin;
  for (uint32_t i : chunk_members[c])
    if (level(i) == 0) skin.push_back(i);
  const Vec3 velocity = normalize(away) * 1.2f + kUp * 0.8f + unitVector(rnd(c, kSaltBody + 200)) * 0.2f;
  const size_t used = spawnBody(skin, chunk_centroid[c], velocity, time, c);
  for (uint32_t i : chunk_members[c])
    if (level(i) < kMaxLevel) setLevel(i, level(i) + 1);
  chunk_state[c] = 2;
  chunk_hole[c] = cur_hole;
  if (cascade == static_cast<int64_t>(c)) cascade = -1;
  events.push_back({HullEvent::kChunkTorn, static_cast<int>(c), time, 0.0f, static_cast<int>(used)});
}

// ---- Support
// ------------------------------------------------------------------------------------------------

// After a hit's deepenings, over the changed slots and their neighbours:
// - settle: a slot whose every neighbour is at least two layers deeper drops to the shallowest of them (and
// its
//   neighbours are checked again);
// - islands: from each changed slot at level L, the shallower neighbours' component among slots shallower
// than L
//   (flood stopped past island_max); a component that small is cut off by deeper slots: it flies as a small
//   body (or debris when the pool has no room) and its slots drop to the shallowest level around it;
// - innards fade: a level-3 slot with no neighbour shallower than 3 shows the core.
void Destruction::Impl::supportChecks(double time, std::vector<HullEvent>& events) {
  std::vector<uint32_t>& work = scratch_work;
  work.clear();
  const uint32_t qstamp = stamp;
  auto enqueue = [&](uint32_t u) {
    if (queue_mark[u] != qstamp) {
      queue_mark[u] = qstamp;
      work.push_back(u);
    }
  };
  for (size_t k = 0; k < changed.size(); ++k) {
    enqueue(changed[k]);
    for (uint32_t v : around(changed[k])) enqueue(v);
  }
  for (size_t w = 0; w < work.size(); ++w) {
    const uint32_t u = work[w];
    queue_mark[u] = qstamp - 1;  // popped: may be queued again
    if (adj_start[u] == adj_start[u + 1]) continue;
    uint32_t lowest = kMaxLevel + 1;
    for (uint32_t v : around(u)) lowest = std::min(lowest, level(v));
    if (lowest < level(u) + 2 || lowest > kMaxLevel) continue;
    setLevel(u, lowest);
    for (uint32_t v : around(u)) enqueue(v);
  }

  if (opt.island_max > 0) {
    const size_t limit = static_cast<size_t>(opt.island_max);
    std::array<uint32_t, kMaxLevel + 1> level_stamp{};
    for (uint32_t l = 1; l <= kMaxLevel; ++l)
      level_stamp[l] = ++visit_stamp;  // one visit mark per level this hit
    std::vector<uint32_t>& island = scratch_island;
    for (size_t k = 0; k < changed.size(); ++k) {
      const uint32_t s = changed[k];
      const uint32_t lvl = level(s);
      if (lvl == 0) continue;
      for (uint32_t v0 : around(s)) {
        if (level(v0) >= lvl || visit_mark[v0] == level_stamp[lvl]) continue;
        island.clear();
        island.push_back(v0);
        visit_mark[v0] = level_stamp[lvl];
        bool small = true;
        for (size_t q = 0; q < island.size() && small; ++q)
          for (uint32_t w : around(island[q])) {
            if (level(w) >= lvl) continue;
            if (visit_mark[w] == level_stamp[lvl]) {
              // Seen by this flood, or by an earlier one that found a large component.
              if (std::find(island.begin(), island.end(), w) == island.end()) small = false;
              continue;
            }
            visit_mark[w] = level_stamp[lvl];
            island.push_back(w);
            if (island.size() > limit) {
              small = false;
              break;
            }
          }
        if (!small) continue;
        uint32_t around_level = kMaxLevel;
        for (uint32_t u : island)
          for (uint32_t w : around(u))
            if (level(w) >= lvl) around_level = std::min(around_level, level(w));
        std::sort(island.begin(), island.end());
        Vec3 pivot{0, 0, 0}, normal{0, 0, 0};
        for (uint32_t u : island) {
          pivot = pivot + vecOf(slots[u].position);
          normal = normal + rest_normal[u];
        }
        pivot = pivot / static_cast<float>(island.size());
        const Vec3 velocity = normalize(normal) * 1.0f + kUp * 0.5f;
        size_t used = spawnBody(island, pivot, velocity, time, island[0]);
        if (used == 0)
          for (uint32_t u : island) {
            spawnDebris(u, vecOf(slots[u].position), debrisVelocity(u, -rest_normal[u], {0, 0, 0}, 1.0f),
                        time);
            ++used;
          }
        for (uint32_t u : island) setLevel(u, std::max(around_level, level(u)));
        events.push_back({HullEvent::kIslandDetached, static_cast<int>(island[0]), time, 0.0f,
                          static_cast<int>(island.size())});
      }
    }
  }

  for (size_t k = 0; k < changed.size(); ++k) {
    const uint32_t s = changed[k];
    const std::span<const uint32_t> near = around(s);
    for (size_t j = 0; j <= near.size(); ++j) {
      const uint32_t u = j == 0 ? s : near[j - 1];
      if (level(u) != 3 || faded[u] || kindOf(slots[u]) != SF_HULL_KIND_LAYER) continue;
      bool shallower = false;
      for (uint32_t w : around(u)) shallower = shallower || level(w) < 3;
      if (shallower) continue;
      faded[u] = 1;
      setVec(slots[u].color, layerColor(u, kMaxLevel));
      slots[u].flags = (slots[u].flags & ~(SF_HULL_FLAG_HOT | SF_HULL_FLAG_SPARK)) | coreFlags(u);
      touch(u);
    }
  }
}

// Skin slots bordering a changed slot: a wound's edge, charred to half the skin colour.
void Destruction::Impl::woundEdges() {
  for (size_t k = 0; k < changed.size(); ++k)
    for (uint32_t v : around(changed[k])) {
      if (levels[v] != 0 || changed_mark[v] == stamp) continue;
      HullSlot& s = slots[v];
      if ((s.flags & SF_HULL_FLAG_WOUND) != 0 && slot_hole[v] == cur_hole) continue;
      s.flags |= SF_HULL_FLAG_WOUND;
      setVec(s.color, skin_color[v] * 0.5f);
      touch(v);
    }
}

void Destruction::Impl::partEvents(double time, std::vector<HullEvent>& events) {
  for (int p = 0; p < kParts; ++p) {
    const size_t pi = static_cast<size_t>(p);
    if (part_count[pi] == 0) continue;
    const float share = static_cast<float>(part_knocked[pi]) / static_cast<float>(part_count[pi]);
    if (!part_disabled[pi] && share >= opt.part_threshold) {
      part_disabled[pi] = true;
      events.push_back({HullEvent::kPartDisabled, p, time, share, static_cast<int>(part_knocked[pi])});
    } else if (part_disabled[pi] && share < opt.part_threshold) {
      part_disabled[pi] = false;
      events.push_back({HullEvent::kPartRestored, p, time, share, static_cast<int>(part_knocked[pi])});
    }
  }
}

// ---- Hits
// ---------------------------------------------------------------------------------------------------

std::vector<HullEvent> Destruction::Impl::hit(const Hit& h, double time) {
  if (!finite(h.direction) || !(length(h.direction) > 0))
    throw Error("hull hit: the direction must be a finite non-zero vector");
  if (h.has_point && !finite(h.point)) throw Error("hull hit: the point must be finite");
  if (!std::isfinite(h.damage) || h.damage < 0) throw Error("hull hit: the damage must be finite and >= 0");
  if (!std::isfinite(time)) throw Error("hull hit: the time must be finite");
  std::vector<HullEvent> events;
  if (n == 0) return events;
  const Vec3 dir = normalize(h.direction);
  const Vec3 point = h.has_point ? h.point : defaultPoint(dir);
  last_point = point;
  if (h.damage == 0) return events;
  const double damage = static_cast<double>(h.damage);
  const float share = std::clamp(opt.debris_share, 0.0f, 1.0f);

  ++hit_count;
  ++stamp;
  changed.clear();
  cur_hole = static_cast<int32_t>(holes.size());
  holes.emplace_back();
  open_holes.push_back(static_cast<uint32_t>(cur_hole));

  std::vector<uint32_t> knocked;
  bool exit_found = false;
  uint32_t exit_slot = 0;
  float t_exit = 0;
  switch (h.kind) {
    case HitKind::kShot:
      knocked = lineCandidates(point, dir, -1.0f, countOf(damage, n));
      for (uint32_t i : knocked) knock(i, time, share, dir, {0, 0, 0});
      break;
    case HitKind::kMelee:
      knocked = lineCandidates(point, dir, -1.0f, countOf(damage * 0.5, n));
      for (uint32_t i : knocked) knock(i, time, 0.0f, dir, {0, 0, 0});
      break;
    case HitKind::kBlast:
      knocked = sphereCandidates(point, countOf(damage * 2.5, n));
      for (uint32_t i : knocked) knock(i, time, std::min(1.0f, share * 0.8f), dir, {0, 0, 0});
      break;
    case HitKind::kEpicenter:
      knocked = columnCandidates(point, countOf(damage * 2.5, n));
      for (uint32_t i : knocked) knock(i, time, std::min(1.0f, share * 1.2f), dir, kUp);
      break;
    case HitKind::kPierce: {
      // Spall at the entry, a crack channel along the flight, a cluster (or the chunk) blown out at the exit.
      knocked = lineCandidates(point, dir, -1.0f, std::max<size_t>(1, countOf(damage * 0.3, n)));
      for (uint32_t i : knocked) knock(i, time, share, dir, {0, 0, 0});
      exit_found = exitOf(point, dir, &exit_slot, &t_exit);
      const float channel2 = 0.5625f * radius * radius;  // 0.75 radius
      const float t_end = exit_found ? t_exit - 0.5f * radius : 4.0f * radius;
      auto inChannel = [&](uint32_t i) {
        float t;
        return !(lineDistance2(rest_pos[i], point, dir, &t) > channel2 || t <= 0.5f * radius || t >= t_end);
      };
      // The channel's slots in index order (the order of the changed list and the hole).
      std::vector<uint32_t>& channel = scratch_slots;
      channel.clear();
      if (bounded(point, 0.75f * radius)) {
        search_grid->forNearSegment(point, dir, 0.5f * radius, t_end, 0.75f * radius, [&](uint32_t i) {
          if (inChannel(i)) channel.push_back(i);
        });
        std::sort(channel.begin(), channel.end());
      } else {
        for (uint32_t i = 0; i < n; ++i)
          if (inChannel(i)) channel.push_back(i);
      }
      for (uint32_t i : channel) {
        if (changed_mark[i] == stamp) continue;
        slots[i].flags |= SF_HULL_FLAG_CRACKED;
        if (!knock(i, time, 0.0f, dir, {0, 0, 0})) touch(i);
      }
      if (exit_found && !(has_chunks && (h.weapon == Weapon::kNone || h.weapon == Weapon::kRailgun))) {
        const std::vector<uint32_t> out =
            lineCandidates(rest_pos[exit_slot], dir, 1.0f, std::max<size_t>(1, countOf(damage * 0.5, n)));
        for (uint32_t i : out)
          if (changed_mark[i] != stamp) knock(i, time, std::min(1.0f, share * 1.5f), -dir, dir);
      }
      break;
    }
  }

  if (has_chunks && !knocked.empty()) {
    const uint32_t landed = chunk[knocked[0]];
    const bool melee = h.kind == HitKind::kMelee;
    switch (h.weapon) {
      case Weapon::kNone:
        if (h.kind == HitKind::kPierce) {
          if (exit_found) tearChunk(chunk[exit_slot], dir, time, events);
        } else if (!melee &&
                   (chunk_state[landed] == 1 || damage > static_cast<double>(chunk_members[landed].size()))) {
          tearChunk(landed, -dir, time, events);
        } else {
          crackChunk(landed, dir, time, !melee, events);
        }
        break;
      case Weapon::kCannon:
        // The cascade: the chunk the last shot cracked tears first, then this shot cracks (or tears) its own.
        if (cascade >= 0 && chunk_state[static_cast<size_t>(cascade)] == 1)
          tearChunk(static_cast<uint32_t>(cascade), chunk_centroid[static_cast<size_t>(cascade)] - centroid,
                    time, events);
        if (chunk_state[landed] == 1 && !melee) {
          tearChunk(landed, -dir, time, events);
        } else if (chunk_state[landed] == 0) {
          crackChunk(landed, dir, time, !melee, events);
          cascade = landed;
        }
        break;
      case Weapon::kMortar: {
        // Chunks torn radially about the epicentre (the knocked slots' centre), nearest first.
        Vec3 centre{0, 0, 0};
        for (uint32_t i : knocked) centre = centre + rest_pos[i];
        centre = centre / static_cast<float>(knocked.size());
        float reach = 0;
        for (uint32_t i : knocked) reach = std::max(reach, length(rest_pos[i] - centre));
        reach = 1.25f * std::max(reach, 2.0f * radius);
        std::vector<std::pair<float, uint32_t>> near;
        for (uint32_t c = 0; c < chunk_members.size(); ++c) {
          const float d = length(chunk_centroid[c] - centre);
          if (!chunk_members[c].empty() && (d <= reach || c == landed)) near.push_back({d, c});
        }
        std::sort(near.begin(), near.end());
        for (const auto& [d, c] : near) {
          Vec3 away = chunk_centroid[c] - centre;
          if (!(length(away) > 1e-6f)) away = -dir;
          tearChunk(c, away, time, events);
        }
        break;
      }
      case Weapon::kRailgun:
        if (!exit_found) exit_found = exitOf(point, dir, &exit_slot, &t_exit);
        if (exit_found) tearChunk(chunk[exit_slot], dir, time, events);
        break;
    }
  }

  supportChecks(time, events);
  woundEdges();
  partEvents(time, events);
  if (holes[static_cast<size_t>(cur_hole)].slots.empty()) {
    holes[static_cast<size_t>(cur_hole)].done = true;
    open_holes.pop_back();
  }
  ++revision;
  return events;
}

// ---- Heal and time
// ------------------------------------------------------------------------------------------

void Destruction::Impl::heal(double time, float amount) {
  if (!std::isfinite(amount) || !(amount > 0) || amount > 1)
    throw Error("hull heal: the amount must be in (0, 1]");
  if (!std::isfinite(time)) throw Error("hull heal: the time must be finite");
  const double start = std::max(time, last_time);
  const double rate = static_cast<double>(amount) / std::max(static_cast<double>(opt.heal_seconds), 1e-6);
  for (uint32_t hid : open_holes) {
    Hole& hole = holes[hid];
    if (!hole.healing) {
      hole.healing = true;
      hole.t = start;
      // Its slots' lerps, by index (a slot that has moved to a newer hole never comes back to this one).
      std::sort(hole.slots.begin(), hole.slots.end());
      hole.lerp.clear();
      for (uint32_t i : hole.slots) {
        if (slot_hole[i] != static_cast<int32_t>(hid)) continue;
        const HullSlot& s = slots[i];
        const Vec3 p = vecOf(s.position), c = vecOf(s.color);
        hole.lerp.push_back(
            {i, levelOf(s), s.flags, p, c, vecOf(initial[i].position) - p, vecOf(initial[i].color) - c});
      }
      hole.slots = {};
    } else {
      hole.progress += hole.rate * std::max(0.0, start - hole.t);
      hole.t = std::max(hole.t, start);
    }
    hole.rate += rate;
  }
  ++revision;
}

// Back to the original records (of a healing hole): chunk states it set return to intact.
void Destruction::Impl::finishHole(uint32_t hid) {
  Hole& hole = holes[hid];
  for (const Lerp& l : hole.lerp) {
    const uint32_t i = l.i;
    if (slot_hole[i] != static_cast<int32_t>(hid)) continue;
    countLevel(i, levelOf(slots[i]), 0);
    slots[i] = initial[i];
    levels[i] = 0;
    faded[i] = 0;
    slot_hole[i] = -1;
  }
  for (size_t c = 0; c < chunk_hole.size(); ++c)
    if (chunk_hole[c] == static_cast<int32_t>(hid)) {
      chunk_state[c] = 0;
      chunk_hole[c] = -1;
      if (cascade == static_cast<int64_t>(c)) cascade = -1;
    }
  hole.done = true;
  hole.slots = {};
  hole.lerp = {};
}

std::vector<HullEvent> Destruction::Impl::update(double time) {
  if (!std::isfinite(time)) throw Error("hull update: the time must be finite");
  if (time < last_time)
    throw Error("hull update: time went backwards (" + std::to_string(time) + " after " +
                std::to_string(last_time) + ")");
  last_time = time;
  std::vector<HullEvent> events;
  bool dirty = false;

  std::vector<uint32_t>& still_open = scratch_open;
  still_open.clear();
  for (uint32_t hid : open_holes) {
    Hole& hole = holes[hid];
    if (!hole.healing) {
      still_open.push_back(hid);
      continue;
    }
    hole.progress += hole.rate * std::max(0.0, time - hole.t);
    hole.t = std::max(hole.t, time);
    dirty = true;
    if (hole.progress >= 1.0 - 1e-9) {
      finishHole(hid);
      continue;
    }
    still_open.push_back(hid);
    const float p = static_cast<float>(hole.progress);
    for (const Lerp& f : hole.lerp) {
      const uint32_t i = f.i;
      if (slot_hole[i] != static_cast<int32_t>(hid)) continue;
      HullSlot& s = slots[i];
      setVec(s.position, f.position + f.to_position * p);
      setVec(s.color, f.color + f.to_color * p);
      const uint32_t lvl =
          std::min(kMaxLevel, static_cast<uint32_t>(std::ceil(static_cast<float>(f.level) * (1.0f - p))));
      countLevel(i, levels[i], lvl);
      levels[i] = static_cast<uint8_t>(lvl);
      s.flags = lvl | kindBits(SF_HULL_KIND_SKIN) | (f.flags & (SF_HULL_FLAG_WOUND | SF_HULL_FLAG_CRACKED)) |
                (lvl == kMaxLevel ? f.flags & (SF_HULL_FLAG_HOT | SF_HULL_FLAG_SPARK) : 0u);
    }
  }
  open_holes.swap(still_open);

  for (size_t k = 0; k < pool; ++k)
    if (pool_kind[k] == SF_HULL_KIND_DEBRIS && time >= pool_end[k]) {
      slots[n + k] = off;
      setPoolKind(k, SF_HULL_KIND_OFF);
      dirty = true;
    }
  for (size_t b = 0; b < bodies.size(); ++b)
    if (body_alive[b] && time >= body_end[b]) {
      for (uint32_t at : body_slots[b]) {
        slots[at] = off;
        setPoolKind(at - n, SF_HULL_KIND_OFF);
      }
      body_slots[b].clear();
      bodies[b] = HullBody{};
      body_alive[b] = 0;
      dirty = true;
    }
  partEvents(time, events);
  if (dirty) ++revision;
  return events;
}

// ---- Public
// -------------------------------------------------------------------------------------------------

Destruction::Destruction(const Spl2Hull& hull, const DestructionOptions& options)
    : impl_(std::make_unique<Impl>(hull, options)) {}
Destruction::~Destruction() = default;
Destruction::Destruction(Destruction&&) noexcept = default;
Destruction& Destruction::operator=(Destruction&&) noexcept = default;

std::vector<HullEvent> Destruction::hit(const Hit& hit, double time) {
  return impl_->hit(hit, time);
}
void Destruction::heal(double time, float amount) {
  impl_->heal(time, amount);
}
std::vector<HullEvent> Destruction::update(double time) {
  return impl_->update(time);
}

void Destruction::emitIon(uint32_t source, Vec3 position, Vec3 velocity, double time) {
  Impl& m = *impl_;
  if (source >= m.n) throw Error("hull ion trail: source slot " + std::to_string(source) + " out of range");
  const int64_t at = m.allocPool();
  if (at < 0) return;
  HullSlot& d = m.slots[static_cast<size_t>(at)];
  d = m.off;
  setVec(d.position, position);
  d.flags = kindBits(SF_HULL_KIND_DEBRIS) | SF_HULL_FLAG_ION;
  m.setPoolKind(static_cast<size_t>(at) - m.n, SF_HULL_KIND_DEBRIS);
  setVec(d.color, {0.45f, 0.8f, 1.0f});  // the pass colours ion droplets by age
  d.opacity = 0.85f;
  setVec(d.velocity, velocity);
  d.birth = static_cast<float>(time);
  d.source = source;
  d.size = kDebrisSize;
  m.pool_end[static_cast<size_t>(at) - m.n] = time + static_cast<double>(m.opt.debris_life);
  ++m.revision;
}
const std::vector<HullSlot>& Destruction::slots() const {
  return impl_->slots;
}
const std::vector<HullBody>& Destruction::bodies() const {
  return impl_->bodies;
}
const std::vector<HullRest>& Destruction::rest() const {
  return impl_->rest;
}
size_t Destruction::hullSlots() const {
  return impl_->n;
}
const std::vector<HullSlot>& Destruction::initialSlots() const {
  return impl_->initial;
}
uint64_t Destruction::revision() const {
  return impl_->revision;
}
Vec3 Destruction::lastHitPoint() const {
  return impl_->last_point;
}

float Destruction::partDamage(int part) const {
  if (part < 0 || part >= kParts) return 0;
  const size_t p = static_cast<size_t>(part);
  return impl_->part_count[p] == 0
             ? 0.0f
             : static_cast<float>(impl_->part_knocked[p]) / static_cast<float>(impl_->part_count[p]);
}

bool Destruction::partDisabled(int part) const {
  return part >= 0 && part < kParts && impl_->part_disabled[static_cast<size_t>(part)];
}

const std::vector<uint32_t>& Destruction::neighbours(size_t i) const {
  static const std::vector<uint32_t> kNone;
  return i < impl_->n ? impl_->nbr[i] : kNone;
}

float Destruction::supportRadius() const {
  return impl_->radius;
}

}  // namespace sf::hull
