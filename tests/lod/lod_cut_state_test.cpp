// The frame's cut kept from frame to frame (lod/cut_state.h, lod/stream.h selectFrameCuts): every frame of
// fly-throughs that refine, coarsen, turn and jump, with chunks arriving between frames, the incremental cut
// is the cut selectCuts makes from the root for the same camera and chunks in memory (the greedy of
// lod/cut.h, run afresh); with fades, no frame draws more than the budget, rows fading out included, and
// once the fades settle the frame draws exactly the from-scratch cut of the fully loaded hierarchy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lod/build.h"
#include "lod/cut.h"
#include "lod/cut_state.h"
#include "lod/stream.h"
#include "support/test_support.h"

namespace sf {
namespace {

// biker in chunks of 4096 leaves, once per test process.
const std::string& bikerHierarchy() {
  static const std::string dir = [] {
    const std::string d = test::tempDir("LodCutState-" + std::to_string(::getpid())) + "/biker.lod";
    lod::BuildOptions o;
    o.chunk_leaves = 4096;
    lod::buildHierarchy(test::assetPath("splats/biker.ply"), d, o);
    return d;
  }();
  return dir;
}

// Frame f of `frames`: closing in on the capture from far away while turning half a circle about it, then
// back out; every 17th frame jumps to the other side (a cut far from the last one).
Camera flyCamera(int f, int frames) {
  const float s = static_cast<float>(f) / static_cast<float>(frames - 1);
  const float k = s < 0.5f ? 1.0f - 1.7f * s : 0.15f + 1.7f * (s - 0.5f);
  float turn = 3.14159265f * s;
  if (f % 17 == 16) turn += 3.14159265f;
  const Vec3 centre{-0.1f, -1.55f, 0.0f};
  const Vec3 eye = centre + Vec3{std::sin(turn), -0.3f, -std::cos(turn)} * (6.0f * k);
  return lookAtCamera(eye, centre, {0, -1, 0}, 45, 160, 120);
}

// The nodes of a cut, sorted.
std::vector<uint64_t> keysOf(const std::vector<lod::NodeRef>& nodes) {
  std::vector<uint64_t> k;
  for (lod::NodeRef r : nodes) k.push_back((uint64_t{r.chunk} << 32) | r.index);
  std::sort(k.begin(), k.end());
  return k;
}
std::vector<uint64_t> keysOf(const lod::CutState& s) {
  std::vector<lod::NodeRef> nodes;
  for (const lod::CutEntry& e : s.cut) nodes.push_back(e.ref);
  return keysOf(nodes);
}

TEST(LodCutState, EveryFrameEqualsTheCutFromTheRoot) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  for (uint64_t budget : {600u, 5000u, 40000u, 100000u}) {
    SCOPED_TRACE(budget);
    lod::LodStream stream(bikerHierarchy());
    lod::LodStream* streams[1] = {&stream};
    const int frames = 70;
    int changed = 0;
    size_t largest = 0;
    std::vector<uint64_t> last;
    for (int f = 0; f < frames; ++f) {
      SCOPED_TRACE(f);
      const Camera cam = flyCamera(f, frames);
      lod::selectFrameCuts(streams, {&cam, 1}, budget, false, false);
      // The greedy from the root over the same chunks in memory, the same camera and budget.
      const lod::CutTarget target{&stream.hierarchy(), cam, &stream.resident()};
      const std::vector<lod::CutResult> fresh = lod::selectCuts({&target, 1}, lod::CutOptions{budget, 0, 16});
      const std::vector<uint64_t> now = keysOf(stream.cutState());
      ASSERT_EQ(now, keysOf(fresh[0].nodes)) << "the kept cut differs from the cut from the root";
      ASSERT_EQ(stream.cloud().size(), fresh[0].nodes.size());
      // The drawn cloud is that cut's, in its order.
      const GaussianCloud expected = lod::cutCloud(stream.hierarchy(), fresh[0]);
      ASSERT_EQ(std::memcmp(stream.cloud().positions.data(), expected.positions.data(),
                            expected.size() * sizeof(Vec3)),
                0);
      changed += now != last;
      largest = std::max(largest, now.size());
      last = now;
      if (f % 3 == 1) stream.waitIdle();  // chunks arrive between frames
    }
    EXPECT_GT(changed, frames / 2) << "the cut hardly changed: the fly-through tests less than it should";
    // (the largest budget's cut is written in more than one parallel stretch of 65,536 entries)
    if (budget == 100000u) {
      EXPECT_GT(largest, 65536u);
    }
    std::printf("[ budget %llu: %d of %d frames changed the cut, %llu corrected to the greedy order ]\n",
                static_cast<unsigned long long>(budget), changed, frames,
                static_cast<unsigned long long>(stream.cutState().fallbacks));
  }
}

TEST(LodCutState, TheBudgetHoldsThroughFadesAndTheSettledFrameIsTheCutFromTheRoot) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  const lod::Hierarchy full = lod::loadHierarchy(bikerHierarchy());
  for (uint64_t budget : {3000u, 20000u}) {
    SCOPED_TRACE(budget);
    lod::LodStream stream(bikerHierarchy());
    lod::LodStream* streams[1] = {&stream};
    const int frames = 80;
    uint64_t most = 0, fading_rows = 0, morph_rows = 0;
    for (int f = 0; f < frames; ++f) {
      const Camera cam = flyCamera(f, frames);
      lod::selectFrameCuts(streams, {&cam, 1}, budget, false, true);
      const size_t drawn = stream.cloud().size();
      ASSERT_LE(drawn, budget) << "frame " << f << " draws past the budget";
      // The draw's scratch marks are all cleared again (a mark left set would change later fades).
      const std::vector<uint8_t>& flags = stream.cutState().flags;
      ASSERT_EQ(
          std::count_if(flags.begin(), flags.end(), [](uint8_t x) { return (x & lod::kCutScratch) != 0; }), 0)
          << "frame " << f;
      ASSERT_EQ(stream.rows().size(), drawn);
      const size_t cut = stream.cutState().cut.size();
      fading_rows += drawn - cut;  // rows fading into a coarser node, after the cut's
      morph_rows += stream.shMixes().size();
      most = std::max<uint64_t>(most, drawn);
      if (f % 4 == 1) stream.waitIdle();
    }
    EXPECT_GT(fading_rows, 0u) << "nothing faded out: the test lost its premise";
    EXPECT_GT(morph_rows, 0u) << "nothing faded in: the test lost its premise";
    std::printf("[ budget %llu: at most %llu drawn, %llu rows fading out over %d frames ]\n",
                static_cast<unsigned long long>(budget), static_cast<unsigned long long>(most),
                static_cast<unsigned long long>(fading_rows), frames);
    // Held still, every chunk in: once the fades settle, the frame is the cut from the root of the loaded
    // hierarchy, row for row.
    const Camera still = flyCamera(frames / 2, frames);
    // (refinements go on while the rows fading out give their room back, each fading in over kFadeFrames)
    int held = 0;
    for (; held < 8 * lod::kFadeFrames; ++held) {
      lod::selectFrameCuts(streams, {&still, 1}, budget, true, true);
      ASSERT_LE(stream.cloud().size(), budget);
      if (stream.shMixes().empty() && stream.cloud().size() == stream.cutState().cut.size()) break;
    }
    EXPECT_LT(held, 8 * lod::kFadeFrames) << "the fades never settled";
    std::printf("[ settled after %d frames held still ]\n", held + 1);
    const lod::CutResult reference = lod::selectCut(full, still, lod::CutOptions{budget, 0, 16});
    EXPECT_EQ(keysOf(stream.cutState()), keysOf(reference.nodes));
    const GaussianCloud expected = lod::cutCloud(full, reference);
    ASSERT_EQ(stream.cloud().size(), expected.size());
    EXPECT_EQ(std::memcmp(stream.cloud().positions.data(), expected.positions.data(),
                          expected.size() * sizeof(Vec3)),
              0);
    EXPECT_EQ(stream.cloud().opacities, expected.opacities);
    EXPECT_EQ(stream.cloud().sh, expected.sh);
    EXPECT_TRUE(stream.shMixes().empty());
  }
}

