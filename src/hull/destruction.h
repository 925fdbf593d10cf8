// Destruction of a splat hull (docs/architecture.md "Splat hulls"): CPU logic over slots that never move in
// memory. Events in (hits, heals, time), slot edits out (hull/hull_shared.h HullSlot, HullBody); the frame's
// hull pass (hull/effects.h) turns the slots into gaussians. Deterministic: the same hull, seed and event
// sequence give bit-identical slots, whatever the thread count.
//
// - Hits (`hit`): the kind shapes the candidates. SHOT: a narrow band on the attacked side (slots whose
//   normal faces the shot, nearest the shot's line); BLAST: a wide sphere about the hit point; EPICENTER:
//   from below, tearing the top (candidates ranked by height within a wide radius of the epicentre's
//   vertical); MELEE: a dent (slots pressed one layer in, nothing flies); PIERCE: spall at the entry, a crack
//   channel along the flight through the hull, a chunk torn at the exit.
// - A knocked slot is never removed: it is reborn one onion layer deeper (position = skin + inward * step *
//   level, inward = -normal mixed toward the centroid, step from the local hull thickness), so holes never
//   show the background; with a probability set by the kind a debris splat is born from it in the pool
//   (white-hot, cooling in flight). Layers by rule: 1 dark backing, 2 frame ribs on a deterministic lattice
//   (ribs of neighbouring chunks line up), 3 innards, 4 near-black core with smouldering hot points and rare
//   cold sparks. A slot at level 4 stays there.
// - The support graph (neighbours within a radius calibrated from N, built once): each deepening checks its
//   neighbourhood in O(neighbours): islands of <= 24 shallower slots cut off by deeper ones detach as a chunk
//   body; an unsupported slot (every neighbour at least two layers deeper) settles to its neighbours'
//   level; innards (level 3) fade to the core when no neighbour is shallower than 3.
// - Parts: an event when 30% of a part's slots are knocked (once per part until healed below).
// - Heal: each hole remembers its progress; `heal` starts or speeds the holes' healing and `update` lerps
//   their slots back to the skin; at progress 1 the slot equals its original record exactly.
// - Chunks (CHNK): a hit cracks the chunk it lands in (a crack line across it, a few chips as debris); a
//   cracked chunk hit again, or a hit with damage above the chunk's share, tears it off as a rigid body
//   carrying a copy of its skin and an inner copy with inward normals (pool slots), while its hull slots
//   become the crater floor below. Weapon profiles: cannon (crack, then the cracked chunk tears first on the
//   next shot), mortar (chunks torn radially about the epicentre), railgun (spall at the entry, the chunk at
//   the exit torn along the flight).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/math.h"
#include "hull/hull_shared.h"
#include "io/spl2.h"

