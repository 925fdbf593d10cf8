// Untrusted input, resource side: load limits checked before allocating (decompression bombs), scene paths
// confined and restricted to regular files, one non-finite policy for every loader and writer, JSON numbers
// that overflow, linear PLY headers, shared loads, messages, temporary files. Every hostile input is built
// here, by the test.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "core/error.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/spz.h"
#include "scene/scene.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}
void writeBytes(const fs::path& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

using test::errorOf;

// Restores the process's load limits when a test ends.
struct ScopedLimits {
  LoadLimits saved = loadLimits();
  explicit ScopedLimits(const LoadLimits& l) { setLoadLimits(l); }
  ~ScopedLimits() { setLoadLimits(saved); }
};

void putU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
void putU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}

// A zstd frame of `n` zero bytes that declares its size, compressed in pieces (the data never exists whole).
std::vector<uint8_t> zstdZeros(uint64_t n) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setPledgedSrcSize(cctx, n);
  std::vector<uint8_t> zeros(1 << 20, 0), out, buf(ZSTD_CStreamOutSize());
  uint64_t left = n;
  for (;;) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    left -= take;
    ZSTD_inBuffer in{zeros.data(), take, 0};
    const ZSTD_EndDirective mode = left == 0 ? ZSTD_e_end : ZSTD_e_continue;
    size_t remaining;
    do {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      remaining = ZSTD_compressStream2(cctx, &o, &in, mode);
      out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(o.pos));
    } while (mode == ZSTD_e_end ? remaining != 0 : in.pos < in.size);
    if (left == 0) break;
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

// An SPZ version 4 file (NGSP container, one zstd stream per attribute) of `points` all-zero SH0 splats.
std::vector<uint8_t> spzV4Zeros(uint32_t points) {
  const uint64_t raw[5] = {uint64_t{points} * 9, points, uint64_t{points} * 3, uint64_t{points} * 3,
                           uint64_t{points} * 4};
  std::vector<std::vector<uint8_t>> frames;
  for (uint64_t r : raw) frames.push_back(zstdZeros(r));
  std::vector<uint8_t> f;
  putU32(f, 0x5053474e);
  putU32(f, 4);
  putU32(f, points);
  f.push_back(0);   // SH degree
  f.push_back(12);  // fractional bits
  f.push_back(0);   // flags
  f.push_back(5);   // streams
  putU32(f, 32);    // table of contents
  f.resize(32, 0);
  for (size_t s = 0; s < 5; ++s) putU64(f, frames[s].size()), putU64(f, raw[s]);
  for (const auto& fr : frames) f.insert(f.end(), fr.begin(), fr.end());
  return f;
}

std::vector<uint8_t> gzipped(const std::vector<uint8_t>& head, uint64_t zero_tail) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::vector<uint8_t> out, buf(1 << 16), zeros(1 << 20, 0);
  auto pump = [&](const uint8_t* data, size_t n, int flush) {
    zs.next_in = const_cast<Bytef*>(data);
    zs.avail_in = static_cast<uInt>(n);
    do {
      zs.next_out = buf.data();
      zs.avail_out = static_cast<uInt>(buf.size());
      deflate(&zs, flush);
      out.insert(out.end(), buf.begin(),
                 buf.begin() + static_cast<std::ptrdiff_t>(buf.size() - zs.avail_out));
    } while (zs.avail_out == 0);
  };
  pump(head.data(), head.size(), Z_NO_FLUSH);
  for (uint64_t left = zero_tail; left > 0;) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    left -= take;
    pump(zeros.data(), take, Z_NO_FLUSH);
  }
  pump(nullptr, 0, Z_FINISH);
  deflateEnd(&zs);
  return out;
}

std::vector<uint8_t> legacySpzHeader(uint32_t version, uint32_t points, uint8_t degree) {
  std::vector<uint8_t> h;
  putU32(h, 0x5053474e);
  putU32(h, version);
  putU32(h, points);
  h.push_back(degree);
  h.push_back(12);
  h.push_back(0);
  h.push_back(0);
  return h;
}

// ---- 1. Decompression bombs and declared counts ----------------------------------------------------------

