// src/batch/ without processes: manifests and every refusal with its JSON path, shares of tasks, the sbatch
// array spec, the streamed SHA-256, the job-time chart.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "batch/manifest.h"
#include "batch/runner.h"
#include "batch/slurm.h"
#include "batch/times_plot.h"
#include "core/sha256.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x";
}

std::string refusal(const std::string& text, const std::string& dir) {
  return test::errorOf([&] { batch::parseManifest(text, "m.json", dir); });
}

TEST(BatchManifest, ExpandsPatternsDefaultsAndPlaceholders) {
  const std::string dir = test::tempDir("BatchManifestExpand");
  touch(dir + "/models/a.glb");
  touch(dir + "/models/b.compressed.ply");
  touch(dir + "/models/.hidden.glb");
  touch(dir + "/cloud.ply");
  const batch::Manifest m = batch::parseManifest(R"({
    "version": 1,
    "defaults": {"flags": {"hull bake": ["--budget", "300"], "*": ["--max-memory", "1G"]}},
    "jobs": [
      {"command": "hull bake", "foreach": "models/*.glb", "inputs": ["{match}"], "outputs": ["out/{stem}.spl2", "out/{stem}.meta.json"]},
      {"command": "train", "inputs": ["models/a.glb"], "outputs": ["t/a.ply"], "flags": ["--steps", "10"]},
      {"name": "c-{stem}", "command": "convert", "foreach": "models/*.ply", "inputs": ["{match}"], "outputs": ["c/{file}.spz"]},
      {"command": "render", "inputs": ["cloud.ply"], "outputs": ["r.png"], "args": ["{input}", "--output", "{output}", "--device", "1"]}
    ]})",
                                                 "m.json", dir);
  ASSERT_EQ(m.jobs.size(), 4u);
  EXPECT_EQ(m.state_dir, (fs::path(dir) / "m.batch").string());
  const batch::Job& bake = m.jobs[0];
  EXPECT_EQ(bake.name, "out/a.spl2");
  EXPECT_EQ(bake.where, "jobs[0] (models/a.glb)");
  EXPECT_EQ(bake.args, (std::vector<std::string>{"models/a.glb", "-o", "{output}", "--max-memory", "1G",
                                                 "--budget", "300"}));
  EXPECT_TRUE(bake.takes_device);
  EXPECT_EQ(batch::commandLine(bake),
            "splatforge hull bake models/a.glb -o out/a.spl2 --max-memory 1G --budget 300");
  EXPECT_EQ(m.jobs[1].args, (std::vector<std::string>{"--mesh", "models/a.glb", "-o", "{output}",
                                                      "--max-memory", "1G", "--steps", "10"}));
  EXPECT_EQ(m.jobs[2].name, "c-b");  // .compressed.ply is one extension
  EXPECT_EQ(m.jobs[2].outputs[0], "c/b.compressed.ply.spz");
  EXPECT_TRUE(m.jobs[3].has_device);
  EXPECT_EQ(batch::expandOutputs(m.jobs[3], {"x/.stage/r.png"})[2], "x/.stage/r.png");
  EXPECT_NE(m.jobs[0].key, m.jobs[1].key);
}

