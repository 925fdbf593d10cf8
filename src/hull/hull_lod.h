// Runtime level of detail of splat hulls (docs/architecture.md "Splat hulls", "Runtime LOD"): a frame draws
// the first K splats of a hull in its importance order, in every way a hull is drawn (baked: core octagons
// and shell; sorted; live hulls through their effects pass, on the GPU and in its CPU reference), with K
// given (scene JSON `"lod": K`, a hull script's `lod` event, `--hull-lod K`) or from the distance rule below
// (`"lod": "auto"`).
//
// The importance order (hullImportanceOrder): the bake ranks splats by opacity x sigma0 x sigma1 (opacity
// times the area of the two main axes) for its budget and stores the core in that order, most important first
// (the article's "LOD is one line": visible_instance_count cuts the tail); the shell is stored in the order
// the cleanup left it (its draw order is the per-bucket back-to-front orders, not its rows). So the order
// over the whole hull is: the core's rows as stored, merged with the shell's rows sorted by the same key
// (recomputed from the file: sigma = |ax| / 3, the core's further divided by spl2CoreRadius(opacity), as
// spl2ToCloud), the larger key first, ties to the core, then to the lower row. The first K of it are the K
// splats a bake with budget K would have kept of the same splats; the core drawn is always a prefix of its
// stored rows.
//
// The distance rule (hullLodAutoCount), used for `"lod": "auto"`: the hull's bounding sphere (radius R in the
// hull frame: the largest distance of a splat centre from the hull's origin, times the object's scale s) seen
// at view depth z of its origin covers a disc of radius r = f_y s R / z pixels. About half of the splats face
// the camera; each should cover at least p pixels of the disc, so
//   K = N                                               when z <= s R (the camera inside the sphere) or r is
//   not finite, K = clamp(ceil(2 pi r^2 / p), ceil(floor_share N), N)  otherwise,
// with p = kHullLodPixelsPerSplat (4: a 2 x 2 patch per visible splat) and floor_share = kHullLodFloorShare
// (0.1). The full count is drawn while r >= sqrt(p N / (2 pi)) (62 pixels for 6,000 splats).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/math.h"
#include "io/spl2.h"
#include "render/camera.h"

namespace sf {
struct JsonNode;
}

namespace sf::hull {

inline constexpr double kHullLodPixelsPerSplat = 4.0;
inline constexpr double kHullLodFloorShare = 0.1;

// How many of a hull's splats a frame draws.
struct HullLod {
  enum class Mode : uint8_t { kOff, kCount, kAuto };
  Mode mode = Mode::kOff;  // kOff: every splat
  uint32_t count = 0;      // kCount: K >= 1 (more than the hull has draws them all)

  static HullLod off() { return {}; }
  static HullLod fixed(uint32_t k) { return {Mode::kCount, k}; }
  static HullLod automatic() { return {Mode::kAuto, 0}; }
  bool operator==(const HullLod&) const = default;
};

// "off", "auto", or a whole number K in 1..4294967295. Throws sf::Error naming the choices.
HullLod parseHullLod(const std::string& text);
// "off", "auto" or K.
std::string hullLodName(const HullLod& lod);
// A JSON value: a whole number K >= 1, "auto" or "off". Refusals name the file and the JSON path.
HullLod parseHullLodJson(const JsonNode& node);

// The hull's splats (spl2ToCloud order: core, then shell) in importance order, most important first (above).
std::vector<uint32_t> hullImportanceOrder(const Spl2Hull& hull);
// rank[i] = the place of splat i in that order.
std::vector<uint32_t> hullImportanceRanks(const Spl2Hull& hull);
// The largest distance of a splat centre from the hull frame's origin (R of the distance rule).
float hullLodRadius(const Spl2Hull& hull);

// The distance rule's K for a hull of n splats and radius `radius` placed by `object_to_world` (rotation,
// uniform scale, translation), seen by `cam`.
uint32_t hullLodAutoCount(uint32_t n, float radius, const Mat4& object_to_world, const Camera& cam);
// K this frame: n when off (or K >= n), K, or the distance rule (n without a camera).
uint32_t resolveHullLod(const HullLod& lod, uint32_t n, float radius, const Mat4& object_to_world,
                        const Camera* cam);

}  // namespace sf::hull
