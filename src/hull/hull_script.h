// Hull scripts (docs/formats/hull-script.md): a timed list of hits, heals and effects played on a live hull
// (hull/effects.h HullInstance), from `splatforge hull play`, from a scene's hull object ("script") or from
// C++. Playing is deterministic: the same hull, seed and script give the same slots at every time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hull/destruction.h"
#include "hull/effects.h"

namespace sf {
struct JsonNode;
}

namespace sf::hull {

enum class EffectKind { kAssemble, kScatter, kImplode, kRipple, kCharge, kLinkDecay, kSiphon, kPartXform };
EffectKind parseEffectKind(
    const std::string& text);  // "assemble", "scatter", ... "part_xform"; throws sf::Error
const char* effectKindName(EffectKind kind);

// Muzzle flash and barrel heat of `fire` (docs/formats/hull-script.md): the flash's strength decays as
// strength * (1 - age / kMuzzleFlashSeconds)^2 and is gone after it; each shot adds its `heat` to the gun,
// which cools as exp(-age / kBarrelCoolSeconds): a gun's heat at t is the sum over its shots fired at t_k <=
// t of heat_k * exp(-(t - t_k) / kBarrelCoolSeconds).
constexpr double kMuzzleFlashSeconds = 0.1;
constexpr double kBarrelCoolSeconds = 2.0;
// Engine ignition (`thrust`): the emission eases in linearly over kIgnitionSeconds; ion droplets leave each
// nozzle at `rate` per second from the ignition on (droplet k at t_on + k / rate), at kIonSpeed along the
// trail's direction plus a hashed jitter.
constexpr double kIgnitionSeconds = 0.15;
constexpr float kIonSpeed = 0.9f;

struct ScriptEvent {
  enum Type { kHit, kHeal, kEffect, kFire, kThrust, kLod, kSelect };
  Type type = kHit;
  double time = 0;
  size_t index = 0;  // its place in the file's "events" (error messages name events[index])
  // kHit
  Hit hit;
  float hit_ripple = 0.02f;  // amplitude of the ripple the hit starts from where it lands (0: none)
  double hit_flash = 0.3;    // seconds the hit flashes the hull's outline (hull/outline.h; 0: none)
  // kHeal
  float heal = 1;
  // kEffect: active over [time, time + duration]
  EffectKind effect = EffectKind::kCharge;
  double duration = 1;
  float amount = 1;                         // charge, link_decay, siphon; ripple amplitude
  ScatterMode mode = ScatterMode::kRadial;  // assemble, scatter
  std::optional<Vec3> direction;            // scatter: the killing shot (default: the last hit's direction)
  float bias = 0.5f;                        // scatter: kinetic bias
  float distance = 1.2f;                    // scatter, assemble
  std::optional<Vec3> origin;               // ripple (default: where the last hit landed)
  float speed = 1.6f, width = 0.06f;        // ripple
  float share = 0.4f, period = 1.6f, turns = 1.5f;  // siphon
  Vec3 color{1.0f, 0.45f, 0.12f};                   // charge
  int part = 0;                                     // part_xform
  Vec3 pivot, axis{0, 1, 0}, offset;
  float angle = 0;    // degrees
  bool hold = false;  // part_xform: keep the end pose instead of returning
  // kFire: the gun (an index into the hull's guns, HullAsset::guns, or a gun's name) and its shot
  int gun = 0;
  std::string gun_name;     // non-empty: the gun by name
  std::optional<Vec3> tip;  // "point": the barrel tip (hull frame) in place of the meta sidecar's
  float strength = 1.5f;    // the flash's peak strength
  float heat = 0.2f;        // heat the shot adds to its gun
  // kThrust: the engines on (amount: the emission, 0..1) or off; `tip` (a nozzle in place of the sidecar's)
  // with `direction` (the trail's way, default down)
  bool thrust = false;
  float rate = 30;  // ion droplets per second per nozzle
  // kLod: the hull's runtime LOD from this time on (hull/hull_lod.h; replaces the object's own)
  HullLod lod;
  // kSelect: the hull's outline on or off from this time on (hull/outline.h outlineAt), its colour and width
  // when given (else the object's own)
  bool select = false;
  std::optional<Vec3> outline_color;
  std::optional<float> outline_width;
};

struct HullScript {
  std::vector<ScriptEvent> events;  // sorted by time (stable: equal times keep the file's order)
  double duration = 0;              // "duration", else the end of the last event + 1 s
  std::optional<uint32_t> seed;
  std::string path;  // the file it was read from (error messages)
};

// Parses a script; every refusal names the file and the JSON path ("events[3].direction: expected 3
// numbers"). Unknown keys are refused (a typo would otherwise pass silently).
HullScript parseHullScript(const std::string& text, const std::string& path);
HullScript loadHullScript(const std::string& path);

// A hull object's standing effects (scene JSON "effects"): the same keys as HullEffects' scalars
// ("scatter", "scatter_mode", "implode", "charge", "link_decay", "siphon", "ripple": {...}, "parts": [...]).
HullEffects parseHullEffects(const JsonNode& node);

// Checks the script's `fire` events against a hull: each names a gun of `asset` (HullAsset::guns, from its
// meta sidecar) or gives its tip by "point". Throws sf::Error naming the script file, the JSON path
// (events[3].fire) and the reason (no such gun; the guns the hull has). HullScriptPlayer::advance checks each
// fire it plays the same way.
void checkHullScript(const HullScript& script, const HullAsset& asset);

// Plays a script on one hull.
class HullScriptPlayer {
 public:
  explicit HullScriptPlayer(HullScript script, HullEffects base = {});

