// Animation events (anim/clip_events.h) against a brute-force oracle: the positions e + k D of every event
// inside the interval a move covers, listed and ordered by hand. Steps of every size, several loops in one
// step, backwards playback across the wrap, clips that do not loop, the first frame's closed start, the cap.
#include "anim/clip_events.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sf::anim {
namespace {

const std::vector<ClipEvent> kEvents = {{"a", 0.25f}, {"b", 0.5f}, {"c", 0.75f}};

struct Hit {
  size_t event;
  double position;
  bool operator==(const Hit&) const = default;
};

std::vector<Hit> cross(const std::vector<ClipEvent>& events, float d, bool loop, double p0, double p1,
                       bool start = false, size_t max = 100000, uint64_t* total = nullptr) {
  std::vector<EventCrossing> out;
  const uint64_t n = crossEvents(events, d, loop, p0, p1, start, max, out);
  if (total) *total = n;
  std::vector<Hit> hits;
  for (const EventCrossing& c : out) hits.push_back({c.event, c.position});
  return hits;
}

// The oracle: every k in a generous range, kept when e + k d lies in the move's interval; sorted along the
// move.
std::vector<Hit> oracle(const std::vector<ClipEvent>& events, float d, bool loop, double p0, double p1,
                        bool start = false) {
  std::vector<Hit> hits;
  const bool forward = p1 >= p0;
  for (int k = loop ? -50 : 0; k <= (loop ? 50 : 0); ++k)
    for (size_t i = 0; i < events.size(); ++i) {
      const double p = events[i].time + k * static_cast<double>(d);
      const bool in =
          forward ? ((start ? p >= p0 : p > p0) && p <= p1) : (p >= p1 && (start ? p <= p0 : p < p0));
      if (in && (p0 != p1 || start)) hits.push_back({i, p});
    }
  std::stable_sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
    return forward ? a.position < b.position : a.position > b.position;
  });
  return hits;
}

// Moves p0 -> p1 in steps of h (the last one shortened), the first step with its start included.
std::vector<Hit> stepped(const std::vector<ClipEvent>& events, float d, bool loop, double p0, double p1,
                         double h) {
  std::vector<Hit> all = cross(events, d, loop, p0, p0, true);
  const double dir = p1 >= p0 ? 1 : -1;
  for (double p = p0; dir * (p1 - p) > 0;) {
    const double next = dir * (p1 - (p + dir * h)) > 0 ? p + dir * h : p1;
    const std::vector<Hit> step = cross(events, d, loop, p, next);
    all.insert(all.end(), step.begin(), step.end());
    p = next;
  }
  return all;
}

std::vector<size_t> order(const std::vector<Hit>& hits) {
  std::vector<size_t> out;
  for (const Hit& h : hits) out.push_back(h.event);
  return out;
}

TEST(ClipEvents, OneLongStepCrossesEveryLoop) {
  // Three loops of a 1 s clip in one step: a b c a b c a b c, at k + 0.25, k + 0.5, k + 0.75.
  const std::vector<Hit> hits = cross(kEvents, 1, true, 0, 3);
  ASSERT_EQ(hits.size(), 9u);
  for (size_t k = 0; k < 3; ++k)
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(hits[k * 3 + i], (Hit{i, static_cast<double>(k) + 0.25 * static_cast<double>(i + 1)}));
  EXPECT_EQ(hits, oracle(kEvents, 1, true, 0, 3));
}

TEST(ClipEvents, EveryStepSizeFiresEachCrossingOnce) {
  // Steps smaller and larger than the clip, steps landing exactly on events (0.25) and on the wrap (1), and
  // awkward ones (0.1, 0.7): the same sequence as the one long move, the oracle's.
  for (double from : {0.0, 0.1, -1.3, 0.25}) {
    const double to = from + 3.6;
    const std::vector<Hit> expected = oracle(kEvents, 1, true, from, to, true);
    for (double h : {1.0 / 60, 0.1, 0.25, 0.7, 1.0, 2.5, 10.0}) {
      const std::vector<Hit> got = stepped(kEvents, 1, true, from, to, h);
      EXPECT_EQ(order(got), order(expected)) << "from " << from << ", step " << h;
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i].position, expected[i].position, 1e-9);
    }
  }
}

