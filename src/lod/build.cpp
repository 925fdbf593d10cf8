// The offline level-of-detail build (lod/build.h; the merge rule in lod/merge.h; docs/lod.md).
#include "lod/build.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <queue>

#include "core/covariance.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "core/morton.h"
#include "core/parallel.h"
#include "io/file.h"
#include "io/formats.h"
#include "lod/format.h"
#include "lod/merge.h"
#include "lod/ply_stream.h"
#include "render/radix_sort.h"

namespace sf::lod {

namespace fs = std::filesystem;

namespace {

constexpr int kMortonBits = 21;  // per axis: 63-bit keys
constexpr int kHistogramBins = 4096;

// A leaf on its way through the sort: its key, input row and block floats (lod/ply_stream.h's row layout).
struct LeafRef {
  uint64_t key = 0, row = 0;
  const float* data = nullptr;
};

// Run files of fixed-size records: key (u64), row (u64), the row's floats. Scratch only, never read by
// others.
class RunWriter {
 public:
  RunWriter(const std::string& path, size_t record_bytes) : path_(path), record_(record_bytes) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) throw Error(path + ": cannot create a sort run file: " + std::strerror(errno));
  }
  ~RunWriter() {
    if (file_) std::fclose(file_);
  }
  void put(uint64_t key, uint64_t row, const float* data) {
    const size_t floats = (record_ - 16) / 4;
    if (std::fwrite(&key, 8, 1, file_) != 1 || std::fwrite(&row, 8, 1, file_) != 1 ||
        std::fwrite(data, 4, floats, file_) != floats)
      throw Error(path_ + ": cannot write a sort run (disk full?): " + std::strerror(errno));
  }
  void close() {
    const bool ok = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok) throw Error(path_ + ": cannot write a sort run (disk full?)");
  }

 private:
  std::string path_;
  size_t record_;
  FILE* file_ = nullptr;
};

class RunReader {
 public:
  RunReader(const std::string& path, size_t record_bytes, size_t buffer_records)
      : path_(path), record_(record_bytes) {
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw Error(path + ": cannot open a sort run file: " + std::strerror(errno));
    buffer_.resize(std::max<size_t>(1, buffer_records) * record_);
  }
  ~RunReader() {
    if (file_) std::fclose(file_);
  }
  // The current record, or false at the end.
  bool current(LeafRef& out) {
    if (pos_ == end_) {
      end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
      pos_ = 0;
      if (end_ == 0) return false;
      if (end_ % record_ != 0) throw Error(path_ + ": sort run file cut short");
    }
    const uint8_t* p = buffer_.data() + pos_;
    std::memcpy(&out.key, p, 8);
    std::memcpy(&out.row, p + 8, 8);
    out.data = reinterpret_cast<const float*>(p + 16);
    return true;
  }
  void advance() { pos_ += record_; }

 private:
  std::string path_;
  size_t record_;
  FILE* file_ = nullptr;
  std::vector<uint8_t> buffer_;
  size_t pos_ = 0, end_ = 0;
};

// The scratch folder of one build, removed with everything in it when the build ends (or fails).
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& parent) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) throw Error(parent + ": cannot create the scratch directory: " + ec.message());
    std::string tmpl = (fs::path(parent) / "sflod-sort-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      throw Error(parent + ": cannot create a folder for sort runs: " + std::strerror(errno));
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// One level of nodes being built, with their moments and SH in double.
struct Level {
  std::vector<Node> nodes;
  std::vector<float> sh;
  std::vector<Moments> moments;
  std::vector<double> shd;
  void resize(size_t n, size_t stride) {
    nodes.resize(n), sh.resize(n * stride), moments.resize(n), shd.resize(n * stride);
  }
};

void setBox(Node& n, const Moments& m) {
  const Vec3 c{static_cast<float>(m.mean[0]), static_cast<float>(m.mean[1]), static_cast<float>(m.mean[2])};
  const Vec3 h{static_cast<float>(3 * std::sqrt(std::max(0.0, m.cov[0]))),
               static_cast<float>(3 * std::sqrt(std::max(0.0, m.cov[3]))),
               static_cast<float>(3 * std::sqrt(std::max(0.0, m.cov[5])))};
  n.box_min = c - h, n.box_max = c + h;
}

float longestEdge(const Node& n) {
  return std::max({n.box_max.x - n.box_min.x, n.box_max.y - n.box_min.y, n.box_max.z - n.box_min.z});
}

// Level 0 of a chunk from its leaves' rows.
void makeLeaves(std::span<const LeafRef> leaves, size_t stride_sh, Level& out) {
  out.resize(leaves.size(), stride_sh);
  parallelForRange(leaves.size(), 1024, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const float* d = leaves[i].data;
      Node& n = out.nodes[i];
      n.position = {d[0], d[1], d[2]};
      n.scale = {d[3], d[4], d[5]};
      n.rotation = {d[6], d[7], d[8], d[9]};
      n.opacity = d[10];
      n.source_index = leaves[i].row;
      n.level = 0;
      const Moments m = leafMoments(n.position, n.scale, n.rotation, n.opacity);
      out.moments[i] = m;
      n.weight = static_cast<float>(m.weight);
      setBox(n, m);
      n.size = longestEdge(n);
      for (size_t k = 0; k < stride_sh; ++k) {
        out.sh[i * stride_sh + k] = d[kSplatFixedFloats + k];
        out.shd[i * stride_sh + k] = d[kSplatFixedFloats + k];
      }
    }
  });
}

