// The level-of-detail GPU pool (lod/gpu_pool.h) against the host path it replaces in the Vulkan frame (the
// stream's cloud uploaded whole every frame): the same image bit for bit over a fly-through with level
// changes fading both ways; uploads per frame of the selection, the host rows and the chunks newly placed,
// in closed form; a 64K-slot pool with eviction settling to the image of a fully loaded hierarchy; a pool
// smaller than the budget drawing what fits; the scene's LOD objects drawn through their pools by the frame
// driver. On whatever Vulkan device exists (lavapipe in CI; CI=true fails without one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/image.h"
#include "frame/frame.h"
#include "io/file.h"
#include "io/formats.h"
#include "lod/build.h"
#include "lod/cut_worker.h"
#include "lod/gpu_pool.h"
#include "lod/stream.h"
#include "scene/kinds/lod.h"
#include "scene/scene.h"
#include "support/gpu_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

// A random capture of `leaves` gaussians of SH degree `degree` built into chunks of 512 leaves (fan-out 8),
// once per process and size.
const std::string& hierarchy(size_t leaves, int degree) {
  static std::map<std::pair<size_t, int>, std::string> built;
  auto [it, fresh] = built.try_emplace({leaves, degree});
  if (fresh) {
    const std::string d = test::tempDir("LodPool-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(leaves) + "-" + std::to_string(degree));
    const std::string ply = d + "/capture.ply";
    saveSplats(test::randomCloud(leaves, degree, 7), ply);
    lod::BuildOptions o;
    o.chunk_leaves = 512;
    lod::buildHierarchy(ply, d + "/capture.lod", o);
    it->second = d + "/capture.lod";
  }
  return it->second;
}

nlohmann::json readJson(const std::string& path) {
  const std::vector<uint8_t> text = readFile(path);
  return nlohmann::json::parse(std::string(text.begin(), text.end()));
}

size_t rowBytes(const GaussianCloud& c) {
  return 40 + static_cast<size_t>(c.shStride()) * 4;
}

// Frame f of a fly-through of `frames`: from far outside the cube [-1, 1]^3 in close to a corner, then back
// out (refinements morph in, then coarsenings morph out).
Camera flyCamera(int f, int frames) {
  const float s = static_cast<float>(f) / static_cast<float>(frames - 1);
  const float k = s < 0.5f ? 1.0f - 1.8f * s : 0.1f + 1.8f * (s - 0.5f);  // 1 -> 0.1 -> 1
  const Vec3 target{0.5f, 0.4f, 0.0f};
  return lookAtCamera(target + Vec3{0.3f, -0.2f, -5.0f} * k, target, {0, -1, 0}, 50, 96, 72);
}

// A scene of the hierarchy `dir` alone (a pool of 2^20 nodes) under `budget` gaussians; `settle`: frames wait
// for the chunks their cut wants (offline), else they never wait (the viewer).
Scene lodScene(const std::string& dir, uint64_t budget, bool settle = true) {
  Scene s;
  SceneObject o;
  o.name = "capture";
  loadLodObject(o, dir, 1u << 20);
  s.objects.push_back(std::move(o));
  s.lod_budget = budget;
  s.lod_settle = settle;
  return s;
}

// The install stamps of the chunks in memory now, by chunk.
std::vector<uint64_t> stampsOf(const lod::LodStream& s) {
  return s.installStamps();
}

// Nodes of the chunks installed since `before` (stamps that changed and are non-zero).
uint64_t freshNodes(const lod::LodStream& s, const std::vector<uint64_t>& before) {
  uint64_t n = 0;
  const std::vector<uint64_t>& now = s.installStamps();
  for (size_t c = 0; c < now.size(); ++c)
    if (now[c] != 0 && now[c] != before[c]) n += s.hierarchy().chunks[c].nodes.size();
  return n;
}

TEST(LodPool, FlyThroughEqualsTheHostPathBitForBitWithUploadsInClosedForm) {
  SF_REQUIRE_VULKAN(r);
  const std::string& dir = hierarchy(20000, 3);
  lod::LodStream stream(dir);
  auto pass = std::make_shared<lod::GatherPass>(r->context());
  lod::GpuPool pool(r->context(), pass, stream);
  lod::LodStream* streams[1] = {&stream};
  const int frames = 40;
  uint64_t host_rows = 0, ghosts = 0, fresh_after_first = 0, pooled_total = 0, host_path_total = 0;
  std::vector<uint64_t> before(stream.installStamps().size(), 0);
  const uint64_t top_nodes = stream.hierarchy().top.nodes.size();
  for (int f = 0; f < frames; ++f) {
    SCOPED_TRACE(f);
    const Camera cam = flyCamera(f, frames);
    lod::selectFrameCuts(streams, {&cam, 1}, 6000, false, true);
    if (f % 4 == 1) stream.waitIdle();  // chunks arrive between frames, several at a time
    const uint64_t fresh = freshNodes(stream, before) + (f == 0 ? top_nodes : 0);
    before = stampsOf(stream);
    pool.prepare(stream);
    const GaussianCloud& cloud = stream.cloud();
    ASSERT_GT(cloud.size(), 0u);
    RenderObject pooled{&cloud, Mat4{}};
    pooled.gpu_source = &pool;
    RenderObject whole{&cloud, Mat4{}};
    whole.dynamic = true;
    VulkanFrameStats sp, sw;
    const ImageRGBA a = r->render({&pooled, 1}, cam, {}, &sp);
    const ImageRGBA b = r->render({&whole, 1}, cam, {}, &sw);
    ASSERT_EQ(a.pixels, b.pixels) << "the pooled frame differs from the host path";
    // Uploads: the pooled frame's renderer uploads nothing of the object; the pool the selection (4 bytes a
    // row), the host rows whole and the chunks installed since the last frame; the host path every row.
    const lod::StreamStats st = stream.stats();
    size_t host = 0;
    for (const lod::NodeRef& n : stream.rows()) host += n == lod::kNoNode ? 1 : 0;
    EXPECT_EQ(sp.uploaded_bytes, 0u);
    EXPECT_EQ(st.upload_selection_bytes, cloud.size() * 4);
    EXPECT_EQ(st.upload_host_rows, host);
    EXPECT_EQ(st.upload_chunk_nodes, fresh);
    // A host row: 52 bytes (centre, covariance, opacity, SH source), and its SH where it is its own (ghosts).
    const size_t own_sh = host - stream.shMixes().size();
    EXPECT_EQ(st.upload_host_sh_rows, own_sh);
    EXPECT_EQ(st.uploadBytes(),
              cloud.size() * 4 + host * 52 + own_sh * (rowBytes(cloud) - 40) + fresh * rowBytes(cloud));
    ghosts += own_sh;
    EXPECT_EQ(sw.uploaded_bytes, cloud.size() * rowBytes(cloud));
    EXPECT_EQ(st.gpu_slots_used, st.resident_nodes) << "a slot per node in memory";
    EXPECT_LE(st.gpu_slots_allocated, st.pool_nodes);
    host_rows += host;
    if (f > 0) fresh_after_first += fresh;
    pooled_total += st.uploadBytes(), host_path_total += sw.uploaded_bytes;
    std::printf(
        "frame %2d: %6zu drawn (%4zu host rows), pooled %8llu bytes (chunks %7llu), host path %8llu\n", f,
        cloud.size(), host, static_cast<unsigned long long>(st.uploadBytes()),
        static_cast<unsigned long long>(st.upload_chunk_bytes),
        static_cast<unsigned long long>(sw.uploaded_bytes));
  }
  EXPECT_GT(host_rows, ghosts) << "no refinement faded in: the fly-through tests less than it should";
  EXPECT_GT(ghosts, 0u) << "no coarsening faded out: the fly-through tests less than it should";
  EXPECT_GT(fresh_after_first, 0u) << "no chunk arrived during the fly-through";
  // Held still with every chunk in: once the fades are done a frame uploads its selection only. (Rows fading
  // out hold their place in the budget: when they end, the cut refines into their room and those nodes fade
  // in, so settling takes up to two fades.)
  const Camera still = flyCamera(frames - 1, frames);
  for (int f = 0; f <= 3 * lod::kFadeFrames; ++f) {
    lod::selectFrameCuts(streams, {&still, 1}, 6000, false, true);
    stream.waitIdle();
    pool.prepare(stream);
  }
  const lod::StreamStats held = stream.stats();
  EXPECT_EQ(held.pending, 0u);
  EXPECT_EQ(held.uploadBytes(), stream.cloud().size() * 4)
      << "a settled frame uploads more than its selection";
  std::printf("fly-through: pooled %llu bytes, host path %llu; held still: %llu bytes for %zu gaussians\n",
              static_cast<unsigned long long>(pooled_total), static_cast<unsigned long long>(host_path_total),
              static_cast<unsigned long long>(held.uploadBytes()), stream.cloud().size());
  SF_EXPECT_VALIDATION_CLEAN(r);
}

// A frame drawn through a pool never asks its stream for the whole cloud, so the host mixes the SH of a
// morphing row only where the row starts to fade out before its morph ends (LodStream::fadeOut). A camera
// that moves in and back out every three frames (a fade takes kFadeFrames) makes such rows; drawn through a
// pool alone, each frame equals a second stream's host path, which fills its cloud every frame.
TEST(LodPool, RowsThatLeaveWhileMorphingFadeOutFromTheirMixedColour) {
  SF_REQUIRE_VULKAN(r);
  const std::string& dir = hierarchy(20000, 3);
  lod::LodStream pooled_stream(dir), host_stream(dir);
  auto pass = std::make_shared<lod::GatherPass>(r->context());
  lod::GpuPool pool(r->context(), pass, pooled_stream);
  lod::LodStream* pooled_streams[1] = {&pooled_stream};
  lod::LodStream* host_streams[1] = {&host_stream};
  const Camera near = flyCamera(20, 41), mid = flyCamera(10, 41);
  uint64_t ghosts = 0, morphing = 0;
  for (int f = 0; f < 36; ++f) {
    SCOPED_TRACE(f);
    const Camera& cam = (f / 3) % 2 == 0 ? mid : near;
    for (lod::LodStream** s : {pooled_streams, host_streams}) {
      lod::selectFrameCuts({s, 1}, {&cam, 1}, 6000, false, true);
      s[0]->waitIdle();  // the same chunks arrive for both, between the same frames
    }
    pool.prepare(pooled_stream);
    RenderObject pooled{&pooled_stream.hostRows(), Mat4{}};
    pooled.gpu_source = &pool;
    RenderObject whole{&host_stream.cloud(), Mat4{}};
    whole.dynamic = true;
    ASSERT_EQ(r->render({&pooled, 1}, cam, {}).pixels, r->render({&whole, 1}, cam, {}).pixels)
        << "the pooled frame differs from the host path";
    size_t host = 0;
    for (const lod::NodeRef& n : pooled_stream.rows()) host += n == lod::kNoNode ? 1 : 0;
    ghosts += host - pooled_stream.shMixes().size();
    morphing += pooled_stream.shMixes().size();
  }
  EXPECT_GT(ghosts, 0u) << "nothing faded out: the path tests less than it should";
  EXPECT_GT(morphing, 0u) << "nothing faded in: the path tests less than it should";
  SF_EXPECT_VALIDATION_CLEAN(r);
}

// Settles `stream` for `cam` (settled frames, no fade) and renders it through `pool` and through the host
// path; returns the pooled image after checking both agree.
ImageRGBA settledPooled(VulkanRenderer* r, lod::LodStream& stream, lod::GpuPool& pool, const Camera& cam,
                        uint64_t budget) {
  lod::LodStream* streams[1] = {&stream};
  lod::selectFrameCuts(streams, {&cam, 1}, budget, true);
  pool.prepare(stream);
  RenderObject pooled{&stream.cloud(), Mat4{}};
  pooled.gpu_source = &pool;
  RenderObject whole{&stream.cloud(), Mat4{}};
  whole.dynamic = true;
  const ImageRGBA a = r->render({&pooled, 1}, cam, {});
  EXPECT_EQ(a.pixels, r->render({&whole, 1}, cam, {}).pixels);
  return a;
}

TEST(LodPool, ATinyPoolWithEvictionSettlesToTheFullyLoadedImage) {
  SF_REQUIRE_VULKAN(r);
  const std::string& dir = hierarchy(120000, 1);
  auto pass = std::make_shared<lod::GatherPass>(r->context());
  // Two close views of opposite corners: each needs part of the hierarchy; both do not fit 64K slots.
  const Camera near_a = lookAtCamera({-0.6f, -0.6f, -1.4f}, {-0.6f, -0.6f, 0.0f}, {0, -1, 0}, 25, 96, 72);
  const Camera near_b = lookAtCamera({0.6f, 0.6f, -1.4f}, {0.6f, 0.6f, 0.0f}, {0, -1, 0}, 25, 96, 72);
  const uint64_t budget = 12000;
  lod::LodStream full(dir);  // the default pool holds it all
  lod::GpuPool full_pool(r->context(), pass, full);
  settledPooled(r, full, full_pool, near_b, budget);
  const uint64_t need_b = full.stats().resident_nodes;
  const ImageRGBA expected = settledPooled(r, full, full_pool, near_a, budget);
  const uint64_t need_a = full.stats().resident_nodes - need_b;  // (near_b's chunks stay in the full pool)
  std::printf("nodes in memory for near_b %llu, then near_a adds %llu\n",
              static_cast<unsigned long long>(need_b), static_cast<unsigned long long>(need_a));
  ASSERT_GT(need_a + need_b, 65536u) << "both views fit the tiny pool: no eviction to test";

  lod::StreamOptions options;
  options.pool_nodes = 65536;
  lod::LodStream tiny(dir, options);
  lod::GpuPool pool(r->context(), pass, tiny);
  settledPooled(r, tiny, pool, near_a, budget);
  settledPooled(r, tiny, pool, near_b, budget);
  const ImageRGBA back = settledPooled(r, tiny, pool, near_a, budget);
  const lod::StreamStats st = tiny.stats();
  EXPECT_GT(st.evictions, 0u) << "nothing was evicted: the test does not exercise reuse of slots";
  EXPECT_LE(st.gpu_slots_used, 65536u);
  EXPECT_LE(st.gpu_slots_allocated, 65536u);
  EXPECT_EQ(st.gpu_slots_used, st.resident_nodes);
  EXPECT_GT(st.pool_ms, 0.0) << "the pool's frame data took no time: not timed";
  EXPECT_EQ(tiny.cloud().size(), full.cloud().size());
  EXPECT_EQ(back.pixels, expected.pixels) << "the tiny pool's settled image differs from the full one";
  SF_EXPECT_VALIDATION_CLEAN(r);
}

TEST(LodPool, APoolSmallerThanTheBudgetDrawsWhatFits) {
  SF_REQUIRE_VULKAN(r);
  const std::string& dir = hierarchy(120000, 1);
  auto pass = std::make_shared<lod::GatherPass>(r->context());
  lod::StreamOptions options;
  options.pool_nodes = 20000;  // a budget of 100000 cannot be met: the cut draws what the pool holds
  lod::LodStream stream(dir, options);
  lod::GpuPool pool(r->context(), pass, stream);
  const Camera cam = lookAtCamera({0.0f, 0.0f, -3.0f}, {0, 0, 0}, {0, -1, 0}, 50, 96, 72);
  lod::LodStream* streams[1] = {&stream};
  for (int f = 0; f < 6; ++f) {
    lod::selectFrameCuts(streams, {&cam, 1}, 100000, false, true);
    stream.waitIdle();
    pool.prepare(stream);
    RenderObject pooled{&stream.cloud(), Mat4{}};
    pooled.gpu_source = &pool;
    RenderObject whole{&stream.cloud(), Mat4{}};
    whole.dynamic = true;
    EXPECT_EQ(r->render({&pooled, 1}, cam, {}).pixels, r->render({&whole, 1}, cam, {}).pixels);
    const lod::StreamStats st = stream.stats();
    EXPECT_LE(st.resident_nodes, 20000u);
    EXPECT_LE(st.gpu_slots_used, 20000u);
    EXPECT_LE(stream.cloud().size() - st.upload_host_rows, 20000u) << "drawn from slots it does not have";
  }
  EXPECT_GT(stream.stats().drawn, 0u);
  // A pool that cannot hold the top of the hierarchy is refused, naming it; the pool is set before the first
  // frame only.
  options.pool_nodes = 8;
  const std::string why = test::errorOf([&] { lod::LodStream small(dir, options); });
  EXPECT_NE(why.find("the pool of 8 nodes cannot hold the hierarchy's top chunk"), std::string::npos) << why;
  EXPECT_NE(test::errorOf([&] { stream.setPoolNodes(30000); }).find("set before the first frame"),
            std::string::npos);
  SF_EXPECT_VALIDATION_CLEAN(r);
}

// The frame driver draws a scene's LOD object through its pool: the renderer uploads none of its rows, the
// pool's figures are reported, and the image is the CPU backend's (a fully loaded, settled frame).
TEST(LodPool, TheFrameDriverDrawsLodObjectsThroughTheirPool) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string& dir = hierarchy(20000, 3);
  const Scene vk_scene = lodScene(dir, 8000), cpu_scene = lodScene(dir, 8000);
  const Camera cam = lookAtCamera({0.2f, -0.1f, -3.0f}, {0, 0, 0}, {0, -1, 0}, 50, 96, 72);
  FrameDriverOptions vk_options;
  vk_options.backend = Backend::kVulkan;
  vk_options.validation = true;
  FrameDriver vk(vk_options);
  FrameDriverOptions cpu_options;
  cpu_options.backend = Backend::kCpu;
  FrameDriver cpu(cpu_options);
  const FrameResult g = vk.render(vk_scene, {0, cam, {}, {}});
  const FrameResult c = cpu.render(cpu_scene, {0, cam, {}, {}});
  const auto& kind = dynamic_cast<const LodObject&>(*vk_scene.objects[0].kind);
  ASSERT_NE(kind.gpuPool(), nullptr) << "the Vulkan driver attached no pool";
  EXPECT_EQ(dynamic_cast<const LodObject&>(*cpu_scene.objects[0].kind).gpuPool(), nullptr);
  const lod::StreamStats st = kind.stream().stats();
  EXPECT_EQ(g.gpu.uploaded_bytes, 0u);
  EXPECT_EQ(st.upload_selection_bytes, st.drawn * 4);
  EXPECT_EQ(st.gpu_slots_used, st.resident_nodes);
  EXPECT_EQ(kind.stream().cloud().size(),
            dynamic_cast<const LodObject&>(*cpu_scene.objects[0].kind).stream().cloud().size());
  EXPECT_GE(compareImages(g.image, c.image).psnr, 45.0);
  // The next frame, same camera: only the selection goes up.
  vk.render(vk_scene, {0, cam, {}, {}});
  const lod::StreamStats again = kind.stream().stats();
  EXPECT_EQ(again.uploadBytes(), again.drawn * 4 + again.upload_host_bytes);
  EXPECT_EQ(again.upload_chunk_nodes, 0u);
}

