// PlayCanvas's streamed level of detail (io/lod_meta.h, docs/formats/lod-meta.md).
#include "io/lod_meta.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/json.h"
#include "io/sog.h"

namespace sf {

namespace {

namespace fs = std::filesystem;

constexpr int kMaxDepth = 64;                      // deeper trees are refused (the recursion is bounded)
constexpr uint64_t kMaxIndex = uint64_t{1} << 40;  // offsets and counts: far above any load limit

uint64_t wholeNumber(const JsonNode& n, uint64_t max) {
  const double d = n.number();
  if (d != std::floor(d) || d < 0 || d > static_cast<double>(max))
    n.fail("expected a whole number in 0.." + std::to_string(max));
  return static_cast<uint64_t>(d);
}

Vec3 vec3(const JsonNode& n) {
  const std::vector<float> v = n.numbers(3);
  for (float x : v)
    if (!std::isfinite(x)) n.fail("expected finite numbers (a value overflows a float)");
  return {v[0], v[1], v[2]};
}

// A file name of "filenames": relative, and a file inside the lod-meta.json's folder (io/file.h's rule by
// text).
std::string fileName(const JsonNode& n) {
  const std::string name = n.string();
  switch (relativeNameByText(name)) {
    case RelativeName::kEmpty:
    case RelativeName::kAbsolute:
      n.fail("expected a path relative to the lod-meta.json's folder, got \"" + name + "\"");
    case RelativeName::kDirectoryItself:
      n.fail("\"" + name + "\" names the lod-meta.json's folder, not a file in it");
    case RelativeName::kLeaves:
      n.fail("\"" + name + "\" leaves the lod-meta.json's folder");
    case RelativeName::kInside:
      break;
  }
  return name;
}

struct TreeReader {
  LodMeta& meta;

  void node(const JsonNode& n, int depth) {
    if (depth > kMaxDepth) n.fail("the tree is deeper than " + std::to_string(kMaxDepth) + " levels");
    ++meta.nodes;
    const JsonNode bound = n["bound"];
    const Vec3 lo = vec3(bound["min"]), hi = vec3(bound["max"]);
    if (lo.x > hi.x || lo.y > hi.y || lo.z > hi.z) bound.fail("min exceeds max");
    const bool children = n.has("children"), lods = n.has("lods");
    if (children == lods) n.fail("expected either \"children\" or \"lods\"");
    if (children) {
      const JsonNode list = n["children"];
      if (!list.value.is_array() || list.value.empty()) list.fail("expected a non-empty array of nodes");
      for (size_t i = 0; i < list.value.size(); ++i) node(list.at(i), depth + 1);
      return;
    }
    meta.depth = std::max(meta.depth, depth);
    leaf(n["lods"], lo, hi, n.path);
  }

