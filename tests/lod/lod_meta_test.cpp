// PlayCanvas's streamed LOD (io/lod_meta.h, lod/meta_cut.h): splat-transform 3's lod-meta.json output read
// level by level against splat-transform's own reading of it (the peer decodes the same SOG files), its
// environment (-l -1) against the peer's decode of that SOG and against the input it was made from; a
// hand-written tree over one SOG file read range by range against that file, with an environment after the
// leaves; refusals naming the JSON path; the camera cut against its rule worked by hand; the CLI.
#include "io/lod_meta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/sog.h"
#include "lod/meta_cut.h"
#include "render/camera.h"
#include "support/peer_tools.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSt3 = "splat-transform-3/bin/cli.mjs";

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Row order of a cloud by position (x, then y, then z): the peer's reader need not keep the tree's order.
std::vector<size_t> byPosition(const GaussianCloud& c) {
  std::vector<size_t> order(c.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Vec3 p = c.positions[a], q = c.positions[b];
    return p.x != q.x ? p.x < q.x : p.y != q.y ? p.y < q.y : p.z < q.z;
  });
  return order;
}

// Rows [begin, end) of a cloud.
GaussianCloud rowsOf(GaussianCloud c, size_t begin, size_t end) {
  std::vector<uint8_t> drop(c.size(), 1);
  std::fill(drop.begin() + static_cast<std::ptrdiff_t>(begin),
            drop.begin() + static_cast<std::ptrdiff_t>(end), 0);
  eraseRows(c, drop);
  return c;
}

// The two decodes of the same SOG rows agree value by value (as the SOG peer tests require).
void expectSameGaussians(const GaussianCloud& ours, const GaussianCloud& peer, const std::string& label) {
  ASSERT_EQ(ours.size(), peer.size()) << label;
  ASSERT_EQ(ours.sh_degree, peer.sh_degree) << label;
  const std::vector<size_t> a = byPosition(ours), b = byPosition(peer);
  size_t bad = 0;
  std::string first;
  auto check = [&](size_t i, const char* what, double x, double y, double tol) {
    if (std::abs(x - y) > tol * (1.0 + std::abs(x)) && bad++ == 0)
      first = std::string(what) + " of the " + std::to_string(i) + "th by position: ours " +
              std::to_string(x) + ", peer " + std::to_string(y);
  };
  for (size_t k = 0; k < a.size(); ++k) {
    const size_t i = a[k], j = b[k];
    for (int c = 0; c < 3; ++c) {
      check(k, "position", ours.positions[i][c], peer.positions[j][c], 1e-6);
      check(k, "scale", ours.scales[i][c], peer.scales[j][c], 1e-5);
    }
    const Quat q = ours.rotations[i], r = peer.rotations[j];
    check(k, "rotation", std::abs(q.w * r.w + q.x * r.x + q.y * r.y + q.z * r.z), 1.0, 1e-5);
    check(k, "opacity", ours.opacities[i], peer.opacities[j], 2e-6);
    const auto so = ours.shOf(i), sp = peer.shOf(j);
    for (size_t s = 0; s < so.size(); ++s) check(k, "sh", so[s], sp[s], 1e-6);
  }
  EXPECT_EQ(bad, 0u) << label << ": " << bad << " values differ; first: " << first;
}

// splat-transform 3 writes a two-level streamed LOD; each level read here equals splat-transform's own read
// of that level (-L n), and loading the lod-meta.json as a splat file is level 0.
TEST(LodMetaPeer, SplatTransformLevelsReadAsItReadsThem) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  const std::string dir = test::tempDir("LodMetaPeer");
  GaussianCloud fine = test::randomCloud(1200, 1, 7), coarse = test::randomCloud(300, 1, 8);
  for (GaussianCloud* c : {&fine, &coarse})
    for (Vec3& p : c->positions) p = p * 6.0f;  // spread over several chunks of 1 m
  saveSplats(fine, dir + "/fine.ply");
  saveSplats(coarse, dir + "/coarse.ply");
  ASSERT_TRUE(test::succeeded(test::runPeer(
      kSt3, {"-q", "-w", "-g", "cpu", dir + "/fine.ply", "-l", "0", dir + "/coarse.ply", "-l", "1",
             dir + "/out/lod-meta.json", "--lod-chunk-count", "1", "--lod-chunk-extent", "1"})));
  const std::string meta_path = dir + "/out/lod-meta.json";
  EXPECT_EQ(classifyInput(meta_path), InputKind::kSplatFile);
  const LodMeta meta = loadLodMeta(meta_path);
  EXPECT_EQ(meta.level_count, 2);
  ASSERT_EQ(meta.counts.size(), 2u);
  EXPECT_EQ(meta.counts[0], 1200u);
  EXPECT_EQ(meta.counts[1], 300u);
  EXPECT_GT(meta.leaves.size(), 1u) << "the test wants a tree of several leaves";
  for (int level = 0; level < 2; ++level) {
    const std::string peer_ply = dir + "/peer_l" + std::to_string(level) + ".ply";
    ASSERT_TRUE(test::succeeded(
        test::runPeer(kSt3, {"-q", "-w", "-g", "cpu", meta_path, "-L", std::to_string(level), peer_ply})));
    const GaussianCloud ours = readLodMetaLeaves(meta, lodMetaLevels(meta, level));
    expectSameGaussians(ours, loadSplats(peer_ply).cloud, "level " + std::to_string(level));
  }
  const LoadedSplats loaded = loadSplats(meta_path);
  EXPECT_EQ(loaded.format, SplatFormat::kLodMeta);
  EXPECT_EQ(loaded.cloud.size(), 1200u);
}

