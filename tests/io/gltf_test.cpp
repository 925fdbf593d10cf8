// glTF reader: facts about the shared sample assets, and every kind of bad input (out-of-range accessors,
// joints outside the skin, non-increasing key times, missing buffers, count mismatches, cycles) failing
// with an sf::Error that names the glTF element; truncated and corrupted files never crash. Base-colour
// textures: decoded images compared with stb decoding the same bytes independently, and unusable
// textures reported as warnings.
#include "io/gltf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/image_io.h"
#include "support/test_support.h"

// stb_image, compiled here to decode textures independently of the reader.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace sf {
namespace {

using nlohmann::json;

// ---- real assets ----

TEST(GltfAssets, CesiumMan) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  GltfDocument doc = loadGltf(path);
  EXPECT_EQ(doc.nodes.size(), 22u);
  ASSERT_EQ(doc.skins.size(), 1u);
  EXPECT_EQ(doc.skins[0].joints.size(), 19u);
  EXPECT_EQ(doc.skins[0].skeleton, 2);
  ASSERT_EQ(doc.animations.size(), 1u);
  EXPECT_EQ(doc.animations[0].channels.size(), 57u);
  EXPECT_FLOAT_EQ(doc.animations[0].duration, 2.0f);
  ASSERT_EQ(doc.meshes.size(), 1u);
  const GltfPrimitive& p = doc.meshes[0].primitives[0];
  EXPECT_EQ(p.vertexCount(), 3273u);
  EXPECT_EQ(p.normals.size(), 3273u);
  EXPECT_EQ(p.texcoords0.size(), 3273u);
  EXPECT_EQ(p.joints0.size(), 3273u);
  EXPECT_EQ(p.weights0.size(), 3273u);
  EXPECT_GT(p.indices.size(), 0u);
  EXPECT_EQ(p.indices.size() % 3, 0u);
  EXPECT_EQ(doc.nodes[1].skin, 0);
  EXPECT_EQ(doc.nodes[1].mesh, 0);
  EXPECT_TRUE(doc.nodes[0].has_matrix);
  // The decomposed matrix gives back the matrix.
  Mat4 m = Mat4::fromLinearTranslation(
      rotationMatrix(doc.nodes[0].rotation) * Mat3::diagonal(doc.nodes[0].scale), doc.nodes[0].translation);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(m.m[r][c], doc.nodes[0].matrix.m[r][c], 1e-6f);
  // World matrices: the mesh node (child of the root, no transform of its own) sits at the root's matrix.
  std::vector<Mat4> world = doc.worldMatrices();
  ASSERT_EQ(world.size(), 22u);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_FLOAT_EQ(world[1].m[r][c], doc.nodes[0].matrix.m[r][c]);
}

TEST(GltfAssets, RiggedSimpleBoxAnimatedInterpolation) {
  SF_REQUIRE_ASSET(rigged, "gltf/rigged_simple.gltf");
  GltfDocument r = loadGltf(rigged);
  ASSERT_EQ(r.skins.size(), 1u);
  EXPECT_EQ(r.skins[0].joints.size(), 2u);
  EXPECT_EQ(r.animations.size(), 1u);
  EXPECT_EQ(r.animations[0].channels.size(), 3u);
  EXPECT_EQ(r.meshes[0].primitives[0].vertexCount(), 160u);

  SF_REQUIRE_ASSET(box, "gltf/box_animated.gltf");
  GltfDocument b = loadGltf(box);
  EXPECT_EQ(b.animations.size(), 1u);
  EXPECT_EQ(b.animations[0].channels.size(), 2u);
  EXPECT_EQ(b.meshes.size(), 2u);

  SF_REQUIRE_ASSET(interp, "gltf/interpolation_test.gltf");
  GltfDocument it = loadGltf(interp);
  EXPECT_EQ(it.animations.size(), 9u);
  EXPECT_EQ(it.nodes.size(), 12u);
  int cubic = 0, step = 0, linear = 0;
  for (const GltfAnimation& a : it.animations)
    for (const GltfSampler& s : a.samplers)
      (s.interpolation == GltfInterpolation::kCubicSpline ? cubic
       : s.interpolation == GltfInterpolation::kStep      ? step
                                                          : linear)++;
  EXPECT_EQ(cubic, 4);
  EXPECT_EQ(step, 3);
  EXPECT_EQ(linear, 2);
}

