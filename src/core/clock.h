// Host time of a step, for the timings the engine reports (frame stats, training, benchmarks).
#pragma once

#include <chrono>

namespace sf {

using Clock = std::chrono::steady_clock;

// Milliseconds from t0 to now.
inline double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace sf
