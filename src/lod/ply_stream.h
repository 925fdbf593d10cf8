// A splat PLY read in pieces, for inputs that need not fit in memory (`lod build`). The header is parsed by
// the io library's PLY parser (io/ply_parser.h) and its vertex element bound by readPly's own row decoder
// (io/ply.h, PlyVertexLayout); the rows are then read block by block and decoded one by one by it, so a row
// reads to the same floats either way. Binary little-endian files in the INRIA 3DGS layout only (what
// trainers write; `convert` turns others into one); properties other than the gaussian's own are skipped
// (Mip-Splatting's filter_3D is baked in, as readPly does).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/ply.h"

namespace sf::lod {

// Floats per row of a block: position (3), scale (3), rotation w x y z (4), opacity (1), SH.
inline constexpr size_t kSplatFixedFloats = 11;

class PlySplatStream {
 public:
  // Opens the file and parses its header. Throws sf::Error for a missing file, FormatError for a header that
  // is not an INRIA binary little-endian splat PLY or data shorter than the header declares.
  explicit PlySplatStream(const std::string& path);
  ~PlySplatStream();
  PlySplatStream(const PlySplatStream&) = delete;
  PlySplatStream& operator=(const PlySplatStream&) = delete;

  uint64_t count() const { return count_; }
  int shDegree() const { return sh_degree_; }
  // Floats per row of a block: kSplatFixedFloats + SH coefficients.
  size_t stride() const { return stride_; }
  uint64_t fileBytes() const { return file_bytes_; }
  uint64_t rowBytes() const { return row_bytes_; }  // bytes of one row in the file
  const std::string& path() const { return path_; }
  // The antialiasing the file declares (io/ply.h: its header comments, or Mip-Splatting's filter_3D column,
  // which read() bakes into each row as readPly does).
  bool antialiased() const { return layout_.antialiased; }
  float screenFilter() const { return layout_.screen_filter; }

  // Back to the first row.
  void rewind() { next_row_ = 0; }
  // Reads up to max_rows rows from the current one into `out` (stride() floats per row, activated values).
  // Returns the rows read, 0 at the end. The first row read is row `nextRow()` before the call.
  size_t read(size_t max_rows, std::vector<float>& out);
  uint64_t nextRow() const { return next_row_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t count_ = 0, file_bytes_ = 0, data_offset_ = 0, row_bytes_ = 0, next_row_ = 0;
  int sh_degree_ = 0;
  size_t stride_ = kSplatFixedFloats;
  PlyVertexLayout layout_;
  std::vector<uint8_t> raw_;
};

// True when every float of a row is finite (the loaders drop rows that are not).
bool rowFinite(std::span<const float> row);

}  // namespace sf::lod
