// Batch results (batch/results.h): per-job records, input hashes, and what a job needs.
#include "batch/results.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/sha256.h"
#include "io/file.h"
#include "io/json.h"

namespace sf::batch {

namespace fs = std::filesystem;

namespace {

// SHA-256 of a file, read in 1 MiB blocks.
std::string hashFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot read: " + std::strerror(errno));
  Sha256 h;
  std::vector<uint8_t> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw Error(path + ": cannot read: " + std::strerror(e));
    }
    if (n == 0) break;
    h.update(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)));
  }
  ::close(fd);
  return h.hexDigest();
}

int64_t mtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// A file's hash, or a folder's: the digest of its files' relative paths (sorted) and digests. Its size and
// time are the sum of the sizes and the latest modification, so a changed file inside changes them.
InputHash hashPath(const std::string& path, const InputHash* known) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(path + ": " + std::strerror(errno));
  InputHash h;
  if (S_ISDIR(st.st_mode)) {
    std::vector<std::pair<std::string, std::string>> files;  // relative path -> full path
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(path)) {
      if (!e.is_regular_file()) continue;
      struct stat fst {};
      if (::stat(e.path().c_str(), &fst) != 0) continue;
      h.size += static_cast<uint64_t>(fst.st_size);
      h.mtime_ns = std::max(h.mtime_ns, mtimeNs(fst));
      files.emplace_back(e.path().lexically_relative(path).string(), e.path().string());
    }
    h.size += files.size();  // a file added or removed changes the size too
    if (known && known->size == h.size && known->mtime_ns == h.mtime_ns) return *known;
    std::sort(files.begin(), files.end());
    Sha256 all;
    for (const auto& [rel, full] : files) {
      const std::string line = rel + "\t" + hashFile(full) + "\n";
      all.update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(line.data()), line.size()));
    }
    h.sha256 = all.hexDigest();
    return h;
  }
  h.size = static_cast<uint64_t>(st.st_size);
  h.mtime_ns = mtimeNs(st);
  if (known && known->size == h.size && known->mtime_ns == h.mtime_ns) return *known;
  h.sha256 = hashFile(path);
  return h;
}

JobStatus parseStatus(const std::string& s) {
  for (JobStatus st : {JobStatus::kPending, JobStatus::kRunning, JobStatus::kDone, JobStatus::kFailed,
                       JobStatus::kInterrupted})
    if (s == statusName(st)) return st;
  throw Error("unknown status \"" + s + "\"");
}

nlohmann::json toJson(const JobRecord& r) {
  nlohmann::json j;
  j["version"] = 1;
  j["name"] = r.name;
  j["index"] = r.index;
  j["status"] = statusName(r.status);
  j["command"] = r.command;
  nlohmann::json inputs = nlohmann::json::object();
  for (const auto& [path, h] : r.inputs)
    inputs[path] = {{"sha256", h.sha256}, {"size", h.size}, {"mtime_ns", h.mtime_ns}};
  j["inputs"] = inputs;
  j["outputs"] = r.outputs;
  j["written"] = r.written;
  j["exit_code"] = r.exit_code;
  j["signal"] = r.signal;
  j["error"] = r.error;
  j["started"] = r.started;
  j["finished"] = r.finished;
  j["seconds"] = r.seconds;
  j["overhead_seconds"] = r.overhead_seconds;
  j["host"] = r.host;
  j["pid"] = r.pid;
  j["task"] = r.task;
  j["device"] = r.device;
  j["log"] = r.log;
  return j;
}

JobRecord fromJson(const nlohmann::json& j) {
  JobRecord r;
  r.name = j.at("name").get<std::string>();
  r.index = j.at("index").get<size_t>();
  r.status = parseStatus(j.at("status").get<std::string>());
  r.command = j.at("command").get<std::string>();
  for (auto it = j.at("inputs").begin(); it != j.at("inputs").end(); ++it)
    r.inputs[it.key()] = {it.value().at("sha256").get<std::string>(), it.value().at("size").get<uint64_t>(),
                          it.value().at("mtime_ns").get<int64_t>()};
  r.outputs = j.at("outputs").get<std::vector<std::string>>();
  r.written = j.at("written").get<std::vector<std::string>>();
  r.exit_code = j.at("exit_code").get<int>();
  r.signal = j.at("signal").get<int>();
  r.error = j.at("error").get<std::string>();
  r.started = j.at("started").get<double>();
  r.finished = j.at("finished").get<double>();
  r.seconds = j.at("seconds").get<double>();
  r.overhead_seconds = j.at("overhead_seconds").get<double>();
  r.host = j.at("host").get<std::string>();
  r.pid = j.at("pid").get<int>();
  r.task = j.at("task").get<std::string>();
  r.device = j.at("device").get<std::string>();
  r.log = j.at("log").get<std::string>();
  return r;
}

}  // namespace

