// The scene document (scene/scene_doc.h): what a scene JSON states, read without loading files, the same as
// the scene loader reads it (one parser: its messages are the loader's); paths confined by their text as the
// web page confines them; the web page's refusals, which name the object and its kind.
#include "scene/scene_doc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/formats.h"
#include "scene/scene.h"
#include "support/test_support.h"

namespace sf {
namespace {

using test::errorOf;

SceneDocOptions byText() {
  SceneDocOptions o;
  o.on_file_system = false;
  return o;
}

TEST(SceneDocument, ReadsObjectsCameraAndBackgroundWithoutFiles) {
  const SceneDocument doc = parseSceneDocument(R"({
    "objects": [
      {"file": "captures/biker.spz"},
      {"name": "copy", "file": "sub/../biker.ply", "transform": {"translation": [1, 2, 3], "rotation": [0, 0, 1, 0], "scale": 2}},
      {"gltf": "walker.glb", "clip": "Walk"},
      {"hull": "ship.spl2", "heading": 90}
    ],
    "camera": {"eye": [0, 0, 5], "target": [0, 0, 0], "fov_y_deg": 60, "width": 200, "height": 100},
    "background": [0.1, 0.2, 0.3],
    "blend_space": "display"
  })",
                                               "scenes/a.json", byText());
  ASSERT_EQ(doc.objects.size(), 4u);
  EXPECT_EQ(doc.path, "scenes/a.json");
  EXPECT_EQ(doc.objects[0].name, "biker");
  EXPECT_EQ(doc.objects[0].where, "objects[0]");
  EXPECT_EQ(doc.objects[0].key, SceneObjectKey::kFile);
  EXPECT_EQ(doc.objects[0].resolved, "scenes/captures/biker.spz");
  EXPECT_TRUE(doc.objects[0].refusal.empty());
  EXPECT_EQ(doc.objectContext(1), "scenes/a.json: objects[1] (copy)");
  // T R S: a half turn about y, then twice the size, then the translation.
  const Vec3 p = transformPoint(doc.objects[1].object_to_world, Vec3{1, 0, 0});
  EXPECT_NEAR(p.x, -1, 1e-5);
  EXPECT_NEAR(p.y, 2, 1e-5);
  EXPECT_NEAR(p.z, 3, 1e-5);
  EXPECT_EQ(doc.objects[2].key, SceneObjectKey::kGltf);
  EXPECT_TRUE(doc.objects[2].gltfByName());
  EXPECT_EQ(doc.objects[3].key, SceneObjectKey::kHull);
  ASSERT_TRUE(doc.camera.has_value());
  EXPECT_EQ(doc.camera->width, 200);
  ASSERT_TRUE(doc.background.has_value());
  EXPECT_FLOAT_EQ(doc.background->z, 0.3f);
  EXPECT_EQ(doc.blend_space, "display");
  EXPECT_FALSE(doc.script);
  // The camera at another size, as render --width --height takes it.
  SceneDocOptions sized = byText();
  sized.width = 400, sized.height = 200;
  const SceneDocument resized = parseSceneDocument(R"({"objects": [{"file": "a.ply"}],
    "camera": {"width": 100, "height": 50, "fx": 80, "fy": 80, "cx": 50, "cy": 25, "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]}})",
                                                   "a.json", sized);
  EXPECT_FLOAT_EQ(resized.camera->fx, 320);
  EXPECT_FLOAT_EQ(resized.camera->cy, 100);
}

// The document's messages are the scene loader's, word for word (one parser).
TEST(SceneDocument, ErrorsAreTheSceneLoaders) {
  const std::string dir = test::tempDir("SceneDocErrors");
  const char* scenes[] = {
      R"({"objects": []})",
      R"({"objects": [{"file": "a.ply", "transform": [1, 2, 3]}]})",
      R"({"objects": [{"file": "a.ply", "gltf": "b.glb"}]})",
      R"({"objects": [{"file": "a.ply", "heading": 10}]})",
      R"({"objects": [{"file": "a.ply", "transform": {"scale": [1, 0, 1]}}]})",
      R"({"objects": [{"file": "a.ply"}], "camera": {"eye": [0, 0, 1], "target": [0, 0, 1], "fov_y_deg": 40}})",
      R"({"objects": [{"file": "a.ply"}], "background": [1, 2]})",
      R"({"objects": [{"file": "a.ply"}], "blend_space": "gamma"})",
      R"({"objects": [{"file": 7}]})",
      "{\"objects\": [",
  };
  for (const char* text : scenes) {
    const std::string path = dir + "/s.json";
    std::ofstream(path) << text;
    const std::string loader = errorOf([&] { loadSceneJson(path); });
    const std::string document = errorOf([&] { parseSceneDocument(text, path); });
    EXPECT_NE(loader, "(no error)") << text;
    EXPECT_EQ(document, loader) << text;
    EXPECT_EQ(document.rfind(path + ": ", 0), 0u) << document;
  }
}

// By their text (the web page, whose files are URLs): an absolute path or a ".." leading out is refused in
// the words the file system rule uses; a ".." that stays inside is taken.
TEST(SceneDocument, PathsConfinedByTheirText) {
  const SceneDocument doc = parseSceneDocument(
      R"({"objects": [{"file": "../up.ply"}, {"file": "/etc/passwd"}, {"file": "a/../b.ply"},
    {"file": "a/../../c.ply"}, {"file": "./d.ply"}]})",
      "site/s.json", byText());
  ASSERT_EQ(doc.objects.size(), 5u);
  EXPECT_EQ(doc.objects[0].refusal.rfind(
                "'../up.ply': leads outside the scene's directory site (scene paths are confined", 0),
            0u)
      << doc.objects[0].refusal;
  EXPECT_EQ(doc.objects[1].refusal.rfind("'/etc/passwd': absolute path refused", 0), 0u)
      << doc.objects[1].refusal;
  EXPECT_TRUE(doc.objects[2].refusal.empty()) << doc.objects[2].refusal;
  EXPECT_EQ(doc.objects[2].resolved, "site/a/../b.ply");
  EXPECT_EQ(doc.objects[3].refusal.rfind("'a/../../c.ply': leads outside", 0), 0u) << doc.objects[3].refusal;
  EXPECT_TRUE(doc.objects[4].refusal.empty());
  // On the file system the same scene refuses the same paths.
  const std::string dir = test::tempDir("SceneDocPaths");
  const SceneDocument fs_doc = parseSceneDocument(
      R"({"objects": [{"file": "../up.ply"}, {"file": "/etc/passwd"}, {"file": "./d.ply"}]})",
      dir + "/s.json");
  EXPECT_EQ(fs_doc.objects[0].refusal.rfind("'../up.ply': leads outside the scene's directory ", 0), 0u)
      << fs_doc.objects[0].refusal;
  EXPECT_EQ(fs_doc.objects[1].refusal.rfind("'/etc/passwd': absolute path refused", 0), 0u);
  EXPECT_TRUE(fs_doc.objects[2].refusal.empty());
  // Unconfined, nothing is refused.
  SceneDocOptions open = byText();
  open.confine_paths = false;
  EXPECT_TRUE(parseSceneDocument(R"({"objects": [{"file": "../up.ply"}]})", "s.json", open)
                  .objects[0]
                  .refusal.empty());
}

