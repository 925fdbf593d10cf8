// `splatforge batch --slurm` on a real Slurm: the test writes a slurm.conf for this machine (one node, its
// CPUs, every state folder, log, pid file, the munge key and socket inside a temporary folder), starts
// munged, slurmctld and slurmd as its own processes, submits a manifest of seven jobs (two hull bakes, a
// short training, a convert, a render, a job with a bad input and a longer training), cancels the longer
// one's task with scancel while it runs, resubmits, and checks that only what was missing ran, that every
// output and record is right, and that the outputs are byte for byte those of a local run with two workers.
// The daemons are stopped whatever happens. Skipped without Slurm or the assets (failed under CI=true).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "core/sha256.h"
#include "io/file.h"
#include "io/formats.h"
#include "io/json.h"
#include "support/test_support.h"

extern char** environ;

namespace sf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string findProgram(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"})
    if (::access((std::string(dir) + "/" + name).c_str(), X_OK) == 0) return std::string(dir) + "/" + name;
  return {};
}

// Runs a command line through the shell; its exit code, stdout and stderr in `out`.
int shell(const std::string& command, std::string* out = nullptr) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  const int status = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// munged, slurmctld and slurmd for this machine, all in a temporary folder, stopped by the destructor.
class SlurmCluster {
 public:
  bool start(std::string& why) {
    char tmpl[] = "/tmp/sf-slurm-XXXXXX";  // short: the munge socket's path must fit a socket address
    if (!::mkdtemp(tmpl)) return why = "mkdtemp failed", false;
    root_ = tmpl;
    for (const char* d : {"state", "spool", "log", "run", "munge"}) fs::create_directories(root_ + "/" + d);
    fs::permissions(root_ + "/munge", fs::perms::owner_all);
    {
      std::ofstream key(root_ + "/munge/munge.key", std::ios::binary);
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::string bytes(1024, '\0');
      random.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      key << bytes;
    }
    fs::permissions(root_ + "/munge/munge.key", fs::perms::owner_read);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string node = host;
    node = node.substr(0, node.find('.'));
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    std::ofstream conf(root_ + "/slurm.conf");
    conf << "ClusterName=sftest\nSlurmctldHost=" << node << "(127.0.0.1)\nSlurmctldPort=" << freePort()
         << "\nSlurmdPort=" << freePort()
         << "\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket="
         << root_ << "/munge/munge.socket\nStateSaveLocation=" << root_ << "/state\nSlurmdSpoolDir=" << root_
         << "/spool\nSlurmctldPidFile=" << root_ << "/run/slurmctld.pid\nSlurmdPidFile=" << root_
         << "/run/slurmd.pid\nSlurmctldLogFile=" << root_ << "/log/slurmctld.log\nSlurmdLogFile=" << root_
         << "/log/slurmd.log\n"
         << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/"
            "none\nMpiDefault=none\nSchedulerType=sched/builtin\n"
            "SelectType=select/"
            "cons_tres\nSelectTypeParameters=CR_CPU\nReturnToService=2\nInactiveLimit=0\nKillWait="
            "5\nMinJobAge=300\n"
         << "NodeName=" << node << " NodeAddr=127.0.0.1 CPUs=" << cpus
         << " State=UNKNOWN\nPartitionName=debug Nodes=" << node
         << " Default=YES MaxTime=INFINITE State=UP\n";
    conf.close();
    ::setenv("SLURM_CONF", (root_ + "/slurm.conf").c_str(), 1);
    const std::string m = root_ + "/munge/";
    if (!spawn({findProgram("munged"), "-F", "--force", "--key-file=" + m + "munge.key",
                "--socket=" + m + "munge.socket", "--pid-file=" + root_ + "/run/munged.pid",
                "--log-file=" + root_ + "/log/munged.log", "--seed-file=" + m + "seed"},
               "munged", why))
      return false;
    if (!waitFor([&] { return fs::exists(m + "munge.socket"); }, 10))
      return why = "munged did not make its socket: " + log("munged"), false;
    if (!spawn({findProgram("slurmctld"), "-D", "-i"}, "slurmctld", why)) return false;
    if (!spawn({findProgram("slurmd"), "-D", "-N", node}, "slurmd", why)) return false;
    const bool idle = waitFor(
        [&] {
          std::string out;
          return shell("sinfo -h -o %t", &out) == 0 && out.find("idle") != std::string::npos;
        },
        30);
    if (!idle) return why = "the node never became idle: " + log("slurmctld") + log("slurmd"), false;
    return true;
  }