std::string hostName() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

const char* statusName(JobStatus s) {
  switch (s) {
    case JobStatus::kPending:
      return "pending";
    case JobStatus::kRunning:
      return "running";
    case JobStatus::kDone:
      return "done";
    case JobStatus::kFailed:
      return "failed";
    case JobStatus::kInterrupted:
      return "interrupted";
  }
  return "?";
}

std::string recordPath(const Manifest& m, const Job& job) {
  return (fs::path(m.state_dir) / "jobs" / (job.key + ".json")).string();
}

void writeRecord(const Manifest& m, const Job& job, const JobRecord& r) {
  const std::string path = recordPath(m, job);
  fs::create_directories(fs::path(path).parent_path());
  const std::string text = toJson(r).dump(2) + "\n";
  writeFileAtomic(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

std::vector<std::optional<JobRecord>> readRecords(const Manifest& m) {
  std::vector<std::optional<JobRecord>> records(m.jobs.size());
  for (size_t k = 0; k < m.jobs.size(); ++k) {
    const std::string path = recordPath(m, m.jobs[k]);
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    try {
      const std::vector<uint8_t> bytes = readFile(path);
      const nlohmann::json j =
          parseJsonText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
      JobRecord r = fromJson(j);
      if (r.name == m.jobs[k].name) records[k] = std::move(r);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "splatforge batch: warning: %s: %s; the job counts as never run\n", path.c_str(),
                   withoutJsonPrefix(e.what()).c_str());
    }
  }
  return records;
}

std::map<std::string, InputHash> hashInputs(const Manifest& m, const Job& job,
                                            const std::map<std::string, InputHash>* known, HashCache* cache) {
  std::map<std::string, InputHash> out;
  for (const std::string& input : job.inputs) {
    const std::string abs = absoluteIn(m.dir, input);
    const InputHash* k = nullptr;
    if (known)
      if (auto it = known->find(input); it != known->end()) k = &it->second;
    if (cache)
      if (auto it = cache->find(abs);
          it != cache->end() && (!k || k->size != it->second.size || k->mtime_ns != it->second.mtime_ns))
        k = &it->second;
    out[input] = hashPath(abs, k);
    if (cache) (*cache)[abs] = out[input];
  }
  return out;
}

JobPlan planJob(const Manifest& m, const Job& job, const std::optional<JobRecord>& last, bool retry_failed,
                HashCache* cache) {
  JobPlan p;
  p.inputs = hashInputs(m, job, last ? &last->inputs : nullptr, cache);
  if (!last) {
    p.why = "never ran";
    return p;
  }
  if (last->command != commandLine(job)) {
    p.why = "its command changed";
    return p;
  }
  if (last->inputs != p.inputs) {
    p.why = "an input changed";
    return p;
  }
  if (last->status == JobStatus::kFailed) {
    p.plan = retry_failed ? Plan::kRun : Plan::kFailedBefore;
    p.why = retry_failed ? "it failed (--retry-failed)" : "it failed (--retry-failed runs it again)";
    return p;
  }
  if (last->status != JobStatus::kDone) {
    const JobStatus now = effectiveStatus(*last);
    if (now == JobStatus::kRunning && last->host == hostName()) {
      p.plan = Plan::kRunning;
      p.why = "it is running here now (pid " + std::to_string(last->pid) + ")";
      return p;
    }
    p.why = std::string("its last run is ") + statusName(now);
    return p;
  }
  for (const std::string& o : job.outputs) {
    std::error_code ec;
    if (!fs::exists(absoluteIn(m.dir, o), ec)) {
      p.why = o + " is missing";
      return p;
    }
  }
  p.plan = Plan::kUpToDate;
  p.why = "up to date";
  return p;
}

JobStatus effectiveStatus(const JobRecord& r) {
  if (r.status != JobStatus::kRunning) return r.status;
  if (r.host == hostName() && r.pid > 0 && ::kill(r.pid, 0) != 0 && errno == ESRCH)
    return JobStatus::kInterrupted;
  return JobStatus::kRunning;
}

}  // namespace sf::batch
