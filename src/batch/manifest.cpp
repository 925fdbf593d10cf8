// Batch manifests (batch/manifest.h): parsing, pattern expansion and the checks made before anything runs.
#include "batch/manifest.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/sha256.h"
#include "core/text.h"
#include "io/file.h"
#include "io/json.h"

namespace sf::batch {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> splitWords(const std::string& s) {
  std::vector<std::string> words;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = s.find_first_not_of(' ', pos);
    if (start == std::string::npos) break;
    const size_t end = std::min(s.find(' ', start), s.size());
    words.push_back(s.substr(start, end - start));
    pos = end;
  }
  return words;
}

std::string joinWords(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

// The value of placeholder `name` ("input", "input1", "stem", ...) in `vars`; false when it has none.
using Vars = std::map<std::string, std::string>;

// `text` with every "{name}" of `vars` replaced; names in `keep` stay as they are (the outputs, which the
// runner fills in). A placeholder in neither is reported through `unknown`.
std::string substitute(const std::string& text, const Vars& vars, bool keep_outputs, std::string& unknown) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t open = text.find('{', pos);
    if (open == std::string::npos) {
      out += text.substr(pos);
      break;
    }
    const size_t close = text.find('}', open);
    if (close == std::string::npos) {
      out += text.substr(pos);
      break;
    }
    out += text.substr(pos, open - pos);
    const std::string name = text.substr(open + 1, close - open - 1);
    if (auto it = vars.find(name); it != vars.end()) {
      out += it->second;
    } else if (keep_outputs && name.rfind("output", 0) == 0) {
      out += text.substr(open, close - open + 1);
    } else {
      if (unknown.empty()) unknown = name;
      out += text.substr(open, close - open + 1);
    }
    pos = close + 1;
  }
  return out;
}

// The output index a placeholder names: "output" -> 0, "output3" -> 3; -1 when `name` is not one.
int outputIndex(const std::string& name) {
  if (name == "output") return 0;
  if (name.rfind("output", 0) != 0 || name.size() == 6 || name.size() > 9) return -1;
  for (size_t i = 6; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return -1;
  return std::stoi(name.substr(6));
}

// Every output placeholder in an argument, in order.
std::vector<int> outputsNamed(const std::string& arg) {
  std::vector<int> found;
  for (size_t pos = 0; (pos = arg.find('{', pos)) != std::string::npos;) {
    const size_t close = arg.find('}', pos);
    if (close == std::string::npos) break;
    if (const int i = outputIndex(arg.substr(pos + 1, close - pos - 1)); i >= 0) found.push_back(i);
    pos = close + 1;
  }
  return found;
}

std::string keyOf(const std::string& name) {
  std::string key;
  for (char c : name) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '.' || c == '_';
    key += safe ? c : '_';
    if (key.size() >= 48) break;
  }
  const std::string digest =
      sha256Hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(name.data()), name.size()));
  return key + "-" + digest.substr(0, 10);
}