TEST(GltfAssets, MorphStressTest) {
  SF_REQUIRE_ASSET(path, "gltf/morph-stress-test.glb");
  GltfDocument doc = loadGltf(path);
  ASSERT_EQ(doc.meshes.size(), 1u);
  const GltfMesh& mesh = doc.meshes[0];
  EXPECT_EQ(mesh.weights.size(), 8u);
  ASSERT_EQ(mesh.target_names.size(), 8u);
  EXPECT_EQ(mesh.target_names[0], "Key 1");
  EXPECT_EQ(mesh.target_names[7], "Key 8");
  for (const GltfPrimitive& p : mesh.primitives) {
    ASSERT_EQ(p.targets.size(), 8u);
    for (const GltfMorphTarget& t : p.targets) {
      EXPECT_EQ(t.positions.size(), p.vertexCount());
      EXPECT_TRUE(t.normals.empty() || t.normals.size() == p.vertexCount());
    }
  }
  ASSERT_EQ(doc.animations.size(), 3u);
  for (const GltfAnimation& a : doc.animations) {
    ASSERT_EQ(a.channels.size(), 1u);
    EXPECT_EQ(a.channels[0].path, GltfPath::kWeights);
    EXPECT_EQ(a.samplers[0].components, 8);
  }
}

TEST(GltfAssets, LamAvatar) {
  SF_REQUIRE_ASSET(skin_path, "characters/lam_avatar/skin.glb");
  SF_REQUIRE_ASSET(anim_path, "characters/lam_avatar/animation.glb");
  GltfDocument skin = loadGltf(skin_path);
  EXPECT_EQ(skin.nodes.size(), 264u);
  ASSERT_EQ(skin.skins.size(), 1u);
  EXPECT_EQ(skin.skins[0].joints.size(), 262u);
  EXPECT_EQ(skin.meshes[0].weights.size(), 51u);
  EXPECT_EQ(skin.meshes[0].target_names.size(), 51u);
  EXPECT_EQ(skin.meshes[0].primitives[0].vertexCount(), 20018u);
  GltfDocument anim = loadGltf(anim_path);
  EXPECT_EQ(anim.animations.size(), 12u);
  for (const GltfAnimation& a : anim.animations) EXPECT_EQ(a.channels.size(), 510u) << a.name;
  EXPECT_EQ(anim.skins[0].joints.size(), 170u);
}

// ---- hand-made files ----

template <typename T>
void put(std::vector<uint8_t>& b, std::initializer_list<T> values) {
  for (T v : values) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    b.insert(b.end(), raw, raw + sizeof(T));
  }
}

// A small valid skinned, animated file: node 0 (mesh 0, skin 0) and node 1 (the joint, animated).
// Buffer sections: positions (0, 36), joints (36, 12), weights (48, 48), inverse binds (96, 64),
// times (160, 12), translations (172, 36).
struct Sample {
  json doc;
  std::vector<uint8_t> bin;
};

