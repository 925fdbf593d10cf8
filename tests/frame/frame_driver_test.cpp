// The frame driver (frame/frame.h): the SH degree limit applied where objects are packed (against a cloud
// truncated by hand, on the CPU exactly and on Vulkan within the renderer tolerance), a frame with nothing
// posed, and the GPU paths it gives a scene's generators taken back by detach() and by its destruction.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#if defined(__has_include)
#if __has_include(<sanitizer/allocator_interface.h>) && SPLATFORGE_SANITIZED
#include <sanitizer/allocator_interface.h>
#define SF_HEAP_FROM_SANITIZER 1
#endif
#endif

#include "frame/frame.h"
#include "frame/soak.h"
#include "gpu/gpu.h"
#include "neural/generator.h"
#include "neural/graph.h"
#include "neural/image_model.h"
#include "render/vulkan_renderer.h"
#include "support/test_support.h"

namespace sf {
namespace {

// A copy of `c` keeping only the SH coefficients of degrees 0..degree: the oracle of max_sh_degree.
GaussianCloud truncated(const GaussianCloud& c, int degree) {
  GaussianCloud out = c;
  out.sh_degree = degree;
  out.sh.clear();
  for (size_t i = 0; i < c.size(); ++i)
    for (int k = 0; k < 3 * (degree + 1) * (degree + 1); ++k)
      out.sh.push_back(c.shOf(i)[static_cast<size_t>(k)]);
  return out;
}

Scene oneCloud(std::shared_ptr<const GaussianCloud> cloud) {
  Scene scene;
  SceneObject o;
  o.name = "cloud";
  o.cloud = std::move(cloud);
  scene.objects.push_back(o);
  return scene;
}

TEST(FrameDriver, ShDegreeLimitIsTheTruncatedCloud) {
  auto cloud = std::make_shared<const GaussianCloud>(test::randomCloud(400, 3, 5));
  const Scene scene = oneCloud(cloud);
  const Camera cam = autoCamera(scene, 96, 64);
  FrameDriverOptions cpu_options;
  cpu_options.backend = Backend::kCpu;
  FrameDriver cpu(cpu_options);
  for (int degree : {0, 1, 2}) {
    SCOPED_TRACE(degree);
    FrameRequest request{0, cam, {}, {}};
    request.settings.max_sh_degree = degree;
    const FrameResult f = cpu.render(scene, request);
    EXPECT_EQ(f.sh_degree, degree);
    const GaussianCloud cut = truncated(*cloud, degree);
    const RenderObject ref{&cut, Mat4{}};
    const ImageRGBA expected = renderCpu({&ref, 1}, cam, {});
    EXPECT_EQ(f.image.pixels, expected.pixels);
    if (!gpu::vulkanAvailable()) continue;
    FrameDriverOptions vk_options;
    vk_options.backend = Backend::kVulkan;
    vk_options.validation = true;
    FrameDriver vk(vk_options);
    const FrameResult g = vk.render(scene, request);
    EXPECT_GE(compareImages(g.image, expected).psnr, 45.0);
  }
  // Unlimited: the cloud's own degree.
  EXPECT_EQ(cpu.render(scene, {0, cam, {}, {}}).sh_degree, 3);
}

// A glTF object (built in memory, no mesh) whose 1 s clip has events foot_l at 0.25 s and foot_r at 0.75 s.
Scene walkerScene() {
  GltfDocument doc;
  doc.path = "walker";
  doc.nodes.resize(1);
  doc.nodes[0].name = "walker";
  doc.scenes.push_back({"", {0}});
  doc.default_scene = 0;
  GltfAnimation a;
  a.name = "walk";
  a.duration = 1;
  GltfSampler s;
  s.times = {0, 1};
  s.values = {0, 0, 0, 1, 0, 0};
  s.components = 3;
  a.samplers.push_back(s);
  a.channels.push_back({0, 0, GltfPath::kTranslation});
  a.events = {{"foot_l", 0.25f}, {"foot_r", 0.75f}};
  doc.animations.push_back(a);
  Scene scene;
  SceneObject o;
  o.name = "walker";
  o.kind = std::make_shared<GltfObject>(std::make_shared<GltfModel>(std::move(doc)));
  o.clip = 0;
  scene.objects.push_back(o);
  return scene;
}

// Each frame reports the events crossed since the playback's last frame (the first one those at its time, an
// earlier time none); moving the clock without drawing (advanceEvents) takes them from the next frame.
TEST(FrameDriver, FramesReportTheAnimationEventsTheyCross) {
  const Scene scene = walkerScene();
  FrameDriverOptions o;
  o.backend = Backend::kCpu;
  FrameDriver driver(o);
  ScenePlayback playback;
  auto frame = [&](double t) {
    const FrameResult f =
        driver.render(scene, playback, {t, lookAtCamera({0, 0, 3}, {0, 0, 0}, {0, 1, 0}, 45, 8, 6), {}, {}});
    std::string out;
    for (const FiredClipEvent& e : f.events)
      out += (out.empty() ? "" : " ") + e.object + ":" + e.event + "@" + std::to_string(e.scene_time);
    return out;
  };
  EXPECT_EQ(frame(0.25), "walker:foot_l@0.250000");  // a first frame fires what lies at its time
  EXPECT_EQ(frame(0.5), "");
  EXPECT_EQ(frame(2.3),
            "walker:foot_r@0.750000 walker:foot_l@1.250000 walker:foot_r@1.750000 walker:foot_l@2.250000");
  EXPECT_EQ(frame(1.0), "");  // back in time: none
  EXPECT_EQ(frame(1.3), "walker:foot_l@1.250000");
  EXPECT_EQ(playback.advanceEvents(scene, 1.8).events.size(), 1u);  // foot_r at 1.75, without a frame
  EXPECT_EQ(frame(2.0), "");
  playback.reset();
  EXPECT_EQ(frame(2.25), "walker:foot_l@2.250000");
}

TEST(FrameDriver, NothingPosedIsTheBackground) {
  Scene scene;
  FrameDriverOptions o;
  o.backend = Backend::kCpu;
  FrameDriver driver(o);
  FrameRequest request{0, lookAtCamera({0, 0, 3}, {0, 0, 0}, {0, 1, 0}, 45, 8, 6), {}, {}};
  request.settings.background = {0.25f, 0.5f, 1};
  request.settings.depth = true;
  const FrameResult f = driver.render(scene, request);
  ASSERT_EQ(f.image.pixels.size(), 8u * 6u * 4u);
  for (size_t i = 0; i < f.image.pixels.size(); i += 4) {
    EXPECT_EQ(f.image.pixels[i], 0.25f);
    EXPECT_EQ(f.image.pixels[i + 1], 0.5f);
    EXPECT_EQ(f.image.pixels[i + 2], 1.0f);
    EXPECT_EQ(f.image.pixels[i + 3], 0.0f);  // alpha = 1 - T
  }
  ASSERT_EQ(f.image.depth.size(), 8u * 6u * 2u);
  for (size_t i = 0; i < f.image.depth.size(); i += 2) {
    EXPECT_EQ(f.image.depth[i], 0.0f);      // no splat depth
    EXPECT_EQ(f.image.depth[i + 1], 1.0f);  // transmittance 1
  }
  EXPECT_EQ(f.splats, 0u);
}

// A kind of scene object defined outside the library (here, in the test) poses and attaches GPU work through
// the driver without the driver, the scene or the renderer knowing it: its cloud slides along +x at 0.5 units
// a second (posed at each frame's scene time), and on a Vulkan driver it records what it was given so that
// detach() and the driver's end take it back. The oracle: renderCpu of the same cloud at the moved transform.
class SlidingObject final : public SceneObjectKind {
 public:
  struct Given {
    int attached = 0, taken_back = 0;
  };
  explicit SlidingObject(std::shared_ptr<Given> given) : given_(std::move(given)) {}
  std::string_view kindName() const override { return "sliding"; }
  std::string describe(const SceneObject& o) const override { return gaussianCount(o) + ", sliding"; }
  void pose(const SceneObject& o, const PoseContext& ctx, PoseSink& out) const override {
    Moved& moved = out.stateAs<Moved>();  // kept between frames: the render object points into it
    moved.to_world =
        Mat4::fromLinearTranslation(Mat3{}, {0.5f * static_cast<float>(ctx.time), 0, 0}) * o.object_to_world;
    out.objects.push_back({o.cloud.get(), moved.to_world, {}, {}});
  }
  void attachGpu(const SceneObject&, GpuAttach& gpu) const override {
    if (attached_) return;
    attached_ = true;
    ++given_->attached;
    gpu.given(given_, [this] { attached_ = false, ++given_->taken_back; });
  }
  void detachGpu(GpuAttach& gpu) const override { gpu.takeBack(given_.get()); }