  ~SlurmCluster() {
    for (auto it = pids_.rbegin(); it != pids_.rend(); ++it) ::kill(*it, SIGTERM);
    for (pid_t pid : pids_) {
      int status = 0;
      const auto t0 = Clock::now();
      while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (Clock::now() - t0 > std::chrono::seconds(10)) {
          ::kill(pid, SIGKILL);
          ::waitpid(pid, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    ::unsetenv("SLURM_CONF");
    std::error_code ec;
    if (!root_.empty() && !::testing::Test::HasFailure()) fs::remove_all(root_, ec);
  }

  std::string log(const std::string& daemon) const {
    std::ifstream in(root_ + "/log/" + daemon + ".out");
    return "\n--- " + daemon + " ---\n" + std::string(std::istreambuf_iterator<char>(in), {});
  }

  static bool waitFor(const std::function<bool()>& ready, double seconds) {
    const auto t0 = Clock::now();
    while (!ready()) {
      if (std::chrono::duration<double>(Clock::now() - t0).count() > seconds) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return true;
  }

 private:
  bool spawn(const std::vector<std::string>& argv, const std::string& name, std::string& why) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = root_ + "/log/" + name + ".out";
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int err = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) return why = name + ": cannot start: " + std::strerror(err), false;
    pids_.push_back(pid);
    return true;
  }

  std::string root_;
  std::vector<pid_t> pids_;
};

nlohmann::json statusJson(const std::string& manifest) {
  std::string out;
  test::runCli("batch status " + manifest + " --json", &out);
  const size_t start = out.rfind("\n{\n") != std::string::npos ? out.rfind("\n{\n") + 1 : out.find("{\n"),
               end = out.rfind("\n}");
  if (start == std::string::npos || end == std::string::npos || end < start) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(out.substr(start, end + 2 - start));
  } catch (const std::exception&) {
    return nlohmann::json::object();
  }
}

bool arrayDone(const std::string& job_id) {
  std::string out;
  return shell("squeue -h -j " + job_id + " -o %i", &out) == 0 &&
         out.find_first_not_of(" \n") == std::string::npos;
}

std::string jobId(const std::string& submit_output) {
  const size_t at = submit_output.find("submitted Slurm array job ");
  if (at == std::string::npos) return {};
  const size_t start = at + std::strlen("submitted Slurm array job ");
  return submit_output.substr(start, submit_output.find(' ', start) - start);
}

// The manifest: two hull bakes (a pattern), a short training, a convert, a render, a bad input, a longer
// training.
void writeWorkspace(const std::string& dir, const std::string& box, const std::string& rigged) {
  fs::create_directories(dir + "/models");
  fs::copy_file(box, dir + "/models/box_animated.gltf");
  fs::copy_file(rigged, dir + "/models/rigged_simple.gltf");
  GaussianCloud c = test::randomCloud(400, 1, 7);
  for (Vec3& p : c.positions) p = p + Vec3{0, 0, 4};
  saveSplats(c, dir + "/cloud.ply");
  std::ofstream(dir + "/bad.ply") << "ply\nformat nonsense\n";
  std::ofstream(dir + "/m.json") << R"({
  "version": 1,
  "defaults": {"flags": {"hull bake": ["--budget", "300", "--ao-rays", "4"],
                         "train": ["--budget", "200", "--size", "32", "--views", "6", "--backend", "cpu"],
                         "render": ["--backend", "cpu", "--width", "80", "--height", "60"]}},
  "jobs": [
    {"command": "hull bake", "foreach": "models/*.gltf", "inputs": ["{match}"], "outputs": ["hulls/{stem}.spl2", "hulls/{stem}.meta.json"]},
    {"name": "train-box", "command": "train", "inputs": ["models/box_animated.gltf"], "outputs": ["trained/box.ply"], "flags": ["--steps", "20"]},
    {"command": "convert", "inputs": ["cloud.ply"], "outputs": ["out/cloud.spz"]},
    {"command": "render", "inputs": ["cloud.ply"], "outputs": ["out/cloud.png"]},
    {"name": "bad-input", "command": "convert", "inputs": ["bad.ply"], "outputs": ["out/bad.spz"]},
    {"name": "long-train", "command": "train", "inputs": ["models/rigged_simple.gltf"], "outputs": ["long/rigged.ply"], "flags": ["--steps", "1500"]}
  ]
})";
}

