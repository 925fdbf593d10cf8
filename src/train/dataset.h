// Training datasets: posed RGBA views of one object in its normalised frame (the destructible-hull article's
// dataset: the model normalised into the 1.6 cube, cameras on an orbit of radius 3.2 looking at the origin,
// train views on a golden spiral in azimuth with elevation uniform in sin within a belt, validation and test
// views at fixed elevations), in memory or as a NeRF-synthetic folder (transforms_{train,val,test}.json with
// camera_angle_x and OpenGL camera-to-world matrices, RGBA PNGs) that other trainers read too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/math.h"
#include "render/camera.h"

namespace sf::train {

// Orbit radius and normalised cube edge of the article's dataset.
inline constexpr float kOrbitRadius = 3.2f;
inline constexpr float kCubeSize = 1.6f;

// One view: a camera (OpenCV convention, render/camera.h) and its RGBA image, width x height x 4 floats,
// top row first. Colour is display-encoded (sRGB) and premultiplied by alpha, as a render over black is:
// the image over a background b is rgb + (1 - alpha) * b.
struct View {
  Camera camera;
  std::vector<float> rgba;
  std::string name;  // file stem in a NeRF-synthetic folder ("train/r_012"), for logs
};

struct Dataset {
  std::vector<View> train, val, test;
  // Where the object sits: the normalisation that took the source model into this frame
  // (p_dataset = p_source * scale + offset), identity for a folder without it.
  float scale = 1.0f;
  Vec3 offset{0, 0, 0};
  // The frame is splatforge's dataset frame: glTF axes, +y up (rendered by `views` / trainFromMesh, or read
  // from a folder whose transforms_train.json carries the "splatforge" record). A cloud trained on it is
  // written turned to the PLY frame (y down), as captures are.
  bool gltf_axes = false;
};

// Camera-to-world in the OpenGL convention (x right, y up, z back) that a NeRF-synthetic frame's
// "transform_matrix" holds: inverse(world_to_camera) * diag(1, -1, -1, 1).
Mat4 cameraToWorldGl(const Camera& camera);
// The camera such a frame describes: world_to_camera = inverse(c2w_gl * diag(1, -1, -1, 1)) (rigid inverse:
// c2w_gl's rotation must be orthonormal), width x height pixels, fx = fy = width / 2 / tan(angle_x / 2),
// principal point on the image centre.
Camera cameraFromGl(const Mat4& c2w_gl, int width, int height, double camera_angle_x);

// Writes a NeRF-synthetic folder (docs/formats/nerf-synthetic.md): DIR/transforms_{train,val,test}.json, each
// with "camera_angle_x" and "frames" [{"file_path": "./train/r_000", "transform_matrix": cameraToWorldGl}],
// transforms_train.json also with "splatforge": {"scale", "offset"} (the normalisation), and the images
// DIR/<split>/r_NNN.png, RGBA8 with straight (un-premultiplied) alpha, colour as stored (display-encoded).
// Every camera of a split must share one horizontal field of view with fx = fy and the principal point on the
// image centre, and each view must hold width x height x 4 values. Existing transforms files are removed
// first and the new ones written last, each atomically (transforms_train.json at the very end), so a failed
// write never leaves a folder that reads as a complete dataset. Throws sf::Error naming the view or the file.
void writeNerfSynthetic(const Dataset& dataset, const std::string& dir);

// Reads a NeRF-synthetic folder, ours or another tool's (Blender's: "file_path" with or without ".png",
// "camera_angle_x" only, square images or not): transforms_train.json is required, transforms_val.json and
// transforms_test.json are read when present. Images are premultiplied on reading; "splatforge" gives scale
// and offset (else 1 and 0). With max_size > 0, images larger than max_size on their longer side are
// area-resampled to fit (the cameras' intrinsics scaled alike); 0 keeps them as stored. Untrusted input:
// every refusal is an sf::Error naming the file and the JSON path and what was expected (a frame's image path
// must stay inside DIR; the images of a split must share one size; decoded images must fit the load memory
// limit, core/limits.h).
Dataset readNerfSynthetic(const std::string& dir, int max_size = 0);

}  // namespace sf::train
