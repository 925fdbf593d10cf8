// Materials and chunks of a splat hull (docs/architecture.md "Splat hulls"; the CHNK tail of io/spl2.h).
//
// Materials: each splat takes the class of the nearest reference albedo of a recipe (distance in Oklab), then
// neighbour-majority smoothing removes speckle. Chunks: per (material, part) group, area-weighted k-means++
// and Lloyd over positions, so chunks hold equal area rather than equal count (a chunk = a plate, teeth and
// claws their own small ones); the last iterations jitter the distances per splat and chunk (torn borders),
// then a neighbour-majority pass smooths the tears. Ids fit the packing 1 + chunk * 8 + material <= 2048.
//
// Everything here is deterministic: the same inputs (and seed) give the same output whatever the thread
// count.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/math.h"

namespace sf::hull {

// Material classes, in CHNK's numbering (io/spl2.h).
constexpr uint8_t kMaterialDefault = 0, kMaterialChitin = 1, kMaterialBone = 2, kMaterialFlesh = 3,
                  kMaterialCircuit = 4, kMaterialCore = 5;
constexpr int kMaterialCount = 6;

// "default", "chitin", "bone", "flesh", "circuit", "core"; "unknown" outside [0, kMaterialCount).
const char* materialName(int material);

// A material recipe: reference albedos per class, display-encoded (sRGB) RGB in [0, 1]. A class may have
// several references; a splat takes the class of the nearest one.
struct MaterialRecipe {
  std::string name;
  std::vector<std::pair<int, Vec3>> references;  // (material 0..5, colour)
};

// The built-in recipes (reference colours in sRGB):
// - "mech": paint -> default: mid grey (0.50, 0.50, 0.50), light grey (0.80, 0.80, 0.78), gunmetal
//   (0.28, 0.29, 0.31), olive drab (0.42, 0.44, 0.28), signal red (0.62, 0.16, 0.14), hazard yellow
//   (0.85, 0.70, 0.15); electronics and accents -> circuit: cyan glow (0.20, 0.90, 1.00), PCB green
//   (0.05, 0.45, 0.20), emissive magenta (0.90, 0.20, 0.85), amber LED (1.00, 0.55, 0.05); very dark
//   internals
//   -> core: (0.03, 0.03, 0.035).
// - "organic": chitin: dark brown (0.22, 0.16, 0.10), olive-black (0.18, 0.20, 0.12), amber-brown
//   (0.45, 0.32, 0.16); bone: ivory (0.88, 0.84, 0.72), bone grey (0.70, 0.67, 0.58); flesh: pink
//   (0.80, 0.48, 0.45), raw red (0.62, 0.18, 0.17), dark muscle (0.40, 0.10, 0.12); near-black -> core:
//   (0.03, 0.025, 0.025).
// Throws sf::Error naming the known recipes for any other name.
MaterialRecipe builtinRecipe(const std::string& name);

// A recipe from JSON text: {"name": "...", "references": [{"material": "bone", "color": [r, g, b]}, ...]}.
// "name" is a non-empty string; "references" a non-empty array; "material" a class name (materialName) or an
// integer 0..5; "color" three numbers in [0, 1]. Other keys are refused (typos would otherwise pass
// silently). Throws sf::Error "path: <json path>: reason" (syntax errors as FormatError with the byte
// offset).
MaterialRecipe parseRecipeJson(const std::string& text, const std::string& path);

// Per splat, the class of the nearest reference of `recipe` by Euclidean distance in Oklab (colours clamped
// to [0, 1] first, NaN as 0; on an exact tie the earlier reference). Then `passes` rounds of majority
// smoothing: each splat takes the class held by most of itself and its neighbours within `radius` (a uniform
// grid hash, every pass reading the previous pass's classes); on a tie, or when the current class is among
// the largest, the splat keeps its class (among other classes tied above it, the smallest id). radius <= 0 or
// passes <= 0: no smoothing. An empty recipe classes everything default. colors and positions have the same
// size; positions are finite; references' materials are in [0, kMaterialCount).
std::vector<uint8_t> classifyMaterials(std::span<const Vec3> colors, std::span<const Vec3> positions,
                                       const MaterialRecipe& recipe, float radius, int passes);

struct ChunkOptions {
  int target_size = 100;      // splats per chunk (100 ~ 20 px on screen reads as a chunk; 25 did not)
  int lloyd_iterations = 12;  // assignment + centroid rounds after seeding (at least one assignment is made)
  int jittered_iterations = 3;  // how many of the last rounds assign with jittered distances
  float jitter = 0.35f;         // relative distance jitter of those rounds, clamped to [0, 0.9]
  int smoothing_passes = 1;     // neighbour-majority passes within a group
  uint32_t seed = 1;
  int max_chunks = 256;  // clamped to [1, kSpl2MaxChunks]
};

struct ChunkResult {
  std::vector<uint16_t> chunk_of;  // per splat, in [0, chunk_count)
  int chunk_count = 0;
};

// Chunks of a hull's splats. Groups are the distinct (material, part) pairs, in ascending (material, part)
// order; a chunk never spans two groups.
// - Per group of n splats, k = max(1, round(n / target_size)), at most n; when the sum over groups exceeds
//   max_chunks every k is scaled by max_chunks / sum (floor, at least 1, largest remainders filling up to
//   max_chunks). More groups than max_chunks is an sf::Error.
// - Seeding: area-weighted k-means++ (first centre with probability ~ area, each next ~ area * D^2; seeding
//   stops early when no splat of positive weight lies off the centres). Areas that are not finite and
//   positive weigh 0; a group whose areas all weigh 0 weighs its splats equally.
// - max(1, lloyd_iterations) rounds of assignment to the nearest centre and area-weighted centroid update (a
//   centre left without members stays put); the last jittered_iterations rounds compare
//   distance * (1 + jitter * u) with u in [-1, 1] a fixed hash of (seed, splat, centre), which tears the
//   borders without moving the chunks (u depends on the centre too: one factor per splat would scale all of
//   its distances alike and change no assignment).
// - smoothing_passes of neighbour-majority smoothing within the group (neighbours within `radius`, previous
//   pass's chunks, the current chunk kept on ties): a splat whose neighbours mostly belong to another chunk
//   of its group joins it. radius <= 0: none.
// - Ids are global and contiguous: groups in order, chunks of a group in order of their centres' seeding; no
//   chunk is empty; chunk_count <= max_chunks, so 1 + chunk * 8 + material <= 2048 for materials < 8.
// All spans have the same size; positions are finite; materials are < kMaterialCount. Deterministic for a
// seed, independent of the thread count.
ChunkResult buildChunks(std::span<const Vec3> positions, std::span<const float> areas,
                        std::span<const uint8_t> materials, std::span<const uint8_t> parts, float radius,
                        const ChunkOptions& options);

}  // namespace sf::hull
