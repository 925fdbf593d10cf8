// KHR_gaussian_splatting: GLB round trips of random clouds (exact for float attributes) and of the real
// biker capture, the written layout, node transforms (positions, covariances and SH rotated), quantised
// attributes, every kind of bad splat primitive failing with a message naming the attribute, truncated and
// corrupted files never crashing, and `splatforge convert` to .glb.
#include "io/gltf_splats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/covariance.h"
#include "core/error.h"
#include "core/sh.h"
#include "io/formats.h"
#include "io/gltf.h"
#include "support/test_support.h"

namespace sf {
namespace {

using nlohmann::json;
using Bytes = std::vector<uint8_t>;
constexpr const char* kExt = "KHR_gaussian_splatting:";
// Most tests here examine the extension's values as stored, so they write and read without the turn between
// glTF's y-up frame and the PLY frame (GltfAxes::kRaw); the turn has tests of its own (GltfAxes*).
const FormatOptions kRawAxes{SpzAxes::kAuto, 4, GltfAxes::kRaw};

// A GLB split into its JSON and BIN chunk, and joined again.
struct Glb {
  json doc;
  Bytes bin;
};

Glb splitGlb(const Bytes& glb) {
  uint32_t json_len = 0, bin_len = 0;
  std::memcpy(&json_len, glb.data() + 12, 4);
  std::memcpy(&bin_len, glb.data() + 20 + json_len, 4);
  Glb g;
  g.doc = json::parse(glb.begin() + 20, glb.begin() + 20 + json_len);
  const auto bin = glb.begin() + 28 + json_len;
  g.bin.assign(bin, bin + bin_len);
  return g;
}

Bytes joinGlb(const Glb& g) {
  std::string text = g.doc.dump();
  while (text.size() % 4) text += ' ';
  Bytes bin = g.bin;
  while (bin.size() % 4) bin.push_back(0);
  Bytes out;
  auto u32 = [&](uint32_t v) {
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
  };
  out.insert(out.end(), {'g', 'l', 'T', 'F'});
  u32(2);
  u32(static_cast<uint32_t>(28 + text.size() + bin.size()));
  u32(static_cast<uint32_t>(text.size()));
  u32(0x4E4F534A);
  out.insert(out.end(), text.begin(), text.end());
  u32(static_cast<uint32_t>(bin.size()));
  u32(0x004E4942);
  out.insert(out.end(), bin.begin(), bin.end());
  return out;
}

// Index of the accessor of `attribute` in the first primitive.
size_t accessorOf(const Glb& g, const std::string& attribute) {
  return g.doc["meshes"][0]["primitives"][0]["attributes"][attribute].get<size_t>();
}

// Byte offset in the BIN chunk of element 0 of the accessor of `attribute`.
size_t dataOf(const Glb& g, const std::string& attribute) {
  const json& a = g.doc["accessors"][accessorOf(g, attribute)];
  return g.doc["bufferViews"][a["bufferView"].get<size_t>()]["byteOffset"].get<size_t>() +
         a.value("byteOffset", size_t{0});
}

// Appends data as a new bufferView + accessor and points `attribute` at it.
void replaceAttribute(Glb& g, const std::string& attribute, const Bytes& data, int component_type,
                      const char* type, bool normalized) {
  while (g.bin.size() % 4) g.bin.push_back(0);
  g.doc["bufferViews"].push_back({{"buffer", 0}, {"byteOffset", g.bin.size()}, {"byteLength", data.size()}});
  g.bin.insert(g.bin.end(), data.begin(), data.end());
  g.doc["buffers"][0]["byteLength"] = g.bin.size();
  json a = {{"bufferView", g.doc["bufferViews"].size() - 1},
            {"componentType", component_type},
            {"count", g.doc["accessors"][accessorOf(g, attribute)]["count"]},
            {"type", type}};
  if (normalized) a["normalized"] = true;
  g.doc["accessors"].push_back(a);
  g.doc["meshes"][0]["primitives"][0]["attributes"][attribute] = g.doc["accessors"].size() - 1;
}

void expectSameCloud(const GaussianCloud& want, const GaussianCloud& got) {
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.sh_degree, want.sh_degree);
  EXPECT_EQ(got.color_space, want.color_space);
  size_t bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    const Quat &a = want.rotations[i], &b = got.rotations[i];
    bool same = want.positions[i].x == got.positions[i].x && want.positions[i].y == got.positions[i].y &&
                want.positions[i].z == got.positions[i].z && want.scales[i].x == got.scales[i].x &&
                want.scales[i].y == got.scales[i].y && want.scales[i].z == got.scales[i].z && a.w == b.w &&
                a.x == b.x && a.y == b.y && a.z == b.z && want.opacities[i] == got.opacities[i];
    auto ws = want.shOf(i), gs = got.shOf(i);
    same = same && std::equal(ws.begin(), ws.end(), gs.begin());
    if (!same) ADD_FAILURE() << "splat " << i << " differs", ++bad;
  }
}

