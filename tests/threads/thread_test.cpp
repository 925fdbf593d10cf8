// Threads under ThreadSanitizer (built with -fsanitize=thread from the sources it needs: core, the CPU
// frame, the PLY reader, the Vulkan renderer; tests/CMakeLists.txt; its Vulkan tests are in
// vulkan_thread_test.cpp): CPU frames rendered from several threads at once equal the
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
#include "threads/thread_scene.h"

namespace sf {
namespace {

using thread_test::cameraAt;
using thread_test::cloudOf;

void finishesWithinAMinute(const std::function<void()>& fn, const char* what) {
  thread_test::finishesWithin(60, fn, what);
}

TEST(Threads, CpuFramesFromSeveralThreadsEqualTheSerialFrames) {
  const GaussianCloud cloud = cloudOf(4000, 11);
  const RenderObject objs[1] = {{&cloud, Mat4{}}};
  constexpr int kThreads = 4, kFrames = 3;
  std::vector<ImageRGBA> serial;
  for (int i = 0; i < kThreads * kFrames; ++i)
    serial.push_back(renderCpu(objs, cameraAt(0.02f * static_cast<float>(i)), {}));
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
