// The level-of-detail hierarchy (src/lod/, docs/lod.md): each parent against the closed-form moments over
// its leaves, the leaves against the whole-file PLY reader, determinism, the out-of-core sort against the
// in-memory one, the cut's budget and cover over many cameras, corrupt and truncated files refused with their
// path and offset, and a build interrupted half-way leaving no index.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "core/covariance.h"
#include "core/error.h"
#include "core/random.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/ply.h"
#include "lod/build.h"
#include "lod/cut.h"
#include "lod/format.h"
#include "lod/merge.h"
#include "lod/ply_stream.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using lod::NodeRef;

// A cloud with clusters and spread (so groups hold near and far children) written as a PLY; returns its path.
std::string writeInput(const std::string& dir, size_t n, int degree, uint32_t seed,
                       const std::string& name = "in.ply") {
  GaussianCloud c = test::randomCloud(n, degree, seed);
  for (size_t i = 0; i < n; ++i)
    c.positions[i] = c.positions[i] * (i % 3 == 0 ? 4.0f : 1.0f);  // three shells of density
  const std::string path = dir + "/" + name;
  const std::vector<uint8_t> bytes = writePly(c);
  writeFileAtomic(path, bytes);
  return path;
}

lod::BuildOptions options(uint32_t fanout, uint64_t chunk_leaves, uint64_t memory = uint64_t{256} << 20) {
  lod::BuildOptions o;
  o.fanout = fanout;
  o.chunk_leaves = chunk_leaves;
  o.memory_bytes = memory;
  return o;
}

// Every file of a directory (name -> bytes).
std::map<std::string, std::vector<uint8_t>> filesOf(const std::string& dir) {
  std::map<std::string, std::vector<uint8_t>> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) files[e.path().filename().string()] = readFile(e.path().string());
  return files;
}

// The leaves (source rows) under a node.
void leavesUnder(const lod::Hierarchy& h, NodeRef r, std::vector<NodeRef>& out) {
  if (lod::nodeAt(h, r).leaf()) {
    out.push_back(r);
    return;
  }
  std::vector<NodeRef> kids;
  lod::childrenOf(h, r, kids);
  for (NodeRef k : kids) leavesUnder(h, k, out);
}

// Every node of a hierarchy.
std::vector<NodeRef> allNodes(const lod::Hierarchy& h) {
  std::vector<NodeRef> out;
  for (uint32_t i = 0; i < h.top.nodes.size(); ++i) out.push_back({lod::kNone, i});
  for (uint32_t c = 0; c < h.chunks.size(); ++c)
    for (uint32_t i = 0; i < h.chunks[c].nodes.size(); ++i) out.push_back({c, i});
  return out;
}

