// Threads under ThreadSanitizer (built with -fsanitize=thread from the sources it needs: core, the CPU
// frame, the PLY reader; tests/CMakeLists.txt): CPU frames rendered from several threads at once equal the
// serial frames, a task that waits on another thread's parallelFor does not deadlock, and loads with their
// own per-thread limits run side by side. A data race or a lock-order inversion fails the run (the sanitizer
// exits non-zero with its report).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/limits.h"
#include "core/parallel.h"
#include "core/random.h"
#include "io/ply.h"
#include "render/cpu_renderer.h"

namespace sf {
namespace {

// Splats in front of the camera (core/random.h): SH degree 1, sizes of a few pixels.
GaussianCloud cloudOf(size_t n, uint64_t seed) {
  GaussianCloud c;
  c.resize(n, 1);
  auto uniform = [&] { return unitFloat(splitmix64Next(seed)); };
  for (size_t i = 0; i < n; ++i) {
    c.positions[i] = {2.0f * uniform() - 1.0f, 1.5f * uniform() - 0.75f, 3.0f + uniform()};
    const float s = 0.01f + 0.03f * uniform();
    c.scales[i] = {s, s * (0.5f + uniform()), s};
    c.rotations[i] = normalize(Quat{uniform() - 0.5f, uniform() - 0.5f, uniform() - 0.5f, uniform() - 0.5f});
    c.opacities[i] = 0.2f + 0.7f * uniform();
    for (float& v : c.shOf(i)) v = uniform() - 0.5f;
  }
  return c;
}

Camera cameraAt(float x) {
  Camera c;
  c.width = 96;
  c.height = 72;
  c.fx = c.fy = 90;
  c.cx = 48;
  c.cy = 36;
  c.world_to_camera = Mat4{};
  c.world_to_camera.m[0][3] = x;
  return c;
}

// Runs `fn` on a thread and fails (rather than hanging the suite) if it takes longer than a minute.
void finishesWithinAMinute(const std::function<void()>& fn, const char* what) {
  auto done = std::async(std::launch::async, fn);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(60)), std::future_status::ready) << what << ": still running after 60 s (a deadlock)";
  done.get();
}

TEST(Threads, CpuFramesFromSeveralThreadsEqualTheSerialFrames) {
  const GaussianCloud cloud = cloudOf(4000, 11);
  const RenderObject objs[1] = {{&cloud, Mat4{}}};
  constexpr int kThreads = 4, kFrames = 3;
  std::vector<ImageRGBA> serial;
  for (int i = 0; i < kThreads * kFrames; ++i) serial.push_back(renderCpu(objs, cameraAt(0.02f * static_cast<float>(i)), {}));
  std::vector<ImageRGBA> parallel(serial.size());
  finishesWithinAMinute(
      [&] {
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
          threads.emplace_back([&, t] {
            for (int f = 0; f < kFrames; ++f) {
              const int i = t * kFrames + f;
              parallel[static_cast<size_t>(i)] = renderCpu(objs, cameraAt(0.02f * static_cast<float>(i)), {});
            }
          });
        for (std::thread& th : threads) th.join();
      },
      "four threads rendering");
  for (size_t i = 0; i < serial.size(); ++i) EXPECT_EQ(parallel[i].pixels, serial[i].pixels) << "frame " << i;
}

// parallel.h: a parallelFor called while another thread's holds the pool runs on its caller's thread, so a
// task of one may wait for another thread's parallelFor to finish.
TEST(Threads, ATaskWaitingOnAnotherThreadsParallelForFinishes) {
  finishesWithinAMinute(
      [] {
        std::promise<long> other_done;
        std::shared_future<long> other = other_done.get_future().share();
        std::atomic<long> sum{0};
        std::thread b;
        parallelFor(64, [&](size_t i) {
          if (i == 0) {
            // Inside a task of this thread's parallelFor: start another thread's parallelFor and wait for it.
            b = std::thread([&] {
              std::atomic<long> s{0};
              parallelFor(1000, [&](size_t k) { s += static_cast<long>(k); });
              other_done.set_value(s.load());
            });
            sum += other.get();
          }
          sum += 1;
        });
        b.join();
        EXPECT_EQ(sum.load(), 64 + 999 * 1000 / 2);
      },
      "a task waiting on another thread's parallelFor");
}

TEST(Threads, LoadsWithTheirOwnLimitsRunSideBySide) {
  const GaussianCloud cloud = cloudOf(3000, 5);
  const std::vector<uint8_t> bytes = writePly(cloud);
  LoadLimits tight = loadLimits();
  tight.max_gaussians = 100;
  std::atomic<int> loaded{0}, refused{0};
  finishesWithinAMinute(
      [&] {
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
          threads.emplace_back([&, t] {
            for (int k = 0; k < 3; ++k) {
              if (t % 2 == 0) {
                ThreadLoadLimits scope(tight);  // this thread's loads only
                try {
                  readPly(bytes, "tight.ply");
                } catch (const Error&) {
                  ++refused;
                }
              } else {
                if (readPly(bytes, "plain.ply").size() == cloud.size()) ++loaded;
              }
            }
          });
        for (std::thread& th : threads) th.join();
      },
      "loading from four threads");
  EXPECT_EQ(loaded.load(), 6);
  EXPECT_EQ(refused.load(), 6);
}

}  // namespace
}  // namespace sf
