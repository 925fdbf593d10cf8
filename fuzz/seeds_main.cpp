// fuzz_seeds OUTDIR: writes the seed corpus of every fuzz target into OUTDIR/<target>/, from our own
// writers (sf::encodeSplats, encodeBindings, the character package writer, encodeGnmPack, encodeBranchMesh,
// the mouth and corrective writers, the level-of-detail build) and a few layouts no writer of ours produces
// (ASCII and big-endian PLY, compressed PLY, SPZ v2 and v4). Every cloud is tiny, so each seed is small and
// runs fast. The fuzz build runs it at build time (fuzz/CMakeLists.txt); the test build runs it as a test and
// feeds its output to the regression runners.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "character/binding.h"
#include "character/bundle.h"
#include "character/corrective.h"
#include "character/gnm_pack.h"
#include "character/mouth.h"
#include "core/error.h"
#include "core/math.h"
#include "fuzz_support.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/gzip.h"
#include "io/ply.h"
#include "io/spl2.h"
#include "io/zip.h"
#include "lod/build.h"
#include "lod/format.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

fs::path g_out;
size_t g_written = 0;

void put(const std::string& target, const std::string& name, std::span<const uint8_t> bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  sf::writeFileAtomic((dir / name).string(), bytes);
  ++g_written;
}
void put(const std::string& target, const std::string& name, const std::string& text) {
  put(target, name, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Bytes bytesOf(const std::string& s) {
  return {s.begin(), s.end()};
}
Bytes head(const Bytes& b, size_t n) {
  return {b.begin(), b.begin() + static_cast<long>(std::min(n, b.size()))};
}

// ---- PLY ----------------------------------------------------------------------------------------------

struct PlyLayout {
  std::string header;                              // up to and including "end_header\n"
  std::vector<std::pair<std::string, int>> props;  // vertex properties: type name, byte size
  size_t count = 0;
};

PlyLayout plyLayout(const Bytes& ply) {
  const std::string text(ply.begin(), ply.end());
  const size_t end = text.find("end_header\n");
  if (end == std::string::npos) throw sf::Error("fuzz_seeds: writer output has no end_header");
  PlyLayout l;
  l.header = text.substr(0, end + 11);
  std::istringstream in(l.header);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key, a, b;
    words >> key >> a >> b;
    if (key == "element" && a == "vertex") l.count = std::stoul(b);
    if (key == "property") {
      const int size = a == "double"                   ? 8
                       : a == "uchar" || a == "char"   ? 1
                       : a == "short" || a == "ushort" ? 2
                                                       : 4;
      l.props.push_back({a, size});
    }
  }
  return l;
}

// The writer's binary little-endian PLY rewritten as ASCII or big-endian: same header, other encoding.
Bytes plyReencode(const Bytes& ply, const std::string& encoding) {
  const PlyLayout l = plyLayout(ply);
  std::string header = l.header;
  const std::string from = "binary_little_endian";
  header.replace(header.find(from), from.size(), encoding);
  Bytes out = bytesOf(header);
  size_t at = l.header.size();
  for (size_t row = 0; row < l.count; ++row) {
    std::string line;
    for (const auto& [type, size] : l.props) {
      uint8_t raw[8];
      std::memcpy(raw, ply.data() + at, static_cast<size_t>(size));
      at += static_cast<size_t>(size);
      if (encoding == "binary_big_endian") {
        for (int k = size - 1; k >= 0; --k) out.push_back(raw[k]);
        continue;
      }
      char buf[64];
      if (type == "float") {
        float v;
        std::memcpy(&v, raw, 4);
        std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
      } else if (type == "double") {
        double v;
        std::memcpy(&v, raw, 8);
        std::snprintf(buf, sizeof buf, "%.17g", v);
      } else if (type == "int") {
        int32_t v;
        std::memcpy(&v, raw, 4);
        std::snprintf(buf, sizeof buf, "%d", v);
      } else if (type == "uint") {
        uint32_t v;
        std::memcpy(&v, raw, 4);
        std::snprintf(buf, sizeof buf, "%u", v);
      } else if (type == "uchar") {
        std::snprintf(buf, sizeof buf, "%u", static_cast<unsigned>(raw[0]));
      } else {
        throw sf::Error("fuzz_seeds: no ASCII form for PLY type " + type);
      }
      if (!line.empty())
        line += ' ';  // not (... ? "" : " ") + std::string(buf): a GCC 12 -O3 -Wrestrict false positive
      line += buf;
    }
    if (encoding == "ascii") {
      line += "\n";
      out.insert(out.end(), line.begin(), line.end());
    }
  }
  return out;
}

void plySeeds() {
  const std::string t = "fuzz_ply";
  for (int degree : {0, 1, 2, 3}) {
    const Bytes ply = sf::encodeSplats(sf::fuzz::sampleCloud(3, degree, 10u + static_cast<uint32_t>(degree)),
                                       sf::SplatFormat::kPly);
    put(t, "binary_deg" + std::to_string(degree) + ".ply", ply);
    if (degree == 0 || degree == 3) {
      put(t, "ascii_deg" + std::to_string(degree) + ".ply", plyReencode(ply, "ascii"));
      put(t, "big_endian_deg" + std::to_string(degree) + ".ply", plyReencode(ply, "binary_big_endian"));
    }
  }
  // Optional channels: normals, ids and extra properties of every scalar type the writer keeps.
  sf::GaussianCloud c = sf::fuzz::sampleCloud(2, 1, 3);
  c.normals = {{0, 0, 1}, {0, 1, 0}};
  c.ids = {7, -1};
  const sf::ScalarType types[] = {sf::ScalarType::kInt8,    sf::ScalarType::kUint8,  sf::ScalarType::kInt16,
                                  sf::ScalarType::kUint16,  sf::ScalarType::kInt32,  sf::ScalarType::kUint32,
                                  sf::ScalarType::kFloat32, sf::ScalarType::kFloat64};
  for (size_t k = 0; k < std::size(types); ++k)
    c.extras.push_back({"extra_" + std::to_string(k), types[k], {1, 2}});
  const Bytes full = sf::encodeSplats(c, sf::SplatFormat::kPly);
  put(t, "normals_ids_extras.ply", full);
  put(t, "empty.ply", sf::encodeSplats(sf::fuzz::sampleCloud(0, 0, 1), sf::SplatFormat::kPly));
  put(t, "truncated_header.ply", head(full, 60));
  put(t, "truncated_body.ply", head(full, full.size() - 7));
  // Hand-written: colours as uchar red/green/blue, a face element with a list property after the vertices,
  // comments, CRLF-free ASCII with non-finite values.
  put(t, "rgb_faces_ascii.ply",
      "ply\nformat ascii 1.0\ncomment hand-written seed\nobj_info none\nelement vertex 3\nproperty float "
      "x\nproperty float y\n"
      "property float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\nproperty float "
      "opacity\n"
      "property float scale_0\nproperty float scale_1\nproperty float scale_2\nproperty float "
      "rot_0\nproperty float rot_1\n"
      "property float rot_2\nproperty float rot_3\nelement face 1\nproperty list uchar int "
      "vertex_indices\nend_header\n"
      "0 0 0 255 0 0 1 -3 -3 -3 1 0 0 0\n1 0 0 0 255 0 2 -3 -3 -3 1 0 0 0\n0 1 0 0 0 255 nan inf -3 -3 1 0 0 "
      "0\n3 0 1 2\n");
  put(t, "minimal_ascii.ply",
      "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float "
      "z\nproperty float f_dc_0\n"
      "property float f_dc_1\nproperty float f_dc_2\nproperty float opacity\nproperty float "
      "scale_0\nproperty float scale_1\n"
      "property float scale_2\nproperty float rot_0\nproperty float rot_1\nproperty float rot_2\nproperty "
      "float rot_3\nend_header\n"
      "0 0 0 0.5 0.5 0.5 0 -2 -2 -2 1 0 0 0\n");
}

// ---- compressed PLY -----------------------------------------------------------------------------------

void appendF32(Bytes& out, float v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}
void appendU32(Bytes& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}

// A PlayCanvas compressed PLY of n splats (docs/formats/compressed-ply.md): chunk bounds with or without
// colour bounds, packed vertices, an optional sh element of the given degree.
Bytes compressedPly(size_t n, bool color_bounds, int sh_degree, uint32_t seed) {
  const size_t chunks = (n + 255) / 256;
  std::string h =
      "ply\nformat binary_little_endian 1.0\ncomment Generated by splatforge fuzz_seeds\nelement chunk " +
      std::to_string(chunks) + "\n";
  std::vector<std::string> bounds = {"min_x",       "min_y",       "min_z",       "max_x",
                                     "max_y",       "max_z",       "min_scale_x", "min_scale_y",
                                     "min_scale_z", "max_scale_x", "max_scale_y", "max_scale_z"};
  if (color_bounds)
    for (const char* c : {"min_r", "min_g", "min_b", "max_r", "max_g", "max_b"}) bounds.push_back(c);
  for (const std::string& b : bounds) h += "property float " + b + "\n";
  h += "element vertex " + std::to_string(n) + "\n";
  for (const char* p : {"packed_position", "packed_rotation", "packed_scale", "packed_color"})
    h += std::string("property uint ") + p + "\n";
  const int rest = sh_degree > 0 ? 3 * ((sh_degree + 1) * (sh_degree + 1) - 1) : 0;
  if (rest) {
    h += "element sh " + std::to_string(n) + "\n";
    for (int k = 0; k < rest; ++k) h += "property uchar f_rest_" + std::to_string(k) + "\n";
  }
  h += "end_header\n";
  Bytes out = bytesOf(h);
  for (size_t c = 0; c < chunks; ++c) {
    const float values[18] = {-1, -1, -1, 1, 1, 1, -6, -6, -6, -1, -1, -1, 0, 0, 0, 1, 1, 1};
    for (size_t k = 0; k < bounds.size(); ++k) appendF32(out, values[k]);
  }
  uint32_t state = seed * 2654435761u + 1;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < 4; ++k) appendU32(out, next());
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < rest; ++k) out.push_back(static_cast<uint8_t>(next() >> 24));
  return out;
}

