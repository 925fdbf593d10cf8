// Running a batch (batch/runner.h): staging folders, one child process per job, workers, records.
#include "batch/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "batch/times_plot.h"
#include "core/error.h"
#include "io/image_io.h"

extern char** environ;

namespace sf::batch {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxWorkers = 256;

// SIGINT / SIGTERM while a batch runs: no new job starts, and the running commands are sent SIGTERM.
std::atomic<bool> g_stop{false};
std::atomic<pid_t> g_children[kMaxWorkers];

extern "C" void onStopSignal(int) {
  g_stop.store(true);
  for (auto& c : g_children)
    if (const pid_t pid = c.load(); pid > 0) ::kill(pid, SIGTERM);
}

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string selfExecutable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this program's own binary (/proc/self/exe): " + ec.message());
  return p.string();
}

// The last lines of a job's log that say what went wrong: its "error:" lines, else its last 3 lines.
std::string errorText(const std::string& log_path) {
  std::ifstream in(log_path);
  std::vector<std::string> lines, errors;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.find("error") != std::string::npos || line.find("ERROR") != std::string::npos)
      errors.push_back(line);
    lines.push_back(line);
    if (lines.size() > 3) lines.erase(lines.begin());
  }
  const std::vector<std::string>& pick = errors.empty() ? lines : errors;
  std::string text;
  for (size_t i = pick.size() > 5 ? pick.size() - 5 : 0; i < pick.size(); ++i)
    text += (text.empty() ? "" : "\n") + pick[i];
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

// A job's staging: one hidden folder per output folder, ".sfbatch.<key>.<host>.<pid>", whose contents move
// into the output folder when the command succeeds.
struct Staging {
  std::vector<std::string> folders;       // absolute output folders
  std::vector<std::string> stages;        // absolute staging folders, one per output folder
  std::vector<std::string> output_paths;  // per declared output: the path the command is given, as written
};

std::string stagePrefix(const Job& job) {
  return ".sfbatch." + job.key + ".";
}
std::string oldPrefix(const Job& job) {
  return ".sfbatch-old." + job.key + ".";
}

// True when a staging folder's tag ("<prefix><host>.<pid>") names a live process of this machine.
bool stagedByALiveProcess(const std::string& name, const std::string& prefix) {
  const std::string tag = name.substr(prefix.size());
  const size_t dot = tag.rfind('.');
  if (dot == std::string::npos || tag.substr(0, dot) != hostName()) return false;
  const long pid = std::strtol(tag.c_str() + dot + 1, nullptr, 10);
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH);
}

// Removes what an earlier, killed run of this job left in its output folders (not a live run's staging).
void removeStale(const Job& job, const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return;
  for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(stagePrefix(job), 0) == 0 && !stagedByALiveProcess(name, stagePrefix(job)))
      fs::remove_all(e.path(), ec);
    else if (name.rfind(oldPrefix(job), 0) == 0)
      fs::remove_all(e.path(), ec);
  }
}

Staging prepareStaging(const Manifest& m, const Job& job) {
  Staging s;
  const std::string tag = stagePrefix(job) + hostName() + "." + std::to_string(::getpid());
  for (const std::string& out : job.outputs) {
    const fs::path declared(out);
    const std::string folder = fs::path(absoluteIn(m.dir, out)).parent_path().string();
    auto it = std::find(s.folders.begin(), s.folders.end(), folder);
    if (it == s.folders.end()) {
      fs::create_directories(folder);
      removeStale(job, folder);
      s.folders.push_back(folder);
      s.stages.push_back((fs::path(folder) / tag).string());
      fs::create_directory(s.stages.back());
    }
    // The path as written, its folder part kept (relative stays relative), the staging folder inserted.
    s.output_paths.push_back((declared.parent_path() / tag / declared.filename()).string());
  }
  return s;
}

void removeStaging(const Staging& s) {
  std::error_code ec;
  for (const std::string& stage : s.stages) fs::remove_all(stage, ec);
}