// The cut made in the background (lod/cut_worker.h): every frame draws a cut the worker finished (within the
// budget; either it gives the pool a new cut, uploading its selection, or it gathers the last one again,
// uploading nothing), and with the camera held still it settles to the image of frames that cut before they
// draw, bit for bit.
TEST(LodPool, ACutInTheBackgroundDrawsFinishedCutsAndSettlesToTheFrameCut) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string& dir = hierarchy(20000, 3);
  // As the viewer: frames never wait for the disk.
  Scene background = lodScene(dir, 6000, false);
  const Scene frame_cut = lodScene(dir, 6000, false);
  background.lod_worker = std::make_shared<lod::CutWorker>();
  FrameDriverOptions options;
  options.backend = Backend::kVulkan;
  options.validation = true;
  FrameDriver a(options), b(options);
  const auto& kind = dynamic_cast<const LodObject&>(*background.objects[0].kind);
  const auto& frame_kind = dynamic_cast<const LodObject&>(*frame_cut.objects[0].kind);
  // Flying in, then holding still until a cut with nothing on its way in and no fade going on is drawn;
  // then 20 frames more, for which no cut is made (the camera is the settled cut's).
  uint64_t settled_at = 0, frames = 0, redrawn = 0, fresh = 0, after = 0;
  FrameResult last;
  for (int f = 0; f < 4000; ++f, ++frames) {
    const Camera cam = flyCamera(std::min(f, 30), 61);
    last = a.render(background, {0, cam, {}, {}});
    const lod::StreamStats st = kind.stream().stats();
    ASSERT_LE(st.drawn, background.lod_budget) << "frame " << f;
    ASSERT_GT(st.drawn, 0u) << "frame " << f;
    if (st.upload_selection_bytes == 0) {
      ++redrawn;  // the last cut gathered again: nothing uploaded
      EXPECT_EQ(st.uploadBytes(), 0u) << "frame " << f;
      EXPECT_EQ(last.gpu.uploaded_bytes, 0u) << "frame " << f;
    } else {
      ++fresh;
      EXPECT_EQ(st.upload_selection_bytes, st.drawn * 4) << "frame " << f;
    }
    const uint64_t cuts = background.lod_worker->cutsFinished();
    // (A frame that gave the pool a new cut with no fading rows, nothing on its way, and started no other:
    // the cut was made for the still camera.)
    if (f >= 30 && settled_at == 0 && st.upload_selection_bytes && st.pending == 0 &&
        st.upload_host_rows == 0 && !background.lod_worker->working())
      settled_at = cuts;
    else if (settled_at && ++after == 20)
      break;
  }
  ASSERT_NE(settled_at, 0u) << "the background cut never settled in " << frames << " frames";
  EXPECT_EQ(background.lod_worker->cutsFinished(), settled_at) << "cuts went on for a still, settled view";
  EXPECT_FALSE(background.lod_worker->working());
  EXPECT_GE(fresh, static_cast<uint64_t>(lod::kFadeFrames));  // (a refinement fades in over that many cuts)
  // The same scene cut before every frame, from the same start, then held still as long.
  FrameResult expected;
  for (int f = 0; f < 400; ++f) {
    expected = b.render(frame_cut, {0, flyCamera(std::min(f, 30), 61), {}, {}});
    const lod::StreamStats st = frame_kind.stream().stats();
    if (f >= 60 && st.pending == 0 && st.upload_host_rows == 0) break;
  }
  EXPECT_EQ(frame_kind.stream().stats().upload_host_rows, 0u) << "the frame cut did not settle";
  EXPECT_EQ(kind.stream().stats().drawn, frame_kind.stream().stats().drawn);
  EXPECT_EQ(compareImages(last.image, expected.image).max_abs, 0.0)
      << compareImages(last.image, expected.image).psnr << " dB";
  // A new pool (the driver's GPU objects taken back, as when a device is replaced) is given the settled cut
  // by the next frame, though no cut is made for the still view.
  a.detach(background);
  const FrameResult again = a.render(background, {0, flyCamera(30, 61), {}, {}});
  EXPECT_EQ(compareImages(again.image, last.image).max_abs, 0.0);
  background.lod_worker->wait();
  EXPECT_EQ(background.lod_worker->cutsFinished(), settled_at);
  EXPECT_FALSE(background.lod_worker->working());
  RecordProperty("frames", static_cast<int>(frames));
  RecordProperty("redrawn", static_cast<int>(redrawn));
  // A new budget for the still, settled view asks for a cut under it.
  background.lod_budget = 5000;
  a.render(background, {0, flyCamera(30, 61), {}, {}});
  EXPECT_TRUE(background.lod_worker->working()) << "no cut made for a new budget";
  background.lod_worker->wait();
  const uint64_t before_hold = background.lod_worker->cutsFinished();
  EXPECT_EQ(before_hold, settled_at + 1);

  // Frames drawn while a cut is being made (held on the worker's thread here): each gathers the last cut
  // again, uploads nothing, and draws what the frame before drew for the same camera; once the cut is let go,
  // the next frame takes it.
  std::promise<void> go;
  std::shared_future<void> let_go = go.get_future().share();
  background.lod_worker->setBeforeCut([let_go] { let_go.wait(); });
  const Camera nearer = flyCamera(20, 61);
  const FrameResult held = a.render(background, {0, nearer, {}, {}});  // starts the cut, which waits
  ASSERT_TRUE(background.lod_worker->busy());
  for (int f = 0; f < 3; ++f) {
    const FrameResult r = a.render(background, {0, nearer, {}, {}});
    const lod::StreamStats st = kind.stream().stats();
    EXPECT_EQ(st.uploadBytes(), 0u);
    EXPECT_EQ(r.gpu.uploaded_bytes, 0u);
    EXPECT_EQ(compareImages(r.image, held.image).max_abs, 0.0);
  }
  go.set_value();
  background.lod_worker->wait();
  background.lod_worker->setBeforeCut({});
  EXPECT_LE(kind.stream().stats().drawn, 5000u);  // (the new budget's cut, taken by the frame that held)
  EXPECT_EQ(background.lod_worker->cutsFinished(), before_hold + 1);
  const FrameResult taken = a.render(background, {0, nearer, {}, {}});
  EXPECT_GT(kind.stream().stats().upload_selection_bytes, 0u);  // the new cut given to the pool
  EXPECT_EQ(taken.gpu.uploaded_bytes, 0u);  // (the renderer's own: the pool's slots are written on the GPU)
}

