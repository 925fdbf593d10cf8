// What the thread tests share (tests/threads/): a small random scene in front of the camera, cameras that
// differ per frame, and a watchdog that turns a deadlock into a failure. Header-only: the program links no
// test support library, which is built with the other sanitizers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>

#include "core/gaussian_cloud.h"
#include "core/random.h"
#include "render/camera.h"

namespace sf::thread_test {

// Splats in front of the camera (core/random.h): SH degree 1, sizes of a few pixels.
inline GaussianCloud cloudOf(size_t n, uint64_t seed) {
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

// 96x72, moved sideways by x.
inline Camera cameraAt(float x) {
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

// Runs `fn` on a thread and fails (rather than hanging the suite) if it takes longer than `seconds`.
inline void finishesWithin(int seconds, const std::function<void()>& fn, const char* what) {
  auto done = std::async(std::launch::async, fn);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(seconds)), std::future_status::ready)
      << what << ": still running after " << seconds << " s (a deadlock)";
  done.get();
}

}  // namespace sf::thread_test
