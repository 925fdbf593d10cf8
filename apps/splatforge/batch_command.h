// `splatforge batch MANIFEST` and `splatforge batch status MANIFEST`: many splatforge commands from a
// manifest, locally with N workers or as a Slurm array job, resumable (src/batch/, docs/batch.md). Its
// options are declared here; main.cpp, the one file that includes CLI11, registers them and dispatches the
// command.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace sf::cli {

class BatchCommand {
 public:
  explicit BatchCommand(CLI::App& app);
  ~BatchCommand();
  BatchCommand(const BatchCommand&) = delete;
  BatchCommand& operator=(const BatchCommand&) = delete;

  CLI::App* command() const { return command_; }
  bool parsed() const;
  // Exit code: 0 when every job of the share is done (ran or up to date) or the array job was submitted; 1
  // with "splatforge batch: error: ..." when the manifest is refused or a job failed; 2 for a usage error;
  // 130 when stopped by SIGINT or SIGTERM (the running jobs' outputs discarded).
  int run() const;

  // What the command line gave (filled by the parser in main.cpp).
  struct Options {
    std::string manifest;
    bool status = false;  // `batch status MANIFEST`
    int jobs = 1;
    std::string devices;  // "0,1"
    bool retry_failed = false;
    std::optional<size_t> task, tasks;
    std::string shard;  // "i/n"
    bool slurm = false, dry_run = false, json = false;
    std::string partition, time_limit, memory, job_name, sbatch = "sbatch";
    int gpus_per_task = 0, cpus_per_task = 0, max_parallel = 0;
    std::vector<std::string> sbatch_args;
    // status
    int slowest = 5;
    std::string plot;
  };

 private:
  std::unique_ptr<Options> options_;
  CLI::App* command_ = nullptr;
};

}  // namespace sf::cli
