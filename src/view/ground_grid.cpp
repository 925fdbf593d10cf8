#include "view/ground_grid.h"

#include <algorithm>
#include <cmath>

namespace sf::view {

namespace {

float clamp01(float v) {
  return std::clamp(v, 0.0f, 1.0f);
}

// Coverage of lines `spacing` apart at coordinate `x` for a pixel `footprint` wide (world units across it):
// 1 on a line, falling to 0 one footprint (times `width`) away, so a line is about two pixels wide at any
// distance. Lines closer than a few pixels would only alias: they fade out between 8 and 3 pixels apart.
float lineCoverage(float x, float footprint, float spacing, float width) {
  if (!(footprint > 0)) return 0;
  const float pixels_apart = spacing / footprint;
  const float lod = clamp01((pixels_apart - 3.0f) / 5.0f);
  if (lod <= 0) return 0;
  // Signed distance to the nearest line, in spacings.
  const float f = x / spacing - std::floor(x / spacing + 0.5f);
  return lod * clamp01(1.0f - std::abs(f) * spacing / (footprint * width));
}

// The axes: a segment from the origin along each axis, about three pixels wide.
void drawAxis(ImageRGBA& image, const Camera& cam, Vec3 background, Vec3 end, Vec3 color) {
  const Mat4& m = cam.world_to_camera;
  Vec3 a = transformPoint(m, Vec3{0, 0, 0}), b = transformPoint(m, end);
  // Clipped to the part in front of the camera.
  const float near = 1e-3f * std::max(length(b - a), 1e-6f);
  if (a.z < near && b.z < near) return;
  if (a.z < near) a = a + (b - a) * ((near - a.z) / (b.z - a.z));
  if (b.z < near) b = b + (a - b) * ((near - b.z) / (a.z - b.z));
  const float ax = cam.fx * a.x / a.z + cam.cx, ay = cam.fy * a.y / a.z + cam.cy;
  const float bx = cam.fx * b.x / b.z + cam.cx, by = cam.fy * b.y / b.z + cam.cy;
  constexpr float kHalfWidth = 1.5f;
  const int x0 = std::max(0, static_cast<int>(std::floor(std::min(ax, bx) - kHalfWidth - 1)));
  const int x1 = std::min(image.width - 1, static_cast<int>(std::ceil(std::max(ax, bx) + kHalfWidth + 1)));
  const int y0 = std::max(0, static_cast<int>(std::floor(std::min(ay, by) - kHalfWidth - 1)));
  const int y1 = std::min(image.height - 1, static_cast<int>(std::ceil(std::max(ay, by) + kHalfWidth + 1)));
  const float dx = bx - ax, dy = by - ay, len2 = dx * dx + dy * dy;
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) {
      const float px = static_cast<float>(x) + 0.5f, py = static_cast<float>(y) + 0.5f;  // the pixel's centre
      const float s = len2 > 0 ? std::clamp(((px - ax) * dx + (py - ay) * dy) / len2, 0.0f, 1.0f) : 0.0f;
      const float ex = ax + dx * s - px, ey = ay + dy * s - py;
      const float coverage = clamp01(kHalfWidth + 0.5f - std::sqrt(ex * ex + ey * ey));
      if (coverage <= 0) continue;
      // Depth along the segment: 1/z is linear in screen space.
      const float depth = 1.0f / (1.0f / a.z + (1.0f / b.z - 1.0f / a.z) * s);
      const size_t index = static_cast<size_t>(y) * static_cast<size_t>(image.width) + static_cast<size_t>(x);
      compositeBehindSplats(image, index, background, color, coverage, depth);
    }
}

}  // namespace

