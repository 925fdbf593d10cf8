#include "io/zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "core/error.h"
#include "core/limits.h"
#include "io/byte_reader.h"
#include "io/byte_writer.h"

namespace sf {

namespace {

constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kLocalHeaderBytes = 30;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kEndRecordBytes = 22;
// The end record is followed by a comment of at most 65535 bytes, so it starts within this many bytes of
// the end of the archive.
constexpr size_t kEndSearchBytes = kEndRecordBytes + 65535;

uint32_t crc32Of(std::span<const uint8_t> data) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  size_t done = 0;
  while (done < data.size()) {  // zlib takes uInt lengths
    const size_t n = std::min<size_t>(data.size() - done, 1u << 30);
    crc = ::crc32(crc, data.data() + done, static_cast<uInt>(n));
    done += n;
  }
  return static_cast<uint32_t>(crc);
}

template <typename T>
T loadLE(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string quoted(const std::string& name) {
  return "entry '" + name + "'";
}

}  // namespace

bool looksLikeZip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && loadLE<uint32_t>(bytes.data()) == kLocalSignature;
}

ZipReader::ZipReader(std::span<const uint8_t> archive, std::string path)
    : archive_(archive), path_(std::move(path)) {
  ByteReader r(archive_, path_);
  if (archive_.size() < kEndRecordBytes)
    r.failAt(0, "truncated: a ZIP archive needs at least " + std::to_string(kEndRecordBytes) +
                    " bytes, the file has " + std::to_string(archive_.size()));
  // The end of central directory record: the last signature whose record and comment end at the file's end
  // (a comment may itself contain the signature bytes, so the comment length must match).
  size_t end = std::numeric_limits<size_t>::max();
  const size_t lowest = archive_.size() > kEndSearchBytes ? archive_.size() - kEndSearchBytes : 0;
  for (size_t at = archive_.size() - kEndRecordBytes + 1; at-- > lowest;) {
    if (loadLE<uint32_t>(archive_.data() + at) != kEndSignature) continue;
    const uint16_t comment = loadLE<uint16_t>(archive_.data() + at + 20);
    if (at + kEndRecordBytes + comment == archive_.size()) {
      end = at;
      break;
    }
  }
  if (end == std::numeric_limits<size_t>::max())
    r.failAt(archive_.size(),
             "not a ZIP archive or truncated: no end of central directory record in the last " +
                 std::to_string(archive_.size() - lowest) + " bytes");
  if (end >= 20 && loadLE<uint32_t>(archive_.data() + end - 20) == kZip64LocatorSignature)
    r.failAt(end - 20, "ZIP64 archives are not supported");
  r.seek(end + 4, "end record");
  const uint16_t disk = r.readLE<uint16_t>("disk number");
  const uint16_t cd_disk = r.readLE<uint16_t>("central directory disk");
  const uint16_t disk_entries = r.readLE<uint16_t>("entries on this disk");
  const uint16_t total_entries = r.readLE<uint16_t>("entry count");
  const uint32_t cd_size = r.readLE<uint32_t>("central directory size");
  const uint32_t cd_offset = r.readLE<uint32_t>("central directory offset");
  if (disk != 0 || cd_disk != 0 || disk_entries != total_entries)
    r.failAt(end + 4, "multi-disk ZIP archives are not supported");
  if (total_entries == 0xffff || cd_size == 0xffffffffu || cd_offset == 0xffffffffu)
    r.failAt(end + 10, "ZIP64 archives are not supported");
  if (uint64_t{cd_offset} + cd_size > end)
    r.failAt(end + 12, "central directory (" + std::to_string(cd_size) + " bytes at byte " +
                           std::to_string(cd_offset) + ") overlaps the end record at byte " +
                           std::to_string(end));

  // Each entry costs at least a central record, so the count is bounded by the directory's size.
  if (uint64_t{total_entries} * kCentralHeaderBytes > cd_size)
    r.failAt(end + 10, std::to_string(total_entries) + " entries cannot fit in a central directory of " +
                           std::to_string(cd_size) + " bytes");
  ByteReader cd(archive_.subspan(cd_offset, cd_size), path_, cd_offset);
  std::unordered_set<std::string> names;
  entries_.reserve(total_entries);
  for (uint16_t i = 0; i < total_entries; ++i) {
    ZipEntry e;
    e.central_offset = cd_offset + cd.offset();
    if (cd.readLE<uint32_t>("central directory record") != kCentralSignature)
      cd.failAt(cd.offset() - 4, "central directory record " + std::to_string(i) + " has a bad signature");
    cd.skip(4, "versions");
    const uint16_t flags = cd.readLE<uint16_t>("flags");
    e.method = cd.readLE<uint16_t>("compression method");
    cd.skip(4, "modification time");
    e.crc32 = cd.readLE<uint32_t>("CRC-32");
    const uint32_t csize = cd.readLE<uint32_t>("compressed size");
    const uint32_t usize = cd.readLE<uint32_t>("uncompressed size");
    const uint16_t name_len = cd.readLE<uint16_t>("name length");
    const uint16_t extra_len = cd.readLE<uint16_t>("extra field length");
    const uint16_t comment_len = cd.readLE<uint16_t>("comment length");
    cd.skip(8, "disk, attributes");
    const uint32_t local = cd.readLE<uint32_t>("local header offset");
    auto name = cd.bytes(name_len, "entry name");
    e.name.assign(reinterpret_cast<const char*>(name.data()), name.size());
    cd.skip(uint64_t{extra_len} + comment_len, "extra field and comment");
    const std::string what = quoted(e.name);
    if (flags & 0x1) cd.failAt(e.central_offset, what + " is encrypted, which is not supported");
    if (e.method != 0 && e.method != 8)
      cd.failAt(e.central_offset, what + " uses compression method " + std::to_string(e.method) +
                                      " (only stored and deflate are supported)");
    if (csize == 0xffffffffu || usize == 0xffffffffu || local == 0xffffffffu)
      cd.failAt(e.central_offset, what + " needs ZIP64, which is not supported");
    if (e.method == 0 && csize != usize)
      cd.failAt(e.central_offset, what + " is stored but its sizes differ (" + std::to_string(csize) +
                                      " and " + std::to_string(usize) + ")");
    if (!names.insert(e.name).second) cd.failAt(e.central_offset, what + " appears twice");
    e.compressed_size = csize;
    e.uncompressed_size = usize;
    // The local header repeats the name; its own sizes may be zero (streamed writers put them in a data
    // descriptor after the data), so the central directory's are the ones used.
    ByteReader lh(archive_, path_);
    lh.seek(local, what + " local header");
    if (lh.remaining() < kLocalHeaderBytes || lh.readLE<uint32_t>("local header") != kLocalSignature)
      r.failAt(local, what + ": no local file header at byte " + std::to_string(local));
    lh.skip(22, "local header fields");
    const uint16_t lname = lh.readLE<uint16_t>("local name length");
    const uint16_t lextra = lh.readLE<uint16_t>("local extra field length");
    e.data_offset = uint64_t{local} + kLocalHeaderBytes + lname + lextra;
    if (e.data_offset + e.compressed_size > cd_offset)
      r.failAt(local, what + ": its data (" + std::to_string(e.compressed_size) + " bytes at byte " +
                          std::to_string(e.data_offset) +
                          ") runs past the start of the central directory at byte " +
                          std::to_string(cd_offset));
    entries_.push_back(std::move(e));
  }
}

