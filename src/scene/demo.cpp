#include "scene/demo.h"

#include <cmath>
#include <cstdint>

namespace sf {

namespace {

constexpr float kPi = 3.14159265358979f;

// Small deterministic generator (PCG32), so the demo is identical everywhere (std distributions are not).
struct Pcg32 {
  uint64_t state = 0x853c49e6748fea9bull;
  uint32_t next() {
    uint64_t old = state;
    state = old * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
  }
  float uniform() { return static_cast<float>(next() >> 8) / 16777216.0f; }
  float range(float lo, float hi) { return lo + (hi - lo) * uniform(); }
};

// Rotation taking +x to `dir` (unit), with a twist about it.
Quat alignX(Vec3 dir, float twist) {
  Vec3 x = normalize(dir);
  Vec3 helper = std::abs(x.y) < 0.9f ? Vec3{0, 1, 0} : Vec3{1, 0, 0};
  Vec3 y = normalize(cross(helper, x));
  Vec3 z = cross(x, y);
  float c = std::cos(twist), s = std::sin(twist);
  Vec3 y2 = c * y + s * z, z2 = cross(x, y2);
  Mat3 r;
  for (int i = 0; i < 3; ++i) {
    r.m[i][0] = x[i];
    r.m[i][1] = y2[i];
    r.m[i][2] = z2[i];
  }
  return quatFromRotationMatrix(r);
}

void setColor(GaussianCloud& c, size_t i, Vec3 rgb) {
  for (int k = 0; k < 3; ++k)
    c.sh[i * static_cast<size_t>(c.shStride()) + static_cast<size_t>(k)] = colorToShDc(rgb[k]);
}

GaussianCloud makeFloor(Pcg32& rng) {
  constexpr int kGrid = 64;
  GaussianCloud c;
  c.resize(kGrid * kGrid, 0);
  size_t i = 0;
  for (int u = 0; u < kGrid; ++u)
    for (int v = 0; v < kGrid; ++v, ++i) {
      float x = (static_cast<float>(u) + 0.5f) / kGrid * 4.0f - 2.0f;
      float z = (static_cast<float>(v) + 0.5f) / kGrid * 4.0f - 2.0f;
      c.positions[i] = {x, 0.0f, z};
      // Flat, slightly elongated discs with random in-plane twist: strongly anisotropic.
      c.scales[i] = {0.045f, 0.003f, 0.03f};
      c.rotations[i] =
          normalize(Quat{std::cos(rng.range(0, kPi) / 2), 0, std::sin(rng.range(0, kPi) / 2), 0});
      bool dark = ((u / 8) + (v / 8)) % 2 == 0;
      float fade = std::max(0.0f, 1.0f - 0.35f * std::sqrt(x * x + z * z));
      Vec3 col = dark ? Vec3{0.18f, 0.2f, 0.24f} : Vec3{0.85f, 0.82f, 0.74f};
      setColor(c, i, col * (0.4f + 0.6f * fade));
      c.opacities[i] = 0.9f;
    }
  return c;
}

// A torus of needle-like gaussians along the tube, SH degree 3: its hue shifts with viewing angle.
GaussianCloud makeTorus(Pcg32& rng) {
  constexpr int kCount = 9000;
  GaussianCloud c;
  c.resize(kCount, 3);
  const float big_r = 0.62f, small_r = 0.2f;
  for (size_t i = 0; i < kCount; ++i) {
    float a = rng.range(0, 2 * kPi), b = rng.range(0, 2 * kPi);
    Vec3 ring{std::cos(a), 0, std::sin(a)};
    Vec3 p = ring * (big_r + small_r * std::cos(b)) + Vec3{0, small_r * std::sin(b), 0};
    c.positions[i] = p;
    Vec3 tangent{-std::sin(a), 0, std::cos(a)};
    c.rotations[i] = alignX(tangent, b);
    c.scales[i] = {0.06f, 0.012f, 0.006f};
    float hue = a / (2 * kPi);
    Vec3 base{0.55f + 0.4f * std::cos(2 * kPi * hue), 0.45f + 0.35f * std::cos(2 * kPi * (hue - 0.33f)),
              0.5f + 0.4f * std::cos(2 * kPi * (hue - 0.66f))};
    setColor(c, i, base);
    auto sh = c.shOf(i);
    // View-dependent terms in every band: band 1 tilts the colour towards the viewer's side, bands 2-3
    // add a sheen that changes around the ring.
    for (size_t k = 1; k < 16; ++k) {
      float amp = k < 4 ? 0.35f : (k < 9 ? 0.18f : 0.1f);
      for (size_t ch = 0; ch < 3; ++ch)
        sh[k * 3 + ch] =
            amp * std::sin(static_cast<float>(k) * 1.7f + static_cast<float>(ch) * 2.1f + 3.0f * hue);
    }
    c.opacities[i] = 0.22f;
  }
  return c;
}

// A translucent spherical shell of flat gaussians tangent to the surface.
GaussianCloud makeShell(Pcg32& rng) {
  constexpr int kCount = 3000;
  GaussianCloud c;
  c.resize(kCount, 1);
  for (size_t i = 0; i < kCount; ++i) {
    float z = rng.range(-1, 1), phi = rng.range(0, 2 * kPi);
    float r = std::sqrt(std::max(0.0f, 1 - z * z));
    Vec3 n{r * std::cos(phi), z, r * std::sin(phi)};
    c.positions[i] = n * 0.45f;
    c.rotations[i] = alignX(n, rng.range(0, kPi));
    c.scales[i] = {0.004f, 0.035f, 0.035f};  // thin along the normal
    setColor(c, i, Vec3{0.2f, 0.45f + 0.2f * n.y, 0.95f});
    auto sh = c.shOf(i);
    sh[3 * 3 + 0] = 0.3f;  // band 1: warmer from +x
    c.opacities[i] = 0.16f;
  }
  return c;
}

}  // namespace

Scene makeDemoScene(int width, int height) {
  Pcg32 rng;
  Scene scene;
  auto add = [&](const char* name, GaussianCloud cloud, Mat4 transform) {
    SceneObject o;
    o.name = name;
    o.source = std::string("builtin:demo/") + name;
    o.cloud = std::make_shared<GaussianCloud>(std::move(cloud));
    o.object_to_world = transform;
    scene.objects.push_back(std::move(o));
  };
  add("floor", makeFloor(rng), Mat4{});
  // The torus is tilted 25 degrees about x and raised; the shell sits on its rim, so they interpenetrate.
  float tilt = 25.0f * kPi / 180.0f;
  Mat3 tilt_x = rotationMatrix(Quat{std::cos(tilt / 2), std::sin(tilt / 2), 0, 0});
  add("torus", makeTorus(rng), Mat4::fromLinearTranslation(tilt_x, Vec3{0, 0.55f, 0}));
  add("shell", makeShell(rng), Mat4::fromLinearTranslation(Mat3{}, Vec3{0.55f, 0.5f, 0.15f}));
  scene.camera =
      lookAtCamera(Vec3{0.4f, 1.5f, 2.6f}, Vec3{0.1f, 0.45f, 0}, Vec3{0, 1, 0}, 45.0f, width, height);
  scene.background = Vec3{0.06f, 0.07f, 0.09f};
  return scene;
}

}  // namespace sf
