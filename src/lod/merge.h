// The merge rule of the level-of-detail hierarchy (docs/lod.md "The merge rule"): a parent is the
// moment-matched gaussian of its children, after Kerbl et al. 2024, "A Hierarchical 3D Gaussian
// Representation for Real-Time Rendering of Very Large Datasets".
//
// Every input gaussian i gets a weight w_i = opacity_i * s1_i * s2_i (its two largest scales): its coverage
// of the plane of its largest cross-section, up to the constant 2*pi. The volume term sqrt(det Sigma) would
// give the flat surfels most captures are made of (one scale near zero) almost no weight, so a small
// round blob would outweigh a large wall. A node's moments are then the mixture's:
//   W = sum w_i,  mu = sum w_i mu_i / W,  Sigma = sum w_i (Sigma_i + (mu_i - mu)(mu_i - mu)^T) / W,
// which compose: merging merged nodes (each carrying its W) gives the moments over all their leaves.
// Moments are kept in double while a level is built and rounded to the node's floats when it is stored.
#pragma once

#include <array>
#include <span>

#include "core/math.h"

namespace sf::lod {

// A leaf's weight is at least this, so a cluster of transparent or zero-size gaussians still has moments.
constexpr double kMinWeight = 1e-30;

// Weight, mean and covariance (upper triangle xx, xy, xz, yy, yz, zz) of a gaussian or of a cluster.
struct Moments {
  double weight = 0;
  std::array<double, 3> mean{};
  std::array<double, 6> cov{};
};

// opacity * (product of the two largest scales), at least kMinWeight.
double leafWeight(Vec3 scale, float opacity);

// The moments of one input gaussian: its weight, its position and R S S^T R^T (in double).
Moments leafMoments(Vec3 position, Vec3 scale, Quat rotation, float opacity);

// The moment-matched merge of children (each with its weight).
// children must not be empty.
Moments mergeMoments(std::span<const Moments> children);

// A parent's opacity: its projected coverage o * s1 * s2 matches the children's sum W, so
// o = min(1, W / (s1 * s2)) for the parent's two largest scales; `fallback` (the children's largest
// opacity) where the parent is degenerate (s1 * s2 = 0).
float parentOpacity(double weight, Vec3 scale, float fallback);

}  // namespace sf::lod
