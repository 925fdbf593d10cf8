// Batch manifests (docs/formats/batch-manifest.md): a JSON list of splatforge commands, each with its
// declared inputs and outputs, or a pattern that expands over a folder of models. Everything is checked
// before anything runs, and every problem is reported with the manifest's JSON path ("jobs[3].outputs[0]").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sf::batch {

inline constexpr int kManifestVersion = 1;

// One job: a splatforge command run as a child process in the manifest's folder.
struct Job {
  size_t index = 0;    // position in the expanded list (tasks and shards split by it)
  std::string name;    // unique in the manifest; default: its first output (else command + input)
  std::string key;     // file-name-safe id derived from the name (results, logs, staging folders)
  std::string where;   // its JSON path for messages: "jobs[2]", or "jobs[2] (models/b.glb)"
  size_t entry = 0;    // its entry in the manifest's "jobs" (several jobs share one with "foreach")
  bool named = false;  // the entry gives a "name"
  std::vector<std::string> command;  // the command's words: {"hull", "bake"}
  std::vector<std::string> inputs;   // as written: relative to the manifest's folder, or absolute
  std::vector<std::string> outputs;  // likewise; every file or folder the job declares it writes
  // The arguments after the command words, inputs substituted; each output is still the placeholder
  // "{output}" / "{outputN}" (the runner puts a staging path there). A declared output not named here is a
  // sidecar the command writes beside a named one (`hull bake`'s NAME.meta.json).
  std::vector<std::string> args;
  bool takes_device = false;  // the command has --device (a worker's GPU is passed to it)
  bool has_device = false;    // the job's own arguments already give --device
};

struct Manifest {
  std::string path;       // the manifest file as given
  std::string dir;        // its folder, absolute: jobs run here
  std::string state_dir;  // absolute: results, logs, the job-time plot, Slurm scripts and logs
  std::vector<Job> jobs;
};

// Reads, expands and checks a manifest. Every problem is collected and thrown as one sf::Error whose lines
// each read "<manifest>: <JSON path>: <reason>": an unknown key or command, a malformed value, a missing
// input, an input that another job writes, two jobs writing one output, an unknown placeholder, a pattern
// matching no file, a repeated job name.
Manifest loadManifest(const std::string& path);

// The same for manifest text (`name` and `dir` as loadManifest would use them), for tests.
Manifest parseManifest(const std::string& text, const std::string& name, const std::string& dir);

// The commands a manifest may name, each with whether it takes --device (for --help and the format doc).
struct KnownCommand {
  const char* words;
  bool takes_device;
};
const std::vector<KnownCommand>& knownCommands();

// The job's arguments with each output placeholder replaced by `outputs[i]` (the declared paths, or the
// runner's staging paths).
std::vector<std::string> expandOutputs(const Job& job, const std::vector<std::string>& outputs);

// The command line as the results record it and the log prints it: "splatforge <words> <args>", outputs as
// declared, every argument that needs it shell-quoted.
std::string commandLine(const Job& job);

// A path as a manifest gives it (relative to `dir`, the manifest's folder, or absolute) made absolute and
// lexically normal: the manifest checks, the runner and the results all name files this way.
std::string absoluteIn(const std::string& dir, const std::string& path);

// `s` quoted for a POSIX shell when it holds anything but [A-Za-z0-9_./:=,+@%-].
std::string shellQuote(const std::string& s);

}  // namespace sf::batch
