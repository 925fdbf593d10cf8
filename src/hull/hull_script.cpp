#include "hull/hull_script.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <set>

#include "core/error.h"
#include "hull/outline.h"
#include "io/file.h"
#include "io/json.h"

namespace sf::hull {
namespace {

constexpr EffectKind kEffectKinds[] = {EffectKind::kAssemble, EffectKind::kScatter,  EffectKind::kImplode,
                                       EffectKind::kRipple,   EffectKind::kCharge,   EffectKind::kLinkDecay,
                                       EffectKind::kSiphon,   EffectKind::kPartXform};

// Refuses keys outside `allowed` (a typo would otherwise pass silently).
void onlyKeys(const JsonNode& n, std::initializer_list<const char*> allowed, const std::string& what) {
  if (!n.value.is_object()) n.fail("expected an object");
  for (const auto& item : n.value.items()) {
    bool ok = false;
    for (const char* a : allowed) ok |= item.key() == a;
    if (ok) continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    JsonNode{item.value(), n.path.empty() ? item.key() : n.path + "." + item.key(), n.file}.fail(
        "unexpected key for " + what + " (known: " + list + ")");
  }
}

float numberIn(const JsonNode& n, double lo, double hi) {
  const double d = n.number();
  if (d < lo || d > hi)
    n.fail("expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
           std::to_string(d));
  return static_cast<float>(d);
}

Vec3 direction(const JsonNode& n) {
  const Vec3 v = n.vec3();
  if (!(length(v) > 0)) n.fail("expected a non-zero direction");
  return v;
}

template <typename Fn>
auto parsed(const JsonNode& n, Fn fn) {
  try {
    return fn(n.string());
  } catch (const Error& e) {
    n.fail(e.what());
  }
}

// Smooth in over the first 15% and out over the last 15% of an effect's span.
float envelope(float p) {
  auto ss = [](float e0, float e1, float x) {
    const float t = std::clamp((x - e0) / (e1 - e0), 0.0f, 1.0f);
    return t * t * (3.0f - 2.0f * t);
  };
  return ss(0.0f, 0.15f, p) * (1.0f - ss(0.85f, 1.0f, p));
}

Quat axisAngleQuat(Vec3 axis, float degrees) {
  const Vec3 k = normalize(axis);
  const float h = 0.5f * degrees * std::numbers::pi_v<float> / 180.0f;
  return {std::cos(h), k.x * std::sin(h), k.y * std::sin(h), k.z * std::sin(h)};
}

ScriptEvent parseEvent(const JsonNode& e) {
  ScriptEvent ev;
  const int kinds = e.has("hit") + e.has("heal") + e.has("effect") + e.has("fire") + e.has("thrust") +
                    e.has("lod") + e.has("select");
  if (!e.value.is_object() || kinds != 1)
    e.fail(
        "an event has \"time\" and exactly one of \"hit\", \"heal\", \"effect\", \"fire\", \"thrust\", "
        "\"lod\" or \"select\"");
  ev.time = numberIn(e["time"], 0, 86400);
  if (e.has("select")) {
    onlyKeys(e, {"time", "select", "color", "width"}, "a select");
    ev.type = ScriptEvent::kSelect;
    if (!e["select"].value.is_boolean()) e["select"].fail("expected true (outlined) or false");
    ev.select = e["select"].value.get<bool>();
    if (e.has("color")) ev.outline_color = parseOutlineColor(e["color"]);
    if (e.has("width")) ev.outline_width = parseOutlineWidth(e["width"]);
  } else if (e.has("lod")) {
    onlyKeys(e, {"time", "lod"}, "a lod");
    ev.type = ScriptEvent::kLod;
    ev.lod = parseHullLodJson(e["lod"]);
  } else if (e.has("thrust")) {
    onlyKeys(e, {"time", "thrust", "amount", "rate", "point", "direction"}, "a thrust");
    ev.type = ScriptEvent::kThrust;
    if (!e["thrust"].value.is_boolean()) e["thrust"].fail("expected true (ignition) or false (cut-off)");
    ev.thrust = e["thrust"].value.get<bool>();
    if (e.has("amount")) ev.amount = numberIn(e["amount"], 0, 1);
    if (e.has("rate")) ev.rate = numberIn(e["rate"], 0, 240);
    if (e.has("point")) ev.tip = e["point"].vec3();
    if (e.has("direction")) ev.direction = normalize(direction(e["direction"]));
  } else if (e.has("fire")) {
    onlyKeys(e, {"time", "fire", "point", "strength", "heat"}, "a fire");
    ev.type = ScriptEvent::kFire;
    const JsonNode g = e["fire"];
    if (g.value.is_string()) {
      ev.gun_name = g.value.get<std::string>();
      if (ev.gun_name.empty()) g.fail("expected a gun id 0..7 or a gun's name, got an empty name");
    } else {
      if (!g.value.is_number()) g.fail("expected a gun id 0..7 or a gun's name");
      const double id = g.number();
      if (id != std::floor(id) || id < 0 || id >= SF_HULL_GUNS)
        g.fail("expected a gun id 0..7, got " + std::to_string(id));
      ev.gun = static_cast<int>(id);
    }
    if (e.has("point")) ev.tip = e["point"].vec3();
    if (e.has("strength")) ev.strength = numberIn(e["strength"], 0, 100);
    if (e.has("heat")) ev.heat = numberIn(e["heat"], 0, 10);
  } else if (e.has("hit")) {
    onlyKeys(e, {"time", "hit", "direction", "point", "damage", "weapon", "ripple", "flash"}, "a hit");
    ev.type = ScriptEvent::kHit;
    ev.hit.kind = parsed(e["hit"], parseHitKind);
    if (e.has("direction")) ev.hit.direction = normalize(direction(e["direction"]));
    if (e.has("point")) ev.hit.point = e["point"].vec3(), ev.hit.has_point = true;
    if (e.has("damage")) ev.hit.damage = numberIn(e["damage"], 0, 1e6);
    if (e.has("weapon")) ev.hit.weapon = parsed(e["weapon"], parseWeapon);
    if (e.has("ripple")) ev.hit_ripple = numberIn(e["ripple"], 0, 1);
    if (e.has("flash")) ev.hit_flash = numberIn(e["flash"], 0, 10);
  } else if (e.has("heal")) {
    onlyKeys(e, {"time", "heal"}, "a heal");
    ev.type = ScriptEvent::kHeal;
    ev.heal = numberIn(e["heal"], 1e-6, 1);
  } else {
    ev.type = ScriptEvent::kEffect;
    ev.effect = parsed(e["effect"], parseEffectKind);
    switch (ev.effect) {
      case EffectKind::kAssemble:
        onlyKeys(e, {"time", "effect", "duration", "mode", "distance"}, "assemble");
        break;
      case EffectKind::kScatter:
        onlyKeys(e, {"time", "effect", "duration", "mode", "distance", "direction", "bias"}, "scatter");
        break;
      case EffectKind::kImplode:
        onlyKeys(e, {"time", "effect", "duration"}, "implode");
        break;
      case EffectKind::kRipple:
        onlyKeys(e, {"time", "effect", "duration", "origin", "amount", "speed", "width"}, "ripple");
        ev.amount = 0.03f;
        break;
      case EffectKind::kCharge:
        onlyKeys(e, {"time", "effect", "duration", "amount", "color"}, "charge");
        break;
      case EffectKind::kLinkDecay:
        onlyKeys(e, {"time", "effect", "duration", "amount"}, "link_decay");
        break;
      case EffectKind::kSiphon:
        onlyKeys(e, {"time", "effect", "duration", "amount", "share", "period", "turns"}, "siphon");
        break;
      case EffectKind::kPartXform:
        onlyKeys(e, {"time", "effect", "duration", "part", "pivot", "axis", "angle", "offset", "hold"},
                 "part_xform");
        break;
    }
    if (e.has("duration")) ev.duration = numberIn(e["duration"], 1e-3, 86400);
    if (e.has("mode")) ev.mode = parsed(e["mode"], parseScatterMode);
    if (e.has("distance")) ev.distance = numberIn(e["distance"], 0, 100);
    if (e.has("direction")) ev.direction = normalize(direction(e["direction"]));
    if (e.has("bias")) ev.bias = numberIn(e["bias"], 0, 1);
    if (e.has("origin")) ev.origin = e["origin"].vec3();
    if (e.has("amount")) ev.amount = numberIn(e["amount"], 0, ev.effect == EffectKind::kRipple ? 1 : 1);
    if (e.has("speed")) ev.speed = numberIn(e["speed"], 1e-3, 100);
    if (e.has("width")) ev.width = numberIn(e["width"], 1e-4, 10);
    if (e.has("share")) ev.share = numberIn(e["share"], 0, 1);
    if (e.has("period")) ev.period = numberIn(e["period"], 1e-2, 600);
    if (e.has("turns")) ev.turns = numberIn(e["turns"], -100, 100);
    if (e.has("color")) {
      const auto c = e["color"].numbers(3);
      for (size_t k = 0; k < 3; ++k)
        if (c[k] < 0 || c[k] > 4) e["color"].at(k).fail("expected a number in [0, 4]");
      ev.color = {c[0], c[1], c[2]};
    }
    if (e.has("part")) {
      const double p = e["part"].number();
      if (p != std::floor(p) || p < 0 || p >= SF_HULL_PARTS) e["part"].fail("expected a part 0..7");
      ev.part = static_cast<int>(p);
    }
    if (e.has("pivot")) ev.pivot = e["pivot"].vec3();
    if (e.has("axis")) ev.axis = direction(e["axis"]);
    if (e.has("angle")) ev.angle = numberIn(e["angle"], -3600, 3600);
    if (e.has("offset")) ev.offset = e["offset"].vec3();
    if (e.has("hold")) {
      if (!e["hold"].value.is_boolean()) e["hold"].fail("expected true or false");
      ev.hold = e["hold"].value.get<bool>();
    }
  }
  return ev;
}

// The gun a `fire` plays (its heat accumulator, 0..7) and its barrel tip (hull frame); refuses, naming the
// script file and the event's JSON path, a gun the hull does not have.
std::pair<int, Vec3> resolveGun(const ScriptEvent& e, const HullAsset& asset, const std::string& path) {
  const std::vector<HullGun>& guns = asset.guns;
  auto fail = [&](const std::string& why) {
    std::string list;
    for (size_t g = 0; g < guns.size(); ++g) list += (g ? ", " : "") + std::to_string(g) + " " + guns[g].name;
    const std::string have =
        guns.empty() ? "the hull " + asset.path +
                           " has no guns: its meta sidecar names no barrel tips; give the tip as \"point\""
                     : "the hull's guns: " + list;
    throw Error(path + ": events[" + std::to_string(e.index) + "].fire: " + why + " (" + have + ")");
  };
  if (!e.gun_name.empty()) {
    for (size_t g = 0; g < guns.size(); ++g)
      if (guns[g].name == e.gun_name) {
        if (g >= SF_HULL_GUNS) fail("gun '" + e.gun_name + "' is past the first 8 guns");
        return {static_cast<int>(g), e.tip.value_or(guns[g].tip)};
      }
    fail("no gun named '" + e.gun_name + "'");
  }
  if (e.tip) return {e.gun, *e.tip};
  if (static_cast<size_t>(e.gun) >= guns.size()) fail("no gun " + std::to_string(e.gun));
  return {e.gun, guns[static_cast<size_t>(e.gun)].tip};
}

// The hull splat nearest `tip` (-1: none).
int64_t nearestSplat(const Destruction& d, Vec3 tip) {
  const std::vector<HullRest>& rest = d.rest();
  float best = INFINITY;
  int64_t at = -1;
  for (size_t i = 0; i < rest.size() && i < d.hullSlots(); ++i) {
    const Vec3 p{rest[i].position[0], rest[i].position[1], rest[i].position[2]};
    const float d2 = dot(p - tip, p - tip);
    if (d2 < best) best = d2, at = static_cast<int64_t>(i);
  }
  return at;
}

// The part of the hull splat nearest `tip` (the gun's part: a fire is consumed while it is disabled).
int gunPart(const Destruction& d, Vec3 tip) {
  const int64_t i = nearestSplat(d, tip);
  return i < 0 ? -1 : static_cast<int>(d.rest()[static_cast<size_t>(i)].channels & 0xffu);
}

// The nozzles (tip, trail direction) a `thrust` ignites: its "point", else the meta sidecar's engine points
// (trail along -axis); refuses a hull with neither, naming the script file and the event's JSON path.
std::vector<std::pair<Vec3, Vec3>> resolveNozzles(const ScriptEvent& e, const HullAsset& asset,
                                                  const std::string& path) {
  std::vector<std::pair<Vec3, Vec3>> out;
  if (e.tip) {
    out.emplace_back(*e.tip, e.direction.value_or(Vec3{0, -1, 0}));
    return out;
  }
  for (const HullGun& g : asset.engines.nozzles) out.emplace_back(g.tip, e.direction.value_or(-g.axis));
  if (out.empty())
    throw Error(path + ": events[" + std::to_string(e.index) + "].thrust: the hull " + asset.path +
                " has no engines (its meta sidecar names no points called *engine* or *exhaust*); give the "
                "nozzle as \"point\"");
  return out;
}

}  // namespace

void checkHullScript(const HullScript& script, const HullAsset& asset) {
  for (const ScriptEvent& e : script.events)
    if (e.type == ScriptEvent::kFire)
      resolveGun(e, asset, script.path);
    else if (e.type == ScriptEvent::kThrust && e.thrust)
      resolveNozzles(e, asset, script.path);
}

EffectKind parseEffectKind(const std::string& text) {
  for (EffectKind k : kEffectKinds)
    if (text == effectKindName(k)) return k;
  throw Error("unknown effect '" + text +
              "' (expected assemble, scatter, implode, ripple, charge, link_decay, siphon or part_xform)");
}

const char* effectKindName(EffectKind kind) {
  switch (kind) {
    case EffectKind::kAssemble:
      return "assemble";
    case EffectKind::kScatter:
      return "scatter";
    case EffectKind::kImplode:
      return "implode";
    case EffectKind::kRipple:
      return "ripple";
    case EffectKind::kCharge:
      return "charge";
    case EffectKind::kLinkDecay:
      return "link_decay";
    case EffectKind::kSiphon:
      return "siphon";
    case EffectKind::kPartXform:
      return "part_xform";
  }
  return "charge";
}

HullScript parseHullScript(const std::string& text, const std::string& path) {
  const nlohmann::json j = parseJsonText(text, path);
  const JsonNode root{j, "", path};
  onlyKeys(root, {"duration", "seed", "events"}, "a hull script");
  HullScript s;
  const JsonNode events = root["events"];
  if (!events.value.is_array()) events.fail("expected an array of events");
  for (size_t i = 0; i < events.value.size(); ++i) {
    s.events.push_back(parseEvent(events.at(i)));
    s.events.back().index = i;
  }
  s.path = path;
  std::stable_sort(s.events.begin(), s.events.end(),
                   [](const ScriptEvent& a, const ScriptEvent& b) { return a.time < b.time; });
  double end = 0;
  for (const ScriptEvent& e : s.events)
    end = std::max(end, e.time + (e.type == ScriptEvent::kEffect ? e.duration : 0.0));
  s.duration = root.has("duration") ? numberIn(root["duration"], 1e-3, 3600) : end + 1.0;
  if (root.has("seed")) {
    const double d = root["seed"].number();
    if (d != std::floor(d) || d < 0 || d > 4294967295.0)
      root["seed"].fail("expected an integer in 0..4294967295");
    s.seed = static_cast<uint32_t>(d);
  }
  return s;
}

HullScript loadHullScript(const std::string& path) {
  const std::vector<uint8_t> bytes = readFile(path);
  return parseHullScript(std::string(bytes.begin(), bytes.end()), path);
}

HullEffects parseHullEffects(const JsonNode& n) {
  onlyKeys(n,
           {"scatter", "scatter_mode", "kill_direction", "kill_bias", "implode", "charge", "link_decay",
            "siphon", "ripple", "parts"},
           "hull effects");
  HullEffects e;
  if (n.has("scatter")) e.scatter = numberIn(n["scatter"], 0, 1);
  if (n.has("scatter_mode")) e.scatter_mode = parsed(n["scatter_mode"], parseScatterMode);
  if (n.has("kill_direction")) e.kill_direction = normalize(direction(n["kill_direction"]));
  if (n.has("kill_bias")) e.kill_bias = numberIn(n["kill_bias"], 0, 1);
  if (n.has("implode")) e.implode = numberIn(n["implode"], 0, 1);
  if (n.has("charge")) e.charge = numberIn(n["charge"], 0, 1);
  if (n.has("link_decay")) e.link_decay = numberIn(n["link_decay"], 0, 1);
  if (n.has("siphon")) e.siphon = numberIn(n["siphon"], 0, 1);
  if (n.has("ripple")) {
    const JsonNode r = n["ripple"];
    onlyKeys(r, {"origin", "amplitude", "age", "speed", "width"}, "a ripple");
    e.ripple = numberIn(r["amplitude"], 0, 1);
    if (r.has("origin")) e.ripple_origin = r["origin"].vec3();
    if (r.has("age")) e.ripple_age = numberIn(r["age"], 0, 600);
    if (r.has("speed")) e.ripple_speed = numberIn(r["speed"], 1e-3, 100);
    if (r.has("width")) e.ripple_width = numberIn(r["width"], 1e-4, 10);
  }
  if (n.has("parts")) {
    const JsonNode parts = n["parts"];
    if (!parts.value.is_array())
      parts.fail("expected an array of {\"part\", \"pivot\", \"axis\", \"angle\", \"offset\"}");
    for (size_t i = 0; i < parts.value.size(); ++i) {
      const JsonNode p = parts.at(i);
      onlyKeys(p, {"part", "pivot", "axis", "angle", "offset"}, "a part transform");
      const double id = p["part"].number();
      if (id != std::floor(id) || id < 0 || id >= SF_HULL_PARTS) p["part"].fail("expected a part 0..7");
      const size_t k = static_cast<size_t>(id);
      if (e.parts.size() <= k) e.parts.resize(k + 1);
      PartTransform& t = e.parts[k];
      if (p.has("pivot")) t.pivot = p["pivot"].vec3();
      if (p.has("offset")) t.offset = p["offset"].vec3();
      const Vec3 axis = p.has("axis") ? direction(p["axis"]) : Vec3{0, 1, 0};
      t.rotation = axisAngleQuat(axis, p.has("angle") ? numberIn(p["angle"], -3600, 3600) : 0.0f);
    }
  }
  return e;
}

HullScriptPlayer::HullScriptPlayer(HullScript script, HullEffects base)
    : script_(std::move(script)), base_(std::move(base)) {}

std::vector<HullEvent> HullScriptPlayer::advance(HullInstance& hull, double t) {
  if (!std::isfinite(t)) throw Error("hull script: time is not finite");
  std::vector<HullEvent> events;
  if (t < last_) {  // replay from the start
    hull.resetDestruction();
    next_ = 0;
    hit_points_.clear();
    shots_.clear();
    thrust_on_ = false;
  }
  playDue(hull, t, events);
  last_ = t;
  HullEffects fx = scriptedEffects(hull, t);
  addFireAndThrust(fx, t);
  hull.effects = std::move(fx);
  return events;
}

void HullScriptPlayer::playDue(HullInstance& hull, double t, std::vector<HullEvent>& events) {
  Destruction& d = hull.destruction();
  for (; next_ < script_.events.size() && script_.events[next_].time <= t; ++next_) {
    const ScriptEvent& e = script_.events[next_];
    if (e.type == ScriptEvent::kEffect || e.type == ScriptEvent::kLod || e.type == ScriptEvent::kSelect)
      continue;  // evaluated at the frame's time (the outline: hull/outline.h)
    emitTrail(d, e.time, events);
    for (HullEvent& ev : d.update(e.time)) events.push_back(std::move(ev));
    if (e.type == ScriptEvent::kThrust) {
      thrust_on_ = e.thrust;
      if (!e.thrust) continue;
      thrust_since_ = e.time, thrust_amount_ = e.amount, thrust_rate_ = e.rate, droplet_ = 0;
      nozzles_.clear();
      engine_parts_ = hull.asset().engines.part_mask;
      for (const auto& [tip, dir] : resolveNozzles(e, hull.asset(), script_.path)) {
        const int64_t at = nearestSplat(d, tip);
        if (at < 0) continue;
        nozzles_.push_back({tip, dir, static_cast<uint32_t>(at)});
        // Without parts named "engine", the parts of the splats nearest the nozzles.
        if (hull.asset().engines.part_mask == 0)
          engine_parts_ |= 1u << (d.rest()[static_cast<size_t>(at)].channels & 7u);
      }
      continue;
    }
    if (e.type == ScriptEvent::kFire) {  // a gun whose part is disabled falls silent: the fire is consumed
      const auto [gun, tip] = resolveGun(e, hull.asset(), script_.path);
      const int part = gunPart(d, tip);
      if (part >= 0 && d.partDisabled(part))
        events.push_back({HullEvent::kGunSilenced, gun, e.time, d.partDamage(part), part});
      else
        shots_.push_back({e.time, gun, tip, e.strength, e.heat});
      continue;
    }
    if (e.type == ScriptEvent::kHit) {
      for (HullEvent& ev : d.hit(e.hit, e.time)) events.push_back(std::move(ev));
      hit_points_.emplace_back(e.time, d.lastHitPoint());
    } else {
      d.heal(e.time, e.heal);
    }
  }
  emitTrail(d, t, events);
  for (HullEvent& ev : d.update(t)) events.push_back(std::move(ev));
}

HullEffects HullScriptPlayer::scriptedEffects(const HullInstance& hull, double t) const {
  // Effects at t: the base, then every effect event in time order (later events win where they overlap).
  HullEffects fx = base_;
  fx.debris_life = hull.effects.debris_life;
  Vec3 kill_direction{0, 0, -1};  // the last hit's before each event, in time order
  size_t hit_index = 0, hit_no = 0;
  std::vector<PartTransform> parts = fx.parts;
  for (const ScriptEvent& e : script_.events) {
    if (e.time > t) break;
    while (hit_index < hit_points_.size() && hit_points_[hit_index].first <= e.time) ++hit_index;
    const Vec3 last_point = hit_index > 0 ? hit_points_[hit_index - 1].second : hull.centre();
    const float p = static_cast<float>(std::clamp((t - e.time) / e.duration, 0.0, 1.0));
    const bool running = t <= e.time + e.duration;
    if (e.type == ScriptEvent::kHit) {
      kill_direction = e.hit.direction;
      const double age = t - e.time;
      ++hit_no;
      if (e.hit_ripple > 0 && age < 1.5) {  // the hit's own ripple, from where it landed
        fx.ripple = e.hit_ripple;
        fx.ripple_origin = hit_no - 1 < hit_points_.size() ? hit_points_[hit_no - 1].second : hull.centre();
        fx.ripple_age = static_cast<float>(age);
      }
      continue;
    }
    if (e.type == ScriptEvent::kLod) {  // from its time on (a later one replaces it)
      fx.lod = e.lod;
      continue;
    }
    if (e.type != ScriptEvent::kEffect) continue;
    switch (e.effect) {
      case EffectKind::kAssemble:  // the spawn re-forms the whole hull: a held scatter and implode end here
        if (running)
          fx.scatter = 1.0f - p, fx.scatter_mode = e.mode, fx.scatter_distance = e.distance, fx.kill_bias = 0;
        else
          fx.scatter = 0;
        fx.implode = 0;
        break;
      case EffectKind::kScatter:  // the death: held at its end
        fx.scatter = p, fx.scatter_mode = e.mode, fx.scatter_distance = e.distance;
        fx.kill_direction = e.direction.value_or(kill_direction);
        fx.kill_bias = e.bias;
        break;
      case EffectKind::kImplode:  // held at its end (a detonation follows)
        fx.implode = p;
        break;
      case EffectKind::kRipple:
        if (running) {
          fx.ripple = e.amount;
          fx.ripple_origin = e.origin.value_or(last_point);
          fx.ripple_age = static_cast<float>(t - e.time);
          fx.ripple_speed = e.speed, fx.ripple_width = e.width;
        }
        break;
      case EffectKind::kCharge:
        if (running) fx.charge = e.amount * envelope(p), fx.charge_color = e.color;
        break;
      case EffectKind::kLinkDecay:
        if (running) fx.link_decay = e.amount * envelope(p);
        break;
      case EffectKind::kSiphon:
        if (running)
          fx.siphon = e.amount * envelope(p), fx.siphon_share = e.share, fx.siphon_period = e.period,
          fx.siphon_turns = e.turns;
        break;
      case EffectKind::kPartXform: {
        if (!running && !e.hold) break;
        const float w = e.hold ? p * p * (3.0f - 2.0f * p) : std::sin(std::numbers::pi_v<float> * p);
        if (parts.size() <= static_cast<size_t>(e.part)) parts.resize(static_cast<size_t>(e.part) + 1);
        parts[static_cast<size_t>(e.part)] = {e.pivot, axisAngleQuat(e.axis, e.angle * w), e.offset * w};
        break;
      }
    }
  }
  fx.parts = std::move(parts);
  return fx;
}

void HullScriptPlayer::addFireAndThrust(HullEffects& fx, double t) const {
  // Fire: the muzzle flash of the latest shot while it lasts; each gun's heat, the sum of its shots' cooling.
  if (!shots_.empty()) {
    const Shot& last = shots_.back();
    const double age = t - last.time;
    if (age >= 0 && age < kMuzzleFlashSeconds) {
      const double f = 1.0 - age / kMuzzleFlashSeconds;
      fx.muzzle_flash = static_cast<float>(last.strength * f * f);
      fx.muzzle_point = last.tip;
    }
    std::array<double, SF_HULL_GUNS> heat{};
    std::array<Vec3, SF_HULL_GUNS> tips{};
    for (const Shot& s : shots_) {
      const size_t g = static_cast<size_t>(s.gun);
      heat[g] += s.heat * std::exp(-(t - s.time) / kBarrelCoolSeconds);
      tips[g] = s.tip;
    }
    for (size_t g = 0; g < SF_HULL_GUNS; ++g)
      if (heat[g] > 1e-4) fx.barrel_heat.push_back({tips[g], static_cast<float>(heat[g])});
  }
  if (thrust_on_ && engine_parts_ != 0) {  // ignition: eased in linearly
    fx.thrust =
        thrust_amount_ * static_cast<float>(std::clamp((t - thrust_since_) / kIgnitionSeconds, 0.0, 1.0));
    fx.engine_parts = engine_parts_;
  }
}

// The ion trail's droplets due up to `upto` (droplet k of every nozzle at thrust_since_ + k / rate), each
// after bringing the destruction to its time (so the pool is the same whether the frames step or jump).
void HullScriptPlayer::emitTrail(Destruction& d, double upto, std::vector<HullEvent>& events) {
  if (!thrust_on_ || !(thrust_rate_ > 0) || nozzles_.empty()) return;
  for (;;) {
    const double tk = thrust_since_ + static_cast<double>(droplet_) / thrust_rate_;
    if (tk > upto) break;
    for (HullEvent& ev : d.update(tk)) events.push_back(std::move(ev));
    for (size_t j = 0; j < nozzles_.size(); ++j) {
      const uint32_t h = hash32(static_cast<uint32_t>(droplet_) * 0x9e3779b9u +
                                static_cast<uint32_t>(j) * 0x85ebca6bu + 0x1095u);
      auto u = [&](uint32_t salt) {
        return static_cast<float>(hash32(h + salt) >> 8) * (1.0f / 16777216.0f) - 0.5f;
      };
      const Vec3 jitter{u(1), u(2), u(3)};
      const Nozzle& nz = nozzles_[j];
      d.emitIon(nz.source, nz.tip + jitter * 0.03f, nz.direction * kIonSpeed + jitter * 0.3f, tk);
    }
    ++droplet_;
  }
}

}  // namespace sf::hull
