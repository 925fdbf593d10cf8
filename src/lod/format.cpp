// The level-of-detail hierarchy's chunk and index files (docs/formats/lod.md).
#include "lod/format.h"

#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "io/byte_reader.h"
#include "io/byte_writer.h"
#include "io/file.h"

namespace sf::lod {

namespace {

constexpr char kChunkMagic[4] = {'S', 'F', 'L', 'C'};
constexpr char kIndexMagic[4] = {'S', 'F', 'L', 'I'};
// Index flags.
constexpr uint32_t kLinearColor = 1, kAntialiased = 2, kHasTop = 4, kMipFilter = 8;

// Byte by byte: GCC 12 at -O3 warns falsely (stringop-overflow) on vector::insert of a small array.
void putBytes(std::vector<uint8_t>& out, const char* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(bytes[i]));
}

void putVec(std::vector<uint8_t>& out, Vec3 v) {
  putLE(out, v.x), putLE(out, v.y), putLE(out, v.z);
}

Vec3 readVec(ByteReader& r, std::string_view what) {
  Vec3 v;
  v.x = r.readLE<float>(what), v.y = r.readLE<float>(what), v.z = r.readLE<float>(what);
  return v;
}

bool finite(Vec3 v) {
  return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}
bool ordered(Vec3 lo, Vec3 hi) {
  return lo.x <= hi.x && lo.y <= hi.y && lo.z <= hi.z;
}

// A chunk file name: [A-Za-z0-9._-], not starting with '.', so it names a file in the hierarchy's directory.
bool validFileName(const std::string& name) {
  if (name.empty() || name.size() >= kFileNameBytes || name[0] == '.') return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

void putEntry(std::vector<uint8_t>& out, const ChunkEntry& e) {
  char name[kFileNameBytes] = {};
  std::memcpy(name, e.file.data(), std::min(e.file.size(), kFileNameBytes - 1));
  putBytes(out, name, kFileNameBytes);
  putLE(out, e.offset), putLE(out, e.bytes), putLE(out, e.node_count), putLE(out, e.parent),
      putLE(out, e.first_leaf);
  putLE(out, e.leaf_count), putLE(out, e.crc32);
  putVec(out, e.box_min), putVec(out, e.box_max);
}

ChunkEntry readEntry(ByteReader& r, const char* what) {
  ChunkEntry e;
  const size_t at = r.offset();
  auto name = r.bytes(kFileNameBytes, "chunk file name");
  size_t len = 0;
  while (len < kFileNameBytes && name[len] != 0) ++len;
  e.file.assign(reinterpret_cast<const char*>(name.data()), len);
  for (size_t k = len; k < kFileNameBytes; ++k)
    if (name[k] != 0) r.failAt(at + k, std::string(what) + ": file name not zero-padded");
  if (!validFileName(e.file))
    r.failAt(
        at, std::string(what) + ": file name '" + e.file.substr(0, 40) +
                "' is not a plain name in the hierarchy's directory ([A-Za-z0-9._-], not starting with '.')");
  e.offset = r.readLE<uint64_t>("chunk offset");
  e.bytes = r.readLE<uint64_t>("chunk size");
  e.node_count = r.readLE<uint32_t>("chunk node count");
  e.parent = r.readLE<uint32_t>("chunk parent");
  e.first_leaf = r.readLE<uint64_t>("chunk first leaf");
  e.leaf_count = r.readLE<uint32_t>("chunk leaf count");
  e.crc32 = r.readLE<uint32_t>("chunk checksum");
  const size_t box_at = r.offset();
  e.box_min = readVec(r, "chunk box");
  e.box_max = readVec(r, "chunk box");
  if (!finite(e.box_min) || !finite(e.box_max) || !ordered(e.box_min, e.box_max))
    r.failAt(box_at, std::string(what) + ": box not finite or min above max");
  return e;
}

}  // namespace

size_t nodeRecordBytes(int sh_degree) {
  return kNodeFixedBytes + 4 * static_cast<size_t>(shCoeffCount(sh_degree) * 3);
}

uint32_t crc32Of(std::span<const uint8_t> bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  size_t done = 0;
  while (done < bytes.size()) {  // zlib takes a 32-bit length
    const size_t n = std::min<size_t>(bytes.size() - done, size_t{1} << 30);
    crc = ::crc32(crc, bytes.data() + done, static_cast<uInt>(n));
    done += n;
  }
  return static_cast<uint32_t>(crc);
}

std::vector<uint8_t> encodeChunk(const Chunk& chunk, int sh_degree, uint32_t chunk_id) {
  const size_t stride = static_cast<size_t>(shCoeffCount(sh_degree) * 3);
  std::vector<uint8_t> out;
  out.reserve(kChunkHeaderBytes + chunk.nodes.size() * nodeRecordBytes(sh_degree));
  putBytes(out, kChunkMagic, 4);
  putLE(out, kFormatVersion);
  putLE(out, static_cast<uint32_t>(sh_degree));
  putLE(out, static_cast<uint32_t>(chunk.nodes.size()));
  putLE(out, chunk_id);
  putLE(out, static_cast<uint32_t>(nodeRecordBytes(sh_degree)));
  putLE(out, uint64_t{0});
  for (size_t i = 0; i < chunk.nodes.size(); ++i) {
    const Node& n = chunk.nodes[i];
    putVec(out, n.position), putVec(out, n.scale);
    putLE(out, n.rotation.w), putLE(out, n.rotation.x), putLE(out, n.rotation.y), putLE(out, n.rotation.z);
    putLE(out, n.opacity);
    putVec(out, n.box_min), putVec(out, n.box_max);
    putLE(out, n.size), putLE(out, n.weight);
    putLE(out, n.first_child), putLE(out, n.child_count);
    putLE(out, n.level), putLE(out, n.flags);
    putLE(out, n.source_index);
    for (size_t k = 0; k < stride; ++k) putLE(out, chunk.sh[i * stride + k]);
  }
  return out;
}

Chunk decodeChunk(std::span<const uint8_t> bytes, const std::string& path, uint64_t base_offset,
                  const Index& index, uint32_t chunk_id) {
  ByteReader r(bytes, path, base_offset);
  const bool top = chunk_id == kNone;
  const ChunkEntry& entry = top ? index.top : index.chunks.at(chunk_id);
  const std::string what = top ? std::string("top chunk") : "chunk " + std::to_string(chunk_id);
  auto magic = r.bytes(4, "chunk magic");
  if (std::memcmp(magic.data(), kChunkMagic, 4) != 0)
    r.failAt(0, what + ": not a level-of-detail chunk (magic SFLC expected)");
  const uint32_t version = r.readLE<uint32_t>("chunk version");
  if (version != kFormatVersion)
    r.failAt(4, what + ": unknown chunk version " + std::to_string(version) + " (this build reads version " +
                    std::to_string(kFormatVersion) + ")");
  const uint32_t degree = r.readLE<uint32_t>("chunk SH degree");
  if (degree != static_cast<uint32_t>(index.sh_degree))
    r.failAt(8, what + ": SH degree " + std::to_string(degree) + ", the index says " +
                    std::to_string(index.sh_degree));
  const uint32_t count = r.readLE<uint32_t>("chunk node count");
  if (count != entry.node_count)
    r.failAt(12, what + ": " + std::to_string(count) + " nodes, the index says " +
                     std::to_string(entry.node_count));
  const uint32_t id = r.readLE<uint32_t>("chunk id");
  if (id != chunk_id) r.failAt(16, what + ": the file holds chunk id " + std::to_string(id));
  const uint32_t record = r.readLE<uint32_t>("node record size");
  if (record != nodeRecordBytes(index.sh_degree))
    r.failAt(20, what + ": node records of " + std::to_string(record) + " bytes, SH degree " +
                     std::to_string(index.sh_degree) + " has " +
                     std::to_string(nodeRecordBytes(index.sh_degree)));
  if (r.readLE<uint64_t>("reserved") != 0) r.failAt(24, what + ": reserved bytes not zero");
  if (bytes.size() != kChunkHeaderBytes + static_cast<uint64_t>(count) * record)
    r.failAt(bytes.size() < kChunkHeaderBytes + static_cast<uint64_t>(count) * record
                 ? bytes.size()
                 : kChunkHeaderBytes + uint64_t{count} * record,
             what + ": " + std::to_string(bytes.size()) + " bytes, " + std::to_string(count) +
                 " nodes need " + std::to_string(kChunkHeaderBytes + static_cast<uint64_t>(count) * record) +
                 (bytes.size() < kChunkHeaderBytes + uint64_t{count} * record ? " (truncated)" : ""));

  const size_t stride = static_cast<size_t>(shCoeffCount(index.sh_degree) * 3);
  Chunk c;
  c.nodes.resize(count);
  c.sh.resize(static_cast<size_t>(count) * stride);
  std::vector<uint8_t> referenced(count, 0);
  uint64_t leaves = 0;
  for (uint32_t i = 0; i < count; ++i) {
    Node& n = c.nodes[i];
    const size_t at = r.offset();
    auto bad = [&](size_t field, const std::string& reason) {
      r.failAt(at + field, what + ": node " + std::to_string(i) + ": " + reason);
    };
    n.position = readVec(r, "node position");
    n.scale = readVec(r, "node scale");
    n.rotation.w = r.readLE<float>("node rotation"), n.rotation.x = r.readLE<float>("node rotation");
    n.rotation.y = r.readLE<float>("node rotation"), n.rotation.z = r.readLE<float>("node rotation");
    n.opacity = r.readLE<float>("node opacity");
    n.box_min = readVec(r, "node box");
    n.box_max = readVec(r, "node box");
    n.size = r.readLE<float>("node size");
    n.weight = r.readLE<float>("node weight");
    n.first_child = r.readLE<uint32_t>("first child");
    n.child_count = r.readLE<uint32_t>("child count");
    n.level = r.readLE<uint16_t>("node level");
    n.flags = r.readLE<uint16_t>("node flags");
    n.source_index = r.readLE<uint64_t>("source index");
    for (size_t k = 0; k < stride; ++k) c.sh[i * stride + k] = r.readLE<float>("SH coefficient");
    if (!finite(n.position)) bad(0, "position not finite");
    if (!finite(n.scale) || n.scale.x < 0 || n.scale.y < 0 || n.scale.z < 0)
      bad(12, "scale not finite and non-negative");
    const Quat q = n.rotation;
    if (!(std::isfinite(q.w) && std::isfinite(q.x) && std::isfinite(q.y) && std::isfinite(q.z)) ||
        q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z < 1e-12f)
      bad(24, "rotation not a finite, non-zero quaternion");
    if (!(n.opacity >= 0 && n.opacity <= 1)) bad(40, "opacity outside [0, 1]");
    if (!finite(n.box_min) || !finite(n.box_max) || !ordered(n.box_min, n.box_max))
      bad(44, "box not finite or min above max");
    if (!(std::isfinite(n.size) && n.size >= 0)) bad(68, "size not finite and non-negative");
    if (!(std::isfinite(n.weight) && n.weight >= 0)) bad(72, "weight not finite and non-negative");
    for (size_t k = 0; k < stride; ++k)
      if (!std::isfinite(c.sh[i * stride + k])) bad(kNodeFixedBytes + 4 * k, "SH coefficient not finite");
    if (n.flags & ~kChildrenAreChunks) bad(86, "unknown flags " + std::to_string(n.flags));
    if (n.child_count > index.fanout)
      bad(80, std::to_string(n.child_count) + " children, the fan-out is " + std::to_string(index.fanout));
    // A chunk's root at chunk_levels, the top nodes over chunk roots one above it.
    if (!top && i == 0 && n.level != index.chunk_levels)
      bad(84, "the chunk's root at level " + std::to_string(n.level) + ", the index says chunks have " +
                  std::to_string(index.chunk_levels) + " levels above their leaves");
    if (n.flags & kChildrenAreChunks) {
      if (!top) bad(86, "chunk children outside the top chunk");
      if (n.level != uint64_t{index.chunk_levels} + 1)
        bad(84, "chunk roots' parent at level " + std::to_string(n.level) + ", expected " +
                    std::to_string(uint64_t{index.chunk_levels} + 1));
      if (n.child_count == 0 || n.first_child >= index.chunks.size() ||
          n.child_count > index.chunks.size() - n.first_child)
        bad(76, "chunk children [" + std::to_string(n.first_child) + ", +" + std::to_string(n.child_count) +
                    ") outside the " + std::to_string(index.chunks.size()) + " chunks");
      continue;
    }
    if (n.child_count == 0) {
      if (top) bad(80, "a leaf in the top chunk");
      if (n.level != 0) bad(84, "a leaf at level " + std::to_string(n.level));
      ++leaves;
      continue;
    }
    // Children after their parent: the nodes form a tree walked downwards only.
    if (n.first_child <= i || n.first_child >= count || n.child_count > count - n.first_child)
      bad(76, "children [" + std::to_string(n.first_child) + ", +" + std::to_string(n.child_count) +
                  ") not after the node inside the chunk's " + std::to_string(count) + " nodes");
    for (uint32_t k = n.first_child; k < n.first_child + n.child_count; ++k) {
      if (referenced[k]++) bad(76, "node " + std::to_string(k) + " has a second parent");
    }
  }
  for (uint32_t i = 1; i < count; ++i)
    if (!referenced[i])
      r.failAt(kChunkHeaderBytes + uint64_t{i} * record,
               what + ": node " + std::to_string(i) + " has no parent");
  // Levels: a parent one above each child.
  for (uint32_t i = 0; i < count; ++i) {
    const Node& n = c.nodes[i];
    if (n.flags & kChildrenAreChunks) continue;
    for (uint32_t k = n.first_child; k < n.first_child + n.child_count; ++k)
      if (c.nodes[k].level + 1 != n.level)
        r.failAt(kChunkHeaderBytes + uint64_t{i} * record + 84,
                 what + ": node " + std::to_string(i) + " at level " + std::to_string(n.level) +
                     " has a child at level " + std::to_string(c.nodes[k].level));
  }
  if (!top && leaves != entry.leaf_count)
    r.failAt(0, what + ": " + std::to_string(leaves) + " leaves, the index says " +
                    std::to_string(entry.leaf_count));
  return c;
}

std::vector<uint8_t> encodeIndex(const Index& index) {
  std::vector<uint8_t> out;
  putBytes(out, kIndexMagic, 4);
  putLE(out, kFormatVersion);
  putLE(out, static_cast<uint32_t>(index.sh_degree));
  putLE(out, index.fanout);
  putLE(out, index.chunk_leaves);
  putLE(out, index.chunk_levels);
  putLE(out, (index.color_space == ColorSpace::kLinear ? kLinearColor : 0) |
                 (index.antialiased ? kAntialiased : 0) | (index.has_top ? kHasTop : 0) |
                 (index.screen_filter == kScreenFilterMip ? kMipFilter : 0));
  putLE(out, static_cast<uint32_t>(index.chunks.size()));
  putLE(out, index.leaf_count), putLE(out, index.node_count), putLE(out, index.dropped_non_finite);
  putVec(out, index.bounds_min), putVec(out, index.bounds_max), putVec(out, index.p01),
      putVec(out, index.p99);
  putEntry(out, index.has_top ? index.top : ChunkEntry{});
  for (const ChunkEntry& e : index.chunks) putEntry(out, e);
  putLE(out, crc32Of(out));
  return out;
}

Index decodeIndex(std::span<const uint8_t> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  auto magic = r.bytes(4, "index magic");
  if (std::memcmp(magic.data(), kIndexMagic, 4) != 0)
    r.failAt(0, "not a level-of-detail index (magic SFLI expected)");
  const uint32_t version = r.readLE<uint32_t>("index version");
  if (version != kFormatVersion)
    r.failAt(4, "unknown index version " + std::to_string(version) + " (this build reads version " +
                    std::to_string(kFormatVersion) + ")");
  Index x;
  const uint32_t degree = r.readLE<uint32_t>("SH degree");
  if (degree > 3) r.failAt(8, "SH degree " + std::to_string(degree) + " (0 to 3 expected)");
  x.sh_degree = static_cast<int>(degree);
  x.fanout = r.readLE<uint32_t>("fan-out");
  if (x.fanout < 2 || x.fanout > 64)
    r.failAt(12, "fan-out " + std::to_string(x.fanout) + " (2 to 64 expected)");
  x.chunk_leaves = r.readLE<uint32_t>("leaves per chunk");
  x.chunk_levels = r.readLE<uint32_t>("levels per chunk");
  uint64_t power = 1;
  for (uint32_t k = 0; k < x.chunk_levels && power <= x.chunk_leaves; ++k) power *= x.fanout;
  if (x.chunk_levels > 32 || power != x.chunk_leaves)
    r.failAt(16, "leaves per chunk " + std::to_string(x.chunk_leaves) + " is not the fan-out " +
                     std::to_string(x.fanout) + " to the power " + std::to_string(x.chunk_levels));
  const uint32_t flags = r.readLE<uint32_t>("index flags");
  if (flags & ~(kLinearColor | kAntialiased | kHasTop | kMipFilter))
    r.failAt(24, "unknown index flags " + std::to_string(flags));
  x.color_space = flags & kLinearColor ? ColorSpace::kLinear : ColorSpace::kSrgb;
  x.antialiased = (flags & kAntialiased) != 0;
  x.has_top = (flags & kHasTop) != 0;
  x.screen_filter = flags & kMipFilter ? kScreenFilterMip : kScreenFilterInria;
  const uint32_t chunk_count = r.readLE<uint32_t>("chunk count");
  if (chunk_count == 0) r.failAt(28, "no chunks");
  if (!x.has_top && chunk_count != 1)
    r.failAt(24, std::to_string(chunk_count) + " chunks without a top chunk");
  x.leaf_count = r.readLE<uint64_t>("leaf count");
  x.node_count = r.readLE<uint64_t>("node count");
  x.dropped_non_finite = r.readLE<uint64_t>("dropped rows");
  x.bounds_min = readVec(r, "bounds"), x.bounds_max = readVec(r, "bounds");
  x.p01 = readVec(r, "percentile bounds"), x.p99 = readVec(r, "percentile bounds");
  if (!finite(x.bounds_min) || !finite(x.bounds_max) || !ordered(x.bounds_min, x.bounds_max))
    r.failAt(56, "bounds not finite or min above max");
  if (!finite(x.p01) || !finite(x.p99) || !ordered(x.p01, x.p99))
    r.failAt(80, "percentile bounds not finite or the 1st above the 99th");
  // The whole size is known from the count: check it, then the checksum, before reading the entries.
  const uint64_t want = kIndexHeaderBytes + kChunkEntryBytes * (uint64_t{chunk_count} + 1) + 4;
  if (bytes.size() != want)
    r.failAt(std::min<uint64_t>(bytes.size(), want),
             std::to_string(bytes.size()) + " bytes, " + std::to_string(chunk_count) + " chunks need " +
                 std::to_string(want) + (bytes.size() < want ? " (truncated)" : " (trailing bytes)"));
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + want - 4, 4);
  const uint32_t crc = crc32Of(bytes.subspan(0, want - 4));
  if (crc != stored_crc)
    r.failAt(want - 4, "index checksum mismatch (CRC-32 stored " + std::to_string(stored_crc) +
                           ", computed " + std::to_string(crc) + ")");
  const size_t record = nodeRecordBytes(x.sh_degree);
  auto checkEntry = [&](const ChunkEntry& e, size_t at, const std::string& what, bool is_top) {
    if (e.node_count == 0) r.failAt(at + 48, what + ": no nodes");
    if (e.bytes != kChunkHeaderBytes + uint64_t{e.node_count} * record)
      r.failAt(at + 40, what + ": " + std::to_string(e.bytes) + " bytes for " + std::to_string(e.node_count) +
                            " nodes of " + std::to_string(record));
    if (e.offset > std::numeric_limits<uint64_t>::max() - e.bytes)
      r.failAt(at + 32, what + ": offset past any file");
    if (!is_top && (e.leaf_count == 0 || e.leaf_count > x.chunk_leaves))
      r.failAt(at + 64, what + ": " + std::to_string(e.leaf_count) + " leaves (1 to " +
                            std::to_string(x.chunk_leaves) + " expected)");
  };
  const size_t top_at = r.offset();
  if (x.has_top) {
    x.top = readEntry(r, "top chunk");
    checkEntry(x.top, top_at, "top chunk", true);
  } else {
    // As encodeIndex writes it: an empty entry (zeros, the parent kNone).
    std::vector<uint8_t> empty;
    putEntry(empty, ChunkEntry{});
    const auto entry = r.bytes(kChunkEntryBytes, "top chunk entry");
    for (size_t k = 0; k < kChunkEntryBytes; ++k)
      if (entry[k] != empty[k])
        r.failAt(top_at + k,
                 "top chunk entry not empty (zeros, parent 0xFFFFFFFF) in an index without a top chunk");
  }
  x.chunks.resize(chunk_count);
  uint64_t leaves = 0, nodes = x.has_top ? x.top.node_count : 0;
  for (uint32_t i = 0; i < chunk_count; ++i) {
    const size_t at = r.offset();
    const std::string what = "chunk " + std::to_string(i);
    ChunkEntry& e = x.chunks[i];
    e = readEntry(r, what.c_str());
    checkEntry(e, at, what, false);
    if (x.has_top ? e.parent >= x.top.node_count : e.parent != kNone)
      r.failAt(at + 52, what + ": parent " + std::to_string(e.parent) + " out of range");
    if (e.first_leaf != leaves)
      r.failAt(at + 56, what + ": first leaf " + std::to_string(e.first_leaf) + ", the chunks before hold " +
                            std::to_string(leaves));
    leaves += e.leaf_count;
    nodes += e.node_count;
  }
  if (leaves != x.leaf_count)
    r.failAt(32,
             "leaf count " + std::to_string(x.leaf_count) + ", the chunks hold " + std::to_string(leaves));
  if (nodes != x.node_count)
    r.failAt(40, "node count " + std::to_string(x.node_count) + ", the chunks hold " + std::to_string(nodes));
  return x;
}

