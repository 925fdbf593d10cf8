// splatforge.Cloud, load() and save(): GaussianCloud as numpy arrays (read-only views without copying),
// clouds built from numpy arrays with every shape, dtype and range checked, and the file formats of
// io/formats.h.
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "module.h"

namespace sf::py {

static_assert(sizeof(Vec3) == 3 * sizeof(float) && alignof(Vec3) == alignof(float),
              "Vec3 is viewed as 3 floats");
static_assert(sizeof(Quat) == 4 * sizeof(float) && alignof(Quat) == alignof(float),
              "Quat is viewed as 4 floats");

void valueError(const std::string& message) {
  throw pyb::value_error(message);
}

std::string inputPathArg(const pyb::handle& path, const char* name) {
  std::string p = pathArg(path, name);
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) throw MissingFile(p + ": file is missing");
  return p;
}

std::string pathArg(const pyb::handle& path, const char* name) {
  // os.fsdecode takes str, bytes and os.PathLike and raises TypeError for anything else.
  try {
    return pyb::module_::import("os").attr("fsdecode")(path).cast<std::string>();
  } catch (pyb::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    throw pyb::type_error(std::string(name) + ": expected a path (str or os.PathLike), got " +
                          std::string(pyb::str(pyb::type::handle_of(path).attr("__name__"))));
  }
}

void warnAll(const std::vector<std::string>& lines) {
  for (const std::string& line : lines)
    if (PyErr_WarnEx(PyExc_RuntimeWarning, line.c_str(), 2) != 0) throw pyb::error_already_set();
}

LoadLimits loadLimitsArg(const pyb::object& max_gaussians, const pyb::object& max_memory, bool strict) {
  LoadLimits l = loadLimits();
  if (!max_gaussians.is_none()) {
    if (!pyb::isinstance<pyb::int_>(max_gaussians) || pyb::isinstance<pyb::bool_>(max_gaussians) ||
        max_gaussians.cast<long long>() <= 0)
      valueError("max_gaussians: expected a positive integer, got " + std::string(pyb::repr(max_gaussians)));
    l.max_gaussians = max_gaussians.cast<uint64_t>();
  }
  if (!max_memory.is_none()) {
    if (pyb::isinstance<pyb::str>(max_memory)) {
      try {
        l.max_bytes = parseByteSize(max_memory.cast<std::string>());
      } catch (const Error& e) {
        valueError(std::string("max_memory: ") + e.what());
      }
    } else if (pyb::isinstance<pyb::int_>(max_memory) && !pyb::isinstance<pyb::bool_>(max_memory) &&
               max_memory.cast<long long>() > 0) {
      l.max_bytes = max_memory.cast<uint64_t>();
    } else {
      valueError(
          "max_memory: expected a positive number of bytes or a size such as \"512M\" or \"8G\", got " +
          std::string(pyb::repr(max_memory)));
    }
  }
  l.reject_non_finite = strict;
  return l;
}

GaussianCloud reduceShDegree(const GaussianCloud& cloud, int degree) {
  GaussianCloud out = cloud;
  out.sh_degree = degree;
  out.sh.assign(cloud.size() * static_cast<size_t>(out.shStride()), 0.0f);
  const size_t keep = static_cast<size_t>(std::min(out.shStride(), cloud.shStride()));
  for (size_t i = 0; i < cloud.size(); ++i)
    std::memcpy(out.shOf(i).data(), cloud.shOf(i).data(), keep * sizeof(float));
  return out;
}

void Cloud::replace(GaussianCloud cloud) {
  data = std::make_shared<const GaussianCloud>(std::move(cloud));
}

namespace {

// ---- numpy out: read-only views of the cloud's arrays ----

// A read-only array over `count` rows of `shape` floats starting at `ptr`, keeping `owner` alive.
pyb::array viewOf(const std::shared_ptr<const GaussianCloud>& owner, const float* ptr,
                  std::vector<pyb::ssize_t> shape) {
  pyb::array out;
  if (shape[0] == 0 || ptr == nullptr) {
    out = pyb::array(pyb::dtype::of<float>(), shape);  // an empty vector may have no storage to point at
  } else {
    auto* keep = new std::shared_ptr<const GaussianCloud>(owner);
    pyb::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<const GaussianCloud>*>(p); });
    out = pyb::array(pyb::dtype::of<float>(), shape, ptr, base);
  }
  out.attr("setflags")(pyb::arg("write") = false);
  return out;
}