GaussianCloud decodeGlb(const Bytes& glb) {
  LoadedSplats l = decodeSplats(glb, "test.glb", kRawAxes);
  EXPECT_EQ(l.format, SplatFormat::kGltf);
  return std::move(l.cloud);
}

void expectDecodeError(const Glb& g, std::initializer_list<const char*> fragments) {
  try {
    decodeGlb(joinGlb(g));
    ADD_FAILURE() << "no error; expected " << *fragments.begin();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("test.glb: ", 0), 0u) << msg;
    for (const char* f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "missing '" << f << "' in: " << msg;
  }
}

Glb smallGlb(int degree = 1, size_t n = 5) {
  return splitGlb(encodeSplats(test::randomCloud(n, degree, 90), SplatFormat::kGltf, kRawAxes));
}

// ---- round trips ----

TEST(GltfSplats, RoundTripIsExactForEveryShDegree) {
  for (int degree = 0; degree <= 3; ++degree) {
    SCOPED_TRACE(degree);
    GaussianCloud c = test::randomCloud(257, degree, 100 + static_cast<uint32_t>(degree));
    if (degree == 2) c.color_space = ColorSpace::kLinear;
    expectSameCloud(c, decodeGlb(encodeSplats(c, SplatFormat::kGltf, kRawAxes)));
  }
}

TEST(GltfSplats, WrittenLayout) {
  GaussianCloud c = test::randomCloud(10, 2, 200);
  c.opacities[3] = 1;
  Bytes glb = encodeSplats(c, SplatFormat::kGltf, kRawAxes);
  ASSERT_EQ(glb.size() % 4, 0u);
  Glb g = splitGlb(glb);
  const json& d = g.doc;
  EXPECT_EQ(d["asset"]["version"], "2.0");
  EXPECT_EQ(d["extensionsUsed"], json::array({"KHR_gaussian_splatting"}));
  EXPECT_FALSE(d.contains("extensionsRequired"));
  const json& prim = d["meshes"][0]["primitives"][0];
  EXPECT_EQ(prim["mode"], 0);
  const json& ext = prim["extensions"]["KHR_gaussian_splatting"];
  EXPECT_EQ(ext["kernel"], "ellipse");
  EXPECT_EQ(ext["colorSpace"], "srgb_rec709_display");
  // POSITION, ROTATION, SCALE, OPACITY, 9 SH coefficients, COLOR_0.
  EXPECT_EQ(prim["attributes"].size(), 14u);
  for (int l = 0; l <= 2; ++l)
    for (int m = 0; m < 2 * l + 1; ++m)
      EXPECT_TRUE(prim["attributes"].contains(std::string(kExt) + "SH_DEGREE_" + std::to_string(l) +
                                              "_COEF_" + std::to_string(m)));
  EXPECT_FALSE(prim["attributes"].contains(std::string(kExt) + "SH_DEGREE_3_COEF_0"));
  const json& pos = d["accessors"][accessorOf(g, "POSITION")];
  EXPECT_EQ(pos["componentType"], 5126);
  EXPECT_EQ(pos["count"], 10);
  CloudBounds b = computeBounds(c);
  EXPECT_EQ(pos["min"][0].get<float>(), b.min.x);
  EXPECT_EQ(pos["max"][2].get<float>(), b.max.z);
  EXPECT_EQ(d["accessors"][accessorOf(g, std::string(kExt) + "ROTATION")]["type"], "VEC4");
  EXPECT_EQ(d["accessors"][accessorOf(g, std::string(kExt) + "OPACITY")]["type"], "SCALAR");
  // Rotation stored (x, y, z, w).
  float xyzw[4];
  std::memcpy(xyzw, g.bin.data() + dataOf(g, std::string(kExt) + "ROTATION") + 16 * 4, 16);
  EXPECT_EQ(xyzw[0], c.rotations[4].x);
  EXPECT_EQ(xyzw[3], c.rotations[4].w);
  // COLOR_0: linear fallback colour (sRGB-decoded 0.5 + C0 * DC), alpha = opacity.
  const json& col = d["accessors"][accessorOf(g, "COLOR_0")];
  EXPECT_EQ(col["componentType"], 5121);
  EXPECT_EQ(col["normalized"], true);
  GltfDocument doc = parseGltf(glb, "w.glb", "");
  const GltfPrimitive& p = doc.meshes[0].primitives[0];
  ASSERT_EQ(p.colors0.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    float srgb = std::clamp(shDcToColor(c.shOf(i)[1]), 0.0f, 1.0f);
    float lin = srgb <= 0.04045f ? srgb / 12.92f : std::pow((srgb + 0.055f) / 1.055f, 2.4f);
    EXPECT_NEAR(p.colors0[i][1], lin, 0.5f / 255.0f + 1e-6f);
    EXPECT_NEAR(p.colors0[i][3], c.opacities[i], 0.5f / 255.0f + 1e-6f);
  }
  EXPECT_EQ(p.colors0[3][3], 1.0f);
  EXPECT_TRUE(p.has_splats);
  EXPECT_EQ(p.splats.kernel, "ellipse");
  EXPECT_EQ(p.splats.projection, "perspective");
  EXPECT_TRUE(doc.warnings.empty());
}

