// SPZ reader and writer (v2-v4), from the published layout (docs/formats/spz.md).
#include "io/spz.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "core/limits.h"
#include "core/sh.h"
#include "io/byte_reader.h"
#include "io/byte_writer.h"
#include "io/gzip.h"

namespace sf {

namespace {

constexpr uint32_t kMagic = 0x5053474e;  // "NGSP" little-endian
constexpr float kColorScale = 0.15f;
constexpr size_t kLegacyHeaderBytes = 16;
constexpr size_t kV4HeaderBytes = 32;
constexpr uint8_t kFlagAntialiased = 0x01;
constexpr uint8_t kFlagExtensions = 0x02;
constexpr uint32_t kCoordinateSystemRecord = 0xADBE0003;
constexpr uint64_t kMaxPoints = 1ull << 28;  // 268M splats: far beyond any capture, bounds allocations

std::string hex32(uint32_t v) {
  char text[9];
  std::snprintf(text, sizeof text, "%08X", v);
  return text;
}

size_t shRestPerChannel(int degree) {
  return static_cast<size_t>(shCoeffCount(degree) - 1);
}

struct SpzHeader {
  uint32_t version = 0, points = 0;
  int sh_degree = 0, fractional_bits = 0;
  uint8_t flags = 0;
};

std::array<size_t, 6> arraySizes(const SpzHeader& h) {
  size_t n = h.points;
  return {n * 9, n, n * 3, n * 3, n * (h.version >= 3 ? 4u : 3u), n * 3 * shRestPerChannel(h.sh_degree)};
}

// Bytes of the attribute arrays the header declares (the body after the header).
uint64_t arrayBytes(const SpzHeader& h) {
  uint64_t total = 0;
  for (size_t bytes : arraySizes(h)) total += bytes;
  return total;
}

// Extension records may follow the arrays of a legacy body; this much is allowed past them.
constexpr uint64_t kExtensionSlack = 1u << 20;

// Inflates a legacy (gzip-wrapped) body. Once its 16-byte header is out, the declared point count and SH
// degree fix the body's size: the load budget is checked for it before inflating further, and inflating
// past it (plus room for extension records) stops, so a gzip bomb cannot exhaust memory.
// The gzip member header's comment (its first 255 bytes) goes to `comment`.
std::vector<uint8_t> gunzip(std::span<const uint8_t> in, const std::string& path, std::string& comment) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw FormatError(path, 0, "gzip: cannot initialise zlib");
  std::array<char, 256> comment_buffer{};
  gz_header header{};
  header.comment = reinterpret_cast<Bytef*>(comment_buffer.data());
  header.comm_max = static_cast<uInt>(comment_buffer.size() - 1);  // the last byte stays zero
  inflateGetHeader(&zs, &header);
  std::vector<uint8_t> out;
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  int ret = Z_OK;
  uint64_t expected = 0;  // known once the header is out
  // Once the header is out: check the budget for the body it declares, and bound inflating by that body.
  auto declareBody = [&] {
    if (out.size() < kLegacyHeaderBytes || expected != 0) return;
    SpzHeader h;
    std::memcpy(&h.version, out.data() + 4, 4);
    std::memcpy(&h.points, out.data() + 8, 4);
    h.sh_degree = std::min<int>(out[12], 3);  // checkHeader refuses larger degrees after inflating
    const uint64_t body = kLegacyHeaderBytes + arrayBytes(h);
    try {
      checkGaussianBudget(path, h.points, h.sh_degree, body);
    } catch (...) {
      inflateEnd(&zs);
      throw;
    }
    expected = body + kExtensionSlack;
  };
  while (ret != Z_STREAM_END) {
    size_t old = out.size();
    out.resize(old + 65536);
    zs.next_out = out.data() + old;
    zs.avail_out = 65536;
    ret = inflate(&zs, Z_NO_FLUSH);
    out.resize(old + 65536 - zs.avail_out);
    declareBody();
    if (ret == Z_STREAM_END) break;
    if (ret != Z_OK) {
      uint64_t at = zs.total_in;
      const char* msg = zs.msg ? zs.msg : "corrupt data";
      inflateEnd(&zs);
      if (ret == Z_BUF_ERROR) throw FormatError(path, at, "truncated: gzip stream ends early");
      throw FormatError(path, at, std::string("gzip: ") + msg);
    }
    if (expected != 0 && out.size() > expected) {
      inflateEnd(&zs);
      throw FormatError(path, zs.total_in,
                        "gzip stream inflates past the size its SPZ header declares (" +
                            std::to_string(expected - kExtensionSlack) + " bytes)");
    }
  }
  inflateEnd(&zs);
  comment = header.done == 1 ? std::string(comment_buffer.data()) : std::string();
  return out;
}

// Versions 2-3 declare their axes in the gzip header's comment (they have no room for a record that their
// readers would accept): this text followed by the system's three letters.
constexpr std::string_view kGzipAxesComment = "SPZ coordinate system: ";

// The axis system a gzip comment declares, kUnspecified for any other comment.
AxisSystem gzipCommentAxes(const std::string& comment) {
  if (!comment.starts_with(kGzipAxesComment)) return AxisSystem::kUnspecified;
  const std::string name = comment.substr(kGzipAxesComment.size());
  for (uint32_t v = 1; v <= static_cast<uint32_t>(AxisSystem::kRFU); ++v)
    if (name == axisSystemName(static_cast<AxisSystem>(v))) return static_cast<AxisSystem>(v);
  return AxisSystem::kUnspecified;
}

// The planar attribute arrays of an SPZ body, each a view into decoded bytes.
struct SpzArrays {
  std::span<const uint8_t> positions, alphas, colors, scales, rotations, sh;
};

void checkHeader(const SpzHeader& h, const ByteReader& r) {
  if (h.version < 2 || h.version > 4)
    r.failAt(4, "unsupported SPZ version " + std::to_string(h.version) + " (supported: 2, 3, 4)");
  if (h.sh_degree > 3) r.failAt(12, "SH degree " + std::to_string(h.sh_degree) + " not supported (0..3)");
  if (h.fractional_bits > 24)
    r.failAt(13, "fractional bits " + std::to_string(h.fractional_bits) + " out of range 0..24");
  if (h.points > kMaxPoints) r.failAt(8, "point count " + std::to_string(h.points) + " is implausibly large");
}

GaussianCloud decodeArrays(const SpzHeader& h, const SpzArrays& a) {
  const size_t n = h.points;
  GaussianCloud cloud;
  cloud.resize(n, h.sh_degree);
  cloud.antialiased = (h.flags & kFlagAntialiased) != 0;
  const float pos_scale = 1.0f / static_cast<float>(1u << h.fractional_bits);
  const size_t rest = shRestPerChannel(h.sh_degree);
  for (size_t i = 0; i < n; ++i) {
    float p[3];
    for (size_t k = 0; k < 3; ++k) {
      const uint8_t* b = a.positions.data() + i * 9 + k * 3;
      int32_t v = static_cast<int32_t>(b[0] | (b[1] << 8) | (b[2] << 16));
      if (v & 0x800000) v -= 0x1000000;
      p[k] = static_cast<float>(v) * pos_scale;
    }
    cloud.positions[i] = {p[0], p[1], p[2]};
    cloud.opacities[i] = static_cast<float>(a.alphas[i]) / 255.0f;
    float* sh = cloud.sh.data() + i * static_cast<size_t>(cloud.shStride());
    for (size_t k = 0; k < 3; ++k)
      sh[k] = (static_cast<float>(a.colors[i * 3 + k]) / 255.0f - 0.5f) / kColorScale;
    for (size_t k = 0; k < 3; ++k)
      cloud.scales[i][static_cast<int>(k)] =
          std::exp(static_cast<float>(a.scales[i * 3 + k]) / 16.0f - 10.0f);
    float q[4];  // x, y, z, w
    if (h.version == 2) {
      for (size_t k = 0; k < 3; ++k) q[k] = static_cast<float>(a.rotations[i * 3 + k]) / 127.5f - 1.0f;
      q[3] = std::sqrt(std::max(0.0f, 1.0f - q[0] * q[0] - q[1] * q[1] - q[2] * q[2]));
    } else {
      uint32_t c;
      std::memcpy(&c, a.rotations.data() + i * 4, 4);
      uint32_t largest = c >> 30;
      float sum = 0;
      int shift = 20;
      for (uint32_t k = 0; k < 4; ++k) {
        if (k == largest) continue;
        uint32_t field = (c >> shift) & 0x3ffu;
        shift -= 10;
        float v = static_cast<float>(field & 0x1ffu) / 511.0f * 0.70710678118654752f;
        q[k] = (field & 0x200u) ? -v : v;
        sum += q[k] * q[k];
      }
      q[largest] = std::sqrt(std::max(0.0f, 1.0f - sum));
    }
    cloud.rotations[i] = normalize(Quat{q[3], q[0], q[1], q[2]});
    for (size_t k = 0; k < rest; ++k)
      for (size_t c = 0; c < 3; ++c) {
        sh[(k + 1) * 3 + c] = (static_cast<float>(a.sh[i * 3 * rest + k * 3 + c]) - 128.0f) / 128.0f;
      }
  }
  return cloud;
}

// Reads extension records (u32 type, u32 byte length, payload) filling the reader's remaining bytes, and
// notes the coordinate-system record in `info`. Unknown types are skipped by length.
void readExtensionRecords(ByteReader& r, SpzInfo& info) {
  while (r.remaining() > 0) {
    const size_t at = r.offset();
    const uint32_t type = r.readLE<uint32_t>("extension record type");
    const uint32_t length = r.readLE<uint32_t>("extension record length");
    if (length > r.remaining())
      r.failAt(at + 4, "extension record 0x" + hex32(type) + " declares " + std::to_string(length) +
                           " bytes, " + std::to_string(r.remaining()) + " remain");
    if (type != kCoordinateSystemRecord) {
      r.skip(length, "extension record payload");
      continue;
    }
    if (length != 4)
      r.failAt(at + 4,
               "coordinate-system record (0xADBE0003) must hold 4 bytes, holds " + std::to_string(length));
    if (info.has_record) r.failAt(at, "a second coordinate-system record (0xADBE0003)");
    const uint32_t value = r.readLE<uint32_t>("coordinate system");
    if (value > static_cast<uint32_t>(AxisSystem::kRFU))
      r.failAt(at + 8,
               "coordinate-system record names unknown axes " + std::to_string(value) + " (known: 0-16)");
    info.has_record = true;
    info.record = static_cast<AxisSystem>(value);
  }
}

// The axes the data is stored in, by the reading policy.
AxisSystem storedAxes(const SpzInfo& info, SpzAxes policy) {
  switch (policy) {
    case SpzAxes::kRaw:
      return AxisSystem::kRDF;
    case SpzAxes::kRub:
      return AxisSystem::kRUB;
    case SpzAxes::kAuto:
      break;
  }
  if (info.has_record && info.record != AxisSystem::kUnspecified) return info.record;
  return info.gzip_comment != AxisSystem::kUnspecified ? info.gzip_comment : AxisSystem::kRUB;
}

GaussianCloud finish(GaussianCloud cloud, SpzInfo& info, const SpzOptions& options) {
  info.stored = storedAxes(info, options.axes);
  if (info.stored != AxisSystem::kRDF) changeAxes(cloud, axesToRdf(info.stored));
  return cloud;
}

GaussianCloud readLegacy(std::span<const uint8_t> file, const std::string& path, SpzInfo& info,
                         const SpzOptions& options) {
  std::string comment;
  std::vector<uint8_t> body = gunzip(file, path, comment);
  info.gzip_comment = gzipCommentAxes(comment);
  // Offsets below are within the decompressed stream.
  const std::string where = path + " (decompressed)";
  ByteReader r(body, where);
  SpzHeader h;
  if (r.readLE<uint32_t>("magic") != kMagic) r.failAt(0, "not SPZ: decompressed stream lacks the NGSP magic");
  h.version = r.readLE<uint32_t>("version");
  h.points = r.readLE<uint32_t>("point count");
  h.sh_degree = r.readLE<uint8_t>("SH degree");
  h.fractional_bits = r.readLE<uint8_t>("fractional bits");
  h.flags = r.readLE<uint8_t>("flags");
  r.readLE<uint8_t>("reserved");
  checkHeader(h, r);
  if (h.version == 4) r.failAt(4, "version 4 SPZ must not be gzip-wrapped");
  auto sizes = arraySizes(h);
  SpzArrays a;
  a.positions = r.bytes(sizes[0], "positions");
  a.alphas = r.bytes(sizes[1], "alphas");
  a.colors = r.bytes(sizes[2], "colours");
  a.scales = r.bytes(sizes[3], "scales");
  a.rotations = r.bytes(sizes[4], "rotations");
  a.sh = r.bytes(sizes[5], "spherical harmonics");
  // Extension records follow the arrays when flag 0x02 is set; other trailing bytes are left alone (an
  // earlier revision of the layout put records elsewhere; files with such bytes still read).
  if (h.flags & kFlagExtensions) readExtensionRecords(r, info);
  info.version = static_cast<int>(h.version);
  return finish(decodeArrays(h, a), info, options);
}

GaussianCloud readV4(std::span<const uint8_t> file, const std::string& path, SpzInfo& info,
                     const SpzOptions& options) {
  ByteReader r(file, path);
  SpzHeader h;
  r.readLE<uint32_t>("magic");
  h.version = r.readLE<uint32_t>("version");
  if (h.version != 4)
    r.failAt(4,
             "unsupported SPZ version " + std::to_string(h.version) + " in an NGSP container (expected 4)");
  h.points = r.readLE<uint32_t>("point count");
  h.sh_degree = r.readLE<uint8_t>("SH degree");
  h.fractional_bits = r.readLE<uint8_t>("fractional bits");
  h.flags = r.readLE<uint8_t>("flags");
  const uint8_t streams = r.readLE<uint8_t>("stream count");
  const uint32_t toc = r.readLE<uint32_t>("table of contents offset");
  r.skip(12, "reserved header bytes");
  checkHeader(h, r);
  auto sizes = arraySizes(h);
  checkGaussianBudget(path, h.points, h.sh_degree, arrayBytes(h));
  std::vector<int> present;  // attributes with a stream, in order
  for (int k = 0; k < 6; ++k)
    if (sizes[static_cast<size_t>(k)] != 0) present.push_back(k);
  if (streams != present.size())
    r.failAt(15, "stream count " + std::to_string(streams) + ", expected " + std::to_string(present.size()) +
                     " for these attributes");
  if (toc < kV4HeaderBytes)
    r.failAt(16, "table of contents offset " + std::to_string(toc) + " lies inside the header");
  if (toc > file.size())
    r.failAt(16, "table of contents offset " + std::to_string(toc) + " lies past the end of the file");
  if (h.flags & kFlagExtensions) {
    ByteReader records(file.first(toc), path);
    records.seek(kV4HeaderBytes, "extension records");
    readExtensionRecords(records, info);
  }
  r.seek(toc, "table of contents");
  std::vector<uint64_t> comp(streams), raw(streams);
  for (size_t s = 0; s < streams; ++s) {
    comp[s] = r.readLE<uint64_t>("stream compressed size");
    size_t raw_at = r.offset();
    raw[s] = r.readLE<uint64_t>("stream uncompressed size");
    if (raw[s] != sizes[static_cast<size_t>(present[s])])
      r.failAt(raw_at, "stream " + std::to_string(s) + " uncompressed size " + std::to_string(raw[s]) +
                           ", expected " + std::to_string(sizes[static_cast<size_t>(present[s])]));
  }
  std::vector<std::vector<uint8_t>> decoded(6);
  for (size_t s = 0; s < streams; ++s) {
    size_t at = r.offset();
    auto frame = r.bytes(comp[s], "zstd stream");
    unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
    if (content == ZSTD_CONTENTSIZE_ERROR)
      r.failAt(at, "stream " + std::to_string(s) + " is not a zstd frame");
    if (content == ZSTD_CONTENTSIZE_UNKNOWN)
      r.failAt(at, "stream " + std::to_string(s) + ": zstd frame does not declare its size");
    if (content != raw[s])
      r.failAt(at, "stream " + std::to_string(s) + " frame declares " + std::to_string(content) +
                       " bytes, table says " + std::to_string(raw[s]));
    std::vector<uint8_t>& out = decoded[static_cast<size_t>(present[s])];
    out.resize(static_cast<size_t>(raw[s]));
    size_t got = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
    if (ZSTD_isError(got)) r.failAt(at, "stream " + std::to_string(s) + ": zstd: " + ZSTD_getErrorName(got));
    if (got != raw[s])
      r.failAt(at, "stream " + std::to_string(s) + " decompressed to " + std::to_string(got) +
                       " bytes, expected " + std::to_string(raw[s]));
  }
  if (r.remaining() != 0) r.fail(std::to_string(r.remaining()) + " unexpected bytes after the last stream");
  SpzArrays a{decoded[0], decoded[1], decoded[2], decoded[3], decoded[4], decoded[5]};
  info.version = 4;
  return finish(decodeArrays(h, a), info, options);
}

uint8_t toByte(float v) {
  return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 255.0f)));
}

}  // namespace