TEST(Lod, ParentsAreTheMomentsOfTheirLeaves) {
  const std::string dir = test::tempDir("LodMoments");
  const std::string in = writeInput(dir, 700, 1, 3);
  const GaussianCloud ref = readPly(readFile(in), in);
  const lod::BuildReport report = lod::buildHierarchy(in, dir + "/tree", options(4, 64));
  EXPECT_EQ(report.leaves, 700u);
  EXPECT_EQ(report.chunks, 11u);  // 700 / 64, rounded up
  const lod::Hierarchy h = lod::loadHierarchy(dir + "/tree");
  EXPECT_EQ(h.index.node_count, report.nodes);
  const int stride = ref.shStride();

  // The leaves are the input, each row once, bit for bit as the whole-file reader reads it.
  std::vector<int> seen(ref.size(), 0);
  for (NodeRef r : allNodes(h)) {
    const lod::Node& n = lod::nodeAt(h, r);
    if (!n.leaf()) continue;
    ASSERT_LT(n.source_index, ref.size());
    const size_t i = static_cast<size_t>(n.source_index);
    ++seen[i];
    EXPECT_EQ(std::memcmp(&n.position, &ref.positions[i], sizeof(Vec3)), 0) << i;
    EXPECT_EQ(std::memcmp(&n.scale, &ref.scales[i], sizeof(Vec3)), 0) << i;
    EXPECT_EQ(std::memcmp(&n.rotation, &ref.rotations[i], sizeof(Quat)), 0) << i;
    EXPECT_EQ(n.opacity, ref.opacities[i]) << i;
    EXPECT_EQ(std::memcmp(lod::shAt(h, r), ref.shOf(i).data(), sizeof(float) * static_cast<size_t>(stride)),
              0)
        << i;
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "row " << i;

  // Each parent against the brute-force merge over its leaves (no intermediate levels).
  size_t parents = 0;
  for (NodeRef r : allNodes(h)) {
    const lod::Node& n = lod::nodeAt(h, r);
    if (n.leaf()) continue;
    ++parents;
    std::vector<NodeRef> leaves;
    leavesUnder(h, r, leaves);
    double W = 0, mean[3] = {0, 0, 0}, cov[3][3] = {};
    std::vector<double> sh(static_cast<size_t>(stride), 0.0);
    uint64_t lowest = UINT64_MAX;
    for (NodeRef l : leaves) {
      const size_t i = static_cast<size_t>(lod::nodeAt(h, l).source_index);
      Vec3 s = ref.scales[i];
      float a = s.x, b = s.y, c = s.z;  // the product of the two largest scales
      const double area = static_cast<double>(a) * b * c / std::min({a, b, c});
      const double w = std::max(static_cast<double>(ref.opacities[i]) * area, lod::kMinWeight);
      W += w;
      for (int k = 0; k < 3; ++k) mean[k] += w * ref.positions[i][k];
      for (int k = 0; k < stride; ++k) sh[static_cast<size_t>(k)] += w * ref.shOf(i)[static_cast<size_t>(k)];
      lowest = std::min<uint64_t>(lowest, i);
    }
    for (double& m : mean) m /= W;
    double extent = 0;
    for (NodeRef l : leaves) {
      const size_t i = static_cast<size_t>(lod::nodeAt(h, l).source_index);
      const Vec3 s = ref.scales[i];
      const double area = static_cast<double>(s.x) * s.y * s.z / std::min({s.x, s.y, s.z});
      const double w = std::max(static_cast<double>(ref.opacities[i]) * area, lod::kMinWeight);
      const Mat3 ci = covarianceMatrix(covarianceFromScaleRotation(ref.scales[i], ref.rotations[i]));
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
          cov[a][b] +=
              w * (ci.m[a][b] + (ref.positions[i][a] - mean[a]) * (ref.positions[i][b] - mean[b])) / W;
    }
    for (int a = 0; a < 3; ++a) extent = std::max(extent, std::sqrt(cov[a][a]));
    const Mat3 got = covarianceMatrix(covarianceFromScaleRotation(n.scale, n.rotation));
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(n.position[k], mean[k], 1e-5 * (1 + std::fabs(mean[k])))
          << "node " << r.chunk << "/" << r.index;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        EXPECT_NEAR(got.m[a][b], cov[a][b], 2e-5 * extent * extent + 1e-9)
            << "node " << r.chunk << "/" << r.index;
    EXPECT_NEAR(n.weight, W, 1e-5 * W);
    for (int k = 0; k < stride; ++k)
      EXPECT_NEAR(lod::shAt(h, r)[k], sh[static_cast<size_t>(k)] / W, 1e-5) << k;
    // Coverage: o * s1 * s2 = W where it fits in one gaussian, else opacity 1.
    const Vec3 s = n.scale;  // sorted descending by the decomposition
    EXPECT_NEAR(n.opacity, std::min(1.0, W / (static_cast<double>(s.x) * s.y)), 1e-4);
    EXPECT_EQ(n.source_index, lowest);
    for (NodeRef l : leaves) {  // boxes nest
      const lod::Node& leaf = lod::nodeAt(h, l);
      for (int k = 0; k < 3; ++k) {
        EXPECT_LE(n.box_min[k], leaf.box_min[k]);
        EXPECT_GE(n.box_max[k], leaf.box_max[k]);
      }
    }
  }
  EXPECT_GT(parents, 200u);
}

// Reads `path` with the streaming reader in blocks of 7 rows (blocks that do not divide the count) and checks
// every row against readPly's, bit for bit; returns the rows read.
size_t expectStreamedAsReadPly(const std::string& path) {
  const GaussianCloud ref = readPly(readFile(path), path);
  lod::PlySplatStream in(path);
  EXPECT_EQ(in.count(), ref.size());
  EXPECT_EQ(in.shDegree(), ref.sh_degree);
  EXPECT_EQ(in.antialiased(), ref.antialiased);
  EXPECT_EQ(in.screenFilter(), ref.screen_filter);
  std::vector<float> block;
  size_t row = 0;
  while (const size_t n = in.read(7, block)) {
    for (size_t i = 0; i < n; ++i, ++row) {
      const float* d = block.data() + i * in.stride();
      const Vec3 p{d[0], d[1], d[2]}, s{d[3], d[4], d[5]};
      EXPECT_EQ(std::memcmp(&p, &ref.positions[row], sizeof(Vec3)), 0) << row;
      EXPECT_EQ(std::memcmp(&s, &ref.scales[row], sizeof(Vec3)), 0) << row;
      EXPECT_EQ(std::memcmp(d + 6, &ref.rotations[row], sizeof(Quat)), 0) << row;
      EXPECT_EQ(d[10], ref.opacities[row]) << row;
      EXPECT_EQ(std::memcmp(d + lod::kSplatFixedFloats, ref.shOf(row).data(), ref.shOf(row).size_bytes()), 0)
          << row;
    }
  }
  return row;
}

TEST(Lod, StreamingReaderReadsAsTheWholeFileReader) {
  const std::string dir = test::tempDir("LodStream");
  GaussianCloud c = test::randomCloud(53, 2, 13);
  c.normals.assign(c.size(), Vec3{0, 0, 1});  // channels the hierarchy does not keep: skipped by the reader
  c.ids.resize(c.size(), 7);
  c.extras.push_back({"confidence", ScalarType::kFloat64, std::vector<double>(c.size(), 0.25)});
  c.opacities[4] = 1.0f;  // a logit at the clamp
  writeFileAtomic(dir + "/in.ply", writePly(c));
  EXPECT_EQ(expectStreamedAsReadPly(dir + "/in.ply"), 53u);
  // Another layout, through the same row decoder (io/ply.h): other scalar types, 8-bit colour instead of
  // f_dc, properties in another order, a quaternion of length 2, an antialiasing comment.
  std::string layout =
      "ply\nformat binary_little_endian 1.0\ncomment SplatRenderMode: mip\nelement vertex 9\n"
      "property uchar red\nproperty double x\nproperty short y\nproperty float z\nproperty uchar green\n"
      "property float rot_1\nproperty float rot_0\nproperty float rot_2\nproperty float rot_3\n"
      "property float opacity\nproperty float scale_2\nproperty float scale_0\nproperty float scale_1\n"
      "property int id\nproperty uchar blue\nend_header\n";
  std::vector<uint8_t> other(layout.begin(), layout.end());
  auto put = [&](auto v) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    other.insert(other.end(), b, b + sizeof(v));
  };
  for (int i = 0; i < 9; ++i) {
    const float f = static_cast<float>(i);
    put(static_cast<uint8_t>(20 * i)), put(0.25 * i - 1), put(static_cast<int16_t>(3 - i)), put(0.5f * f);
    put(static_cast<uint8_t>(255 - 7 * i));
    put(0.2f * f), put(2.0f), put(-0.1f * f), put(0.3f);
    put(0.4f * f - 2), put(-3.0f), put(-2.0f + 0.1f * f), put(-4.0f);
    put(static_cast<int32_t>(i)), put(static_cast<uint8_t>(9 * i));
  }
  writeFileAtomic(dir + "/colour.ply", other);
  EXPECT_EQ(expectStreamedAsReadPly(dir + "/colour.ply"), 9u);
  // Refused with the path, the byte and why: ASCII, a truncated body, a missing property.
  const std::string ascii = dir + "/ascii.ply";
  const std::string text = "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nend_header\n0\n";
  writeFileAtomic(ascii,
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  EXPECT_NE(test::errorOf([&] {
              lod::PlySplatStream s(ascii);
            }).find("ascii.ply: byte 0: an ASCII PLY: lod build reads binary little-endian PLY"),
            std::string::npos);
  std::vector<uint8_t> bytes = readFile(dir + "/in.ply");
  bytes.resize(bytes.size() - 10);
  writeFileAtomic(dir + "/cut.ply", bytes);
  const std::string cut = test::errorOf([&] { lod::PlySplatStream s(dir + "/cut.ply"); });
  EXPECT_NE(cut.find("cut.ply: byte "), std::string::npos) << cut;
  EXPECT_NE(cut.find("truncated: vertex count 53"), std::string::npos) << cut;
  const std::string no_opacity =
      "ply\nformat binary_little_endian 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty "
      "float z\nend_header\n";
  writeFileAtomic(
      dir + "/xyz.ply",
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(no_opacity.data()), no_opacity.size()));
  EXPECT_NE(test::errorOf([&] {
              lod::PlySplatStream s(dir + "/xyz.ply");
            }).find("vertex element lacks scale_0..scale_2"),
            std::string::npos);
}

