// What the page's WebAssembly units share (web/wasm/decode_api.cpp: files and scenes; gltf_api.cpp: glTF
// models): the decoded splats handed to the page, the scene being read, and the JSON helpers of the answers.
#pragma once

#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"
#include "render/camera.h"

namespace sf::web {

// One decode: the frame's inputs in the layout the Vulkan frame uploads (centres, object-space covariances as
// 6 floats, opacities, SH coefficients [splat][coeff][rgb]) and a JSON description.
struct WebDecoded {
  std::string info;  // JSON
  std::vector<float> positions, covariances, opacities, sh;
  CloudBounds bounds{};
  bool ok = false;
};

// Fills `r`'s arrays and bounds from a cloud of at least one gaussian.
void fillDecoded(WebDecoded& r, const GaussianCloud& c);

// A scene JSON read by the page: its text and name (read again for the camera at the canvas's size), the
// objects' transforms, and the world-space points the starting camera frames: the centres of the splat
// objects attached so far and the posed vertices (and gaussians) of the glTF objects.
struct WebScene {
  std::string text, name, info;  // info: JSON
  std::vector<Mat4> object_to_world;
  GaussianCloud world;    // positions only
  bool captures = false;  // a splat file among the objects: framed in the capture convention (autoCamera)
};

// The 27 floats of a starting camera (sf_web_default_camera): world_to_camera rows 0..2, fx, fy, cx, cy, the
// eye, the point the orbit turns about, the up vector, the vertical field of view in degrees, and the scene's
// size (the diagonal of the 1-99 percentile box of its points; 0 without any), which sets the fly camera's
// speed.
void writeCamera(const Camera& cam, Vec3 target, Vec3 up, float fov_deg, const CloudBounds& b, float* out);

std::string jsonFloat(float v);
std::string jsonString(const std::string& s);
std::string errorInfo(const std::string& message);

}  // namespace sf::web