bool looksLikeSpz(std::span<const uint8_t> bytes) {
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return true;
  if (bytes.size() >= 4) {
    uint32_t m;
    std::memcpy(&m, bytes.data(), 4);
    return m == kMagic;
  }
  return false;
}

GaussianCloud readSpz(std::span<const uint8_t> bytes, const std::string& path, SpzInfo* info,
                      const SpzOptions& options) {
  if (!looksLikeSpz(bytes)) throw FormatError(path, 0, "not SPZ: expected the NGSP magic or a gzip stream");
  SpzInfo local;
  SpzInfo& out = info ? *info : local;
  out = SpzInfo{};
  if (bytes[0] == 0x1f) return readLegacy(bytes, path, out, options);
  return readV4(bytes, path, out, options);
}

namespace {

// The six planar arrays of a cloud, quantised as `version` stores them (positions with `fractional_bits`).
std::array<std::vector<uint8_t>, 6> encodeArrays(const GaussianCloud& cloud, int version,
                                                 int fractional_bits) {
  const size_t n = cloud.size();
  const size_t rest = shRestPerChannel(cloud.sh_degree);
  std::array<std::vector<uint8_t>, 6> out;
  out[0].resize(n * 9);
  out[1].resize(n);
  out[2].resize(n * 3);
  out[3].resize(n * 3);
  out[4].resize(n * (version >= 3 ? 4 : 3));
  out[5].resize(n * 3 * rest);
  const float pos_scale = static_cast<float>(1u << fractional_bits);
  for (size_t i = 0; i < n; ++i) {
    const Vec3 p = cloud.positions[i];
    for (int k = 0; k < 3; ++k) {
      int32_t v = static_cast<int32_t>(std::lround(std::clamp(p[k] * pos_scale, -8388608.0f, 8388607.0f)));
      uint32_t u = static_cast<uint32_t>(v) & 0xffffffu;
      for (int b = 0; b < 3; ++b)
        out[0][i * 9 + static_cast<size_t>(k) * 3 + static_cast<size_t>(b)] =
            static_cast<uint8_t>((u >> (8 * b)) & 0xffu);
    }
    out[1][i] = toByte(cloud.opacities[i] * 255.0f);
    auto sh = cloud.shOf(i);
    for (size_t k = 0; k < 3; ++k) out[2][i * 3 + k] = toByte((sh[k] * kColorScale + 0.5f) * 255.0f);
    for (int k = 0; k < 3; ++k)
      out[3][i * 3 + static_cast<size_t>(k)] =
          toByte((std::log(std::max(cloud.scales[i][k], kMinStoredScale)) + 10.0f) * 16.0f);
    const Quat q = normalize(cloud.rotations[i]);
    const float xyzw[4] = {q.x, q.y, q.z, q.w};
    if (version == 2) {  // first three, w >= 0
      const float sign = q.w < 0 ? -1.0f : 1.0f;
      for (size_t k = 0; k < 3; ++k) out[4][i * 3 + k] = toByte(xyzw[k] * sign * 127.5f + 127.5f);
    } else {  // smallest three
      uint32_t largest = 0;
      for (uint32_t k = 1; k < 4; ++k)
        if (std::abs(xyzw[k]) > std::abs(xyzw[largest])) largest = k;
      const float negate = xyzw[largest] < 0 ? -1.0f : 1.0f;
      uint32_t packed = largest << 30;
      int shift = 20;
      for (uint32_t k = 0; k < 4; ++k) {
        if (k == largest) continue;
        float v = xyzw[k] * negate;
        uint32_t mag =
            static_cast<uint32_t>(std::min(511L, std::lround(std::abs(v) / 0.70710678118654752f * 511.0f)));
        packed |= ((v < 0 ? 0x200u : 0u) | mag) << shift;
        shift -= 10;
      }
      std::memcpy(out[4].data() + i * 4, &packed, 4);
    }
    for (size_t k = 0; k < rest; ++k)
      for (size_t c = 0; c < 3; ++c)
        out[5][i * 3 * rest + k * 3 + c] = toByte(sh[(k + 1) * 3 + c] * 128.0f + 128.0f);
  }
  return out;
}

}  // namespace