 private:
  struct Moved : PosedState {
    Mat4 to_world;
  };
  std::shared_ptr<Given> given_;
  mutable bool attached_ = false;
};

TEST(FrameDriver, AKindDefinedOutsideTheLibraryPosesAndAttachesThroughTheDriver) {
  auto cloud = std::make_shared<const GaussianCloud>(test::randomCloud(300, 1, 9));
  Scene scene = oneCloud(cloud);
  auto given = std::make_shared<SlidingObject::Given>();
  scene.objects[0].kind = std::make_shared<SlidingObject>(given);
  EXPECT_EQ(scene.objects[0].kindOf().kindName(), "sliding");
  const Camera cam = autoCamera(oneCloud(cloud), 96, 64);
  const auto expected = [&](double t) {
    const RenderObject moved{
        cloud.get(), Mat4::fromLinearTranslation(Mat3{}, {0.5f * static_cast<float>(t), 0, 0}), {}, {}};
    return renderCpu({&moved, 1}, cam, {});
  };
  FrameDriverOptions cpu_options;
  cpu_options.backend = Backend::kCpu;
  FrameDriver cpu(cpu_options);
  for (double t : {0.0, 0.4}) {
    const FrameResult f = cpu.render(scene, {t, cam, {}, {}});
    EXPECT_EQ(f.image.pixels, expected(t).pixels) << "t = " << t;
  }
  EXPECT_GT(compareImages(expected(0.0), expected(0.4)).mean_abs, 1e-3) << "the slide moved nothing visible";
  EXPECT_EQ(given->attached, 0) << "the CPU driver has no GPU work to give";
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  {
    FrameDriver driver(vk);
    const FrameResult f = driver.render(scene, {0.4, cam, {}, {}});
    EXPECT_GE(compareImages(f.image, expected(0.4)).psnr, 45.0);
    EXPECT_EQ(given->attached, 1);
    driver.detach(scene);
    EXPECT_EQ(given->taken_back, 1);
    driver.render(scene, {0.4, cam, {}, {}});  // attached again on the next frame
    EXPECT_EQ(given->attached, 2);
  }
  EXPECT_EQ(given->taken_back, 2) << "the driver's end took nothing back";
}

// The scene's post model runs inside the Vulkan frame (an image pass between the raster and the readback):
// the image equals the CPU executor's run of the model on the frame read back without it; FrameRequest::post
// false gives that plain frame; a frame whose deep tiles are drawn in raster slices gets the same image (the
// passes run again on the finished image); detach() takes the path back.
TEST(FrameDriver, PostModelRunsInTheFrame) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  auto cloud = std::make_shared<const GaussianCloud>(test::randomCloud(500, 1, 17));
  Scene scene = oneCloud(cloud);
  scene.post = std::make_shared<nn::ImageModel>(std::string(SPLATFORGE_SOURCE_DIR) + "/models/unet.onnx");
  const Camera cam = autoCamera(oneCloud(cloud), 64, 48);
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  FrameDriver driver(vk);
  const FrameResult with = driver.render(scene, {0, cam, {}, {}});
  EXPECT_TRUE(with.post_in_frame);
  ASSERT_NE(scene.post->gpuPath(), nullptr);
  EXPECT_NE(with.timing().find("post unet.onnx (Vulkan executor, in the frame)"), std::string::npos)
      << with.timing();
  FrameRequest off{0, cam, {}, {}};
  off.post = false;
  const FrameResult plain = driver.render(scene, off);
  EXPECT_FALSE(plain.post_in_frame);
  EXPECT_TRUE(plain.post_name.empty());
  EXPECT_EQ(plain.image.pixels, driver.render(oneCloud(cloud), {0, cam, {}, {}}).image.pixels);
  // The oracle: the CPU executor on the plain frame.
  const ImageRGBA want =
      nn::ImageModel(std::string(SPLATFORGE_SOURCE_DIR) + "/models/unet.onnx").apply(plain.image);
  const ImageDiff d = compareImages(with.image, want);
  std::printf("post in the frame vs the CPU executor on the read-back frame: %.1f dB, max %.2e\n", d.psnr,
              d.max_abs);
  EXPECT_GE(d.psnr, 60.0);
  EXPECT_LT(compareImages(with.image, plain.image).psnr, 50.0) << "the model changed nothing";
  // Raster slices: the frame's deep tiles drawn in submissions of their own, the post model after the last.
  FrameRequest sliced{0, cam, {}, {}};
  sliced.settings.raster_slice = 16;
  const FrameResult s = driver.render(scene, sliced);
  EXPECT_GT(s.gpu.raster_slices, 0);
  EXPECT_EQ(s.image.pixels, with.image.pixels);
  driver.detach(scene);
  EXPECT_EQ(scene.post->gpuPath(), nullptr);
  EXPECT_FALSE(scene.post->hasRunner());
}

// A post model whose input is float16 gets in the frame the values ImageModel::apply gives it on the CPU: the
// image rounded to float16 (nearest even) as it enters the tensor. The model squares its input (exact in
// float32 for float16 operands, then rounded to float16 on both executors), so the frame equals the CPU
// executor's result bit for bit; squaring the unrounded float32 image differs wherever a colour is not a
// float16 value, nearly everywhere.
TEST(FrameDriver, Float16PostModelGetsTheRoundedImage) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  auto cloud = std::make_shared<const GaussianCloud>(test::randomCloud(500, 1, 23));
  const Camera cam = autoCamera(oneCloud(cloud), 40, 30);
  nn::Graph g;
  g.path = "square_f16.onnx";
  g.opset = 17;
  g.inputs.push_back({"image", nn::DType::kFloat16, {1, 3, 30, 40}, {"", "", "", ""}, true});
  g.outputs.push_back({"out", nn::DType::kFloat16, {1, 3, 30, 40}, {"", "", "", ""}, true});
  nn::Node sq;
  sq.name = "square", sq.op_type = "Mul", sq.inputs = {"image", "image"}, sq.outputs = {"out"};
  g.nodes = {sq};
  Scene scene = oneCloud(cloud);
  scene.post = std::make_shared<nn::ImageModel>(g);
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  FrameDriver driver(vk);
  const FrameResult with = driver.render(scene, {0, cam, {}, {}});
  ASSERT_TRUE(with.post_in_frame) << with.timing();
  FrameRequest off{0, cam, {}, {}};
  off.post = false;
  const ImageRGBA plain = driver.render(scene, off).image;
  const ImageRGBA want = nn::ImageModel(g).apply(plain);
  size_t unrounded = 0;
  for (size_t k = 0; k < plain.pixels.size(); ++k) {
    if (k % 4 == 3) continue;
    const float c = std::clamp(plain.pixels[k], 0.0f, 1.0f);
    unrounded += nn::roundToFloatType(c * c, nn::DType::kFloat16) != want.pixels[k];
  }
  std::printf(
      "float16 post model: %zu of %zu channels differ between squaring the rounded and the float32 image\n",
      unrounded, plain.pixels.size() / 4 * 3);
  EXPECT_GT(unrounded, plain.pixels.size() / 8) << "the test's image holds float16 values already";
  EXPECT_EQ(with.image.pixels, want.pixels);
  driver.detach(scene);
}

