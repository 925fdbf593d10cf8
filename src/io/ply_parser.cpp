// PLY header and data parsing (the format is described in docs/formats/ply.md).
#include "io/ply_parser.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <unordered_set>

namespace sf::ply {

namespace {

bool parseScalarType(std::string_view s, ScalarType* out) {
  struct Entry {
    const char* a;
    const char* b;
    ScalarType t;
  };
  static const Entry kTypes[] = {
      {"char", "int8", ScalarType::kInt8},        {"uchar", "uint8", ScalarType::kUint8},
      {"short", "int16", ScalarType::kInt16},     {"ushort", "uint16", ScalarType::kUint16},
      {"int", "int32", ScalarType::kInt32},       {"uint", "uint32", ScalarType::kUint32},
      {"float", "float32", ScalarType::kFloat32}, {"double", "float64", ScalarType::kFloat64},
  };
  for (const Entry& e : kTypes) {
    if (s == e.a || s == e.b) {
      *out = e.t;
      return true;
    }
  }
  return false;
}

std::vector<std::string_view> splitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

template <typename T>
T loadSwapped(const uint8_t* p, bool big_endian) {
  T v;
  if (big_endian) {
    uint8_t tmp[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) tmp[i] = p[sizeof(T) - 1 - i];
    std::memcpy(&v, tmp, sizeof(T));
  } else {
    std::memcpy(&v, p, sizeof(T));
  }
  return v;
}

bool isIntegerType(ScalarType t) {
  return t != ScalarType::kFloat32 && t != ScalarType::kFloat64;
}

// Reads one whitespace-separated ASCII token at the cursor (skipping blanks and newlines).
std::string_view nextToken(ByteReader& r) {
  auto data = r.data();
  size_t i = r.offset();
  while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) ++i;
  size_t start = i;
  while (i < data.size() && !(data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) ++i;
  if (i == start) {
    r.seek(i, "ascii value");
    r.fail("truncated: expected another ASCII value");
  }
  r.seek(i, "ascii value");
  return {reinterpret_cast<const char*>(data.data() + start), i - start};
}

double parseAsciiValue(ByteReader& r, ScalarType t) {
  size_t at = r.offset();
  std::string_view tok = nextToken(r);
  double v = 0;
  std::from_chars_result res;
  if (isIntegerType(t)) {
    long long iv = 0;
    res = std::from_chars(tok.data(), tok.data() + tok.size(), iv);
    v = static_cast<double>(iv);
  } else {
    res = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  }
  if (res.ec != std::errc() || res.ptr != tok.data() + tok.size())
    r.failAt(at, "'" + std::string(tok.substr(0, 32)) + "' is not a valid " + scalarName(t));
  // "nan", "inf" and "-inf" are float values; the loaders' non-finite policy decides what happens to them.
  if (!isIntegerType(t) && !std::isfinite(v)) return v;
  double lo = 0, hi = 0;
  switch (t) {
    case ScalarType::kInt8:
      lo = -128, hi = 127;
      break;
    case ScalarType::kUint8:
      lo = 0, hi = 255;
      break;
    case ScalarType::kInt16:
      lo = -32768, hi = 32767;
      break;
    case ScalarType::kUint16:
      lo = 0, hi = 65535;
      break;
    case ScalarType::kInt32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case ScalarType::kUint32:
      lo = 0, hi = 4294967295.0;
      break;
    case ScalarType::kFloat32:
      lo = -3.4028234663852886e38, hi = 3.4028234663852886e38;
      break;
    case ScalarType::kFloat64:
      lo = -1.7976931348623157e308, hi = 1.7976931348623157e308;
      break;
  }
  if (!(v >= lo && v <= hi))
    r.failAt(at, "'" + std::string(tok.substr(0, 32)) + "' is out of range for " + scalarName(t));
  return v;
}

}  // namespace

double loadScalar(const uint8_t* p, ScalarType t, bool big_endian) {
  switch (t) {
    case ScalarType::kInt8:
      return static_cast<int8_t>(p[0]);
    case ScalarType::kUint8:
      return p[0];
    case ScalarType::kInt16:
      return loadSwapped<int16_t>(p, big_endian);
    case ScalarType::kUint16:
      return loadSwapped<uint16_t>(p, big_endian);
    case ScalarType::kInt32:
      return loadSwapped<int32_t>(p, big_endian);
    case ScalarType::kUint32:
      return loadSwapped<uint32_t>(p, big_endian);
    case ScalarType::kFloat32:
      return loadSwapped<float>(p, big_endian);
    case ScalarType::kFloat64:
      return loadSwapped<double>(p, big_endian);
  }
  return 0;
}

int Element::find(const std::string& n) const {
  for (size_t i = 0; i < properties.size(); ++i)
    if (properties[i].name == n) return static_cast<int>(i);
  return -1;
}

bool Element::hasLists() const {
  return std::any_of(properties.begin(), properties.end(), [](const Property& p) { return p.is_list; });
}

size_t Element::rowBytes() const {
  size_t n = 0;
  for (const Property& p : properties) n += scalarSize(p.type);
  return n;
}

int Header::find(const std::string& n) const {
  for (size_t i = 0; i < elements.size(); ++i)
    if (elements[i].name == n) return static_cast<int>(i);
  return -1;
}

size_t scalarSize(ScalarType t) {
  switch (t) {
    case ScalarType::kInt8:
    case ScalarType::kUint8:
      return 1;
    case ScalarType::kInt16:
    case ScalarType::kUint16:
      return 2;
    case ScalarType::kInt32:
    case ScalarType::kUint32:
    case ScalarType::kFloat32:
      return 4;
    case ScalarType::kFloat64:
      return 8;
  }
  return 0;
}

const char* scalarName(ScalarType t) {
  switch (t) {
    case ScalarType::kInt8:
      return "char";
    case ScalarType::kUint8:
      return "uchar";
    case ScalarType::kInt16:
      return "short";
    case ScalarType::kUint16:
      return "ushort";
    case ScalarType::kInt32:
      return "int";
    case ScalarType::kUint32:
      return "uint";
    case ScalarType::kFloat32:
      return "float";
    case ScalarType::kFloat64:
      return "double";
  }
  return "?";
}

bool looksLikePly(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "ply", 3) == 0 &&
         (bytes[3] == '\n' || bytes[3] == '\r');
}

