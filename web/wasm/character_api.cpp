// Splat characters in the page: the engine's package loader (character/package.cpp: character.json, every
// file's size and SHA-256, the counts, the bound primitive, the bindings' ranges, the expression space, the
// default clip), its model of the skin (retargeted clips included) and its animator (character/animator.cpp:
// clip sampling, the face layer's morph weights, look-at into the neck, head and eyes), compiled to
// WebAssembly behind the C interface the page's decode worker calls. Each frame the animator poses the
// skeleton here and the page gets what the Vulkan frame's deform source holds (Character::deformSource): the
// joint palette (LBS rows, and dual quaternions), the bound mesh's morph weights and its mesh-to-model
// matrix; the bound mesh is morphed and skinned and every splat deformed on the GPU
// (web/shaders/deform.wgsl), from the static inputs uploaded once (bind-pose vertices, influences, morph
// deltas, triangle list, bindings.bin records).
//
// This file also defines the web build's character/package_files.h: a package's files are those the page
// fetched beside its character.json and handed in (sf_web_character_file). A load that reaches a file not
// handed in yet records it; sf_web_character_open then answers with the files to fetch, and the page opens
// the package again with them (a fetch that failed is handed in as missing, and the loader then says so in
// its own words).
#include <emscripten/emscripten.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "anim/clip.h"
#include "anim/skinning.h"
#include "character/animator.h"
#include "character/character.h"
#include "character/package_files.h"
#include "core/error.h"
#include "deform/deform_shared.h"
#include "io/json.h"
#include "render/camera.h"
#include "web_api.h"

namespace {

using sf::web::jsonFloat;
using sf::web::jsonString;
namespace fs = std::filesystem;

using sf::web::normalPath;

// The files of the package being opened (web_api.h).
sf::web::HandedFiles g_package;

// A character opened by the page: the package, its animator, the last frame posed and what the GPU reads of
// it.
struct WebCharacter {
  std::string name, dir, info;  // info: JSON
  std::shared_ptr<const sf::character::Character> character;
  std::unique_ptr<sf::character::Animator> animator;
  sf::character::Character::Frame frame;
  bool gpu_skin = false;
  std::vector<float> morph;  // the face layer: one weight per morph target of the bound mesh (empty: none)
  // Static inputs of the GPU skin pass (SF_SKIN_INFLUENCES per vertex).
  std::vector<uint32_t> joints;
  std::vector<float> weights;
  // This frame's: the palette as LBS rows (12 floats a joint) and dual quaternions (SF_SKIN_DQ_FLOATS a
  // joint), the bound mesh's morph weights, its posed vertices (when it is not skinned on the GPU), and the
  // mesh-to-model matrix and its inverse (rows 0..2 each).
  std::vector<float> palette, dq, morph_weights, vertices;
  float matrix[24] = {};
};

std::string describe(const WebCharacter& c) {
  const sf::character::Character& ch = *c.character;
  const sf::GltfModel& model = ch.model();
  std::string clips = "[";
  for (size_t i = 0; i < model.clips().size(); ++i)
    clips += std::string(i ? "," : "") + "{\"name\":" + jsonString(model.clips()[i].name) +
             ",\"duration\":" + jsonFloat(model.clips()[i].duration) + "}";
  clips += "]";
  const sf::GltfModel::DrawInfo draw = model.drawInfo(static_cast<size_t>(ch.boundDraw()));
  const std::vector<std::string>& names =
      model.document().meshes[static_cast<size_t>(draw.mesh)].target_names;
  std::string targets = "[";
  for (size_t i = 0; i < ch.morphTargetCount(); ++i)
    targets += std::string(i ? "," : "") + jsonString(i < names.size() ? names[i] : std::to_string(i));
  targets += "]";
  const sf::GltfPrimitive& prim = model.primitiveOf(static_cast<size_t>(ch.boundDraw()));
  const size_t joints = c.palette.size() / 12;
  return "{\"ok\":true,\"gaussians\":" + std::to_string(ch.splats().size()) +
         ",\"sh_degree\":" + std::to_string(ch.splats().sh_degree) +
         ",\"vertices\":" + std::to_string(prim.positions.size()) +
         ",\"triangles\":" + std::to_string(ch.triangles().size() / 3) +
         ",\"joints\":" + std::to_string(joints) + ",\"gpu_skin\":" + (c.gpu_skin ? "true" : "false") +
         ",\"eight\":" + (c.gpu_skin && !prim.joints1.empty() ? "true" : "false") +
         ",\"head\":" + (c.animator->headJoint() >= 0 ? "true" : "false") + ",\"targets\":" + targets +
         ",\"expression_space\":" + jsonString(ch.expressionSpace()) +
         ",\"default_clip\":" + jsonString(ch.defaultClip()) + ",\"clips\":" + clips + "}";
}

// The model-space points of the frame last posed, deformed on the CPU (the reference path), placed by
// `to_world`: what frames the starting camera, as sceneBounds takes a character's deformed splats.
void addPoints(const WebCharacter& c, const sf::Mat4& to_world, std::vector<sf::Vec3>& out) {
  sf::character::Character::Frame f;
  f.pose.skinning = c.frame.pose.skinning;
  c.animator->evaluate(f, false);
  const sf::Mat4 to =
      to_world * c.character->model().meshToModel(f.pose, static_cast<size_t>(c.character->boundDraw()));
  for (const sf::Vec3& p : f.positions) out.push_back(sf::transformPoint(to, p));
}

}  // namespace

