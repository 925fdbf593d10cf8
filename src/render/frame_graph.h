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
// A resource may be declared as a *part* of another (one object's range of the frame's splat slots): parts of
// one whole are disjoint, so passes writing different parts share a stretch, while a part conflicts with its
// whole (a pass over every slot) as the whole does with itself. Parts have no parts of their own.
//
// Resources are typed handles (FrameResource), made only by the graph that owns them: a pass cannot name a
// number that is not one of the graph's resources. The graph holds no GPU types: `run` takes the barrier as a
// callback, so the plan is testable on its own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace sf {

class FrameGraph;

// A resource of one frame graph. Default-constructed, it is no resource (valid() false); passes may not
// declare it.
class FrameResource {
 public:
  FrameResource() = default;
  bool valid() const { return id_ != kNone; }
  uint32_t index() const { return id_; }  // the position in the graph's resources (describe, tests)
  friend bool operator==(FrameResource a, FrameResource b) { return a.id_ == b.id_; }

 private:
  friend class FrameGraph;
  static constexpr uint32_t kNone = ~0u;
  explicit FrameResource(uint32_t id) : id_(id) {}
  uint32_t id_ = kNone;
};

class FrameGraph {
 public:
  // Declares a resource; names are for errors and describe(). A name already declared gives the same
  // resource (modules that meet in one frame, such as a source and a tail of one trainer, name it alike).
  FrameResource resource(const std::string& name);
  // Declares a disjoint part of `whole` (which must be a whole resource of this graph): see the top of the
  // file. A name already declared gives the same part when it is a part of `whole`; throws sf::Error
  // otherwise.
  FrameResource part(FrameResource whole, const std::string& name);

  // Appends a pass. `enabled` false keeps it in describe() but records nothing and takes part in no
  // hazard (an object-less frame has no deform pass). Throws sf::Error, naming the pass, for a resource
  // that is not this graph's.
  void add(const std::string& name, std::vector<FrameResource> reads, std::vector<FrameResource> writes,
           std::function<void()> record, bool enabled = true);

  struct Step {
    size_t pass;          // index in passes()
    bool barrier_before;  // a memory barrier is recorded before this pass
  };
  // The enabled passes in order, each with whether a barrier precedes it.
  std::vector<Step> plan() const;
  size_t barrierCount() const;

  // Records the plan: barrier() where a step needs one, then `before_stretch` (when given) with the index in
  // passes() of the pass that begins a stretch (the first pass, and each one after a barrier), then the
  // pass's own callback. (Per stretch, not per pass: a command recorded between two passes of a stretch, such
  // as a breadcrumb write, would cost every pass of 200 objects' passes a serialisation on some devices.)
  void run(const std::function<void()>& barrier,
           const std::function<void(size_t pass)>& before_stretch = {}) const;
  // The enabled passes of the stretch that `first` (a pass that begins one) begins, in order.
  std::vector<size_t> stretch(size_t first) const;

  // One line per pass: "name: reads a, b; writes c" (disabled passes marked), with "| barrier" lines.
  std::string describe() const;

  struct Pass {
    std::string name;
    std::vector<FrameResource> reads, writes;
    std::function<void()> record;
    bool enabled = true;
  };
  const std::vector<Pass>& passes() const { return passes_; }
  const std::string& name(FrameResource r) const { return resources_.at(r.id_).name; }

 private:
  struct Resource {
    std::string name;
    uint32_t whole;  // itself for a whole resource
  };
  void check(const std::string& pass, const std::vector<FrameResource>& ids, const char* verb) const;
  std::vector<Resource> resources_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<Pass> passes_;
};

}  // namespace sf
