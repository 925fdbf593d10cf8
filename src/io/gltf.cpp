// glTF 2.0 reader, following the Khronos glTF 2.0 specification (accessors, sparse accessors, skins,
// animations, morph targets, base-colour textures) and the KHR_gaussian_splatting extension (Release
// Candidate text, see docs/formats/gltf.md). tinygltf parses the JSON and loads the buffers; this file (with
// io/tinygltf_impl.cpp) is the only one that includes it (it brings nlohmann::json along). tinygltf's image
// decoding is compiled out: image bytes are collected here and decoded by io/image_io.cpp (stb), only for the
// images that a material uses as its base colour.
//
// Every accessor is read by hand (Loader::forEachComponent) with checked offsets, strides, counts and
// component types; every index between elements (node, mesh, skin, accessor, sampler) is range-checked
// before use.
#include "io/gltf.h"

// tinygltf's implementation is compiled in io/tinygltf_impl.cpp (its own translation unit, so that the
// two slowest compiles of the library build in parallel); the defines below must match it.
#define TINYGLTF_NO_STB_IMAGE
#define TINYGLTF_NO_STB_IMAGE_WRITE
#define TINYGLTF_NO_EXTERNAL_IMAGE
#include <tiny_gltf.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/limits.h"
#include "io/file.h"
#include "io/gltf_files.h"
#include "io/image_io.h"
#include "io/json.h"

namespace sf {

namespace {

namespace fs = std::filesystem;

constexpr int kMaxJsonDepth = 256;  // deeper JSON is refused before tinygltf recurses into it
constexpr size_t kMaxAccessorWithoutView = 1u << 24;  // elements of an accessor that has no bufferView
constexpr const char* kSplatExtension = "KHR_gaussian_splatting";

// ---- tinygltf glue -----------------------------------------------------------------------------------

struct FsContext {
  std::string base_dir;  // canonical directory that external files must lie under; empty: none allowed
};

bool fsFileExists(const std::string& path, void* user) {
  return gltf_files::exists(static_cast<const FsContext*>(user)->base_dir, path);
}

std::string fsExpandPath(const std::string& path, void*) {
  return path;
}

bool fsReadFile(std::vector<unsigned char>* out, std::string* err, const std::string& path, void*) {
  try {
    std::vector<uint8_t> bytes = gltf_files::read(path);
    out->assign(bytes.begin(), bytes.end());
    return true;
  } catch (const std::exception& e) {
    if (err) *err += e.what();
    return false;
  }
}

bool fsWriteFile(std::string* err, const std::string&, const std::vector<unsigned char>&, void*) {
  if (err) *err += "writing is not supported";
  return false;
}

// tinygltf's image callback: nothing is decoded here. The bytes of data-URI images are kept by image
// index (user: std::vector<std::vector<uint8_t>>) for the Loader, which decodes only the images it needs.
// For an image in a bufferView, tinygltf passes a pointer it has not bounds-checked: it is not read (the
// Loader reads the view itself, checked). External images are not loaded by tinygltf
// (TINYGLTF_NO_EXTERNAL_IMAGE); the Loader reads them under the same rules as external buffers.
bool keepImageBytes(tinygltf::Image* image, const int index, std::string*, std::string*, int, int,
                    const unsigned char* bytes, int size, void* user) {
  if (image->bufferView >= 0 || index < 0 || size <= 0) return true;
  auto* store = static_cast<std::vector<std::vector<uint8_t>>*>(user);
  const size_t i = static_cast<size_t>(index);
  if (store->size() <= i) store->resize(i + 1);
  (*store)[i].assign(bytes, bytes + size);
  return true;
}

// Maximum nesting depth of JSON text (strings skipped), to refuse input that would make the recursive
// parts of tinygltf overflow the stack.
int jsonDepth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// The JSON text of .gltf or .glb content (empty when the GLB header is malformed; tinygltf reports it).
std::string_view jsonText(std::span<const uint8_t> bytes, bool binary) {
  const char* chars = reinterpret_cast<const char*>(bytes.data());
  if (!binary) return {chars, bytes.size()};
  if (bytes.size() < 20) return {};
  uint32_t length = 0;
  std::memcpy(&length, bytes.data() + 12, 4);
  if (length > bytes.size() - 20) return {};
  return {chars + 20, length};
}

// The GLB container (glTF 2.0, "Binary glTF Layout"): a 12-byte header (magic, version 2, total length),
// then chunks of (length, type, data). Checked here so that a short or inconsistent file is reported with
// what is short and where, before tinygltf sees it.
void checkGlbContainer(std::span<const uint8_t> bytes, const std::string& name) {
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  if (bytes.size() < 12)
    throw FormatError(
        name, bytes.size(),
        "truncated: the GLB header needs 12 bytes, the file has " + std::to_string(bytes.size()));
  if (u32(4) != 2) throw FormatError(name, 4, "GLB version " + std::to_string(u32(4)) + " (expected 2)");
  const uint64_t declared = u32(8);
  if (declared > bytes.size())
    throw FormatError(name, 8,
                      "truncated: the GLB header declares " + std::to_string(declared) +
                          " bytes, the file has " + std::to_string(bytes.size()));
  if (declared < bytes.size())
    throw FormatError(name, 8,
                      "the GLB header declares " + std::to_string(declared) + " bytes but the file has " +
                          std::to_string(bytes.size() - declared) + " more");
  size_t at = 12;
  for (int chunk = 0; at < declared; ++chunk) {
    if (declared - at < 8)
      throw FormatError(name, at,
                        "truncated: chunk " + std::to_string(chunk) + " header needs 8 bytes, " +
                            std::to_string(declared - at) + " remain");
    const uint64_t length = u32(at), type = u32(at + 4);
    if (chunk == 0 && type != 0x4E4F534Au) throw FormatError(name, at + 4, "the first GLB chunk is not JSON");
    if (length > declared - at - 8)
      throw FormatError(name, at,
                        "truncated: chunk " + std::to_string(chunk) + " (" +
                            (type == 0x4E4F534Au   ? "JSON"
                             : type == 0x004E4942u ? "BIN"
                                                   : "unknown") +
                            ") declares " + std::to_string(length) + " bytes, " +
                            std::to_string(declared - at - 8) + " remain");
    at += 8 + length;
  }
  if (at == 12) throw FormatError(name, 12, "truncated: the GLB has no JSON chunk");
}

// tinygltf's buffer errors name the file or URI but not the buffer: find the buffer by its uri and name it.
// A URI's %XX escapes decoded (RFC 3986; glTF image URIs are URI-encoded relative paths). A '%' that does
// not start two hex digits is kept as it is.
std::string percentDecoded(const std::string& uri) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  std::string out;
  for (size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size() && hex(uri[i + 1]) >= 0 && hex(uri[i + 2]) >= 0) {
      out += static_cast<char>(hex(uri[i + 1]) * 16 + hex(uri[i + 2]));
      i += 2;
    } else {
      out += uri[i];
    }
  }
  return out;
}

std::string describeLoadError(const std::string& err, std::string_view json) {
  std::string message = err;
  // tinygltf quotes whole data URIs; keep messages short.
  for (size_t at = message.find("base64,"); at != std::string::npos; at = message.find("base64,", at + 1)) {
    size_t begin = at + 7, end = message.find_first_of(" \n", begin);
    if (end == std::string::npos) end = message.size();
    if (end - begin > 16)
      message.replace(begin + 8, end - begin - 8, "...(" + std::to_string(end - begin) + " characters)");
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  for (size_t p; (p = message.find('\n')) != std::string::npos;) message.replace(p, 1, "; ");

  struct Known {
    const char* marker;
    const char* stop;
    const char* what;
  };
  static const Known kKnown[] = {
      {"File not found : ", "\n", "not found beside the glTF file (or outside its directory)"},
      {"File size mismatch : ", ",", "is shorter or longer than its byteLength"},
      {"File is empty : ", "\n", "is empty"},
      {"File read error : ", " : ", "cannot be read"},
      {"Failed to decode 'uri' : ", " in Buffer", "does not decode to byteLength bytes"},
  };
  for (const Known& k : kKnown) {
    size_t at = err.find(k.marker);
    if (at == std::string::npos) continue;
    size_t begin = at + std::strlen(k.marker);
    std::string named = err.substr(begin, err.find(k.stop, begin) - begin);
    nlohmann::json doc = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
    if (!doc.is_object() || !doc.contains("buffers") || !doc["buffers"].is_array()) break;
    const nlohmann::json& buffers = doc["buffers"];
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (!buffers[i].is_object() || !buffers[i].contains("uri") || !buffers[i]["uri"].is_string()) continue;
      std::string uri = buffers[i]["uri"].get<std::string>();
      bool same = uri == named || (named.size() > uri.size() &&
                                   named.compare(named.size() - uri.size(), uri.size(), uri) == 0 &&
                                   named[named.size() - uri.size() - 1] == '/');
      if (!same) continue;
      bool data_uri = uri.rfind("data:", 0) == 0;
      return "buffers[" + std::to_string(i) +
             "]: " + (data_uri ? std::string("data URI") : "external file '" + uri + "'") + " " + k.what +
             (at == 0 ? "" : " (" + message + ")");
    }
    break;
  }
  return message;
}

// ---- accessor reading --------------------------------------------------------------------------------

int componentSize(int component_type) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return 1;
    case TINYGLTF_COMPONENT_TYPE_SHORT:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
      return 2;
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
      return 4;
    default:
      return 0;
  }
}