// A decoder character the scene's script spawns gets its GPU path from the driver; after the script despawns
// it (freeing it while the world lives on), detach() and the driver's end take back what is still there and
// touch nothing freed (run under AddressSanitizer).
TEST(FrameDriver, DespawnedDecoderCharactersLeaveNothingToTakeBack) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string orb = std::string(SPLATFORGE_SOURCE_DIR) + "/models/characters/orb_head";
  Scene scene;
  scene.script.resize(4);
  scene.script[0].t = 0, scene.script[0].command = "spawn-character", scene.script[0].id = "a";
  scene.script[0].package = orb;
  scene.script[1].t = 0, scene.script[1].command = "spawn-character", scene.script[1].id = "b";
  scene.script[1].package = orb;
  scene.script[1].transform = Mat4::fromLinearTranslation(Mat3{}, {0.3f, 0, 0});
  scene.script[2].t = 0.5, scene.script[2].command = "despawn", scene.script[2].id = "a";
  scene.script[3].t = 0.8, scene.script[3].command = "despawn", scene.script[3].id = "b";
  for (character::ScriptCommand& c : scene.script) c.where = "test";
  const Camera cam = lookAtCamera({0, 0, -1.5f}, {0, 0, 0}, {0, -1, 0}, 40, 48, 32);
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  {
    FrameDriver driver(vk);
    ScenePlayback playback;
    EXPECT_TRUE(driver.render(scene, playback, {0.1, cam, {}, {}}).gpu_sources);
    EXPECT_EQ(playback.spawned(), 2u);
    driver.render(scene, playback, {0.6, cam, {}, {}});  // "a" despawned: freed, its path taken with it
    EXPECT_EQ(playback.spawned(), 1u);
    driver.detach(scene, &playback);                     // takes back b's path
    driver.render(scene, playback, {0.9, cam, {}, {}});  // "b" despawned too
    EXPECT_EQ(playback.spawned(), 0u);
  }  // the driver's end: nothing left to take back, nothing freed touched
}

