// A uniform grid over a point set, shared by the hull's neighbour queries (materials and chunks smoothing,
// the destruction's support graph and hit candidates): the points sorted by cell key; a query scans the rows
// of cells its box covers (x is the key's low field, so one row of cells is one contiguous run of entries).
// The cell is widened when the extent would need more than 2^20 cells per axis; NaN coordinates fall in
// cell 0.
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
    const float extent = std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z, 0.0f});
    cell_ = std::max(cell > 0 && std::isfinite(cell) ? cell : 1.0f, extent * 0x1.0p-20f);
    if (!(cell_ > 0) || !std::isfinite(cell_)) cell_ = 1;
    entries_.resize(points.size());
    for (size_t i = 0; i < points.size(); ++i) entries_[i] = {key(cellOf(points[i])), static_cast<uint32_t>(i)};
    std::sort(entries_.begin(), entries_.end());
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
    return static_cast<uint64_t>(c[0]) | static_cast<uint64_t>(c[1]) << 21 | static_cast<uint64_t>(c[2]) << 42;
  }

  std::span<const Vec3> points_;
  Vec3 origin_;
  float cell_ = 1;
  std::vector<Entry> entries_;
};

}  // namespace sf::hull
