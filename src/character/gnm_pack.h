// GNM packs: a baked parametric head in one versioned little-endian file of our own
// (docs/formats/gnm-pack.md). A neutral mesh kept head-local, a linear expression basis over it, linear-blend
// skinning with two eye joints that the gaze turns, the bind transform that places the head in the body's
// bind space, and optionally a trained ARKit-to-coefficient matrix. character::GnmRig (rig.h) poses it.
//
// Head-local frame: metres, +y up, +z the face's forward, +x the head's own left.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/math.h"

namespace sf {
class GltfModel;
}

namespace sf::character {

// The four gaze controls that follow a pack's expression coefficients, in this order, in radians. Pitch is
// positive-down (the eye's forward point moves to -y); yaw is a right-handed turn about +y (positive turns
// the forward point towards +x, the head's left).
extern const std::array<const char*, 4>
    kGnmGazeNames;  // gazePitchLeft, gazeYawLeft, gazePitchRight, gazeYawRight
inline constexpr size_t kGnmGazeControls = 4;

// One joint of a pack. Transforms are affine (row 3 is 0 0 0 1) and live in the head-local frame.
struct GnmJoint {
  std::string name;
  int32_t parent = -1;  // index of the parent joint, lower than this joint's own; -1 for a root
  Mat4 rest_local;      // rest transform relative to the parent (to the head-local frame for a root)
  Mat4 inverse_bind;    // head-local bind space -> this joint's space
};

struct GnmPack {
  std::vector<Vec3> neutral;                        // V vertices, head-local metres
  std::vector<uint32_t> triangles;                  // 3 indices per triangle, each < V
  std::vector<std::array<float, 2>> uvs;            // V texture coordinates, or empty
  std::vector<Vec3> basis;                          // K x V deltas, basis-major: basis[k * V + v]
  std::vector<GnmJoint> joints;                     // J joints, parents first
  std::vector<std::array<uint16_t, 4>> lbs_joints;  // V: four joint indices per vertex (< J where weighted)
  std::vector<std::array<float, 4>> lbs_weights;    // V: their weights (>= 0; renormalised when skinning)
  std::array<int32_t, 2> eye_joints{-1, -1};        // left and right eye joints, distinct, < J
  Mat4 bind_transform;                     // head-local -> the body's bind space (folded into the palette)
  std::vector<std::string> control_names;  // K + 4: one per basis vector, then kGnmGazeNames
  std::vector<float>
      arkit_map;       // empty, or 52 x K row-major: coefficient k = sum_a arkit[a] * map[a * K + k]
  std::string source;  // where the pack came from, for messages (not stored in the file)

  size_t vertexCount() const { return neutral.size(); }
  size_t basisCount() const { return neutral.empty() ? 0 : basis.size() / neutral.size(); }
  size_t controlCount() const { return basisCount() + kGnmGazeControls; }
  // Empty when the pack is consistent (the conditions the fields above state, every value finite);
  // otherwise why not.
  std::string validate() const;
};

// The file's limits (docs/formats/gnm-pack.md): larger counts are refused before anything is allocated.
inline constexpr uint32_t kGnmMaxVertices = 1u << 24;
inline constexpr uint32_t kGnmMaxTriangles = 1u << 26;
inline constexpr uint32_t kGnmMaxBasis = 1u << 12;
inline constexpr uint32_t kGnmMaxJoints = 65535;  // LBS joint indices are u16
inline constexpr uint32_t kGnmMaxNameBytes = 1024;

// The pack as file bytes. Throws sf::Error with validate()'s reason when the pack is inconsistent.
std::vector<uint8_t> encodeGnmPack(const GnmPack& pack);
// Reads a pack from untrusted bytes: every size is checked against the data before anything is allocated and
// every index and value is checked. Throws sf::FormatError ("<path>: byte <offset>: <reason>") on anything
// truncated, malformed, inconsistent or of an unknown version. `path` names the bytes in messages.
GnmPack decodeGnmPack(std::span<const uint8_t> bytes, const std::string& path);
// decodeGnmPack of a file's bytes; the pack's source is the path.
GnmPack loadGnmPack(const std::string& path);
// encodeGnmPack, written atomically (io/file.h): on failure `path` is left as it was.
void saveGnmPack(const GnmPack& pack, const std::string& path);

// The eye-joint name rule: a joint name, lower-cased with everything but letters and digits dropped, names
// the left eye when it is "leye", "lefteye", "eyeleft" or "eyel" (right: "reye", "righteye", "eyeright",
// "eyer"). Returns the indices of the names of `side` (0 left, 1 right) that match, in order.
std::vector<int> eyeJointCandidates(std::span<const std::string> names, int side);

struct GnmFromGltfOptions {
  // Eye joints by exact joint name; empty: found by the eye-joint name rule (exactly one match per side).
  std::string left_eye, right_eye;
  // Eyeballs: for each eye, the connected component of the mesh (by triangles) holding the vertex nearest
  // the eye joint's pivot is bound wholly to that eye joint (weight 1), when it holds at most a quarter of
  // the vertices and is not the other eye's. Skins that move the eyes by morph targets alone (LAM's weights
  // its eyeballs to the head) thus get eyeballs the gaze turns; at zero gaze the pose is unchanged.
  bool bind_eyeballs = true;
};

// Builds a pack from a glTF's first skinned triangle primitive: its vertices, triangles and TEXCOORD_0, its
// morph targets as the basis (control names from the mesh's target names), its skin's joints (reordered
// parents first; a joint's parent is its nearest ancestor in the skin) and JOINTS_0 / WEIGHTS_0, the eye
// joints (options, else the name rule; eyeballs bound to them, see GnmFromGltfOptions) and an arkit_map with
// a 1 where a basis name is an ARKit name (no map when none is). Head-local frame: the skin's bind space with
// its origin moved to the bind position of the skin joint named "head" (lower-cased, letters and digits
// only), else to the midpoint of the eyes; the bind transform is that offset followed by the skin's
// bind-to-model transform at rest (world(head) x inverseBind(head)), so a GnmRig's vertices equal
// SkinnedRig's (glTF model space) for the same weights. Throws sf::Error naming the file and the reason: no
// skinned primitive, influences in JOINTS_1, an eye joint absent or ambiguous, more than kGnmMaxJoints
// joints.
GnmPack fromSkinnedGltf(const GltfModel& model, const GnmFromGltfOptions& options = {});

}  // namespace sf::character
