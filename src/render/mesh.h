// Triangle meshes in the splat frame: skinned or static meshes drawn opaque with a depth buffer, and the
// splats composited against that depth (ARCHITECTURE.md "Meshes with splats"; docs/architecture.md).
//
// Shading (both backends, constants in render/mesh_shared.h): albedo = baseColorFactor x vertex colour x
// base-colour texel (sRGB-decoded, bilinear, wrap per sampler), lit by ambient + one directional light in
// view space, then sRGB-encoded so it sits in the same display space as the splats' colours. Other shading
// modes (MeshShading) leave the light out or use the cel bands; the dataset views (train/views.h) use them.
//
// Composition per pixel: splats are blended front to back as usual but stop at the first splat whose
// depth is not in front of the mesh (contributions behind the mesh are dropped); the mesh colour then
// shows through the remaining transmittance T: C = C_splats + T * C_mesh, alpha 1. Pixels without a mesh
// end on the background as before.
//
// Anti-aliased edges (RenderMesh::samples; splat hulls' cores ask for 8, as the hull article draws them with
// 8x MSAA): the layer is supersampled. Besides the pixel-centre pass, the meshes are drawn once per sample of
// a fixed pattern (Vulkan's standard sample locations), meshes asking for samples shifted to the sample's
// position, the others at the pixel centre every time; each pass is the single-sample rasterizer (depth test,
// nearest fragment wins). A pixel then resolves to one fragment (accumulateMeshSample): alpha = the sum of
// its samples' alphas / N (covered fraction x fragment alpha), colour = their alpha-weighted mean, depth =
// the nearest covered sample's; a pixel whose N samples all hold the centre's colour and alpha (fully covered
// by flat colour, each channel within 2^-16) keeps the centre's fragment bit for bit. Partly covered pixels
// are translucent fragments (alpha < 1) and composite as masked meshes do.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/math.h"
#include "deform/skin_source.h"
#include "render/camera.h"

namespace sf {

// RGBA8 texture, sRGB-encoded as glTF stores base colour. Wrap modes are the glTF sampler enums.
struct MeshTexture {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;                // width * height * 4
  uint32_t wrap_s = 10497, wrap_t = 10497;  // REPEAT
};

// How a mesh's fragments get their display colour from the albedo (linear RGBA above).
enum class MeshShading : uint8_t {
  kLit,    // ambient + the view-space directional light, then sRGB-encoded (shadeMeshFragment); both backends
  kUnlit,  // albedo clamped to [0, 1] is the final display colour: no light, no encode (splat hulls' cores,
           // whose colours are lit per splat and already display-encoded); both backends
  kAlbedo,  // sRGB-encode(clamp(albedo)): the colour without light (dataset views `flat`, and `ao` with the
            // occlusion multiplied into the vertex colours); CPU rasterizer only
  kCamera,  // lit from the camera: ambient + diffuse for a light at the eye, shade = 0.35 + 0.65 x max(n.v,
            // 0) with v the unit vector from the fragment to the camera (shadeMeshFragment's constants); both
            // backends (the mouth's meshes, character/mouth.h)
  // The hull article's cel bands (hull/hull_render.h celShade, no emission or flash) on the sRGB-encoded
  // albedo, for the world-space key light RenderMesh::cel_light: band 0.62, 0.88 or 1.12 by N.L with ramps
  // over N.L 0.22..0.28 and 0.52..0.58, then clamped (celMeshFragment); CPU only
  kCel,
};
// Name for messages ("lit", "unlit", "albedo", "cel").
const char* meshShadingName(MeshShading shading);

// One triangle list in object space. Spans must stay valid while the frame renders.
struct RenderMesh {
  std::span<const Vec3> positions;
  std::span<const Vec3> normals;  // empty: flat shading with the face normal
  // Or: positions and normals are this frame's skin of `skin` (morph targets, LBS or DQS, up to 8
  // influences), computed by the renderer (the Vulkan frame's skin pass; the CPU reference on the CPU
  // backend). `positions` and `normals` must then be empty.
  SkinSource skin;
  std::span<const std::array<float, 2>> uvs;     // empty: no texture lookup
  std::span<const std::array<float, 4>> colors;  // linear vertex colours, or empty
  std::span<const uint32_t> indices;             // 3 per triangle; empty: positions taken three at a time
  std::array<float, 4> base_color{1, 1, 1, 1};   // linear factor
  const MeshTexture* texture = nullptr;          // used when uvs are present
  Mat4 object_to_world;
  MeshShading shading = MeshShading::kLit;
  // kCel: the direction the key light travels, in world space (need not be unit; must not be zero).
  Vec3 cel_light{-0.4f, -1.0f, -0.3f};
  // Coverage, both backends: a fragment's alpha = opacity x smoothstep(0, mask_rim x image width, d), with d
  // the pixel centre's screen distance (pixels) inside the polygon `mask` (object-space points in order,
  // projected with the camera; d = 0 outside it). Without a mask (fewer than 3 points, or a point at view
  // depth <= SF_MESH_NEAR) alpha = opacity. A fragment of alpha 0 is not drawn (no depth either); the
  // nearest fragment of a pixel wins as for opaque meshes, and with alpha < 1 the pixel is a translucent
  // layer: the splats in front blend over it and those behind show through 1 - alpha (MeshPixel).
  float opacity = 1;
  std::span<const Vec3> mask;
  float mask_rim = 0;  // the soft edge's width as a fraction of the image width (0: a hard edge)
  // Anti-aliasing: samples per pixel, 1 (the pixel centre only, the default), 2, 4, 8 or 16. The layer takes
  // the largest count of its meshes (meshLayerSamples) and draws this mesh at each sample's position; a mesh
  // of 1 in such a layer is drawn at the pixel centre in every sample pass (aliased, unchanged).
  uint32_t samples = 1;