// ---- numpy in: checked conversion to float32 ----

std::string shapeText(const pyb::array& a) {
  std::string s = "(";
  for (pyb::ssize_t d = 0; d < a.ndim(); ++d) s += (d ? ", " : "") + std::to_string(a.shape(d));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

}  // namespace

pyb::object hostArrayArg(const pyb::handle& value_in, const char* name) {
  if (pyb::isinstance<pyb::array>(value_in) || !pyb::hasattr(value_in, "__dlpack__"))
    return pyb::reinterpret_borrow<pyb::object>(value_in);
  pyb::object value = pyb::reinterpret_borrow<pyb::object>(value_in);
  if (pyb::hasattr(value, "requires_grad") && value.attr("requires_grad").cast<bool>())
    value = value.attr("detach")();
  // DLPack device types: 1 the host; anything else (a GPU, or CUDA's pinned host memory, 3, which numpy does
  // not take either) is copied to the host first.
  int device_type = 1;
  if (pyb::hasattr(value, "__dlpack_device__"))
    device_type = pyb::cast<int>(value.attr("__dlpack_device__")()[pyb::int_(0)]);
  if (device_type != 1) {
    if (!pyb::hasattr(value, "cpu"))
      valueError(std::string(name) + ": a tensor on DLPack device type " + std::to_string(device_type) +
                 " that has no .cpu(); copy it to the host first");
    value = value.attr("cpu")();
  }
  try {
    return pyb::module_::import("numpy").attr("from_dlpack")(value);
  } catch (pyb::error_already_set& e) {
    valueError(std::string(name) + ": numpy cannot read this tensor through DLPack (" +
               std::string(pyb::str(e.value())) +
               "); give a float32, float64 or float16 tensor in host memory (e.g. .float().cpu())");
  }
}

namespace {

// `value` as a C-contiguous float32 array whose shape is `dims` (-1: any extent), else ValueError naming
// `name` and `expected` (the shape in words, e.g. "(N, 3)"). Floating numpy dtypes are converted; other numpy
// dtypes are refused (an integer or boolean array here is almost always a mistake, e.g. colours in 0..255).
pyb::array_t<float, pyb::array::c_style> floatArray(const pyb::handle& value_in, const char* name,
                                                    std::vector<pyb::ssize_t> dims, const char* expected) {
  // Tensors come in through DLPack; nested sequences (lists of numbers) are converted to float32; numpy
  // arrays keep their dtype for the check.
  const pyb::object value = hostArrayArg(value_in, name);
  pyb::array a;
  if (pyb::isinstance<pyb::array>(value))
    a = pyb::array::ensure(value);
  else
    a = pyb::array_t<float, pyb::array::forcecast>::ensure(value);
  if (!a)
    valueError(std::string(name) + ": expected a float32 array of shape " + expected + ", got " +
               std::string(pyb::repr(value)));
  if (a.dtype().kind() != 'f')
    valueError(std::string(name) + ": expected a float32 array of shape " + expected + ", got dtype " +
               std::string(pyb::str(a.dtype())) +
               " (float64 and float16 are converted; other types are refused)");
  bool ok = a.ndim() == static_cast<pyb::ssize_t>(dims.size());
  for (size_t d = 0; ok && d < dims.size(); ++d)
    ok = dims[d] < 0 || a.shape(static_cast<pyb::ssize_t>(d)) == dims[d];
  if (!ok) valueError(std::string(name) + ": expected shape " + expected + ", got " + shapeText(a));
  auto f = pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
  if (!f) throw pyb::error_already_set();
  // Non-finite values: loaders drop such rows and writers refuse them; in arrays handed to us they are a bug
  // upstream, so say where.
  const float* p = f.data();
  const size_t n = static_cast<size_t>(f.size());
  const size_t row = dims.size() > 1 ? n / std::max<size_t>(1, static_cast<size_t>(f.shape(0))) : 1;
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i]))
      valueError(std::string(name) + ": row " + std::to_string(i / std::max<size_t>(row, 1)) +
                 " holds a non-finite value (" + std::to_string(p[i]) + ")");
  return f;
}

size_t rows(const pyb::array& a) {
  return static_cast<size_t>(a.shape(0));
}