void compressedPlySeeds() {
  const std::string t = "fuzz_compressed_ply";
  put(t, "colour_bounds_n3.compressed.ply", compressedPly(3, true, 0, 1));
  put(t, "no_colour_bounds_n2.compressed.ply", compressedPly(2, false, 0, 2));
  put(t, "sh1_n2.compressed.ply", compressedPly(2, true, 1, 3));
  put(t, "sh3_n1.compressed.ply", compressedPly(1, true, 3, 4));
  put(t, "two_chunks_n260.compressed.ply", compressedPly(260, true, 0, 5));
  put(t, "empty.compressed.ply", compressedPly(0, true, 0, 6));
  put(t, "inria.ply", sf::encodeSplats(sf::fuzz::sampleCloud(2, 0, 7), sf::SplatFormat::kPly));
}

// ---- SPZ ----------------------------------------------------------------------------------------------

// The v3 body (16-byte header + planar arrays) of our writer's output.
Bytes spzV3Body(const sf::GaussianCloud& cloud) {
  sf::FormatOptions v3;
  v3.spz_version = 3;
  return sf::gunzipBytes(sf::encodeSplats(cloud, sf::SplatFormat::kSpz, v3), "seed.spz", uint64_t{1} << 32);
}

// A v2 body from a v3 one: version 2 and 3-byte "first three" rotations (x, y, z of the quaternion).
Bytes spzV2Body(const Bytes& v3) {
  uint32_t n;
  std::memcpy(&n, v3.data() + 8, 4);
  Bytes out(v3.begin(), v3.begin() + 16);
  out[4] = 2;
  const size_t rot_at = 16 + size_t{n} * (9 + 1 + 3 + 3);
  out.insert(out.end(), v3.begin() + 16, v3.begin() + static_cast<long>(rot_at));
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k) out.push_back(static_cast<uint8_t>(60 + 40 * k + i));
  out.insert(out.end(), v3.begin() + static_cast<long>(rot_at + size_t{n} * 4), v3.end());
  return out;
}

// A v4 body (see fuzz_support.h, spzV4FromBody) from a v3 one: the 32-byte v4 header, optional extension
// records, then the same arrays.
Bytes spzV4Body(const Bytes& v3, bool extensions) {
  uint32_t n;
  std::memcpy(&n, v3.data() + 8, 4);
  const uint8_t degree = v3[12];
  Bytes ext;
  if (extensions) {
    appendU32(ext, 0xADBE0003u);  // coordinate system: RUB
    appendU32(ext, 4);
    appendU32(ext, 4);
    appendU32(ext, 0xADBE0002u);  // safe-orbit camera
    appendU32(ext, 12);
    appendF32(ext, -0.5f);
    appendF32(ext, 0.5f);
    appendF32(ext, 1.0f);
  }
  Bytes out;
  appendU32(out, 0x5053474e);
  appendU32(out, 4);
  appendU32(out, n);
  out.push_back(degree);
  out.push_back(v3[13]);
  out.push_back(static_cast<uint8_t>(v3[14] | (extensions ? 0x02 : 0)));
  out.push_back(degree == 0 ? 5 : 6);
  appendU32(out, static_cast<uint32_t>(32 + ext.size()));
  out.resize(32, 0);
  out.insert(out.end(), ext.begin(), ext.end());
  out.insert(out.end(), v3.begin() + 16, v3.end());
  return out;
}