// A Mip-Splatting file: filter_3D baked into every row as readPly bakes it, and the file's antialiasing (its
// 2D mip filter) recorded in the index and given to the cut.
TEST(Lod, MipSplattingFilesKeepTheirFilters) {
  const std::string dir = test::tempDir("LodMip");
  GaussianCloud c = test::randomCloud(40, 1, 21);
  std::vector<double> filters(c.size());
  for (size_t i = 0; i < c.size(); ++i) filters[i] = 0.002 + 0.001 * static_cast<double>(i % 7);
  c.extras.push_back({"filter_3D", ScalarType::kFloat32, filters});
  writeFileAtomic(dir + "/in.ply", writePly(c));
  const GaussianCloud ref = readPly(readFile(dir + "/in.ply"), dir + "/in.ply");
  ASSERT_TRUE(ref.antialiased);
  lod::PlySplatStream in(dir + "/in.ply");
  EXPECT_TRUE(in.antialiased());
  EXPECT_EQ(in.screenFilter(), kScreenFilterMip);
  std::vector<float> block;
  ASSERT_EQ(in.read(100, block), c.size());
  for (size_t row = 0; row < c.size(); ++row) {
    const float* d = block.data() + row * in.stride();
    const Vec3 sc{d[3], d[4], d[5]};
    EXPECT_EQ(std::memcmp(&sc, &ref.scales[row], sizeof(Vec3)), 0) << row;
    EXPECT_EQ(d[10], ref.opacities[row]) << row;
  }
  lod::buildHierarchy(dir + "/in.ply", dir + "/out", options(4, 16));
  const lod::Index index = lod::loadIndex(dir + "/out");
  EXPECT_TRUE(index.antialiased);
  EXPECT_EQ(index.screen_filter, kScreenFilterMip);
}

TEST(Lod, RowsHoldingNonFiniteValuesAreLeftOut) {
  const std::string dir = test::tempDir("LodNonFinite");
  GaussianCloud c = test::randomCloud(50, 0, 4);
  c.positions[7].y = NAN;
  c.sh[3 * 20] = INFINITY;
  writeFileAtomic(dir + "/in.ply", writePly(c));
  const lod::BuildReport r = lod::buildHierarchy(dir + "/in.ply", dir + "/tree", options(4, 16));
  EXPECT_EQ(r.dropped_non_finite, 2u);
  EXPECT_EQ(r.leaves, 48u);
  EXPECT_EQ(lod::loadIndex(dir + "/tree").dropped_non_finite, 2u);
}

TEST(Lod, BuildIsDeterministic) {
  const std::string dir = test::tempDir("LodDeterministic");
  const std::string in = writeInput(dir, 2000, 2, 5);
  lod::buildHierarchy(in, dir + "/a", options(8, 100));
  lod::buildHierarchy(in, dir + "/b", options(8, 100));
  const auto a = filesOf(dir + "/a"), b = filesOf(dir + "/b");
  EXPECT_EQ(a.size(), 6u);  // 4 chunks of 512 (100 rounded up), the top, the index
  EXPECT_EQ(a, b);
}

