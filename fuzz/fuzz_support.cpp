#include "fuzz_support.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "character/character.h"
#include "character/expression.h"
#include "core/error.h"
#include "io/file.h"
#include "model/gltf_model.h"
#include "render/camera.h"
#include "scene/synthetic.h"
#include "train/dataset.h"

namespace sf::fuzz {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr uint32_t kSpzMagic = 0x5053474e;  // "NGSP" little-endian
constexpr size_t kSpzV4HeaderBytes = 32;

uint32_t readU32(std::span<const uint8_t> bytes, size_t at) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + at, 4);
  return v;
}

void appendU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
void appendU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
void appendU32BE(std::vector<uint8_t>& out, uint32_t v) {
  for (int k = 3; k >= 0; --k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}

// The glTF binary buffer under construction: each view 4-byte aligned.
struct BinBuilder {
  std::vector<uint8_t> bin;
  Json views = Json::array();

  template <typename T>
  int add(const std::vector<T>& values) {
    while (bin.size() % 4) bin.push_back(0);
    const size_t at = bin.size(), bytes = values.size() * sizeof(T);
    bin.resize(at + bytes);
    std::memcpy(bin.data() + at, values.data(), bytes);
    views.push_back({{"buffer", 0}, {"byteOffset", at}, {"byteLength", bytes}});
    return static_cast<int>(views.size()) - 1;
  }
};

constexpr int kFloat = 5126, kUnsignedByte = 5121, kUnsignedShort = 5123;

// The skinned sample document: its JSON (buffer 0 without a uri) and its binary buffer.
std::pair<Json, std::vector<uint8_t>> skinnedDocument() {
  BinBuilder b;
  Json accessors = Json::array();
  auto accessor = [&](int view, int component, size_t count, const char* type, Json extra = Json::object()) {
    Json a = {{"componentType", component}, {"count", count}, {"type", type}};
    if (view >= 0) a["bufferView"] = view;
    for (auto it = extra.begin(); it != extra.end(); ++it) a[it.key()] = it.value();
    accessors.push_back(a);
    return static_cast<int>(accessors.size()) - 1;
  };
  // A strip of two quads standing on the xy plane: rows at y = 0, 1, 2.
  const std::vector<float> positions = {-0.5f, 0, 0, 0.5f,  0, 0, -0.5f, 1, 0,
                                        0.5f,  1, 0, -0.5f, 2, 0, 0.5f,  2, 0};
  const std::vector<float> normals = {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1};
  const std::vector<float> uvs = {0, 0, 1, 0, 0, 0.5f, 1, 0.5f, 0, 1, 1, 1};
  const std::vector<uint8_t> colors = {255, 255, 255, 255, 255, 200, 200, 255, 200, 255, 200, 255,
                                       200, 200, 255, 255, 255, 255, 0,   255, 0,   255, 255, 255};
  const std::vector<uint16_t> joints = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
                                        0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
  const std::vector<float> weights = {1,    0,    0, 0, 1, 0, 0, 0, 0.5f, 0.5f, 0, 0,
                                      0.5f, 0.5f, 0, 0, 1, 0, 0, 0, 1,    0,    0, 0};
  const std::vector<uint16_t> indices = {0, 1, 3, 0, 3, 2, 2, 3, 5, 2, 5, 4};
  // Morph target: the top row moves forward (sparse over zeros).
  const std::vector<uint16_t> morph_indices = {4, 5};
  const std::vector<float> morph_values = {0, 0, 0.2f, 0, 0, 0.2f};
  // Inverse bind matrices (column-major): hips at the origin, head at y = 1.
  const std::vector<float> ibm = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0,  0, 1,
                                  1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, -1, 0, 1};
  const std::vector<float> times = {0, 0.5f, 1};
  const std::vector<float> rotations = {0, 0, 0, 1, 0, 0, 0.38268343f, 0.92387953f, 0, 0, 0, 1};
  const std::vector<float> translations = {0, 0, 0, 0, 0.1f, 0, 0, 0, 0};
  const std::vector<float> morph_weights = {0, 1, 0};
  // CUBICSPLINE: in-tangent, value, out-tangent per key.
  const std::vector<float> spline = {0, 0, 0, 0, 0, 0,          0, 1,          0, 0, 0.1f, 0,
                                     0, 0, 0, 0, 0, 0.2588190f, 0, 0.9659258f, 0, 0, 0,    0,
                                     0, 0, 0, 0, 0, 0,          0, 1,          0, 0, 0,    0};

  const int a_pos =
      accessor(b.add(positions), kFloat, 6, "VEC3", {{"min", {-0.5, 0, 0}}, {"max", {0.5, 2, 0}}});
  const int a_nrm = accessor(b.add(normals), kFloat, 6, "VEC3");
  const int a_uv = accessor(b.add(uvs), kFloat, 6, "VEC2");
  const int a_col = accessor(b.add(colors), kUnsignedByte, 6, "VEC4", {{"normalized", true}});
  const int a_jnt = accessor(b.add(joints), kUnsignedShort, 6, "VEC4");
  const int a_wgt = accessor(b.add(weights), kFloat, 6, "VEC4");
  const int a_idx = accessor(b.add(indices), kUnsignedShort, 12, "SCALAR");
  const int v_morph_idx = b.add(morph_indices), v_morph_val = b.add(morph_values);
  const int a_morph =
      accessor(-1, kFloat, 6, "VEC3",
               {{"sparse",
                 {{"count", 2},
                  {"indices", {{"bufferView", v_morph_idx}, {"componentType", kUnsignedShort}}},
                  {"values", {{"bufferView", v_morph_val}}}}}});
  const int a_ibm = accessor(b.add(ibm), kFloat, 2, "MAT4");
  const int a_time = accessor(b.add(times), kFloat, 3, "SCALAR", {{"min", {0}}, {"max", {1}}});
  const int a_rot = accessor(b.add(rotations), kFloat, 3, "VEC4");
  const int a_tr = accessor(b.add(translations), kFloat, 3, "VEC3");
  const int a_mw = accessor(b.add(morph_weights), kFloat, 3, "SCALAR");
  const int a_spline = accessor(b.add(spline), kFloat, 9, "VEC4");

  std::vector<uint8_t> texels = {255, 255, 255, 255, 200, 60, 60, 255, 60, 200, 60, 255, 60, 60, 200, 255};
  Json j;
  j["asset"] = {{"version", "2.0"}, {"generator", "splatforge fuzz seeds"}};
  j["scene"] = 0;
  j["scenes"] = {{{"name", "main"}, {"nodes", {0, 1}}}};
  j["nodes"] = {
      {{"name", "body"}, {"mesh", 0}, {"skin", 0}},
      {{"name", "hips"}, {"children", {2}}},
      {{"name", "head"}, {"translation", {0, 1, 0}}, {"rotation", {0, 0, 0, 1}}, {"scale", {1, 1, 1}}}};
  j["meshes"] = {{{"name", "body"},
                  {"primitives",
                   {{{"attributes",
                      {{"POSITION", a_pos},
                       {"NORMAL", a_nrm},
                       {"TEXCOORD_0", a_uv},
                       {"COLOR_0", a_col},
                       {"JOINTS_0", a_jnt},
                       {"WEIGHTS_0", a_wgt}}},
                     {"indices", a_idx},
                     {"material", 0},
                     {"mode", 4},
                     {"targets", {{{"POSITION", a_morph}}}}}}},
                  {"weights", {0}},
                  {"extras", {{"targetNames", {"jawOpen"}}}}}};
  j["materials"] = {
      {{"name", "skin"},
       {"pbrMetallicRoughness",
        {{"baseColorFactor", {1, 0.8, 0.6, 1}}, {"baseColorTexture", {{"index", 0}, {"texCoord", 0}}}}}}};
  j["textures"] = {{{"source", 0}, {"sampler", 0}}};
  j["samplers"] = {{{"wrapS", 33071}, {"wrapT", 10497}}};
  j["images"] = {{{"name", "checker"}, {"uri", "data:image/png;base64," + base64(pngBytes(2, 2, texels))}}};
  j["skins"] = {{{"name", "rig"}, {"joints", {1, 2}}, {"inverseBindMatrices", a_ibm}, {"skeleton", 1}}};
  j["animations"] = {
      {{"name", "Walk"},
       {"samplers",
        {{{"input", a_time}, {"output", a_rot}, {"interpolation", "LINEAR"}},
         {{"input", a_time}, {"output", a_tr}, {"interpolation", "STEP"}},
         {{"input", a_time}, {"output", a_mw}, {"interpolation", "LINEAR"}}}},
       {"channels",
        {{{"sampler", 0}, {"target", {{"node", 2}, {"path", "rotation"}}}},
         {{"sampler", 1}, {"target", {{"node", 1}, {"path", "translation"}}}},
         {{"sampler", 2}, {"target", {{"node", 0}, {"path", "weights"}}}}}}},
      {{"name", "Idle"},
       {"samplers", {{{"input", a_time}, {"output", a_spline}, {"interpolation", "CUBICSPLINE"}}}},
       {"channels", {{{"sampler", 0}, {"target", {{"node", 2}, {"path", "rotation"}}}}}}}};
  j["accessors"] = accessors;
  j["bufferViews"] = b.views;
  while (b.bin.size() % 4) b.bin.push_back(0);
  j["buffers"] = {{{"byteLength", b.bin.size()}}};
  return {j, b.bin};
}