TEST(GltfSplats, GlbExtensionChoosesTheFormat) {
  EXPECT_EQ(writeFormatForPath("a/b.glb"), SplatFormat::kGltf);
  EXPECT_EQ(writeFormatForPath("B.GLB"), SplatFormat::kGltf);
  EXPECT_THROW(writeFormatForPath("x.gltf"), Error);
  EXPECT_THROW(encodeSplats(GaussianCloud{}, SplatFormat::kGltf, kRawAxes), Error);
  const std::string dir = test::tempDir("GltfSplatsSave");
  GaussianCloud c = test::randomCloud(40, 3, 300);
  saveSplats(c, dir + "/c.glb");
  LoadedSplats l = loadSplats(dir + "/c.glb");
  EXPECT_EQ(l.format, SplatFormat::kGltf);
  EXPECT_STREQ(formatName(l.format), "gltf");
  expectSameCloud(c, l.cloud);
}

// A .gltf (JSON) with its buffer in an external file beside it.
TEST(GltfSplats, GltfJsonWithExternalBuffer) {
  const std::string dir = test::tempDir("GltfSplatsJson");
  GaussianCloud c = test::randomCloud(20, 1, 310);
  Glb g = splitGlb(encodeSplats(c, SplatFormat::kGltf, kRawAxes));
  g.doc["buffers"][0]["uri"] = "splats.bin";
  std::ofstream(dir + "/splats.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(g.bin.data()), static_cast<std::streamsize>(g.bin.size()));
  std::ofstream(dir + "/splats.gltf") << g.doc.dump();
  expectSameCloud(c, loadSplats(dir + "/splats.gltf", kRawAxes).cloud);
}

TEST(GltfSplats, BikerPlyToGlbAndBack) {
  SF_REQUIRE_ASSET(ply, "splats/biker.ply");
  GaussianCloud c = loadSplats(ply).cloud;
  ASSERT_EQ(c.size(), 152746u);
  const std::string out = test::tempDir("GltfSplatsBiker") + "/biker.glb";
  saveSplats(c, out);
  LoadedSplats l = loadSplats(out);
  EXPECT_EQ(l.format, SplatFormat::kGltf);
  expectSameCloud(c, l.cloud);
}

// ---- the scene: nodes, transforms, instances ----

TEST(GltfSplats, NodeTransformsMoveRotateScaleAndRotateSh) {
  GaussianCloud c = test::randomCloud(30, 3, 400);
  Glb g = splitGlb(encodeSplats(c, SplatFormat::kGltf, kRawAxes));
  const float h = std::sqrt(0.5f);
  // Parent: translation; child (the mesh node): 90 degrees about z and uniform scale 2.
  g.doc["nodes"] = {{{"children", {1}}, {"translation", {1, 2, 3}}},
                    {{"mesh", 0}, {"rotation", {0, 0, h, h}}, {"scale", {2, 2, 2}}}};
  GaussianCloud w = decodeGlb(joinGlb(g));
  ASSERT_EQ(w.size(), c.size());
  const Mat3 r = rotationMatrix(Quat{h, 0, 0, h});
  const Mat3 l = r * Mat3::diagonal({2, 2, 2});
  for (size_t i = 0; i < c.size(); ++i) {
    Vec3 want = l * c.positions[i] + Vec3{1, 2, 3};
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(w.positions[i][k], want[k], 1e-5f);
    Mat3 sigma = covarianceMatrix(covarianceFromScaleRotation(c.scales[i], c.rotations[i]));
    Cov6 want_cov = covarianceUpper(l * sigma * transpose(l));
    Cov6 got_cov = covarianceFromScaleRotation(w.scales[i], w.rotations[i]);
    for (size_t k = 0; k < 6; ++k) EXPECT_NEAR(got_cov[k], want_cov[k], 1e-5f);
    EXPECT_NEAR(w.scales[i].x, 2 * c.scales[i].x, 1e-6f);
    // View-dependent colour: the world direction d sees what the original saw along R^T d.
    for (Vec3 d : {Vec3{1, 0, 0}, Vec3{0.3f, -0.5f, 0.8f}, Vec3{-0.6f, 0.7f, 0.1f}}) {
      d = normalize(d);
      Vec3 got = evalSh(3, w.shOf(i).data(), d), ref = evalSh(3, c.shOf(i).data(), transpose(r) * d);
      for (int k = 0; k < 3; ++k) EXPECT_NEAR(got[k], ref[k], 2e-5f);
    }
    EXPECT_EQ(w.opacities[i], c.opacities[i]);
  }
}

TEST(GltfSplats, NonUniformScaleBakesTheCovariance) {
  GaussianCloud c = test::randomCloud(20, 0, 410);
  Glb g = splitGlb(encodeSplats(c, SplatFormat::kGltf, kRawAxes));
  g.doc["nodes"][0]["scale"] = {1, 2, 3};
  g.doc["nodes"][0]["rotation"] = {0.5, 0.5, 0.5, 0.5};
  GaussianCloud w = decodeGlb(joinGlb(g));
  const Mat3 l = rotationMatrix(Quat{0.5f, 0.5f, 0.5f, 0.5f}) * Mat3::diagonal({1, 2, 3});
  for (size_t i = 0; i < c.size(); ++i) {
    Mat3 sigma = covarianceMatrix(covarianceFromScaleRotation(c.scales[i], c.rotations[i]));
    Cov6 want = covarianceUpper(l * sigma * transpose(l));
    Cov6 got = covarianceFromScaleRotation(w.scales[i], w.rotations[i]);
    for (size_t k = 0; k < 6; ++k) EXPECT_NEAR(got[k], want[k], 1e-5f * (1 + std::abs(want[k])));
  }
  g.doc["nodes"][0]["scale"] = {-1, 1, 1};
  expectDecodeError(g, {"nodes[0] (meshes[0].primitives[0])", "mirrors"});
  g.doc["nodes"][0]["scale"] = {0, 1, 1};
  expectDecodeError(g, {"nodes[0]", "zero scale"});
}

TEST(GltfSplats, InstancesOfTheDefaultScene) {
  GaussianCloud c = test::randomCloud(7, 1, 420);
  Glb g = splitGlb(encodeSplats(c, SplatFormat::kGltf, kRawAxes));
  g.doc["nodes"] = {{{"mesh", 0}}, {{"mesh", 0}, {"translation", {5, 0, 0}}}, {{"mesh", 0}}};
  g.doc["scenes"] = {{{"nodes", {0, 1}}}, {{"nodes", {2}}}};
  GltfDocument doc = parseGltf(joinGlb(g), "two.glb", "");
  std::vector<GltfSplatInstance> inst = gltfSplatInstances(doc);
  ASSERT_EQ(inst.size(), 2u);
  EXPECT_EQ(inst[0].node, 0);
  EXPECT_EQ(inst[1].node, 1);
  EXPECT_EQ(inst[1].cloud.positions[3].x, c.positions[3].x + 5);
  GaussianCloud merged = gltfSplatCloud(doc);
  ASSERT_EQ(merged.size(), 14u);
  EXPECT_EQ(merged.positions[7 + 2].y, c.positions[2].y);
  g.doc["scene"] = 1;
  EXPECT_EQ(decodeGlb(joinGlb(g)).size(), 7u);
}

// ---- quantised attributes ----

TEST(GltfSplats, QuantisedRotationScaleAndOpacity) {
  GaussianCloud c = test::randomCloud(16, 0, 500);
  Glb g = splitGlb(encodeSplats(c, SplatFormat::kGltf, kRawAxes));
  Bytes rot, scale, opacity;
  for (size_t i = 0; i < c.size(); ++i) {
    const Quat& q = c.rotations[i];
    for (float v : {q.x, q.y, q.z, q.w}) {
      int16_t s = static_cast<int16_t>(std::lround(v * 32767.0f));
      rot.push_back(static_cast<uint8_t>(s & 0xff));
      rot.push_back(static_cast<uint8_t>((s >> 8) & 0xff));
    }
    for (int k = 0; k < 3; ++k) scale.push_back(static_cast<uint8_t>(std::lround(c.scales[i][k] * 255.0f)));
    opacity.push_back(static_cast<uint8_t>(std::lround(c.opacities[i] * 255.0f)));
  }
  replaceAttribute(g, std::string(kExt) + "ROTATION", rot, 5122, "VEC4", true);
  replaceAttribute(g, std::string(kExt) + "SCALE", scale, 5121, "VEC3", true);
  replaceAttribute(g, std::string(kExt) + "OPACITY", opacity, 5121, "SCALAR", true);
  GaussianCloud w = decodeGlb(joinGlb(g));
  for (size_t i = 0; i < c.size(); ++i) {
    const Quat &a = c.rotations[i], &b = w.rotations[i];
    EXPECT_NEAR(std::abs(a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z), 1.0f, 1e-6f);
    EXPECT_NEAR(b.w * b.w + b.x * b.x + b.y * b.y + b.z * b.z, 1.0f, 1e-6f);
    EXPECT_NEAR(w.scales[i].y, c.scales[i].y, 0.5f / 255.0f + 1e-6f);
    EXPECT_NEAR(w.opacities[i], c.opacities[i], 0.5f / 255.0f + 1e-6f);
  }
  // Integer rotations and opacities must be normalized.
  g.doc["accessors"][accessorOf(g, std::string(kExt) + "OPACITY")].erase("normalized");
  expectDecodeError(
      g, {"attributes.KHR_gaussian_splatting:OPACITY: accessors[", "UNSIGNED_BYTE must be normalized"});
}

// ---- bad input ----

TEST(GltfSplats, WrongAccessorTypeNamesTheAttribute) {
  Glb g = smallGlb();
  g.doc["accessors"][accessorOf(g, std::string(kExt) + "ROTATION")]["type"] = "VEC3";
  expectDecodeError(
      g, {"meshes[0].primitives[0].attributes.KHR_gaussian_splatting:ROTATION: accessors[1]: type VEC3, "
          "expected VEC4"});
  g = smallGlb();
  g.doc["accessors"][accessorOf(g, std::string(kExt) + "SCALE")]["componentType"] = 5120;  // BYTE
  expectDecodeError(
      g, {"attributes.KHR_gaussian_splatting:SCALE: accessors[2]: componentType BYTE, expected one of "
          "FLOAT, UNSIGNED_BYTE, UNSIGNED_SHORT"});
  g = smallGlb();
  g.doc["accessors"][accessorOf(g, std::string(kExt) + "SH_DEGREE_1_COEF_2")]["componentType"] = 5123;
  expectDecodeError(g,
                    {"attributes.KHR_gaussian_splatting:SH_DEGREE_1_COEF_2", "componentType UNSIGNED_SHORT"});
}

TEST(GltfSplats, BadPrimitives) {
  auto prim = [](Glb& g) -> json& { return g.doc["meshes"][0]["primitives"][0]; };
  Glb g = smallGlb();
  prim(g)["attributes"].erase(std::string(kExt) + "OPACITY");
  expectDecodeError(
      g, {"meshes[0].primitives[0].attributes: KHR_gaussian_splatting:OPACITY is missing (it is required)"});
  g = smallGlb();
  prim(g)["attributes"].erase(std::string(kExt) + "SH_DEGREE_0_COEF_0");
  expectDecodeError(g, {"SH_DEGREE_0_COEF_0 is missing"});
  g = smallGlb();
  prim(g)["attributes"].erase(std::string(kExt) + "SH_DEGREE_1_COEF_1");
  expectDecodeError(
      g, {"SH degree 1 is partially defined: KHR_gaussian_splatting:SH_DEGREE_1_COEF_1 is missing"});
  g = smallGlb(1);
  prim(g)["attributes"][std::string(kExt) + "SH_DEGREE_2_COEF_0"] = 0;
  expectDecodeError(g, {"SH degree 2 is partially defined"});
  g = smallGlb();
  prim(g)["mode"] = 4;
  expectDecodeError(g, {"meshes[0].primitives[0].mode: KHR_gaussian_splatting needs mode POINTS (0), got 4"});
  g = smallGlb();
  prim(g)["extensions"]["KHR_gaussian_splatting"].erase("kernel");
  expectDecodeError(g, {"extensions.KHR_gaussian_splatting: kernel is missing"});
  g = smallGlb();
  g.doc["accessors"][accessorOf(g, std::string(kExt) + "OPACITY")]["count"] = 4;
  expectDecodeError(g, {"attributes.KHR_gaussian_splatting:OPACITY: count 4 differs from POSITION's 5"});
  // Values: negative (log-space) scales, opacity outside [0, 1], a zero quaternion, NaN.
  g = smallGlb();
  float v = -3.2f;
  std::memcpy(&g.bin[dataOf(g, std::string(kExt) + "SCALE") + 12 * 2 + 4], &v, 4);
  expectDecodeError(g, {"attributes.KHR_gaussian_splatting:SCALE: negative scale at splat 2", "log-scales"});
  g = smallGlb();
  v = 1.5f;
  std::memcpy(&g.bin[dataOf(g, std::string(kExt) + "OPACITY") + 4 * 3], &v, 4);
  expectDecodeError(
      g, {"attributes.KHR_gaussian_splatting:OPACITY: value 1.500000 at splat 3 is outside [0, 1]"});
  g = smallGlb();
  std::memset(&g.bin[dataOf(g, std::string(kExt) + "ROTATION") + 16], 0, 16);
  expectDecodeError(g, {"attributes.KHR_gaussian_splatting:ROTATION: zero quaternion at splat 1"});
  g = smallGlb();
  v = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&g.bin[dataOf(g, std::string(kExt) + "SH_DEGREE_1_COEF_0") + 4], &v, 4);
  expectDecodeError(g, {"attributes.KHR_gaussian_splatting:SH_DEGREE_1_COEF_0", "element 0 is not finite"});
}