const char* componentName(int component_type) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE:
      return "BYTE";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return "UNSIGNED_BYTE";
    case TINYGLTF_COMPONENT_TYPE_SHORT:
      return "SHORT";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
      return "UNSIGNED_SHORT";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
      return "UNSIGNED_INT";
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
      return "FLOAT";
    default:
      return "unknown";
  }
}

int componentCount(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return 1;
    case TINYGLTF_TYPE_VEC2:
      return 2;
    case TINYGLTF_TYPE_VEC3:
      return 3;
    case TINYGLTF_TYPE_VEC4:
      return 4;
    case TINYGLTF_TYPE_MAT2:
      return 4;
    case TINYGLTF_TYPE_MAT3:
      return 9;
    case TINYGLTF_TYPE_MAT4:
      return 16;
    default:
      return 0;
  }
}

const char* typeName(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return "SCALAR";
    case TINYGLTF_TYPE_VEC2:
      return "VEC2";
    case TINYGLTF_TYPE_VEC3:
      return "VEC3";
    case TINYGLTF_TYPE_VEC4:
      return "VEC4";
    case TINYGLTF_TYPE_MAT2:
      return "MAT2";
    case TINYGLTF_TYPE_MAT3:
      return "MAT3";
    case TINYGLTF_TYPE_MAT4:
      return "MAT4";
    default:
      return "unknown";
  }
}

// One component as a float; normalised integers map to [0, 1] or [-1, 1] as the spec says.
float decodeFloat(const uint8_t* p, int component_type, bool normalized) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_FLOAT: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TINYGLTF_COMPONENT_TYPE_BYTE: {
      int8_t v;
      std::memcpy(&v, p, 1);
      return normalized ? std::max(static_cast<float>(v) / 127.0f, -1.0f) : static_cast<float>(v);
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return normalized ? static_cast<float>(p[0]) / 255.0f : static_cast<float>(p[0]);
    case TINYGLTF_COMPONENT_TYPE_SHORT: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return normalized ? std::max(static_cast<float>(v) / 32767.0f, -1.0f) : static_cast<float>(v);
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return normalized ? static_cast<float>(v) / 65535.0f : static_cast<float>(v);
    }
    default: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<float>(v);
    }
  }
}

uint32_t decodeUint(const uint8_t* p, int component_type) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return p[0];
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    default: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
}

// What a caller accepts of an accessor.
struct AccessorRule {
  std::vector<int> types;            // TINYGLTF_TYPE_*
  std::vector<int> component_types;  // TINYGLTF_COMPONENT_TYPE_*; empty: any
  bool allow_normalized = true;
};

class Loader {
 public:
  // image_bytes: the data-URI images' bytes by image index; base_dir: the canonical directory external
  // images must lie under (empty: none are read).
  Loader(const tinygltf::Model& model, std::string name, const std::vector<std::vector<uint8_t>>& image_bytes,
         std::string base_dir)
      : model_(model), name_(std::move(name)), image_bytes_(image_bytes), base_dir_(std::move(base_dir)) {}

  GltfDocument run();

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& reason) const {
    throw Error(name_ + ": " + where + ": " + reason);
  }
  static std::string at(const char* what, size_t index) {
    return std::string(what) + "[" + std::to_string(index) + "]";
  }

  // Checks accessor `index` against `rule`; returns the accessor.
  const tinygltf::Accessor& accessor(const std::string& ctx, int index, const AccessorRule& rule) const;
  // The bytes of bufferView `view`, checked against its buffer.
  std::span<const uint8_t> viewBytes(const std::string& ctx, int view) const;
  // Reads accessor `index` element by element: `visit(element, component, pointer, component_type)` for
  // dense data, then the sparse substitutions. Returns the element count.
  template <typename Visit>
  size_t forEachComponent(const std::string& ctx, int index, const AccessorRule& rule, Visit visit) const;
  std::vector<float> readFloats(const std::string& ctx, int index, const AccessorRule& rule,
                                int* components = nullptr) const;
  std::vector<uint32_t> readUints(const std::string& ctx, int index, const AccessorRule& rule) const;

  void readNodes(GltfDocument& doc) const;
  void readMeshes(GltfDocument& doc);
  GltfPrimitive readPrimitive(GltfDocument& doc, const tinygltf::Primitive& sp, const std::string& where);
  void readPrimitiveMaterial(GltfDocument& doc, const tinygltf::Primitive& sp, GltfPrimitive& prim,
                             const std::string& where);
  void readMorphTargets(const tinygltf::Primitive& sp, size_t vertex_count, GltfPrimitive& prim,
                        const std::string& where) const;
  void readMeshWeights(GltfDocument& doc, const tinygltf::Mesh& src, size_t m, size_t targets,
                       GltfMesh& mesh) const;
  void readBaseColorTexture(GltfDocument& doc, GltfPrimitive& prim, const std::string& where);
  bool decodeImage(GltfDocument& doc, size_t image);
  void readSplats(GltfDocument& doc, const tinygltf::Primitive& src, GltfPrimitive& prim,
                  const std::string& where) const;
  void readSkins(GltfDocument& doc) const;
  void readAnimations(GltfDocument& doc) const;
  static void readAnimationEvents(const tinygltf::Value& extras, const std::string& where,
                                  GltfAnimation& anim, std::vector<std::string>& warnings);
  void readScenes(GltfDocument& doc) const;
  void checkSkinnedMeshes(GltfDocument& doc) const;

  const tinygltf::Model& model_;
  std::string name_;
  const std::vector<std::vector<uint8_t>>& image_bytes_;
  std::string base_dir_;
  std::vector<int> image_state_;  // per image: 0 not decoded yet, 1 decoded, -1 failed (warned once)
};

const tinygltf::Accessor& Loader::accessor(const std::string& ctx, int index,
                                           const AccessorRule& rule) const {
  if (index < 0 || static_cast<size_t>(index) >= model_.accessors.size())
    fail(ctx, "accessor index " + std::to_string(index) + " out of range (" +
                  std::to_string(model_.accessors.size()) + " accessors)");
  const tinygltf::Accessor& a = model_.accessors[static_cast<size_t>(index)];
  std::string where = ctx + ": " + at("accessors", static_cast<size_t>(index));
  if (componentSize(a.componentType) == 0)
    fail(where, "unsupported componentType " + std::to_string(a.componentType));
  if (componentCount(a.type) == 0) fail(where, "unsupported type " + std::to_string(a.type));
  if (std::find(rule.types.begin(), rule.types.end(), a.type) == rule.types.end()) {
    std::string expected;
    for (int t : rule.types) expected += (expected.empty() ? "" : " or ") + std::string(typeName(t));
    fail(where, std::string("type ") + typeName(a.type) + ", expected " + expected);
  }
  if (!rule.component_types.empty() && std::find(rule.component_types.begin(), rule.component_types.end(),
                                                 a.componentType) == rule.component_types.end()) {
    std::string expected;
    for (int t : rule.component_types)
      expected += (expected.empty() ? "" : ", ") + std::string(componentName(t));
    fail(where,
         std::string("componentType ") + componentName(a.componentType) + ", expected one of " + expected);
  }
  if (a.normalized && !rule.allow_normalized) fail(where, "must not be normalized");
  if (a.normalized && (a.componentType == TINYGLTF_COMPONENT_TYPE_FLOAT ||
                       a.componentType == TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT))
    fail(where, std::string("normalized ") + componentName(a.componentType) + " is not allowed");
  if ((a.type == TINYGLTF_TYPE_MAT2 || a.type == TINYGLTF_TYPE_MAT3 || a.type == TINYGLTF_TYPE_MAT4) &&
      a.componentType != TINYGLTF_COMPONENT_TYPE_FLOAT)
    fail(where, "matrix accessors must be FLOAT (padded integer matrices are not supported)");
  return a;
}

std::span<const uint8_t> Loader::viewBytes(const std::string& ctx, int view) const {
  if (view < 0 || static_cast<size_t>(view) >= model_.bufferViews.size())
    fail(ctx, "bufferView index " + std::to_string(view) + " out of range (" +
                  std::to_string(model_.bufferViews.size()) + " bufferViews)");
  const tinygltf::BufferView& bv = model_.bufferViews[static_cast<size_t>(view)];
  std::string where = at("bufferViews", static_cast<size_t>(view));
  if (bv.buffer < 0 || static_cast<size_t>(bv.buffer) >= model_.buffers.size())
    fail(where, "buffer index " + std::to_string(bv.buffer) + " out of range (" +
                    std::to_string(model_.buffers.size()) + " buffers)");
  const std::vector<unsigned char>& data = model_.buffers[static_cast<size_t>(bv.buffer)].data;
  if (bv.byteOffset > data.size() || bv.byteLength > data.size() - bv.byteOffset)
    fail(where, "byteOffset " + std::to_string(bv.byteOffset) + " + byteLength " +
                    std::to_string(bv.byteLength) + " exceeds " +
                    at("buffers", static_cast<size_t>(bv.buffer)) + " length " + std::to_string(data.size()));
  return {data.data() + bv.byteOffset, bv.byteLength};
}

