// glTF models in the page: the engine's glTF reader (io/gltf.cpp, tinygltf and stb for the base-colour
// textures), its animation runtime (anim/: clip sampling, local to model, joint palettes, morph targets and
// skinning, LBS or DQS) and its model layer (model/gltf_model.cpp: which primitives are drawn, their
// textures, the posed meshes), compiled to WebAssembly behind the C interface the page's decode worker calls.
// The page poses a model here for each frame's time (skinning on the CPU, as the CPU renderer poses it) and
// draws the meshes it gets with WebGPU (web/shaders/mesh.wgsl).
//
// This file also defines the web build's io/gltf_files.h: a .gltf's external buffers and images are the files
// the page fetched beside it and handed in (sf_web_gltf_file), confined by their text to the glTF file's
// folder. A parse that reaches a file not handed in yet records it; sf_web_gltf_open then answers with the
// files to fetch, and the page opens the model again with them (a fetch that failed is handed in as missing,
// and the reader then says so in its own words).
#include <emscripten/emscripten.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "anim/clip.h"
#include "core/error.h"
#include "io/gltf.h"
#include "io/gltf_files.h"
#include "model/gltf_model.h"
#include "render/camera.h"
#include "web_api.h"

namespace {

using sf::web::jsonFloat;
using sf::web::jsonString;

// The external files of the model being opened (web_api.h).
sf::web::HandedFiles g_files;

// A model opened by the page, its last pose and that pose's meshes (in model space: each draw placed by its
// mesh node's model matrix).
struct WebGltf {
  std::string name, info;  // info: JSON
  std::unique_ptr<sf::GltfModel> model;
  sf::GltfModel::Pose pose;
  std::vector<sf::RenderMesh> meshes;
  float clip_time = 0;
};

std::string floats(std::initializer_list<float> values) {
  std::string out = "[";
  for (float v : values) out += (out.size() > 1 ? "," : "") + jsonFloat(v);
  return out + "]";
}

// Poses `m` at `clip_time` seconds of clip `clip` (-1: the rest pose), skinned on the CPU (LBS, or DQS).
void pose(WebGltf& m, int clip, float clip_time, bool dqs) {
  m.pose.skinning = dqs ? sf::anim::SkinningMethod::kDualQuaternion : sf::anim::SkinningMethod::kLinearBlend;
  m.pose.skin_in_renderer = false;
  m.model->pose(clip, clip_time, m.pose);
  m.meshes = m.model->renderMeshes(m.pose, sf::Mat4{});
  m.clip_time = clip_time;
}

// The model's description for the page: its clips, each drawn primitive's static layout, its gaussians.
std::string describe(const WebGltf& m) {
  const sf::GltfModel& model = *m.model;
  std::string clips = "[";
  for (size_t i = 0; i < model.clips().size(); ++i)
    clips += std::string(i ? "," : "") + "{\"name\":" + jsonString(model.clips()[i].name) +
             ",\"duration\":" + jsonFloat(model.clips()[i].duration) + "}";
  clips += "]";
  std::string draws = "[";
  for (size_t i = 0; i < m.meshes.size(); ++i) {
    const sf::RenderMesh& r = m.meshes[i];
    const bool textured = r.texture && !r.uvs.empty();
    draws += std::string(i ? "," : "") + "{\"vertices\":" + std::to_string(r.positions.size()) +
             ",\"indices\":" + std::to_string(r.indices.size()) +
             ",\"normals\":" + (r.normals.empty() ? "false" : "true") +
             ",\"colors\":" + (r.colors.empty() ? "false" : "true") + ",\"base_color\":" +
             floats({r.base_color[0], r.base_color[1], r.base_color[2], r.base_color[3]}) + ",\"texture\":" +
             (textured ? "{\"width\":" + std::to_string(r.texture->width) +
                             ",\"height\":" + std::to_string(r.texture->height) +
                             ",\"wrap_s\":" + std::to_string(r.texture->wrap_s) +
                             ",\"wrap_t\":" + std::to_string(r.texture->wrap_t) + "}"
                       : std::string("null")) +
             "}";
  }
  draws += "]";
  std::string warnings = "[";
  for (size_t i = 0; i < model.document().warnings.size(); ++i)
    warnings += (i ? "," : "") + jsonString(model.document().warnings[i]);
  warnings += "]";
  const size_t splats = model.splats().size();
  return "{\"ok\":true,\"clips\":" + clips + ",\"draws\":" + draws +
         ",\"gaussians\":" + std::to_string(splats) +
         ",\"sh_degree\":" + std::to_string(splats ? model.splats().sh_degree : 0) +
         ",\"vertices\":" + std::to_string(model.vertexCount()) + ",\"warnings\":" + warnings + "}";
}

// The world-space points of the model's last pose placed by `to_world` (rows 0..2): its posed vertices and
// its gaussians' centres, as sceneBounds takes a glTF object's.
void addPoints(const WebGltf& m, const sf::Mat4& to_world, std::vector<sf::Vec3>& out) {
  for (const sf::RenderMesh& r : m.meshes) {
    const sf::Mat4 to = to_world * r.object_to_world;
    for (const sf::Vec3& p : r.positions) out.push_back(sf::transformPoint(to, p));
  }
  for (const sf::Vec3& p : m.model->splats().positions) out.push_back(sf::transformPoint(to_world, p));
}

}  // namespace

