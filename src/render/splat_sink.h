// The frame's splat slots as a type: one frame-wide array in which every object owns a fixed, contiguous
// range for as long as it stays in the frame. A range never moves while allocated; freed ranges are reused
// first-fit (neighbouring free ranges merge) and the array grows only at its end. The Vulkan renderer keeps
// two sinks (slots, and SH floats, whose stride differs per object); everything that writes an object's
// splats (uploads, overrides, the deform pass, GPU sources, later effects) writes its range.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace sf {

class SplatSink {
 public:
  struct Range {
    uint64_t first = 0, count = 0;
    uint64_t end() const { return first + count; }
    bool operator==(const Range&) const = default;
  };

  // `limit`: the most slots the array may hold (allocate throws sf::Error beyond it).
  explicit SplatSink(uint64_t limit = UINT64_MAX) : limit_(limit) {}

  // A range of `count` slots (count 0: an empty range at 0, never freed). Lowest-addressed free range that
  // fits, else at the end of the array.
  Range allocate(uint64_t count);
  // Returns a range to the free list. Throws sf::Error for a range that is not allocated as given.
  void free(Range r);
  // Frees everything (the array size drops to 0).
  void clear();

  uint64_t size() const { return size_; }  // one past the highest allocated slot
  uint64_t live() const { return live_; }  // slots in allocated ranges
  // Free ranges below size(), in address order (slots a frame must leave out).
  std::span<const Range> freeRanges() const { return free_; }

 private:
  uint64_t limit_, size_ = 0, live_ = 0;
  std::vector<Range> free_;       // sorted, disjoint, never adjacent
  std::vector<Range> allocated_;  // sorted by first
};

}  // namespace sf