TEST(Lod, OutOfCoreBuildEqualsTheInMemoryBuild) {
  const std::string dir = test::tempDir("LodOutOfCore");
  const std::string in = writeInput(dir, 3000, 3, 6);
  const lod::BuildReport memory = lod::buildHierarchy(in, dir + "/memory", options(4, 64));
  EXPECT_EQ(memory.runs, 1u);
  lod::BuildOptions tiny = options(4, 64, 256 << 10);  // 256 KiB: runs of 256 gaussians
  tiny.scratch_dir = dir + "/scratch";
  std::vector<std::string> lines;
  tiny.progress = [&](const std::string& line) { lines.push_back(line); };
  const lod::BuildReport disk = lod::buildHierarchy(in, dir + "/disk", tiny);
  EXPECT_GT(disk.runs, 5u);
  EXPECT_EQ(filesOf(dir + "/memory"), filesOf(dir + "/disk"));
  EXPECT_TRUE(fs::is_empty(dir + "/scratch")) << "run files left behind";
  EXPECT_GT(disk.peak_memory_bytes, 0u);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(),
                          [](const std::string& l) { return l.find("out of core") != std::string::npos; }));
  // A chunk larger than the memory setting allows is refused with the figures.
  EXPECT_NE(test::errorOf([&] {
              lod::buildHierarchy(in, dir + "/no", options(4, 4096, 64 << 10));
            }).find("more than half the memory setting"),
            std::string::npos);
}

// A look-at camera from a random eye, at a random target.
Camera randomCamera(uint64_t& rng) {
  auto u = [&](float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(unitDouble(splitmix64Next(rng)));
  };
  const Vec3 eye{u(-8, 8), u(-8, 8), u(-8, 8)}, target{u(-1, 1), u(-1, 1), u(-1, 1)};
  Vec3 up{0, 1, 0};
  if (std::fabs(normalize(target - eye).y) > 0.95f) up = {1, 0, 0};
  return lookAtCamera(eye, target, up, u(20, 90), 320, 180);
}

TEST(Lod, CutStaysWithinTheBudgetAndCoversEachVisibleLeafOnce) {
  const std::string dir = test::tempDir("LodCut");
  const std::string in = writeInput(dir, 5000, 0, 7);
  lod::buildHierarchy(in, dir + "/tree", options(8, 512));
  const lod::Hierarchy h = lod::loadHierarchy(dir + "/tree");
  // Leaf id -> position in a dense array.
  std::vector<NodeRef> nodes = allNodes(h);
  std::vector<NodeRef> leaves;
  for (NodeRef r : nodes)
    if (lod::nodeAt(h, r).leaf()) leaves.push_back(r);
  ASSERT_EQ(leaves.size(), 5000u);
  uint64_t rng = 11;
  size_t limited = 0, culled_some = 0;
  for (int k = 0; k < 60; ++k) {
    const Camera cam = randomCamera(rng);
    lod::CutOptions o;
    o.budget = k % 10 == 9 ? 100000 : 1 + splitmix64Next(rng) % 6000;
    o.threshold_px = k % 4 == 3 ? 2.0f : 0.0f;
    const lod::CutResult cut = lod::selectCut(h, cam, o);
    ASSERT_LE(cut.nodes.size(), o.budget) << "camera " << k;
    limited += cut.budget_limited;
    culled_some += cut.culled > 0;
    // Cover: each leaf under at most one chosen node; exactly one for a leaf whose box is in view.
    std::vector<int> cover(5000, 0);
    for (NodeRef r : cut.nodes) {
      std::vector<NodeRef> under;
      leavesUnder(h, r, under);
      for (NodeRef l : under) ++cover[lod::nodeAt(h, l).source_index];
    }
    size_t visible = 0;
    for (NodeRef l : leaves) {
      const lod::Node& n = lod::nodeAt(h, l);
      const int c = cover[n.source_index];
      ASSERT_LE(c, 1) << "camera " << k << ": leaf " << n.source_index << " drawn twice";
      if (lod::boxVisible(n.box_min, n.box_max, cam, o.margin_px)) {
        ++visible;
        ASSERT_EQ(c, 1) << "camera " << k << ": visible leaf " << n.source_index << " not covered (a crack)";
      }
    }
    // A budget above the visible leaves with no threshold: the cut is exactly those leaves.
    if (o.budget >= 5000 && o.threshold_px == 0) {
      EXPECT_EQ(cut.nodes.size(), visible) << k;
      EXPECT_EQ(cut.leaves, visible) << k;
      EXPECT_FALSE(cut.budget_limited);
    }
    // The cut comes in source order.
    for (size_t i = 1; i < cut.nodes.size(); ++i)
      ASSERT_LT(lod::nodeAt(h, cut.nodes[i - 1]).source_index, lod::nodeAt(h, cut.nodes[i]).source_index);
  }
  EXPECT_GT(limited, 20u);      // most budgets bind
  EXPECT_GT(culled_some, 10u);  // and the frustum drops nodes
  // A cut cloud has the node's values.
  lod::CutOptions o;
  o.budget = 300;
  const Camera cam = lookAtCamera({0, 0, -9}, {0, 0, 0}, {0, 1, 0}, 60, 320, 180);
  const lod::CutResult cut = lod::selectCut(h, cam, o);
  const GaussianCloud cloud = lod::cutCloud(h, cut);
  ASSERT_EQ(cloud.size(), cut.nodes.size());
  EXPECT_TRUE(cloud.validate().empty()) << cloud.validate();
  EXPECT_LE(cloud.size(), 300u);
  EXPECT_GT(cloud.size(), 290u);
}