template <typename Visit>
size_t Loader::forEachComponent(const std::string& ctx, int index, const AccessorRule& rule,
                                Visit visit) const {
  const tinygltf::Accessor& a = accessor(ctx, index, rule);
  std::string where = ctx + ": " + at("accessors", static_cast<size_t>(index));
  const size_t comps = static_cast<size_t>(componentCount(a.type));
  const size_t csize = static_cast<size_t>(componentSize(a.componentType));
  const size_t element = comps * csize;
  const size_t count = a.count;

  if (a.bufferView >= 0) {
    std::span<const uint8_t> view = viewBytes(where, a.bufferView);
    const tinygltf::BufferView& bv = model_.bufferViews[static_cast<size_t>(a.bufferView)];
    size_t stride = bv.byteStride ? bv.byteStride : element;
    if (stride < element)
      fail(where, "byteStride " + std::to_string(stride) + " of " +
                      at("bufferViews", static_cast<size_t>(a.bufferView)) +
                      " is smaller than the element size " + std::to_string(element));
    if (count > 0) {
      // offset + stride * (count - 1) + element <= view length, without overflow.
      bool fits = a.byteOffset <= view.size() && element <= view.size() - a.byteOffset &&
                  (count - 1) <= (view.size() - a.byteOffset - element) / stride;
      if (!fits)
        fail(where, "byteOffset " + std::to_string(a.byteOffset) + " + " + std::to_string(stride) + " * (" +
                        std::to_string(count) + " - 1) + " + std::to_string(element) + " exceeds " +
                        at("bufferViews", static_cast<size_t>(a.bufferView)) + " byteLength " +
                        std::to_string(view.size()));
    }
    const uint8_t* base = view.data() + a.byteOffset;
    for (size_t e = 0; e < count; ++e)
      for (size_t c = 0; c < comps; ++c) visit(e, c, base + e * stride + c * csize, a.componentType);
  } else {
    if (count > kMaxAccessorWithoutView)
      fail(where, "count " + std::to_string(count) + " without a bufferView exceeds the limit of " +
                      std::to_string(kMaxAccessorWithoutView));
    checkByteBudget(name_, static_cast<uint64_t>(count) * comps * sizeof(float),
                    where + " (no bufferView: zero-filled)");
    static const uint8_t kZero[4] = {0, 0, 0, 0};
    for (size_t e = 0; e < count; ++e)
      for (size_t c = 0; c < comps; ++c) visit(e, c, kZero, a.componentType);
  }

  if (a.sparse.isSparse) {
    std::string sw = where + ".sparse";
    if (a.sparse.count < 1 || static_cast<size_t>(a.sparse.count) > count)
      fail(sw, "count " + std::to_string(a.sparse.count) + " must be in [1, " + std::to_string(count) + "]");
    const size_t n = static_cast<size_t>(a.sparse.count);
    int itype = a.sparse.indices.componentType;
    if (itype != TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE && itype != TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT &&
        itype != TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT)
      fail(sw + ".indices", "componentType " + std::to_string(itype) +
                                ", expected UNSIGNED_BYTE, UNSIGNED_SHORT or UNSIGNED_INT");
    const size_t isize = static_cast<size_t>(componentSize(itype));
    std::span<const uint8_t> iview = viewBytes(sw + ".indices", a.sparse.indices.bufferView);
    std::span<const uint8_t> vview = viewBytes(sw + ".values", a.sparse.values.bufferView);
    if (a.sparse.indices.byteOffset < 0 || a.sparse.values.byteOffset < 0) fail(sw, "negative byteOffset");
    size_t ioff = static_cast<size_t>(a.sparse.indices.byteOffset),
           voff = static_cast<size_t>(a.sparse.values.byteOffset);
    if (ioff > iview.size() || (iview.size() - ioff) / isize < n)
      fail(sw + ".indices", "byteOffset " + std::to_string(ioff) + " + " + std::to_string(n) + " * " +
                                std::to_string(isize) + " exceeds bufferViews[" +
                                std::to_string(a.sparse.indices.bufferView) + "] byteLength " +
                                std::to_string(iview.size()));
    if (voff > vview.size() || (vview.size() - voff) / element < n)
      fail(sw + ".values", "byteOffset " + std::to_string(voff) + " + " + std::to_string(n) + " * " +
                               std::to_string(element) + " exceeds bufferViews[" +
                               std::to_string(a.sparse.values.bufferView) + "] byteLength " +
                               std::to_string(vview.size()));
    for (size_t s = 0; s < n; ++s) {
      uint32_t target = decodeUint(iview.data() + ioff + s * isize, itype);
      if (target >= count)
        fail(sw + ".indices", "index " + std::to_string(target) + " at " + std::to_string(s) +
                                  " is outside the accessor's " + std::to_string(count) + " elements");
      for (size_t c = 0; c < comps; ++c)
        visit(target, c, vview.data() + voff + s * element + c * csize, a.componentType);
    }
  }
  return count;
}

std::vector<float> Loader::readFloats(const std::string& ctx, int index, const AccessorRule& rule,
                                      int* components) const {
  const tinygltf::Accessor& a = accessor(ctx, index, rule);
  const size_t comps = static_cast<size_t>(componentCount(a.type));
  if (components) *components = static_cast<int>(comps);
  std::vector<float> out;
  forEachComponent(ctx, index, rule, [&](size_t e, size_t c, const uint8_t* p, int type) {
    if (out.empty()) out.resize(a.count * comps);
    out[e * comps + c] = decodeFloat(p, type, a.normalized);
  });
  std::string where = ctx + ": " + at("accessors", static_cast<size_t>(index));
  for (size_t i = 0; i < out.size(); ++i)
    if (!std::isfinite(out[i])) fail(where, "element " + std::to_string(i / comps) + " is not finite");
  return out;
}

std::vector<uint32_t> Loader::readUints(const std::string& ctx, int index, const AccessorRule& rule) const {
  const tinygltf::Accessor& a = accessor(ctx, index, rule);
  const size_t comps = static_cast<size_t>(componentCount(a.type));
  std::vector<uint32_t> out;
  forEachComponent(ctx, index, rule, [&](size_t e, size_t c, const uint8_t* p, int type) {
    if (out.empty()) out.resize(a.count * comps);
    out[e * comps + c] = decodeUint(p, type);
  });
  return out;
}

// ---- nodes -------------------------------------------------------------------------------------------

Mat4 matrixFromColumnMajor(const std::vector<double>& m) {
  Mat4 r;
  for (int col = 0; col < 4; ++col)
    for (int row = 0; row < 4; ++row)
      r.m[row][col] = static_cast<float>(m[static_cast<size_t>(col * 4 + row)]);
  return r;
}

// Splits an affine matrix into translation, rotation and (possibly negative) scale.
void decompose(const Mat4& m, Vec3& t, Quat& r, Vec3& s) {
  t = m.translation();
  Mat3 l = m.linear();
  Vec3 c0 = l.col(0), c1 = l.col(1), c2 = l.col(2);
  s = {length(c0), length(c1), length(c2)};
  if (determinant(l) < 0) s.x = -s.x;
  Mat3 rot;
  for (int i = 0; i < 3; ++i) {
    rot.m[i][0] = s.x != 0 ? c0[i] / s.x : (i == 0 ? 1.0f : 0.0f);
    rot.m[i][1] = s.y != 0 ? c1[i] / s.y : (i == 1 ? 1.0f : 0.0f);
    rot.m[i][2] = s.z != 0 ? c2[i] / s.z : (i == 2 ? 1.0f : 0.0f);
  }
  r = quatFromRotationMatrix(rot);
}

bool allFinite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x) && std::abs(x) < 1e30; });
}

