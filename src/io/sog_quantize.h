// Quantisers of the SOG writer (docs/formats/sog.md): 256-entry scalar codebooks for log-scales, DC
// coefficients and the SH palette's coefficients, and the k-means palette of higher-order SH vectors.
// Both are deterministic: the same input gives the same output for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sf::sog {

// A codebook of at most 256 values, sorted ascending. The codebook minimises the squared error of the
// values it was built from (optimal 1-D k-means over a histogram of up to 8192 bins, refined by Lloyd
// iterations on the exact values); with 256 or fewer distinct values it holds each of them exactly.
// Non-finite values are ignored (the writer never passes any). An empty input gives the codebook {0}.
std::vector<float> buildScalarCodebook(std::span<const float> values, size_t entries = 256);

// Index of the codebook entry nearest to v (the lower one on a tie). codebook must be sorted and non-empty.
uint8_t nearestCodebookIndex(std::span<const float> codebook, float v);

// Vector quantisation of `count` points of `dims` floats each (row-major).
struct VectorPalette {
  size_t dims = 0;
  std::vector<float> centroids;  // palette size x dims
  std::vector<uint32_t> labels;  // per point: its centroid
  size_t size() const { return dims ? centroids.size() / dims : 0; }
};

// k-means with at most `k` centroids: with count <= k every point is its own centroid; otherwise the
// initial palette splits the points recursively (the cell of largest squared error, along its dimension of
// largest variance, at the median) and `iterations` Lloyd steps refine it, each point taking the nearer of
// its current centroid and the best one a k-d tree search over the centroids finds (best bin first,
// `search_leaves` leaves), so the error never grows from one step to the next. Runs in parallel.
VectorPalette buildVectorPalette(std::span<const float> points, size_t count, size_t dims, size_t k,
                                 int iterations, int search_leaves = 8);

}  // namespace sf::sog