// `bench --lod` on the Vulkan backend reports each frame's uploads: the pool's selection, fading rows and
// chunks, in closed form, and the pool's slots in use.
TEST(LodPool, BenchReportsTheBytesUploadedEachFrame) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string& dir = hierarchy(20000, 3);
  const std::string json = test::tempDir("LodPoolBench") + "/fly.json";
  const test::CliRun r = test::cli(
      "bench " + dir +
      " --lod --frames 12 --lod-budget 5000 --width 96 --height 72 --backend vulkan --lod-cut frame "
      "--json-out " +
      json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("MB uploaded a frame on average"), std::string::npos) << r.out;
  const nlohmann::json j = readJson(json);
  const auto& frames = j.at("lod").at("frames");
  ASSERT_EQ(frames.size(), 12u);
  const uint64_t row = 40 + 48 * 4;
  uint64_t chunks = 0;
  for (const auto& f : frames) {
    const uint64_t drawn = f.at("drawn").get<uint64_t>(), fading = f.at("fading_rows").get<uint64_t>();
    EXPECT_EQ(f.at("selection_bytes").get<uint64_t>(), drawn * 4);
    EXPECT_EQ(f.at("uploaded_bytes").get<uint64_t>(),
              drawn * 4 + fading * 52 + f.at("fading_rows_with_sh").get<uint64_t>() * (row - 40) +
                  f.at("chunk_upload_bytes").get<uint64_t>());
    EXPECT_EQ(f.at("gpu_slots_used").get<uint64_t>(), f.at("resident").get<uint64_t>());
    chunks += f.at("chunk_upload_bytes").get<uint64_t>();
    // Where the GPU's frame goes: its passes are parts of it (each timed on its own, none overlapping).
    const auto& passes = f.at("gpu_passes");
    double parts = 0;
    for (const char* k :
         {"before_preprocess", "preprocess", "bin", "tile_ranges", "emit", "tile_sort", "raster"})
      parts += passes.at(k).get<double>();
    EXPECT_GT(passes.at("raster").get<double>(), 0.0) << f.dump();
    EXPECT_LE(parts, f.at("gpu_ms").get<double>() + 0.01) << f.dump();
    EXPECT_LE(f.at("deepest_tile").get<uint64_t>(), f.at("pairs").get<uint64_t>());
  }
  EXPECT_GT(chunks, 0u);
  EXPECT_NE(r.out.find("lod: the GPU's passes, medians: before preprocess (the gather) "), std::string::npos)
      << r.out;
  // The frame of a settled cut names the gather too.
  const test::CliRun settled = test::cli("bench " + dir +
                                         " --lod-budget 5000 --width 96 --height 72 --frames 1 "
                                         "--back-to-back 2 --backend vulkan");
  ASSERT_EQ(settled.code, 0) << settled.out;
  EXPECT_NE(settled.out.find("gpu median ms: before preprocess (the gather) "), std::string::npos)
      << settled.out;
  EXPECT_NE(settled.out.find("in one submission), gpu median ms: before preprocess (the gather) "),
            std::string::npos)
      << settled.out;
  // --lod-pool sets the pool (nodes in memory, GPU slots); one that cannot hold the top chunk is refused.
  const test::CliRun small = test::cli("bench " + dir +
                                       " --lod --frames 6 --lod-budget 5000 --lod-pool 3000 --width 96 "
                                       "--height 72 --backend vulkan --lod-cut frame --json-out " +
                                       json);
  ASSERT_EQ(small.code, 0) << small.out;
  const nlohmann::json j2 = readJson(json);
  for (const auto& f : j2.at("lod").at("frames")) {
    EXPECT_EQ(f.at("pool").get<uint64_t>(), 3000u);
    EXPECT_LE(f.at("gpu_slots_used").get<uint64_t>(), 3000u);
  }
  // The default on Vulkan: the cut in the background. Each frame gives the pool a finished cut (its selection
  // uploaded) or gathers the last one again (nothing uploaded), within the budget; the cuts only grow.
  const test::CliRun bg = test::cli("bench " + dir +
                                    " --lod --frames 12 --lod-budget 5000 --width 96 --height 72 "
                                    "--backend vulkan --json-out " +
                                    json);
  ASSERT_EQ(bg.code, 0) << bg.out;
  EXPECT_NE(bg.out.find("lod: cut in the background: "), std::string::npos) << bg.out;
  const nlohmann::json j3 = readJson(json);
  EXPECT_EQ(j3.at("lod").at("cut"), "background");
  EXPECT_GT(j3.at("gpu_memory").at("held_bytes").get<uint64_t>(), 0u);
  uint64_t cuts_before = 0;
  for (const auto& f : j3.at("lod").at("frames")) {
    const uint64_t drawn = f.at("drawn").get<uint64_t>(), selection = f.at("selection_bytes").get<uint64_t>();
    EXPECT_LE(drawn, 5000u);
    EXPECT_TRUE(selection == drawn * 4 || (selection == 0 && f.at("uploaded_bytes").get<uint64_t>() == 0))
        << f.dump();
    EXPECT_GE(f.at("cuts").get<uint64_t>(), cuts_before);
    cuts_before = f.at("cuts").get<uint64_t>();
  }
  EXPECT_GT(cuts_before, 0u);
  const test::CliRun refused = test::cli("bench " + dir + " --lod --frames 2 --lod-pool 1 --backend vulkan");
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find("the pool of 1 nodes cannot hold the hierarchy's top chunk"), std::string::npos)
      << refused.out;
}

