// SHA-256 after FIPS 180-4, section 6.2.
#include "core/sha256.h"

#include <array>

namespace sf {

namespace {

constexpr std::array<uint32_t, 64> kK = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

void compress(std::array<uint32_t, 8>& h, const uint8_t* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t)
    w[t] = uint32_t{block[4 * t]} << 24 | uint32_t{block[4 * t + 1]} << 16 | uint32_t{block[4 * t + 2]} << 8 |
           uint32_t{block[4 * t + 3]};
  for (int t = 16; t < 64; ++t) {
    const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; ++t) {
    const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                        kK[static_cast<size_t>(t)] + w[t];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

}  // namespace

std::string sha256Hex(std::span<const uint8_t> bytes) {
  Sha256 s;
  s.update(bytes);
  return s.hexDigest();
}

void Sha256::update(std::span<const uint8_t> bytes) {
  total_ += bytes.size();
  size_t i = 0;
  if (filled_ > 0) {
    while (filled_ < 64 && i < bytes.size()) block_[filled_++] = bytes[i++];
    if (filled_ < 64) return;
    compress(h_, block_);
    filled_ = 0;
  }
  for (; i + 64 <= bytes.size(); i += 64) compress(h_, bytes.data() + i);
  while (i < bytes.size()) block_[filled_++] = bytes[i++];
}

std::string Sha256::hexDigest() {
  uint8_t tail[128] = {};
  for (size_t i = 0; i < filled_; ++i) tail[i] = block_[i];
  tail[filled_] = 0x80;
  const size_t tail_blocks = filled_ + 9 <= 64 ? 1 : 2;
  const uint64_t bits = total_ * 8;
  for (int k = 0; k < 8; ++k)
    tail[tail_blocks * 64 - 1 - static_cast<size_t>(k)] = static_cast<uint8_t>(bits >> (8 * k));
  for (size_t i = 0; i < tail_blocks; ++i) compress(h_, tail + i * 64);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint32_t v : h_)
    for (int k = 7; k >= 0; --k) out += hex[(v >> (4 * k)) & 0xf];
  return out;
}

}  // namespace sf