TEST(BatchManifest, EveryRefusalNamesItsJsonPath) {
  const std::string dir = test::tempDir("BatchManifestRefusals");
  touch(dir + "/a.ply");
  touch(dir + "/models/x.glb");
  const std::string e = refusal(R"({"version": 1, "jobs": [
      {"command": "rendr", "inputs": ["a.ply"], "outputs": ["a.png"]},
      {"command": "convert", "inputs": ["missing.ply"], "outputs": ["m.spz"]},
      {"command": "convert", "inputs": ["a.ply"], "outputs": ["same.spz"]},
      {"command": "convert", "inputs": ["a.ply"], "outputs": ["./same.spz"]},
      {"command": "convert", "inputs": ["same.spz"], "outputs": ["b.spz"]},
      {"command": "convert", "inputs": ["a.ply"], "outputs": ["c.spz"], "args": ["{input}", "-o", "{output}", "{bogus}"]},
      {"command": "convert", "inputs": ["a.ply"], "outputs": ["d.spz", "elsewhere/d.txt"]},
      {"command": "hull bake", "foreach": "models/*.gltf", "inputs": ["{match}"], "outputs": ["{stem}.spl2"]},
      {"command": "convert", "inputs": ["a.ply"], "outputs": ["e.spz"], "frobs": 1}
    ]})",
                                dir);
  EXPECT_NE(e.find("m.json: jobs[0].command: unknown command \"rendr\", did you mean \"render\"?"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("m.json: jobs[1].inputs[0]: missing.ply: no such file or folder"), std::string::npos) << e;
  EXPECT_NE(e.find("m.json: jobs[3].outputs[0]: ./same.spz is also written by jobs[2].outputs[0]"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("m.json: jobs[4].inputs[0]: same.spz is written by jobs[2].outputs[0]"), std::string::npos)
      << e;
  EXPECT_NE(e.find("m.json: jobs[5].args[3]: unknown placeholder {bogus}"), std::string::npos) << e;
  EXPECT_NE(e.find("m.json: jobs[6].outputs[1]: elsewhere/d.txt is neither named in the arguments"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("m.json: jobs[7].foreach: \"models/*.gltf\" matches no file"), std::string::npos) << e;
  EXPECT_NE(e.find("m.json: jobs[8]: unknown key \"frobs\""), std::string::npos) << e;
  EXPECT_NE(refusal(R"({"version": 2, "jobs": []})", dir).find("m.json: version: version 2 is not known"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"version": 1, "jobs": []})", dir).find("m.json: jobs: expected a non-empty array"),
            std::string::npos);
  EXPECT_NE(
      refusal(
          R"({"version": 1, "jobs": [{"command": "convert", "inputs": ["a.ply"], "outputs": ["n.spz"], "name": "x"},
                                               {"command": "convert", "inputs": ["a.ply"], "outputs": ["o.spz"], "name": "x"}]})",
          dir)
          .find("m.json: jobs[1].name: \"x\" is also the name of jobs[0]"),
      std::string::npos);
  EXPECT_NE(
      refusal(
          R"({"version": 1, "defaults": {"flags": {"bake": []}}, "jobs": [{"command": "info", "inputs": ["a.ply"]}]})",
          dir)
          .find("m.json: defaults.flags.bake: \"bake\" is not a command a batch runs"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"version": 1, "jobs": [{"command": "batch", "inputs": ["a.ply"]}]})", dir)
                .find("jobs[0].command: unknown command \"batch\""),
            std::string::npos);
}

TEST(BatchShares, TasksSplitJobsByIndexAndArraysListOnlyPendingTasks) {
  EXPECT_EQ(batch::shareOf(7, 1, 3), (std::vector<size_t>{1, 4}));
  EXPECT_EQ(batch::shareOf(2, 5, 6), (std::vector<size_t>{}));
  EXPECT_EQ(batch::tasksToSubmit({0, 3, 4, 9}, 3), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(batch::tasksToSubmit({2, 5}, 0), (std::vector<size_t>{2, 5}));
  EXPECT_EQ(batch::arraySpec({0, 1, 2, 3, 5, 7, 8, 9}), "0-3,5,7-9");
  EXPECT_EQ(batch::arraySpec({4}), "4");
  EXPECT_EQ(batch::shellQuote("a b'c"), "'a b'\\''c'");
  EXPECT_EQ(batch::shellQuote("out/x.spl2"), "out/x.spl2");
}

TEST(BatchHash, StreamedSha256MatchesTheWholeDigest) {
  EXPECT_EQ(sha256Hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("abc"), 3)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  const std::string whole = sha256Hex(bytes);
  for (size_t piece : {1u, 55u, 63u, 64u, 65u, 999u}) {
    Sha256 h;
    for (size_t i = 0; i < bytes.size(); i += piece)
      h.update(std::span<const uint8_t>(bytes.data() + i, std::min(piece, bytes.size() - i)));
    EXPECT_EQ(h.hexDigest(), whole) << piece;
  }
}

TEST(BatchPlot, JobTimesChartHasARowPerJobColouredByStatus) {
  std::vector<batch::TimedJob> jobs = {{"a", 100.0, 101.5, batch::JobStatus::kDone},
                                       {"b", 100.5, 103.0, batch::JobStatus::kFailed}};
  const ImageRGBA im = batch::plotJobTimes(jobs);
  EXPECT_EQ(im.width, 900);
  size_t blue = 0, red = 0;
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x) {
      const float* p = im.at(x, y);
      blue += p[2] > 0.7f && p[0] < 0.2f;
      red += p[0] > 0.8f && p[1] < 0.2f;
    }
  EXPECT_GT(blue, 100u);
  EXPECT_GT(red, 100u);
  EXPECT_GT(batch::plotJobTimes({}).height, 0);
}

}  // namespace
}  // namespace sf
