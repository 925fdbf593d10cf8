// Mesh shading constants and the per-draw record of the Vulkan mesh pass, shared by C++ (the CPU
// triangle rasterizer and the Vulkan host code) and GLSL (mesh.vert / mesh.frag), so that both backends
// shade with the same numbers. Scalar block layout; 4- and 8-byte members only.
#ifndef SF_RENDER_MESH_SHARED_H
#define SF_RENDER_MESH_SHARED_H

#include "../gpu/interop.h"

#ifdef __cplusplus
namespace sf::gpu_layout {
using gpu_interop::uint;
#endif

// Meshes are clipped at this view depth (smaller than the splats' 0.2 so close-ups keep their meshes).
#define SF_MESH_NEAR 0.01
// Simple lighting in view space (OpenCV axes: x right, y down, z forward): a directional light from the
// camera's upper left, plus ambient. shade = AMBIENT + DIFFUSE * max(dot(n, L), 0), n turned to face the
// camera (meshes are drawn two-sided).
#define SF_MESH_LIGHT_X -0.4
#define SF_MESH_LIGHT_Y -0.6
#define SF_MESH_LIGHT_Z -0.7
#define SF_MESH_AMBIENT 0.35
#define SF_MESH_DIFFUSE 0.65
// Draw flags.
#define SF_MESH_HAS_NORMALS 1u
#define SF_MESH_HAS_UVS 2u
#define SF_MESH_HAS_COLORS 4u
#define SF_MESH_HAS_TEXTURE 8u
#define SF_MESH_UNLIT 16u       // the albedo is the final display colour (MeshShading::kUnlit)
#define SF_MESH_CAMERA_LIT 32u  // the light is at the eye (MeshShading::kCamera)
// A mask polygon (RenderMesh::mask) has at most this many points.
#define SF_MESH_MASK_MAX 256u
// Texture wrap modes (glTF / OpenGL enums).
#define SF_WRAP_REPEAT 10497u
#define SF_WRAP_CLAMP 33071u
#define SF_WRAP_MIRROR 33648u

#ifndef __cplusplus
layout(buffer_reference, scalar) buffer MeshFloats {
  float v[];
};
layout(buffer_reference, scalar) buffer MeshUints {
  uint v[];
};
#endif

// One draw: a triangle list pulled by index from device addresses.
struct GpuMeshDraw {
  float object_to_view[12];      // rows 0..2 of world_to_camera * object_to_world
  float normal_to_view[12];      // rows 0..2 (xyz used) of the inverse transpose of its linear part
  float base_color[4];           // linear RGBA factor
  SF_REF(MeshFloats) positions;  // 3 floats per vertex
  SF_REF(MeshFloats) normals;    // 3 floats per vertex, when SF_MESH_HAS_NORMALS
  SF_REF(MeshFloats) uvs;        // 2 floats per vertex, when SF_MESH_HAS_UVS
  SF_REF(MeshFloats) colors;     // 4 floats per vertex (linear), when SF_MESH_HAS_COLORS
  SF_REF(MeshUints) indices;     // 3 per triangle
  SF_REF(MeshUints) texels;      // RGBA8 (sRGB-encoded), one uint per texel, when SF_MESH_HAS_TEXTURE
  SF_REF(MeshFloats) mask;       // mask_count points (x, y) in pixels (projectMeshMask), when mask_count >= 3
  uint tex_width, tex_height, wrap_s, wrap_t;
  uint flags, mask_count;
  float opacity, mask_rim;  // RenderMesh::opacity; the rim's width in pixels
};

#ifndef __cplusplus
layout(buffer_reference, scalar) buffer MeshDrawsRef {
  GpuMeshDraw d[];
};
#endif

// Push constants of the mesh pass. In a sample pass of an anti-aliased layer (RenderMesh::samples) a mesh
// drawn at the samples gets cx, cy moved by minus (jitter_x, jitter_y), the sample's offset from the pixel
// centre, and evaluates its mask at gl_FragCoord + jitter; otherwise the jitter is 0.
struct GpuMeshPush {
  SF_REF(MeshDrawsRef) draws;
  uint draw_index, pad0;
  float fx, fy, cx, cy;
  float width, height, jitter_x, jitter_y;
};

// An anti-aliased mesh layer: at most this many samples per pixel; the resolve's workgroup size.
#define SF_MESH_SAMPLES_MAX 16u
#define SF_MESH_RESOLVE_WG 256u
// A sample "matches" the pixel centre's fragment when each of its colour channels and its alpha lie within
// this of the centre's (a flat colour interpolated at another point of a triangle may differ in its last
// bits; 2^-16 is far below what an 8- or 16-bit image keeps).
#define SF_MESH_MATCH_TOLERANCE (1.0 / 65536.0)

#ifndef __cplusplus
layout(buffer_reference, scalar) buffer MeshVec4s {
  vec4 v[];
};
layout(buffer_reference, scalar) buffer MeshVec2s {
  vec2 v[];
};
#endif

// Push constants of the resolve (mesh_resolve.comp), one dispatch after each sample pass: that pass's
// fragment folded into each pixel's state (accumulateMeshSample of render/mesh.h), the last one writing the
// resolved fragment over the centre pass's.
struct GpuMeshResolvePush {
  SF_REF(MeshVec4s) color;         // the centre pass's colour and alpha; the resolved ones after the last
  SF_REF(MeshFloats) depth;        // the centre pass's view depth; the resolved one after the last
  SF_REF(MeshVec4s) sample_color;  // this sample pass's
  SF_REF(MeshFloats) sample_depth;
  SF_REF(MeshVec4s) sum;    // sum of colour x alpha (xyz) and of alpha (w) over the covered samples so far
  SF_REF(MeshVec2s) state;  // the nearest covered sample's depth (x); 1 while every sample matched (y)
  uint pixels, sample_index, samples, pad0;
};

#ifdef __cplusplus
static_assert(sizeof(GpuMeshPush) == 48, "GpuMeshPush layout");
static_assert(sizeof(GpuMeshResolvePush) == 64, "GpuMeshResolvePush layout");
static_assert(sizeof(GpuMeshDraw) == 28 * 4 + 7 * 8 + 8 * 4, "GpuMeshDraw layout");
}  // namespace sf::gpu_layout
#endif

#endif
