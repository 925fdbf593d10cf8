// The rows of splats the level-of-detail build reads (`lod build`), behind one interface (SplatRowSource):
// - PlySplatStream: a binary little-endian splat PLY read in pieces, for inputs that need not fit in memory.
//   The header is parsed by the io library's PLY parser (io/ply_parser.h) and its vertex element bound by
//   readPly's own row decoder (io/ply.h, PlyVertexLayout); the rows are then read block by block and decoded
//   one by one by it, so a row reads to the same floats either way. INRIA 3DGS layout; properties other than
//   the gaussian's own are skipped (Mip-Splatting's filter_3D is baked in, as readPly does).
// - CloudRowSource: a cloud the engine's loader decoded whole (io/formats.h: compressed PLY, SPZ, .splat,
//   SOG, .ksplat, glTF, ASCII or big-endian PLY, lod-meta.json), served in the same row layout.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "io/ply.h"

namespace sf::lod {

// Floats per row of a block: position (3), scale (3), rotation w x y z (4), opacity (1), SH.
inline constexpr size_t kSplatFixedFloats = 11;

// Writes the fixed part of a row in that layout (every row source writes its rows through it).
inline void writeSplatRow(float* dst, Vec3 position, Vec3 scale, Quat rotation, float opacity) {
  dst[0] = position.x, dst[1] = position.y, dst[2] = position.z;
  dst[3] = scale.x, dst[4] = scale.y, dst[5] = scale.z;
  dst[6] = rotation.w, dst[7] = rotation.x, dst[8] = rotation.y, dst[9] = rotation.z;
  dst[10] = opacity;
}

// Rows of gaussians read block by block, in input order: what the build reads twice (bounds, then sort).
class SplatRowSource {
 public:
  virtual ~SplatRowSource() = default;
  // Rows served (non-finite ones included: the build leaves them out).
  virtual uint64_t count() const = 0;
  virtual int shDegree() const = 0;
  // Floats per row of a block: kSplatFixedFloats + SH coefficients.
  size_t stride() const { return kSplatFixedFloats + static_cast<size_t>(shCoeffCount(shDegree()) * 3); }
  virtual uint64_t fileBytes() const = 0;
  virtual uint64_t rowBytes() const = 0;  // bytes one row takes where it is read from
  virtual bool antialiased() const = 0;
  virtual float screenFilter() const = 0;
  // Rows the input held that the source left out before serving (a loader drops non-finite rows); 0 for a
  // stream, which serves every row.
  virtual uint64_t droppedBefore() const { return 0; }
  // Back to the first row.
  virtual void rewind() = 0;
  // Reads up to max_rows rows from the current one into `out` (stride() floats per row, activated values).
  // Returns the rows read, 0 at the end. The first row read is row `nextRow()` before the call.
  virtual size_t read(size_t max_rows, std::vector<float>& out) = 0;
  virtual uint64_t nextRow() const = 0;
  // Called once the rows have been read for the last time: frees what the source holds (a decoded cloud).
  virtual void release() {}
};

class PlySplatStream : public SplatRowSource {
 public:
  // Opens the file and parses its header. Throws sf::Error for a missing file, FormatError for a header that
  // is not an INRIA binary little-endian splat PLY or data shorter than the header declares.
  explicit PlySplatStream(const std::string& path);
  ~PlySplatStream() override;
  PlySplatStream(const PlySplatStream&) = delete;
  PlySplatStream& operator=(const PlySplatStream&) = delete;

  uint64_t count() const override { return count_; }
  int shDegree() const override { return sh_degree_; }
  uint64_t fileBytes() const override { return file_bytes_; }
  uint64_t rowBytes() const override { return row_bytes_; }  // bytes of one row in the file
  const std::string& path() const { return path_; }
  // The antialiasing the file declares (io/ply.h: its header comments, or Mip-Splatting's filter_3D column,
  // which read() bakes into each row as readPly does).
  bool antialiased() const override { return layout_.antialiased; }
  float screenFilter() const override { return layout_.screen_filter; }

  void rewind() override { next_row_ = 0; }
  size_t read(size_t max_rows, std::vector<float>& out) override;
  uint64_t nextRow() const override { return next_row_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t count_ = 0, file_bytes_ = 0, data_offset_ = 0, row_bytes_ = 0, next_row_ = 0;
  int sh_degree_ = 0;
  size_t stride_ = kSplatFixedFloats;
  PlyVertexLayout layout_;
  std::vector<uint8_t> raw_;
};

// A decoded cloud served as rows (its optional channels, which the hierarchy does not carry, are freed).
// `dropped` is what the loader left out (LoadedSplats::dropped_non_finite); `file_bytes` the file's size.
class CloudRowSource : public SplatRowSource {
 public:
  CloudRowSource(GaussianCloud cloud, uint64_t dropped, uint64_t file_bytes);
  uint64_t count() const override { return count_; }
  int shDegree() const override { return sh_degree_; }
  uint64_t fileBytes() const override { return file_bytes_; }
  uint64_t rowBytes() const override { return 4 * stride(); }
  bool antialiased() const override { return antialiased_; }
  float screenFilter() const override { return screen_filter_; }
  uint64_t droppedBefore() const override { return dropped_; }
  void rewind() override { next_row_ = 0; }
  size_t read(size_t max_rows, std::vector<float>& out) override;
  uint64_t nextRow() const override { return next_row_; }
  void release() override;
  // Bytes the decoded cloud holds (0 once released).
  uint64_t heldBytes() const { return cloud_.memoryBytes(); }

 private:
  GaussianCloud cloud_;
  uint64_t count_ = 0, dropped_ = 0, file_bytes_ = 0, next_row_ = 0;
  int sh_degree_ = 0;
  bool antialiased_ = false;
  float screen_filter_ = kScreenFilterInria;
};

// Whether `path` is read by PlySplatStream: a PLY whose header declares binary little-endian data and that
// is not a compressed PLY (a file that cannot be read, or a PLY whose header does not parse, also goes to
// the stream, which reports it). Everything else is decoded whole by the engine's loader.
bool isStreamedPly(const std::string& path);

// True when every float of a row is finite (the loaders drop rows that are not).
bool rowFinite(std::span<const float> row);

}  // namespace sf::lod
