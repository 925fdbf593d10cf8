// The offline level-of-detail build (docs/lod.md): a splat file in, a chunked hierarchy directory out
// (lod/format.h), out of core for a binary little-endian PLY (streamed); other formats are decoded whole by
// the engine's loader and their rows fed through the same steps (lod/ply_stream.h's SplatRowSource).
//
// 1. Two passes over the input, read in blocks (lod/ply_stream.h): the bounds; then a 63-bit Morton key per
//    gaussian (21 bits an axis over the bounds' cube) and its record, gathered into runs that fit the memory
//    setting, each sorted by (key, row) with a stable radix sort and written to a run file in the scratch
//    directory. An input that fits one run is sorted in memory and never written (same order, same output).
// 2. The runs merged (a k-way heap on (key, row)) into one stream, cut into chunks of chunk_leaves leaves
//    (a power of the fan-out). Each chunk is built alone: groups of `fanout` consecutive nodes merged into
//    parents (lod/merge.h), level by level, up to the chunk's root; then written.
// 3. The top levels built over the chunks' roots the same way, written as one more chunk; the index last
//    (temporary file and rename), so a build that stops leaves no index pointing at missing chunks.
// Deterministic: the output depends on the input's gaussians and the options (not on the input's format,
// the memory setting, the thread count or the scratch directory). Linear in the input size for a given memory
// setting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sf::lod {

struct BuildOptions {
  uint32_t fanout = 8;            // children per parent, 2..64
  uint64_t chunk_leaves = 32768;  // leaves per chunk, rounded up to a power of the fan-out
  uint64_t memory_bytes = uint64_t{1}
                          << 30;  // what the sort runs, merge buffers and a chunk may hold together
  std::string scratch_dir;  // run files go here (created; default: OUT_DIR/.scratch), removed at the end
  std::function<void(const std::string&)> progress;  // a line per step, when set
  // Called after each chunk file is written, with the number written so far; a test throws from it to
  // simulate a build interrupted half-way.
  std::function<void(size_t chunks_written)> after_chunk;
};

struct BuildReport {
  uint64_t input_rows = 0, leaves = 0, dropped_non_finite = 0;
  uint64_t nodes = 0, chunks = 0, runs = 0;  // runs: 1 when the sort stayed in memory
  uint32_t chunk_leaves = 0, levels = 0;     // levels including the leaves
  uint64_t bytes_written = 0;                // chunk files and the index
  double seconds = 0;
  uint64_t peak_memory_bytes = 0;  // the process's peak resident set (VmHWM), 0 where unknown
  int sh_degree = 0;
  std::string input_format;  // "binary PLY, streamed", or "<formatName>, decoded whole" (io/formats.h)
  std::vector<std::string>
      warnings;  // the loader's, for a decoded input (non-finite rows: dropped_non_finite)
};

// Builds the hierarchy of the splat file `input` into `out_dir` (created; an index there is removed first,
// chunk files of an earlier build that the new index does not list are removed after it is written).
// A binary little-endian splat PLY is streamed (never held whole); any other splat file the engine reads
// (io/formats.h: compressed PLY, SPZ, .splat, SOG, .ksplat, glTF, ASCII or big-endian PLY, lod-meta.json)
// is decoded whole by the loader with the process's format options and fed through the same sort and
// chunking, its decoded cloud counted against memory_bytes (refused when it alone passes it). Same
// gaussians, same options: same output bytes, whatever the input's format (rows the loader dropped for
// non-finite values are counted in dropped_non_finite, but the source rows of the leaves then number the
// kept rows).
// Throws sf::Error / FormatError (input, scratch or output problems, the loader's messages naming the
// file), or whatever after_chunk throws; the run files are removed either way.
BuildReport buildHierarchy(const std::string& input, const std::string& out_dir, const BuildOptions& options);

// The smallest power of `fanout` at or above `leaves` (at least `fanout`).
uint64_t roundChunkLeaves(uint64_t leaves, uint32_t fanout);

// The process's peak resident set size (VmHWM of /proc/self/status) in bytes; 0 where unavailable.
uint64_t peakMemoryBytes();

}  // namespace sf::lod
