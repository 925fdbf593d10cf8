// A minimal ZIP archive reader and writer, enough for container formats built on ZIP (SOG bundles,
// docs/formats/sog.md). Reading follows the central directory (APPNOTE 6.3.x section 4.3): stored and
// deflate entries, CRC-32 checked; ZIP64, encryption, multi-disk archives and other methods are refused.
// Writing produces stored entries only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sf {

// True when the bytes start with a ZIP local file header ("PK\x03\x04").
bool looksLikeZip(std::span<const uint8_t> bytes);

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t data_offset = 0;     // first byte of the entry's data in the archive
  uint64_t central_offset = 0;  // its central directory record, for messages
};

// The entries of an archive, read from its central directory. Every record, local header and data range is
// checked against the archive's size; names must be unique. Throws FormatError("<path>: byte N: ...").
class ZipReader {
 public:
  ZipReader(std::span<const uint8_t> archive, std::string path);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  // The entry named `name` exactly, or nullptr.
  const ZipEntry* find(const std::string& name) const;
  // The entry's bytes, inflated if needed and checked against its size and CRC-32. Before anything is
  // allocated, its size is checked against the load memory limit (core/limits.h).
  std::vector<uint8_t> read(const ZipEntry& entry) const;

 private:
  std::span<const uint8_t> archive_;
  std::string path_;
  std::vector<ZipEntry> entries_;
};

// Builds an archive of stored (uncompressed) entries, in the order added, with a fixed timestamp
// (1980-01-01 00:00) so that equal contents give equal bytes.
class ZipWriter {
 public:
  // `name` is stored as UTF-8; it must be non-empty and shorter than 65536 bytes.
  void add(const std::string& name, std::span<const uint8_t> data);
  // The archive: entries, central directory and end record. Throws sf::Error when it would need ZIP64
  // (4 GiB or more, or 65535 entries or more).
  std::vector<uint8_t> finish() const;

 private:
  struct Pending {
    std::string name;
    std::vector<uint8_t> data;
    uint32_t crc32 = 0;
  };
  std::vector<Pending> entries_;
};

}  // namespace sf