Sample sample() {
  Sample s;
  put<float>(s.bin, {0, 0, 0, 1, 0, 0, 0, 1, 0});
  put<uint8_t>(s.bin, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  put<float>(s.bin, {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0});
  put<float>(s.bin, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  put<float>(s.bin, {0, 0.5f, 1});
  put<float>(s.bin, {0, 0, 0, 1, 0, 0, 2, 0, 0});
  json views = json::array();
  for (auto [off, len] :
       std::vector<std::pair<int, int>>{{0, 36}, {36, 12}, {48, 48}, {96, 64}, {160, 12}, {172, 36}})
    views.push_back({{"buffer", 0}, {"byteOffset", off}, {"byteLength", len}});
  s.doc = {
      {"asset", {{"version", "2.0"}}},
      {"scene", 0},
      {"scenes", {{{"nodes", {0, 1}}}}},
      {"nodes",
       {{{"name", "body"}, {"mesh", 0}, {"skin", 0}}, {{"name", "bone"}, {"translation", {0, 0, 0}}}}},
      {"meshes",
       {{{"primitives", {{{"attributes", {{"POSITION", 0}, {"JOINTS_0", 1}, {"WEIGHTS_0", 2}}}}}}}}},
      {"skins", {{{"joints", {1}}, {"inverseBindMatrices", 3}}}},
      {"animations",
       {{{"channels", {{{"sampler", 0}, {"target", {{"node", 1}, {"path", "translation"}}}}}},
         {"samplers", {{{"input", 4}, {"output", 5}, {"interpolation", "LINEAR"}}}}}}},
      {"accessors",
       {{{"bufferView", 0}, {"componentType", 5126}, {"count", 3}, {"type", "VEC3"}},
        {{"bufferView", 1}, {"componentType", 5121}, {"count", 3}, {"type", "VEC4"}},
        {{"bufferView", 2}, {"componentType", 5126}, {"count", 3}, {"type", "VEC4"}},
        {{"bufferView", 3}, {"componentType", 5126}, {"count", 1}, {"type", "MAT4"}},
        {{"bufferView", 4},
         {"componentType", 5126},
         {"count", 3},
         {"type", "SCALAR"},
         {"min", {0}},
         {"max", {1}}},
        {{"bufferView", 5}, {"componentType", 5126}, {"count", 3}, {"type", "VEC3"}}}},
      {"bufferViews", views},
      {"buffers", {{{"byteLength", s.bin.size()}}}},
  };
  return s;
}

GltfDocument parseSample(Sample s, const std::string& base_dir = "") {
  if (!s.doc["buffers"][0].contains("uri"))
    s.doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + test::encodeBase64(s.bin);
  std::string text = s.doc.dump();
  return parseGltf(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()),
                   "bad.gltf", base_dir);
}

std::vector<uint8_t> toGlb(const Sample& s) {
  std::string text = s.doc.dump();
  while (text.size() % 4) text += ' ';
  std::vector<uint8_t> bin = s.bin;
  while (bin.size() % 4) bin.push_back(0);
  std::vector<uint8_t> out;
  auto u32 = [&](uint32_t v) { put<uint32_t>(out, {v}); };
  out.insert(out.end(), {'g', 'l', 'T', 'F'});
  u32(2);
  u32(static_cast<uint32_t>(12 + 8 + text.size() + 8 + bin.size()));
  u32(static_cast<uint32_t>(text.size()));
  u32(0x4E4F534A);
  out.insert(out.end(), text.begin(), text.end());
  u32(static_cast<uint32_t>(bin.size()));
  u32(0x004E4942);
  out.insert(out.end(), bin.begin(), bin.end());
  return out;
}

// Expects parsing to fail with a message containing every fragment.
void expectError(const Sample& s, std::initializer_list<const char*> fragments,
                 const std::string& base_dir = "") {
  try {
    parseSample(s, base_dir);
    ADD_FAILURE() << "no error; expected " << *fragments.begin();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("bad.gltf: ", 0), 0u) << msg;
    for (const char* f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
  }
}

TEST(GltfBadInput, SampleIsValid) {
  GltfDocument doc = parseSample(sample());
  ASSERT_EQ(doc.nodes.size(), 2u);
  EXPECT_EQ(doc.meshes[0].primitives[0].vertexCount(), 3u);
  EXPECT_EQ(doc.skins[0].joints, std::vector<int>{1});
  EXPECT_EQ(doc.animations[0].samplers[0].values.size(), 9u);
  EXPECT_FLOAT_EQ(doc.animations[0].duration, 1.0f);
  std::vector<uint8_t> glb = toGlb(sample());
  GltfDocument g = parseGltf(glb, "sample.glb", "");
  EXPECT_EQ(g.meshes[0].primitives[0].positions[1].x, 1.0f);
}

TEST(GltfBadInput, AccessorOutOfRange) {
  Sample s = sample();
  s.doc["accessors"][0]["count"] = 4;
  expectError(s, {"meshes[0].primitives[0].attributes.POSITION: accessors[0]: byteOffset 0 + 12 * (4 - 1) + "
                  "12 exceeds bufferViews[0] byteLength 36"});
  s = sample();
  s.doc["accessors"][0]["byteOffset"] = 30;
  expectError(s, {"accessors[0]", "exceeds bufferViews[0]"});
  s = sample();
  s.doc["accessors"][0]["count"] = 4000000000u;
  expectError(s, {"accessors[0]", "exceeds bufferViews[0]"});
  s = sample();
  s.doc["bufferViews"][2]["byteLength"] = 1000;
  expectError(s, {"bufferViews[2]: byteOffset 48 + byteLength 1000 exceeds buffers[0] length 208"});
  s = sample();
  s.doc["bufferViews"][0]["byteStride"] = 8;
  expectError(s, {"accessors[0]", "byteStride 8", "smaller than the element size 12"});
  s = sample();
  s.doc["accessors"][0]["componentType"] = 5124;  // INT is not a glTF accessor type
  expectError(s, {"accessors[0]", "componentType"});
  s = sample();
  s.doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = 17;
  expectError(s, {"accessor"});
  s = sample();
  s.doc["accessors"][1]["type"] = "VEC3";
  expectError(s, {"JOINTS_0: accessors[1]", "type VEC3, expected VEC4"});
}

TEST(GltfBadInput, SparseAccessor) {
  Sample s = sample();
  // Sparse substitution of position 2 with (5, 6, 7): indices at bin end (one uint8 + padding), values after.
  size_t at = s.bin.size();
  put<uint8_t>(s.bin, {2, 0, 0, 0});
  put<float>(s.bin, {5, 6, 7});
  s.doc["bufferViews"].push_back({{"buffer", 0}, {"byteOffset", at}, {"byteLength", 4}});
  s.doc["bufferViews"].push_back({{"buffer", 0}, {"byteOffset", at + 4}, {"byteLength", 12}});
  s.doc["buffers"][0]["byteLength"] = s.bin.size();
  s.doc["accessors"][0]["sparse"] = {{"count", 1},
                                     {"indices", {{"bufferView", 6}, {"componentType", 5121}}},
                                     {"values", {{"bufferView", 7}}}};
  GltfDocument doc = parseSample(s);
  EXPECT_EQ(doc.meshes[0].primitives[0].positions[2].x, 5.0f);
  EXPECT_EQ(doc.meshes[0].primitives[0].positions[2].z, 7.0f);
  EXPECT_EQ(doc.meshes[0].primitives[0].positions[1].x, 1.0f);
  // Without a bufferView the base values are zeros.
  Sample z = s;
  z.doc["accessors"][0].erase("bufferView");
  doc = parseSample(z);
  EXPECT_EQ(doc.meshes[0].primitives[0].positions[1].x, 0.0f);
  EXPECT_EQ(doc.meshes[0].primitives[0].positions[2].y, 6.0f);
  // Index outside the accessor.
  s.bin[at] = 9;
  expectError(s, {"accessors[0].sparse.indices", "index 9"});
  s.bin[at] = 2;
  s.doc["accessors"][0]["sparse"]["count"] = 3;
  expectError(s, {"accessors[0].sparse.values: byteOffset 0 + 3 * 12 exceeds bufferViews[7] byteLength 12"});
}

TEST(GltfBadInput, JointsOutsideSkin) {
  Sample s = sample();
  s.bin[36 + 4] = 5;  // vertex 1, first influence (weight 1): joint 5 of a 1-joint skin
  expectError(s, {"nodes[0]: meshes[0].primitives[0]", "JOINTS_0 value 5 at vertex 1",
                  "outside skins[0] (1 joints)"});
  // With zero weight it is harmless and reset to 0.
  s = sample();
  s.bin[36 + 5] = 7;
  GltfDocument doc = parseSample(s);
  EXPECT_EQ(doc.meshes[0].primitives[0].joints0[1][1], 0);
  s = sample();
  s.doc["skins"][0]["joints"] = {1, 9};
  expectError(s, {"skins[0].joints", "node index 9"});
  s = sample();
  s.doc["skins"][0]["joints"] = {1, 0};
  expectError(s, {"skins[0].inverseBindMatrices", "1 matrices for 2 joints"});
}

TEST(GltfBadInput, NonIncreasingKeyTimes) {
  Sample s = sample();
  float one = 1;
  std::memcpy(&s.bin[160 + 4], &one, 4);  // times 0, 1, 1
  expectError(s, {"animations[0].samplers[0].input", "strictly increasing", "at key 2"});
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&s.bin[160 + 4], &nan, 4);
  expectError(s, {"animations[0].samplers[0].input"});
}

