// The scene document (scene/scene_doc.h): what a scene JSON states, read without loading files, the same as
// the scene loader reads it (one parser, which makes every check that needs no file: the loader's messages,
// word for word); paths confined by their text as the web page confines them; the web page's refusals, which
// name the object and its kind.
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
      {"gltf": "walker.glb", "clip": "Walk", "skinning": "dqs", "loop": false, "time": 0.5, "speed": 2,
       "events": [{"name": "step", "time": 0.25}]},
      {"hull": "ship.spl2", "heading": 90}
    ],
    "lod_pool": 5000, "lod_budget": 200000,
    "light": {"direction": [0, -1, 0], "flash": {"position": [1, 2, 3]}},
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
  EXPECT_EQ(doc.objects[2].clip, "Walk");
  EXPECT_EQ(doc.objects[2].skinning, "dqs");
  EXPECT_EQ(doc.objects[2].loop, false);
  EXPECT_EQ(doc.objects[2].time, 0.5);
  EXPECT_EQ(doc.objects[2].speed, 2.0);
  ASSERT_TRUE(doc.objects[2].events.has_value());
  ASSERT_EQ(doc.objects[2].events->size(), 1u);
  EXPECT_EQ((*doc.objects[2].events)[0].name, "step");
  EXPECT_FLOAT_EQ((*doc.objects[2].events)[0].time, 0.25f);
  EXPECT_TRUE(doc.objects[0].clip.empty());
  EXPECT_FALSE(doc.objects[0].loop.has_value());
  EXPECT_FALSE(doc.objects[0].events.has_value());
  EXPECT_EQ(doc.objects[3].key, SceneObjectKey::kHull);
  ASSERT_TRUE(doc.camera.has_value());
  EXPECT_EQ(doc.camera->width, 200);
  ASSERT_TRUE(doc.background.has_value());
  EXPECT_FLOAT_EQ(doc.background->z, 0.3f);
  EXPECT_EQ(doc.blend_space, "display");
  EXPECT_FALSE(doc.script);
  EXPECT_EQ(doc.lod_pool, 5000u);
  EXPECT_EQ(doc.lod_budget, 200000u);
  ASSERT_TRUE(doc.light.has_value());
  EXPECT_FALSE(doc.light->enabled.has_value());
  EXPECT_FLOAT_EQ(doc.light->direction->y, -1);
  ASSERT_TRUE(doc.light->flash.has_value());
  EXPECT_FLOAT_EQ(doc.light->flash->position.z, 3);
  EXPECT_FLOAT_EQ(doc.light->flash->strength, 1);
  EXPECT_FALSE(doc.light->flash->color.has_value());
  // The camera at another size, as render --width --height takes it.
  SceneDocOptions sized = byText();
  sized.width = 400, sized.height = 200;
  const SceneDocument resized = parseSceneDocument(R"({"objects": [{"file": "a.ply"}],
    "camera": {"width": 100, "height": 50, "fx": 80, "fy": 80, "cx": 50, "cy": 25, "world_to_camera": [1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]}})",
                                                   "a.json", sized);
  EXPECT_FLOAT_EQ(resized.camera->fx, 320);
  EXPECT_FLOAT_EQ(resized.camera->cy, 100);
}

