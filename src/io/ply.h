// Splat PLY files: the INRIA 3DGS layout and PlayCanvas compressed PLY (read and write).
// Layouts: docs/formats/ply.md and docs/formats/compressed-ply.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"

namespace sf {

class ByteReader;
namespace ply {
struct Header;
}

// How the rows of an INRIA-layout PLY's vertex element map onto gaussians, bound once from the header; each
// row is then decoded alone (decodePlyVertex). The one mapping of PLY properties onto a gaussian: readPly and
// the level-of-detail build's streaming reader (lod/ply_stream.h) both decode through it.
struct PlyVertexLayout {
  // Where a vertex property's value goes.
  enum class Target : uint8_t {
    kPosition,
    kNormal,
    kSh,
    kColor8,
    kOpacity,
    kScale,
    kRot,
    kId,
    kFilter3d,
    kExtra,
    kSkip
  };
  struct Field {
    Target target = Target::kSkip;
    uint32_t index = 0;  // component; the SH float ([coeff][rgb]) for kSh and kColor8; the channel for kExtra
    ScalarType type = ScalarType::kFloat32;
    uint32_t offset = 0;  // byte in a binary row (meaningful when the element has no list properties)
  };
  size_t element = 0;                // the vertex element's index in the header
  uint64_t count = 0;                // rows
  size_t row_bytes = 0;              // bytes of a binary row (without list properties)
  std::vector<Field> fields;         // one per vertex property, in the header's order
  std::vector<ExtraChannel> extras;  // the properties kept as extra channels (values left empty)
  int sh_degree = 0;
  bool normals = false, ids = false, filter_3d = false;
  // The antialiasing the file declares: its header comments (applyPlyAntialiasComments), or Mip-Splatting's
  // filter_3D column (its 2D mip filter).
  bool antialiased = false;
  float screen_filter = kScreenFilterInria;
};

// Binds the vertex element of a parsed header. Throws FormatError (at byte 0 of `r`) when there is none or
// it lacks the INRIA properties (x y z, scale_0..2, rot_0..3, opacity, f_dc_0..2 or red green blue, f_rest_*
// of an SH degree).
PlyVertexLayout plyVertexLayout(const ply::Header& header, const ByteReader& r);

// One gaussian as a vertex row gives it, activated as GaussianCloud holds it: linear scales, opacity in [0,
// 1], a unit quaternion, SH [coeff][rgb] into `sh`; Mip-Splatting's filter_3D baked in (bakeSmoothingFilter).
struct PlyVertex {
  Vec3 position, scale, normal;  // normal: when the layout has normals
  Quat rotation;
  float opacity = 0;
  int32_t id = 0;            // when the layout has ids
  float* sh = nullptr;       // shCoeffCount(sh_degree) * 3 floats, all written
  double* extras = nullptr;  // layout.extras.size() values, written when not null
};

// Decodes one row from its property values (as double, in the header's order; any encoding).
void decodePlyVertex(const PlyVertexLayout& layout, const double* values, PlyVertex& out);
// Decodes one binary little-endian row (layout.row_bytes bytes, no list properties).
void decodePlyVertexRow(const PlyVertexLayout& layout, const uint8_t* row, PlyVertex& out);

// Decodes an INRIA-layout PLY (ascii, binary little- or big-endian; properties found by name in any
// order). Unknown vertex properties become cloud.extras. `path` names the source in error messages.
// Antialiasing: Mip-Splatting's per-gaussian `filter_3D` is baked into the scales and opacities (its 3D
// smoothing filter) and selects its 2D mip filter; header comments declare gsplat's antialiased mode
// (PlyAntialiasComments). Throws FormatError on malformed input.
GaussianCloud readPly(std::span<const uint8_t> bytes, const std::string& path);

// Encodes a cloud as binary little-endian INRIA PLY: x y z [nx ny nz] f_dc_0..2 f_rest_* opacity
// scale_0..2 rot_0..3 [id] then every extra channel with its original type.
std::vector<uint8_t> writePly(const GaussianCloud& cloud);

// The header comment lines (each ending in a newline) that record a cloud's antialiasing: "SplatRenderMode:
// mip" when antialiased, "splatforge screen_filter V" when its 2D filter is not INRIA's 0.3 pixels^2. Both
// PLY writers emit them; both readers honour them (and "SplatRenderMode: default", "train_flags
// antialiasing").
std::string plyAntialiasComments(const GaussianCloud& cloud);
// Mip-Splatting's 3D smoothing filter of standard deviation `filter_3d` baked into one gaussian as its
// renderer applies it: scale' = sqrt(scale^2 + f^2) per axis, opacity' = opacity * sqrt(prod scale^2 / prod
// scale'^2).
void bakeSmoothingFilter(Vec3& scale, float& opacity, float filter_3d);
void applyPlyAntialiasComments(const std::vector<std::string>& comments, GaussianCloud& cloud);

// True when a PLY header declares the PlayCanvas compressed layout (a "chunk" element and a vertex
// element with packed_position).
bool isCompressedPly(std::span<const uint8_t> bytes);

// Decodes a PlayCanvas compressed PLY. Throws FormatError on malformed input.
GaussianCloud readCompressedPly(std::span<const uint8_t> bytes, const std::string& path);

// Encodes a PlayCanvas compressed PLY (18 chunk bounds with colour, an "sh" element for degree >= 1), the
// splats in Morton order of their positions as the format's other writers do (so chunks are compact and the
// quantisation fine): row order is NOT kept. Opacity, colour and SH are clamped to the format's ranges
// (exportLosses in io/formats.h counts what is clamped). Normals, ids and extra channels are not written.
std::vector<uint8_t> writeCompressedPly(const GaussianCloud& cloud);
// The order writeCompressedPly writes the cloud's splats in: row r of the file is splat order[r].
std::vector<uint32_t> compressedPlyOrder(const GaussianCloud& cloud);

}  // namespace sf
