// The inside of the mouth, two optional parts of a character package (docs/formats/character-extras.md):
// mouth_hidden.bin (the closed mouth's inside points, faded and moved as the lips part) and teeth.json
// (teeth.ply + teeth.bin: a second small splat of the teeth, gums, tongue and mouth bag, bound to the head's
// triangles and shown once the lips are clearly apart). Units are the package's: metres.
//
// The lip gap of a pair of lip vertices (upper u, lower l) in a frame is how far they have parted past
// rest along the head's up axis: gap = max(0, (u' - l') . up' - (u - l) . up), where u, l are bind-pose
// vertices, u', l' this frame's vertices and up' the file's up turned by the upper vertex's skin rotation
// (the linear part of its blended skin matrix, normalised; identity for an unskinned mesh), so a turn of
// the head is not a parting.
//
// mouth_hidden, per record: ramp = smoothstep(0.5 mm, 2 mm, gap).
//   kind 1 (plug):       opacity *= 1 - ramp; centre = (u' + l') / 2 - forward' (3 mm smoothstep(0, 2 mm,
//   gap) + gap / 4) kind 2 (inside):     opacity *= 1 - ramp kind 3 (lip band):   never faded; each of its
//   three sizes s (the deformed covariance's eigen-decomposition)
//                        becomes lerp(s, min(s, 2.5 mm), ramp); the covariance is rebuilt from them.
// teeth, per frame: gap = the largest gap over teeth.json's lip pairs; every teeth point's opacity is
// multiplied by smoothstep(3 mm, 5 mm, gap) (nothing is drawn below 3 mm); a point sits on its triangle at
// its barycentrics, `offset` along the posed unit normal and `setback` behind it along forward turned by
// its triangle's rotation (so the lower teeth follow the jaw through their triangle). The soft rim is
// per splat and needs the camera: applyTeethRim.
// The mouth's meshes (teeth.json "meshes": mouth_meshes.bin, ours) are triangle lists whose vertices are
// bound as teeth points are, drawn with the teeth (the same opacity ramp) lit from the camera and masked
// per pixel by the lip opening with the same soft rim (mouthRenderMeshes, RenderMesh::mask).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "character/character.h"
#include "core/gaussian_cloud.h"
#include "render/camera.h"
#include "render/mesh.h"