  void leaf(const JsonNode& lods, Vec3 lo, Vec3 hi, const std::string& path) {
    if (!lods.value.is_object() || lods.value.empty()) lods.fail("expected an object of levels");
    std::map<int, LodMetaRange> by_level;  // ordered: the leaf's levels ascending
    for (auto it = lods.value.begin(); it != lods.value.end(); ++it) {
      const std::string& key = it.key();
      const JsonNode entry{*it, lods.path + "." + key, lods.file};
      // A level is written as a plain decimal number ("0", "12"): no sign, no leading zero, so no two keys
      // name one level.
      const bool digits = !key.empty() && key.size() <= 3 && (key.size() == 1 || key[0] != '0') &&
                          std::all_of(key.begin(), key.end(),
                                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      const int level = digits ? std::stoi(key) : -1;
      if (level < 0 || level >= meta.level_count)
        entry.fail("expected a level in 0.." + std::to_string(meta.level_count - 1) + " (lodLevels)");
      LodMetaRange r;
      r.file = static_cast<uint32_t>(wholeNumber(entry["file"], meta.files.size() - 1));
      r.offset = wholeNumber(entry["offset"], kMaxIndex);
      r.count = wholeNumber(entry["count"], kMaxIndex);
      by_level[level] = r;
    }
    LodMetaLeaf out;
    out.box_min = lo;
    out.box_max = hi;
    out.json_path = path;
    for (const auto& [level, range] : by_level) {
      out.levels.push_back(level);
      out.ranges.push_back(range);
    }
    meta.leaves.push_back(std::move(out));
  }
};

// Rows [offset, offset + count) of `cloud`.
GaussianCloud rowsOf(const GaussianCloud& cloud, uint64_t offset, uint64_t count) {
  GaussianCloud out;
  out.resize(count, cloud.sh_degree);
  out.color_space = cloud.color_space;
  out.antialiased = cloud.antialiased;
  out.screen_filter = cloud.screen_filter;
  const auto b = static_cast<std::ptrdiff_t>(offset), e = static_cast<std::ptrdiff_t>(offset + count);
  std::copy(cloud.positions.begin() + b, cloud.positions.begin() + e, out.positions.begin());
  std::copy(cloud.scales.begin() + b, cloud.scales.begin() + e, out.scales.begin());
  std::copy(cloud.rotations.begin() + b, cloud.rotations.begin() + e, out.rotations.begin());
  std::copy(cloud.opacities.begin() + b, cloud.opacities.begin() + e, out.opacities.begin());
  const auto stride = static_cast<std::ptrdiff_t>(cloud.shStride());
  std::copy(cloud.sh.begin() + b * stride, cloud.sh.begin() + e * stride, out.sh.begin());
  return out;
}

// The ranges that leaf_level asks for, in leaf order, and their total.
struct Want {
  size_t leaf;
  LodMetaRange range;
};
struct Wanted {
  std::vector<Want> ranges;
  uint64_t total = 0;
};

Wanted wantedRanges(const LodMeta& meta, std::span<const int> leaf_level) {
  if (leaf_level.size() != meta.leaves.size())
    throw Error(meta.path + ": " + std::to_string(leaf_level.size()) + " leaf levels given for " +
                std::to_string(meta.leaves.size()) + " leaves");
  Wanted out;
  for (size_t i = 0; i < meta.leaves.size(); ++i) {
    if (leaf_level[i] < 0) continue;
    const LodMetaLeaf& leaf = meta.leaves[i];
    const auto at = std::find(leaf.levels.begin(), leaf.levels.end(), leaf_level[i]);
    if (at == leaf.levels.end())
      throw Error(meta.path + ": " + leaf.json_path + " has no level " + std::to_string(leaf_level[i]));
    const LodMetaRange& r = leaf.ranges[static_cast<size_t>(at - leaf.levels.begin())];
    out.ranges.push_back({i, r});
    out.total += r.count;
  }
  return out;
}

// The SOG file `name` (relative to the lod-meta.json's folder, as "filenames" or "environment" gives it),
// decoded; a file that is missing or does not decode is refused naming the lod-meta.json and `json_path`.
GaussianCloud decodeNamed(const LodMeta& meta, const std::string& name, const std::string& json_path) {
  const std::string file = (fs::path(meta.path).parent_path() / name).string();
  try {
    const std::vector<uint8_t> bytes = readFile(file);
    return readSog(bytes, file);
  } catch (const Error& e) {
    throw Error(meta.path + ": " + json_path + " (\"" + name + "\"): " + e.what());
  }
}

}  // namespace

LodMeta parseLodMeta(std::string_view text, const std::string& path) {
  const nlohmann::json doc = parseJsonText(text, path);
  const JsonNode root{doc, "", path};
  LodMeta meta;
  meta.path = path;
  const uint64_t version = wholeNumber(root["version"], 1000);
  if (version != 1)
    root["version"].fail("version " + std::to_string(version) + " is not supported (expected 1)");
  if (root.has("asset") && root["asset"].has("generator"))
    meta.generator = root["asset"]["generator"].string();
  meta.level_count = static_cast<int>(wholeNumber(root["lodLevels"], 32));
  if (meta.level_count < 1) root["lodLevels"].fail("expected at least one level");
  meta.count = wholeNumber(root["count"], kMaxIndex);
  const JsonNode counts = root["counts"];
  if (!counts.value.is_array() || counts.value.size() != static_cast<size_t>(meta.level_count))
    counts.fail("expected an array of " + std::to_string(meta.level_count) + " counts (lodLevels)");
  for (size_t l = 0; l < counts.value.size(); ++l)
    meta.counts.push_back(wholeNumber(counts.at(l), kMaxIndex));
  const JsonNode files = root["filenames"];
  if (!files.value.is_array() || files.value.empty()) files.fail("expected a non-empty array of file names");
  for (size_t i = 0; i < files.value.size(); ++i) meta.files.push_back(fileName(files.at(i)));
  if (root.has("environment")) meta.environment = fileName(root["environment"]);
  const JsonNode tree = root["tree"];
  TreeReader{meta}.node(tree, 0);
  const JsonNode bound = tree["bound"];
  meta.box_min = vec3(bound["min"]);
  meta.box_max = vec3(bound["max"]);

  // The per-level totals must be the leaves' ranges: a file that does not add up is not what it says.
  std::vector<uint64_t> sums(meta.level_count, 0);
  for (const LodMetaLeaf& leaf : meta.leaves)
    for (size_t k = 0; k < leaf.levels.size(); ++k) sums[leaf.levels[k]] += leaf.ranges[k].count;
  uint64_t total = 0;
  for (int l = 0; l < meta.level_count; ++l) {
    if (sums[l] != meta.counts[l])
      counts.at(l).fail("says " + std::to_string(meta.counts[l]) + " gaussians but the tree's level-" +
                        std::to_string(l) + " ranges hold " + std::to_string(sums[l]));
    total += sums[l];
  }
  if (total != meta.count)
    root["count"].fail("says " + std::to_string(meta.count) + " gaussians but the levels hold " +
                       std::to_string(total));
  return meta;
}

LodMeta loadLodMeta(const std::string& path) {
  const std::vector<uint8_t> bytes = readFile(path);
  return parseLodMeta(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
}

std::vector<int> lodMetaLevels(const LodMeta& meta, int level) {
  std::vector<int> out;
  out.reserve(meta.leaves.size());
  for (const LodMetaLeaf& leaf : meta.leaves) {
    // Finer is lower. The largest of its levels at or below `level` is that level or the nearest finer; when
    // every level it has is coarser, the nearest of them is the first.
    int chosen = -1;
    for (int l : leaf.levels)
      if (l <= level) chosen = l;
    if (chosen < 0) chosen = leaf.levels.front();
    out.push_back(chosen);
  }
  return out;
}

GaussianCloud readLodMetaEnvironment(const LodMeta& meta) {
  if (meta.environment.empty()) return {};
  return decodeNamed(meta, meta.environment, "environment");
}

GaussianCloud readLodMetaLeaves(const LodMeta& meta, std::span<const int> leaf_level) {
  // The leaves' total is checked before the environment is decoded, the whole total again once it is.
  checkGaussianBudget(meta.path, wantedRanges(meta, leaf_level).total, 3);
  const GaussianCloud environment = readLodMetaEnvironment(meta);
  return readLodMetaLeaves(meta, leaf_level, meta.environment.empty() ? nullptr : &environment);
}

GaussianCloud readLodMetaLeaves(const LodMeta& meta, std::span<const int> leaf_level,
                                const GaussianCloud* environment) {
  const Wanted wanted = wantedRanges(meta, leaf_level);
  const std::vector<Want>& wants = wanted.ranges;
  // At SH degree 3, the most a SOG holds (the degree is known only once a file is decoded); each file is then
  // checked again by its own reader. The environment counts with the leaves.
  checkGaussianBudget(meta.path, wanted.total + (environment ? environment->size() : 0), 3);
  // Decode each file once, in the order of first use, keeping only the rows wanted from it.
  std::vector<GaussianCloud> parts(wants.size());
  std::vector<bool> done(wants.size(), false);
  for (size_t w = 0; w < wants.size(); ++w) {
    if (done[w]) continue;
    const uint32_t f = wants[w].range.file;
    const GaussianCloud cloud = decodeNamed(meta, meta.files[f], "filenames[" + std::to_string(f) + "]");
    for (size_t v = w; v < wants.size(); ++v) {
      if (done[v] || wants[v].range.file != f) continue;
      const LodMetaRange& r = wants[v].range;
      if (r.offset > cloud.size() || r.count > cloud.size() - r.offset)
        throw Error(meta.path + ": " + meta.leaves[wants[v].leaf].json_path + ": the range of " +
                    std::to_string(r.count) + " gaussians at offset " + std::to_string(r.offset) +
                    " runs past the " + std::to_string(cloud.size()) + " gaussians of " + meta.files[f]);
      parts[v] = rowsOf(cloud, r.offset, r.count);
      done[v] = true;
    }
  }
  std::vector<const GaussianCloud*> ptrs;
  for (const GaussianCloud& p : parts) ptrs.push_back(&p);
  if (environment) ptrs.push_back(environment);  // after the leaves, its rows in its file's order
  return mergeClouds(ptrs);
}

}  // namespace sf
