// Animation events of a scene (scene/clip_events.h, docs/formats/scene-json.md "Animation events"): a glTF
// walker whose 1 s clip has events at 0.25 s (foot_l) and 0.75 s (foot_r), checked against the closed form
// t = (e + k D - time) / speed for every crossing: steps of every size across wraps, speeds (negative too),
// offsets, clips that do not loop, seeks back, the cap; the events read from the file's extras and from the
// scene JSON, with JSON errors naming the path; script commands triggered by events.
#include "scene/clip_events.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "character/world.h"
#include "core/error.h"
#include "io/formats.h"
#include "model/gltf_model.h"
#include "scene/scene.h"
#include "support/test_support.h"

namespace sf {
namespace {

using test::errorOf;
using Json = nlohmann::json;

// A glTF of one 0.5 x 0.5 quad whose node slides along x over a clip "walk" of `duration` seconds; `extras`
// becomes the animation's extras when not null.
void writeWalker(const std::string& path, float duration, const Json& extras = nullptr) {
  const float pos[] = {-0.25f, -0.25f, 0, 0.25f, -0.25f, 0, 0.25f, 0.25f, 0, -0.25f, 0.25f, 0};
  const uint16_t idx[] = {0, 1, 2, 0, 2, 3, 0, 0};  // (padded to 4 bytes)
  const float times[] = {0, duration};
  const float moves[] = {-1, 0, 0, 1, 0, 0};
  std::vector<uint8_t> bin;
  Json views = Json::array(), accessors = Json::array();
  auto add = [&](const void* data, size_t bytes, int component, size_t count, const char* type) {
    views.push_back({{"buffer", 0}, {"byteOffset", bin.size()}, {"byteLength", bytes}});
    bin.insert(bin.end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    accessors.push_back(
        {{"bufferView", views.size() - 1}, {"componentType", component}, {"count", count}, {"type", type}});
  };
  add(pos, sizeof(pos), 5126, 4, "VEC3");
  accessors.back()["min"] = {-0.25, -0.25, 0};
  accessors.back()["max"] = {0.25, 0.25, 0};
  add(idx, sizeof(idx), 5123, 6, "SCALAR");
  add(times, sizeof(times), 5126, 2, "SCALAR");
  add(moves, sizeof(moves), 5126, 2, "VEC3");
  Json animation = {{"name", "walk"},
                    {"samplers", {{{"input", 2}, {"output", 3}, {"interpolation", "LINEAR"}}}},
                    {"channels", {{{"sampler", 0}, {"target", {{"node", 0}, {"path", "translation"}}}}}}};
  if (!extras.is_null()) animation["extras"] = extras;
  const Json doc = {{"asset", {{"version", "2.0"}}},
                    {"scene", 0},
                    {"scenes", {{{"nodes", {0}}}}},
                    {"nodes", {{{"name", "walker"}, {"mesh", 0}}}},
                    {"meshes", {{{"primitives", {{{"attributes", {{"POSITION", 0}}}, {"indices", 1}}}}}}},
                    {"buffers",
                     {{{"byteLength", bin.size()},
                       {"uri", "data:application/octet-stream;base64," + test::encodeBase64(bin)}}}},
                    {"bufferViews", views},
                    {"accessors", accessors},
                    {"animations", {animation}}};
  std::ofstream(path) << doc.dump();
}

const Json kFeet = {{"events", {{{"name", "foot_r"}, {"time", 0.75}}, {{"name", "foot_l"}, {"time", 0.25}}}}};

// A scene of the walker (its events from the file's extras) with the given object keys.
Scene walkerScene(const std::string& name, const Json& keys = Json::object(), const Json& script = nullptr) {
  const std::string dir = test::tempDir(name);
  writeWalker(dir + "/walker.gltf", 1, kFeet);
  Json object = {{"gltf", "walker.gltf"}};
  object.update(keys);
  Json scene = {{"objects", {object}}};
  if (!script.is_null()) scene["script"] = script;
  std::ofstream(dir + "/scene.json") << scene.dump();
  return loadSceneJson(dir + "/scene.json");
}

struct Expected {
  std::string event;
  float clip_time;
  double scene_time;
};

// The closed form: every crossing of the walker's events (foot_l 0.25, foot_r 0.75, clip of 1 s) by the
// playhead p(t) = time + speed t over scene times [t0, t1] (t0 included), in scene-time order.
std::vector<Expected> closedForm(double time, double speed, bool loop, double t0, double t1) {
  std::vector<Expected> out;
  const double p0 = time + speed * t0, p1 = time + speed * t1, lo = std::min(p0, p1), hi = std::max(p0, p1);
  for (int k = loop ? -100 : 0; k <= (loop ? 100 : 0); ++k)
    for (const auto& [name, e] : {std::pair<const char*, float>{"foot_l", 0.25f}, {"foot_r", 0.75f}}) {
      const double p = static_cast<double>(e) + k;
      if (p >= lo && p <= hi) out.push_back({name, e, speed != 0 ? (p - time) / speed : t0});
    }
  std::sort(out.begin(), out.end(),
            [](const Expected& a, const Expected& b) { return a.scene_time < b.scene_time; });
  return out;
}

// A clock stepped from t0 to t1 in steps of h (the last one shortened): everything it fired.
std::vector<FiredClipEvent> played(const Scene& scene, double t0, double t1, double h) {
  ClipEventClock clock;
  std::vector<FiredClipEvent> all;
  for (double t = t0;; t = std::min(t + h, t1)) {
    ClipEventStep step = clock.advance(scene, t);
    EXPECT_EQ(step.skipped, 0u);
    all.insert(all.end(), step.events.begin(), step.events.end());
    if (t >= t1) break;
  }
  return all;
}

void expectSequence(const std::vector<FiredClipEvent>& got, const std::vector<Expected>& want,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].object, "walker") << what;
    EXPECT_EQ(got[i].event, want[i].event) << what << ", event " << i;
    EXPECT_EQ(got[i].clip_time, want[i].clip_time) << what << ", event " << i;
    EXPECT_NEAR(got[i].scene_time, want[i].scene_time, 1e-9) << what << ", event " << i;
  }
}