void spzSeeds() {
  const std::string t = "fuzz_spz", b = "fuzz_spz_body";
  for (int degree : {0, 1, 3}) {
    sf::GaussianCloud cloud = sf::fuzz::sampleCloud(3, degree, 20u + static_cast<uint32_t>(degree));
    if (degree == 1) cloud.antialiased = true;
    const std::string d = "_deg" + std::to_string(degree);
    const Bytes v3 = spzV3Body(cloud);
    const Bytes v2 = spzV2Body(v3);
    put(t, "v3" + d + ".spz", sf::encodeSplats(cloud, sf::SplatFormat::kSpz));
    put(t, "v2" + d + ".spz", sf::gzipBytes(v2));
    put(t, "v4" + d + ".spz", sf::fuzz::spzV4FromBody(spzV4Body(v3, false)));
    put(b, "v3" + d + ".body", v3);
    put(b, "v2" + d + ".body", v2);
    put(b, "v4" + d + ".body", spzV4Body(v3, false));
    if (degree == 3) {
      put(t, "v4_extensions" + d + ".spz", sf::fuzz::spzV4FromBody(spzV4Body(v3, true)));
      put(b, "v4_extensions" + d + ".body", spzV4Body(v3, true));
    }
  }
  const Bytes empty = spzV3Body(sf::fuzz::sampleCloud(0, 0, 1));
  put(t, "v3_empty.spz", sf::gzipBytes(empty));
  put(b, "v3_empty.body", empty);
  put(b, "v4_empty.body", spzV4Body(empty, false));
  const Bytes v3 = sf::encodeSplats(sf::fuzz::sampleCloud(4, 0, 30), sf::SplatFormat::kSpz);
  put(t, "truncated_gzip.spz", head(v3, v3.size() / 2));
}

// ---- SOG, ksplat ---------------------------------------------------------------------------------------

// fuzz_sog takes archives as they are, and unpacked entries as [u8 name length][name][u32 data length][data].
void sogSeeds() {
  const std::string t = "fuzz_sog";
  for (int degree = 0; degree <= 3; ++degree) {
    const Bytes sog = sf::encodeSplats(sf::fuzz::sampleCloud(5, degree, static_cast<uint32_t>(50 + degree)),
                                       sf::SplatFormat::kSog);
    const std::string d = "_deg" + std::to_string(degree);
    put(t, "n5" + d + ".sog", sog);
    Bytes unpacked;
    const sf::ZipReader zip(sog, "seed.sog");
    for (const sf::ZipEntry& e : zip.entries()) {
      const Bytes data = zip.read(e);
      unpacked.push_back(static_cast<uint8_t>(e.name.size()));
      unpacked.insert(unpacked.end(), e.name.begin(), e.name.end());
      const auto len = static_cast<uint32_t>(data.size());
      const auto* p = reinterpret_cast<const uint8_t*>(&len);
      unpacked.insert(unpacked.end(), p, p + 4);
      unpacked.insert(unpacked.end(), data.begin(), data.end());
    }
    put(t, "n5" + d + ".entries", unpacked);
  }
  put(t, "empty.sog", sf::encodeSplats(sf::fuzz::sampleCloud(0, 0, 1), sf::SplatFormat::kSog));
}

// A .ksplat of one section (docs/formats/ksplat.md): level 0 with n records, or level 1 with one full
// bucket of n records around the origin.
Bytes ksplatFile(int level, int sh_degree, uint32_t n) {
  const int components[4] = {0, 9, 24, 45};
  const size_t record =
      (level == 0 ? 44u : 24u) + static_cast<size_t>(components[sh_degree]) * (level == 0 ? 4u : 2u);
  const size_t buckets = level == 0 ? 0 : 12;
  Bytes b(4096 + 1024 + buckets + record * n, 0);
  auto u16 = [&](size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); };
  auto u32 = [&](size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); };
  auto f32 = [&](size_t at, float v) { std::memcpy(&b[at], &v, 4); };
  b[1] = 1;
  u32(4, 1), u32(8, 1), u32(12, n), u32(16, n);
  u16(20, static_cast<uint16_t>(level));
  u32(4096, n), u32(4100, n);
  u16(4096 + 40, static_cast<uint16_t>(sh_degree));
  if (level > 0)
    u32(4096 + 8, n), u32(4096 + 12, 1), f32(4096 + 16, 5.0f), u16(4096 + 20, 12), u32(4096 + 24, 32767),
        u32(4096 + 32, 1);
  for (uint32_t i = 0; i < n; ++i) {
    const size_t r = 4096 + 1024 + buckets + i * record;
    if (level == 0) {
      for (int k = 0; k < 3; ++k)
        f32(r + 4 * static_cast<size_t>(k), 0.1f * static_cast<float>(i + 1) * static_cast<float>(k + 1));
      for (int k = 0; k < 3; ++k) f32(r + 12 + 4 * static_cast<size_t>(k), 0.05f);
      f32(r + 24, 1.0f);
      b[r + 40] = 200, b[r + 41] = 100, b[r + 42] = 50, b[r + 43] = 255;
    } else {
      for (int k = 0; k < 3; ++k) u16(r + 2 * static_cast<size_t>(k), static_cast<uint16_t>(32767 + 100 * i));
      for (int k = 0; k < 3; ++k) u16(r + 6 + 2 * static_cast<size_t>(k), 0x2a66);  // 0.05 as a half
      u16(r + 12, 0x3c00);                                                          // w = 1
      b[r + 20] = 200, b[r + 21] = 100, b[r + 22] = 50, b[r + 23] = 255;
    }
  }
  return b;
}

void ksplatSeeds() {
  const std::string t = "fuzz_ksplat";
  put(t, "level0_deg0_n2.ksplat", ksplatFile(0, 0, 2));
  put(t, "level0_deg1_n1.ksplat", ksplatFile(0, 1, 1));
  put(t, "level1_deg0_n2.ksplat", ksplatFile(1, 0, 2));
  put(t, "level1_deg2_n1.ksplat", ksplatFile(1, 2, 1));
}

// ---- SPL2 ---------------------------------------------------------------------------------------------

// A small hull from a sample cloud (docs/formats/spl2.md): n gaussians, about a third of them core, with the
// hull channels; with `chunks`, hull_chunk / hull_material for a CHNK tail of that many chunks.
sf::Spl2Hull spl2Hull(size_t n, int chunks, uint32_t seed) {
  sf::GaussianCloud c = sf::fuzz::sampleCloud(n, 0, seed);
  std::vector<double> core(n), packed(n), chunk(n), material(n);
  for (size_t i = 0; i < n; ++i) {
    core[i] = i % 3 == 0 ? 1 : 0;
    packed[i] = static_cast<double>((i % 8) * 16 + i % 16);
    chunk[i] = chunks > 0 ? static_cast<double>(i % static_cast<size_t>(chunks)) : 0;
    material[i] = chunks > 0 ? static_cast<double>(i % static_cast<size_t>(chunks) % 6) : 0;
  }
  c.extras.push_back({"hull_core", sf::ScalarType::kUint8, core});
  c.extras.push_back({"hull_packed", sf::ScalarType::kUint8, packed});
  if (chunks > 0) {
    c.extras.push_back({"hull_chunk", sf::ScalarType::kUint16, chunk});
    c.extras.push_back({"hull_material", sf::ScalarType::kUint8, material});
  }
  return sf::cloudToSpl2(c);
}

