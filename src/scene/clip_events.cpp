#include "scene/clip_events.h"

#include <algorithm>
#include <cmath>

#include "anim/clip_events.h"
#include "character/world.h"

namespace sf {

std::span<const anim::ClipEvent> SceneObject::clipEvents() const {
  const GltfModel* model = this->model();
  if (!model || clip < 0 || static_cast<size_t>(clip) >= model->clips().size()) return {};
  if (events && events_clip == clip) return *events;
  return model->clips()[static_cast<size_t>(clip)].events;
}

ClipEventStep clipEventsBetween(const Scene& scene, double t0, double t1, bool include_start) {
  ClipEventStep step;
  if (!std::isfinite(t0) || !std::isfinite(t1) || t1 < t0 || (t1 == t0 && !include_start)) return step;
  std::vector<anim::EventCrossing> crossings;
  for (size_t i = 0; i < scene.objects.size(); ++i) {
    const SceneObject& o = scene.objects[i];
    const std::span<const anim::ClipEvent> events = o.clipEvents();
    if (events.empty()) continue;
    const float duration = o.model()->clips()[static_cast<size_t>(o.clip)].duration;
    const double p0 = o.time + o.speed * t0, p1 = o.time + o.speed * t1;
    crossings.clear();
    // Each object's first crossings in order: the step's first kMaxClipEventsPerStep are among them.
    const uint64_t total =
        anim::crossEvents(events, duration, o.loop, p0, p1, include_start, kMaxClipEventsPerStep, crossings);
    step.skipped += total - crossings.size();
    for (const anim::EventCrossing& c : crossings) {
      // The scene time of the crossing; a still playhead (speed 0) crosses only where it starts.
      const double t = o.speed != 0 ? std::clamp((c.position - o.time) / o.speed, t0, t1) : t0;
      step.events.push_back({o.name, i, events[c.event].name, events[c.event].time, t});
    }
  }
  // Objects were appended in scene order, each in its own crossing order: a stable sort by time keeps both.
  std::stable_sort(
      step.events.begin(), step.events.end(),
      [](const FiredClipEvent& a, const FiredClipEvent& b) { return a.scene_time < b.scene_time; });
  if (step.events.size() > kMaxClipEventsPerStep) {
    step.skipped += step.events.size() - kMaxClipEventsPerStep;
    step.events.resize(kMaxClipEventsPerStep);
  }
  return step;
}

ClipEventStep ClipEventClock::advance(const Scene& scene, double t) {
  if (!std::isfinite(t)) return {};
  ClipEventStep step;
  if (!last_)
    step = clipEventsBetween(scene, t, t, true);
  else if (t > *last_)
    step = clipEventsBetween(scene, *last_, t, false);
  last_ = t;
  return step;
}

void runSceneScript(const Scene& scene, character::CharacterWorld& world, double from, double to,
                    bool include_from) {
  if (!scene.triggers.empty() && to >= from) {
    for (const FiredClipEvent& e : clipEventsBetween(scene, from, to, include_from).events)
      for (const ScriptTrigger& trigger : scene.triggers) {
        if (trigger.object != e.object || trigger.event != e.event) continue;
        world.advanceTo(e.scene_time, scene.script);  // the timed commands up to the event's time first
        world.execute(trigger.command);
      }
  }
  world.advanceTo(to, scene.script);
}

}  // namespace sf
