// Level-of-detail objects in the frame (lod/stream.h, scene/scene.cpp): a hierarchy streamed into a pool
// smaller than itself (sized to hold what one camera needs, not two) settles, for cameras that see part of
// it, to the image of the fully loaded hierarchy and of the capture itself; frames that do not wait draw
// parents first and converge to the same image; one budget is shared by every LOD object of a frame; a
// corrupt chunk is reported and its parent drawn; scene JSON and the command line (--lod-budget) reach it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/image.h"
#include "io/file.h"
#include "io/formats.h"
#include "lod/build.h"
#include "lod/cut.h"
#include "lod/stream.h"
#include "render/cpu_renderer.h"
#include "scene/scene.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

// biker built into chunks of 4096 leaves (38 chunks, 174,570 nodes), once per test process (ctest runs the
// tests as processes side by side: each builds its own, in a folder of its own).
const std::string& bikerHierarchy() {
  static const std::string dir = [] {
    const std::string d = test::tempDir("LodStreamBiker-" + std::to_string(::getpid())) + "/biker.lod";
    lod::BuildOptions o;
    o.chunk_leaves = 4096;
    lod::buildHierarchy(test::assetPath("splats/biker.ply"), d, o);
    return d;
  }();
  return dir;
}

// Cameras close to the capture, each seeing a part of it (the head, the boots), and one seeing all of it.
Camera partCamera(int which) {
  // biker's leaves lie in about x -0.5..0.3, y -3.1..0 (y down: the head at -3), z -0.5..0.5.
  const Vec3 targets[3] = {{-0.1f, -2.85f, 0.0f}, {-0.1f, -0.25f, 0.0f}, {-0.1f, -1.55f, 0.0f}};
  const float distance[3] = {0.8f, 0.8f, 5.0f}, fov[3] = {25.0f, 25.0f, 45.0f};
  const Vec3 t = targets[which];
  return lookAtCamera(t + Vec3{0.0f, 0.0f, -distance[which]}, t, {0, -1, 0}, fov[which], 96, 128);
}

ImageRGBA renderCloud(const GaussianCloud& cloud, const Camera& cam) {
  const RenderObject objs[1] = {{&cloud, Mat4{}}};
  return renderCpu(objs, cam, {});
}

