// The web page's file decoding and scene reading: the engine's own decodeSplats (io/formats.h) and scene
// document (scene/scene_doc.h), compiled to WebAssembly, behind a small C interface that the page's decode
// worker (web/decode_worker.js) calls. One decode makes one result: the frame's inputs in the layout the
// Vulkan frame uploads (centres, object-space covariances as 6 floats, opacities, SH coefficients
// [splat][coeff][rgb]) and a JSON description (format, counts, warnings, or the error message exactly as the
// command line prints it after "error: "). One scene makes one WebScene: its objects (files, transforms),
// camera and background as JSON, and the world-space centres of the objects decoded so far, which frame the
// starting camera as `splatforge render` does. A SOG file's lossless WebP images are decoded by the browser:
// this file defines the web build's io/sog_images.h, whose pixels and files the page hands in (the
// sf_web_sog_ functions) before it decodes the file again.
#include <emscripten/emscripten.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <new>
#include <numbers>
#include <string>
#include <vector>

#include "core/covariance.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/sog.h"
#include "io/sog_images.h"
#include "render/camera.h"
#include "scene/scene_doc.h"
#include "web_api.h"

namespace sf::web {

void fillDecoded(WebDecoded& r, const GaussianCloud& c) {
  const size_t n = c.size();
  r.positions.resize(n * 3);
  r.covariances.resize(n * 6);
  r.opacities = c.opacities;
  r.sh = c.sh;
  for (size_t i = 0; i < n; ++i) {
    r.positions[3 * i] = c.positions[i].x;
    r.positions[3 * i + 1] = c.positions[i].y;
    r.positions[3 * i + 2] = c.positions[i].z;
    const Cov6 cov = covarianceFromScaleRotation(c.scales[i], c.rotations[i]);
    for (int k = 0; k < 6; ++k) r.covariances[6 * i + k] = cov[static_cast<size_t>(k)];
  }
  r.bounds = computeBounds(c);
}

std::string jsonFloat(float v) {
  char text[32];
  // 9 digits: the same float when read back
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
  return text;
}

std::string normalPath(const std::string& path) {
  return std::filesystem::path(path).lexically_normal().generic_string();
}

bool HandedFiles::has(const std::string& path) {
  const std::string p = normalPath(path);
  if (files.count(p)) return true;
  if (!missing.count(p) && std::find(needed.begin(), needed.end(), p) == needed.end()) needed.push_back(p);
  return false;
}

std::vector<uint8_t> HandedFiles::read(const std::string& path) const {
  const auto f = files.find(normalPath(path));
  if (f == files.end()) throw Error(path + ": file is missing");
  return f->second;
}

bool HandedFiles::put(const char* path, const uint8_t* bytes, uint32_t size, bool is_missing) {
  try {
    if (is_missing)
      missing.insert(path);
    else
      files[path].assign(bytes, bytes + size);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

std::string HandedFiles::request(const std::string& base) const {
  std::string list = "[";
  for (const std::string& p : needed)
    list += (list.size() > 1 ? "," : "") + std::string("{\"path\":") + jsonString(p) +
            ",\"name\":" + jsonString(p.compare(0, base.size(), base) == 0 ? p.substr(base.size()) : p) + "}";
  return "{\"ok\":false,\"files\":" + list + "]}";
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string errorInfo(const std::string& message) {
  return std::string("{\"ok\":false,\"error\":") + jsonString(message) + "}";
}

void writeCamera(const Camera& cam, Vec3 target, Vec3 up, float fov_deg, const CloudBounds& b, float* out) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) out[i * 4 + j] = cam.world_to_camera.m[i][j];
  out[12] = cam.fx, out[13] = cam.fy, out[14] = cam.cx, out[15] = cam.cy;
  const Vec3 eye = cam.position();
  out[16] = eye.x, out[17] = eye.y, out[18] = eye.z;
  out[19] = target.x, out[20] = target.y, out[21] = target.z;
  out[22] = up.x, out[23] = up.y, out[24] = up.z;
  out[25] = fov_deg;
  out[26] = length(b.p99 - b.p01);
}

}  // namespace sf::web

namespace {

using sf::web::errorInfo;
using sf::web::jsonFloat;
using sf::web::jsonString;
using sf::web::WebDecoded;
using sf::web::WebScene;
using sf::web::writeCamera;

// The page's files are URLs below the scene's: paths are confined by their text (scene/scene_doc.h).
sf::SceneDocOptions webDocOptions() {
  sf::SceneDocOptions o;
  o.on_file_system = false;
  return o;
}

std::string jsonRows(const sf::Mat4& m) {  // rows 0..2, 12 numbers
  std::string out = "[";
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) out += (i || j ? "," : "") + jsonFloat(m.m[i][j]);
  return out + "]";
}

// What the page hands in for one SOG file (io/sog_images.h in this build): its image files (an unpacked
// SOG's, by the path its messages name, or why the page could not fetch one) and inspectSog's images with
// the pixels the browser decoded (empty where it could not).
struct WebSogImages {
  bool active = false;  // between sf_web_sog_files and sf_web_sog_clear
  std::map<std::string, std::vector<uint8_t>> files;
  std::map<std::string, std::string> file_errors;
  std::vector<sf::SogImage> images;
  std::vector<std::vector<uint8_t>> pixels;
  std::string info;  // the last answer (JSON)
};
WebSogImages g_sog;

// Thrown where decodeSplats reaches a SOG file's images while the page has handed in none: sf_web_decode
// then answers that the browser must decode them first.
struct SogImagesNeeded : std::exception {
  const char* what() const noexcept override {
    return "the SOG file's images are decoded by the browser first";
  }
};

std::string describe(const sf::LoadedSplats& loaded) {
  const sf::GaussianCloud& c = loaded.cloud;
  std::string w = "[";
  for (size_t i = 0; i < loaded.warnings.size(); ++i) w += (i ? "," : "") + jsonString(loaded.warnings[i]);
  w += "]";
  return std::string("{\"ok\":true,\"format\":") + jsonString(sf::formatName(loaded.format)) +
         ",\"version\":" + std::to_string(loaded.version) + ",\"gaussians\":" + std::to_string(c.size()) +
         ",\"sh_degree\":" + std::to_string(c.sh_degree) +
         ",\"antialiased\":" + (c.antialiased ? "true" : "false") +
         ",\"linear\":" + (c.color_space == sf::ColorSpace::kLinear ? "true" : "false") +
         ",\"screen_filter\":" + std::to_string(c.screen_filter) +
         ",\"file_bytes\":" + std::to_string(loaded.file_bytes) + ",\"axes\":" + jsonString(loaded.axes) +
         ",\"warnings\":" + w + "}";
}

}  // namespace