// splat-transform 3 writes a streamed LOD with an environment (-l -1: a sky of 200 gaussians far around two
// levels); loading the lod-meta.json gives the leaves' finest level as the peer reads it (-L 0), then the
// environment as the peer decodes its SOG file, row for row as stored; and the environment's rows are the
// sky input's gaussians (count, and each position within the SOG's 16-bit quantisation of one input's).
TEST(LodMetaPeer, SplatTransformEnvironmentFollowsTheLeaves) {
  SF_REQUIRE_PEER_TOOL(tool, kSt3);
  const std::string dir = test::tempDir("LodMetaPeerEnv");
  GaussianCloud fine = test::randomCloud(1200, 1, 7), coarse = test::randomCloud(300, 1, 8),
                sky = test::randomCloud(200, 1, 9);
  for (GaussianCloud* c : {&fine, &coarse})
    for (Vec3& p : c->positions) p = p * 6.0f;
  for (Vec3& p : sky.positions) p = p * 50.0f;
  saveSplats(fine, dir + "/fine.ply");
  saveSplats(coarse, dir + "/coarse.ply");
  saveSplats(sky, dir + "/sky.ply");
  const std::string meta_path = dir + "/out/lod-meta.json";
  ASSERT_TRUE(test::succeeded(test::runPeer(
      kSt3, {"-q", "-w", "-g", "cpu", dir + "/fine.ply", "-l", "0", dir + "/coarse.ply", "-l", "1",
             dir + "/sky.ply", "-l", "-1", meta_path, "--lod-chunk-count", "1", "--lod-chunk-extent", "1"})));
  const LodMeta meta = loadLodMeta(meta_path);
  EXPECT_EQ(meta.environment, "env/meta.json");
  ASSERT_EQ(meta.counts.size(), 2u);
  EXPECT_EQ(meta.counts[0], 1200u);
  EXPECT_EQ(meta.counts[1], 300u);
  EXPECT_EQ(meta.count, 1500u) << "the environment is not counted in the JSON's count";

  const std::string peer_l0 = dir + "/peer_l0.ply", peer_env = dir + "/peer_env.ply";
  ASSERT_TRUE(test::succeeded(test::runPeer(kSt3, {"-q", "-w", "-g", "cpu", meta_path, "-L", "0", peer_l0})));
  ASSERT_TRUE(
      test::succeeded(test::runPeer(kSt3, {"-q", "-w", "-g", "cpu", dir + "/out/env/meta.json", peer_env})));
  const GaussianCloud peer_env_cloud = loadSplats(peer_env).cloud;
  ASSERT_EQ(peer_env_cloud.size(), 200u) << "the peer's reading of its own environment file";

  const LoadedSplats loaded = loadSplats(meta_path);
  EXPECT_EQ(loaded.format, SplatFormat::kLodMeta);
  ASSERT_EQ(loaded.cloud.size(), 1400u);
  expectSameGaussians(rowsOf(loaded.cloud, 0, 1200), loadSplats(peer_l0).cloud, "the leaves at level 0");
  const GaussianCloud env_rows = rowsOf(loaded.cloud, 1200, 1400);
  expectSameGaussians(env_rows, peer_env_cloud, "the environment");
  // As stored: the environment's rows are its file's, in its order.
  const GaussianCloud env_file = loadSplats(dir + "/out/env/meta.json").cloud;
  ASSERT_EQ(env_file.size(), 200u);
  for (size_t i = 0; i < 200; ++i)
    ASSERT_EQ(env_rows.positions[i].x, env_file.positions[i].x) << "environment row " << i;

  // Independent of both decoders: every environment row lies on one sky input gaussian, each input matched
  // once. The SOG stores n = sign(x) log(|x| + 1) in 16 bits over [min, max] of n per axis.
  Vec3 lo{1e30f, 1e30f, 1e30f}, hi{-1e30f, -1e30f, -1e30f};
  auto logOf = [](float x) { return std::copysign(std::log1p(std::abs(x)), x); };
  for (const Vec3& p : sky.positions)
    for (int c = 0; c < 3; ++c) {
      lo[c] = std::min(lo[c], logOf(p[c]));
      hi[c] = std::max(hi[c], logOf(p[c]));
    }
  std::vector<int> matched(sky.size(), 0);
  for (size_t i = 0; i < env_rows.size(); ++i) {
    const Vec3 q = env_rows.positions[i];
    size_t best = 0;
    float best_d = 1e30f;
    for (size_t j = 0; j < sky.size(); ++j) {
      const Vec3 d = sky.positions[j] - q;
      const float dd = d.x * d.x + d.y * d.y + d.z * d.z;
      if (dd < best_d) best_d = dd, best = j;
    }
    ++matched[best];
    for (int c = 0; c < 3; ++c) {
      const float x = sky.positions[best][c];
      const float step = (hi[c] - lo[c]) / 65535.0f * (std::abs(x) + 1.0f) * 1.01f;  // one step, as dx/dn
      EXPECT_NEAR(q[c], x, step) << "environment row " << i << ", axis " << c;
    }
  }
  EXPECT_EQ(std::count(matched.begin(), matched.end(), 1), 200) << "each sky gaussian once";

  // The coarse level reads with the same environment after it.
  const GaussianCloud level1 = readLodMetaLeaves(meta, lodMetaLevels(meta, 1));
  ASSERT_EQ(level1.size(), 500u);
  for (size_t i = 0; i < 200; ++i)
    ASSERT_EQ(level1.positions[300 + i].x, env_file.positions[i].x) << "environment row " << i;

  const test::CliRun info = test::cli("lod info " + meta_path + " --json --verify");
  ASSERT_EQ(info.code, 0) << info.out;
  EXPECT_NE(info.out.find(R"("environment": {"file": "env/meta.json", "count": 200, "sh_degree": 1})"),
            std::string::npos)
      << info.out;
}

