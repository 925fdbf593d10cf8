// Submitting a batch to Slurm (docs/batch.md): one array job whose task I runs
// `splatforge batch MANIFEST --task I --tasks N` on its node, for the tasks that hold a job needing to run.
#pragma once

#include <string>
#include <vector>

#include "batch/manifest.h"

namespace sf::batch {

struct SlurmOptions {
  size_t tasks = 0;  // array tasks the jobs are split over (task I: jobs with index % N == I); 0: one per job
  std::string partition;           // --partition
  std::string time_limit;          // --time, per task
  int gpus_per_task = 0;           // --gres=gpu:N
  int cpus_per_task = 0;           // --cpus-per-task
  std::string memory;              // --mem
  int max_parallel = 0;            // --array=...%K: at most K tasks at once
  std::string job_name;            // --job-name; default splatforge-<manifest stem>
  std::vector<std::string> extra;  // further sbatch arguments, passed through as given
  std::vector<std::string>
      task_flags;                 // flags each task's batch gets (--retry-failed, --jobs N, --devices L)
  std::string sbatch = "sbatch";  // the program
  std::string executable;         // the splatforge binary the tasks run (shared with the nodes)
};

struct SlurmSubmission {
  std::vector<size_t> tasks;         // the array's task indices
  std::string script_path;           // STATE/slurm/submit-<time>.sh
  std::string script;                // its text
  std::vector<std::string> command;  // the sbatch command line
  std::string job_id;                // what sbatch printed (empty for a dry run)
};

// The array's task indices: those whose share holds a job in `pending` (indices of jobs that need to run).
std::vector<size_t> tasksToSubmit(const std::vector<size_t>& pending, size_t tasks);

// "0-3,5,7-9": a sorted index list in the form sbatch --array takes.
std::string arraySpec(const std::vector<size_t>& indices);

// Writes the script and, unless `dry_run`, submits it with sbatch (throws sf::Error with sbatch's message
// when it fails). `pending` as for tasksToSubmit.
SlurmSubmission submitToSlurm(const Manifest& m, const std::vector<size_t>& pending, const SlurmOptions& o,
                              bool dry_run);

}  // namespace sf::batch