void Loader::readNodes(GltfDocument& doc) const {
  const size_t n = model_.nodes.size();
  doc.nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const tinygltf::Node& src = model_.nodes[i];
    GltfNode& node = doc.nodes[i];
    std::string where = at("nodes", i);
    node.name = src.name;
    if (src.mesh >= 0 && static_cast<size_t>(src.mesh) >= model_.meshes.size())
      fail(where, "mesh index " + std::to_string(src.mesh) + " out of range (" +
                      std::to_string(model_.meshes.size()) + " meshes)");
    if (src.skin >= 0 && static_cast<size_t>(src.skin) >= model_.skins.size())
      fail(where, "skin index " + std::to_string(src.skin) + " out of range (" +
                      std::to_string(model_.skins.size()) + " skins)");
    node.mesh = src.mesh < 0 ? -1 : src.mesh;
    node.skin = src.skin < 0 ? -1 : src.skin;
    if (!allFinite(src.translation) || !allFinite(src.rotation) || !allFinite(src.scale) ||
        !allFinite(src.matrix) || !allFinite(src.weights))
      fail(where, "transform or weights hold a non-finite or huge number");
    if (!src.matrix.empty()) {
      if (src.matrix.size() != 16)
        fail(where + ".matrix", "expected 16 numbers, got " + std::to_string(src.matrix.size()));
      node.has_matrix = true;
      node.matrix = matrixFromColumnMajor(src.matrix);
      const float(&last)[4] = node.matrix.m[3];
      if (last[0] != 0 || last[1] != 0 || last[2] != 0 || last[3] != 1)
        fail(where + ".matrix", "not an affine transform (last row must be 0 0 0 1)");
      decompose(node.matrix, node.translation, node.rotation, node.scale);
    } else {
      if (!src.translation.empty()) {
        if (src.translation.size() != 3) fail(where + ".translation", "expected 3 numbers");
        node.translation = {static_cast<float>(src.translation[0]), static_cast<float>(src.translation[1]),
                            static_cast<float>(src.translation[2])};
      }
      if (!src.rotation.empty()) {
        if (src.rotation.size() != 4) fail(where + ".rotation", "expected 4 numbers");
        node.rotation =
            normalize(Quat{static_cast<float>(src.rotation[3]), static_cast<float>(src.rotation[0]),
                           static_cast<float>(src.rotation[1]), static_cast<float>(src.rotation[2])});
      }
      if (!src.scale.empty()) {
        if (src.scale.size() != 3) fail(where + ".scale", "expected 3 numbers");
        node.scale = {static_cast<float>(src.scale[0]), static_cast<float>(src.scale[1]),
                      static_cast<float>(src.scale[2])};
      }
      node.matrix = node.localMatrix();
    }
    for (double w : src.weights) node.weights.push_back(static_cast<float>(w));
  }

  // Hierarchy: each child in range, one parent each, no cycles.
  for (size_t i = 0; i < n; ++i) {
    for (int child : model_.nodes[i].children) {
      if (child < 0 || static_cast<size_t>(child) >= n)
        fail(at("nodes", i) + ".children",
             "node index " + std::to_string(child) + " out of range (" + std::to_string(n) + " nodes)");
      GltfNode& c = doc.nodes[static_cast<size_t>(child)];
      if (static_cast<size_t>(child) == i)
        fail(at("nodes", i) + ".children", "the node is its own child (a cycle)");
      if (c.parent >= 0)
        fail(at("nodes", static_cast<size_t>(child)), "is a child of both nodes[" + std::to_string(c.parent) +
                                                          "] and nodes[" + std::to_string(i) + "]");
      c.parent = static_cast<int>(i);
      doc.nodes[i].children.push_back(child);
    }
  }
  std::vector<char> reached(n, 0);
  std::vector<int> stack;
  for (size_t i = 0; i < n; ++i)
    if (doc.nodes[i].parent < 0) stack.push_back(static_cast<int>(i));
  while (!stack.empty()) {
    int k = stack.back();
    stack.pop_back();
    reached[static_cast<size_t>(k)] = 1;
    for (int c : doc.nodes[static_cast<size_t>(k)].children) stack.push_back(c);
  }
  for (size_t i = 0; i < n; ++i) {
    if (reached[i]) continue;
    std::string chain = at("nodes", i);
    size_t k = static_cast<size_t>(doc.nodes[i].parent);
    for (size_t steps = 0; steps < 8 && k != i; ++steps, k = static_cast<size_t>(doc.nodes[k].parent))
      chain += " <- " + at("nodes", k);
    chain += k == i ? " <- " + at("nodes", i) : " <- ...";
    fail(at("nodes", i), "the node hierarchy has a cycle (" + chain + ")");
  }
}

// ---- meshes ------------------------------------------------------------------------------------------

const AccessorRule kVec3Float{{TINYGLTF_TYPE_VEC3}, {TINYGLTF_COMPONENT_TYPE_FLOAT}, false};
// POSITION may also be quantised (KHR_mesh_quantization): any component type.
const AccessorRule kPositionRule{{TINYGLTF_TYPE_VEC3}, {}, true};
const AccessorRule kNormalRule{
    {TINYGLTF_TYPE_VEC3},
    {TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_COMPONENT_TYPE_BYTE, TINYGLTF_COMPONENT_TYPE_SHORT},
    true};
const AccessorRule kTexcoordRule{{TINYGLTF_TYPE_VEC2}, {}, true};
const AccessorRule kColorRule{{TINYGLTF_TYPE_VEC3, TINYGLTF_TYPE_VEC4},
                              {TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE,
                               TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT},
                              true};
const AccessorRule kJointsRule{
    {TINYGLTF_TYPE_VEC4},
    {TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE, TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT},
    false};
const AccessorRule kWeightsRule{{TINYGLTF_TYPE_VEC4},
                                {TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE,
                                 TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT},
                                true};
const AccessorRule kIndexRule{{TINYGLTF_TYPE_SCALAR},
                              {TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE, TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT,
                               TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT},
                              false};

std::vector<Vec3> toVec3(const std::vector<float>& f) {
  std::vector<Vec3> out(f.size() / 3);
  for (size_t i = 0; i < out.size(); ++i) out[i] = {f[3 * i], f[3 * i + 1], f[3 * i + 2]};
  return out;
}

void Loader::readMeshes(GltfDocument& doc) {
  doc.meshes.resize(model_.meshes.size());
  for (size_t m = 0; m < model_.meshes.size(); ++m) {
    const tinygltf::Mesh& src = model_.meshes[m];
    GltfMesh& mesh = doc.meshes[m];
    mesh.name = src.name;
    std::optional<size_t> target_count;
    for (size_t p = 0; p < src.primitives.size(); ++p) {
      const std::string where = at("meshes", m) + "." + at("primitives", p);
      GltfPrimitive prim = readPrimitive(doc, src.primitives[p], where);
      if (target_count && *target_count != prim.targets.size())
        fail(where, std::to_string(prim.targets.size()) +
                        " morph targets, but the mesh's first primitive has " +
                        std::to_string(*target_count));
      target_count = prim.targets.size();
      mesh.primitives.push_back(std::move(prim));
    }
    readMeshWeights(doc, src, m, target_count.value_or(0), mesh);
  }
  // Node weights must match their mesh's target count.
  for (size_t i = 0; i < doc.nodes.size(); ++i) {
    const GltfNode& node = doc.nodes[i];
    if (node.weights.empty()) continue;
    size_t targets = node.mesh >= 0 ? doc.meshes[static_cast<size_t>(node.mesh)].weights.size() : 0;
    if (node.weights.size() != targets)
      fail(at("nodes", i) + ".weights", std::to_string(node.weights.size()) + " weights for " +
                                            std::to_string(targets) + " morph targets");
  }
}

// One primitive (meshes[m].primitives[p] at `where`): its mode, material, vertex attributes, splats,
// indices and morph targets.
GltfPrimitive Loader::readPrimitive(GltfDocument& doc, const tinygltf::Primitive& sp,
                                    const std::string& where) {
  GltfPrimitive prim;
  prim.mode = sp.mode < 0 ? 4 : sp.mode;
  if (prim.mode > 6) fail(where, "mode " + std::to_string(prim.mode) + " is not a glTF primitive mode");
  readPrimitiveMaterial(doc, sp, prim, where);
  auto attribute = [&](const char* name) -> int {
    auto it = sp.attributes.find(name);
    return it == sp.attributes.end() ? -1 : it->second;
  };
  std::optional<size_t> vertex_count;
  auto checkCount = [&](const std::string& attr, size_t count) {
    if (!vertex_count)
      vertex_count = count;
    else if (*vertex_count != count)
      fail(where + ".attributes." + attr, "count " + std::to_string(count) +
                                              " differs from the other attributes' " +
                                              std::to_string(*vertex_count));
  };
  auto read = [&](const char* name, const AccessorRule& rule, int* comps = nullptr) -> std::vector<float> {
    int index = attribute(name);
    if (index < 0 && !sp.attributes.count(name)) return {};
    std::string ctx = where + ".attributes." + name;
    int c = 0;
    std::vector<float> v = readFloats(ctx, index, rule, &c);
    if (comps) *comps = c;
    checkCount(name, model_.accessors[static_cast<size_t>(index)].count);
    return v;
  };
  if (sp.extensions.count(kSplatExtension)) {  // splats: the declared count against the load budget first
    const int pi = attribute("POSITION");
    if (pi >= 0 && static_cast<size_t>(pi) < model_.accessors.size())
      checkGaussianBudget(name_, model_.accessors[static_cast<size_t>(pi)].count, 0);
  }
  prim.positions = toVec3(read("POSITION", kPositionRule));
  prim.normals = toVec3(read("NORMAL", kNormalRule));
  std::vector<float> uv = read("TEXCOORD_0", kTexcoordRule);
  prim.texcoords0.resize(uv.size() / 2);
  for (size_t i = 0; i < prim.texcoords0.size(); ++i) prim.texcoords0[i] = {uv[2 * i], uv[2 * i + 1]};
  int color_comps = 4;
  std::vector<float> col = read("COLOR_0", kColorRule, &color_comps);
  const size_t cc = static_cast<size_t>(color_comps);
  prim.colors0.resize(col.size() / cc);
  for (size_t i = 0; i < prim.colors0.size(); ++i)
    prim.colors0[i] = {col[cc * i], col[cc * i + 1], col[cc * i + 2], cc == 4 ? col[cc * i + 3] : 1.0f};
  for (int set = 0; set < 2; ++set) {
    std::string jn = "JOINTS_" + std::to_string(set), wn = "WEIGHTS_" + std::to_string(set);
    int ji = attribute(jn.c_str()), wi = attribute(wn.c_str());
    if ((ji >= 0) != (wi >= 0)) fail(where + ".attributes", jn + " and " + wn + " must come together");
    if (ji < 0) continue;
    std::vector<uint32_t> j = readUints(where + ".attributes." + jn, ji, kJointsRule);
    checkCount(jn, model_.accessors[static_cast<size_t>(ji)].count);
    std::vector<float> w = read(wn.c_str(), kWeightsRule);
    auto& joints = set == 0 ? prim.joints0 : prim.joints1;
    auto& weights = set == 0 ? prim.weights0 : prim.weights1;
    joints.resize(j.size() / 4);
    weights.resize(w.size() / 4);
    for (size_t i = 0; i < joints.size(); ++i)
      for (size_t k = 0; k < 4; ++k) {
        joints[i][k] = static_cast<uint16_t>(j[4 * i + k]);  // UNSIGNED_BYTE/SHORT: always fits
        weights[i][k] = w[4 * i + k];
        if (weights[i][k] < 0)
          fail(where + ".attributes." + wn, "negative weight at vertex " + std::to_string(i));
      }
  }
  if (!prim.joints1.empty() && prim.joints0.empty()) fail(where + ".attributes", "JOINTS_1 without JOINTS_0");
  const size_t vc = vertex_count.value_or(0);
  if (prim.positions.empty() && vc > 0) fail(where + ".attributes", "POSITION is missing");
  if (sp.extensions.count(kSplatExtension)) readSplats(doc, sp, prim, where);

  if (sp.indices >= 0) {
    prim.indices = readUints(where + ".indices", sp.indices, kIndexRule);
    for (size_t i = 0; i < prim.indices.size(); ++i)
      if (prim.indices[i] >= vc)
        fail(where + ".indices", "index " + std::to_string(prim.indices[i]) + " at " + std::to_string(i) +
                                     " is out of range for " + std::to_string(vc) + " vertices");
  }

  readMorphTargets(sp, vc, prim, where);
  return prim;
}

