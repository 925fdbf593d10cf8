// Layouts shared by the deform layer's GPU passes (gpu_passes.cpp) and their shaders (shaders/skin.comp,
// shaders/deform_splats.comp): push constants, records and limits.
#ifndef SF_DEFORM_SHARED_H
#define SF_DEFORM_SHARED_H

#include "../gpu/interop.h"

#ifdef __cplusplus
namespace sf::deform_layout {
using gpu_interop::uint;
#else
layout(buffer_reference, scalar) buffer Floats {
  float v[];
};
layout(buffer_reference, scalar) buffer Uints {
  uint v[];
};
#endif

#define SF_SKIN_WG 256        // threads per workgroup, one vertex each
#define SF_DEFORM_WG 256      // splat deform pass: threads per workgroup, one splat each
#define SF_SKIN_INFLUENCES 8  // JOINTS_0/WEIGHTS_0 and JOINTS_1/WEIGHTS_1; unused slots have weight 0
#define SF_SKIN_DQ_FLOATS 20  // per joint: real quat (w x y z), dual quat, stretch 3x3 row-major, 3 pad

#define SF_SKIN_METHOD_LBS 0u
#define SF_SKIN_METHOD_DQS 1u
#define SF_SKIN_FLAG_NORMALS 1u        // normals present (and written)
#define SF_SKIN_FLAG_SKINNED 2u        // influences and palette present (else morph only)
#define SF_SKIN_FLAG_MORPH_NORMALS 4u  // morph_normals present (with normals)
#define SF_SKIN_FLAG_EIGHT 8u          // influence slots 4..7 in use (a second joint/weight set)

struct SkinPush {
  SF_REF(Floats) positions;        // 3 per vertex: bind-pose positions
  SF_REF(Floats) normals;          // 3 per vertex
  SF_REF(Uints) joints;            // SF_SKIN_INFLUENCES per vertex
  SF_REF(Floats) weights;          // SF_SKIN_INFLUENCES per vertex
  SF_REF(Floats) morph_positions;  // target_count * 3 * vertex_count position deltas
  SF_REF(Floats) morph_normals;    // target_count * 3 * vertex_count normal deltas
  SF_REF(Floats) morph_weights;    // target_count
  SF_REF(Floats) palette;          // LBS: 12 per joint (rows 0..2 of the 4x4)
  SF_REF(Floats) dq_palette;       // DQS: SF_SKIN_DQ_FLOATS per joint
  SF_REF(Floats) out_positions;
  SF_REF(Floats) out_normals;
  uint vertex_count;
  uint target_count;
  uint method;
  uint flags;
  uint joint_count;  // joints per instance: instance i (workgroup y) uses palette entries [i * joint_count,
                     // ...)
  uint pad0;
};

// A splat bound to a deforming surface (character/binding.h; the bindings.bin record, 68 bytes).
struct GpuSplatBinding {
  uint kind;  // 0: triangle, 1: joints
  uint triangle;
  uint joints01;  // joints 0 and 1 (16 bits each)
  uint joints23;
  float weights[4];
  float coords[3];  // triangle: b1, b2, h; joints: rest centre
  float cov[6];     // triangle: covariance in frame coordinates; joints: rest covariance
};

#ifndef __cplusplus
layout(buffer_reference, scalar) buffer BindingsRef {
  GpuSplatBinding b[];
};
#endif

// Push constants of the splat deform pass: one thread per bound splat, writing its centre and covariance
// into the object's slot range of the frame's sink.
struct GpuDeformPush {
  SF_REF(BindingsRef) bindings;
  SF_REF(Floats) vertices;         // 3 per vertex, deformed
  SF_REF(Uints) indices;           // 3 per triangle
  SF_REF(Floats) palette;          // 12 per joint (rows 0..2)
  SF_REF(Floats) out_positions;    // the sink's positions at the object's first slot
  SF_REF(Floats) out_covariances;  // the sink's covariances at the object's first slot
  uint count;
  uint pad0;
};

#ifdef __cplusplus
static_assert(sizeof(SkinPush) == 11 * 8 + 24, "SkinPush layout");
static_assert(sizeof(GpuSplatBinding) == 68, "GpuSplatBinding layout");
static_assert(sizeof(GpuDeformPush) == 56, "GpuDeformPush layout");
}  // namespace sf::deform_layout
#endif

#endif
