// Retargeting a clip onto another skeleton by joint name. Tracks whose joint name the target skeleton
// lacks are dropped and reported, as are weight tracks whose morph weight count differs on the target.
// Values are copied as they are: the two rigs must share joint orientations (same rig family, e.g. an
// animation file exported from the character's own skeleton). With `translations = kRootOnly`,
// translation tracks are kept only for root joints, so a clip made for other proportions keeps the
// target's bone lengths.
#pragma once

#include <string>
#include <vector>

#include "anim/clip.h"

namespace sf::anim {

struct RetargetReport {
  size_t mapped = 0;                        // tracks kept
  size_t dropped = 0;                       // tracks dropped
  std::vector<std::string> missing_joints;  // names absent from the target (each once, in track order)
  std::vector<std::string> notes;           // other reasons for dropped tracks
};

enum class RetargetTranslations { kAll, kRootOnly };

struct RetargetJob {
  const Clip* clip = nullptr;
  const Skeleton* target = nullptr;
  RetargetTranslations translations = RetargetTranslations::kAll;
  Clip* output = nullptr;            // receives the retargeted clip (same name and duration)
  RetargetReport* report = nullptr;  // optional

  std::string validate() const;
  void run() const;  // validates first; throws sf::Error with the reason when invalid
};

}  // namespace sf::anim
