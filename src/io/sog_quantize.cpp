// Scalar codebooks: optimal 1-D k-means by dynamic programming over a histogram, with the divide-and-conquer
// speed-up that the monotone split points of 1-D k-means allow (as in Wang and Song, "Ckmeans.1d.dp",
// The R Journal 3(2), 2011), then Lloyd refinement on the exact values.
// Vector palette: k-means (Lloyd) from a recursive-bisection start, with nearest-centroid search by a k-d
// tree over the centroids, best bin first (Beis and Lowe, CVPR 1997).
#include "io/sog_quantize.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>

#include "core/parallel.h"

namespace sf::sog {

namespace {

// ----- scalar codebook -------------------------------------------------------------------------------------

// Weighted bins of a sorted sample, with prefix sums for O(1) segment costs.
struct Bins {
  std::vector<double> w, s, q;  // prefix sums of count, sum, sum of squares (size bins + 1)

  size_t size() const { return w.size() - 1; }
  // Squared error of bins [a, b] represented by their mean.
  double cost(size_t a, size_t b) const {
    const double n = w[b + 1] - w[a], sum = s[b + 1] - s[a], sq = q[b + 1] - q[a];
    return n > 0 ? std::max(0.0, sq - sum * sum / n) : 0.0;
  }
  double mean(size_t a, size_t b) const {
    const double n = w[b + 1] - w[a];
    return n > 0 ? (s[b + 1] - s[a]) / n : 0.0;
  }
};

// Bins over the sorted values. Bin edges blend rank (quantile) and value positions half and half, so dense
// regions get fine bins while a long tail still spreads over several.
Bins makeBins(const std::vector<float>& sorted, size_t max_bins) {
  const size_t n = sorted.size();
  const size_t h = std::min(n, max_bins);
  const double lo = sorted.front(), range = static_cast<double>(sorted.back()) - lo;
  Bins b;
  std::vector<double> w(h, 0.0), s(h, 0.0), q(h, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double x = sorted[i];
    const double pos = 0.5 * static_cast<double>(i) / static_cast<double>(n) + 0.5 * (x - lo) / range;
    const size_t bin = std::min(h - 1, static_cast<size_t>(pos * static_cast<double>(h)));
    w[bin] += 1.0;
    s[bin] += x;
    q[bin] += x * x;
  }
  b.w.push_back(0.0), b.s.push_back(0.0), b.q.push_back(0.0);
  for (size_t i = 0; i < h; ++i) {
    if (w[i] == 0) continue;
    b.w.push_back(b.w.back() + w[i]);
    b.s.push_back(b.s.back() + s[i]);
    b.q.push_back(b.q.back() + q[i]);
  }
  return b;
}

// Optimal partition of the bins into k contiguous segments; returns the segment means.
std::vector<double> optimalSegments(const Bins& bins, size_t k) {
  const size_t m = bins.size();
  std::vector<double> prev(m), cur(m);
  std::vector<std::vector<uint32_t>> split(k, std::vector<uint32_t>(m, 0));
  for (size_t j = 0; j < m; ++j) prev[j] = bins.cost(0, j);
  for (size_t c = 1; c < k; ++c) {
    // cur[j] = min over s in [c-1, j-1] of prev[s] + cost(s+1, j); the best s is monotone in j.
    std::function<void(size_t, size_t, size_t, size_t)> solve = [&](size_t lo, size_t hi, size_t opt_lo,
                                                                    size_t opt_hi) {
      if (lo > hi) return;
      const size_t mid = lo + (hi - lo) / 2;
      double best = std::numeric_limits<double>::infinity();
      size_t best_s = std::max(opt_lo, c - 1);
      for (size_t s = std::max(opt_lo, c - 1); s <= std::min(mid - 1, opt_hi); ++s) {
        const double v = prev[s] + bins.cost(s + 1, mid);
        if (v < best) best = v, best_s = s;
      }
      cur[mid] = best;
      split[c][mid] = static_cast<uint32_t>(best_s);
      if (mid > lo) solve(lo, mid - 1, opt_lo, best_s);
      solve(mid + 1, hi, best_s, opt_hi);
    };
    std::fill(cur.begin(), cur.end(), std::numeric_limits<double>::infinity());
    solve(c, m - 1, c - 1, m - 2);
    std::swap(prev, cur);
  }
  std::vector<double> means(k);
  size_t end = m - 1;
  for (size_t c = k; c-- > 0;) {
    const size_t begin = c == 0 ? 0 : split[c][end] + 1;
    means[c] = bins.mean(begin, end);
    if (c > 0) end = split[c][end];
  }
  return means;
}

// Lloyd steps on the exact sorted values: each centroid moves to the mean of the values nearest to it.
void refine(const std::vector<float>& sorted, std::vector<double>& c, int steps) {
  std::vector<double> prefix(sorted.size() + 1, 0.0);
  for (size_t i = 0; i < sorted.size(); ++i) prefix[i + 1] = prefix[i] + sorted[i];
  for (int step = 0; step < steps; ++step) {
    bool moved = false;
    size_t begin = 0;
    std::vector<double> next = c;
    for (size_t j = 0; j < c.size(); ++j) {
      size_t end = sorted.size();
      if (j + 1 < c.size()) {
        const double t = 0.5 * (c[j] + c[j + 1]);
        end = static_cast<size_t>(
            std::lower_bound(sorted.begin() + static_cast<ptrdiff_t>(begin), sorted.end(), t,
                             [](float a, double b) { return static_cast<double>(a) < b; }) -
            sorted.begin());
      }
      if (end > begin) next[j] = (prefix[end] - prefix[begin]) / static_cast<double>(end - begin);
      moved = moved || next[j] != c[j];
      begin = end;
    }
    c = std::move(next);
    if (!moved) break;
  }
}

// ----- vector palette --------------------------------------------------------------------------------------

float squaredDistance(const float* a, const float* b, size_t dims, float stop) {
  float d = 0;
  size_t i = 0;
  for (; i + 8 <= dims; i += 8) {  // partial distance: give up once it exceeds the best so far
    for (size_t k = 0; k < 8; ++k) {
      const float t = a[i + k] - b[i + k];
      d += t * t;
    }
    if (d >= stop) return d;
  }
  for (; i < dims; ++i) {
    const float t = a[i] - b[i];
    d += t * t;
  }
  return d;
}

// k-d tree over the centroids (a small number per leaf).
class CentroidTree {
 public:
  CentroidTree(const std::vector<float>& centroids, size_t dims) : c_(centroids), dims_(dims) {
    const size_t n = centroids.size() / dims;
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0u);
    nodes_.reserve(2 * n / kLeaf + 2);
    build(0, n);
  }

