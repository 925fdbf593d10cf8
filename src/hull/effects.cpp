#include "hull/effects.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/covariance.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "render/splat_shape.h"

namespace sf::hull {
namespace {

using namespace hull_layout;

constexpr float kTwoPi = 6.283185307179586f;

// The shader's random numbers, bit for bit (integer hashing; only the final scale is a float).
float rnd(uint32_t a, uint32_t b) {
  return static_cast<float>(hash32(a * 0x9e3779b9u + hash32(b)) >> 8) * (1.0f / 16777216.0f);
}
Vec3 rndUnit(uint32_t a, uint32_t b) {
  const float z = 2.0f * rnd(a, b) - 1.0f, phi = kTwoPi * rnd(a, b + 1u);
  const float r = std::sqrt(std::max(0.0f, 1.0f - z * z));
  return {r * std::cos(phi), r * std::sin(phi), z};
}
Vec3 safeNormalize(Vec3 v, Vec3 fallback) {
  const float l = length(v);
  return l > 1e-12f ? v / l : fallback;
}

// A rest splat's size for the wound shapes' classes: its covariance's trace (the shader sums the same way).
float restTrace(const HullRest& r) {
  return r.cov[0] + r.cov[3] + r.cov[5];
}

// A wound slot's shape word by its rest splat's size class (HullParams::shape_small / shape_large, compared
// on the covariance's trace, exact in float on both sides); the polygon's sides and turn from its hash.
uint32_t woundShape(const HullParams& p, const HullRest& r, uint32_t key) {
  const float trace = restTrace(r);
  const uint32_t h = hash32(key ^ 0x5a0e3u);
  const SplatShapeClass cls = trace >= p.shape_large   ? SplatShapeClass::kPolygon
                              : trace <= p.shape_small ? SplatShapeClass::kDisc
                                                       : SplatShapeClass::kRoundedHex;
  return splatShapeWord(cls, 5u + (h >> 8) % 3u, h & 255u);
}

float smoothstepf(float e0, float e1, float x) {
  const float t = std::clamp((x - e0) / (e1 - e0), 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
float mixf(float a, float b, float t) {
  return a * (1.0f - t) + b * t;
}
Vec3 mixv(Vec3 a, Vec3 b, float t) {
  return a * (1.0f - t) + b * t;
}
float fractf(float x) {
  return x - std::floor(x);
}
Vec3 vec(const float* v) {
  return {v[0], v[1], v[2]};
}
void put(float* dst, Vec3 v) {
  dst[0] = v.x, dst[1] = v.y, dst[2] = v.z;
}

// Rotation matrix of a unit quaternion (x y z w), as the shader builds it (no normalisation).
Mat3 quatMatrix(float x, float y, float z, float w) {
  const Vec3 q{x, y, z};
  auto rot = [&](Vec3 v) { return v + 2.0f * cross(q, cross(q, v) + w * v); };
  const Vec3 c0 = rot({1, 0, 0}), c1 = rot({0, 1, 0}), c2 = rot({0, 0, 1});
  Mat3 r;
  for (int i = 0; i < 3; ++i) r.m[i][0] = c0[i], r.m[i][1] = c1[i], r.m[i][2] = c2[i];
  return r;
}
Mat3 axisAngle(Vec3 w) {
  const float a = length(w);
  if (a < 1e-12f) return Mat3{};
  const Vec3 k = w / a;
  const float h = 0.5f * a, s = std::sin(h);
  return quatMatrix(k.x * s, k.y * s, k.z * s, std::cos(h));
}
Mat3 scaled(const Mat3& m, float s) {
  Mat3 r = m;
  for (auto& row : r.m)
    for (float& v : row) v *= s;
  return r;
}
Mat3 sandwich(const Mat3& a, const Mat3& c) {
  return a * c * transpose(a);
}

}  // namespace

ScatterMode parseScatterMode(const std::string& text) {
  if (text == "radial") return ScatterMode::kRadial;
  if (text == "ring") return ScatterMode::kRing;
  if (text == "firework") return ScatterMode::kFirework;
  if (text == "vortex") return ScatterMode::kVortex;
  throw Error("unknown scatter mode '" + text + "' (expected radial, ring, firework or vortex)");
}

const char* scatterModeName(ScatterMode mode) {
  switch (mode) {
    case ScatterMode::kRadial:
      return "radial";
    case ScatterMode::kRing:
      return "ring";
    case ScatterMode::kFirework:
      return "firework";
    case ScatterMode::kVortex:
      return "vortex";
  }
  return "radial";
}

bool HullEffects::any() const {
  return scatter > 0 || implode > 0 || ripple != 0 || charge > 0 || link_decay > 0 || siphon > 0 ||
         !parts.empty() || muzzle_flash > 0 || (thrust > 0 && engine_parts != 0) ||
         std::any_of(barrel_heat.begin(), barrel_heat.end(), [](const BarrelHeat& b) { return b.heat > 0; });
}

Vec3 barrelGlow(float heat, float distance, float radius) {
  if (!(distance < radius) || !(heat > 0)) return {};
  const float h = std::min(heat, 1.0f), w = (1.0f - distance / radius) * (1.0f - distance / radius);
  return blackBody(1000.0f + 5500.0f * h) * (1.5f * h * w);
}

HullLight muzzleLight(const HullLight& light, const HullEffects& e, const Mat4& object_to_world) {
  HullLight l = light;
  if (light.enabled && e.muzzle_flash > 0) {
    l.flash_position = transformPoint(object_to_world, e.muzzle_point);
    l.flash_strength = e.muzzle_flash;
    l.flash_color = e.muzzle_color;
  }
  return l;
}

Vec3 blackBody(float kelvin) {
  constexpr float c2 = 1.4388e7f;  // nm K
  const float lambda[3] = {610.0f, 550.0f, 465.0f};
  float l[3];
  for (int k = 0; k < 3; ++k) l[k] = -5.0f * std::log(lambda[k]) - c2 / (lambda[k] * kelvin);
  const float top = std::max(l[0], std::max(l[1], l[2]));
  const float dim = std::clamp((kelvin - 600.0f) / 1400.0f, 0.0f, 1.0f);
  return Vec3{std::exp(l[0] - top), std::exp(l[1] - top), std::exp(l[2] - top)} * dim;
}

HullParams packHullParams(const HullEffects& e, const HullLight& light, const Mat4& object_to_world,
                          Vec3 centre, double time, uint32_t count) {
  auto check = [](float v, const char* what) {
    if (!std::isfinite(v)) throw Error(std::string("hull effects: ") + what + " is not finite");
  };
  check(e.scatter, "scatter"), check(e.implode, "implode"), check(e.ripple, "ripple"),
      check(e.charge, "charge");
  check(e.link_decay, "link_decay"), check(e.siphon, "siphon"), check(e.kill_bias, "kill_bias");
  if (e.parts.size() > SF_HULL_PARTS) throw Error("hull effects: part_xform moves at most 8 parts");
  if (!(e.decay_slot_seconds > 0) || !(e.siphon_period > 0) || !(e.ripple_width > 0) || !(e.debris_life > 0))
    throw Error("hull effects: decay slot, siphon period, ripple width and debris life must be positive");

  HullParams p{};
  p.count = count;
  p.time = static_cast<float>(time);
  const Mat3 linear = object_to_world.linear();
  const float scale = length(linear.col(0));
  p.scale = scale;
  // The light into object space: rotation^T for directions (the scale cancels in a unit vector), the
  // inverse transform for the flash position.
  if (light.enabled) {
    p.effects |= SF_HULL_FX_LIGHT;
    put(p.to_light, safeNormalize(transpose(linear) * -normalize(light.direction), {0, 1, 0}));
    p.brightness = light.brightness;
    p.emission_gain = light.emission;
    if (light.flash_strength > 0) {
      p.effects |= SF_HULL_FX_FLASH;
      p.flash_strength = light.flash_strength;
      put(p.flash_position, transformPoint(inverseAffine(object_to_world), light.flash_position));
      put(p.flash_color, light.flash_color);
    }
  }
  put(p.centre, centre);
  const float scatter = std::clamp(e.scatter, 0.0f, 1.0f);
  if (scatter > 0) {
    p.effects |= SF_HULL_FX_SCATTER;
    p.scatter = scatter;
    p.scatter_mode = static_cast<uint32_t>(e.scatter_mode);
    put(p.kill_direction, safeNormalize(e.kill_direction, {0, 0, 0}));
    p.kill_bias = std::clamp(e.kill_bias, 0.0f, 1.0f);
    p.scatter_distance = e.scatter_distance;
  }
  p.implode = std::clamp(e.implode, 0.0f, 1.0f);
  if (e.ripple != 0) {
    p.effects |= SF_HULL_FX_RIPPLE;
    p.ripple_amplitude = e.ripple;
    put(p.ripple_origin, e.ripple_origin);
    p.ripple_age = std::max(e.ripple_age, 0.0f);
    p.ripple_speed = e.ripple_speed;
    p.ripple_width = e.ripple_width;
    p.ripple_decay = e.ripple_decay;
  }
  if (e.charge > 0) {
    p.effects |= SF_HULL_FX_CHARGE;
    p.charge = std::min(e.charge, 1.0f);
    p.charge_lift = e.charge_lift;
    put(p.charge_color, e.charge_color);
  }
  if (e.link_decay > 0) {
    p.effects |= SF_HULL_FX_LINK_DECAY;
    p.link_decay = std::min(e.link_decay, 1.0f);
  }
  p.decay_slot_seconds = e.decay_slot_seconds;
  if (e.siphon > 0) {
    p.effects |= SF_HULL_FX_SIPHON;
    p.siphon = std::min(e.siphon, 1.0f);
    p.siphon_share = std::clamp(e.siphon_share, 0.0f, 1.0f);
    p.siphon_turns = e.siphon_turns;
  }
  p.siphon_period = e.siphon_period;
  p.debris_life = e.debris_life;
  put(p.gravity, e.gravity);
  if (!e.parts.empty()) {
    p.effects |= SF_HULL_FX_PART_XFORM;
    p.part_count = static_cast<uint32_t>(e.parts.size());
    for (size_t k = 0; k < e.parts.size(); ++k) {
      const Quat q = normalize(e.parts[k].rotation);
      put(p.part_pivot[k], e.parts[k].pivot);
      p.part_quat[k][0] = q.x, p.part_quat[k][1] = q.y, p.part_quat[k][2] = q.z, p.part_quat[k][3] = q.w;
      put(p.part_offset[k], e.parts[k].offset);
    }
  }
  if (e.barrel_heat.size() > SF_HULL_GUNS) throw Error("hull effects: barrel heat on at most 8 guns");
  if (!e.barrel_heat.empty()) {
    if (!(e.heat_radius > 0) || !std::isfinite(e.heat_radius))
      throw Error("hull effects: heat_radius must be positive");
    for (const HullEffects::BarrelHeat& b : e.barrel_heat) {
      check(b.heat, "barrel heat");
      check(b.tip.x + b.tip.y + b.tip.z, "barrel tip");
      if (!(b.heat > 0)) continue;  // a cold gun costs nothing
      const uint32_t g = p.gun_count++;
      put(p.gun_heat[g], b.tip);
      p.gun_heat[g][3] = b.heat;
    }
    if (p.gun_count > 0) p.effects |= SF_HULL_FX_HEAT, p.heat_radius = e.heat_radius;
  }
  check(e.thrust, "thrust");
  if (e.thrust > 0 && (e.engine_parts & 0xffu) != 0) {
    p.effects |= SF_HULL_FX_THRUST;
    p.engine_parts = e.engine_parts & 0xffu;
    p.thrust = std::min(e.thrust, 1.0f);
    put(p.thrust_color, e.thrust_color);
  }
  return p;
}

namespace {

// One slot's splat while evaluateHull moves and shades it.
struct SlotSplat {
  Vec3 pos;
  Vec3 normal;
  Mat3 cov;
  Vec3 col;
  float op = 0;
  Vec3 glow{};
  bool lit = true;
};

// A debris slot: ballistic flight from its birth, fading as it cools; false once its life is over.
bool debrisMotion(const HullParams& p, const HullSlot& s, Vec3 gravity, SlotSplat& splat) {
  const float age = std::max(p.time - s.birth, 0.0f), a = age / p.debris_life;
  if (a >= 1.0f) return false;
  splat.pos = splat.pos + vec(s.velocity) * age + 0.5f * gravity * age * age;
  if (s.flags & SF_HULL_FLAG_ION) {  // an engine's ion droplet: blue, fading
    splat.col = mixv({0.55f, 0.85f, 1.0f}, {0.1f, 0.25f, 0.9f}, a);
    splat.op *= 1.0f - a;
  } else {
    splat.col = blackBody(mixf(6500.0f, 600.0f, std::sqrt(a)));
    splat.op *= 1.0f - smoothstepf(0.7f, 1.0f, a);
  }
  splat.lit = false;
  return true;
}

// A slot of a broken-off body: the body's spin about its pivot and ballistic flight, fading at the end of
// its life; false once that is over.
bool bodyMotion(const HullParams& p, const HullBody& b, Vec3 gravity, SlotSplat& splat) {
  const float age = std::max(p.time - b.birth, 0.0f);
  if (age >= b.life) return false;
  const Mat3 rot = axisAngle(vec(b.spin) * age);
  const Vec3 pivot = vec(b.pivot);
  splat.pos = pivot + rot * (splat.pos - pivot) + vec(b.velocity) * age + 0.5f * gravity * age * age;
  splat.normal = rot * splat.normal;
  splat.cov = sandwich(rot, splat.cov);
  splat.op *= 1.0f - smoothstepf(0.75f, 1.0f, age / b.life);
  return true;
}

// A hull slot's motion by part and chunk: the part transforms, charge lift, ripple, link decay and siphon.
void partMotion(const HullParams& p, const HullRest& r, uint32_t part, uint32_t chunk, uint32_t key,
                Vec3 centre, SlotSplat& splat) {
  if ((p.effects & SF_HULL_FX_PART_XFORM) && part < p.part_count) {
    const Mat3 rot =
        quatMatrix(p.part_quat[part][0], p.part_quat[part][1], p.part_quat[part][2], p.part_quat[part][3]);
    const Vec3 pivot = vec(p.part_pivot[part]);
    splat.pos = pivot + rot * (splat.pos - pivot) + vec(p.part_offset[part]);
    splat.normal = rot * splat.normal;
    splat.cov = sandwich(rot, splat.cov);
  }
  if (p.effects & SF_HULL_FX_CHARGE) {
    const float h = rnd(chunk * 8u + part, 0xc4a6u);
    splat.pos = splat.pos + splat.normal * (p.charge * p.charge_lift * (0.5f + 0.5f * h));
    splat.glow = splat.glow + vec(p.charge_color) * (p.charge * (1.0f - r.ao) * 1.5f);
  }
  if (p.effects & SF_HULL_FX_RIPPLE) {
    const float d = length(vec(r.position) - vec(p.ripple_origin));
    const float x = (d - p.ripple_age * p.ripple_speed) / p.ripple_width;
    splat.pos = splat.pos + splat.normal * (p.ripple_amplitude * std::exp(-x * x) *
                                            std::exp(-p.ripple_age * p.ripple_decay));
  }
  if (p.effects & SF_HULL_FX_LINK_DECAY) {
    const uint32_t q = static_cast<uint32_t>(std::max(std::floor(p.time / p.decay_slot_seconds), 0.0f));
    const uint32_t chosen = hash32(q * 7919u + 17u) % SF_HULL_PARTS;
    const float g = p.link_decay;
    if (part == chosen) {
      splat.pos =
          splat.pos + (Vec3{rnd(q, 1u), rnd(q, 2u), rnd(q, 3u)} - Vec3{0.5f, 0.5f, 0.5f}) * (0.06f * g);
      splat.col = mixv(splat.col, {0.1f, 0.95f, 1.0f}, 0.75f * g);
      splat.op *= 1.0f - 0.4f * g;
    }
    if (rnd(key, q) < 0.015f * g) {
      splat.pos = splat.pos +
                  (Vec3{rnd(key, q + 11u), rnd(key, q + 12u), rnd(key, q + 13u)} - Vec3{0.5f, 0.5f, 0.5f}) *
                      (0.1f * g);
      splat.col = {0.6f, 1.0f, 1.0f};
    }
  }
  if ((p.effects & SF_HULL_FX_SIPHON) && rnd(key, 0x51fu) < p.siphon * p.siphon_share) {
    const float phase = fractf(p.time / p.siphon_period + rnd(key, 0x52fu));
    const float e = phase * phase;
    Vec3 v = splat.pos - centre;
    const float ang = e * p.siphon_turns * kTwoPi, ca = std::cos(ang), sa = std::sin(ang);
    v = Vec3{ca * v.x + sa * v.z, v.y, -sa * v.x + ca * v.z} * (1.0f - e);
    splat.pos = centre + v;
    const Vec3 d = safeNormalize(-v, {0, 1, 0});
    const float across = 1.0f - 0.6f * e, along = 1.0f + 5.0f * e;
    Mat3 st = scaled(Mat3{}, across);
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) st.m[a][b] += (along - across) * d[a] * d[b];
    splat.cov = sandwich(st, splat.cov);
  }
}

// The scatter effect (SF_HULL_FX_SCATTER): each splat thrown along its mode's direction, fading and
// shrinking.
void scatterMotion(const HullParams& p, const HullRest& r, uint32_t key, Vec3 centre, SlotSplat& splat) {
  if (!(p.effects & SF_HULL_FX_SCATTER)) return;
  const Vec3 v = vec(r.position) - centre;
  const Vec3 ru = rndUnit(key, 0x5ca7u);
  const float u = rnd(key, 0x5ca9u);
  Vec3 dir;
  if (p.scatter_mode == SF_HULL_SCATTER_RING) {
    dir =
        safeNormalize({v.x, 0, v.z}, {1, 0, 0}) + 0.3f * Vec3{ru.x, 0, ru.z} + Vec3{0, 0.15f * (u - 0.5f), 0};
  } else if (p.scatter_mode == SF_HULL_SCATTER_FIREWORK) {
    dir = {0.35f * ru.x, 1.5f + u, 0.35f * ru.z};
  } else if (p.scatter_mode == SF_HULL_SCATTER_VORTEX) {
    dir = safeNormalize(cross({0, 1, 0}, v), {1, 0, 0}) + 0.35f * safeNormalize(v, {0, 1, 0}) +
          Vec3{0, 0.4f, 0};
  } else {
    dir = safeNormalize(v, {0, 1, 0}) + 0.5f * ru;
  }
  dir = safeNormalize(dir + (2.0f * p.kill_bias) * vec(p.kill_direction), {0, 1, 0});
  const float sp = p.scatter, ease = 1.0f - (1.0f - sp) * (1.0f - sp);
  splat.pos = splat.pos + dir * (p.scatter_distance * (0.4f + 0.6f * u) * ease);
  if (p.scatter_mode == SF_HULL_SCATTER_VORTEX) {
    const Vec3 w = splat.pos - centre;
    const float ang = sp * 3.14159265f * (1.0f + u), ca = std::cos(ang), sa = std::sin(ang);
    splat.pos = centre + Vec3{ca * w.x + sa * w.z, w.y, -sa * w.x + ca * w.z};
  }
  splat.op *= 1.0f - smoothstepf(0.55f, 1.0f, sp);
  splat.cov = scaled(splat.cov, (1.0f - 0.5f * sp) * (1.0f - 0.5f * sp));
}

void slotGlow(const HullParams& p, const HullRest& r, const HullSlot& s, uint32_t key, SlotSplat& splat);

// A hull (skin or layer) slot's effects: motion, scatter, implosion, then glow (hot, barrel heat, thrust)
// and sparks.
void hullSlotEffects(const HullParams& p, const HullRest& r, const HullSlot& s, uint32_t key, Vec3 centre,
                     SlotSplat& splat) {
  const uint32_t part = r.channels & 0xffu, chunk = r.channels >> 16;
  partMotion(p, r, part, chunk, key, centre, splat);
  scatterMotion(p, r, key, centre, splat);
  if (p.implode > 0) {
    const float k = p.implode * p.implode;
    splat.pos = mixv(splat.pos, centre, k * 0.85f * (0.7f + 0.3f * rnd(key, 0x1317u)));
    splat.cov = scaled(splat.cov, (1.0f - 0.7f * p.implode) * (1.0f - 0.7f * p.implode));
    splat.col = mixv(splat.col, {1, 1, 1}, 0.5f * k);
  }
  slotGlow(p, r, s, key, splat);
}

// A hull slot's glow (hot, barrel heat, thrust) and sparks: what its effects add to its colour, not its
// place.
void slotGlow(const HullParams& p, const HullRest& r, const HullSlot& s, uint32_t key, SlotSplat& splat) {
  const uint32_t part = r.channels & 0xffu;
  if (s.flags & SF_HULL_FLAG_HOT)
    splat.glow = splat.glow + Vec3{1.0f, 0.35f, 0.05f} *
                                  (0.6f + 0.4f * std::sin(p.time * 5.0f + rnd(key, 0x407u) * kTwoPi));
  if (p.effects & SF_HULL_FX_HEAT) {
    for (uint32_t g = 0; g < p.gun_count && g < SF_HULL_GUNS; ++g)
      splat.glow = splat.glow +
                   barrelGlow(p.gun_heat[g][3], length(vec(r.position) - vec(p.gun_heat[g])), p.heat_radius);
  }
  if ((p.effects & SF_HULL_FX_THRUST) && part < 8u && ((p.engine_parts >> part) & 1u))
    splat.glow =
        splat.glow + vec(p.thrust_color) *
                         (p.thrust * (0.85f + 0.15f * std::sin(p.time * 40.0f + rnd(key, 0x7e5u) * kTwoPi)));
  if ((s.flags & SF_HULL_FLAG_SPARK) && fractf(p.time * 0.7f + rnd(key, 0x5a4u)) < 0.08f) {
    splat.col = {0.7f, 0.85f, 1.0f};
    splat.lit = false;
  }
}

// The toon lighting of a lit splat (SF_HULL_FX_LIGHT), its emission and the flash.
// The breathing of the emission at the frame's time, the same for every slot (computed once a frame).
float breathOf(const HullParams& p) {
  return 0.78f + 0.22f * std::sin(p.time * 2.3f);
}

void shadeSlot(const HullParams& p, const HullRest& r, SlotSplat& splat, float breath) {
  if (!splat.lit || !(p.effects & SF_HULL_FX_LIGHT)) return;
  const float ndl = std::clamp(dot(splat.normal, vec(p.to_light)), 0.0f, 1.0f);
  float band = mixf(0.62f, 0.88f, smoothstepf(0.22f, 0.28f, ndl));
  band = mixf(band, 1.12f, smoothstepf(0.52f, 0.58f, ndl));
  const Vec3 albedo = splat.col;
  splat.col = albedo * (p.brightness * band) + albedo * (r.emission * breath * p.emission_gain);
  if (p.effects & SF_HULL_FX_FLASH) {
    const Vec3 fd = vec(p.flash_position) - splat.pos;
    const float fndl = std::clamp(dot(splat.normal, safeNormalize(fd, {0, 0, 0})), 0.0f, 1.0f);
    const float fband = fndl > 0.5f ? 1.0f : (fndl > 0.2f ? 0.45f : 0.0f);
    const float d2 = dot(fd, fd) * p.scale * p.scale;
    splat.col = splat.col + vec(p.flash_color) * (p.flash_strength * fband / (1.0f + 0.15f * d2));
  }
}

// Whether rest record r's chunk is one the frame draws in the baked path (HullParams::mesh_chunks).
bool inMeshChunk(const HullParams& p, const HullRest& r) {
  const uint32_t c = r.channels >> 16;
  return c < SF_HULL_MESH_CHUNKS && ((p.mesh_chunks[c >> 5] >> (c & 31u)) & 1u) != 0;
}

// The colour the pass gives hull slot `idx` when no effect moves it (LiveCore::kMesh's baked part): its glow
// and sparks, then the cel light, clamped; the same functions as evaluateHull's, in the same order.
Vec3 stillSlotColor(const HullParams& p, const HullRest& r, const HullSlot& s, uint32_t idx, float breath) {
  SlotSplat splat;
  splat.pos = vec(s.position);
  splat.normal = vec(r.normal) * s.normal_sign;
  splat.col = vec(s.color);
  slotGlow(p, r, s, hash32(idx * 0x9e3779b9u + r.seed), splat);
  shadeSlot(p, r, splat, breath);
  const Vec3 col = splat.col + splat.glow;
  return {std::clamp(col.x, 0.0f, 1.0f), std::clamp(col.y, 0.0f, 1.0f), std::clamp(col.z, 0.0f, 1.0f)};
}

// Whether `params` moves or fades hull slot `idx` (rest record r) through part_xform, link_decay or siphon:
// the conditions of partMotion, evaluated alone.
bool slotTakenByEffects(const HullParams& p, const HullRest& r, uint32_t idx) {
  const uint32_t part = r.channels & 0xffu, key = hash32(idx * 0x9e3779b9u + r.seed);
  if ((p.effects & SF_HULL_FX_PART_XFORM) && part < p.part_count) return true;
  if (p.effects & SF_HULL_FX_LINK_DECAY) {
    const uint32_t q = static_cast<uint32_t>(std::max(std::floor(p.time / p.decay_slot_seconds), 0.0f));
    if (part == hash32(q * 7919u + 17u) % SF_HULL_PARTS) return true;
    if (rnd(key, q) < 0.015f * p.link_decay) return true;
  }
  return (p.effects & SF_HULL_FX_SIPHON) && rnd(key, 0x51fu) < p.siphon * p.siphon_share;
}

}  // namespace

LiveCore parseLiveCore(const std::string& text) {
  if (text == "mesh") return LiveCore::kMesh;
  if (text == "sorted") return LiveCore::kSorted;
  throw Error("unknown live core '" + text + "' (expected mesh or sorted)");
}

const char* liveCoreName(LiveCore mode) {
  return mode == LiveCore::kMesh ? "mesh" : "sorted";
}

void evaluateHull(const HullParams& p, std::span<const HullRest> rest, std::span<const HullSlot> slots,
                  std::span<const HullBody> bodies, HullOutput& out, std::span<const uint32_t> lod_rank) {
  const bool lod = (p.effects & SF_HULL_FX_LOD) != 0;
  if (lod && lod_rank.size() != rest.size())
    throw Error("hull LOD: " + std::to_string(lod_rank.size()) + " ranks for " + std::to_string(rest.size()) +
                " rest records");
  const size_t n = slots.size();
  out.positions.assign(n, Vec3{});
  out.covariances.assign(n, Cov6{});
  out.opacities.assign(n, std::numeric_limits<float>::quiet_NaN());
  out.colors.assign(n, Vec3{});
  out.shapes.assign(n, 0u);
  const Vec3 centre = vec(p.centre), gravity = vec(p.gravity);
  const float breath = breathOf(p);
  for (size_t idx = 0; idx < n; ++idx) {
    const uint32_t i = static_cast<uint32_t>(idx);
    const HullSlot& s = slots[idx];
    const uint32_t kind = (s.flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT;
    if (kind == SF_HULL_KIND_OFF || !(s.opacity > 0)) continue;
    if (s.source >= rest.size())
      throw Error("hull slot " + std::to_string(idx) + ": rest record out of range");
    if (lod && !(s.flags & SF_HULL_FLAG_ION) && lod_rank[s.source] >= p.lod_count) continue;  // runtime LOD
    const HullRest& r = rest[s.source];
    if ((p.effects & SF_HULL_FX_MESH_CORE) && idx < p.mesh_slots && inMeshChunk(p, r))
      continue;  // the live core: drawn in the baked path
    SlotSplat splat;
    splat.pos = vec(s.position);
    splat.normal = vec(r.normal) * s.normal_sign;
    splat.cov = scaled(covarianceMatrix(Cov6{r.cov[0], r.cov[1], r.cov[2], r.cov[3], r.cov[4], r.cov[5]}),
                       s.size * s.size);
    splat.col = vec(s.color);
    splat.op = s.opacity;
    const uint32_t key = hash32(i * 0x9e3779b9u + r.seed);

    if (kind == SF_HULL_KIND_DEBRIS) {
      if (!debrisMotion(p, s, gravity, splat)) continue;
    } else if (kind == SF_HULL_KIND_BODY) {
      if (s.body >= bodies.size()) throw Error("hull slot " + std::to_string(idx) + ": body out of range");
      if (!bodyMotion(p, bodies[s.body], gravity, splat)) continue;
    } else {
      hullSlotEffects(p, r, s, key, centre, splat);
    }
    shadeSlot(p, r, splat, breath);
    const Vec3 col = splat.col + splat.glow;
    out.positions[idx] = splat.pos;
    out.covariances[idx] = covarianceUpper(splat.cov);
    out.opacities[idx] = splat.op;
    out.colors[idx] = {std::clamp(col.x, 0.0f, 1.0f), std::clamp(col.y, 0.0f, 1.0f),
                       std::clamp(col.z, 0.0f, 1.0f)};
    if (p.shape_large > 0 && (s.flags & SF_HULL_FLAG_WOUND) &&
        (kind == SF_HULL_KIND_SKIN || kind == SF_HULL_KIND_LAYER))
      out.shapes[idx] = woundShape(p, r, key);
  }
}

HullInstance::HullInstance(std::shared_ptr<const HullAsset> asset, const DestructionOptions& options)
    : asset_(std::move(asset)), options_(options), destruction_(asset_->hull, options) {
  const auto& rest = destruction_.rest();
  double c[3] = {0, 0, 0};
  for (const HullRest& r : rest)
    for (int k = 0; k < 3; ++k) c[k] += r.position[k];
  const double n = std::max<double>(1.0, static_cast<double>(rest.size()));
  centre_ = {static_cast<float>(c[0] / n), static_cast<float>(c[1] / n), static_cast<float>(c[2] / n)};
  effects.debris_life = options.debris_life;
  // The size classes of wound shapes: percentiles of the hull splats' rest sizes (the pool copies theirs).
  std::vector<float> traces;
  traces.reserve(destruction_.hullSlots());
  for (size_t i = 0; i < destruction_.hullSlots() && i < rest.size(); ++i)
    traces.push_back(restTrace(rest[i]));
  if (!traces.empty()) {
    auto at = [&](double q) {
      auto it = traces.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(traces.size() - 1));
      std::nth_element(traces.begin(), it, traces.end());
      return *it;
    };
    shape_small_ = at(0.40);
    shape_large_ = std::max(at(0.85), std::numeric_limits<float>::min());  // > 0: shapes on
  }
  slots_cloud_.resize(destruction_.slots().size(), 0);
  slots_cloud_.color_space = asset_->rest.color_space;
  lod_rank_ = asset_->lod_rank.size() == rest.size() ? asset_->lod_rank : hullImportanceRanks(asset_->hull);
  lod_radius_ = asset_->lod_radius > 0 ? asset_->lod_radius : hullLodRadius(asset_->hull);
  // The live core: chunks by the rest records' chunk ids, their bounding spheres.
  const size_t n_hull = std::min(destruction_.hullSlots(), rest.size());
  chunk_of_.resize(n_hull);
  for (size_t i = 0; i < n_hull; ++i) {
    chunk_of_[i] = rest[i].channels >> 16;
    chunk_count_ = std::max(chunk_count_, chunk_of_[i] + 1);
  }
  std::vector<double> sum(3 * size_t{chunk_count_}, 0.0);
  std::vector<uint32_t> members(chunk_count_, 0);
  for (size_t i = 0; i < n_hull; ++i) {
    for (int k = 0; k < 3; ++k) sum[3 * chunk_of_[i] + k] += rest[i].position[k];
    ++members[chunk_of_[i]];
  }
  chunk_centre_.assign(chunk_count_, Vec3{});
  chunk_radius_.assign(chunk_count_, 0.0f);
  for (uint32_t ch = 0; ch < chunk_count_; ++ch)
    if (members[ch] > 0) {
      const double m = members[ch];
      chunk_centre_[ch] = {static_cast<float>(sum[3 * ch] / m), static_cast<float>(sum[3 * ch + 1] / m),
                           static_cast<float>(sum[3 * ch + 2] / m)};
    }
  for (size_t i = 0; i < n_hull; ++i) {
    const uint32_t ch = chunk_of_[i];
    chunk_radius_[ch] = std::max(chunk_radius_[ch], length(vec(rest[i].position) - chunk_centre_[ch]));
  }
  for (float& radius : chunk_radius_) radius = radius * 1.0001f + 1e-6f;  // the float rounding of the above
  HullFrame octagons;
  for (size_t k = 0; k < asset_->hull.core.size(); ++k)
    appendHullCoreOctagon(asset_->hull.core, k, {}, octagons);
  core_octagons_ = std::move(octagons.core_positions);
}

HullInstance::~HullInstance() = default;

void HullInstance::resetDestruction() {
  destruction_ = Destruction(asset_->hull, options_);
  ++generation_;
}

void HullInstance::setGpuPath(std::shared_ptr<HullGpuPath> path) {
  gpu_ = std::move(path);
}

bool HullInstance::wounded() const {
  if (wounds_revision_ != revision()) {
    const auto& slots = destruction_.slots();
    wounded_ = std::any_of(slots.begin(), slots.end(),
                           [](const HullSlot& s) { return (s.flags & SF_HULL_FLAG_WOUND) != 0; });
    wounds_revision_ = revision();
  }
  return wounded_;
}

const std::vector<uint8_t>& HullInstance::intactChunks() const {
  if (intact_revision_ != revision()) {
    intact_.assign(chunk_count_, 1);
    const auto& slots = destruction_.slots();
    const auto& initial = destruction_.initialSlots();
    for (size_t i = 0; i < chunk_of_.size() && i < initial.size(); ++i)
      if (std::memcmp(&slots[i], &initial[i], sizeof(HullSlot)) != 0) intact_[chunk_of_[i]] = 0;
    intact_revision_ = revision();
  }
  return intact_;
}

std::vector<uint8_t> HullInstance::meshChunks(const HullParams& p) const {
  std::vector<uint8_t> mesh = intactChunks();
  for (uint32_t c = SF_HULL_MESH_CHUNKS; c < chunk_count_; ++c) mesh[c] = 0;  // past the frame's mask
  if ((p.effects & (SF_HULL_FX_SCATTER | SF_HULL_FX_CHARGE)) || p.implode > 0) {
    std::fill(mesh.begin(), mesh.end(), uint8_t{0});  // every slot moves
    return mesh;
  }
  if (p.effects & SF_HULL_FX_RIPPLE) {
    // The largest displacement the front gives a slot of the chunk: at the distance from the origin within
    // the chunk's sphere nearest the front (partMotion's formula).
    const float front = p.ripple_age * p.ripple_speed;
    const float fade = std::abs(p.ripple_amplitude) * std::exp(-p.ripple_age * p.ripple_decay);
    for (uint32_t c = 0; c < chunk_count_; ++c) {
      if (!mesh[c]) continue;
      const float d = length(chunk_centre_[c] - vec(p.ripple_origin));
      const float lo = std::max(d - chunk_radius_[c], 0.0f), hi = d + chunk_radius_[c];
      const float x = front < lo   ? (lo - front) / p.ripple_width
                      : front > hi ? (front - hi) / p.ripple_width
                                   : 0;
      if (fade * std::exp(-x * x) > kHullStillDistance) mesh[c] = 0;
    }
  }
  if (p.effects & (SF_HULL_FX_PART_XFORM | SF_HULL_FX_LINK_DECAY | SF_HULL_FX_SIPHON)) {
    const auto& rest = destruction_.rest();
    for (size_t i = 0; i < chunk_of_.size(); ++i)
      if (mesh[chunk_of_[i]] && slotTakenByEffects(p, rest[i], static_cast<uint32_t>(i)))
        mesh[chunk_of_[i]] = 0;
  }
  return mesh;
}

void HullInstance::buildBakedPart(const HullParams& params, const std::vector<uint8_t>& mesh,
                                  const Mat4& object_to_world, const Camera& cam, HullFrame& out) const {
  const Spl2Hull& h = asset_->hull;
  const GaussianCloud& r = asset_->rest;
  const size_t n_core = h.core.size(), n_shell = h.shell.size();
  const auto& rest = destruction_.rest();
  const auto& slots = destruction_.slots();
  const bool lod = (params.effects & SF_HULL_FX_LOD) != 0;
  const uint32_t lod_key = lod ? params.lod_count : ~0u;
  for (uint32_t ch = 0; ch < chunk_count_; ++ch) out.mesh_chunks += mesh[ch];
  // The kept rows, their octagons and the baked shell's rows: rebuilt only when what is kept changes (this
  // instance's kept chunks or LOD count; a kept slot's opacity is its undamaged one); otherwise a frame only
  // relights them.
  if (out.mesh_owner != this || out.mesh_key != mesh || out.mesh_key_lod != lod_key ||
      out.baked_shell.size() != n_shell) {
    // A slot of a kept chunk is drawn as the pass would draw it: unless LOD cuts it or its opacity is 0.
    auto drawn = [&](size_t i) {
      return mesh[chunk_of_[i]] && slots[i].opacity > 0 && (!lod || lod_rank_[i] < params.lod_count);
    };
    out.mesh_core_list.clear();
    out.mesh_shell_list.clear();
    out.core_positions.clear();
    out.core_indices.clear();
    for (size_t k = 0; k < n_core; ++k) {
      if (!drawn(k)) continue;
      // The baked core's octagon (appendHullCoreOctagon, placed once for the instance).
      const uint32_t base = static_cast<uint32_t>(out.core_positions.size());
      out.core_positions.insert(out.core_positions.end(),
                                core_octagons_.begin() + static_cast<std::ptrdiff_t>(9 * k),
                                core_octagons_.begin() + static_cast<std::ptrdiff_t>(9 * k + 9));
      for (uint32_t v = 0; v < 8; ++v) {
        out.core_indices.push_back(base);
        out.core_indices.push_back(base + 1 + v);
        out.core_indices.push_back(base + 1 + (v + 1) % 8);
      }
      out.mesh_core_list.push_back(static_cast<uint32_t>(k));
    }
    out.core_colors.resize(out.core_positions.size());
    GaussianCloud& c = out.baked_shell;
    if (n_shell > 0) {
      c.resize(n_shell, 0);
      c.color_space = r.color_space;
    } else {
      c = GaussianCloud{};
    }
    for (size_t k = 0; k < n_shell; ++k) {
      const size_t i = n_core + k;
      c.positions[k] = r.positions[i];
      c.scales[k] = r.scales[i];
      c.rotations[k] = r.rotations[i];
      float* dc = c.shOf(k).data();
      dc[0] = dc[1] = dc[2] = 0;
      if (drawn(i)) {
        c.opacities[k] = r.opacities[i];
        out.mesh_shell_list.push_back(static_cast<uint32_t>(k));
      } else {
        c.opacities[k] = std::numeric_limits<float>::quiet_NaN();  // drawn by the pass, or not at all
      }
    }
    out.mesh_owner = this;
    out.mesh_key = mesh;
    out.mesh_key_lod = lod_key;
  }
  // This frame's light on the kept rows: the pass's colour of each slot.
  const float breath = breathOf(params);
  for (size_t j = 0; j < out.mesh_core_list.size(); ++j) {
    const uint32_t k = out.mesh_core_list[j];
    const Vec3 col = stillSlotColor(params, rest[k], slots[k], k, breath);
    std::fill_n(out.core_colors.begin() + static_cast<std::ptrdiff_t>(9 * j), 9,
                std::array<float, 4>{col.x, col.y, col.z, 1.0f});
  }
  for (const uint32_t k : out.mesh_shell_list) {
    const uint32_t i = static_cast<uint32_t>(n_core) + k;
    const Vec3 col = stillSlotColor(params, rest[i], slots[i], i, breath);
    float* dc = out.baked_shell.shOf(k).data();
    dc[0] = (col.x - 0.5f) / kShC0, dc[1] = (col.y - 0.5f) / kShC0, dc[2] = (col.z - 0.5f) / kShC0;
  }
  out.mesh_core_rows = static_cast<uint32_t>(out.mesh_core_list.size());
  out.mesh_shell_rows = static_cast<uint32_t>(out.mesh_shell_list.size());
  if (n_shell > 0) out.bucket = hullShellSortDepths(*asset_, object_to_world, cam, out.sort_depth);
}

void HullInstance::buildFrame(const Mat4& object_to_world, double time, const HullLight& light,
                              HullFrame& out, std::vector<RenderObject>& objects, const HullLod& lod,
                              const Camera* cam, std::vector<RenderMesh>* meshes) const {
  const std::vector<HullSlot>& slots = destruction_.slots();
  HullParams params = packHullParams(effects, muzzleLight(light, effects, object_to_world), object_to_world,
                                     centre_, time, static_cast<uint32_t>(slots.size()));
  if (wounded()) params.shape_small = shape_small_, params.shape_large = shape_large_;
  const uint32_t n = static_cast<uint32_t>(lod_rank_.size());
  out.lod_count = resolveHullLod(effects.lod.value_or(lod), n, lod_radius_, object_to_world, cam);
  if (out.lod_count < n) params.effects |= SF_HULL_FX_LOD, params.lod_count = out.lod_count;
  out.sort_depth.clear();
  out.bucket = -1;
  out.mesh_chunks = out.mesh_core_rows = out.mesh_shell_rows = 0;
  // The live core (LiveCore::kMesh): the untouched chunks in the baked path, lit with this frame's parameters
  // before the pass is told to leave their slots out.
  const bool split = meshes != nullptr && cam != nullptr && !chunk_of_.empty();
  if (!split) {
    out.core_positions.clear();
    out.core_colors.clear();
    out.core_indices.clear();
    out.mesh_owner = nullptr;
  } else {
    const std::vector<uint8_t> mesh = meshChunks(params);
    buildBakedPart(params, mesh, object_to_world, *cam, out);
    for (uint32_t c = 0; c < chunk_count_ && c < SF_HULL_MESH_CHUNKS; ++c)
      if (mesh[c]) params.mesh_chunks[c >> 5] |= 1u << (c & 31u);
    if (out.mesh_chunks > 0)
      params.effects |= SF_HULL_FX_MESH_CORE, params.mesh_slots = static_cast<uint32_t>(chunk_of_.size());
  }
  // After the hull's object (whose slot range then stays put): the baked shell, always while split (one row
  // per shell row, so its range stays put too), and the core mesh.
  auto pushBakedPart = [&] {
    if (!split) return;
    if (out.baked_shell.size() > 0) {
      RenderObject shell{&out.baked_shell, object_to_world};
      shell.dynamic = true;
      if (out.bucket >= 0) shell.sort_depth = out.sort_depth;
      objects.push_back(shell);
    }
    if (!out.core_indices.empty()) meshes->push_back(hullCoreMesh(out, object_to_world));
  };
  if (gpu_) {
    gpu_->setFrame(params, destruction_, revision());
    RenderObject ro{&slots_cloud_, object_to_world};
    ro.gpu_source = gpu_.get();
    objects.push_back(ro);
    pushBakedPart();
    return;
  }
  evaluateHull(params, destruction_.rest(), slots, destruction_.bodies(), out.live, lod_rank_);
  GaussianCloud& c = out.cloud;
  if (c.size() != slots.size() || c.sh_degree != 0) c.resize(slots.size(), 0);
  c.color_space = slots_cloud_.color_space;
  for (size_t i = 0; i < slots.size(); ++i) {
    c.opacities[i] = out.live.opacities[i];  // NaN: left out
    float* dc = c.shOf(i).data();
    const Vec3 col = out.live.colors[i];
    dc[0] = (col.x - 0.5f) / kShC0, dc[1] = (col.y - 0.5f) / kShC0, dc[2] = (col.z - 0.5f) / kShC0;
  }
  RenderObject ro{&c, object_to_world, out.live.positions, out.live.covariances};
  ro.dynamic = true;
  if (params.shape_large > 0) ro.shapes = out.live.shapes;
  objects.push_back(ro);
  pushBakedPart();
}

}  // namespace sf::hull
