// glTF 2.0 reader (.gltf with embedded or external buffers, and .glb) into plain structs: the node
// hierarchy, meshes with their vertex attributes and morph targets, base-colour textures, skins,
// animations and KHR_gaussian_splatting primitives. The JSON and the buffers are parsed by tinygltf
// (confined to gltf.cpp); every accessor is read here with full bounds checks, so the reader is safe for
// untrusted input. Images are decoded by io/image_io.cpp (stb).
//
// Errors are sf::Error with "<file>: <glTF element path>: <reason>", for example
//   "cesium_man.gltf: accessors[12]: byteOffset 400 + 24 * (100 - 1) + 12 = 2788 exceeds bufferViews[3]
//    byteLength 1000".
// See docs/formats/gltf.md for what is read, what is refused and why.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"

namespace sf {

using GltfFloat2 = std::array<float, 2>;
using GltfFloat4 = std::array<float, 4>;
using GltfJoints4 = std::array<uint16_t, 4>;

struct GltfNode {
  std::string name;
  int parent = -1;            // index into GltfDocument::nodes, -1 for a root
  std::vector<int> children;  // in file order
  // Local transform. A node given by "matrix" has has_matrix set and its decomposition in translation,
  // rotation and scale as well (glTF requires such matrices to be decomposable).
  bool has_matrix = false;
  Mat4 matrix;
  Vec3 translation;
  Quat rotation;  // (w, x, y, z); glTF stores (x, y, z, w), converted here
  Vec3 scale{1, 1, 1};
  int mesh = -1;
  int skin = -1;
  std::vector<float> weights;  // morph weights of this node's mesh instance (empty: the mesh's defaults)

  // The local matrix (T * R * S, or the given matrix).
  Mat4 localMatrix() const;
};

// One morph target of a primitive: per-vertex deltas; an absent attribute is an empty vector.
struct GltfMorphTarget {
  std::vector<Vec3> positions;
  std::vector<Vec3> normals;
};

// An image of the file (one per glTF `images` entry, same index). Only images that some primitive uses
// as its base-colour texture are decoded; the others keep their name and have width 0 and no pixels.
struct GltfImage {
  std::string name;
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;  // 8-bit RGBA, row-major, top row first, as stored (sRGB-encoded)
};

// A primitive's KHR_gaussian_splatting data, in the primitive's own space (node transforms are not
// applied here; see io/gltf_splats.h). The cloud holds activated values as GaussianCloud documents:
// positions = POSITION, linear scales, unit (w, x, y, z) rotations, opacities in [0, 1], SH
// coefficients [splat][coeff][rgb] and color_space from colorSpace.
struct GltfGaussianSplats {
  std::string kernel;                             // "ellipse" (the only kernel read)
  std::string color_space;                        // as written in the file
  std::string projection = "perspective";         // as written, or the default
  std::string sorting_method = "cameraDistance";  // as written, or the default
  GaussianCloud cloud;
};

struct GltfPrimitive {
  int mode = 4;  // 4 = triangles
  int material = -1;
  GltfFloat4 base_color{1, 1, 1, 1};  // the material's pbrMetallicRoughness.baseColorFactor
  // The material's pbrMetallicRoughness.baseColorTexture: an index into GltfDocument::images (decoded),
  // or -1 when there is none or it could not be used (a warning in GltfDocument::warnings says why).
  int base_color_texture = -1;
  int base_color_texcoord = 0;         // the TEXCOORD_n set; only 0 is supported (others are refused)
  int wrap_s = 10497, wrap_t = 10497;  // the texture's sampler wrap modes (GL enums; REPEAT by default)
  // Vertex attributes: each present one holds vertex_count elements; absent ones are empty.
  std::vector<Vec3> positions;
  std::vector<Vec3> normals;
  std::vector<GltfFloat2> texcoords0;
  std::vector<GltfFloat4> colors0;            // RGB colours get alpha 1; normalised integers are converted
  std::vector<GltfJoints4> joints0, joints1;  // indices into the skin's joint list
  std::vector<GltfFloat4> weights0, weights1;
  std::vector<uint32_t> indices;  // empty: non-indexed
  std::vector<GltfMorphTarget> targets;
  bool has_splats = false;    // the primitive carries KHR_gaussian_splatting
  GltfGaussianSplats splats;  // its data when has_splats

