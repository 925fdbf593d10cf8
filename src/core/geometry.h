// Geometric queries shared by the offline tools and the runtime (character binding, the hull bake's BVH,
// training views): one guarded implementation each.
#pragma once

#include "core/math.h"

namespace sf {

// Point of triangle (a, b, c) nearest to p (Ericson, Real-Time Collision Detection 5.1.5). Guarded: a
// degenerate triangle (zero normal) is treated as its three edges, and no division by a denominator that
// rounding made zero (a point far from a small triangle) yields NaN.
Vec3 closestPointOnTriangle(Vec3 p, Vec3 a, Vec3 b, Vec3 c);

}  // namespace sf