const ZipEntry* ZipReader::find(const std::string& name) const {
  for (const ZipEntry& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<uint8_t> ZipReader::read(const ZipEntry& e) const {
  const std::string what = quoted(e.name);
  checkByteBudget(path_ + " (" + what + ")", e.uncompressed_size, "uncompressed size");
  const auto data =
      archive_.subspan(static_cast<size_t>(e.data_offset), static_cast<size_t>(e.compressed_size));
  std::vector<uint8_t> out;
  if (e.method == 0) {
    out.assign(data.begin(), data.end());
  } else {
    out.resize(static_cast<size_t>(e.uncompressed_size));
    z_stream z{};
    if (::inflateInit2(&z, -MAX_WBITS) != Z_OK)
      throw Error(path_ + ": " + what + ": cannot initialise inflate");
    z.next_in = const_cast<Bytef*>(data.data());
    z.avail_in = static_cast<uInt>(data.size());  // both sizes come from 32-bit fields
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    int rc = ::inflate(&z, Z_FINISH);
    const uint64_t produced = z.total_out, consumed = z.total_in;
    // The buffer is full but the stream has not ended: one more byte of room tells a stream longer than
    // the entry says from a truncated one.
    bool too_long = false;
    if (rc != Z_STREAM_END && z.avail_out == 0) {
      uint8_t probe = 0;
      z.next_out = &probe;
      z.avail_out = 1;
      rc = ::inflate(&z, Z_FINISH);
      too_long = z.avail_out == 0;
    }
    const char* msg = z.msg;
    ::inflateEnd(&z);
    if (too_long)
      throw FormatError(
          path_, e.data_offset,
          what + ": inflates to more than its declared " + std::to_string(e.uncompressed_size) + " bytes");
    if (rc != Z_STREAM_END)
      throw FormatError(path_, e.data_offset + consumed,
                        what + ": corrupt or truncated deflate data" +
                            (msg ? std::string(" (") + msg + ")" : std::string()) + " after " +
                            std::to_string(produced) + " of " + std::to_string(e.uncompressed_size) +
                            " bytes");
    if (produced != e.uncompressed_size)
      throw FormatError(path_, e.data_offset,
                        what + ": inflates to " + std::to_string(produced) + " bytes, its header says " +
                            std::to_string(e.uncompressed_size));
  }
  const uint32_t crc = crc32Of(out);
  if (crc != e.crc32)
    throw FormatError(path_, e.data_offset,
                      what + ": CRC-32 mismatch (data " + std::to_string(crc) + ", directory " +
                          std::to_string(e.crc32) + "): the entry is corrupt");
  return out;
}

void ZipWriter::add(const std::string& name, std::span<const uint8_t> data) {
  Pending p;
  p.name = name;
  p.data.assign(data.begin(), data.end());
  p.crc32 = crc32Of(data);
  entries_.push_back(std::move(p));
}

std::vector<uint8_t> ZipWriter::finish() const {
  uint64_t total = kEndRecordBytes;
  for (const Pending& p : entries_)
    total += kLocalHeaderBytes + kCentralHeaderBytes + 2 * p.name.size() + p.data.size();
  if (total >= 0xffffffffull || entries_.size() >= 0xffff)
    throw Error("ZIP archive of " + formatBytes(total) + " in " + std::to_string(entries_.size()) +
                " entries would need ZIP64, which is not supported");
  constexpr uint16_t kVersion = 20;                       // 2.0: deflate-era features, no ZIP64
  constexpr uint16_t kUtf8Flag = 0x800;                   // names are UTF-8
  constexpr uint16_t kDosTime = 0;                        // 00:00:00
  constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(total));
  std::vector<uint32_t> offsets;
  for (const Pending& p : entries_) {
    offsets.push_back(static_cast<uint32_t>(out.size()));
    const auto size = static_cast<uint32_t>(p.data.size());
    putLE<uint32_t>(out, kLocalSignature);
    putLE<uint16_t>(out, kVersion);
    putLE<uint16_t>(out, kUtf8Flag);
    putLE<uint16_t>(out, 0);  // stored
    putLE<uint16_t>(out, kDosTime);
    putLE<uint16_t>(out, kDosDate);
    putLE<uint32_t>(out, p.crc32);
    putLE<uint32_t>(out, size);
    putLE<uint32_t>(out, size);
    putLE<uint16_t>(out, static_cast<uint16_t>(p.name.size()));
    putLE<uint16_t>(out, 0);  // no extra field
    out.insert(out.end(), p.name.begin(), p.name.end());
    out.insert(out.end(), p.data.begin(), p.data.end());
  }
  const auto cd_offset = static_cast<uint32_t>(out.size());
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Pending& p = entries_[i];
    const auto size = static_cast<uint32_t>(p.data.size());
    putLE<uint32_t>(out, kCentralSignature);
    putLE<uint16_t>(out, kVersion);  // made by
    putLE<uint16_t>(out, kVersion);  // needed to extract
    putLE<uint16_t>(out, kUtf8Flag);
    putLE<uint16_t>(out, 0);
    putLE<uint16_t>(out, kDosTime);
    putLE<uint16_t>(out, kDosDate);
    putLE<uint32_t>(out, p.crc32);
    putLE<uint32_t>(out, size);
    putLE<uint32_t>(out, size);
    putLE<uint16_t>(out, static_cast<uint16_t>(p.name.size()));
    putLE<uint16_t>(out, 0);  // extra
    putLE<uint16_t>(out, 0);  // comment
    putLE<uint16_t>(out, 0);  // disk
    putLE<uint16_t>(out, 0);  // internal attributes
    putLE<uint32_t>(out, 0);  // external attributes
    putLE<uint32_t>(out, offsets[i]);
    out.insert(out.end(), p.name.begin(), p.name.end());
  }
  const auto cd_size = static_cast<uint32_t>(out.size() - cd_offset);
  putLE<uint32_t>(out, kEndSignature);
  putLE<uint16_t>(out, 0);
  putLE<uint16_t>(out, 0);
  putLE<uint16_t>(out, static_cast<uint16_t>(entries_.size()));
  putLE<uint16_t>(out, static_cast<uint16_t>(entries_.size()));
  putLE<uint32_t>(out, cd_size);
  putLE<uint32_t>(out, cd_offset);
  putLE<uint16_t>(out, 0);  // comment length
  return out;
}

}  // namespace sf
