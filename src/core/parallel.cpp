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
// as posing a thousand skeletons. run() offers `work` to up to `helpers` of them, calls it on the caller's
// thread too, and returns once every helper that took it has returned from it (`work` pulls items until none
// is left, so the caller never waits for a helper to start). Jobs of different threads run at the same
// time: a free worker takes the oldest job that still wants helpers, so a job that starts while another
// holds every worker runs on its caller alone at first and gains the workers as the other job finishes
// (the level-of-detail cut's thread and the frame's thread both use the pool; one never runs on a single
// core for the length of the other's work). No caller waits for another's job: waiting would deadlock
// when the job holding the workers waits on that caller (a task that waits for another thread's
// parallelFor). The pool grows to the largest number of helpers asked for and is never destroyed: its
// threads wait until the process ends.
class WorkerPool {
 public:
  void run(unsigned helpers, const std::function<void()>& work) {
    Job job{&work, helpers};
    {
      std::lock_guard<std::mutex> lock(m_);
      while (workers_.size() < helpers) workers_.emplace_back([this] { loop(); });
      jobs_.push_back(&job);
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(m_);
    jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));  // (no helper takes it from now on)
    done_.wait(lock, [&] { return job.inside == 0; });
  }

 private:
  struct Job {
    const std::function<void()>* work;
    unsigned wanted;      // helpers it asked for
    unsigned taken = 0;   // helpers that took it so far
    unsigned inside = 0;  // helpers running its work now
  };

  Job* next() const {  // (under m_) the oldest job that wants more helpers
    for (Job* j : jobs_)
      if (j->taken < j->wanted) return j;
    return nullptr;
  }

  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return next() != nullptr; });
      Job* job = next();
      ++job->taken, ++job->inside;
      lock.unlock();
      (*job->work)();
      lock.lock();
      if (--job->inside == 0) done_.notify_all();
    }
  }

  std::mutex m_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  std::vector<Job*> jobs_;  // jobs being run, oldest first
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