// The next level up: groups of `fanout` consecutive nodes merged (a last group may be smaller). Sets each
// parent's first_child to the index of its first child in `below`.
void makeParents(const Level& below, uint32_t fanout, uint16_t level, size_t stride_sh, Level& out) {
  const size_t count = (below.nodes.size() + fanout - 1) / fanout;
  out.resize(count, stride_sh);
  parallelForRange(count, 64, [&](size_t begin, size_t end) {
    for (size_t j = begin; j < end; ++j) {
      const size_t first = j * fanout, last = std::min(first + fanout, below.nodes.size());
      const Moments m = mergeMoments(std::span<const Moments>(below.moments.data() + first, last - first));
      Node& n = out.nodes[j];
      out.moments[j] = m;
      n.position = {static_cast<float>(m.mean[0]), static_cast<float>(m.mean[1]),
                    static_cast<float>(m.mean[2])};
      Cov6 c;
      for (int e = 0; e < 6; ++e)
        c[static_cast<size_t>(e)] = static_cast<float>(m.cov[static_cast<size_t>(e)]);
      const ScaleRotation sr = decomposeCovariance(c);
      n.scale = sr.scale;
      n.rotation = sr.rotation;
      float max_opacity = 0;
      uint64_t source = UINT64_MAX;
      setBox(n, m);
      for (size_t i = first; i < last; ++i) {
        const Node& child = below.nodes[i];
        max_opacity = std::max(max_opacity, child.opacity);
        source = std::min(source, child.source_index);
        n.box_min = {std::min(n.box_min.x, child.box_min.x), std::min(n.box_min.y, child.box_min.y),
                     std::min(n.box_min.z, child.box_min.z)};
        n.box_max = {std::max(n.box_max.x, child.box_max.x), std::max(n.box_max.y, child.box_max.y),
                     std::max(n.box_max.z, child.box_max.z)};
      }
      n.opacity = parentOpacity(m.weight, n.scale, max_opacity);
      n.size = longestEdge(n);
      n.weight = static_cast<float>(m.weight);
      n.level = level;
      n.source_index = source;
      n.first_child = static_cast<uint32_t>(first);
      n.child_count = static_cast<uint32_t>(last - first);
      const double inv = 1.0 / m.weight;
      for (size_t k = 0; k < stride_sh; ++k) {
        double s = 0;
        for (size_t i = first; i < last; ++i) s += below.moments[i].weight * below.shd[i * stride_sh + k];
        out.shd[j * stride_sh + k] = s * inv;
        out.sh[j * stride_sh + k] = static_cast<float>(s * inv);
      }
    }
  });
}

