#include "hull/outline.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "hull/hull_script.h"
#include "io/json.h"

namespace sf::hull {

namespace {

float widthIn(const JsonNode& n) {
  const double w = n.number();
  if (w < 0.5 || w > kMaxOutlineWidth)
    n.fail("expected a width in pixels in [0.5, 16], got " + std::to_string(w));
  return static_cast<float>(w);
}

Vec3 colorIn(const JsonNode& n) {
  const Vec3 c = n.vec3();
  for (int i = 0; i < 3; ++i)
    if (c[i] < 0 || c[i] > 1) n.fail("expected colour components in [0, 1]");
  return c;
}

}  // namespace

OutlineSpec parseOutlineJson(const JsonNode& node) {
  OutlineSpec s;
  if (node.value.is_boolean()) {
    s.selected = node.value.get<bool>();
    return s;
  }
  if (!node.value.is_object()) node.fail("expected true, false or {\"color\": [r, g, b], \"width\": px}");
  node.onlyKeys({"color", "width"});
  s.selected = true;
  if (node.has("color")) s.color = colorIn(node["color"]);
  if (node.has("width")) s.width = widthIn(node["width"]);
  return s;
}

Vec3 parseOutlineColor(const JsonNode& n) {
  return colorIn(n);
}
float parseOutlineWidth(const JsonNode& n) {
  return widthIn(n);
}

std::optional<OutlineStyle> outlineAt(const OutlineSpec& base, const HullScript* script, double t) {
  bool selected = base.selected;
  OutlineStyle style{base.color, base.width, 1.0f};
  float flash = 0;
  if (script)
    for (const ScriptEvent& ev : script->events) {
      if (ev.time > t) break;  // sorted by time
      if (ev.type == ScriptEvent::kSelect) {
        selected = ev.select;
        style.color = ev.outline_color.value_or(base.color);
        style.width = ev.outline_width.value_or(base.width);
      } else if (ev.type == ScriptEvent::kHit && ev.hit_flash > 0) {
        const double age = t - ev.time;
        flash = age < ev.hit_flash ? static_cast<float>(1.0 - age / ev.hit_flash) : 0.0f;
      }
    }
  if (flash > 0) {
    if (selected) {
      style.color = style.color * (1 - flash) + kHitFlashColor * flash;
    } else {
      style.color = kHitFlashColor;
      style.strength = flash;
    }
    return style;
  }
  if (!selected) return std::nullopt;
  return style;
}

int outlineReach(float width) {
  return static_cast<int>(std::ceil(width + 1.0f));
}

float outlineBand(std::span<const float> mask, int width, int height, int x, int y, float band_width) {
  const float own = mask[static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)];
  if (own >= 1.0f) return 0.0f;
  const int r = outlineReach(band_width);
  float d = 0;
  for (int dy = -r; dy <= r; ++dy) {
    const int qy = y + dy;
    if (qy < 0 || qy >= height) continue;
    for (int dx = -r; dx <= r; ++dx) {
      const int qx = x + dx;
      if (qx < 0 || qx >= width) continue;
      const float k =
          std::clamp(band_width + 1.0f - std::sqrt(static_cast<float>(dx * dx + dy * dy)), 0.0f, 1.0f);
      d = std::max(d,
                   mask[static_cast<size_t>(qy) * static_cast<size_t>(width) + static_cast<size_t>(qx)] * k);
    }
  }
  return d * (1.0f - own);
}

void applyOutline(ImageRGBA& image, std::span<const float> mask, const OutlineStyle& style) {
  const size_t n = static_cast<size_t>(image.width) * static_cast<size_t>(image.height);
  if (mask.size() != n)
    throw Error("outline: a mask of " + std::to_string(mask.size()) + " pixels for a " +
                std::to_string(image.width) + "x" + std::to_string(image.height) + " frame");
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x) {
      const float a = style.strength * outlineBand(mask, image.width, image.height, x, y, style.width);
      if (a <= 0) continue;
      float* p =
          &image.pixels[(static_cast<size_t>(y) * static_cast<size_t>(image.width) + static_cast<size_t>(x)) *
                        4];
      for (int c = 0; c < 3; ++c) p[c] = p[c] * (1 - a) + style.color[c] * a;
      p[3] = p[3] + (1 - p[3]) * a;
    }
}

std::vector<float> coverageMask(const ImageRGBA& image) {
  std::vector<float> m(image.pixels.size() / 4);
  for (size_t i = 0; i < m.size(); ++i) m[i] = image.pixels[i * 4 + 3];
  return m;
}

}  // namespace sf::hull
