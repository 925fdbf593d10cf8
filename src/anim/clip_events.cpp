#include "anim/clip_events.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sf::anim {

namespace {

// The positions a move passes: [lo, hi] with each end open or closed.
struct Interval {
  double lo = 0, hi = 0;
  bool lo_closed = true, hi_closed = true;
  bool aboveLo(double p) const { return lo_closed ? p >= lo : p > lo; }
  bool belowHi(double p) const { return hi_closed ? p <= hi : p < hi; }
};

// Beyond this many loops a double no longer tells one loop from the next.
constexpr double kMaxCycle = 4503599627370496.0;  // 2^52

// The cycles k whose position e + k d lies in `iv`: [klo, khi], empty when klo > khi. The estimate from the
// quotients is settled against the positions as they are computed (e + k d tested against the interval), so
// membership never depends on how the division rounded.
void cycleRange(double e, double d, const Interval& iv, double& klo, double& khi) {
  klo = std::ceil((iv.lo - e) / d);
  khi = std::floor((iv.hi - e) / d);
  if (!(std::abs(klo) < kMaxCycle && std::abs(khi) < kMaxCycle))
    return;  // counted, never placed (crossEvents)
  for (int i = 0; i < 4 && iv.aboveLo(e + (klo - 1) * d); ++i) klo -= 1;
  for (int i = 0; i < 4 && !iv.aboveLo(e + klo * d); ++i) klo += 1;
  for (int i = 0; i < 4 && iv.belowHi(e + (khi + 1) * d); ++i) khi += 1;
  for (int i = 0; i < 4 && !iv.belowHi(e + khi * d); ++i) khi -= 1;
}

}  // namespace

uint64_t crossEvents(std::span<const ClipEvent> events, float duration, bool loop, double p0, double p1,
                     bool include_start, size_t max_crossings, std::vector<EventCrossing>& out) {
  if (events.empty() || !std::isfinite(p0) || !std::isfinite(p1)) return 0;
  if (p0 == p1 && !include_start) return 0;
  const bool forward = p1 >= p0;
  Interval iv;
  if (forward)
    iv = {p0, p1, include_start, true};
  else
    iv = {p1, p0, true, include_start};
  const size_t n = events.size();
  const double d = duration;
  const bool cycles = loop && d > 0;
  // Each event's cycle range (one cycle, k = 0, without looping).
  std::vector<double> klo(n), khi(n);
  double total = 0, kmin = std::numeric_limits<double>::infinity(), kmax = -kmin;
  bool placeable = true;
  for (size_t i = 0; i < n; ++i) {
    const double e = events[i].time;
    if (cycles) {
      cycleRange(e, d, iv, klo[i], khi[i]);
    } else {
      const bool in = iv.aboveLo(e) && iv.belowHi(e);
      klo[i] = 0, khi[i] = in ? 0 : -1;
    }
    if (klo[i] > khi[i]) continue;
    total += khi[i] - klo[i] + 1;
    kmin = std::min(kmin, klo[i]), kmax = std::max(kmax, khi[i]);
    placeable = placeable && std::abs(klo[i]) < kMaxCycle && std::abs(khi[i]) < kMaxCycle;
  }
  const uint64_t count =
      total >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(total);
  if (count == 0 || !placeable) return count;
  const size_t start = out.size();
  auto full = [&] { return out.size() - start >= max_crossings; };
  auto visit = [&](double k, size_t i) {
    if (!full() && klo[i] <= k && k <= khi[i])
      out.push_back({i, static_cast<double>(events[i].time) + k * d});
  };
  if (forward) {
    for (double k = kmin; k <= kmax && !full(); k += 1)
      for (size_t i = 0; i < n; ++i) visit(k, i);
  } else {
    // Decreasing positions; events of one time keep their order.
    for (double k = kmax; k >= kmin && !full(); k -= 1)
      for (size_t end = n; end > 0;) {
        size_t begin = end - 1;
        while (begin > 0 && events[begin - 1].time == events[end - 1].time) --begin;
        for (size_t i = begin; i < end; ++i) visit(k, i);
        end = begin;
      }
  }
  return count;
}

}  // namespace sf::anim