  // Index of the nearest centroid found, starting from the candidate `current`.
  uint32_t nearest(const float* p, uint32_t current, int max_leaves,
                   std::vector<std::pair<float, uint32_t>>& heap) const {
    uint32_t best = current;
    float best_d = squaredDistance(p, &c_[current * dims_], dims_, std::numeric_limits<float>::infinity());
    heap.clear();
    heap.push_back({0.0f, 0});
    int leaves = 0;
    auto greater = [](const std::pair<float, uint32_t>& a, const std::pair<float, uint32_t>& b) {
      return a.first > b.first;
    };
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), greater);
      auto [bound, node] = heap.back();
      heap.pop_back();
      if (bound >= best_d) break;
      while (nodes_[node].dim >= 0) {
        const Node& nd = nodes_[node];
        const float diff = p[nd.dim] - nd.split;
        const uint32_t near_child = diff < 0 ? nd.a : nd.b, far_child = diff < 0 ? nd.b : nd.a;
        const float far_bound = std::max(bound, diff * diff);
        if (far_bound < best_d) {
          heap.push_back({far_bound, far_child});
          std::push_heap(heap.begin(), heap.end(), greater);
        }
        node = near_child;
      }
      const Node& leaf = nodes_[node];
      for (uint32_t i = leaf.a; i < leaf.b; ++i) {
        const uint32_t ci = order_[i];
        const float d = squaredDistance(p, &c_[ci * dims_], dims_, best_d);
        if (d < best_d || (d == best_d && ci < best)) best_d = d, best = ci;
      }
      if (++leaves >= max_leaves) break;
    }
    return best;
  }

 private:
  static constexpr size_t kLeaf = 6;
  struct Node {
    int32_t dim = -1;  // -1: leaf over order_[a, b)
    float split = 0;
    uint32_t a = 0, b = 0;
  };

  uint32_t build(size_t begin, size_t end) {
    const auto index = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back({});
    int32_t dim = -1;
    float widest = 0;
    if (end - begin > kLeaf) {
      for (size_t d = 0; d < dims_; ++d) {
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (size_t i = begin; i < end; ++i) {
          const float v = c_[order_[i] * dims_ + d];
          lo = std::min(lo, v), hi = std::max(hi, v);
        }
        if (hi - lo > widest) widest = hi - lo, dim = static_cast<int32_t>(d);
      }
    }
    if (dim < 0) {  // small, or every centroid identical
      nodes_[index] = {-1, 0, static_cast<uint32_t>(begin), static_cast<uint32_t>(end)};
      return index;
    }
    const size_t mid = begin + (end - begin) / 2;
    std::nth_element(order_.begin() + static_cast<ptrdiff_t>(begin),
                     order_.begin() + static_cast<ptrdiff_t>(mid),
                     order_.begin() + static_cast<ptrdiff_t>(end), [&](uint32_t x, uint32_t y) {
                       const float vx = c_[x * dims_ + static_cast<size_t>(dim)],
                                   vy = c_[y * dims_ + static_cast<size_t>(dim)];
                       return vx < vy || (vx == vy && x < y);
                     });
    const float split = c_[order_[mid] * dims_ + static_cast<size_t>(dim)];
    const uint32_t left = build(begin, mid);
    const uint32_t right = build(mid, end);
    nodes_[index] = {dim, split, left, right};
    return index;
  }

  const std::vector<float>& c_;
  size_t dims_;
  std::vector<uint32_t> order_;
  std::vector<Node> nodes_;
};