TEST(FrameDriver, GeneratorPathsAreTakenBack) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  Scene scene;
  SceneObject o;
  auto generator = std::make_shared<nn::GaussianGenerator>(std::string(SPLATFORGE_SOURCE_DIR) +
                                                           "/models/gaussians4d.onnx");
  o.kind = std::make_shared<GeneratorObject>(generator);
  scene.objects.push_back(o);
  const Camera cam = lookAtCamera({0, 0, -3.2f}, {0, 0, 0}, {0, -1, 0}, 50, 48, 32);
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  {
    FrameDriver driver(vk);
    const FrameResult f = driver.render(scene, {0.35, cam, {}, {}});
    EXPECT_TRUE(f.gpu_sources);
    EXPECT_NE(generator->gpuPath(), nullptr);
    driver.detach(scene);
    EXPECT_EQ(generator->gpuPath(), nullptr);
    driver.render(scene, {0.4, cam, {}, {}});  // attached again on the next frame
    EXPECT_NE(generator->gpuPath(), nullptr);
  }
  EXPECT_EQ(generator->gpuPath(), nullptr) << "a path outlived its driver's device";
  // The CPU driver draws the same scene on the CPU executor.
  FrameDriverOptions cpu;
  cpu.backend = Backend::kCpu;
  FrameDriver driver(cpu);
  const FrameResult f = driver.render(scene, {0.35, cam, {}, {}});
  EXPECT_FALSE(f.gpu_sources);
  EXPECT_GT(f.splats, 0u);
}

