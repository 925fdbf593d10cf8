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
EffectKind parseEffectKind(const std::string& text);  // "assemble", "scatter", ... "part_xform"; throws sf::Error
const char* effectKindName(EffectKind kind);

struct ScriptEvent {
  enum Type { kHit, kHeal, kEffect };
  Type type = kHit;
  double time = 0;
  // kHit
  Hit hit;
  float hit_ripple = 0.02f;  // amplitude of the ripple the hit starts from where it lands (0: none)
  // kHeal
  float heal = 1;
  // kEffect: active over [time, time + duration]
  EffectKind effect = EffectKind::kCharge;
  double duration = 1;
  float amount = 1;             // charge, link_decay, siphon; ripple amplitude
  ScatterMode mode = ScatterMode::kRadial;  // assemble, scatter
  std::optional<Vec3> direction;  // scatter: the killing shot (default: the last hit's direction)
  float bias = 0.5f;            // scatter: kinetic bias
  float distance = 1.2f;        // scatter, assemble
  std::optional<Vec3> origin;   // ripple (default: where the last hit landed)
  float speed = 1.6f, width = 0.06f;  // ripple
  float share = 0.4f, period = 1.6f, turns = 1.5f;  // siphon
  Vec3 color{1.0f, 0.45f, 0.12f};  // charge
  int part = 0;                 // part_xform
  Vec3 pivot, axis{0, 1, 0}, offset;
  float angle = 0;              // degrees
  bool hold = false;            // part_xform: keep the end pose instead of returning
};

struct HullScript {
  std::vector<ScriptEvent> events;  // sorted by time (stable: equal times keep the file's order)
  double duration = 0;              // "duration", else the end of the last event + 1 s
  std::optional<uint32_t> seed;
};

// Parses a script; every refusal names the file and the JSON path ("events[3].direction: expected 3
// numbers"). Unknown keys are refused (a typo would otherwise pass silently).
HullScript parseHullScript(const std::string& text, const std::string& path);
HullScript loadHullScript(const std::string& path);

// A hull object's standing effects (scene JSON "effects"): the same keys as HullEffects' scalars
// ("scatter", "scatter_mode", "implode", "charge", "link_decay", "siphon", "ripple": {...}, "parts": [...]).
HullEffects parseHullEffects(const JsonNode& node);

// Plays a script on one hull.
class HullScriptPlayer {
 public:
  explicit HullScriptPlayer(HullScript script, HullEffects base = {});

  // Brings `hull` to scene time `t`: the hits and heals with time <= t not yet applied (in order, each at
  // its own time), Destruction::update(t), and hull.effects = the base effects with every effect event's
  // value at t. A time before the last restarts the hull from its undamaged state and replays. Returns the
  // destruction's events since the last call.
  std::vector<HullEvent> advance(HullInstance& hull, double t);
  const HullScript& script() const { return script_; }

 private:
  HullScript script_;
  HullEffects base_;
  size_t next_ = 0;
  double last_ = -1;
  std::vector<std::pair<double, Vec3>> hit_points_;  // (time, where it landed) of the hits applied
};

}  // namespace sf::hull
