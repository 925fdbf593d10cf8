#include "batch_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "batch/manifest.h"
#include "batch/results.h"
#include "batch/runner.h"
#include "batch/slurm.h"
#include "batch/times_plot.h"
#include "commands.h"
#include "core/error.h"
#include "io/file.h"
#include "io/image_io.h"

namespace sf::cli {

namespace fs = std::filesystem;

namespace {

std::string clock() {
  char buf[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&now));
  return buf;
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = std::min(s.find(',', pos), s.size());
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

size_t parseIndex(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || text[0] == '-')
    throw UsageError(what + " '" + text + "' is not a whole number");
  return static_cast<size_t>(v);
}

// This process's task: --shard i/n, --task I [--tasks N], or --tasks N with the scheduler's index
// (SLURM_ARRAY_TASK_ID, else Kubernetes' JOB_COMPLETION_INDEX). None when the whole batch runs here; `tasks`
// none for --task I alone (one job per task, as `batch --slurm` submits them). Checked before the manifest is
// read.
struct Task {
  size_t index = 0;
  std::optional<size_t> tasks;
};
std::optional<Task> taskOf(const BatchCommand::Options& o) {
  std::optional<size_t> task = o.task, tasks = o.tasks;
  if (!o.shard.empty()) {
    if (task || tasks) throw UsageError("--shard i/n replaces --task and --tasks: give one or the other");
    const size_t slash = o.shard.find('/');
    if (slash == std::string::npos) throw UsageError("--shard '" + o.shard + "': expected i/n, such as 0/4");
    task = parseIndex(o.shard.substr(0, slash), "--shard's i");
    tasks = parseIndex(o.shard.substr(slash + 1), "--shard's n");
  }
  if (!task && !tasks) return std::nullopt;
  if (!task) {
    for (const char* var : {"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"})
      if (const char* v = std::getenv(var); v && *v) {
        task = parseIndex(v, std::string("$") + var);
        break;
      }
    if (!task)
      throw UsageError(
          "--tasks N without --task I: the task index comes from $SLURM_ARRAY_TASK_ID or "
          "$JOB_COMPLETION_INDEX, and "
          "neither is set");
  }
  if (tasks && *tasks == 0) throw UsageError("--tasks must be 1 or more");
  if (tasks && *task >= *tasks)
    throw UsageError(fmt::format("task {} is not below the task count {}", *task, *tasks));
  return Task{*task, tasks};
}

// The jobs of a task, and its label for records and logs ("slurm 123_4 (4/20)", "task 2/8").
std::vector<size_t> shareOf(const Task& t, size_t jobs, std::string& label) {
  const size_t tasks = t.tasks.value_or(jobs);
  if (t.index >= tasks)
    throw UsageError(
        fmt::format("task {} is not below the task count {} (one task per job)", t.index, tasks));
  const char* array_job = std::getenv("SLURM_ARRAY_JOB_ID");
  label = array_job && std::getenv("SLURM_ARRAY_TASK_ID")
              ? fmt::format("slurm {}_{} ({}/{})", array_job, t.index, t.index, tasks)
              : fmt::format("task {}/{}", t.index, tasks);
  return batch::shareOf(jobs, t.index, tasks);  // empty for a task past the last job
}

std::string seconds(double s) {
  return fmt::format("{:.2f} s", s);
}

// `batch status`: where every job stands, totals, the slowest jobs.
int runStatus(const BatchCommand::Options& o) {
  const batch::Manifest m = batch::loadManifest(o.manifest);
  const std::vector<std::optional<batch::JobRecord>> records = batch::readRecords(m);
  struct Row {
    const batch::Job* job;
    batch::JobStatus status;
    std::string why;
    const batch::JobRecord* record;
  };
  std::vector<Row> rows;
  batch::HashCache hashes;
  size_t counts[5] = {};
  double job_seconds = 0, overhead = 0, first = 0, last = 0;
  size_t ran = 0;
  for (const batch::Job& job : m.jobs) {
    const std::optional<batch::JobRecord>& r = records[job.index];
    Row row{&job, batch::JobStatus::kPending, "", r ? &*r : nullptr};
    try {
      const batch::JobPlan plan = batch::planJob(m, job, r, false, &hashes);
      if (plan.plan == batch::Plan::kUpToDate)
        row.status = batch::JobStatus::kDone;
      else if (plan.plan == batch::Plan::kFailedBefore)
        row.status = batch::JobStatus::kFailed;
      else if (r && (r->status == batch::JobStatus::kRunning || r->status == batch::JobStatus::kInterrupted))
        row.status = batch::effectiveStatus(*r);
      row.why = plan.why;
    } catch (const Error& e) {
      row.why = e.what();
    }
    if (r && r->started > 0 && r->status != batch::JobStatus::kRunning) {
      job_seconds += r->seconds, overhead += r->overhead_seconds, ++ran;
      first = first == 0 ? r->started : std::min(first, r->started);
      last = std::max(last, r->finished);
    }
    ++counts[static_cast<int>(row.status)];
    rows.push_back(row);
  }
  std::vector<const Row*> slowest;
  for (const Row& row : rows)
    if (row.record && row.record->started > 0 && row.record->status != batch::JobStatus::kRunning)
      slowest.push_back(&row);
  std::sort(slowest.begin(), slowest.end(),
            [](const Row* a, const Row* b) { return a->record->seconds > b->record->seconds; });
  if (slowest.size() > static_cast<size_t>(std::max(o.slowest, 0)))
    slowest.resize(static_cast<size_t>(std::max(o.slowest, 0)));
  if (!o.plot.empty()) {
    std::vector<batch::TimedJob> timed;
    for (const std::optional<batch::JobRecord>& r : records)
      if (r) timed.push_back({r->name, r->started, r->finished, r->status});
    writePng(o.plot, batch::plotJobTimes(timed));
  }
  using batch::JobStatus;
  const int n_done = static_cast<int>(JobStatus::kDone), n_failed = static_cast<int>(JobStatus::kFailed),
            n_running = static_cast<int>(JobStatus::kRunning),
            n_interrupted = static_cast<int>(JobStatus::kInterrupted),
            n_pending = static_cast<int>(JobStatus::kPending);
  if (o.json) {
    nlohmann::json j;
    j["manifest"] = o.manifest;
    j["state"] = m.state_dir;
    j["jobs"] = m.jobs.size();
    j["done"] = counts[n_done];
    j["failed"] = counts[n_failed];
    j["running"] = counts[n_running];
    j["interrupted"] = counts[n_interrupted];
    j["pending"] = counts[n_pending];
    j["job_seconds"] = job_seconds;
    j["wall_seconds"] = last > first ? last - first : 0.0;
    j["overhead_seconds_per_job"] = ran ? overhead / static_cast<double>(ran) : 0.0;
    nlohmann::json list = nlohmann::json::array();
    for (const Row& row : rows) {
      nlohmann::json e;
      e["index"] = row.job->index;
      e["name"] = row.job->name;
      e["where"] = row.job->where;
      e["status"] = batch::statusName(row.status);
      e["why"] = row.why;
      e["command"] = batch::commandLine(*row.job);
      e["outputs"] = row.job->outputs;
      if (row.record) {
        e["seconds"] = row.record->seconds;
        e["exit_code"] = row.record->exit_code;
        e["error"] = row.record->error;
        e["host"] = row.record->host;
        e["task"] = row.record->task;
        e["device"] = row.record->device;
        e["log"] = (fs::path(m.state_dir) / row.record->log).string();
      }
      list.push_back(e);
    }
    j["list"] = list;
    nlohmann::json slow = nlohmann::json::array();
    for (const Row* row : slowest)
      slow.push_back({{"name", row->job->name}, {"seconds", row->record->seconds}});
    j["slowest"] = slow;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}: {} job{}: {} done, {} failed, {} running, {} interrupted, {} pending\n", o.manifest,
             m.jobs.size(), m.jobs.size() == 1 ? "" : "s", counts[n_done], counts[n_failed],
             counts[n_running], counts[n_interrupted], counts[n_pending]);
  for (const Row& row : rows) {
    std::string line =
        fmt::format("  {:<12}{:<28} {}", batch::statusName(row.status), row.job->name, row.job->where);
    if (row.record && row.status != JobStatus::kPending && row.status != JobStatus::kRunning)
      line += "  " + seconds(row.record->seconds);
    if (row.status == JobStatus::kPending) line += "  (" + row.why + ")";
    fmt::print("{}\n", line);
    if (row.status == JobStatus::kFailed && row.record) {
      fmt::print("      {}\n", row.record->error);
      fmt::print("      log: {}\n", (fs::path(m.state_dir) / row.record->log).string());
    }
  }
  if (!slowest.empty()) {
    fmt::print("slowest:\n");
    for (const Row* row : slowest)
      fmt::print("  {:>10}  {}\n", seconds(row->record->seconds), row->job->name);
  }
  if (ran)
    fmt::print(
        "time: {} in the commands, {} from the first start to the last finish, {:.3f} s of batch overhead "
        "per job\n",
        seconds(job_seconds), seconds(last > first ? last - first : 0.0),
        overhead / static_cast<double>(ran));
  if (!o.plot.empty()) fmt::print("wrote {}\n", o.plot);
  return 0;
}

