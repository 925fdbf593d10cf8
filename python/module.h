// Shared pieces of the `splatforge` Python module (docs/python.md): the Cloud holder, argument checks that
// raise ValueError naming the argument, and the registration functions each source file provides.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/gaussian_cloud.h"
#include "core/limits.h"
#include "io/formats.h"

namespace sf::py {

namespace pyb = pybind11;

// A Python `Cloud`. The gaussians are immutable once built (the numpy views it hands out are read-only and
// every setter swaps in a new GaussianCloud): the Vulkan renderer keeps a cloud on the GPU for as long as
// the pointer and size of what it is given stay the same, so a cloud must never change in place.
struct Cloud {
  std::shared_ptr<const GaussianCloud> data;
  // Where it came from (load); empty format for clouds built from arrays.
  std::optional<SplatFormat> format;
  int version = 0;
  uint64_t file_bytes = 0;
  size_t dropped_non_finite = 0;
  std::vector<std::string> warnings;
  void replace(GaussianCloud cloud);
};

// A copy of `cloud` with SH degree `degree`: higher coefficients dropped, missing ones added as zeros
// (Cloud.with_sh_degree).
GaussianCloud reduceShDegree(const GaussianCloud& cloud, int degree);

// Raises ValueError with `message` (pybind11 turns it into Python's ValueError).
[[noreturn]] void valueError(const std::string& message);

// A path argument: str or os.PathLike (os.fspath), as a string.
std::string pathArg(const pyb::handle& path, const char* name);

// A file the call reads: pathArg, and a missing file raises splatforge.MissingFileError, a subclass of both
// splatforge.Error and Python's FileNotFoundError (so `except FileNotFoundError` works as for open()).
class MissingFile : public Error {
 public:
  using Error::Error;
};
std::string inputPathArg(const pyb::handle& path, const char* name);

// The load limits of one load from load()'s keyword arguments (None: the limits in force), for a
// ThreadLoadLimits around the load: they apply to that thread's load alone, so the load can run without the
// GIL while other threads load with theirs. Raises ValueError for a bad value.
LoadLimits loadLimitsArg(const pyb::object& max_gaussians, const pyb::object& max_memory, bool strict);

// `value` as something numpy reads: a tensor of another library that speaks DLPack (torch, JAX, CuPy, ...:
// it has __dlpack__) becomes a numpy array over the same host memory (numpy.from_dlpack, no copy); a tensor
// on a GPU is copied to the host first (its .cpu(), after .detach() where it has one), and a torch tensor
// that requires grad is detached. Anything else is returned as it is. Raises ValueError naming `name` for a
// tensor numpy cannot take (e.g. bfloat16) or a device tensor without a way to the host.
pyb::object hostArrayArg(const pyb::handle& value, const char* name);

// Emits each line as a Python RuntimeWarning (warnings.warn).
void warnAll(const std::vector<std::string>& lines);

void registerCloud(pyb::module_& m);
void registerRender(pyb::module_& m);

}  // namespace sf::py