TEST(UntrustedInput, SpzV4BombIsRefusedBeforeDecompressing) {
  const fs::path dir = test::tempDir("SpzV4Bomb");
  // 30M points of zeros: a few tens of KB on disk, 2.2 GB once loaded.
  const std::vector<uint8_t> bomb = spzV4Zeros(30'000'000);
  EXPECT_LT(bomb.size(), 64u * 1024) << "the bomb should be small on disk";
  writeBytes(dir / "bomb.spz", bomb);
  const std::string path = (dir / "bomb.spz").string();
  {
    ScopedLimits limits({1'000'000, 1ull << 30, false});
    const std::string e = errorOf([&] { loadSplats(path); });
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find("30000000 gaussians"), std::string::npos) << e;
    EXPECT_NE(e.find("--max-gaussians"), std::string::npos) << e;
  }
  {
    ScopedLimits limits({uint64_t{1} << 30, 256ull << 20, false});
    const std::string e = errorOf([&] { loadSplats(path); });
    EXPECT_NE(e.find("30000000 gaussians"), std::string::npos) << e;
    EXPECT_NE(e.find("--max-memory"), std::string::npos) << e;
  }
  // 2^28 points: refused with the file named, never std::bad_alloc.
  std::vector<uint8_t> huge = spzV4Zeros(16);
  std::memcpy(huge.data() + 8, "\x00\x00\x00\x10", 4);  // point count 2^28 in the header
  writeBytes(dir / "huge.spz", huge);
  ScopedLimits limits({uint64_t{1} << 40, 1ull << 30, false});
  const std::string e = errorOf([&] { loadSplats((dir / "huge.spz").string()); });
  EXPECT_NE(e.find("huge.spz: declares 268435456 gaussians"), std::string::npos) << e;
}

TEST(UntrustedInput, GzipSpzIsBoundedByItsHeaderAndTheBudget) {
  const fs::path dir = test::tempDir("GzipSpzBomb");
  // A header declaring 10 points, then 8 MB of zeros: inflating stops at the declared size.
  writeBytes(dir / "long.spz", gzipped(legacySpzHeader(3, 10, 0), 8u << 20));
  std::string e = errorOf([&] { loadSplats((dir / "long.spz").string()); });
  EXPECT_NE(e.find("inflates past the size its SPZ header declares"), std::string::npos) << e;
  // A header declaring 2^27 points: refused by the budget as soon as the header is out.
  writeBytes(dir / "many.spz", gzipped(legacySpzHeader(3, 1u << 27, 3), 1u << 16));
  ScopedLimits limits({uint64_t{1} << 40, 64ull << 20, false});
  e = errorOf([&] { loadSplats((dir / "many.spz").string()); });
  EXPECT_NE(e.find("many.spz: declares 134217728 gaussians of SH degree 3"), std::string::npos) << e;
  EXPECT_NE(e.find("--max-memory"), std::string::npos) << e;
}

TEST(UntrustedInput, EveryFormatChecksItsDeclaredCount) {
  const fs::path dir = test::tempDir("DeclaredCounts");
  GaussianCloud cloud = test::randomCloud(100, 1, 5);
  for (const char* ext : {".ply", ".spz", ".splat", ".glb"}) {
    const std::string path = (dir / (std::string("c") + ext)).string();
    saveSplats(cloud, path);
    ScopedLimits limits({50, 1ull << 30, false});
    const std::string e = errorOf([&] { loadSplats(path); });
    EXPECT_NE(
        e.find("declares 100 gaussians, more than the load limit of 50 (raise it with --max-gaussians)"),
        std::string::npos)
        << ext << ": " << e;
  }
  // The file size itself is checked before reading.
  ScopedLimits limits({uint64_t{1} << 30, 1000, false});
  const std::string e = errorOf([&] { loadSplats((dir / "c.ply").string()); });
  EXPECT_NE(e.find("file size of"), std::string::npos) << e;
}

TEST(UntrustedInput, ByteSizesParse) {
  EXPECT_EQ(parseByteSize("512M"), 512ull << 20);
  EXPECT_EQ(parseByteSize("8G"), 8ull << 30);
  EXPECT_EQ(parseByteSize("1.5KiB"), 1536u);
  EXPECT_EQ(parseByteSize("4096"), 4096u);
  EXPECT_THROW(parseByteSize("lots"), Error);
  EXPECT_THROW(parseByteSize("-1G"), Error);
  EXPECT_THROW(parseByteSize("0"), Error);
}