// The primitive's material index, its base colour factor and texture.
void Loader::readPrimitiveMaterial(GltfDocument& doc, const tinygltf::Primitive& sp, GltfPrimitive& prim,
                                   const std::string& where) {
  if (sp.material < 0) return;
  if (static_cast<size_t>(sp.material) >= model_.materials.size())
    fail(where, "material index " + std::to_string(sp.material) + " out of range (" +
                    std::to_string(model_.materials.size()) + " materials)");
  prim.material = sp.material;
  const std::vector<double>& f =
      model_.materials[static_cast<size_t>(sp.material)].pbrMetallicRoughness.baseColorFactor;
  if (f.size() == 4 && allFinite(f))
    for (size_t k = 0; k < 4; ++k) prim.base_color[k] = static_cast<float>(f[k]);
  readBaseColorTexture(doc, prim, where);
}

// The primitive's morph targets (POSITION and NORMAL displacements), each of vertex_count vertices.
void Loader::readMorphTargets(const tinygltf::Primitive& sp, size_t vertex_count, GltfPrimitive& prim,
                              const std::string& where) const {
  for (size_t t = 0; t < sp.targets.size(); ++t) {
    GltfMorphTarget target;
    std::string tw = where + "." + at("targets", t);
    for (const auto& [attr, index] : sp.targets[t]) {
      if (attr != "POSITION" && attr != "NORMAL") continue;  // TANGENT and others are not used
      std::vector<Vec3> v =
          toVec3(readFloats(tw + "." + attr, index, attr == "POSITION" ? kPositionRule : kNormalRule));
      if (v.size() != vertex_count)
        fail(tw + "." + attr, "count " + std::to_string(v.size()) + " differs from the primitive's " +
                                  std::to_string(vertex_count) + " vertices");
      (attr == "POSITION" ? target.positions : target.normals) = std::move(v);
    }
    prim.targets.push_back(std::move(target));
  }
}

// The mesh's default morph weights (one per target; zeros when absent) and its extras.targetNames.
void Loader::readMeshWeights(GltfDocument& doc, const tinygltf::Mesh& src, size_t m, size_t targets,
                             GltfMesh& mesh) const {
  if (!src.weights.empty()) {
    if (src.weights.size() != targets)
      fail(at("meshes", m) + ".weights",
           std::to_string(src.weights.size()) + " weights for " + std::to_string(targets) + " morph targets");
    if (!allFinite(src.weights)) fail(at("meshes", m) + ".weights", "non-finite weight");
    for (double w : src.weights) mesh.weights.push_back(static_cast<float>(w));
  } else {
    mesh.weights.assign(targets, 0.0f);
  }
  if (src.extras.IsObject() && src.extras.Has("targetNames")) {
    const tinygltf::Value& names = src.extras.Get("targetNames");
    bool ok = names.IsArray() && names.ArrayLen() == targets;
    for (size_t k = 0; ok && k < names.ArrayLen(); ++k) ok = names.Get(static_cast<int>(k)).IsString();
    if (ok) {
      for (size_t k = 0; k < names.ArrayLen(); ++k)
        mesh.target_names.push_back(names.Get(static_cast<int>(k)).Get<std::string>());
    } else {
      doc.warnings.push_back(at("meshes", m) + ".extras.targetNames: ignored (not " +
                             std::to_string(targets) + " strings)");
    }
  }
}

// ---- base-colour textures ----------------------------------------------------------------------------

bool validWrap(int mode) {
  return mode == TINYGLTF_TEXTURE_WRAP_REPEAT || mode == TINYGLTF_TEXTURE_WRAP_CLAMP_TO_EDGE ||
         mode == TINYGLTF_TEXTURE_WRAP_MIRRORED_REPEAT;
}

// The material's pbrMetallicRoughness.baseColorTexture: texture, sampler and image. Indices out of range
// are errors; a texture that cannot be used (another texCoord set, no source image, an image that is
// missing or does not decode) is a warning and leaves the primitive untextured.
void Loader::readBaseColorTexture(GltfDocument& doc, GltfPrimitive& prim, const std::string& where) {
  const size_t m = static_cast<size_t>(prim.material);
  const tinygltf::TextureInfo& info = model_.materials[m].pbrMetallicRoughness.baseColorTexture;
  if (info.index < 0) return;
  const std::string mw = at("materials", m) + ".pbrMetallicRoughness.baseColorTexture";
  if (static_cast<size_t>(info.index) >= model_.textures.size())
    fail(mw, "texture index " + std::to_string(info.index) + " out of range (" +
                 std::to_string(model_.textures.size()) + " textures)");
  if (info.texCoord != 0) {
    doc.warnings.push_back(where + ": " + mw + ": texCoord " + std::to_string(info.texCoord) +
                           " is not supported (only TEXCOORD_0); the texture is ignored");
    return;
  }
  if (info.extensions.count("KHR_texture_transform"))
    doc.warnings.push_back(where + ": " + mw + ": KHR_texture_transform is ignored");
  const size_t t = static_cast<size_t>(info.index);
  const tinygltf::Texture& tex = model_.textures[t];
  if (tex.source < 0) {
    doc.warnings.push_back(
        at("textures", t) +
        ": no source image (only an extension's, which is not read); the texture is ignored");
    return;
  }
  if (static_cast<size_t>(tex.source) >= model_.images.size())
    fail(at("textures", t) + ".source", "image index " + std::to_string(tex.source) + " out of range (" +
                                            std::to_string(model_.images.size()) + " images)");
  int wrap_s = TINYGLTF_TEXTURE_WRAP_REPEAT, wrap_t = TINYGLTF_TEXTURE_WRAP_REPEAT;
  if (tex.sampler >= 0) {
    if (static_cast<size_t>(tex.sampler) >= model_.samplers.size())
      fail(at("textures", t) + ".sampler", "sampler index " + std::to_string(tex.sampler) +
                                               " out of range (" + std::to_string(model_.samplers.size()) +
                                               " samplers)");
    const tinygltf::Sampler& sampler = model_.samplers[static_cast<size_t>(tex.sampler)];
    if (!validWrap(sampler.wrapS) || !validWrap(sampler.wrapT))
      fail(at("samplers", static_cast<size_t>(tex.sampler)),
           "wrap mode " + std::to_string(validWrap(sampler.wrapS) ? sampler.wrapT : sampler.wrapS) +
               " is not 33071, 33648 or 10497");
    wrap_s = sampler.wrapS;
    wrap_t = sampler.wrapT;
  }
  if (!decodeImage(doc, static_cast<size_t>(tex.source))) return;
  prim.base_color_texture = tex.source;
  prim.base_color_texcoord = 0;
  prim.wrap_s = wrap_s;
  prim.wrap_t = wrap_t;
}

// Decodes image i once. Its bytes come from a bufferView (checked like any view), a data URI, or an
// external file inside the glTF file's directory tree (the rules of external buffers). A missing or
// undecodable image is a warning (given once); the return value says whether the image is usable.
bool Loader::decodeImage(GltfDocument& doc, size_t i) {
  if (image_state_[i] != 0) return image_state_[i] > 0;
  image_state_[i] = -1;
  const tinygltf::Image& img = model_.images[i];
  const std::string where = at("images", i);
  auto skip = [&](const std::string& why) {
    doc.warnings.push_back(where + ": " + why + "; textures using it are ignored");
    return false;
  };
  std::vector<uint8_t> file_bytes;
  std::span<const uint8_t> bytes;
  if (img.bufferView >= 0) {
    bytes = viewBytes(where + ".bufferView", img.bufferView);
  } else if (i < image_bytes_.size() && !image_bytes_[i].empty()) {
    bytes = image_bytes_[i];
  } else if (img.uri.rfind("data:", 0) == 0) {  // a media type tinygltf does not take for a data URI
    std::string type = img.uri.substr(5, std::min<size_t>(img.uri.find_first_of(";,"), 45) - 5);
    return skip("data URI of media type '" + type + "' (only PNG and JPEG are decoded)");
  } else if (!img.uri.empty()) {
    const std::string file = "external file '" + img.uri + "'";
    FsContext ctx{base_dir_};
    std::string path = base_dir_ + "/" + percentDecoded(img.uri);
    if (!fsFileExists(path, &ctx))
      return skip(file + " not found beside the glTF file (or outside its directory)");
    try {
      file_bytes = gltf_files::read(path);
    } catch (const Error& e) {
      return skip(file + " cannot be read (" + e.what() + ")");
    }
    bytes = file_bytes;
  } else {
    return skip("no image data");
  }
  try {
    RgbaImage8 decoded = decodeImage8(bytes, name_);
    GltfImage& out = doc.images[i];
    out.width = decoded.width;
    out.height = decoded.height;
    out.rgba = std::move(decoded.rgba);
  } catch (const FormatError& e) {
    return skip(e.reason());
  }
  image_state_[i] = 1;
  return true;
}

