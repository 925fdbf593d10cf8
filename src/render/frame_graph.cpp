#include "render/frame_graph.h"

#include <algorithm>

#include "core/error.h"

namespace sf {

uint32_t FrameGraph::resource(const std::string& name) {
  resources_.push_back(name);
  return static_cast<uint32_t>(resources_.size() - 1);
}

void FrameGraph::add(const std::string& name, std::initializer_list<uint32_t> reads,
                     std::initializer_list<uint32_t> writes, std::function<void()> record, bool enabled) {
  for (uint32_t r : reads)
    if (r >= resources_.size())
      throw Error("frame graph: pass '" + name + "' reads undeclared resource " + std::to_string(r));
  for (uint32_t w : writes)
    if (w >= resources_.size())
      throw Error("frame graph: pass '" + name + "' writes undeclared resource " + std::to_string(w));
  passes_.push_back({name, reads, writes, std::move(record), enabled});
}

std::vector<FrameGraph::Step> FrameGraph::plan() const {
  std::vector<Step> steps;
  // Resources written / read since the last barrier.
  std::vector<bool> written(resources_.size(), false), read(resources_.size(), false);
  for (size_t p = 0; p < passes_.size(); ++p) {
    const Pass& pass = passes_[p];
    if (!pass.enabled) continue;
    bool hazard = false;
    for (uint32_t r : pass.reads) hazard = hazard || written[r];
    for (uint32_t w : pass.writes) hazard = hazard || written[w] || read[w];
    if (hazard) {
      std::fill(written.begin(), written.end(), false);
      std::fill(read.begin(), read.end(), false);
    }
    for (uint32_t r : pass.reads) read[r] = true;
    for (uint32_t w : pass.writes) written[w] = true;
    steps.push_back({p, hazard});
  }
  return steps;
}

size_t FrameGraph::barrierCount() const {
  size_t n = 0;
  for (const Step& s : plan()) n += s.barrier_before;
  return n;
}

void FrameGraph::run(const std::function<void()>& barrier,
                     const std::function<void(size_t pass)>& before_pass) const {
  for (const Step& s : plan()) {
    if (s.barrier_before) barrier();
    if (before_pass) before_pass(s.pass);
    if (passes_[s.pass].record) passes_[s.pass].record();
  }
}

std::string FrameGraph::describe() const {
  std::vector<Step> steps = plan();
  std::string out;
  size_t next = 0;
  auto names = [&](const std::vector<uint32_t>& ids) {
    std::string s;
    for (uint32_t id : ids) s += (s.empty() ? "" : ", ") + resources_[id];
    return s.empty() ? std::string("-") : s;
  };
  for (size_t p = 0; p < passes_.size(); ++p) {
    const Pass& pass = passes_[p];
    const bool planned = next < steps.size() && steps[next].pass == p;
    if (planned && steps[next].barrier_before) out += "  | barrier\n";
    out += pass.name + ": reads " + names(pass.reads) + "; writes " + names(pass.writes) +
           (pass.enabled ? "" : " (off this frame)") + "\n";
    if (planned) ++next;
  }
  return out;
}

}  // namespace sf
