// Camera and scene JSON: both camera forms, error messages that name the file and the JSON path,
// object transforms, placeholders for assets that fail to load, and automatic framing.
#include "scene/scene.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/formats.h"
#include "render/cpu_renderer.h"
#include "support/test_support.h"

namespace sf {
namespace {

using test::errorOf;

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(CameraJson, IntrinsicsForm) {
  Camera c = parseCameraJson(R"({"width": 640, "height": 480, "fx": 500, "fy": 510, "cx": 320, "cy": 240,
      "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,5, 0,0,0,1]})",
                             "cam.json");
  EXPECT_EQ(c.width, 640);
  EXPECT_FLOAT_EQ(c.fy, 510);
  Vec3 p = c.position();
  EXPECT_FLOAT_EQ(p.z, -5);
}

TEST(CameraJson, SizeOverrideScalesIntrinsics) {
  Camera c = parseCameraJson(R"({"width": 640, "height": 480, "fx": 500, "fy": 500, "cx": 320, "cy": 240,
      "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]})",
                             "cam.json", 320, 240);
  EXPECT_EQ(c.width, 320);
  EXPECT_FLOAT_EQ(c.fx, 250);
  EXPECT_FLOAT_EQ(c.cx, 160);
}

TEST(CameraJson, LookAtFormPointsAtTarget) {
  Camera c = parseCameraJson(R"({"eye": [0, 0, 5], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 60,
      "width": 200, "height": 100})",
                             "cam.json");
  // The target projects to the image centre; a point above it (+y world) projects above (smaller v).
  Vec3 t = transformPoint(c.world_to_camera, {0, 0, 0});
  EXPECT_NEAR(t.x, 0, 1e-6);
  EXPECT_NEAR(t.z, 5, 1e-6);
  Vec3 up = transformPoint(c.world_to_camera, {0, 1, 0});
  EXPECT_LT(up.y, 0);
  EXPECT_NEAR(c.fy, 50.0f / std::tan(30.0f * 3.14159265f / 180.0f), 1e-3);
}

TEST(CameraJson, ErrorsNameFileAndJsonPath) {
  EXPECT_NE(errorOf([] {
              parseCameraJson(R"({"width": 64, "height": 64, "fy": 1, "cx": 1, "cy": 1,
      "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]})",
                              "c.json");
            }).find("c.json: (root): missing key \"fx\""),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseCameraJson(R"({"width": 64, "height": 64, "fx": 1, "fy": 1, "cx": 1, "cy": 1,
      "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,0]})",
                              "c.json");
            }).find("world_to_camera: expected 16 numbers, got 12"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseCameraJson(R"({"eye": [0,0,1], "target": [0,0,0], "up": [0,0,1], "fov_y_deg": 40,
      "width": 8, "height": 8})",
                              "c.json");
            }).find("up: up is parallel"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseCameraJson(R"({"eye": [0,0,1], "target": [0,0,0], "fov_y_deg": "wide",
      "width": 8, "height": 8})",
                              "c.json");
            }).find("fov_y_deg: expected a number, got string"),
            std::string::npos);
  EXPECT_NE(errorOf([] { parseCameraJson(R"({"width": 64, "height": -3})", "c.json"); }).find("c.json"),
            std::string::npos);
  std::string malformed = errorOf([] { parseCameraJson("{\"width\": 64,\n \"height\": }", "c.json"); });
  EXPECT_NE(malformed.find("c.json: byte "), std::string::npos) << malformed;
  EXPECT_NE(malformed.find("malformed JSON"), std::string::npos) << malformed;
}

TEST(CameraJson, RejectsNonRigidWorldToCamera) {
  std::string e = errorOf([] {
    parseCameraJson(R"({"width": 64, "height": 64, "fx": 1, "fy": 1, "cx": 1, "cy": 1,
      "world_to_camera": [2,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]})",
                    "c.json");
  });
  EXPECT_NE(e.find("not orthonormal"), std::string::npos) << e;
}

TEST(SceneJson, LoadsObjectsWithTransformsAndCamera) {
  std::string dir = test::tempDir("SceneJsonLoads");
  GaussianCloud c = test::randomCloud(50, 1, 4);
  saveSplats(c, dir + "/a.ply");
  writeText(dir + "/scene.json", R"({
    "objects": [
      {"name": "left", "file": "a.ply", "transform": {"translation": [-1, 0, 0], "rotation": [1, 0, 0, 0], "scale": 2}},
      {"file": "a.ply", "transform": [1,0,0,1, 0,1,0,0, 0,0,1,0, 0,0,0,1]}
    ],
    "camera": {"eye": [0, 0, -5], "target": [0, 0, 0], "up": [0, -1, 0], "fov_y_deg": 50, "width": 64, "height": 48},
    "background": [0.5, 0.5, 0.5],
    "blend_space": "linear"
  })");
  Scene s = loadSceneJson(dir + "/scene.json");
  ASSERT_EQ(s.objects.size(), 2u);
  EXPECT_EQ(s.blend_space, BlendSpace::kLinear);
  EXPECT_EQ(s.objects[0].name, "left");
  EXPECT_EQ(s.objects[1].name, "a");
  EXPECT_FLOAT_EQ(s.objects[0].object_to_world.m[0][0], 2);
  EXPECT_FLOAT_EQ(s.objects[0].object_to_world.m[0][3], -1);
  EXPECT_FLOAT_EQ(s.objects[1].object_to_world.m[0][3], 1);
  ASSERT_TRUE(s.camera.has_value());
  EXPECT_EQ(s.camera->width, 64);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(SceneJson, MissingAssetBecomesPlaceholderWithWarning) {
  std::string dir = test::tempDir("SceneJsonPlaceholder");
  writeText(dir + "/scene.json", R"({"objects": [{"name": "ghost", "file": "missing.spz"}]})");
  Scene s = loadSceneJson(dir + "/scene.json");
  ASSERT_EQ(s.objects.size(), 1u);
  EXPECT_EQ(s.objects[0].source, "placeholder");
  EXPECT_GT(s.objects[0].cloud->size(), 0u);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("objects[0] (ghost)"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[0].find("missing.spz"), std::string::npos) << s.warnings[0];
  // The placeholder is visible, not a black frame.
  Camera cam = autoCamera(s, 64, 64);
  std::vector<RenderObject> objs = s.renderObjects();
  RenderStats st;
  ImageRGBA img = renderCpu(objs, cam, {}, &st);
  EXPECT_GT(st.visible, 100u);
  SceneLoadOptions strict;
  strict.strict = true;
  EXPECT_THROW(loadSceneJson(dir + "/scene.json", strict), Error);
}