// ---- KHR_gaussian_splatting ----------------------------------------------------------------------------

const AccessorRule kSplatRotationRule{
    {TINYGLTF_TYPE_VEC4},
    {TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_COMPONENT_TYPE_BYTE, TINYGLTF_COMPONENT_TYPE_SHORT},
    true};
const AccessorRule kSplatScaleRule{{TINYGLTF_TYPE_VEC3},
                                   {TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE,
                                    TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT},
                                   true};
const AccessorRule kSplatOpacityRule{{TINYGLTF_TYPE_SCALAR},
                                     {TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE,
                                      TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT},
                                     true};
const AccessorRule kSplatShRule{{TINYGLTF_TYPE_VEC3}, {TINYGLTF_COMPONENT_TYPE_FLOAT}, false};

// A primitive carrying KHR_gaussian_splatting: the extension object, then every attribute the ellipse
// kernel defines, checked for type, count and range, into prim.splats.cloud (the primitive's space).
void Loader::readSplats(GltfDocument& doc, const tinygltf::Primitive& sp, GltfPrimitive& prim,
                        const std::string& where) const {
  const std::string ew = where + ".extensions." + kSplatExtension;
  const tinygltf::Value& ext = sp.extensions.at(kSplatExtension);
  if (!ext.IsObject()) fail(ew, "must be a JSON object");
  GltfGaussianSplats& out = prim.splats;
  auto text = [&](const char* key, std::string& value) {
    if (!ext.Has(key)) return false;
    const tinygltf::Value& v = ext.Get(key);
    if (!v.IsString()) fail(ew + "." + key, "must be a string");
    value = v.Get<std::string>();
    return true;
  };
  if (!text("kernel", out.kernel)) fail(ew, "kernel is missing (it is required)");
  if (out.kernel != "ellipse")
    doc.warnings.push_back(ew + ".kernel: '" + out.kernel + "' is not known; read as \"ellipse\"");
  GaussianCloud& cloud = out.cloud;
  if (!text("colorSpace", out.color_space)) {
    doc.warnings.push_back(ew + ": colorSpace is missing (it is required); read as srgb_rec709_display");
  } else if (out.color_space == "lin_rec709_display" || out.color_space == "BT.709-linear") {
    cloud.color_space = ColorSpace::kLinear;
  } else if (out.color_space != "srgb_rec709_display" && out.color_space != "BT.709-sRGB") {
    doc.warnings.push_back(ew + ".colorSpace: '" + out.color_space +
                           "' is not known; read as srgb_rec709_display");
  }
  if (text("projection", out.projection) && out.projection != "perspective")
    doc.warnings.push_back(ew + ".projection: '" + out.projection +
                           "' is not supported; rendered as perspective");
  if (text("sortingMethod", out.sorting_method) && out.sorting_method != "cameraDistance")
    doc.warnings.push_back(ew + ".sortingMethod: '" + out.sorting_method + "' is not supported; ignored");
  if (prim.mode != 0)
    fail(where + ".mode",
         std::string(kSplatExtension) + " needs mode POINTS (0), got " + std::to_string(prim.mode));
  if (prim.positions.empty() && !sp.attributes.count("POSITION"))
    fail(where + ".attributes", "POSITION is missing (it is required)");
  const size_t n = prim.positions.size();
  const std::string prefix = std::string(kSplatExtension) + ":";

  // One required attribute's floats, its count checked against POSITION's. `normalized_ints`: integer
  // component types must be normalized. `integer` (optional) tells whether the values were integers.
  auto read = [&](const std::string& semantic, const AccessorRule& rule, bool normalized_ints,
                  bool* integer = nullptr) {
    const std::string name = prefix + semantic, ctx = where + ".attributes." + name;
    auto it = sp.attributes.find(name);
    if (it == sp.attributes.end()) fail(where + ".attributes", name + " is missing (it is required)");
    const tinygltf::Accessor& a = accessor(ctx, it->second, rule);
    const bool is_int = a.componentType != TINYGLTF_COMPONENT_TYPE_FLOAT;
    if (normalized_ints && is_int && !a.normalized)
      fail(ctx + ": " + at("accessors", static_cast<size_t>(it->second)),
           std::string("componentType ") + componentName(a.componentType) + " must be normalized");
    if (a.count != n)
      fail(ctx, "count " + std::to_string(a.count) + " differs from POSITION's " + std::to_string(n));
    if (integer) *integer = is_int;
    return readFloats(ctx, it->second, rule);
  };
  bool rot_int = false;
  std::vector<float> rot = read("ROTATION", kSplatRotationRule, true, &rot_int);
  std::vector<float> scale = read("SCALE", kSplatScaleRule, false);
  std::vector<float> opacity = read("OPACITY", kSplatOpacityRule, true);

  // SH degrees: each fully present or absent, lower degrees before higher ones, degree 0 required.
  int degree = -1;
  std::vector<std::vector<float>> coefs;  // [coefficient (l^2 + m)][splat * 3 + rgb]
  for (int l = 0; l <= 3; ++l) {
    int present = 0, missing = -1;
    for (int c = 0; c < 2 * l + 1; ++c) {
      if (sp.attributes.count(prefix + "SH_DEGREE_" + std::to_string(l) + "_COEF_" + std::to_string(c)))
        ++present;
      else if (missing < 0)
        missing = c;
    }
    if (present == 0) {
      if (l == 0) fail(where + ".attributes", prefix + "SH_DEGREE_0_COEF_0 is missing (it is required)");
      continue;
    }
    const std::string dn = prefix + "SH_DEGREE_" + std::to_string(l);
    if (degree != l - 1) fail(where + ".attributes", dn + "_COEF_* given without the lower degrees");
    if (present != 2 * l + 1)
      fail(where + ".attributes", "SH degree " + std::to_string(l) + " is partially defined: " + dn +
                                      "_COEF_" + std::to_string(missing) + " is missing");
    for (int c = 0; c < 2 * l + 1; ++c)
      coefs.push_back(
          read("SH_DEGREE_" + std::to_string(l) + "_COEF_" + std::to_string(c), kSplatShRule, false));
    degree = l;
  }
  for (const auto& entry : sp.attributes) {
    const std::string& attr = entry.first;
    if (attr.rfind(prefix, 0) != 0) continue;
    std::string semantic = attr.substr(prefix.size());
    bool known = semantic == "ROTATION" || semantic == "SCALE" || semantic == "OPACITY";
    for (int l = 0; l <= 3 && !known; ++l)
      for (int c = 0; c < 2 * l + 1 && !known; ++c)
        known = semantic == "SH_DEGREE_" + std::to_string(l) + "_COEF_" + std::to_string(c);
    if (!known)
      doc.warnings.push_back(where + ".attributes." + attr + ": not defined by the extension; ignored");
  }

  cloud.resize(n, degree);
  cloud.positions = prim.positions;
  const size_t k_count = coefs.size();
  for (size_t i = 0; i < n; ++i) {
    const std::string element = " at splat " + std::to_string(i);
    cloud.scales[i] = {scale[3 * i], scale[3 * i + 1], scale[3 * i + 2]};
    if (cloud.scales[i].x < 0 || cloud.scales[i].y < 0 || cloud.scales[i].z < 0)
      fail(where + ".attributes." + prefix + "SCALE",
           "negative scale" + element +
               " (scales are linear; drafts before the Release Candidate stored log-scales)");
    cloud.opacities[i] = opacity[i];
    if (!(opacity[i] >= 0 && opacity[i] <= 1))
      fail(where + ".attributes." + prefix + "OPACITY",
           "value " + std::to_string(opacity[i]) + element + " is outside [0, 1]");
    Quat q{rot[4 * i + 3], rot[4 * i], rot[4 * i + 1], rot[4 * i + 2]};  // stored (x, y, z, w)
    float len2 = q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z;
    if (!(len2 > 1e-12f)) fail(where + ".attributes." + prefix + "ROTATION", "zero quaternion" + element);
    // Unit float quaternions are kept bit for bit; quantised or off-unit ones are normalised.
    cloud.rotations[i] = rot_int || std::abs(len2 - 1.0f) > 2e-6f ? normalize(q) : q;
    float* sh = cloud.shOf(i).data();
    for (size_t k = 0; k < k_count; ++k)
      for (size_t c = 0; c < 3; ++c) sh[3 * k + c] = coefs[k][3 * i + c];
  }
  prim.has_splats = true;
}

// ---- skins -------------------------------------------------------------------------------------------