// ---- 2. Scene file paths -----------------------------------------------------------------------------

TEST(UntrustedInput, ScenePathsAreConfinedAndRegular) {
  const fs::path root = test::tempDir("ScenePaths");
  const fs::path dir = root / "scene";
  fs::create_directories(dir);
  saveSplats(test::randomCloud(50, 0, 1), (root / "outside.ply").string());
  saveSplats(test::randomCloud(50, 0, 2), (dir / "inside.ply").string());
  fs::create_symlink(root / "outside.ply", dir / "link.ply");
  ASSERT_EQ(::mkfifo((dir / "pipe.ply").c_str(), 0600), 0);
  writeText(dir / "scene.json", R"({"objects": [
    {"file": "inside.ply"}, {"file": "../outside.ply"}, {"file": ")" +
                                    (root / "outside.ply").string() + R"("},
    {"file": "link.ply"}, {"file": "pipe.ply"}, {"file": "/dev/zero"}]})");
  const auto started = std::chrono::steady_clock::now();
  Scene s = loadSceneJson((dir / "scene.json").string());  // must not block on the FIFO
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 60.0);
  ASSERT_EQ(s.objects.size(), 6u);
  EXPECT_NE(s.objects[0].source, "placeholder");
  for (size_t i = 1; i < 6; ++i) EXPECT_EQ(s.objects[i].source, "placeholder") << i;
  ASSERT_EQ(s.warnings.size(), 5u);
  EXPECT_NE(s.warnings[0].find("objects[1] (outside): '../outside.ply': leads outside the scene's directory"),
            std::string::npos)
      << s.warnings[0];
  EXPECT_NE(s.warnings[1].find("absolute path refused"), std::string::npos) << s.warnings[1];
  EXPECT_NE(s.warnings[2].find("'link.ply': leads outside"), std::string::npos) << s.warnings[2];
  EXPECT_NE(s.warnings[3].find("pipe.ply: is a FIFO (named pipe), expected a regular file"),
            std::string::npos)
      << s.warnings[3];
  EXPECT_NE(s.warnings[4].find("absolute path refused"), std::string::npos) << s.warnings[4];

  // Trusted: outside paths load, devices and FIFOs are still refused, by what they are.
  SceneLoadOptions trusted;
  trusted.confine_paths = false;
  s = loadSceneJson((dir / "scene.json").string(), trusted);
  for (size_t i = 0; i < 4; ++i) EXPECT_NE(s.objects[i].source, "placeholder") << i;
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_NE(s.warnings[0].find("is a FIFO"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[1].find("/dev/zero: is a character device, expected a regular file"),
            std::string::npos)
      << s.warnings[1];

  // Strict: the error names the scene file and the object.
  SceneLoadOptions strict;
  strict.strict = true;
  const std::string e = errorOf([&] { loadSceneJson((dir / "scene.json").string(), strict); });
  EXPECT_NE(e.find((dir / "scene.json").string() + ": objects[1] (outside): "), std::string::npos) << e;
}

// ---- 4. Non-finite values ------------------------------------------------------------------------------

// An INRIA PLY (ASCII) of three SH0 splats; `values` replaces row 1's fields by name.
std::string asciiPly(const std::string& row1_x, const std::string& row1_dc,
                     const std::string& opacity = "2") {
  std::string s = "ply\nformat ascii 1.0\nelement vertex 3\n";
  for (const char* p : {"x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity", "scale_0", "scale_1",
                        "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"})
    s += std::string("property float ") + p + "\n";
  s += "end_header\n";
  s += "0 0 0 0.1 0.2 0.3 " + opacity + " -3 -3 -3 1 0 0 0\n";
  s += row1_x + " 1 1 " + row1_dc + " 0.2 0.3 " + opacity + " -3 -3 -3 1 0 0 0\n";
  s += "2 2 2 0.1 0.2 0.3 " + opacity + " -3 -3 -3 1 0 0 0\n";
  return s;
}