namespace sf::character {

// Thresholds, metres (the reference's 0.5 mm, 2 mm, 3 mm, 2.5 mm; "about 4 mm" for the teeth).
constexpr float kHiddenRampStart = 0.0005f;  // mouth_hidden ramp = smoothstep(start, end, gap)
constexpr float kHiddenRampEnd = 0.002f;
constexpr float kPlugPushBack = 0.003f;  // a plug goes back 3 mm * smoothstep(0, 2 mm, gap) + gap / 4
constexpr float kPlugPushEnd = 0.002f;
constexpr float kLipBandCap = 0.0025f;    // a lip-band splat's sizes are capped at 2.5 mm by the ramp
constexpr float kTeethGapStart = 0.003f;  // teeth opacity *= smoothstep(3 mm, 5 mm, gap): half at 4 mm
constexpr float kTeethGapEnd = 0.005f;
constexpr float kTeethRimPixels = 10.0f;  // the rim is 10 px wide at a view 1024 px wide
constexpr float kTeethRimReferenceWidth = 1024.0f;

// t^2 (3 - 2t) with t = clamp((x - e0) / (e1 - e0), 0, 1). e0 < e1.
float smoothstep(float e0, float e1, float x);

// --- mouth_hidden.bin -------------------------------------------------------------------------------------

enum class HiddenKind : uint32_t { kPlug = 1, kInside = 2, kLipBand = 3 };

struct HiddenSplat {
  uint32_t row = 0;  // the splat's row in the package's splats.ply
  HiddenKind kind = HiddenKind::kInside;
  uint32_t upper = 0, lower = 0;  // lip vertices of the bound primitive
};

struct MouthHidden {
  Vec3 up{0, 1, 0}, forward{0, 0, 1};  // the head's axes at rest (bound mesh space), unit length
  std::vector<HiddenSplat> splats;     // one per row, rows distinct
};

// Bytes of mouth_hidden.bin: 36-byte header, then 16 bytes per record.
constexpr size_t kMouthHiddenHeaderBytes = 36;
constexpr size_t kMouthHiddenRecordBytes = 16;
std::vector<uint8_t> encodeMouthHidden(const MouthHidden& m);
// Decodes mouth_hidden.bin (untrusted). Rows must be below `splat_count` and distinct, lip vertices below
// `vertex_count` and different from each other, kinds 1..3, the axes finite and non-zero (they are
// normalised). Throws FormatError "<name>: byte <offset>: [record <i>: ]<reason>"; the record count is
// checked against the file size before anything is allocated.
MouthHidden decodeMouthHidden(std::span<const uint8_t> bytes, const std::string& name, size_t splat_count,
                              size_t vertex_count);
// Writes <package_dir>/mouth_hidden.bin (atomically), where loadPackage finds it.
void writeMouthHidden(const std::string& package_dir, const MouthHidden& m);

// --- teeth.json, teeth.ply, teeth.bin -------------------------------------------------------------------

struct TeethPoint {
  uint32_t triangle = 0;                // index into the bound primitive's triangle list
  std::array<float, 3> barycentrics{};  // b0, b1, b2 (summing to 1)
  float offset = 0;                     // metres along the posed triangle's unit normal
  float setback = 0;                    // metres back along the (turned) head forward
};

// One of the mouth's meshes (gums, tongue, mouth bag): a triangle list whose vertices are placed each
// frame as teeth points are, so it follows the head and the jaw through the triangles it is bound to.
struct MouthMesh {
  std::array<float, 4> color{1, 1, 1, 1};  // linear RGBA base colour, each in [0, 1]
  std::vector<TeethPoint> vertices;        // at least 3
  std::vector<uint32_t> indices;  // 3 per triangle, each below vertices.size(); at least one triangle
};

struct Teeth {
  GaussianCloud splats;                       // teeth.ply, character frame (rest), colours and opacities
  std::vector<TeethPoint> points;             // teeth.bin, one per splat
  std::vector<MouthMesh> meshes;              // mouth_meshes.bin (optional)
  std::vector<std::array<uint32_t, 2>> lips;  // (upper, lower) lip vertex pairs, corner to corner
  Vec3 up{0, 1, 0}, forward{0, 0, 1};         // the head's axes at rest, unit length
};

constexpr size_t kTeethHeaderBytes = 12;
constexpr size_t kTeethRecordBytes = 24;
std::vector<uint8_t> encodeTeethPoints(std::span<const TeethPoint> points);
// Decodes teeth.bin (untrusted): triangles below `triangle_count`, barycentrics finite and summing to
// 1 within 1e-3, offset and set-back finite. Errors as decodeMouthHidden's.
std::vector<TeethPoint> decodeTeethPoints(std::span<const uint8_t> bytes, const std::string& name,
                                          size_t triangle_count);
// Bytes of mouth_meshes.bin: magic AOSMMS01, u32 mesh count, then per mesh u32 vertex count, u32 triangle
// count, 4 f32 colour, the vertices as teeth.bin records and 3 u32 per triangle.
constexpr size_t kMaxMouthMeshes = 16;
constexpr size_t kMaxLipPairs =
    128;  // teeth.json "lips": the opening is a mesh mask (render/mesh_shared.h SF_MESH_MASK_MAX points)
constexpr size_t kMaxMouthMeshVertices = size_t{1} << 20;
std::vector<uint8_t> encodeMouthMeshes(std::span<const MouthMesh> meshes);
// Decodes mouth_meshes.bin (untrusted): 1..16 meshes, vertices as decodeTeethPoints checks them, colours
// finite in [0, 1], indices below the mesh's vertex count; counts checked against the bytes left before
// anything is allocated; errors name the file, byte offset and mesh.
std::vector<MouthMesh> decodeMouthMeshes(std::span<const uint8_t> bytes, const std::string& name,
                                         size_t triangle_count);
// Writes teeth.json, teeth.ply and teeth.bin (and mouth_meshes.bin when teeth.meshes is not empty) into
// `package_dir` (teeth.json last, with both files' SHA-256). teeth.splats and teeth.points must have one
// entry per splat; at least two lip pairs.
void writeTeeth(const std::string& package_dir, const Teeth& teeth);
// Reads teeth.json and the two files it names (relative to its folder; their SHA-256 checked when given)
// for `character`'s bound mesh; every refusal names the file and the JSON path or byte offset.
Teeth readTeeth(const std::string& json_path, const Character& character);

// --- per frame ------------------------------------------------------------------------------------------

// The lip gap (above) of one pair in a deformed frame of `character` (the CPU reference: the frame's
// posed vertices must be present).
float lipGap(const Character& character, const Character::Frame& f, Vec3 up, uint32_t upper, uint32_t lower);

// Applies mouth_hidden to a frame deformed by Character::deformFrame: moves the plugs, caps the lip band
// and fades plugs and inside points in f.opacities (initialised from the cloud when empty).
void applyMouthHidden(const MouthHidden& m, const Character& character, Character::Frame& f);
// Adds the teeth to f.parts (name "teeth", with the lip opening in `outline` and the mouth's meshes posed
// in `meshes`) when they show this frame (gap above 3 mm); otherwise adds nothing.
void applyTeeth(const Teeth& t, const Character& character, Character::Frame& f);

// Our per-splat form of the soft rim: for each teeth splat, d = the screen distance (pixels) of its centre
// inside the projected lip opening (the part's outline: the upper lip vertices in order, then the lower
// ones back), 0 outside it; opacity *= smoothstep(0, 10 px * width / 1024, d). `object_to_world` places
// the part (the body's RenderObject transform). An outline point or splat at view z <= 0.2 leaves
// the part unchanged (or that splat). Only the teeth part is touched; call before drawing the frame.
void applyTeethRim(Character::Part& teeth, const Camera& cam, const Mat4& object_to_world);

// The mouth's meshes of a teeth part as meshes of the frame: camera-lit (MeshShading::kCamera), the part's
// opacity ramp as RenderMesh::opacity and its outline as the mask, with the rim of applyTeethRim (10 px at
// a 1024 px view). The meshes point into `teeth` and its Teeth, which must outlive the frame.
std::vector<RenderMesh> mouthRenderMeshes(const Character::Part& teeth, const Mat4& object_to_world);

}  // namespace sf::character