// Levels (bottom first, levels[0] the lowest stored) into one chunk, root first, then level by level down;
// first_child indices turned from "index in the level below" into "index in the chunk". The lowest level's
// first_child is left as it is (leaves have none; the top's lowest level points at chunk ids).
Chunk assemble(std::vector<Level>& levels, size_t stride_sh, bool lowest_points_at_chunks) {
  Chunk c;
  std::vector<size_t> offset(levels.size());
  size_t total = 0;
  for (size_t l = levels.size(); l-- > 0;) offset[l] = total, total += levels[l].nodes.size();
  c.nodes.reserve(total);
  c.sh.reserve(total * stride_sh);
  for (size_t l = levels.size(); l-- > 0;) {
    for (Node n : levels[l].nodes) {
      if (l > 0)
        n.first_child = static_cast<uint32_t>(n.first_child + offset[l - 1]);
      else if (lowest_points_at_chunks)
        n.flags = kChildrenAreChunks;
      c.nodes.push_back(n);
    }
    c.sh.insert(c.sh.end(), levels[l].sh.begin(), levels[l].sh.end());
  }
  return c;
}

std::string chunkFileName(size_t i) {
  char name[32];
  std::snprintf(name, sizeof(name), "chunk_%06zu.sflc", i);
  return name;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string mb(uint64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return s;
}

void say(const BuildOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

// The sizes of one build: the rows, the chunks, and how the memory setting is shared out.
struct BuildSizes {
  size_t stride = 0, stride_sh = 0;  // floats per row; of them SH coefficients
  int degree = 0;
  uint64_t chunk_leaves = 0;
  uint32_t chunk_levels = 0;  // levels above the leaves inside a chunk
  size_t record = 0;          // bytes of a sort-run record
  uint64_t spare = 0;         // the memory setting less a chunk's needs
  size_t run_capacity = 0;    // gaussians in one sort run
  size_t block_rows = 0;      // input rows read at a time
};

// `held`: bytes the input already holds in memory (a decoded cloud), charged to the memory setting first.
BuildSizes planBuild(const SplatRowSource& in, const BuildOptions& o, uint64_t held) {
  const uint64_t memory = o.memory_bytes - held;
  BuildSizes z;
  z.stride = in.stride(), z.stride_sh = z.stride - kSplatFixedFloats;
  z.degree = in.shDegree();
  z.chunk_leaves = roundChunkLeaves(std::max<uint64_t>(o.chunk_leaves, 1), o.fanout);
  for (uint64_t p = 1; p < z.chunk_leaves; p *= o.fanout) ++z.chunk_levels;
  z.record = 16 + 4 * z.stride;

  // Memory: a chunk (its leaves' records, every level's nodes with double moments and SH, its encoding)
  // takes what it needs; half of the rest holds a sort run, a quarter the merge's read buffers.
  const double node_bytes = sizeof(Node) + sizeof(Moments) + 12.0 * static_cast<double>(z.stride_sh) +
                            static_cast<double>(nodeRecordBytes(z.degree));
  const uint64_t chunk_bytes =
      static_cast<uint64_t>(static_cast<double>(z.chunk_leaves) *
                            (static_cast<double>(z.record) + node_bytes * o.fanout / (o.fanout - 1)));
  if (chunk_bytes > memory / 2)
    throw Error("a chunk of " + std::to_string(z.chunk_leaves) + " leaves needs about " + mb(chunk_bytes) +
                ", more than half the memory setting (" + mb(o.memory_bytes) +
                (held ? ", less the decoded input's " + mb(held) : std::string()) +
                "): give more memory or fewer leaves per chunk");
  z.spare = memory - chunk_bytes;
  z.run_capacity = static_cast<size_t>(std::max<uint64_t>(256, z.spare / 2 / (z.record + 24)));
  // Input blocks (the file's bytes and their floats) take at most a sixteenth of the setting.
  const uint64_t block_row_bytes = in.rowBytes() + 4 * z.stride;
  z.block_rows = static_cast<size_t>(
      std::clamp<uint64_t>(memory / 16 / block_row_bytes, 256, std::min<uint64_t>(z.run_capacity, 65536)));
  return z;
}

struct RowBounds {
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
  uint64_t dropped = 0;  // rows holding NaN or infinity
  Vec3 span() const { return {hi.x - lo.x, hi.y - lo.y, hi.z - lo.z}; }
};

// Pass 1: bounds of the finite rows.
RowBounds scanBounds(SplatRowSource& in, size_t block_rows, std::vector<float>& block) {
  const size_t stride = in.stride();
  RowBounds b;
  while (const size_t rows = in.read(block_rows, block)) {
    for (size_t i = 0; i < rows; ++i) {
      const float* d = block.data() + i * stride;
      if (!rowFinite({d, stride})) {
        ++b.dropped;
        continue;
      }
      b.lo = {std::min(b.lo.x, d[0]), std::min(b.lo.y, d[1]), std::min(b.lo.z, d[2])};
      b.hi = {std::max(b.hi.x, d[0]), std::max(b.hi.y, d[1]), std::max(b.hi.z, d[2])};
    }
  }
  return b;
}

// The output directory, created.
fs::path prepareOutputDir(const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir, ec)) throw Error(out_dir + ": cannot create the output directory");
  const fs::path out(out_dir);
  // No index may point at chunks this build replaces.
  fs::remove(out / kIndexFileName, ec);
  if (ec) throw Error((out / kIndexFileName).string() + ": cannot remove the old index: " + ec.message());
  return out;
}