void spl2Seeds() {
  const std::string t = "fuzz_spl2";
  const Bytes plain = sf::encodeSpl2(spl2Hull(5, 0, 60));
  put(t, "n5.spl2", plain);
  const Bytes chunked = sf::encodeSpl2(spl2Hull(7, 3, 61));
  put(t, "n7_chnk3.spl2", chunked);
  put(t, "n2_chnk1.spl2", sf::encodeSpl2(spl2Hull(2, 1, 62)));  // an even splat count: no padding
  put(t, "empty.spl2", sf::encodeSpl2(sf::Spl2Hull{}));
  // Four orders instead of 64: small enough for the fuzzer to reach the CHNK tail and its checks often.
  sf::Spl2Hull few = spl2Hull(6, 2, 63);
  few.orders = sf::spl2ShellOrders(few.shell.pos, 4, 30.0f);
  put(t, "n6_b4_chnk2.spl2", sf::encodeSpl2(few));
  put(t, "from_cloud.spl2", sf::encodeSplats(sf::fuzz::sampleCloud(4, 2, 64), sf::SplatFormat::kSpl2));
  put(t, "truncated_in_orders.spl2", head(plain, plain.size() - 6));
  put(t, "truncated_in_chnk.spl2", head(chunked, chunked.size() - 10));
}

// ---- .splat, glTF -------------------------------------------------------------------------------------

void splatSeeds() {
  const std::string t = "fuzz_splat";
  put(t, "n1.splat", sf::encodeSplats(sf::fuzz::sampleCloud(1, 0, 40), sf::SplatFormat::kSplat));
  put(t, "n4.splat", sf::encodeSplats(sf::fuzz::sampleCloud(4, 3, 41), sf::SplatFormat::kSplat));
  const Bytes five = sf::encodeSplats(sf::fuzz::sampleCloud(5, 0, 42), sf::SplatFormat::kSplat);
  put(t, "not_a_multiple_of_32.splat", head(five, five.size() - 3));
  // A first record whose x coordinate starts with the gzip magic (1f 8b): the dispatcher must still read
  // it as .splat.
  Bytes gz = five;
  gz[0] = 0x1f;
  gz[1] = 0x8b;
  put(t, "gzip_magic_first_float.splat", gz);
  Bytes gltf = five;
  std::memcpy(gltf.data(), "glTF", 4);
  put(t, "gltf_magic_first_float.splat", gltf);
}

void gltfSeeds() {
  const std::string t = "fuzz_gltf";
  for (int degree : {0, 1, 3}) {
    const Bytes glb = sf::encodeSplats(sf::fuzz::sampleCloud(3, degree, 50u + static_cast<uint32_t>(degree)),
                                       sf::SplatFormat::kGltf);
    put(t, "splats_deg" + std::to_string(degree) + ".glb", glb);
    if (degree != 1) put(t, "splats_deg" + std::to_string(degree) + ".gltf", sf::fuzz::glbToGltfJson(glb));
  }
  put(t, "skinned.glb", sf::fuzz::skinnedGlb());
  put(t, "skinned.gltf", sf::fuzz::skinnedGltfJson());
  put(t, "minimal.gltf",
      R"({"asset": {"version": "2.0"}, "scenes": [{"nodes": [0]}], "nodes": [{"matrix": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]}]})");
}

// ---- JSON: camera, scene, character --------------------------------------------------------------------

void cameraSeeds() {
  const std::string t = "fuzz_camera";
  put(t, "intrinsics.json",
      R"({"width": 1280, "height": 720, "fx": 900, "fy": 900, "cx": 640, "cy": 360,
 "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,3, 0,0,0,1]})");
  put(t, "intrinsics_rotated.json",
      R"({"width": 640, "height": 480, "fx": 500, "fy": 510, "cx": 320, "cy": 240,
 "world_to_camera": [0,-1,0,0.5, 1,0,0,-0.25, 0,0,1,4, 0,0,0,1]})");
  put(t, "look_at.json",
      R"({"eye": [0, 1.5, 3], "target": [0, 0.5, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 960, "height": 540})");
  put(t, "look_at_default_up.json",
      R"({"eye": [0, 0, 5], "target": [0, 0, 0], "fov_y_deg": 60, "width": 64, "height": 64})");
  put(t, "look_at_parallel_up.json",
      R"({"eye": [0,0,1], "target": [0,0,0], "up": [0,0,1], "fov_y_deg": 40, "width": 64, "height": 64})");
  put(t, "wrong_type.json",
      R"({"eye": [0,0,1], "target": [0,0,0], "fov_y_deg": "wide", "width": 64, "height": 64})");
  put(t, "non_rigid.json",
      R"({"width": 64, "height": 64, "fx": 1, "fy": 1, "cx": 1, "cy": 1, "world_to_camera": [2,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]})");
}

void sceneSeeds() {
  const std::string t = "fuzz_scene";
  const std::string look_at =
      R"({"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 96, "height": 64})";
  put(t, "objects.json", R"({
  "objects": [
    {"name": "biker", "file": "biker.spz"},
    {"name": "copy", "file": "biker.ply", "transform": {"translation": [1, 0, 0], "rotation": [1, 0, 0, 0], "scale": 0.5}},
    {"file": "other.splat", "transform": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]},
    {"file": "nonuniform.compressed.ply", "transform": {"scale": [1, 2, 3]}}
  ],
  "camera": )" + look_at + R"(,
  "background": [0, 0, 0]
})");
  put(t, "gltf_objects.json", R"({
  "objects": [
    {"gltf": "cesium_man.gltf", "clip": 0, "time": 0.25, "speed": 1.5, "loop": false, "transform": {"translation": [0, 0, -1]}},
    {"gltf": "fox.glb", "clip": "Walk"},
    {"file": "model.glb", "clip": "1"},
    {"character": "man", "clip": "Run", "time": 1, "speed": -1, "loop": true}
  ],
  "camera": {"width": 80, "height": 56, "fx": 70, "fy": 70, "cx": 40, "cy": 28, "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,3, 0,0,0,1]},
  "background": [0.2, 0.3, 0.4]
})");
  put(t, "script.json", R"({
  "script": [
    {"t": 0,   "command": "spawn-character", "id": "hero", "package": "man", "transform": {"translation": [0, 0, 0]}, "clip": 0},
    {"t": 0,   "command": "spawn-character", "id": "b", "package": "nowhere"},
    {"t": 0.5, "command": "set-character-state", "id": "hero", "clip": "Walk", "velocity": [0, 0, 1.2], "fade": 0.3},
    {"t": 1.0, "command": "set-clip-weights", "id": "hero", "weights": {"Walk": 0.7, "Run": 0.3}},
    {"t": 1.0, "command": "set-expression", "id": "hero", "weights": {"jawOpen": 0.8, "eyeBlinkLeft": 1}},
    {"t": 1.0, "command": "set-expression", "id": "hero", "space": "morph", "weights": [0, 0.5, 0]},
    {"t": 1.2, "command": "look-at", "id": "hero", "target": [0, 1.6, 3]},
    {"t": 1.3, "command": "look-at", "id": "hero", "target": null},
    {"t": 1.5, "command": "say", "id": "hero", "text": "hello"},
    {"t": 3.0, "command": "despawn", "id": "hero"}
  ],
  "camera": )" + look_at + "\n}\n");
  put(t, "script_placeholder_commands.json", R"({"script": [
    {"t": 0, "command": "spawn-character", "id": "a", "package": "p"},
    {"t": 0.1, "command": "set-character-state", "id": "a", "velocity": [1, 0, 0]},
    {"t": 0.2, "command": "set-clip-weights", "id": "a", "weights": {"idle": 1}},
    {"t": 0.3, "command": "set-expression", "id": "a", "space": "arkit52", "weights": [0.1, 0.2]},
    {"t": 0.4, "command": "look-at", "id": "a", "target": [0, 1, 2]},
    {"t": 0.5, "command": "despawn", "id": "a"},
    {"t": 0.6, "command": "say", "id": "a", "text": "gone"}]})");
  put(t, "errors_transform.json", R"({"objects": [{"file": "a.ply", "transform": [1, 2, 3]}]})");
  put(t, "errors_two_sources.json", R"({"objects": [{"file": "a.ply", "gltf": "b.glb"}]})");
  put(t, "errors_clip_on_splats.json", R"({"objects": [{"file": "a.ply", "clip": "Walk"}]})");
  put(t, "errors_unknown_command.json", R"({"script": [{"t": 0, "command": "dance", "id": "a"}]})");
}

