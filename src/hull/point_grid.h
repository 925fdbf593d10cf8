// A uniform grid over a point set, shared by the hull's neighbour queries (materials and chunks smoothing,
// the destruction's support graph and hit candidates): the points sorted by cell key; a query scans the rows
// of cells its box covers (x is the key's low field, so one row of cells is one contiguous run of entries).
// The cell is widened when the extent would need more than 2^20 cells per axis; NaN coordinates fall in
// cell 0.
//
// forWithin filters by distance; forInBox and forNearSegment only gather: they call back for every point of
// the cells they cover (a superset of the points in reach, widened by a margin for rounding), and the caller
// applies its own exact test, so that a search bounded with the grid finds what a scan over all the points
// would.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/math.h"

namespace sf::hull {

class PointGrid {
 public:
  PointGrid(std::span<const Vec3> points, float cell) : points_(points) {
    Vec3 lo{0, 0, 0}, hi{0, 0, 0};
    if (!points.empty()) lo = hi = points[0];
    for (const Vec3& p : points)
      for (int a = 0; a < 3; ++a) {
        lo[a] = std::min(lo[a], p[a]);
        hi[a] = std::max(hi[a], p[a]);
      }
    origin_ = lo;
    top_ = hi;
    const float extent = std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z, 0.0f});
    cell_ = std::max(cell > 0 && std::isfinite(cell) ? cell : 1.0f, extent * 0x1.0p-20f);
    if (!(cell_ > 0) || !std::isfinite(cell_)) cell_ = 1;
    entries_.resize(points.size());
    for (size_t i = 0; i < points.size(); ++i)
      entries_[i] = {key(cellOf(points[i])), static_cast<uint32_t>(i)};
    std::sort(entries_.begin(), entries_.end());
    // The rows' first entries, for the gathering queries, when the box has not too many rows for the points.
    const std::array<int64_t, 3> last = cellOf(top_);
    const uint64_t rows = static_cast<uint64_t>(last[1] + 1) * static_cast<uint64_t>(last[2] + 1);
    if (!entries_.empty() && rows <= 4 * static_cast<uint64_t>(entries_.size()) + 4096) {
      rows_y_ = last[1] + 1;
      rows_z_ = last[2] + 1;
      row_start_.assign(rows + 1, 0);
      for (const Entry& e : entries_) ++row_start_[rowOf(e.first) + 1];
      for (size_t r = 0; r < rows; ++r) row_start_[r + 1] += row_start_[r];
    }
  }

  // The points in cell order: queries made in this order find their cells in cache.
  size_t size() const { return entries_.size(); }
  size_t pointAt(size_t t) const { return entries_[t].second; }

  // Calls fn(j, d2) for every point j within `radius` of p (d2 its squared distance), rows in key order.
  template <class Fn>
  void forWithin(Vec3 p, float radius, Fn&& fn) const {
    const float r2 = radius * radius;
    const std::array<int64_t, 3> lo = cellOf(p - Vec3{radius, radius, radius});
    const std::array<int64_t, 3> hi = cellOf(p + Vec3{radius, radius, radius});
    for (int64_t z = lo[2]; z <= hi[2]; ++z)
      for (int64_t y = lo[1]; y <= hi[1]; ++y) {
        const uint64_t last = key({hi[0], y, z});
        auto it = std::lower_bound(entries_.begin(), entries_.end(), Entry{key({lo[0], y, z}), 0});
        for (; it != entries_.end() && it->first <= last; ++it) {
          const Vec3 d = points_[it->second] - p;
          const float d2 = dot(d, d);
          if (d2 <= r2) fn(it->second, d2);
        }
      }
  }

  // Calls fn(j) for every point j in the box [lo, hi] (and for other points of the cells it covers), each
  // once, rows in key order.
  template <class Fn>
  void forInBox(Vec3 lo, Vec3 hi, Fn&& fn) const {
    const float m = margin(lo, hi);
    const std::array<int64_t, 3> c0 = cellOf(lo - Vec3{m, m, m});
    const std::array<int64_t, 3> c1 = cellOf(hi + Vec3{m, m, m});
    for (int64_t z = c0[2]; z <= c1[2]; ++z)
      for (int64_t y = c0[1]; y <= c1[1]; ++y) scanRow(c0[0], c1[0], y, z, fn);
  }

  // Calls fn(j) for every point j within `radius` of the segment {a + dir * t : t in [t0, t1]} (and for other
  // points of the cells near it), each once, rows in key order. t0 and t1 may be infinite: the segment is
  // clipped to the points' bounding box. Per row of cells, only the run of cells that the segment's stretch
  // within the row's y-z slab (widened by the radius) can reach is scanned.
  template <class Fn>
  void forNearSegment(Vec3 a, Vec3 dir, float t0, float t1, float radius, Fn&& fn) const {
    if (entries_.empty() || !(t0 <= t1) || !(radius >= 0)) return;
    const float m = radius + margin(a, a);
    for (int k = 0; k < 3; ++k)
      if (!clip(a[k], dir[k], origin_[k] - m, top_[k] + m, &t0, &t1)) return;
    if (!std::isfinite(t0) || !std::isfinite(t1)) t0 = t1 = 0;  // dir zero: the segment is the point a
    const Vec3 p0 = a + dir * t0, p1 = a + dir * t1;
    const std::array<int64_t, 3> c0 = cellOf(min3(p0, p1) - Vec3{m, m, m});
    const std::array<int64_t, 3> c1 = cellOf(max3(p0, p1) + Vec3{m, m, m});
    for (int64_t z = c0[2]; z <= c1[2]; ++z) {
      float s0 = t0, s1 = t1;
      const float z_lo = origin_.z + static_cast<float>(z) * cell_;
      if (!clip(a.z, dir.z, z_lo - m, z_lo + cell_ + m, &s0, &s1)) continue;
      for (int64_t y = c0[1]; y <= c1[1]; ++y) {
        float u0 = s0, u1 = s1;
        const float y_lo = origin_.y + static_cast<float>(y) * cell_;
        if (!clip(a.y, dir.y, y_lo - m, y_lo + cell_ + m, &u0, &u1)) continue;
        const float xa = a.x + dir.x * u0, xb = a.x + dir.x * u1;
        const int64_t x0 = std::max(c0[0], cellOf({std::min(xa, xb) - m, 0, 0})[0]);
        const int64_t x1 = std::min(c1[0], cellOf({std::max(xa, xb) + m, 0, 0})[0]);
        if (x0 <= x1) scanRow(x0, x1, y, z, fn);
      }
    }
  }

 private:
  using Entry = std::pair<uint64_t, uint32_t>;
  static constexpr int64_t kMaxCell = (int64_t{1} << 21) - 1;

  std::array<int64_t, 3> cellOf(Vec3 p) const {
    std::array<int64_t, 3> c{};
    for (int a = 0; a < 3; ++a) {
      const float f = std::floor((p[a] - origin_[a]) / cell_);
      c[a] = f > 0 ? static_cast<int64_t>(std::min(f, static_cast<float>(kMaxCell))) : 0;  // NaN as 0
    }
    return c;
  }
  static uint64_t key(const std::array<int64_t, 3>& c) {
    return static_cast<uint64_t>(c[0]) | static_cast<uint64_t>(c[1]) << 21 |
           static_cast<uint64_t>(c[2]) << 42;
  }
  static Vec3 min3(Vec3 a, Vec3 b) { return {std::min(a.x, b.x), std::min(a.y, b.y), std::min(a.z, b.z)}; }
  static Vec3 max3(Vec3 a, Vec3 b) { return {std::max(a.x, b.x), std::max(a.y, b.y), std::max(a.z, b.z)}; }

  // The widening of a gathering query: far above the rounding of the cell arithmetic and of the callers'
  // distances (a few ulps of the coordinates involved), far below a cell.
  float margin(Vec3 lo, Vec3 hi) const {
    float scale = 0;
    for (int k = 0; k < 3; ++k)
      scale =
          std::max({scale, std::fabs(origin_[k]), std::fabs(top_[k]), std::fabs(lo[k]), std::fabs(hi[k])});
    return 1e-3f * cell_ + 1e-5f * scale;
  }

  // Narrows [t0, t1] to where a + d * t lies in [lo, hi] along one axis; false when nothing is left.
  static bool clip(float a, float d, float lo, float hi, float* t0, float* t1) {
    if (d == 0) return a >= lo && a <= hi && *t0 <= *t1;
    float ta = (lo - a) / d, tb = (hi - a) / d;
    if (ta > tb) std::swap(ta, tb);
    *t0 = std::max(*t0, ta);
    *t1 = std::min(*t1, tb);
    return *t0 <= *t1;
  }

  size_t rowOf(uint64_t key) const {  // the row table's index of a key's row
    return static_cast<size_t>((key >> 21) & kMaxCell) +
           static_cast<size_t>(rows_y_) * static_cast<size_t>(key >> 42);
  }

  // Calls fn(j) for the points of the cells x0..x1 of row (y, z): from the row's first entry when there is a
  // row table (no row lies past the box's last cell), else from a search of all the entries.
  template <class Fn>
  void scanRow(int64_t x0, int64_t x1, int64_t y, int64_t z, Fn& fn) const {
    auto begin = entries_.begin(), end = entries_.end();
    if (!row_start_.empty()) {
      if (y >= rows_y_ || z >= rows_z_) return;
      const size_t r = rowOf(key({0, y, z}));
      begin = entries_.begin() + static_cast<std::ptrdiff_t>(row_start_[r]);
      end = entries_.begin() + static_cast<std::ptrdiff_t>(row_start_[r + 1]);
    }
    const uint64_t last = key({x1, y, z});
    auto it = std::lower_bound(begin, end, Entry{key({x0, y, z}), 0});
    for (; it != end && it->first <= last; ++it) fn(it->second);
  }

  std::span<const Vec3> points_;
  Vec3 origin_, top_;  // the points' bounding box
  float cell_ = 1;
  std::vector<Entry> entries_;
  std::vector<uint32_t> row_start_;  // the row table: row y + rows_y_ * z starts at entry row_start_[row]
  int64_t rows_y_ = 0, rows_z_ = 0;
};

}  // namespace sf::hull