TEST(UntrustedInput, NonFiniteRowsAreDroppedWithAWarningOrRefused) {
  const fs::path dir = test::tempDir("NonFinite");
  writeText(dir / "nan.ply", asciiPly("1", "nan"));
  LoadedSplats l = loadSplats((dir / "nan.ply").string());
  EXPECT_EQ(l.cloud.size(), 2u);
  EXPECT_EQ(l.dropped_non_finite, 1u);
  ASSERT_EQ(l.warnings.size(), 1u);
  EXPECT_NE(l.warnings[0].find(
                "1 of 3 gaussians hold non-finite values (NaN or infinity; first: row 1, sh[0] (colour 0))"),
            std::string::npos)
      << l.warnings[0];
  EXPECT_EQ(l.cloud.positions[1].x, 2.0f);  // the rows after the dropped one move up
  {
    ScopedLimits strict({loadLimits().max_gaussians, loadLimits().max_bytes, true});
    const std::string e = errorOf([&] { loadSplats((dir / "nan.ply").string()); });
    EXPECT_NE(e.find("nan.ply: 1 of 3 gaussians hold non-finite values"), std::string::npos) << e;
    EXPECT_NE(e.find("refused (--strict)"), std::string::npos) << e;
  }
  // A binary PLY with +inf in a position: every writer gets a finite cloud; the SPZ keeps its precision.
  GaussianCloud cloud = test::randomCloud(64, 0, 9);
  cloud.positions[5].y = std::numeric_limits<float>::infinity();
  EXPECT_NE(errorOf([&] { encodeSplats(cloud, SplatFormat::kSpz); }).find("first: row 5, position"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { saveSplats(cloud, (dir / "x.glb").string()); }).find("x.glb: cannot write gltf"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "x.glb"));
  // Bypass the writer's refusal to build the hostile file: a PLY whose row 5 holds +inf.
  GaussianCloud finite = cloud;
  finite.positions[5].y = 123.0f;
  std::vector<uint8_t> ply = encodeSplats(finite, SplatFormat::kPly);
  const float inf = std::numeric_limits<float>::infinity(), marker = 123.0f;
  for (size_t at = 0; at + 4 <= ply.size(); ++at)
    if (std::memcmp(ply.data() + at, &marker, 4) == 0) std::memcpy(ply.data() + at, &inf, 4);
  writeBytes(dir / "inf.ply", ply);
  LoadedSplats in = loadSplats((dir / "inf.ply").string());
  ASSERT_EQ(in.cloud.size(), 63u);
  for (const char* ext : {".spz", ".glb", ".splat", ".ply"}) {
    const std::string out = (dir / (std::string("out") + ext)).string();
    saveSplats(in.cloud, out);
    LoadedSplats back = loadSplats(out);
    ASSERT_EQ(back.cloud.size(), 63u) << ext;
    EXPECT_EQ(back.dropped_non_finite, 0u) << ext;
    for (size_t i = 0; i < 63; ++i)
      EXPECT_NEAR(length(back.cloud.positions[i] - in.cloud.positions[i]), 0.0f, 1e-3f)
          << ext << " row " << i;
  }
}

TEST(UntrustedInput, AsciiNanAndInfinityAreValuesNotRangeErrors) {
  const fs::path dir = test::tempDir("AsciiNan");
  writeText(dir / "inf.ply", asciiPly("-inf", "0.1"));
  LoadedSplats l = loadSplats((dir / "inf.ply").string());
  EXPECT_EQ(l.dropped_non_finite, 1u);
  ASSERT_EQ(l.warnings.size(), 1u);
  EXPECT_NE(l.warnings[0].find("row 1, position"), std::string::npos) << l.warnings[0];
  // Opacity logits of +-inf are the exact limits 1 and 0.
  writeText(dir / "opaque.ply", asciiPly("1", "0.1", "inf"));
  l = loadSplats((dir / "opaque.ply").string());
  ASSERT_EQ(l.cloud.size(), 3u);
  EXPECT_EQ(l.cloud.opacities[0], 1.0f);
  writeText(dir / "clear.ply", asciiPly("1", "0.1", "-inf"));
  l = loadSplats((dir / "clear.ply").string());
  EXPECT_EQ(l.cloud.opacities[2], 0.0f);
  // Out of range is still out of range.
  writeText(dir / "big.ply", asciiPly("1e39", "0.1"));
  EXPECT_NE(errorOf([&] { loadSplats((dir / "big.ply").string()); }).find("'1e39' is out of range for float"),
            std::string::npos);
}