void characterSeeds() {
  const std::string t = "fuzz_character";
  const fs::path dir = g_out / ".package";
  fs::remove_all(dir);
  sf::fuzz::writeSamplePackage(dir.string());
  const Bytes json = sf::readFile((dir / "character.json").string());
  fs::remove_all(dir);
  put(t, "package.json", json);
  // Variants of the same package: another colour space, a refused expression space, other default clips
  // (the skin's own, a retargeted one, the rest pose), no animations entry.
  const std::string text(json.begin(), json.end());
  auto variant = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string v = text;
    const size_t at = v.find(from);
    if (at == std::string::npos) throw sf::Error("fuzz_seeds: character.json lacks '" + from + "'");
    v.replace(at, from.size(), to);
    put(t, name, v);
  };
  variant("linear.json", R"("colorSpace": "srgb")", R"("colorSpace": "linear")");
  variant("expression_space_mismatch.json", R"("expressionSpace": ")",
          R"("expressionSpace": "morph", "was": ")");
  variant("clip_by_name.json", R"("defaultClip": ")", R"("defaultClip": "Idle", "was": ")");
  variant("rest_pose.json", R"("defaultClip": ")", R"("defaultClip": "", "was": ")");
  variant("clip_retargeted.json", R"("defaultClip": ")", R"("defaultClip": "3", "was": ")");
  variant("no_animations.json", R"("animations": {)", R"("animations_removed": {)");
}

void nerfSeeds() {
  const std::string t = "fuzz_nerf";
  const fs::path dir = g_out / ".dataset";
  fs::remove_all(dir);
  sf::fuzz::writeSampleDataset(dir.string());
  const Bytes json = sf::readFile((dir / "transforms_train.json").string());
  fs::remove_all(dir);
  put(t, "transforms_train.json", json);
  const std::string text(json.begin(), json.end());
  auto variant = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string v = text;
    const size_t at = v.find(from);
    if (at == std::string::npos) throw sf::Error("fuzz_seeds: transforms_train.json lacks '" + from + "'");
    v.replace(at, from.size(), to);
    put(t, name, v);
  };
  // Another tool's folder (no normalisation record), file paths with the extension, a wider field of view.
  variant("no_record.json", R"("splatforge")", R"("other_tool")");
  variant("with_extension.json", R"(r_000")", R"(r_000.png")");
  variant("wider.json", R"("camera_angle_x")", R"("camera_angle_x": 1.2, "was")");
  put(t, "blender_style.json",
      R"({"camera_angle_x": 0.69, "frames": [{"file_path": "./train/r_000", "rotation": 0.1,
    "transform_matrix": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 3], [0, 0, 0, 1]]}]})");
  put(t, "escaping_path.json", R"({"camera_angle_x": 0.69, "frames": [{"file_path": "../../etc/passwd",
    "transform_matrix": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 3], [0, 0, 0, 1]]}]})");
}

void bindingSeeds() {
  const std::string t = "fuzz_bindings";
  const sf::Cov6 cov = sf::covarianceFromScaleRotation({0.05f, 0.02f, 0.01f},
                                                       sf::normalize(sf::Quat{0.9f, 0.2f, -0.3f, 0.1f}));
  std::vector<sf::character::SplatBinding> bs;
  bs.push_back(sf::character::bindToTriangle({0.3f, 0.35f, 0.42f}, cov, 5, {0.1f, 0.2f, 0.3f},
                                             {0.5f, 0.25f, 0.2f}, {0.2f, 0.7f, 0.35f}));
  bs.push_back(
      sf::character::bindToJoints({0.2f, 1.0f, -0.3f}, cov, {1, 0, 65535, 2}, {0.5f, 0.25f, 0.25f, 0}));
  bs.push_back(sf::character::bindToJoints({0, 0, 0}, cov, {0, 0, 0, 0}, {0, 0, 0, 0}));
  put(t, "three.bin", sf::character::encodeBindings(bs));
  put(t, "one.bin", sf::character::encodeBindings(std::span(bs).first(1)));
  put(t, "empty.bin", sf::character::encodeBindings({}));
  const Bytes three = sf::character::encodeBindings(bs);
  put(t, "truncated.bin", head(three, three.size() - 1));
}

// ---- character extras: GNM packs, bundles, mouth parts and correctives --------------------------------

void gnmSeeds() {
  const std::string t = "fuzz_gnm";
  namespace ch = sf::character;
  const Bytes small = ch::encodeGnmPack(sf::fuzz::sampleGnmPack(4, 1, false, false));
  put(t, "small.sfgnm", small);
  put(t, "uvs.sfgnm", ch::encodeGnmPack(sf::fuzz::sampleGnmPack(4, 1, true, false)));
  put(t, "arkit_map.sfgnm", ch::encodeGnmPack(sf::fuzz::sampleGnmPack(4, 1, false, true)));
  put(t, "uvs_arkit_map.sfgnm", ch::encodeGnmPack(sf::fuzz::sampleGnmPack(5, 2, true, true)));
  put(t, "no_basis.sfgnm", ch::encodeGnmPack(sf::fuzz::sampleGnmPack(3, 0, false, false)));
  // A third joint (a child of the left eye) that one vertex is weighted to; a control name at the length
  // limit.
  ch::GnmPack three = sf::fuzz::sampleGnmPack(4, 1, true, false);
  ch::GnmJoint lid;
  lid.name = "eyelid_L";
  lid.parent = 0;
  lid.rest_local = sf::Mat4::fromLinearTranslation(sf::Mat3{}, {0.0f, 0.01f, 0.005f});
  lid.inverse_bind = sf::Mat4::fromLinearTranslation(sf::Mat3{}, {0.03f, -0.01f, -0.045f});
  three.joints.push_back(lid);
  three.lbs_joints[0] = {2, 0, 0, 0};
  put(t, "three_joints.sfgnm", ch::encodeGnmPack(three));
  ch::GnmPack long_name = sf::fuzz::sampleGnmPack(3, 1, false, false);
  long_name.control_names[0] = std::string(ch::kGnmMaxNameBytes, 'x');
  put(t, "name_at_limit.sfgnm", ch::encodeGnmPack(long_name));
  put(t, "truncated.sfgnm", head(small, small.size() - 1));
  put(t, "header_only.sfgnm", head(small, 88));
}

