// The built-in demo: a procedural scene the engine generates itself (no files), exercising what the
// renderer must get right: anisotropic gaussians, SH degree 3 view-dependent colour, and two
// semi-transparent objects that interpenetrate (so only one global depth sort blends them correctly).
#pragma once

#include "scene/scene.h"

namespace sf {

// Three objects (a checkered floor, a glassy SH-degree-3 torus, a translucent shell sphere cutting
// through it) and a look-at camera of the given size. Deterministic: same output on every machine.
Scene makeDemoScene(int width = 960, int height = 540);

}  // namespace sf
