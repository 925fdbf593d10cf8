// Large test scenes for benchmarks: a synthetic capture-like cloud, and K tiled copies of a cloud.
#pragma once

#include <cstdint>
#include <memory>

#include "scene/scene.h"

namespace sf {

// A capture-like cloud of n gaussians: centres on the surfaces of many random blobs (as trained splats
// concentrate on surfaces), log-normal scales (median 1 cm, a long tail of large splats), an opacity
// spread like trained scenes (about 60% nearly opaque, a tail of faint splats) and SH up to `sh_degree`
// with decaying random coefficients. Spans roughly a 4 m cube around the origin; deterministic for a seed.
GaussianCloud makeSyntheticCloud(size_t n, int sh_degree, uint32_t seed = 1);

// A uniformly random, valid cloud: positions in [-1, 1]^3, scales in [0.005, 0.2], unit rotations,
// opacities in [0.05, 0.95], SH DC in [-1.5, 1.5] and higher coefficients in [-0.5, 0.5]. Deterministic for
// a seed; the tests' and fuzz seeds' small clouds.
GaussianCloud makeRandomCloud(size_t n, int sh_degree, uint32_t seed);

// Raises a cloud's SH degree (new coefficients small random values, as trained view dependence).
void padShDegree(GaussianCloud& cloud, int degree, uint32_t seed = 7);

// `copies` objects sharing one cloud, on a square grid in the x-z plane spaced by the cloud's extent,
// each with its own transform (so a frame holds `copies` objects in one global sort).
Scene tiledScene(std::shared_ptr<const GaussianCloud> cloud, int copies);

}  // namespace sf