std::vector<std::string> stringList(const JsonNode& node) {
  if (!node.value.is_array()) node.fail("expected an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < node.value.size(); ++i) out.push_back(node.at(i).string());
  return out;
}

// The files and folders a "foreach" pattern matches: a folder (no wildcards) then a file-name pattern with
// `*`, `?` and `[...]`; hidden entries are left out; sorted by name. Each as the pattern's folder + name.
std::vector<std::string> expandPattern(const JsonNode& node, const std::string& dir) {
  const std::string pattern = node.string();
  const fs::path p(pattern);
  const std::string folder = p.parent_path().string(), glob = p.filename().string();
  if (glob.empty()) node.fail("expected a pattern of file names, such as \"models/*.glb\"");
  if (folder.find_first_of("*?[") != std::string::npos)
    node.fail("wildcards are allowed in the last path component only");
  const fs::path where = fs::path(absoluteIn(dir, folder.empty() ? "." : folder));
  std::error_code ec;
  if (!fs::is_directory(where, ec)) node.fail((folder.empty() ? "." : folder) + ": no such folder");
  std::vector<std::string> matches;
  for (const fs::directory_entry& e : fs::directory_iterator(where, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (::fnmatch(glob.c_str(), name.c_str(), FNM_PERIOD) == 0)
      matches.push_back(folder.empty() ? name : (fs::path(folder) / name).string());
  }
  if (ec) node.fail(where.string() + ": cannot list: " + ec.message());
  if (matches.empty()) node.fail("\"" + pattern + "\" matches no file");
  std::sort(matches.begin(), matches.end());
  return matches;
}

std::string stemOf(const std::string& file) {
  const std::string ext = fileExtension(file);
  return ext.empty() || ext.size() >= file.size() ? file : file.substr(0, file.size() - ext.size());
}

bool isMesh(const std::string& path) {
  const std::string ext = fileExtension(path);
  return ext == ".gltf" || ext == ".glb";
}

// Default arguments when a job gives no "args": the inputs as the command expects them, then -o {output}.
std::vector<std::string> defaultArgs(const std::string& command, size_t inputs, size_t outputs,
                                     const std::string& first_input) {
  std::vector<std::string> args;
  if (command == "train" && inputs >= 1) {
    args = {isMesh(first_input) ? "--mesh" : "--dataset", "{input}"};
  } else if (command == "character build" && inputs >= 1) {
    args = {"--from-gltf", "{input}"};
  } else if (command == "character bind" && inputs >= 2) {
    args = {"--splats", "{input}", "--skin", "{input1}"};
  } else {
    for (size_t i = 0; i < inputs; ++i)
      args.push_back(i == 0 ? "{input}" : "{input" + std::to_string(i) + "}");
  }
  if (outputs > 0) args.insert(args.end(), {"-o", "{output}"});
  return args;
}

// Problems found, each with the manifest entry it belongs to, reported in the entries' order.
struct Checker {
  std::string file;
  std::vector<std::pair<size_t, std::string>> problems;
  void add(size_t entry, const std::string& path, const std::string& reason) {
    problems.emplace_back(entry, file + ": " + path + ": " + reason);
  }
  // Throws every problem, one a line, when there is any.
  void throwAny() {
    if (problems.empty()) return;
    std::stable_sort(problems.begin(), problems.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "\n") + p.second;
    throw Error(all);
  }
};

// The command a job names; an unknown one is an error suggesting the nearest.
const KnownCommand& findCommand(const JsonNode& node, const std::string& command) {
  const KnownCommand* known = nullptr;
  std::string nearest;
  size_t best = 4;
  for (const KnownCommand& k : knownCommands()) {
    if (command == k.words) known = &k;
    if (const size_t d = editDistance(command, k.words); d < best) best = d, nearest = k.words;
  }
  if (!known)
    node["command"].fail("unknown command \"" + command + "\"" +
                         (nearest.empty() ? "" : ", did you mean \"" + nearest + "\"?") +
                         " (a batch runs: info, validate, convert, render, animate, demo, views, train, "
                         "hull bake|play|info, "
                         "character build|bind|preview|gnm-pack|info, onnx run|info, pose)");
  return *known;
}

// A "jobs" entry as written, before its placeholders are filled in.
struct JobEntry {
  std::vector<std::string> words;  // the command's
  std::string command;
  const KnownCommand* known = nullptr;
  std::vector<std::string> inputs, outputs, args, flags;
  bool has_args = false;
  std::string name;
};

JobEntry readJobEntry(const JsonNode& node) {
  node.onlyKeys({"name", "command", "foreach", "inputs", "outputs", "args", "flags"});
  JobEntry e;
  e.words = splitWords(node["command"].string());
  e.command = joinWords(e.words);
  e.known = &findCommand(node, e.command);
  e.inputs = node.has("inputs") ? stringList(node["inputs"]) : std::vector<std::string>{};
  e.outputs = node.has("outputs") ? stringList(node["outputs"]) : std::vector<std::string>{};
  e.has_args = node.has("args");
  e.args = e.has_args ? stringList(node["args"]) : std::vector<std::string>{};
  e.flags = node.has("flags") ? stringList(node["flags"]) : std::vector<std::string>{};
  e.name = node.has("name") ? node["name"].string() : "";
  return e;
}

// One job, or one per file the pattern matches: the pattern placeholders of each.
std::vector<Vars> patternExpansions(const JsonNode& node, const std::string& dir) {
  std::vector<Vars> expansions;
  if (node.has("foreach")) {
    for (const std::string& match : expandPattern(node["foreach"], dir)) {
      const std::string file = fs::path(match).filename().string();
      expansions.push_back({{"match", match}, {"file", file}, {"stem", stemOf(file)}});
    }
  } else {
    expansions.push_back({});
  }
  return expansions;
}

// Fills in the placeholders of one expansion's values; an unknown placeholder is an error naming the
// manifest, the value's path and the pattern's match.
struct Expander {
  const std::string& name;  // the manifest
  const Vars& pattern_vars;
  std::string operator()(const std::string& value, const std::string& path, const Vars& vars,
                         bool keep_outputs) const {
    std::string unknown;
    std::string out = substitute(value, vars, keep_outputs, unknown);
    if (!unknown.empty()) {
      const bool pattern_only = unknown == "match" || unknown == "file" || unknown == "stem";
      throw Error(name + ": " + path + (pattern_vars.empty() ? "" : " (" + pattern_vars.at("match") + ")") +
                  ": unknown placeholder {" + unknown + "}" +
                  (pattern_only ? " (only a job with \"foreach\" has it)"
                                : " (placeholders: {input}, {inputN}, {output}, "
                                  "{outputN}, and with \"foreach\" {match}, {file}, {stem})"));
    }
    return out;
  }
};

// One manifest being parsed: its jobs so far, the defaults, the problems found.
struct ManifestReader {
  const std::string& name;  // the manifest, in messages
  Manifest& m;
  Checker check;
  std::map<std::string, std::vector<std::string>> default_flags;  // command words (or "*") -> flags

  void readDefaults(const JsonNode& r) {
    if (!r.has("defaults")) return;
    try {
      const JsonNode d = r["defaults"];
      d.onlyKeys({"flags"});
      if (d.has("flags")) {
        const JsonNode f = d["flags"];
        if (!f.value.is_object()) f.fail("expected an object: command (or \"*\") -> array of flags");
        for (auto it = f.value.begin(); it != f.value.end(); ++it) {
          const JsonNode entry{it.value(), f.path + "." + it.key(), name};
          const std::string words = joinWords(splitWords(it.key()));
          const bool known =
              words == "*" || std::any_of(knownCommands().begin(), knownCommands().end(),
                                          [&](const KnownCommand& k) { return words == k.words; });
          if (!known) entry.fail("\"" + it.key() + "\" is not a command a batch runs");
          default_flags[words] = stringList(entry);
        }
      }
    } catch (const Error& e) {
      check.problems.emplace_back(0, e.what());
    }
  }

  void readJobs(const JsonNode& jobs) {
    if (!jobs.value.is_array() || jobs.value.empty()) jobs.fail("expected a non-empty array of jobs");
    for (size_t j = 0; j < jobs.value.size(); ++j) {
      const JsonNode node = jobs.at(j);
      try {
        const JobEntry e = readJobEntry(node);
        for (const Vars& pattern_vars : patternExpansions(node, m.dir))
          m.jobs.push_back(expandJob(node, j, e, pattern_vars));
      } catch (const Error& e) {
        check.problems.emplace_back(j, e.what());
      }
    }
  }

  // The job of entry `j` for one expansion: inputs, outputs, arguments and flags with their placeholders
  // filled in (the outputs' left for the runner), its name.
  Job expandJob(const JsonNode& node, size_t j, const JobEntry& e, const Vars& pattern_vars) const {
    Job job;
    job.where = node.path + (pattern_vars.empty() ? "" : " (" + pattern_vars.at("match") + ")");
    job.entry = j;
    job.named = !e.name.empty();
    job.command = e.words;
    job.takes_device = e.known->takes_device;
    const Expander expand{name, pattern_vars};
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      job.inputs.push_back(
          expand(e.inputs[i], node.path + ".inputs[" + std::to_string(i) + "]", pattern_vars, false));
      if (job.inputs.back().empty())
        throw Error(name + ": " + node.path + ".inputs[" + std::to_string(i) + "]: an empty path");
    }
    for (size_t i = 0; i < e.outputs.size(); ++i) {
      job.outputs.push_back(
          expand(e.outputs[i], node.path + ".outputs[" + std::to_string(i) + "]", pattern_vars, false));
      const std::string& o = job.outputs.back();
      if (o.empty() || o.back() == '/' || fs::path(o).filename() == "." || fs::path(o).filename() == "..")
        throw Error(name + ": " + node.path + ".outputs[" + std::to_string(i) + "]: \"" + o +
                    "\" is not a file or folder name");
    }
    Vars arg_vars = pattern_vars;
    for (size_t i = 0; i < job.inputs.size(); ++i) {
      arg_vars["input" + std::to_string(i)] = job.inputs[i];
      if (i == 0) arg_vars["input"] = job.inputs[i];
    }
    const std::vector<std::string> args = e.has_args
                                              ? e.args
                                              : defaultArgs(e.command, job.inputs.size(), job.outputs.size(),
                                                            job.inputs.empty() ? "" : job.inputs[0]);
    for (size_t i = 0; i < args.size(); ++i)
      job.args.push_back(expand(args[i], node.path + ".args[" + std::to_string(i) + "]", arg_vars, true));
    std::vector<std::string> flags;
    if (auto it = default_flags.find("*"); it != default_flags.end()) flags = it->second;
    if (auto it = default_flags.find(e.command); it != default_flags.end())
      flags.insert(flags.end(), it->second.begin(), it->second.end());
    flags.insert(flags.end(), e.flags.begin(), e.flags.end());
    for (size_t i = 0; i < flags.size(); ++i)
      job.args.push_back(expand(flags[i], node.path + ".flags[" + std::to_string(i) + "]", arg_vars, true));
    checkOutputsNamed(job);
    for (const std::string& a : job.args)
      job.has_device = job.has_device || a == "--device" || a.rfind("--device=", 0) == 0;
    job.name = !e.name.empty()        ? expand(e.name, node.path + ".name", pattern_vars, false)
               : !job.outputs.empty() ? job.outputs[0]
                                      : e.command + (job.inputs.empty() ? "" : " " + job.inputs[0]);
    return job;
  }

  // Outputs the arguments name, and the sidecars beside them.
  void checkOutputsNamed(const Job& job) const {
    std::set<int> named;
    for (const std::string& a : job.args)
      for (int i : outputsNamed(a)) {
        if (static_cast<size_t>(i) >= job.outputs.size())
          throw Error(name + ": " + job.where + ".args: {output" + std::to_string(i) +
                      "} names no output (the job declares " + std::to_string(job.outputs.size()) + ")");
        named.insert(i);
      }
    for (size_t i = 0; i < job.outputs.size(); ++i) {
      if (named.count(static_cast<int>(i))) continue;
      const fs::path folder = fs::path(absoluteIn(m.dir, job.outputs[i])).parent_path();
      bool beside = false;
      for (int n : named)
        beside = beside ||
                 fs::path(absoluteIn(m.dir, job.outputs[static_cast<size_t>(n)])).parent_path() == folder;
      if (!beside)
        throw Error(
            name + ": " + job.where + ".outputs[" + std::to_string(i) + "]: " + job.outputs[i] +
            " is neither named in the arguments ({output" + std::to_string(i) +
            "}) nor in the folder of an output that is (where the command would write it as a sidecar)");
    }
  }

  // Across jobs: names, inputs that exist and that no job writes, outputs written once.
  void checkAcrossJobs() {
    std::map<std::string, const Job*> names;
    std::map<std::string, std::string> written;  // absolute output -> "jobs[k].outputs[i]"
    for (size_t k = 0; k < m.jobs.size(); ++k) {
      Job& job = m.jobs[k];
      job.index = k;
      job.key = keyOf(job.name);
      // Two jobs named after one output are reported as writing it, below.
      if (auto [it, fresh] = names.emplace(job.name, &job); !fresh && (job.named || it->second->named))
        check.add(
            job.entry, job.where + ".name",
            "\"" + job.name + "\" is also the name of " + it->second->where + " (job names are unique)");
      for (size_t i = 0; i < job.outputs.size(); ++i) {
        const std::string here = job.where + ".outputs[" + std::to_string(i) + "]";
        const std::string abs = absoluteIn(m.dir, job.outputs[i]);
        if (auto [it, fresh] = written.emplace(abs, here); !fresh)
          check.add(job.entry, here,
                    job.outputs[i] + " is also written by " + it->second + " (two jobs writing one output)");
        if (fs::path(m.state_dir).lexically_relative(abs).string().rfind("..", 0) != 0)
          check.add(job.entry, here, job.outputs[i] + " holds the batch's own state folder " + m.state_dir);
      }
    }
    for (const Job& job : m.jobs)
      for (size_t i = 0; i < job.inputs.size(); ++i) {
        const std::string here = job.where + ".inputs[" + std::to_string(i) + "]";
        const std::string abs = absoluteIn(m.dir, job.inputs[i]);
        if (auto it = written.find(abs); it != written.end()) {
          check.add(
              job.entry, here,
              job.inputs[i] + " is written by " + it->second +
                  " (jobs of one manifest run in any order and on any node: chain two manifests instead)");
          continue;
        }
        std::error_code ec;
        if (!fs::exists(abs, ec)) check.add(job.entry, here, job.inputs[i] + ": no such file or folder");
      }
  }
};

}  // namespace