// Moves everything the command wrote into the output folders: a file by rename (atomic, replacing the old),
// a folder by moving the old one aside, renaming the new one in, then removing the old. Returns the paths
// moved, relative to the manifest's folder where the outputs were.
std::vector<std::string> publish(const Manifest& m, const Job& job, const Staging& s) {
  std::vector<std::string> written;
  for (size_t f = 0; f < s.folders.size(); ++f) {
    std::vector<fs::path> entries;
    for (const fs::directory_entry& e : fs::directory_iterator(s.stages[f])) entries.push_back(e.path());
    std::sort(entries.begin(), entries.end());
    for (const fs::path& from : entries) {
      const fs::path to = fs::path(s.folders[f]) / from.filename();
      std::error_code ec;
      if (fs::is_directory(from) && fs::is_directory(to, ec)) {
        const fs::path old = fs::path(s.folders[f]) / (oldPrefix(job) + from.filename().string());
        fs::remove_all(old, ec);
        fs::rename(to, old);
        fs::rename(from, to);
        fs::remove_all(old, ec);
      } else {
        if (fs::is_directory(to, ec) != fs::is_directory(from)) fs::remove_all(to, ec);
        fs::rename(from, to);
      }
      const fs::path rel = to.lexically_relative(m.dir);
      written.push_back(rel.empty() || rel.string().rfind("..", 0) == 0 ? to.string() : rel.string());
    }
  }
  std::sort(written.begin(), written.end());
  return written;
}

struct ChildResult {
  int exit_code = -1;
  int signal = 0;
  std::string spawn_error;
};