// A row's Morton key over the bounds' cube: kMortonBits an axis.
struct MortonGrid {
  Vec3 lo;
  double to_grid;
  explicit MortonGrid(const RowBounds& b)
      : lo(b.lo),
        to_grid(static_cast<double>(1u << kMortonBits) /
                std::max({static_cast<double>(b.hi.x) - b.lo.x, static_cast<double>(b.hi.y) - b.lo.y,
                          static_cast<double>(b.hi.z) - b.lo.z, 1e-30})) {}
  uint64_t keyOf(const float* d) const {
    uint64_t key = 0;
    const double p[3] = {static_cast<double>(d[0]) - lo.x, static_cast<double>(d[1]) - lo.y,
                         static_cast<double>(d[2]) - lo.z};
    for (int a = 0; a < 3; ++a) {
      const uint64_t q = static_cast<uint64_t>(
          std::clamp(std::floor(p[a] * to_grid), 0.0, static_cast<double>((1u << kMortonBits) - 1)));
      key |= spreadBits3(q) << (2 - a);
    }
    return key;
  }
};

using Histograms = std::vector<std::array<uint64_t, kHistogramBins>>;  // per axis, over the bounds

// The leaves in (key, row) order: sorted in memory when they fit one run, else written as sorted runs to a
// scratch folder and merged as the chunks take them. The run files go when it does (or at release()).
class LeafSort {
 public:
  LeafSort(const BuildSizes& z, const fs::path& out, const BuildOptions& o) : z_(z), out_(out), o_(o) {}

  void reserve(uint64_t leaves) { keys_.reserve(std::min<uint64_t>(z_.run_capacity, leaves)); }

  void add(uint64_t key, uint64_t row, const float* d) {
    if (keys_.size() == z_.run_capacity) flushRun();
    keys_.push_back(key);
    rows_.push_back(row);
    data_.insert(data_.end(), d, d + z_.stride);
  }

  // After the last add: sorts in memory, or writes the last run.
  void finish() {
    in_memory_ = runs_.empty();
    if (in_memory_) {
      sortRun();
      say(o_, "sorting in memory: " + std::to_string(keys_.size()) + " gaussians");
    } else {
      if (!keys_.empty()) flushRun();
      say(o_, "sorted " + std::to_string(runs_.size()) + " runs; merging");
    }
  }

  bool inMemory() const { return in_memory_; }
  size_t runCount() const { return runs_.size(); }

  // Opens the runs for the k-way merge, a heap on (key, row).
  void startMerge() {
    if (!in_memory_) {
      const size_t buffer_records =
          static_cast<size_t>(std::max<uint64_t>(1, z_.spare / 4 / runs_.size() / z_.record));
      for (size_t r = 0; r < runs_.size(); ++r) {
        readers_.push_back(std::make_unique<RunReader>(runs_[r], z_.record, buffer_records));
        LeafRef l;
        if (readers_.back()->current(l)) heap_.push({{l.key, l.row}, r});
      }
    }
    chunk_data_.resize(static_cast<size_t>(z_.chunk_leaves) * z_.stride);
  }

