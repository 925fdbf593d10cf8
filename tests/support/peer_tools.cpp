#include "support/peer_tools.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace sf::test {

namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A temporary file for a child's output, removed when this goes out of scope.
struct TempFile {
  std::string path;
  TempFile() {
    std::string pattern = (fs::temp_directory_path() / "sf-peer-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd >= 0) {
      ::close(fd);
      path = pattern;
    }
  }
  ~TempFile() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

std::string quoteForMessage(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\"'\\$") == std::string::npos) return arg;
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string nodeExecutable() {
  const char* env = std::getenv("PATH");
  std::stringstream dirs(env ? env : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / "node";
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

std::string peerToolPath(const std::string& relative) {
  const fs::path p = fs::path(SPLATFORGE_SOURCE_DIR) / "tools" / "interop" / "node_modules" / relative;
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : std::string();
}

CommandResult runCommand(const std::vector<std::string>& argv) {
  CommandResult r;
  for (const std::string& a : argv) {
    if (!r.command.empty()) r.command += ' ';
    r.command += quoteForMessage(
        a);  // appended in two steps: GCC 12 at -O3 misreads the one-expression form (-Wrestrict)
  }
  if (argv.empty()) return r;
  TempFile out, err;
  if (out.path.empty() || err.path.empty()) {
    r.err = "cannot create temporary files for the command's output";
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.path.c_str(), O_WRONLY | O_TRUNC, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    r.err = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return r;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out.path);
  r.err = slurp(err.path);
  return r;
}

CommandResult runPeer(const std::string& tool, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {nodeExecutable(), peerToolPath(tool)};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

::testing::AssertionResult succeeded(const CommandResult& r) {
  if (r.exit_code == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "command failed (exit code " << r.exit_code << "): " << r.command << "\n"
         << (r.err.empty() ? "stdout:\n" + r.out : "stderr:\n" + r.err);
}

}  // namespace sf::test
