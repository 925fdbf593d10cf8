// Splat hulls in the page (docs/web.md "Splat hulls"): the engine's hull loader (HullAsset::load: the .spl2
// and its meta sidecar) and frame builder (hull/hull_render.h buildHullFrame: the baked core's octagons with
// their lit colours, the shell's gaussians with the sort depths of the camera's heading bucket, or every
// splat a gaussian in sorted mode, the cel light) compiled to WebAssembly. The page hands in the file and its
// sidecar, written into the module's in-memory file system where the loader reads them as it reads files
// natively; per camera (and scene time) the worker asks for the frame's inputs and the page draws them with
// its WGSL passes (the mesh layer for the core, preprocess with per-slot sort depths for the shell).
#include <emscripten/emscripten.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/error.h"
#include "hull/hull_render.h"
#include "hull/meta.h"
#include "io/file.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"
#include "web_api.h"

namespace {

using sf::web::jsonFloat;
using sf::web::jsonString;

// Where the handed-in files live in the module's file system: the page's names under one folder, so that the
// sidecar's name (hullMetaPath) is the loader's own rule.
const std::string kRoot = "/hull_files/";

struct WebHull {
  std::shared_ptr<sf::hull::HullAsset> asset;
  sf::hull::HullMode mode = sf::hull::HullMode::kBaked;
  sf::hull::HullFrame frame;
  sf::web::WebDecoded cloud;  // this frame's gaussians (shell, or every splat)
  std::vector<float> sort_depth;
  std::vector<float> core_positions, core_colors;
  std::vector<uint32_t> core_indices;
  std::string info;
};

std::string stored(const std::string& name) {
  return kRoot + sf::web::normalPath(name);
}

void writeStored(const std::string& name, const uint8_t* bytes, uint32_t size) {
  const std::string path = stored(name);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes), size);
  if (!f) throw sf::Error(name + ": ran out of memory while loading");
}

// The name without the page's folder prefix, for the engine's messages (they name the file as the page does).
std::string unstored(std::string message) {
  for (size_t at; (at = message.find(kRoot)) != std::string::npos;) message.erase(at, kRoot.size());
  return message;
}

}  // namespace

