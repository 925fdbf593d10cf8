// Rows of splats for the level-of-detail build: a splat PLY read in pieces, a decoded cloud
// (lod/ply_stream.h).
#include "lod/ply_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "io/byte_reader.h"
#include "io/ply_parser.h"

namespace sf::lod {

PlySplatStream::PlySplatStream(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) {
    const int err = errno;
    throw Error(path +
                (err == ENOENT ? ": file is missing" : ": cannot open: " + std::string(std::strerror(err))));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw Error(path + ": not a regular file");
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  file_bytes_ = static_cast<uint64_t>(st.st_size);
  try {
    // The header: at most 1 MiB (the parser's limit) plus its last line.
    std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(file_bytes_, (1u << 20) + 4096)));
    if (::pread(fd_, head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()))
      throw Error(path + ": read error in the header");
    ByteReader r(head, path);
    if (!ply::looksLikePly(head))
      r.failAt(0,
               "not a PLY file (the streamed reader reads binary little-endian INRIA splat PLY; lod build "
               "decodes other formats whole)");
    const ply::Header h = ply::parseHeader(r);
    if (h.encoding != ply::Encoding::kBinaryLittleEndian)
      r.failAt(
          0,
          std::string(h.encoding == ply::Encoding::kAscii ? "an ASCII" : "a big-endian") +
              " PLY: lod build reads binary little-endian PLY (splatforge convert IN -o OUT.ply writes one)");
    layout_ = plyVertexLayout(h, r);
    uint64_t offset = h.data_offset;
    for (size_t e = 0; e < layout_.element; ++e) {
      const ply::Element& before = h.elements[e];
      if (before.hasLists())
        r.failAt(0, "element '" + before.name + "' before the vertices has list properties");
      offset += before.count * before.rowBytes();
    }
    const ply::Element& v = h.elements[layout_.element];
    if (v.hasLists()) r.failAt(0, "vertex element has list properties");
    sh_degree_ = layout_.sh_degree;
    stride_ = kSplatFixedFloats + static_cast<size_t>(shCoeffCount(sh_degree_) * 3);
    count_ = layout_.count;
    row_bytes_ = layout_.row_bytes;
    data_offset_ = offset;
    if (row_bytes_ == 0 || data_offset_ > file_bytes_ || count_ > (file_bytes_ - data_offset_) / row_bytes_)
      r.failAt(std::min(data_offset_, file_bytes_),
               "truncated: vertex count " + std::to_string(count_) + " needs " +
                   std::to_string(count_ * row_bytes_) + " bytes of data from byte " +
                   std::to_string(data_offset_) + ", the file has " + std::to_string(file_bytes_));
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

PlySplatStream::~PlySplatStream() {
  if (fd_ >= 0) ::close(fd_);
}

size_t PlySplatStream::read(size_t max_rows, std::vector<float>& out) {
  const size_t rows = static_cast<size_t>(std::min<uint64_t>(max_rows, count_ - next_row_));
  out.resize(rows * stride_);
  if (rows == 0) return 0;
  raw_.resize(rows * row_bytes_);
  const uint64_t start = data_offset_ + next_row_ * row_bytes_;
  size_t got = 0;
  while (got < raw_.size()) {
    const ssize_t n = ::pread(fd_, raw_.data() + got, raw_.size() - got, static_cast<off_t>(start + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(path_ + ": read error at byte " + std::to_string(start + got) + ": " +
                  std::strerror(errno));
    if (n == 0) throw FormatError(path_, start + got, "truncated while reading (the file shrank)");
    got += static_cast<size_t>(n);
  }
  for (size_t i = 0; i < rows; ++i) {
    float* dst = out.data() + i * stride_;
    PlyVertex g;
    g.sh = dst + kSplatFixedFloats;
    decodePlyVertexRow(layout_, raw_.data() + i * row_bytes_, g);
    writeSplatRow(dst, g.position, g.scale, g.rotation, g.opacity);
  }
  next_row_ += rows;
  return rows;
}

CloudRowSource::CloudRowSource(GaussianCloud cloud, uint64_t dropped, uint64_t file_bytes)
    : cloud_(std::move(cloud)),
      count_(cloud_.size()),
      dropped_(dropped),
      file_bytes_(file_bytes),
      sh_degree_(cloud_.sh_degree),
      antialiased_(cloud_.antialiased),
      screen_filter_(cloud_.screen_filter) {
  // Not carried into the hierarchy.
  std::vector<Vec3>().swap(cloud_.normals);
  std::vector<int32_t>().swap(cloud_.ids);
  std::vector<ExtraChannel>().swap(cloud_.extras);
}

size_t CloudRowSource::read(size_t max_rows, std::vector<float>& out) {
  const size_t rows = static_cast<size_t>(std::min<uint64_t>(max_rows, count_ - next_row_));
  const size_t stride = this->stride(), sh = stride - kSplatFixedFloats;
  out.resize(rows * stride);
  if (rows > 0 && cloud_.size() != count_) throw Error("the decoded cloud was read after its release");
  for (size_t i = 0; i < rows; ++i) {
    const size_t r = static_cast<size_t>(next_row_) + i;
    float* dst = out.data() + i * stride;
    writeSplatRow(dst, cloud_.positions[r], cloud_.scales[r], cloud_.rotations[r], cloud_.opacities[r]);
    std::copy_n(cloud_.sh.data() + r * sh, sh, dst + kSplatFixedFloats);
  }
  next_row_ += rows;
  return rows;
}

void CloudRowSource::release() {
  cloud_ = GaussianCloud{};
}

bool isStreamedPly(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return true;  // the stream names the problem
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return true;
  }
  std::vector<uint8_t> head(
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(st.st_size), (1u << 20) + 4096)));
  const ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  if (got != static_cast<ssize_t>(head.size())) return true;
  if (!ply::looksLikePly(head)) return false;
  if (isCompressedPly(head)) return false;
  try {
    ByteReader r(head, path);
    return ply::parseHeader(r).encoding == ply::Encoding::kBinaryLittleEndian;
  } catch (const Error&) {
    return true;
  }
}

bool rowFinite(std::span<const float> row) {
  for (float f : row)
    if (!std::isfinite(f)) return false;
  return true;
}

}  // namespace sf::lod
