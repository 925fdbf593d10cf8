#include "io/gzip.h"

#include <zlib.h>

#include "core/error.h"

namespace sf {

std::vector<uint8_t> gzipBytes(std::span<const uint8_t> bytes, int level, const std::string& comment) {
  if (comment.find('\0') != std::string::npos) throw Error("gzip: a header comment cannot hold a zero byte");
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error("gzip: cannot initialise zlib");
  gz_header header{};
  std::string comment_z = comment;  // zlib reads it until its zero byte, during deflate
  header.comment = reinterpret_cast<Bytef*>(comment_z.data());
  header.os = 255;  // unknown (RFC 1952), as zlib writes without a header
  if (!comment.empty() && deflateSetHeader(&zs, &header) != Z_OK) {
    deflateEnd(&zs);
    throw Error("gzip: cannot set the header comment");
  }
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(bytes.size())) + 32);
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int ret = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (ret != Z_STREAM_END) throw Error("gzip: deflate did not finish");
  return out;
}

std::vector<uint8_t> gunzipBytes(std::span<const uint8_t> bytes, const std::string& path,
                                 uint64_t max_bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw FormatError(path, 0, "gzip: cannot initialise zlib");
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  std::vector<uint8_t> out;
  int ret = Z_OK;
  while (ret == Z_OK) {
    const size_t old = out.size();
    out.resize(old + 65536);
    zs.next_out = out.data() + old;
    zs.avail_out = 65536;
    ret = inflate(&zs, Z_NO_FLUSH);
    out.resize(old + 65536 - zs.avail_out);
    if (out.size() > max_bytes) ret = Z_MEM_ERROR;
  }
  const uint64_t at = zs.total_in;
  const std::string msg = zs.msg ? zs.msg : "corrupt data";
  inflateEnd(&zs);
  if (ret == Z_MEM_ERROR)
    throw FormatError(path, at, "gzip stream inflates past " + std::to_string(max_bytes) + " bytes");
  if (ret == Z_BUF_ERROR) throw FormatError(path, at, "truncated: gzip stream ends early");
  if (ret != Z_STREAM_END) throw FormatError(path, at, "gzip: " + msg);
  return out;
}

}  // namespace sf