const std::vector<KnownCommand>& knownCommands() {
  static const std::vector<KnownCommand> commands = {{"info", false},
                                                     {"validate", false},
                                                     {"convert", false},
                                                     {"render", true},
                                                     {"animate", true},
                                                     {"demo", true},
                                                     {"views", false},
                                                     {"train", true},
                                                     {"hull bake", true},
                                                     {"hull play", true},
                                                     {"hull info", false},
                                                     {"character build", false},
                                                     {"character bind", false},
                                                     {"character preview", false},
                                                     {"character gnm-pack", false},
                                                     {"character info", false},
                                                     {"onnx run", true},
                                                     {"onnx info", false},
                                                     {"pose", false}};
  return commands;
}

std::string absoluteIn(const std::string& dir, const std::string& path) {
  const fs::path p(path);
  return (p.is_absolute() ? p : fs::path(dir) / p).lexically_normal().string();
}

std::string shellQuote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      std::string_view("_./:=,+@%-").find(c) != std::string_view::npos);
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> expandOutputs(const Job& job, const std::vector<std::string>& outputs) {
  Vars vars;
  for (size_t i = 0; i < outputs.size(); ++i) {
    vars["output" + std::to_string(i)] = outputs[i];
    if (i == 0) vars["output"] = outputs[i];
  }
  std::vector<std::string> args;
  for (const std::string& a : job.args) {
    std::string unknown;
    args.push_back(substitute(a, vars, false, unknown));
  }
  return args;
}

