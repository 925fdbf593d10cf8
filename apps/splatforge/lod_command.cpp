#include "lod_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "commands.h"
#include "core/error.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/lod_meta.h"
#include "lod/build.h"
#include "lod/cut.h"
#include "lod/format.h"
#include "lod/meta_cut.h"
#include "render/camera.h"
#include "scene/scene.h"

namespace sf::cli {

namespace {

namespace fs = std::filesystem;

double megabytes(uint64_t bytes) {
  return static_cast<double>(bytes) / 1e6;
}

int runBuild(const LodCommand::Options& o) {
  makeOutputFolder(o.output);
  lod::BuildOptions b;
  b.fanout = o.fanout;
  b.chunk_leaves = o.chunk_size;
  b.memory_bytes = o.memory_mb << 20;
  b.scratch_dir = o.scratch;
  b.progress = progress;
  const lod::BuildReport r = lod::buildHierarchy(o.input, o.output, b);
  printWarnings("lod build", r.warnings);
  if (r.dropped_non_finite)
    printWarnings("lod build",
                  {fmt::format("{} of {} gaussians hold NaN or infinite values and were left out",
                               r.dropped_non_finite, r.input_rows)});
  fmt::print(
      "wrote {}: {} leaves, {} nodes, {} levels, {} chunks of up to {} leaves, {:.1f} MB ({}; input {})\n",
      o.output, r.leaves, r.nodes, r.levels, r.chunks, r.chunk_leaves, megabytes(r.bytes_written),
      r.runs > 1 ? fmt::format("sorted out of core in {} runs", r.runs) : std::string("sorted in memory"),
      r.input_format);
  fmt::print("time: {:.2f} s, peak memory {:.1f} MB (VmHWM)\n", r.seconds, megabytes(r.peak_memory_bytes));
  return 0;
}

// Node counts per level from the index alone: each chunk's levels follow from its leaf count, the top's
// from the chunk count (lod/build.h builds them so).
std::vector<uint64_t> levelCountsFromIndex(const lod::Index& x) {
  std::vector<uint64_t> counts(x.chunk_levels + 1, 0);
  for (const lod::ChunkEntry& e : x.chunks) {
    uint64_t n = e.leaf_count;
    for (uint32_t l = 0; l <= x.chunk_levels; ++l, n = (n + x.fanout - 1) / x.fanout) counts[l] += n;
  }
  for (uint64_t n = (x.chunks.size() + x.fanout - 1) / x.fanout; x.has_top;
       n = (n + x.fanout - 1) / x.fanout) {
    counts.push_back(n);
    if (n == 1) break;
  }
  return counts;
}

// `lod info` of PlayCanvas's streamed LOD: its levels, tree, files and environment (io/lod_meta.h). The
// environment's SOG is decoded for its count, which the JSON does not carry.
int runMetaInfo(const LodCommand::Options& o) {
  const LodMeta m = loadLodMeta(o.input);
  std::vector<size_t> leaves_with(m.level_count, 0);
  for (const LodMetaLeaf& leaf : m.leaves)
    for (int l : leaf.levels) ++leaves_with[l];
  const GaussianCloud environment = readLodMetaEnvironment(m);
  if (o.verify) {  // every file decoded and every range of every level inside its file (refused otherwise)
    for (int l = 0; l < m.level_count; ++l) {
      std::vector<int> only(m.leaves.size(), -1);
      for (size_t i = 0; i < m.leaves.size(); ++i)
        if (std::find(m.leaves[i].levels.begin(), m.leaves[i].levels.end(), l) != m.leaves[i].levels.end())
          only[i] = l;
      // The level with the environment, as a cut would draw it: the load limits apply to both together.
      readLodMetaLeaves(m, only, m.environment.empty() ? nullptr : &environment);
    }
  }
  if (o.json) {
    std::string counts, with, files;
    for (int l = 0; l < m.level_count; ++l) {
      counts += fmt::format("{}{}", l ? ", " : "", m.counts[l]);
      with += fmt::format("{}{}", l ? ", " : "", leaves_with[l]);
    }
    for (size_t i = 0; i < m.files.size(); ++i)
      files += fmt::format("{}\"{}\"", i ? ", " : "", jsonEscape(m.files[i]));
    const std::string env =
        m.environment.empty()
            ? std::string("null")
            : fmt::format("{{\"file\": \"{}\", \"count\": {}, \"sh_degree\": {}}}", jsonEscape(m.environment),
                          environment.size(), environment.sh_degree);
    fmt::print(
        "{{\"file\": \"{}\", \"format\": \"lod-meta\", \"generator\": \"{}\", \"levels\": {}, \"count\": {}, "
        "\"counts\": [{}], \"leaves_with_level\": [{}], \"nodes\": {}, \"leaves\": {}, \"depth\": {}, "
        "\"bounds_min\": {}, \"bounds_max\": {}, \"verified\": {}, \"files\": [{}], \"environment\": {}}}\n",
        jsonEscape(o.input), jsonEscape(m.generator), m.level_count, m.count, counts, with, m.nodes,
        m.leaves.size(), m.depth, vecJson(m.box_min), vecJson(m.box_max), o.verify ? "true" : "false", files,
        env);
    return 0;
  }
  fmt::print("{}: PlayCanvas streamed level of detail{}\n", o.input,
             m.generator.empty() ? std::string() : " (" + m.generator + ")");
  fmt::print("  levels {} (0 the finest), {} gaussians in all\n", m.level_count, m.count);
  for (int l = 0; l < m.level_count; ++l)
    fmt::print("  level {}: {} gaussians in {} of the {} leaves\n", l, m.counts[l], leaves_with[l],
               m.leaves.size());
  fmt::print("  tree {} nodes, depth {}; {} SOG files\n", m.nodes, m.depth, m.files.size());
  fmt::print("  bounds {} to {}\n", vecText(m.box_min), vecText(m.box_max));
  if (!m.environment.empty())
    fmt::print("  environment {}: {} gaussians, SH degree {} (outside the tree, drawn at every distance)\n",
               m.environment, environment.size(), environment.sh_degree);
  if (o.verify)
    fmt::print("  verified: every file decoded{}, every level's ranges inside their files\n",
               m.environment.empty() ? "" : " (the environment's too)");
  return 0;
}

int runInfo(const LodCommand::Options& o) {
  if (isLodMetaPath(o.input)) return runMetaInfo(o);
  lod::Index x;
  std::vector<uint64_t> levels;
  if (o.verify) {
    const lod::Hierarchy h = lod::loadHierarchy(o.input);
    x = h.index;
    levels = lod::levelCounts(h);
  } else {
    x = lod::loadIndex(o.input);
    levels = levelCountsFromIndex(x);
  }
  uint64_t bytes = fs::file_size(fs::path(o.input) / lod::kIndexFileName);
  for (const lod::ChunkEntry& e : x.chunks) bytes += e.bytes;
  if (x.has_top) bytes += x.top.bytes;
  if (o.json) {
    std::string lv, chunks;
    for (size_t l = 0; l < levels.size(); ++l) lv += (l ? ", " : "") + std::to_string(levels[l]);
    for (size_t i = 0; i < x.chunks.size(); ++i) {
      const lod::ChunkEntry& e = x.chunks[i];
      chunks += fmt::format(
          "{}{{\"file\": \"{}\", \"bytes\": {}, \"nodes\": {}, \"leaves\": {}, \"parent\": {}, \"box_min\": "
          "{}, \"box_max\": {}}}",
          i ? ", " : "", jsonEscape(e.file), e.bytes, e.node_count, e.leaf_count,
          e.parent == lod::kNone ? std::string("null") : std::to_string(e.parent), vecJson(e.box_min),
          vecJson(e.box_max));
    }
    fmt::print(
        "{{\"directory\": \"{}\", \"version\": {}, \"sh_degree\": {}, \"fanout\": {}, \"chunk_leaves\": {}, "
        "\"leaves\": {}, \"nodes\": {}, "
        "\"levels\": [{}], \"chunk_count\": {}, \"top_nodes\": {}, \"bytes\": {}, \"dropped_non_finite\": "
        "{}, \"bounds_min\": {}, "
        "\"bounds_max\": {}, \"verified\": {}, \"chunks\": [{}]}}\n",
        jsonEscape(o.input), lod::kFormatVersion, x.sh_degree, x.fanout, x.chunk_leaves, x.leaf_count,
        x.node_count, lv, x.chunks.size(), x.has_top ? x.top.node_count : 0, bytes, x.dropped_non_finite,
        vecJson(x.bounds_min), vecJson(x.bounds_max), o.verify ? "true" : "false", chunks);
    return 0;
  }
  fmt::print("{}: level-of-detail hierarchy, format version {}\n", o.input, lod::kFormatVersion);
  fmt::print("  leaves {}, nodes {}, SH degree {}, fan-out {}\n", x.leaf_count, x.node_count, x.sh_degree,
             x.fanout);
  fmt::print("  chunks {} of up to {} leaves{}, {:.1f} MB in all\n", x.chunks.size(), x.chunk_leaves,
             x.has_top ? fmt::format(", top {} nodes", x.top.node_count) : std::string(), megabytes(bytes));
  fmt::print("  levels {} (leaves first):", levels.size());
  for (uint64_t n : levels) fmt::print(" {}", n);
  fmt::print("\n  bounds {} to {}\n", vecText(x.bounds_min), vecText(x.bounds_max));
  if (x.dropped_non_finite)
    fmt::print("  {} input rows holding NaN or infinity were left out\n", x.dropped_non_finite);
  if (o.verify) fmt::print("  verified: every chunk's size, checksum and nodes\n");
  return 0;
}

std::string cameraJson(const Camera& c) {
  std::string m;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) m += fmt::format("{}{}", i + j ? ", " : "", c.world_to_camera.m[i][j]);
  return fmt::format(
      "{{\"width\": {}, \"height\": {}, \"fx\": {}, \"fy\": {}, \"cx\": {}, \"cy\": {}, \"world_to_camera\": "
      "[{}]}}\n",
      c.width, c.height, c.fx, c.fy, c.cx, c.cy, m);
}

void writeCameraOut(const LodCommand::Options& o, const Camera& cam) {
  if (o.camera_out.empty()) return;
  const std::string text = cameraJson(cam);
  writeFileAtomic(o.camera_out,
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// `lod cut` of PlayCanvas's streamed LOD: a level per leaf (lod/meta_cut.h). `cam` is set when --camera was
// given.
int runMetaCut(const LodCommand::Options& o, Camera cam, Clock::time_point t0) {
  if (o.threshold != 0)
    throw UsageError(
        "--threshold applies to a hierarchy's nodes; a lod-meta.json is cut by its leaves' levels under "
        "--budget alone");
  const LodMeta m = loadLodMeta(o.input);
  if (o.camera.empty())  // as `render` frames a capture, here by the tree's bound
    cam = frameBox(m.box_min, m.box_max, Vec3{0, 0, 1}, Vec3{0, -1, 0}, o.width.value_or(kDefaultWidth),
                   o.height.value_or(kDefaultHeight));
  // The environment is always drawn and counted: the leaves share what the budget leaves after it.
  if (!m.environment.empty()) progress("reading the environment " + m.environment);
  const GaussianCloud environment = readLodMetaEnvironment(m);
  const lod::MetaCut cut = lod::cutLodMeta(m, cam, o.budget, environment.size());
  if (cut.culled == m.leaves.size()) {
    if (m.environment.empty())
      return fail("lod cut", "no leaf of the tree is in view of this camera; check the camera");
    printWarnings("lod cut", {"no leaf of the tree is in view of this camera: the cut is the environment (" +
                              m.environment + ") alone"});
  }
  progress("reading the chosen ranges of " + o.input);
  saveSplats(readLodMetaLeaves(m, cut.leaf_level, m.environment.empty() ? nullptr : &environment), o.output);
  writeCameraOut(o, cam);
  fmt::print(stderr, "  chose a level for {} of the {} leaves ({} at their finest), {} culled{}{}\n",
             m.leaves.size() - cut.culled, m.leaves.size(), cut.finest, cut.culled,
             m.environment.empty()
                 ? std::string()
                 : fmt::format("; the environment's {} gaussians always drawn", cut.environment),
             cut.budget_limited ? ", budget reached" : "");
  fmt::print("wrote {}{}: {} gaussians (budget {})\n", o.output,
             o.camera_out.empty() ? "" : ", " + o.camera_out, cut.count, o.budget);
  fmt::print("time: {:.3f} s\n", secondsSince(t0));
  return 0;
}

int runCut(const LodCommand::Options& o) {
  const auto t0 = Clock::now();
  try {
    writeFormatForPath(o.output);
  } catch (const Error& e) {
    throw UsageError(std::string("-o ") + e.what());
  }
  checkWritableTarget(o.output, "-o");
  if (!o.camera_out.empty()) {
    if (fileExtension(o.camera_out) != ".json")
      throw UsageError("--camera-out " + o.camera_out + ": expected a .json path");
    checkWritableTarget(o.camera_out, "--camera-out");
  }
  Camera cam;
  if (!o.camera.empty())
    cam = loadCameraJson(o.camera, o.width, o.height);  // read first: a typo should not wait for the load
  if (isLodMetaPath(o.input)) return runMetaCut(o, cam, t0);
  progress("loading " + o.input);
  const lod::Hierarchy h = lod::loadHierarchy(o.input);
  const double load_s = secondsSince(t0);
  if (o.camera
          .empty())  // as `render` frames a capture: its 1-99 percentile box, looking along +z with y down
    cam = frameBox(h.index.p01, h.index.p99, Vec3{0, 0, 1}, Vec3{0, -1, 0}, o.width.value_or(kDefaultWidth),
                   o.height.value_or(kDefaultHeight));
  lod::CutOptions co;
  co.budget = o.budget;
  co.threshold_px = o.threshold;
  const auto t_cut = Clock::now();
  const lod::CutResult cut = lod::selectCut(h, cam, co);
  const double cut_s = secondsSince(t_cut);
  if (cut.nodes.empty())
    return fail("lod cut",
                "no node of the hierarchy is in view of this camera (or --budget is 0); check the camera");
  saveSplats(lod::cutCloud(h, cut), o.output);
  writeCameraOut(o, cam);
  fmt::print(stderr, "  chose {} of the hierarchy's {} nodes ({} leaves of {}), {} refined, {} culled{}\n",
             cut.nodes.size(), h.index.node_count, cut.leaves, h.index.leaf_count, cut.refined, cut.culled,
             cut.budget_limited
                 ? fmt::format(", budget reached (largest error left {:.1f} px)", cut.max_error_px)
                 : "");
  fmt::print("wrote {}{}: {} gaussians (budget {})\n", o.output,
             o.camera_out.empty() ? "" : ", " + o.camera_out, cut.nodes.size(), o.budget);
  fmt::print("time: {:.3f} s total (load {:.3f} s, cut {:.3f} s)\n", secondsSince(t0), load_s, cut_s);
  return 0;
}

}  // namespace

LodCommand::~LodCommand() = default;

int LodCommand::run() const {
  const Options& o = *options_;
  const char* name = o.action == Options::Action::kInfo  ? "lod info"
                     : o.action == Options::Action::kCut ? "lod cut"
                                                         : "lod build";
  try {
    switch (o.action) {
      case Options::Action::kInfo:
        return runInfo(o);
      case Options::Action::kCut:
        return runCut(o);
      case Options::Action::kBuild:
        return runBuild(o);
    }
    return 2;
  } catch (const std::exception& e) {
    return reportFailure(name, e);
  }
}

}  // namespace sf::cli