std::vector<uint8_t> glbOf(const std::string& json, std::span<const uint8_t> bin) {
  std::string text = json;
  while (text.size() % 4) text.push_back(' ');
  std::vector<uint8_t> out;
  out.insert(out.end(), {'g', 'l', 'T', 'F'});
  appendU32(out, 2);
  appendU32(out, static_cast<uint32_t>(12 + 8 + text.size() + 8 + bin.size()));
  appendU32(out, static_cast<uint32_t>(text.size()));
  out.insert(out.end(), {'J', 'S', 'O', 'N'});
  out.insert(out.end(), text.begin(), text.end());
  appendU32(out, static_cast<uint32_t>(bin.size()));
  out.insert(out.end(), {'B', 'I', 'N', 0});
  out.insert(out.end(), bin.begin(), bin.end());
  return out;
}

}  // namespace

GaussianCloud sampleCloud(size_t n, int sh_degree, uint32_t seed) {
  return makeRandomCloud(n, sh_degree, seed);
}

bool isSpzV4Body(std::span<const uint8_t> body) {
  return body.size() >= 8 && readU32(body, 0) == kSpzMagic && readU32(body, 4) == 4;
}

std::vector<uint8_t> spzV4FromBody(std::span<const uint8_t> body) {
  if (body.size() < kSpzV4HeaderBytes) return {body.begin(), body.end()};
  const uint64_t n = readU32(body, 8);
  const int degree = body[12];
  const size_t streams = body[15];
  const uint64_t toc = readU32(body, 16);
  // Sizes of the attribute arrays as the header declares them (docs/formats/spz.md, section 3.3).
  const uint64_t sh_dims[5] = {0, 3, 8, 15, 24};
  const uint64_t sh = degree <= 4 ? n * 3 * sh_dims[degree] : 0;
  std::vector<uint64_t> sizes;
  for (uint64_t s : {n * 9, n, n * 3, n * 3, n * 4, sh})
    if (s) sizes.push_back(s);

  std::vector<uint8_t> out(body.begin(), body.begin() + kSpzV4HeaderBytes);
  size_t at = kSpzV4HeaderBytes;
  if (toc > kSpzV4HeaderBytes) {  // extension records, as they are
    const size_t ext = static_cast<size_t>(std::min<uint64_t>(toc - kSpzV4HeaderBytes, body.size() - at));
    out.insert(out.end(), body.begin() + static_cast<long>(at), body.begin() + static_cast<long>(at + ext));
    at += ext;
  }
  if (streams == 0) {  // no table: whatever is left trails the header
    out.insert(out.end(), body.begin() + static_cast<long>(at), body.end());
    return out;
  }
  std::vector<std::vector<uint8_t>> frames(streams);
  std::vector<uint64_t> raw(streams);
  for (size_t s = 0; s < streams; ++s) {
    const size_t left = body.size() - at;
    const uint64_t want = s + 1 == streams ? left : (s < sizes.size() ? sizes[s] : 0);
    const size_t take = static_cast<size_t>(std::min<uint64_t>(want, left));
    std::vector<uint8_t>& frame = frames[s];
    frame.resize(ZSTD_compressBound(take));
    const size_t got = ZSTD_compress(frame.data(), frame.size(), body.data() + at, take, 1);
    if (ZSTD_isError(got)) throw Error(std::string("fuzz: zstd: ") + ZSTD_getErrorName(got));
    frame.resize(got);
    raw[s] = take;
    at += take;
  }
  for (size_t s = 0; s < streams; ++s) {
    appendU64(out, frames[s].size());
    appendU64(out, raw[s]);
  }
  for (const auto& frame : frames) out.insert(out.end(), frame.begin(), frame.end());
  return out;
}

