// `splatforge batch` run locally as a process: validation before anything runs, two workers, outputs that
// appear only whole, skip on rerun, a changed input, --retry-failed, shards and the scheduler's task index,
// `batch status`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/sha256.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/json.h"
#include "support/test_support.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

using test::cli;
using test::CliRun;

std::string readText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// The JSON document a --json run printed last on stdout (stderr is mixed in; the document starts at a line
// "{").
nlohmann::json lastJson(const std::string& out) {
  const size_t at = out.rfind("\n{\n") != std::string::npos ? out.rfind("\n{\n") + 1 : out.find("{\n");
  EXPECT_NE(at, std::string::npos) << out;
  const size_t end = out.rfind("\n}");
  return nlohmann::json::parse(out.substr(at, end + 2 - at));
}

void cloudAt(const std::string& path, uint32_t seed) {
  GaussianCloud c = test::randomCloud(300, 1, seed);
  for (Vec3& p : c.positions) p = p + Vec3{0, 0, 4};
  saveSplats(c, path);
}

bool hasStaging(const std::string& dir) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().rfind(".sfbatch", 0) == 0) return true;
  return false;
}

const char* kManifest = R"({
  "version": 1,
  "defaults": {"flags": {"render": ["--backend", "cpu", "--width", "64", "--height", "48"]}},
  "jobs": [
    {"command": "convert", "foreach": "clouds/*.ply", "inputs": ["{match}"], "outputs": ["out/{stem}.spz"]},
    {"command": "render", "inputs": ["clouds/a.ply"], "outputs": ["out/a.png"]},
    {"name": "broken", "command": "convert", "inputs": ["broken.ply"], "outputs": ["out/broken.spz"]}
  ]
})";