  size_t vertexCount() const { return skin.empty() ? positions.size() : skin.vertexCount(); }
  bool hasNormals() const { return skin.empty() ? !normals.empty() : !skin.normals.empty(); }
  size_t triangleCount() const { return (indices.empty() ? vertexCount() : indices.size()) / 3; }
  // Empty when drawable; otherwise why not (sizes, indices out of range).
  std::string validate() const;
};

// The meshes of a frame after rasterization: display colour and view depth per pixel (depth +infinity
// where no mesh covers the pixel centre).
struct MeshLayer {
  int width = 0, height = 0;
  std::vector<Vec3> color;
  std::vector<float> depth;
  std::vector<float> alpha;  // coverage of the pixel's fragment (1: opaque; RenderMesh::opacity and mask)
  bool empty() const { return depth.empty(); }
};

// The mesh layer's samples per pixel: the largest RenderMesh::samples of `meshes` (1 without meshes).
uint32_t meshLayerSamples(std::span<const RenderMesh> meshes);
// Where the samples of a layer of `samples` per pixel lie, as offsets in [0, 1)^2 from the pixel's top-left
// corner: Vulkan's standard sample locations for 2, 4, 8 and 16 (the positions of MSAA on most GPUs), the
// centre {0.5, 0.5} for 1. Throws sf::Error for any other count.
std::span<const std::array<float, 2>> meshSamplePattern(uint32_t samples);
// One sample pass folded into a pixel's resolve state (both backends compute the same, in sample order):
// `sum` += (colour x alpha, alpha) and `nearest` = min(nearest, depth) of a covered sample; `matched` stays
// true while every sample is covered with the centre fragment's colour and alpha (each within
// SF_MESH_MATCH_TOLERANCE, 2^-16: a flat colour interpolated elsewhere in a triangle may differ in its last
// bits). Start a pixel with sum 0, nearest +infinity and matched = (the centre is covered).
struct MeshSampleState {
  Vec3 sum_color;
  float sum_alpha = 0;
  float nearest = INFINITY;
  bool matched = false;
};
void accumulateMeshSample(MeshSampleState& state, Vec3 centre_color, float centre_alpha, bool covered,
                          Vec3 color, float alpha, float depth);

// A mesh's mask polygon in the camera's pixel coordinates (x = fx X / Z + cx, y = fy Y / Z + cy of its
// view-space points); empty when the mesh has no mask (see RenderMesh::mask).
std::vector<std::array<float, 2>> projectMeshMask(const RenderMesh& mesh, const Camera& cam);
// Coverage of the point (x, y) by a projected polygon: smoothstep(0, rim, d) for d its distance to the
// nearest edge when inside (even-odd rule), 0 outside; rim <= 0 gives 1 inside. The mesh pass computes
// the same in mesh.frag; the teeth's per-splat rim uses it too.
float maskCoverage(std::span<const std::array<float, 2>> polygon, float x, float y, float rim);

// CPU reference rasterizer: pixel centres at (x + 0.5, y + 0.5) in the camera's pixel coordinates,
// top-left fill rule, perspective-correct attributes, triangles clipped at view depth SF_MESH_NEAR, depth
// test on view z (nearest wins), no culling. Multithreaded over row bands. A layer of more than one sample
// (meshLayerSamples) adds a pass per sample and resolves as the header says. Throws sf::Error when a mesh
// fails validate().
MeshLayer rasterizeMeshes(std::span<const RenderMesh> meshes, const Camera& cam);

// The shading model of both backends for one fragment. `normal_view` need not be normalised; `view_pos`
// is the fragment's view-space position (to turn the normal towards the camera).
Vec3 shadeMeshFragment(Vec3 normal_view, Vec3 view_pos, std::array<float, 4> albedo_linear);
// MeshShading::kCamera for one fragment: the light is at the eye (the view-space origin).
Vec3 cameraLitMeshFragment(Vec3 normal_view, Vec3 view_pos, std::array<float, 4> albedo_linear);
// MeshShading::kCel for one fragment: `light_view` is the direction the key light travels, in view space.
Vec3 celMeshFragment(Vec3 normal_view, Vec3 view_pos, Vec3 light_view, std::array<float, 4> albedo_linear);
// Bilinear texel lookup in linear colour (each texel sRGB-decoded before filtering).
std::array<float, 4> sampleTexture(const MeshTexture& texture, float u, float v);

// The sRGB transfer functions (IEC 61966-2-1), unclamped.
float srgbToLinear(float c);
float linearToSrgb(float c);

}  // namespace sf