  // Up to chunk_leaves next leaves (merged from the runs, their floats copied into a chunk buffer); valid
  // until the next call.
  std::span<const LeafRef> nextLeaves() {
    chunk_refs_.clear();
    while (chunk_refs_.size() < z_.chunk_leaves) {
      LeafRef l;
      if (in_memory_) {
        if (next_sorted_ == order_.size()) break;
        const uint32_t i = order_[next_sorted_++];
        l = {keys_[i], rows_[i], data_.data() + size_t{i} * z_.stride};
      } else {
        if (heap_.empty()) break;
        const size_t r = heap_.top().second;
        heap_.pop();
        if (!readers_[r]->current(l)) throw Error("sort run " + runs_[r] + " ended early");
        float* dst = chunk_data_.data() + chunk_refs_.size() * z_.stride;
        std::memcpy(dst, l.data, z_.stride * 4);
        l.data = dst;
        readers_[r]->advance();
        LeafRef next;
        if (readers_[r]->current(next)) heap_.push({{next.key, next.row}, r});
      }
      chunk_refs_.push_back(l);
    }
    return chunk_refs_;
  }

  // Closes and removes the run files (the runs are consumed).
  void release() {
    readers_.clear();
    scratch_.reset();
  }

 private:
  void sortRun() {
    std::vector<uint64_t> sorted = keys_;
    order_.resize(keys_.size());
    for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
    radixSortPairs(sorted, order_, 3 * kMortonBits);  // stable: equal keys stay in row order
  }

  void flushRun() {
    if (!scratch_) {
      scratch_ = std::make_unique<ScratchDir>(o_.scratch_dir.empty() ? (out_ / ".scratch").string()
                                                                     : o_.scratch_dir);
      say(o_, "sorting out of core: runs of up to " + std::to_string(z_.run_capacity) + " gaussians in " +
                  scratch_->path);
    }
    sortRun();
    char name[32];
    std::snprintf(name, sizeof(name), "run_%06zu.bin", runs_.size());
    const std::string path = (fs::path(scratch_->path) / name).string();
    RunWriter w(path, z_.record);
    for (uint32_t i : order_) w.put(keys_[i], rows_[i], data_.data() + size_t{i} * z_.stride);
    w.close();
    runs_.push_back(path);
    keys_.clear(), rows_.clear(), data_.clear();
  }

  using HeapItem = std::pair<std::pair<uint64_t, uint64_t>, size_t>;  // ((key, row), run)

  const BuildSizes& z_;
  const fs::path& out_;
  const BuildOptions& o_;
  std::unique_ptr<ScratchDir> scratch_;  // declared before the readers: they close before it goes
  std::vector<std::string> runs_;
  std::vector<uint64_t> keys_, rows_;
  std::vector<float> data_;
  std::vector<uint32_t> order_;
  bool in_memory_ = true;
  std::vector<std::unique_ptr<RunReader>> readers_;
  std::priority_queue<HeapItem, std::vector<HeapItem>, std::greater<HeapItem>> heap_;
  size_t next_sorted_ = 0;
  std::vector<float> chunk_data_;
  std::vector<LeafRef> chunk_refs_;
};

// Pass 2: keys, percentile histograms and sorted runs.
void sortRows(SplatRowSource& in, const BuildSizes& z, const RowBounds& b, uint64_t leaf_count,
              std::vector<float>& block, LeafSort& sort, Histograms& histogram) {
  const MortonGrid grid(b);
  const Vec3 lo = b.lo, span = b.span();
  in.rewind();
  sort.reserve(leaf_count);
  while (true) {
    const uint64_t first_row = in.nextRow();
    const size_t got = in.read(z.block_rows, block);
    if (got == 0) break;
    for (size_t i = 0; i < got; ++i) {
      const float* d = block.data() + i * z.stride;
      if (!rowFinite({d, z.stride})) continue;
      for (int a = 0; a < 3; ++a) {
        const float s = span[a] > 0 ? (d[a] - lo[a]) / span[a] : 0.0f;
        ++histogram[static_cast<size_t>(a)][static_cast<size_t>(
            std::clamp(static_cast<int>(s * kHistogramBins), 0, kHistogramBins - 1))];
      }
      sort.add(grid.keyOf(d), first_row + i, d);
    }
  }
  sort.finish();
}

// The index's 1st and 99th percentiles of the positions per axis, from the histograms.
void setPercentiles(Index& index, const Histograms& histogram, const RowBounds& b, uint64_t leaf_count) {
  const Vec3 lo = b.lo, span = b.span();
  for (int a = 0; a < 3; ++a) {
    const auto& h = histogram[static_cast<size_t>(a)];
    uint64_t sum = 0;
    int b01 = 0, b99 = kHistogramBins - 1;
    bool got01 = false;
    for (int k = 0; k < kHistogramBins; ++k) {
      sum += h[static_cast<size_t>(k)];
      if (!got01 && static_cast<double>(sum) >= 0.01 * static_cast<double>(leaf_count)) b01 = k, got01 = true;
      if (static_cast<double>(sum) >= 0.99 * static_cast<double>(leaf_count)) {
        b99 = k;
        break;
      }
    }
    index.p01[a] = lo[a] + span[a] * static_cast<float>(b01) / kHistogramBins;
    index.p99[a] = lo[a] + span[a] * static_cast<float>(b99 + 1) / kHistogramBins;
  }
}

