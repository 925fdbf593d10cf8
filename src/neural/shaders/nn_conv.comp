#version 460
// Direct 2-D convolution (1-D as height 1) with groups, strides, dilations and padding: one invocation per
// output element. Parameters: [0] N, [1] C, [2] H, [3] W, [4] output channels, [5] OH, [6] OW, [7] KH, [8] KW,
// [9] stride h, [10] stride w, [11] pad top, [12] pad left, [13] dilation h, [14] dilation w, [15] groups,
// [16] X offset, [17] W offset, [18] bias offset, [19] bias present, [20] output offset, [21] type.
#include "nn_common.glsl"

layout(local_size_x = 256) in;

void main() {
  uint i = invocationIndex();
  if (i >= pc.count) return;
  uint C = P(1), H = P(2), W = P(3), OC = P(4), OH = P(5), OW = P(6), KH = P(7), KW = P(8);
  int sh = PI(9), sw = PI(10), ph = PI(11), pw = PI(12), dh = PI(13), dw = PI(14);
  uint groups = P(15), t = P(21);
  uint ox = i % OW, oy = (i / OW) % OH, oc = (i / (OW * OH)) % OC, n = i / (OW * OH * OC);
  uint cg = C / groups, og = OC / groups, g = oc / og;
  float acc = P(19) != 0u ? loadF(P(18) + oc, t) : 0.0;
  uint xw = P(16), ww = P(17) + oc * cg * KH * KW;
  for (uint c = 0u; c < cg; ++c) {
    uint xc = xw + ((n * C) + g * cg + c) * H * W;
    for (uint ky = 0u; ky < KH; ++ky) {
      int y = int(oy) * sh - ph + int(ky) * dh;
      if (y < 0 || y >= int(H)) continue;
      for (uint kx = 0u; kx < KW; ++kx) {
        int x = int(ox) * sw - pw + int(kx) * dw;
        if (x < 0 || x >= int(W)) continue;
        acc = fma(loadF(xc + uint(y) * W + uint(x), t), loadF(ww + (c * KH + ky) * KW + kx, t), acc);
      }
    }
  }
  storeF(P(20) + i, acc, t);
}