// ---- 5. JSON numbers that overflow ------------------------------------------------------------------------

TEST(UntrustedInput, JsonOverflowNamesTheFileAndThePath) {
  const fs::path dir = test::tempDir("JsonOverflow");
  saveSplats(test::randomCloud(10, 0, 1), (dir / "c.ply").string());
  writeText(
      dir / "scene.json",
      R"({"objects": [{"file": "c.ply"}, {"file": "c.ply", "transform": {"translation": [0, 1e999, 0]}}]})");
  std::string e = errorOf([&] { loadSceneJson((dir / "scene.json").string()); });
  EXPECT_NE(e.find((dir / "scene.json").string() + ": objects[1].transform.translation[1]: number overflow"),
            std::string::npos)
      << e;
  writeText(dir / "cam.json",
            R"({"eye": [0, 0, 1e999], "target": [0, 0, 0], "fov_y_deg": 50, "width": 8, "height": 8})");
  e = errorOf([&] { loadCameraJson((dir / "cam.json").string()); });
  EXPECT_NE(e.find("cam.json: eye[2]: number overflow"), std::string::npos) << e;
  writeText(dir / "bad.json", R"({"objects": [}")");
  e = errorOf([&] { loadSceneJson((dir / "bad.json").string()); });
  EXPECT_NE(e.find("bad.json: byte "), std::string::npos) << e;
  EXPECT_NE(e.find("malformed JSON at objects"), std::string::npos) << e;
}

// ---- 6. PLY headers are parsed in linear time
// ----------------------------------------------------------------

TEST(UntrustedInput, PlyHeaderWithManyPropertiesIsLinear) {
  // 50,000 extra properties (as many as fit the 1 MiB header limit): a quadratic header parse (a linear
  // search per property) takes tens of seconds; a linear one well under a second. The bound below is
  // loose on purpose: it only separates the two.
  std::string header = "ply\nformat binary_little_endian 1.0\nelement vertex 1\n";
  const char* needed[] = {"x",       "y",       "z",       "f_dc_0", "f_dc_1", "f_dc_2", "opacity",
                          "scale_0", "scale_1", "scale_2", "rot_0",  "rot_1",  "rot_2",  "rot_3"};
  for (const char* p : needed) header += std::string("property float ") + p + "\n";
  constexpr size_t kExtra = 50000;
  auto base36 = [](size_t v) {
    std::string s;
    do s.insert(s.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]), v /= 36;
    while (v);
    return s;
  };
  for (size_t i = 0; i < kExtra; ++i) header += "property char e" + base36(i) + "\n";
  header += "end_header\n";
  std::vector<uint8_t> bytes(header.begin(), header.end());
  bytes.resize(bytes.size() + 14 * 4 + kExtra, 0);
  float one = 1.0f;
  std::memcpy(bytes.data() + header.size() + 10 * 4, &one, 4);  // rot_0 = 1
  const auto started = std::chrono::steady_clock::now();
  LoadedSplats l = decodeSplats(bytes, "wide.ply");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(l.cloud.size(), 1u);
  EXPECT_EQ(l.cloud.extras.size(), kExtra);
  EXPECT_LT(seconds, 5.0) << "a 50,000-property header took " << seconds << " s";
  // Duplicates are still found.
  std::string dup =
      "ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float "
      "x\nend_header\n";
  EXPECT_NE(errorOf([&] {
              decodeSplats(std::vector<uint8_t>(dup.begin(), dup.end()), "dup.ply");
            }).find("duplicate property 'x'"),
            std::string::npos);
}

// ---- 7. Objects naming one file share one load
// ----------------------------------------------------------------

