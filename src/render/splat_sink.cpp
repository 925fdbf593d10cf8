#include "render/splat_sink.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace sf {

namespace {
bool byFirst(const SplatSink::Range& a, const SplatSink::Range& b) {
  return a.first < b.first;
}
}  // namespace

SplatSink::Range SplatSink::allocate(uint64_t count) {
  if (count == 0) return {};
  Range r;
  auto fit = std::find_if(free_.begin(), free_.end(), [&](const Range& f) { return f.count >= count; });
  if (fit != free_.end()) {
    r = {fit->first, count};
    fit->first += count, fit->count -= count;
    if (fit->count == 0) free_.erase(fit);
  } else {
    // Grow at the end (free() never leaves a free range touching the end).
    if (count > limit_ || size_ > limit_ - count)
      throw Error("splat sink: " + std::to_string(count) + " more slots would exceed the limit of " +
                  std::to_string(limit_) + " (" + std::to_string(live_) + " in use)");
    r = {size_, count};
    size_ += count;
  }
  allocated_.insert(std::upper_bound(allocated_.begin(), allocated_.end(), r, byFirst), r);
  live_ += count;
  return r;
}

void SplatSink::free(Range r) {
  if (r.count == 0) return;
  auto it = std::lower_bound(allocated_.begin(), allocated_.end(), r, byFirst);
  if (it == allocated_.end() || !(*it == r))
    throw Error("splat sink: slots [" + std::to_string(r.first) + ", " + std::to_string(r.end()) +
                ") are not an allocated range");
  allocated_.erase(it);
  live_ -= r.count;
  auto next = std::upper_bound(free_.begin(), free_.end(), r, byFirst);
  // Merge with the free neighbours.
  if (next != free_.end() && next->first == r.end()) {
    r.count += next->count;
    next = free_.erase(next);
  }
  if (next != free_.begin() && std::prev(next)->end() == r.first) {
    std::prev(next)->count += r.count;
  } else {
    free_.insert(next, r);
  }
  // Nothing allocated above the last free range: the array shrinks to the last allocation.
  if (allocated_.empty()) {
    clear();
  } else if (!free_.empty() && free_.back().end() == size_) {
    size_ = free_.back().first;
    free_.pop_back();
  }
}

void SplatSink::clear() {
  size_ = live_ = 0;
  free_.clear();
  allocated_.clear();
}

}  // namespace sf
