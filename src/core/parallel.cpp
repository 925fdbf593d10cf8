#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
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

// Threads started once and reused by every parallelFor: starting 15 threads per call costs about as much
// as posing a thousand skeletons. run() wakes `helpers` of them to call `work` alongside the caller and
// returns when all have returned from it. A call while another thread's job holds the pool never waits for
// it: its caller does all of its own work (`work` pulls items until none is left). Waiting instead would
// deadlock when the job holding the pool waits on that caller (a task that waits for another thread's
// parallelFor). The pool grows to the largest number of helpers asked for and is never destroyed: its
// threads wait until the process ends.
class WorkerPool {
 public:
  void run(unsigned helpers, const std::function<void()>& work) {
    std::unique_lock<std::mutex> turn(turn_, std::try_to_lock);
    if (!turn.owns_lock()) {  // busy with another thread's job: this caller alone
      work();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      while (workers_.size() < helpers) {
        const size_t index = workers_.size();
        workers_.emplace_back([this, index] { loop(index); });
      }
      job_ = &work;
      helpers_ = helpers;
      pending_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(size_t index) {
    uint64_t seen = 0;  // a worker is created inside run(), just before the job it first sees
    for (;;) {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (index >= helpers_) continue;  // this job asked for fewer helpers
      const std::function<void()>* job = job_;
      lock.unlock();
      (*job)();
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex turn_, m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  const std::function<void()>* job_ = nullptr;
  unsigned helpers_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
};

WorkerPool& workerPool() {
  static WorkerPool* pool = new WorkerPool;  // never destroyed (see WorkerPool)
  return *pool;
}
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
  workerPool().run(threads - 1, worker);
  if (error) std::rethrow_exception(error);
}

void parallelForRange(size_t count, size_t grain, const std::function<void(size_t, size_t)>& fn) {
  grain = std::max<size_t>(grain, 1);
  size_t chunks = (count + grain - 1) / grain;
  parallelFor(chunks, [&](size_t c) { fn(c * grain, std::min(count, (c + 1) * grain)); });
}

}  // namespace sf