int runBatchCommand(const BatchCommand::Options& o) {
  if (o.status) return runStatus(o);
  if (o.manifest.empty()) throw UsageError("the manifest is required: splatforge batch MANIFEST.json");
  const bool slurm_only = !o.partition.empty() || !o.time_limit.empty() || !o.memory.empty() ||
                          !o.job_name.empty() || o.gpus_per_task > 0 || o.cpus_per_task > 0 ||
                          o.max_parallel > 0 || !o.sbatch_args.empty();
  if (slurm_only && !o.slurm)
    throw UsageError(
        "--partition, --time, --gpus-per-task, --cpus-per-task, --mem, --max-parallel, --job-name and "
        "--sbatch-arg go with --slurm");
  if (o.slurm && (o.task || !o.shard.empty()))
    throw UsageError("--slurm submits every task; --task and --shard run one task's share here");
  std::vector<std::string> devices = splitList(o.devices);
  if (!o.devices.empty() && devices.empty())
    throw UsageError("--devices '" + o.devices + "': expected a list such as 0,1");

  const std::optional<Task> task = o.slurm ? std::nullopt : taskOf(o);

  const batch::Manifest m = batch::loadManifest(o.manifest);
  std::string label;
  std::optional<std::vector<size_t>> share;
  if (task) share = shareOf(*task, m.jobs.size(), label);

  if (o.slurm) {
    // Which jobs need to run now: the array holds only their tasks.
    const std::vector<std::optional<batch::JobRecord>> records = batch::readRecords(m);
    std::vector<size_t> pending;
    batch::HashCache hashes;
    for (const batch::Job& job : m.jobs)
      if (batch::planJob(m, job, records[job.index], o.retry_failed, &hashes).plan == batch::Plan::kRun)
        pending.push_back(job.index);
    batch::SlurmOptions so;
    so.tasks = o.tasks.value_or(0);
    so.partition = o.partition, so.time_limit = o.time_limit, so.memory = o.memory, so.job_name = o.job_name;
    so.gpus_per_task = o.gpus_per_task, so.cpus_per_task = o.cpus_per_task, so.max_parallel = o.max_parallel;
    so.extra = o.sbatch_args, so.sbatch = o.sbatch;
    so.executable = fs::read_symlink("/proc/self/exe").string();
    if (o.retry_failed) so.task_flags.push_back("--retry-failed");
    if (o.jobs > 1) so.task_flags.insert(so.task_flags.end(), {"--jobs", std::to_string(o.jobs)});
    if (!o.devices.empty()) so.task_flags.insert(so.task_flags.end(), {"--devices", o.devices});
    if (pending.empty()) {
      fmt::print(
          "{}: nothing to submit: all {} jobs are up to date or failed before (--retry-failed runs those "
          "again)\n",
          o.manifest, m.jobs.size());
      return 0;
    }
    const batch::SlurmSubmission s = batch::submitToSlurm(m, pending, so, o.dry_run);
    std::string command;
    for (const std::string& a : s.command) command += (command.empty() ? "" : " ") + batch::shellQuote(a);
    const std::string spec = batch::arraySpec(s.tasks);
    if (o.json) {
      nlohmann::json j;
      j["job_id"] = s.job_id;
      j["tasks"] = s.tasks;
      j["array"] = spec;
      j["pending_jobs"] = pending;
      j["script"] = s.script_path;
      j["sbatch"] = s.command;
      j["logs"] = (fs::path(m.state_dir) / "slurm").string();
      j["dry_run"] = o.dry_run;
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    if (o.dry_run) {
      fmt::print("{}", s.script);
      fmt::print("# not submitted (--dry-run); to submit: {}\n", command);
      return 0;
    }
    fmt::print("submitted Slurm array job {} (tasks {}: {} of {} jobs to run); script {}\n", s.job_id, spec,
               pending.size(), m.jobs.size(), s.script_path);
    fmt::print("task logs: {}/{}_<task>.out, job logs: {}/logs/; follow with: splatforge batch status {}\n",
               (fs::path(m.state_dir) / "slurm").string(), s.job_id, m.state_dir, o.manifest);
    return 0;
  }

  if (o.dry_run) {  // the plan, nothing run
    const std::vector<std::optional<batch::JobRecord>> records = batch::readRecords(m);
    std::vector<size_t> jobs;
    if (share)
      jobs = *share;
    else
      for (size_t k = 0; k < m.jobs.size(); ++k) jobs.push_back(k);
    for (size_t k : jobs) {
      const batch::JobPlan p = batch::planJob(m, m.jobs[k], records[k], o.retry_failed);
      fmt::print("{:<5} {:<28} {}\n", p.plan == batch::Plan::kRun ? "run" : "skip", m.jobs[k].name, p.why);
      fmt::print("      {}\n", batch::commandLine(m.jobs[k]));
    }
    return 0;
  }

  batch::RunOptions ro;
  ro.workers = o.jobs;
  ro.devices = devices;
  ro.retry_failed = o.retry_failed;
  ro.only = share;
  ro.task = label.empty() ? "local" : label;
  ro.log = [](const std::string& line) { fmt::print(stderr, "{} {}\n", clock(), line); };
  fmt::print(stderr, "{} batch {}: {} job{}{}, {} worker{}{}\n", clock(), o.manifest, m.jobs.size(),
             m.jobs.size() == 1 ? "" : "s",
             label.empty() ? "" : fmt::format(" ({}: {} of them)", label, share ? share->size() : 0), o.jobs,
             o.jobs == 1 ? "" : "s", devices.empty() ? "" : ", devices " + o.devices);
  const batch::RunSummary s = batch::runBatch(m, ro);
  const std::string plot = (fs::path(m.state_dir) / "job_times.png").string();
  if (o.json) {
    nlohmann::json j;
    j["manifest"] = o.manifest;
    j["task"] = ro.task;
    j["selected"] = s.selected;
    j["ran"] = s.ran;
    j["done"] = s.done;
    j["failed"] = s.failed;
    j["interrupted"] = s.interrupted;
    j["up_to_date"] = s.up_to_date;
    j["failed_before"] = s.failed_before;
    j["failed_jobs"] = s.failed_jobs;
    j["seconds"] = s.seconds;
    j["job_seconds"] = s.job_seconds;
    j["overhead_seconds_per_job"] = s.ran ? s.overhead_seconds / static_cast<double>(s.ran) : 0.0;
    j["state"] = m.state_dir;
    if (s.ran) j["plot"] = plot;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print(
        "{}: {} ran ({} done, {} failed{}), {} up to date, {} failed before; {} ({} in the commands, {:.3f} "
        "s batch overhead per job){}\n",
        label.empty() ? o.manifest : o.manifest + " " + label, s.ran, s.done, s.failed,
        s.interrupted ? fmt::format(", {} interrupted", s.interrupted) : "", s.up_to_date, s.failed_before,
        seconds(s.seconds), seconds(s.job_seconds),
        s.ran ? s.overhead_seconds / static_cast<double>(s.ran) : 0.0, s.ran ? "; job times: " + plot : "");
  }
  if (s.stopped) {
    fmt::print(stderr,
               "splatforge batch: interrupted: {} running job{} stopped and {} outputs discarded; run the "
               "batch again to finish it\n",
               s.interrupted, s.interrupted == 1 ? "" : "s", s.interrupted == 1 ? "its" : "their");
    return 130;
  }
  if (!s.failed_jobs.empty()) {
    std::string names;
    for (size_t k : s.failed_jobs)
      names += (names.empty() ? "" : ", ") + m.jobs[k].where + " " + m.jobs[k].name;
    throw Error(fmt::format("{} of {} job{} failed: {} (splatforge batch status {} shows why{})",
                            s.failed_jobs.size(), s.selected, s.selected == 1 ? "" : "s", names, o.manifest,
                            s.failed_before ? "; --retry-failed runs them again" : ""));
  }
  return 0;
}

}  // namespace

BatchCommand::~BatchCommand() = default;

int BatchCommand::run() const {
  try {
    return runBatchCommand(*options_);
  } catch (const std::exception& e) {
    return reportFailure(options_->status ? "batch status" : "batch", e);
  }
}

}  // namespace sf::cli
