// Animation events of a scene (docs/formats/scene-json.md, "Animation events"): the named times of the clips
// glTF and character objects play (SceneObject::clipEvents) fired as scene time advances, and the scene
// script's commands they trigger.
//
// An object's playhead is p(t) = time + speed * t (SceneObject::clipTime before wrapping), so a step of scene
// time t0 -> t1 moves it from p(t0) to p(t1) and fires what anim::crossEvents says that move crosses: every
// loop's crossing of a looping clip (several in one long step), a non-looping clip's events once, backwards
// for a negative speed; each crossing at the scene time the playhead reaches it, (p - time) / speed.
//
// The clock rule (ClipEventClock, what every front end's frames follow): the first step of a clock fires the
// events lying exactly at its time t (the step t -> t, start included); a later step to t > last fires those
// crossed in (last, t]; a step to t <= last (a seek back, or the same time again) fires none and moves the
// clock to t, so playing on from there fires (t, ...] as usual. Consecutive frames therefore fire each
// crossing exactly once, whatever their spacing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scene/scene.h"

namespace sf {

struct FiredClipEvent {
  std::string object;       // the scene object's name
  size_t object_index = 0;  // its index in Scene::objects
  std::string event;        // the event's name
  float clip_time = 0;      // the event's time in its clip, as declared
  double scene_time = 0;    // the scene time its object's playhead reached it
};

// The most events one step fires (all objects together); the rest are counted in `skipped`. A step of a scene
// time far beyond its clips (a seek forward of hours, a speed of thousands) would otherwise fire millions.
inline constexpr size_t kMaxClipEventsPerStep = 4096;

struct ClipEventStep {
  // In scene-time order; events of one scene time in scene object order, then in the order the playhead met
  // them.
  std::vector<FiredClipEvent> events;
  uint64_t skipped = 0;  // crossings past kMaxClipEventsPerStep (the latest ones), not fired
};

// The events the objects' playheads cross as scene time goes from t0 to t1: (t0, t1], or [t0, t1] with
// include_start. Stateless; none when t1 < t0 or a time is not finite.
ClipEventStep clipEventsBetween(const Scene& scene, double t0, double t1, bool include_start = false);

// A scene's event clock, by the rule above.
class ClipEventClock {
 public:
  ClipEventStep advance(const Scene& scene, double t);
  // The next advance is a first step again.
  void reset() { last_.reset(); }
  std::optional<double> time() const { return last_; }

 private:
  std::optional<double> last_;
};

// Runs the scene script on `world` from scene time `from` to `to` (to >= from): the timed commands (t <= to)
// and, at each event crossed in (from, to] ([from, to] with include_from), the commands its triggers name,
// after the timed commands of that time (world.advanceTo then execute). A world made anew replays from 0 with
// include_from.
void runSceneScript(const Scene& scene, character::CharacterWorld& world, double from, double to,
                    bool include_from);

}  // namespace sf
