// Slurm submission (batch/slurm.h): the array job's script, and sbatch run on it.
#include "batch/slurm.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "io/file.h"

extern char** environ;

namespace sf::batch {

namespace fs = std::filesystem;

std::vector<size_t> tasksToSubmit(const std::vector<size_t>& pending, size_t tasks) {
  std::set<size_t> s;
  for (size_t k : pending) s.insert(tasks > 0 ? k % tasks : k);
  return {s.begin(), s.end()};
}

std::string arraySpec(const std::vector<size_t>& indices) {
  std::string spec;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    if (!spec.empty()) spec += ',';
    spec += std::to_string(indices[i]);
    if (j > i) spec += '-' + std::to_string(indices[j]);
    i = j + 1;
  }
  return spec;
}

namespace {

// Runs `argv` and returns its exit code, with stdout and stderr collected into `output`.
int runCapture(const std::vector<std::string>& argv, std::string& output) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw Error(std::string("cannot make a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = ::posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (err != 0) {
    ::close(pipe_fds[0]);
    throw Error(argv[0] + ": cannot run: " + std::strerror(err) +
                (err == ENOENT ? " (is Slurm installed here, and sbatch on PATH?)" : ""));
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

SlurmSubmission submitToSlurm(const Manifest& m, const std::vector<size_t>& pending, const SlurmOptions& o,
                              bool dry_run) {
  SlurmSubmission s;
  const size_t tasks = o.tasks > 0 ? o.tasks : m.jobs.size();
  s.tasks = tasksToSubmit(pending, tasks);
  const fs::path slurm_dir = fs::path(m.state_dir) / "slurm";
  fs::create_directories(slurm_dir);
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  s.script_path = (slurm_dir / ("submit-" + std::string(stamp) + ".sh")).string();
  const std::string manifest = fs::absolute(m.path).lexically_normal().string();
  const std::string name = o.job_name.empty() ? "splatforge-" + fs::path(m.path).stem().string() : o.job_name;

  std::string sh = "#!/bin/bash\n";
  sh += "# A splatforge batch as a Slurm array job: task I runs the jobs of " + manifest + "\n";
  sh += "# whose index modulo " + std::to_string(tasks) +
        " is I (docs/batch.md). Written by `splatforge batch --slurm`;\n";
  sh += "# sbatch it again to run what is still missing (finished jobs are skipped).\n";
  auto directive = [&](const std::string& arg) { sh += "#SBATCH " + arg + "\n"; };
  directive("--job-name=" + name);
  directive("--array=" + arraySpec(s.tasks) +
            (o.max_parallel > 0 ? "%" + std::to_string(o.max_parallel) : ""));
  directive("--output=" + (slurm_dir / "%A_%a.out").string());
  directive("--chdir=" + m.dir);
  directive("--ntasks=1");
  if (!o.partition.empty()) directive("--partition=" + o.partition);
  if (!o.time_limit.empty()) directive("--time=" + o.time_limit);
  if (o.gpus_per_task > 0) directive("--gres=gpu:" + std::to_string(o.gpus_per_task));
  if (o.cpus_per_task > 0) directive("--cpus-per-task=" + std::to_string(o.cpus_per_task));
  if (!o.memory.empty()) directive("--mem=" + o.memory);
  std::string run = "exec " + shellQuote(o.executable) + " batch " + shellQuote(manifest) +
                    " --task \"$SLURM_ARRAY_TASK_ID\" --tasks " + std::to_string(tasks);
  for (const std::string& f : o.task_flags) run += ' ' + shellQuote(f);
  sh += run + "\n";
  s.script = sh;
  writeFileAtomic(s.script_path,
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(sh.data()), sh.size()));

  s.command = {o.sbatch, "--parsable"};
  s.command.insert(s.command.end(), o.extra.begin(), o.extra.end());
  s.command.push_back(s.script_path);
  if (dry_run || s.tasks.empty()) return s;
  std::string output;
  const int code = runCapture(s.command, output);
  if (code != 0) {
    std::string line;
    for (const std::string& a : s.command)
      line += (line.empty() ? std::string() : std::string(" ")) + shellQuote(a);
    throw Error(line + " failed (exit code " + std::to_string(code) + "): " + trimmed(output));
  }
  // --parsable prints "jobid" or "jobid;cluster" (after any warnings on earlier lines).
  std::string last = trimmed(output);
  if (const size_t nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
  s.job_id = last.substr(0, last.find(';'));
  return s;
}

}  // namespace sf::batch