// A hand-written tree over one SOG file of 60 rows (stored in row order): leaf A holds rows 0-19 at level 0
// and 40-49 at level 1, leaf B rows 20-39 and 50-59. A's box is near the origin, B's 20 m further along +z.
struct HandTree {
  std::string dir, meta_path;
  GaussianCloud rows;  // the SOG file as our reader decodes it

  explicit HandTree(const std::string& name) : dir(test::tempDir(name)), meta_path(dir + "/lod-meta.json") {
    rows = writeSog(test::randomCloud(60, 0, 3), "data");
  }

  // Writes SUBDIR/meta.json, an unpacked SOG stored in row order, and returns it as our reader decodes it.
  GaussianCloud writeSog(const GaussianCloud& cloud, const std::string& subdir) const {
    fs::create_directories(dir + "/" + subdir);
    SogWriteOptions o;
    o.morton_order = false;
    saveSogUnpacked(cloud, dir + "/" + subdir + "/meta.json", o);
    return loadSplats(dir + "/" + subdir + "/meta.json").cloud;
  }

  // Writes cam.json, a 320x240 camera at z = -5 looking along +z at both leaves, and returns its path.
  std::string writeCamera() const {
    writeText(
        dir + "/cam.json",
        R"({"width": 320, "height": 240, "fov_y_deg": 50, "eye": [0, 0, -5], "target": [0, 0, 10], "up": [0, -1, 0]})");
    return dir + "/cam.json";
  }