TEST(LodStream, ATinyPoolSettlesToTheFullyLoadedImageForWhatACameraSees) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  const std::string& dir = bikerHierarchy();
  const lod::Hierarchy full = lod::loadHierarchy(dir);
  const GaussianCloud capture = loadSplats(biker).cloud;
  lod::CutOptions cut_options;
  cut_options.budget = 200000;  // above the leaf count: the cut is every leaf in view
  // The chunks each part camera loads (every chunk whose root it sees, settled with room for all): the pool
  // holds either set, not both.
  uint64_t need[2] = {0, 0}, both = 0;
  std::vector<uint8_t> used(full.chunks.size(), 0);
  for (int which : {0, 1}) {
    lod::LodStream probe(dir);
    lod::LodStream* probes[1] = {&probe};
    const Camera cam = partCamera(which);
    lod::selectFrameCuts(probes, {&cam, 1}, cut_options.budget, true);
    for (size_t c = 0; c < full.chunks.size(); ++c) {
      if (!probe.resident()[c]) continue;
      need[which] += full.chunks[c].nodes.size();
      if (!used[c]) both += full.chunks[c].nodes.size(), used[c] = 1;
    }
  }
  lod::StreamOptions options;
  options.pool_nodes = full.top.nodes.size() + std::max(need[0], need[1]);
  std::printf("[ pool %llu nodes: the head loads %llu, the boots %llu, both %llu, of %llu in chunks ]\n",
              static_cast<unsigned long long>(options.pool_nodes), static_cast<unsigned long long>(need[0]),
              static_cast<unsigned long long>(need[1]), static_cast<unsigned long long>(both),
              static_cast<unsigned long long>(full.index.node_count - full.top.nodes.size()));
  ASSERT_LT(options.pool_nodes, full.top.nodes.size() + both)
      << "the two views fit the pool together: the test lost its premise";
  lod::LodStream stream(dir, options);
  lod::LodStream* streams[1] = {&stream};
  for (int which : {0, 1, 0}) {  // head, boots (the head's chunks evicted for them), the head again
    const Camera cam = partCamera(which);
    lod::selectFrameCuts(streams, {&cam, 1}, cut_options.budget, true);
    const lod::StreamStats s = stream.stats();
    EXPECT_LE(s.resident_nodes, options.pool_nodes);
    EXPECT_TRUE(s.error.empty()) << s.error;
    const GaussianCloud reference = lod::cutCloud(full, lod::selectCut(full, cam, cut_options));
    ASSERT_EQ(stream.cloud().size(), reference.size()) << "camera " << which;
    const ImageRGBA streamed = renderCloud(stream.cloud(), cam);
    EXPECT_EQ(streamed.pixels, renderCloud(reference, cam).pixels) << "camera " << which;
    // Every leaf in view: the capture's own image.
    const ImageDiff d = compareImages(streamed, renderCloud(capture, cam));
    std::printf(
        "[ camera %d: %zu gaussians drawn, %llu nodes resident of %llu, %.1f dB against the capture ]\n",
        which, stream.cloud().size(), static_cast<unsigned long long>(s.resident_nodes),
        static_cast<unsigned long long>(options.pool_nodes), d.psnr);
    EXPECT_GE(d.psnr, 60.0) << "camera " << which;
  }
  EXPECT_GT(stream.stats().evictions, 0u) << "the pool was never full: the test lost its premise";
  // The whole capture does not fit the pool: the settled cut draws parents where it must, within the pool.
  const Camera all = partCamera(2);
  lod::selectFrameCuts(streams, {&all, 1}, cut_options.budget, true);
  EXPECT_LE(stream.stats().resident_nodes, options.pool_nodes);
  EXPECT_LT(stream.cloud().size(), capture.size());
  const double whole_db = compareImages(renderCloud(stream.cloud(), all), renderCloud(capture, all)).psnr;
  std::printf("[ the whole capture through the half-size pool: %zu gaussians, %.1f dB ]\n",
              stream.cloud().size(), whole_db);
  EXPECT_GE(whole_db, 20.0);
}

TEST(LodStream, FramesThatDoNotWaitDrawParentsFirstAndConverge) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  lod::LodStream stream(bikerHierarchy());
  lod::LodStream* streams[1] = {&stream};
  const Camera cam = partCamera(2);
  const auto t0 = std::chrono::steady_clock::now();
  lod::selectFrameCuts(streams, {&cam, 1}, 50000, false);
  const double first_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const size_t first = stream.cloud().size();
  EXPECT_LT(first, 1000u) << "the first frame drew more than the top levels: it waited for chunks";
  EXPECT_GT(first, 0u);
  int frames = 1;
  while (stream.stats().pending > 0 && frames < 2000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    lod::selectFrameCuts(streams, {&cam, 1}, 50000, false);
    ++frames;
  }
  lod::selectFrameCuts(streams, {&cam, 1}, 50000, false);
  std::printf("[ first frame %.2f ms with %zu gaussians; settled after %d frames with %zu ]\n", first_ms,
              first, frames, stream.cloud().size());
  lod::LodStream settled(bikerHierarchy());
  lod::LodStream* other[1] = {&settled};
  lod::selectFrameCuts(other, {&cam, 1}, 50000, true);
  ASSERT_EQ(stream.cloud().size(), settled.cloud().size());
  EXPECT_EQ(std::memcmp(stream.cloud().positions.data(), settled.cloud().positions.data(),
                        stream.cloud().size() * sizeof(Vec3)),
            0);
  EXPECT_LE(stream.cloud().size(), 50000u);
}