std::vector<uint8_t> writeSpz(const GaussianCloud& cloud, const SpzOptions& options) {
  const int version = options.version;
  if (version < 2 || version > 4)
    throw Error("SPZ version " + std::to_string(version) + " cannot be written (2, 3 or 4)");
  // The axes the file stores, and whether a record declares them. Records go into version 4 files only: there
  // they sit in the header zone every version-4 reader skips, while readers of versions 2-3 (spz-js, older
  // libraries) refuse bytes after the SH array. So auto stores version 2-3 files in RUB, the format's default
  // that needs no record.
  const bool legacy = version < 4;
  const AxisSystem stored = options.axes == SpzAxes::kRub || (options.axes == SpzAxes::kAuto && legacy)
                                ? AxisSystem::kRUB
                                : AxisSystem::kRDF;
  const bool record = !legacy && options.axes != SpzAxes::kRaw;
  GaussianCloud converted;
  const GaussianCloud* source = &cloud;
  if (stored != AxisSystem::kRDF) {
    converted = cloud;
    changeAxes(converted, transpose(axesToRdf(stored)));
    source = &converted;
  }
  float max_abs = 0;
  for (const Vec3& p : source->positions)
    max_abs = std::max({max_abs, std::abs(p.x), std::abs(p.y), std::abs(p.z)});
  int fractional_bits = 12;
  while (fractional_bits > 0 && max_abs * static_cast<float>(1u << fractional_bits) >= 8388607.0f)
    --fractional_bits;
  const std::array<std::vector<uint8_t>, 6> arrays = encodeArrays(*source, version, fractional_bits);

  std::vector<uint8_t> records;
  if (record) {
    putLE(records, kCoordinateSystemRecord);
    putLE(records, uint32_t{4});
    putLE(records, static_cast<uint32_t>(stored));
  }
  const uint8_t flags =
      static_cast<uint8_t>((cloud.antialiased ? kFlagAntialiased : 0) | (record ? kFlagExtensions : 0));
  const auto n = static_cast<uint32_t>(cloud.size());
  std::vector<uint8_t> out;
  if (version < 4) {
    putLE(out, kMagic);
    putLE(out, static_cast<uint32_t>(version));
    putLE(out, n);
    for (uint8_t b :
         {static_cast<uint8_t>(cloud.sh_degree), static_cast<uint8_t>(fractional_bits), flags, uint8_t{0}})
      out.push_back(b);
    for (const auto& a : arrays) out.insert(out.end(), a.begin(), a.end());
    return gzipBytes(out, 6, std::string(kGzipAxesComment) + axisSystemName(stored));
  }
  std::vector<std::vector<uint8_t>> frames;
  for (const auto& a : arrays) {
    if (a.empty()) continue;  // zero-length arrays (SH at degree 0) have no stream
    std::vector<uint8_t> frame(ZSTD_compressBound(a.size()));
    const size_t size = ZSTD_compress(frame.data(), frame.size(), a.data(), a.size(), 12);
    if (ZSTD_isError(size)) throw Error(std::string("SPZ: zstd: ") + ZSTD_getErrorName(size));
    frame.resize(size);
    frames.push_back(std::move(frame));
  }
  putLE(out, kMagic);
  putLE(out, uint32_t{4});
  putLE(out, n);
  for (uint8_t b : {static_cast<uint8_t>(cloud.sh_degree), static_cast<uint8_t>(fractional_bits), flags,
                    static_cast<uint8_t>(frames.size())})
    out.push_back(b);
  putLE(out, static_cast<uint32_t>(kV4HeaderBytes + records.size()));  // table of contents offset
  out.resize(kV4HeaderBytes, 0);
  out.insert(out.end(), records.begin(), records.end());
  size_t k = 0;
  for (const auto& a : arrays) {
    if (a.empty()) continue;
    putLE(out, static_cast<uint64_t>(frames[k++].size()));
    putLE(out, static_cast<uint64_t>(a.size()));
  }
  for (const auto& frame : frames) out.insert(out.end(), frame.begin(), frame.end());
  return out;
}

