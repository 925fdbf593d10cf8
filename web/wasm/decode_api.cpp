// The web page's file decoding: the engine's own decodeSplats (io/formats.h), compiled to WebAssembly, behind a
// small C interface that the page's decode worker (web/decode_worker.js) calls. One decode makes one result:
// the frame's inputs in the layout the Vulkan frame uploads (centres, object-space covariances as 6 floats, opacities,
// SH coefficients [splat][coeff][rgb]) and a JSON description (format, counts, warnings, or the error message
// exactly as the command line prints it after "error: ").
#include <emscripten/emscripten.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "core/covariance.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "io/formats.h"
#include "render/camera.h"

namespace {

struct WebDecoded {
  std::string info;  // JSON
  std::vector<float> positions, covariances, opacities, sh;
  sf::CloudBounds bounds{};
  bool ok = false;
};

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

std::string describe(const sf::LoadedSplats& loaded) {
  const sf::GaussianCloud& c = loaded.cloud;
  std::string w = "[";
  for (size_t i = 0; i < loaded.warnings.size(); ++i) w += (i ? "," : "") + jsonString(loaded.warnings[i]);
  w += "]";
  return std::string("{\"ok\":true,\"format\":") + jsonString(sf::formatName(loaded.format)) +
         ",\"version\":" + std::to_string(loaded.version) + ",\"gaussians\":" + std::to_string(c.size()) +
         ",\"sh_degree\":" + std::to_string(c.sh_degree) + ",\"antialiased\":" + (c.antialiased ? "true" : "false") +
         ",\"linear\":" + (c.color_space == sf::ColorSpace::kLinear ? "true" : "false") +
         ",\"screen_filter\":" + std::to_string(c.screen_filter) + ",\"file_bytes\":" + std::to_string(loaded.file_bytes) +
         ",\"axes\":" + jsonString(loaded.axes) + ",\"warnings\":" + w + "}";
}

}  // namespace

extern "C" {

// Memory for the file's bytes, filled by the caller before sf_web_decode; null when it cannot be had.
EMSCRIPTEN_KEEPALIVE uint8_t* sf_web_alloc(uint32_t size) { return new (std::nothrow) uint8_t[size ? size : 1]; }
EMSCRIPTEN_KEEPALIVE void sf_web_free_bytes(uint8_t* bytes) { delete[] bytes; }

// Decodes `size` bytes named `name` (the file name the messages use; its extension decides for content without
// a magic, as on the command line). Never null; sf_web_info says whether it worked.
EMSCRIPTEN_KEEPALIVE WebDecoded* sf_web_decode(const uint8_t* bytes, uint32_t size, const char* name) {
  auto* r = new WebDecoded;
  try {
    sf::LoadedSplats loaded = sf::decodeSplats(std::span<const uint8_t>(bytes, size), name);
    const sf::GaussianCloud& c = loaded.cloud;
    const size_t n = c.size();
    if (n == 0) throw sf::Error(std::string(name) + ": the file holds no gaussians");
    r->positions.resize(n * 3);
    r->covariances.resize(n * 6);
    r->opacities = c.opacities;
    r->sh = c.sh;
    for (size_t i = 0; i < n; ++i) {
      r->positions[3 * i] = c.positions[i].x;
      r->positions[3 * i + 1] = c.positions[i].y;
      r->positions[3 * i + 2] = c.positions[i].z;
      const sf::Cov6 cov = sf::covarianceFromScaleRotation(c.scales[i], c.rotations[i]);
      for (int k = 0; k < 6; ++k) r->covariances[6 * i + k] = cov[static_cast<size_t>(k)];
    }
    r->bounds = sf::computeBounds(c);
    r->info = describe(loaded);
    r->ok = true;
  } catch (const std::bad_alloc&) {
    r->info = std::string("{\"ok\":false,\"error\":") + jsonString(std::string(name) + ": ran out of memory while loading") + "}";
  } catch (const std::exception& e) {
    r->info = std::string("{\"ok\":false,\"error\":") + jsonString(e.what()) + "}";
  }
  return r;
}

EMSCRIPTEN_KEEPALIVE const char* sf_web_info(const WebDecoded* r) { return r->info.c_str(); }
EMSCRIPTEN_KEEPALIVE const float* sf_web_positions(const WebDecoded* r) { return r->positions.data(); }
EMSCRIPTEN_KEEPALIVE const float* sf_web_covariances(const WebDecoded* r) { return r->covariances.data(); }
EMSCRIPTEN_KEEPALIVE const float* sf_web_opacities(const WebDecoded* r) { return r->opacities.data(); }
EMSCRIPTEN_KEEPALIVE const float* sf_web_sh(const WebDecoded* r) { return r->sh.data(); }
EMSCRIPTEN_KEEPALIVE uint32_t sf_web_sh_floats(const WebDecoded* r) { return static_cast<uint32_t>(r->sh.size()); }

// The camera `splatforge render` takes for this capture at width x height (autoCamera of a one-capture scene:
// frameBox of the 1-99 percentile bounds, looking along +z with -y up), into out[0..26): world_to_camera rows 0..2
// (12), fx, fy, cx, cy, the eye (3), the target (3), the up vector (3), the vertical field of view in degrees.
EMSCRIPTEN_KEEPALIVE void sf_web_default_camera(const WebDecoded* r, int width, int height, float* out) {
  const sf::Vec3 view{0, 0, 1}, up{0, -1, 0};
  const sf::Camera cam = sf::frameBox(r->bounds.p01, r->bounds.p99, view, up, width, height);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) out[i * 4 + j] = cam.world_to_camera.m[i][j];
  out[12] = cam.fx, out[13] = cam.fy, out[14] = cam.cx, out[15] = cam.cy;
  const sf::Vec3 eye = cam.position(), target = 0.5f * (r->bounds.p01 + r->bounds.p99);
  out[16] = eye.x, out[17] = eye.y, out[18] = eye.z;
  out[19] = target.x, out[20] = target.y, out[21] = target.z;
  out[22] = up.x, out[23] = up.y, out[24] = up.z;
  out[25] = 50.0f;
}

EMSCRIPTEN_KEEPALIVE void sf_web_release(WebDecoded* r) { delete r; }

}  // extern "C"