// A scene dropped by its front end takes its GPU paths with it (the driver holds them weakly), and a driver
// that outlives many scenes attaches each one's anew without keeping the old ones.
TEST(FrameDriver, DroppedScenesTakeTheirPathsWithThem) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  FrameDriver driver(vk);
  const Camera cam = lookAtCamera({0, 0, -3.2f}, {0, 0, 0}, {0, -1, 0}, 50, 48, 32);
  std::weak_ptr<nn::GaussianGenerator> first;
  for (int i = 0; i < 3; ++i) {
    auto scene = std::make_shared<Scene>();
    SceneObject o;
    auto generator = std::make_shared<nn::GaussianGenerator>(std::string(SPLATFORGE_SOURCE_DIR) +
                                                             "/models/gaussians4d.onnx");
    o.kind = std::make_shared<GeneratorObject>(generator);
    if (i == 0) first = generator;
    scene->objects.push_back(o);
    EXPECT_TRUE(driver.render(*scene, {0.1 * i, cam, {}, {}}).gpu_sources);
    driver.retire(scene);  // as Python does with a scene loaded for one call
  }
  driver.render(Scene{}, {0, cam, {}, {}});  // nothing posed: the last scene is still kept
  driver.render(oneCloud(std::make_shared<const GaussianCloud>(test::randomCloud(50, 0, 1))),
                {0, cam, {}, {}});
  driver.render(oneCloud(std::make_shared<const GaussianCloud>(test::randomCloud(50, 0, 2))),
                {0, cam, {}, {}});
  EXPECT_TRUE(first.expired()) << "the driver keeps a dropped scene's generator alive";
}