// A view that wants more than the pool holds (the whole capture, every leaf, through a pool of a third of the
// hierarchy), in frames that do not wait: the pool fills with the chunks worth most and then holds them. A
// chunk asked for evicts only chunks worth less than the node waiting for it (the error of the node each
// hangs under, for this camera), so once full the pool neither reads nor evicts while the camera holds
// still (before, each frame's requests evicted the chunks the last frame drew, which the next frame asked
// for again: a city-sized hierarchy read its chunks over and over).
TEST(LodStream, APoolSmallerThanTheViewFillsOnceAndHolds) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  lod::StreamOptions options;
  options.pool_nodes = 60000;
  lod::LodStream stream(bikerHierarchy(), options);
  lod::LodStream* streams[1] = {&stream};
  const Camera cam = partCamera(2);
  lod::StreamStats at40;
  for (int f = 0; f < 60; ++f) {
    lod::selectFrameCuts(streams, {&cam, 1}, 200000, false, true);
    if (f < 20) stream.waitIdle();  // (the loader given time to fill the pool)
    if (f == 39) at40 = stream.stats();
  }
  const lod::StreamStats end = stream.stats();
  std::printf(
      "[ pool of %llu nodes: %llu resident, %llu chunks read and %llu evicted by frame 40; %llu and %llu "
      "by frame 60 ]\n",
      static_cast<unsigned long long>(options.pool_nodes),
      static_cast<unsigned long long>(end.resident_nodes), static_cast<unsigned long long>(at40.chunks_read),
      static_cast<unsigned long long>(at40.evictions), static_cast<unsigned long long>(end.chunks_read),
      static_cast<unsigned long long>(end.evictions));
  EXPECT_GT(end.resident_nodes, options.pool_nodes / 2) << "the pool did not fill";
  EXPECT_EQ(end.evictions, at40.evictions) << "the pool churns while the camera holds still";
  EXPECT_LE(end.chunks_read, at40.chunks_read + 1) << "chunks read again and again";
  EXPECT_LE(stream.cloud().size(), 200000u);
  // Then close in on the head: what the whole view held gives way (evictions while the last frame's rows
  // still name its nodes, and rows of it fading out), every other frame's host cloud read whole (the others
  // left unfilled, as a frame drawn through the GPU pool leaves them, when the next frame evicts).
  const Camera head = partCamera(0);
  for (int f = 0; f < 30; ++f) {
    lod::selectFrameCuts(streams, {&head, 1}, 200000, false, true);
    if (f % 3 == 0) stream.waitIdle();
    if (f % 2 == 0) continue;
    const GaussianCloud& c = stream.cloud();
    ASSERT_LE(c.size(), 200000u);
    for (size_t i = 0; i < c.size(); i += 997) ASSERT_TRUE(std::isfinite(c.positions[i].x)) << "row " << i;
  }
  EXPECT_GT(stream.stats().evictions, end.evictions) << "the head's chunks took no room: nothing exercised";
}

TEST(LodStream, OneBudgetForEveryLodObjectOfAFrame) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  lod::LodStream near_one(bikerHierarchy()), far_one(bikerHierarchy());
  lod::LodStream* streams[2] = {&near_one, &far_one};
  const Camera cam = partCamera(2);
  Camera far_cam = cam;  // the second object 4 units further away, seen from its own frame
  Mat4 shift;
  shift.m[2][3] = 4.0f;
  far_cam.world_to_camera = cam.world_to_camera * shift;
  const Camera cams[2] = {cam, far_cam};
  lod::selectFrameCuts(streams, cams, 30000, true);
  const size_t n = near_one.cloud().size(), f = far_one.cloud().size();
  std::printf("[ 30,000 shared: near %zu, far %zu ]\n", n, f);
  EXPECT_LE(n + f, 30000u);
  EXPECT_GT(n + f, 29000u);
  EXPECT_GT(n, 2 * f) << "the nearer object should get the larger share";
}

