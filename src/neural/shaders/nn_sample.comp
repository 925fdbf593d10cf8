#version 460
// Resampling: GridSample (4-D, nearest / bilinear / bicubic, zeros / border / reflection padding,
// align_corners; PyTorch's float32 coordinate arithmetic, as the CPU reference) and Resize (any rank,
// separable taps per axis computed at plan time by the CPU reference's own tap function).
// GridSample parameters: [0] 0, [1] output offset, [2] X offset, [3] type, [4] grid offset, [5] grid type,
// [6] N, [7] C, [8] H, [9] W, [10] H out, [11] W out, [12] mode (0 nearest, 1 linear, 2 cubic), [13] padding,
// [14] align_corners.
// Resize parameters: [0] 1, [1] output offset, [2] X offset, [3] type, [4] rank, [5..10] output dims,
// [11..16] input strides, [17..22] tap table offset per axis (per output coordinate 9 words: tap count or
// 0xFFFFFFFF to extrapolate, 4 indices, 4 weights), [23] extrapolation value.
#include "nn_codes.h"
#include "nn_common.glsl"

layout(local_size_x = 256) in;

float reflectCoordinate(float v, int twice_low, int twice_high) {
  if (twice_low == twice_high) return 0.0;
  float low = float(twice_low) / 2.0, span = float(twice_high - twice_low) / 2.0;
  v = abs(v - low);
  float extra = mod(v, span);
  bool even_flips = mod(floor(v / span), 2.0) == 0.0;
  return even_flips ? extra + low : span - extra + low;
}

float padCoordinate(float v, int size, uint padding, bool align) {
  if (padding == NN_PAD_REFLECTION)
    v = align ? reflectCoordinate(v, 0, 2 * (size - 1)) : reflectCoordinate(v, -1, 2 * size - 1);
  if (padding != NN_PAD_ZEROS) v = clamp(v, 0.0, float(size - 1));
  return v;
}

int cell(float v, int size) { return clamp(truncToInt(v), -4, size + 4); }

uint g_plane, g_type;
int g_h, g_w;
float pixel(int y, int x) {
  return (y < 0 || y >= g_h || x < 0 || x >= g_w) ? 0.0 : loadF(g_plane + uint(y * g_w + x), g_type);
}

vec4 cubicWeights(float t) {
  const float a = -0.75;
  float d0 = t + 1.0, d1 = t, d2 = 1.0 - t, d3 = 2.0 - t;
  return vec4(((a * d0 - 5.0 * a) * d0 + 8.0 * a) * d0 - 4.0 * a, ((a + 2.0) * d1 - (a + 3.0)) * d1 * d1 + 1.0,
              ((a + 2.0) * d2 - (a + 3.0)) * d2 * d2 + 1.0, ((a * d3 - 5.0 * a) * d3 + 8.0 * a) * d3 - 4.0 * a);
}

void gridSample(uint i) {
  uint C = P(7), WO = P(11), HO = P(10);
  g_h = PI(8);
  g_w = PI(9);
  g_type = P(3);
  uint pix = i % (HO * WO), ch = (i / (HO * WO)) % C, n = i / (HO * WO * C);
  g_plane = P(2) + (n * C + ch) * uint(g_h * g_w);
  uint gt = P(5), goff = P(4) + (n * HO * WO + pix) * 2u;
  float gx = loadF(goff, gt), gy = loadF(goff + 1u, gt);
  uint mode = P(12), padding = P(13);
  bool align = P(14) != 0u;
  float v = 0.0;
  if (!isnan(gx) && !isinf(gx) && !isnan(gy) && !isinf(gy)) {
    float ix = align ? (gx + 1.0) / 2.0 * float(g_w - 1) : ((gx + 1.0) * float(g_w) - 1.0) / 2.0;
    float iy = align ? (gy + 1.0) / 2.0 * float(g_h - 1) : ((gy + 1.0) * float(g_h) - 1.0) / 2.0;
    if (mode == 2u) {
      float fx = floor(ix), fy = floor(iy);
      vec4 wx = cubicWeights(ix - fx), wy = cubicWeights(iy - fy);
      for (int r = 0; r < 4; ++r) {
        float row = 0.0;
        for (int q = 0; q < 4; ++q) {
          float tx = padCoordinate(fx - 1.0 + float(q), g_w, padding, align);
          float ty = padCoordinate(fy - 1.0 + float(r), g_h, padding, align);
          row += wx[q] * pixel(cell(ty, g_h), cell(tx, g_w));
        }
        v += wy[r] * row;
      }
    } else {
      ix = padCoordinate(ix, g_w, padding, align);
      iy = padCoordinate(iy, g_h, padding, align);
      if (mode == 0u) {
        v = pixel(cell(roundEven(iy), g_h), cell(roundEven(ix), g_w));
      } else {
        float fx = floor(ix), fy = floor(iy);
        float tx = ix - fx, ty = iy - fy;
        int x0 = cell(fx, g_w), y0 = cell(fy, g_h);
        v = (1.0 - ty) * ((1.0 - tx) * pixel(y0, x0) + tx * pixel(y0, x0 + 1)) +
            ty * ((1.0 - tx) * pixel(y0 + 1, x0) + tx * pixel(y0 + 1, x0 + 1));
      }
    }
  }
  storeF(P(1) + i, v, g_type);
}

void resize(uint i) {
  uint rank = P(4), t = P(3);
  uint coord[NN_MAX_RANK], taps[NN_MAX_RANK];
  uint rest = i;
  for (int d = int(rank) - 1; d >= 0; --d) {
    uint dim = P(5u + uint(d));
    coord[d] = rest % dim;
    rest /= dim;
  }
  uint combos = 1u;
  for (uint d = 0u; d < rank; ++d) {
    uint table = P(17u + d) + coord[d] * 9u;
    taps[d] = pc.data.w[table];
    if (taps[d] == 0xFFFFFFFFu) {
      storeF(P(1) + i, PF(23), t);
      return;
    }
    combos *= taps[d];
  }
  float v = 0.0;
  for (uint c = 0u; c < combos; ++c) {
    uint pick = c, off = P(2);
    float w = 1.0;
    for (int d = int(rank) - 1; d >= 0; --d) {
      uint k = pick % taps[d];
      pick /= taps[d];
      uint table = P(17u + uint(d)) + coord[d] * 9u;
      off += pc.data.w[table + 1u + k] * P(11u + uint(d));
      w *= uintBitsToFloat(pc.data.w[table + 5u + k]);
    }
    v += w * loadF(off, t);
  }
  storeF(P(1) + i, v, t);
}

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  if (P(0) == NN_SAMPLE_GRID) gridSample(i);
  else resize(i);
}
