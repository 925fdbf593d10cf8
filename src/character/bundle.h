// Character bundles (docs/formats/character-bundle.md): a decoder character as a set of files, read through
// a resolver (a directory, an in-memory map, or any other store). Two layouts load to the same object:
//   multi_region       scene.json with "mode" and "order": as many branches as "order" lists, each with its
//                      decoders (geom, appr, optional trunk), its mesh (mesh_bin + mesh_json, or mesh_glb),
//                      its UV resolution and lift tuning; an eyes branch may carry static geometry and be
//                      gaze-conditioned;
//   schema_version: 1  export_manifest.json, no scene.json: one fused branch, adapted to look alike.
// The engine's two optional blocks of scene.json, "rig" and "expression_space", default to what a bundle
// without them means: rig backend "orl" with the bundle's rig_names.json, and the arkit52 space.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "character/lift.h"

namespace sf::character {

// Where a bundle's files come from. Names are relative, '/'-separated.
class BundleResolver {
 public:
  virtual ~BundleResolver() = default;
  virtual bool exists(const std::string& name) const = 0;
  // The file's bytes; throws sf::Error naming the file when it is missing or unreadable.
  virtual std::vector<uint8_t> read(const std::string& name) const = 0;
  // How a file is named in messages ("bundles/head/scene.json").
  virtual std::string describe(const std::string& name) const = 0;
  // A directory for loaders that need one (external glTF buffers), or empty.
  virtual std::string directory() const { return {}; }
};

// Files under `dir`: names are confined to it (no absolute paths, no "..", regular files only).
std::shared_ptr<BundleResolver> directoryResolver(const std::string& dir);
// Files held in memory, by name; `label` prefixes names in messages.
std::shared_ptr<BundleResolver> memoryResolver(std::map<std::string, std::vector<uint8_t>> files,
                                               const std::string& label = "memory");

// Limits a bundle is checked against (untrusted input): branches, and slots over all branches (the
// frame addresses an object's slots with 32-bit counts).
inline constexpr size_t kMaxBundleBranches = 64;
inline constexpr uint64_t kMaxBundleSlots = uint64_t{1} << 24;

struct BundleBranch {
  std::string name;
  std::string geom, appr, trunk;              // decoder files (trunk may be empty)
  std::string mesh_bin, mesh_json, mesh_glb;  // mesh_bin + mesh_json, or mesh_glb
  int uv_resolution = 0;                      // the UV maps are uv_resolution x uv_resolution texels
  LiftTuning lift;
  DecoderFrame frame;             // "frame": {"center", "scale"}
  bool static_geometry = false;   // the mesh is not posed by the rig (its rest vertices every frame)
  bool gaze_conditioned = false;  // the decoders take the gaze [pitchL, yawL, pitchR, yawR]
};

struct ExpressionSegment {
  std::string name;
  int start = 0, count = 0;
};

// scene.json "rig": which rig poses the face. Default: backend "orl", control names from rig_names.json.
struct BundleRig {
  bool declared = false;
  std::string backend = "orl";  // "gnm", "skinned" or "orl"
  std::string pack;  // gnm: the pack file; skinned: the glTF (default: the first branch's mesh_glb)
  std::vector<std::string> control_names;
  int64_t vertex_count = -1;  // -1: not stated
};

// scene.json "expression_space": what the animation layer sends. Default: arkit52 (52).
struct BundleExpressionSpace {
  bool declared = false;
  std::string kind = "arkit52";  // "arkit52", "gnm" or "gnm68"
  int dim = 52;
  std::vector<ExpressionSegment> segments;
};

struct CharacterBundle {
  std::string layout;                  // "multi_region" or "schema_version 1"
  std::string mode;                    // scene.json "mode" ("multi_region"); "fused" for schema_version 1
  std::vector<BundleBranch> branches;  // in "order"
  BundleRig rig;
  BundleExpressionSpace expression_space;
  std::shared_ptr<BundleResolver> files;
  std::string where;  // the marker file, for messages
};

// Whether the resolver holds a bundle (scene.json with "mode", or export_manifest.json).
bool isCharacterBundle(const BundleResolver& files);
// Reads and checks a bundle: every named file exists, values are in range; errors name the file and the
// JSON path. Does not load decoders or meshes.
CharacterBundle loadCharacterBundle(std::shared_ptr<BundleResolver> files);

// A branch's mesh: rest positions, UVs and triangles (mesh_bin + mesh_json:
// docs/formats/character-bundle.md).
struct BranchMesh {
  std::vector<Vec3> positions;
  std::vector<std::array<float, 2>> uvs;
  std::vector<uint32_t> indices;
};
// Decodes mesh_bin as mesh_json describes it; errors name the files and offsets.
BranchMesh decodeBranchMesh(std::span<const uint8_t> json, std::span<const uint8_t> bin,
                            const std::string& json_name, const std::string& bin_name);
// The bytes of mesh_json / mesh_bin for a mesh (the writer tests and scripts use).
std::pair<std::string, std::vector<uint8_t>> encodeBranchMesh(const BranchMesh& mesh);

}  // namespace sf::character