TEST(SceneDocument, WebRefusalNamesTheObjectAndItsKind) {
  const auto refusal = [](const char* text) {
    return webSceneRefusal(parseSceneDocument(text, "w.json", byText()));
  };
  EXPECT_EQ(
      refusal(
          R"({"objects": [{"file": "a.spz"}, {"file": "b.ply", "transform": {"scale": 2}}], "camera": {"eye": [0, 0, 1],
    "target": [0, 0, 0], "fov_y_deg": 40}, "background": [0, 0, 0], "blend_space": "display", "light": false, "lod_budget": 10})"),
      "");
  const struct {
    const char* scene;
    const char* message;
  } cases[] = {
      {R"({"objects": [{"file": "a.ply"}, {"name": "walker", "gltf": "walker.glb"}]})",
       "w.json: objects[1] (walker): a glTF model (\"gltf\": \"walker.glb\") is not in the web build yet"},
      {R"({"objects": [{"file": "model.GLTF"}]})",
       "w.json: objects[0] (model): a glTF model (\"file\": \"model.GLTF\") is not in the web build yet"},
      {R"({"objects": [{"character": "hero"}]})",
       "w.json: objects[0] (hero): a character (\"character\": \"hero\") is not in the web build yet"},
      {R"({"objects": [{"generator": "g.onnx"}]})",
       "w.json: objects[0] (g): a neural generator (\"generator\": \"g.onnx\") is not in the web build yet"},
      {R"({"objects": [{"hull": "ship.spl2", "lod": 100}]})",
       "w.json: objects[0] (ship): a splat hull (\"hull\": \"ship.spl2\") is not in the web build yet"},
      {R"({"objects": [{"lod": "city"}]})",
       "w.json: objects[0] (city): a level-of-detail hierarchy (\"lod\": \"city\") is not in the web "
       "build yet"},
      {R"({"objects": [{"file": "a.ply"}], "script": []})",
       "w.json: script: scene scripts (character commands) are not in the web build yet"},
      {R"({"objects": [{"file": "a.ply"}], "post": "p.onnx"})",
       "w.json: post: post-processing models are not in the web build yet"},
      {R"({"objects": [{"file": "a.ply"}], "blend_space": "linear"})",
       "w.json: blend_space: linear blending is not in the web build yet"},
  };
  for (const auto& c : cases) {
    const std::string r = refusal(c.scene);
    EXPECT_EQ(r.rfind(c.message, 0), 0u) << r;
    EXPECT_NE(r.find("render this scene with the splatforge command line"), std::string::npos) << r;
  }
}

}  // namespace
}  // namespace sf