  size_t vertexCount() const { return positions.size(); }
};

struct GltfMesh {
  std::string name;
  std::vector<GltfPrimitive> primitives;
  std::vector<float> weights;             // default morph weights (one per target; zeros when absent)
  std::vector<std::string> target_names;  // from extras.targetNames, when present
};

struct GltfSkin {
  std::string name;
  std::vector<int> joints;         // node indices
  std::vector<Mat4> inverse_bind;  // one per joint (identity when the file has none)
  int skeleton = -1;               // optional root node
};

enum class GltfInterpolation { kStep, kLinear, kCubicSpline };
enum class GltfPath { kTranslation, kRotation, kScale, kWeights };

struct GltfSampler {
  GltfInterpolation interpolation = GltfInterpolation::kLinear;
  std::vector<float> times;  // strictly increasing, finite
  // Output values as floats, normalised integers converted: times.size() keys of `components` floats
  // each, times three for CUBICSPLINE (in-tangent, value, out-tangent per key). Rotations stay in the
  // file's (x, y, z, w) order here; the animation runtime converts them.
  std::vector<float> values;
  int components = 0;  // 3 (translation, scale), 4 (rotation) or the morph target count (weights)
};

struct GltfChannel {
  int sampler = 0;
  int node = 0;
  GltfPath path = GltfPath::kTranslation;
};

// A named time of an animation (an animation event), from the animation's `extras.events`
// (docs/formats/gltf.md).
struct GltfAnimationEvent {
  std::string name;
  float time = 0;  // seconds, in [0, duration]
};

struct GltfAnimation {
  std::string name;
  std::vector<GltfChannel> channels;
  std::vector<GltfSampler> samplers;
  float duration = 0;                      // the largest key time of any sampler
  std::vector<GltfAnimationEvent> events;  // extras.events, in time order (empty when absent or malformed)
};

struct GltfScene {
  std::string name;
  std::vector<int> roots;
};

struct GltfDocument {
  std::string path;
  std::vector<GltfNode> nodes;
  std::vector<GltfMesh> meshes;
  std::vector<GltfImage> images;  // one per glTF image; see GltfImage
  std::vector<GltfSkin> skins;
  std::vector<GltfAnimation> animations;
  std::vector<GltfScene> scenes;
  int default_scene = -1;             // "scene", or -1
  std::vector<std::string> warnings;  // things skipped, such as channels aimed at no node or textures
                                      // whose image cannot be decoded
  // The external files the file names (buffers and images given by a URI that is not a data URI), as paths
  // relative to its directory (percent-decoded), in file order: what a copy of the model takes along.
  std::vector<std::string> external_files;

  // World matrix of every node (parents before children); the matrices of nodes in no scene are
  // computed from their own hierarchy too.
  std::vector<Mat4> worldMatrices() const;
};

// Reads a .gltf or .glb file (chosen by its first bytes, not its extension). External buffers and images
// are looked up only in the file's own directory tree. Throws sf::Error on any malformed or unsupported
// content; an image that is missing or cannot be decoded is only a warning (the primitive keeps its
// base colour factor and gets no texture).
GltfDocument loadGltf(const std::string& path);

// Parses glTF content held in memory; `name` is used in messages and `base_dir` to resolve external
// buffer and image files (empty: no external files, only embedded data URIs and the GLB BIN chunk).
GltfDocument parseGltf(std::span<const uint8_t> bytes, const std::string& name, const std::string& base_dir);

// Short names used in messages: "translation", "STEP", ...
const char* gltfPathName(GltfPath path);
const char* gltfInterpolationName(GltfInterpolation interpolation);

}  // namespace sf