void Loader::readSkins(GltfDocument& doc) const {
  doc.skins.resize(model_.skins.size());
  for (size_t s = 0; s < model_.skins.size(); ++s) {
    const tinygltf::Skin& src = model_.skins[s];
    GltfSkin& skin = doc.skins[s];
    std::string where = at("skins", s);
    skin.name = src.name;
    if (src.joints.empty()) fail(where + ".joints", "empty");
    std::vector<char> seen(doc.nodes.size(), 0);
    for (size_t j = 0; j < src.joints.size(); ++j) {
      int node = src.joints[j];
      if (node < 0 || static_cast<size_t>(node) >= doc.nodes.size())
        fail(where + ".joints", "node index " + std::to_string(node) + " at " + std::to_string(j) +
                                    " out of range (" + std::to_string(doc.nodes.size()) + " nodes)");
      if (seen[static_cast<size_t>(node)])
        fail(where + ".joints", "node " + std::to_string(node) + " is listed twice");
      seen[static_cast<size_t>(node)] = 1;
      skin.joints.push_back(node);
    }
    if (src.skeleton >= 0) {
      if (static_cast<size_t>(src.skeleton) >= doc.nodes.size())
        fail(where + ".skeleton", "node index " + std::to_string(src.skeleton) + " out of range");
      skin.skeleton = src.skeleton;
    }
    skin.inverse_bind.assign(skin.joints.size(), Mat4{});
    if (src.inverseBindMatrices >= 0) {
      std::string ctx = where + ".inverseBindMatrices";
      std::vector<float> m = readFloats(ctx, src.inverseBindMatrices,
                                        {{TINYGLTF_TYPE_MAT4}, {TINYGLTF_COMPONENT_TYPE_FLOAT}, false});
      if (m.size() / 16 < skin.joints.size())
        fail(ctx, std::to_string(m.size() / 16) + " matrices for " + std::to_string(skin.joints.size()) +
                      " joints");
      for (size_t j = 0; j < skin.joints.size(); ++j)
        for (int col = 0; col < 4; ++col)
          for (int row = 0; row < 4; ++row)
            skin.inverse_bind[j].m[row][col] = m[16 * j + static_cast<size_t>(col * 4 + row)];
    }
  }
}

// A skinned node's mesh must carry joints and weights, and every influencing joint index must lie
// inside the skin. Indices with zero weight that point outside are reset to 0 so no consumer reads past
// the palette.
void Loader::checkSkinnedMeshes(GltfDocument& doc) const {
  for (size_t i = 0; i < doc.nodes.size(); ++i) {
    const GltfNode& node = doc.nodes[i];
    if (node.skin < 0) continue;
    if (node.mesh < 0) {
      doc.warnings.push_back(at("nodes", i) + ": has a skin but no mesh");
      continue;
    }
    const size_t joints = doc.skins[static_cast<size_t>(node.skin)].joints.size();
    GltfMesh& mesh = doc.meshes[static_cast<size_t>(node.mesh)];
    for (size_t p = 0; p < mesh.primitives.size(); ++p) {
      GltfPrimitive& prim = mesh.primitives[p];
      std::string where =
          at("nodes", i) + ": " + at("meshes", static_cast<size_t>(node.mesh)) + "." + at("primitives", p);
      if (prim.joints0.empty())
        fail(where, "is skinned by " + at("skins", static_cast<size_t>(node.skin)) +
                        " but has no JOINTS_0/WEIGHTS_0");
      for (int set = 0; set < 2; ++set) {
        auto& js = set == 0 ? prim.joints0 : prim.joints1;
        const auto& ws = set == 0 ? prim.weights0 : prim.weights1;
        for (size_t v = 0; v < js.size(); ++v)
          for (size_t k = 0; k < 4; ++k) {
            if (js[v][k] < joints) continue;
            if (ws[v][k] != 0)
              fail(where, "JOINTS_" + std::to_string(set) + " value " + std::to_string(js[v][k]) +
                              " at vertex " + std::to_string(v) + " is outside " +
                              at("skins", static_cast<size_t>(node.skin)) + " (" + std::to_string(joints) +
                              " joints)");
            js[v][k] = 0;
          }
      }
    }
  }
}

// ---- animations --------------------------------------------------------------------------------------

void Loader::readAnimations(GltfDocument& doc) const {
  doc.animations.resize(model_.animations.size());
  for (size_t a = 0; a < model_.animations.size(); ++a) {
    const tinygltf::Animation& src = model_.animations[a];
    GltfAnimation& anim = doc.animations[a];
    std::string where = at("animations", a);
    anim.name = src.name;
    anim.samplers.resize(src.samplers.size());
    std::vector<int> sampler_path(src.samplers.size(), -1);  // the path each sampler was read for
    for (size_t s = 0; s < src.samplers.size(); ++s) {
      const tinygltf::AnimationSampler& ss = src.samplers[s];
      GltfSampler& sampler = anim.samplers[s];
      std::string sw = where + "." + at("samplers", s);
      if (ss.interpolation == "LINEAR")
        sampler.interpolation = GltfInterpolation::kLinear;
      else if (ss.interpolation == "STEP")
        sampler.interpolation = GltfInterpolation::kStep;
      else if (ss.interpolation == "CUBICSPLINE")
        sampler.interpolation = GltfInterpolation::kCubicSpline;
      else
        fail(sw + ".interpolation",
             "unknown interpolation '" + ss.interpolation + "' (expected LINEAR, STEP or CUBICSPLINE)");
      sampler.times = readFloats(sw + ".input", ss.input,
                                 {{TINYGLTF_TYPE_SCALAR}, {TINYGLTF_COMPONENT_TYPE_FLOAT}, false});
      if (sampler.times.empty()) fail(sw + ".input", "no key times");
      for (size_t k = 1; k < sampler.times.size(); ++k)
        if (!(sampler.times[k] > sampler.times[k - 1]))
          fail(sw + ".input", "key times must be strictly increasing: time " +
                                  std::to_string(sampler.times[k]) + " at key " + std::to_string(k) +
                                  " follows " + std::to_string(sampler.times[k - 1]));
      anim.duration = std::max(anim.duration, sampler.times.back());
    }
    for (size_t c = 0; c < src.channels.size(); ++c) {
      const tinygltf::AnimationChannel& sc = src.channels[c];
      std::string cw = where + "." + at("channels", c);
      if (sc.target_node < 0) {
        doc.warnings.push_back(cw + ": no target node; skipped");
        continue;
      }
      if (static_cast<size_t>(sc.target_node) >= doc.nodes.size())
        fail(cw + ".target.node", "node index " + std::to_string(sc.target_node) + " out of range (" +
                                      std::to_string(doc.nodes.size()) + " nodes)");
      if (sc.sampler < 0 || static_cast<size_t>(sc.sampler) >= src.samplers.size())
        fail(cw + ".sampler", "sampler index " + std::to_string(sc.sampler) + " out of range (" +
                                  std::to_string(src.samplers.size()) + " samplers)");
      GltfChannel ch;
      ch.node = sc.target_node;
      ch.sampler = sc.sampler;
      if (sc.target_path == "translation")
        ch.path = GltfPath::kTranslation;
      else if (sc.target_path == "rotation")
        ch.path = GltfPath::kRotation;
      else if (sc.target_path == "scale")
        ch.path = GltfPath::kScale;
      else if (sc.target_path == "weights")
        ch.path = GltfPath::kWeights;
      else {
        doc.warnings.push_back(cw + ": target path '" + sc.target_path + "' is not supported; skipped");
        continue;
      }
      const GltfNode& node = doc.nodes[static_cast<size_t>(ch.node)];
      if (node.has_matrix)
        doc.warnings.push_back(cw + ": animates nodes[" + std::to_string(ch.node) + "], which has a matrix");
      int components = ch.path == GltfPath::kRotation ? 4 : 3;
      if (ch.path == GltfPath::kWeights) {
        size_t targets = node.mesh >= 0 ? doc.meshes[static_cast<size_t>(node.mesh)].weights.size() : 0;
        if (targets == 0)
          fail(cw + ".target",
               "weights of nodes[" + std::to_string(ch.node) + "], which has no morph targets");
        components = static_cast<int>(targets);
      }
      const size_t s = static_cast<size_t>(ch.sampler);
      GltfSampler& sampler = anim.samplers[s];
      std::string sw = where + "." + at("samplers", s);
      if (sampler_path[s] >= 0) {
        if (sampler.components != components)
          fail(cw, "shares " + at("samplers", s) + " with a channel of another kind (" +
                       std::to_string(sampler.components) + " vs " + std::to_string(components) +
                       " components)");
      } else {
        AccessorRule rule;
        if (ch.path == GltfPath::kTranslation || ch.path == GltfPath::kScale)
          rule = kVec3Float;
        else if (ch.path == GltfPath::kRotation)
          rule = {{TINYGLTF_TYPE_VEC4},
                  {TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_COMPONENT_TYPE_BYTE,
                   TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE, TINYGLTF_COMPONENT_TYPE_SHORT,
                   TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT},
                  true};
        else
          rule = {{TINYGLTF_TYPE_SCALAR},
                  {TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_COMPONENT_TYPE_BYTE,
                   TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE, TINYGLTF_COMPONENT_TYPE_SHORT,
                   TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT},
                  true};
        const tinygltf::Accessor& out = accessor(sw + ".output", src.samplers[s].output, rule);
        if (out.componentType != TINYGLTF_COMPONENT_TYPE_FLOAT && !out.normalized)
          fail(sw + ".output", "integer output values must be normalized");
        sampler.values = readFloats(sw + ".output", src.samplers[s].output, rule);
        sampler.components = components;
        sampler_path[s] = static_cast<int>(ch.path);
        size_t per_key = static_cast<size_t>(components) *
                         (sampler.interpolation == GltfInterpolation::kCubicSpline ? 3 : 1);
        size_t expected = sampler.times.size() * per_key;
        if (sampler.values.size() != expected)
          fail(sw + ".output",
               std::to_string(sampler.values.size()) + " values for " + std::to_string(sampler.times.size()) +
                   " keys; " + gltfInterpolationName(sampler.interpolation) + " " + gltfPathName(ch.path) +
                   " needs " + std::to_string(expected) + " (" + std::to_string(per_key) + " per key)");
      }
      anim.channels.push_back(ch);
    }
    readAnimationEvents(src.extras, where, anim, doc.warnings);
  }
}

