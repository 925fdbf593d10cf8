// A splat PLY read in pieces (lod/ply_stream.h).
#include "lod/ply_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "io/byte_reader.h"
#include "io/ply.h"
#include "io/ply_parser.h"

namespace sf::lod {

namespace {

// How a stored value becomes a row float.
enum class Convert : uint8_t { kCopy, kExp, kSigmoid };
constexpr uint32_t kNoSlot = 0xFFFFFFFFu;  // a binding read but not stored in the row (filter_3D)

bool parseIndexed(const std::string& name, const char* prefix, int* index) {
  const size_t n = std::strlen(prefix);
  if (name.size() <= n || name.compare(0, n, prefix) != 0 || name.size() > n + 6) return false;
  int v = 0;
  for (size_t i = n; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    v = v * 10 + (name[i] - '0');
  }
  *index = v;
  return true;
}

template <typename T>
double load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<double>(v);
}

// A stored scalar as double (exact for every PLY type), as the io library's parser reads it.
double loadScalar(const uint8_t* p, ScalarType t) {
  switch (t) {
    case ScalarType::kInt8: return load<int8_t>(p);
    case ScalarType::kUint8: return load<uint8_t>(p);
    case ScalarType::kInt16: return load<int16_t>(p);
    case ScalarType::kUint16: return load<uint16_t>(p);
    case ScalarType::kInt32: return load<int32_t>(p);
    case ScalarType::kUint32: return load<uint32_t>(p);
    case ScalarType::kFloat32: return load<float>(p);
    case ScalarType::kFloat64: return load<double>(p);
  }
  return 0;
}

}  // namespace

