// The level-of-detail hierarchy on disk (docs/formats/lod.md): a directory holding chunk files of nodes and a
// small binary index listing them, written last. Readers check every field of untrusted files and refuse a
// corrupt or truncated one with sf::FormatError ("<path>: byte <offset>: <reason>").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/math.h"

namespace sf::lod {

inline constexpr char kIndexFileName[] = "index.sflod";
inline constexpr char kTopFileName[] = "top.sflc";
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr uint32_t kNone = 0xFFFFFFFFu;  // "no parent" in a chunk entry; the top's chunk id
inline constexpr size_t kChunkHeaderBytes = 32;
inline constexpr size_t kNodeFixedBytes = 96;  // a node's bytes before its SH coefficients
inline constexpr size_t kIndexHeaderBytes = 104;
inline constexpr size_t kChunkEntryBytes = 96;
inline constexpr size_t kFileNameBytes = 32;

// Node flags.
inline constexpr uint16_t kChildrenAreChunks =
    1;  // top nodes: the children are the roots of chunks [first, first + count)

// One node: a gaussian (activated values, as GaussianCloud holds them) with what the cut needs. Leaves are
// the input gaussians, unchanged; a parent is the moment-matched merge of its children (lod/merge.h).
struct Node {
  Vec3 position, scale;
  Quat rotation;
  float opacity = 0;
  Vec3 box_min,
      box_max;       // world box of everything the node stands for: its own 3-sigma box and its children's
  float size = 0;    // longest edge of the box: what the screen-space error projects
  float weight = 0;  // the merge weight W (sum of its leaves' weights)
  uint32_t first_child = 0, child_count = 0;  // in the same chunk, or chunk ids (kChildrenAreChunks)
  uint16_t level = 0;                         // 0 for leaves; a parent is one above its children
  uint16_t flags = 0;
  uint64_t source_index = 0;  // the lowest input row among its leaves (a leaf: its row)

  bool leaf() const { return child_count == 0; }
};

// A chunk's nodes, root first, then level by level down; the children of a node are contiguous and come
// after it. `sh` holds shStride floats per node ([node][coeff][rgb], as GaussianCloud).
struct Chunk {
  std::vector<Node> nodes;
  std::vector<float> sh;
};

// One chunk as the index lists it.
struct ChunkEntry {
  std::string file;                // relative to the hierarchy's directory: [A-Za-z0-9._-], at most 31 bytes
  uint64_t offset = 0, bytes = 0;  // where its bytes lie in the file
  uint32_t node_count = 0;
  uint32_t parent = kNone;  // the top node its root hangs under (kNone: the chunk's root is the hierarchy's)
  uint64_t first_leaf = 0;  // its first leaf's position in the sorted order
  uint32_t leaf_count = 0;
  uint32_t crc32 = 0;     // CRC-32 (zlib's) of its bytes
  Vec3 box_min, box_max;  // its root's box
};

struct Index {
  int sh_degree = 0;
  uint32_t fanout = 8;
  uint32_t chunk_leaves = 0;  // leaves per chunk (a power of the fan-out); the last chunk may hold fewer
  uint32_t chunk_levels = 0;  // levels above the leaves inside a chunk (chunk_leaves = fanout^chunk_levels)
  ColorSpace color_space = ColorSpace::kSrgb;
  bool antialiased = false;
  float screen_filter =
      kScreenFilterInria;  // kScreenFilterMip or kScreenFilterInria (GaussianCloud::screen_filter)
  uint64_t leaf_count = 0, node_count = 0;
  uint64_t dropped_non_finite = 0;  // input rows left out for holding NaN or infinity
  Vec3 bounds_min, bounds_max;      // of the leaves' positions
  Vec3 p01, p99;                    // 1st and 99th percentile of the positions per axis (histogram estimate)
  bool has_top = false;             // more than one chunk: the top levels live in `top`
  ChunkEntry top;
  std::vector<ChunkEntry> chunks;
};

// Bytes of one node record for an SH degree.
size_t nodeRecordBytes(int sh_degree);

// CRC-32 (zlib's polynomial) of bytes.
uint32_t crc32Of(std::span<const uint8_t> bytes);

// A chunk file's bytes (header and nodes). chunk_id is kNone for the top.
std::vector<uint8_t> encodeChunk(const Chunk& chunk, int sh_degree, uint32_t chunk_id);
// Decodes and checks a chunk: header against the entry and index, every node's values finite and in range,
// child ranges inside the chunk (after their parent) or, for the top, inside the chunk list. `bytes` is the
// chunk's bytes, `path` and `base_offset` name them in messages. Throws FormatError.
Chunk decodeChunk(std::span<const uint8_t> bytes, const std::string& path, uint64_t base_offset,
                  const Index& index, uint32_t chunk_id);

std::vector<uint8_t> encodeIndex(const Index& index);
// Throws FormatError naming the byte of the first problem (a wrong magic, an unknown version, a truncated
// file, a checksum mismatch, a file name that leaves the directory, inconsistent counts).
Index decodeIndex(std::span<const uint8_t> bytes, const std::string& path);

// A hierarchy in memory: its index and every chunk.
struct Hierarchy {
  std::string dir;
  Index index;
  Chunk top;                  // empty without a top
  std::vector<Chunk> chunks;  // chunks[i] as index.chunks[i]
};

// Reads the index of `dir`, then every chunk through it: each file's size, checksum and nodes checked
// (decodeChunk), and the whole a tree (every chunk hung under exactly one top node, the one its entry
// names). Throws sf::Error for a missing index (an unfinished build leaves none), FormatError for a bad file.
Hierarchy loadHierarchy(const std::string& dir);
// Checks that every chunk hangs under exactly one top node, the one its index entry names (needs the index
// and the top chunk only). Throws FormatError naming the top chunk's byte.
void checkChunkParents(const Hierarchy& h);
// Only the index (what `lod info` prints without --verify).
Index loadIndex(const std::string& dir);

// Reads one chunk through its entry: the file's size, the checksum and the nodes. Throws FormatError.
Chunk loadChunk(const std::string& dir, const Index& index, uint32_t chunk_id);
// The same from the bytes of the file the entry names (`path` in messages): the entry's range inside it (else
// "truncated", at the file's end), decodeChunk, then the checksum (a mismatch at the chunk's offset).
Chunk decodeChunkFile(std::span<const uint8_t> file, const std::string& path, const Index& index,
                      uint32_t chunk_id);

// Node counts per level (index 0: leaves) over the chunks and the top.
std::vector<uint64_t> levelCounts(const Hierarchy& h);

}  // namespace sf::lod