// The index but its chunks: the input's SH degree and filter, the sizes, the bounds and their percentiles.
Index makeIndex(const SplatRowSource& in, const std::string& input, const BuildOptions& o,
                const BuildSizes& z, const RowBounds& b, uint64_t dropped, uint64_t leaf_count,
                const Histograms& histogram) {
  Index index;
  index.sh_degree = z.degree;
  index.antialiased = in.antialiased();
  index.screen_filter = in.screenFilter();
  if (index.screen_filter != kScreenFilterInria && index.screen_filter != kScreenFilterMip)
    throw Error(input + ": a screen filter of " + std::to_string(index.screen_filter) +
                " px^2 (the hierarchy records INRIA's 0.3 or Mip-Splatting's 0.1)");
  index.fanout = o.fanout;
  index.chunk_leaves = static_cast<uint32_t>(z.chunk_leaves);
  index.chunk_levels = z.chunk_levels;
  index.leaf_count = leaf_count;
  index.dropped_non_finite = dropped;
  index.bounds_min = b.lo, index.bounds_max = b.hi;
  setPercentiles(index, histogram, b, leaf_count);
  return index;
}

// Chunk `c` over its leaves: its levels up to its root (kept in slot c of `roots`, the top's lowest level),
// its file written and listed in the index. Returns the file's bytes.
uint64_t writeChunk(size_t c, std::span<const LeafRef> leaves, const BuildSizes& z, uint32_t fanout,
                    const fs::path& out, Level& roots, Index& index) {
  std::vector<Level> levels(1);
  makeLeaves(leaves, z.stride_sh, levels[0]);
  for (uint32_t l = 1; l <= z.chunk_levels; ++l) {
    levels.emplace_back();
    makeParents(levels[l - 1], fanout, static_cast<uint16_t>(l), z.stride_sh, levels[l]);
  }
  const Level& top_level = levels.back();
  roots.nodes[c] = top_level.nodes[0];
  roots.moments[c] = top_level.moments[0];
  std::copy_n(top_level.sh.begin(), z.stride_sh,
              roots.sh.begin() + static_cast<std::ptrdiff_t>(c * z.stride_sh));
  std::copy_n(top_level.shd.begin(), z.stride_sh,
              roots.shd.begin() + static_cast<std::ptrdiff_t>(c * z.stride_sh));
  const Chunk chunk = assemble(levels, z.stride_sh, false);
  const std::vector<uint8_t> bytes = encodeChunk(chunk, z.degree, static_cast<uint32_t>(c));
  ChunkEntry e;
  e.file = chunkFileName(c);
  e.offset = 0;
  e.bytes = bytes.size();
  e.node_count = static_cast<uint32_t>(chunk.nodes.size());
  e.first_leaf = c * z.chunk_leaves;
  e.leaf_count = static_cast<uint32_t>(leaves.size());
  e.crc32 = crc32Of(bytes);
  e.box_min = chunk.nodes[0].box_min, e.box_max = chunk.nodes[0].box_max;
  writeFileAtomic((out / e.file).string(), bytes);
  index.chunks.push_back(e);
  index.node_count += chunk.nodes.size();
  return bytes.size();
}

