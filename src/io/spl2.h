// SPL2: the splat-hull file (docs/formats/spl2.md). A budgeted splat cloud of a game model split into an
// opaque core and a thin sorted shell, with channels baked from the source mesh, 64 precomputed shell orders
// (one per heading sector) and an optional CHNK tail (per-splat chunk and material, the chunk table).
//
// Layout (little-endian): "SPL2", int32 n_core, n_shell, n_buckets; for the core then the shell the float32
// blocks pos, ax0, ax1, normal, color (n * 12 bytes each), opacity (n * 4), attrs (n * 16); n_buckets x
// n_shell int32 orders; then optionally the "CHNK" tail. A reader that does not know CHNK reads everything
// before it.
//
// Conventions of the values (what hull bake writes and the frame reads):
// - Space: the hull frame, the source model normalised into the cube of side 1.6 centred at the origin, glTF
//   axes (+y up; the meta sidecar records the normalisation).
// - color: display-encoded (sRGB) RGB in [0, 1], as the splat frame's working space.
// - ax0, ax1: the splat's two in-plane half-axes. Shell: 3 sigma along the two main axes of its gaussian (the
//   quad on which alpha = opacity * exp(-4.5 r^2), r = 1 at the quad's edge). Core: the opaque octagon's
//   radius vectors, 3 sigma * spl2CoreRadius(opacity).
// - normal: unit, outward (snapped to the nearest face of the winding-repaired mesh).
// - attrs: four baked channels, each an integer in [0, 255] (exact in half floats): x ambient occlusion
//   (255 = open), y part * 16 + emission * 15 (part 0..7, emission 0..1 quantised to 16 levels), z damage
//   layer (0 when baked), w a per-splat random byte for effects.
// - orders[b]: the shell's indices back to front for the camera of heading bucket b (spl2BucketCamera).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"

namespace sf {

constexpr int kSpl2Buckets = 64;     // one shell order per 5.625 degrees of heading
constexpr int kSpl2MaxChunks = 256;  // 1 + chunk * 8 + material stays <= 2048 (exact in half floats)
constexpr int kSpl2Materials = 6;
constexpr float kSpl2CameraDistance = 3.2f;  // orbit radius of the belt cameras (the bake's dataset)
constexpr float kSpl2CoreOpacity = 0.9f;     // opacity above which a splat is core

// Material classes, in CHNK's numbering.
const char* spl2MaterialName(
    int material);  // "default", "chitin", "bone", "flesh", "circuit", "core"; else "unknown"

// One block of splats (the core or the shell), structure of arrays.
struct Spl2Block {
  std::vector<Vec3> pos, ax0, ax1, normal, color;
  std::vector<float> opacity;
  std::vector<std::array<float, 4>> attrs;

  size_t size() const { return pos.size(); }
  void resize(size_t n);
};

// A chunk of the CHNK table.
struct Spl2Chunk {
  Vec3 centroid;
  float radius = 0;    // largest distance of a member's centre from the centroid
  float area = 0;      // sum of the members' areas (pi * sigma0 * sigma1)
  uint32_t count = 0;  // members
  uint8_t material = 0, part = 0;
};

struct Spl2Hull {
  Spl2Block core, shell;
  std::vector<std::vector<int32_t>> orders;  // n_buckets x shell.size()
  // CHNK tail (has_chunks): per splat, core then shell.
  bool has_chunks = false;
  std::vector<uint16_t> chunk_of;
  std::vector<uint8_t> material_of;
  std::vector<Spl2Chunk> chunks;

  size_t size() const { return core.size() + shell.size(); }
};

// The packed (chunk, material) value of the article: 1 + chunk * 8 + material.
inline uint32_t spl2PackChunk(uint32_t chunk, uint32_t material) {
  return 1u + chunk * 8u + material;
}

// Visible-disc radius of a core splat in units of its 3-sigma quad, with the 20% margin:
// sqrt(ln(max(op, 0.55) / 0.5) / 4.5) * 1.2.
float spl2CoreRadius(float opacity);

// Heading buckets. Bucket b's camera sits at azimuth (b + 0.5) * 360 / n_buckets degrees about +y (azimuth 0
// on +z, increasing towards +x), `elevation_deg` above the xz plane, `distance` from the origin, looking at
// it.
Vec3 spl2BucketCamera(int bucket, int n_buckets, float elevation_deg, float distance = kSpl2CameraDistance);
// The bucket whose sector holds the azimuth of `camera` (a camera position in the hull frame).
int spl2Bucket(Vec3 camera, int n_buckets);
// n_buckets orders of `shell_pos`, each sorted back to front (view depth along that bucket's camera axis
// descending, as the frame sorts by view depth; ties by index).
std::vector<std::vector<int32_t>> spl2ShellOrders(std::span<const Vec3> shell_pos, int n_buckets,
                                                  float elevation_deg);

// Fills hull.chunks from chunk_of, material_of and the blocks (centroid = mean centre, radius = largest
// distance from it, area = sum of pi * sigma0 * sigma1, part = the members' majority of attrs.y / 16, ties
// lowest).
void spl2ComputeChunkTable(Spl2Hull& hull);

// Encodes; throws sf::Error when the hull is inconsistent (block sizes, orders not permutations, attrs not
// integers in [0, 255], non-finite values, chunk fields out of range).
std::vector<uint8_t> encodeSpl2(const Spl2Hull& hull);
// Decodes; throws FormatError ("path: byte N: reason") for truncation, counts that do not fit the file
// (checked before allocating, and against loadLimits()), orders that are not permutations, a malformed CHNK
// tail.
Spl2Hull decodeSpl2(std::span<const uint8_t> bytes, const std::string& path);
Spl2Hull loadSpl2(const std::string& path);
// Writes atomically (the path is untouched on failure).
void saveSpl2(const Spl2Hull& hull, const std::string& path);

// As gaussians (info, convert, the frame's sorted mode): core then shell; scales |ax| / 3 (the core's divided
// by spl2CoreRadius as well), the normal axis a tenth of the smaller; rotation from (ax0, ax1, ax0 x ax1)
// orthonormalised; colour as SH DC; normals; extra channels hull_core, hull_ao, hull_packed, hull_damage,
// hull_seed and, with CHNK, hull_chunk and hull_material.
GaussianCloud spl2ToCloud(const Spl2Hull& hull);
// From gaussians (convert to .spl2): core = the hull_core channel when present, else opacity > 0.9; the two
// largest axes become ax0, ax1 (in axis order); normals from the cloud (else the smallest axis); attrs and
// CHNK from the channels above when present (else ao 255, part 0, emission 0, a hashed seed; no CHNK); shell
// orders computed for `elevation_deg`. spl2ToCloud then cloudToSpl2 gives back the hull up to float rounding.
Spl2Hull cloudToSpl2(const GaussianCloud& cloud, float elevation_deg = 41.0f);

}  // namespace sf