TEST(LodStream, ACorruptChunkIsReportedAndItsParentDrawn) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  const std::string dir = test::tempDir("LodStreamCorrupt") + "/biker.lod";
  fs::copy(bikerHierarchy(), dir, fs::copy_options::recursive);
  const lod::Index index = lod::loadIndex(dir);
  const std::string victim = dir + "/" + index.chunks[5].file;  // a chunk the whole view draws from
  std::vector<uint8_t> bytes = readFile(victim);
  bytes[bytes.size() / 2] ^= 0x5a;
  writeFileAtomic(victim, bytes);
  lod::LodStream stream(dir);
  lod::LodStream* streams[1] = {&stream};
  const Camera cam = partCamera(2);
  lod::selectFrameCuts(streams, {&cam, 1}, 200000, true);
  const lod::StreamStats s = stream.stats();
  EXPECT_NE(s.error.find(index.chunks[5].file), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("checksum mismatch"), std::string::npos) << s.error;
  EXPECT_EQ(stream.resident()[5], 0);
  EXPECT_GT(stream.cloud().size(), 100000u);  // the rest drawn in full
}

TEST(LodStream, SceneJsonAndTheCommandLineDrawIt) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  const std::string dir = test::tempDir("LodStreamScene");
  fs::copy(bikerHierarchy(), dir + "/biker.lod", fs::copy_options::recursive);
  {
    std::ofstream f(dir + "/scene.json");
    f << R"({"objects": [{"lod": "biker.lod"}, {"lod": "biker.lod", "transform": {"translation": [1.5, 0, 0]}}], "lod_budget": 40000})";
  }
  std::ofstream(dir + "/cam.json")
      << R"({"eye": [0.7, 0, -4], "target": [0.7, 0, 0], "up": [0, -1, 0], "fov_y_deg": 50, "width": 160, "height": 120})";
  // The frame's gaussians, from the "visible V of N gaussians" line.
  auto drawn = [](const std::string& out) {
    const size_t at = out.find("visible ");
    const size_t of = out.find(" of ", at);
    return at == std::string::npos || of == std::string::npos ? -1L : std::stol(out.substr(of + 4));
  };
  test::CliRun r = test::cli("render " + dir + "/scene.json -o " + dir + "/scene.png --camera " + dir +
                             "/cam.json --backend cpu");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_LE(drawn(r.out), 40000) << r.out;  // the two objects share the scene's budget
  EXPECT_GE(drawn(r.out), 38000) << r.out;
  r = test::cli("render " + dir + "/scene.json -o " + dir + "/small.png --camera " + dir +
                "/cam.json --backend cpu --lod-budget 5000");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_LE(drawn(r.out), 5000) << r.out;
  EXPECT_GE(drawn(r.out), 4500) << r.out;
  // The directory itself is an input; not a hierarchy under "lod" is refused with the reason.
  r = test::cli("render " + dir + "/biker.lod -o " + dir + "/dir.png --backend cpu --lod-budget 1000");
  ASSERT_EQ(r.code, 0) << r.out;
  {
    std::ofstream f(dir + "/bad.json");
    f << R"({"objects": [{"lod": "scene.json"}]})";
  }
  r = test::cli("render " + dir + "/bad.json -o " + dir + "/bad.png --backend cpu");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("not a level-of-detail hierarchy"), std::string::npos) << r.out;
}

// A refinement morphs in: the first frame after it draws what the coarser cut drew (each parent's children
// stacked on it compose to the parent), kFadeFrames frames later the children are themselves, and the step
// between frames is smaller than without the fade. (A larger budget for the same camera only refines: the cut
// is the same greedy order taken further.)
TEST(LodStream, RefinementsMorphInWithoutAPop) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  lod::LodStream faded(bikerHierarchy()), plain(bikerHierarchy());
  lod::LodStream* f[1] = {&faded};
  lod::LodStream* p[1] = {&plain};
  const Camera cam = partCamera(2);
  lod::selectFrameCuts(f, {&cam, 1}, 3000, true, true);
  lod::selectFrameCuts(p, {&cam, 1}, 3000, true, false);
  const ImageRGBA before = renderCloud(faded.cloud(), cam);
  lod::selectFrameCuts(f, {&cam, 1}, 12000, true, true);
  lod::selectFrameCuts(p, {&cam, 1}, 12000, true, false);
  ASSERT_EQ(faded.cloud().size(), plain.cloud().size());
  const double morph_db = compareImages(renderCloud(faded.cloud(), cam), before).psnr;
  const double pop_db = compareImages(renderCloud(plain.cloud(), cam), before).psnr;
  std::printf(
      "[ the frame after refining 3,000 to 12,000 gaussians against the frame before: morphed %.1f dB, "
      "popped %.1f dB ]\n",
      morph_db, pop_db);
  EXPECT_GE(morph_db, 50.0);
  EXPECT_GT(morph_db, pop_db + 10.0);
  std::vector<double> steps;
  ImageRGBA last = renderCloud(faded.cloud(), cam);
  for (int i = 0; i < lod::kFadeFrames; ++i) {
    lod::selectFrameCuts(f, {&cam, 1}, 12000, true, true);
    const ImageRGBA now = renderCloud(faded.cloud(), cam);
    steps.push_back(compareImages(now, last).psnr);
    last = now;
  }
  for (double db : steps) EXPECT_GT(db, pop_db) << "a step of the fade is as large as the pop";
  EXPECT_EQ(last.pixels, renderCloud(plain.cloud(), cam).pixels) << "not itself after the fade";
}