// models/characters/orb_head/scene.json, as scripts/make_character_bundle.py writes it.
constexpr const char* kOrbHeadScene = R"({
  "mode": "multi_region",
  "order": [
    "head",
    "eyes"
  ],
  "branches": {
    "head": {
      "decoders": {
        "geom": "head/geom.onnx",
        "appr": "head/appr.onnx"
      },
      "mesh_glb": "head/head.glb",
      "uv_resolution": 96,
      "frame": {
        "center": [
          0.0,
          1.6,
          0.0
        ],
        "scale": 10.0
      },
      "lift": {
        "scale_mult": 0.6,
        "thickness": 0.15,
        "min_scale": 0.002,
        "max_scale": 0.2
      }
    },
    "eyes": {
      "decoders": {
        "geom": "eyes/geom.onnx",
        "appr": "eyes/appr.onnx"
      },
      "mesh_bin": "eyes/mesh.bin",
      "mesh_json": "eyes/mesh.json",
      "uv_resolution": 48,
      "frame": {
        "center": [
          0.0,
          1.6,
          0.0
        ],
        "scale": 10.0
      },
      "static_geometry": true,
      "gaze_conditioned": true,
      "lift": {
        "scale_mult": 0.6,
        "thickness": 0.3,
        "min_scale": 0.001,
        "max_scale": 0.05,
        "max_triangle_distance": 6.0
      }
    }
  },
  "rig": {
    "backend": "skinned",
    "pack": "head/head.glb",
    "vertex_count": 1225
  },
  "expression_space": {
    "kind": "arkit52"
  }
}
)";

// mesh_json without whitespace (its keys and values hold none), so that it fits a split seed's length byte.
std::string compactJson(std::string s) {
  std::erase_if(s, [](char c) { return c == ' ' || c == '\n'; });
  return s;
}

// A fuzz_bundle split input: [u8 mesh_json length][mesh_json][mesh_bin].
Bytes meshSplit(const std::string& json, const Bytes& bin) {
  if (json.size() > 255)
    throw sf::Error("fuzz_seeds: mesh_json of " + std::to_string(json.size()) +
                    " bytes does not fit a split seed");
  Bytes out{static_cast<uint8_t>(json.size())};
  out.insert(out.end(), json.begin(), json.end());
  out.insert(out.end(), bin.begin(), bin.end());
  return out;
}

void bundleSeeds() {
  const std::string t = "fuzz_bundle";
  const std::string scene = kOrbHeadScene;
  put(t, "scene.json", scene);
  auto variant = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string v = scene;
    const size_t at = v.find(from);
    if (at == std::string::npos) throw sf::Error("fuzz_seeds: the orb_head scene.json lacks '" + from + "'");
    v.replace(at, from.size(), to);
    put(t, name, v);
  };
  const std::string rig = R"("rig": {
    "backend": "skinned",
    "pack": "head/head.glb",
    "vertex_count": 1225
  },)";
  // Without a rig block (the default rig reads rig_names.json), a gnm rig and space, a skinned rig posing the
  // first branch's glTF, a trunk decoder, the gnm68 space.
  variant("scene_default_rig.json", rig, "");
  variant(
      "scene_gnm.json", rig + R"(
  "expression_space": {
    "kind": "arkit52"
  })",
      R"("rig": {"backend": "gnm", "pack": "head/head.sfgnm", "control_names": ["jawOpen", "cheekPuff"], "vertex_count": 4},
  "expression_space": {"kind": "gnm", "dim": 6, "segments": [{"name": "expression", "start": 0, "count": 2}, {"name": "gaze", "start": 2, "count": 4}]})");
  variant("scene_skinned_first_glb.json", R"("pack": "head/head.glb",)", "");
  variant("scene_trunk.json", R"("appr": "head/appr.onnx")",
          R"("appr": "head/appr.onnx", "trunk": "head/trunk.onnx")");
  variant("scene_gnm68.json", R"("kind": "arkit52")", R"("kind": "gnm68", "dim": 68)");
  put(t, "export_manifest.json", R"({
  "schema_version": 1,
  "decoders": {"geom": "head/geom.onnx", "appr": "head/appr.onnx", "trunk": "head/trunk.onnx"},
  "mesh_glb": "head/head.glb",
  "uv_resolution": 64,
  "frame": {"center": [0, 1.6, 0], "scale": 10},
  "lift": {"scale_mult": 0.6, "thickness": 0.15, "min_scale": 0.001, "max_scale": 0.1, "triangle_scale": 1.5,
           "max_triangle_distance": 3, "default_opacity_logit": 4}
}
)");
  put(t, "export_manifest_mesh_bin.json",
      R"({"schema_version": 1, "decoders": {"geom": "eyes/geom.onnx", "appr": "eyes/appr.onnx"},
  "mesh_bin": "eyes/mesh.bin", "mesh_json": "eyes/mesh.json", "uv_resolution": 16, "static_geometry": false, "gaze_conditioned": true,
  "rig": {"backend": "orl", "control_names": ["jawOpen"], "vertex_count": 8}})");
  put(t, "rig_names.json", R"(["jawOpen", "cheekPuff", "eyeBlinkLeft", "eyeBlinkRight"])");
  // mesh_json as encodeBranchMesh writes it (the target's fixed mesh_bin is this mesh's), and split inputs.
  const auto [json8, bin8] = sf::character::encodeBranchMesh(sf::fuzz::sampleBranchMesh(8));
  put(t, "mesh.json", json8);
  put(t, "mesh_split_8.bin", meshSplit(compactJson(json8), bin8));
  const auto [json3, bin3] = sf::character::encodeBranchMesh(sf::fuzz::sampleBranchMesh(3));
  put(t, "mesh_split_3.bin", meshSplit(compactJson(json3), bin3));
  const Bytes split8 = meshSplit(compactJson(json8), bin8);
  put(t, "mesh_split_truncated.bin", head(split8, split8.size() - 4));
}

