// Dataset views (`splatforge views`, docs/training.md "Dataset views"): a glTF model rendered by the engine
// from the destructible-hull article's orbit cameras into a training Dataset (train/dataset.h), in memory,
// for writeNerfSynthetic or the trainer.
//
// Frame: the model posed at (clip, time) and normalised into the 1.6 cube (hull/source_mesh.h, as the hull
// bake does), +y up. Cameras: on the orbit of radius kOrbitRadius, looking at the origin with +y up on
// screen, square images, horizontal field of view kCameraAngleX; the position at azimuth az (from +z towards
// +x) and elevation el is (sin az cos el, sin el, cos az cos el) * kOrbitRadius, the hull bake's convention
// (the article's Blender script writes the same orbit with z up).
//   - train view i of n (the article's golden spiral): t = (i + 0.5) / n, el = asin(s0 + (s1 - s0) t) with
//     s0, s1 the sines of the belt's bounds (uniform in sin: uniform in area), az = i * pi (3 - sqrt 5).
//   - val and test views: rings at fixed elevations (ViewsOptions::val_elevations, test_elevations), the
//     views split into one contiguous block per ring (ring e of E gets views [e n / E, (e + 1) n / E)); view
//     j of a ring of m sits at az = 2 pi (j + phase) / m with phase 0.5 for val and 0.25 + e / E for test
//     ring e, so no val or test view shares an azimuth with another of the same elevation.
//
// Rendering: the CPU mesh rasterizer (render/mesh.h rasterizeMeshes; the Vulkan mesh pass refuses these
// shading modes), supersample^2 samples per pixel (a camera of supersample times the size with the
// intrinsics scaled), averaged: colour = mean over the samples of the display colour (0 where no surface:
// premultiplied), alpha = the covered fraction. Albedo = baseColorFactor x vertex colour x the base-colour
// texel (the material's pbrMetallicRoughness.baseColorTexture only: metallic-roughness, occlusion and other
// maps are never read). Materials render opaque (alphaMode and the albedo's alpha are ignored).
//   - kFlat: sRGB-encode(albedo).
//   - kAo: sRGB-encode(albedo x ao), ao the cosine-weighted visibility of a white dome (1 = open,
//     hull/mesh_query.h ambientOcclusion) computed PER VERTEX of the normalised mesh and interpolated over
//     each face (through the vertex colours): exact at the vertices, smooth between them, so a coarse mesh
//     gets coarse occlusion. The vertex normal used is the area-weighted mean of the normals of the faces
//     around the vertex's position (vertices welded by exact position), after the bake's winding repair.
//   - kCel: the hull article's cel bands (render/mesh.h MeshShading::kCel: 0.62, 0.88, 1.12 by N.L with
//     narrow ramps, on the sRGB-encoded albedo, clamped) for a key light travelling along kCelLight in the
//     dataset frame (the hull light's default direction), with the model's normals (face normals without).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "hull/source_mesh.h"
#include "train/dataset.h"

namespace sf::train {

// Horizontal field of view of Blender's default camera (36 mm sensor, 50 mm lens), radians: the article's
// dataset is rendered from Blender.
inline constexpr double kCameraAngleX = 0.6911112070083618;
// Default elevation belt of the train views, degrees above the horizon (the article's, widened down to 14).
inline constexpr float kBeltMin = 14.0f, kBeltMax = 50.0f;
// kCel: the direction the key light travels, dataset frame.
inline constexpr Vec3 kCelLight{-0.4f, -1.0f, -0.3f};

enum class Lighting { kFlat, kAo, kCel };
// "flat", "ao" or "cel"; throws sf::Error naming the choices.
Lighting parseLighting(const std::string& text);
const char* lightingName(Lighting lighting);

struct ViewsOptions {
  int train_count = 200;
  int val_count = 8;
  int test_count = 16;
  int size = 400;  // image width and height, pixels
  Lighting lighting = Lighting::kAo;
  float belt_min = kBeltMin, belt_max = kBeltMax;    // train elevations, degrees; -90 <= MIN < MAX <= 90
  std::vector<float> val_elevations{30.0f};          // degrees, each in (-90, 90)
  std::vector<float> test_elevations{20.0f, 40.0f};  // degrees, each in (-90, 90)
  std::string clip;  // pose at this clip (name or index); empty: the rest (bind) pose
  float time = 0;    // clip time, seconds
  int ao_rays = 64;  // kAo: rays per vertex
  float ao_distance =
      0;  // kAo: rays hit within this distance (dataset units); 0: any distance (a dome at infinity)
  int supersample = 2;  // samples per pixel along each axis, 1..8
  uint32_t seed = 1;    // kAo: the rays' rotation per vertex
  // Called after each rendered view with (views done, views in all), from worker threads one call at a time.
  std::function<void(size_t done, size_t total)> progress;

  // Empty when usable; otherwise what is wrong (the first bad field).
  std::string validate() const;
};

// A camera position on the orbit, radians (azimuth from +z towards +x, elevation above the xz plane).
struct OrbitAngles {
  double azimuth = 0, elevation = 0;
};
// The train views' angles: the golden spiral in the belt [belt_min_deg, belt_max_deg] (see the top).
std::vector<OrbitAngles> trainAngles(int count, float belt_min_deg, float belt_max_deg);
// Rings at fixed elevations (see the top): `count` views over the elevations (not empty) in contiguous
// blocks, view j of a ring of m at azimuth 2 pi (j + phase + e / E) / m for ring e of E.
std::vector<OrbitAngles> ringAngles(int count, std::span<const float> elevations_deg, double phase);
// The views' camera at `angles`: size x size pixels, fx = fy = size / 2 / tan(kCameraAngleX / 2),
// principal point on the centre, looking at the origin from kOrbitRadius with +y up on screen.
Camera orbitCamera(OrbitAngles angles, int size);
// Every split's cameras for the options (val phase 0.5, test phase 0.25), in view order.
struct SplitCameras {
  std::vector<Camera> train, val, test;
};
SplitCameras datasetCameras(const ViewsOptions& options);

// The model as the views and the surface samples see it: loadSourceMesh (posed, normalised) with the faces'
// winding repaired per connected component (hull/mesh_query.h repairWinding), so face normals point out.
// Throws sf::Error naming the file.
hull::SourceMesh loadViewsModel(const std::string& model_path, const std::string& clip, float time);

// Renders every split's views of the model (names "train/r_000", ...); scale and offset are the source's
// normalisation. Throws sf::Error for bad options (validate()).
Dataset renderViews(const hull::SourceMesh& source, const ViewsOptions& options);
// loadViewsModel(model_path, options.clip, options.time), then the above.
Dataset renderViews(const std::string& model_path, const ViewsOptions& options);

// Area-weighted random points of the surface (hull/source_mesh.h surfacePointAt, as the hull bake samples),
// each with its face's unit normal (the face's winding: outward after loadViewsModel) and the albedo there,
// display-encoded (albedoAt: base colour factor x vertex colour x texel). Deterministic for a seed.
struct SurfaceSamples {
  std::vector<Vec3> positions, normals, colors;
};
// Throws sf::Error when count > 0 and every face has zero area.
SurfaceSamples sampleSurface(const hull::SourceMesh& source, size_t count, uint32_t seed);

}  // namespace sf::train