void setPositions(GaussianCloud& c, const pyb::handle& v, pyb::ssize_t n) {
  auto a = floatArray(v, "positions", {n, 3}, "(N, 3)");
  for (size_t i = 0; i < rows(a); ++i)
    c.positions[i] = {a.data()[i * 3], a.data()[i * 3 + 1], a.data()[i * 3 + 2]};
}

void setScales(GaussianCloud& c, const pyb::handle& v, pyb::ssize_t n) {
  auto a = floatArray(v, "scales", {n, 3}, "(N, 3)");
  for (pyb::ssize_t i = 0; i < a.size(); ++i)
    if (a.data()[i] < 0)
      valueError(
          "scales: row " + std::to_string(i / 3) + " holds " + std::to_string(a.data()[i]) +
          "; scales are linear standard deviations (>= 0), not log-scales (use numpy.exp on log-scales)");
  for (size_t i = 0; i < rows(a); ++i)
    c.scales[i] = {a.data()[i * 3], a.data()[i * 3 + 1], a.data()[i * 3 + 2]};
}

void setRotations(GaussianCloud& c, const pyb::handle& v, pyb::ssize_t n) {
  auto a = floatArray(v, "rotations", {n, 4}, "(N, 4) quaternions (w, x, y, z)");
  for (size_t i = 0; i < rows(a); ++i) {
    const float* q = a.data() + i * 4;
    const double len =
        std::sqrt(double(q[0]) * q[0] + double(q[1]) * q[1] + double(q[2]) * q[2] + double(q[3]) * q[3]);
    if (!(len > 1e-12)) valueError("rotations: row " + std::to_string(i) + " is a zero quaternion");
    c.rotations[i] = normalize(Quat{q[0], q[1], q[2], q[3]});
  }
}

void setOpacities(GaussianCloud& c, const pyb::handle& v, pyb::ssize_t n) {
  auto a = floatArray(v, "opacities", {n}, "(N,)");
  for (pyb::ssize_t i = 0; i < a.size(); ++i)
    if (a.data()[i] < 0 || a.data()[i] > 1)
      valueError("opacities: row " + std::to_string(i) + " holds " + std::to_string(a.data()[i]) +
                 "; opacities are in [0, 1], not logits (apply a sigmoid to logits)");
  std::memcpy(c.opacities.data(), a.data(), rows(a) * sizeof(float));
}

// SH degree for an (N, K, 3) coefficient array, or ValueError.
int shDegreeOf(const pyb::handle& v) {
  pyb::array a = pyb::array::ensure(hostArrayArg(v, "sh"));
  if (a && a.ndim() == 3)
    for (int d = 0; d <= 3; ++d)
      if (a.shape(1) == shCoeffCount(d)) return d;
  floatArray(v, "sh", {-1, -1, 3}, "(N, K, 3)");  // names a wrong dtype or rank first
  valueError("sh: expected shape (N, K, 3) with K = 1, 4, 9 or 16 coefficients (SH degree 0..3), got " +
             shapeText(a));
}

void setSh(GaussianCloud& c, const pyb::handle& v, pyb::ssize_t n) {
  const int degree = shDegreeOf(v);
  auto a = floatArray(v, "sh", {n, shCoeffCount(degree), 3}, "(N, K, 3)");
  c.sh_degree = degree;
  c.sh.assign(a.data(), a.data() + a.size());
}

void setColors(GaussianCloud& c, const pyb::handle& v, pyb::ssize_t n) {
  auto a = floatArray(v, "colors", {n, 3}, "(N, 3)");
  for (size_t i = 0; i < rows(a); ++i)
    for (size_t k = 0; k < 3; ++k) c.shOf(i)[k] = colorToShDc(a.data()[i * 3 + k]);
}

ColorSpace colorSpaceArg(const std::string& s) {
  if (s == "srgb") return ColorSpace::kSrgb;
  if (s == "linear") return ColorSpace::kLinear;
  valueError("color_space: expected \"srgb\" or \"linear\", got \"" + s + "\"");
}

// Applies `set` to a copy of the cloud (the cloud itself never changes in place; see Cloud).
template <class Setter>
void update(Cloud& self, const pyb::handle& value, Setter set) {
  GaussianCloud c = *self.data;
  set(c, value, static_cast<pyb::ssize_t>(c.size()));
  self.replace(std::move(c));
}

