#include "render/frame_graph.h"

#include <algorithm>

#include "core/error.h"

namespace sf {

FrameResource FrameGraph::resource(const std::string& name) {
  const auto [it, added] = by_name_.try_emplace(name, static_cast<uint32_t>(resources_.size()));
  if (added) resources_.push_back({name, it->second});
  return FrameResource(it->second);
}

FrameResource FrameGraph::part(FrameResource whole, const std::string& name) {
  if (!whole.valid() || whole.id_ >= resources_.size() || resources_[whole.id_].whole != whole.id_)
    throw Error("frame graph: part '" + name + "' of a resource that is not a whole resource of this graph");
  const auto [it, added] = by_name_.try_emplace(name, static_cast<uint32_t>(resources_.size()));
  if (added) {
    resources_.push_back({name, whole.id_});
  } else if (resources_[it->second].whole != whole.id_ || it->second == whole.id_) {
    throw Error("frame graph: '" + name + "' is declared already, not as a part of '" +
                resources_[whole.id_].name + "'");
  }
  return FrameResource(it->second);
}

void FrameGraph::check(const std::string& pass, const std::vector<FrameResource>& ids,
                       const char* verb) const {
  for (FrameResource r : ids)
    if (!r.valid() || r.id_ >= resources_.size())
      throw Error("frame graph: pass '" + pass + "' " + verb + " a resource that is not this graph's" +
                  (r.valid() ? " (" + std::to_string(r.id_) + ")" : std::string(" (none)")));
}

void FrameGraph::add(const std::string& name, std::vector<FrameResource> reads,
                     std::vector<FrameResource> writes, std::function<void()> record, bool enabled) {
  check(name, reads, "reads");
  check(name, writes, "writes");
  passes_.push_back({name, std::move(reads), std::move(writes), std::move(record), enabled});
}

std::vector<FrameGraph::Step> FrameGraph::plan() const {
  std::vector<Step> steps;
  // Since the last barrier: each resource written / read, and for a whole resource whether any of its parts
  // was written / read.
  const size_t n = resources_.size();
  std::vector<bool> written(n, false), read(n, false), part_written(n, false), part_read(n, false);
  auto whole = [&](FrameResource r) { return resources_[r.id_].whole; };
  auto is_part = [&](FrameResource r) { return whole(r) != r.id_; };
  for (size_t p = 0; p < passes_.size(); ++p) {
    const Pass& pass = passes_[p];
    if (!pass.enabled) continue;
    bool hazard = false;
    for (FrameResource r : pass.reads)  // after a write of it, of its whole, or (a whole) of a part
      hazard = hazard || written[r.id_] || (is_part(r) ? written[whole(r)] : part_written[r.id_]);
    for (FrameResource w : pass.writes)  // after a write or a read of the same
      hazard = hazard || written[w.id_] || read[w.id_] ||
               (is_part(w) ? written[whole(w)] || read[whole(w)] : part_written[w.id_] || part_read[w.id_]);
    if (hazard) {
      std::fill(written.begin(), written.end(), false);
      std::fill(read.begin(), read.end(), false);
      std::fill(part_written.begin(), part_written.end(), false);
      std::fill(part_read.begin(), part_read.end(), false);
    }
    for (FrameResource r : pass.reads) {
      read[r.id_] = true;
      if (is_part(r)) part_read[whole(r)] = true;
    }
    for (FrameResource w : pass.writes) {
      written[w.id_] = true;
      if (is_part(w)) part_written[whole(w)] = true;
    }
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
                     const std::function<void(size_t pass)>& before_stretch) const {
  bool first = true;
  for (const Step& s : plan()) {
    if (s.barrier_before) barrier();
    if (before_stretch && (first || s.barrier_before)) before_stretch(s.pass);
    first = false;
    if (passes_[s.pass].record) passes_[s.pass].record();
  }
}

std::vector<size_t> FrameGraph::stretch(size_t first) const {
  std::vector<size_t> out;
  for (const Step& s : plan()) {
    if (!out.empty() && s.barrier_before) break;
    if (!out.empty() || s.pass == first) out.push_back(s.pass);
  }
  return out;
}

std::string FrameGraph::describe() const {
  std::vector<Step> steps = plan();
  std::string out;
  size_t next = 0;
  auto names = [&](const std::vector<FrameResource>& ids) {
    std::string s;
    for (FrameResource id : ids) s += (s.empty() ? "" : ", ") + resources_[id.id_].name;
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