TEST(BatchCli, RefusesABadManifestBeforeRunningAnything) {
  const std::string dir = test::tempDir("BatchCliRefuses");
  fs::create_directories(dir + "/clouds");
  cloudAt(dir + "/clouds/a.ply", 1);
  writeText(dir + "/m.json", R"({"version": 1, "jobs": [
    {"command": "convert", "inputs": ["clouds/a.ply"], "outputs": ["out/a.spz"]},
    {"command": "convert", "inputs": ["clouds/nope.ply"], "outputs": ["out/b.spz"]},
    {"command": "hull bak", "inputs": ["clouds/a.ply"], "outputs": ["out/c.spl2"]},
    {"command": "convert", "inputs": ["clouds/a.ply"], "outputs": ["out/a.spz"]}]})");
  const CliRun r = cli("batch " + dir + "/m.json");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("splatforge batch: error: " + dir +
                       "/m.json: jobs[1].inputs[0]: clouds/nope.ply: no such file or folder"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("jobs[2].command: unknown command \"hull bak\", did you mean \"hull bake\"?"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("jobs[3].outputs[0]: out/a.spz is also written by jobs[0].outputs[0] (two jobs "
                       "writing one output)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir + "/out"));
  EXPECT_FALSE(fs::exists(dir + "/m.batch"));
  // Usage errors: exit 2 with a pointer to the help.
  const CliRun none = cli("batch");
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find("see splatforge batch --help"), std::string::npos) << none.out;
  EXPECT_EQ(cli("batch " + dir + "/m.json --shard 3/2").code, 2);
  EXPECT_EQ(cli("batch " + dir + "/m.json --partition gpu").code, 2);
  EXPECT_EQ(cli("batch " + dir + "/m.json --slurm --task 1").code, 2);
  const CliRun help = cli("batch status --help");
  EXPECT_EQ(help.code, 0) << help.out;
}

TEST(BatchCli, LocalRunsSkipRetryAndShard) {
  const std::string dir = test::tempDir("BatchCliLocal");
  fs::create_directories(dir + "/clouds");
  cloudAt(dir + "/clouds/a.ply", 1);
  cloudAt(dir + "/clouds/b.ply", 2);
  writeText(dir + "/broken.ply", "ply\nformat nonsense\n");
  writeText(dir + "/m.json", kManifest);
  const std::string m = dir + "/m.json";

  // Two workers: every good job done, the broken one failed with its error recorded, no staging left.
  CliRun r = cli("batch " + m + " --jobs 2 --json");
  EXPECT_EQ(r.code, 1) << r.out;
  nlohmann::json j = lastJson(r.out);
  EXPECT_EQ(j["ran"], 4);
  EXPECT_EQ(j["done"], 3);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_NE(r.out.find("1 of 4 jobs failed: jobs[2] broken"), std::string::npos) << r.out;
  for (const char* f : {"out/a.spz", "out/b.spz", "out/a.png"}) EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  EXPECT_FALSE(fs::exists(dir + "/out/broken.spz"));
  EXPECT_FALSE(hasStaging(dir + "/out"));
  EXPECT_TRUE(fs::exists(dir + "/m.batch/job_times.png"));
  // The same file a plain convert writes.
  ASSERT_EQ(cli("convert " + dir + "/clouds/a.ply -o " + dir + "/plain.spz").code, 0);
  EXPECT_EQ(readFile(dir + "/plain.spz"), readFile(dir + "/out/a.spz"));

  // The records: inputs' hashes, the command, exit status, error text.
  CliRun st = cli("batch status " + m + " --json");
  ASSERT_EQ(st.code, 0) << st.out;
  j = lastJson(st.out);
  EXPECT_EQ(j["done"], 3);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_EQ(j["pending"], 0);
  const nlohmann::json& broken = j["list"][3];
  EXPECT_EQ(broken["status"], "failed");
  EXPECT_NE(broken["exit_code"], 0);
  EXPECT_NE(broken["error"].get<std::string>().find("broken.ply"), std::string::npos) << broken.dump();
  bool found = false;
  for (const fs::directory_entry& e : fs::directory_iterator(dir + "/m.batch/jobs")) {
    const nlohmann::json rec = nlohmann::json::parse(std::ifstream(e.path()));
    if (rec["name"] != "out/a.spz") continue;
    found = true;
    const std::vector<uint8_t> bytes = readFile(dir + "/clouds/a.ply");
    EXPECT_EQ(rec["inputs"]["clouds/a.ply"]["sha256"], sha256Hex(bytes));
    EXPECT_EQ(rec["command"], "splatforge convert clouds/a.ply -o out/a.spz");
    EXPECT_EQ(rec["exit_code"], 0);
    EXPECT_EQ(rec["status"], "done");
  }
  EXPECT_TRUE(found);
  const CliRun human = cli("batch status " + m);
  EXPECT_NE(human.out.find("4 jobs: 3 done, 1 failed"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("slowest:"), std::string::npos) << human.out;

  // Again: nothing runs; the failed job stays failed until --retry-failed.
  r = cli("batch " + m + " --json");
  j = lastJson(r.out);
  EXPECT_EQ(j["ran"], 0);
  EXPECT_EQ(j["up_to_date"], 3);
  EXPECT_EQ(j["failed_before"], 1);
  r = cli("batch " + m + " --retry-failed --json");
  j = lastJson(r.out);
  EXPECT_EQ(j["ran"], 1);
  EXPECT_EQ(j["failed"], 1);

  // A changed input reruns its jobs only (b's convert); fixing the broken input runs that job without
  // --retry-failed.
  const auto a_time = fs::last_write_time(dir + "/out/a.spz");
  cloudAt(dir + "/clouds/b.ply", 3);
  cloudAt(dir + "/broken.ply", 4);
  r = cli("batch " + m + " --jobs 2 --json");
  EXPECT_EQ(r.code, 0) << r.out;
  j = lastJson(r.out);
  EXPECT_EQ(j["ran"], 2);
  EXPECT_EQ(j["done"], 2);
  EXPECT_EQ(j["up_to_date"], 2);
  EXPECT_EQ(fs::last_write_time(dir + "/out/a.spz"), a_time);
  EXPECT_TRUE(fs::exists(dir + "/out/broken.spz"));

  // A job that fails keeps its earlier output; a missing output is made again.
  writeText(dir + "/broken.ply", "ply\nformat nonsense\n");
  const std::vector<uint8_t> before = readFile(dir + "/out/broken.spz");
  fs::remove(dir + "/out/a.png");
  r = cli("batch " + m + " --json");
  EXPECT_EQ(r.code, 1) << r.out;
  j = lastJson(r.out);
  EXPECT_EQ(j["ran"], 2);
  EXPECT_EQ(readFile(dir + "/out/broken.spz"), before);
  EXPECT_TRUE(fs::exists(dir + "/out/a.png"));

  // Shards: --shard i/n, --task I --tasks N, and the scheduler's index.
  fs::remove_all(dir + "/m.batch");
  fs::remove_all(dir + "/out");
  cloudAt(dir + "/broken.ply", 4);
  r = cli("batch " + m + " --shard 1/2 --json");
  j = lastJson(r.out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(j["selected"], 2);  // jobs 1 and 3
  EXPECT_TRUE(fs::exists(dir + "/out/b.spz"));
  EXPECT_TRUE(fs::exists(dir + "/out/broken.spz"));
  EXPECT_FALSE(fs::exists(dir + "/out/a.spz"));
  ::setenv("JOB_COMPLETION_INDEX", "0", 1);
  r = cli("batch " + m + " --tasks 2 --json");
  ::unsetenv("JOB_COMPLETION_INDEX");
  j = lastJson(r.out);
  EXPECT_EQ(j["ran"], 2) << r.out;
  EXPECT_EQ(j["task"], "task 0/2");
  r = cli("batch " + m + " --task 3 --json");  // one job per task
  j = lastJson(r.out);
  EXPECT_EQ(j["selected"], 1);
  EXPECT_EQ(j["up_to_date"], 1);
  r = cli("batch " + m + " --task 7 --tasks 9 --json");  // a task past the last job: nothing to do
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(lastJson(r.out)["selected"], 0);
  // The plan without running: every job up to date.
  r = cli("batch " + m + " --dry-run");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("skip  out/a.spz"), std::string::npos) << r.out;
}

// A command that exits 0 without writing every declared output fails whole: nothing of it is published (the
// output it did write keeps its earlier content), and no staging folder is left behind.
TEST(BatchCli, AJobMissingAnOutputPublishesNothing) {
  const std::string dir = test::tempDir("BatchCliMissingOutput");
  fs::create_directories(dir + "/clouds");
  fs::create_directories(dir + "/out");
  cloudAt(dir + "/clouds/a.ply", 3);
  writeText(dir + "/out/a.spz", "an earlier output");
  writeText(dir + "/m.json", R"({"version": 1, "jobs": [
    {"name": "two", "command": "convert", "inputs": ["clouds/a.ply"], "outputs": ["out/a.spz", "out/never.ply"],
     "args": ["{input}", "-o", "{output0}"]}]})");
  const CliRun r = cli("batch " + dir + "/m.json");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("did not write out/never.ply"), std::string::npos) << r.out;
  EXPECT_EQ(readText(dir + "/out/a.spz"), "an earlier output");
  EXPECT_FALSE(fs::exists(dir + "/out/never.ply"));
  EXPECT_FALSE(hasStaging(dir + "/out"));
}

TEST(BatchCli, SlurmDryRunWritesTheArrayScript) {
  const std::string dir = test::tempDir("BatchCliSlurmDry");
  fs::create_directories(dir + "/clouds");
  cloudAt(dir + "/clouds/a.ply", 1);
  cloudAt(dir + "/clouds/b.ply", 2);
  cloudAt(dir + "/broken.ply", 4);
  writeText(dir + "/m.json", kManifest);
  const CliRun r = cli(
      "batch " + dir +
      "/m.json --slurm --dry-run --partition gpu --time 1:00:00 --gpus-per-task 1 --tasks 2 --max-parallel 8 "
      "--sbatch-arg=--exclusive --devices 0");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* line :
       {"#SBATCH --array=0-1%8", "#SBATCH --partition=gpu", "#SBATCH --time=1:00:00", "#SBATCH --gres=gpu:1",
        "--task \"$SLURM_ARRAY_TASK_ID\" --tasks 2 --devices 0", "sbatch --parsable --exclusive "})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

}  // namespace
}  // namespace sf
