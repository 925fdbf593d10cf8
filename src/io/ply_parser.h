// Generic PLY (Stanford polygon file) parsing shared by the INRIA 3DGS reader and the PlayCanvas
// compressed-PLY reader: the header grammar, and a row visitor over one element's data that converts
// every scalar property to double (exact for every PLY type). Internal to the io library.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "io/byte_reader.h"

namespace sf::ply {

enum class Encoding { kAscii, kBinaryLittleEndian, kBinaryBigEndian };

struct Property {
  std::string name;
  ScalarType type = ScalarType::kFloat32;
  bool is_list = false;
  ScalarType count_type = ScalarType::kUint8;  // lists only
};

struct Element {
  std::string name;
  uint64_t count = 0;
  std::vector<Property> properties;

  // Index of the property called `name`, or -1.
  int find(const std::string& name) const;
  bool hasLists() const;
  // Bytes per row in binary encodings; only meaningful without list properties.
  size_t rowBytes() const;
};

struct Header {
  Encoding encoding = Encoding::kBinaryLittleEndian;
  std::vector<Element> elements;
  std::vector<std::string> comments;
  size_t data_offset = 0;  // first byte after "end_header\n"

  // Index of the element called `name`, or -1.
  int find(const std::string& name) const;
};

// True when the bytes start with the PLY magic line.
bool looksLikePly(std::span<const uint8_t> bytes);

// Parses the header; throws FormatError with the byte offset of the offending line.
Header parseHeader(ByteReader& reader);

size_t scalarSize(ScalarType t);
const char* scalarName(ScalarType t);
// One stored scalar at p as double (exact for every PLY type), in the given byte order.
double loadScalar(const uint8_t* p, ScalarType t, bool big_endian);

// Walks the data section element by element from header.data_offset. For the element with index
// `wanted`, calls visit(row, values) where values[p] is property p converted to double (list properties
// read as 0). Elements before it are skipped; the reader is left after the wanted element.
// Every row is bounds-checked before it is read.
void visitElement(ByteReader& reader, const Header& header, size_t wanted,
                  const std::function<void(uint64_t row, const double* values)>& visit);

}  // namespace sf::ply