std::string describe(const Cloud& c) {
  std::string from = c.format ? std::string(", from ") + formatName(*c.format) +
                                    (c.version ? " version " + std::to_string(c.version) : "")
                              : "";
  return "<splatforge.Cloud: " + std::to_string(c.data->size()) + " gaussians, SH degree " +
         std::to_string(c.data->sh_degree) + from + ">";
}

// Cloud's constructor from arrays and its array properties (positions, scales, rotations, opacities, sh,
// colors, normals).
void defCloudArrays(pyb::class_<Cloud>& cloud) {
  cloud
      .def(pyb::init([](const pyb::object& positions, const pyb::object& scales, const pyb::object& rotations,
                        const pyb::object& opacities, const pyb::object& sh, const pyb::object& colors,
                        const std::string& color_space, bool antialiased) {
             if (!sh.is_none() && !colors.is_none())
               valueError("give sh or colors, not both (colors sets the DC term of sh)");
             auto p = floatArray(positions, "positions", {-1, 3}, "(N, 3)");
             const pyb::ssize_t n = p.shape(0);
             GaussianCloud c;
             c.resize(static_cast<size_t>(n), sh.is_none() ? 0 : shDegreeOf(sh));
             setPositions(c, p, n);
             if (!scales.is_none()) setScales(c, scales, n);
             if (!rotations.is_none()) setRotations(c, rotations, n);
             if (!opacities.is_none()) setOpacities(c, opacities, n);
             if (!sh.is_none()) setSh(c, sh, n);
             if (!colors.is_none()) setColors(c, colors, n);
             c.color_space = colorSpaceArg(color_space);
             c.antialiased = antialiased;
             Cloud out;
             out.replace(std::move(c));
             return out;
           }),
           pyb::arg("positions"), pyb::arg("scales") = pyb::none(), pyb::arg("rotations") = pyb::none(),
           pyb::arg("opacities") = pyb::none(), pyb::arg("sh") = pyb::none(),
           pyb::arg("colors") = pyb::none(), pyb::kw_only(), pyb::arg("color_space") = "srgb",
           pyb::arg("antialiased") = false)
      .def_property(
          "positions",
          [](const Cloud& c) {
            return viewOf(c.data, &c.data->positions.data()->x,
                          {static_cast<pyb::ssize_t>(c.data->size()), 3});
          },
          [](Cloud& c, const pyb::object& v) { update(c, v, setPositions); },
          "(N, 3) float32 gaussian centres (read-only view; assign an array to replace).")
      .def_property(
          "scales",
          [](const Cloud& c) {
            return viewOf(c.data, &c.data->scales.data()->x, {static_cast<pyb::ssize_t>(c.data->size()), 3});
          },
          [](Cloud& c, const pyb::object& v) { update(c, v, setScales); },
          "(N, 3) float32 LINEAR standard deviations along the local axes (not log-scales).")
      .def_property(
          "rotations",
          [](const Cloud& c) {
            return viewOf(c.data, &c.data->rotations.data()->w,
                          {static_cast<pyb::ssize_t>(c.data->size()), 4});
          },
          [](Cloud& c, const pyb::object& v) { update(c, v, setRotations); },
          "(N, 4) float32 unit quaternions, component order (w, x, y, z); assigned quaternions are "
          "normalised.")
      .def_property(
          "opacities",
          [](const Cloud& c) {
            return viewOf(c.data, c.data->opacities.data(), {static_cast<pyb::ssize_t>(c.data->size())});
          },
          [](Cloud& c, const pyb::object& v) { update(c, v, setOpacities); },
          "(N,) float32 opacities in [0, 1] (not logits).")
      .def_property(
          "sh",
          [](const Cloud& c) {
            return viewOf(c.data, c.data->sh.data(),
                          {static_cast<pyb::ssize_t>(c.data->size()), shCoeffCount(c.data->sh_degree), 3});
          },
          [](Cloud& c, const pyb::object& v) { update(c, v, setSh); },
          "(N, K, 3) float32 raw SH coefficients, K = (sh_degree + 1)^2, [gaussian][coefficient][r, g, b]. "
          "Assigning an "
          "array with another K changes sh_degree.")
      .def_property(
          "colors",
          [](const Cloud& c) {
            const GaussianCloud& g = *c.data;
            pyb::array_t<float> out({static_cast<pyb::ssize_t>(g.size()), pyb::ssize_t{3}});
            float* o = out.mutable_data();
            for (size_t i = 0; i < g.size(); ++i)
              for (size_t k = 0; k < 3; ++k) o[i * 3 + k] = shDcToColor(g.shOf(i)[k]);
            out.attr("setflags")(
                pyb::arg("write") =
                    false);  // read-only like every other array: writing to it would change nothing
            return out;
          },
          [](Cloud& c, const pyb::object& v) { update(c, v, setColors); },
          "(N, 3) float32 DC colour, 0.5 + 0.28209479 * sh[:, 0, :] (computed, unclamped, read-only as the "
          "other arrays). "
          "Assigning (cloud.colors = ...) sets the DC terms and keeps the higher coefficients.")
      .def_property_readonly(
          "normals",
          [](const Cloud& c) -> pyb::object {
            if (c.data->normals.empty()) return pyb::none();
            return viewOf(c.data, &c.data->normals.data()->x, {static_cast<pyb::ssize_t>(c.data->size()), 3});
          },
          "(N, 3) float32 normals when the file had them (PLY nx, ny, nz), else None.");
}