TEST(BatchSlurm, ArrayJobResumesOnlyWhatAScancelLeftMissing) {
  for (const char* program : {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"})
    if (findProgram(program).empty())
      SF_SKIP_OR_FAIL(program << " not found (scripts/setup.sh installs slurm-wlm and munge)");
  if (::geteuid() != 0) SF_SKIP_OR_FAIL("the test's Slurm runs its daemons as root");
  SF_REQUIRE_ASSET(box, "gltf/box_animated.gltf");
  SF_REQUIRE_ASSET(rigged, "gltf/rigged_simple.gltf");
  const auto t_start = Clock::now();
  const std::string base = test::tempDir("BatchSlurm");
  const std::string sdir = base + "/slurm_run", ldir = base + "/local_run";
  writeWorkspace(sdir, box, rigged);
  writeWorkspace(ldir, box, rigged);
  const std::string manifest = sdir + "/m.json";

  SlurmCluster cluster;
  std::string why;
  ASSERT_TRUE(cluster.start(why)) << why;

  // Submit: seven jobs, one array task each.
  std::string out;
  ASSERT_EQ(test::runCli("batch " + manifest + " --slurm", &out), 0) << out;
  const std::string id = jobId(out);
  ASSERT_FALSE(id.empty()) << out;
  EXPECT_NE(out.find("(tasks 0-6: 7 of 7 jobs to run)"), std::string::npos) << out;

  // Cancel the longer training's task once it runs.
  ASSERT_TRUE(SlurmCluster::waitFor(
      [&] {
        const nlohmann::json s = statusJson(manifest);
        return s.contains("list") && s["list"][6]["status"] == "running";
      },
      60))
      << "the long training never ran" << cluster.log("slurmctld");
  ASSERT_EQ(shell("scancel " + id + "_6", &out), 0) << out;
  ASSERT_TRUE(SlurmCluster::waitFor([&] { return arrayDone(id); }, 60)) << "the array job did not finish";
  nlohmann::json s = statusJson(manifest);
  EXPECT_EQ(s["done"], 5) << s.dump(2);
  EXPECT_EQ(s["failed"], 1) << s.dump(2);
  EXPECT_NE(s["list"][6]["status"], "done");
  EXPECT_NE(s["list"][6]["status"], "running");
  EXPECT_FALSE(fs::exists(sdir + "/long/rigged.ply"));
  for (const fs::directory_entry& e : fs::directory_iterator(sdir + "/long"))
    ADD_FAILURE() << "left behind: " << e.path();
  std::map<std::string, double> finished;
  for (const nlohmann::json& job : s["list"])
    if (job["status"] == "done" || job["status"] == "failed") {
      const nlohmann::json rec = nlohmann::json::parse(std::ifstream(
          sdir + "/m.batch/jobs/" + fs::path(job["log"].get<std::string>()).stem().string() + ".json"));
      finished[job["name"]] = rec["finished"].get<double>();
    }
  EXPECT_EQ(finished.size(), 6u);

  // Resubmit: only the cancelled job's task.
  ASSERT_EQ(test::runCli("batch " + manifest + " --slurm", &out), 0) << out;
  const std::string id2 = jobId(out);
  EXPECT_NE(out.find("(tasks 6: 1 of 7 jobs to run)"), std::string::npos) << out;
  ASSERT_TRUE(SlurmCluster::waitFor([&] { return arrayDone(id2); }, 60))
      << "the resubmitted task did not finish";
  s = statusJson(manifest);
  EXPECT_EQ(s["done"], 6) << s.dump(2);
  EXPECT_EQ(s["failed"], 1) << s.dump(2);
  EXPECT_EQ(s["pending"], 0) << s.dump(2);
  for (const nlohmann::json& job : s["list"]) {
    if (job["name"] == "long-train") continue;
    const nlohmann::json rec = nlohmann::json::parse(std::ifstream(
        sdir + "/m.batch/jobs/" + fs::path(job["log"].get<std::string>()).stem().string() + ".json"));
    EXPECT_EQ(rec["finished"].get<double>(), finished[job["name"]]) << job["name"] << " ran again";
  }
  // Nothing more to submit.
  ASSERT_EQ(test::runCli("batch " + manifest + " --slurm", &out), 0) << out;
  EXPECT_NE(out.find("nothing to submit"), std::string::npos) << out;

  // The records: the bad input's error, the inputs' hashes, the task logs.
  const nlohmann::json& bad = s["list"][5];
  EXPECT_EQ(bad["status"], "failed");
  EXPECT_NE(bad["error"].get<std::string>().find("bad.ply"), std::string::npos) << bad.dump();
  const nlohmann::json rec = nlohmann::json::parse(std::ifstream(
      sdir + "/m.batch/jobs/" + fs::path(s["list"][3]["log"].get<std::string>()).stem().string() + ".json"));
  EXPECT_EQ(rec["inputs"]["cloud.ply"]["sha256"], sha256Hex(readFile(sdir + "/cloud.ply")));
  EXPECT_NE(rec["task"].get<std::string>().find("slurm " + id + "_3"), std::string::npos) << rec.dump();
  EXPECT_TRUE(fs::exists(sdir + "/m.batch/slurm/" + id + "_6.out"));
  EXPECT_TRUE(fs::exists(sdir + "/m.batch/job_times.png"));

  // A local run with two workers writes the same bytes (the sidecars that record wall times aside).
  ASSERT_EQ(test::runCli("batch " + ldir + "/m.json --jobs 2", &out), 1) << out;
  size_t compared = 0;
  for (const char* f : {"hulls/box_animated.spl2", "hulls/rigged_simple.spl2", "trained/box.ply",
                        "trained/box.plot.png", "out/cloud.spz", "out/cloud.png", "long/rigged.ply"}) {
    ASSERT_TRUE(fs::exists(sdir + "/" + f)) << f;
    ASSERT_TRUE(fs::exists(ldir + "/" + f)) << f;
    EXPECT_EQ(readFile(sdir + "/" + f), readFile(ldir + "/" + f))
        << f << " differs between the Slurm and the local run";
    ++compared;
  }
  EXPECT_EQ(compared, 7u);
  EXPECT_TRUE(fs::exists(sdir + "/hulls/box_animated.meta.json"));
  const double seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  std::printf("the Slurm test took %.1f s\n", seconds);
}

}  // namespace
}  // namespace sf