TEST(SceneClipEvents, StepsOfEverySizeAcrossWrapsFireTheClosedForm) {
  // The events come from the file's extras, in time order whatever order the file lists them.
  const Scene scene = walkerScene("ClipEventsSteps");
  ASSERT_EQ(scene.objects[0].clipEvents().size(), 2u);
  EXPECT_EQ(scene.objects[0].clipEvents()[0].name, "foot_l");
  for (double h : {1.0 / 60, 0.1, 0.25, 0.3, 0.7, 1.0, 2.6, 100.0}) {
    const std::vector<Expected> want = closedForm(0, 1, true, 0, 3.3);
    ASSERT_EQ(want.size(), 7u);  // l r, l r, l r, l (3.25)
    expectSequence(played(scene, 0, 3.3, h), want, "step " + std::to_string(h));
  }
}

TEST(SceneClipEvents, SpeedsAndOffsetsAsTheClipIsTimed) {
  struct Case {
    double time, speed;
    bool loop;
  };
  for (const Case& c : {Case{0.4, 2, true}, Case{0.1, 1.5, true}, Case{0, -1, true}, Case{0.9, -2.5, true},
                        Case{-0.5, 1, false}, Case{1.6, -1, false}, Case{0.3, 0.5, false}}) {
    const Scene scene =
        walkerScene("ClipEventsTiming", {{"time", c.time}, {"speed", c.speed}, {"loop", c.loop}});
    const std::string what =
        "time " + std::to_string(c.time) + " speed " + std::to_string(c.speed) + (c.loop ? " loop" : " once");
    const std::vector<Expected> want = closedForm(c.time, c.speed, c.loop, 0, 4);
    EXPECT_FALSE(want.empty()) << what;
    for (double h : {0.05, 0.37, 1.0, 4.0})
      expectSequence(played(scene, 0, 4, h), want, what + ", step " + std::to_string(h));
  }
  // A negative speed meets foot_r (0.75 - 1) before foot_l (0.25 - 1): at t = 0.25, 0.75, 1.25, 1.75.
  const Scene back = walkerScene("ClipEventsBack", {{"speed", -1}});
  const std::vector<FiredClipEvent> b = played(back, 0, 2, 0.1);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].event, "foot_r");
  EXPECT_EQ(b[1].event, "foot_l");
  EXPECT_NEAR(b[3].scene_time, 1.75, 1e-9);
}