Index loadIndex(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kIndexFileName).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (!std::filesystem::is_directory(dir, ec))
      throw Error(dir + ": not a level-of-detail directory (missing or not a folder)");
    throw Error(path + ": file is missing: not a finished level-of-detail build (the index is written last)");
  }
  const std::vector<uint8_t> bytes = readFile(path);
  return decodeIndex(bytes, path);
}

Chunk decodeChunkFile(std::span<const uint8_t> file, const std::string& path, const Index& index,
                      uint32_t chunk_id) {
  const ChunkEntry& e = chunk_id == kNone ? index.top : index.chunks.at(chunk_id);
  const std::string what = chunk_id == kNone ? std::string("top chunk") : "chunk " + std::to_string(chunk_id);
  if (file.size() < e.offset || file.size() - e.offset < e.bytes)
    throw FormatError(path, file.size(),
                      what + ": truncated: the index places " + std::to_string(e.bytes) +
                          " bytes at offset " + std::to_string(e.offset) + ", the file ends at byte " +
                          std::to_string(file.size()));
  const std::span<const uint8_t> span =
      file.subspan(static_cast<size_t>(e.offset), static_cast<size_t>(e.bytes));
  Chunk c = decodeChunk(span, path, e.offset, index, chunk_id);
  const uint32_t crc = crc32Of(span);
  if (crc != e.crc32)
    throw FormatError(path, e.offset,
                      what + ": checksum mismatch over its " + std::to_string(e.bytes) +
                          " bytes (CRC-32 in the index " + std::to_string(e.crc32) + ", computed " +
                          std::to_string(crc) + "): the file is corrupt");
  return c;
}

