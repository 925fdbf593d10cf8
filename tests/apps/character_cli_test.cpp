// `splatforge character build|bind|info`, characters and scripts in `render` / `animate`, and
// `bench-characters`, run as processes: packages built from a glTF and from the LAM avatar, a scripted
// scene with a placeholder, a script spawning a plain glTF and a GNM pack, and the errors a user meets
// (unknown command, hash mismatch, wrong space).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gpu/gpu.h"
#include "io/file.h"
#include "io/image_io.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(CharacterCli, BuildInfoRenderAndScript) {
  SF_REQUIRE_ASSET(model, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("CharacterCli");
  std::string out;
  ASSERT_EQ(test::runCli(
                "character build --from-gltf " + model + " --splats 3000 -o " + (dir / "man").string(), &out),
            0)
      << out;
  EXPECT_NE(out.find("wrote"), std::string::npos);
  ASSERT_EQ(test::runCli("character info " + (dir / "man").string() + " --json", &out), 0) << out;
  EXPECT_NE(out.find("\"splats\": 3000"), std::string::npos) << out;
  EXPECT_NE(out.find("\"triangle\": 3000"), std::string::npos) << out;
  EXPECT_NE(out.find("\"gpu_bytes\""), std::string::npos) << out;
  ASSERT_EQ(test::runCli("render " + (dir / "man").string() + " -o " + (dir / "man.png").string() +
                             " --time 0.4 --width 96 --height 72",
                         &out),
            0)
      << out;
  // One scene time for every input: a scene JSON's character at --time 0.4 is the character whose clip starts
  // at 0.4 ("time": clip time = time + speed * t) drawn at 0, and not the character at 0.
  writeText(dir / "at.json", R"({"objects": [{"character": "man"}],
    "camera": {"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 64, "height": 48}})");
  writeText(dir / "offset.json", R"({"objects": [{"character": "man", "time": 0.4}],
    "camera": {"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 64, "height": 48}})");
  const auto renderAt = [&](const char* scene, const char* time, const char* npy) {
    EXPECT_EQ(test::runCli("render " + (dir / scene).string() + " --backend cpu --time " + time + " -o " +
                               (dir / "x.png").string() + " --save-float " + (dir / npy).string(),
                           &out),
              0)
        << out;
    return readNpy((dir / npy).string());
  };
  const ImageRGBA at = renderAt("at.json", "0.4", "at.npy"),
                  offset = renderAt("offset.json", "0", "offset.npy"),
                  start = renderAt("at.json", "0", "start.npy");
  EXPECT_EQ(at.pixels, offset.pixels) << "render scene.json --time 0.4 is not the character at clip time 0.4";
  EXPECT_LT(compareImages(at, start).psnr, 40.0) << "--time does not move the character";
  writeText(dir / "scene.json", R"({
  "script": [
    {"t": 0, "command": "spawn-character", "id": "a", "package": "man", "transform": {"translation": [-0.5, 0, 0]}},
    {"t": 0, "command": "spawn-character", "id": "b", "package": "nowhere"},
    {"t": 0.1, "command": "set-character-state", "id": "a", "clip": 0, "fade": 0.2},
    {"t": 0.2, "command": "say", "id": "a", "text": "on my way"},
    {"t": 0.3, "command": "look-at", "id": "a", "target": [0, 1.5, 3]}
  ],
  "camera": {"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 64, "height": 48}
})");
  ASSERT_EQ(test::runCli("animate " + (dir / "scene.json").string() + " --fps 5 --duration 0.6 -o " +
                             (dir / "f_%02d.png").string(),
                         &out),
            0)
      << out;
  EXPECT_NE(out.find("warning: character 'b'"), std::string::npos) << out;
  EXPECT_NE(out.find("a says: on my way"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "f_02.png"));
  EXPECT_LT(compareImages(readPng((dir / "f_00.png").string()), readPng((dir / "f_02.png").string())).psnr,
            40.0);
  // Errors: an unknown command names the script entry; a wrong expression space names the character.
  writeText(dir / "bad.json", R"({"script": [{"t": 0, "command": "dance", "id": "a"}]})");
  EXPECT_EQ(
      test::runCli("animate " + (dir / "bad.json").string() + " -o " + (dir / "g_%02d.png").string(), &out),
      1);
  EXPECT_NE(out.find("script[0].command: unknown command 'dance'"), std::string::npos) << out;
  writeText(dir / "space.json", R"({"script": [
    {"t": 0, "command": "spawn-character", "id": "a", "package": "man"},
    {"t": 0, "command": "set-expression", "id": "a", "weights": {"jawOpen": 1}}],
    "camera": {"eye": [0, 1, 4], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 32, "height": 24}})");
  EXPECT_EQ(test::runCli("animate " + (dir / "space.json").string() + " --duration 0.1 -o " +
                             (dir / "h_%02d.png").string(),
                         &out),
            1);
  EXPECT_NE(out.find("script[1] (set-expression)"), std::string::npos) << out;
  EXPECT_NE(out.find("'arkit52' refused"), std::string::npos) << out;
  // A tampered package is refused before anything is built.
  std::vector<uint8_t> bin = readFile((dir / "man/bindings.bin").string());
  bin[100] ^= 1;
  writeFileAtomic((dir / "man/bindings.bin").string(), bin);
  EXPECT_EQ(test::runCli("character info " + (dir / "man").string(), &out), 1);
  EXPECT_NE(out.find("bindings.bin: SHA-256"), std::string::npos) << out;
}

