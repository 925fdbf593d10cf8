#include "formats_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "io/file.h"
#include "io/formats.h"
#include "render/cpu_renderer.h"
#include "scene/scene.h"

namespace sf::cli {

namespace {

Vec3 parseVec3(const std::string& text, const char* option) {
  const std::vector<double> v = parseNumbers(text, option, 3, "0,1.5,0");
  return Vec3{static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
}

// convert's transforms and filters, in the order its --help states: --flip, --rotate, --scale, --translate
// (each a change of the whole cloud: positions, rotations, scales and SH together), then --box and
// --min-opacity, which keep the gaussians whose transformed centre lies in the box and whose opacity
// reaches the threshold. (Non-finite gaussians were dropped on load, or refused with --strict.) Returns a
// line describing what was done, empty when nothing was asked.
std::string applyConvertEdits(GaussianCloud& cloud, const ConvertCommand::Options& o) {
  std::vector<std::string> done;
  for (const std::string& axis : o.flip) {
    Vec3 d{1, 1, 1};
    if (axis == "x")
      d.x = -1;
    else if (axis == "y")
      d.y = -1;
    else if (axis == "z")
      d.z = -1;
    else
      throw UsageError("--flip '" + axis + "': expected x, y or z");
    changeAxes(cloud, Mat3::diagonal(d));  // a mirror: exact, SH included
    done.push_back("flipped " + axis);
  }
  if (!o.rotate.empty()) {
    const Vec3 deg = parseVec3(o.rotate, "--rotate");
    // About x, then y, then z (extrinsic, degrees): R = Rz * Ry * Rx.
    auto about = [](Vec3 axis, float degrees) {
      const float h = 0.5f * degrees * 3.14159265358979f / 180.0f;
      return rotationMatrix(
          Quat{std::cos(h), axis.x * std::sin(h), axis.y * std::sin(h), axis.z * std::sin(h)});
    };
    const Mat3 r = about({0, 0, 1}, deg.z) * about({0, 1, 0}, deg.y) * about({1, 0, 0}, deg.x);
    transformCloud(cloud, Mat4::fromLinearTranslation(r, {0, 0, 0}));
    for (Vec3& n : cloud.normals) n = r * n;  // (transformCloud leaves normals as they were)
    done.push_back(fmt::format("rotated {:g},{:g},{:g} degrees", deg.x, deg.y, deg.z));
  }
  if (o.scale) {
    if (!(*o.scale > 0) || !std::isfinite(*o.scale))
      throw UsageError(fmt::format("--scale {}: expected a positive number", *o.scale));
    transformCloud(cloud,
                   Mat4::fromLinearTranslation(Mat3::diagonal({*o.scale, *o.scale, *o.scale}), {0, 0, 0}));
    done.push_back(fmt::format("scaled {:g}", *o.scale));
  }
  if (!o.translate.empty()) {
    const Vec3 t = parseVec3(o.translate, "--translate");
    transformCloud(cloud, Mat4::fromLinearTranslation(Mat3{}, t));
    done.push_back(fmt::format("translated {:g},{:g},{:g}", t.x, t.y, t.z));
  }
  std::vector<uint8_t> drop(cloud.size(), 0);
  size_t dropped = 0;
  if (!o.box.empty()) {
    const std::vector<double> b = parseNumbers(o.box, "--box", 6, "-1,-1,-1,1,1,1");
    if (!(b[0] <= b[3] && b[1] <= b[4] && b[2] <= b[5]))
      throw UsageError("--box '" + o.box + "': expected MINX,MINY,MINZ,MAXX,MAXY,MAXZ with each min <= max");
    for (size_t i = 0; i < cloud.size(); ++i) {
      const Vec3 p = cloud.positions[i];
      if (!(p.x >= b[0] && p.y >= b[1] && p.z >= b[2] && p.x <= b[3] && p.y <= b[4] && p.z <= b[5]))
        drop[i] = 1;
    }
  }
  if (o.min_opacity) {
    if (!(*o.min_opacity >= 0 && *o.min_opacity <= 1))
      throw UsageError(fmt::format("--min-opacity {}: expected a number in [0, 1]", *o.min_opacity));
    for (size_t i = 0; i < cloud.size(); ++i)
      if (!(cloud.opacities[i] >= *o.min_opacity)) drop[i] = 1;
  }
  for (uint8_t d : drop) dropped += d;
  if (!o.box.empty() || o.min_opacity) {
    eraseRows(cloud, drop);
    done.push_back(fmt::format("filtered out {} gaussians ({} kept)", dropped, cloud.size()));
  }
  std::string line;
  for (const std::string& d : done) line += (line.empty() ? "" : "; ") + d;
  return line;
}

}  // namespace

InfoCommand::~InfoCommand() = default;

int InfoCommand::run() const {
  const Options& o = *options_;
  try {
    auto t0 = Clock::now();
    if (classifyInput(o.input) == InputKind::kOnnx)
      throw Error(o.input + ": an ONNX model, not a splat file (splatforge onnx info " + o.input + ")");
    LoadedSplats l = loadSplats(o.input);
    printWarnings("info", l.warnings);
    const GaussianCloud& c = l.cloud;
    std::string version = l.version ? fmt::format(" (version {})", l.version) : "";
    if (o.json) {
      fmt::print(
          "{{\n  \"file\": \"{}\",\n  \"format\": \"{}\",\n  \"version\": {},\n  \"count\": {},\n  "
          "\"sh_degree\": {},\n",
          jsonEscape(o.input), formatName(l.format), l.version, c.size(), c.sh_degree);
      if (!l.axes.empty()) fmt::print("  \"axes\": \"{}\",\n", jsonEscape(l.axes));
      fmt::print(
          "  \"antialiased\": {},\n  \"screen_filter\": {},\n  \"file_bytes\": {},\n  \"memory_bytes\": "
          "{},\n  \"dropped_non_finite\": {},\n",
          c.antialiased ? "true" : "false", c.screen_filter, l.file_bytes, c.memoryBytes(),
          l.dropped_non_finite);
      if (c.size() > 0) {
        CloudBounds b = computeBounds(c);
        fmt::print("  \"bounds\": {{\"min\": {}, \"max\": {}, \"p01\": {}, \"p99\": {}}},\n", vecJson(b.min),
                   vecJson(b.max), vecJson(b.p01), vecJson(b.p99));
      }
      std::string extras;
      for (const ExtraChannel& e : c.extras)
        extras += (extras.empty() ? "\"" : ", \"") + jsonEscape(e.name) + "\"";
      fmt::print("  \"normals\": {},\n  \"extra_channels\": [{}]\n}}\n", c.normals.empty() ? "false" : "true",
                 extras);
      return 0;
    }
    fmt::print("file:        {}\n", o.input);
    fmt::print("format:      {}{}\n", formatName(l.format), version);
    fmt::print("gaussians:   {}{}\n", c.size(),
               l.dropped_non_finite
                   ? fmt::format(" ({} with non-finite values dropped)", l.dropped_non_finite)
                   : "");
    fmt::print("sh degree:   {}\n", c.sh_degree);
    fmt::print("antialiased: {} (screen filter {} px^2{})\n", c.antialiased ? "yes" : "no", c.screen_filter,
               c.screen_filter == kScreenFilterMip ? ", Mip-Splatting's 2D mip filter" : "");
    if (!l.axes.empty()) fmt::print("axes:        {}\n", l.axes);
    if (c.size() > 0) {
      CloudBounds b = computeBounds(c);
      fmt::print("bounds min:  {}\nbounds max:  {}\n1st pct:     {}\n99th pct:    {}\n", vecText(b.min),
                 vecText(b.max), vecText(b.p01), vecText(b.p99));
    }
    fmt::print("normals:     {}\n", c.normals.empty() ? "no" : "yes");
    for (const ExtraChannel& e : c.extras) fmt::print("extra:       {}\n", e.name);
    fmt::print("memory:      {:.2f} MB in memory, {:.2f} MB on disk\n",
               static_cast<double>(c.memoryBytes()) / 1e6, static_cast<double>(l.file_bytes) / 1e6);
    fmt::print("time:        {:.3f} s\n", secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("info", e);
  }
}

ValidateCommand::~ValidateCommand() = default;

int ValidateCommand::run() const {
  const Options& o = *options_;
  try {
    const auto t0 = Clock::now();
    if (classifyInput(o.input) == InputKind::kOnnx)
      throw Error(o.input + ": an ONNX model, not a splat file (splatforge onnx info " + o.input + ")");
    // Non-finite rows are counted and dropped by the loader (core/limits.h); --strict would refuse the file.
    LoadedSplats l = loadSplats(o.input);
    const GaussianCloud& c = l.cloud;
    const size_t n = c.size();
    // Scales: a gaussian thinner than 1e-7 of the cloud's extent (or with a zero or negative axis) is
    // degenerate (it covers no pixel and ill-conditions its covariance); one 10,000 times longer than wide is
    // a needle.
    float extent = 1.0f;
    if (n) {
      const CloudBounds b = computeBounds(c);
      extent = std::max({b.max.x - b.min.x, b.max.y - b.min.y, b.max.z - b.min.z, 1e-30f});
    }
    size_t degenerate = 0, needles = 0, invisible = 0, saturated = 0, dc_outside = 0, rest_large = 0;
    float rest_max = 0;
    const int rest = shCoeffCount(c.sh_degree) - 1;
    for (size_t i = 0; i < n; ++i) {
      const Vec3 s = c.scales[i];
      const float smin = std::min({s.x, s.y, s.z}), smax = std::max({s.x, s.y, s.z});
      degenerate += !(smin > 1e-7f * extent);
      needles += smin > 0 && smax > 1e4f * smin;
      invisible += c.opacities[i] < 1.0f / 255.0f;
      saturated += c.opacities[i] >= 0.99f;
      const float* sh = c.shOf(i).data();
      bool outside = false;
      for (int k = 0; k < 3; ++k) {
        const float col = shDcToColor(sh[k]);
        outside = outside || col < -0.05f || col > 1.05f;
      }
      dc_outside += outside;
      bool large = false;
      for (int k = 0; k < 3 * rest; ++k) {
        rest_max = std::max(rest_max, std::abs(sh[3 + k]));
        large =
            large || std::abs(sh[3 + k]) > 4.0f;  // beyond compressed PLY's range, far beyond trained values
      }
      rest_large += large;
    }
    // Overdraw for the default camera (the framing `render` uses), at 640x360 on the CPU renderer: visible
    // gaussians and tile pairs, and splats per tile on average.
    size_t visible = 0, pairs = 0;
    double per_tile = 0;
    if (n > 0) {
      Scene scene;
      SceneObject obj;
      obj.cloud = std::make_shared<GaussianCloud>(c);
      scene.objects.push_back(obj);
      const Camera cam = autoCamera(scene, 640, 360);
      RenderStats st;
      const std::vector<RenderObject> objects = scene.renderObjects();
      renderCpu(objects, cam, RenderSettings{}, &st);
      visible = st.visible, pairs = st.tile_keys;
      per_tile = static_cast<double>(pairs) / (((640 + 15) / 16) * ((360 + 15) / 16));
    }
    std::vector<std::string> problems, notes;
    auto count = [&](size_t k, const std::string& what) {
      return fmt::format("{} of {} gaussians {}", k, n + l.dropped_non_finite, what);
    };
    if (l.dropped_non_finite)
      problems.push_back(
          count(l.dropped_non_finite,
                "hold NaN or infinite values (dropped when loaded; --strict refuses the file)"));
    if (n == 0) problems.push_back("no gaussian to draw");
    if (degenerate)
      problems.push_back(count(
          degenerate, fmt::format("have a scale axis of zero or below 1e-7 of the extent ({:.3g})", extent)));
    if (needles) notes.push_back(count(needles, "are needles (one axis 10,000 times another)"));
    if (invisible) notes.push_back(count(invisible, "have opacity below 1/255 (never drawn)"));
    if (dc_outside)
      notes.push_back(count(dc_outside, "have a base colour outside [0, 1] (clamped when drawn)"));
    if (rest_large)
      notes.push_back(
          count(rest_large, fmt::format("have SH coefficients beyond +-4 (largest {:.3g})", rest_max)));
    for (const std::string& w : l.warnings) notes.push_back(w);
    const std::string frame =
        l.axes.empty() ? "PLY convention (x right, y down, z forward), as stored" : l.axes;
    if (o.json) {
      auto list = [](const std::vector<std::string>& v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + jsonEscape(v[i]) + "\"";
        return s + "]";
      };
      fmt::print(
          "{{\n  \"file\": \"{}\",\n  \"format\": \"{}\",\n  \"count\": {},\n  \"sh_degree\": {},\n  "
          "\"frame\": \"{}\",\n"
          "  \"non_finite\": {},\n  \"degenerate_scales\": {},\n  \"needles\": {},\n  \"invisible\": {},\n  "
          "\"opaque\": {},\n"
          "  \"dc_outside_unit\": {},\n  \"sh_rest_large\": {},\n  \"sh_rest_max\": {},\n  "
          "\"default_camera\": {{\"width\": 640, "
          "\"height\": 360, \"visible\": {}, \"tile_pairs\": {}, \"splats_per_tile\": {:.2f}}},\n  "
          "\"problems\": {},\n  \"notes\": {},\n"
          "  \"valid\": {}\n}}\n",
          jsonEscape(o.input), formatName(l.format), n, c.sh_degree, jsonEscape(frame), l.dropped_non_finite,
          degenerate, needles, invisible, saturated, dc_outside, rest_large, rest_max, visible, pairs,
          per_tile, list(problems), list(notes), problems.empty() ? "true" : "false");
    } else {
      fmt::print("file:        {}\nformat:      {}\ngaussians:   {}\nsh degree:   {}\nframe:       {}\n",
                 o.input, formatName(l.format), n, c.sh_degree, frame);
      fmt::print("opacity:     {} below 1/255, {} at 0.99 or more\n", invisible, saturated);
      fmt::print(
          "overdraw:    {} of {} visible from the default camera at 640x360, {} tile pairs, {:.1f} splats "
          "per 16x16 tile\n",
          visible, n, pairs, per_tile);
      for (const std::string& p : problems) fmt::print("problem:     {}\n", p);
      for (const std::string& s : notes) fmt::print("note:        {}\n", s);
      fmt::print("{} ({:.2f} s)\n",
                 problems.empty()
                     ? "valid"
                     : fmt::format("{} problem{}", problems.size(), problems.size() == 1 ? "" : "s"),
                 secondsSince(t0));
    }
    return problems.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    return reportFailure("validate", e);
  }
}

ConvertCommand::~ConvertCommand() = default;

int ConvertCommand::run() const {
  Options o = *options_;
  o.strict = policy_->strict;
  if (o.output.empty() == o.output_positional.empty())
    return reportUsage("convert", o.output.empty() ? "an output file is required (-o FILE)"
                                                   : "give the output once (-o FILE)");
  if (o.output.empty()) o.output = o.output_positional;
  try {
    auto t0 = Clock::now();
    SplatFormat format;
    try {
      format = writeFormatForPath(o.output);  // refuse an unknown output extension before any work
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
    std::error_code ec;
    if (std::filesystem::exists(o.output, ec)) {
      if (std::filesystem::equivalent(o.input, o.output, ec))
        throw UsageError(
            "-o " + o.output +
            ": is the input file; convert never overwrites its input (write elsewhere, then move it)");
      if (!o.overwrite) throw UsageError("-o " + o.output + ": exists; -w/--overwrite replaces it");
    }
    checkWritableTarget(o.output, "output");
    progress("loading " + o.input);
    if (classifyInput(o.input) == InputKind::kOnnx)
      throw Error(o.input + ": an ONNX model, not a splat file (splatforge onnx run " + o.input +
                  " --save-splats OUT writes a generator's gaussians)");
    LoadedSplats l = loadSplats(o.input);
    printWarnings("convert", l.warnings);
    if (const std::string edits = applyConvertEdits(l.cloud, o); !edits.empty()) progress(edits);
    const std::vector<std::string> losses = exportLosses(l.cloud, format);
    if (!losses.empty() && o.strict) {
      std::string all;
      for (const std::string& loss : losses) all += "\n  " + loss;
      throw Error(o.output + ": the conversion would lose information (--strict refuses):" + all);
    }
    printWarnings("convert", losses);
    progress(
        fmt::format("loaded {} gaussians ({}), writing {}", l.cloud.size(), formatName(l.format), o.output));
    saveSplats(l.cloud, o.output);
    fmt::print("wrote {} ({} gaussians)\ntime: {:.3f} s\n", o.output, l.cloud.size(), secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("convert", e);
  }
}

}  // namespace sf::cli
