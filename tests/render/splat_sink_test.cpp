// SplatSink: ranges never move, freed ranges are reused first-fit and merge with free neighbours, the array
// shrinks when its top is freed, and misuse is refused. Checked against a slot-by-slot model of the array.
#include "render/splat_sink.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/error.h"

namespace sf {
namespace {

using Range = SplatSink::Range;

TEST(SplatSink, AllocatesAtTheEndAndReusesFreedRangesFirstFit) {
  SplatSink sink;
  const Range a = sink.allocate(10), b = sink.allocate(5), c = sink.allocate(7);
  EXPECT_EQ(a, (Range{0, 10}));
  EXPECT_EQ(b, (Range{10, 5}));
  EXPECT_EQ(c, (Range{15, 7}));
  EXPECT_EQ(sink.size(), 22u);
  sink.free(b);
  ASSERT_EQ(sink.freeRanges().size(), 1u);
  EXPECT_EQ(sink.freeRanges()[0], (Range{10, 5}));
  EXPECT_EQ(sink.allocate(8), (Range{22, 8})) << "too large for the hole: at the end";
  EXPECT_EQ(sink.allocate(3), (Range{10, 3})) << "first fit";
  EXPECT_EQ(sink.freeRanges()[0], (Range{13, 2}));
  EXPECT_EQ(sink.live(), 28u);
  EXPECT_EQ(sink.allocate(0), (Range{0, 0}));
}

TEST(SplatSink, FreedNeighboursMergeAndTheTopShrinks) {
  SplatSink sink;
  const Range a = sink.allocate(4), b = sink.allocate(4), c = sink.allocate(4), d = sink.allocate(4);
  sink.free(a);
  sink.free(c);
  EXPECT_EQ(sink.freeRanges().size(), 2u);
  sink.free(b);  // joins both neighbours
  ASSERT_EQ(sink.freeRanges().size(), 1u);
  EXPECT_EQ(sink.freeRanges()[0], (Range{0, 12}));
  EXPECT_EQ(sink.allocate(12), (Range{0, 12}));
  sink.free(d);  // the top: the array shrinks
  EXPECT_EQ(sink.size(), 12u);
  EXPECT_TRUE(sink.freeRanges().empty());
}

TEST(SplatSink, RefusesRangesItDidNotHandOutAndTheLimit) {
  SplatSink sink(100);
  const Range a = sink.allocate(60);
  EXPECT_THROW(sink.free({1, 59}), Error);
  EXPECT_THROW(sink.free({0, 61}), Error);
  sink.free(a);
  EXPECT_THROW(sink.free(a), Error) << "double free";
  sink.allocate(60);
  try {
    sink.allocate(41);
    FAIL() << "beyond the limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 100"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sink.allocate(40), (Range{60, 40}));
}

// Random allocations and frees against a slot-by-slot model: no two live ranges overlap, a live range keeps
// its place, every slot below size() is live or in a free range, free ranges are disjoint and never adjacent.
TEST(SplatSink, RandomTraceKeepsRangesDisjointAndInPlace) {
  std::mt19937 rng(7);
  SplatSink sink;
  std::vector<Range> live;
  for (int step = 0; step < 4000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      live.push_back(sink.allocate(1 + rng() % 50));
    } else {
      const size_t k = rng() % live.size();
      sink.free(live[k]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
    std::vector<int> owner(sink.size(), -1);
    uint64_t total = 0;
    for (size_t i = 0; i < live.size(); ++i) {
      ASSERT_LE(live[i].end(), sink.size());
      for (uint64_t s = live[i].first; s < live[i].end(); ++s) {
        ASSERT_EQ(owner[s], -1) << "overlap at slot " << s;
        owner[s] = static_cast<int>(i);
      }
      total += live[i].count;
    }
    ASSERT_EQ(sink.live(), total);
    const auto free = sink.freeRanges();
    for (size_t f = 0; f < free.size(); ++f) {
      if (f) {
        ASSERT_GT(free[f].first, free[f - 1].end()) << "free ranges adjacent or out of order";
      }
      for (uint64_t s = free[f].first; s < free[f].end(); ++s) {
        ASSERT_EQ(owner[s], -1);
        owner[s] = -2;
      }
    }
    for (int o : owner) ASSERT_NE(o, -1) << "a slot neither live nor free";
  }
}

}  // namespace
}  // namespace sf
