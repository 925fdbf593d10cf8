// The results of a batch (docs/formats/batch-manifest.md, "Results"): one small JSON record per job in
// STATE/jobs/<key>.json, each written atomically by the one process running that job, merged when read. So
// several Slurm tasks finishing at once never write one file, and a task killed half-way leaves every other
// job's record whole.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "batch/manifest.h"

namespace sf::batch {

// What an input was when a job ran: its SHA-256 (of the file, or of a folder's sorted file names and file
// digests), with the size and modification time that let an unchanged file skip rehashing.
struct InputHash {
  std::string sha256;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const InputHash& o) const { return sha256 == o.sha256; }
};

enum class JobStatus { kPending, kRunning, kDone, kFailed, kInterrupted };
const char* statusName(JobStatus s);

struct JobRecord {
  std::string name;
  size_t index = 0;
  JobStatus status = JobStatus::kPending;
  std::string command;                      // commandLine(job) when it ran
  std::map<std::string, InputHash> inputs;  // input path as written -> its hash
  std::vector<std::string> outputs;         // declared
  std::vector<std::string> written;         // every file or folder the job's run moved into place
  int exit_code = -1;                       // the command's; -1 when it did not exit (a signal) or never ran
  int signal = 0;                           // the signal that ended it, 0 when none
  std::string error;                        // the command's error lines, or why the batch failed the job
  double started = 0, finished = 0;         // Unix time, seconds
  double seconds = 0;                       // the command's wall time
  double overhead_seconds = 0;  // the batch's own time around it: hashing, staging, renames, record
  std::string host;
  int pid = 0;         // the batch process that ran it
  std::string task;    // "local", or the Slurm / shard task ("3/20")
  std::string device;  // the --device the batch gave it, empty when none
  std::string log;     // its stdout + stderr, relative to the state folder
};

// The record's path: STATE/jobs/<job key>.json.
std::string recordPath(const Manifest& m, const Job& job);
// Writes a record atomically (a temporary beside it, renamed).
void writeRecord(const Manifest& m, const Job& job, const JobRecord& r);
// Every job's record (std::nullopt where there is none); a malformed record is reported on stderr and read
// as none (the job is then run again).
std::vector<std::optional<JobRecord>> readRecords(const Manifest& m);

// Digests already taken in this process, by absolute path (an input many jobs share is read once).
using HashCache = std::map<std::string, InputHash>;

// The inputs' hashes now. `known` (the last record's) lets a file whose size and modification time are
// unchanged keep its hash without being read again; so does `cache`. Throws sf::Error naming an input that
// cannot be read.
std::map<std::string, InputHash> hashInputs(const Manifest& m, const Job& job,
                                            const std::map<std::string, InputHash>* known,
                                            HashCache* cache = nullptr);

// Where a job stands against its last record and the files now.
// kRunning: its last run is still running on this machine (a live process): left to finish, never run twice.
enum class Plan { kRun, kUpToDate, kFailedBefore, kRunning };
struct JobPlan {
  Plan plan = Plan::kRun;
  std::string why;  // kRun: "never ran", "inputs changed", "command changed", "an output is missing", ...
  std::map<std::string, InputHash> inputs;
};
JobPlan planJob(const Manifest& m, const Job& job, const std::optional<JobRecord>& last, bool retry_failed,
                HashCache* cache = nullptr);

// This machine's host name (records say where a job ran).
std::string hostName();

// A record "running" whose process is gone (same host, its pid no longer alive) is shown as interrupted.
JobStatus effectiveStatus(const JobRecord& r);

}  // namespace sf::batch