TEST(GltfSplats, LenientExtensionProperties) {
  Glb g = smallGlb();
  json& ext = g.doc["meshes"][0]["primitives"][0]["extensions"]["KHR_gaussian_splatting"];
  ext["colorSpace"] = "lin_rec709_display";
  ext["sortingMethod"] = "somethingNew";
  g.doc["extensionsRequired"] = {"KHR_gaussian_splatting"};
  g.doc["meshes"][0]["primitives"][0]["attributes"][std::string(kExt) + "FUTURE"] = 0;
  LoadedSplats l = decodeSplats(joinGlb(g), "test.glb", kRawAxes);
  EXPECT_EQ(l.cloud.color_space, ColorSpace::kLinear);
  std::string all;
  for (const std::string& w : l.warnings) all += w + "\n";
  EXPECT_NE(all.find("sortingMethod: 'somethingNew' is not supported"), std::string::npos) << all;
  EXPECT_NE(all.find("attributes.KHR_gaussian_splatting:FUTURE: not defined by the extension; ignored"),
            std::string::npos)
      << all;
}

TEST(GltfSplats, NoSplatPrimitive) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  try {
    loadSplats(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": contains no KHR_gaussian_splatting primitive");
  }
  Glb g = smallGlb();
  g.doc["nodes"][0].erase("mesh");
  expectDecodeError(g, {"no node of the scene instances a KHR_gaussian_splatting primitive"});
}

