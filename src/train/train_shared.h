// Layouts shared by the GPU trainer's host code (train/gpu_trainer.cpp) and its compute shaders
// (train/shaders/*.comp). Scalar block layout; the static_asserts check the C++ sizes.
#ifndef SF_TRAIN_SHARED_H
#define SF_TRAIN_SHARED_H

#include "../gpu/interop.h"

#ifdef __cplusplus
namespace sf::train_layout {
using gpu_interop::uint;
#endif

// Threads per workgroup of the per-gaussian, per-pixel and per-parameter passes.
#define SF_TRAIN_WG 256
// Parameters per gaussian, one flat array of groups: means 3N, quats 4N, log-scales 3N, opacity logits N,
// colour logits 3N (GaussianParams, train/raster_grad.h); grads and the Adam moments share the layout.
#define SF_TRAIN_PARAMS 14
// The raster backward's per-gaussian 2D gradients, 9 per gaussian (mean x, y; the 2D covariance's xx, xy, yy,
// converted from the conic's per entry; opacity; rgb),
// accumulated as 64-bit fixed point (integer atomics are associative, so a step's sums do not depend on the
// order the GPU adds them in: runs are reproducible). Per-pixel gradients are scaled by the pixel count first
// (so a pixel's terms are O(1)), then by 2^SF_TRAIN_FIXED_BITS.
#define SF_TRAIN_GRAD2D 9
#define SF_TRAIN_FIXED_BITS 32

#ifndef __cplusplus
layout(buffer_reference, scalar) buffer TFloats {
  float v[];
};
layout(buffer_reference, scalar) buffer TVec4s {
  vec4 v[];
};
layout(buffer_reference, scalar) buffer TInt64s {
  int64_t v[];
};
#endif

// Push constants of every training pass.
struct GpuTrainPush {
  uint64_t frame;              // the frame's GpuFrame (render/gpu_shared.h); activation: unused
  SF_REF(TFloats) params;      // 14 N floats
  SF_REF(TFloats) grads;       // 14 N floats
  SF_REF(TFloats) moments;     // 28 N floats: Adam's m (14 N) then v (14 N)
  SF_REF(TInt64s) grad2d;      // 9 N fixed-point sums
  SF_REF(TVec4s) target;       // this step's view: premultiplied RGBA per pixel
  SF_REF(TVec4s) pixel_grads;  // per pixel: dL/drgb, dL/dalpha (times the pixel count)
  SF_REF(TFloats) partials;    // loss: one partial sum per workgroup
  uint count;                  // gaussians
  uint step;                   // Adam: 1-based step; noise: the step for the generator
  float background;            // this step's grey
  float alpha_weight;
  float entropy_weight;  // this step's annealed weight
  float noise_scale;     // lr_means * noise_lr
  float lr[5];           // means, quats, log-scales, opacities, colours (means already times the extent)
  uint seed;
  uint pad[2];
};

// The activation pass (a GpuSplatSource): parameters -> the frame's slots.
struct GpuActivatePush {
  SF_REF(TFloats) params;
  uint64_t positions, covariances, opacities, sh;  // GpuSplatTargets
  uint count, sh_stride;
};

#ifdef __cplusplus
static_assert(sizeof(GpuTrainPush) == 8 * 8 + 6 * 4 + 5 * 4 + 3 * 4, "GpuTrainPush layout");
static_assert(sizeof(GpuActivatePush) == 5 * 8 + 8, "GpuActivatePush layout");
}  // namespace sf::train_layout
#endif

#endif