void mouthSeeds() {
  const std::string t = "fuzz_mouth";
  namespace ch = sf::character;
  // The first byte picks the reader: 0 mouth_hidden.bin, 1 teeth.bin, 2 fade.bin, 3 side.bin, 4
  // mouth_meshes.bin.
  auto tagged = [](uint8_t reader, const Bytes& bytes) {
    Bytes out{reader};
    out.insert(out.end(), bytes.begin(), bytes.end());
    return out;
  };
  ch::MouthHidden m;
  m.splats = {{0, ch::HiddenKind::kPlug, 3, 4},
              {5, ch::HiddenKind::kInside, 3, 4},
              {63, ch::HiddenKind::kLipBand, 31, 0},
              {7, ch::HiddenKind::kInside, 10, 20}};
  put(t, "mouth_hidden.bin", tagged(0, ch::encodeMouthHidden(m)));
  m.up = {0, 2, 0.1f};  // the reader normalises the axes
  m.forward = {0.1f, 0, -3};
  put(t, "mouth_hidden_unnormalised.bin", tagged(0, ch::encodeMouthHidden(m)));
  put(t, "mouth_hidden_empty.bin", tagged(0, ch::encodeMouthHidden(ch::MouthHidden{})));
  std::vector<ch::TeethPoint> teeth = {{0, {0.25f, 0.25f, 0.5f}, 0.001f, 0.004f},
                                       {15, {1, 0, 0}, -0.0005f, 0},
                                       {7, {0.2f, 0.3f, 0.5f}, 0, 0.01f}};
  put(t, "teeth.bin", tagged(1, ch::encodeTeethPoints(teeth)));
  put(t, "teeth_empty.bin", tagged(1, ch::encodeTeethPoints({})));
  const std::vector<float> fade = {0, 0.25f, 0.5f, 1, 0.1f, 0.9f, 0.333f, 0.0001f};
  put(t, "fade_8.bin", tagged(2, ch::encodeFade(fade)));
  // Every float16 in [0, 1] (and -0): each must decode and encode to its own bytes.
  Bytes every{2};
  for (uint32_t h = 0; h <= 0x3c00; ++h)
    every.insert(every.end(), {static_cast<uint8_t>(h), static_cast<uint8_t>(h >> 8)});
  every.insert(every.end(), {0x00, 0x80});
  put(t, "fade_every_value.bin", every);
  put(t, "side_8.bin", tagged(3, Bytes{0, 1, 1, 0, 0, 0, 1, 1}));
  put(t, "side_3.bin", tagged(3, Bytes{1, 0, 1}));
  ch::MouthMesh bag;  // 4 mouth_meshes.bin: a quad and a triangle
  bag.color = {0.6f, 0.1f, 0.15f, 1};
  bag.vertices = {teeth[0], teeth[1], teeth[2], {3, {0.5f, 0.5f, 0}, 0.005f, 0}};
  bag.indices = {0, 1, 2, 0, 2, 3};
  ch::MouthMesh tongue;
  tongue.color = {0.8f, 0.3f, 0.3f, 0.5f};
  tongue.vertices = {teeth[2], teeth[1], teeth[0]};
  tongue.indices = {0, 1, 2};
  put(t, "mouth_meshes.bin", tagged(4, ch::encodeMouthMeshes(std::vector<ch::MouthMesh>{bag, tongue})));
}

// ---- level-of-detail hierarchies ---------------------------------------------------------------------

// A hierarchy `lod build` makes from a small sample cloud (mip: antialiased with Mip-Splatting's screen
// filter), framed as fuzz_lod takes it: the flags byte, then each file as [u32 LE size][bytes], the index
// first, then the files it lists in its order (the top chunk's, then the chunks').
Bytes lodHierarchy(size_t n, int sh_degree, uint32_t fanout, uint64_t chunk_leaves, bool mip, uint8_t flags) {
  const fs::path dir = g_out / ".lod";
  fs::remove_all(dir);
  fs::create_directories(dir);
  sf::GaussianCloud cloud = sf::fuzz::sampleCloud(n, sh_degree, static_cast<uint32_t>(n));
  if (mip) cloud.antialiased = true, cloud.screen_filter = sf::kScreenFilterMip;
  sf::writeFileAtomic((dir / "in.ply").string(), sf::writePly(cloud));
  sf::lod::BuildOptions o;
  o.fanout = fanout;
  o.chunk_leaves = chunk_leaves;
  o.memory_bytes = 16u << 20;
  sf::lod::buildHierarchy((dir / "in.ply").string(), (dir / "tree").string(), o);
  const sf::lod::Index index = sf::lod::loadIndex((dir / "tree").string());
  Bytes out{flags};
  auto file = [&](const std::string& name) {
    const Bytes b = sf::readFile((dir / "tree" / name).string());
    appendU32(out, static_cast<uint32_t>(b.size()));
    out.insert(out.end(), b.begin(), b.end());
  };
  file(sf::lod::kIndexFileName);
  if (index.has_top) file(index.top.file);
  for (const sf::lod::ChunkEntry& e : index.chunks) file(e.file);
  fs::remove_all(dir);
  return out;
}

void lodSeeds() {
  const std::string t = "fuzz_lod";
  // Flags: bit 0 keeps the checksums as they are, the rest is the cut's budget - 1.
  put(t, "one_chunk.lod", lodHierarchy(5, 0, 2, 8, false, 0x20));
  const Bytes chunks = lodHierarchy(12, 1, 2, 4, false, 0x10);
  put(t, "three_chunks_degree1.lod", chunks);
  put(t, "partial_chunk_fanout3.lod", lodHierarchy(10, 0, 3, 3, false, 0xfe));
  put(t, "degree3_fanout4.lod", lodHierarchy(6, 3, 4, 4, false, 0x08));
  put(t, "mip_degree2.lod", lodHierarchy(8, 2, 2, 2, true, 0x06));
  Bytes as_they_are = chunks;
  as_they_are[0] |= 1;
  put(t, "checksums_as_they_are.lod", as_they_are);
  Bytes budget_1 = chunks;
  budget_1[0] = 0;
  put(t, "budget_1.lod", budget_1);
  put(t, "truncated.lod", head(chunks, chunks.size() - 100));
}

// lod-meta.json texts (docs/formats/lod-meta.md), as splat-transform 3 writes them: one leaf, two levels over
// two leaves (one leaf without level 0), a deeper tree, an environment.
void lodMetaSeeds() {
  const std::string t = "fuzz_lod_meta";
  auto leaf = [](const std::string& lo, const std::string& hi, const std::string& lods) {
    return R"({"bound": {"min": )" + lo + R"(, "max": )" + hi + R"(}, "lods": )" + lods + "}";
  };
  auto meta = [](int levels, const std::string& counts, int count, const std::string& files,
                 const std::string& tree, const std::string& extra = "") {
    return R"({"version": 1, "asset": {"generator": "splat-transform v3.7.0", "chunkGaussians": 32768, "chunkExtent": 16}, "count": )" +
           std::to_string(count) + R"(, "counts": )" + counts + R"(, "lodLevels": )" +
           std::to_string(levels) + R"(, "lodErrors": false, "filenames": )" + files + extra +
           R"(, "tree": )" + tree + "}";
  };
  put(t, "one_leaf.json",
      meta(1, "[10]", 10, R"(["0_0/meta.json"])",
           leaf("[-1, -1, -1]", "[1, 1, 1]", R"({"0": {"file": 0, "offset": 0, "count": 10}})")));
  const std::string a =
      leaf("[-1, -1, -1]", "[0, 1, 1]",
           R"({"0": {"file": 0, "offset": 0, "count": 20}, "1": {"file": 1, "offset": 0, "count": 5}})");
  const std::string b = leaf("[0, -1, -1]", "[1, 1, 1]", R"({"1": {"file": 1, "offset": 5, "count": 4}})");
  const std::string two =
      R"({"bound": {"min": [-1, -1, -1], "max": [1, 1, 1]}, "children": [)" + a + ", " + b + "]}";
  put(t, "two_levels.json", meta(2, "[20, 9]", 29, R"(["0_0/meta.json", "1_0/meta.json"])", two));
  const std::string deep =
      R"({"bound": {"min": [-1, -1, -1], "max": [1, 1, 1]}, "children": [)" + two + ", " + a + "]}";
  put(t, "deeper.json", meta(2, "[40, 14]", 54, R"(["0_0/meta.json", "1_0/meta.json"])", deep));
  put(t, "environment.json",
      meta(2, "[20, 9]", 29, R"(["0_0/meta.json", "1_0/meta.json"])", two,
           R"(, "environment": "env/meta.json")"));
  // Refused: an environment that leaves the folder, one that is not a string.
  put(t, "environment_leaves_folder.json",
      meta(2, "[20, 9]", 29, R"(["0_0/meta.json", "1_0/meta.json"])", two,
           R"(, "environment": "../env/meta.json")"));
  put(t, "environment_not_a_string.json",
      meta(2, "[20, 9]", 29, R"(["0_0/meta.json", "1_0/meta.json"])", two, R"(, "environment": 7)"));
}