// Every truncated prefix and many corruptions of a small splat GLB: an sf::Error or a cloud, never a crash.
TEST(GltfSplats, TruncatedAndCorruptedGlb) {
  Bytes glb = encodeSplats(test::randomCloud(3, 1, 600), SplatFormat::kGltf, kRawAxes);
  for (size_t n = 0; n < glb.size(); ++n)
    EXPECT_THROW(decodeSplats(std::span<const uint8_t>(glb.data(), n), "cut.glb"), Error) << n;
  uint64_t state = 4242;
  for (int round = 0; round < 3000; ++round) {
    Bytes bad = glb;
    for (int k = 0; k < 1 + round % 3; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      bad[static_cast<size_t>(state >> 33) % bad.size()] = static_cast<uint8_t>(state >> 13);
    }
    try {
      decodeSplats(bad, "corrupt.glb");
    } catch (const Error&) {
    }
  }
}

// ---- the command line ----

TEST(GltfSplats, ConvertCommandWritesGlb) {
  SF_REQUIRE_ASSET(ply, "splats/biker.ply");
  if (!std::filesystem::exists(SPLATFORGE_BINARY))
    SF_SKIP_OR_FAIL("splatforge is not built (" << SPLATFORGE_BINARY << ")");
  const std::string out = test::tempDir("GltfSplatsConvert") + "/biker.glb";
  std::string log;
  ASSERT_EQ(test::runCli("convert \"" + ply + "\" \"" + out + "\"", &log), 0) << log;
  EXPECT_NE(log.find("152746 gaussians"), std::string::npos) << log;
  expectSameCloud(loadSplats(ply).cloud, loadSplats(out).cloud);
  // And back to PLY from the GLB.
  ASSERT_EQ(test::runCli("convert \"" + out + "\" \"" + out + ".ply\"", &log), 0) << log;
  EXPECT_EQ(loadSplats(out + ".ply").cloud.size(), 152746u);
}