std::vector<uint8_t> pngBytes(int width, int height, std::span<const uint8_t> rgba) {
  // Filter byte 0 (none) before each row. Sized up front and copied: GCC 12 at -O3 reports a false
  // -Wstringop-overflow for push_back followed by insert here.
  const size_t stride = static_cast<size_t>(width) * 4;
  std::vector<uint8_t> raw(static_cast<size_t>(height) * (stride + 1), 0);
  for (size_t y = 0; y < static_cast<size_t>(height); ++y) {
    const auto row = rgba.subspan(y * stride, stride);
    std::copy(row.begin(), row.end(), raw.begin() + static_cast<long>(y * (stride + 1) + 1));
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<uint8_t> packed(packed_size);
  if (compress(packed.data(), &packed_size, raw.data(), static_cast<uLong>(raw.size())) != Z_OK)
    throw Error("fuzz: zlib compress failed");
  packed.resize(packed_size);
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  auto chunk = [&](const char* type, const std::vector<uint8_t>& data) {
    appendU32BE(out, static_cast<uint32_t>(data.size()));
    const size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    appendU32BE(out,
                static_cast<uint32_t>(crc32(0, out.data() + start, static_cast<uInt>(out.size() - start))));
  };
  std::vector<uint8_t> ihdr;
  appendU32BE(ihdr, static_cast<uint32_t>(width));
  appendU32BE(ihdr, static_cast<uint32_t>(height));
  ihdr.insert(ihdr.end(), {8, 6, 0, 0, 0});  // 8-bit RGBA, deflate, no filter method, no interlace
  chunk("IHDR", ihdr);
  chunk("IDAT", packed);
  chunk("IEND", {});
  return out;
}

std::string base64(std::span<const uint8_t> bytes) {
  static const char* kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t a = bytes[i], b = i + 1 < bytes.size() ? bytes[i + 1] : 0,
                   c = i + 2 < bytes.size() ? bytes[i + 2] : 0;
    const uint32_t v = (a << 16) | (b << 8) | c;
    out.push_back(kDigits[(v >> 18) & 63]);
    out.push_back(kDigits[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kDigits[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kDigits[v & 63] : '=');
  }
  return out;
}

std::vector<uint8_t> skinnedGlb() {
  auto [json, bin] = skinnedDocument();
  return glbOf(json.dump(), bin);
}

std::string skinnedGltfJson() {
  auto [json, bin] = skinnedDocument();
  json["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64(bin);
  return json.dump(1) + "\n";
}

std::string glbToGltfJson(std::span<const uint8_t> glb) {
  if (glb.size() < 28 || std::memcmp(glb.data(), "glTF", 4) != 0) throw Error("fuzz: not a GLB");
  const size_t json_len = readU32(glb, 12);
  if (20 + json_len + 8 > glb.size()) throw Error("fuzz: GLB JSON chunk overruns the file");
  Json j = Json::parse(glb.begin() + 20, glb.begin() + static_cast<long>(20 + json_len));
  const size_t bin_at = 20 + json_len;
  const size_t bin_len = readU32(glb, bin_at);
  if (bin_at + 8 + bin_len > glb.size()) throw Error("fuzz: GLB BIN chunk overruns the file");
  j["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64(glb.subspan(bin_at + 8, bin_len));
  return j.dump(1) + "\n";
}

void writeSamplePackage(const std::string& dir_name) {
  const fs::path dir(dir_name);
  fs::create_directories(dir);
  // The package copies the skin and the animation source from where the model was loaded: load them from
  // their final names, so the copy overwrites each file with its own bytes.
  const std::vector<uint8_t> glb = skinnedGlb();
  writeFileAtomic((dir / "skin.glb").string(), glb);
  writeFileAtomic((dir / "animations.glb").string(), glb);
  auto model = std::make_shared<GltfModel>((dir / "skin.glb").string());
  character::Character c = character::Character::fromGltf(model, 12, 1);
  c.attachClips((dir / "animations.glb").string());
  c.savePackage(dir.string());
}

void writeSampleDataset(const std::string& dir) {
  train::Dataset ds;
  ds.scale = 0.5f;
  ds.offset = {0.1f, -0.2f, 0.0f};
  for (int v = 0; v < 3; ++v) {
    train::View view;
    const float az = 2.0f * static_cast<float>(v);
    // Horizontal field of view 0.6911 rad on 4 pixels: fx = 2 / tan(0.3456).
    view.camera = lookAtCamera(Vec3{std::sin(az) * 3.0f, 1.0f, std::cos(az) * 3.0f}, {0, 0, 0}, {0, -1, 0},
                               39.5978f, 4, 4);
    view.camera.fx = view.camera.fy = static_cast<float>(2.0 / std::tan(0.3455556035041809));
    view.rgba.resize(4 * 4 * 4);
    for (size_t p = 0; p < 16; ++p) {
      const float a = p % 3 ? 1.0f : 0.5f;
      view.rgba[4 * p] = 0.25f * a, view.rgba[4 * p + 1] = 0.5f * a,
                    view.rgba[4 * p + 2] = static_cast<float>(p) / 16.0f * a, view.rgba[4 * p + 3] = a;
    }
    view.name = (v < 2 ? "train/r_" : "val/r_") + std::to_string(v < 2 ? v : 0);
    (v < 2 ? ds.train : ds.val).push_back(std::move(view));
  }
  train::writeNerfSynthetic(ds, dir);
}

character::GnmPack sampleGnmPack(size_t vertices, size_t basis, bool uvs, bool arkit_map) {
  if (vertices < 3) throw Error("fuzz: a sample GNM pack needs at least 3 vertices");
  character::GnmPack p;
  p.source = "sample.sfgnm";
  for (size_t i = 0; i < vertices; ++i) {
    const float a = 0.5f * static_cast<float>(i);
    p.neutral.push_back({0.05f * std::cos(a), 0.01f * static_cast<float>(i), 0.05f * std::sin(a) + 0.02f});
    if (uvs)
      p.uvs.push_back({static_cast<float>(i) / static_cast<float>(vertices - 1), 0.5f + 0.25f * std::sin(a)});
    // The first half follows the left eye alone, the rest blends both eyes (slot 2 unweighted, joint 7 of 2).
    if (2 * i < vertices) {
      p.lbs_joints.push_back({0, 0, 0, 0});
      p.lbs_weights.push_back({1, 0, 0, 0});
    } else {
      p.lbs_joints.push_back({0, 1, 7, 0});
      p.lbs_weights.push_back({0.25f, 0.75f, 0, 0});
    }
  }
  for (uint32_t i = 1; i + 1 < vertices; ++i) p.triangles.insert(p.triangles.end(), {0u, i, i + 1});
  for (size_t k = 0; k < basis; ++k)
    for (size_t i = 0; i < vertices; ++i)
      p.basis.push_back(
          {0.001f * static_cast<float>(k + 1), -0.0005f * static_cast<float>(i), k % 2 ? 0.002f : -0.0f});
  character::GnmJoint left, right;
  left.name = "lEye";
  left.rest_local = Mat4::fromLinearTranslation(Mat3{}, {-0.03f, 0.0f, 0.04f});
  left.inverse_bind = Mat4::fromLinearTranslation(Mat3{}, {0.03f, 0.0f, -0.04f});
  right.name = "rEye";
  right.parent = 0;
  right.rest_local = Mat4::fromLinearTranslation(Mat3{}, {0.06f, 0.0f, 0.0f});
  right.inverse_bind = Mat4::fromLinearTranslation(Mat3{}, {-0.03f, 0.0f, -0.04f});
  p.joints = {left, right};
  p.eye_joints = {0, 1};
  p.bind_transform = Mat4::fromLinearTranslation(Mat3{}, {0.0f, 1.6255f, -0.0184f});
  for (size_t k = 0; k < basis; ++k)
    p.control_names.push_back(k < character::kArkit52.size() ? character::kArkit52[k]
                                                             : "basis" + std::to_string(k));
  for (const char* g : character::kGnmGazeNames) p.control_names.push_back(g);
  if (arkit_map) {
    p.arkit_map.assign(character::kArkit52.size() * basis, 0.0f);
    for (size_t k = 0; k < basis && k < character::kArkit52.size(); ++k) p.arkit_map[k * basis + k] = 1.0f;
    if (basis > 0) p.arkit_map.back() = 0.5f;
  }
  if (std::string why = p.validate(); !why.empty())
    throw Error("fuzz: the sample GNM pack is inconsistent: " + why);
  return p;
}

character::BranchMesh sampleBranchMesh(size_t vertices) {
  if (vertices < 3) throw Error("fuzz: a sample branch mesh needs at least 3 vertices");
  character::BranchMesh m;
  for (size_t i = 0; i < vertices; ++i) {
    const float a = 6.2831853f * static_cast<float>(i) / static_cast<float>(vertices);
    m.positions.push_back({0.012f * std::cos(a) - 0.03f, 1.6f + 0.012f * std::sin(a), 0.08f});
    m.uvs.push_back({0.5f + 0.5f * std::cos(a), 0.5f + 0.5f * std::sin(a)});
  }
  for (uint32_t i = 1; i + 1 < vertices; ++i) m.indices.insert(m.indices.end(), {0u, i, i + 1});
  return m;
}

std::map<std::string, std::vector<uint8_t>> sampleBundleFiles() {
  auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  std::map<std::string, std::vector<uint8_t>> files;
  for (const char* name :
       {"head/geom.onnx", "head/appr.onnx", "head/trunk.onnx", "eyes/geom.onnx", "eyes/appr.onnx"})
    files[name] = bytes(std::string("placeholder decoder ") + name);
  files["head/head.glb"] = skinnedGlb();
  files["head/head.sfgnm"] = character::encodeGnmPack(sampleGnmPack(4, 2, true, true));
  auto [mesh_json, mesh_bin] = character::encodeBranchMesh(sampleBranchMesh(8));
  files["eyes/mesh.json"] = bytes(mesh_json);
  files["eyes/mesh.bin"] = std::move(mesh_bin);
  files["rig_names.json"] = bytes(R"(["jawOpen", "cheekPuff", "eyeBlinkLeft"])");
  return files;
}

}  // namespace sf::fuzz