// Cloud's other properties (SH degree, count, colour space, what it was loaded from), with_sh_degree, copies
// and repr.
void defCloudAttributes(pyb::class_<Cloud>& cloud) {
  cloud
      .def_property_readonly(
          "sh_degree", [](const Cloud& c) { return c.data->sh_degree; }, "SH degree, 0..3.")
      .def_property_readonly(
          "count", [](const Cloud& c) { return c.data->size(); }, "Number of gaussians.")
      .def("__len__", [](const Cloud& c) { return c.data->size(); })
      .def_property(
          "color_space",
          [](const Cloud& c) { return c.data->color_space == ColorSpace::kSrgb ? "srgb" : "linear"; },
          [](Cloud& c, const std::string& s) {
            GaussianCloud g = *c.data;
            g.color_space = colorSpaceArg(s);
            c.replace(std::move(g));
          },
          "\"srgb\" (display-encoded colours, as 3DGS captures are trained) or \"linear\".")
      .def_property(
          "antialiased", [](const Cloud& c) { return c.data->antialiased; },
          [](Cloud& c, bool v) {
            GaussianCloud g = *c.data;
            g.antialiased = v;
            c.replace(std::move(g));
          },
          "True when trained with the antialiased (mip) opacity compensation; the renderers then apply it.")
      .def_property_readonly(
          "format",
          [](const Cloud& c) -> pyb::object {
            return c.format ? pyb::str(formatName(*c.format)) : pyb::object(pyb::none());
          },
          "File format it was loaded from: \"ply\", \"compressed-ply\", \"spz\", \"splat\" or \"gltf\"; None "
          "when built from arrays.")
      .def_property_readonly(
          "version", [](const Cloud& c) { return c.version; },
          "Format version where the format has one (SPZ), else 0.")
      .def_property_readonly(
          "file_bytes", [](const Cloud& c) { return c.file_bytes; },
          "Size of the file it was loaded from (0 when built).")
      .def_property_readonly(
          "dropped_non_finite", [](const Cloud& c) { return c.dropped_non_finite; },
          "Rows the loader dropped for holding NaN or infinity.")
      .def_property_readonly(
          "warnings", [](const Cloud& c) { return c.warnings; },
          "What the loader read approximately, skipped or dropped (also issued as RuntimeWarning).")
      .def_property_readonly(
          "memory_bytes", [](const Cloud& c) { return c.data->memoryBytes(); }, "Bytes the arrays hold.")
      .def(
          "with_sh_degree",
          [](const Cloud& c, int degree) {
            if (degree < 0 || degree > 3) valueError("degree: expected 0..3, got " + std::to_string(degree));
            Cloud out = c;
            out.replace(reduceShDegree(*c.data, degree));
            return out;
          },
          pyb::arg("degree"),
          "A copy with SH degree `degree`: higher coefficients dropped, or missing ones added as zeros.")
      // The gaussians never change in place (see Cloud), so copies share them.
      .def("__copy__", [](const Cloud& c) { return c; })
      .def(
          "__deepcopy__", [](const Cloud& c, const pyb::dict&) { return c; }, pyb::arg("memo"))
      .def("__repr__", &describe);
}