// scripts/bench/lod_vs_ply.sh: the frame of a LOD object against the same cut drawn from a PLY. The cut the
// frame makes (the cut state, kept from frame to frame) and the one `lod cut` writes (the greedy cut from the
// root) are made by different code; drawn, they give the same visible count, the same tile lists and the
// same raster work, which the script's log shows side by side.
TEST(LodPool, TheLodAgainstPlyScriptDrawsTheSameCutBothWays) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string& dir = hierarchy(20000, 3);
  const std::string out = test::tempDir("LodVsPly");
  const std::string cmd = std::string("bash \"") + SPLATFORGE_SOURCE_DIR +
                          "/scripts/bench/lod_vs_ply.sh\" \"" + SPLATFORGE_BINARY + "\" \"" + dir + "\" \"" +
                          out + "\" 5000 96 72 > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::vector<uint8_t> bytes = readFile(out + "/log.txt");
  const std::string log(bytes.begin(), bytes.end());
  // The lines of one kind, in order: the LOD object's runs first, then the PLY's.
  auto lines = [&log](const std::string& start) {
    std::vector<std::string> found;
    for (size_t at = log.find(start); at != std::string::npos; at = log.find(start, at + 1))
      found.push_back(log.substr(at, log.find('\n', at) - at));
    return found;
  };
  const std::vector<std::string> visible = lines("visible "), counts = lines("raster counts: ");
  ASSERT_EQ(visible.size(), 7u) << log;  // three runs each, and the graph's frame
  ASSERT_EQ(counts.size(), 2u) << log;
  EXPECT_NE(visible[0].find(" tile pairs"), std::string::npos) << visible[0];
  for (size_t i = 1; i < visible.size(); ++i) EXPECT_EQ(visible[i], visible[0]) << log;
  EXPECT_EQ(counts[0], counts[1]) << log;
  EXPECT_NE(log.find("level of detail: gather: reads -; writes splat slots of object 0"), std::string::npos)
      << log;
  EXPECT_NE(log.find("in one submission), gpu median ms: before preprocess (the gather) "), std::string::npos)
      << log;
  EXPECT_TRUE(fs::exists(out + "/cut.ply"));
  // Without its arguments it says how to run it.
  const std::string usage =
      std::string("bash \"") + SPLATFORGE_SOURCE_DIR + "/scripts/bench/lod_vs_ply.sh\" > /dev/null 2>&1";
  EXPECT_NE(std::system(usage.c_str()), 0);
}