namespace sf::character::package_files {

// Whether the file is handed in; one that is not, and not known to be missing, is recorded for the page to
// fetch.
bool exists(const std::string& path) {
  return g_package.has(path);
}

std::vector<uint8_t> read(const std::string& path) {
  return g_package.read(path);
}

std::string partRefusal() {
  return "a package's optional parts (mouth, teeth, correctives: docs/formats/character-extras.md) are not "
         "in "
         "the web build yet (render this character with the splatforge command line)";
}

}  // namespace sf::character::package_files

extern "C" {

// Whether `size` bytes are a character package's character.json (a JSON object whose "format" is
// "splatforge-character"): the page opens such a file as its package.
EMSCRIPTEN_KEEPALIVE int sf_web_is_character(const uint8_t* bytes, uint32_t size, const char* name) {
  try {
    const nlohmann::json j =
        sf::parseJsonText(std::string_view(reinterpret_cast<const char*>(bytes), size), name);
    return j.is_object() && j.contains("format") && j["format"] == "splatforge-character";
  } catch (const std::exception&) {
    return 0;
  }
}

// Opens the package whose character.json is `bytes`, named `name` (its folder holds the package's files).
// Never null; sf_web_character_info says what came of it: {"ok": true, "gaussians", "sh_degree", "vertices",
// "triangles", "joints", "gpu_skin", "eight", "head", "targets": [names], "expression_space", "default_clip",
// "clips": [{"name", "duration"}]} (posed at rest), {"ok": false, "files": [{"path", "name"}]} when the
// loader asked for files the page has not handed in (sf_web_character_file; then open it again), or {"ok":
// false, "error"} in the command line's words.
EMSCRIPTEN_KEEPALIVE WebCharacter* sf_web_character_open(const uint8_t* bytes, uint32_t size,
                                                         const char* name) {
  auto* c = new WebCharacter;
  c->name = name;
  const std::string dir = fs::path(c->name).parent_path().generic_string();
  c->dir = dir.empty() ? "." : dir;
  g_package.needed.clear();
  try {
    g_package.files[normalPath(c->name)].assign(bytes, bytes + size);
    auto ch = std::make_shared<const sf::character::Character>(sf::character::Character::loadPackage(c->dir));
    if (g_package.needed.empty()) {
      c->character = ch;
      c->animator = std::make_unique<sf::character::Animator>(ch);
      c->gpu_skin = ch->gpuSkinnable();
      if (c->gpu_skin) {
        const sf::GltfPrimitive& prim = ch->model().primitiveOf(static_cast<size_t>(ch->boundDraw()));
        const size_t n = prim.positions.size();
        c->joints.assign(n * SF_SKIN_INFLUENCES, 0);
        c->weights.assign(n * SF_SKIN_INFLUENCES, 0.0f);
        for (size_t v = 0; v < n; ++v)
          for (size_t k = 0; k < 4; ++k) {
            c->joints[v * SF_SKIN_INFLUENCES + k] = prim.joints0[v][k];
            c->weights[v * SF_SKIN_INFLUENCES + k] = prim.weights0[v][k];
            if (!prim.joints1.empty()) {
              c->joints[v * SF_SKIN_INFLUENCES + 4 + k] = prim.joints1[v][k];
              c->weights[v * SF_SKIN_INFLUENCES + 4 + k] = prim.weights1[v][k];
            }
          }
      }
      c->animator->play(-1, 0);
      c->animator->evaluate(c->frame, true);
      c->palette.assign(ch->palette(c->frame).size() * 12, 0.0f);
      c->info = describe(*c);
    }
  } catch (const std::bad_alloc&) {
    c->info = sf::web::errorInfo(c->dir + ": ran out of memory while loading");
  } catch (const std::exception& e) {
    if (g_package.needed.empty()) c->info = sf::web::errorInfo(e.what());
  }
  if (!g_package.needed.empty()) {
    c->character.reset();
    c->animator.reset();
    c->info = g_package.request(c->dir == "." ? "" : normalPath(c->dir) + "/");
  }
  return c;
}

EMSCRIPTEN_KEEPALIVE const char* sf_web_character_info(const WebCharacter* c) {
  return c->info.c_str();
}

// A file of the package being opened, by the path sf_web_character_open named: its bytes, or (`missing` not
// 0) none, the page having failed to fetch it. 0 when it did not fit in memory.
EMSCRIPTEN_KEEPALIVE int sf_web_character_file(const char* path, const uint8_t* bytes, uint32_t size,
                                               int missing) {
  return g_package.put(path, bytes, size, missing != 0) ? 1 : 0;
}

// Forgets the handed-in files (the package has opened, or failed).
EMSCRIPTEN_KEEPALIVE void sf_web_character_files_clear() {
  g_package = sf::web::HandedFiles{};
}

// The clip a character object plays (Character::objectClip: `clip` a name or an index, empty: the package's
// default clip): {"ok": true, "clip": index (-1: the rest pose)} or {"ok": false, "error"} naming `where` as
// the command line does. The answer lives until the next call.
EMSCRIPTEN_KEEPALIVE const char* sf_web_character_clip(const WebCharacter* c, const char* where,
                                                       const char* clip) {
  static std::string answer;
  try {
    answer = "{\"ok\":true,\"clip\":" + std::to_string(c->character->objectClip(where, clip)) + "}";
  } catch (const std::exception& e) {
    answer = sf::web::errorInfo(e.what());
  }
  return answer.c_str();
}

// The clip time an object plays at `scene_time` (anim::clipTimeAt); 0 for clip -1.
EMSCRIPTEN_KEEPALIVE float sf_web_character_clip_time(const WebCharacter* c, int clip, double scene_time,
                                                      double time, double speed, int loop) {
  const auto& clips = c->character->model().clips();
  if (clip < 0 || clip >= static_cast<int>(clips.size())) return 0;
  return sf::anim::clipTimeAt(scene_time, time, speed, loop != 0, clips[static_cast<size_t>(clip)].duration);
}

// The face layer: morph target `target` (as the bound mesh names it) at `weight`, the others kept (all 0 at
// first). Returns null, or why not.
EMSCRIPTEN_KEEPALIVE const char* sf_web_character_expression(WebCharacter* c, const char* target,
                                                             float weight) {
  static std::string error;
  const sf::character::Character& ch = *c->character;
  const sf::GltfModel::DrawInfo draw = ch.model().drawInfo(static_cast<size_t>(ch.boundDraw()));
  const std::vector<std::string>& names =
      ch.model().document().meshes[static_cast<size_t>(draw.mesh)].target_names;
  const auto it = std::find(names.begin(), names.end(), std::string(target));
  if (it == names.end() || static_cast<size_t>(it - names.begin()) >= ch.morphTargetCount()) {
    error = c->dir + ": the character has no morph target named '" + target + "' (" +
            std::to_string(ch.morphTargetCount()) + " morph targets, expression space '" +
            ch.expressionSpace() + "')";
    return error.c_str();
  }
  c->morph.resize(ch.morphTargetCount(), 0.0f);
  c->morph[static_cast<size_t>(it - names.begin())] = weight;
  return nullptr;
}

// Poses the character at `clip_time` of clip `clip` (-1: rest) as the viewer's character controls pose it
// (Animator: the clip, the face layer, look-at at the model-space point x, y, z when `look` is not 0),
// leaving the bound mesh for the GPU to skin, and fills this frame's palette, morph weights, vertices and
// matrix
// (`dqs`: dual-quaternion skinning). Returns null, or the error's message.
EMSCRIPTEN_KEEPALIVE const char* sf_web_character_pose(WebCharacter* c, int clip, float clip_time, int dqs,
                                                       int look, float x, float y, float z) {
  static std::string error;
  try {
    const sf::character::Character& ch = *c->character;
    c->animator->play(clip, 0);
    c->animator->update(clip_time);
    c->animator->setExpression(std::any_of(c->morph.begin(), c->morph.end(), [](float w) { return w != 0; })
                                   ? c->morph
                                   : std::vector<float>{});
    c->animator->lookAt(look ? std::optional<sf::Vec3>(sf::Vec3{x, y, z}) : std::nullopt);
    c->frame.pose.skinning =
        dqs ? sf::anim::SkinningMethod::kDualQuaternion : sf::anim::SkinningMethod::kLinearBlend;
    c->animator->evaluate(c->frame, true);
    const sf::SplatDeformSource s = ch.deformSource(c->frame, c->gpu_skin);
    std::span<const sf::Mat4> palette = c->gpu_skin ? s.skin.palette : s.palette;
    c->palette.clear();
    for (const sf::Mat4& m : palette)
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 4; ++k) c->palette.push_back(m.m[r][k]);
    c->dq.clear();
    if (c->gpu_skin && s.skin.dual_quaternion) {
      std::vector<sf::anim::DualQuatJoint> dq(palette.size());
      sf::anim::DualQuatPaletteJob{palette, dq}.run();
      for (const sf::anim::DualQuatJoint& d : dq) {
        const float q[8] = {d.real.w, d.real.x, d.real.y, d.real.z, d.dual.w, d.dual.x, d.dual.y, d.dual.z};
        c->dq.insert(c->dq.end(), q, q + 8);
        for (int r = 0; r < 3; ++r)
          for (int k = 0; k < 3; ++k) c->dq.push_back(d.stretch.m[r][k]);
        c->dq.insert(c->dq.end(), SF_SKIN_DQ_FLOATS - 17, 0.0f);
      }
    }
    c->morph_weights.assign(s.skin.morph_weights.begin(), s.skin.morph_weights.end());
    c->vertices.clear();
    if (!c->gpu_skin)
      for (const sf::Vec3& v : s.vertices) c->vertices.insert(c->vertices.end(), {v.x, v.y, v.z});
    const sf::Mat4& to = ch.model().meshToModel(c->frame.pose, static_cast<size_t>(ch.boundDraw()));
    const sf::Mat4 from = sf::inverseAffine(to);
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 4; ++k) c->matrix[r * 4 + k] = to.m[r][k], c->matrix[12 + r * 4 + k] = from.m[r][k];
    return nullptr;
  } catch (const std::exception& e) {
    error = e.what();
    return error.c_str();
  }
}

