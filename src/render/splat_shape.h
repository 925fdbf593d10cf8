// Splat shapes: a per-slot word that draws a splat as a flat disc or regular polygon (a rounded hex, or a 5-
// to 7-gon) instead of its gaussian falloff, for ragged edges where the frame wants them (a splat hull's
// wound edges and crater floors, hull/effects.h). The word's layout and constants are in gpu_shared.h
// (SF_SHAPE_*), shared with the raster shader (shaders/raster.comp), which computes the same coverage.
//
// In the splat's whitened frame (the pixel offset d mapped by the Cholesky factor of its conic Q = L L^T,
// u = L^T d, so |u|^2 = d^T Q d) the shape is centred at the origin with the gaussian's half-maximum radius
// R = sqrt(2 ln 2): a disc of radius R, a regular polygon with circumradius R, or a hexagon of apothem
// R cos(30 deg) with corners rounded by 0.35 R. Its coverage at a pixel is clamp(0.5 - sd / 0.2, 0, 1) for
// the exact signed distance sd to its edge, and the pixel's alpha min(0.99, opacity * max(falloff,
// coverage)) wherever the gaussian's own alpha reaches 1/255 (nowhere else: the tile lists and the raster's
// per-subgroup cull stay valid). The shape only raises the gaussian (a flat plateau with a crisp polygonal
// edge inside its soft skirt), so shaped splats never open a gap that their gaussians would cover: a splat
// hull's holes still never show what is behind it. A word whose class bits are 0 is the gaussian.
// The whitened frame is the Cholesky factor's, tied to the image's x axis: a polygon's turn is kept on the
// screen, not on the surface, so turning the camera about its view axis does not turn the polygons with the
// splats (a frame from the conic's eigenvectors would, at the cost of a jump where its axes swap).
#pragma once

#include <cstdint>

namespace sf {

enum class SplatShapeClass : uint32_t { kGaussian = 0, kDisc = 1, kRoundedHex = 2, kPolygon = 3 };

// The word of a shape: `sides` 5..7 (polygons only), `rotation` in 256ths of a turn.
uint32_t splatShapeWord(SplatShapeClass cls, uint32_t sides = 6, uint32_t rotation = 0);

// Coverage in [0, 1] of shape `word` (class bits not 0) at pixel offset (dx, dy) = mean - pixel centre, for
// the conic (a, b, c) of [[a, b], [b, c]]. Vertices of a polygon turned by k / 256 of a turn point at
// angle 2 pi k / 256 + j 2 pi / sides in the whitened frame.
float splatShapeCoverage(uint32_t word, float dx, float dy, float a, float b, float c);

}  // namespace sf