// Live heap bytes of the process (the sanitizer's count under AddressSanitizer, whose quarantine hides frees
// from the C library's statistics; mallinfo2 otherwise).
size_t liveHeapBytes() {
#ifdef SF_HEAP_FROM_SANITIZER
  return __sanitizer_get_current_allocated_bytes();
#else
  return mallinfo2().uordblks;
#endif
}

// A long run in one process with the scene changing under it (the short version of the soak benchmark,
// docs/benchmarks.md): 300 Vulkan frames, a second capture of seven sizes added and removed every 5 frames, a
// skinned glTF model every 7, the camera orbiting, the image resized every 50 frames (as a window is). Once
// every configuration has been seen (frame 100), the GPU memory the renderer holds stays at its high-water
// mark, the live heap does not grow, frame time does not drift, and validation (on for every test context)
// reports nothing (a validation error throws from render()).
TEST(FrameDriver, LongRunWithAChangingSceneStaysFlat) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  FrameDriver driver(vk);
  const gpu::Context& ctx = driver.vulkan()->context();
  Scene base = oneCloud(std::make_shared<const GaussianCloud>(test::randomCloud(2000, 1, 31)));
  std::vector<std::shared_ptr<const GaussianCloud>> extra;
  for (int k = 0; k < 7; ++k)
    extra.push_back(std::make_shared<const GaussianCloud>(
        test::randomCloud(300 + 150 * static_cast<size_t>(k), 1, 40 + k)));
  SceneObject model = sceneFromFile(man).objects.at(0);
  model.object_to_world = Mat4::fromLinearTranslation(Mat3::diagonal({0.6f, 0.6f, 0.6f}), {0.5f, 0.3f, 0});
  ScenePlayback playback;
  const int frames = 300, settled = 100;
  uint64_t gpu_at_settled = 0, peak_at_settled = 0;
  size_t heap_at_settled = 0;
  std::vector<double> early_ms, late_ms;
  for (int f = 0; f < frames; ++f) {
    Scene scene = base;
    if ((f / 5) % 2 == 1) {
      SceneObject o;
      o.name = "extra";
      o.cloud = extra[static_cast<size_t>(f / 10) % extra.size()];
      o.object_to_world = Mat4::fromLinearTranslation(Mat3{}, {-0.4f, 0, 0.2f});
      scene.objects.push_back(o);
    }
    if ((f / 7) % 2 == 1) scene.objects.push_back(model);
    const int w = (f / 50) % 2 ? 80 : 64, h = (f / 50) % 2 ? 60 : 48;
    const float a = 0.05f * static_cast<float>(f);
    const Camera cam =
        lookAtCamera(Vec3{3.2f * std::sin(a), -0.3f, -3.2f * std::cos(a)}, {0, 0, 0}, {0, -1, 0}, 50, w, h);
    const auto t0 = std::chrono::steady_clock::now();
    const FrameResult r = driver.render(scene, playback, {0.02 * f, cam, {}, {}});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(r.image.width, w);
    if (f >= settled && f < settled + 60) early_ms.push_back(ms);
    if (f >= frames - 60) late_ms.push_back(ms);
    if (f == settled)
      gpu_at_settled = ctx.allocatedBytes(), peak_at_settled = ctx.peakAllocatedBytes(),
      heap_at_settled = liveHeapBytes();
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const size_t heap_end = liveHeapBytes();
  const double heap_growth = static_cast<double>(heap_end) - static_cast<double>(heap_at_settled);
  std::printf(
      "soak: GPU memory %.2f MB at frame %d, %.2f MB at the end (peak %.2f); heap %+.3f MB; frame %.2f -> "
      "%.2f ms (median)\n",
      static_cast<double>(gpu_at_settled) / 1e6, settled, static_cast<double>(ctx.allocatedBytes()) / 1e6,
      static_cast<double>(ctx.peakAllocatedBytes()) / 1e6, heap_growth / 1e6, median(early_ms),
      median(late_ms));
  EXPECT_EQ(ctx.peakAllocatedBytes(), peak_at_settled)
      << "GPU memory grew past its high-water mark after every configuration was seen";
  EXPECT_LE(ctx.allocatedBytes(), peak_at_settled);
  EXPECT_LT(heap_growth, 1e6) << "the live heap grew by " << heap_growth << " bytes over " << frames - settled
                              << " frames";
  EXPECT_LT(median(late_ms), 2.0 * median(early_ms) + 5.0) << "frame time drifted";
}

