#include "render/frame_passes.h"

#include <algorithm>
#include <utility>

namespace sf {

void FramePasses::add(std::string name, std::vector<FrameResource> reads, std::vector<FrameResource> writes,
                      std::function<void(void* command_buffer)> record) {
  if (lists_.empty()) lists_.emplace_back();
  lists_.back().push_back({std::move(name), std::move(reads), std::move(writes), std::move(record)});
}

size_t FramePasses::addToGraph(Order order) {
  size_t added = 0;
  auto add = [&](Pass& p) {
    graph_.add(p.name, std::move(p.reads), std::move(p.writes),
               [record = std::move(p.record), cmd = cmd_] { record(cmd); });
    ++added;
  };
  if (order == Order::kInSequence) {
    for (std::vector<Pass>& list : lists_)
      for (Pass& p : list) add(p);
  } else {
    size_t longest = 0;
    for (const std::vector<Pass>& list : lists_) longest = std::max(longest, list.size());
    for (size_t step = 0; step < longest; ++step)
      for (std::vector<Pass>& list : lists_)
        if (step < list.size()) add(list[step]);
  }
  lists_.clear();
  return added;
}

}  // namespace sf
