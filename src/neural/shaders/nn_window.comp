#version 460
// Sliding windows over up to NN_WINDOW_DIMS spatial dimensions, one invocation per output element: MaxPool
// (with its Indices output), AveragePool (padding counted or not) and ConvTranspose (the scatter read as a
// gather: an output position takes input p under tap k where p * stride + k * dilation - pad_begin equals
// it). The geometry is the CPU kernels' (cpu_ops_conv.cpp), taps walked in the same row-major order.
// Parameters: [0] mode (NN_WIN_*), [1] spatial dimensions, [2] C (input channels), [3] output channels,
// [4] input channels per group, [5] output channels per group, [6] X offset, [7] W offset, [8] bias offset,
// [9] bias present, [10] Y offset, [11] Y type, [12] X type, [13] Indices offset, [14] Indices: 0 none,
// 1 row-major, 2 column-major (storage_order), [15] input positions per plane, [16] output positions per
// plane, [17] taps; per spatial dimension d from word 24 + 8 d: input size, output size, kernel, stride,
// dilation, pad begin, pad end.
#include "nn_common.glsl"
#include "nn_codes.h"

layout(local_size_x = 256) in;

uint D(int d, uint k) { return P(24u + 8u * uint(d) + k); }

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint mode = P(0), in_size = P(15), out_size = P(16), k_size = P(17), xt = P(12), yt = P(11);
  int nd = PI(1);
  uint o = i % out_size, plane = i / out_size;
  int pos[NN_WINDOW_DIMS];
  uint rest = o;
  for (int d = nd - 1; d >= 0; --d) {
    pos[d] = int(rest % D(d, 1u));
    rest /= D(d, 1u);
  }
  if (mode == NN_WIN_CONV_TRANSPOSE) {
    uint C = P(2), OC = P(3), cg = P(4), mg = P(5);
    uint oc = plane % OC, n = plane / OC, g = oc / mg, m = oc % mg;
    uint xw = P(6) + (n * C + g * cg) * in_size, ww = P(7) + (g * cg * mg + m) * k_size;
    float acc = 0.0;
    for (uint t = 0u; t < k_size; ++t) {
      uint tr = t, idx = 0u, scale = 1u;
      bool inside = true;
      for (int d = nd - 1; d >= 0 && inside; --d) {
        int k = int(tr % D(d, 2u)), s = PI(24u + 8u * uint(d) + 3u);
        tr /= D(d, 2u);
        int num = pos[d] + PI(24u + 8u * uint(d) + 5u) - k * PI(24u + 8u * uint(d) + 4u);
        if (num < 0 || num % s != 0 || num / s >= int(D(d, 0u))) {
          inside = false;
        } else {
          idx += uint(num / s) * scale;
          scale *= D(d, 0u);
        }
      }
      if (!inside) continue;
      for (uint c = 0u; c < cg; ++c)
        acc = fma(loadF(xw + c * in_size + idx, xt), loadF(ww + c * mg * k_size + t, xt), acc);
    }
    if (P(9) != 0u) acc += loadF(P(8) + oc, xt);
    storeF(P(10) + i, acc, yt);
    return;
  }
  // Pooling: plane n * C + c is the same in X and Y.
  uint xw = P(6) + plane * in_size;
  bool is_float = isFloatType(xt);
  int best = -1, best_i = 0;
  float best_f = 0.0, sum = 0.0;
  uint count = 0u;
  for (uint t = 0u; t < k_size; ++t) {
    uint tr = t, idx = 0u, scale = 1u;
    bool inside = true, padded = true;
    for (int d = nd - 1; d >= 0; --d) {
      int k = int(tr % D(d, 2u)), in_d = int(D(d, 0u)), pb = PI(24u + 8u * uint(d) + 5u);
      tr /= D(d, 2u);
      int q = pos[d] * PI(24u + 8u * uint(d) + 3u) - pb + k * PI(24u + 8u * uint(d) + 4u);
      if (q < 0 || q >= in_d) inside = false;
      if (q < -pb || q >= in_d + PI(24u + 8u * uint(d) + 6u)) padded = false;
      if (inside) idx += uint(q) * scale;
      scale *= uint(in_d);
    }
    if (!inside) {
      if (mode == NN_WIN_AVERAGE_PAD && padded) ++count;  // padding counts, not what lies beyond it
      continue;
    }
    if (mode == NN_WIN_MAX) {
      if (is_float) {
        float v = loadF(xw + idx, xt);
        if (best < 0 || v > best_f) best = int(idx), best_f = v;
      } else {
        int v = int(word(xw + idx));
        if (best < 0 || v > best_i) best = int(idx), best_i = v;
      }
    } else {
      sum += loadF(xw + idx, xt);
      ++count;
    }
  }
  if (mode != NN_WIN_MAX) {
    storeF(P(10) + i, count != 0u ? sum / float(count) : uintBitsToFloat(0x7FC00000u), yt);
    return;
  }
  if (best < 0) {  // a window entirely in the padding: -inf (an integer type's 0, the low bits of int64 min)
    if (is_float) storeF(P(10) + i, uintBitsToFloat(0xFF800000u), yt);
    else storeI(P(10) + i, 0, yt);
  } else if (is_float) {
    storeF(P(10) + i, best_f, yt);
  } else {
    storeI(P(10) + i, best_i, yt);
  }
  if (P(14) == 0u) return;
  int index = -1;
  if (best >= 0) {
    uint at = uint(best);
    if (P(14) == 2u) {  // the spatial index read column-major (first dimension fastest)
      uint r = uint(best), s = 1u;
      int coord[NN_WINDOW_DIMS];
      for (int d = nd - 1; d >= 0; --d) {
        coord[d] = int(r % D(d, 0u));
        r /= D(d, 0u);
      }
      at = 0u;
      for (int d = 0; d < nd; ++d) {
        at += uint(coord[d]) * s;
        s *= D(d, 0u);
      }
    }
    index = int(plane * in_size + at);
  }
  storeI(P(13) + i, index, 7u);
}
