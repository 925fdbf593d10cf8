// Pose correctives, an optional part of a character package (docs/formats/character-extras.md): the fix
// for a pose the skin tears at (both arms raised), blended in as the pose approaches it. corrective/
// index.json lists up to two corrections; each has two drives (one per side) and five files: fade.bin,
// side.bin (per package splat), points.ply, points_bindings.bin and points_side.bin (its new splats).
//
// Per frame and drive: d = the unit direction from the upper arm's joint to the joint after it (model
// space), turned into the frame joint's rest orientation, d' = R_rest R_now^T d (R: the frame joint's
// model-space rotation at rest and now), so a lean of the torso does not count; theta =
// degrees(acos(-d'.y)) (0 hanging, 90 horizontal, 180 raised); t = clamp((theta - fromDeg) / (toDeg -
// fromDeg), 0, 1); w = t^2 (3 - 2t). Weight slots: 2 * correction + side. Existing splats: alpha *= 1 -
// w[side] (1 - fade); new points: opacity * w[side]. With every weight 0 nothing is changed: the frame is
// the package's without corrective/.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "character/binding.h"
#include "character/character.h"
#include "core/gaussian_cloud.h"

namespace sf::character {

constexpr const char* kCorrectiveFormat = "aosrig-splat-corrective";
constexpr int kCorrectiveVersion = 1;
constexpr size_t kMaxCorrections = 2;  // four weight slots

// A joint as index.json names it: a joint name (name non-empty), or an index into the bound skin's joint
// list.
struct JointRef {
  std::string name;
  int skin_index = -1;
};

struct CorrectiveDrive {
  uint32_t side = 0;                                // 0 left, 1 right
  std::array<JointRef, 2> bone;                     // the upper arm's joint and the joint after it
  JointRef frame;                                   // the joint whose rest orientation the arm is read in
  float rest_deg = 0, from_deg = 90, to_deg = 180;  // curve: smoothstep (the only one)
  // Resolved by readCorrective (resolveCorrective): skeleton joints, and the frame joint's rest rotation.
  std::array<int, 2> bone_joint{-1, -1};
  int frame_joint = -1;
  Mat3 frame_rest;
};

struct Correction {
  std::string name;
  std::array<CorrectiveDrive, 2> drives;  // one per side, sides 0 and 1
  std::vector<float> fade;    // per package splat: the opacity factor at full blend (float16 in the file)
  std::vector<uint8_t> side;  // per package splat: 0 or 1
  GaussianCloud points;       // new splats, the package's splat frame (bind pose)
  std::vector<SplatBinding> point_bindings;  // their skin (bindings.bin layout)
  std::vector<uint8_t> point_side;           // per new splat: 0 or 1
};

struct Corrective {
  std::vector<Correction> corrections;  // at most kMaxCorrections
};

// Raw per-splat files, untrusted: exactly `count` values (float16 in [0, 1]; u8 0 or 1). Errors:
// FormatError "<name>: byte <offset>: <reason>".
std::vector<float> decodeFade(std::span<const uint8_t> bytes, const std::string& name, size_t count);
std::vector<uint8_t> decodeSides(std::span<const uint8_t> bytes, const std::string& name, size_t count);
std::vector<uint8_t> encodeFade(std::span<const float> fade);  // rounded to float16

// Reads corrective/index.json (format aosrig-splat-corrective, version 1) and its files (relative to its
// folder; SHA-256 checked when given) for `character`: counts against the package's splats, joints
// resolved in its skeleton, bindings' triangles and joints in range. Every refusal names the file and the
// JSON path ("index.json: corrections[0].drives[1].fromDeg: expected a number") or byte offset.
Corrective readCorrective(const std::string& index_path, const Character& character);
// Resolves every drive's joints in `character`'s skeleton and records the frame joints' rest rotations;
// throws sf::Error naming `where` and the joint. readCorrective calls it; so must a builder.
void resolveCorrective(Corrective& c, const Character& character, const std::string& where);
// Writes <package_dir>/corrective/index.json and each correction's five files (in corrective/<i>/), with
// their SHA-256, index.json last. Drives must have sides 0 and 1; counts must agree with each other.
void writeCorrective(const std::string& package_dir, const Corrective& c);

// Angles (degrees) and weights of a pose's drives, slot 2 * correction + side (unused slots 0).
struct CorrectiveWeights {
  std::array<float, 4> angle_deg{}, weight{};
  bool any() const { return weight[0] > 0 || weight[1] > 0 || weight[2] > 0 || weight[3] > 0; }
};
// theta of a drive in an evaluated pose (pose.models filled). The drive must be resolved
// (resolveCorrective) for this pose's skeleton; otherwise throws sf::Error.
float driveAngle(const CorrectiveDrive& d, const GltfModel::Pose& pose);
// w of a drive at theta degrees.
float driveWeight(const CorrectiveDrive& d, float theta_deg);
CorrectiveWeights correctiveWeights(const Corrective& c, const GltfModel::Pose& pose);

// Applies the corrections to a frame deformed by Character::deformFrame: fades body splats (f.opacities)
// and adds each correction's new points as a part ("corrective <name>") when one of its weights is above
// 0. Does nothing when every weight is 0.
void applyCorrective(const Corrective& c, const Character& character, Character::Frame& f);

// `character info`: the optional parts (counts; each drive's angle and weight at rest), as text lines
// ("mouth:       …"), or, with `json`, as JSON members ("\"parts\": {…}", no trailing comma).
std::string describeParts(const Character& character, bool json);

}  // namespace sf::character