// The FormatError `f` throws (fails the test when it throws none or another kind).
FormatError formatErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a FormatError: " << e.what();
    return FormatError("", 0, "");
  }
  ADD_FAILURE() << "no error";
  return FormatError("", 0, "");
}

TEST(Lod, CorruptAndTruncatedFilesAreRefusedWithPathAndOffset) {
  const std::string dir = test::tempDir("LodCorrupt");
  const std::string in = writeInput(dir, 600, 1, 8);
  lod::buildHierarchy(in, dir + "/good", options(4, 64));
  const std::string tree = dir + "/tree";
  auto fresh = [&] {
    fs::remove_all(tree);
    fs::copy(dir + "/good", tree);
  };
  const size_t record = lod::nodeRecordBytes(1);
  const std::string chunk = tree + "/chunk_000003.sflc";
  auto edit = [&](size_t offset, const void* bytes, size_t n) {
    std::vector<uint8_t> b = readFile(chunk);
    std::memcpy(b.data() + offset, bytes, n);
    std::ofstream(chunk, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };

  // Truncated: the path, where the file ends and why.
  fresh();
  const uint64_t size = fs::file_size(chunk);
  fs::resize_file(chunk, size / 2);
  FormatError e = formatErrorOf([&] { lod::loadHierarchy(tree); });
  EXPECT_EQ(e.path(), chunk);
  EXPECT_EQ(e.offset(), size / 2);
  EXPECT_NE(e.reason().find("truncated"), std::string::npos) << e.what();

  // A node's child range out of the chunk: the byte of the field.
  fresh();
  const uint32_t huge = 1000000;
  edit(lod::kChunkHeaderBytes + 0 * record + 76, &huge, 4);
  e = formatErrorOf([&] { lod::loadHierarchy(tree); });
  EXPECT_EQ(e.path(), chunk);
  EXPECT_EQ(e.offset(), lod::kChunkHeaderBytes + 76);
  EXPECT_NE(e.reason().find("children"), std::string::npos) << e.what();

  // A NaN position in node 5.
  fresh();
  const float nan = NAN;
  edit(lod::kChunkHeaderBytes + 5 * record + 4, &nan, 4);
  e = formatErrorOf([&] { lod::loadHierarchy(tree); });
  EXPECT_EQ(e.path(), chunk);
  EXPECT_EQ(e.offset(), lod::kChunkHeaderBytes + 5 * record);
  EXPECT_NE(e.reason().find("node 5: position not finite"), std::string::npos) << e.what();

  // A changed SH coefficient: structurally fine, caught by the checksum at the chunk's offset.
  fresh();
  const float other = 0.123f;
  edit(lod::kChunkHeaderBytes + 9 * record + lod::kNodeFixedBytes + 8, &other, 4);
  e = formatErrorOf([&] { lod::loadHierarchy(tree); });
  EXPECT_EQ(e.path(), chunk);
  EXPECT_EQ(e.offset(), 0u);
  EXPECT_NE(e.reason().find("checksum mismatch"), std::string::npos) << e.what();

  // An unknown version.
  fresh();
  const uint32_t v2 = 2;
  edit(4, &v2, 4);
  e = formatErrorOf([&] { lod::loadHierarchy(tree); });
  EXPECT_EQ(e.offset(), 4u);
  EXPECT_NE(e.reason().find("unknown chunk version 2"), std::string::npos) << e.what();

  // A missing chunk file: named.
  fresh();
  fs::remove(chunk);
  EXPECT_NE(test::errorOf([&] { lod::loadHierarchy(tree); }).find(chunk + ": file is missing"),
            std::string::npos);

  // Every prefix of the index, and every prefix of the top chunk, refused with the path (never a crash).
  fresh();
  const std::string index_path = tree + "/" + lod::kIndexFileName;
  const std::vector<uint8_t> index = readFile(index_path);
  for (size_t n = 0; n < index.size(); ++n) {
    FormatError p =
        formatErrorOf([&] { lod::decodeIndex(std::span<const uint8_t>(index.data(), n), index_path); });
    ASSERT_EQ(p.path(), index_path) << n;
    ASSERT_LE(p.offset(), n) << n;
  }
  const lod::Index x = lod::decodeIndex(index, index_path);
  const std::vector<uint8_t> top = readFile(tree + "/" + lod::kTopFileName);
  for (size_t n = 0; n < top.size(); n += 3)
    formatErrorOf(
        [&] { lod::decodeChunk(std::span<const uint8_t>(top.data(), n), "top", 0, x, lod::kNone); });
  // A flipped index byte: the checksum.
  std::vector<uint8_t> flipped = index;
  flipped[60] ^= 0x40;
  e = formatErrorOf([&] { lod::decodeIndex(flipped, index_path); });
  EXPECT_NE(e.reason().find("checksum"), std::string::npos) << e.what();
  // A chunk file name leaving the directory is refused even with a matching checksum.
  std::vector<uint8_t> escape = index;
  const char evil[] = "../../etc/passwd";
  std::memcpy(escape.data() + lod::kIndexHeaderBytes + lod::kChunkEntryBytes, evil, sizeof(evil));
  const uint32_t crc = lod::crc32Of(std::span<const uint8_t>(escape.data(), escape.size() - 4));
  std::memcpy(escape.data() + escape.size() - 4, &crc, 4);
  e = formatErrorOf([&] { lod::decodeIndex(escape, index_path); });
  EXPECT_EQ(e.offset(), lod::kIndexHeaderBytes + lod::kChunkEntryBytes);
  EXPECT_NE(e.reason().find("not a plain name"), std::string::npos) << e.what();
}

// Checks the readers once lacked (docs/formats/lod.md), each refused with the file and the byte of the field:
// an index whose levels per chunk disagree with its chunks, a top node over more chunks than the fan-out, a
// top chunk entry that is not the empty one without a top, percentile bounds out of order.
TEST(Lod, InconsistentLevelsFanOutAndIndexFieldsAreRefused) {
  const std::string dir = test::tempDir("LodInconsistent");
  lod::buildHierarchy(writeInput(dir, 600, 1, 8), dir + "/good", options(4, 64));  // 10 chunks, 3 levels each
  const std::string tree = dir + "/tree", index_path = tree + "/" + lod::kIndexFileName;
  auto fresh = [&] {
    fs::remove_all(tree);
    fs::copy(dir + "/good", tree);
  };
  auto writeIndex = [&](std::vector<uint8_t> b) {  // with its checksum made right
    const uint32_t crc = lod::crc32Of(std::span<const uint8_t>(b.data(), b.size() - 4));
    std::memcpy(b.data() + b.size() - 4, &crc, 4);
    writeFileAtomic(index_path, b);
  };
  const size_t record = lod::nodeRecordBytes(1);

  // chunk_levels 4 and chunk_leaves 256 (a consistent pair; every chunk's leaf count fits) over chunks of 3
  // levels: the top's nodes over the chunks' roots are at level 4, not 5; a chunk's root at 3, not 4.
  fresh();
  std::vector<uint8_t> index = readFile(index_path);
  const uint32_t leaves256 = 256, levels4 = 4;
  std::memcpy(index.data() + 16, &leaves256, 4);
  std::memcpy(index.data() + 20, &levels4, 4);
  writeIndex(index);
  const lod::Index deeper = lod::loadIndex(tree);
  const lod::Chunk top = lod::loadChunk(dir + "/good", lod::loadIndex(dir + "/good"), lod::kNone);
  uint32_t over_chunks = 0;
  while (!(top.nodes[over_chunks].flags & lod::kChildrenAreChunks)) ++over_chunks;
  FormatError e = formatErrorOf([&] { lod::loadHierarchy(tree); });
  EXPECT_EQ(e.path(), tree + "/" + lod::kTopFileName);
  EXPECT_EQ(e.offset(), lod::kChunkHeaderBytes + over_chunks * record + 84);
  EXPECT_NE(e.reason().find("chunk roots' parent at level 4, expected 5"), std::string::npos) << e.what();
  e = formatErrorOf([&] { lod::loadChunk(tree, deeper, 2); });
  EXPECT_EQ(e.path(), tree + "/chunk_000002.sflc");
  EXPECT_EQ(e.offset(), lod::kChunkHeaderBytes + 84);
  EXPECT_NE(e.reason().find("chunk 2: node 0: the chunk's root at level 3"), std::string::npos) << e.what();

  // A top node claiming fan-out + 1 chunks (all inside the chunk list): refused by the chunk's own checks.
  fresh();
  const lod::Index x = lod::loadIndex(tree);
  std::vector<uint8_t> top_bytes = readFile(tree + "/" + lod::kTopFileName);
  const uint32_t five = 5;
  std::memcpy(top_bytes.data() + lod::kChunkHeaderBytes + over_chunks * record + 80, &five, 4);
  e = formatErrorOf([&] { lod::decodeChunk(top_bytes, "top", 0, x, lod::kNone); });
  EXPECT_EQ(e.offset(), lod::kChunkHeaderBytes + over_chunks * record + 80);
  EXPECT_NE(e.reason().find("5 children, the fan-out is 4"), std::string::npos) << e.what();

  // Percentile bounds with the 1st above the 99th.
  fresh();
  index = readFile(index_path);
  float p01x, p99x;
  std::memcpy(&p01x, index.data() + 80, 4);
  std::memcpy(&p99x, index.data() + 92, 4);
  ASSERT_LT(p01x, p99x);
  std::memcpy(index.data() + 80, &p99x, 4);
  std::memcpy(index.data() + 92, &p01x, 4);
  writeIndex(index);
  e = formatErrorOf([&] { lod::loadIndex(tree); });
  EXPECT_EQ(e.offset(), 80u);
  EXPECT_NE(e.reason().find("percentile bounds"), std::string::npos) << e.what();

  // One chunk, no top: its entry must be the empty one the writer writes (a stray byte is refused at that
  // byte).
  lod::buildHierarchy(writeInput(dir, 40, 0, 12, "small.ply"), dir + "/one", options(8, 64));
  std::vector<uint8_t> one = readFile(dir + "/one/" + lod::kIndexFileName);
  ASSERT_EQ(one.size(), lod::kIndexHeaderBytes + 2 * lod::kChunkEntryBytes + 4);
  one[lod::kIndexHeaderBytes + 5] = 'x';
  const uint32_t crc = lod::crc32Of(std::span<const uint8_t>(one.data(), one.size() - 4));
  std::memcpy(one.data() + one.size() - 4, &crc, 4);
  e = formatErrorOf([&] { lod::decodeIndex(one, "one.sflod"); });
  EXPECT_EQ(e.offset(), lod::kIndexHeaderBytes + 5);
  EXPECT_NE(e.reason().find("top chunk entry not empty"), std::string::npos) << e.what();
}

TEST(Lod, InterruptedBuildLeavesNoIndex) {
  const std::string dir = test::tempDir("LodInterrupted");
  const std::string big = writeInput(dir, 1500, 0, 9, "big.ply"),
                    small = writeInput(dir, 300, 0, 10, "small.ply");
  const std::string tree = dir + "/tree";
  lod::buildHierarchy(big, tree, options(4, 64));  // an earlier, finished build: 24 chunks
  ASSERT_TRUE(fs::exists(tree + "/" + lod::kIndexFileName));
  lod::BuildOptions o = options(4, 64, 256 << 10);  // out of core, so run files exist when it stops
  o.scratch_dir = dir + "/scratch";
  o.after_chunk = [](size_t written) {
    if (written == 3) throw Error("stopped after 3 chunks");
  };
  EXPECT_EQ(test::errorOf([&] { lod::buildHierarchy(big, tree, o); }), "stopped after 3 chunks");
  EXPECT_FALSE(fs::exists(tree + "/" + lod::kIndexFileName));
  EXPECT_NE(test::errorOf([&] { lod::loadHierarchy(tree); }).find("not a finished level-of-detail build"),
            std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir + "/scratch"));
  for (const auto& e : fs::directory_iterator(tree))
    EXPECT_EQ(e.path().filename().string().find(".sf-tmp-"), std::string::npos) << e.path();
  // A finished build over it: the index lists only its own chunks, the earlier build's others are gone.
  const lod::BuildReport r = lod::buildHierarchy(small, tree, options(4, 64));
  EXPECT_EQ(r.chunks, 5u);
  size_t chunk_files = 0;
  for (const auto& e : fs::directory_iterator(tree)) chunk_files += e.path().extension() == ".sflc";
  EXPECT_EQ(chunk_files, 6u);  // 5 chunks and the top
  EXPECT_EQ(lod::loadHierarchy(tree).index.leaf_count, 300u);
}

