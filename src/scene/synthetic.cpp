#include "scene/synthetic.h"

#include <algorithm>
#include <cmath>

namespace sf {

namespace {

struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint32_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 32);
  }
  float uniform() { return static_cast<float>(next() >> 8) / 16777216.0f; }
  float normal() {  // Box-Muller
    float u = std::max(uniform(), 1e-7f), v = uniform();
    return std::sqrt(-2.0f * std::log(u)) * std::cos(6.2831853f * v);
  }
};

}  // namespace

GaussianCloud makeSyntheticCloud(size_t n, int sh_degree, uint32_t seed) {
  Rng rng(seed);
  GaussianCloud c;
  c.resize(n, 0);
  constexpr int kBlobs = 512;
  Vec3 centre[kBlobs];
  float radius[kBlobs];
  for (int b = 0; b < kBlobs; ++b) {
    centre[b] = {rng.uniform() * 4 - 2, rng.uniform() * 4 - 2, rng.uniform() * 4 - 2};
    radius[b] = 0.05f + 0.3f * rng.uniform();
  }
  for (size_t i = 0; i < n; ++i) {
    int b = static_cast<int>(rng.next() % kBlobs);
    Vec3 d = normalize(Vec3{rng.normal(), rng.normal(), rng.normal()});
    c.positions[i] = centre[b] + d * (radius[b] * (1.0f + 0.05f * rng.normal()));
    float base = std::exp(std::log(0.01f) + 0.8f * rng.normal());
    c.scales[i] = {base * std::exp(0.4f * rng.normal()), base * std::exp(0.4f * rng.normal()),
                   base * 0.2f * std::exp(0.4f * rng.normal())};
    c.rotations[i] = normalize(Quat{rng.normal(), rng.normal(), rng.normal(), rng.normal()});
    float u = rng.uniform();
    c.opacities[i] = u < 0.6f ? 0.85f + 0.15f * rng.uniform() : 0.02f + 0.8f * rng.uniform();
    Vec3 col{0.2f + 0.6f * rng.uniform(), 0.2f + 0.6f * rng.uniform(), 0.2f + 0.6f * rng.uniform()};
    for (int k = 0; k < 3; ++k) c.sh[i * 3 + static_cast<size_t>(k)] = colorToShDc(col[k]);
  }
  padShDegree(c, sh_degree, seed + 1);
  return c;
}

void padShDegree(GaussianCloud& cloud, int degree, uint32_t seed) {
  if (degree <= cloud.sh_degree) return;
  Rng rng(seed);
  const int old_stride = cloud.shStride();
  std::vector<float> old = std::move(cloud.sh);
  cloud.sh_degree = degree;
  const size_t stride = static_cast<size_t>(cloud.shStride());
  cloud.sh.assign(cloud.size() * stride, 0.0f);
  for (size_t i = 0; i < cloud.size(); ++i) {
    std::copy_n(old.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(old_stride)), old_stride,
                cloud.sh.begin() + static_cast<std::ptrdiff_t>(i * stride));
    for (size_t k = static_cast<size_t>(old_stride); k < stride; ++k)
      cloud.sh[i * stride + k] = 0.05f * rng.normal();
  }
}

Scene tiledScene(std::shared_ptr<const GaussianCloud> cloud, int copies) {
  Scene s;
  CloudBounds b = computeBounds(*cloud);
  Vec3 extent = b.p99 - b.p01;
  float spacing = 1.1f * std::max(extent.x, extent.z);
  int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(copies))));
  for (int k = 0; k < copies; ++k) {
    SceneObject o;
    o.name = "copy" + std::to_string(k);
    o.source = "tiled";
    o.cloud = cloud;
    float x = (static_cast<float>(k % side) - 0.5f * static_cast<float>(side - 1)) * spacing;
    float z = (static_cast<float>(k / side) - 0.5f * static_cast<float>(side - 1)) * spacing;
    o.object_to_world = Mat4::fromLinearTranslation(Mat3{}, Vec3{x, 0, z});
    s.objects.push_back(std::move(o));
  }
  return s;
}

GaussianCloud makeRandomCloud(size_t n, int sh_degree, uint32_t seed) {
  uint64_t state = 0x9e3779b97f4a7c15ull ^ seed;
  auto uniform = [&](float lo, float hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    float u = static_cast<float>(state >> 40) / 16777216.0f;
    return lo + (hi - lo) * u;
  };
  GaussianCloud c;
  c.resize(n, sh_degree);
  for (size_t i = 0; i < n; ++i) {
    c.positions[i] = {uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)};
    c.scales[i] = {uniform(0.005f, 0.2f), uniform(0.005f, 0.2f), uniform(0.005f, 0.2f)};
    c.rotations[i] = normalize(Quat{uniform(-1, 1), uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)});
    c.opacities[i] = uniform(0.05f, 0.95f);
    auto sh = c.shOf(i);
    for (size_t k = 0; k < sh.size(); ++k) sh[k] = k < 3 ? uniform(-1.5f, 1.5f) : uniform(-0.5f, 0.5f);
  }
  return c;
}

}  // namespace sf