TEST(ClipEvents, BackwardsAcrossTheWrap) {
  // Playing backwards from 0.3 to -0.8: a (0.25), then the previous loop's c, b, a (-0.25, -0.5, -0.75).
  const std::vector<Hit> hits = cross(kEvents, 1, true, 0.3, -0.8);
  EXPECT_EQ(hits, (std::vector<Hit>{{0, 0.25}, {2, -0.25}, {1, -0.5}, {0, -0.75}}));
  EXPECT_EQ(hits, oracle(kEvents, 1, true, 0.3, -0.8));
  // Backwards in steps: each crossing once, the position reached in, the one left out.
  for (double h : {0.05, 0.25, 0.4, 3.0})
    EXPECT_EQ(order(stepped(kEvents, 1, true, 2.0, -1.0, h)),
              order(oracle(kEvents, 1, true, 2.0, -1.0, true)))
        << h;
  // Landing exactly on an event fires it in the step that reaches it, not in the one that leaves it.
  EXPECT_EQ(order(cross(kEvents, 1, true, 0.6, 0.5)), (std::vector<size_t>{1}));
  EXPECT_TRUE(cross(kEvents, 1, true, 0.5, 0.4).empty());
}

TEST(ClipEvents, AClipThatDoesNotLoopFiresEachEventOnce) {
  EXPECT_EQ(order(cross(kEvents, 1, false, -2, 7)), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(order(cross(kEvents, 1, false, 7, -2)), (std::vector<size_t>{2, 1, 0}));
  EXPECT_TRUE(cross(kEvents, 1, false, 1, 9).empty());  // held at the end: nothing more
  EXPECT_EQ(order(stepped(kEvents, 1, false, -0.5, 4, 0.3)), (std::vector<size_t>{0, 1, 2}));
}

TEST(ClipEvents, TheStartIsInOnlyWhenAsked) {
  // The first frame of a clock is the move p0 -> p0 with its start: it fires what lies exactly there.
  EXPECT_EQ(cross(kEvents, 1, true, 2.5, 2.5, true), (std::vector<Hit>{{1, 2.5}}));
  EXPECT_TRUE(cross(kEvents, 1, true, 2.5, 2.5, false).empty());
  EXPECT_EQ(order(cross(kEvents, 1, true, 0.25, 0.5, true)), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(order(cross(kEvents, 1, true, 0.25, 0.5, false)), (std::vector<size_t>{1}));
  // Events at 0 and at the duration sit on every wrap: both fire there, the earlier loop's end first.
  const std::vector<ClipEvent> ends = {{"start", 0}, {"end", 1}};
  EXPECT_EQ(cross(ends, 1, true, 0.5, 2), (std::vector<Hit>{{1, 1}, {0, 1}, {1, 2}, {0, 2}}));
  EXPECT_EQ(order(cross(ends, 1, true, 0.5, 2)), order(oracle(ends, 1, true, 0.5, 2)));
  // Events of one time keep their declared order, forwards and backwards.
  const std::vector<ClipEvent> twins = {{"x", 0.5f}, {"y", 0.5f}};
  EXPECT_EQ(order(cross(twins, 1, true, 0, 1.9)), (std::vector<size_t>{0, 1, 0, 1}));
  EXPECT_EQ(order(cross(twins, 1, true, 1.9, 0)), (std::vector<size_t>{0, 1, 0, 1}));
}

TEST(ClipEvents, ManyCrossingsAreCountedAndCapped) {
  uint64_t total = 0;
  const std::vector<Hit> hits = cross(kEvents, 1, true, 0, 1000, false, 5, &total);
  EXPECT_EQ(total, 3000u);
  EXPECT_EQ(hits, (std::vector<Hit>{{0, 0.25}, {1, 0.5}, {2, 0.75}, {0, 1.25}, {1, 1.5}}));
  // Beyond the precision of a double's loop count the crossings are counted, not placed.
  std::vector<EventCrossing> out;
  EXPECT_GT(crossEvents(kEvents, 1, true, 0, 1e300, false, 10, out), 1000000000u);
  EXPECT_TRUE(out.empty());
  // A zero-length clip holds its events at 0 only, as a clip that does not loop.
  EXPECT_EQ(order(cross({{"z", 0}}, 0, true, -1, 5)), (std::vector<size_t>{0}));
}

TEST(ClipEvents, ClipValidationNamesEventsOutsideTheClip) {
  Skeleton skeleton;
  Clip clip;
  clip.duration = 1;
  clip.events = {{"a", 0.5f}, {"late", 1.5f}};
  EXPECT_NE(clip.validate(skeleton).find("event 1 'late': time 1.500000 is outside the clip [0, 1.000000]"),
            std::string::npos)
      << clip.validate(skeleton);
  clip.events = {{"b", 0.5f}, {"a", 0.25f}};
  EXPECT_NE(clip.validate(skeleton).find("not in time order"), std::string::npos);
  clip.events = {{"a", 0.25f}, {"b", 1}};
  EXPECT_EQ(clip.validate(skeleton), "");
}

}  // namespace
}  // namespace sf::anim
