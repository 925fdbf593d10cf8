// libFuzzer target: a level-of-detail hierarchy (docs/formats/lod.md), its index (index.sflod) and chunk
// files, read from memory as sf::lod::loadHierarchy reads a directory. The input holds the files, framed:
//   [u8 flags] [u32 LE n][n bytes: the index] then [u32 LE n][n bytes] for each file the index lists, in its
//   order: the top chunk's (when it has one), then chunk 0's, 1's, ...
// A size past the input's end takes what is left; a file the input does not hold is missing. Unless flag bit
// 0 is set, the target first writes the checksums the bytes call for (each entry's CRC-32 over its range of
// its file, then the index's own), so mutations get past them to the entries and the nodes; with it set they
// are taken as they are. Then: decodeIndex (an index that decodes must encode, encodeIndex, to the same
// bytes), each chunk through decodeChunkFile (its range in its file, the nodes, the checksum; a chunk that
// decodes must encode, encodeChunk, to its bytes), checkChunkParents and levelCounts, as loadHierarchy; then
// what `lod cut` does with a loaded hierarchy: selectCut for a fixed camera looking at the origin (the budget
// 1 + flags >> 1) and cutCloud. Only sf::Error is caught.
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "lod/cut.h"
#include "lod/format.h"
#include "render/camera.h"

SF_FUZZ_INITIALIZE_LIMITS

namespace {

using Bytes = std::span<const uint8_t>;

// The framed files, in order.
std::vector<Bytes> split(const uint8_t* data, size_t size) {
  std::vector<Bytes> files;
  size_t at = 0;
  while (at < size) {
    uint32_t n = 0;
    const size_t head = std::min<size_t>(4, size - at);
    std::memcpy(&n, data + at, head);
    at += head;
    const size_t take = std::min<size_t>(n, size - at);
    files.push_back({data + at, take});
    at += take;
  }
  return files;
}

template <typename T>
T load(const std::vector<uint8_t>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

// Writes the checksums the files call for into the index: each entry's over its range of its file (where the
// file holds that range), then the index's own over every byte before it.
void fixChecksums(std::vector<uint8_t>& index, const std::vector<Bytes>& files) {
  if (index.size() < 4) return;
  if (index.size() >= 32) {
    const bool has_top = (load<uint32_t>(index, 24) & 4) != 0;
    const uint64_t chunks = load<uint32_t>(index, 28);
    for (uint64_t k = has_top ? 0 : 1; k <= chunks; ++k) {
      const size_t entry = sf::lod::kIndexHeaderBytes + k * sf::lod::kChunkEntryBytes;
      const size_t file = has_top ? k + 1 : k;  // files[0] is the index
      if (entry + sf::lod::kChunkEntryBytes > index.size() || file >= files.size()) break;
      const uint64_t offset = load<uint64_t>(index, entry + 32), bytes = load<uint64_t>(index, entry + 40);
      const Bytes f = files[file];
      if (offset > f.size() || bytes > f.size() - offset) continue;
      const uint32_t crc =
          sf::lod::crc32Of(f.subspan(static_cast<size_t>(offset), static_cast<size_t>(bytes)));
      std::memcpy(index.data() + entry + 68, &crc, 4);
    }
  }
  const uint32_t crc = sf::lod::crc32Of({index.data(), index.size() - 4});
  std::memcpy(index.data() + index.size() - 4, &crc, 4);
}

bool same(const std::vector<uint8_t>& a, Bytes b) {
  return a.size() == b.size() && (b.empty() || std::memcmp(a.data(), b.data(), b.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const std::vector<Bytes> files = split(data + 1, size - 1);
  if (files.empty()) return 0;
  std::vector<uint8_t> index_bytes(files[0].begin(), files[0].end());
  if (!(flags & 1)) fixChecksums(index_bytes, files);
  try {
    sf::lod::Hierarchy h;
    h.dir = "fuzz";
    h.index = sf::lod::decodeIndex(index_bytes, "fuzz/index.sflod");
    if (!same(sf::lod::encodeIndex(h.index), index_bytes)) __builtin_trap();
    auto chunk = [&](uint32_t id) {
      const sf::lod::ChunkEntry& e = id == sf::lod::kNone ? h.index.top : h.index.chunks[id];
      const size_t file =
          id == sf::lod::kNone ? 1 : (h.index.has_top ? 2 : 1) + size_t{id};  // files[0]: the index
      const std::string path = "fuzz/" + e.file;
      if (file >= files.size()) throw sf::Error(path + ": file is missing");
      sf::lod::Chunk c = sf::lod::decodeChunkFile(files[file], path, h.index, id);
      const Bytes bytes = files[file].subspan(static_cast<size_t>(e.offset), static_cast<size_t>(e.bytes));
      if (!same(sf::lod::encodeChunk(c, h.index.sh_degree, id), bytes)) __builtin_trap();
      return c;
    };
    if (h.index.has_top) h.top = chunk(sf::lod::kNone);
    h.chunks.resize(h.index.chunks.size());
    for (uint32_t i = 0; i < h.chunks.size(); ++i) h.chunks[i] = chunk(i);
    sf::lod::checkChunkParents(h);
    sf::lod::levelCounts(h);
    const sf::Camera camera = sf::lookAtCamera({0, 0, -3}, {0, 0, 0}, {0, -1, 0}, 50, 64, 48);
    sf::lod::CutOptions options;
    options.budget = 1 + (flags >> 1);
    sf::lod::cutCloud(h, sf::lod::selectCut(h, camera, options));
  } catch (const sf::Error&) {
  }
  return 0;
}