// The module's load and save.
void registerLoadSave(pyb::module_& m) {
  m.def(
      "load",
      [](const pyb::object& path, const pyb::object& max_gaussians, const pyb::object& max_memory,
         bool strict) {
        const std::string p = inputPathArg(path, "path");
        const LoadLimits limits = loadLimitsArg(max_gaussians, max_memory, strict);
        LoadedSplats l;
        {
          pyb::gil_scoped_release release;  // other Python threads run (and load, with their own limits)
          ThreadLoadLimits scope(limits);
          l = loadSplats(p);
        }
        Cloud c;
        c.format = l.format;
        c.version = l.version;
        c.file_bytes = l.file_bytes;
        c.dropped_non_finite = l.dropped_non_finite;
        c.warnings = l.warnings;
        c.replace(std::move(l.cloud));
        warnAll(c.warnings);
        return c;
      },
      pyb::arg("path"), pyb::kw_only(), pyb::arg("max_gaussians") = pyb::none(),
      pyb::arg("max_memory") = pyb::none(), pyb::arg("strict") = false, R"doc(
Loads a splat file: INRIA 3DGS PLY (ASCII or binary), PlayCanvas compressed PLY, SPZ (versions 2-4), .splat,
or glTF/GLB with KHR_gaussian_splatting. The format is detected from the content (the extension for .splat
and .gltf).

The file is untrusted input: the gaussian count it declares and the memory it needs are checked against the
load limits before anything is allocated. max_gaussians (int) and max_memory (bytes, or a size such as
"512M" or "8G") change those limits for this load (defaults: 2^27 gaussians, half the physical memory).
Rows holding NaN or infinity are dropped with a RuntimeWarning (see Cloud.warnings), or refused when
strict=True.

Raises splatforge.Error (a FormatError naming the byte offset for malformed content) when the file is
missing, unreadable, malformed or over the limits; ValueError for a bad limit.
)doc");

  m.def(
      "save",
      [](const Cloud& cloud, const pyb::object& path) {
        const std::string p = pathArg(path, "path");
        std::shared_ptr<const GaussianCloud> data = cloud.data;
        pyb::gil_scoped_release release;
        saveSplats(*data, p);
      },
      pyb::arg("cloud"), pyb::arg("path"), R"doc(
Writes a cloud in the format its extension names: .ply (INRIA 3DGS binary PLY), .spz (version 3), .splat or
.glb (KHR_gaussian_splatting). The write is atomic: on failure the path is left as it was.

Raises splatforge.Error for another extension, a missing directory or an I/O failure.
)doc");
}

}  // namespace

void registerCloud(pyb::module_& m) {
  pyb::class_<Cloud> cloud(m, "Cloud", R"doc(
A set of 3D gaussians, as numpy arrays.

Values are *activated*, as the renderers use them (not the log/logit space of INRIA PLY files):
positions (N, 3) float32 in the cloud's units; scales (N, 3) float32, LINEAR standard deviations along the
gaussian's local axes; rotations (N, 4) float32 unit quaternions in (w, x, y, z) order; opacities (N,)
float32 in [0, 1]; sh (N, K, 3) float32 raw spherical-harmonic coefficients, K = (sh_degree + 1)^2,
[gaussian][coefficient][r, g, b], coefficient 0 the DC term (colour = 0.5 + 0.28209479 * sh[:, 0, :]).

Arrays read from a Cloud are read-only views of its storage (no copy). To change a cloud assign a new array
to a property (the cloud takes a copy): ``cloud.positions = cloud.positions + [0, 1, 0]``.

Construct from arrays: ``Cloud(positions, scales=None, rotations=None, opacities=None, sh=None,
colors=None, *, color_space="srgb", antialiased=False)``. Only positions is required; missing arrays default
to scale 1, the identity rotation, opacity 1 and colour 0.5 grey. Give either sh or colors (N, 3), a DC
colour. Tensors of torch, JAX or CuPy are taken through DLPack (host tensors without a copy, GPU tensors
copied to the host, tensors that require grad detached). float64 and float16 arrays are converted; every
other dtype, a wrong shape, a non-finite value, a
negative scale, an opacity outside [0, 1] or a zero quaternion raises ValueError naming the argument and
what was expected. Rotations are normalised.
)doc");
  defCloudArrays(cloud);
  defCloudAttributes(cloud);

  registerLoadSave(m);
}

}  // namespace sf::py