namespace sf::hull {

using hull_layout::HullBody;
using hull_layout::HullRest;
using hull_layout::HullSlot;

enum class HitKind { kShot, kBlast, kEpicenter, kMelee, kPierce };
enum class Weapon { kNone, kCannon, kMortar, kRailgun };
HitKind parseHitKind(
    const std::string& text);  // "shot", "blast", "epicenter", "melee", "pierce"; throws sf::Error
const char* hitKindName(HitKind kind);
Weapon parseWeapon(const std::string& text);  // "none", "cannon", "mortar", "railgun"; throws sf::Error
const char* weaponName(Weapon weapon);

struct Hit {
  HitKind kind = HitKind::kShot;
  Weapon weapon = Weapon::kNone;
  Vec3 direction{0, 0, -1};  // the shot's direction of travel, object space (normalised by hit())
  // Where it lands, object space. has_point false: where a ray along `direction`, aimed at the hull's
  // centre, first meets the hull (the nearest slot to that ray on the attacked side).
  Vec3 point;
  bool has_point = false;
  float damage = 40;  // about how many slots are knocked (SHOT; BLAST and EPICENTER reach wider)
};

struct HullEvent {
  enum Type { kPartDisabled, kPartRestored, kChunkCracked, kChunkTorn, kIslandDetached, kGunSilenced };
  Type type = kPartDisabled;
  // The part (kPart*), the chunk (kChunk*), the island's first slot, or the gun (kGunSilenced: a script's
  // `fire` consumed because the gun's part is disabled; `slots` then holds the part, `share` its knocked
  // share)
  int index = 0;
  double time = 0;
  float share = 0;  // kPart*: the part's knocked share at the event
  int slots =
      0;  // kChunkCracked: slots on the crack; kChunkTorn: pool slots flying; kIslandDetached: its slots
  std::string describe() const;  // "part 2 disabled (31% knocked)", ...
};

struct DestructionOptions {
  uint32_t seed = 1;
  size_t debris_pool = 512;     // pool slots after the hull's slots
  float debris_share = 0.35f;   // share of knocked slots that also throw a debris splat (SHOT; kinds vary)
  float debris_life = 1.4f;     // seconds a debris splat flies and cools
  float body_life = 2.5f;       // seconds a torn chunk flies
  float heal_seconds = 1.5f;    // a hole's heal from start to the skin
  float part_threshold = 0.3f;  // share of a part's slots knocked that disables it
  int island_max = 24;          // islands of at most this many slots detach
};

// The rest records of a hull (one per splat, spl2ToCloud order): positions, normals, covariance, baked
// channels and CHNK chunk / material.
std::vector<HullRest> hullRestRecords(const Spl2Hull& hull);

// A hull's destruction state.
class Destruction {
 public:
  // `hull` must outlive the object. Builds the support graph and the initial slots (every hull slot at its
  // skin with its own colour and opacity, every pool slot off).
  Destruction(const Spl2Hull& hull, const DestructionOptions& options = {});
  ~Destruction();
  Destruction(Destruction&&) noexcept;
  Destruction& operator=(Destruction&&) noexcept;

  // Applies a hit at scene time `time`; returns the events it caused.
  std::vector<HullEvent> hit(const Hit& hit, double time);
  // Starts (or speeds) the healing of every hole: `amount` in (0, 1] of the way per heal_seconds.
  void heal(double time, float amount = 1.0f);
  // An engine's ion trail: one droplet in the pool (a debris slot flagged SF_HULL_FLAG_ION, which the pass
  // draws blue and fading over debris_life) at `position` (object space) with `velocity`, born at `time` (not
  // before the last), shaped as hull splat `source` at the debris' size. Takes an off pool slot, else the
  // debris splat that dies first.
  void emitIon(uint32_t source, Vec3 position, Vec3 velocity, double time);
  // Advances to scene time `time` (not before the last): heal lerps, debris and bodies whose life is over go
  // off; returns the events (parts restored by healing).
  std::vector<HullEvent> update(double time);

  const std::vector<HullSlot>& slots() const;  // hull slots then pool slots
  const std::vector<HullBody>& bodies() const;
  const std::vector<HullRest>& rest() const;  // one per hull slot
  size_t hullSlots() const;                   // n (the pool follows)
  // The hull slots as the undamaged hull has them (n records; a finished heal ends on them bit for bit).
  const std::vector<HullSlot>& initialSlots() const;
  uint64_t revision() const;  // changes whenever slots() or bodies() change
  // Where the last hit landed (object space; Hit::point, or the point found for a hit without one); the
  // hull's centre before any hit.
  Vec3 lastHitPoint() const;
  // Per part (0..7): share of its slots knocked (level > 0).
  float partDamage(int part) const;
  // Whether part (0..7) is disabled: its knocked share reached part_threshold (the kPartDisabled event) and
  // no heal has brought it back below since (kPartRestored).
  bool partDisabled(int part) const;
  // Neighbours of slot i in the support graph (hull slots only), and the radius used.
  const std::vector<uint32_t>& neighbours(size_t i) const;
  float supportRadius() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sf::hull
