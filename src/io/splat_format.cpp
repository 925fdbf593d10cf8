#include "io/splat_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/limits.h"
#include "io/byte_reader.h"

namespace sf {

namespace {
uint8_t quantizeUnit(float v) {
  return static_cast<uint8_t>(std::lround(std::clamp(v * 255.0f, 0.0f, 255.0f)));
}
uint8_t quantizeSigned(float v) {
  return static_cast<uint8_t>(std::lround(std::clamp(v * 128.0f + 128.0f, 0.0f, 255.0f)));
}
}  // namespace

GaussianCloud readSplat(std::span<const uint8_t> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  if (bytes.size() % kSplatRecordBytes != 0)
    r.failAt(
        bytes.size() / kSplatRecordBytes * kSplatRecordBytes,
        "truncated: .splat size " + std::to_string(bytes.size()) + " is not a multiple of 32-byte records");
  const size_t n = bytes.size() / kSplatRecordBytes;
  checkGaussianBudget(path, n, 0);
  GaussianCloud cloud;
  cloud.resize(n, 0);
  for (size_t i = 0; i < n; ++i) {
    auto rec = r.bytes(kSplatRecordBytes, "splat record");
    float f[6];
    std::memcpy(f, rec.data(), sizeof(f));
    cloud.positions[i] = {f[0], f[1], f[2]};
    cloud.scales[i] = {f[3], f[4], f[5]};
    const uint8_t* c = rec.data() + 24;
    for (size_t k = 0; k < 3; ++k) cloud.sh[i * 3 + k] = colorToShDc(static_cast<float>(c[k]) / 255.0f);
    cloud.opacities[i] = static_cast<float>(c[3]) / 255.0f;
    const uint8_t* q = rec.data() + 28;
    auto comp = [](uint8_t b) { return (static_cast<float>(b) - 128.0f) / 128.0f; };
    cloud.rotations[i] = normalize(Quat{comp(q[0]), comp(q[1]), comp(q[2]), comp(q[3])});
  }
  return cloud;
}

std::vector<uint8_t> writeSplat(const GaussianCloud& cloud) {
  std::vector<uint8_t> out(cloud.size() * kSplatRecordBytes);
  for (size_t i = 0; i < cloud.size(); ++i) {
    uint8_t* rec = out.data() + i * kSplatRecordBytes;
    Vec3 p = cloud.positions[i], s = cloud.scales[i];
    float f[6] = {p.x, p.y, p.z, s.x, s.y, s.z};
    std::memcpy(rec, f, sizeof(f));
    auto sh = cloud.shOf(i);
    for (size_t k = 0; k < 3; ++k) rec[24 + k] = quantizeUnit(shDcToColor(sh[k]));
    rec[27] = quantizeUnit(cloud.opacities[i]);
    Quat q = normalize(cloud.rotations[i]);
    rec[28] = quantizeSigned(q.w);
    rec[29] = quantizeSigned(q.x);
    rec[30] = quantizeSigned(q.y);
    rec[31] = quantizeSigned(q.z);
  }
  return out;
}

}  // namespace sf
