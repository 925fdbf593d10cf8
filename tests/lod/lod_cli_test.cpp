// `splatforge lod build | info | cut` (apps/splatforge/lod_command.*): the command line's conventions for the
// three actions, and biker built, cut under several budgets and rendered with the CPU renderer against the
// full capture from the same camera (PSNR reported; a budget above the leaf count gives the leaves and the
// same image).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/image.h"
#include "io/formats.h"
#include "io/image_io.h"
#include "support/test_support.h"

namespace sf {
namespace {

using test::cli;
using test::CliRun;

TEST(LodCli, ActionsFollowTheConventions) {
  const CliRun top = cli("--help");
  EXPECT_NE(top.out.find("Level of detail"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("  lod"), std::string::npos) << top.out;
  struct Action {
    const char* name;
    bool writes, json;
  };
  for (const Action& a :
       {Action{"lod build", true, false}, Action{"lod info", false, true}, Action{"lod cut", true, false}}) {
    const std::string name = a.name;
    const CliRun bad = cli(name + " --no-such-option");
    EXPECT_EQ(bad.code, 2) << name << "\n" << bad.out;
    EXPECT_NE(bad.out.find("splatforge " + name + ": error: "), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("(see splatforge " + name + " --help)"), std::string::npos) << bad.out;
    const CliRun help = cli(name + " --help");
    ASSERT_EQ(help.code, 0) << name;
    EXPECT_NE(help.out.find("Usage"), std::string::npos);
    EXPECT_EQ(help.out.find("  -o,--output") != std::string::npos, a.writes) << name << "\n" << help.out;
    EXPECT_EQ(help.out.find("  --json ") != std::string::npos, a.json) << name << "\n" << help.out;
    EXPECT_EQ(help.out.find("--json-out"), std::string::npos) << name;
    EXPECT_NE(help.out.find("--spz-axes auto|rub|raw"), std::string::npos) << name;
  }
  EXPECT_EQ(cli("lod bild x.ply -o y").code, 2);
  EXPECT_NE(cli("lod bild x.ply -o y").out.find("did you mean 'build'?"), std::string::npos);
  // Usage errors: one line, exit 2.
  const std::string dir = test::tempDir("LodCliUsage");
  for (const std::string& args : {std::string("lod build x.ply"), std::string("lod cut ") + dir + " -o c.ply",
                                  std::string("lod cut ") + dir + " --budget 5 -o c.xyz",
                                  std::string("lod build x.ply -o y --fanout 1")}) {
    const CliRun r = cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    EXPECT_EQ(out.find('\n'), std::string::npos) << args << "\n" << r.out;
  }
  // A directory without an index: exit 1, named.
  const CliRun missing = cli("lod info " + dir);
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_NE(missing.out.find("splatforge lod info: error: " + dir + "/index.sflod: file is missing"),
            std::string::npos)
      << missing.out;
}

TEST(LodCli, BikerCutRendersAsTheFullCapture) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  const std::string dir = test::tempDir("LodCliBiker");
  // Out of core (8 MB: runs of about 30,000 gaussians), chunks of 4,096 leaves.
  const CliRun build = cli("lod build " + biker + " -o " + dir + "/tree --chunk-size 4096 --memory-mb 8");
  ASSERT_EQ(build.code, 0) << build.out;
  EXPECT_NE(build.out.find("sorted out of core in "), std::string::npos) << build.out;
  EXPECT_NE(build.out.find("peak memory"), std::string::npos) << build.out;
  std::cout << build.out;

  const CliRun info = cli("lod info " + dir + "/tree --json --verify");
  ASSERT_EQ(info.code, 0) << info.out;
  const nlohmann::json j = nlohmann::json::parse(info.out.substr(info.out.find('{')));
  const uint64_t leaves = j["leaves"];
  EXPECT_EQ(leaves, loadSplats(biker).cloud.size());
  EXPECT_EQ(j["chunk_count"], (leaves + 4095) / 4096);
  EXPECT_EQ(j["levels"][0], leaves);
  EXPECT_EQ(j["levels"].back(), 1);
  EXPECT_TRUE(j["verified"]);

  auto render = [&](const std::string& input, const std::string& png) {
    const CliRun r = cli("render " + input + " --camera " + dir + "/cam.json --backend cpu -o " + png);
    EXPECT_EQ(r.code, 0) << r.out;
    return readPng(png);
  };
  // The full budget first: it writes the camera the others use.
  const CliRun full_cut = cli("lod cut " + dir + "/tree --budget 1000000 --width 480 --height 270 -o " + dir +
                              "/all.ply --camera-out " + dir + "/cam.json");
  ASSERT_EQ(full_cut.code, 0) << full_cut.out;
  const ImageRGBA reference = render(biker, dir + "/full.png");
  const GaussianCloud all = loadSplats(dir + "/all.ply").cloud;
  EXPECT_EQ(all.size(), leaves) << "every leaf is in view of the default camera";
  const ImageDiff same = compareImages(render(dir + "/all.ply", dir + "/all.png"), reference);
  std::cout << "budget 1000000: " << all.size() << " gaussians, PSNR " << same.psnr << " dB, max difference "
            << same.max_abs << "\n";
  // The leaves in the input's order: the same 8-bit image (the PLY's exp/log and sigmoid/logit round trip
  // moves values by about 1e-7, below an 8-bit step here).
  EXPECT_EQ(same.max_abs, 0.0);

  // A camera that sees none of it: exit 1, said.
  std::ofstream(dir + "/away.json") << R"({"eye": [0, 0, -50], "target": [0, 0, -100], "fov_y_deg": 40})";
  const CliRun away =
      cli("lod cut " + dir + "/tree --budget 100 --camera " + dir + "/away.json -o " + dir + "/away.ply");
  EXPECT_EQ(away.code, 1) << away.out;
  EXPECT_NE(away.out.find("splatforge lod cut: error: no node of the hierarchy is in view"),
            std::string::npos)
      << away.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/away.ply"));

  double last_psnr = same.psnr;
  for (uint64_t budget : {uint64_t{60000}, uint64_t{20000}, uint64_t{5000}}) {
    const std::string out = dir + "/cut_" + std::to_string(budget) + ".ply";
    const CliRun cut = cli("lod cut " + dir + "/tree --budget " + std::to_string(budget) + " --camera " +
                           dir + "/cam.json -o " + out);
    ASSERT_EQ(cut.code, 0) << cut.out;
    const GaussianCloud c = loadSplats(out).cloud;
    EXPECT_LE(c.size(), budget);
    EXPECT_GT(c.size(), budget - 8);  // the fan-out: a refinement adds at most 7
    const ImageDiff d =
        compareImages(render(out, dir + "/cut_" + std::to_string(budget) + ".png"), reference);
    std::cout << "budget " << budget << ": " << c.size() << " gaussians, PSNR " << d.psnr << " dB\n";
    RecordProperty("psnr_" + std::to_string(budget), std::to_string(d.psnr));
    EXPECT_GT(d.psnr, 18.0) << budget;
    EXPECT_LT(d.psnr, last_psnr) << budget;  // fewer gaussians, further from the full image
    last_psnr = d.psnr;
  }
}

// A compressed capture: decoded whole (said, with the memory it takes), built, verified; its leaves are the
// decoded gaussians. A file that is not a splat file, and a truncated SPZ, are refused naming the file.
TEST(LodCli, CompressedInputsAreDecodedAndBuilt) {
  SF_REQUIRE_ASSET(biker, "splats/biker.spz");
  const std::string dir = test::tempDir("LodCliCompressed");
  const CliRun build = cli("lod build " + biker + " -o " + dir + "/tree --chunk-size 4096");
  ASSERT_EQ(build.code, 0) << build.out;
  std::cout << build.out;
  EXPECT_NE(build.out.find("decoding " + biker + " whole"), std::string::npos) << build.out;
  EXPECT_NE(build.out.find("held in memory: "), std::string::npos) << build.out;
  EXPECT_NE(build.out.find("input spz, decoded whole"), std::string::npos) << build.out;
  const CliRun info = cli("lod info " + dir + "/tree --json --verify");
  ASSERT_EQ(info.code, 0) << info.out;
  const nlohmann::json j = nlohmann::json::parse(info.out.substr(info.out.find('{')));
  EXPECT_EQ(j["leaves"], loadSplats(biker).cloud.size());
  EXPECT_TRUE(j["verified"]);
  // Too little memory for the decoded cloud: refused with the figures, exit 1.
  const CliRun small = cli("lod build " + biker + " -o " + dir + "/small --memory-mb 4");
  EXPECT_EQ(small.code, 1) << small.out;
  EXPECT_NE(small.out.find("splatforge lod build: error: " + biker + ": decoded whole"), std::string::npos)
      << small.out;

  std::ofstream(dir + "/notes.txt") << "not a splat\n";
  const CliRun text = cli("lod build " + dir + "/notes.txt -o " + dir + "/t");
  EXPECT_EQ(text.code, 1) << text.out;
  EXPECT_NE(text.out.find("splatforge lod build: error: " + dir + "/notes.txt"), std::string::npos)
      << text.out;
  std::ifstream src(biker, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
  std::ofstream(dir + "/cut.spz", std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  const CliRun cut = cli("lod build " + dir + "/cut.spz -o " + dir + "/c");
  EXPECT_EQ(cut.code, 1) << cut.out;
  EXPECT_NE(cut.out.find("splatforge lod build: error: " + dir + "/cut.spz"), std::string::npos) << cut.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/c/index.sflod"));
}

// A binary little-endian PLY of float properties, raw: its property names and rows.
struct RawPly {
  std::vector<std::string> names;
  std::vector<float> values;  // row-major
  size_t count = 0;
  float at(size_t row, const std::string& name) const {
    const size_t k = static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    if (k == names.size() || row >= count) {
      ADD_FAILURE() << "no property " << name << " or row " << row;
      return std::numeric_limits<float>::quiet_NaN();
    }
    return values[row * names.size() + k];
  }
};

RawPly readRawPly(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RawPly p;
  std::string line;
  while (std::getline(in, line) && line != "end_header") {
    if (line.rfind("element vertex ", 0) == 0) p.count = std::stoull(line.substr(15));
    if (line.rfind("property float ", 0) == 0) p.names.push_back(line.substr(15));
  }
  p.values.resize(p.count * p.names.size());
  in.read(reinterpret_cast<char*>(p.values.data()), static_cast<std::streamsize>(p.values.size() * 4));
  EXPECT_TRUE(in) << path << ": truncated";
  return p;
}

// scripts/make_city.py (the LOD benchmarks' synthetic city): every row of every copy is the capture's row
// under the transform its sidecar records, worked here in double from the docstring's formulas; the copies
// sit on distinct cells; the city builds into a hierarchy that verifies.
TEST(LodCity, CopiesAreTheCaptureUnderTheirRecordedTransforms) {
  SF_REQUIRE_ASSET(biker, "splats/biker.ply");
  const std::string python = SF_NUMPY_PYTHON;
  if (python.empty() || std::system(("\"" + python + "\" -c 'import numpy' 2>/dev/null").c_str()) != 0)
    SF_SKIP_OR_FAIL("no Python 3 with NumPy (python3-numpy, scripts/setup.sh) for scripts/make_city.py");
  const std::string dir = test::tempDir("lod_city");
  const std::string cmd = "\"" + python + "\" " + SF_MAKE_CITY + " " + biker + " -o " + dir +
                          "/city.ply --copies 5 --seed 3 > " + dir + "/make.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const RawPly src = readRawPly(biker), city = readRawPly(dir + "/city.ply");
  ASSERT_EQ(city.count, 5 * src.count);
  const nlohmann::json side = nlohmann::json::parse(std::ifstream(dir + "/city.json"));
  ASSERT_EQ(side["copies"], 5);
  ASSERT_EQ(side["gaussians"], city.count);
  std::set<std::pair<int, int>> cells;
  double worst = 0;
  for (size_t k = 0; k < 5; ++k) {
    const nlohmann::json& c = side["layout"][k];
    cells.insert({c["cell"][0].get<int>(), c["cell"][1].get<int>()});
    const double yaw = c["yaw"], s = c["scale"];
    const double cy = std::cos(yaw), sy = std::sin(yaw), hw = std::cos(yaw / 2), hy = std::sin(yaw / 2);
    auto v3 = [&](const char* key, int i) { return c[key][i].get<double>(); };
    for (size_t r = 0; r < src.count; r += 97) {
      const size_t o = k * src.count + r;
      auto f = [&](const char* n) { return static_cast<double>(src.at(r, n)); };
      const double dx = f("x") - v3("centre", 0), dy = f("y") - v3("centre", 1),
                   dz = f("z") - v3("centre", 2);
      const double w = f("rot_0"), x = f("rot_1"), y = f("rot_2"), z = f("rot_3");
      const std::pair<const char*, double> expect[] = {
          {"x", v3("centre", 0) + s * (cy * dx + sy * dz) + v3("offset", 0)},
          {"y", v3("centre", 1) + s * dy + v3("offset", 1)},
          {"z", v3("centre", 2) + s * (-sy * dx + cy * dz) + v3("offset", 2)},
          {"f_dc_0", f("f_dc_0") + v3("tint", 0)},
          {"f_dc_1", f("f_dc_1") + v3("tint", 1)},
          {"f_dc_2", f("f_dc_2") + v3("tint", 2)},
          {"opacity", f("opacity")},
          {"scale_0", f("scale_0") + std::log(s)},
          {"scale_1", f("scale_1") + std::log(s)},
          {"scale_2", f("scale_2") + std::log(s)},
          {"rot_0", hw * w - hy * y},
          {"rot_1", hw * x + hy * z},
          {"rot_2", hw * y + hy * w},
          {"rot_3", hw * z - hy * x}};
      for (const auto& [name, want] : expect) {
        if (!std::isfinite(want)) {  // (biker.ply has opacities of +inf: copied as they are)
          ASSERT_EQ(city.at(o, name), want) << "copy " << k << " row " << r << " " << name;
          continue;
        }
        const double err = std::abs(city.at(o, name) - want) / std::max(1.0, std::abs(want));
        worst = std::max(worst, err);
        ASSERT_LT(err, 1e-5) << "copy " << k << " row " << r << " " << name;
      }
    }
  }
  EXPECT_EQ(cells.size(), 5u) << "copies share a cell";
  std::cout << "[lod-city] 5 copies of " << src.count << " rows, worst relative error " << worst << "\n";
  const CliRun built = cli("lod build " + dir + "/city.ply -o " + dir + "/city.lod");
  ASSERT_EQ(built.code, 0) << built.out;
  const CliRun verify = cli("lod info " + dir + "/city.lod --verify");
  EXPECT_EQ(verify.code, 0) << verify.out;
}

}  // namespace
}  // namespace sf