// The binary little-endian PLY `bytes` (float properties only, as writePly writes them) holding the same
// values as a big-endian or an ASCII PLY (each float printed with 17 digits: read back exactly).
std::vector<uint8_t> reencodePly(const std::vector<uint8_t>& bytes, bool ascii) {
  const std::string text(bytes.begin(), bytes.end());
  const size_t end = text.find("end_header\n") + 11;
  std::string header = text.substr(0, end);
  size_t floats = 0;
  for (size_t at = header.find("\nproperty "); at != std::string::npos;
       at = header.find("\nproperty ", at + 1)) {
    EXPECT_EQ(header.compare(at, 16, "\nproperty float "), 0) << header;
    ++floats;
  }
  const std::string from = "binary_little_endian";
  header.replace(header.find(from), from.size(), ascii ? "ascii" : "binary_big_endian");
  std::vector<uint8_t> out(header.begin(), header.end());
  const size_t values = (bytes.size() - end) / 4;
  EXPECT_EQ(values % floats, 0u);
  for (size_t v = 0; v < values; ++v) {
    const uint8_t* p = bytes.data() + end + 4 * v;
    if (ascii) {
      float f;
      std::memcpy(&f, p, 4);
      char word[40];
      std::snprintf(word, sizeof(word), "%.17g%c", static_cast<double>(f), (v + 1) % floats ? ' ' : '\n');
      out.insert(out.end(), word, word + std::strlen(word));
    } else {
      out.insert(out.end(), {p[3], p[2], p[1], p[0]});
    }
  }
  return out;
}

