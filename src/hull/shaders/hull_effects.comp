#version 460
// A live splat hull's pass (hull/effects.h): one thread per slot turns the slot's state (HullSlot: where it
// sits, its colour, its kind) and its rest record (shape, normal, baked channels) into this frame's gaussian,
// through the effects that are on (each a uniform branch), the debris and body motion and the cel light, and
// writes it into the object's slot range of the frame's sink. Same maths as hull::evaluateHull (the CPU
// reference); keep the two in step.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_GOOGLE_include_directive : require

#include "../hull_shared.h"
#include "../../render/gpu_shared.h"
#include "../../render/shaders/sh_dc.glsl"

layout(push_constant, scalar) uniform PushBlock { HullPush pc; };
layout(local_size_x = SF_HULL_WG) in;

const float kTwoPi = 6.283185307179586;

uint hash32(uint x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
float rnd(uint a, uint b) { return float(hash32(a * 0x9e3779b9u + hash32(b)) >> 8) * (1.0 / 16777216.0); }
vec3 rndUnit(uint a, uint b) {
  float z = 2.0 * rnd(a, b) - 1.0, phi = kTwoPi * rnd(a, b + 1u);
  float r = sqrt(max(0.0, 1.0 - z * z));
  return vec3(r * cos(phi), r * sin(phi), z);
}
vec3 safeNormalize(vec3 v, vec3 fallback) {
  float l = length(v);
  return l > 1e-12 ? v / l : fallback;
}
float smoothstepf(float e0, float e1, float x) {
  float t = clamp((x - e0) / (e1 - e0), 0.0, 1.0);
  return t * t * (3.0 - 2.0 * t);
}
vec3 quatRotate(vec4 q, vec3 v) { return v + 2.0 * cross(q.xyz, cross(q.xyz, v) + q.w * v); }
mat3 quatMatrix(vec4 q) {
  return mat3(quatRotate(q, vec3(1, 0, 0)), quatRotate(q, vec3(0, 1, 0)), quatRotate(q, vec3(0, 0, 1)));
}
// Rotation by the vector `w` (axis * angle).
mat3 axisAngle(vec3 w) {
  float a = length(w);
  if (a < 1e-12) return mat3(1.0);
  vec3 k = w / a;
  float h = 0.5 * a;
  return quatMatrix(vec4(k * sin(h), cos(h)));
}
vec3 blackBody(float kelvin) {
  const float c2 = 1.4388e7;  // nm K
  vec3 lambda = vec3(610.0, 550.0, 465.0);
  vec3 l = -5.0 * log(lambda) - c2 / (lambda * kelvin);
  vec3 c = exp(l - max(l.x, max(l.y, l.z)));
  return c * clamp((kelvin - 600.0) / 1400.0, 0.0, 1.0);
}

// A wound slot's shape word by its rest splat's size class (hull/effects.cpp woundShape, the same maths).
uint woundShape(HullRest r, uint key, float small_trace, float large_trace) {
  float trace = r.cov[0] + r.cov[3] + r.cov[5];
  uint h = hash32(key ^ 0x5a0e3u);
  uint cls = trace >= large_trace ? SF_SHAPE_POLYGON : (trace <= small_trace ? SF_SHAPE_DISC : SF_SHAPE_ROUNDED_HEX);
  return SF_SHAPE_WORD(cls, 5u + (h >> 8) % 3u, h & 255u);  // sides 5..7 (read by polygons only), turn
}

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= pc.count) return;
  // The parameters are read where used, never copied whole: a copy's part arrays, indexed by the slot's
  // part, would live in local memory (a per-thread spill of hundreds of bytes: 0.20 against 0.12 ms for
  // 200 hulls of 6,500 slots on the H200).
  HullParamsRef params = pc.params;
  HullSlot s = pc.slots.s[i];
  uint kind = (s.flags & SF_HULL_KIND_MASK) >> SF_HULL_KIND_SHIFT;
  float nan = uintBitsToFloat(0x7fc00000u);
  if (kind == SF_HULL_KIND_OFF || !(s.opacity > 0.0)) {
    pc.out_opacities.v[i] = nan;
    return;
  }
  // Runtime LOD: only the first lod_count rest records in importance order (hull::evaluateHull, the same rule).
  if ((params.p.effects & SF_HULL_FX_LOD) != 0u && (s.flags & SF_HULL_FLAG_ION) == 0u && pc.lod_rank.v[s.source] >= params.p.lod_count) {
    pc.out_opacities.v[i] = nan;
    return;
  }
  HullRest r = pc.rest.r[s.source];
  // The live core: a hull slot of a chunk the frame draws in the baked path (hull::evaluateHull, the same
  // rule).
  if ((params.p.effects & SF_HULL_FX_MESH_CORE) != 0u && i < params.p.mesh_slots) {
    uint c = r.channels >> 16;
    if (c < SF_HULL_MESH_CHUNKS && ((params.p.mesh_chunks[c >> 5u] >> (c & 31u)) & 1u) != 0u) {
      pc.out_opacities.v[i] = nan;
      return;
    }
  }
  vec3 pos = vec3(s.position[0], s.position[1], s.position[2]);
  vec3 n = vec3(r.normal[0], r.normal[1], r.normal[2]) * s.normal_sign;
  mat3 cov = mat3(r.cov[0], r.cov[1], r.cov[2], r.cov[1], r.cov[3], r.cov[4], r.cov[2], r.cov[4], r.cov[5]) * (s.size * s.size);
  vec3 col = vec3(s.color[0], s.color[1], s.color[2]);
  float op = s.opacity;
  vec3 glow = vec3(0.0);
  bool lit = true;
  uint key = hash32(i * 0x9e3779b9u + r.seed);
  vec3 centre = vec3(params.p.centre[0], params.p.centre[1], params.p.centre[2]);
  vec3 gravity = vec3(params.p.gravity[0], params.p.gravity[1], params.p.gravity[2]);

  if (kind == SF_HULL_KIND_DEBRIS) {
    float age = max(params.p.time - s.birth, 0.0), a = age / params.p.debris_life;
    if (a >= 1.0) {
      pc.out_opacities.v[i] = nan;
      return;
    }
    pos += vec3(s.velocity[0], s.velocity[1], s.velocity[2]) * age + 0.5 * gravity * age * age;
    if ((s.flags & SF_HULL_FLAG_ION) != 0u) {  // an engine's ion droplet: blue, fading
      col = mix(vec3(0.55, 0.85, 1.0), vec3(0.1, 0.25, 0.9), a);
      op *= 1.0 - a;
    } else {
      col = blackBody(mix(6500.0, 600.0, sqrt(a)));
      op *= 1.0 - smoothstepf(0.7, 1.0, a);
    }
    lit = false;
  } else if (kind == SF_HULL_KIND_BODY) {
    HullBody b = pc.bodies.b[s.body];
    float age = max(params.p.time - b.birth, 0.0);
    if (age >= b.life) {
      pc.out_opacities.v[i] = nan;
      return;
    }
    mat3 rot = axisAngle(vec3(b.spin[0], b.spin[1], b.spin[2]) * age);
    vec3 pivot = vec3(b.pivot[0], b.pivot[1], b.pivot[2]);
    pos = pivot + rot * (pos - pivot) + vec3(b.velocity[0], b.velocity[1], b.velocity[2]) * age + 0.5 * gravity * age * age;
    n = rot * n;
    cov = rot * cov * transpose(rot);
    op *= 1.0 - smoothstepf(0.75, 1.0, age / b.life);
  } else {
    uint part = r.channels & 0xffu, chunk = r.channels >> 16;
    if ((params.p.effects & SF_HULL_FX_PART_XFORM) != 0u && part < params.p.part_count) {
      vec4 q = vec4(params.p.part_quat[part][0], params.p.part_quat[part][1], params.p.part_quat[part][2], params.p.part_quat[part][3]);
      vec3 pivot = vec3(params.p.part_pivot[part][0], params.p.part_pivot[part][1], params.p.part_pivot[part][2]);
      mat3 rot = quatMatrix(q);
      pos = pivot + rot * (pos - pivot) + vec3(params.p.part_offset[part][0], params.p.part_offset[part][1], params.p.part_offset[part][2]);
      n = rot * n;
      cov = rot * cov * transpose(rot);
    }
    if ((params.p.effects & SF_HULL_FX_CHARGE) != 0u) {
      // Panels (chunks; the part without chunks) lift by their own share; the deep splats glow through.
      float h = rnd(chunk * 8u + part, 0xc4a6u);
      pos += n * (params.p.charge * params.p.charge_lift * (0.5 + 0.5 * h));
      glow += vec3(params.p.charge_color[0], params.p.charge_color[1], params.p.charge_color[2]) * (params.p.charge * (1.0 - r.ao) * 1.5);
    }
    if ((params.p.effects & SF_HULL_FX_RIPPLE) != 0u) {
      float d = length(vec3(r.position[0], r.position[1], r.position[2]) - vec3(params.p.ripple_origin[0], params.p.ripple_origin[1], params.p.ripple_origin[2]));
      float x = (d - params.p.ripple_age * params.p.ripple_speed) / params.p.ripple_width;
      pos += n * (params.p.ripple_amplitude * exp(-x * x) * exp(-params.p.ripple_age * params.p.ripple_decay));
    }
    if ((params.p.effects & SF_HULL_FX_LINK_DECAY) != 0u) {
      uint q = uint(max(floor(params.p.time / params.p.decay_slot_seconds), 0.0));
      uint chosen = hash32(q * 7919u + 17u) % uint(SF_HULL_PARTS);
      float g = params.p.link_decay;
      if (part == chosen) {
        pos += (vec3(rnd(q, 1u), rnd(q, 2u), rnd(q, 3u)) - 0.5) * (0.06 * g);
        col = mix(col, vec3(0.1, 0.95, 1.0), 0.75 * g);
        op *= 1.0 - 0.4 * g;
      }
      if (rnd(key, q) < 0.015 * g) {
        pos += (vec3(rnd(key, q + 11u), rnd(key, q + 12u), rnd(key, q + 13u)) - 0.5) * (0.1 * g);
        col = vec3(0.6, 1.0, 1.0);
      }
    }
    if ((params.p.effects & SF_HULL_FX_SIPHON) != 0u && rnd(key, 0x51fu) < params.p.siphon * params.p.siphon_share) {
      float phase = fract(params.p.time / params.p.siphon_period + rnd(key, 0x52fu));
      float e = phase * phase;
      vec3 v = pos - centre;
      float ang = e * params.p.siphon_turns * kTwoPi, ca = cos(ang), sa = sin(ang);
      v = vec3(ca * v.x + sa * v.z, v.y, -sa * v.x + ca * v.z) * (1.0 - e);
      pos = centre + v;
      vec3 d = safeNormalize(-v, vec3(0, 1, 0));
      float across = 1.0 - 0.6 * e, along = 1.0 + 5.0 * e;
      mat3 st = across * mat3(1.0) + (along - across) * outerProduct(d, d);
      cov = st * cov * transpose(st);
    }
    if ((params.p.effects & SF_HULL_FX_SCATTER) != 0u) {
      vec3 v = vec3(r.position[0], r.position[1], r.position[2]) - centre;
      vec3 ru = rndUnit(key, 0x5ca7u);
      float u = rnd(key, 0x5ca9u);
      vec3 dir;
      if (params.p.scatter_mode == SF_HULL_SCATTER_RING) {
        vec3 w = safeNormalize(vec3(v.x, 0.0, v.z), vec3(1, 0, 0));
        dir = w + 0.3 * vec3(ru.x, 0.0, ru.z) + vec3(0.0, 0.15 * (u - 0.5), 0.0);
      } else if (params.p.scatter_mode == SF_HULL_SCATTER_FIREWORK) {
        dir = vec3(0.35 * ru.x, 1.5 + u, 0.35 * ru.z);
      } else if (params.p.scatter_mode == SF_HULL_SCATTER_VORTEX) {
        dir = safeNormalize(cross(vec3(0, 1, 0), v), vec3(1, 0, 0)) + 0.35 * safeNormalize(v, vec3(0, 1, 0)) + vec3(0, 0.4, 0);
      } else {
        dir = safeNormalize(v, vec3(0, 1, 0)) + 0.5 * ru;
      }
      dir = safeNormalize(dir + (2.0 * params.p.kill_bias) * vec3(params.p.kill_direction[0], params.p.kill_direction[1], params.p.kill_direction[2]), vec3(0, 1, 0));
      float sp = params.p.scatter, ease = 1.0 - (1.0 - sp) * (1.0 - sp);
      pos += dir * (params.p.scatter_distance * (0.4 + 0.6 * u) * ease);
      if (params.p.scatter_mode == SF_HULL_SCATTER_VORTEX) {
        vec3 w = pos - centre;
        float ang = sp * 3.14159265 * (1.0 + u), ca = cos(ang), sa = sin(ang);
        pos = centre + vec3(ca * w.x + sa * w.z, w.y, -sa * w.x + ca * w.z);
      }
      op *= 1.0 - smoothstepf(0.55, 1.0, sp);
      cov *= (1.0 - 0.5 * sp) * (1.0 - 0.5 * sp);
    }
    if (params.p.implode > 0.0) {
      float k = params.p.implode * params.p.implode;
      pos = mix(pos, centre, k * 0.85 * (0.7 + 0.3 * rnd(key, 0x1317u)));
      cov *= (1.0 - 0.7 * params.p.implode) * (1.0 - 0.7 * params.p.implode);
      col = mix(col, vec3(1.0), 0.5 * k);
    }
    if ((s.flags & SF_HULL_FLAG_HOT) != 0u)
      glow += vec3(1.0, 0.35, 0.05) * (0.6 + 0.4 * sin(params.p.time * 5.0 + rnd(key, 0x407u) * kTwoPi));
    if ((params.p.effects & SF_HULL_FX_HEAT) != 0u) {
      // Barrel heat (hull::barrelGlow): black-body glow by each hot gun's heat within heat_radius of its tip.
      vec3 rp = vec3(r.position[0], r.position[1], r.position[2]);
      for (uint g = 0u; g < params.p.gun_count && g < uint(SF_HULL_GUNS); ++g) {
        float d = length(rp - vec3(params.p.gun_heat[g][0], params.p.gun_heat[g][1], params.p.gun_heat[g][2]));
        float heat = params.p.gun_heat[g][3];
        if (d < params.p.heat_radius && heat > 0.0) {
          float h = min(heat, 1.0), w = (1.0 - d / params.p.heat_radius) * (1.0 - d / params.p.heat_radius);
          glow += blackBody(1000.0 + 5500.0 * h) * (1.5 * h * w);
        }
      }
    }
    if ((params.p.effects & SF_HULL_FX_THRUST) != 0u && part < 8u && ((params.p.engine_parts >> part) & 1u) != 0u)
      glow += vec3(params.p.thrust_color[0], params.p.thrust_color[1], params.p.thrust_color[2]) *
              (params.p.thrust * (0.85 + 0.15 * sin(params.p.time * 40.0 + rnd(key, 0x7e5u) * kTwoPi)));
    if ((s.flags & SF_HULL_FLAG_SPARK) != 0u && fract(params.p.time * 0.7 + rnd(key, 0x5a4u)) < 0.08) {
      col = vec3(0.7, 0.85, 1.0);
      lit = false;
    }
  }

  if (lit && (params.p.effects & SF_HULL_FX_LIGHT) != 0u) {
    // The cel light (hull::celShade), in object space.
    float ndl = clamp(dot(n, vec3(params.p.to_light[0], params.p.to_light[1], params.p.to_light[2])), 0.0, 1.0);
    float band = mix(0.62, 0.88, smoothstepf(0.22, 0.28, ndl));
    band = mix(band, 1.12, smoothstepf(0.52, 0.58, ndl));
    vec3 albedo = col;
    col = albedo * (params.p.brightness * band) + albedo * (r.emission * (0.78 + 0.22 * sin(params.p.time * 2.3)) * params.p.emission_gain);
    if ((params.p.effects & SF_HULL_FX_FLASH) != 0u) {
      vec3 fd = vec3(params.p.flash_position[0], params.p.flash_position[1], params.p.flash_position[2]) - pos;
      float fndl = clamp(dot(n, safeNormalize(fd, vec3(0.0))), 0.0, 1.0);
      float fband = fndl > 0.5 ? 1.0 : (fndl > 0.2 ? 0.45 : 0.0);
      float d2 = dot(fd, fd) * params.p.scale * params.p.scale;
      col += vec3(params.p.flash_color[0], params.p.flash_color[1], params.p.flash_color[2]) * (params.p.flash_strength * fband / (1.0 + 0.15 * d2));
    }
  }
  col = clamp(col + glow, 0.0, 1.0);

  pc.out_positions.v[3u * i] = pos.x;
  pc.out_positions.v[3u * i + 1u] = pos.y;
  pc.out_positions.v[3u * i + 2u] = pos.z;
  pc.out_covariances.v[6u * i] = cov[0][0];
  pc.out_covariances.v[6u * i + 1u] = cov[0][1];
  pc.out_covariances.v[6u * i + 2u] = cov[0][2];
  pc.out_covariances.v[6u * i + 3u] = cov[1][1];
  pc.out_covariances.v[6u * i + 4u] = cov[1][2];
  pc.out_covariances.v[6u * i + 5u] = cov[2][2];
  pc.out_opacities.v[i] = op;
  uint sh = i * pc.sh_stride;
  pc.out_sh.v[sh] = shDcFromColor(col.x);
  pc.out_sh.v[sh + 1u] = shDcFromColor(col.y);
  pc.out_sh.v[sh + 2u] = shDcFromColor(col.z);
  if (params.p.shape_large > 0.0) {  // a hull with a wound: shape words (the frame gives their buffer)
    uint kind_shape = SF_SHAPE_GAUSSIAN;
    if ((s.flags & SF_HULL_FLAG_WOUND) != 0u && (kind == SF_HULL_KIND_SKIN || kind == SF_HULL_KIND_LAYER))
      kind_shape = woundShape(r, key, params.p.shape_small, params.p.shape_large);
    pc.out_shapes.v[i] = kind_shape;
  }
}
