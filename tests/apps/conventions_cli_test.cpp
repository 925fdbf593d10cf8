// The command line's conventions (docs/cli.md), one rule each: every command has --help and
// appears in a group of `splatforge --help`; usage errors exit 2 with one line; outputs take -o/--output;
// --json prints machine-readable output on stdout (benchmarks too, --json-out for a file); the version is the
// CMake project's; the default image size is one for every command; convert warns about, and with --strict
// refuses, conversions that lose information.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/image.h"
#include "gpu/gpu.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "support/test_support.h"

namespace sf {
namespace {

using test::cli;
using test::CliRun;

// stdout alone (stderr to /dev/null), for commands whose stdout must be one JSON document.
std::string stdoutOf(const std::string& args, int* code) {
  const std::string cmd = std::string("\"") + SPLATFORGE_BINARY + "\" " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(CliConventions, EveryCommandHasHelpAndAGroup) {
  CliRun top = cli("--help");
  ASSERT_EQ(top.code, 0) << top.out;
  for (const char* group :
       {"View and render", "Formats", "Characters and animation", "Benchmarks and devices", "Training",
        "Batches and clusters", "Level of detail", "Web page"})
    EXPECT_NE(top.out.find(group), std::string::npos) << group << "\n" << top.out;
  for (const char* cmd : {"info",       "validate", "convert",
                          "render",     "animate",  "demo",
                          "view",       "bench",    "bench-characters",
                          "bench-skin", "devices",  "pose",
                          "character",  "views",    "train",
                          "hull",       "onnx",     "batch",
                          "soak",       "lod",      "export-web",
                          "serve"}) {
    EXPECT_NE(top.out.find(std::string("  ") + cmd), std::string::npos) << cmd;
    CliRun r = cli(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd << r.out;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd;
  }
  // The help of the format commands lists every format the tool reads and writes.
  CliRun info = cli("info --help"), convert = cli("convert --help");
  for (const char* ext : {".compressed.ply", ".spz", ".splat", ".glb"}) {
    EXPECT_NE(info.out.find(ext), std::string::npos) << ext;
    EXPECT_NE(convert.out.find(ext), std::string::npos) << ext;
  }
}

TEST(CliConventions, UsageErrorsExitTwoWithOneLine) {
  for (const char* args :
       {"", "render --frobnicate x.ply -o y.png", "render x.ply -o y.png --width -5", "nosuchcommand",
        "convert a.ply", "convert a.ply b.ply -o c.ply", "info --spz-axes sideways x.spz", "rendr x.spz",
        "hull bak x.glb", "render --widht 320 x.ply -o y.png", "render x.ply -o y.jpg",
        "convert x.ply -o x.xyz", "train -o x.ply", "hull bake x.glb -o x.ply",
        "hull bake x.glb --belt 50,30 -o x.spl2"}) {
    CliRun r = cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    EXPECT_EQ(out.find('\n'), std::string::npos) << args << ": more than one line:\n" << r.out;
  }
}

// docs/cli.md's rules over every command and action: an unknown option is a usage error (exit 2, one line
// naming the command and its --help); outputs take -o/--output; results print as JSON with --json where the
// command prints results, and benchmarks write them with --json-out.
TEST(CliConventions, EveryCommandFollowsTheRules) {
  struct Command {
    const char* name;
    bool writes, json, json_out;
  };
  const Command commands[] = {{"info", false, true, false},
                              {"convert", true, false, false},
                              {"render", true, false, false},
                              {"validate", false, true, false},
                              {"animate", true, false, false},
                              {"demo", true, false, false},
                              {"view", false, false, false},
                              {"bench", false, true, true},
                              {"bench-characters", false, true, true},
                              {"bench-skin", false, true, true},
                              {"devices", false, true, false},
                              {"pose", false, true, false},
                              {"character build", true, false, false},
                              {"character bind", true, false, false},
                              {"character info", false, true, false},
                              {"character preview", true, false, false},
                              {"character gnm-pack", true, false, false},
                              {"views", true, true, false},
                              {"train", true, true, false},
                              {"hull bake", true, true, false},
                              {"hull info", false, true, false},
                              {"hull play", true, false, false},
                              {"hull bench", false, false, true},
                              {"onnx info", false, true, false},
                              {"onnx run", true, true, false},
                              {"batch", false, true, false},
                              {"batch status", false, true, false},
                              {"soak", false, true, true},
                              {"lod build", true, false, false},
                              {"lod info", false, true, false},
                              {"lod cut", true, false, false},
                              {"export-web", true, false, false},
                              {"serve", false, false, false}};
  for (const Command& c : commands) {
    const std::string name = c.name;
    const CliRun bad = cli(name + " --no-such-option");
    EXPECT_EQ(bad.code, 2) << name << "\n" << bad.out;
    EXPECT_NE(bad.out.find("splatforge " + name + ": error: "), std::string::npos) << name << "\n" << bad.out;
    EXPECT_NE(bad.out.find("(see splatforge " + name + " --help)"), std::string::npos) << name << "\n"
                                                                                       << bad.out;
    const CliRun help = cli(name + " --help");
    ASSERT_EQ(help.code, 0) << name;
    auto lists = [&](const std::string& option) { return help.out.find("  " + option) != std::string::npos; };
    EXPECT_EQ(lists("-o,--output"), c.writes) << name << ": -o/--output\n" << help.out;
    EXPECT_EQ(lists("--json "), c.json) << name << ": --json\n" << help.out;
    EXPECT_EQ(lists("--json-out"), c.json_out) << name << ": --json-out\n" << help.out;
    EXPECT_NE(help.out.find("--spz-axes auto|rub|raw"), std::string::npos)
        << name << ": the options of every command";
  }
}

// A usage error names the command it belongs to and where that command's options are listed; an unknown
// command is named, with the nearest known one.
TEST(CliConventions, UsageErrorsNameTheCommandAndItsHelp) {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c :
       {Case{"rendr x.spz", "unknown command 'rendr', did you mean 'render'? (see splatforge --help)"},
        Case{"hull bak x.glb",
             "unknown command 'bak' of hull, did you mean 'bake'? (see splatforge hull --help)"},
        Case{"animate x.ply -o out.gif", "(see splatforge animate --help)"},
        Case{"render x.ply -o y.png --max-gpu-memory lots", "splatforge render: error: --max-gpu-memory: "},
        Case{"--max-memory 2G rendr x.spz", "unknown command 'rendr'"},
        Case{"render --widht 320 x.ply -o y.png", "(see splatforge render --help)"},
        Case{"render x.ply -o y.jpg", "splatforge render: error: -o y.jpg: expected a .png path"},
        Case{"convert x.ply -o x.xyz", "(see splatforge convert --help)"},
        Case{"train -o x.ply", "splatforge train: error: give exactly one of --mesh"},
        Case{"hull bake x.glb -o x.ply", "(see splatforge hull bake --help)"}}) {
    const CliRun r = cli(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
  }
  // A failure that is not a usage error exits 1 and names the command as typed (hull play runs animate).
  const std::string dir = test::tempDir("CliCommandNames");
  std::ofstream(dir + "/bad.json") << "{";
  const CliRun play =
      cli("hull play " + dir + "/none.spl2 --script " + dir + "/bad.json -o " + dir + "/f_%02d.png");
  EXPECT_EQ(play.code, 1) << play.out;
  EXPECT_NE(play.out.find("splatforge hull play: error:"), std::string::npos) << play.out;
  // Every command's help points at the options every command takes.
  EXPECT_NE(cli("convert --help").out.find("--spz-axes auto|rub|raw"), std::string::npos);
}

// convert never writes over its input, and replaces an existing output only when asked (-w/--overwrite).
TEST(CliConventions, ConvertNeverOverwritesItsInputAndAsksToReplace) {
  const std::string dir = test::tempDir("CliOverwrite");
  saveSplats(test::randomCloud(20, 0, 8), dir + "/c.ply");
  const std::vector<uint8_t> before = readFile(dir + "/c.ply");
  CliRun self = cli("convert " + dir + "/c.ply -o " + dir + "/c.ply");
  EXPECT_EQ(self.code, 2) << self.out;
  EXPECT_NE(self.out.find("is the input file"), std::string::npos) << self.out;
  self = cli("convert " + dir + "/c.ply -o " + dir + "/./c.ply -w");
  EXPECT_EQ(self.code, 2) << self.out;
  EXPECT_EQ(readFile(dir + "/c.ply"), before);
  ASSERT_EQ(cli("convert " + dir + "/c.ply -o " + dir + "/d.spz").code, 0);
  const CliRun again = cli("convert " + dir + "/c.ply -o " + dir + "/d.spz");
  EXPECT_EQ(again.code, 2) << again.out;
  EXPECT_NE(again.out.find("exists; -w/--overwrite replaces it"), std::string::npos) << again.out;
  EXPECT_EQ(cli("convert " + dir + "/c.ply -o " + dir + "/d.spz --overwrite").code, 0);
}

// Camera files: unknown keys refused, a look-at camera's size defaulting to 1280x720, and the file read
// before the scene (a mistake in it is reported even when the scene would fail too).
TEST(CliConventions, CameraFilesRefuseUnknownKeysAndAreReadFirst) {
  const std::string dir = test::tempDir("CliCameraFile");
  GaussianCloud c = test::randomCloud(50, 0, 9);
  saveSplats(c, dir + "/c.ply");
  std::ofstream(dir + "/typo.json")
      << R"({"eye": [0, 0, -3], "target": [0, 0, 0], "upp": [0, 1, 0], "fov_y_deg": 50})";
  const CliRun typo =
      cli("render " + dir + "/missing.ply --camera " + dir + "/typo.json -o " + dir + "/t.png");
  EXPECT_EQ(typo.code, 1) << typo.out;
  EXPECT_NE(
      typo.out.find(
          "typo.json: (root): unknown key \"upp\" (expected eye, target, up, fov_y_deg, width, height)"),
      std::string::npos)
      << typo.out;
  std::ofstream(dir + "/sized.json") << R"({"eye": [0, 0, -3], "target": [0, 0, 0], "fov_y_deg": 50})";
  ASSERT_EQ(
      cli("render " + dir + "/c.ply --camera " + dir + "/sized.json -o " + dir + "/s.png --backend cpu").code,
      0);
  const ImageRGBA img = readPng(dir + "/s.png");
  EXPECT_EQ(img.width, 1280);
  EXPECT_EQ(img.height, 720);
}

// Inputs of the wrong kind and malformed glTF are named for what they are, without a library's internals.
TEST(CliConventions, WrongInputsAreNamedForWhatTheyAre) {
  const std::string dir = test::tempDir("CliWrongInputs");
  saveSplats(test::randomCloud(20, 0, 10), dir + "/c.ply");
  const CliRun ply = cli("hull bake " + dir + "/c.ply -o " + dir + "/h.spl2");
  EXPECT_EQ(ply.code, 1) << ply.out;
  EXPECT_NE(ply.out.find("c.ply: byte 0: not a glTF or GLB model"), std::string::npos) << ply.out;
  EXPECT_NE(ply.out.find("starts with \"ply"), std::string::npos) << ply.out;
  std::ofstream(dir + "/bad.gltf") << "{\"asset\": {\"version\": \"2.0\"}, \"meshes\": [";
  const CliRun bad = cli("render " + dir + "/bad.gltf -o " + dir + "/b.png");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("bad.gltf: byte "), std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find("json.exception"), std::string::npos) << bad.out;
  // bench without the sample assets says where it looked and how to point it elsewhere.
  const CliRun bench = cli("bench --loads --backend cpu --assets " + dir + "/nowhere");
  EXPECT_EQ(bench.code, 1) << bench.out;
  EXPECT_NE(bench.out.find("give --assets DIR or set SPLATFORGE_ASSETS"), std::string::npos) << bench.out;
}

// Output folders are created as needed, by every command that writes into one (onnx run -o DIR/ as hull
// play).
TEST(CliConventions, OutputFoldersAreCreated) {
  const std::string dir = test::tempDir("CliOutputFolders");
  const std::string model = std::string(SPLATFORGE_SOURCE_DIR) + "/models/gaussians4d.onnx";
  const CliRun run = cli("onnx run " + model + " --time 0.5 -o " + dir + "/new/out/");
  EXPECT_EQ(run.code, 0) << run.out;
  size_t npy = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/new/out"))
    npy += e.path().extension() == ".npy";
  EXPECT_GT(npy, 0u);
  std::ofstream(dir + "/file") << "x";
  EXPECT_EQ(cli("onnx run " + model + " -o " + dir + "/file").code, 2);
}

// `views -o DIR` into the folder of an earlier run: the images its JSON no longer lists are gone.
TEST(CliConventions, ViewsFolderHoldsOnlyWhatItsJsonLists) {
  SF_REQUIRE_ASSET(box, "gltf/box_animated.gltf");
  const std::string dir = test::tempDir("CliViewsAgain");
  ASSERT_EQ(cli("views " + box + " -o " + dir + "/ds --count 6 --val 2 --test 0 --size 16").code, 0);
  EXPECT_TRUE(std::filesystem::exists(dir + "/ds/train/r_005.png"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/ds/val/r_001.png"));
  std::ofstream(dir + "/ds/train/notes.txt") << "mine";  // not the writer's: kept
  const CliRun again = cli("views " + box + " -o " + dir + "/ds --count 3 --val 0 --test 0 --size 16");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/ds/train/r_002.png"));
  for (const char* gone : {"/ds/train/r_003.png", "/ds/train/r_005.png", "/ds/val/r_000.png"})
    EXPECT_FALSE(std::filesystem::exists(dir + gone)) << gone;
  EXPECT_TRUE(std::filesystem::exists(dir + "/ds/train/notes.txt"));
}

// convert's transforms and filters against closed forms, applied in the order the help states (flip, rotate,
// scale, translate, then box and opacity filters) whatever their order on the command line.
TEST(CliConventions, ConvertTransformsAndFiltersInTheStatedOrder) {
  const std::string dir = test::tempDir("CliConvertEdits");
  const GaussianCloud c = test::randomCloud(300, 1, 12);
  saveSplats(c, dir + "/c.ply");
  const GaussianCloud in = loadSplats(dir + "/c.ply").cloud;  // as stored (PLY round trip)
  auto edited = [&](const std::string& args) {
    const CliRun r = cli("convert " + dir + "/c.ply -o " + dir + "/e.ply -w " + args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
    return loadSplats(dir + "/e.ply").cloud;
  };
  // Translation after scale, though given first: p' = 2 p + (1, -2, 0.5).
  GaussianCloud e = edited("--translate 1,-2,0.5 --scale 2");
  ASSERT_EQ(e.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const Vec3 want = in.positions[i] * 2.0f + Vec3{1, -2, 0.5f};
    EXPECT_LT(length(e.positions[i] - want), 1e-5f * (1 + length(want))) << i;
    EXPECT_LT(length(e.scales[i] - in.scales[i] * 2.0f), 1e-5f * length(in.scales[i])) << i;
  }
  // A quarter turn about z: (x, y, z) -> (-y, x, z); a mirror in x: x -> -x, applied first.
  e = edited("--rotate 0,0,90 --flip x");
  for (size_t i = 0; i < in.size(); ++i) {
    const Vec3 p = in.positions[i], want{-p.y, -p.x, p.z};
    EXPECT_LT(length(e.positions[i] - want), 1e-5f * (1 + length(p))) << i;
  }
  // Filters in the output frame: the box after the translation, then the opacity threshold.
  e = edited("--translate 10,0,0 --box 10,-0.5,-1e9,11e9,0.5,1e9 --min-opacity 0.5");
  size_t kept = 0;
  for (size_t i = 0; i < in.size(); ++i)
    kept += in.positions[i].x >= 0 && std::abs(in.positions[i].y) <= 0.5f && in.opacities[i] >= 0.5f;
  EXPECT_EQ(e.size(), kept);
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, in.size());
  const CliRun bad = cli("convert " + dir + "/c.ply -o " + dir + "/f.ply --rotate 90");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--rotate '90': expected 3 numbers"), std::string::npos) << bad.out;
  EXPECT_NE(cli("convert --help").out.find("applied in that order"), std::string::npos);
}

// A capture saved as .glb is the same capture: `info` and `render` read it in one frame, so the .glb and the
// .ply render the same image with a camera and when framed automatically.
TEST(CliConventions, ACaptureAsGlbRendersAsItsPly) {
  const std::string dir = test::tempDir("CliGlbCapture");
  GaussianCloud c = test::randomCloud(400, 0, 13);
  for (Vec3& p : c.positions)
    p = Vec3{p.x * 0.5f, p.y - 0.8f, p.z * 0.3f};  // an off-centre, asymmetric capture
  saveSplats(c, dir + "/c.ply");
  ASSERT_EQ(cli("convert " + dir + "/c.ply -o " + dir + "/c.glb").code, 0);
  std::ofstream(dir + "/cam.json")
      << R"({"eye": [0.3, -1, -3], "target": [0, -0.8, 0], "up": [0, -1, 0], "fov_y_deg": 50, "width": 96, "height": 64})";
  std::ofstream(dir + "/scene.json")
      << R"({"objects": [{"file": "c.glb"}]})";  // a scene's "file" reads it alike
  for (const std::string& camera :
       {std::string(" --camera ") + dir + "/cam.json", std::string(" --width 96 --height 64")}) {
    ASSERT_EQ(cli("render " + dir + "/c.ply -o " + dir + "/p.png --backend cpu" + camera).code, 0);
    for (const char* other : {"/c.glb", "/scene.json"}) {
      const CliRun glb = cli("render " + dir + other + " -o " + dir + "/g.png --backend cpu" + camera);
      ASSERT_EQ(glb.code, 0) << glb.out;
      const ImageDiff d = compareImages(readPng(dir + "/p.png"), readPng(dir + "/g.png"));
      EXPECT_GE(d.psnr, 45.0) << other << camera;
    }
  }
}

// `validate` counts each defect planted in a file exactly, exits 1 when one is a problem, 0 for a clean file.
TEST(CliConventions, ValidateNamesEachPlantedDefect) {
  const std::string dir = test::tempDir("CliValidate");
  GaussianCloud c = test::randomCloud(200, 1, 14);
  for (size_t i = 0; i < c.size();
       ++i) {  // a clean start: visible, base colours inside [0, 1], modest SH, round gaussians
    c.opacities[i] = 0.5f;
    c.scales[i] = Vec3{0.05f, 0.05f, 0.05f};
    float* sh = c.shOf(i).data();
    for (int k = 0; k < 3; ++k) sh[k] = 0.1f;
    for (int k = 3; k < 12; ++k) sh[k] = std::clamp(sh[k], -1.0f, 1.0f);
  }
  saveSplats(c, dir + "/clean.ply");
  int code = -1;
  nlohmann::json j = nlohmann::json::parse(stdoutOf("validate " + dir + "/clean.ply --json", &code));
  EXPECT_EQ(code, 0);
  EXPECT_EQ(j["valid"], true);
  EXPECT_TRUE(j["problems"].empty()) << j.dump();
  // NaN and infinity as other tools write them (this writer refuses them): markers replaced in the bytes.
  c.positions[3].x = 12345.5f;
  c.positions[8].y = 23456.5f;
  for (size_t i : {10, 11, 12}) c.scales[i] = Vec3{1e-12f, 0.1f, 0.1f};
  for (size_t i : {20, 21, 22, 23}) c.opacities[i] = 0.001f;
  c.shOf(30)[1] = 10.0f;  // a base colour far above 1
  c.shOf(31)[5] = 6.0f;   // an SH coefficient beyond +-4
  saveSplats(c, dir + "/bad.ply");
  std::vector<uint8_t> bytes = readFile(dir + "/bad.ply");
  auto plant = [&](float marker, float value) {
    uint8_t m[4], v[4];
    std::memcpy(m, &marker, 4);
    std::memcpy(v, &value, 4);
    auto at = std::search(bytes.begin(), bytes.end(), m, m + 4);
    ASSERT_NE(at, bytes.end());
    std::copy(v, v + 4, at);
  };
  plant(12345.5f, std::numeric_limits<float>::quiet_NaN());
  plant(23456.5f, std::numeric_limits<float>::infinity());
  std::ofstream(dir + "/bad.ply", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  j = nlohmann::json::parse(stdoutOf("validate " + dir + "/bad.ply --json", &code));
  EXPECT_EQ(code, 1);
  EXPECT_EQ(j["valid"], false);
  EXPECT_EQ(j["non_finite"], 2);
  EXPECT_EQ(j["degenerate_scales"], 3);
  EXPECT_EQ(j["invisible"], 4);
  EXPECT_EQ(j["dc_outside_unit"], 1);
  EXPECT_EQ(j["sh_rest_large"], 1);
  EXPECT_EQ(j["count"], 198);
  EXPECT_EQ(j["problems"].size(), 2u) << j.dump();
  EXPECT_GT(j["default_camera"]["visible"].get<int>(), 0);
  const CliRun text = cli("validate " + dir + "/bad.ply");
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.out.find("problem:     2 of 200 gaussians hold NaN or infinite values"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("2 problems"), std::string::npos) << text.out;
}

// --max-gpu-memory makes a small device of any Vulkan device: a frame past it fails (exit 1) naming the
// frame's size and the budget; within it the same command renders.
TEST(CliConventions, MaxGpuMemoryIsABudgetTheFrameNames) {
  if (!gpu::vulkanAvailable()) SF_SKIP_OR_FAIL("no Vulkan device");
  const std::string dir = test::tempDir("CliGpuBudget");
  saveSplats(test::randomCloud(100000, 0, 16), dir + "/c.ply");
  const CliRun over = cli("render " + dir + "/c.ply -o " + dir +
                          "/o.png --backend vulkan --width 64 --height 48 --max-gpu-memory 2M");
  EXPECT_EQ(over.code, 1) << over.out;
  EXPECT_NE(
      over.out.find("a frame of 100000 gaussians in 1 objects at 64x48 does not fit the GPU memory budget"),
      std::string::npos)
      << over.out;
  EXPECT_NE(over.out.find("of the 2.0 MiB budget (--max-gpu-memory)"), std::string::npos) << over.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/o.png"));
  EXPECT_EQ(cli("render " + dir + "/c.ply -o " + dir +
                "/o.png --backend vulkan --width 64 --height 48 --max-gpu-memory 1G")
                .code,
            0);
  EXPECT_EQ(cli("--max-gpu-memory lots render " + dir + "/c.ply -o " + dir + "/p.png").code, 2);
}

TEST(CliConventions, VersionComesFromTheProject) {
  CliRun r = cli("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find(std::string("splatforge ") + SPLATFORGE_TEST_VERSION), std::string::npos) << r.out;
}

TEST(CliConventions, OneDefaultImageSize) {
  const std::string dir = test::tempDir("CliDefaultSize");
  GaussianCloud c = test::randomCloud(50, 0, 5);
  saveSplats(c, dir + "/c.ply");
  ASSERT_EQ(cli("render " + dir + "/c.ply -o " + dir + "/r.png --backend cpu").code, 0);
  ASSERT_EQ(cli("demo -o " + dir + "/d.png --backend cpu").code, 0);
  for (const char* name : {"/r.png", "/d.png"}) {
    ImageRGBA img = readPng(dir + name);
    EXPECT_EQ(img.width, 1280) << name;
    EXPECT_EQ(img.height, 720) << name;
  }
  int code = 0;
  const nlohmann::json bench =
      nlohmann::json::parse(stdoutOf("bench " + dir + "/c.ply --backend cpu --frames 1 --json", &code));
  EXPECT_EQ(code, 0);
  EXPECT_EQ(bench["width"], 1280);
  EXPECT_EQ(bench["height"], 720);
}

TEST(CliConventions, JsonOnStdoutAndJsonOutToAFile) {
  const std::string dir = test::tempDir("CliJson");
  saveSplats(test::randomCloud(40, 1, 6), dir + "/c.ply");
  int code = 0;
  // Whole stdout is one JSON document; the human-readable lines went to stderr.
  for (const std::string& args : std::vector<std::string>{
           "info " + dir + "/c.ply --json", "bench " + dir + "/c.ply --backend cpu --frames 1 --json",
           "devices --json"}) {
    const std::string out = stdoutOf(args, &code);
    EXPECT_EQ(code, 0) << args;
    EXPECT_TRUE(nlohmann::json::accept(out)) << args << ":\n" << out;
  }
  ASSERT_EQ(cli("bench " + dir + "/c.ply --backend cpu --frames 1 --json-out " + dir + "/b.json").code, 0);
  std::ifstream in(dir + "/b.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["gaussians"], 40);
}

TEST(CliConventions, ConvertWarnsAboutLossesAndStrictRefuses) {
  const std::string dir = test::tempDir("CliLosses");
  GaussianCloud c = test::randomCloud(30, 2, 7);
  c.scales[4] = Vec3{1e-6f, 0.1f, 0.1f};  // below SPZ's smallest log-scale
  saveSplats(c, dir + "/c.ply");
  CliRun splat = cli("convert " + dir + "/c.ply -o " + dir + "/c.splat");
  EXPECT_EQ(splat.code, 0) << splat.out;
  EXPECT_NE(splat.out.find("SH bands 1-2 are dropped"), std::string::npos) << splat.out;
  EXPECT_NE(splat.out.find("30 of 30 gaussians"), std::string::npos) << splat.out;
  CliRun spz = cli("convert " + dir + "/c.ply -o " + dir + "/c.spz");
  EXPECT_EQ(spz.code, 0) << spz.out;
  EXPECT_NE(spz.out.find("log-scale outside SPZ's [-10, 5.94] is clamped (1 of 30 gaussians)"),
            std::string::npos)
      << spz.out;
  // --strict: refused, nothing written.
  CliRun strict = cli("convert --strict " + dir + "/c.ply -o " + dir + "/strict.splat");
  EXPECT_EQ(strict.code, 1) << strict.out;
  EXPECT_NE(strict.out.find("would lose information"), std::string::npos) << strict.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/strict.splat"));
  // A lossless conversion says nothing and --strict lets it through.
  GaussianCloud d = test::randomCloud(30, 2, 8);
  saveSplats(d, dir + "/d.ply");
  CliRun clean = cli("convert --strict " + dir + "/d.ply -o " + dir + "/d.glb");
  EXPECT_EQ(clean.code, 0) << clean.out;
  EXPECT_EQ(clean.out.find("warning"), std::string::npos) << clean.out;
}

TEST(CliConventions, SpzAxesAndVersionFlags) {
  const std::string dir = test::tempDir("CliSpzAxes");
  GaussianCloud c = test::randomCloud(20, 1, 9);
  saveSplats(c, dir + "/c.ply");
  for (int version = 2; version <= 4; ++version) {
    const std::string out = dir + "/v" + std::to_string(version) + ".spz";
    ASSERT_EQ(cli("convert " + dir + "/c.ply -o " + out + " --spz-version " + std::to_string(version)).code,
              0);
    EXPECT_EQ(loadSplats(out).version, version);
  }
  // Written raw (no record), read raw it is upright; read by default (RUB, no record) it is turned.
  ASSERT_EQ(cli("convert " + dir + "/c.ply -o " + dir + "/raw.spz --spz-axes raw").code, 0);
  int code = 0;
  nlohmann::json raw =
      nlohmann::json::parse(stdoutOf("info " + dir + "/raw.spz --json --spz-axes raw", &code));
  nlohmann::json assumed = nlohmann::json::parse(stdoutOf("info " + dir + "/raw.spz --json", &code));
  EXPECT_NE(assumed["axes"].get<std::string>().find("--spz-axes raw"), std::string::npos) << assumed.dump();
  EXPECT_NEAR(raw["bounds"]["min"][1].get<double>(), -assumed["bounds"]["max"][1].get<double>(), 1e-3);
  EXPECT_EQ(cli("convert " + dir + "/c.ply -o " + dir + "/x.spz --spz-version 5").code, 2);
}

}  // namespace
}  // namespace sf