// extras.events: [{"name": string, "time": seconds in [0, duration]}, ...] (other keys of an event are left
// for the tools that wrote them). Anything else leaves the animation without events, with a warning.
void Loader::readAnimationEvents(const tinygltf::Value& extras, const std::string& where, GltfAnimation& anim,
                                 std::vector<std::string>& warnings) {
  if (!extras.IsObject() || !extras.Has("events")) return;
  const tinygltf::Value& list = extras.Get("events");
  std::string why;
  std::vector<GltfAnimationEvent> events;
  if (!list.IsArray()) why = "not an array of {\"name\", \"time\"}";
  for (size_t k = 0; why.empty() && k < list.ArrayLen(); ++k) {
    const tinygltf::Value& e = list.Get(static_cast<int>(k));
    const std::string at_k = "events[" + std::to_string(k) + "]";
    if (!e.IsObject() || !e.Has("name") || !e.Has("time")) {
      why = at_k + " is not an object with \"name\" and \"time\"";
    } else if (!e.Get("name").IsString() || e.Get("name").Get<std::string>().empty()) {
      why = at_k + ".name is not a non-empty string";
    } else if (!e.Get("time").IsNumber() || !std::isfinite(e.Get("time").GetNumberAsDouble())) {
      why = at_k + ".time is not a finite number";
    } else {
      const double t = e.Get("time").GetNumberAsDouble();
      if (t < 0 || t > anim.duration)
        why = at_k + ".time " + std::to_string(t) + " is outside the clip [0, " +
              std::to_string(anim.duration) + "]";
      else
        events.push_back({e.Get("name").Get<std::string>(), static_cast<float>(t)});
    }
  }
  if (!why.empty()) {
    warnings.push_back(where + ".extras.events: ignored (" + why + ")");
    return;
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
  anim.events = std::move(events);
}

// ---- scenes ------------------------------------------------------------------------------------------

void Loader::readScenes(GltfDocument& doc) const {
  for (size_t s = 0; s < model_.scenes.size(); ++s) {
    GltfScene scene;
    scene.name = model_.scenes[s].name;
    for (int root : model_.scenes[s].nodes) {
      if (root < 0 || static_cast<size_t>(root) >= doc.nodes.size())
        fail(at("scenes", s) + ".nodes", "node index " + std::to_string(root) + " out of range (" +
                                             std::to_string(doc.nodes.size()) + " nodes)");
      if (doc.nodes[static_cast<size_t>(root)].parent >= 0)
        fail(at("scenes", s) + ".nodes",
             "nodes[" + std::to_string(root) + "] is not a root (its parent is nodes[" +
                 std::to_string(doc.nodes[static_cast<size_t>(root)].parent) + "])");
      scene.roots.push_back(root);
    }
    doc.scenes.push_back(std::move(scene));
  }
  if (model_.defaultScene >= 0) {
    if (static_cast<size_t>(model_.defaultScene) >= doc.scenes.size())
      fail("scene", "scene index " + std::to_string(model_.defaultScene) + " out of range (" +
                        std::to_string(doc.scenes.size()) + " scenes)");
    doc.default_scene = model_.defaultScene;
  }
}

GltfDocument Loader::run() {
  static const char* const kSupportedRequired[] = {"KHR_mesh_quantization", "KHR_materials_",
                                                   "KHR_texture_transform", "KHR_texture_basisu",
                                                   "EXT_texture_webp",      kSplatExtension};
  for (const std::string& ext : model_.extensionsRequired) {
    bool ok = false;
    for (const char* prefix : kSupportedRequired) ok = ok || ext.rfind(prefix, 0) == 0;
    if (!ok) fail("extensionsRequired", ext + " is not supported");
  }
  GltfDocument doc;
  doc.path = name_;
  doc.images.resize(model_.images.size());
  for (size_t i = 0; i < model_.images.size(); ++i) doc.images[i].name = model_.images[i].name;
  image_state_.assign(model_.images.size(), 0);
  readNodes(doc);
  readMeshes(doc);
  readSkins(doc);
  checkSkinnedMeshes(doc);
  readAnimations(doc);
  readScenes(doc);
  return doc;
}

}  // namespace

Mat4 GltfNode::localMatrix() const {
  if (has_matrix) return matrix;
  return Mat4::fromLinearTranslation(rotationMatrix(rotation) * Mat3::diagonal(scale), translation);
}

std::vector<Mat4> GltfDocument::worldMatrices() const {
  std::vector<Mat4> world(nodes.size());
  std::vector<int> stack;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].parent < 0) stack.push_back(static_cast<int>(i));
  while (!stack.empty()) {
    size_t k = static_cast<size_t>(stack.back());
    stack.pop_back();
    const GltfNode& n = nodes[k];
    world[k] = n.parent < 0 ? n.localMatrix() : world[static_cast<size_t>(n.parent)] * n.localMatrix();
    for (int c : n.children) stack.push_back(c);
  }
  return world;
}

const char* gltfPathName(GltfPath path) {
  switch (path) {
    case GltfPath::kTranslation:
      return "translation";
    case GltfPath::kRotation:
      return "rotation";
    case GltfPath::kScale:
      return "scale";
    case GltfPath::kWeights:
      return "weights";
  }
  return "?";
}

const char* gltfInterpolationName(GltfInterpolation interpolation) {
  switch (interpolation) {
    case GltfInterpolation::kStep:
      return "STEP";
    case GltfInterpolation::kLinear:
      return "LINEAR";
    case GltfInterpolation::kCubicSpline:
      return "CUBICSPLINE";
  }
  return "?";
}

GltfDocument parseGltf(std::span<const uint8_t> bytes, const std::string& name, const std::string& base_dir) {
  if (bytes.size() > std::numeric_limits<unsigned int>::max()) throw Error(name + ": larger than 4 GiB");
  const bool binary = bytes.size() >= 4 && std::memcmp(bytes.data(), "glTF", 4) == 0;
  if (binary) checkGlbContainer(bytes, name);
  std::string_view json = jsonText(bytes, binary);
  if (!binary) {
    // A .gltf is a JSON object: anything else (a PLY, a PNG, a GLB with a damaged magic) is named as such
    // before the JSON checks, which would otherwise report what its bytes happen to look like.
    size_t first =
        json.size() >= 3 && json.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // a UTF-8 byte-order mark
    while (first < json.size() && std::strchr(" \t\r\n", json[first])) ++first;
    if (first == json.size() || json[first] != '{') {
      std::string start;
      for (size_t i = first; i < json.size() && start.size() < 12; ++i)
        start += json[i] >= 32 && json[i] < 127 ? json[i] : '.';
      throw FormatError(
          name, first,
          "not a glTF or GLB model (a .gltf file is a JSON object, a .glb starts with \"glTF\"); this file " +
              (start.empty() ? std::string("is empty") : "starts with \"" + start + "\""));
    }
  }
  if (jsonDepth(json) > kMaxJsonDepth)
    throw Error(name + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");

  FsContext fs_ctx{gltf_files::baseDir(base_dir)};
  tinygltf::TinyGLTF loader;
  std::vector<std::vector<uint8_t>> image_bytes;
  loader.SetImageLoader(keepImageBytes, &image_bytes);
  tinygltf::FsCallbacks callbacks{fsFileExists, fsExpandPath, fsReadFile, fsWriteFile, &fs_ctx};
  loader.SetFsCallbacks(callbacks);

  tinygltf::Model model;
  std::string err, warn;
  bool ok = false;
  const std::string dir = fs_ctx.base_dir.empty() ? std::string() : fs_ctx.base_dir;
  try {
    if (binary)
      ok = loader.LoadBinaryFromMemory(&model, &err, &warn, bytes.data(),
                                       static_cast<unsigned int>(bytes.size()), dir);
    else
      ok = loader.LoadASCIIFromString(&model, &err, &warn, reinterpret_cast<const char*>(bytes.data()),
                                      static_cast<unsigned int>(bytes.size()), dir);
  } catch (const std::exception& e) {  // nlohmann::json or allocation failures inside tinygltf
    (void)parseJsonText(json, name);   // malformed JSON: its byte, path and reason
    throw Error(name + ": " + withoutJsonPrefix(e.what()));
  }
  if (!ok) {
    (void)parseJsonText(json, name);
    if (err.empty()) err = "not a valid glTF file";
    throw Error(name + ": " + withoutJsonPrefix(describeLoadError(err, json)));
  }
  GltfDocument doc = Loader(model, name, image_bytes, fs_ctx.base_dir).run();
  if (!warn.empty()) doc.warnings.push_back(describeLoadError(warn, json));
  for (const tinygltf::Buffer& b : model.buffers)
    if (!b.uri.empty() && b.uri.rfind("data:", 0) != 0) doc.external_files.push_back(percentDecoded(b.uri));
  for (const tinygltf::Image& i : model.images)
    if (!i.uri.empty() && i.uri.rfind("data:", 0) != 0) doc.external_files.push_back(percentDecoded(i.uri));
  return doc;
}

GltfDocument loadGltf(const std::string& path) {
  std::vector<uint8_t> bytes = readFile(path);
  fs::path dir = fs::path(path).parent_path();
  return parseGltf(bytes, path, dir.empty() ? std::string(".") : dir.string());
}

}  // namespace sf