TEST(UntrustedInput, SceneObjectsNamingOneFileShareOneLoad) {
  const fs::path dir = test::tempDir("SharedLoads");
  saveSplats(test::randomCloud(200, 0, 1), (dir / "c.ply").string());
  std::string objects;
  for (int i = 0; i < 10; ++i)
    objects += std::string(i ? ", " : "") + R"({"file": ")" + (i % 2 ? "./c.ply" : "c.ply") +
               R"(", "transform": {"translation": [)" + std::to_string(i) + ", 0, 0]}}";
  writeText(dir / "scene.json", R"({"objects": [)" + objects + "]}");
  Scene s = loadSceneJson((dir / "scene.json").string());
  ASSERT_EQ(s.objects.size(), 10u);
  for (const SceneObject& o : s.objects) EXPECT_EQ(o.cloud.get(), s.objects[0].cloud.get());
  EXPECT_EQ(s.objects[0].cloud.use_count(), 10);
  EXPECT_EQ(s.objects[3].object_to_world.m[0][3], 3.0f);
}

// ---- 8. Truncated GLB
// ---------------------------------------------------------------------------------------

TEST(UntrustedInput, TruncatedGlbSaysWhatIsShort) {
  std::vector<uint8_t> glb = encodeSplats(test::randomCloud(20, 0, 3), SplatFormat::kGltf);
  std::vector<uint8_t> cut(glb.begin(), glb.begin() + static_cast<std::ptrdiff_t>(glb.size() - 7));
  std::string e = errorOf([&] { decodeSplats(cut, "cut.glb"); });
  EXPECT_NE(e.find("cut.glb: byte 8: truncated: the GLB header declares " + std::to_string(glb.size()) +
                   " bytes, the file has " + std::to_string(cut.size())),
            std::string::npos)
      << e;
  std::vector<uint8_t> chunk = glb;
  const uint32_t json_length = 1u << 30;
  std::memcpy(chunk.data() + 12, &json_length, 4);
  e = errorOf([&] { decodeSplats(chunk, "chunk.glb"); });
  EXPECT_NE(e.find("chunk.glb: byte 12: truncated: chunk 0 (JSON) declares 1073741824 bytes"),
            std::string::npos)
      << e;
  e = errorOf([&] { decodeSplats(std::vector<uint8_t>(glb.begin(), glb.begin() + 10), "tiny.glb"); });
  EXPECT_NE(e.find("tiny.glb: byte 10: truncated: the GLB header needs 12 bytes"), std::string::npos) << e;
}

// ---- 9. Temporary files
// ----------------------------------------------------------------------------------------

TEST(UntrustedInput, AtomicWritesCleanStaleTemporariesOfTheirOwnPattern) {
  const fs::path dir = test::tempDir("TempFiles");
  // A process that has exited: its pid names a stale temporary.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const fs::path stale = dir / ("out.ply.sf-tmp-" + std::to_string(child) + "-Ab12Cd");
  const fs::path live =
      dir / ("out.ply.sf-tmp-" + std::to_string(::getppid()) + "-Ef34Gh");  // a running process
  const fs::path other = dir / "other.ply.sf-tmp-1-XXXXXX";                 // another target's
  const fs::path foreign = dir / "out.ply.tmp-1";                           // not our pattern
  for (const fs::path& p : {stale, live, other, foreign}) writeText(p, "partial");
  const std::vector<uint8_t> payload = {1, 2, 3, 4, 5};
  writeFileAtomic((dir / "out.ply").string(), payload);
  EXPECT_EQ(readFile((dir / "out.ply").string()), payload);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(foreign));
  // The new file has ordinary permissions (not mkstemp's 0600), and no temporary of ours is left.
  struct stat st {};
  ASSERT_EQ(::stat((dir / "out.ply").c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  size_t ours = 0;
  for (const auto& e : fs::directory_iterator(dir))
    ours += e.path().filename().string().rfind("out.ply.sf-tmp-", 0) == 0;
  EXPECT_EQ(ours, 1u);  // only the live process's
  // A write into a missing directory fails cleanly.
  EXPECT_NE(errorOf([&] {
              writeFileAtomic((dir / "missing/out.ply").string(), payload);
            }).find("cannot create a temporary file"),
            std::string::npos);
}

}  // namespace
}  // namespace sf