std::string commandLine(const Job& job) {
  std::string line = "splatforge " + joinWords(job.command);
  for (const std::string& a : expandOutputs(job, job.outputs)) {
    line += ' ';
    line += shellQuote(a);
  }
  return line;
}

Manifest parseManifest(const std::string& text, const std::string& name, const std::string& dir) {
  Manifest m;
  m.path = name;
  m.dir = fs::path(dir).lexically_normal().string();
  const nlohmann::json root = parseJsonText(text, name);
  const JsonNode r{root, "", name};
  r.onlyKeys({"version", "state", "defaults", "jobs"});
  const double version = r["version"].number();
  if (version != kManifestVersion)
    r["version"].fail("version " + r["version"].value.dump() +
                      " is not known (this splatforge reads version " + std::to_string(kManifestVersion) +
                      ")");
  const std::string stem = fs::path(name).stem().string();
  m.state_dir = absoluteIn(m.dir, r.has("state") ? r["state"].string() : stem + ".batch");

  ManifestReader reader{name, m, Checker{name, {}}, {}};
  reader.readDefaults(r);
  reader.readJobs(r["jobs"]);
  reader.checkAcrossJobs();
  reader.check.throwAny();
  return m;
}

Manifest loadManifest(const std::string& path) {
  const std::vector<uint8_t> bytes = readFile(path);
  const fs::path abs = fs::absolute(path);
  return parseManifest(std::string(bytes.begin(), bytes.end()), path, abs.parent_path().string());
}

}  // namespace sf::batch