// The top levels over the chunks' roots (more than one chunk), written as one more chunk; each chunk's parent
// set in the index. Returns the levels it adds; adds its bytes to `bytes_written`.
uint32_t writeTop(Level roots, const BuildSizes& z, const BuildOptions& o, const fs::path& out, Index& index,
                  uint64_t& bytes_written) {
  const size_t chunk_count = roots.nodes.size();
  std::vector<Level> levels;
  levels.push_back(std::move(roots));
  while (levels.back().nodes.size() > 1) {
    Level next;
    makeParents(levels.back(), o.fanout, static_cast<uint16_t>(z.chunk_levels + levels.size()), z.stride_sh,
                next);
    levels.push_back(std::move(next));
  }
  levels.erase(levels.begin());  // the roots live in their chunks
  const Chunk top = assemble(levels, z.stride_sh, true);
  // Each chunk's parent: the lowest top level sits at the end of the top chunk.
  const size_t lowest = top.nodes.size() - levels.front().nodes.size();
  for (size_t c = 0; c < chunk_count; ++c)
    index.chunks[c].parent = static_cast<uint32_t>(lowest + c / o.fanout);
  const std::vector<uint8_t> bytes = encodeChunk(top, z.degree, kNone);
  index.has_top = true;
  index.top.file = kTopFileName;
  index.top.bytes = bytes.size();
  index.top.node_count = static_cast<uint32_t>(top.nodes.size());
  index.top.crc32 = crc32Of(bytes);
  index.top.box_min = top.nodes[0].box_min, index.top.box_max = top.nodes[0].box_max;
  writeFileAtomic((out / kTopFileName).string(), bytes);
  index.node_count += top.nodes.size();
  bytes_written += bytes.size();
  say(o,
      "top: " + std::to_string(top.nodes.size()) + " nodes over " + std::to_string(chunk_count) + " chunks");
  return static_cast<uint32_t>(levels.size());
}

// Files of an earlier build that this index does not list, and the default scratch folder when empty.
void removeStaleFiles(const fs::path& out, const Index& index, const BuildOptions& o) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    const bool stale_chunk = name.rfind("chunk_", 0) == 0 && name.ends_with(".sflc") &&
                             std::none_of(index.chunks.begin(), index.chunks.end(),
                                          [&](const ChunkEntry& e) { return e.file == name; });
    if (stale_chunk || (name == kTopFileName && !index.has_top)) fs::remove(entry.path(), ec);
  }
  if (o.scratch_dir.empty()) fs::remove(out / ".scratch", ec);  // only when empty
}

// The input's rows: a binary little-endian splat PLY streamed out of core (read twice, never whole); any
// other splat file the engine reads decoded whole by its loader (io/formats.h), the decoded cloud charged to
// the memory setting (`held`, its bytes) and refused when it alone passes it. The loader's warnings go to the
// report.
std::unique_ptr<SplatRowSource> openRows(const std::string& input, const BuildOptions& o, BuildReport& report,
                                         uint64_t& held) {
  if (isStreamedPly(input)) {
    report.input_format = "binary PLY, streamed";
    return std::make_unique<PlySplatStream>(input);
  }
  say(o, "decoding " + input +
             " whole (only a binary little-endian PLY is streamed; this format is decoded "
             "into memory by the engine's loader)");
  LoadedSplats loaded = loadSplats(input);
  report.input_format = std::string(formatName(loaded.format)) + ", decoded whole";
  for (std::string& w : loaded.warnings)
    if (w.find("non-finite values") == std::string::npos)  // the build reports the rows it leaves out
      report.warnings.push_back(std::move(w));
  const uint64_t gaussians = loaded.cloud.size();
  auto source =
      std::make_unique<CloudRowSource>(std::move(loaded.cloud), loaded.dropped_non_finite, loaded.file_bytes);
  held = source->heldBytes();
  say(o, "decoded " + input + " (" + formatName(loaded.format) + ", " + mb(loaded.file_bytes) + "): " +
             std::to_string(gaussians) + " gaussians, SH degree " + std::to_string(source->shDegree()) +
             ", held in memory: " + mb(held) + " of the memory setting's " + mb(o.memory_bytes));
  if (held > o.memory_bytes)
    throw Error(input + ": decoded whole, its " + std::to_string(gaussians) + " gaussians hold " + mb(held) +
                ", more than the memory setting (" + mb(o.memory_bytes) + "): give at least " +
                std::to_string((held >> 20) + 1) +
                " MB (--memory-mb) with room for the build, or convert it to a binary PLY "
                "(splatforge convert IN -o OUT.ply), which is built out of core");
  return source;
}

}  // namespace

uint64_t roundChunkLeaves(uint64_t leaves, uint32_t fanout) {
  uint64_t p = fanout;
  while (p < leaves && p <= (uint64_t{1} << 31) / fanout) p *= fanout;
  return p;
}

uint64_t peakMemoryBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  return 0;
}

