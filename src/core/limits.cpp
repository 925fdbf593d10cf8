#include "core/limits.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace sf {

namespace {
LoadLimits& process() {
  static LoadLimits limits = defaultLoadLimits();
  return limits;
}
thread_local const LoadLimits* t_limits = nullptr;  // the innermost live ThreadLoadLimits of this thread
const LoadLimits& current() {
  return t_limits ? *t_limits : process();
}
}  // namespace

ThreadLoadLimits::ThreadLoadLimits(const LoadLimits& limits) : limits_(limits), outer_(t_limits) {
  t_limits = &limits_;
}
ThreadLoadLimits::~ThreadLoadLimits() {
  t_limits = outer_;
}

LoadLimits defaultLoadLimits() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const uint64_t physical =
      pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  LoadLimits l;
  l.max_bytes = std::max<uint64_t>(physical / 2, 1ull << 30);
  l.max_gaussians = 1ull << 27;
  return l;
}

const LoadLimits& loadLimits() {
  return current();
}
void setLoadLimits(const LoadLimits& limits) {
  process() = limits;
}

uint64_t cloudBytes(uint64_t count, int sh_degree) {
  const uint64_t coeffs = static_cast<uint64_t>((sh_degree + 1) * (sh_degree + 1));
  // positions, scales (3 floats each), rotation (4), opacity (1), SH (3 per coefficient)
  return count * 4u * (3 + 3 + 4 + 1 + 3 * coeffs);
}

std::string formatBytes(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  if (u == 0)
    std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
  return buf;
}

uint64_t parseByteSize(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  std::string number = text.substr(0, i), unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB"))
    unit.resize(unit.size() - 2);
  else if (unit.ends_with("B"))
    unit.resize(unit.size() - 1);
  double scale = 1;
  if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024.0;
  else if (unit == "G")
    scale = 1024.0 * 1024.0 * 1024.0;
  else if (unit == "T")
    scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else if (!unit.empty())
    number.clear();
  char* end = nullptr;
  const double v = number.empty() ? -1.0 : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !(v > 0) || !std::isfinite(v * scale) ||
      v * scale > 1.8e19)
    throw Error("'" + text +
                "' is not a size (expected a positive number with an optional K, M, G or T suffix, e.g. 8G)");
  return static_cast<uint64_t>(v * scale);
}

void checkGaussianBudget(const std::string& path, uint64_t count, int sh_degree, uint64_t extra_bytes) {
  const LoadLimits& l = loadLimits();
  if (count > l.max_gaussians)
    throw Error(path + ": declares " + std::to_string(count) + " gaussians, more than the load limit of " +
                std::to_string(l.max_gaussians) + " (raise it with --max-gaussians)");
  const uint64_t need = cloudBytes(count, sh_degree) + extra_bytes;
  if (need > l.max_bytes)
    throw Error(path + ": declares " + std::to_string(count) + " gaussians of SH degree " +
                std::to_string(sh_degree) + ", which need " + formatBytes(need) +
                " to load, more than the load memory limit of " + formatBytes(l.max_bytes) +
                " (raise it with --max-memory)");
}

void checkByteBudget(const std::string& path, uint64_t bytes, const std::string& what) {
  const LoadLimits& l = loadLimits();
  if (bytes > l.max_bytes)
    throw Error(path + ": " + what + " of " + formatBytes(bytes) + " exceeds the load memory limit of " +
                formatBytes(l.max_bytes) + " (raise it with --max-memory)");
}

}  // namespace sf
