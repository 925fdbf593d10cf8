// The viewer's adaptive resolution: while the camera moves, frames are rendered at a fraction of the window's
// size (chosen from the last frames' render times to stay within a target) and stretched over the window by
// the presenter; once the camera has rested for a moment, one frame at full resolution. On a Vulkan device
// that is a CPU (lavapipe) a frame takes the better part of a second; how much a smaller one saves depends
// on the scene: the pixels' share of the cost shrinks with them, the splats' share does not (docs/viewer.md,
// "Adaptive resolution", has measurements). Pure functions, no window.
#pragma once

#include <cstddef>
#include <span>

#include "render/camera.h"

namespace sf::view {

// The scales a frame can be rendered at, largest first: full, half and quarter size (in each direction).
inline constexpr float kRenderScales[] = {1.0f, 0.5f, 0.25f};

struct RenderScaleOptions {
  bool adaptive = true;        // false: always full resolution (`view --full-res`, the panel's checkbox)
  double target_ms = 50;       // render time to keep while the camera moves (`view --target-frame-ms`)
  double rest_seconds = 0.25;  // without motion for this long, the camera rests: full resolution
};

// One rendered frame: its render time and the scale it was rendered at.
struct RenderSample {
  double ms = 0;
  float scale = 1;
};

// How many of the latest samples at each scale chooseRenderScale looks at.
inline constexpr size_t kRenderScaleSamples = 4;
// When no scale keeps the target: how much slower than the smallest scale a larger one may be and still be
// chosen (a quarter of the pixels for a tenth of the time is a bad trade).
inline constexpr double kRenderScaleSlack = 0.25;

// The scale of the next frame. Full resolution when adaptive resolution is off, when the camera has rested
// for `options.rest_seconds` (`seconds_since_motion` at least that), and before any frame was measured.
// While it moves: the largest of kRenderScales whose predicted render time is within the target; when none
// is, the largest within kRenderScaleSlack of the smallest one's prediction. `recent` holds the last frames,
// oldest first (the viewer keeps the last few of each scale). The prediction fits ms = a + b scale^2 to the
// median of the last kRenderScaleSamples times of each scale measured (least squares, a and b >= 0): a is
// what a frame costs whatever its size (on a tile renderer, preprocessing and sorting every splat, and splats
// smaller than a tile cost a tile whatever the size), b what its pixels cost. From one scale alone the time
// is taken to be in proportion to the pixels (a = 0), which promises more than a smaller scale gives and less
// than a larger one costs: a step down is measured before the next, and a step up is taken only when it
// surely fits, so the scale does not oscillate.
float chooseRenderScale(std::span<const RenderSample> recent, double seconds_since_motion,
                        const RenderScaleOptions& options);

// The image size a `width` x `height` window renders at `scale`: each side rounded, at least 1.
int scaledSize(int size, float scale);

// `cam` (made for its own width x height) for an image of width x height pixels: every intrinsic scaled with
// its axis, so that the smaller image stretched over the larger one lands where the larger one's pixels would
// (pixel edges on pixel edges, continuous coordinates scaled by width / cam.width and height / cam.height).
Camera scaleCamera(const Camera& cam, int width, int height);

}  // namespace sf::view