BuildReport buildHierarchy(const std::string& input, const std::string& out_dir, const BuildOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.fanout < 2 || o.fanout > 64)
    throw Error("fan-out " + std::to_string(o.fanout) + ": expected 2 to 64");
  BuildReport report;
  uint64_t held = 0;  // bytes of a decoded input, charged to the memory setting
  std::unique_ptr<SplatRowSource> source = openRows(input, o, report, held);
  SplatRowSource& in = *source;
  const BuildSizes z = planBuild(in, o, held);
  if (!held)
    say(o, "reading " + input + ": " + std::to_string(in.count()) + " gaussians, SH degree " +
               std::to_string(z.degree) + ", " + mb(in.fileBytes()));

  std::vector<float> block;
  const RowBounds bounds = scanBounds(in, z.block_rows, block);
  const Vec3 lo = bounds.lo, hi = bounds.hi;
  // Rows left out: by the loader (a decoded input) and by the bounds' pass (a streamed one).
  const uint64_t dropped = bounds.dropped + in.droppedBefore();
  const uint64_t leaf_count = in.count() - bounds.dropped;
  if (leaf_count == 0)
    throw Error(input + ": no gaussians to build from" +
                (dropped ? " (every row holds NaN or infinity)" : ""));
  const uint64_t chunk_count = (leaf_count + z.chunk_leaves - 1) / z.chunk_leaves;
  say(o, "bounds [" + std::to_string(lo.x) + ", " + std::to_string(lo.y) + ", " + std::to_string(lo.z) +
             "] to [" + std::to_string(hi.x) + ", " + std::to_string(hi.y) + ", " + std::to_string(hi.z) +
             "]" +
             (dropped ? "; " + std::to_string(dropped) + " rows holding NaN or infinity left out" : ""));

  const fs::path out = prepareOutputDir(out_dir);
  Histograms histogram(3);
  for (auto& h : histogram) h.fill(0);
  LeafSort sort(z, out, o);
  sortRows(in, z, bounds, leaf_count, block, sort, histogram);
  std::vector<float>().swap(block);
  in.release();  // the sort holds the rows now
  Index index = makeIndex(in, input, o, z, bounds, dropped, leaf_count, histogram);

  // The merged stream, chunk by chunk.
  sort.startMerge();
  report.input_rows = in.count() + in.droppedBefore();
  report.leaves = leaf_count;
  report.dropped_non_finite = dropped;
  report.runs = sort.inMemory() ? 1 : sort.runCount();
  report.chunk_leaves = static_cast<uint32_t>(z.chunk_leaves);
  report.sh_degree = z.degree;
  Level roots;  // each chunk's root, with its moments: the top's lowest level
  roots.resize(chunk_count, z.stride_sh);
  const size_t progress_every = std::max<size_t>(1, chunk_count / 10);
  for (size_t c = 0; c < chunk_count; ++c) {
    const std::span<const LeafRef> leaves = sort.nextLeaves();
    if (leaves.empty())
      throw Error("the merged sort ended after " + std::to_string(c) + " of " + std::to_string(chunk_count) +
                  " chunks");
    report.bytes_written += writeChunk(c, leaves, z, o.fanout, out, roots, index);
    if ((c + 1) % progress_every == 0 || c + 1 == chunk_count)
      say(o, "chunk " + std::to_string(c + 1) + " of " + std::to_string(chunk_count) + " (" +
                 std::to_string(index.node_count) + " nodes, " + std::to_string(static_cast<int>(since(t0))) +
                 " s)");
    if (o.after_chunk) o.after_chunk(c + 1);
  }
  sort.release();  // the runs are consumed

  // The top levels over the chunks' roots.
  uint32_t levels_total = z.chunk_levels + 1;
  if (chunk_count > 1) levels_total += writeTop(std::move(roots), z, o, out, index, report.bytes_written);
  const std::vector<uint8_t> index_bytes = encodeIndex(index);
  writeFileAtomic((out / kIndexFileName).string(), index_bytes);
  report.bytes_written += index_bytes.size();
  removeStaleFiles(out, index, o);

  report.nodes = index.node_count;
  report.chunks = chunk_count;
  report.levels = levels_total;
  report.seconds = since(t0);
  report.peak_memory_bytes = peakMemoryBytes();
  return report;
}

}  // namespace sf::lod