// A lost device (injected: the context's next submit fails as VK_ERROR_DEVICE_LOST does, after the work ran)
// is reported with the pass that was running, the driver replaces the device, and the next frame renders the
// same image as before the loss, on the new device, with its GPU memory counted afresh.
TEST(FrameDriver, LostDeviceIsNamedAndReplaced) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  FrameDriver driver(vk);
  const Scene scene = oneCloud(std::make_shared<const GaussianCloud>(test::randomCloud(1500, 1, 71)));
  const FrameRequest request{0, autoCamera(scene, 80, 60), {}, {}};
  const ImageRGBA before = driver.render(scene, request).image;
  gpu::Context& ctx = driver.vulkan()->context();
  ctx.failSubmitsFrom(ctx.submits() + 1);
  const std::string what = test::errorOf([&] { driver.render(scene, request); });
  EXPECT_NE(what.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << what;
  EXPECT_NE(what.find("the last pass whose start was recorded was 'readback'"), std::string::npos)
      << what;                                                // the work itself had run
  EXPECT_NE(what.find("raster"), std::string::npos) << what;  // the frame's passes listed
  EXPECT_NE(what.find("made a new device"), std::string::npos) << what;
  EXPECT_EQ(driver.deviceResets(), 1);
  ASSERT_TRUE(driver.usesVulkan());  // ctx is gone with the lost device: only the new one is asked
  EXPECT_FALSE(driver.vulkan()->context().lost());
  const FrameResult after = driver.render(scene, request);
  EXPECT_EQ(after.image.pixels, before.pixels);
  // The error is a gpu::DeviceLost (what Python turns into DeviceLostError).
  gpu::Context& again = driver.vulkan()->context();
  again.failSubmitsFrom(again.submits() + 1);
  EXPECT_THROW(driver.render(scene, request), gpu::DeviceLost);
  EXPECT_EQ(driver.render(scene, request).image.pixels, before.pixels);
  EXPECT_EQ(driver.deviceResets(), 2);
}

// A device lost while a frame's raster slices run (RenderSettings::raster_slice, a slice per submission): the
// error names the slice, the driver makes a new device, and the next frame is the sliced image, which is the
// unsplit one. The FrameDriver's settings carry the slice size through to the renderer and its figures back.
TEST(FrameDriver, LostDeviceInARasterSliceIsNamedAndReplaced) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  FrameDriver driver(vk);
  const Scene scene = oneCloud(std::make_shared<const GaussianCloud>(test::randomCloud(1500, 1, 72)));
  FrameRequest request{0, autoCamera(scene, 80, 60), {}, {}};
  request.settings.raster_slice = 0;
  const FrameResult whole = driver.render(scene, request);
  EXPECT_EQ(whole.gpu.raster_slices, 0);
  ASSERT_GT(whole.gpu.longest_tile, 64u * 3) << "the test needs a tile of more than three slices";
  request.settings.raster_slice = 64;
  const FrameResult sliced = driver.render(scene, request);
  EXPECT_EQ(static_cast<uint64_t>(sliced.gpu.raster_slices), (whole.gpu.longest_tile + 63) / 64);
  EXPECT_EQ(sliced.gpu.submissions, sliced.gpu.raster_slices + 1);
  EXPECT_NE(sliced.timing().find("slices"), std::string::npos) << sliced.timing();
  EXPECT_EQ(sliced.image.pixels, whole.image.pixels);
  gpu::Context& ctx = driver.vulkan()->context();
  ctx.failSubmitsFrom(ctx.submits() +
                      3);  // the frame's submission, the first slice's, then the second slice's
  const std::string what = test::errorOf([&] { driver.render(scene, request); });
  EXPECT_NE(what.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << what;
  EXPECT_NE(what.find("raster slice 2 of " + std::to_string(sliced.gpu.raster_slices)), std::string::npos)
      << what;
  EXPECT_NE(what.find("made a new device"), std::string::npos) << what;
  EXPECT_EQ(driver.deviceResets(), 1);
  EXPECT_EQ(driver.render(scene, request).image.pixels, whole.image.pixels);
}