ChildResult runChild(const std::string& exe, const std::vector<std::string>& argv, const std::string& cwd,
                     const std::string& log, int slot) {
  ChildResult r;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    r.spawn_error = log + ": cannot write the job's log: " + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fd, 1);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  // The child starts with the default dispositions of the signals this process catches.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = ::posix_spawn(&pid, exe.c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fd);
  if (err != 0) {
    r.spawn_error = exe + ": cannot start: " + std::strerror(err);
    return r;
  }
  g_children[slot].store(pid);
  if (g_stop.load()) ::kill(pid, SIGTERM);  // a stop that came while it started
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_children[slot].store(0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

// The record of a command that ran: its outputs published when it exited 0 having written every one of them,
// else failed or interrupted, with why.
void settleRecord(JobRecord& r, const ChildResult& c, const Manifest& m, const Job& job,
                  const Staging& staging) {
  r.exit_code = c.exit_code;
  r.signal = c.signal;
  if (!c.spawn_error.empty()) {
    r.status = JobStatus::kFailed;
    r.error = c.spawn_error;
  } else if (c.exit_code == 0) {
    // Every declared output must be in the staging folder before anything is published: a job whose
    // command left one out fails whole, its earlier outputs untouched.
    std::string missing;
    for (size_t i = 0; i < job.outputs.size(); ++i) {
      std::error_code ec;
      if (!fs::exists(absoluteIn(m.dir, staging.output_paths[i]), ec))
        missing += (missing.empty() ? "" : ", ") + job.outputs[i];
    }
    if (missing.empty()) r.written = publish(m, job, staging);
    r.status = missing.empty() ? JobStatus::kDone : JobStatus::kFailed;
    if (!missing.empty()) r.error = "the command exited 0 but did not write " + missing;
  } else if (g_stop.load() && (c.signal == SIGTERM || c.signal == SIGINT || c.exit_code == 130)) {
    r.status = JobStatus::kInterrupted;
    r.error = "stopped by a signal to the batch; its outputs were discarded";
  } else {
    r.status = JobStatus::kFailed;
    r.error = errorText((fs::path(m.state_dir) / r.log).string());
    if (r.error.empty())
      r.error = c.signal ? "killed by signal " + std::to_string(c.signal)
                         : "exited with code " + std::to_string(c.exit_code);
  }
}

// What a job of the share needs, decided before any runs.
struct Todo {
  size_t job;
  std::map<std::string, InputHash> inputs;
};

// One run of a batch: the jobs to run, the workers that take them, the summary they fill in.
struct BatchRun {
  const Manifest& m;
  const RunOptions& o;
  const std::string exe;
  RunSummary& sum;
  std::vector<Todo> todo;
  std::atomic<size_t> next{0};
  std::mutex log_mutex, sum_mutex;

  void say(const std::string& line) {
    if (!o.log) return;
    std::lock_guard<std::mutex> lock(log_mutex);
    o.log(line);
  }
  std::string tag(const Job& job) const {
    return "[" + std::to_string(job.index + 1) + "/" + std::to_string(m.jobs.size()) + "]";
  }

  // Each job of the share against its last record: counted as up to date, running elsewhere or failed
  // before, or put on the list to run.
  void plan(const std::vector<size_t>& share) {
    const std::vector<std::optional<JobRecord>> records = readRecords(m);
    HashCache hashes;
    for (size_t k : share) {
      const Job& job = m.jobs[k];
      JobPlan p;
      try {
        p = planJob(m, job, records[k], o.retry_failed, &hashes);
      } catch (const Error& e) {  // an input went missing or unreadable since the manifest was checked
        JobRecord r;
        r.name = job.name, r.index = k, r.status = JobStatus::kFailed, r.command = commandLine(job),
        r.outputs = job.outputs;
        r.error = e.what(), r.started = r.finished = unixNow(), r.host = hostName(), r.pid = ::getpid(),
        r.task = o.task;
        writeRecord(m, job, r);
        ++sum.failed;
        sum.failed_jobs.push_back(k);
        say(tag(job) + " failed       " + job.name + ": " + e.what());
        continue;
      }
      if (p.plan == Plan::kUpToDate) {
        ++sum.up_to_date;
        say(tag(job) + " up to date   " + job.name);
      } else if (p.plan == Plan::kRunning) {
        say(tag(job) + " running      " + job.name + " (" + p.why + "; left to finish)");
      } else if (p.plan == Plan::kFailedBefore) {
        ++sum.failed_before;
        sum.failed_jobs.push_back(k);
        say(tag(job) + " failed       " + job.name +
            " (before, with these inputs; --retry-failed runs it again)");
      } else {
        todo.push_back({k, std::move(p.inputs)});
      }
    }
  }

  // A worker: takes the next job, runs it, records it, until none is left or the batch is stopped.
  void work(int slot) {
    for (;;) {
      if (g_stop.load()) return;
      const size_t t = next.fetch_add(1);
      if (t >= todo.size()) return;
      runJob(todo[t], slot);
    }
  }

  void runJob(const Todo& t, int slot) {
    const Job& job = m.jobs[t.job];
    const auto t0 = std::chrono::steady_clock::now();
    JobRecord r;
    r.name = job.name, r.index = job.index, r.command = commandLine(job), r.inputs = t.inputs,
    r.outputs = job.outputs;
    r.host = hostName(), r.pid = ::getpid(), r.task = o.task;
    r.log = (fs::path("logs") / (job.key + ".log")).string();
    if (job.takes_device && !job.has_device && !o.devices.empty())
      r.device = o.devices[static_cast<size_t>(slot) % o.devices.size()];
    r.status = JobStatus::kRunning;
    r.started = unixNow();
    double child_seconds = 0;
    Staging staging;
    try {
      staging = prepareStaging(m, job);
      writeRecord(m, job, r);
      std::vector<std::string> argv = {exe};
      argv.insert(argv.end(), job.command.begin(), job.command.end());
      const std::vector<std::string> args = expandOutputs(job, staging.output_paths);
      argv.insert(argv.end(), args.begin(), args.end());
      if (!r.device.empty()) argv.insert(argv.end(), {"--device", r.device});
      say(tag(job) + " started      " + job.name + (r.device.empty() ? "" : " (device " + r.device + ")"));
      const auto c0 = std::chrono::steady_clock::now();
      const ChildResult c = runChild(exe, argv, m.dir, (fs::path(m.state_dir) / r.log).string(), slot);
      child_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      settleRecord(r, c, m, job, staging);
    } catch (const std::exception& e) {
      r.status = JobStatus::kFailed;
      r.error = std::string("the batch could not run or publish it: ") + e.what();
    }
    removeStaging(staging);
    r.finished = unixNow();
    r.seconds = child_seconds;
    r.overhead_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - child_seconds;
    try {
      writeRecord(m, job, r);
    } catch (const std::exception& e) {
      say(tag(job) + " warning      " + job.name + ": its record could not be written: " + e.what());
    }
    {
      std::lock_guard<std::mutex> lock(sum_mutex);
      ++sum.ran;
      sum.job_seconds += child_seconds;
      sum.overhead_seconds += r.overhead_seconds;
      if (r.status == JobStatus::kDone) ++sum.done;
      if (r.status == JobStatus::kFailed) ++sum.failed, sum.failed_jobs.push_back(job.index);
      if (r.status == JobStatus::kInterrupted) ++sum.interrupted;
    }
    char secs[32];
    std::snprintf(secs, sizeof secs, "%7.2f s", child_seconds);
    std::string line = tag(job) + " " + std::string(statusName(r.status)) +
                       std::string(13 - std::strlen(statusName(r.status)), ' ') + job.name + "  " + secs;
    if (r.status == JobStatus::kFailed)
      line += "\n      " + r.error + "\n      log: " + (fs::path(m.state_dir) / r.log).string();
    say(line);
  }

  // The workers, with SIGINT / SIGTERM caught while they run (onStopSignal).
  void runWorkers() {
    g_stop.store(false);
    struct sigaction action {
    }, old_int{}, old_term{};
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int);
    ::sigaction(SIGTERM, &action, &old_term);
    const int workers = std::clamp<int>(
        o.workers, 1, std::min<int>(kMaxWorkers, std::max<int>(1, static_cast<int>(todo.size()))));
    std::vector<std::thread> threads;
    for (int w = 1; w < workers; ++w) threads.emplace_back(&BatchRun::work, this, w);
    work(0);
    for (std::thread& t : threads) t.join();
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
  }

  // The job-time chart of every job recorded so far (this run's and, for a task, the other tasks').
  void writeTimesChart() {
    std::vector<TimedJob> timed;
    for (const std::optional<JobRecord>& r : readRecords(m))
      if (r) timed.push_back({r->name, r->started, r->finished, r->status});
    try {
      writePng((fs::path(m.state_dir) / "job_times.png").string(), plotJobTimes(timed));
    } catch (const std::exception& e) {
      say(std::string("warning: the job-time chart could not be written: ") + e.what());
    }
  }
};

}  // namespace

std::vector<size_t> shareOf(size_t jobs, size_t task, size_t tasks) {
  std::vector<size_t> out;
  for (size_t k = task; tasks > 0 && k < jobs; k += tasks) out.push_back(k);
  return out;
}

RunSummary runBatch(const Manifest& m, const RunOptions& o) {
  const auto t_start = std::chrono::steady_clock::now();
  RunSummary sum;
  BatchRun run{m, o, o.executable.empty() ? selfExecutable() : o.executable, sum, {}, {}, {}, {}};
  fs::create_directories(fs::path(m.state_dir) / "logs");
  std::vector<size_t> share;
  if (o.only)
    share = *o.only;
  else
    for (size_t k = 0; k < m.jobs.size(); ++k) share.push_back(k);
  sum.selected = share.size();
  run.plan(share);
  run.runWorkers();
  sum.stopped = g_stop.load();
  if (sum.ran > 0) run.writeTimesChart();
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return sum;
}

}  // namespace sf::batch