Chunk loadChunk(const std::string& dir, const Index& index, uint32_t chunk_id) {
  const ChunkEntry& e = chunk_id == kNone ? index.top : index.chunks.at(chunk_id);
  const std::string path = (std::filesystem::path(dir) / e.file).string();
  return decodeChunkFile(readFile(path), path, index, chunk_id);
}

Hierarchy loadHierarchy(const std::string& dir) {
  Hierarchy h;
  h.dir = dir;
  h.index = loadIndex(dir);
  if (h.index.has_top) h.top = loadChunk(dir, h.index, kNone);
  h.chunks.resize(h.index.chunks.size());
  for (uint32_t i = 0; i < h.chunks.size(); ++i) h.chunks[i] = loadChunk(dir, h.index, i);
  checkChunkParents(h);
  return h;
}

void checkChunkParents(const Hierarchy& h) {
  if (h.index.has_top) {
    // Every chunk hangs under exactly one top node: the one its entry names.
    const std::string top_path = (std::filesystem::path(h.dir) / h.index.top.file).string();
    std::vector<uint32_t> parent(h.chunks.size(), kNone);
    const size_t record = nodeRecordBytes(h.index.sh_degree);
    for (uint32_t i = 0; i < h.top.nodes.size(); ++i) {
      const Node& n = h.top.nodes[i];
      if (!(n.flags & kChildrenAreChunks)) continue;
      for (uint32_t c = n.first_child; c < n.first_child + n.child_count; ++c) {
        if (parent[c] != kNone || h.index.chunks[c].parent != i)
          throw FormatError(top_path, h.index.top.offset + kChunkHeaderBytes + uint64_t{i} * record + 76,
                            "top chunk: node " + std::to_string(i) + " claims chunk " + std::to_string(c) +
                                ", whose index entry names parent " +
                                std::to_string(h.index.chunks[c].parent) +
                                (parent[c] != kNone ? " (claimed twice)" : ""));
        parent[c] = i;
      }
    }
    for (uint32_t c = 0; c < parent.size(); ++c)
      if (parent[c] == kNone)
        throw FormatError(top_path, h.index.top.offset,
                          "top chunk: no node holds chunk " + std::to_string(c));
  }
}

std::vector<uint64_t> levelCounts(const Hierarchy& h) {
  std::vector<uint64_t> counts;
  auto add = [&](const Chunk& c) {
    for (const Node& n : c.nodes) {
      if (counts.size() <= n.level) counts.resize(n.level + 1u, 0);
      ++counts[n.level];
    }
  };
  for (const Chunk& c : h.chunks) add(c);
  add(h.top);
  return counts;
}

}  // namespace sf::lod