// A script spawning a plain skinned glTF (cesium_man, drawn as its meshes) and a GNM pack (the demo head's
// rig, drawn as its rig preview) renders both, on the CPU and (where there is a device) the Vulkan frame,
// with no placeholder; the same script naming missing files draws the placeholders instead.
TEST(CharacterCli, ScriptSpawnsAPlainGltfAndAGnmPackAndBothDraw) {
  SF_REQUIRE_ASSET(man, "gltf/cesium_man.gltf");
  const fs::path dir = test::tempDir("CharacterCliSpawnPaths");
  std::string out;
  const std::string head_glb =
      std::string(SPLATFORGE_SOURCE_DIR) + "/models/characters/orb_head/head/head.glb";
  ASSERT_EQ(test::runCli("character gnm-pack " + head_glb + " -o " + (dir / "head.sfgnm").string(), &out), 0)
      << out;
  const auto scene = [&](const std::string& gltf, const std::string& pack) {
    return R"({"script": [
    {"t": 0, "command": "spawn-character", "id": "man", "package": ")" +
           gltf + R"(", "transform": {"translation": [-0.4, 0, 0]}},
    {"t": 0, "command": "spawn-character", "id": "head", "package": ")" +
           pack + R"(", "transform": {"translation": [0.5, -3.8, 0], "scale": 3}},
    {"t": 0.2, "command": "set-controls", "id": "head", "controls": {"jawOpen": 1}},
    {"t": 0.3, "command": "look-at", "id": "man", "target": [0, 1.5, 3]}],
  "camera": {"eye": [0, 1, 3], "target": [0, 0.8, 0], "up": [0, 1, 0], "fov_y_deg": 45, "width": 96, "height": 72}})";
  };
  writeText(dir / "both.json", scene(man, "head.sfgnm"));
  writeText(dir / "missing.json", scene((dir / "nowhere.glb").string(), "nowhere.sfgnm"));
  const auto render = [&](const char* name, const std::string& backend) {
    const std::string npy = (dir / (std::string(name) + "_" + backend + ".npy")).string();
    EXPECT_EQ(test::runCli("render " + (dir / (std::string(name) + ".json")).string() +
                               " --allow-outside-paths --time 0.5 --backend " + backend + " -o " +
                               (dir / "x.png").string() + " --save-float " + npy,
                           &out),
              0)
        << out;
    return readNpy(npy);
  };
  const ImageRGBA both = render("both", "cpu");
  EXPECT_EQ(out.find("placeholder"), std::string::npos) << out;
  const ImageRGBA missing = render("missing", "cpu");
  EXPECT_NE(out.find("warning: character 'man'"), std::string::npos) << out;
  EXPECT_NE(out.find("warning: character 'head'"), std::string::npos) << out;
  EXPECT_NE(out.find("placeholder"), std::string::npos) << out;
  EXPECT_LT(compareImages(both, missing).psnr, 25.0)
      << "the spawned glTF and GNM pack draw, not the placeholders";
  // Both characters cover pixels of their own halves of the image (the man left, the head right).
  size_t left = 0, right = 0;
  for (int y = 0; y < both.height; ++y)
    for (int x = 0; x < both.width; ++x) {
      const float a =
          both.pixels[(static_cast<size_t>(y) * static_cast<size_t>(both.width) + static_cast<size_t>(x)) *
                          4 +
                      3];
      if (a > 0.1f) (x < both.width / 2 ? left : right) += 1;
    }
  EXPECT_GT(left, 100u);
  EXPECT_GT(right, 20u);
  if (!gpu::vulkanAvailable())
    SF_SKIP_OR_FAIL("no Vulkan device: the Vulkan frame of the spawned characters is not checked");
  const ImageRGBA gpu = render("both", "vulkan");
  EXPECT_EQ(out.find("placeholder"), std::string::npos) << out;
  EXPECT_GT(compareImages(both, gpu).psnr, 30.0)
      << "the Vulkan frame draws the spawned characters as the CPU frame does";
}

TEST(CharacterCli, LamAvatarPerVertexBindingAndCrowdBenchmark) {
  SF_REQUIRE_ASSET(ply, "characters/lam_avatar/offset.ply");
  SF_REQUIRE_ASSET(skin, "characters/lam_avatar/skin.glb");
  const fs::path dir = test::tempDir("CharacterCliLam");
  std::string out;
  ASSERT_EQ(test::runCli("character bind --splats " + ply + " --skin " + skin +
                             " --per-vertex --rgb-colors -o " + (dir / "lam").string(),
                         &out),
            0)
      << out;
  ASSERT_EQ(test::runCli("character info " + (dir / "lam").string(), &out), 0) << out;
  EXPECT_NE(out.find("20018 (SH degree 0), 20018 bound to triangles"), std::string::npos) << out;
  EXPECT_NE(out.find("51 morph targets"), std::string::npos) << out;
  EXPECT_NE(out.find("expressions: arkit52"), std::string::npos) << out;
  // Without --per-vertex the counts need not match; with it they must.
  EXPECT_EQ(
      test::runCli("character bind --splats " + ply + " --skin " + test::assetPath("gltf/cesium_man.gltf") +
                       " --per-vertex -o " + (dir / "x").string(),
                   &out),
      1);
  EXPECT_NE(out.find("one splat per vertex"), std::string::npos) << out;
  const int rc = test::runCli(
      "bench-characters " + (dir / "lam").string() + " --count 2 --width 96 --height 64 --frames 1", &out);
  if (out.find("no Vulkan") != std::string::npos || out.find("Vulkan loader") != std::string::npos)
    SF_SKIP_OR_FAIL(out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("40036 in all"), std::string::npos) << out;
  EXPECT_NE(out.find("median ms per frame"), std::string::npos) << out;
}

}  // namespace
}  // namespace sf