// ---- axes: glTF's y-up frame <-> the PLY frame ----

// The writer turns the PLY frame (y down, z forward) into glTF's (y up, z forward, x left): the accessors
// hold (-x, -y, z), quaternions (w, -x, -y, z), scales unchanged, and SH coefficients such that the colour
// seen along the turned direction is the original's.
TEST(GltfSplats, GltfAxesWriteTheYUpFrame) {
  GaussianCloud c = test::randomCloud(25, 3, 700);
  GaussianCloud stored = decodeGlb(encodeSplats(c, SplatFormat::kGltf, FormatOptions{}));  // read back raw
  ASSERT_EQ(stored.size(), c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(stored.positions[i].x, -c.positions[i].x);
    EXPECT_EQ(stored.positions[i].y, -c.positions[i].y);
    EXPECT_EQ(stored.positions[i].z, c.positions[i].z);
    EXPECT_EQ(stored.scales[i].x, c.scales[i].x);
    const Quat &a = stored.rotations[i], &b = c.rotations[i];
    EXPECT_NEAR(std::abs(a.w * b.w - a.x * b.x - a.y * b.y + a.z * b.z), 1.0f, 1e-6f);
    for (Vec3 d : {normalize(Vec3{0.2f, 0.7f, -0.3f}), normalize(Vec3{-0.8f, 0.1f, 0.5f})}) {
      const Vec3 got = evalSh(3, stored.shOf(i).data(), Vec3{-d.x, -d.y, d.z}),
                 want = evalSh(3, c.shOf(i).data(), d);
      for (int k = 0; k < 3; ++k) EXPECT_NEAR(got[k], want[k], 2e-5f);
    }
  }
  // Read with the default axes, the file is the original cloud again (the turn is its own inverse).
  expectSameCloud(c, decodeSplats(encodeSplats(c, SplatFormat::kGltf), "turned.glb").cloud);
  // The old behaviour on request: values as stored both ways.
  expectSameCloud(c, decodeGlb(encodeSplats(c, SplatFormat::kGltf, kRawAxes)));
  EXPECT_EQ(parseGltfAxes("raw"), GltfAxes::kRaw);
  EXPECT_THROW(parseGltfAxes("y-up"), Error);
}

}  // namespace
}  // namespace sf
