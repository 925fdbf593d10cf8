// The screen-space outline of a selected or hit splat hull (docs/architecture.md "Hull outline"; the hull
// article's "the outline is not learned: it is screen-space, on top"). Which hulls are outlined and how at a
// scene time (OutlineSpec from scene JSON / the command line, a script's `select` events and the flash of its
// hits), and the outline's CPU reference: from a coverage mask of the outlined hulls (their splats' and
// core's alpha drawn alone), an anti-aliased band `width` pixels wide around it, composited over the frame.
// The Vulkan pass (hull/outline_pass.h) computes the same per pixel.
#pragma once

#include <optional>
#include <span>

#include "core/image.h"
#include "core/math.h"

namespace sf {
struct JsonNode;
}

namespace sf::hull {

struct HullScript;

// Defaults (the article gives the outline no numbers): a 2-pixel amber band for a selected hull; a hit
// flashes the outline red-orange for 0.3 s, fading linearly.
constexpr float kOutlineWidth = 2.0f;
inline constexpr Vec3 kOutlineColor{1.0f, 0.78f, 0.2f};
constexpr double kHitFlashSeconds = 0.3;
inline constexpr Vec3 kHitFlashColor{1.0f, 0.3f, 0.12f};
constexpr float kMaxOutlineWidth = 16.0f;  // widths are in [0.5, 16] pixels

// A hull's standing selection: scene JSON "outline" (true, false, or {"color": [r, g, b], "width": px}) or
// the command line's --outline.
struct OutlineSpec {
  bool selected = false;
  Vec3 color = kOutlineColor;
  float width = kOutlineWidth;
};
// Parses scene JSON "outline"; refusals name the JSON path.
OutlineSpec parseOutlineJson(const JsonNode& node);
// An outline colour (3 numbers in [0, 1]) and width (pixels in [0.5, 16]); refusals name the JSON path.
Vec3 parseOutlineColor(const JsonNode& node);
float parseOutlineWidth(const JsonNode& node);

// How one hull is outlined in a frame: colour (display space), band width (pixels) and strength (0..1].
struct OutlineStyle {
  Vec3 color = kOutlineColor;
  float width = kOutlineWidth;
  float strength = 1;
  bool operator==(const OutlineStyle& o) const {
    return color.x == o.color.x && color.y == o.color.y && color.z == o.color.z && width == o.width &&
           strength == o.strength;
  }
};

// The hull's outline at scene time t, or none. Selection: `base`, then each `select` event of `script` with
// time <= t in order (true/false, its colour and width replacing the current ones when given). Hit flash:
// the latest hit with time <= t whose flash (`flash` seconds, default kHitFlashSeconds) has not ended, at
// f = 1 - age / flash: a selected hull's colour becomes mix(colour, kHitFlashColor, f) at strength 1, an
// unselected hull is outlined in kHitFlashColor at strength f.
std::optional<OutlineStyle> outlineAt(const OutlineSpec& base, const HullScript* script, double t);

// The band reaches neighbours up to this many pixels away: ceil(width + 1).
int outlineReach(float width);

// The outline's strength at pixel (x, y) of a width x height coverage mask (values in [0, 1], rows):
//   D = max over pixels q with |q - p| <= reach of mask(q) * clamp(width + 1 - |q - p|, 0, 1)
//   band = D * (1 - mask(p))
// (distances between pixel centres). A covered pixel's edge lies half a pixel past its centre, so the band
// reaches `width` pixels past the hulls' silhouette, with a one-pixel linear rim (the pixel whose centre is
// width + 0.5 from a covered centre gets half); it lies outside the hulls only: their own pixels keep their
// colour, a partly covered edge pixel gets the rest.
float outlineBand(std::span<const float> mask, int width, int height, int x, int y, float band_width);

// Composites the outline over `image` (RGBA float, display space): a = strength * band,
// rgb = rgb (1 - a) + colour a, alpha = alpha + (1 - alpha) a. Throws sf::Error on a mask of another size.
void applyOutline(ImageRGBA& image, std::span<const float> mask, const OutlineStyle& style);

// The coverage mask of a frame: its alpha channel.
std::vector<float> coverageMask(const ImageRGBA& image);

}  // namespace sf::hull
