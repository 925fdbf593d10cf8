// Destruction of splat hulls (hull/destruction.h) on constructed hulls with closed-form expectations: a
// Fibonacci sphere shell (outward normals, parts by octant, optional CHNK from a lattice of cells). Rest
// records against the hull and against the covariance of spl2ToCloud's gaussians; the initial slots;
// determinism for a seed; SHOT on the attacked side near the line; holes that never show the background; the
// onion deepening inward and capped; islands cut off by a ring of deeper slots; settling; part events at the
// threshold; heal back to the original records bit for bit; debris and bodies going off; fixed slot
// addresses; chunk cracks and tears per weapon; errors.
#include "hull/destruction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/covariance.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "io/spl2.h"

namespace sf::hull {
namespace {

constexpr float kRadius = 0.7f;
constexpr size_t kCount = 2000, kCoreCount = 400;

std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

int octant(Vec3 p) {
  return (p.x > 0 ? 1 : 0) + (p.y > 0 ? 2 : 0) + (p.z > 0 ? 4 : 0);
}

// A sphere shell of kCount splats on a Fibonacci lattice (the first kCoreCount core), tangent axes of about
// the lattice spacing, outward normals, part = octant, varied colours and channels; with `chunks`, CHNK from
// cells of a 0.35 lattice (ids in order of first appearance), material = chunk % 6.
Spl2Hull sphereHull(bool chunks) {
  Spl2Hull h;
  h.core.resize(kCoreCount);
  h.shell.resize(kCount - kCoreCount);
  const float spacing = std::sqrt(4.0f * 3.14159265f * kRadius * kRadius / static_cast<float>(kCount));
  const float golden = 3.14159265f * (3.0f - std::sqrt(5.0f));
  for (size_t i = 0; i < kCount; ++i) {
    const float y = 1.0f - 2.0f * (static_cast<float>(i) + 0.5f) / static_cast<float>(kCount);
    const float r = std::sqrt(1.0f - y * y), a = golden * static_cast<float>(i);
    const Vec3 nrm{r * std::cos(a), y, r * std::sin(a)};
    const Vec3 e0 = normalize(cross(nrm, std::fabs(nrm.y) < 0.9f ? Vec3{0, 1, 0} : Vec3{1, 0, 0}));
    const Vec3 e1 = cross(nrm, e0);
    const bool core = i < kCoreCount;
    Spl2Block& b = core ? h.core : h.shell;
    const size_t row = core ? i : i - kCoreCount;
    const float op = core ? 0.95f : 0.4f + 0.4f * static_cast<float>(i % 7) / 7.0f;
    const float factor = 3.0f * (core ? spl2CoreRadius(op) : 1.0f);
    b.pos[row] = nrm * kRadius;
    b.ax0[row] = e0 * (0.6f * spacing * factor);
    b.ax1[row] = e1 * (0.4f * spacing * factor);
    b.normal[row] = nrm;
    b.color[row] = {0.2f + 0.6f * static_cast<float>(i % 5) / 5.0f, 0.5f,
                    0.3f + 0.1f * static_cast<float>(i % 3)};
    b.opacity[row] = op;
    b.attrs[row] = {static_cast<float>(i % 256),
                    static_cast<float>(octant(b.pos[row]) * 16 + static_cast<int>(i % 16)), 0.0f,
                    static_cast<float>((i * 37) % 256)};
  }
  if (chunks) {
    h.has_chunks = true;
    h.chunk_of.resize(kCount);
    h.material_of.resize(kCount);
    std::map<std::array<int, 3>, uint16_t> ids;
    for (size_t i = 0; i < kCount; ++i) {
      const Vec3 p = i < kCoreCount ? h.core.pos[i] : h.shell.pos[i - kCoreCount];
      const std::array<int, 3> cell = {static_cast<int>(std::floor(p.x / 0.35f)),
                                       static_cast<int>(std::floor(p.y / 0.35f)),
                                       static_cast<int>(std::floor(p.z / 0.35f))};
      auto it = ids.find(cell);
      if (it == ids.end()) it = ids.emplace(cell, static_cast<uint16_t>(ids.size())).first;
      h.chunk_of[i] = it->second;
      h.material_of[i] = static_cast<uint8_t>(it->second % 6);
    }
    spl2ComputeChunkTable(h);
  }
  return h;
}

const Spl2Hull& plainHull() {
  static const Spl2Hull h = sphereHull(false);
  return h;
}
const Spl2Hull& chunkHull() {
  static const Spl2Hull h = sphereHull(true);
  return h;
}

Vec3 vec(const float* v) {
  return {v[0], v[1], v[2]};
}
uint32_t levelOf(const HullSlot& s) {
  return s.flags & SF_HULL_LEVEL_MASK;
}
uint32_t kindOf(const HullSlot& s) {
  return (s.flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT;
}

bool sameBytes(const std::vector<HullSlot>& a, const std::vector<HullSlot>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(HullSlot)) == 0;
}

// A SHOT aimed straight down the normal of slot i at its rest position: damage 1 knocks exactly that slot.
Hit at(const Destruction& d, size_t i, float damage = 1.0f) {
  const HullRest& r = d.rest()[i];
  Hit h;
  h.direction = -vec(r.normal);
  h.point = vec(r.position);
  h.has_point = true;
  h.damage = damage;
  return h;
}

size_t knockedCount(const Destruction& d) {
  size_t k = 0;
  for (size_t i = 0; i < d.hullSlots(); ++i) k += levelOf(d.slots()[i]) > 0 ? 1 : 0;
  return k;
}

size_t countKind(const Destruction& d, uint32_t kind) {
  size_t k = 0;
  for (size_t i = d.hullSlots(); i < d.slots().size(); ++i) k += kindOf(d.slots()[i]) == kind ? 1 : 0;
  return k;
}

HullSlot offRecord() {
  HullSlot s{};
  s.flags = SF_HULL_KIND_OFF << SF_HULL_KIND_SHIFT;
  s.normal_sign = 1;
  s.size = 1;
  return s;
}

// A mixed script of every kind and weapon, from directions around the sphere, with updates between.
std::vector<HullEvent> runScript(Destruction& d, int hits, double t0 = 0) {
  const HitKind kinds[] = {HitKind::kShot, HitKind::kBlast, HitKind::kEpicenter, HitKind::kMelee,
                           HitKind::kPierce};
  const Weapon weapons[] = {Weapon::kNone, Weapon::kCannon, Weapon::kMortar, Weapon::kRailgun};
  std::vector<HullEvent> events;
  for (int k = 0; k < hits; ++k) {
    Hit h;
    h.kind = kinds[k % 5];
    h.weapon = weapons[(k / 5) % 4];
    const float a = 0.7f * static_cast<float>(k), e = 0.3f * std::sin(1.3f * static_cast<float>(k));
    h.direction = {-std::cos(a) * std::cos(e), -std::sin(e), -std::sin(a) * std::cos(e)};
    if (h.kind == HitKind::kEpicenter) h.direction = {0, 1, 0};
    h.damage = 10.0f + static_cast<float>((k * 7) % 30);
    const double t = t0 + 0.1 * k;
    for (HullEvent& ev : d.hit(h, t)) events.push_back(ev);
    for (HullEvent& ev : d.update(t + 0.05)) events.push_back(ev);
  }
  return events;
}

// ---- Rest records and initial slots
// -------------------------------------------------------------------------

TEST(HullDestruction, RestRecordsFollowTheHullAndItsGaussians) {
  for (bool chunks : {false, true}) {
    const Spl2Hull& h = chunks ? chunkHull() : plainHull();
    const std::vector<HullRest> rest = hullRestRecords(h);
    const GaussianCloud cloud = spl2ToCloud(h);
    ASSERT_EQ(rest.size(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      const bool core = i < kCoreCount;
      const Spl2Block& b = core ? h.core : h.shell;
      const size_t row = core ? i : i - kCoreCount;
      const HullRest& r = rest[i];
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(r.position[a], b.pos[row][a]);
        EXPECT_EQ(r.normal[a], b.normal[row][a]);
      }
      EXPECT_FLOAT_EQ(r.ao, b.attrs[row][0] / 255.0f);
      const int y = static_cast<int>(b.attrs[row][1]);
      EXPECT_FLOAT_EQ(r.emission, static_cast<float>(y % 16) / 15.0f);
      const uint32_t part = static_cast<uint32_t>(y / 16);
      EXPECT_EQ(part, static_cast<uint32_t>(octant(b.pos[row])));
      const uint32_t material = chunks ? h.material_of[i] : 0u, chunk = chunks ? h.chunk_of[i] : 0u;
      EXPECT_EQ(r.channels, part | material << 8 | chunk << 16) << i;
      EXPECT_EQ(r.seed, static_cast<uint32_t>(b.attrs[row][3]));
      const Cov6 cov = covarianceFromScaleRotation(cloud.scales[i], cloud.rotations[i]);
      for (size_t c = 0; c < 6; ++c) EXPECT_EQ(r.cov[c], cov[c]) << i << " " << c;
    }
  }
}

TEST(HullDestruction, InitialSlotsSitAtTheSkinAndThePoolIsOff) {
  DestructionOptions o;
  o.debris_pool = 100;
  const Destruction d(plainHull(), o);
  ASSERT_EQ(d.hullSlots(), kCount);
  ASSERT_EQ(d.slots().size(), kCount + 100);
  ASSERT_EQ(d.rest().size(), kCount);
  EXPECT_TRUE(d.bodies().empty());
  const Spl2Hull& h = plainHull();
  for (size_t i = 0; i < kCount; ++i) {
    const bool core = i < kCoreCount;
    const Spl2Block& b = core ? h.core : h.shell;
    const size_t row = core ? i : i - kCoreCount;
    HullSlot want{};
    for (int a = 0; a < 3; ++a) {
      want.position[a] = b.pos[row][a];
      want.color[a] = b.color[row][a];
    }
    want.flags = SF_HULL_KIND_SKIN << SF_HULL_KIND_SHIFT;
    want.opacity = b.opacity[row];
    want.source = static_cast<uint32_t>(i);
    want.normal_sign = 1;
    want.size = 1;
    EXPECT_EQ(std::memcmp(&want, &d.slots()[i], sizeof(HullSlot)), 0) << i;
  }
  const HullSlot off = offRecord();
  for (size_t i = kCount; i < d.slots().size(); ++i)
    EXPECT_EQ(std::memcmp(&off, &d.slots()[i], sizeof(HullSlot)), 0) << i;
  for (int p = 0; p < 8; ++p) EXPECT_EQ(d.partDamage(p), 0.0f);
  EXPECT_NEAR(length(d.lastHitPoint()), 0.0f, 1e-3f);  // the centre of a sphere
}

TEST(HullDestruction, SupportGraphIsSymmetricBoundedAndCalibrated) {
  const Destruction d(plainHull());
  const float r = d.supportRadius();
  EXPECT_GT(r, 0.0f);
  size_t total = 0;
  for (size_t i = 0; i < kCount; ++i) {
    const std::vector<uint32_t>& nb = d.neighbours(i);
    EXPECT_LE(nb.size(), 24u);
    total += nb.size();
    for (uint32_t j : nb) {
      EXPECT_NE(j, i);
      EXPECT_LE(length(vec(d.rest()[i].position) - vec(d.rest()[j].position)), r * 1.0001f);
      const std::vector<uint32_t>& back = d.neighbours(j);
      EXPECT_NE(std::find(back.begin(), back.end(), static_cast<uint32_t>(i)), back.end()) << i << " " << j;
    }
  }
  const double mean = static_cast<double>(total) / kCount;
  EXPECT_GE(mean, 8.0);
  EXPECT_LE(mean, 16.0);
  EXPECT_TRUE(d.neighbours(kCount).empty());  // pool slots have none
}

// ---- Hits
// ---------------------------------------------------------------------------------------------------

TEST(HullDestruction, ShotKnocksAboutDamageSlotsOnTheAttackedSideNearTheLine) {
  Destruction d(plainHull());
  const std::vector<HullSlot> initial = d.slots();
  Hit h;
  h.direction = {0, 0, -1};  // travelling -z, aimed at the centre: lands on the +z pole
  h.damage = 40;
  const uint64_t rev = d.revision();
  d.hit(h, 1.0);
  EXPECT_NE(d.revision(), rev);
  EXPECT_NEAR(d.lastHitPoint().z, kRadius, 0.02f);
  const size_t knocked = knockedCount(d);
  EXPECT_GE(knocked, 30u);
  EXPECT_LE(knocked, 55u);
  // The disc holding 40 of kCount slots on the sphere has radius 2 R sqrt(40 / kCount).
  const float disc = 2.0f * kRadius * std::sqrt(40.0f / kCount);
  for (size_t i = 0; i < kCount; ++i) {
    if (levelOf(d.slots()[i]) == 0) continue;
    const HullRest& r = d.rest()[i];
    EXPECT_LT(dot(vec(r.normal), h.direction), 0.0f) << i;
    EXPECT_LT(std::hypot(r.position[0], r.position[1]), 1.5f * disc) << i;
    EXPECT_EQ(levelOf(d.slots()[i]), 1u);
    EXPECT_EQ(kindOf(d.slots()[i]), SF_HULL_KIND_LAYER);
    EXPECT_NE(d.slots()[i].flags & SF_HULL_FLAG_WOUND, 0u);
  }
  // Some debris flies (share 0.35 of about 40), white, small, born now, from a knocked slot.
  const size_t debris = countKind(d, SF_HULL_KIND_DEBRIS);
  EXPECT_GE(debris, 3u);
  EXPECT_LE(debris, 30u);
  for (size_t i = kCount; i < d.slots().size(); ++i) {
    const HullSlot& s = d.slots()[i];
    if (kindOf(s) != SF_HULL_KIND_DEBRIS) continue;
    EXPECT_EQ(s.birth, 1.0f);
    EXPECT_EQ(s.color[0], 1.0f);
    EXPECT_LT(s.size, 1.0f);
    ASSERT_LT(s.source, kCount);
    EXPECT_GT(levelOf(d.slots()[s.source]), 0u);
    EXPECT_EQ(s.opacity, d.slots()[s.source].opacity);
    const Vec3 v = vec(s.velocity);
    EXPECT_GT(length(v), 0.3f);
    EXPECT_LT(length(v), 5.0f);
    EXPECT_GT(dot(v, vec(d.rest()[s.source].normal)), 0.0f);  // flies out of the hull
  }
  // The wound's edge: skin slots next to the crater are charred and flagged.
  size_t edges = 0;
  for (size_t i = 0; i < kCount; ++i) {
    const HullSlot& s = d.slots()[i];
    if (levelOf(s) == 0 && (s.flags & SF_HULL_FLAG_WOUND) != 0) {
      ++edges;
      for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(s.color[c], initial[i].color[c] * 0.5f);
    }
  }
  EXPECT_GT(edges, 5u);
}

TEST(HullDestruction, KindsShapeTheCandidates) {
  Hit h;
  h.direction = {0, 0, -1};
  h.damage = 20;
  {
    Destruction d(plainHull());
    h.kind = HitKind::kBlast;
    d.hit(h, 0);
    EXPECT_GE(knockedCount(d), 40u);  // about 2.5 x damage
    EXPECT_LE(knockedCount(d), 70u);
  }
  {
    Destruction d(plainHull());
    h.kind = HitKind::kMelee;
    d.hit(h, 0);
    EXPECT_GE(knockedCount(d), 8u);  // damage / 2, nothing flies
    EXPECT_LE(knockedCount(d), 14u);
    EXPECT_EQ(countKind(d, SF_HULL_KIND_DEBRIS), 0u);
  }
  {
    Destruction d(plainHull());
    Hit e;
    e.kind = HitKind::kEpicenter;
    e.direction = {0, 1, 0};  // a mine below: the top is torn
    e.damage = 20;
    d.hit(e, 0);
    EXPECT_GE(knockedCount(d), 40u);
    for (size_t i = 0; i < kCount; ++i)
      if (levelOf(d.slots()[i]) > 0) {
        EXPECT_GT(d.rest()[i].position[1], 0.5f * kRadius) << i;
      }
  }
  {
    Destruction d(plainHull());
    Hit p;
    p.kind = HitKind::kPierce;
    p.direction = {0, 0, -1};
    p.damage = 20;
    d.hit(p, 0);
    bool entry = false, exit = false;
    for (size_t i = 0; i < kCount; ++i) {
      if (levelOf(d.slots()[i]) == 0) continue;
      entry = entry || d.rest()[i].position[2] > 0.6f;
      exit = exit || d.rest()[i].position[2] < -0.6f;
    }
    EXPECT_TRUE(entry);
    EXPECT_TRUE(exit);
  }
}

// A flat square lattice of side x side core splats on z = 0 facing +z, at exact binary coordinates: hits on
// it meet many slots at exactly equal distances (ties).
Spl2Hull latticeHull(size_t side) {
  Spl2Hull h;
  h.core.resize(side * side);
  for (size_t i = 0; i < side * side; ++i) {
    h.core.pos[i] = {static_cast<float>(i % side) * 0.03125f, static_cast<float>(i / side) * 0.03125f, 0.0f};
    h.core.ax0[i] = {0.012f, 0, 0};
    h.core.ax1[i] = {0, 0.012f, 0};
    h.core.normal[i] = {0, 0, 1};
    h.core.color[i] = {0.5f, 0.4f, 0.3f};
    h.core.opacity[i] = 0.95f;
    h.core.attrs[i] = {128.0f, static_cast<float>((i % 8) * 16), 0.0f, static_cast<float>(i % 256)};
  }
  return h;
}

// Brute-force rankings over every slot, with the keys of the documented rules (squared distances as the
// destruction computes them) and ties by index.
float lineDistance2(Vec3 p, Vec3 origin, Vec3 dir, float* t) {
  const Vec3 d = p - origin;
  *t = dot(d, dir);
  const Vec3 off = d - dir * *t;
  return dot(off, off);
}

std::set<size_t> firstOf(std::vector<std::pair<float, size_t>> ranked, size_t k) {
  std::sort(ranked.begin(), ranked.end());
  std::set<size_t> out;
  for (size_t j = 0; j < std::min(k, ranked.size()); ++j) out.insert(ranked[j].second);
  return out;
}

// The k slots nearest the line whose normal faces `sign` along it, within `window` of the point along it.
std::set<size_t> nearestToLine(const Destruction& d, Vec3 point, Vec3 dir, float sign, size_t k,
                               float window) {
  std::vector<std::pair<float, size_t>> ranked;
  for (size_t i = 0; i < d.hullSlots(); ++i) {
    if (!(dot(vec(d.rest()[i].normal), dir) * sign > 0)) continue;
    float t;
    const float d2 = lineDistance2(vec(d.rest()[i].position), point, dir, &t);
    if (std::fabs(t) <= window) ranked.push_back({d2, i});
  }
  return firstOf(std::move(ranked), k);
}

std::set<size_t> nearestToPoint(const Destruction& d, Vec3 point, size_t k) {
  std::vector<std::pair<float, size_t>> ranked;
  for (size_t i = 0; i < d.hullSlots(); ++i) {
    const Vec3 off = vec(d.rest()[i].position) - point;
    ranked.push_back({dot(off, off), i});
  }
  return firstOf(std::move(ranked), k);
}

std::set<size_t> knockedSet(const Destruction& d) {
  std::set<size_t> out;
  for (size_t i = 0; i < d.hullSlots(); ++i)
    if (levelOf(d.slots()[i]) > 0) out.insert(i);
  return out;
}

// The candidates of hits given a point (the searches are bounded with the support grid) are the rankings over
// every slot: BLAST the round(2.5 damage) slots nearest the point; SHOT and MELEE the damage (damage / 2)
// slots facing the shot nearest its line (few enough that the window along the line is 4 support radii);
// PIERCE the entry's spall, the crack channel (within 0.75 radii of the line, from half a radius in to half a
// radius before the exit) and the exit's spall (facing along the flight, about the farthest such slot within
// 2 radii of the line). Islands off: on an intact hull the knocked slots are exactly the candidates (each hit
// is healed away before the next).
TEST(HullDestruction, CandidatesAreTheRankingsOverEverySlot) {
  DestructionOptions o;
  o.island_max = 0;
  const Spl2Hull lattice = latticeHull(40);
  const Vec3 axes[] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  const float damage = 12;
  size_t checked = 0;
  for (const Spl2Hull* hull : {&plainHull(), &lattice}) {
    const bool flat = hull == &lattice;
    Destruction d(*hull, o);
    const float r = d.supportRadius();
    double time = 0;
    for (size_t at = 7; at < d.hullSlots(); at += d.hullSlots() / 9) {
      // On the lattice: a lattice point and a cell's centre, where four slots tie.
      for (int centre = 0; centre < (flat ? 2 : 1); ++centre) {
        const Vec3 point =
            vec(d.rest()[at].position) + Vec3{0.015625f, 0.015625f, 0} * static_cast<float>(centre);
        for (const Vec3 axis : axes) {
          if (flat && axis.z != -1) continue;  // the lattice is hit from its front
          Hit h;
          h.direction = axis;
          h.point = point;
          h.has_point = true;
          h.damage = damage;
          for (HitKind kind : {HitKind::kShot, HitKind::kMelee, HitKind::kBlast, HitKind::kPierce}) {
            h.kind = kind;
            ASSERT_TRUE(knockedSet(d).empty());
            d.hit(h, time);
            std::set<size_t> expected;
            if (kind == HitKind::kShot) expected = nearestToLine(d, point, axis, -1, 12, 4 * r);
            if (kind == HitKind::kMelee) expected = nearestToLine(d, point, axis, -1, 6, 4 * r);
            if (kind == HitKind::kBlast) expected = nearestToPoint(d, point, 30);
            if (kind == HitKind::kPierce) {
              expected = nearestToLine(d, point, axis, -1, 4, 4 * r);
              bool found = false;
              size_t exit = 0;
              float t_exit = 0;
              for (size_t i = 0; i < d.hullSlots(); ++i) {
                float t;
                if (!(dot(vec(d.rest()[i].normal), axis) > 0) ||
                    lineDistance2(vec(d.rest()[i].position), point, axis, &t) > 4.0f * r * r || t <= r)
                  continue;
                if (!found || t > t_exit) {
                  found = true;
                  exit = i;
                  t_exit = t;
                }
              }
              const float t_end = found ? t_exit - 0.5f * r : 4.0f * r;
              for (size_t i = 0; i < d.hullSlots(); ++i) {
                float t;
                if (lineDistance2(vec(d.rest()[i].position), point, axis, &t) <= 0.5625f * r * r &&
                    t > 0.5f * r && t < t_end)
                  expected.insert(i);
              }
              EXPECT_TRUE(!flat || !found);  // the lattice is one layer: no exit
              if (found)
                for (size_t i : nearestToLine(d, vec(d.rest()[exit].position), axis, 1, 6, 4 * r))
                  expected.insert(i);
            }
            EXPECT_EQ(knockedSet(d), expected) << hitKindName(kind) << " at slot " << at << " along "
                                               << axis.x << "," << axis.y << "," << axis.z;
            ++checked;
            d.heal(time);
            time += 2.0;  // past the heal
            d.update(time);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 200u);
}

TEST(HullDestruction, HolesNeverShowTheBackground) {
  for (bool chunks : {false, true}) {
    Destruction d(chunks ? chunkHull() : plainHull());
    runScript(d, 60);
    for (size_t i = 0; i < kCount; ++i) {
      const HullSlot& s = d.slots()[i];
      const uint32_t kind = kindOf(s);
      EXPECT_TRUE(kind == SF_HULL_KIND_SKIN || kind == SF_HULL_KIND_LAYER) << i;
      EXPECT_GT(s.opacity, 0.0f) << i;
      EXPECT_LE(levelOf(s), 4u);
      EXPECT_EQ(s.source, i);
      EXPECT_EQ(kind == SF_HULL_KIND_LAYER, levelOf(s) > 0) << i;
    }
    EXPECT_GT(knockedCount(d), 200u);
  }
}

TEST(HullDestruction, OnionDeepensInwardAndStopsAtTheCore) {
  Destruction d(plainHull());
  Hit h;
  h.direction = {-1, 0, 0};
  h.damage = 15;
  std::vector<uint32_t> before(kCount, 0);
  std::vector<float> depth(kCount, 0);
  for (int k = 0; k < 7; ++k) {
    d.hit(h, 0.1 * k);
    for (size_t i = 0; i < kCount; ++i) {
      const HullSlot& s = d.slots()[i];
      const uint32_t lvl = levelOf(s);
      EXPECT_GE(lvl, before[i]) << i;
      EXPECT_LE(lvl, 4u);
      const Vec3 off = vec(s.position) - vec(d.rest()[i].position);
      const Vec3 nrm = vec(d.rest()[i].normal);
      if (lvl > 0) {
        EXPECT_LT(dot(off, nrm), 0.0f) << i;  // inward
        if (lvl > before[i]) {
          EXPECT_GT(length(off), depth[i]) << i;  // deeper each layer
        }
      } else {
        EXPECT_EQ(length(off), 0.0f);
      }
      before[i] = lvl;
      depth[i] = length(off);
    }
  }
  // The slot under the line went through every layer and stays at the core.
  size_t at_core = 0;
  for (size_t i = 0; i < kCount; ++i) at_core += before[i] == 4 ? 1 : 0;
  EXPECT_GE(at_core, 5u);
  // The core: near-black, some hot points or sparks among many core slots are allowed, never another kind.
  for (size_t i = 0; i < kCount; ++i)
    if (before[i] == 4) {
      EXPECT_LT(d.slots()[i].color[0], 0.05f);
    }
}

TEST(HullDestruction, RingOfDeeperSlotsDetachesTheIsland) {
  Destruction d(plainHull());
  // The patch: the slot nearest the +y pole and its neighbours; the ring: every neighbour of the patch
  // outside it (the graph is symmetric, so the ring cuts the patch off).
  size_t pole = 0;
  for (size_t i = 0; i < kCount; ++i)
    if (d.rest()[i].position[1] > d.rest()[pole].position[1]) pole = i;
  std::set<uint32_t> patch = {static_cast<uint32_t>(pole)};
  for (uint32_t j : d.neighbours(pole)) patch.insert(j);
  ASSERT_LE(patch.size(), 24u);
  std::set<uint32_t> ring;
  for (uint32_t i : patch)
    for (uint32_t j : d.neighbours(i))
      if (!patch.count(j)) ring.insert(j);
  ASSERT_GT(ring.size(), 8u);
  size_t shot = 0;
  for (uint32_t j : ring) {
    const std::vector<HullEvent> events = d.hit(at(d, j), 0.01 * static_cast<double>(shot));
    ++shot;
    EXPECT_EQ(levelOf(d.slots()[j]), 1u);
    if (shot < ring.size()) {
      for (const HullEvent& e : events) EXPECT_NE(e.type, HullEvent::kIslandDetached);
      for (uint32_t i : patch) EXPECT_EQ(levelOf(d.slots()[i]), 0u);
    } else {
      ASSERT_EQ(events.size(), 1u);
      EXPECT_EQ(events[0].type, HullEvent::kIslandDetached);
      EXPECT_EQ(events[0].index, static_cast<int>(*patch.begin()));
      EXPECT_EQ(events[0].slots, static_cast<int>(patch.size()));
      EXPECT_EQ(events[0].describe(), "island at slot " + std::to_string(*patch.begin()) + " detached (" +
                                          std::to_string(patch.size()) + " slots)");
    }
  }
  for (uint32_t i : patch) EXPECT_EQ(levelOf(d.slots()[i]), 1u);
  // It flies as a small body: a skin copy and an inner copy of each of its slots.
  ASSERT_EQ(d.bodies().size(), 1u);
  size_t outer = 0, inner = 0;
  for (size_t i = kCount; i < d.slots().size(); ++i) {
    const HullSlot& s = d.slots()[i];
    if (kindOf(s) != SF_HULL_KIND_BODY) continue;
    EXPECT_TRUE(patch.count(s.source));
    EXPECT_EQ(s.body, 0u);
    (s.normal_sign > 0 ? outer : inner) += 1;
  }
  EXPECT_EQ(outer, patch.size());
  EXPECT_EQ(inner, patch.size());
}

TEST(HullDestruction, UnsupportedSlotSettles) {
  DestructionOptions o;
  o.island_max = 0;  // islands off: a lone slot would otherwise detach first
  Destruction d(plainHull(), o);
  const size_t s = 1234;
  const std::vector<uint32_t> nb = d.neighbours(s);
  ASSERT_GE(nb.size(), 4u);
  double t = 0;
  for (uint32_t j : nb) d.hit(at(d, j), t += 0.01);
  EXPECT_EQ(levelOf(d.slots()[s]), 0u);
  for (size_t k = 0; k < nb.size(); ++k) {
    d.hit(at(d, nb[k]), t += 0.01);
    EXPECT_EQ(levelOf(d.slots()[s]), k + 1 < nb.size() ? 0u : 2u) << k;
  }
  EXPECT_EQ(kindOf(d.slots()[s]), SF_HULL_KIND_LAYER);
}

TEST(HullDestruction, PartEventFiresWhenCrossingTheThresholdAndHealingRestores) {
  DestructionOptions o;
  o.island_max = 0;
  Destruction d(plainHull(), o);
  const int part = 5;
  std::vector<size_t> members;
  for (size_t i = 0; i < kCount; ++i)
    if ((d.rest()[i].channels & 0xFFu) == part) members.push_back(i);
  ASSERT_GT(members.size(), 100u);
  const float count = static_cast<float>(members.size());
  size_t want = 0;
  while (static_cast<float>(want) / count < 0.3f) ++want;
  size_t fired = 0;
  double t = 0;
  for (size_t k = 0; k < want + 10; k += 1) {
    const std::vector<HullEvent> events = d.hit(at(d, members[k]), t += 0.01);
    EXPECT_FLOAT_EQ(d.partDamage(part), static_cast<float>(k + 1) / count);
    for (const HullEvent& e : events) {
      ASSERT_EQ(e.type, HullEvent::kPartDisabled);
      EXPECT_EQ(e.index, part);
      EXPECT_EQ(k + 1, want);
      EXPECT_EQ(e.describe(),
                "part 5 disabled (" + std::to_string(std::lround(e.share * 100)) + "% knocked)");
      ++fired;
    }
  }
  EXPECT_EQ(fired, 1u);
  for (int p = 0; p < 8; ++p)
    if (p != part) {
      EXPECT_EQ(d.partDamage(p), 0.0f);
    }
  d.heal(t, 1.0f);
  std::vector<HullEvent> events = d.update(t + 0.5);
  EXPECT_TRUE(events.empty());
  events = d.update(t + 1.6);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, HullEvent::kPartRestored);
  EXPECT_EQ(events[0].index, part);
  EXPECT_EQ(d.partDamage(part), 0.0f);
}

// ---- Heal, debris, time
// -------------------------------------------------------------------------------------

TEST(HullDestruction, HealRestoresEveryOriginalRecordExactly) {
  for (bool chunks : {false, true}) {
    Destruction d(chunks ? chunkHull() : plainHull());
    const std::vector<HullSlot> initial = d.slots();
    const HullSlot* address = d.slots().data();
    runScript(d, 50);
    EXPECT_GT(knockedCount(d), 100u);
    d.heal(5.0, 0.5f);
    d.update(5.0);
    const std::vector<HullSlot> damaged = d.slots();
    d.update(6.5);  // half way: between the damage and the skin
    size_t moved = 0;
    for (size_t i = 0; i < kCount; ++i) {
      if (levelOf(damaged[i]) == 0) continue;
      const Vec3 rest = vec(d.rest()[i].position);
      const float was = length(vec(damaged[i].position) - rest),
                  now = length(vec(d.slots()[i].position) - rest);
      EXPECT_LE(now, was * 0.51f + 1e-6f) << i;
      EXPECT_EQ(kindOf(d.slots()[i]), SF_HULL_KIND_SKIN);  // healing back to the skin
      moved += now > 0 ? 1 : 0;
    }
    EXPECT_GT(moved, 50u);
    const std::vector<HullEvent> events = d.update(8.01);
    EXPECT_EQ(std::memcmp(initial.data(), d.slots().data(), kCount * sizeof(HullSlot)), 0);
    for (int p = 0; p < 8; ++p) EXPECT_EQ(d.partDamage(p), 0.0f);
    for (const HullEvent& e : events) EXPECT_EQ(e.type, HullEvent::kPartRestored);
    // Debris and bodies are long gone: the pool is back to its initial records too.
    EXPECT_TRUE(sameBytes(initial, d.slots()));
    EXPECT_EQ(d.slots().data(), address);
    EXPECT_EQ(d.slots().size(), initial.size());
    // And it can be hit again.
    runScript(d, 5, 9.0);
    EXPECT_GT(knockedCount(d), 0u);
  }
}

TEST(HullDestruction, DebrisGoesOffAfterItsLife) {
  DestructionOptions o;
  o.debris_share = 1.0f;
  o.debris_life = 1.4f;
  Destruction d(plainHull(), o);
  Hit h;
  h.direction = {0, -1, 0};
  h.damage = 30;
  d.hit(h, 2.0);
  const size_t debris = countKind(d, SF_HULL_KIND_DEBRIS);
  EXPECT_GE(debris, 25u);  // every knocked slot throws one
  d.update(3.3);
  EXPECT_EQ(countKind(d, SF_HULL_KIND_DEBRIS), debris);
  const uint64_t rev = d.revision();
  d.update(3.41);
  EXPECT_EQ(countKind(d, SF_HULL_KIND_DEBRIS), 0u);
  EXPECT_NE(d.revision(), rev);
  const HullSlot off = offRecord();
  for (size_t i = kCount; i < d.slots().size(); ++i)
    EXPECT_EQ(std::memcmp(&off, &d.slots()[i], sizeof(HullSlot)), 0);
}

TEST(HullDestruction, FullPoolReusesTheOldestDebris) {
  DestructionOptions o;
  o.debris_share = 1.0f;
  o.debris_pool = 20;
  Destruction d(plainHull(), o);
  Hit h;
  h.direction = {0, 0, 1};
  h.damage = 15;
  d.hit(h, 0.0);
  h.direction = {1, 0, 0};
  d.hit(h, 0.5);
  EXPECT_EQ(countKind(d, SF_HULL_KIND_DEBRIS), 20u);
  size_t newer = 0;
  for (size_t i = kCount; i < d.slots().size(); ++i) newer += d.slots()[i].birth == 0.5f ? 1 : 0;
  EXPECT_EQ(newer, 15u);
  EXPECT_EQ(d.slots().size(), kCount + 20);
}

TEST(HullDestruction, SameSeedSameSlotsOtherSeedDiffers) {
  DestructionOptions a;
  a.seed = 7;
  Destruction d1(chunkHull(), a), d2(chunkHull(), a);
  const std::vector<HullEvent> e1 = runScript(d1, 40), e2 = runScript(d2, 40);
  EXPECT_TRUE(sameBytes(d1.slots(), d2.slots()));
  ASSERT_EQ(d1.bodies().size(), d2.bodies().size());
  EXPECT_EQ(std::memcmp(d1.bodies().data(), d2.bodies().data(), d1.bodies().size() * sizeof(HullBody)), 0);
  ASSERT_EQ(e1.size(), e2.size());
  for (size_t k = 0; k < e1.size(); ++k) EXPECT_EQ(e1[k].describe(), e2[k].describe());
  EXPECT_EQ(d1.revision(), d2.revision());
  DestructionOptions b = a;
  b.seed = 8;
  Destruction d3(chunkHull(), b);
  runScript(d3, 40);
  EXPECT_FALSE(sameBytes(d1.slots(), d3.slots()));
}

TEST(HullDestruction, SlotAddressesNeverChange) {
  Destruction d(chunkHull());
  const HullSlot* address = d.slots().data();
  const size_t size = d.slots().size();
  runScript(d, 80);
  d.heal(9.0);
  d.update(9.7);
  runScript(d, 40, 10.0);
  d.update(30.0);
  EXPECT_EQ(d.slots().data(), address);
  EXPECT_EQ(d.slots().size(), size);
  Destruction moved = std::move(d);
  EXPECT_EQ(moved.slots().data(), address);
}

// ---- Chunks
// -------------------------------------------------------------------------------------------------

// The chunk a shot down -z (aimed at the centre) lands in: the chunk of the slot at the +z pole.
uint32_t chunkAtPole(const Destruction& d, Vec3 axis) {
  size_t best = 0;
  for (size_t i = 0; i < kCount; ++i)
    if (dot(vec(d.rest()[i].position), axis) > dot(vec(d.rest()[best].position), axis)) best = i;
  return d.rest()[best].channels >> 16;
}

TEST(HullDestruction, CrackThenTearFliesTheChunkAsABody) {
  Destruction d(chunkHull());
  const uint32_t c = chunkAtPole(d, {0, 0, 1});
  std::vector<size_t> members;
  for (size_t i = 0; i < kCount; ++i)
    if ((d.rest()[i].channels >> 16) == c) members.push_back(i);
  ASSERT_GT(members.size(), 10u);
  Hit h;
  h.direction = {0, 0, -1};
  h.damage = 5;
  std::vector<HullEvent> events = d.hit(h, 1.0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, HullEvent::kChunkCracked);
  EXPECT_EQ(events[0].index, static_cast<int>(c));
  EXPECT_EQ(events[0].describe(), "chunk " + std::to_string(c) + " cracked");
  size_t cracked = 0;
  for (size_t i = 0; i < kCount; ++i)
    if ((d.slots()[i].flags & SF_HULL_FLAG_CRACKED) != 0) {
      EXPECT_EQ(d.rest()[i].channels >> 16, c);
      ++cracked;
    }
  EXPECT_GT(cracked, 0u);
  EXPECT_EQ(static_cast<size_t>(events[0].slots), cracked);
  size_t skin = 0;
  std::vector<uint32_t> level_before(kCount);
  for (size_t i = 0; i < kCount; ++i) level_before[i] = levelOf(d.slots()[i]);
  for (size_t i : members) skin += level_before[i] == 0 ? 1 : 0;

  events = d.hit(h, 2.0);
  bool torn = false;
  for (const HullEvent& e : events)
    if (e.type == HullEvent::kChunkTorn) {
      EXPECT_EQ(e.index, static_cast<int>(c));
      EXPECT_EQ(static_cast<size_t>(e.slots), 2 * skin);
      torn = true;
    }
  ASSERT_TRUE(torn);
  ASSERT_EQ(d.bodies().size(), 1u);
  const HullBody& b = d.bodies()[0];
  EXPECT_EQ(b.birth, 2.0f);
  EXPECT_EQ(b.life, DestructionOptions{}.body_life);
  const Spl2Chunk& table = chunkHull().chunks[c];
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(b.pivot[a], table.centroid[a], 1e-4f);
  EXPECT_GT(b.velocity[2], 0.0f);  // away from the hit (the shot came down -z)
  size_t outer = 0, inner = 0;
  for (size_t i = kCount; i < d.slots().size(); ++i) {
    const HullSlot& s = d.slots()[i];
    if (kindOf(s) != SF_HULL_KIND_BODY) continue;
    EXPECT_EQ(d.rest()[s.source].channels >> 16, c);
    EXPECT_EQ(s.body, 0u);
    EXPECT_EQ(s.birth, 2.0f);
    if (s.normal_sign > 0) {
      ++outer;
    } else {
      EXPECT_EQ(s.normal_sign, -1.0f);
      ++inner;
    }
  }
  EXPECT_EQ(outer, skin);
  EXPECT_EQ(inner, skin);
  // The chunk's hull slots became the crater floor, a layer deeper.
  for (size_t i : members) EXPECT_GT(levelOf(d.slots()[i]), level_before[i] == 4 ? 3u : level_before[i]) << i;
  // The body goes off after its life.
  d.update(2.0 + 2.49);
  EXPECT_EQ(countKind(d, SF_HULL_KIND_BODY), 2 * skin);
  d.update(2.0 + 2.51);
  EXPECT_EQ(countKind(d, SF_HULL_KIND_BODY), 0u);
}

TEST(HullDestruction, WeaponProfiles) {
  Hit h;
  h.direction = {0, 0, -1};
  h.damage = 5;
  {  // cannon: the next shot elsewhere tears the chunk the last one cracked, and cracks its own
    Destruction d(chunkHull());
    h.weapon = Weapon::kCannon;
    const uint32_t a = chunkAtPole(d, {0, 0, 1});
    std::vector<HullEvent> e = d.hit(h, 0);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].type, HullEvent::kChunkCracked);
    Hit side = h;
    side.direction = {-1, 0, 0};
    const uint32_t b = chunkAtPole(d, {1, 0, 0});
    ASSERT_NE(a, b);
    e = d.hit(side, 0.1);
    ASSERT_GE(e.size(), 2u);
    EXPECT_EQ(e[0].type, HullEvent::kChunkTorn);
    EXPECT_EQ(e[0].index, static_cast<int>(a));
    EXPECT_EQ(e[1].type, HullEvent::kChunkCracked);
    EXPECT_EQ(e[1].index, static_cast<int>(b));
  }
  {  // mortar: chunks torn about the epicentre, moving away from it
    Destruction d(chunkHull());
    Hit m;
    m.kind = HitKind::kBlast;
    m.weapon = Weapon::kMortar;
    m.direction = {0, -1, 0};
    m.damage = 30;
    const std::vector<HullEvent> e = d.hit(m, 0);
    size_t torn = 0;
    for (const HullEvent& ev : e) torn += ev.type == HullEvent::kChunkTorn ? 1 : 0;
    EXPECT_GE(torn, 2u);
    EXPECT_EQ(d.bodies().size(), torn);
    for (const HullBody& b : d.bodies()) EXPECT_GT(b.velocity[1], 0.0f);
  }
  {  // railgun: the chunk at the exit (the -z pole) torn along the flight
    Destruction d(chunkHull());
    Hit r;
    r.kind = HitKind::kPierce;
    r.weapon = Weapon::kRailgun;
    r.direction = {0, 0, -1};
    r.damage = 10;
    const uint32_t exit = chunkAtPole(d, {0, 0, -1});
    const std::vector<HullEvent> e = d.hit(r, 0);
    ASSERT_FALSE(e.empty());
    bool found = false;
    for (const HullEvent& ev : e)
      found = found || (ev.type == HullEvent::kChunkTorn && ev.index == static_cast<int>(exit));
    EXPECT_TRUE(found);
    ASSERT_EQ(d.bodies().size(), 1u);
    EXPECT_LT(d.bodies()[0].velocity[2], 0.0f);  // along the flight
  }
}

TEST(HullDestruction, FullPoolSkipsTheBodyButStillDeepens) {
  DestructionOptions o;
  o.debris_pool = 4;
  o.debris_share = 0;
  Destruction d(chunkHull(), o);
  Hit h;
  h.direction = {0, 0, -1};
  h.damage = 500;  // above the chunk's share: torn at once
  const std::vector<HullEvent> e = d.hit(h, 0);
  ASSERT_FALSE(e.empty());
  EXPECT_EQ(e[0].type, HullEvent::kChunkTorn);
  EXPECT_EQ(e[0].slots, 0);
  EXPECT_TRUE(d.bodies().empty());
  EXPECT_EQ(countKind(d, SF_HULL_KIND_BODY), 0u);
  EXPECT_GT(knockedCount(d), 0u) << "the torn chunk's slots went one layer deeper";
}

TEST(HullDestruction, EmptyHullTakesHitsQuietly) {
  const Spl2Hull empty;
  DestructionOptions o;
  o.debris_pool = 3;
  Destruction d(empty, o);
  EXPECT_EQ(d.hullSlots(), 0u);
  EXPECT_EQ(d.slots().size(), 3u);
  EXPECT_TRUE(d.hit(Hit{}, 0).empty());
  d.heal(0);
  EXPECT_TRUE(d.update(1).empty());
  EXPECT_EQ(countKind(d, SF_HULL_KIND_OFF), 3u);
}

// ---- Errors and names
// ---------------------------------------------------------------------------------------

TEST(HullDestruction, ErrorsAreNamed) {
  Destruction d(plainHull());
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Hit h;
  h.direction = {nan, 0, 0};
  EXPECT_NE(errorOf([&] { d.hit(h, 0); }).find("direction"), std::string::npos);
  h.direction = {0, 0, 0};
  EXPECT_NE(errorOf([&] { d.hit(h, 0); }).find("direction"), std::string::npos);
  h.direction = {0, 0, -1};
  h.has_point = true;
  h.point = {0, inf, 0};
  EXPECT_NE(errorOf([&] { d.hit(h, 0); }).find("point"), std::string::npos);
  h.has_point = false;
  h.damage = -1;
  EXPECT_NE(errorOf([&] { d.hit(h, 0); }).find("damage"), std::string::npos);
  h.damage = nan;
  EXPECT_NE(errorOf([&] { d.hit(h, 0); }).find("damage"), std::string::npos);
  EXPECT_NE(errorOf([&] { d.heal(0, 0.0f); }).find("amount"), std::string::npos);
  EXPECT_NE(errorOf([&] { d.heal(0, 1.5f); }).find("amount"), std::string::npos);
  EXPECT_NE(errorOf([&] { d.heal(0, nan); }).find("amount"), std::string::npos);
  d.update(2.0);
  EXPECT_NE(errorOf([&] { d.update(1.0); }).find("backwards"), std::string::npos);
  EXPECT_EQ(errorOf([&] { d.update(2.0); }), "(no error)");
  EXPECT_EQ(knockedCount(d), 0u);  // nothing was applied by the refused calls
  EXPECT_NE(errorOf([] { parseHitKind("laser"); }).find("laser"), std::string::npos);
  EXPECT_NE(errorOf([] { parseWeapon("bow"); }).find("bow"), std::string::npos);
}

TEST(HullDestruction, NamesRoundTrip) {
  for (HitKind k : {HitKind::kShot, HitKind::kBlast, HitKind::kEpicenter, HitKind::kMelee, HitKind::kPierce})
    EXPECT_EQ(parseHitKind(hitKindName(k)), k);
  for (Weapon w : {Weapon::kNone, Weapon::kCannon, Weapon::kMortar, Weapon::kRailgun})
    EXPECT_EQ(parseWeapon(weaponName(w)), w);
  EXPECT_STREQ(hitKindName(HitKind::kEpicenter), "epicenter");
  HullEvent e;
  e.type = HullEvent::kPartDisabled;
  e.index = 2;
  e.share = 0.31f;
  EXPECT_EQ(e.describe(), "part 2 disabled (31% knocked)");
}

}  // namespace
}  // namespace sf::hull