TEST(GltfBadInput, SamplerOutputMismatchAndChannels) {
  Sample s = sample();
  s.doc["accessors"][5]["count"] = 2;
  expectError(s, {"animations[0].samplers[0].output", "6 values for 3 keys", "LINEAR translation needs 9"});
  s = sample();
  s.doc["animations"][0]["samplers"][0]["interpolation"] = "CUBICSPLINE";
  expectError(s, {"animations[0].samplers[0].output", "CUBICSPLINE translation needs 27"});
  s = sample();
  s.doc["animations"][0]["samplers"][0]["interpolation"] = "QUADRATIC";
  expectError(s, {"animations[0].samplers[0].interpolation", "QUADRATIC"});
  s = sample();
  s.doc["animations"][0]["channels"][0]["target"]["node"] = 99;
  expectError(s, {"animations[0].channels[0].target.node", "99"});
  s = sample();
  s.doc["animations"][0]["channels"][0]["sampler"] = 3;
  expectError(s, {"animations[0].channels[0].sampler"});
  s = sample();
  s.doc["animations"][0]["channels"][0]["target"]["path"] = "weights";
  expectError(s, {"animations[0].channels[0].target", "no morph targets"});
  s = sample();
  s.doc["animations"][0]["channels"][0]["target"]["path"] = "rotation";
  expectError(s, {"animations[0].samplers[0].output", "type VEC3, expected VEC4"});
}