// Every other format goes through the engine's loader and the same build: the same gaussians as an ASCII or
// a big-endian PLY build to the same bytes as the binary PLY streamed, in memory and out of core alike.
TEST(Lod, DecodedInputsBuildAsTheBinaryPly) {
  const std::string dir = test::tempDir("LodDecoded");
  const std::string in = writeInput(dir, 2500, 2, 21);
  const std::vector<uint8_t> bytes = readFile(in);
  writeFileAtomic(dir + "/be.ply", reencodePly(bytes, false));
  writeFileAtomic(dir + "/ascii.ply", reencodePly(bytes, true));
  EXPECT_TRUE(lod::isStreamedPly(in));
  EXPECT_FALSE(lod::isStreamedPly(dir + "/be.ply"));
  EXPECT_FALSE(lod::isStreamedPly(dir + "/ascii.ply"));
  const lod::BuildReport streamed = lod::buildHierarchy(in, dir + "/le", options(4, 64));
  EXPECT_EQ(streamed.input_format, "binary PLY, streamed");
  const auto reference = filesOf(dir + "/le");
  EXPECT_EQ(reference.size(), 42u);  // 40 chunks, the top, the index
  for (const char* name : {"be", "ascii"}) {
    std::vector<std::string> lines;
    lod::BuildOptions o = options(4, 64);
    o.progress = [&](const std::string& line) { lines.push_back(line); };
    const lod::BuildReport r = lod::buildHierarchy(dir + "/" + name + ".ply", dir + "/" + name, o);
    EXPECT_EQ(r.input_format, "ply, decoded whole") << name;
    EXPECT_EQ(r.leaves, 2500u);
    EXPECT_EQ(filesOf(dir + "/" + name), reference) << name;
    EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("decoded") != std::string::npos && l.find("held in memory") != std::string::npos;
    })) << name;
    // Out of core: the decoded rows sorted in runs on disk, the same bytes.
    lod::BuildOptions tiny = options(4, 64, 1 << 20);
    tiny.scratch_dir = dir + "/scratch";
    const lod::BuildReport disk =
        lod::buildHierarchy(dir + "/" + name + ".ply", dir + "/" + name + "_disk", tiny);
    EXPECT_GT(disk.runs, 1u) << name;
    EXPECT_EQ(filesOf(dir + "/" + name + "_disk"), reference) << name;
  }

  // A lossy format: the leaves are the loader's decoded rows, bit for bit, each once.
  GaussianCloud cloud = readPly(bytes, in);
  saveSplats(cloud, dir + "/in.spz");
  const GaussianCloud decoded = loadSplats(dir + "/in.spz").cloud;
  const lod::BuildReport spz = lod::buildHierarchy(dir + "/in.spz", dir + "/spz", options(4, 64));
  EXPECT_EQ(spz.input_format, "spz, decoded whole");
  EXPECT_EQ(spz.leaves, decoded.size());
  const lod::Hierarchy h = lod::loadHierarchy(dir + "/spz");
  std::vector<int> seen(decoded.size(), 0);
  for (NodeRef r : allNodes(h)) {
    const lod::Node& n = lod::nodeAt(h, r);
    if (!n.leaf()) continue;
    ASSERT_LT(n.source_index, decoded.size());
    const size_t i = static_cast<size_t>(n.source_index);
    ++seen[i];
    EXPECT_EQ(std::memcmp(&n.position, &decoded.positions[i], sizeof(Vec3)), 0) << i;
    EXPECT_EQ(std::memcmp(&n.scale, &decoded.scales[i], sizeof(Vec3)), 0) << i;
    EXPECT_EQ(std::memcmp(&n.rotation, &decoded.rotations[i], sizeof(Quat)), 0) << i;
    EXPECT_EQ(n.opacity, decoded.opacities[i]) << i;
    EXPECT_EQ(std::memcmp(lod::shAt(h, r), decoded.shOf(i).data(), sizeof(float) * decoded.shOf(i).size()), 0)
        << i;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(seen.size()));
}

