// Decoder characters through the CLI, run as processes: `character info` on a bundle, `render` of a bundle
// directory on both backends, `animate` of a scripted scene with expressions, look-at and an orbiting
// camera, `bench-characters` on a bundle, and a broken bundle kept as a placeholder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpu/gpu.h"
#include "io/image_io.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

const std::string kModels = std::string(SPLATFORGE_SOURCE_DIR) + "/models/characters";

TEST(BundleCli, InfoPrintsTheMemoryReportPerBranch) {
  std::string out;
  ASSERT_EQ(test::runCli("character info " + kModels + "/orb_head", &out), 0) << out;
  EXPECT_NE(out.find("multi_region"), std::string::npos) << out;
  EXPECT_NE(out.find("head       96x96 texels = 9216 slots"), std::string::npos) << out;
  EXPECT_NE(out.find("eyes       48x48 texels = 2304 slots"), std::string::npos) << out;
  EXPECT_NE(out.find("52 bytes per gaussian"), std::string::npos) << out;
  ASSERT_EQ(test::runCli("character info " + kModels + "/orb_head --json", &out), 0) << out;
  EXPECT_NE(out.find("\"gpu_bytes\": 599040"), std::string::npos) << out;  // 11,520 slots x 52 bytes
  EXPECT_NE(out.find("\"backend\": \"skinned\""), std::string::npos) << out;
}

TEST(BundleCli, RenderedAlikeOnBothBackends) {
  const fs::path dir = test::tempDir("BundleCliRender");
  std::string out;
  const std::string common = " --width 96 --height 96 --bg 0.1,0.1,0.1";
  ASSERT_EQ(test::runCli("render " + kModels + "/orb_head -o " + (dir / "cpu.png").string() +
                             " --backend cpu" + common,
                         &out),
            0)
      << out;
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device");
  ASSERT_EQ(test::runCli("render " + kModels + "/orb_head -o " + (dir / "gpu.png").string() +
                             " --backend vulkan --validation" + common,
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("generators"), std::string::npos)
      << out;  // its passes ran in the frame, before preprocess
  const ImageDiff c = compareImages(readPng((dir / "cpu.png").string()), readPng((dir / "gpu.png").string()));
  EXPECT_GT(c.psnr, 45.0) << "CPU path vs GPU path of the same bundle";
}

TEST(BundleCli, AnimateWithExpressionsLookAtAndAMovingCamera) {
  const fs::path dir = test::tempDir("BundleCliAnimate");
  std::string out;
  ASSERT_EQ(test::runCli("animate " + kModels +
                             "/orb_talk.json --fps 5 --duration 2 --orbit 40 --width 80 --height 80 -o " +
                             (dir / "f_%02d.png").string(),
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("orb says:"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "f_09.png"));
  // The face and the camera move: frames differ.
  EXPECT_LT(compareImages(readPng((dir / "f_00.png").string()), readPng((dir / "f_04.png").string())).psnr,
            35.0);
  // A bundle that fails to load is the placeholder, with the file and the cause.
  fs::create_directories(dir / "broken");
  std::ofstream(dir / "broken/scene.json")
      << R"({"mode": "multi_region", "order": ["head"], "branches": {}})";
  std::ofstream(dir / "scene.json")
      << R"({"script": [{"t": 0, "command": "spawn-character", "id": "x", "package": "broken"}],
    "camera": {"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 32, "height": 24}})";
  ASSERT_EQ(test::runCli("animate " + (dir / "scene.json").string() + " --duration 0.1 -o " +
                             (dir / "g_%02d.png").string(),
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("warning: character 'x'"), std::string::npos) << out;
  EXPECT_NE(out.find("order[0]: names branch \"head\""), std::string::npos) << out;
}

TEST(BundleCli, BenchReportsBranchTimesAndSkippedPasses) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device");
  std::string out;
  ASSERT_EQ(test::runCli("bench-characters " + kModels +
                             "/orb_head --count 1 --frames 12 --width 64 --height 64 --json",
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("\"name\": \"head\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"skipped\": "), std::string::npos) << out;
  EXPECT_EQ(out.find("\"skipped\": 0,"), std::string::npos) << out;  // the 0.7 mm steps skip passes
}

}  // namespace
}  // namespace sf