// Every check that needs no file is the document's: each message here, word for word, is what the document
// says on the file system and by text (the web page, export-web) and what the scene loader says (it leaves
// these checks to the document). No file the scenes name exists: each is refused before any load.
TEST(SceneDocument, ErrorsAreTheSceneLoaders) {
  const std::string dir = test::tempDir("SceneDocErrors");
  const std::string path = dir + "/s.json";
  const struct {
    const char* scene;
    const char* message;  // after "<path>: "
  } cases[] = {
      {R"({"objects": []})",
       R"(objects: expected a non-empty array of objects (or a "script" that spawns characters))"},
      {R"({"objects": [{"file": "a.ply", "transform": [1, 2, 3]}]})",
       "objects[0].transform: expected 16 numbers, got 3"},
      {R"({"objects": [{"file": "a.ply", "gltf": "b.glb"}]})",
       R"(objects[0]: an object has exactly one of "file" (splats), "gltf" (a model), "character" (a character )"
       R"(package), "generator" (an ONNX model), "hull" (a splat hull) or "lod" (a level-of-detail hierarchy))"},
      {R"({"objects": [{"file": "a.ply", "heading": 10}]})",
       R"(objects[0].heading: "heading" applies to hull objects only)"},
      {R"({"objects": [{"file": "a.ply", "transform": {"scale": [1, 0, 1]}}]})",
       "objects[0].transform.scale: scale must be non-zero"},
      {R"({"objects": [{"file": "a.ply"}], "camera": {"eye": [0, 0, 1], "target": [0, 0, 1], "fov_y_deg": 40}})",
       "camera.target: target coincides with eye"},
      {R"({"objects": [{"file": "a.ply"}], "background": [1, 2]})", "background: expected 3 numbers, got 2"},
      {R"({"objects": [{"file": "a.ply"}], "blend_space": "gamma"})",
       R"(blend_space: expected "display" or "linear")"},
      {R"({"objects": [{"file": 7}]})", "objects[0].file: expected a string, got number"},
      // How an object plays: "clip", "skinning" and "events" on glTF and character objects only.
      {R"({"objects": [{"file": "a.ply", "clip": "Walk"}]})",
       R"(objects[0].clip: "clip" applies to glTF and character objects only)"},
      {R"({"objects": [{"generator": "g.onnx", "skinning": "dqs"}]})",
       R"(objects[0].skinning: "skinning" applies to glTF and character objects only)"},
      {R"({"objects": [{"lod": "city", "events": []}]})",
       R"(objects[0].events: "events" applies to glTF and character objects only)"},
      {R"({"objects": [{"file": "w.glb", "clip": 1.5}]})",
       "objects[0].clip: expected a clip name or an index in 0..65535"},
      {R"({"objects": [{"gltf": "w.glb", "skinning": "fast"}]})",
       R"(objects[0].skinning: expected "lbs" (linear blend) or "dqs" (dual quaternion), got "fast")"},
      {R"({"objects": [{"character": "hero", "events": {"name": "step"}}]})",
       R"(objects[0].events: expected an array of {"name", "time"})"},
      {R"({"objects": [{"gltf": "w.glb", "events": [{"name": "", "time": 1}]}]})",
       "objects[0].events[0].name: expected a non-empty event name"},
      {R"({"objects": [{"gltf": "w.glb", "events": [{"name": "step", "time": -1}]}]})",
       "objects[0].events[0].time: expected a clip time >= 0 seconds"},
      {R"({"objects": [{"gltf": "w.glb", "events": [{"name": "step", "tme": 1}]}]})",
       R"(objects[0].events[0]: unknown key "tme" (expected name, time))"},
      {R"({"objects": [{"file": "a.ply", "loop": 1}]})", "objects[0].loop: expected true or false"},
      {R"({"objects": [{"file": "a.ply", "time": "0"}]})", "objects[0].time: expected a number, got string"},
      {R"({"objects": [{"file": "a.ply", "speed": true}]})",
       "objects[0].speed: expected a number, got boolean"},
      // Level of detail and the hulls' light.
      {R"({"objects": [{"file": "a.ply"}], "lod_budget": 0.5})",
       "lod_budget: expected a whole number of at least 1"},
      {R"({"objects": [{"file": "a.ply"}], "lod_budget": 0})",
       "lod_budget: expected a whole number of at least 1"},
      {R"({"objects": [{"file": "a.ply"}], "lod_pool": "many"})", "lod_pool: expected a number, got string"},
      {R"({"objects": [{"file": "a.ply"}], "lod_pool": 3000000000})",
       "lod_pool: expected at most 2147483647 nodes (the GPU pool's slots are 32-bit indices)"},
      {R"({"objects": [{"file": "a.ply"}], "light": {"colour": 1}})",
       R"(light: unknown key "colour" (expected enabled, direction, brightness, emission, flash))"},
      {R"({"objects": [{"file": "a.ply"}], "light": "on"})", "light: expected an object or true / false"},
      {R"({"objects": [{"file": "a.ply"}], "light": {"enabled": 1}})",
       "light.enabled: expected true or false"},
      {R"({"objects": [{"file": "a.ply"}], "light": {"direction": [0, 0, 0]}})",
       "light.direction: expected a non-zero direction"},
      {R"({"objects": [{"file": "a.ply"}], "light": {"flash": {"strength": 2}}})",
       R"(light.flash: missing key "position")"},
      // File names that name no file, refused confined or not.
      {R"({"objects": [{"file": ""}]})", R"(objects[0].file: expected a file name, got "")"},
      {R"({"objects": [{"file": "."}]})",
       R"(objects[0].file: "." names the scene's directory, not a file in it)"},
      {R"({"objects": [{"gltf": "a/.."}]})",
       R"(objects[0].gltf: "a/.." names the scene's directory, not a file in it)"},
      {R"({"objects": [{"character": "./"}]})",
       R"(objects[0].character: "./" names the scene's directory, not a file in it)"},
  };
  for (const auto& c : cases) {
    std::ofstream(path) << c.scene;
    const std::string expected = path + ": " + c.message;
    EXPECT_EQ(errorOf([&] { parseSceneDocument(c.scene, path); }), expected) << c.scene;
    SceneDocOptions by_text = byText();
    EXPECT_EQ(errorOf([&] { parseSceneDocument(c.scene, path, by_text); }), expected) << c.scene;
    EXPECT_EQ(errorOf([&] { loadSceneJson(path); }), expected) << c.scene;
    SceneLoadOptions open;
    open.confine_paths = false;
    EXPECT_EQ(errorOf([&] { loadSceneJson(path, open); }), expected) << c.scene;
  }
  // Malformed JSON: nlohmann's words after the file's name.
  std::ofstream(path) << "{\"objects\": [";
  const std::string truncated = errorOf([&] { parseSceneDocument("{\"objects\": [", path); });
  EXPECT_EQ(truncated, errorOf([&] { loadSceneJson(path); }));
  EXPECT_EQ(truncated.rfind(path + ": ", 0), 0u) << truncated;
  // Other scene paths (a post-processing model, a script's character package) are refused by the same rule.
  EXPECT_EQ(errorOf([] { resolveScenePath("site", "", true, false); }), R"(expected a file name, got "")");
  EXPECT_EQ(errorOf([] { resolveScenePath("site", "b/..", false); }),
            R"("b/.." names the scene's directory, not a file in it)");
}