namespace sf::gltf_files {

// The folder a glTF file's name lies in, as the page names it ("." for a file at the top).
std::string baseDir(const std::string& dir) {
  const std::string d = std::filesystem::path(dir).lexically_normal().generic_string();
  return d.empty() ? "." : d;
}

// Whether the file is handed in; a file inside the folder (by its text) that is not is recorded for the page
// to fetch.
bool exists(const std::string& base_dir, const std::string& path) {
  const std::string p = std::filesystem::path(path).lexically_normal().generic_string();
  const std::string base = base_dir == "." ? "" : base_dir + "/";
  if (p.compare(0, base.size(), base) != 0 || p.size() == base.size()) return false;
  const std::string rel = p.substr(base.size());
  if (rel == ".." || rel.rfind("../", 0) == 0 || rel[0] == '/') return false;  // outside the folder
  return g_files.has(p);
}

std::vector<uint8_t> read(const std::string& path) {
  return g_files.read(path);
}

}  // namespace sf::gltf_files

extern "C" {

// Opens the glTF / GLB `bytes` named `name` (its folder holds the external files). Never null;
// sf_web_gltf_info says what came of it: {"ok": true, "clips": [{"name", "duration"}], "draws": [{"vertices",
// "indices", "normals", "colors", "base_color", "texture": {"width", "height", "wrap_s", "wrap_t"} or null}],
// "gaussians", "sh_degree", "vertices", "warnings"} (the model posed at rest), {"ok": false, "files":
// [{"path" (as messages name it), "name" (relative to the glTF file)}]} when the reader asked for files the
// page has not handed in (sf_web_gltf_file; then open it again), or {"ok": false, "error"} in the command
// line's words.
EMSCRIPTEN_KEEPALIVE WebGltf* sf_web_gltf_open(const uint8_t* bytes, uint32_t size, const char* name) {
  auto* m = new WebGltf;
  m->name = name;
  g_files.needed.clear();
  try {
    const std::string dir = std::filesystem::path(m->name).parent_path().generic_string();
    sf::GltfDocument doc =
        sf::parseGltf(std::span<const uint8_t>(bytes, size), m->name, dir.empty() ? "." : dir);
    if (g_files.needed.empty()) {
      m->model = std::make_unique<sf::GltfModel>(std::move(doc));
      pose(*m, -1, 0, false);
      m->info = describe(*m);
    }
  } catch (const std::bad_alloc&) {
    m->info = sf::web::errorInfo(m->name + ": ran out of memory while loading");
  } catch (const std::exception& e) {
    if (g_files.needed.empty()) m->info = sf::web::errorInfo(e.what());
  }
  if (!g_files.needed.empty()) {
    const std::string base =
        sf::gltf_files::baseDir(std::filesystem::path(m->name).parent_path().generic_string());
    m->model.reset();
    m->info = g_files.request(base == "." ? "" : base + "/");
  }
  return m;
}

EMSCRIPTEN_KEEPALIVE const char* sf_web_gltf_info(const WebGltf* m) {
  return m->info.c_str();
}

// An external file of the model being opened, by the path sf_web_gltf_open named: its bytes, or (`missing`
// not 0) none, the page having failed to fetch it. 0 when it did not fit in memory.
EMSCRIPTEN_KEEPALIVE int sf_web_gltf_file(const char* path, const uint8_t* bytes, uint32_t size,
                                          int missing) {
  return g_files.put(path, bytes, size, missing != 0) ? 1 : 0;
}

// Forgets the handed-in files (the model has opened, or failed).
EMSCRIPTEN_KEEPALIVE void sf_web_gltf_files_clear() {
  g_files = sf::web::HandedFiles{};
}

// The clip an object of the model plays (GltfModel::objectClip: `clip` a name or an index, empty: the first
// animation): {"ok": true, "clip": index (-1: none)} or {"ok": false, "error"} naming `path` as the command
// line does. The answer lives until the next call.
EMSCRIPTEN_KEEPALIVE const char* sf_web_gltf_clip(const WebGltf* m, const char* path, const char* clip) {
  static std::string answer;
  try {
    answer = "{\"ok\":true,\"clip\":" + std::to_string(m->model->objectClip(path, clip)) + "}";
  } catch (const std::exception& e) {
    answer = sf::web::errorInfo(e.what());
  }
  return answer.c_str();
}

// The clip time an object plays at `scene_time` (anim::clipTimeAt: time + speed x scene_time, wrapped into
// the clip when it loops, else clamped); 0 for clip -1.
EMSCRIPTEN_KEEPALIVE float sf_web_gltf_clip_time(const WebGltf* m, int clip, double scene_time, double time,
                                                 double speed, int loop) {
  if (clip < 0 || clip >= static_cast<int>(m->model->clips().size())) return 0;
  return sf::anim::clipTimeAt(scene_time, time, speed, loop != 0,
                              m->model->clips()[static_cast<size_t>(clip)].duration);
}

// Poses the model at `clip_time` of clip `clip` (-1: rest), skinning on the CPU (`dqs`: dual quaternions).
// Returns null, or the error's message.
EMSCRIPTEN_KEEPALIVE const char* sf_web_gltf_pose(WebGltf* m, int clip, float clip_time, int dqs) {
  static std::string error;
  try {
    pose(*m, clip, clip_time, dqs != 0);
    return nullptr;
  } catch (const std::exception& e) {
    error = e.what();
    return error.c_str();
  }
}

// The last pose's drawn primitive `d`: positions and normals (3 floats a vertex, in its mesh node's space;
// normals only where the info says so) and that node's model matrix (16 floats, row-major).
EMSCRIPTEN_KEEPALIVE const float* sf_web_gltf_positions(const WebGltf* m, uint32_t d) {
  return &m->meshes.at(d).positions.data()->x;
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_gltf_normals(const WebGltf* m, uint32_t d) {
  return m->meshes.at(d).normals.empty() ? nullptr : &m->meshes.at(d).normals.data()->x;
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_gltf_matrix(const WebGltf* m, uint32_t d) {
  return &m->meshes.at(d).object_to_world.m[0][0];
}
// Its static inputs: indices (none: drawn three vertices at a time), UVs (2 floats a vertex, where it has a
// texture), linear vertex colours (4 floats), and the texture's RGBA8 texels (sRGB-encoded, top row first).
EMSCRIPTEN_KEEPALIVE const uint32_t* sf_web_gltf_indices(const WebGltf* m, uint32_t d) {
  return m->meshes.at(d).indices.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_gltf_uvs(const WebGltf* m, uint32_t d) {
  return m->meshes.at(d).uvs.empty() ? nullptr : m->meshes.at(d).uvs.data()->data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_gltf_colors(const WebGltf* m, uint32_t d) {
  return m->meshes.at(d).colors.empty() ? nullptr : m->meshes.at(d).colors.data()->data();
}
EMSCRIPTEN_KEEPALIVE const uint8_t* sf_web_gltf_texels(const WebGltf* m, uint32_t d) {
  const sf::MeshTexture* t = m->meshes.at(d).texture;
  return t ? t->rgba.data() : nullptr;
}

// The model's KHR_gaussian_splatting gaussians (model space) as a decode result (sf_web_info and the other
// sf_web_ getters of decode_api.cpp; release it with sf_web_release); its info says ok false without any.
EMSCRIPTEN_KEEPALIVE sf::web::WebDecoded* sf_web_gltf_splats(const WebGltf* m) {
  auto* r = new sf::web::WebDecoded;
  const sf::GaussianCloud& c = m->model->splats();
  if (c.size() == 0) {
    r->info = sf::web::errorInfo(m->name + ": has no KHR_gaussian_splatting gaussians");
    return r;
  }
  try {
    sf::web::fillDecoded(*r, c);
    r->info = "{\"ok\":true,\"format\":\"glTF\",\"version\":0,\"gaussians\":" + std::to_string(c.size()) +
              ",\"sh_degree\":" + std::to_string(c.sh_degree) +
              ",\"antialiased\":" + (c.antialiased ? "true" : "false") +
              ",\"linear\":" + (c.color_space == sf::ColorSpace::kLinear ? "true" : "false") +
              ",\"screen_filter\":" + std::to_string(c.screen_filter) + ",\"warnings\":[]}";
    r->ok = true;
  } catch (const std::exception&) {
    r->info = sf::web::errorInfo(m->name + ": ran out of memory while loading");
  }
  return r;
}

// The camera `splatforge render` takes for the model opened alone at width x height, posed as last posed
// (autoCamera of a glTF object: frameBox of the 1-99 percentile box of its posed vertices and gaussians,
// along -z with +y up, the glTF convention), into out[0..27) (writeCamera). 0 when it has nothing to frame.
EMSCRIPTEN_KEEPALIVE int sf_web_gltf_camera(const WebGltf* m, int width, int height, float* out) {
  sf::GaussianCloud points;
  addPoints(*m, sf::Mat4{}, points.positions);
  if (points.positions.empty()) return 0;
  const sf::CloudBounds b = sf::computeBounds(points);
  const sf::Vec3 up{0, 1, 0};
  sf::web::writeCamera(sf::frameBox(b.p01, b.p99, sf::Vec3{0, 0, -1}, up, width, height),
                       0.5f * (b.p01 + b.p99), up, 50.0f, b, out);
  return 1;
}

// Adds object `object` of the scene, the model `m` as last posed (at the object's clip time), to the scene's
// bounds: its posed vertices and gaussians in world space. 0 when it did not fit in memory.
EMSCRIPTEN_KEEPALIVE int sf_web_scene_attach_gltf(sf::web::WebScene* s, uint32_t object, const WebGltf* m) {
  try {
    addPoints(*m, s->object_to_world.at(object), s->world.positions);
    return 1;
  } catch (const std::exception&) {
    return 0;
  }
}

EMSCRIPTEN_KEEPALIVE void sf_web_gltf_release(WebGltf* m) {
  delete m;
}

}  // extern "C"