// The initial palette: the cell of largest squared error is split at the median of its widest-variance
// dimension until there are k cells (or every cell holds identical points).
void bisect(std::span<const float> points, size_t count, size_t dims, size_t k, std::vector<uint32_t>& labels,
            std::vector<float>& centroids) {
  struct Cell {
    size_t begin, end;
    double sse;
    size_t dim;
  };
  std::vector<uint32_t> perm(count);
  std::iota(perm.begin(), perm.end(), 0u);
  std::vector<double> mean(dims), var(dims);
  auto stats = [&](size_t begin, size_t end) {
    std::fill(mean.begin(), mean.end(), 0.0);
    std::fill(var.begin(), var.end(), 0.0);
    for (size_t i = begin; i < end; ++i) {
      const float* p = &points[perm[i] * dims];
      for (size_t d = 0; d < dims; ++d) mean[d] += p[d];
    }
    const double n = static_cast<double>(end - begin);
    for (double& m : mean) m /= n;
    for (size_t i = begin; i < end; ++i) {
      const float* p = &points[perm[i] * dims];
      for (size_t d = 0; d < dims; ++d) {
        const double t = p[d] - mean[d];
        var[d] += t * t;
      }
    }
    Cell c{begin, end, 0.0, 0};
    for (size_t d = 0; d < dims; ++d) {
      c.sse += var[d];
      if (var[d] > var[c.dim]) c.dim = d;
    }
    return c;
  };
  std::vector<Cell> cells;
  auto by_sse = [&](size_t a, size_t b) {
    return cells[a].sse < cells[b].sse || (cells[a].sse == cells[b].sse && a > b);
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(by_sse)> queue(by_sse);
  cells.push_back(stats(0, count));
  queue.push(0);
  size_t live = 1;
  while (live < k && !queue.empty() && cells[queue.top()].sse > 0) {
    const size_t slot = queue.top();
    const Cell c = cells[slot];
    queue.pop();
    const size_t mid = c.begin + (c.end - c.begin) / 2;
    std::nth_element(perm.begin() + static_cast<ptrdiff_t>(c.begin),
                     perm.begin() + static_cast<ptrdiff_t>(mid), perm.begin() + static_cast<ptrdiff_t>(c.end),
                     [&](uint32_t x, uint32_t y) {
                       const float vx = points[x * dims + c.dim], vy = points[y * dims + c.dim];
                       return vx < vy || (vx == vy && x < y);
                     });
    // The split cell's slot takes its lower half; the upper half is appended.
    const Cell upper = stats(mid, c.end);
    cells[slot] = stats(c.begin, mid);
    queue.push(slot);
    cells.push_back(upper);
    queue.push(cells.size() - 1);
    ++live;
  }
  centroids.assign(cells.size() * dims, 0.0f);
  labels.assign(count, 0);
  for (size_t ci = 0; ci < cells.size(); ++ci) {
    const Cell& c = cells[ci];
    std::fill(mean.begin(), mean.end(), 0.0);
    for (size_t i = c.begin; i < c.end; ++i) {
      labels[perm[i]] = static_cast<uint32_t>(ci);
      const float* p = &points[perm[i] * dims];
      for (size_t d = 0; d < dims; ++d) mean[d] += p[d];
    }
    for (size_t d = 0; d < dims; ++d)
      centroids[ci * dims + d] = static_cast<float>(mean[d] / static_cast<double>(c.end - c.begin));
  }
}

}  // namespace