extern "C" {

// The meta sidecar's name for a hull file's name (hull/meta.h hullMetaPath), which the page fetches beside
// it.
EMSCRIPTEN_KEEPALIVE const char* sf_web_hull_meta_name(const char* name) {
  static std::string out;
  out = sf::hull::hullMetaPath(name);
  return out.c_str();
}

// 1 when the file `name` of these bytes is a splat hull, as every command decides it (io/file.h
// classifyInput: the SPL2 magic, but a .splat file), else 0.
EMSCRIPTEN_KEEPALIVE int sf_web_is_hull(const uint8_t* bytes, uint32_t size, const char* name) {
  // Only a file starting with the magic can be one: any other is not copied into the file system to be asked.
  if (size < 4 || std::memcmp(bytes, "SPL2", 4) != 0) return 0;
  try {
    writeStored(name, bytes, size);
    const bool hull = sf::classifyInput(stored(name)) == sf::InputKind::kSplatHull;
    std::error_code ec;
    if (!hull) std::filesystem::remove(stored(name), ec);
    return hull ? 1 : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

// Writes the file `name` of these bytes where sf_web_hull_open reads it, whatever it holds: a scene's hull
// object is loaded by the hull loader, whose words refuse a file that is not a hull. 0 when it did not fit.
EMSCRIPTEN_KEEPALIVE int sf_web_hull_store(const uint8_t* bytes, uint32_t size, const char* name) {
  try {
    writeStored(name, bytes, size);
    return 1;
  } catch (const std::exception&) {
    return 0;
  }
}

// Opens the hull `name` (already written by sf_web_is_hull or sf_web_hull_store) with its sidecar when `meta`
// is not null, drawn in `mode` ("baked" or "sorted"). Never null; sf_web_hull_info says whether it worked.
EMSCRIPTEN_KEEPALIVE WebHull* sf_web_hull_open(const char* name, const uint8_t* meta, uint32_t meta_size,
                                               const char* mode) {
  auto* h = new (std::nothrow) WebHull;
  if (!h) return nullptr;
  std::error_code ec;
  const std::string meta_path = sf::hull::hullMetaPath(stored(name));
  try {
    h->mode = sf::hull::parseHullMode(mode);
    std::filesystem::remove(meta_path, ec);
    if (meta) writeStored(sf::hull::hullMetaPath(name), meta, meta_size);
    h->asset = sf::hull::HullAsset::load(stored(name));
    h->info = "{\"ok\":true,\"core\":" + std::to_string(h->asset->hull.core.size()) +
              ",\"shell\":" + std::to_string(h->asset->hull.shell.size()) +
              ",\"buckets\":" + std::to_string(h->asset->hull.orders.size()) +
              ",\"mode\":" + jsonString(sf::hull::hullModeName(h->mode)) +
              ",\"meta\":" + (meta ? "true" : "false") + "}";
  } catch (const std::bad_alloc&) {
    h->info = sf::web::errorInfo(std::string(name) + ": ran out of memory while loading");
  } catch (const std::exception& e) {
    h->info = sf::web::errorInfo(unstored(e.what()));
  }
  std::filesystem::remove(stored(name), ec);
  std::filesystem::remove(meta_path, ec);
  return h;
}

EMSCRIPTEN_KEEPALIVE const char* sf_web_hull_info(const WebHull* h) {
  return h->info.c_str();
}

// The frame's inputs of the hull placed by `to_world` (12 floats, rows 0..2), seen by the camera `view` (rows
// 0..2 of world_to_camera, 12 floats) with `intrinsics` (fx, fy, cx, cy) at width x height, at scene time
// `time`, lit by the default cel light: buildHullFrame as the native frame calls it for a static hull. Then
// sf_web_hull_cloud (the gaussians), the sort depths and the core mesh. The answer: JSON with the counts.
EMSCRIPTEN_KEEPALIVE const char* sf_web_hull_frame(WebHull* h, const float* to_world, const float* view,
                                                   const float* intrinsics, int width, int height,
                                                   double time) {
  try {
    sf::Camera cam;
    cam.width = width, cam.height = height;
    cam.fx = intrinsics[0], cam.fy = intrinsics[1], cam.cx = intrinsics[2], cam.cy = intrinsics[3];
    sf::Mat4 place;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) {
        cam.world_to_camera.m[r][c] = view[4 * r + c];
        place.m[r][c] = to_world[4 * r + c];
      }
    std::vector<sf::RenderObject> objects;
    std::vector<sf::RenderMesh> meshes;
    sf::hull::buildHullFrame(*h->asset, h->mode, place, cam, time, sf::hull::HullLight{}, h->frame, objects,
                             meshes);
    h->cloud = sf::web::WebDecoded{};
    h->sort_depth.clear();
    h->core_positions.clear();
    h->core_colors.clear();
    h->core_indices.clear();
    const sf::GaussianCloud& c = h->frame.cloud;
    if (!objects.empty() && c.size() > 0) {
      sf::web::fillDecoded(h->cloud, c);
      h->sort_depth.assign(objects[0].sort_depth.begin(), objects[0].sort_depth.end());
    }
    if (!meshes.empty()) {
      const sf::RenderMesh& m = meshes[0];
      for (const sf::Vec3& p : m.positions)
        h->core_positions.insert(h->core_positions.end(), {p.x, p.y, p.z});
      for (const auto& col : m.colors) h->core_colors.insert(h->core_colors.end(), col.begin(), col.end());
      h->core_indices.assign(m.indices.begin(), m.indices.end());
    }
    h->info = "{\"ok\":true,\"gaussians\":" + std::to_string(c.size()) +
              ",\"sh_degree\":" + std::to_string(c.sh_degree) +
              ",\"antialiased\":" + (c.antialiased ? "true" : "false") +
              ",\"linear\":" + (c.color_space == sf::ColorSpace::kLinear ? "true" : "false") +
              ",\"screen_filter\":" + jsonFloat(c.screen_filter) +
              ",\"sort_depths\":" + std::to_string(h->sort_depth.size()) +
              ",\"core_vertices\":" + std::to_string(h->core_positions.size() / 3) +
              ",\"core_indices\":" + std::to_string(h->core_indices.size()) +
              ",\"bucket\":" + std::to_string(h->frame.bucket) + "}";
  } catch (const std::bad_alloc&) {
    h->info = sf::web::errorInfo(h->asset->path + ": ran out of memory while drawing");
  } catch (const std::exception& e) {
    h->info = sf::web::errorInfo(unstored(e.what()));
  }
  return h->info.c_str();
}

EMSCRIPTEN_KEEPALIVE const sf::web::WebDecoded* sf_web_hull_cloud(const WebHull* h) {
  return &h->cloud;
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_hull_sort_depths(const WebHull* h) {
  return h->sort_depth.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_hull_core_positions(const WebHull* h) {
  return h->core_positions.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_hull_core_colors(const WebHull* h) {
  return h->core_colors.data();
}
EMSCRIPTEN_KEEPALIVE const uint32_t* sf_web_hull_core_indices(const WebHull* h) {
  return h->core_indices.data();
}

// The starting camera of a hull opened directly: frameBox of the 1-99 percentile box of its rest splats in
// the glTF convention (hulls are y up), as for a glTF model.
EMSCRIPTEN_KEEPALIVE int sf_web_hull_camera(const WebHull* h, int width, int height, float* out) {
  if (!h->asset || h->asset->rest.size() == 0) return 0;
  const sf::CloudBounds b = sf::computeBounds(h->asset->rest);
  const sf::Vec3 up{0, 1, 0};
  sf::web::writeCamera(sf::frameBox(b.p01, b.p99, sf::Vec3{0, 0, -1}, up, width, height),
                       0.5f * (b.p01 + b.p99), up, 50.0f, b, out);
  return 1;
}

// The rest splats' centres of the hull (x, y, z each, in its space; sf_web_hull_rest_count of them): a
// scene's bounds take them as they take a splat object's centres (the scene loader's hull object holds its
// rest splats as its cloud).
EMSCRIPTEN_KEEPALIVE uint32_t sf_web_hull_rest_count(const WebHull* h) {
  return h->asset ? static_cast<uint32_t>(h->asset->rest.size()) : 0;
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_hull_rest_positions(const WebHull* h) {
  return h->asset && h->asset->rest.size() ? &h->asset->rest.positions[0].x : nullptr;
}

EMSCRIPTEN_KEEPALIVE void sf_web_hull_release(WebHull* h) {
  delete h;
}

}  // extern "C"