TEST(GltfBadInput, MissingBuffers) {
  Sample s = sample();
  s.doc["buffers"][0]["uri"] = "missing.bin";
  std::string dir = test::tempDir("GltfMissingBuffer");
  expectError(s, {"buffers[0]", "missing.bin"}, dir);
  expectError(s, {"buffers[0]", "missing.bin"}, "");  // no base directory: no external files at all
  // A buffer outside the file's directory is refused even when it exists.
  std::ofstream(dir + "/../outside.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(s.bin.data()), static_cast<std::streamsize>(s.bin.size()));
  s.doc["buffers"][0]["uri"] = "../outside.bin";
  expectError(s, {"buffers[0]", "outside.bin"}, dir);
  // The same file beside it loads.
  std::ofstream(dir + "/inside.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(s.bin.data()), static_cast<std::streamsize>(s.bin.size()));
  s.doc["buffers"][0]["uri"] = "inside.bin";
  EXPECT_EQ(parseSample(s, dir).skins.size(), 1u);
  // An external file shorter than byteLength, and a data URI that decodes to too few bytes.
  s.doc["buffers"][0]["byteLength"] = 4000;
  expectError(s, {"buffers[0]: external file 'inside.bin' is shorter or longer than its byteLength"}, dir);
  s = sample();
  s.doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + test::encodeBase64(s.bin);
  s.doc["buffers"][0]["byteLength"] = 4000;
  try {
    parseSample(s);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("buffers[0]: data URI does not decode to byteLength bytes"), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 300u) << msg;  // the base64 text is not repeated in full
  }
  // A GLB without its BIN chunk.
  s = sample();
  std::vector<uint8_t> glb = toGlb(s);
  std::string text = s.doc.dump();
  glb.resize(20 + (text.size() + 3) / 4 * 4);
  uint32_t len = static_cast<uint32_t>(glb.size());
  std::memcpy(&glb[8], &len, 4);
  EXPECT_THROW(parseGltf(glb, "nobin.glb", ""), Error);
}

TEST(GltfBadInput, HierarchyErrors) {
  Sample s = sample();
  s.doc["nodes"][0]["children"] = {1};
  s.doc["nodes"][1]["children"] = {0};
  expectError(s, {"cycle"});
  s = sample();
  s.doc["nodes"][1]["children"] = {1};
  expectError(s, {"nodes[1].children", "own child"});
  s = sample();
  s.doc["nodes"].push_back({{"children", {1}}});
  s.doc["nodes"][0]["children"] = {1};
  expectError(s, {"nodes[1]", "child of both nodes[0] and nodes[2]"});
  s = sample();
  s.doc["nodes"][0]["children"] = {5};
  expectError(s, {"nodes[0].children", "node index 5"});
  s = sample();
  s.doc["nodes"][0]["children"] = {1};  // node 1 is listed as a scene root too
  expectError(s, {"scenes[0].nodes", "nodes[1] is not a root"});
  s = sample();
  s.doc["nodes"][1]["matrix"] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  s.doc["nodes"][1].erase("translation");
  s.doc["nodes"][1]["matrix"][3] = 2;  // last row no longer 0 0 0 1
  expectError(s, {"nodes[1].matrix", "not an affine"});
  s = sample();
  s.doc["nodes"][0]["mesh"] = 3;
  expectError(s, {"nodes[0]", "mesh index 3"});
}

TEST(GltfBadInput, MeshErrors) {
  Sample s = sample();
  s.doc["meshes"][0]["primitives"][0]["attributes"]["NORMAL"] = 0;
  s.doc["accessors"][0]["count"] = 2;
  expectError(s, {"meshes[0].primitives[0].attributes", "count"});
  s = sample();
  s.doc["meshes"][0]["primitives"][0]["indices"] = 1;  // the joints accessor: VEC4 is no index type
  expectError(s, {"meshes[0].primitives[0].indices", "type VEC4"});
  s = sample();
  s.doc["meshes"][0]["primitives"][0]["attributes"].erase("WEIGHTS_0");
  expectError(s, {"JOINTS_0 and WEIGHTS_0"});
  s = sample();
  s.doc["extensionsRequired"] = {"KHR_draco_mesh_compression"};
  expectError(s, {"extensionsRequired", "KHR_draco_mesh_compression"});
  s = sample();
  s.doc["meshes"][0]["weights"] = {0.5};
  expectError(s, {"meshes[0].weights", "1 weights for 0 morph targets"});
}

TEST(GltfBadInput, DeepJsonAndGarbage) {
  std::string deep = "{\"asset\":{\"version\":\"2.0\"},\"extras\":" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  EXPECT_THROW(parseGltf(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(deep.data()), deep.size()),
                         "deep.gltf", ""),
               Error);
  for (std::string text :
       {"", "{", "null", "[]", "{\"asset\":{}}", "glTF", "{\"asset\":{\"version\":\"2.0\"},\"nodes\":[5]}"})
    EXPECT_THROW(
        parseGltf(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()),
                  "junk.gltf", ""),
        Error)
        << text;
  EXPECT_THROW(loadGltf("/nonexistent/file.gltf"), Error);
}