struct PlySplatStream::Binding {
  uint32_t offset = 0;  // byte in the row
  ScalarType type = ScalarType::kFloat32;
  uint32_t slot = 0;  // float of the block row
  Convert convert = Convert::kCopy;
};

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
               "not a PLY file (lod build reads binary little-endian INRIA splat PLY; convert other formats "
               "first)");
    const ply::Header h = ply::parseHeader(r);
    if (h.encoding != ply::Encoding::kBinaryLittleEndian)
      r.failAt(
          0,
          std::string(h.encoding == ply::Encoding::kAscii ? "an ASCII" : "a big-endian") +
              " PLY: lod build reads binary little-endian PLY (splatforge convert IN -o OUT.ply writes one)");
    const int vi = h.find("vertex");
    if (vi < 0) r.failAt(0, "PLY has no 'vertex' element");
    uint64_t offset = h.data_offset;
    for (int e = 0; e < vi; ++e) {
      const ply::Element& before = h.elements[static_cast<size_t>(e)];
      if (before.hasLists())
        r.failAt(0, "element '" + before.name + "' before the vertices has list properties");
      offset += before.count * before.rowBytes();
    }
    const ply::Element& v = h.elements[static_cast<size_t>(vi)];
    if (v.hasLists()) r.failAt(0, "vertex element has list properties");
    int rest = 0, max_rest = -1, pos = 0, scale = 0, rot = 0, dc = 0;
    bool opacity = false;
    uint32_t at = 0;
    std::vector<std::pair<int, Binding>>
        rest_bindings;  // f_rest index, binding (slot set once the degree is known)
    for (const ply::Property& p : v.properties) {
      Binding b{at, p.type, 0, Convert::kCopy};
      at += static_cast<uint32_t>(ply::scalarSize(p.type));
      int idx = 0;
      const std::string& n = p.name;
      if (n == "x" || n == "y" || n == "z") {
        b.slot = static_cast<uint32_t>(n[0] - 'x'), ++pos;
      } else if (parseIndexed(n, "scale_", &idx) && idx < 3) {
        b.slot = 3 + static_cast<uint32_t>(idx), b.convert = Convert::kExp, ++scale;
      } else if (parseIndexed(n, "rot_", &idx) && idx < 4) {
        b.slot = 6 + static_cast<uint32_t>(idx), ++rot;
      } else if (n == "opacity") {
        b.slot = 10, b.convert = Convert::kSigmoid, opacity = true;
      } else if (parseIndexed(n, "f_dc_", &idx) && idx < 3) {
        b.slot = kSplatFixedFloats + static_cast<uint32_t>(idx), ++dc;
      } else if (n == "filter_3D") {
        filter_3d_ = static_cast<int>(bindings_.size());  // read, then baked into the row (no slot of its own)
        b.slot = kNoSlot;
      } else if (parseIndexed(n, "f_rest_", &idx)) {
        rest_bindings.push_back({idx, b}), ++rest, max_rest = std::max(max_rest, idx);
        continue;
      } else {
        continue;  // normals, ids and other channels: not part of the hierarchy
      }
      bindings_.push_back(b);
    }
    auto missing = [&](const char* what) {
      r.failAt(0, std::string("vertex element lacks ") + what + " (INRIA 3DGS layout expected)");
    };
    if (pos != 3) missing("x, y, z");
    if (scale != 3) missing("scale_0..scale_2");
    if (rot != 4) missing("rot_0..rot_3");
    if (!opacity) missing("opacity");
    if (dc != 3) missing("f_dc_0..f_dc_2");
    switch (rest) {
      case 0:
        sh_degree_ = 0;
        break;
      case 9:
        sh_degree_ = 1;
        break;
      case 24:
        sh_degree_ = 2;
        break;
      case 45:
        sh_degree_ = 3;
        break;
      default:
        sh_degree_ = -1;
    }
    if (sh_degree_ < 0 || max_rest != rest - 1)
      r.failAt(0, "f_rest properties: found " + std::to_string(rest) +
                      "; expected f_rest_0..f_rest_N-1 with N in {0, 9, 24, 45}");
    const int per_channel = shCoeffCount(sh_degree_) - 1;
    for (auto [idx, b] : rest_bindings) {
      // f_rest is channel-major: index = channel * coefficients_per_channel + (coefficient - 1).
      const int channel = idx / per_channel, coeff = idx % per_channel + 1;
      b.slot = static_cast<uint32_t>(kSplatFixedFloats + static_cast<size_t>(coeff * 3 + channel));
      bindings_.push_back(b);
    }
    stride_ = kSplatFixedFloats + static_cast<size_t>(shCoeffCount(sh_degree_) * 3);
    GaussianCloud flags;
    applyPlyAntialiasComments(h.comments, flags);
    antialiased_ = flags.antialiased || filter_3d_ >= 0;
    screen_filter_ = filter_3d_ >= 0 ? kScreenFilterMip : flags.screen_filter;
    count_ = v.count;
    row_bytes_ = v.rowBytes();
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
    const uint8_t* src = raw_.data() + i * row_bytes_;
    float* dst = out.data() + i * stride_;
    float filter = 0;
    for (const Binding& b : bindings_) {
      // As readPly: the stored value (through double, exact for every PLY type) to float, then activated.
      const float f = static_cast<float>(loadScalar(src + b.offset, b.type));
      if (b.slot == kNoSlot) {
        filter = f;
        continue;
      }
      dst[b.slot] = b.convert == Convert::kCopy ? f : (b.convert == Convert::kExp ? std::exp(f) : sigmoid(f));
    }
    const Quat q = normalize(Quat{dst[6], dst[7], dst[8], dst[9]});
    dst[6] = q.w, dst[7] = q.x, dst[8] = q.y, dst[9] = q.z;
    if (filter_3d_ >= 0) {
      Vec3 s{dst[3], dst[4], dst[5]};
      bakeSmoothingFilter(s, dst[10], filter);
      dst[3] = s.x, dst[4] = s.y, dst[5] = s.z;
    }
  }
  next_row_ += rows;
  return rows;
}

bool rowFinite(std::span<const float> row) {
  for (float f : row)
    if (!std::isfinite(f)) return false;
  return true;
}

}  // namespace sf::lod