// `bench --lod --lod-reference`: each frame against the same camera with every visible leaf drawn. A budget
// far under the leaves draws a coarse image (low PSNR in every frame); a budget above every node converges
// on the reference once the chunks are in and the fades are done; the camera's own motion changes both.
TEST(LodPool, BenchComparesEachFrameWithEveryVisibleLeaf) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string& dir = hierarchy(20000, 3);
  const std::string json = test::tempDir("LodPoolReference") + "/fly.json";
  const std::string common =
      " --lod --lod-reference --frames 24 --width 96 --height 72 --backend vulkan "
      "--lod-cut frame --json-out " +
      json;
  const test::CliRun coarse = test::cli("bench " + dir + common + " --lod-budget 200");
  ASSERT_EQ(coarse.code, 0) << coarse.out;
  EXPECT_NE(coarse.out.find("lod: against every visible leaf drawn: PSNR median"), std::string::npos)
      << coarse.out;
  const nlohmann::json c = readJson(json);
  ASSERT_EQ(c.at("lod").at("frames").size(), 24u);
  double change_reference = 0, popping = 0;
  for (const auto& f : c.at("lod").at("frames")) {
    ASSERT_TRUE(f.at("psnr").is_number()) << f.dump();  // (never identical)
    EXPECT_LT(f.at("psnr").get<double>(), 30.0) << f.dump();
    change_reference += f.at("change_reference").get<double>();
    popping += f.at("popping").get<double>();
  }
  EXPECT_GT(popping, 0.0);  // the coarse cut's error moves with the camera
  EXPECT_EQ(c.at("lod").at("frames")[0].at("change").get<double>(), 0.0);
  EXPECT_GT(change_reference, 0.0);  // the camera moves
  EXPECT_NEAR(c.at("lod").at("reference").at("change_reference_mean").get<double>(), change_reference / 23,
              1e-5);

  const test::CliRun fine = test::cli("bench " + dir + common + " --lod-budget 100000");
  ASSERT_EQ(fine.code, 0) << fine.out;
  const nlohmann::json j = readJson(json);
  auto dB = [](const nlohmann::json& v) {  // (null: identical images)
    return v.is_null() ? std::numeric_limits<double>::infinity() : v.get<double>();
  };
  // Once the chunks are in (every node fits the pool) the cut is every visible leaf: the reference, bit for
  // bit.
  const auto& frames = j.at("lod").at("frames");
  for (size_t f = frames.size() / 2; f < frames.size(); ++f) {
    EXPECT_TRUE(frames[f].at("psnr").is_null()) << "frame " << f << ": " << frames[f].dump();
    EXPECT_EQ(frames[f].at("popping").get<double>(), 0.0) << "frame " << f;
  }
  EXPECT_GT(dB(j.at("lod").at("reference").at("psnr_median")),
            dB(c.at("lod").at("reference").at("psnr_median")) + 10.0);
  const test::CliRun refused = test::cli("bench " + dir + " --lod-reference --backend vulkan");
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_NE(refused.out.find("--lod-reference compares the --lod fly-through's frames"), std::string::npos)
      << refused.out;
}