// Every truncated prefix and many single-byte corruptions of a small GLB: an sf::Error or a document,
// never a crash (run under AddressSanitizer in CI).
TEST(GltfBadInput, TruncatedAndCorruptedGlb) {
  Sample s = sample();
  s.doc["nodes"][1]["rotation"] = {0, 0, 0, 1};
  std::vector<uint8_t> glb = toGlb(s);
  size_t ok = 0, failed = 0;
  for (size_t n = 0; n < glb.size(); ++n) {
    try {
      parseGltf(std::span<const uint8_t>(glb.data(), n), "cut.glb", "");
      ++ok;
    } catch (const Error&) {
      ++failed;
    }
  }
  EXPECT_EQ(failed, glb.size());  // every prefix is missing part of the file
  uint64_t state = 12345;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> bad = glb;
    for (int k = 0; k < 1 + round % 3; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = static_cast<size_t>(state >> 33) % bad.size();
      bad[at] = static_cast<uint8_t>(state >> 13);
    }
    try {
      parseGltf(bad, "corrupt.glb", "");
    } catch (const Error&) {
    }
  }
  SUCCEED() << ok << " prefixes parsed";
}

// ---- base-colour textures ----

// The image bytes decoded by stb directly, independently of the reader (image_io.cpp).
struct StbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;
};

StbImage stbDecode(const std::vector<uint8_t>& bytes) {
  StbImage out;
  int comp = 0;
  uint8_t* p =
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &out.width, &out.height, &comp, 4);
  if (!p) return out;
  out.rgba.assign(p, p + static_cast<size_t>(out.width) * static_cast<size_t>(out.height) * 4);
  stbi_image_free(p);
  return out;
}

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void expectSameImage(const GltfImage& got, const StbImage& want) {
  ASSERT_GT(want.width, 0);
  EXPECT_EQ(got.width, want.width);
  EXPECT_EQ(got.height, want.height);
  ASSERT_EQ(got.rgba.size(), want.rgba.size());
  EXPECT_TRUE(got.rgba == want.rgba);
}

TEST(GltfTextures, CesiumManBaseColorFromDataUri) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  GltfDocument doc = loadGltf(path);
  const GltfPrimitive& p = doc.meshes[0].primitives[0];
  ASSERT_EQ(p.base_color_texture, 0);
  EXPECT_EQ(p.base_color_texcoord, 0);
  EXPECT_EQ(p.wrap_s, 10497);
  EXPECT_EQ(p.wrap_t, 10497);
  ASSERT_EQ(doc.images.size(), 1u);
  const GltfImage& img = doc.images[0];
  EXPECT_EQ(img.width, 1024);
  EXPECT_EQ(img.height, 1024);
  // Independently: the JPEG of the data URI, base64-decoded here and decoded by stb.
  std::ifstream in(path);
  json j = json::parse(in);
  std::string uri = j["images"][0]["uri"];
  ASSERT_EQ(uri.rfind("data:image/jpeg;base64,", 0), 0u);
  StbImage want = stbDecode(test::decodeBase64(uri.substr(uri.find(',') + 1)));
  expectSameImage(img, want);
  for (size_t at : {size_t{0}, img.rgba.size() / 2 + 4 * 37, img.rgba.size() - 4}) {
    EXPECT_EQ(img.rgba[at + 3], 255);  // JPEG: opaque
    EXPECT_EQ(img.rgba[at], want.rgba[at]);
  }
}

TEST(GltfTextures, MorphStressTestPngFromBufferViews) {
  SF_REQUIRE_ASSET(path, "gltf/morph-stress-test.glb");
  GltfDocument doc = loadGltf(path);
  ASSERT_EQ(doc.images.size(), 3u);
  const GltfMesh& mesh = doc.meshes[0];
  ASSERT_EQ(mesh.primitives.size(), 2u);
  EXPECT_EQ(mesh.primitives[0].base_color_texture, 1);  // TinyGrid
  EXPECT_EQ(mesh.primitives[1].base_color_texture, 2);  // ColorSwatches
  EXPECT_EQ(doc.images[0].name, "Base_AO");             // an occlusion map: not decoded
  EXPECT_EQ(doc.images[0].width, 0);
  EXPECT_TRUE(doc.images[0].rgba.empty());
  // Independently: the PNG bytes cut from the GLB's BIN chunk by its bufferView, decoded by stb.
  std::vector<uint8_t> glb = slurp(path);
  uint32_t json_len = 0;
  std::memcpy(&json_len, glb.data() + 12, 4);
  json j = json::parse(glb.begin() + 20, glb.begin() + 20 + json_len);
  const size_t bin = 20 + json_len + 8;
  for (int i : {1, 2}) {
    const json& view = j["bufferViews"][j["images"][i]["bufferView"].get<int>()];
    size_t off = bin + view.value("byteOffset", size_t{0}), len = view["byteLength"];
    std::vector<uint8_t> png(glb.begin() + static_cast<std::ptrdiff_t>(off),
                             glb.begin() + static_cast<std::ptrdiff_t>(off + len));
    SCOPED_TRACE(i);
    expectSameImage(doc.images[static_cast<size_t>(i)], stbDecode(png));
  }
}