namespace sf::sog {

std::vector<uint8_t> readImageFile(const std::string&, const std::string&, const std::string& path,
                                   const std::string&) {
  if (!g_sog.active) throw SogImagesNeeded();
  if (auto e = g_sog.file_errors.find(path); e != g_sog.file_errors.end()) throw Error(e->second);
  auto f = g_sog.files.find(path);
  if (f == g_sog.files.end()) throw Error(path + ": file is missing");
  return f->second;
}

bool decodeWebp(std::span<const uint8_t> webp, int width, int height, std::span<uint8_t> rgba) {
  if (!g_sog.active) throw SogImagesNeeded();
  for (size_t i = 0; i < g_sog.images.size(); ++i) {
    const SogImage& img = g_sog.images[i];
    if (img.width == width && img.height == height && g_sog.pixels[i].size() == rgba.size() &&
        img.webp.size() == webp.size() && std::memcmp(img.webp.data(), webp.data(), webp.size()) == 0) {
      std::memcpy(rgba.data(), g_sog.pixels[i].data(), rgba.size());
      return true;
    }
  }
  return false;  // the browser did not decode it
}

std::vector<uint8_t> encodeWebp(std::span<const uint8_t>, int, int) {
  throw Error("writing SOG is not in the web build (the page reads splat files)");
}

}  // namespace sf::sog