Header parseHeader(ByteReader& r) {
  Header h;
  std::unordered_set<std::string> names;  // property names of the current element (duplicates are refused)
  bool saw_format = false;
  int line_no = 0;
  constexpr size_t kMaxHeader = 1 << 20;
  for (;;) {
    size_t line_start = r.offset();
    if (line_start > kMaxHeader) r.fail("PLY header longer than 1 MiB without end_header");
    auto data = r.data();
    size_t end = line_start;
    while (end < data.size() && data[end] != '\n') ++end;
    if (end >= data.size())
      r.fail(line_no == 0 ? "not a PLY file (no header line)"
                          : "truncated: PLY header has no end_header line");
    std::string_view line(reinterpret_cast<const char*>(data.data() + line_start), end - line_start);
    r.seek(end + 1, "PLY header");
    auto words = splitWords(line);
    if (line_no++ == 0) {
      if (words.size() != 1 || words[0] != "ply")
        r.failAt(line_start, "not a PLY file: first line must be 'ply'");
      continue;
    }
    if (words.empty()) continue;
    std::string_view key = words[0];
    if (key == "format") {
      if (words.size() < 3) r.failAt(line_start, "format line needs an encoding and a version");
      if (words[1] == "ascii")
        h.encoding = Encoding::kAscii;
      else if (words[1] == "binary_little_endian")
        h.encoding = Encoding::kBinaryLittleEndian;
      else if (words[1] == "binary_big_endian")
        h.encoding = Encoding::kBinaryBigEndian;
      else
        r.failAt(line_start, "unknown PLY encoding '" + std::string(words[1]) + "'");
      if (words[2] != "1.0")
        r.failAt(line_start, "unsupported PLY version '" + std::string(words[2]) + "' (expected 1.0)");
      saw_format = true;
    } else if (key == "comment" || key == "obj_info") {
      h.comments.emplace_back(line.substr(std::min(line.size(), key.size() + 1)));
    } else if (key == "element") {
      if (words.size() != 3) r.failAt(line_start, "element line must be 'element NAME COUNT'");
      Element e;
      e.name = std::string(words[1]);
      auto res = std::from_chars(words[2].data(), words[2].data() + words[2].size(), e.count);
      if (res.ec != std::errc() || res.ptr != words[2].data() + words[2].size())
        r.failAt(line_start, "element count '" + std::string(words[2]) + "' is not a non-negative integer");
      h.elements.push_back(std::move(e));
      names.clear();
    } else if (key == "property") {
      if (h.elements.empty()) r.failAt(line_start, "property before any element");
      Property p;
      if (words.size() == 5 && words[1] == "list") {
        p.is_list = true;
        if (!parseScalarType(words[2], &p.count_type) || !isIntegerType(p.count_type))
          r.failAt(line_start, "bad list count type '" + std::string(words[2]) + "'");
        if (!parseScalarType(words[3], &p.type))
          r.failAt(line_start, "unknown property type '" + std::string(words[3]) + "'");
        p.name = std::string(words[4]);
      } else if (words.size() == 3) {
        if (!parseScalarType(words[1], &p.type))
          r.failAt(line_start, "unknown property type '" + std::string(words[1]) + "'");
        p.name = std::string(words[2]);
      } else {
        r.failAt(line_start, "property line must be 'property TYPE NAME' or 'property list CTYPE TYPE NAME'");
      }
      Element& e = h.elements.back();
      if (!names.insert(p.name).second)
        r.failAt(line_start, "duplicate property '" + p.name + "' in element '" + e.name + "'");
      e.properties.push_back(std::move(p));
    } else if (key == "end_header") {
      break;
    } else {
      r.failAt(line_start, "unknown PLY header keyword '" + std::string(key.substr(0, 32)) + "'");
    }
  }
  if (!saw_format) r.fail("PLY header has no format line");
  h.data_offset = r.offset();
  return h;
}