// A 3x2 PNG (RGB, so alpha decodes as 255) written by the engine's own PNG writer.
std::vector<uint8_t> smallPng(const std::string& dir) {
  ImageRGBA img(3, 2);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) {
      float* p = img.at(x, y);
      p[0] = static_cast<float>(x) / 2.0f, p[1] = static_cast<float>(y), p[2] = 0.2f, p[3] = 1;
    }
  writePng(dir + "/tex.png", img);
  return slurp(dir + "/tex.png");
}

// The sample with a material whose base colour texture is textures[0] -> images[0] (uri), sampler 0.
Sample texturedSample(const std::string& image_uri) {
  Sample s = sample();
  s.doc["meshes"][0]["primitives"][0]["material"] = 0;
  s.doc["materials"] = {{{"pbrMetallicRoughness",
                          {{"baseColorFactor", {1, 0.5, 1, 1}}, {"baseColorTexture", {{"index", 0}}}}}}};
  s.doc["textures"] = {{{"source", 0}, {"sampler", 0}}};
  s.doc["samplers"] = {{{"wrapS", 33071}, {"wrapT", 33648}}};
  s.doc["images"] = {{{"uri", image_uri}}};
  return s;
}

TEST(GltfTextures, DataUriExternalFileAndBufferView) {
  const std::string dir = test::tempDir("GltfTextures");
  std::vector<uint8_t> png = smallPng(dir);
  // URIs are URI-encoded (glTF 2.0, 3.1.5): "my%20tex%2B1.png" names the file "my tex+1.png".
  std::filesystem::copy_file(dir + "/tex.png", dir + "/my tex+1.png");
  for (const std::string& uri : {"data:image/png;base64," + test::encodeBase64(png), std::string("tex.png"),
                                 std::string("my%20tex%2B1.png")}) {
    SCOPED_TRACE(uri.substr(0, 20));
    GltfDocument doc = parseSample(texturedSample(uri), dir);
    const GltfPrimitive& p = doc.meshes[0].primitives[0];
    ASSERT_EQ(p.base_color_texture, 0);
    EXPECT_EQ(p.wrap_s, 33071);
    EXPECT_EQ(p.wrap_t, 33648);
    EXPECT_FLOAT_EQ(p.base_color[1], 0.5f);
    const GltfImage& img = doc.images[0];
    ASSERT_EQ(img.width, 3);
    ASSERT_EQ(img.height, 2);
    // Texel (2, 1): r = 1, g = 1, b = 0.2 -> 51, alpha 255; texel (1, 0): r = 0.5 -> 128.
    const uint8_t* t21 = &img.rgba[(1 * 3 + 2) * 4];
    EXPECT_EQ(t21[0], 255);
    EXPECT_EQ(t21[1], 255);
    EXPECT_EQ(t21[2], 51);
    EXPECT_EQ(t21[3], 255);
    EXPECT_EQ(img.rgba[(0 * 3 + 1) * 4], 128);
    EXPECT_TRUE(doc.warnings.empty());
  }
  // In a GLB bufferView (image after the sample's data), without a sampler: REPEAT.
  Sample s = texturedSample("unused");
  s.doc["textures"][0].erase("sampler");
  size_t at = s.bin.size();
  s.bin.insert(s.bin.end(), png.begin(), png.end());
  s.doc["bufferViews"].push_back({{"buffer", 0}, {"byteOffset", at}, {"byteLength", png.size()}});
  s.doc["buffers"][0]["byteLength"] = s.bin.size();
  s.doc["images"][0] = {{"bufferView", s.doc["bufferViews"].size() - 1}, {"mimeType", "image/png"}};
  GltfDocument doc = parseGltf(toGlb(s), "textured.glb", "");
  const GltfPrimitive& p = doc.meshes[0].primitives[0];
  ASSERT_EQ(p.base_color_texture, 0);
  EXPECT_EQ(p.wrap_s, 10497);
  EXPECT_EQ(doc.images[0].width, 3);
  EXPECT_EQ(doc.images[0].rgba[(1 * 3 + 2) * 4 + 2], 51);
}