// Non-finite rows of a decoded input are left out by the loader and counted as the stream counts them.
TEST(Lod, DecodedInputsDropNonFiniteRows) {
  const std::string dir = test::tempDir("LodDecodedNonFinite");
  const std::string in = writeInput(dir, 60, 0, 22);
  std::vector<uint8_t> be = reencodePly(readFile(in), false);
  const std::string text(be.begin(), be.end());
  const size_t data = text.find("end_header\n") + 11, row_bytes = (be.size() - data) / 60;
  std::memcpy(be.data() + data + 7 * row_bytes, "\x7f\xc0\x00\x00", 4);  // row 7's x: NaN (big-endian)
  writeFileAtomic(dir + "/be.ply", be);
  const lod::BuildReport r = lod::buildHierarchy(dir + "/be.ply", dir + "/tree", options(4, 16));
  EXPECT_EQ(r.dropped_non_finite, 1u);
  EXPECT_EQ(r.input_rows, 60u);
  EXPECT_EQ(r.leaves, 59u);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();  // the count is the report's, not a second warning
  EXPECT_EQ(lod::loadIndex(dir + "/tree").dropped_non_finite, 1u);
}

// A decoded cloud is held whole: one larger than the memory setting is refused with the figures; files that
// are not splats, or cut short, are refused with the loader's message naming them.
TEST(Lod, DecodedInputsRefusedClearly) {
  const std::string dir = test::tempDir("LodDecodedRefused");
  const std::string in = writeInput(dir, 3000, 3, 23);
  saveSplats(readPly(readFile(in), in), dir + "/in.spz");
  const std::string big =
      test::errorOf([&] { lod::buildHierarchy(dir + "/in.spz", dir + "/big", options(4, 64, 256 << 10)); });
  EXPECT_NE(big.find(dir + "/in.spz: decoded whole, its 3000 gaussians hold"), std::string::npos) << big;
  EXPECT_NE(big.find("more than the memory setting"), std::string::npos) << big;
  EXPECT_NE(big.find("--memory-mb"), std::string::npos) << big;
  EXPECT_FALSE(fs::exists(dir + "/big/" + lod::kIndexFileName));

  writeFileAtomic(dir + "/notes.txt", std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o', '\n'});
  const std::string text =
      test::errorOf([&] { lod::buildHierarchy(dir + "/notes.txt", dir + "/t", options(4, 64)); });
  EXPECT_NE(text.find(dir + "/notes.txt"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown splat format"), std::string::npos) << text;

  std::vector<uint8_t> spz = readFile(dir + "/in.spz");
  spz.resize(spz.size() / 2);
  writeFileAtomic(dir + "/cut.spz", spz);
  const std::string cut =
      test::errorOf([&] { lod::buildHierarchy(dir + "/cut.spz", dir + "/c", options(4, 64)); });
  EXPECT_NE(cut.find(dir + "/cut.spz"), std::string::npos) << cut;
  EXPECT_FALSE(fs::exists(dir + "/c/" + lod::kIndexFileName));
}

TEST(Lod, OneChunkHasNoTop) {
  const std::string dir = test::tempDir("LodOneChunk");
  const std::string in = writeInput(dir, 40, 0, 12);
  const lod::BuildReport r = lod::buildHierarchy(in, dir + "/tree", options(8, 64));
  EXPECT_EQ(r.chunks, 1u);
  EXPECT_EQ(r.levels, 3u);  // 40 -> 5 -> 1
  const lod::Hierarchy h = lod::loadHierarchy(dir + "/tree");
  EXPECT_FALSE(h.index.has_top);
  EXPECT_EQ(lod::levelCounts(h), (std::vector<uint64_t>{40, 5, 1}));
  EXPECT_FALSE(fs::exists(dir + "/tree/" + lod::kTopFileName));
}

}  // namespace
}  // namespace sf
