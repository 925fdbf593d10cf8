// A frame as a declared graph of passes. Each pass names the resources (buffers, images) it reads and
// writes and records its commands through a callback; the graph derives where the frame needs a memory
// barrier from those declarations, so that a pass is added without touching the others.
//
// Passes run in the order they are added (the order is the frame's data flow; there is no reordering).
// A barrier goes before a pass that reads or writes a resource written since the last barrier (read or
// write after write), or that writes a resource read since the last barrier (write after read). Passes
// that only read what an earlier barrier already made visible share one barrier-free stretch. A pass made
// of several dispatches keeps its own barriers between them; the graph handles the ones between passes.
//
// The graph holds no GPU types: `run` takes the barrier as a callback, so the plan is testable on its own.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace sf {

class FrameGraph {
 public:
  // Declares a resource by name (names are for errors and describe()); returns its id.
  uint32_t resource(const std::string& name);

  // Appends a pass. `enabled` false keeps it in describe() but records nothing and takes part in no
  // hazard (an object-less frame has no deform pass). Throws sf::Error for an unknown resource id.
  void add(const std::string& name, std::initializer_list<uint32_t> reads,
           std::initializer_list<uint32_t> writes, std::function<void()> record, bool enabled = true);

  struct Step {
    size_t pass;          // index in passes()
    bool barrier_before;  // a memory barrier is recorded before this pass
  };
  // The enabled passes in order, each with whether a barrier precedes it.
  std::vector<Step> plan() const;
  size_t barrierCount() const;

  // Records the plan: barrier() where a step needs one, then `before_pass` (when given) with the pass's index
  // in passes(), then the pass's own callback.
  void run(const std::function<void()>& barrier,
           const std::function<void(size_t pass)>& before_pass = {}) const;

  // One line per pass: "name: reads a, b; writes c" (disabled passes marked), with "| barrier" lines.
  std::string describe() const;

  struct Pass {
    std::string name;
    std::vector<uint32_t> reads, writes;
    std::function<void()> record;
    bool enabled = true;
  };
  const std::vector<Pass>& passes() const { return passes_; }

 private:
  std::vector<std::string> resources_;
  std::vector<Pass> passes_;
};

}  // namespace sf