// Two objects share one budget: the kept cuts equal the joint cut from the roots every frame, and with
// fades the two together never draw more than the budget.
TEST(LodCutState, TwoObjectsShareTheBudgetFrameByFrame) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  const uint64_t budget = 8000;
  lod::LodStream a(bikerHierarchy()), b(bikerHierarchy()), fa(bikerHierarchy()), fb(bikerHierarchy());
  lod::LodStream* plain[2] = {&a, &b};
  lod::LodStream* faded[2] = {&fa, &fb};
  Mat4 shift;
  shift.m[0][3] = 1.2f;  // the second object 1.2 units along x, seen from its own frame
  const int frames = 50;
  for (int f = 0; f < frames; ++f) {
    SCOPED_TRACE(f);
    const Camera cam = flyCamera(f, frames);
    Camera other = cam;
    other.world_to_camera = cam.world_to_camera * shift;
    const Camera cams[2] = {cam, other};
    lod::selectFrameCuts(plain, cams, budget, false, false);
    lod::selectFrameCuts(faded, cams, budget, false, true);
    const lod::CutTarget targets[2] = {{&a.hierarchy(), cam, &a.resident()},
                                       {&b.hierarchy(), other, &b.resident()}};
    const std::vector<lod::CutResult> fresh = lod::selectCuts(targets, lod::CutOptions{budget, 0, 16});
    ASSERT_EQ(keysOf(a.cutState()), keysOf(fresh[0].nodes));
    ASSERT_EQ(keysOf(b.cutState()), keysOf(fresh[1].nodes));
    ASSERT_LE(fa.cloud().size() + fb.cloud().size(), budget);
    if (f % 3 == 1) a.waitIdle(), b.waitIdle(), fa.waitIdle(), fb.waitIdle();
  }
}

}  // namespace
}  // namespace sf