TEST(SceneClipEvents, ASeekBackFiresNoneAndPlaysOnFromThere) {
  const Scene scene = walkerScene("ClipEventsSeek");
  ClipEventClock clock;
  EXPECT_TRUE(clock.advance(scene, 0).events.empty());
  EXPECT_EQ(clock.advance(scene, 1.0).events.size(), 2u);  // l (0.25), r (0.75)
  EXPECT_TRUE(clock.advance(scene, 0.1).events.empty());   // a seek back
  EXPECT_EQ(clock.time().value_or(-1), 0.1);
  const ClipEventStep on = clock.advance(scene, 0.3);  // (0.1, 0.3]: l again
  ASSERT_EQ(on.events.size(), 1u);
  EXPECT_EQ(on.events[0].event, "foot_l");
  EXPECT_TRUE(clock.advance(scene, 0.3).events.empty());  // the same time again
  // A first frame exactly on an event fires it; a reset makes the next one a first again.
  clock.reset();
  const ClipEventStep first = clock.advance(scene, 1.25);
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].scene_time, 1.25);
  EXPECT_EQ(first.events[0].clip_time, 0.25f);
  // Stateless: (t0, t1] or [t0, t1].
  EXPECT_EQ(clipEventsBetween(scene, 0.25, 0.75).events.size(), 1u);
  EXPECT_EQ(clipEventsBetween(scene, 0.25, 0.75, true).events.size(), 2u);
  EXPECT_TRUE(clipEventsBetween(scene, 0.75, 0.25).events.empty());
}

TEST(SceneClipEvents, ALongStepIsCappedAndCounted) {
  const Scene scene = walkerScene("ClipEventsCap", {{"speed", 10000}});
  const ClipEventStep step = clipEventsBetween(scene, 0, 1);
  EXPECT_EQ(step.events.size(), kMaxClipEventsPerStep);
  EXPECT_EQ(step.skipped, 20000u - kMaxClipEventsPerStep);
  EXPECT_EQ(step.events[0].event, "foot_l");
  EXPECT_NEAR(step.events[0].scene_time, 0.25 / 10000, 1e-12);
  EXPECT_NEAR(step.events.back().scene_time, (2047 + 0.75) / 10000, 1e-12);  // the first 4096, in order
}

TEST(SceneClipEvents, ObjectsOfOneTimeFireInSceneOrder) {
  const std::string dir = test::tempDir("ClipEventsTwo");
  writeWalker(dir + "/walker.gltf", 1, kFeet);
  std::ofstream(dir + "/scene.json") << R"({"objects": [
    {"name": "b", "gltf": "walker.gltf", "events": [{"name": "tap", "time": 0.5}]},
    {"name": "a", "gltf": "walker.gltf", "time": 0.5}]})";
  const Scene scene = loadSceneJson(dir + "/scene.json");
  const std::vector<FiredClipEvent> e = clipEventsBetween(scene, 0, 1).events;
  // b: tap at 0.5; a (clip time 0.5 at t = 0): foot_r at 0.25, foot_l at 0.75.
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].object + " " + e[0].event, "a foot_r");
  EXPECT_EQ(e[1].object + " " + e[1].event, "b tap");
  EXPECT_EQ(e[1].object_index, 0u);
  EXPECT_EQ(e[2].object + " " + e[2].event, "a foot_l");
}

