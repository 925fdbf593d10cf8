// KHR_gaussian_splatting (glTF extension, Release Candidate text; docs/formats/gltf.md): the splat
// primitives of a parsed glTF document placed in world space, merged into one GaussianCloud, and a
// GaussianCloud written as a GLB file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"

namespace sf {

struct GltfDocument;

// One splat primitive instanced by one node.
struct GltfSplatInstance {
  int node = -1;
  int mesh = -1;
  int primitive = -1;
  Mat4 world;           // the node's world matrix
  GaussianCloud cloud;  // in world space (see gltfSplatInstances)
};

// Every KHR_gaussian_splatting primitive instanced by a node of the default scene (scene 0 when the file
// names none, every root node when it has no scenes), in depth-first node order, transformed by the
// node's world matrix M as the extension's covariance M C C^T M^T says:
//  - positions are transformed by M;
//  - when M's linear part is a rotation times a uniform scale s, rotations are composed with that
//    rotation and scales multiplied by s (an identity M leaves every value bit for bit); otherwise
//    (non-uniform scale or shear) each covariance M Sigma M^T is baked and decomposed again into scale
//    and rotation (core/covariance.h);
//  - SH coefficients of degree >= 1 are rotated by M's rotation (the extension's "SHOULD").
// Skins and morph targets are not applied. Throws sf::Error naming the node when M mirrors (negative
// determinant) or collapses (zero scale): the extension leaves splat rendering undefined for those.
std::vector<GltfSplatInstance> gltfSplatInstances(const GltfDocument& doc);

// gltfSplatInstances merged into one cloud, in instance order; the SH degree is the highest of any
// instance (others are padded with zero coefficients). Throws sf::Error "<file>: contains no
// KHR_gaussian_splatting primitive" when the scene instances none, and when instances disagree on the
// colour space.
GaussianCloud gltfSplatCloud(const GltfDocument& doc);

// Encodes a cloud as a binary glTF (GLB): one scene, one node, one mesh with one POINTS primitive carrying
// KHR_gaussian_splatting (kernel "ellipse"), float accessors for POSITION (with min/max), ROTATION (x, y,
// z, w), SCALE (linear), OPACITY and SH_DEGREE_l_COEF_m up to the cloud's degree, and a COLOR_0 fallback
// colour (unsigned byte normalized, linear). Normals, ids and extra channels are not written.
// Layout: docs/formats/gltf.md. Throws sf::Error for an empty cloud (glTF accessors need an element).
std::vector<uint8_t> writeGltfSplats(const GaussianCloud& cloud);

}  // namespace sf