extern "C" {

// Memory for the file's bytes, filled by the caller before sf_web_decode; null when it cannot be had.
EMSCRIPTEN_KEEPALIVE uint8_t* sf_web_alloc(uint32_t size) {
  return new (std::nothrow) uint8_t[size ? size : 1];
}
EMSCRIPTEN_KEEPALIVE void sf_web_free_bytes(uint8_t* bytes) {
  delete[] bytes;
}

// Decodes `size` bytes named `name` (the file name the messages use; its extension decides for content
// without a magic, as on the command line). Never null; sf_web_info says whether it worked.
EMSCRIPTEN_KEEPALIVE WebDecoded* sf_web_decode(const uint8_t* bytes, uint32_t size, const char* name) {
  auto* r = new WebDecoded;
  try {
    sf::LoadedSplats loaded = sf::decodeSplats(std::span<const uint8_t>(bytes, size), name);
    if (loaded.cloud.size() == 0) throw sf::Error(std::string(name) + ": the file holds no gaussians");
    sf::web::fillDecoded(*r, loaded.cloud);
    r->info = describe(loaded);
    r->ok = true;
  } catch (const SogImagesNeeded&) {
    r->info = "{\"ok\":false,\"sog_images\":true}";
  } catch (const std::bad_alloc&) {
    r->info = std::string("{\"ok\":false,\"error\":") +
              jsonString(std::string(name) + ": ran out of memory while loading") + "}";
  } catch (const std::exception& e) {
    r->info = std::string("{\"ok\":false,\"error\":") + jsonString(e.what()) + "}";
  }
  return r;
}

// SOG in the page. sf_web_decode answers {"ok": false, "sog_images": true} for a SOG file whose images the
// browser has not decoded; the page then starts handing them in: sf_web_sog_files says which image files an
// unpacked SOG needs (JSON {"ok": true, "files": [{"name" (relative to meta.json), "path" (the name its
// messages use)}]}, none for a .sog), sf_web_sog_file hands in each (its bytes, or why it could not be
// fetched), sf_web_sog_inspect reads and checks every image (inspectSog: {"ok": true, "images":
// [{"describe", "width", "height"}]}, whose WebP bytes sf_web_sog_webp gives), and the browser's RGBA of each
// goes to sf_web_sog_pixels; sf_web_decode of the same file then decodes it with those pixels.
// sf_web_sog_clear ends it. A failure is {"ok": false, "error"}, in the command line's words.
EMSCRIPTEN_KEEPALIVE const char* sf_web_sog_files(const uint8_t* bytes, uint32_t size, const char* name) {
  g_sog = WebSogImages{};
  g_sog.active = true;
  try {
    std::string files = "[";
    for (const sf::SogImageFile& f : sf::sogImageFiles(std::span<const uint8_t>(bytes, size), name))
      files += (files.size() > 1 ? "," : "") + std::string("{\"name\":") + jsonString(f.name) +
               ",\"path\":" + jsonString(f.path) + "}";
    g_sog.info = "{\"ok\":true,\"files\":" + files + "]}";
  } catch (const std::exception& e) {
    g_sog.info = errorInfo(e.what());
  }
  return g_sog.info.c_str();
}

// An image file of the SOG being handed in: its bytes, or (`error` not null) why the page could not fetch it,
// in the loader's words. 0 when it did not fit in memory.
EMSCRIPTEN_KEEPALIVE int sf_web_sog_file(const char* path, const uint8_t* bytes, uint32_t size,
                                         const char* error) {
  try {
    if (error)
      g_sog.file_errors[path] = error;
    else
      g_sog.files[path].assign(bytes, bytes + size);
    return 1;
  } catch (const std::bad_alloc&) {
    return 0;
  }
}

EMSCRIPTEN_KEEPALIVE const char* sf_web_sog_inspect(const uint8_t* bytes, uint32_t size, const char* name) {
  try {
    g_sog.images = sf::inspectSog(std::span<const uint8_t>(bytes, size), name);
    g_sog.pixels.assign(g_sog.images.size(), {});
    std::string images = "[";
    for (const sf::SogImage& img : g_sog.images)
      images += (images.size() > 1 ? "," : "") + std::string("{\"describe\":") + jsonString(img.describe) +
                ",\"width\":" + std::to_string(img.width) + ",\"height\":" + std::to_string(img.height) + "}";
    g_sog.info = "{\"ok\":true,\"images\":" + images + "]}";
  } catch (const std::bad_alloc&) {
    g_sog.info = errorInfo(std::string(name) + ": ran out of memory while loading");
  } catch (const std::exception& e) {
    g_sog.info = errorInfo(e.what());
  }
  return g_sog.info.c_str();
}

EMSCRIPTEN_KEEPALIVE const uint8_t* sf_web_sog_webp(uint32_t i) {
  return g_sog.images.at(i).webp.data();
}
EMSCRIPTEN_KEEPALIVE uint32_t sf_web_sog_webp_size(uint32_t i) {
  return static_cast<uint32_t>(g_sog.images.at(i).webp.size());
}

// Room for image i's RGBA (width x height x 4 bytes), which the page fills with what the browser decoded;
// null when it did not fit in memory.
EMSCRIPTEN_KEEPALIVE uint8_t* sf_web_sog_pixels(uint32_t i) {
  try {
    const sf::SogImage& img = g_sog.images.at(i);
    g_sog.pixels.at(i).resize(static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 4);
    return g_sog.pixels[i].data();
  } catch (const std::exception&) {
    return nullptr;
  }
}

EMSCRIPTEN_KEEPALIVE void sf_web_sog_clear() {
  g_sog = WebSogImages{};
}

EMSCRIPTEN_KEEPALIVE const char* sf_web_info(const WebDecoded* r) {
  return r->info.c_str();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_positions(const WebDecoded* r) {
  return r->positions.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_covariances(const WebDecoded* r) {
  return r->covariances.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_opacities(const WebDecoded* r) {
  return r->opacities.data();
}
EMSCRIPTEN_KEEPALIVE const float* sf_web_sh(const WebDecoded* r) {
  return r->sh.data();
}
EMSCRIPTEN_KEEPALIVE uint32_t sf_web_sh_floats(const WebDecoded* r) {
  return static_cast<uint32_t>(r->sh.size());
}

// The camera `splatforge render` takes for this capture at width x height (autoCamera of a one-capture scene:
// frameBox of the 1-99 percentile bounds, looking along +z with -y up), into out[0..27) (writeCamera); the
// orbit turns about the box's centre.
EMSCRIPTEN_KEEPALIVE void sf_web_default_camera(const WebDecoded* r, int width, int height, float* out) {
  const sf::Vec3 view{0, 0, 1}, up{0, -1, 0};
  const sf::Camera cam = sf::frameBox(r->bounds.p01, r->bounds.p99, view, up, width, height);
  writeCamera(cam, 0.5f * (r->bounds.p01 + r->bounds.p99), up, 50.0f, r->bounds, out);
}

// 1 when `name` names a glTF / GLB model, as every command decides it by the name (classifyInputName), else
// 0.
EMSCRIPTEN_KEEPALIVE int sf_web_is_gltf(const char* name) {
  return sf::classifyInputName(name) == sf::InputKind::kGltf ? 1 : 0;
}

// 1 when `name` names a scene JSON, as every command decides it by the name (io/file.h classifyInputName),
// else 0.
EMSCRIPTEN_KEEPALIVE int sf_web_is_scene_json(const char* name) {
  return sf::classifyInputName(name) == sf::InputKind::kSceneJson ? 1 : 0;
}

// Reads the scene JSON `bytes` named `name` (its directory resolves the objects' files). Never null;
// sf_web_scene_info says whether it worked: {"ok": true, "objects": [{"name", "context" (how messages about
// it begin), "file" (as written, relative to the scene), "resolved" (the name its messages use), "to_world"
// and "to_object" (rows 0..2 of object_to_world and of its inverse), "gltf" (a glTF model by its name),
// "gltf_key" (named by "gltf": a model even when it holds only gaussians), "generator" (a neural generator,
// run by the page at model time time + speed * t), "character" (a splat character package, the folder
// holding character.json), "hull" (a static splat hull, drawn in "mode", turned by "heading" degrees about
// its +y before its transform), and how it plays: "clip" (as written), "time", "speed",
// "loop", "dqs" (dual-quaternion skinning)}], "background": [r, g, b] or null,
// "camera": true when the scene gives one}, or {"ok": false, "error"} with the command line's words: a
// malformed scene, an object the web build cannot draw (webSceneRefusal), a path refused.
EMSCRIPTEN_KEEPALIVE WebScene* sf_web_scene_parse(const uint8_t* bytes, uint32_t size, const char* name) {
  auto* s = new WebScene;
  try {
    s->name = name;
    s->text.assign(reinterpret_cast<const char*>(bytes), size);
    const sf::SceneDocument doc = sf::parseSceneDocument(s->text, s->name, webDocOptions());
    if (std::string why = sf::webSceneRefusal(doc); !why.empty()) throw sf::Error(why);
    std::string objects = "[";
    for (size_t i = 0; i < doc.objects.size(); ++i) {
      const sf::SceneDocObject& o = doc.objects[i];
      if (!o.refusal.empty()) throw sf::Error(doc.objectContext(i) + ": " + o.refusal);
      s->object_to_world.push_back(o.object_to_world);
      objects += std::string(i ? "," : "") + "{\"name\":" + jsonString(o.name) +
                 ",\"context\":" + jsonString(doc.objectContext(i)) + ",\"file\":" + jsonString(o.file) +
                 ",\"resolved\":" + jsonString(o.resolved) + ",\"to_world\":" + jsonRows(o.object_to_world) +
                 ",\"to_object\":" + jsonRows(sf::inverseAffine(o.object_to_world)) +
                 ",\"gltf\":" + (o.gltfByName() ? "true" : "false") +
                 ",\"gltf_key\":" + (o.key == sf::SceneObjectKey::kGltf ? "true" : "false") +
                 ",\"generator\":" + (o.key == sf::SceneObjectKey::kGenerator ? "true" : "false") +
                 ",\"character\":" + (o.key == sf::SceneObjectKey::kCharacter ? "true" : "false") +
                 ",\"hull\":" + (o.key == sf::SceneObjectKey::kHull ? "true" : "false") +
                 ",\"mode\":" + jsonString(o.hull_mode.empty() ? "baked" : o.hull_mode) +
                 ",\"heading\":" + jsonFloat(static_cast<float>(o.heading)) +
                 ",\"clip\":" + jsonString(o.clip) +
                 ",\"time\":" + jsonFloat(static_cast<float>(o.time.value_or(0))) +
                 ",\"speed\":" + jsonFloat(static_cast<float>(o.speed.value_or(1))) +
                 ",\"loop\":" + (o.loop.value_or(true) ? "true" : "false") +
                 ",\"dqs\":" + (o.skinning == "dqs" ? "true" : "false") + "}";
    }
    objects += "]";
    std::string background = "null";
    if (doc.background)
      background = "[" + jsonFloat(doc.background->x) + "," + jsonFloat(doc.background->y) + "," +
                   jsonFloat(doc.background->z) + "]";
    s->info = "{\"ok\":true,\"objects\":" + objects + ",\"background\":" + background +
              ",\"camera\":" + (doc.camera ? "true" : "false") + "}";
  } catch (const std::bad_alloc&) {
    s->info = std::string("{\"ok\":false,\"error\":") +
              jsonString(std::string(name) + ": ran out of memory while loading") + "}";
  } catch (const std::exception& e) {
    s->info = std::string("{\"ok\":false,\"error\":") + jsonString(e.what()) + "}";
  }
  return s;
}

EMSCRIPTEN_KEEPALIVE const char* sf_web_scene_info(const WebScene* s) {
  return s->info.c_str();
}

// Adds the centres of object `object`, whose splat file `r` decoded, to the scene's bounds (in world space).
// 0 when it did not fit in memory. (glTF models: sf_web_scene_attach_gltf, web/wasm/gltf_api.cpp.)
EMSCRIPTEN_KEEPALIVE int sf_web_scene_attach(WebScene* s, uint32_t object, const WebDecoded* r) {
  try {
    s->captures = true;
    const sf::Mat4& m = s->object_to_world.at(object);
    const size_t n = r->positions.size() / 3;
    s->world.positions.reserve(s->world.positions.size() + n);
    for (size_t i = 0; i < n; ++i)
      s->world.positions.push_back(sf::transformPoint(
          m, sf::Vec3{r->positions[3 * i], r->positions[3 * i + 1], r->positions[3 * i + 2]}));
    return 1;
  } catch (const std::exception&) {
    return 0;
  }
}

// Adds `count` points of object `object` (x, y, z each, in its space: a generator's live centres of its
// first run, a character's splat centres) to the scene's bounds, in world space; `capture`: the object is
// framed in the capture convention (a generator, as `render` frames one), else it leaves the convention to
// the other objects (a character: the glTF one unless a capture is among them). 0 when they did not fit in
// memory.
EMSCRIPTEN_KEEPALIVE int sf_web_scene_attach_points(WebScene* s, uint32_t object, const float* points,
                                                    uint32_t count, int capture) {
  try {
    if (capture) s->captures = true;
    const sf::Mat4& m = s->object_to_world.at(object);
    s->world.positions.reserve(s->world.positions.size() + count);
    for (uint32_t i = 0; i < count; ++i)
      s->world.positions.push_back(
          sf::transformPoint(m, sf::Vec3{points[3 * i], points[3 * i + 1], points[3 * i + 2]}));
    return 1;
  } catch (const std::exception&) {
    return 0;
  }
}

// The scene's starting camera at width x height, once every object is attached, into out[0..27)
// (writeCamera): the scene's camera at that size (as `render --width --height` takes it), the orbit turning
// about the point on its axis nearest the centre of the objects' box (twice the box's radius ahead when that
// point is behind it); without one, autoCamera's (frameBox of the 1-99 percentile box of every splat object's
// centres and every glTF object's posed vertices and gaussians in world space, looking along +z with -y up
// when a splat file is among the objects, else along -z with +y up, the glTF convention). Returns 1; 0 when
// there is nothing to frame (no splats, no vertices and no camera of its own); -1 when the scene cannot be
// read again.
EMSCRIPTEN_KEEPALIVE int sf_web_scene_camera(const WebScene* s, int width, int height, float* out) {
  try {
    sf::SceneDocOptions options = webDocOptions();
    options.width = width, options.height = height;
    const sf::SceneDocument doc = sf::parseSceneDocument(s->text, s->name, options);
    if (s->world.positions.empty() && !doc.camera) return 0;  // nothing to frame
    const sf::CloudBounds b = s->world.positions.empty() ? sf::CloudBounds{} : sf::computeBounds(s->world);
    const sf::Vec3 centre = 0.5f * (b.p01 + b.p99);
    if (!doc.camera) {
      const sf::Vec3 up{0, s->captures ? -1.0f : 1.0f, 0}, view{0, 0, s->captures ? 1.0f : -1.0f};
      writeCamera(sf::frameBox(b.p01, b.p99, view, up, width, height), centre, up, 50.0f, b, out);
      return 1;
    }
    const sf::Camera& cam = *doc.camera;
    const sf::Mat4& w = cam.world_to_camera;
    const sf::Vec3 eye = cam.position(), forward{w.m[2][0], w.m[2][1], w.m[2][2]},
                   up{-w.m[1][0], -w.m[1][1], -w.m[1][2]};
    const float along = sf::dot(centre - eye, forward);
    const float distance = along > 1e-3f ? along : std::max(sf::length(b.p99 - b.p01), 1e-3f);
    const float fov =
        2.0f * std::atan(0.5f * static_cast<float>(cam.height) / cam.fy) * 180.0f / std::numbers::pi_v<float>;
    writeCamera(cam, eye + forward * distance, up, fov, b, out);
    return 1;
  } catch (const std::exception&) {
    return -1;  // the scene could not be read again
  }
}

EMSCRIPTEN_KEEPALIVE void sf_web_scene_release(WebScene* s) {
  delete s;
}

EMSCRIPTEN_KEEPALIVE void sf_web_release(WebDecoded* r) {
  delete r;
}

}  // extern "C"
