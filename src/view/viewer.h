// splatforge view: an interactive window on the frame `splatforge render` draws (docs/viewer.md). A GLFW
// window with a Vulkan swapchain on the renderer's own device, the Vulkan renderer's frame copied into it and
// a Dear ImGui overlay on top (view/presenter.h); orbit and fly cameras (view/camera_control.h); files opened
// by dropping them on the window; a timeline for animated scenes; character controls; screenshots; and a
// script mode that drives all of it without input devices (view/view_script.h). For a first look: a grey
// backdrop, a ground grid with axes (view/ground_grid.h), a turntable, an upright flip for captures written
// y-up, and adaptive resolution while the camera moves (view/render_scale.h).
#pragma once

#include <optional>
#include <string>

#include "core/math.h"

namespace sf {
enum class BlendSpace;  // render/cpu_renderer.h
}  // namespace sf

namespace sf::view {

struct ViewerOptions {
  std::string
      input;  // splat file, glTF model, character package or scene JSON; empty: drop one on the window
  int width = 1280, height = 720;  // window size in screen coordinates
  std::string
      camera;  // camera JSON for the first view (default: the scene's camera, else framed automatically)
  std::string script;       // script file (view/view_script.h)
  std::string device;       // Vulkan device: index or part of its name
  bool validation = false;  // Vulkan validation layers (a validation error ends the viewer with the messages)
  bool vsync =
      true;  // FIFO presentation; false: mailbox or immediate where offered (frame-rate measurements)
  std::optional<Vec3> background;         // overrides the scene's background (default: kViewerBackdrop)
  std::optional<BlendSpace> blend_space;  // overrides the scene's blend space (default: display)
  bool antialiased = false;  // antialiased mode for every object (clouds flagged so always get it)
  std::optional<uint64_t>
      lod_budget;  // level-of-detail objects: gaussians a frame draws (default: the scene's)
  std::optional<uint64_t> lod_pool;  // level-of-detail objects: nodes in memory (default: the scene's)
  // Level-of-detail objects on the Vulkan backend: cut on a thread of their own (lod/cut_worker.h); false:
  // before every frame.
  bool lod_cut_background = true;
  std::string clip;                  // glTF / character input: animation name or index
  double time = 0;                   // glTF / character input: seconds into the clip
  bool strict = false;               // scene JSON: a failing object is an error
  bool allow_outside_paths = false;  // scene JSON: object paths may leave the scene's directory
  bool full_res = false;             // no adaptive resolution: every frame at the window's size
  double target_frame_ms = 50;       // adaptive resolution: the render time to keep while the camera moves
};

// The viewer's background where neither --bg nor the scene gives one: a neutral mid grey, against which dark
// and bright splats, the grid and a capture's edges all show (`render` keeps black).
inline constexpr Vec3 kViewerBackdrop{0.5f, 0.5f, 0.5f};

// Opens the window and runs until it is closed, Escape is pressed or the script quits; then prints the frame
// count and rate on stdout. Returns the process exit code (0). Throws sf::Error with a one-line message when
// there is no display (neither DISPLAY nor WAYLAND_DISPLAY set, or the window system cannot be reached), and
// for a script, input, camera or Vulkan failure (validation errors included).
int runViewer(const ViewerOptions& options);

}  // namespace sf::view