void compositeBehindSplats(ImageRGBA& image, size_t index, Vec3 background, Vec3 color, float alpha,
                           float depth) {
  float* p = image.pixels.data() + index * 4;
  const bool has_depth = image.depth.size() == image.pixels.size() / 2;
  // In front of everything: over the frame.
  float front = 1;
  float through = 1;  // what reaches the element from behind the frame: 1 - the frame's alpha
  if (has_depth) {
    const float d = image.depth[index * 2], t = image.depth[index * 2 + 1];
    const float splat_alpha = 1.0f - t;  // the frame's alpha
    through = clamp01(t);
    if (splat_alpha > 1e-3f) {
      // The expected depth of the splats and mesh fragments there; the change from in front to behind is
      // spread over 2% of the depth, so that a line crossing a surface fades instead of breaking up into the
      // splats' noise.
      const float splat_depth = d / splat_alpha;
      front = clamp01(0.5f + (splat_depth - depth) / (0.02f * std::max(depth, 1e-6f)));
    }
  }
  for (int c = 0; c < 3; ++c) {
    const float over = p[c] + alpha * (color[c] - p[c]);                       // drawn over the frame
    const float behind = p[c] + through * alpha * (color[c] - background[c]);  // seen through the splats
    p[c] = front * over + (1.0f - front) * behind;
  }
}

void drawGroundGrid(ImageRGBA& image, const Camera& cam, Vec3 background, const GroundGrid& grid) {
  if (image.width != cam.width || image.height != cam.height || image.width <= 0 || image.height <= 0) return;
  // A pixel's ray in the world: dir(u, v) = base + u * du + v * dv (u, v continuous pixel coordinates).
  const Mat3 r = cam.world_to_camera.linear();
  const Mat3 rt = transpose(r);
  const Vec3 eye = cam.position();
  const Vec3 du = rt * Vec3{1.0f / cam.fx, 0, 0}, dv = rt * Vec3{0, 1.0f / cam.fy, 0};
  const Vec3 base = rt * Vec3{-cam.cx / cam.fx, -cam.cy / cam.fy, 1};
  const float h = grid.height - eye.y;
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x) {
      const float u = static_cast<float>(x) + 0.5f, v = static_cast<float>(y) + 0.5f;
      const Vec3 d = base + du * u + dv * v;
      if (std::abs(d.y) < 1e-9f) continue;
      const float t = h / d.y;  // the camera-space depth of the hit (d has camera z = 1)
      if (!(t > 0)) continue;
      const Vec3 hit = eye + d * t;
      const float distance = t * length(d);
      const float fade = clamp01(1.0f - distance / grid.fade_distance);
      if (fade <= 0) continue;
      // The pixel's footprint on the plane: the hit point's derivatives along u and v.
      const Vec3 pu = (du - d * (du.y / d.y)) * t, pv = (dv - d * (dv.y / d.y)) * t;
      const float fx = std::abs(pu.x) + std::abs(pv.x), fz = std::abs(pu.z) + std::abs(pv.z);
      const float major = std::max(lineCoverage(hit.x, fx, 10, 1.5f), lineCoverage(hit.z, fz, 10, 1.5f));
      const float minor = std::max(lineCoverage(hit.x, fx, 1, 1), lineCoverage(hit.z, fz, 1, 1));
      const float a_major = major * grid.major_alpha * fade * fade;
      const float a_minor = minor * grid.minor_alpha * fade * fade;
      const size_t index = static_cast<size_t>(y) * static_cast<size_t>(image.width) + static_cast<size_t>(x);
      if (a_major >= a_minor && a_major > 0)
        compositeBehindSplats(image, index, background, grid.major_color, a_major, t);
      else if (a_minor > 0)
        compositeBehindSplats(image, index, background, grid.minor_color, a_minor, t);
    }
  const float l = grid.axis_length;
  drawAxis(image, cam, background, Vec3{l, 0, 0}, Vec3{0.90f, 0.15f, 0.15f});
  drawAxis(image, cam, background, Vec3{0, l, 0}, Vec3{0.15f, 0.80f, 0.15f});
  drawAxis(image, cam, background, Vec3{0, 0, l}, Vec3{0.20f, 0.35f, 1.00f});
}

}  // namespace sf::view
