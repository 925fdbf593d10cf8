// A sort over parallelFor: stretches sorted on their own, then merged pairwise, each merge split into pieces
// of equal output by the merge path (every round uses every worker). For the large host-side sorts of a
// frame (the level-of-detail cut's added nodes: a million entries at a 4M budget).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/parallel.h"

namespace sf {

namespace detail {

// The merge path: how many of a's first elements the first k elements of merge(a, b) hold (std::merge's
// order: an element of a before an equal one of b).
template <class It, class Less>
size_t mergeSplit(It a, size_t na, It b, size_t nb, size_t k, const Less& less) {
  size_t lo = k > nb ? k - nb : 0, hi = std::min(k, na);
  while (lo < hi) {
    const size_t i = lo + (hi - lo) / 2, j = k - i;
    if (j > 0 && i < na && !less(b[j - 1], a[i]))
      lo = i + 1;  // a[i] comes before b[j - 1]: take more of a
    else
      hi = i;
  }
  return lo;
}

}  // namespace detail

// Sorts v by `less` (a strict weak order; equal elements may end in any order), using `scratch` (resized
// to v's size; its memory kept by the caller from call to call).
template <class T, class Less>
void parallelSort(std::vector<T>& v, const Less& less, std::vector<T>& scratch) {
  constexpr size_t kSerial = size_t{1} << 15, kLeast = size_t{1} << 14;
  const size_t n = v.size();
  const size_t workers = workerCount();
  if (n < kSerial || workers < 2) {
    std::sort(v.begin(), v.end(), less);
    return;
  }
  size_t parts = 1;  // a power of two: the merge rounds pair stretches
  while (parts < 2 * workers && parts * 2 * kLeast <= n) parts *= 2;
  auto bound = [&](size_t i) { return n * i / parts; };
  parallelFor(parts, [&](size_t p) { std::sort(v.begin() + bound(p), v.begin() + bound(p + 1), less); });
  scratch.resize(n);
  for (size_t width = 1; width < parts; width *= 2) {
    // Each pair (stretches of `width` parts each) merged in 2 * width pieces of equal output.
    const size_t pieces = 2 * width;
    parallelFor(parts, [&](size_t task) {
      const size_t pair = task / pieces, piece = task % pieces;
      const size_t a0 = bound(pair * pieces), a1 = bound(pair * pieces + width),
                   b1 = bound((pair + 1) * pieces);
      const size_t na = a1 - a0, nb = b1 - a1, m = na + nb;
      const size_t o0 = m * piece / pieces, o1 = m * (piece + 1) / pieces;
      const auto a = v.begin() + a0, b = v.begin() + a1;
      const size_t i0 = detail::mergeSplit(a, na, b, nb, o0, less);
      const size_t i1 = detail::mergeSplit(a, na, b, nb, o1, less);
      std::merge(a + i0, a + i1, b + (o0 - i0), b + (o1 - i1), scratch.begin() + a0 + o0, less);
    });
    v.swap(scratch);
  }
}

}  // namespace sf