TEST(SceneClipEvents, SceneJsonEventsReplaceTheFilesAndAreCheckedByPath) {
  const Scene given = walkerScene(
      "ClipEventsJson", {{"events", {{{"name", "hop"}, {"time", 1}}, {{"name", "land"}, {"time", 0}}}}});
  ASSERT_EQ(given.objects[0].clipEvents().size(), 2u);
  EXPECT_EQ(given.objects[0].clipEvents()[0].name, "land");  // in time order
  EXPECT_EQ(walkerScene("ClipEventsNone", {{"events", Json::array()}}).objects[0].clipEvents().size(),
            0u);  // silenced

  const std::string dir = test::tempDir("ClipEventsErrors");
  writeWalker(dir + "/walker.gltf", 1);
  saveSplats(test::randomCloud(10, 0, 1), dir + "/c.ply");
  struct Case {
    const char* object;
    const char* says;
  };
  for (
      const Case& c : {
          Case{
              R"({"gltf": "walker.gltf", "events": [{"name": "a", "time": 0.5}, {"name": "b", "tme": 0.5}]})",
              "scene.json: objects[0].events[1]: unknown key \"tme\" (expected name, time)"},
          Case{R"({"gltf": "walker.gltf", "events": [{"name": "late", "time": 1.5}]})",
               "scene.json: objects[0].events[0].time: 1.5 s is outside the clip 'walk' [0, 1] s"},
          Case{R"({"gltf": "walker.gltf", "events": [{"name": "early", "time": -0.1}]})",
               "objects[0].events[0].time: expected a clip time >= 0 seconds"},
          Case{R"({"gltf": "walker.gltf", "events": [{"name": 3, "time": 0.1}]})",
               "objects[0].events[0].name: expected a string, got number"},
          Case{R"({"gltf": "walker.gltf", "events": [{"name": "a", "time": "soon"}]})",
               "objects[0].events[0].time: expected a number, got string"},
          Case{R"({"gltf": "walker.gltf", "events": [{"name": "", "time": 0.1}]})",
               "objects[0].events[0].name: expected a non-empty event name"},
          Case{R"({"gltf": "walker.gltf", "events": {"name": "a", "time": 0.1}})",
               "objects[0].events: expected an array of {\"name\", \"time\"}"},
          Case{R"({"gltf": "walker.gltf", "events": [{"time": 0.1}]})",
               "objects[0].events[0]: missing key \"name\""},
          Case{R"({"file": "c.ply", "events": []})",
               "objects[0].events: \"events\" applies to glTF and character objects only"},
      }) {
    std::ofstream(dir + "/scene.json") << std::string(R"({"objects": [)") + c.object + "]}";
    const std::string e = errorOf([&] { loadSceneJson(dir + "/scene.json"); });
    EXPECT_NE(e.find(c.says), std::string::npos) << c.object << "\n" << e;
  }
}

