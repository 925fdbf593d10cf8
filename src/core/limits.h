// Resource limits for untrusted input: how much one load may allocate. Every loader checks the size a
// file declares (gaussian count, decompressed bytes, file size) against these limits before it allocates,
// so a small file cannot ask for more memory than the machine has.
#pragma once

#include <cstdint>
#include <string>

namespace sf {

struct LoadLimits {
  uint64_t max_gaussians = 0;  // gaussians one file may declare
  uint64_t max_bytes = 0;      // bytes one load may hold: the file, its decompressed body, the decoded cloud
  // Non-finite values (NaN, +-inf) in a splat file: rows holding one are dropped with a warning naming the
  // count, the first row and its field (default), or the file is refused (true: --strict).
  bool reject_non_finite = false;
};

// Defaults from the machine: max_bytes is half the physical memory (at least 1 GiB), max_gaussians is
// 2^27 (134M, beyond any capture). The CLI raises or lowers them with --max-gaussians / --max-memory.
LoadLimits defaultLoadLimits();

// The limits in force for the calling thread: its ThreadLoadLimits where one is alive, else the process's
// (defaultLoadLimits() until set). setLoadLimits sets the process's: do it before loading, it is not
// synchronised with loads running on other threads.
const LoadLimits& loadLimits();
void setLoadLimits(const LoadLimits& limits);

// Limits for the loads of the calling thread alone while this lives (nested ones restore the outer one on
// destruction): a thread that loads with its own limits (the Python module, which lets other threads run
// while it loads) leaves every other thread's loads as they were. Loaders read the limits on the thread that
// called them.
class ThreadLoadLimits {
 public:
  explicit ThreadLoadLimits(const LoadLimits& limits);
  ~ThreadLoadLimits();
  ThreadLoadLimits(const ThreadLoadLimits&) = delete;
  ThreadLoadLimits& operator=(const ThreadLoadLimits&) = delete;

 private:
  LoadLimits limits_;
  const LoadLimits* outer_;
};

// Bytes a GaussianCloud of `count` gaussians of SH degree `sh_degree` holds.
uint64_t cloudBytes(uint64_t count, int sh_degree);

// Throws sf::Error unless a file declaring `count` gaussians of SH degree `sh_degree`, plus `extra_bytes`
// of transient data (a decompressed body), fits the limits. The message names `path`, the declared count,
// the bytes it needs and the flag that raises the limit.
void checkGaussianBudget(const std::string& path, uint64_t count, int sh_degree, uint64_t extra_bytes = 0);
// Throws sf::Error unless `bytes` of `what` (e.g. "decompressed body", "file") fit max_bytes.
void checkByteBudget(const std::string& path, uint64_t bytes, const std::string& what);

// "1.5 GiB"-style size for messages; parseByteSize reads "512M", "8G", "1T", "123456" (bytes; K/M/G/T are
// binary multiples, an optional trailing B or iB is accepted). Throws sf::Error on anything else.
std::string formatBytes(uint64_t bytes);
uint64_t parseByteSize(const std::string& text);

}  // namespace sf
