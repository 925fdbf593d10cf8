// Vulkan frames from several threads under ThreadSanitizer (the thread_tests program, tests/CMakeLists.txt),
// on whatever Vulkan device exists (Mesa lavapipe in CI) with the validation layer on, as in every GPU suite.
// One renderer is shared by every thread: its renders hold its context's lock for the whole frame
// (gpu::Context::lock), so frames from four threads at once equal the serial frames bit for bit, a frame
// runs while another thread changes and uploads the scene it renders next, and other work on the renderer's
// context from another thread waits for its frames. A data race in our code fails the run (the sanitizer
// exits non-zero with its report); the layer's thread checks report a queue, command pool or command buffer
// used from two threads at once as a validation error, which fails the test too. The driver and the layer are
// not instrumented: what their interceptor calls do is suppressed (threads/tsan_suppressions.txt).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu.h"
#include "render/vulkan_renderer.h"
#include "support/gpu_support.h"
#include "threads/thread_scene.h"

namespace sf {
namespace {

using thread_test::cameraAt;
using thread_test::cloudOf;

// Frames on lavapipe take a few hundred milliseconds under the sanitizer, and wait for each other.
constexpr int kWatchdogSeconds = 300;

bool strictCi() {
  const char* ci = std::getenv("CI");
  return ci && (std::string(ci) == "true" || std::string(ci) == "1");
}

// Declares `var`, the shared renderer; skips without a Vulkan device, and fails then under CI=true (a test
// that cannot run is an error there).
#define REQUIRE_RENDERER(var)                                                                         \
  VulkanRenderer* var = test::gpuRenderer();                                                          \
  if (!var) {                                                                                         \
    if (strictCi()) GTEST_FAIL() << "no Vulkan device [CI=true: a test that cannot run is an error]"; \
    GTEST_SKIP() << "no Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)";     \
  }                                                                                                   \
  const uint32_t validation_before = var->context().validationErrors()

#define EXPECT_VALIDATION_CLEAN(var)                              \
  EXPECT_EQ(var->context().validationErrors(), validation_before) \
      << "Vulkan validation errors:\n"                            \
      << var->context().validationReport(validation_before)

// Some pixel is covered: a frame of nothing would equal every other frame of nothing.
bool drawsSomething(const ImageRGBA& img) {
  for (size_t i = 3; i < img.pixels.size(); i += 4)
    if (img.pixels[i] > 0.01f) return true;
  return false;
}

ImageRGBA renderOne(VulkanRenderer& r, const RenderObject& object, const Camera& cam) {
  return r.render({&object, 1}, cam, {});
}

TEST(Threads, VulkanFramesFromSeveralThreadsOnOneRendererEqualTheSerialFrames) {
  REQUIRE_RENDERER(r);
  const GaussianCloud cloud = cloudOf(3000, 11);
  const RenderObject object{&cloud, Mat4{}};
  constexpr int kThreads = 4, kFrames = 3;
  auto camera = [](int i) { return cameraAt(0.03f * static_cast<float>(i)); };
  std::vector<ImageRGBA> serial;
  for (int i = 0; i < kThreads * kFrames; ++i) serial.push_back(renderOne(*r, object, camera(i)));
  ASSERT_TRUE(drawsSomething(serial[0]));
  ASSERT_NE(serial[0].pixels, serial[1].pixels)
      << "the cameras must give different frames, or a frame given to the wrong thread would pass";
  std::vector<ImageRGBA> parallel(serial.size());
  thread_test::finishesWithin(
      kWatchdogSeconds,
      [&] {
        std::atomic<int> ready{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
          threads.emplace_back([&, t] {
            ++ready;
            while (ready.load() < kThreads) std::this_thread::yield();  // all four ask at once
            for (int f = 0; f < kFrames; ++f) {
              const int i = t * kFrames + f;
              parallel[static_cast<size_t>(i)] = renderOne(*r, object, camera(i));
            }
          });
        for (std::thread& th : threads) th.join();
      },
      "four threads rendering on one Vulkan renderer");
  for (size_t i = 0; i < serial.size(); ++i) EXPECT_EQ(parallel[i].pixels, serial[i].pixels) << "frame " << i;
  EXPECT_VALIDATION_CLEAN(r);
}

// One thread renders a static cloud while another, between its own frames, rewrites a dynamic cloud in place
// (uploaded again every frame) and makes a new cloud of another size (a new upload, the sinks regrown and
// their free ranges reused): the scene each renders next changes while the other's frame runs.
TEST(Threads, AVulkanFrameWhileAnotherThreadChangesAndUploadsTheSceneItRendersNext) {
  REQUIRE_RENDERER(r);
  constexpr int kFrames = 5;
  const GaussianCloud still = cloudOf(3000, 21);
  auto stillCamera = [](int k) { return cameraAt(0.02f * static_cast<float>(k)); };
  auto movingCamera = [](int k) { return cameraAt(-0.02f * static_cast<float>(k)); };
  auto extraSize = [](int k) { return static_cast<size_t>(500 + 700 * k); };
  std::vector<ImageRGBA> still_frames(kFrames), moving_frames(kFrames);
  thread_test::finishesWithin(
      kWatchdogSeconds,
      [&] {
        std::thread renders([&] {
          const RenderObject object{&still, Mat4{}};
          for (int k = 0; k < kFrames; ++k)
            still_frames[static_cast<size_t>(k)] = renderOne(*r, object, stillCamera(k));
        });
        std::thread changes([&] {
          GaussianCloud dynamic;
          for (int k = 0; k < kFrames; ++k) {
            dynamic = cloudOf(
                2000, 100 + static_cast<uint64_t>(k));  // same size, same address: dynamic says it changed
            const GaussianCloud extra = cloudOf(extraSize(k), 200 + static_cast<uint64_t>(k));
            RenderObject objects[2] = {{&dynamic, Mat4{}}, {&extra, Mat4{}}};
            objects[0].dynamic = true;
            moving_frames[static_cast<size_t>(k)] = r->render(objects, movingCamera(k), {});
          }
        });
        renders.join();
        changes.join();
      },
      "a thread rendering while another changes its scene");
  // The same frames one after the other.
  for (int k = 0; k < kFrames; ++k) {
    const RenderObject object{&still, Mat4{}};
    EXPECT_EQ(still_frames[static_cast<size_t>(k)].pixels, renderOne(*r, object, stillCamera(k)).pixels)
        << "still frame " << k;
    GaussianCloud dynamic = cloudOf(2000, 100 + static_cast<uint64_t>(k));
    const GaussianCloud extra = cloudOf(extraSize(k), 200 + static_cast<uint64_t>(k));
    RenderObject objects[2] = {{&dynamic, Mat4{}}, {&extra, Mat4{}}};
    objects[0].dynamic = true;
    const ImageRGBA expected = r->render(objects, movingCamera(k), {});
    ASSERT_TRUE(drawsSomething(expected));
    EXPECT_EQ(moving_frames[static_cast<size_t>(k)].pixels, expected.pixels) << "changed frame " << k;
  }
  EXPECT_VALIDATION_CLEAN(r);
}

// Work of another module on the renderer's context (a fill written and read back through a host-visible
// buffer, as the neural executor's runs and the deform passes do) holds the context's lock from begin() to
// its read-back, so it never meets a frame on the queue or the command pool: while it holds the lock the
// renderer submits nothing (the context's submit count moves by its own submit alone), and each read sees its
// own fill.
TEST(Threads, WorkOnTheRenderersContextFromAnotherThreadWaitsForItsFrames) {
  REQUIRE_RENDERER(r);
  gpu::Context& ctx = r->context();
  const GaussianCloud cloud = cloudOf(3000, 31);
  const RenderObject object{&cloud, Mat4{}};
  constexpr int kFrames = 4;
  auto camera = [](int k) { return cameraAt(0.05f * static_cast<float>(k)); };
  std::vector<ImageRGBA> frames(kFrames);
  std::atomic<bool> rendering{true};
  int fills_done = 0, wrong_fills = 0, interleaved = 0;
  gpu::Buffer words = ctx.createBuffer(4096, true, "thread test fills");
  thread_test::finishesWithin(
      kWatchdogSeconds,
      [&] {
        std::thread renders([&] {
          for (int k = 0; k < kFrames; ++k) frames[static_cast<size_t>(k)] = renderOne(*r, object, camera(k));
          rendering = false;
        });
        std::thread fills([&] {
          for (uint32_t k = 1; rendering.load() || k <= 10; ++k) {
            const auto lock = ctx.lock();
            const uint64_t submits_before = ctx.submits();
            VkCommandBuffer cmd = ctx.begin();
            vkCmdFillBuffer(cmd, words.buffer, 0, VK_WHOLE_SIZE, k);
            ctx.submit(cmd, "a thread test's fill");
            std::this_thread::yield();  // room for a frame that did not wait for the lock
            const auto* w = static_cast<const uint32_t*>(words.mapped);
            for (size_t i = 0; i < 1024; ++i)
              if (w[i] != k) {
                ++wrong_fills;
                break;
              }
            if (ctx.submits() != submits_before + 1) ++interleaved;
            ++fills_done;
          }
        });
        renders.join();
        fills.join();
      },
      "a thread filling buffers while another renders");
  EXPECT_EQ(wrong_fills, 0) << "of " << fills_done << " fills";
  EXPECT_EQ(interleaved, 0) << "of " << fills_done << " fills had another submit inside their lock";
  for (int k = 0; k < kFrames; ++k)
    EXPECT_EQ(frames[static_cast<size_t>(k)].pixels, renderOne(*r, object, camera(k)).pixels)
        << "frame " << k;
  EXPECT_VALIDATION_CLEAN(r);
}

}  // namespace
}  // namespace sf
