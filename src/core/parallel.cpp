#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace sf {

unsigned workerCount() {
  if (const char* env = std::getenv("SPLATFORGE_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {
// Set while a thread runs items of a parallelFor: nested calls then run serially on that thread instead of
// multiplying threads (the outer loop already uses every core).
thread_local bool t_in_parallel = false;

struct InParallel {
  bool previous = t_in_parallel;
  InParallel() { t_in_parallel = true; }
  ~InParallel() { t_in_parallel = previous; }
};
}  // namespace

void parallelFor(size_t count, const std::function<void(size_t)>& fn) {
  if (count == 0) return;
  unsigned threads = static_cast<unsigned>(std::min<size_t>(workerCount(), count));
  if (threads <= 1 || t_in_parallel) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    InParallel mark;
    for (;;) {
      size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(count);
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

void parallelForRange(size_t count, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  grain = std::max<size_t>(grain, 1);
  size_t chunks = (count + grain - 1) / grain;
  parallelFor(chunks, [&](size_t c) { fn(c * grain, std::min(count, (c + 1) * grain)); });
}

}  // namespace sf