  static std::string json(const std::string& a_lods, const std::string& counts = "[40, 20]",
                          const std::string& files = "\"data/meta.json\"", int count = 60) {
    return R"({"version": 1, "asset": {"generator": "by hand"}, "count": )" + std::to_string(count) +
           R"(, "counts": )" + counts + R"(, "lodLevels": 2, "filenames": [)" + files +
           R"(], "tree": {"bound": {"min": [-1, -1, 0], "max": [1, 1, 21]}, "children": [)"
           R"({"bound": {"min": [-1, -1, 0], "max": [1, 1, 1]}, "lods": )" +
           a_lods +
           R"(},)"
           R"({"bound": {"min": [-1, -1, 20], "max": [1, 1, 21]}, "lods": {"0": {"file": 0, "offset": 20, "count": 20}, "1": {"file": 0, "offset": 50, "count": 10}}}]}})";
  }
  static constexpr const char* kA =
      R"({"0": {"file": 0, "offset": 0, "count": 20}, "1": {"file": 0, "offset": 40, "count": 10}})";

  LodMeta write(const std::string& text) const {
    writeText(meta_path, text);
    return loadLodMeta(meta_path);
  }

  // The lod-meta text with a top-level "environment" whose JSON value is `value`.
  static std::string withEnvironment(const std::string& text, const std::string& value) {
    return "{\"environment\": " + value + ", " + text.substr(1);
  }

  // Writes env/meta.json (stored in row order) and returns it as our reader decodes it.
  GaussianCloud writeEnvironment(const GaussianCloud& cloud) const { return writeSog(cloud, "env"); }
};

// `got` holds the file's rows of `ranges` in order, then the environment's rows (when given) in order.
void expectRows(const GaussianCloud& got, const GaussianCloud& file,
                std::vector<std::pair<size_t, size_t>> ranges, const GaussianCloud* environment = nullptr) {
  size_t at = 0;
  auto expectRow = [&](const GaussianCloud& from, size_t r, const char* what) {
    ASSERT_LT(at, got.size());
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(got.positions[at][c], from.positions[r][c]) << "row " << at << " should be " << what << r;
    EXPECT_NEAR(got.opacities[at], from.opacities[r], 1e-6f);  // a PLY stores the logit
  };
  for (const auto& [begin, end] : ranges)
    for (size_t r = begin; r < end; ++r, ++at) expectRow(file, r, "file row ");
  if (environment)
    for (size_t r = 0; r < environment->size(); ++r, ++at) expectRow(*environment, r, "environment row ");
  EXPECT_EQ(at, got.size());
}

TEST(LodMeta, LevelsAreTheLeavesRangesInTreeOrder) {
  const HandTree t("LodMetaHand");
  const LodMeta m = t.write(HandTree::json(HandTree::kA));
  EXPECT_EQ(m.generator, "by hand");
  EXPECT_EQ(m.nodes, 3u);
  EXPECT_EQ(m.depth, 1);
  ASSERT_EQ(m.leaves.size(), 2u);
  EXPECT_EQ(m.leaves[1].json_path, "tree.children[1]");
  expectRows(readLodMetaLeaves(m, lodMetaLevels(m, 0)), t.rows, {{0, 20}, {20, 40}});
  expectRows(readLodMetaLeaves(m, lodMetaLevels(m, 1)), t.rows, {{40, 50}, {50, 60}});
  expectRows(readLodMetaLeaves(m, std::vector<int>{1, -1}), t.rows, {{40, 50}});
  expectRows(loadSplats(t.meta_path).cloud, t.rows, {{0, 20}, {20, 40}});
}

// A leaf without the level asked takes its nearest finer level, else its nearest coarser: A has only level 1,
// so asked for 0 it takes 1.
TEST(LodMeta, MissingLevelsFallToTheNearestFinerThenCoarser) {
  const HandTree t("LodMetaMissing");
  const LodMeta m = t.write(HandTree::json(R"({"1": {"file": 0, "offset": 40, "count": 10}})", "[20, 20]",
                                           "\"data/meta.json\"", 40));
  EXPECT_EQ(lodMetaLevels(m, 0), (std::vector<int>{1, 0}));
  EXPECT_EQ(lodMetaLevels(m, 1), (std::vector<int>{1, 1}));
  EXPECT_EQ(m.count, 40u);
}

