// Running a batch's jobs (docs/batch.md): each job a child process of this same binary, its declared outputs
// written into a hidden staging folder beside them and moved into place only when the command exits 0, so a
// failed, crashed or killed job leaves no partial output and never touches another job's files. Local runs
// use N workers; a Slurm array task or a shard runs its share of the jobs the same way.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "batch/manifest.h"
#include "batch/results.h"

namespace sf::batch {

// The jobs of task `task` of `tasks`: those whose index modulo `tasks` is `task` (tasks >= 1, task < tasks).
std::vector<size_t> shareOf(size_t jobs, size_t task, size_t tasks);

struct RunOptions {
  int workers = 1;  // jobs run at once
  std::vector<std::string>
      devices;                // --devices: worker w passes devices[w % n] to commands that take --device
  bool retry_failed = false;  // run jobs whose last run failed (with the same inputs and command)
  std::optional<std::vector<size_t>>
      only;                    // the jobs of this process's share (task or shard); none: every job
  std::string task = "local";  // recorded per job: "local", "slurm 123_4", "shard 2/8"
  std::string executable;      // the binary run per job; empty: this process's (/proc/self/exe)
  // A line per job (started, done, failed, skipped), for the progress log; called from worker threads, one
  // call at a time.
  std::function<void(const std::string&)> log;
};

struct RunSummary {
  size_t selected = 0;  // jobs in this process's share
  size_t ran = 0, done = 0, failed = 0, interrupted = 0;
  size_t up_to_date = 0;            // skipped: outputs present for the same inputs and command
  size_t failed_before = 0;         // skipped: failed before with the same inputs (--retry-failed runs them)
  std::vector<size_t> failed_jobs;  // indices, in the order they failed
  double seconds = 0;               // wall time of the run
  double job_seconds = 0;           // sum of the commands' own wall times
  double overhead_seconds =
      0;                 // sum of the batch's per-job time around them (hashing, staging, renames, records)
  bool stopped = false;  // SIGINT or SIGTERM: no job started after it, the running ones were stopped
};

// Runs the manifest's jobs (or `o.only`): plans each one against its record, runs those that need it, writes
// every record, and returns what happened. A job's failure is recorded, never thrown; sf::Error is thrown
// only for the batch's own trouble (the state folder cannot be written).
RunSummary runBatch(const Manifest& m, const RunOptions& o);

}  // namespace sf::batch
