// The `splatforge` Python module (docs/python.md): load, save and render splat files, clouds and scenes
// from Python with numpy arrays in and out. Errors from the library (sf::Error) become splatforge.Error, a
// RuntimeError; sf::FormatError becomes splatforge.FormatError with the file, byte offset and reason; a
// missing input file splatforge.MissingFileError, also a FileNotFoundError; a lost Vulkan device
// splatforge.DeviceLostError (the device already replaced: render again).
#include "core/error.h"
#include "gpu/gpu.h"
#include "module.h"

#ifndef SPLATFORGE_VERSION
#error "SPLATFORGE_VERSION must be defined by the build (the CMake project version)"
#endif

namespace {
// The exception types live as long as the process (never released: static pybind11 objects would be released
// after the interpreter has finalised).
pybind11::exception<sf::Error>* error_type = nullptr;
pybind11::exception<sf::FormatError>* format_error_type = nullptr;
pybind11::object* missing_file_type = nullptr;
pybind11::exception<sf::gpu::DeviceLost>* device_lost_type = nullptr;
}  // namespace

PYBIND11_MODULE(splatforge, m) {
  namespace pyb = pybind11;
  m.doc() = R"doc(
Splatforge: a Gaussian-splatting engine. Load splat files into numpy arrays, build clouds from arrays, save
them, and render clouds, files and animated scenes on the CPU reference renderer or the Vulkan renderer.

    import splatforge
    cloud = splatforge.load("capture.spz")
    image = splatforge.render(cloud, width=640, height=360)   # (360, 640, 4) float32
    splatforge.save(cloud, "capture.ply")

See docs/python.md for the reference.
)doc";
  m.attr("__version__") = SPLATFORGE_VERSION;

  error_type = new pyb::exception<sf::Error>(m, "Error", PyExc_RuntimeError);
  error_type->doc() =
      "An error from the engine: a file missing, unreadable, malformed or over the load limits, a bad "
      "camera or scene, or a Vulkan failure. The message names the file and the reason.";
  format_error_type = new pyb::exception<sf::FormatError>(m, "FormatError", error_type->ptr());
  format_error_type->doc() =
      "Malformed file content (a subclass of Error). Attributes: path, offset (byte) and reason.";
  // Both an engine error and Python's FileNotFoundError (the C layouts allow the two bases).
  missing_file_type = new pyb::object(
      pyb::module_::import("builtins")
          .attr("type")(
              "MissingFileError",
              pyb::make_tuple(*error_type, pyb::module_::import("builtins").attr("FileNotFoundError")),
              pyb::dict(pyb::arg("__doc__") =
                            "A file the call reads does not exist: both an Error and a FileNotFoundError.",
                        pyb::arg("__module__") = "splatforge")));
  m.attr("MissingFileError") = *missing_file_type;
  device_lost_type = new pyb::exception<sf::gpu::DeviceLost>(m, "DeviceLostError", error_type->ptr());
  device_lost_type->doc() =
      "The Vulkan device was lost during a frame (a subclass of Error; the message names the pass "
      "that was running). The renderer has already made a new device: render again to go on.";
  pyb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const sf::py::MissingFile& e) {
      PyErr_SetString(missing_file_type->ptr(), e.what());
    } catch (const sf::gpu::DeviceLost& e) {
      PyErr_SetString(device_lost_type->ptr(), e.what());
    } catch (const sf::FormatError& e) {
      pyb::object instance = pyb::reinterpret_borrow<pyb::object>(format_error_type->ptr())(e.what());
      instance.attr("path") = e.path();
      instance.attr("offset") = e.offset();
      instance.attr("reason") = e.reason();
      PyErr_SetObject(format_error_type->ptr(), instance.ptr());
    } catch (const sf::Error& e) {
      PyErr_SetString(error_type->ptr(), e.what());
    }
  });

  sf::py::registerCloud(m);
  sf::py::registerRender(m);

  // Destroy the Vulkan renderer while the interpreter still runs, not in the static destructors after it.
  pyb::module_::import("atexit").attr("register")(m.attr("release_vulkan"));
}
