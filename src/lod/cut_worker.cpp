// The cut made on a thread of its own (lod/cut_worker.h).
#include "lod/cut_worker.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace sf::lod {

CutWorker::CutWorker() : thread_([this] { main(); }) {}

CutWorker::~CutWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (const std::shared_ptr<LodStream>& s : streams_) s->setBackground(false);
}

void CutWorker::start(std::vector<std::shared_ptr<LodStream>> streams, std::vector<Camera> cameras,
                      uint64_t budget) {
  if (streams.size() != cameras.size()) throw Error("level-of-detail cut worker: one camera per stream");
  std::lock_guard<std::mutex> lock(mutex_);
  if (busy_ || finished_)
    throw Error(std::string("level-of-detail cut worker: ") +
                (busy_ ? "a cut is already being made" : "the finished cut was not taken"));
  for (const std::shared_ptr<LodStream>& s : streams_)  // streams this cut leaves out are the frame's again
    if (std::find(streams.begin(), streams.end(), s) == streams.end()) s->setBackground(false);
  for (const std::shared_ptr<LodStream>& s : streams) s->setBackground(true);
  streams_ = std::move(streams), cameras_ = std::move(cameras), budget_ = budget;
  job_ = busy_ = true;
  wake_.notify_all();
}

bool CutWorker::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_;
}

bool CutWorker::working() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_ || finished_;
}

bool CutWorker::sameRequest(const std::vector<Camera>& cameras, uint64_t budget) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (budget != budget_ || cameras.size() != cameras_.size()) return false;
  for (size_t i = 0; i < cameras.size(); ++i) {
    const Camera &a = cameras[i], &b = cameras_[i];
    if (a.width != b.width || a.height != b.height || a.fx != b.fx || a.fy != b.fy || a.cx != b.cx ||
        a.cy != b.cy || std::memcmp(&a.world_to_camera, &b.world_to_camera, sizeof(Mat4)) != 0)
      return false;
  }
  return true;
}

bool CutWorker::takeFinished() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (busy_ || !finished_) return false;
  finished_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return true;
}

void CutWorker::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return !busy_; });
}

void CutWorker::release() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return !busy_; });
  finished_ = false, error_ = nullptr;
  for (const std::shared_ptr<LodStream>& s : streams_) s->setBackground(false);
}

void CutWorker::setBeforeCut(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  before_cut_ = std::move(hook);
}

uint64_t CutWorker::cutsFinished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cuts_;
}

void CutWorker::main() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || job_; });
    if (stop_) return;
    job_ = false;
    std::vector<LodStream*> streams;
    for (const std::shared_ptr<LodStream>& s : streams_) streams.push_back(s.get());
    const std::vector<Camera> cameras = cameras_;
    const uint64_t budget = budget_;
    const std::function<void()> hook = before_cut_;
    lock.unlock();
    std::exception_ptr error;
    if (hook) hook();
    try {
      selectFrameCuts(streams, cameras, budget, false, true);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false, finished_ = true, error_ = error;
    ++cuts_;
    done_.notify_all();
  }
}

}  // namespace sf::lod
