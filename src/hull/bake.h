// The splat-hull bake (`splatforge hull bake`, docs/architecture.md "Splat hulls"): a glTF model plus a splat
// cloud of it (a trained PLY, or a budgeted cloud sampled from the mesh surface) -> an SPL2 hull (io/spl2.h)
// and its meta sidecar.
//
// Stages, in order: normalise the posed model into the 1.6 cube; repair the winding per connected component
// of the face graph; take or sample the splats; snap each splat's normal to its nearest face; floater cleanup
// (distance to the mesh, connectivity, silhouette); belly cull against the camera elevation belt; cap to the
// budget by importance; core/shell split at opacity 0.9 (core axes scaled to the visible disc); baked
// channels (ambient occlusion by rays, emission by colour rarity, part id); materials and chunks; 64 shell
// orders.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "hull/mesh_query.h"
#include "hull/meta.h"
#include "io/spl2.h"

namespace sf::hull {

struct BakeOptions {
  size_t budget = 6000;                 // most splats in the hull
  std::string splats;                   // a trained splat file of the model; empty: sample the mesh surface
  bool splats_in_source_frame = false;  // the splat file is in the source model's frame (else the hull frame)
  // Or: a cloud in memory, in the hull frame (a cloud trained in process, train/trainer.h), instead of
  // `splats`.
  const GaussianCloud* cloud = nullptr;
  std::string cloud_name = "the trained cloud";  // for messages
  std::string clip;                    // pose the model at this clip (name or index); empty: the rest pose
  float time = 0;                      // clip time, seconds
  float belt_min = 32, belt_max = 50;  // camera elevation belt, degrees above the horizon
  float core_opacity = kSpl2CoreOpacity;
  int ao_rays = 64;
  float ao_distance = 0.4f;             // hull units (the cube is 1.6)
  float floater_distance = 0.055f;      // splats farther than this from the mesh are floaters
  float silhouette_tolerance = 0.005f;  // centres this close to the surface cannot stick out of a silhouette
  float emission_threshold = 0.3f;      // rarity (sRGB distance from the median colour) where emission starts
  // Named points: nodes whose name contains one of these '|'-separated words (any case).
  std::string points = "tip|muzzle|barrel|gun|engine|exhaust";
  std::string materials = "mech";  // material recipe: a built-in name or a JSON file (hull/chunks.h)
  int chunk_size = 100;            // splats per chunk, about
  uint32_t seed = 1;
  // The training views of the cloud (hull frame), for the floater pass over the dataset (mesh_query.h sign
  // 4); empty: that pass does not run and the report says so (a --splats file or a sampled cloud has none).
  std::span<const CoverageView> views;
  std::function<void(const std::string&)> progress;  // one line per stage
};

// What each stage did, for the CLI, the meta sidecar and docs/benchmarks.md.
struct BakeReport {
  std::string source;
  size_t triangles = 0, components = 0, flipped_components = 0;
  double flipped_face_share = 0;  // faces whose winding was reversed
  double flipped_splat_share =
      0;                    // splats whose nearest face had its winding reversed (their normal flipped)
  size_t input_splats = 0;  // from the file or sampled
  bool sampled = false;
  size_t floaters_distance = 0, floaters_connectivity = 0, floaters_silhouette = 0;
  size_t floaters_dataset = 0;  // sign 4, over the training views; meaningful when dataset_pass
  bool dataset_pass = false;
  float distance_p50 = 0, distance_p99 = 0;  // splat-to-mesh distance before cleanup
  size_t belly_culled = 0, over_budget = 0;
  size_t core = 0, shell = 0, emissive = 0, chunks = 0, parts = 0;
  size_t bytes = 0;  // the SPL2 file
  double seconds = 0;
  std::vector<std::pair<std::string, double>> stage_seconds;
};

struct BakeResult {
  Spl2Hull hull;
  std::string meta_json;  // the sidecar's text
  BakeReport report;
};

// Bakes a hull from a glTF / GLB model. Throws sf::Error naming the file and the reason (no triangles, no
// splat left after cleanup, a bad option).
BakeResult bakeHull(const std::string& model_path, const BakeOptions& options);

}  // namespace sf::hull