// Zooming out morphs too: the nodes a coarser node replaced stay drawn as they were (the first frame after
// the coarsening draws what the finer cut drew) and fade into it over kFadeFrames frames, each step smaller
// than the pop without the fade; then the coarser cut alone is drawn, exactly as without the fade. (A smaller
// budget for the same camera only coarsens: the cut is a prefix of the same greedy order.) The frame's budget
// is a hard cap, fading rows included (selectFrameCuts), so a budget cut by four in one frame pops there:
// every coarsening adds a row while its nodes fade, and tests/lod/lod_cut_state_test.cpp holds that cap; the
// fade itself is drawn here through LodStream::draw, which draws the cut it is given with all its fading
// rows.
TEST(LodStream, CoarseningsMorphOutWithoutAPop) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  lod::LodStream faded(bikerHierarchy()), plain(bikerHierarchy());
  lod::LodStream* f[1] = {&faded};
  lod::LodStream* p[1] = {&plain};
  const Camera cam = partCamera(2);
  lod::selectFrameCuts(f, {&cam, 1}, 12000, true, true);
  lod::selectFrameCuts(p, {&cam, 1}, 12000, true, false);
  const ImageRGBA before = renderCloud(faded.cloud(), cam);
  ASSERT_EQ(before.pixels, renderCloud(plain.cloud(), cam).pixels);
  const lod::CutResult coarse_cut = lod::selectCut(lod::loadHierarchy(bikerHierarchy()), cam, {3000, 0, 16});
  faded.draw(coarse_cut, true);
  lod::selectFrameCuts(p, {&cam, 1}, 3000, true, false);
  ASSERT_EQ(plain.cloud().size(), coarse_cut.nodes.size());
  const size_t coarse = plain.cloud().size();
  EXPECT_GT(faded.cloud().size(), coarse) << "no node stayed to fade out";
  const double morph_db = compareImages(renderCloud(faded.cloud(), cam), before).psnr;
  const double pop_db = compareImages(renderCloud(plain.cloud(), cam), before).psnr;
  std::printf(
      "[ the frame after coarsening 12,000 to 3,000 gaussians (%zu drawn while fading) against the frame "
      "before: "
      "morphed %.1f dB, popped %.1f dB ]\n",
      faded.cloud().size(), morph_db, pop_db);
  EXPECT_GE(morph_db, 50.0);
  EXPECT_GT(morph_db, pop_db + 10.0);
  std::vector<double> steps;
  ImageRGBA last = renderCloud(faded.cloud(), cam);
  for (int i = 0; i < lod::kFadeFrames; ++i) {
    faded.draw(coarse_cut, true);
    const ImageRGBA now = renderCloud(faded.cloud(), cam);
    steps.push_back(compareImages(now, last).psnr);
    last = now;
  }
  for (double db : steps) EXPECT_GT(db, pop_db) << "a step of the fade is as large as the pop";
  EXPECT_EQ(faded.cloud().size(), coarse) << "nodes still fading after kFadeFrames frames";
  EXPECT_EQ(last.pixels, renderCloud(plain.cloud(), cam).pixels) << "not the coarser cut after the fade";
}

