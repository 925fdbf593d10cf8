// Name-based clip retargeting.
#include "anim/retarget.h"

#include <algorithm>

#include "core/error.h"

namespace sf::anim {

std::string RetargetJob::validate() const {
  if (!clip) return "no clip";
  if (!target) return "no target skeleton";
  if (!output) return "no output clip";
  if (output == clip) return "output must not be the input clip";
  return {};
}

void RetargetJob::run() const {
  if (std::string why = validate(); !why.empty()) throw Error("RetargetJob: " + why);
  Clip result;
  result.name = clip->name;
  result.duration = clip->duration;
  result.events = clip->events;
  RetargetReport rep;
  for (const Track& t : clip->tracks) {
    int joint = t.joint_name.empty() ? -1 : target->find(t.joint_name);  // unnamed joints cannot be matched
    if (joint < 0) {
      ++rep.dropped;
      if (std::find(rep.missing_joints.begin(), rep.missing_joints.end(), t.joint_name) ==
          rep.missing_joints.end())
        rep.missing_joints.push_back(t.joint_name);
      continue;
    }
    if (t.target == TrackTarget::kWeights &&
        static_cast<size_t>(t.components) != target->weightCount(static_cast<size_t>(joint))) {
      ++rep.dropped;
      rep.notes.push_back("weights of '" + t.joint_name + "': " + std::to_string(t.components) +
                          " in the clip, " + std::to_string(target->weightCount(static_cast<size_t>(joint))) +
                          " on the target");
      continue;
    }
    if (t.target == TrackTarget::kTranslation && translations == RetargetTranslations::kRootOnly &&
        target->parents()[static_cast<size_t>(joint)] >= 0) {
      ++rep.dropped;
      rep.notes.push_back("translation of '" + t.joint_name + "': not a root (root-only translations)");
      continue;
    }
    Track copy = t;
    copy.joint = joint;
    result.tracks.push_back(std::move(copy));
    ++rep.mapped;
  }
  *output = std::move(result);
  if (report) *report = std::move(rep);
}

}  // namespace sf::anim