// `bench --lod --lod-settle`: every frame waits for the chunks its cut wants, so two runs make the same cuts
// frame by frame (without it the cuts follow the disk's pace); refused with the cut in the background.
TEST(LodPool, BenchSettledRunsMakeTheSameCuts) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string& dir = hierarchy(20000, 3);
  const std::string json = test::tempDir("LodPoolSettle") + "/fly.json";
  const std::string args = "bench " + dir +
                           " --lod --lod-settle --lod-cut frame --frames 12 --width 64 --height 48 "
                           "--backend vulkan --lod-budget 3000 --json-out " +
                           json;
  std::vector<std::vector<uint64_t>> runs;
  for (int run = 0; run < 2; ++run) {
    const test::CliRun r = test::cli(args);
    ASSERT_EQ(r.code, 0) << r.out;
    std::vector<uint64_t> figures;
    uint64_t fading = 0;
    const nlohmann::json j = readJson(json);
    for (const auto& f : j.at("lod").at("frames")) {
      fading += f.at("fading_rows").get<uint64_t>();
      EXPECT_EQ(f.at("pending").get<uint64_t>(), 0u) << f.dump();  // nothing on its way once settled
      figures.push_back(f.at("drawn").get<uint64_t>());
      figures.push_back(f.at("resident").get<uint64_t>());
    }
    ASSERT_EQ(figures.size(), 24u);
    EXPECT_GT(fading, 0u) << "the settled frames did not fade as the viewer's do";
    runs.push_back(figures);
  }
  EXPECT_EQ(runs[0], runs[1]);
  bool changed = false;
  for (size_t f = 1; f < 12; ++f) changed |= runs[0][2 * f] != runs[0][0];
  EXPECT_TRUE(changed) << "every frame drew as many gaussians: the fly-through tests less than it should";
  const test::CliRun refused = test::cli("bench " + dir + " --lod --lod-settle --backend vulkan --frames 2");
  EXPECT_EQ(refused.code, 2) << refused.out;
  EXPECT_NE(refused.out.find("--lod-settle waits for the disk in each frame's own cut: give --lod-cut frame"),
            std::string::npos)
      << refused.out;
}

}  // namespace
}  // namespace sf