void visitElement(ByteReader& r, const Header& h, size_t wanted,
                  const std::function<void(uint64_t, const double*)>& visit) {
  r.seek(h.data_offset, "PLY data");
  const bool big = h.encoding == Encoding::kBinaryBigEndian;
  const bool ascii = h.encoding == Encoding::kAscii;
  for (size_t ei = 0; ei <= wanted && ei < h.elements.size(); ++ei) {
    const Element& e = h.elements[ei];
    const bool keep = ei == wanted;
    std::vector<double> values(e.properties.size(), 0.0);
    std::string what = "element '" + e.name + "'";
    // Fixed-size binary rows: check the whole element once, so a huge count fails before any work.
    if (!ascii && !e.hasLists()) {
      size_t row_bytes = e.rowBytes();
      if (row_bytes != 0 && e.count > r.remaining() / row_bytes)
        r.fail("truncated: " + what + " declares " + std::to_string(e.count) + " rows of " +
               std::to_string(row_bytes) + " bytes, only " + std::to_string(r.remaining()) + " bytes remain");
      if (!keep) {
        r.skip(e.count * row_bytes, what);
        continue;
      }
    }
    if (ascii && e.count > r.remaining())
      r.fail("truncated: " + what + " declares " + std::to_string(e.count) + " rows, only " +
             std::to_string(r.remaining()) + " bytes remain");
    for (uint64_t row = 0; row < e.count; ++row) {
      for (size_t pi = 0; pi < e.properties.size(); ++pi) {
        const Property& p = e.properties[pi];
        if (ascii) {
          if (p.is_list) {
            double n = parseAsciiValue(r, p.count_type);
            if (n < 0 || n > 1e6) r.fail("list length " + std::to_string(n) + " out of range");
            for (int k = 0; k < static_cast<int>(n); ++k) parseAsciiValue(r, p.type);
            values[pi] = 0;
          } else {
            values[pi] = parseAsciiValue(r, p.type);
          }
        } else if (p.is_list) {
          auto cnt = r.bytes(scalarSize(p.count_type), "list count");
          double n = loadScalar(cnt.data(), p.count_type, big);
          if (n < 0) r.fail("negative list length");
          r.skip(static_cast<uint64_t>(n) * scalarSize(p.type), "list values");
          values[pi] = 0;
        } else {
          auto b = r.bytes(scalarSize(p.type), "property value");
          values[pi] = loadScalar(b.data(), p.type, big);
        }
      }
      if (keep) visit(row, values.data());
    }
  }
}

}  // namespace sf::ply
