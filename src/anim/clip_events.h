// Animation events: which named times of a clip (Clip::events) a moving playhead crosses, in the order it
// meets them. A closed form over the unwrapped playhead, so any step (a frame, several loops in one long
// step, a clip played backwards) fires each crossing exactly once, whatever the frame rate.
//
// The playhead is the unwrapped clip position p = time + speed * t (SceneObject::clipTime's convention,
// before it wraps or clamps). A looping clip of duration D > 0 holds event e at every position e + k D, k any
// integer (where wrapTime(p, D) is e; an event at e = D sits on the wrap itself). A clip that does not loop,
// or whose duration is 0, holds event e at position e alone: clamped playback rests at 0 before and at D
// after, crossing nothing more.
//
// A move from p0 to p1 crosses the positions in (p0, p1] when p1 > p0 and in [p1, p0) when p1 < p0 (playing
// backwards): the position reached is in and the one left is out, so consecutive moves p0 -> p1 -> p2 fire
// each crossing once. `include_start` also takes the position p0 itself, which is how a clock's first frame
// (the zero-length move p0 -> p0) fires the events lying exactly where it starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "anim/clip.h"

namespace sf::anim {

struct EventCrossing {
  size_t event = 0;     // index into the events
  double position = 0;  // the unwrapped playhead position of the crossing (e + k D)
};

// Appends the crossings of the move p0 -> p1 to `out` in the order the playhead meets them (forward:
// increasing position; backward: decreasing; equal positions in event order within a loop), at most
// `max_crossings`. `events` must be in time order (Clip::validate). Returns how many crossings the move has
// in all (counted in closed form, so it may exceed what was appended; saturated at UINT64_MAX). p0 and p1
// must be finite.
uint64_t crossEvents(std::span<const ClipEvent> events, float duration, bool loop, double p0, double p1,
                     bool include_start, size_t max_crossings, std::vector<EventCrossing>& out);

}  // namespace sf::anim