TEST(SceneClipEvents, FileExtrasAreReadOrIgnoredWithAWarning) {
  const std::string dir = test::tempDir("ClipEventsExtras");
  // Other keys of the extras, and of an event (another tool's payload), are left alone.
  const Json extras = {
      {"author", "x"},
      {"events", {{{"name", "b"}, {"time", 1.5}, {"string", "payload"}}, {{"name", "a"}, {"time", 0}}}}};
  writeWalker(dir + "/ok.gltf", 2, extras);
  const GltfModel ok(dir + "/ok.gltf");
  ASSERT_EQ(ok.clips()[0].events.size(), 2u);
  EXPECT_EQ(ok.clips()[0].events[0].name, "a");
  EXPECT_EQ(ok.clips()[0].events[1].time, 1.5f);
  EXPECT_TRUE(ok.document().warnings.empty());
  struct Case {
    Json extras;
    const char* says;
  };
  for (const Case& c :
       {Case{{{"events", {{{"name", "late"}, {"time", 3}}}}},
             "animations[0].extras.events: ignored (events[0].time 3.000000 is outside the clip [0, "
             "2.000000])"},
        Case{{{"events", "footstep at 0.4"}}, "animations[0].extras.events: ignored (not an array"},
        Case{{{"events", {{{"name", "x"}}}}},
             "ignored (events[0] is not an object with \"name\" and \"time\")"},
        Case{{{"events", {{{"name", ""}, {"time", 1}}}}},
             "ignored (events[0].name is not a non-empty string)"}}) {
    writeWalker(dir + "/bad.gltf", 2, c.extras);
    const GltfModel bad(dir + "/bad.gltf");
    EXPECT_TRUE(bad.clips()[0].events.empty());
    ASSERT_EQ(bad.document().warnings.size(), 1u) << c.extras.dump();
    EXPECT_NE(bad.document().warnings[0].find(c.says), std::string::npos) << bad.document().warnings[0];
  }
}

TEST(SceneClipEvents, EventsTriggerScriptCommands) {
  const Json script = {{{"t", 0}, {"command", "spawn-character"}, {"id", "hero"}, {"package", "walker.gltf"}},
                       {{"on", {{"object", "walker"}, {"event", "foot_l"}}},
                        {"command", "say"},
                        {"id", "hero"},
                        {"text", "left"}},
                       {{"t", 1.0}, {"command", "say"}, {"id", "hero"}, {"text", "one"}}};
  const Scene scene = walkerScene("ClipEventsTriggers", Json::object(), script);
  ASSERT_EQ(scene.triggers.size(), 1u);
  EXPECT_EQ(scene.script.size(), 2u);
  character::CharacterWorld world;
  runSceneScript(scene, world, 0, 1.3, true);  // foot_l at 0.25 and 1.25, the timed "one" at 1.0 between them
  std::vector<std::string> says;
  for (const std::string& line : world.takeLog())
    if (line.find(" says: ") != std::string::npos) says.push_back(line);
  EXPECT_EQ(says, (std::vector<std::string>{"hero says: left", "hero says: one", "hero says: left"}));
  runSceneScript(scene, world, 1.3, 1.3, false);
  EXPECT_TRUE(world.takeLog().empty());

  const std::string dir = test::tempDir("ClipEventsTriggerErrors");
  writeWalker(dir + "/walker.gltf", 1, kFeet);
  struct Case {
    const char* command;
    const char* says;
  };
  for (
      const Case& c :
      {Case{
           R"({"t": 1, "on": {"object": "walker", "event": "foot_l"}, "command": "say", "id": "hero", "text": "x"})",
           "script[0]: a command has \"t\" (a scene time) or \"on\" (an animation event), not both"},
       Case{R"({"on": {"object": "runner", "event": "foot_l"}, "command": "say", "id": "hero", "text": "x"})",
            "script[0].on.object: no scene object is named 'runner' (objects: 'walker')"},
       Case{R"({"on": {"object": "walker", "event": "jump"}, "command": "say", "id": "hero", "text": "x"})",
            "script[0].on.event: object 'walker' has no animation event 'jump' (its events: 'foot_l', "
            "'foot_r')"},
       Case{R"({"on": {"object": "walker", "evnt": "jump"}, "command": "say", "id": "hero", "text": "x"})",
            "script[0].on: unknown key \"evnt\" (expected object, event)"}}) {
    std::ofstream(dir + "/scene.json")
        << std::string(R"({"objects": [{"gltf": "walker.gltf"}], "script": [)") + c.command + "]}";
    const std::string e = errorOf([&] { loadSceneJson(dir + "/scene.json"); });
    EXPECT_NE(e.find(c.says), std::string::npos) << c.command << "\n" << e;
  }
}

}  // namespace
}  // namespace sf