// By their text (the web page, whose files are URLs): an absolute path or a ".." leading out is refused in
// the words the file system rule uses, but for the directory named (the scene's as written, normalised, where
// the file system rule names its canonical path); a ".." that stays inside is taken.
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
  // glTF models (by "gltf", or a "file" named .gltf / .glb) are drawn, among splat files, with their clips.
  EXPECT_EQ(refusal(R"({"objects": [{"file": "a.ply"}, {"name": "walker", "gltf": "walker.glb", "clip": "1",
    "skinning": "dqs", "time": 0.5, "speed": 2, "loop": false}, {"file": "model.GLTF"}]})"),
            "");
  // Splat characters are drawn with their clips.
  EXPECT_EQ(refusal(R"({"objects": [{"name": "hero", "character": "lam", "clip": "1", "time": 0.5,
    "speed": 2, "transform": {"scale": 2}}]})"),
            "");
  // Neural generators are drawn with their transform and model time ("time", "speed"), without "inputs".
  EXPECT_EQ(refusal(R"({"objects": [{"file": "a.ply"}, {"name": "knot", "generator": "g.onnx", "time": 0.25,
    "speed": 1.5, "transform": {"translation": [1, 0, 0]}}]})"),
            "");
  // Static splat hulls are drawn, baked or sorted, with their heading and transform.
  EXPECT_EQ(refusal(R"({"objects": [{"file": "a.ply"}, {"hull": "man.spl2", "mode": "sorted", "heading": 30,
    "transform": {"translation": [1, 0, 0]}, "meshSamples": 1, "liveCore": "mesh"}, {"hull": "man.spl2"}]})"),
            "");
  const struct {
    const char* scene;
    const char* message;
  } cases[] = {
      {R"({"objects": [{"generator": "g.onnx", "inputs": {"pose": [0, 1]}}]})",
       "w.json: objects[0] (g): inputs: a generator's control inputs are not in the web build yet"},
      {R"({"objects": [{"hull": "ship.spl2", "lod": 100}]})",
       "w.json: objects[0] (ship): lod: a hull's runtime level of detail is not in the web build yet"},
      {R"({"objects": [{"hull": "ship.spl2", "outline": true}]})",
       "w.json: objects[0] (ship): outline: a hull's outline is not in the web build yet"},
      {R"({"objects": [{"file": "a.ply"}, {"hull": "ship.spl2", "effects": {"scatter": 1}}]})",
       "w.json: objects[1] (ship): effects: live hulls (\"effects\", \"script\", \"seed\") are not in the "
       "web build yet"},
      {R"({"objects": [{"hull": "ship.spl2", "script": "s.json"}]})",
       "w.json: objects[0] (ship): script: live hulls (\"effects\", \"script\", \"seed\") are not in the web "
       "build yet"},
      {R"({"objects": [{"hull": "ship.spl2", "seed": 3}]})",
       "w.json: objects[0] (ship): seed: live hulls (\"effects\", \"script\", \"seed\") are not in the web "
       "build yet"},
      {R"({"objects": [{"hull": "ship.spl2"}], "light": {"brightness": 2}})",
       "w.json: light: a scene's cel light for its splat hulls is not in the web build yet"},
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