  // Brings `hull` to scene time `t`: the hits and heals with time <= t not yet applied (in order, each at
  // its own time), Destruction::update(t), and hull.effects = the base effects with every effect event's
  // value at t. A time before the last restarts the hull from its undamaged state and replays. Returns the
  // destruction's events since the last call. A `fire` whose gun's part is disabled (Destruction::
  // partDisabled: 30% of the part's slots knocked, until a heal restores it) is consumed: no flash, no heat,
  // a kGunSilenced event; the gun's part is the part of the hull splat nearest its tip.
  std::vector<HullEvent> advance(HullInstance& hull, double t);
  const HullScript& script() const { return script_; }

 private:
  HullScript script_;
  HullEffects base_;
  size_t next_ = 0;
  double last_ = -1;
  std::vector<std::pair<double, Vec3>> hit_points_;  // (time, where it landed) of the hits applied
  struct Shot {
    double time;
    int gun;
    Vec3 tip;
    float strength, heat;
  };
  std::vector<Shot> shots_;  // the fires played that were not consumed, in time order
  // The engines while thrust is on: since when, its amount and droplet rate, the nozzles (tip, trail
  // direction, the hull splat whose shape the droplets take) and the engine parts; the next droplet.
  struct Nozzle {
    Vec3 tip, direction;
    uint32_t source;
  };
  bool thrust_on_ = false;
  double thrust_since_ = 0;
  float thrust_amount_ = 0, thrust_rate_ = 30;
  std::vector<Nozzle> nozzles_;
  uint32_t engine_parts_ = 0;
  uint64_t droplet_ = 0;  // droplets emitted since the ignition (per nozzle)
  void emitTrail(Destruction& d, double upto, std::vector<HullEvent>& events);
  // advance's parts: the destruction events due up to t played (hits, heals, fires, thrust changes), their
  // events appended; the effects at t of the base and the effect, hit and lod events; the fire's flash and
  // barrel heat and the engines' thrust added to them.
  void playDue(HullInstance& hull, double t, std::vector<HullEvent>& events);
  HullEffects scriptedEffects(const HullInstance& hull, double t) const;
  void addFireAndThrust(HullEffects& fx, double t) const;
};

}  // namespace sf::hull
