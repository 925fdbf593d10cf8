// The cut made on a thread of its own (docs/lod.md "The cut in the background"): a frame that never waits
// (the viewer, `bench --lod`) on the Vulkan backend draws the cut this worker finished last, gathered from
// the objects' GPU pools, while the worker makes the next one for a newer camera. So the frame's rate is the
// GPU's, not the host's cut (hundreds of milliseconds at a 4M budget), and the cut follows the camera at its
// own rate; fades advance a step a cut.
//
// Ownership goes back and forth: while a cut runs the streams are the worker's, and the frame thread calls
// none of their methods but stats() (lod/stream.h setBackground); between cuts (not busy()) they are the
// frame thread's, which hands the finished cut to the GPU pools (GpuPool::prepare) and then starts the next.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "lod/stream.h"
#include "render/camera.h"

namespace sf::lod {

class CutWorker {
 public:
  CutWorker();
  ~CutWorker();  // waits for the cut in progress
  CutWorker(const CutWorker&) = delete;
  CutWorker& operator=(const CutWorker&) = delete;

  // Frame thread, while not working(): selectFrameCuts(streams, cameras, budget, settle = false, fade = true)
  // on the worker's thread. The streams are put in the background (LodStream::setBackground) until release()
  // or the worker's end.
  void start(std::vector<std::shared_ptr<LodStream>> streams, std::vector<Camera> cameras, uint64_t budget);
  bool busy() const;
  // Whether a cut runs or one finished that takeFinished() has not taken (frames go on to draw it).
  bool working() const;
  // Whether `cameras` and `budget` are those of the cut started last (a still camera whose cut has settled
  // under an unchanged budget needs no other).
  bool sameRequest(const std::vector<Camera>& cameras, uint64_t budget) const;
  // Frame thread: true once the cut started last has finished (its streams then hold a cut their GPU pools
  // have not been given). Rethrows what the cut threw.
  bool takeFinished();
  // Frame thread: waits until no cut runs (then takeFinished() says whether one finished). Does not rethrow.
  void wait();
  // Frame thread: waits for the cut in progress and gives the streams back (not in the background: their
  // stats() live again), dropping a finished cut not taken; a frame that cuts on its own thread calls it.
  void release();
  // Tests: runs on the worker's thread before each cut (to hold one while frames are drawn).
  void setBeforeCut(std::function<void()> hook);
  // Cuts finished since the worker started.
  uint64_t cutsFinished() const;

 private:
  void main();
  mutable std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::shared_ptr<LodStream>> streams_;  // of the cut to make or being made
  std::vector<Camera> cameras_;
  uint64_t budget_ = 0;
  bool job_ = false, busy_ = false, finished_ = false, stop_ = false;
  uint64_t cuts_ = 0;
  std::exception_ptr error_;
  std::function<void()> before_cut_;
  std::thread thread_;  // (last: started once the members above are)
};

}  // namespace sf::lod
