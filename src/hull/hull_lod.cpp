#include "hull/hull_lod.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "io/json.h"

namespace sf::hull {
namespace {

// opacity x sigma0 x sigma1 of row k of block b, as spl2ToCloud computes the sigmas; 0 where not a number.
float importance(const Spl2Block& b, size_t k, bool core) {
  const float radius = core ? spl2CoreRadius(b.opacity[k]) : 1.0f;
  const float s0 = length(b.ax0[k]) / 3.0f / radius, s1 = length(b.ax1[k]) / 3.0f / radius;
  const float w = b.opacity[k] * s0 * s1;
  return w >= 0 ? w : 0.0f;  // NaN (0 x infinity) counts as nothing
}

constexpr const char* kChoices =
    "expected a whole number of splats K >= 1, \"auto\" (the distance rule) or \"off\" (every splat)";

}  // namespace

HullLod parseHullLod(const std::string& text) {
  if (text == "off") return HullLod::off();
  if (text == "auto") return HullLod::automatic();
  if (!text.empty() && text.size() <= 10 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const unsigned long long v = std::stoull(text);
    if (v >= 1 && v <= 4294967295ull) return HullLod::fixed(static_cast<uint32_t>(v));
  }
  throw Error("hull LOD '" + text + "': " + kChoices);
}

std::string hullLodName(const HullLod& lod) {
  switch (lod.mode) {
    case HullLod::Mode::kOff:
      return "off";
    case HullLod::Mode::kAuto:
      return "auto";
    case HullLod::Mode::kCount:
      return std::to_string(lod.count);
  }
  return "off";
}

HullLod parseHullLodJson(const JsonNode& n) {
  if (n.value.is_string()) {
    const std::string s = n.value.get<std::string>();
    if (s == "auto") return HullLod::automatic();
    if (s == "off") return HullLod::off();
    n.fail(std::string(kChoices) + ", got \"" + s + "\"");
  }
  if (!n.value.is_number()) n.fail(std::string(kChoices) + ", got " + n.value.type_name());
  const double v = n.number();
  if (v != std::floor(v) || v < 1 || v > 4294967295.0)
    n.fail(std::string(kChoices) + ", got " + n.value.dump());
  return HullLod::fixed(static_cast<uint32_t>(v));
}

std::vector<uint32_t> hullImportanceOrder(const Spl2Hull& h) {
  const size_t nc = h.core.size(), ns = h.shell.size();
  std::vector<float> kc(nc), ks(ns);
  for (size_t k = 0; k < nc; ++k) kc[k] = importance(h.core, k, true);
  for (size_t k = 0; k < ns; ++k) ks[k] = importance(h.shell, k, false);
  std::vector<uint32_t> shell(ns);
  for (size_t k = 0; k < ns; ++k) shell[k] = static_cast<uint32_t>(k);
  std::stable_sort(shell.begin(), shell.end(), [&](uint32_t a, uint32_t b) { return ks[a] > ks[b]; });
  // Merge: the core as stored (the bake's importance order), the shell by its key; ties to the core.
  std::vector<uint32_t> order;
  order.reserve(nc + ns);
  size_t c = 0, s = 0;
  while (c < nc || s < ns) {
    if (s >= ns || (c < nc && kc[c] >= ks[shell[s]]))
      order.push_back(static_cast<uint32_t>(c++));
    else
      order.push_back(static_cast<uint32_t>(nc + shell[s++]));
  }
  return order;
}

std::vector<uint32_t> hullImportanceRanks(const Spl2Hull& h) {
  const std::vector<uint32_t> order = hullImportanceOrder(h);
  std::vector<uint32_t> rank(order.size());
  for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<uint32_t>(r);
  return rank;
}

float hullLodRadius(const Spl2Hull& h) {
  float r2 = 0;
  for (const Spl2Block* b : {&h.core, &h.shell})
    for (const Vec3& p : b->pos) r2 = std::max(r2, dot(p, p));
  return std::sqrt(r2);
}

uint32_t hullLodAutoCount(uint32_t n, float radius, const Mat4& object_to_world, const Camera& cam) {
  if (n == 0) return 0;
  const double s = length(object_to_world.linear().col(0));
  const double z = transformPoint(cam.world_to_camera * object_to_world, Vec3{}).z;
  const double reach = s * static_cast<double>(radius);
  if (!(z > reach)) return n;  // the camera inside the bounding sphere (or behind it): near
  const double r = static_cast<double>(cam.fy) * reach / z;
  const double want = std::ceil(2.0 * std::numbers::pi * r * r / kHullLodPixelsPerSplat);
  const double floor_k = std::ceil(kHullLodFloorShare * static_cast<double>(n));
  if (!std::isfinite(want)) return n;
  return static_cast<uint32_t>(std::clamp(std::max(want, floor_k), 1.0, static_cast<double>(n)));
}

uint32_t resolveHullLod(const HullLod& lod, uint32_t n, float radius, const Mat4& object_to_world,
                        const Camera* cam) {
  switch (lod.mode) {
    case HullLod::Mode::kOff:
      return n;
    case HullLod::Mode::kCount:
      return std::min(lod.count, n);
    case HullLod::Mode::kAuto:
      return cam ? hullLodAutoCount(n, radius, object_to_world, *cam) : n;
  }
  return n;
}

}  // namespace sf::hull