const char* axisSystemName(AxisSystem axes) {
  static const char* const names[] = {"unspecified", "LDB", "RDB", "LUB", "RUB", "LDF", "RDF", "LUF", "RUF",
                                      "LBD",         "RBD", "LBU", "RBU", "LFD", "RFD", "LFU", "RFU"};
  const auto i = static_cast<uint32_t>(axes);
  return i <= 16 ? names[i] : "?";
}

Mat3 axesToRdf(AxisSystem axes) {
  if (axes == AxisSystem::kUnspecified) axes = AxisSystem::kRUB;
  const std::string name = axisSystemName(axes);
  Mat3 m = Mat3::diagonal({0, 0, 0});
  if (static_cast<uint32_t>(axes) >= static_cast<uint32_t>(AxisSystem::kLBD)) {
    // The "rotated" family, as the reference library converts it (checked against it value by value in
    // interop_test.cpp): x by the first letter; stored y along z, forward for U and back for D; stored z
    // along y, down for F and up for B.
    m.m[0][0] = name[0] == 'R' ? 1.0f : -1.0f;
    m.m[2][1] = name[2] == 'U' ? 1.0f : -1.0f;
    m.m[1][2] = name[1] == 'F' ? 1.0f : -1.0f;
    return m;
  }
  for (int k = 0; k < 3; ++k) {  // column k: the RDF direction of stored axis k
    switch (name[static_cast<size_t>(k)]) {
      case 'R':
        m.m[0][k] = 1;
        break;
      case 'L':
        m.m[0][k] = -1;
        break;
      case 'D':
        m.m[1][k] = 1;
        break;
      case 'U':
        m.m[1][k] = -1;
        break;
      case 'F':
        m.m[2][k] = 1;
        break;
      case 'B':
        m.m[2][k] = -1;
        break;
      default:
        throw Error("unknown axis system");
    }
  }
  return m;
}

const char* spzAxesName(SpzAxes axes) {
  switch (axes) {
    case SpzAxes::kAuto:
      return "auto";
    case SpzAxes::kRub:
      return "rub";
    case SpzAxes::kRaw:
      return "raw";
  }
  return "?";
}

SpzAxes parseSpzAxes(const std::string& text) {
  if (text == "auto") return SpzAxes::kAuto;
  if (text == "rub") return SpzAxes::kRub;
  if (text == "raw") return SpzAxes::kRaw;
  throw Error("SPZ axes '" + text + "': expected auto, rub or raw");
}

}  // namespace sf
