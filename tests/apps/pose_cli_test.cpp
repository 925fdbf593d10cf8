// `splatforge pose` and `splatforge bench-skin`, run as processes: joint world matrices and bounds of a
// skinned glTF, a small GPU-skinned crowd, and failures (missing file, unknown clip, malformed file, no
// skinned mesh) exiting 1 with a message that names the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpu/gpu.h"
#include "support/test_support.h"

namespace sf {
namespace {

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PoseCli, CesiumManJson) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  std::string out;
  ASSERT_EQ(test::runCli("pose " + path + " --time 0.5 --json", &out), 0) << out;
  EXPECT_EQ(countOf(out, "\"world\""), 19u) << out;
  EXPECT_NE(out.find("\"joints\": ["), std::string::npos);
  EXPECT_NE(out.find("\"bounds\": {\"min\""), std::string::npos);
  EXPECT_NE(out.find("\"time\": 0.5"), std::string::npos);
  EXPECT_NE(out.find("\"vertices\": 3273"), std::string::npos);
}

TEST(PoseCli, TextClipsAndNodes) {
  SF_REQUIRE_ASSET(morph, "gltf/morph-stress-test.glb");
  std::string out;
  ASSERT_EQ(test::runCli("pose " + morph + " --clip TheWave --time 1", &out), 0) << out;
  EXPECT_NE(out.find("clip:     1 'TheWave'"), std::string::npos) << out;
  EXPECT_NE(out.find("nodes world matrices"), std::string::npos) << out;  // no skin: every node
  EXPECT_NE(out.find("bounds:"), std::string::npos) << out;
  EXPECT_NE(out.find("time:"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("pose " + morph + " --clip 2", &out), 0) << out;
  EXPECT_NE(out.find("clip:     2 'Pulse'"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("pose --help", &out), 0);
  EXPECT_NE(out.find("Usage"), std::string::npos);
}

TEST(PoseCli, FailuresExitOneWithMessage) {
  std::string out;
  EXPECT_EQ(test::runCli("pose /nonexistent/man.gltf --json", &out), 1);
  EXPECT_NE(out.find("splatforge pose: error: /nonexistent/man.gltf"), std::string::npos) << out;
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  EXPECT_EQ(test::runCli("pose " + path + " --clip walk", &out), 1);
  EXPECT_NE(out.find("splatforge pose: error: --clip 'walk'"), std::string::npos) << out;
  EXPECT_NE(out.find("1 animations"), std::string::npos) << out;
  EXPECT_EQ(test::runCli("pose " + path + " --clip 3", &out), 1);
  std::string dir = test::tempDir("PoseCliBad");
  std::ofstream(dir + "/bad.gltf") << "{\"asset\":{\"version\":\"2.0\"},\"nodes\":[{\"children\":[0]}]}";
  EXPECT_EQ(test::runCli("pose " + dir + "/bad.gltf", &out), 1);
  EXPECT_NE(out.find("bad.gltf: nodes[0].children"), std::string::npos) << out;
  EXPECT_NE(test::runCli("pose " + path + " --time abc", &out), 0);
}

}  // namespace
TEST(BenchSkinCli, CrowdRunsAndFailuresNameTheProblem) {
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  std::string dir = test::tempDir("BenchSkinCli"), out;
  ASSERT_EQ(
      test::runCli("bench-skin " + man + " --instances 4 --frames 2 --method dqs --validation --json-out " +
                       dir + "/skin.json",
                   &out),
      0)
      << out;
  EXPECT_NE(out.find("4 instances"), std::string::npos) << out;
  EXPECT_NE(out.find("gpu skinning"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/skin.json"));
  SF_REQUIRE_ASSET(box, "gltf/box_animated.gltf");
  EXPECT_EQ(test::runCli("bench-skin " + box, &out), 1);
  EXPECT_NE(out.find("has no skinned mesh node"), std::string::npos) << out;
  EXPECT_NE(test::runCli("bench-skin " + man + " --method lerp", &out), 0);
  EXPECT_NE(out.find("lerp"), std::string::npos) << out;
}

}  // namespace sf
