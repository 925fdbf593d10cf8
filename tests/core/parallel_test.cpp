// parallelFor over the persistent worker pool: every index exactly once whatever the thread count (the pool
// grows when more threads are asked for), nested calls run serially, the first exception reaches the caller
// and the pool keeps working after it, callers on different threads all finish, and a task waiting on another
// thread's parallelFor finishes too (no deadlock), and a job started while another holds every worker gains
// them when that one ends.
#include "core/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/parallel_sort.h"

namespace sf {
namespace {

struct ThreadCount {
  explicit ThreadCount(const char* n) { setenv("SPLATFORGE_THREADS", n, 1); }
  ~ThreadCount() { unsetenv("SPLATFORGE_THREADS"); }
};

TEST(Parallel, EveryIndexOnceForAnyThreadCount) {
  for (const char* threads : {"1", "3", "8", "2", "16"}) {
    ThreadCount tc(threads);
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      std::vector<std::atomic<int>> hits(count);
      parallelFor(count, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " threads, index " << i << " of " << count;
    }
  }
}

TEST(Parallel, RangesCoverEveryIndexOnce) {
  ThreadCount tc("4");
  std::vector<std::atomic<int>> hits(1001);
  parallelForRange(hits.size(), 16, [&](size_t begin, size_t end) {
    EXPECT_LE(end - begin, 16u);
    for (size_t i = begin; i < end; ++i) hits[i].fetch_add(1);
  });
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << i;
}

TEST(Parallel, NestedCallsRunSeriallyOnTheirThread) {
  ThreadCount tc("4");
  std::atomic<int> total{0};
  parallelFor(8, [&](size_t) {
    const std::thread::id outer = std::this_thread::get_id();
    parallelFor(10, [&](size_t) {
      EXPECT_EQ(std::this_thread::get_id(), outer);
      total.fetch_add(1);
    });
  });
  EXPECT_EQ(total.load(), 80);
}

TEST(Parallel, FirstExceptionReachesTheCallerAndThePoolKeepsWorking) {
  ThreadCount tc("4");
  EXPECT_THROW(parallelFor(100,
                           [](size_t i) {
                             if (i == 37) throw std::runtime_error("item 37");
                           }),
               std::runtime_error);
  std::atomic<size_t> sum{0};
  parallelFor(100, [&](size_t i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 4950u);
}

TEST(Parallel, CallersOnDifferentThreadsAllFinish) {
  ThreadCount tc("4");
  std::atomic<size_t> sums[3] = {0, 0, 0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 50; ++round) parallelFor(64, [&](size_t i) { sums[c].fetch_add(i); });
    });
  for (std::thread& t : callers) t.join();
  for (const auto& s : sums) EXPECT_EQ(s.load(), 50u * 2016u);
}

// A task of one parallelFor waits for another thread whose own parallelFor needs the pool the first one
// holds: with callers taking turns for the pool this never returned. The scenario runs on a thread of its
// own, so that a deadlock fails the test after a minute instead of hanging it.
TEST(Parallel, ATaskWaitingOnAnotherThreadsParallelForFinishes) {
  ThreadCount tc("4");
  auto scenario = std::async(std::launch::async, [] {
    std::atomic<size_t> inner{0}, outer{0};
    parallelFor(8, [&](size_t i) {
      if (i == 0) {
        std::thread other([&] { parallelFor(100, [&](size_t k) { inner.fetch_add(k); }); });
        other.join();  // waits on the other thread's parallelFor while this one holds the pool
      }
      outer.fetch_add(1);
    });
    return std::pair<size_t, size_t>(inner.load(), outer.load());
  });
  if (scenario.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr,
                 "parallelFor deadlocked: a task waiting on another thread's parallelFor never returned\n");
    std::_Exit(1);  // the deadlocked threads cannot be joined
  }
  const auto [inner, outer] = scenario.get();
  EXPECT_EQ(inner, 4950u);
  EXPECT_EQ(outer, 8u);
}

// Two threads' jobs at once (the level-of-detail cut's thread and the frame's): job B starts while job A
// holds every worker, runs on its caller alone while A does, and once A ends the workers take B's remaining
// items. (With a pool that one job held at a time, B ran on its caller alone to the end.)
TEST(Parallel, AJobStartedWhileAnotherHoldsTheWorkersGainsThemWhenItEnds) {
  // More threads than any other test asks for, so that A's helpers are every worker of the pool.
  ThreadCount tc("48");
  std::atomic<bool> release{false};
  std::atomic<int> a_inside{0};
  std::thread a([&] {
    parallelFor(48, [&](size_t) {  // every thread of the pool held until released
      a_inside.fetch_add(1);
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  while (a_inside.load() < 48) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::mutex m;
  std::set<std::thread::id> before, after;
  std::atomic<int> done{0};
  parallelFor(400, [&](size_t i) {
    if (i == 20) release.store(true);  // A ends while B runs
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard<std::mutex> lock(m);
    (release.load() ? after : before).insert(std::this_thread::get_id());
    done.fetch_add(1);
  });
  a.join();
  EXPECT_EQ(done.load(), 400);
  EXPECT_EQ(before.size(), 1u);  // B's caller alone while A held the workers
  EXPECT_GE(after.size(), 3u) << "the workers did not take the job once the other one ended";
}

// parallelSort against std::sort: every size around its thresholds (serial below 32,768; stretches of at
// least 16,384), for several thread counts, with keys drawn from a small range (long runs of equal keys that
// the merge path must split across pieces) and from a large one. Equal keys may end in any order: the result
// must be sorted by key and hold the same elements.
TEST(Parallel, SortMatchesTheStandardSort) {
  using Item = std::pair<uint32_t, uint32_t>;  // (key, payload)
  auto byKey = [](const Item& a, const Item& b) { return a.first < b.first; };
  std::mt19937 rng(7);
  for (const char* threads : {"1", "3", "8"}) {
    ThreadCount tc(threads);
    for (size_t n :
         {size_t{0}, size_t{1}, size_t{1000}, size_t{32767}, size_t{32768}, size_t{65537}, size_t{300001}})
      for (uint32_t range : {16u, 1u << 30}) {
        SCOPED_TRACE(std::string(threads) + " threads, " + std::to_string(n) + " items, keys below " +
                     std::to_string(range));
        std::vector<Item> v(n), scratch;
        for (size_t i = 0; i < n; ++i)
          v[i] = {static_cast<uint32_t>(rng() % range), static_cast<uint32_t>(i)};
        std::vector<Item> expected = v;
        std::sort(expected.begin(), expected.end());
        parallelSort(v, byKey, scratch);
        ASSERT_TRUE(std::is_sorted(v.begin(), v.end(), byKey));
        std::sort(v.begin(), v.end());  // (equal keys in payload order: the same elements, or not)
        ASSERT_EQ(v, expected);
      }
  }
}

}  // namespace
}  // namespace sf
