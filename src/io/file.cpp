#include "io/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/limits.h"
#include "io/sog.h"

namespace sf {

namespace {

std::string osError(int err) {
  return std::strerror(err);
}

const char* fileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes a file descriptor when it goes out of scope.
struct FileDescriptor {
  int fd;
  explicit FileDescriptor(int descriptor) : fd(descriptor) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// The directory holding `target` ("." for a bare name).
std::filesystem::path directoryOf(const std::filesystem::path& target) {
  return target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path();
}

// Temporary names beside `path`: "<name>.sf-tmp-<pid>-XXXXXX". The pid lets a later write recognise the
// leftovers of a killed process (stale) without touching those of a running one.
constexpr const char* kTempTag = ".sf-tmp-";

void removeStaleTemporaries(const std::filesystem::path& target) {
  const std::filesystem::path dir = directoryOf(target);
  const std::string prefix = target.filename().string() + kTempTag;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>-XXXXXX"
    const size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || rest.size() - dash - 1 != 6) continue;
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (end != rest.c_str() + dash || pid <= 0) continue;
    if (pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue;  // owner alive
    ::unlinkat(::dirfd(d), name.c_str(), 0);
  }
  ::closedir(d);
}

void syncDirectory(const std::filesystem::path& target) {
  const FileDescriptor dir{::open(directoryOf(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd >= 0) ::fsync(dir.fd);  // best effort: some file systems refuse fsync on directories
}

}  // namespace

std::vector<uint8_t> readFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check below refuses it.
  const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (file.fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw Error(path + ": file is missing");
    throw Error(path + ": cannot open: " + osError(err));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw Error(path + ": cannot stat: " + osError(errno));
  if (!S_ISREG(st.st_mode))
    throw Error(path + ": is " + fileTypeName(st.st_mode) + ", expected a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  checkByteBudget(path, size, "file size");
  ::fcntl(file.fd, F_SETFL, ::fcntl(file.fd, F_GETFL) & ~O_NONBLOCK);
  std::vector<uint8_t> bytes;
  try {
    bytes.resize(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {
    throw Error(path + ": not enough memory to read its " + formatBytes(size));
  }
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(file.fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(path + ": read error at byte " + std::to_string(got) + ": " + osError(errno));
    if (n == 0) break;  // shrank while we read: keep what is there; the format's own checks judge it
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

void writeFileAtomic(const std::string& path, std::span<const uint8_t> bytes) {
  const std::filesystem::path target(path);
  removeStaleTemporaries(target);
  std::string tmp = path + kTempTag + std::to_string(::getpid()) + "-XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // created exclusively (O_EXCL), mode 0600
  if (fd < 0) throw Error(path + ": cannot create a temporary file beside it: " + osError(errno));
  // mkostemp makes the file 0600; give it the permissions an ordinary new file would have. The process's
  // umask can only be read by setting it, so it is read once.
  static const mode_t mask = [] {
    const mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  ::fchmod(fd, 0666 & ~mask);
  bool ok = true;
  int saved = 0;
  size_t done = 0;
  while (ok && done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      saved = n < 0 ? errno : EIO;
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (ok && ::fsync(fd) != 0) ok = false, saved = errno;
  if (::close(fd) != 0 && ok) ok = false, saved = errno;
  if (!ok) {
    ::unlink(tmp.c_str());
    throw Error(path + ": write failed: " + osError(saved));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    saved = errno;
    ::unlink(tmp.c_str());
    throw Error(path + ": cannot rename temporary file into place: " + osError(saved));
  }
  syncDirectory(target);
}

InputKind classifyInputName(const std::string& path) {
  const std::string ext = fileExtension(path);
  if (ext == ".gltf" || ext == ".glb") return InputKind::kGltf;
  if (ext == ".onnx") return InputKind::kOnnx;            // a neural gaussian generator (neural/generator.h)
  if (isSogMetaPath(path)) return InputKind::kSplatFile;  // the meta.json of an unpacked SOG
  if (isLodMetaPath(path)) return InputKind::kSplatFile;  // PlayCanvas's streamed LOD over SOG files
  if (ext == ".json") return InputKind::kSceneJson;
  return InputKind::kSplatFile;
}

InputKind classifyInput(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return std::filesystem::is_regular_file(std::filesystem::path(path) / "index.sflod", ec)
               ? InputKind::kLodHierarchy
               : InputKind::kCharacterPackage;
  const InputKind by_name = classifyInputName(path);
  // The SPL2 magic, read from regular files only (opening a FIFO would block; devices are refused by the
  // loaders). A headerless .splat may start with those bytes by chance: decodeSplats reads .splat by
  // extension too.
  if (by_name != InputKind::kSplatFile || fileExtension(path) == ".splat" ||
      !std::filesystem::is_regular_file(path, ec))
    return by_name;
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  if (f.read(magic, 4) && std::memcmp(magic, "SPL2", 4) == 0) return InputKind::kSplatHull;  // io/spl2.h
  return InputKind::kSplatFile;
}

std::string fileExtension(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string compressed = ".compressed.ply";
  if (name.size() > compressed.size() && name.ends_with(compressed)) return compressed;
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? std::string() : name.substr(dot);
}

RelativeName relativeNameByText(const std::string& name) {
  if (name.empty()) return RelativeName::kEmpty;
  const std::filesystem::path p = std::filesystem::path(name).lexically_normal();
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) return RelativeName::kAbsolute;
  if (p.empty() || p == ".") return RelativeName::kDirectoryItself;
  if (*p.begin() == "..") return RelativeName::kLeaves;
  return RelativeName::kInside;
}

bool isLodMetaPath(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name.ends_with("lod-meta.json");
}

}  // namespace sf
