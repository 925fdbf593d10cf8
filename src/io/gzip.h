// Whole-buffer gzip streams (RFC 1952), for SPZ versions 1-3 and the tests and fuzz seeds that build them.
// SPZ's reader has its own inflater, bounded by the body size the SPZ header declares (spz.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sf {

// Compresses `bytes` into one gzip member (zlib level 0-9). A non-empty `comment` is stored in the member
// header's comment field (RFC 1952 FCOMMENT, zero-terminated Latin-1; every gzip reader skips it).
std::vector<uint8_t> gzipBytes(std::span<const uint8_t> bytes, int level = 6,
                               const std::string& comment = {});

// Inflates one gzip member. Throws FormatError naming `path` and the input offset for corrupt or
// truncated data, and when the output would pass `max_bytes`.
std::vector<uint8_t> gunzipBytes(std::span<const uint8_t> bytes, const std::string& path, uint64_t max_bytes);

}  // namespace sf