TEST(LodMeta, BadFilesAreRefusedNamingTheJsonPath) {
  const HandTree t("LodMetaBad");
  auto error = [&](const std::string& text, bool read = false) {
    try {
      const LodMeta m = t.write(text);
      if (read) readLodMetaLeaves(m, lodMetaLevels(m, 0));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string past = error(
      HandTree::json(
          R"({"0": {"file": 0, "offset": 50, "count": 20}, "1": {"file": 0, "offset": 40, "count": 10}})"),
      true);
  EXPECT_NE(past.find("tree.children[0]: the range of 20 gaussians at offset 50 runs past the 60 gaussians "
                      "of data/meta.json"),
            std::string::npos)
      << past;
  const std::string level = error(HandTree::json(R"({"2": {"file": 0, "offset": 0, "count": 20}})"));
  EXPECT_NE(level.find("tree.children[0].lods.2: expected a level in 0..1"), std::string::npos) << level;
  const std::string zero = error(HandTree::json(
      R"({"00": {"file": 0, "offset": 0, "count": 20}, "1": {"file": 0, "offset": 40, "count": 10}})"));
  EXPECT_NE(zero.find("tree.children[0].lods.00: expected a level in 0..1"), std::string::npos) << zero;
  std::string huge = HandTree::json(HandTree::kA);
  huge.replace(huge.find("[1, 1, 21]"), 10, "[1, 1, 1e39]");
  const std::string overflow = error(huge);
  EXPECT_NE(overflow.find("tree.bound.max: expected finite numbers"), std::string::npos) << overflow;
  const std::string file = error(HandTree::json(
      R"({"0": {"file": 1, "offset": 0, "count": 20}, "1": {"file": 0, "offset": 40, "count": 10}})"));
  EXPECT_NE(file.find("tree.children[0].lods.0.file: expected a whole number in 0..0"), std::string::npos)
      << file;
  const std::string counts = error(HandTree::json(HandTree::kA, "[41, 20]"));
  EXPECT_NE(counts.find("counts[0]: says 41 gaussians but the tree's level-0 ranges hold 40"),
            std::string::npos)
      << counts;
  const std::string outside = error(HandTree::json(HandTree::kA, "[40, 20]", R"("../data/meta.json")"));
  EXPECT_NE(outside.find("filenames[0]: \"../data/meta.json\" leaves the lod-meta.json's folder"),
            std::string::npos)
      << outside;
  std::string deep =
      R"({"bound": {"min": [0, 0, 0], "max": [1, 1, 1]}, "lods": {"0": {"file": 0, "offset": 0, "count": 1}}})";
  for (int i = 0; i < 70; ++i)
    deep = R"({"bound": {"min": [0, 0, 0], "max": [1, 1, 1]}, "children": [)" + deep + "]}";
  const std::string too_deep = error(
      R"({"version": 1, "count": 1, "counts": [1], "lodLevels": 1, "filenames": ["data/meta.json"], "tree": )" +
      deep + "}");
  EXPECT_NE(too_deep.find("the tree is deeper than 64 levels"), std::string::npos) << too_deep;
  const std::string total = error(HandTree::json(HandTree::kA, "[40, 20]", "\"data/meta.json\"", 61));
  EXPECT_NE(total.find("count: says 61 gaussians but the levels hold 60"), std::string::npos) << total;
  const std::string version = error(R"({"version": 2})");
  EXPECT_NE(version.find("version: version 2 is not supported (expected 1)"), std::string::npos) << version;
}

// The environment follows the leaves wherever leaves are read, its rows as stored. Its file is of SH degree 2
// and the leaves' of 0: as for leaves' files of different degrees, the whole is read at the highest degree,
// the others' higher coefficients zero.
TEST(LodMeta, EnvironmentFollowsTheLeavesAtTheHighestShDegree) {
  const HandTree t("LodMetaEnv");
  const GaussianCloud env = t.writeEnvironment(test::randomCloud(15, 2, 9));
  ASSERT_EQ(env.sh_degree, 2);
  const LodMeta m = t.write(HandTree::withEnvironment(HandTree::json(HandTree::kA), R"("env/meta.json")"));
  EXPECT_EQ(m.environment, "env/meta.json");
  EXPECT_EQ(readLodMetaEnvironment(m).size(), 15u);
  const GaussianCloud all = readLodMetaLeaves(m, lodMetaLevels(m, 0));
  expectRows(all, t.rows, {{0, 20}, {20, 40}}, &env);
  ASSERT_EQ(all.sh_degree, 2);
  for (size_t i = 0; i < 40; ++i) {
    const auto sh = all.shOf(i), file = t.rows.shOf(i);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(sh[k], file[k]) << "leaf row " << i;
    for (size_t k = 3; k < sh.size(); ++k)
      EXPECT_EQ(sh[k], 0.0f) << "leaf row " << i << ", coefficient " << k;
  }
  for (size_t i = 0; i < 15; ++i) {
    const auto sh = all.shOf(40 + i), file = env.shOf(i);
    for (size_t k = 0; k < sh.size(); ++k) EXPECT_EQ(sh[k], file[k]) << "environment row " << i;
  }
  expectRows(readLodMetaLeaves(m, lodMetaLevels(m, 1)), t.rows, {{40, 50}, {50, 60}}, &env);
  expectRows(readLodMetaLeaves(m, std::vector<int>{-1, -1}), t.rows, {}, &env);
  expectRows(readLodMetaLeaves(m, lodMetaLevels(m, 0), nullptr), t.rows, {{0, 20}, {20, 40}});
  const LoadedSplats loaded = loadSplats(t.meta_path);  // decodeSplats: every leaf at its finest, then it
  expectRows(loaded.cloud, t.rows, {{0, 20}, {20, 40}}, &env);
  EXPECT_TRUE(loaded.warnings.empty()) << loaded.warnings.front();  // nothing of the file left unread
}

// The load limits apply to the leaves and the environment together: 40 leaf gaussians and 30 of the
// environment pass a limit of 60 one by one (each file too), not together.
TEST(LodMeta, LoadLimitsCountTheEnvironment) {
  const HandTree t("LodMetaEnvLimit");
  t.writeEnvironment(test::randomCloud(30, 0, 9));
  const LodMeta m = t.write(HandTree::withEnvironment(HandTree::json(HandTree::kA), R"("env/meta.json")"));
  LoadLimits limits = loadLimits();
  limits.max_gaussians = 60;
  const ThreadLoadLimits scoped(limits);
  EXPECT_EQ(readLodMetaLeaves(m, lodMetaLevels(m, 0), nullptr).size(), 40u);
  EXPECT_EQ(readLodMetaEnvironment(m).size(), 30u);
  EXPECT_EQ(readLodMetaLeaves(m, lodMetaLevels(m, 1)).size(), 50u);
  try {
    readLodMetaLeaves(m, lodMetaLevels(m, 0));
    ADD_FAILURE() << "70 gaussians passed a limit of 60";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find(t.meta_path + ": declares 70 gaussians, more than the load limit of 60"),
        std::string::npos)
        << e.what();
  }
}

TEST(LodMeta, BadEnvironmentsAreRefusedNamingTheFileAndJsonPath) {
  const HandTree t("LodMetaEnvBad");
  auto error = [&](const std::string& text) {
    try {
      const LodMeta m = t.write(text);
      readLodMetaLeaves(m, lodMetaLevels(m, 0));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  auto env = [](const std::string& value) {
    return HandTree::withEnvironment(HandTree::json(HandTree::kA), value);
  };
  const std::string missing = error(env(R"("env/meta.json")"));
  EXPECT_NE(missing.find(t.meta_path + ": environment (\"env/meta.json\"): " + t.dir +
                         "/env/meta.json: file is missing"),
            std::string::npos)
      << missing;
  fs::create_directories(t.dir + "/env");
  writeText(t.dir + "/env/meta.json", R"({"version": 2, "count": 5})");
  const std::string corrupt = error(env(R"("env/meta.json")"));
  EXPECT_NE(corrupt.find(t.meta_path + ": environment (\"env/meta.json\"): " + t.dir + "/env/meta.json"),
            std::string::npos)
      << corrupt;
  const std::string outside = error(env(R"("../env/meta.json")"));
  EXPECT_NE(
      outside.find(t.meta_path + ": environment: \"../env/meta.json\" leaves the lod-meta.json's folder"),
      std::string::npos)
      << outside;
  const std::string inner = error(env(R"("env/../../env/meta.json")"));
  EXPECT_NE(inner.find("environment: \"env/../../env/meta.json\" leaves the lod-meta.json's folder"),
            std::string::npos)
      << inner;
  const std::string absolute = error(env("\"" + t.dir + "/env/meta.json\""));
  EXPECT_NE(absolute.find("environment: expected a path relative to the lod-meta.json's folder"),
            std::string::npos)
      << absolute;
  // Empty and degenerate names (io/file.h relativeNameByText): no file at all, or the folder itself.
  const std::string empty = error(env(R"("")"));
  EXPECT_NE(empty.find("environment: expected a path relative to the lod-meta.json's folder, got \"\""),
            std::string::npos)
      << empty;
  for (const char* folder : {".", "./", "env/.."}) {
    const std::string itself = error(env("\"" + std::string(folder) + "\""));
    EXPECT_NE(itself.find("environment: \"" + std::string(folder) +
                          "\" names the lod-meta.json's folder, not a file in it"),
              std::string::npos)
        << itself;
  }
  const std::string number = error(env("7"));
  EXPECT_NE(number.find("environment: expected a string"), std::string::npos) << number;
  // A leaf's file likewise names its entry of "filenames".
  const std::string leaf_file = error(HandTree::json(HandTree::kA, "[40, 20]", R"("nowhere/meta.json")"));
  EXPECT_NE(leaf_file.find(t.meta_path + ": filenames[0] (\"nowhere/meta.json\"): " + t.dir +
                           "/nowhere/meta.json: file is missing"),
            std::string::npos)
      << leaf_file;
}

// The cut, worked by hand: both leaves start coarse (10 + 10); A, nearer, has the larger error, so a budget
// of 30 refines A (20 + 10) and refuses B; under 20 the coarse levels are the cut, over budget; a camera
// looking away culls both.
TEST(LodMeta, CutRefinesTheNearerLeafFirstWithinTheBudget) {
  const HandTree t("LodMetaCut");
  const LodMeta m = t.write(HandTree::json(HandTree::kA));
  const Camera toward = lookAtCamera({0, 0, -5}, {0, 0, 10}, {0, -1, 0}, 50, 320, 240);
  lod::MetaCut c = lod::cutLodMeta(m, toward, 30, 0);
  EXPECT_EQ(c.leaf_level, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.count, 30u);
  EXPECT_TRUE(c.budget_limited);
  EXPECT_EQ(c.finest, 1u);
  c = lod::cutLodMeta(m, toward, 40, 0);
  EXPECT_EQ(c.leaf_level, (std::vector<int>{0, 0}));
  EXPECT_FALSE(c.budget_limited);
  c = lod::cutLodMeta(m, toward, 15, 0);
  EXPECT_EQ(c.leaf_level, (std::vector<int>{1, 1}));
  EXPECT_EQ(c.count, 20u);
  EXPECT_TRUE(c.budget_limited);
  const Camera away = lookAtCamera({0, 0, -5}, {0, 0, -20}, {0, -1, 0}, 50, 320, 240);
  c = lod::cutLodMeta(m, away, 100, 0);
  EXPECT_EQ(c.culled, 2u);
  EXPECT_EQ(c.leaf_level, (std::vector<int>{-1, -1}));
}

// With an environment of 30 gaussians, always drawn and counted: a budget of 60 leaves the leaves 30, the cut
// of a budget of 30 without it (A refined, B refused); 70 leaves them 40, both at their finest; under 30 the
// environment alone passes the budget and the leaves take their coarsest levels; a camera looking away culls
// both leaves and the environment is still the cut.
TEST(LodMeta, CutCountsTheEnvironmentFirst) {
  const HandTree t("LodMetaCutEnv");
  const LodMeta m = t.write(HandTree::json(HandTree::kA));
  const Camera toward = lookAtCamera({0, 0, -5}, {0, 0, 10}, {0, -1, 0}, 50, 320, 240);
  lod::MetaCut c = lod::cutLodMeta(m, toward, 60, 30);
  EXPECT_EQ(c.leaf_level, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.count, 60u);
  EXPECT_EQ(c.environment, 30u);
  EXPECT_TRUE(c.budget_limited);
  c = lod::cutLodMeta(m, toward, 70, 30);
  EXPECT_EQ(c.leaf_level, (std::vector<int>{0, 0}));
  EXPECT_EQ(c.count, 70u);
  EXPECT_FALSE(c.budget_limited);
  c = lod::cutLodMeta(m, toward, 69, 30);
  EXPECT_EQ(c.leaf_level, (std::vector<int>{0, 1}));
  EXPECT_EQ(c.count, 60u);
  c = lod::cutLodMeta(m, toward, 20, 30);
  EXPECT_EQ(c.leaf_level, (std::vector<int>{1, 1}));
  EXPECT_EQ(c.count, 50u);
  EXPECT_TRUE(c.budget_limited);
  const Camera away = lookAtCamera({0, 0, -5}, {0, 0, -20}, {0, -1, 0}, 50, 320, 240);
  c = lod::cutLodMeta(m, away, 100, 30);
  EXPECT_EQ(c.culled, 2u);
  EXPECT_EQ(c.count, 30u);
  EXPECT_FALSE(c.budget_limited);
  c = lod::cutLodMeta(m, away, 10, 30);
  EXPECT_EQ(c.count, 30u);
  EXPECT_TRUE(c.budget_limited) << "the environment alone passes the budget";
}

TEST(LodMetaCli, InfoAndCutOpenTheStreamedLod) {
  const HandTree t("LodMetaCli");
  t.write(HandTree::json(HandTree::kA));
  const test::CliRun info = test::cli("lod info " + t.meta_path + " --json --verify");
  ASSERT_EQ(info.code, 0) << info.out;
  EXPECT_NE(info.out.find("\"format\": \"lod-meta\""), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\"counts\": [40, 20]"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\"verified\": true"), std::string::npos) << info.out;
  const std::string cam = t.writeCamera();
  const test::CliRun cut =
      test::cli("lod cut " + t.meta_path + " --budget 30 --camera " + cam + " -o " + t.dir + "/cut.ply");
  ASSERT_EQ(cut.code, 0) << cut.out;
  EXPECT_NE(cut.out.find("30 gaussians (budget 30)"), std::string::npos) << cut.out;
  expectRows(loadSplats(t.dir + "/cut.ply").cloud, t.rows, {{0, 20}, {50, 60}});
  const test::CliRun threshold =
      test::cli("lod cut " + t.meta_path + " --budget 30 --threshold 4 -o " + t.dir + "/t.ply");
  EXPECT_EQ(threshold.code, 2) << threshold.out;
  EXPECT_NE(threshold.out.find("--threshold applies to a hierarchy's nodes"), std::string::npos)
      << threshold.out;
  const test::CliRun described = test::cli("info " + t.meta_path);
  ASSERT_EQ(described.code, 0) << described.out;
  EXPECT_NE(described.out.find("lod-meta"), std::string::npos) << described.out;
}

// The CLI with an environment: `lod info` names its file and count (text and JSON, --verify reading it too);
// `lod cut` writes the chosen leaves then the environment, counted in the budget; a camera that sees no leaf
// writes the environment alone with a warning (without an environment it is refused).
TEST(LodMetaCli, EnvironmentInInfoAndCut) {
  const HandTree t("LodMetaCliEnv");
  const GaussianCloud env = t.writeEnvironment(test::randomCloud(15, 0, 9));
  t.write(HandTree::withEnvironment(HandTree::json(HandTree::kA), R"("env/meta.json")"));
  const test::CliRun json = test::cli("lod info " + t.meta_path + " --json --verify");
  ASSERT_EQ(json.code, 0) << json.out;
  EXPECT_NE(json.out.find(R"("environment": {"file": "env/meta.json", "count": 15, "sh_degree": 0})"),
            std::string::npos)
      << json.out;
  EXPECT_NE(json.out.find("\"verified\": true"), std::string::npos) << json.out;
  const test::CliRun text = test::cli("lod info " + t.meta_path + " --verify");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("environment env/meta.json: 15 gaussians, SH degree 0"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("every file decoded (the environment's too)"), std::string::npos) << text.out;

  const std::string cam = t.writeCamera();
  const test::CliRun cut =
      test::cli("lod cut " + t.meta_path + " --budget 45 --camera " + cam + " -o " + t.dir + "/cut.ply");
  ASSERT_EQ(cut.code, 0) << cut.out;
  EXPECT_NE(cut.out.find("45 gaussians (budget 45)"), std::string::npos) << cut.out;
  EXPECT_NE(cut.out.find("the environment's 15 gaussians always drawn"), std::string::npos) << cut.out;
  expectRows(loadSplats(t.dir + "/cut.ply").cloud, t.rows, {{0, 20}, {50, 60}}, &env);

  writeText(
      t.dir + "/away.json",
      R"({"width": 320, "height": 240, "fov_y_deg": 50, "eye": [0, 0, -5], "target": [0, 0, -20], "up": [0, -1, 0]})");
  const test::CliRun away = test::cli("lod cut " + t.meta_path + " --budget 45 --camera " + t.dir +
                                      "/away.json -o " + t.dir + "/away.ply");
  ASSERT_EQ(away.code, 0) << away.out;
  EXPECT_NE(away.out.find("no leaf of the tree is in view of this camera: the cut is the environment"),
            std::string::npos)
      << away.out;
  expectRows(loadSplats(t.dir + "/away.ply").cloud, t.rows, {}, &env);
  t.write(HandTree::json(HandTree::kA));
  const test::CliRun none = test::cli("lod cut " + t.meta_path + " --budget 45 --camera " + t.dir +
                                      "/away.json -o " + t.dir + "/none.ply");
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_NE(none.out.find("no leaf of the tree is in view of this camera; check the camera"),
            std::string::npos)
      << none.out;
  const test::CliRun plain = test::cli("lod info " + t.meta_path + " --json");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("\"environment\": null"), std::string::npos) << plain.out;
}

}  // namespace
}  // namespace sf