// A cut that jumps many levels at once pops instead of fading: every row of a fade starts (or ends) as the
// coarse node, so thousands of rows under one node would be thousands of copies of a gaussian as large as
// that node (a fly-through's first refinement under the top of the tree put 262,144 of them in one frame).
// Past lod::kMaxFadeFanOut rows per node, the faded stream draws exactly what the plain one draws, both ways.
TEST(LodStream, CutsThatJumpManyLevelsPopInsteadOfFading) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  lod::LodStream faded(bikerHierarchy()), plain(bikerHierarchy());
  lod::LodStream* f[1] = {&faded};
  lod::LodStream* p[1] = {&plain};
  const Camera cam = partCamera(2);
  lod::selectFrameCuts(f, {&cam, 1}, 8, true, true);
  lod::selectFrameCuts(p, {&cam, 1}, 8, true, false);
  ASSERT_LE(faded.cloud().size(), 8u);
  lod::selectFrameCuts(f, {&cam, 1}, 40000, true, true);
  lod::selectFrameCuts(p, {&cam, 1}, 40000, true, false);
  ASSERT_GT(plain.cloud().size(), 8 * size_t{256}) << "the jump should refine past the fan-out cap";
  static_assert(lod::kMaxFadeFanOut <= 256);
  ASSERT_EQ(faded.cloud().size(), plain.cloud().size());
  EXPECT_EQ(renderCloud(faded.cloud(), cam).pixels, renderCloud(plain.cloud(), cam).pixels);
  EXPECT_EQ(faded.cloud().opacities, plain.cloud().opacities) << "rows faded in from a node far up";
  const lod::CutResult top = lod::selectCut(lod::loadHierarchy(bikerHierarchy()), cam, {8, 0, 16});
  faded.draw(top, true);
  EXPECT_EQ(faded.cloud().size(), top.nodes.size()) << "rows faded out into a node far up";
}

// `bench --lod`: a fly-through from a cold start, per frame under the budget, the first frame with the top
// levels only (the frame never waits for the disk), chunks read as it goes, the curves as a PNG.
TEST(LodStream, BenchFliesThroughFromAColdStart) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  const std::string dir = test::tempDir("LodStreamBench");
  const std::string json = dir + "/fly.json", plot = dir + "/fly.png";
  test::CliRun r =
      test::cli("bench " + bikerHierarchy() +
                " --lod --frames 8 --lod-budget 20000 --width 96 --height 72 --backend cpu --json-out " +
                json + " --plot " + plot);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<uint8_t> text = readFile(json);
  const nlohmann::json j = nlohmann::json::parse(std::string(text.begin(), text.end()));
  const auto& frames = j.at("lod").at("frames");
  ASSERT_EQ(frames.size(), 8u);
  for (const auto& f : frames) {
    EXPECT_LE(f.at("drawn").get<uint64_t>(), 20000u);
    // The cut and pose broken into its steps: they lie within it; no GPU pool on the CPU backend.
    const double steps = f.at("cut_ms").get<double>() + f.at("draw_ms").get<double>();
    EXPECT_GT(steps, 0.0);
    EXPECT_LE(steps, f.at("pose_ms").get<double>() + 0.01);
    EXPECT_EQ(f.at("pool_ms").get<double>(), 0.0);
  }
  EXPECT_NE(r.out.find("medians of its steps: cut "), std::string::npos) << r.out;
  EXPECT_LT(frames[0].at("drawn").get<uint64_t>(), 1000u) << "the first frame waited for chunks";
  EXPECT_GT(frames[7].at("chunks_read").get<uint64_t>(), 0u) << "the loader read nothing in eight frames";
  EXPECT_TRUE(fs::exists(plot));
  r = test::cli("bench " + biker + " --lod --frames 2 --backend cpu");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--lod flies through level-of-detail objects, and this input has none"),
            std::string::npos)
      << r.out;
  r = test::cli("bench " + biker + " --plot x.png --backend cpu");
  EXPECT_EQ(r.code, 2) << r.out;
}

}  // namespace
}  // namespace sf
