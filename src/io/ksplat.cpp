// .ksplat reading: the layout GaussianSplats3D's SplatBuffer writes (docs/formats/ksplat.md).
#include "io/ksplat.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/limits.h"
#include "io/byte_reader.h"

namespace sf {

namespace {

constexpr size_t kHeaderBytes = 4096;
constexpr size_t kSectionHeaderBytes = 1024;
constexpr size_t kBucketBytes = 12;  // a bucket centre: three float32
constexpr uint32_t kDefaultScaleRange = 32767;
constexpr float kDefaultShMin = -1.5f,
                kDefaultShMax = 1.5f;  // the viewer's 8-bit SH range when none is stored
constexpr int kShComponents[4] = {0, 9, 24, 45};

// Bytes of each part of a record per compression level.
struct Level {
  size_t center, scale, rotation, color, sh;  // sh: per component
};
constexpr Level kLevels[3] = {{12, 12, 16, 4, 4}, {6, 6, 8, 4, 2}, {6, 6, 8, 4, 1}};

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Record SH component i -> (SH coefficient, colour channel). Each band is stored channel by channel: band 1
// as R of coefficients 1-3, then G, then B; band 2 likewise for coefficients 4-8; band 3 for 9-15.
void shTarget(int i, int& coeff, int& channel) {
  if (i < 9) {
    channel = i / 3, coeff = 1 + i % 3;
  } else if (i < 24) {
    channel = (i - 9) / 5, coeff = 4 + (i - 9) % 5;
  } else {
    channel = (i - 24) / 7, coeff = 9 + (i - 24) % 7;
  }
}

struct Section {
  uint64_t header = 0;  // offset of its 1024-byte header
  uint32_t splats = 0, max_splats = 0, bucket_size = 0, bucket_count = 0, scale_range = 0;
  uint32_t full_buckets = 0, partial_buckets = 0;
  float block_size = 0;
  int sh_degree = 0;
  uint64_t base = 0;     // partially filled bucket lengths (u32 each), then bucket centres
  uint64_t centres = 0;  // bucket centres
  uint64_t records = 0;  // splat records
  uint64_t record_bytes = 0;
};

// The file header's fields, checked.
struct Header {
  uint32_t section_count = 0, splat_count = 0;
  uint16_t level_index = 0;
  const Level* level = nullptr;
  float sh_min = 0, sh_max = 0;  // the 8-bit SH range (level 2)
  uint64_t headers_end = 0;      // the end of the section headers
};

// Reads and checks the 4096-byte file header.
Header readHeader(const ByteReader& r, std::span<const uint8_t> bytes) {
  r.need(kHeaderBytes, "ksplat header");
  const uint8_t* h = bytes.data();
  const int major = h[0], minor = h[1];
  if (major != 0 || minor != 1)
    r.failAt(0, "unsupported ksplat version " + std::to_string(major) + "." + std::to_string(minor) +
                    " (known: 0.1)");
  Header hdr;
  hdr.section_count = load<uint32_t>(h + 4);
  hdr.splat_count = load<uint32_t>(h + 16);
  hdr.level_index = load<uint16_t>(h + 20);
  if (hdr.level_index > 2)
    r.failAt(20, "unknown compression level " + std::to_string(hdr.level_index) + " (known: 0, 1, 2)");
  hdr.level = &kLevels[hdr.level_index];
  // A stored range of 0 (or NaN) means the default, as the viewer reads it.
  float sh_min = load<float>(h + 36), sh_max = load<float>(h + 40);
  if (!(sh_min != 0)) sh_min = kDefaultShMin;
  if (!(sh_max != 0)) sh_max = kDefaultShMax;
  if (!std::isfinite(sh_min) || !std::isfinite(sh_max))
    r.failAt(36,
             "8-bit SH range [" + std::to_string(sh_min) + ", " + std::to_string(sh_max) + "] is not finite");
  hdr.sh_min = sh_min;
  hdr.sh_max = sh_max;
  hdr.headers_end = kHeaderBytes + uint64_t{hdr.section_count} * kSectionHeaderBytes;
  if (hdr.headers_end > bytes.size())
    r.failAt(4, "truncated: " + std::to_string(hdr.section_count) + " section headers end at byte " +
                    std::to_string(hdr.headers_end) + ", past the end of the file (" +
                    std::to_string(bytes.size()) + " bytes)");
  return hdr;
}

// Section s's layout from its header, its data starting at `offset`, checked against the file.
Section readSection(const ByteReader& r, std::span<const uint8_t> bytes, const Header& hdr, uint32_t s,
                    uint64_t offset) {
  const Level& level = *hdr.level;
  Section sec;
  sec.header = kHeaderBytes + uint64_t{s} * kSectionHeaderBytes;
  const uint8_t* sh = bytes.data() + sec.header;
  const std::string name = "section " + std::to_string(s) + ": ";
  sec.splats = load<uint32_t>(sh + 0);
  sec.max_splats = load<uint32_t>(sh + 4);
  sec.bucket_size = load<uint32_t>(sh + 8);
  sec.bucket_count = load<uint32_t>(sh + 12);
  sec.block_size = load<float>(sh + 16);
  const uint16_t bucket_storage = load<uint16_t>(sh + 20);
  sec.scale_range = load<uint32_t>(sh + 24);
  sec.full_buckets = load<uint32_t>(sh + 32);
  sec.partial_buckets = load<uint32_t>(sh + 36);
  const uint16_t sh_degree = load<uint16_t>(sh + 40);
  if (sec.splats > sec.max_splats)
    r.failAt(sec.header, name + std::to_string(sec.splats) + " splats, more than its capacity of " +
                             std::to_string(sec.max_splats));
  if (sh_degree > 3)
    r.failAt(sec.header + 40, name + "SH degree " + std::to_string(sh_degree) + " (known: 0-3)");
  sec.sh_degree = sh_degree;
  if (sec.scale_range == 0) sec.scale_range = hdr.level_index == 0 ? 1 : kDefaultScaleRange;
  sec.record_bytes = level.center + level.scale + level.rotation + level.color +
                     static_cast<uint64_t>(kShComponents[sh_degree]) * level.sh;
  if (hdr.level_index > 0 && sec.splats > 0) {
    if (bucket_storage != kBucketBytes)
      r.failAt(sec.header + 20, name + "bucket record of " + std::to_string(bucket_storage) +
                                    " bytes (expected 12: a centre)");
    if (!(std::isfinite(sec.block_size) && sec.block_size > 0))
      r.failAt(sec.header + 16,
               name + "bucket block size " + std::to_string(sec.block_size) + " is not a positive number");
    if (uint64_t{sec.full_buckets} + sec.partial_buckets > sec.bucket_count)
      r.failAt(sec.header + 32, name + std::to_string(sec.full_buckets) + " full and " +
                                    std::to_string(sec.partial_buckets) +
                                    " partially filled buckets, more than its " +
                                    std::to_string(sec.bucket_count) + " buckets");
    if (sec.full_buckets > 0 && sec.bucket_size == 0)
      r.failAt(sec.header + 8, name + "full buckets of size 0");
  }
  sec.base = offset;
  sec.centres = sec.base + uint64_t{sec.partial_buckets} * 4;
  sec.records = sec.centres + uint64_t{bucket_storage} * sec.bucket_count;
  const uint64_t end = sec.records + sec.record_bytes * sec.max_splats;
  if (end > bytes.size())
    r.failAt(sec.header, "truncated: " + name + "its buckets and " + std::to_string(sec.max_splats) +
                             " records of " + std::to_string(sec.record_bytes) + " bytes span bytes " +
                             std::to_string(sec.base) + ".." + std::to_string(end) +
                             ", past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
  return sec;
}

// The scale, rotation, colour, opacity and SH coefficients of the record `rec` into gaussian `out`.
void decodeAttributes(const uint8_t* rec, const Header& hdr, int components, GaussianCloud& cloud,
                      size_t out) {
  const Level& level = *hdr.level;
  const uint16_t level_index = hdr.level_index;
  const size_t stride = static_cast<size_t>(cloud.shStride());
  const uint8_t* s8 = rec + level.center;
  const uint8_t* r8 = s8 + level.scale;
  auto component = [&](const uint8_t* base, int k) {
    return level_index == 0 ? load<float>(base + 4 * k) : halfToFloat(load<uint16_t>(base + 2 * k));
  };
  cloud.scales[out] = {component(s8, 0), component(s8, 1), component(s8, 2)};
  cloud.rotations[out] =
      normalize(Quat{component(r8, 0), component(r8, 1), component(r8, 2), component(r8, 3)});
  const uint8_t* rgba = r8 + level.rotation;
  float* coeffs = cloud.sh.data() + out * stride;
  for (int k = 0; k < 3; ++k) coeffs[k] = colorToShDc(static_cast<float>(rgba[k]) / 255.0f);
  cloud.opacities[out] = static_cast<float>(rgba[3]) / 255.0f;
  const uint8_t* shb = rgba + level.color;
  for (int k = 0; k < components; ++k) {
    float v;
    if (level_index == 0)
      v = load<float>(shb + 4 * k);
    else if (level_index == 1)
      v = halfToFloat(load<uint16_t>(shb + 2 * k));
    else
      v = hdr.sh_min + static_cast<float>(shb[k]) / 255.0f * (hdr.sh_max - hdr.sh_min);
    int coeff = 0, channel = 0;
    shTarget(k, coeff, channel);
    coeffs[coeff * 3 + channel] = v;
  }
}

// Section s's splats into the cloud from gaussian `out` on (advanced past them): positions as floats
// (level 0) or 16-bit offsets from their bucket's centre.
void decodeSection(const ByteReader& r, std::span<const uint8_t> bytes, const Header& hdr, const Section& sec,
                   uint32_t s, GaussianCloud& cloud, size_t& out) {
  const std::string name = "section " + std::to_string(s) + ": ";
  const uint64_t full_splats = uint64_t{sec.full_buckets} * sec.bucket_size;
  uint32_t partial = 0;                  // partially filled bucket holding the current splat
  uint64_t partial_start = full_splats;  // its first splat
  const double position_scale = static_cast<double>(sec.block_size) / 2.0 / sec.scale_range;
  const int components = kShComponents[sec.sh_degree];
  for (uint32_t i = 0; i < sec.splats; ++i, ++out) {
    const uint64_t at = sec.records + uint64_t{i} * sec.record_bytes;
    const uint8_t* rec = bytes.data() + at;
    Vec3 p;
    if (hdr.level_index == 0) {
      p = {load<float>(rec), load<float>(rec + 4), load<float>(rec + 8)};
    } else {
      uint64_t bucket = 0;
      if (i < full_splats) {
        bucket = i / sec.bucket_size;
      } else {
        while (partial < sec.partial_buckets &&
               i >= partial_start + load<uint32_t>(bytes.data() + sec.base + 4 * uint64_t{partial}))
          partial_start += load<uint32_t>(bytes.data() + sec.base + 4 * uint64_t{partial++});
        if (partial >= sec.partial_buckets)
          r.failAt(sec.base, name + "splat " + std::to_string(i) + " lies in none of its " +
                                 std::to_string(sec.full_buckets) + " full and " +
                                 std::to_string(sec.partial_buckets) + " partially filled buckets");
        bucket = uint64_t{sec.full_buckets} + partial;
      }
      // The first pass checked full + partial <= bucket_count, so the centre lies inside the table.
      const uint8_t* c = bytes.data() + sec.centres + bucket * kBucketBytes;
      for (int a = 0; a < 3; ++a) {
        const double q = static_cast<double>(load<uint16_t>(rec + 2 * a)) - sec.scale_range;
        p[a] = static_cast<float>(q * position_scale + load<float>(c + 4 * a));
      }
    }
    cloud.positions[out] = p;
    decodeAttributes(rec, hdr, components, cloud, out);
  }
}

}  // namespace

GaussianCloud readKsplat(std::span<const uint8_t> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  const Header hdr = readHeader(r, bytes);

  // First pass: every section's layout, checked against the file, before anything is allocated.
  std::vector<Section> sections(hdr.section_count);
  uint64_t offset = hdr.headers_end, total = 0;
  int degree = 0;
  for (uint32_t s = 0; s < hdr.section_count; ++s) {
    const Section& sec = sections[s] = readSection(r, bytes, hdr, s, offset);
    offset = sec.records + sec.record_bytes * sec.max_splats;
    total += sec.splats;
    if (sec.splats > 0) degree = std::max(degree, sec.sh_degree);
  }
  if (total != hdr.splat_count)
    r.failAt(16, "header declares " + std::to_string(hdr.splat_count) + " splats, its sections hold " +
                     std::to_string(total));
  checkGaussianBudget(path, total, degree);

  GaussianCloud cloud;
  cloud.resize(static_cast<size_t>(total), degree);
  size_t out = 0;
  for (uint32_t s = 0; s < hdr.section_count; ++s) decodeSection(r, bytes, hdr, sections[s], s, cloud, out);
  return cloud;
}

}  // namespace sf