TEST(SceneJson, ErrorsNameJsonPath) {
  std::string dir = test::tempDir("SceneJsonErrors");
  writeText(dir + "/s1.json", R"({"objects": []})");
  EXPECT_NE(errorOf([&] { loadSceneJson(dir + "/s1.json"); }).find("objects: expected a non-empty array"),
            std::string::npos);
  writeText(dir + "/s2.json", R"({"objects": [{"file": "a.ply", "transform": [1, 2, 3]}]})");
  EXPECT_NE(errorOf([&] {
              loadSceneJson(dir + "/s2.json");
            }).find("objects[0].transform: expected 16 numbers, got 3"),
            std::string::npos);
  writeText(dir + "/s3.json", R"({"objects": [{"name": 3}]})");
  EXPECT_NE(errorOf([&] {
              loadSceneJson(dir + "/s3.json");
            }).find("objects[0]: an object has exactly one of \"file\""),
            std::string::npos);
  writeText(dir + "/s4.json", R"({"objects": [{"file": "a.ply", "gltf": "b.glb"}]})");
  EXPECT_NE(
      errorOf([&] { loadSceneJson(dir + "/s4.json"); }).find("objects[0]: an object has exactly one of"),
      std::string::npos);
  writeText(dir + "/s_skin1.json", R"({"objects": [{"gltf": "b.glb", "skinning": "quat"}]})");
  EXPECT_NE(errorOf([&] {
              loadSceneJson(dir + "/s_skin1.json");
            }).find("objects[0].skinning: expected \"lbs\" (linear blend) or \"dqs\""),
            std::string::npos);
  writeText(dir + "/s_skin2.json", R"({"objects": [{"file": "a.ply", "skinning": "dqs"}]})");
  EXPECT_NE(errorOf([&] {
              loadSceneJson(dir + "/s_skin2.json");
            }).find("objects[0].skinning: \"skinning\" applies to glTF and character objects only"),
            std::string::npos);
  writeText(dir + "/s5.json", R"({"objects": [{"file": "a.ply", "clip": "Walk"}]})");
  EXPECT_NE(errorOf([&] {
              loadSceneJson(dir + "/s5.json");
            }).find("objects[0].clip: \"clip\" applies to glTF and character objects only"),
            std::string::npos);
  writeText(dir + "/s6.json", R"({"objects": [], "script": [{"command": "spawn-character", "id": "a"}]})");
  EXPECT_NE(errorOf([&] { loadSceneJson(dir + "/s6.json"); }).find("script[0]: missing key \"package\""),
            std::string::npos);
  writeText(dir + "/s_blend.json", R"({"objects": [{"file": "a.ply"}], "blend_space": "gamma"})");
  EXPECT_NE(errorOf([&] {
              loadSceneJson(dir + "/s_blend.json");
            }).find("blend_space: expected \"display\" or \"linear\""),
            std::string::npos);
  writeText(dir + "/s7.json", R"({"script": [{"command": "look-at", "id": "a", "target": [1, 2]}]})");
  EXPECT_NE(
      errorOf([&] { loadSceneJson(dir + "/s7.json"); }).find("script[0].target: expected 3 numbers, got 2"),
      std::string::npos);
}

TEST(AutoCamera, FramesThePercentileBox) {
  Scene s;
  SceneObject o;
  auto cloud = std::make_shared<GaussianCloud>(test::randomCloud(1000, 0, 8));
  o.cloud = cloud;
  o.object_to_world = Mat4::fromLinearTranslation(Mat3{}, {10, -3, 7});
  s.objects.push_back(o);
  Camera cam = autoCamera(s, 160, 90);
  CloudBounds b = sceneBounds(s);
  for (int corner = 0; corner < 8; ++corner) {
    Vec3 p{corner & 1 ? b.p99.x : b.p01.x, corner & 2 ? b.p99.y : b.p01.y, corner & 4 ? b.p99.z : b.p01.z};
    Vec3 v = transformPoint(cam.world_to_camera, p);
    ASSERT_GT(v.z, 0.2f);
    float u = cam.fx * v.x / v.z + cam.cx, w = cam.fy * v.y / v.z + cam.cy;
    EXPECT_GE(u, 0);
    EXPECT_LE(u, 160);
    EXPECT_GE(w, 0);
    EXPECT_LE(w, 90);
  }
}

}  // namespace
}  // namespace sf
