// PlayCanvas's streamed level of detail (splat-transform's `lod-meta.json` output, docs/formats/lod-meta.md):
// a JSON tree of boxes whose leaves name, per LOD level (0 the finest), a range of gaussians in one of the
// SOG files listed in "filenames" (unpacked meta.json folders or .sog archives beside the lod-meta.json).
// Levels are discrete: a leaf's level L is its own set of gaussians, not merged from level L - 1.
//
// An optional "environment" names one more SOG file: splat-transform's `-l -1` gaussians (such as a sky),
// outside the tree and drawn at every distance. Wherever leaves are read, the environment's gaussians follow
// them.
//
// Read here so that their output opens in every command: as a splat file it loads each leaf at its finest
// level, then the environment (decodeSplats); `lod info` describes it and `lod cut` chooses a level per leaf
// for a camera under a budget, the environment always included (lod/meta_cut.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"
#include "io/file.h"  // isLodMetaPath

namespace sf {

struct LodMetaRange {
  uint32_t file = 0;  // index into LodMeta::files
  uint64_t offset = 0, count = 0;
};

struct LodMetaLeaf {
  Vec3 box_min, box_max;
  std::vector<int> levels;           // the levels it has, ascending (finest first)
  std::vector<LodMetaRange> ranges;  // one per entry of `levels`
  std::string json_path;             // "tree.children[0].children[1]", for messages
};

struct LodMeta {
  std::string path;                 // the lod-meta.json
  std::string generator;            // asset.generator, when given
  int level_count = 0;              // lodLevels
  uint64_t count = 0;               // gaussians over every level
  std::vector<uint64_t> counts;     // per level
  std::vector<std::string> files;   // relative to the lod-meta.json's folder
  std::string environment;          // "environment": a SOG of splat-transform's -l -1 gaussians; "" if none
  std::vector<LodMetaLeaf> leaves;  // in the tree's depth-first order
  size_t nodes = 0;                 // tree nodes, leaves included
  int depth = 0;                    // of the deepest leaf (the root: 0)
  Vec3 box_min, box_max;            // the root's bound
};

// Parses the JSON (version 1). Refuses, with the file and the JSON path: a missing or mistyped key, a level
// outside 0..lodLevels-1, a file index outside "filenames", a file name that leaves the folder (absolute, or
// through ".."; "environment" likewise), a node with both or neither of "children" and "lods", a tree deeper
// than 64, per-level counts that do not add up to "counts" or "count". Ranges are checked against the files
// when read. The environment's count is not in the JSON: it is known once its file is read.
LodMeta parseLodMeta(std::string_view text, const std::string& path);
LodMeta loadLodMeta(const std::string& path);

// The level each leaf takes when every leaf is asked for `level`: that level where the leaf has it, else its
// nearest finer one, else its nearest coarser one.
std::vector<int> lodMetaLevels(const LodMeta& meta, int level);

// The environment's gaussians, decoded (an empty cloud when the lod-meta has none). A missing or corrupt file
// is refused naming the lod-meta.json, the JSON path "environment" and the file.
GaussianCloud readLodMetaEnvironment(const LodMeta& meta);

// The gaussians of each leaf at leaf_level[i] (one of the leaf's levels), or none for -1, concatenated in
// leaf order, then the environment's (read here). Each SOG file is decoded once, only if a range in it is
// wanted; a range past the end of its file is refused naming the leaf's JSON path, a file that does not
// decode naming its "filenames[i]" (or "environment"). The load limits (core/limits.h) apply to the total
// count, the environment included. Files of different SH degrees are merged at the highest one, the others'
// higher coefficients zero (mergeClouds): the environment is one more such file.
GaussianCloud readLodMetaLeaves(const LodMeta& meta, std::span<const int> leaf_level);

// As above, with the environment already read by readLodMetaEnvironment (its rows appended as they are), or
// left out when `environment` is null.
GaussianCloud readLodMetaLeaves(const LodMeta& meta, std::span<const int> leaf_level,
                                const GaussianCloud* environment);

}  // namespace sf