// ---- ONNX ----------------------------------------------------------------------------------------------
// Protobuf wire format, enough for small ONNX models: varints, length-delimited fields.

void varint(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

void fieldVarint(Bytes& out, uint32_t field, uint64_t v) {
  varint(out, uint64_t{field} << 3);
  varint(out, v);
}

void fieldBytes(Bytes& out, uint32_t field, const Bytes& payload) {
  varint(out, (uint64_t{field} << 3) | 2);
  varint(out, payload.size());
  out.insert(out.end(), payload.begin(), payload.end());
}

void fieldString(Bytes& out, uint32_t field, const std::string& text) {
  fieldBytes(out, field, Bytes(text.begin(), text.end()));
}

// TensorProto: dims (1), data_type (2), name (8), raw_data (9).
Bytes onnxTensor(const std::string& name, std::vector<int64_t> dims, int type, const Bytes& raw) {
  Bytes t;
  for (int64_t d : dims) fieldVarint(t, 1, static_cast<uint64_t>(d));
  fieldVarint(t, 2, static_cast<uint64_t>(type));
  fieldString(t, 8, name);
  fieldBytes(t, 9, raw);
  return t;
}

// ValueInfoProto: name (1), type (2) -> TypeProto.tensor_type (1) -> elem_type (1), shape (2) -> dim (1) ->
// dim_value (1).
Bytes onnxValue(const std::string& name, int type, std::vector<int64_t> dims) {
  Bytes shape;
  for (int64_t d : dims) {
    Bytes dim;
    fieldVarint(dim, 1, static_cast<uint64_t>(d));
    fieldBytes(shape, 1, dim);
  }
  Bytes tensor_type;
  fieldVarint(tensor_type, 1, static_cast<uint64_t>(type));
  fieldBytes(tensor_type, 2, shape);
  Bytes type_proto;
  fieldBytes(type_proto, 1, tensor_type);
  Bytes v;
  fieldString(v, 1, name);
  fieldBytes(v, 2, type_proto);
  return v;
}

// NodeProto: input (1), output (2), name (3), op_type (4).
Bytes onnxNode(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  Bytes n;
  for (const std::string& i : inputs) fieldString(n, 1, i);
  for (const std::string& o : outputs) fieldString(n, 2, o);
  fieldString(n, 3, op + "_node");
  fieldString(n, 4, op);
  return n;
}

// ModelProto: ir_version (1), opset_import (8: domain 1, version 2), graph (7: node 1, name 2,
// initializer 5, input 11, output 12).
Bytes onnxModel(const std::vector<Bytes>& nodes, const std::vector<Bytes>& initializers,
                const std::vector<Bytes>& inputs, const std::vector<Bytes>& outputs) {
  Bytes graph;
  for (const Bytes& n : nodes) fieldBytes(graph, 1, n);
  fieldString(graph, 2, "seed");
  for (const Bytes& t : initializers) fieldBytes(graph, 5, t);
  for (const Bytes& v : inputs) fieldBytes(graph, 11, v);
  for (const Bytes& v : outputs) fieldBytes(graph, 12, v);
  Bytes opset;
  fieldString(opset, 1, "");
  fieldVarint(opset, 2, 17);
  Bytes model;
  fieldVarint(model, 1, 8);
  fieldBytes(model, 8, opset);
  fieldBytes(model, 7, graph);
  return model;
}

Bytes floatBytes(std::vector<float> v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void onnxSeeds() {
  const std::string t = "fuzz_onnx";
  constexpr int kFloat = 1, kInt64 = 7;
  put(t, "add.onnx",
      onnxModel({onnxNode("Add", {"a", "b"}, {"c"})}, {},
                {onnxValue("a", kFloat, {2, 3}), onnxValue("b", kFloat, {2, 3})},
                {onnxValue("c", kFloat, {2, 3})}));
  std::vector<float> rows(20, 0.1f), rgb(6, 0.5f);
  const Bytes generator = onnxModel(
      {onnxNode("Identity", {"g"}, {"gaussians"}), onnxNode("Identity", {"c"}, {"rgb"})},
      {onnxTensor("g", {2, 10}, kFloat, floatBytes(rows)), onnxTensor("c", {2, 3}, kFloat, floatBytes(rgb))},
      {}, {onnxValue("gaussians", kFloat, {2, 10}), onnxValue("rgb", kFloat, {2, 3})});
  put(t, "static_generator.onnx", generator);
  put(t, "truncated.onnx", head(generator, generator.size() / 2));
  Bytes shape(16);
  const int64_t dims[2] = {3, 4};
  std::memcpy(shape.data(), dims, 16);
  put(t, "folded.onnx",
      onnxModel({onnxNode("ConstantOfShape", {"s"}, {"z"}), onnxNode("Transpose", {"z"}, {"zt"}),
                 onnxNode("Add", {"zt", "x"}, {"y"})},
                {onnxTensor("s", {2}, kInt64, shape)}, {onnxValue("x", kFloat, {4, 3})},
                {onnxValue("y", kFloat, {4, 3})}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  g_out = argv[1];
  try {
    // Each target's directory is written afresh: seeds a newer generator no longer writes disappear.
    for (const char* t :
         {"fuzz_ply",  "fuzz_compressed_ply", "fuzz_spz",   "fuzz_spz_body",  "fuzz_splat",
          "fuzz_gltf", "fuzz_camera",         "fuzz_scene", "fuzz_character", "fuzz_bindings",
          "fuzz_sog",  "fuzz_ksplat",         "fuzz_onnx",  "fuzz_spl2",      "fuzz_nerf",
          "fuzz_gnm",  "fuzz_bundle",         "fuzz_mouth", "fuzz_lod",       "fuzz_lod_meta"})
      fs::remove_all(g_out / t);
    plySeeds();
    compressedPlySeeds();
    spzSeeds();
    splatSeeds();
    gltfSeeds();
    cameraSeeds();
    sceneSeeds();
    characterSeeds();
    nerfSeeds();
    bindingSeeds();
    sogSeeds();
    ksplatSeeds();
    spl2Seeds();
    onnxSeeds();
    gnmSeeds();
    bundleSeeds();
    mouthSeeds();
    lodSeeds();
    lodMetaSeeds();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", e.what());
    return 1;
  }
  std::printf("fuzz_seeds: %zu seeds in %s\n", g_written, g_out.c_str());
  return 0;
}
