// Minimal data parallelism over std::thread: the CPU backend's work is split into independent items
// (tiles, chunks of splats) pulled from an atomic counter, so load balances across uneven tiles.
#pragma once

#include <cstddef>
#include <functional>

namespace sf {

// Number of worker threads parallelFor uses: hardware concurrency, or SPLATFORGE_THREADS if set (>= 1).
unsigned workerCount();

// Calls fn(i) for every i in [0, count), from up to workerCount() threads (the caller and threads of a
// pool started on first use and kept). fn must be safe to call concurrently for distinct i. A parallelFor
// called from inside another one runs serially on its thread; one called while another thread's holds the
// pool runs on its caller's thread alone, never waiting for the pool (so a task may wait on another thread's
// parallelFor without a deadlock).
// Returns after every call finished; the first exception thrown by fn is rethrown here.
void parallelFor(size_t count, const std::function<void(size_t)>& fn);

// Calls fn(begin, end) over [0, count) split into contiguous ranges of at most `grain` items.
void parallelForRange(size_t count, size_t grain, const std::function<void(size_t, size_t)>& fn);

}  // namespace sf