// The soak (frame/soak.h): each input is in the frame on its own period and the size alternates as
// documented (counted here from the schedule), the GPU memory never grows past the half-way high-water mark,
// and the plot has its three panels.
TEST(Soak, InputsComeAndGoOnTheirPeriodsAndMemoryStaysFlat) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  FrameDriverOptions vk;
  vk.backend = Backend::kVulkan;
  FrameDriver driver(vk);
  std::vector<SoakInput> inputs;
  const int periods[3] = {0, 10, 7};
  for (int k = 0; k < 3; ++k)
    inputs.push_back({"cloud " + std::to_string(k),
                      oneCloud(std::make_shared<const GaussianCloud>(
                          test::randomCloud(500 + 300 * static_cast<size_t>(k), 1, 60 + k))),
                      periods[k], Vec3{1.5f * static_cast<float>(k), 0, 0}});
  SoakOptions o;
  o.frames = 120;
  o.width = 96, o.height = 64;
  o.resize_every = 25;
  o.sample_every = 3;
  o.warmup = 8;
  size_t calls = 0;
  const SoakReport r = runSoak(driver, inputs, o, [&](const SoakSample&) { ++calls; });
  ASSERT_EQ(r.samples.size(), 41u);  // frames 0, 3, ..., 117 and the last, 119
  EXPECT_EQ(calls, r.samples.size());
  for (const SoakSample& s : r.samples) {
    SCOPED_TRACE(s.frame);
    const bool warm = s.frame < o.warmup;  // every input at once
    const bool second = warm || (s.frame / 10) % 2 == 1, third = warm || (s.frame / 7) % 2 == 1;
    EXPECT_EQ(s.objects, 1u + second + third);
    EXPECT_EQ(s.splats, 500u + (second ? 800u : 0u) + (third ? 1100u : 0u));
    const bool small = (s.frame / 25) % 2 == 1;
    EXPECT_EQ(s.width, small ? 72 : 96);
    EXPECT_EQ(s.height, small ? 48 : 64);
    EXPECT_GT(s.gpu_bytes, 0u);
    EXPECT_GT(s.rss_bytes, 0u);
  }
  // Every configuration has been seen by half-way: the GPU memory of the second half never passes the
  // high-water mark of the first (it moves below it as objects come and go).
  EXPECT_EQ(r.gpu_peak_bytes, r.gpu_peak_at_half);
  for (const SoakSample& s : r.samples) EXPECT_LE(s.gpu_bytes, r.gpu_peak_at_half) << s.frame;
  EXPECT_EQ(r.validation_errors, 0u);
  EXPECT_GT(r.early_ms, 0.0);
  EXPECT_GT(r.late_ms, 0.0);
  const ImageRGBA plot = plotSoak(r);
  EXPECT_EQ(plot.width, 900);
  // Three panels: three curves in their colours.
  size_t blue = 0, orange = 0, green = 0;
  for (size_t i = 0; i < plot.pixels.size(); i += 4) {
    const float* p = plot.pixels.data() + i;
    blue += p[0] < 0.2f && p[2] > 0.7f;
    orange += p[0] > 0.8f && p[2] < 0.1f;
    green += p[1] > 0.55f && p[0] < 0.2f && p[2] < 0.3f;
  }
  EXPECT_GT(blue, 500u);
  EXPECT_GT(orange, 500u);
  EXPECT_GT(green, 500u);
}

}  // namespace
}  // namespace sf