// Expects a document (no error) whose primitive has no texture and a warning containing every fragment.
void expectTextureWarning(const Sample& s, std::initializer_list<const char*> fragments,
                          const std::string& dir = "") {
  GltfDocument doc = parseSample(s, dir);
  EXPECT_EQ(doc.meshes[0].primitives[0].base_color_texture, -1);
  EXPECT_FLOAT_EQ(doc.meshes[0].primitives[0].base_color[1], 0.5f);  // the factor still applies
  std::string all;
  for (const std::string& w : doc.warnings) all += w + "\n";
  for (const char* f : fragments)
    EXPECT_NE(all.find(f), std::string::npos) << "missing '" << f << "' in: " << all;
}

TEST(GltfTextures, UnusableTexturesAreWarnings) {
  const std::string dir = test::tempDir("GltfTextureWarnings");
  std::vector<uint8_t> png = smallPng(dir);
  expectTextureWarning(texturedSample("missing.png"), {"images[0]: external file 'missing.png' not found"},
                       dir);
  expectTextureWarning(texturedSample("tex.png"), {"images[0]: external file 'tex.png' not found"}, "");
  std::ofstream(dir + "/../outside.png", std::ios::binary)
      .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  expectTextureWarning(texturedSample("../outside.png"), {"images[0]", "outside.png"}, dir);
  expectTextureWarning(
      texturedSample("data:image/png;base64," + test::encodeBase64({1, 2, 3, 4, 5, 6, 7, 8})),
      {"images[0]: not a decodable PNG or JPEG image"});
  expectTextureWarning(texturedSample("data:image/webp;base64,UklGRg=="),
                       {"images[0]: data URI of media type 'image/webp' (only PNG and JPEG are decoded)"});
  std::vector<uint8_t> cut(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() / 2));
  expectTextureWarning(texturedSample("data:image/png;base64," + test::encodeBase64(cut)), {"images[0]:"});
  Sample s = texturedSample("tex.png");
  s.doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["texCoord"] = 1;
  expectTextureWarning(s, {"baseColorTexture: texCoord 1 is not supported (only TEXCOORD_0)"}, dir);
  s = texturedSample("tex.png");
  s.doc["textures"][0].erase("source");
  expectTextureWarning(s, {"textures[0]: no source image"}, dir);
}

TEST(GltfTextures, BadTextureIndicesAreErrors) {
  Sample s = texturedSample("tex.png");
  s.doc["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["index"] = 5;
  expectError(
      s, {"materials[0].pbrMetallicRoughness.baseColorTexture: texture index 5 out of range (1 textures)"});
  s = texturedSample("tex.png");
  s.doc["textures"][0]["source"] = 3;
  expectError(s, {"textures[0].source: image index 3 out of range (1 images)"});
  s = texturedSample("tex.png");
  s.doc["textures"][0]["sampler"] = 2;
  expectError(s, {"textures[0].sampler: sampler index 2 out of range"});
  s = texturedSample("tex.png");
  s.doc["samplers"][0]["wrapS"] = 7;
  expectError(s, {"samplers[0]", "wrap mode 7"});
}

// Truncated and corrupted GLBs holding a PNG texture: an sf::Error or a document, never a crash.
TEST(GltfTextures, CorruptedTexturedGlb) {
  const std::string dir = test::tempDir("GltfCorruptTexture");
  std::vector<uint8_t> png = smallPng(dir);
  Sample s = texturedSample("unused");
  size_t at = s.bin.size();
  s.bin.insert(s.bin.end(), png.begin(), png.end());
  s.doc["bufferViews"].push_back({{"buffer", 0}, {"byteOffset", at}, {"byteLength", png.size()}});
  s.doc["buffers"][0]["byteLength"] = s.bin.size();
  s.doc["images"][0] = {{"bufferView", s.doc["bufferViews"].size() - 1}, {"mimeType", "image/png"}};
  std::vector<uint8_t> glb = toGlb(s);
  ASSERT_EQ(parseGltf(glb, "ok.glb", "").images[0].width, 3);
  const size_t png_at = glb.size() - ((png.size() + 3) / 4 * 4);  // the PNG sits at the end of the BIN chunk
  uint64_t state = 777;
  for (int round = 0; round < 600; ++round) {
    std::vector<uint8_t> bad = glb;
    for (int k = 0; k < 1 + round % 3; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      size_t where = round % 2 ? png_at + static_cast<size_t>(state >> 33) % png.size()
                               : static_cast<size_t>(state >> 33) % bad.size();
      bad[where] = static_cast<uint8_t>(state >> 13);
    }
    try {
      parseGltf(bad, "corrupt.glb", "");
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace sf
