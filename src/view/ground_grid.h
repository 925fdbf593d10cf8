// The viewer's ground grid and axes, drawn into a rendered frame on the host: a grid on a horizontal plane
// (y = height, in the scene's coordinates) with lines every 1 and every 10 units that fade with the distance
// from the camera (and where their spacing shrinks to a few pixels), and short axes at the origin (x red,
// y green, z blue). They are occluded by the splats through the frame's depth plane (ImageRGBA::depth, asked
// for with RenderSettings::depth): where a line lies in front of the splats' expected depth it is drawn over
// the frame, behind it only the transmittance left by the splats lets it through. Meshes are in the depth
// plane as one more layer, so a line in front of a mesh is drawn over it and one behind it is hidden. Pure
// function, no window (docs/viewer.md).
#pragma once

#include "core/image.h"
#include "core/math.h"
#include "render/camera.h"

namespace sf::view {

struct GroundGrid {
  float height = 0;          // the plane y = height
  float fade_distance = 50;  // lines fade with the distance from the camera and are gone at this distance
  float axis_length = 1;     // the axes' length, in scene units
  Vec3 minor_color{0.78f, 0.78f, 0.78f}, major_color{0.88f, 0.88f, 0.88f};
  float minor_alpha = 0.30f, major_alpha = 0.55f;
};

// Composites the grid and the axes into `image`, which `cam` rendered (the same size) over `background`.
// With a depth plane in `image` they are occluded by the splats as described above; without one they are
// drawn over the frame.
void drawGroundGrid(ImageRGBA& image, const Camera& cam, Vec3 background, const GroundGrid& grid);

// Composites one element (a line's pixel) of colour `color`, coverage `alpha` and view depth `depth` into
// pixel `index` of `image`, against the splats' depth there (see above). Exposed for the tests.
void compositeBehindSplats(ImageRGBA& image, size_t index, Vec3 background, Vec3 color, float alpha,
                           float depth);

}  // namespace sf::view