// The last pose: the palette (12 floats a joint), its dual quaternions (SF_SKIN_DQ_FLOATS a joint;
// dual-quaternion skinning only), the bound mesh's morph weights (one a target), its posed vertices (3 floats
// a vertex, when not skinned on the GPU) and the mesh-to-model matrix with its inverse (24 floats).
EMSCRIPTEN_KEEPALIVE const float* sf_web_character_palette(const WebCharacter* c) {
  return c->palette.data();
}
EMSCRIPTEN_KEEPALIVE uint32_t sf_web_character_palette_floats(const WebCharacter* c) {
  return static_cast<uint32_t>(c->palette.size());
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_character_dq(const WebCharacter* c) {
  return c->dq.data();
}
EMSCRIPTEN_KEEPALIVE uint32_t sf_web_character_dq_floats(const WebCharacter* c) {
  return static_cast<uint32_t>(c->dq.size());
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_character_morph_weights(const WebCharacter* c) {
  return c->morph_weights.data();
}
EMSCRIPTEN_KEEPALIVE uint32_t sf_web_character_morph_count(const WebCharacter* c) {
  return static_cast<uint32_t>(c->morph_weights.size());
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_character_vertices(const WebCharacter* c) {
  return c->vertices.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_character_matrix(const WebCharacter* c) {
  return c->matrix;
}

// The static inputs: the bindings.bin records (68 bytes a splat), the bound mesh's triangle list, and for the
// GPU skin pass its bind-pose vertices (3 floats a vertex), influences (SF_SKIN_INFLUENCES joints and weights
// a vertex) and morph position deltas (target-major, 3 floats a vertex).
EMSCRIPTEN_KEEPALIVE const uint8_t* sf_web_character_bindings(const WebCharacter* c) {
  return c->character->bindingRecords().data();
}
EMSCRIPTEN_KEEPALIVE const uint32_t* sf_web_character_indices(const WebCharacter* c) {
  return c->character->triangles().data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_character_rest(const WebCharacter* c) {
  const sf::character::Character& ch = *c->character;
  return &ch.model().primitiveOf(static_cast<size_t>(ch.boundDraw())).positions.data()->x;
}
EMSCRIPTEN_KEEPALIVE const uint32_t* sf_web_character_joints(const WebCharacter* c) {
  return c->joints.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_character_weights(const WebCharacter* c) {
  return c->weights.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_character_morph_deltas(const WebCharacter* c) {
  const sf::SplatDeformSource s = c->character->deformSource(c->frame, c->gpu_skin);
  return s.skin.morph_positions.empty() ? nullptr : &s.skin.morph_positions.data()->x;
}
EMSCRIPTEN_KEEPALIVE uint32_t sf_web_character_morph_delta_floats(const WebCharacter* c) {
  const sf::SplatDeformSource s = c->character->deformSource(c->frame, c->gpu_skin);
  return static_cast<uint32_t>(3 * s.skin.morph_positions.size());
}

// The package's splats (rest values; the deform pass writes their centres and covariances each frame) as a
// decode result (sf_web_info and the other getters of decode_api.cpp; release it with sf_web_release).
EMSCRIPTEN_KEEPALIVE sf::web::WebDecoded* sf_web_character_splats(const WebCharacter* c) {
  auto* r = new sf::web::WebDecoded;
  const sf::GaussianCloud& s = c->character->splats();
  try {
    sf::web::fillDecoded(*r, s);
    r->info =
        "{\"ok\":true,\"format\":\"character\",\"version\":0,\"gaussians\":" + std::to_string(s.size()) +
        ",\"sh_degree\":" + std::to_string(s.sh_degree) +
        ",\"antialiased\":" + (s.antialiased ? "true" : "false") +
        ",\"linear\":" + (s.color_space == sf::ColorSpace::kLinear ? "true" : "false") +
        ",\"screen_filter\":" + std::to_string(s.screen_filter) + ",\"warnings\":[]}";
    r->ok = true;
  } catch (const std::exception&) {
    r->info = sf::web::errorInfo(c->dir + ": ran out of memory while loading");
  }
  return r;
}

// The camera `splatforge render` takes for the character opened alone at width x height, posed as last posed
// (autoCamera of a character: frameBox of the 1-99 percentile box of its deformed splat centres, along -z
// with +y up, the glTF convention), into out[0..27) (writeCamera). 0 when it has nothing to frame.
EMSCRIPTEN_KEEPALIVE int sf_web_character_camera(const WebCharacter* c, int width, int height, float* out) {
  try {
    sf::GaussianCloud points;
    addPoints(*c, sf::Mat4{}, points.positions);
    if (points.positions.empty()) return 0;
    const sf::CloudBounds b = sf::computeBounds(points);
    const sf::Vec3 up{0, 1, 0};
    sf::web::writeCamera(sf::frameBox(b.p01, b.p99, sf::Vec3{0, 0, -1}, up, width, height),
                         0.5f * (b.p01 + b.p99), up, 50.0f, b, out);
    return 1;
  } catch (const std::exception&) {
    return 0;
  }
}

// Adds object `object` of the scene, the character `c` as last posed, to the scene's bounds: its deformed
// splat centres in world space. 0 when it did not fit in memory.
EMSCRIPTEN_KEEPALIVE int sf_web_scene_attach_character(sf::web::WebScene* s, uint32_t object,
                                                       const WebCharacter* c) {
  try {
    addPoints(*c, s->object_to_world.at(object), s->world.positions);
    return 1;
  } catch (const std::exception&) {
    return 0;
  }
}

EMSCRIPTEN_KEEPALIVE void sf_web_character_release(WebCharacter* c) {
  delete c;
}

}  // extern "C"