std::vector<float> buildScalarCodebook(std::span<const float> values, size_t entries) {
  assert(entries >= 1 && entries <= 256);
  std::vector<float> sorted;
  sorted.reserve(values.size());
  for (float v : values)
    if (std::isfinite(v)) sorted.push_back(v);
  if (sorted.empty()) return {0.0f};
  std::sort(sorted.begin(), sorted.end());
  std::vector<float> distinct;
  for (float v : sorted) {
    if (distinct.empty() || distinct.back() != v) distinct.push_back(v);
    if (distinct.size() > entries) break;
  }
  if (distinct.size() <= entries) return distinct;
  const Bins bins = makeBins(sorted, 8192);
  std::vector<double> c;
  if (bins.size() <= entries) {
    for (size_t i = 0; i < bins.size(); ++i) c.push_back(bins.mean(i, i));
  } else {
    c = optimalSegments(bins, entries);
  }
  refine(sorted, c, 32);
  std::vector<float> out(c.begin(), c.end());
  std::sort(out.begin(), out.end());
  return out;
}

uint8_t nearestCodebookIndex(std::span<const float> codebook, float v) {
  assert(!codebook.empty() && codebook.size() <= 256);
  const size_t hi =
      static_cast<size_t>(std::lower_bound(codebook.begin(), codebook.end(), v) - codebook.begin());
  if (hi == 0) return 0;
  if (hi == codebook.size()) return static_cast<uint8_t>(codebook.size() - 1);
  return static_cast<uint8_t>(v - codebook[hi - 1] <= codebook[hi] - v ? hi - 1 : hi);
}

VectorPalette buildVectorPalette(std::span<const float> points, size_t count, size_t dims, size_t k,
                                 int iterations, int search_leaves) {
  assert(points.size() == count * dims && dims > 0 && k > 0);
  VectorPalette pal;
  pal.dims = dims;
  if (count == 0) return pal;
  if (count <= k) {
    pal.centroids.assign(points.begin(), points.end());
    pal.labels.resize(count);
    std::iota(pal.labels.begin(), pal.labels.end(), 0u);
    return pal;
  }
  bisect(points, count, dims, k, pal.labels, pal.centroids);
  const size_t palette = pal.size();
  std::vector<double> sums(palette * dims);
  std::vector<uint32_t> members(palette);
  for (int it = 0; it < iterations; ++it) {
    const CentroidTree tree(pal.centroids, dims);
    std::vector<uint8_t> changed((count + 4095) / 4096, 0);
    parallelForRange(count, 4096, [&](size_t begin, size_t end) {
      std::vector<std::pair<float, uint32_t>> heap;
      bool any = false;
      for (size_t i = begin; i < end; ++i) {
        const uint32_t l = tree.nearest(&points[i * dims], pal.labels[i], search_leaves, heap);
        any = any || l != pal.labels[i];
        pal.labels[i] = l;
      }
      changed[begin / 4096] = any;
    });
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(members.begin(), members.end(), 0u);
    for (size_t i = 0; i < count; ++i) {
      const uint32_t l = pal.labels[i];
      ++members[l];
      for (size_t d = 0; d < dims; ++d) sums[l * dims + d] += points[i * dims + d];
    }
    for (size_t c = 0; c < palette; ++c)
      if (members[c] > 0)
        for (size_t d = 0; d < dims; ++d)
          pal.centroids[c * dims + d] =
              static_cast<float>(sums[c * dims + d] / static_cast<double>(members[c]));
    if (std::none_of(changed.begin(), changed.end(), [](uint8_t v) { return v != 0; })) break;
  }
  return pal;
}

}  // namespace sf::sog
