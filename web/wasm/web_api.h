// What the page's WebAssembly units share (web/wasm/decode_api.cpp: files and scenes; gltf_api.cpp: glTF
// models): the decoded splats handed to the page, the scene being read, and the JSON helpers of the answers.
#pragma once

#include <cstdint>
#include <map>
#include <set>
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

// The files the page hands in for a load that reads several (a glTF model's buffers and images, a splat
// character package's files): those handed in, those the page failed to fetch, and those the loader asked for
// that are neither, in the order it asked (the page fetches them and opens the input again).
struct HandedFiles {
  std::map<std::string, std::vector<uint8_t>> files;
  std::set<std::string> missing;
  std::vector<std::string> needed;

  // Whether `path` (normalised) is handed in; one that is not, and not known to be missing, is recorded as
  // needed.
  bool has(const std::string& path);
  // Its bytes; throws sf::Error "<path>: file is missing" for one not handed in.
  std::vector<uint8_t> read(const std::string& path) const;
  // Hands a file in: its bytes, or (`is_missing`) none. False when it did not fit in memory.
  bool put(const char* path, const uint8_t* bytes, uint32_t size, bool is_missing);
  // The answer asking the page for the needed files, {"ok":false,"files":[{"path","name"},...]}, each name
  // the path relative to `base` (a folder and its '/', or empty).
  std::string request(const std::string& base) const;
};

// `path` in the form the handed-in files are keyed by (lexically normal, '/' separators).
std::string normalPath(const std::string& path);

std::string jsonFloat(float v);
std::string jsonString(const std::string& s);
std::string errorInfo(const std::string& message);

}  // namespace sf::web
