// splatforge: command-line front end. Argument parsing (CLI11) lives only in this file.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "batch_command.h"
#include "bench_command.h"
#include "character_command.h"
#include "commands.h"
#include "core/limits.h"
#include "core/text.h"
#include "formats_command.h"
#include "hull/hull_lod.h"
#include "hull_command.h"
#include "lod_command.h"
#include "onnx_command.h"
#include "render/vulkan_renderer.h"
#include "render_command.h"
#include "scene/scene.h"
#include "soak_command.h"
#include "train_command.h"
#include "view_command.h"
#include "views_command.h"
#include "web_command.h"

// ---- The commands, their options declared in their headers: registered here, where CLI11 lives ----

namespace sf::cli {

InfoCommand::InfoCommand(CLI::App& app, LoadPolicyOptions& policy) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("info", "Print a splat file's count, SH degree, format, bounds and memory");
  command_->add_option("file", o.input, "Splat file (" + std::string(kReadFormats) + ")")->required();
  command_->add_flag("--json", o.json, "Machine-readable JSON output");
  command_->add_flag(
      "--strict", policy.strict,
      "Refuse a file holding NaN or infinite values (default: drop those gaussians with a warning)");
}

bool InfoCommand::parsed() const {
  return command_->parsed();
}

ValidateCommand::ValidateCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("validate",
                                "Check a splat file: non-finite values, degenerate scales, opacity and SH "
                                "ranges, its frame, the overdraw "
                                "of the default camera (exit 1 when it holds a problem)");
  command_->add_option("file", o.input, "Splat file (" + std::string(kReadFormats) + ")")->required();
  command_->add_flag("--json", o.json, "Machine-readable JSON output");
}

bool ValidateCommand::parsed() const {
  return command_->parsed();
}

ConvertCommand::ConvertCommand(CLI::App& app, LoadPolicyOptions& policy)
    : options_(std::make_unique<Options>()), policy_(&policy) {
  Options& o = *options_;
  command_ = app.add_subcommand("convert",
                                "Convert between splat formats (chosen by extension; atomic write), "
                                "optionally transformed and filtered "
                                "(options 1-6 below, applied in that order)");
  command_->add_option("input", o.input, "Input splat file (" + std::string(kReadFormats) + ")")->required();
  command_->add_option("-o,--output", o.output,
                       "Output file, format by extension: " + std::string(kWriteFormats) + " (REQUIRED)");
  command_->add_option("out_file", o.output_positional, "Output file (as -o; kept for older scripts)");
  command_->add_flag("-w,--overwrite", o.overwrite, "Replace an existing output file (never the input)");
  // Applied in the order they are listed here, whatever their order on the command line.
  command_
      ->add_option("--flip", o.flip, "1. Mirror along an axis: x, y or z (repeatable; exact, SH included)")
      ->check(CLI::IsMember({"x", "y", "z"}));
  command_->add_option("--rotate", o.rotate,
                       "2. Rotate X,Y,Z degrees about x, then y, then z (about the origin)");
  command_->add_option("--scale", o.scale, "3. Scale uniformly by S about the origin");
  command_->add_option("--translate", o.translate, "4. Translate by X,Y,Z");
  command_->add_option(
      "--box", o.box, "5. Keep the gaussians whose centre (after 1-4) lies in MINX,MINY,MINZ,MAXX,MAXY,MAXZ");
  command_->add_option("--min-opacity", o.min_opacity, "6. Keep the gaussians of opacity >= A (0..1)");
  command_->add_option("--spz-version", policy.spz_version, "SPZ version to write: 2, 3 or 4")
      ->check(CLI::Range(2, 4))
      ->capture_default_str();
  command_->add_flag(
      "--strict", policy.strict,
      "Refuse a file holding NaN or infinite values (default: drop those gaussians with a warning), and "
      "refuse a "
      "conversion that loses information beyond the output format's quantisation (default: warn)");
}

bool ConvertCommand::parsed() const {
  return command_->parsed();
}

namespace {

// The frame options render and animate share: the backend and device, validation, the background and the
// blend space.
void addLodBudgetOption(CLI::App* command, std::optional<uint64_t>& lod_budget,
                        std::optional<uint64_t>& lod_pool) {
  command
      ->add_option("--lod-pool", lod_pool,
                   "Level-of-detail objects: the nodes each keeps in memory, and the slots of its GPU pool "
                   "(default: the scene's \"lod_pool\", else " +
                       std::to_string(lod::StreamOptions{}.pool_nodes) + ")")
      ->check(CLI::Range(uint64_t{1}, (uint64_t{1} << 31) - 1));
  command
      ->add_option("--lod-budget", lod_budget,
                   "Level-of-detail objects: the most gaussians a frame draws of them all (default: the "
                   "scene's \"lod_budget\", "
                   "else " +
                       std::to_string(kDefaultLodBudget) + ")")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
}

// --lod-cut (view, bench --lod): where frames that never wait cut their level-of-detail objects.
void addLodCutOption(CLI::App* command, std::string& lod_cut) {
  command
      ->add_option("--lod-cut", lod_cut,
                   "Level-of-detail objects on the Vulkan backend: cut on a thread of their own while frames "
                   "draw the last cut finished (background: the frame rate is the GPU's) or before every "
                   "frame (frame) (docs/lod.md)")
      ->check(CLI::IsMember({"background", "frame"}))
      ->capture_default_str();
}

// --outline (render, animate, hull play): hulls outlined from time 0 (hull/outline.h).
const char* const kOutlineHelp =
    "Splat hulls outlined from time 0: all, or hull object names, comma-separated (a screen-space band, 2 px "
    "amber unless the scene's \"outline\" says otherwise; script hits flash it red for 0.3 s)";

// --hull-lod (render, animate, hull play) and hull bench's --lod: K, auto or off (hull/hull_lod.h), checked
// before anything loads.
CLI::Validator hullLodValidator() {
  return CLI::Validator(
      [](std::string& text) {
        try {
          hull::parseHullLod(text);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      "K|auto|off");
}
// --mesh-samples (render, animate) and hull bench's: samples per pixel of every object's meshes.
const char* const kMeshSamplesHelp =
    "Anti-aliased meshes: samples per pixel (1, 2, 4, 8 or 16) of every object's meshes, splat hulls' cores "
    "included (default: each object's \"meshSamples\", else 8 for a hull's core and 1, aliased, for other "
    "meshes)";
CLI::Validator meshSamplesValidator() {
  return CLI::IsMember({"1", "2", "4", "8", "16"});
}

const std::string kHullLodHelp =
    "Splat hulls' runtime LOD for every hull: K (draw the first K splats in importance order), auto (K by "
    "the hull's size on "
    "screen: every splat while its bounding sphere is at least sqrt(4 N / (2 pi)) pixels in radius, 2 pi r^2 "
    "/ 4 below, at least "
    "a tenth) or off (every splat) (default: each hull object's \"lod\", else off; a hull script's lod "
    "events still apply)";

// --live-core (render, animate, hull play): how live hulls draw their untouched chunks (hull/effects.h
// LiveCore).
const char* const kLiveCoreHelp =
    "Live splat hulls (effects, a script, a seed; every hull under hull play): mesh (the chunks no hit and "
    "no "
    "effect touches this frame drawn as the baked hull draws them: the core as depth-tested octagons, the "
    "shell in its heading order; the rest through the global sort) or sorted (every slot through the global "
    "sort; the default, 160x faster for 200 hulls on an H100) for every hull (default: each hull object's "
    "\"liveCore\", else sorted)";

// --raster-slice (render, animate, bench): how many entries of a tile's sorted list one Vulkan raster
// dispatch walks at most (RenderSettings::raster_slice).
void addRasterSliceOption(CLI::App* command, std::optional<uint32_t>& raster_slice) {
  command->add_option("--raster-slice", raster_slice,
                      "Vulkan: walk each tile's sorted splats at most N at a time, in a submission per "
                      "slice, where a tile holds more "
                      "(a frame under a deep stack of splats then never makes one dispatch long enough for a "
                      "driver's watchdog to "
                      "kill; the image is the fp32 raster's); 0 never splits (default " +
                          std::to_string(kDefaultRasterSlice) + ")");
}

// --sh-precision and --raster-precision (render, animate, bench): RenderSettings::half_sh and half_raster.
void addPrecisionOptions(CLI::App* command, std::string& sh_precision, std::string& raster_precision) {
  command
      ->add_option(
          "--sh-precision", sh_precision,
          "SH bands 1-3 of loaded splats drawn at half precision (stored as 16-bit floats on the GPU, "
          "rounded the same on the CPU; the default) or full (32-bit, INRIA's colours exactly)")
      ->check(CLI::IsMember({"half", "full"}));
  command
      ->add_option(
          "--raster-precision", raster_precision,
          "Vulkan: the frame's blend in full precision (32-bit, as the CPU renderer; the default) or half "
          "(16-bit floats, two pixels a thread, where the device has them and the frame draws no meshes, "
          "shapes or depth plane; within 45 dB of the CPU renderer)")
      ->check(CLI::IsMember({"half", "full"}));
}

void addFrameOptions(CLI::App* command, std::string& backend, std::string& device, bool& validation,
                     std::string& background, std::string& blend_space, std::optional<uint64_t>& lod_budget,
                     std::optional<uint64_t>& lod_pool) {
  addLodBudgetOption(command, lod_budget, lod_pool);
  command
      ->add_option("--backend", backend,
                   "Renderer: auto (Vulkan on a GPU; the CPU renderer where the only Vulkan device is a CPU "
                   "one, such as lavapipe), vulkan or cpu")
      ->check(CLI::IsMember({"auto", "vulkan", "cpu"}))
      ->capture_default_str();
  command->add_option("--device", device, "Vulkan device: index or part of its name");
  command->add_flag("--validation", validation, "Enable Vulkan validation layers");
  command->add_option("--bg,--background", background,
                      "Background colour R,G,B in [0, 1] (default 0,0,0, or the scene's)");
  command
      ->add_option(
          "--blend-space", blend_space,
          "Blend in display space (sRGB colours as they are, as INRIA's rasterizer) or in linear light "
          "(decoded, blended, encoded) (default: the scene's \"blend_space\", else display)")
      ->check(CLI::IsMember({"display", "linear"}));
}

}  // namespace

RenderCommand::RenderCommand(CLI::App& app, LoadPolicyOptions& policy)
    : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("render", "Render a splat file, glTF/GLB model or scene JSON to a PNG");
  command_
      ->add_option("input", o.input,
                   "Splat file (" + std::string(kReadFormats) +
                       "), glTF model (.gltf .glb), character package or scene .json")
      ->required();
  command_->add_option("-o,--output", o.output, "Output PNG")->required();
  command_
      ->add_option("--width", o.width,
                   "Image width (default " + std::to_string(kDefaultWidth) + ", or the camera's)")
      ->check(CLI::Range(1, 16384));
  command_
      ->add_option("--height", o.height,
                   "Image height (default " + std::to_string(kDefaultHeight) + ", or the camera's)")
      ->check(CLI::Range(1, 16384));
  command_->add_option("--camera", o.camera, "Camera JSON (intrinsics + world_to_camera, or look-at)");
  addFrameOptions(command_, o.backend, o.device, o.validation, o.background, o.blend_space, o.lod_budget,
                  o.lod_pool);
  addRasterSliceOption(command_, o.raster_slice);
  addPrecisionOptions(command_, o.sh_precision, o.raster_precision);
  command_->add_option("--save-float", o.save_float, "Also write the float RGBA image as .npy");
  command_->add_option(
      "--save-depth", o.save_depth,
      "Also write a (height, width, 2) float .npy: expected depth sum(d*alpha*T) (splats and meshes) and "
      "transmittance T per pixel");
  command_->add_flag("--antialiased", o.antialiased,
                     "Antialiased mode (opacity compensation) for every object");
  command_->add_flag(
      "--strict", policy.strict,
      "Refuse files holding NaN or infinite values (default: drop those gaussians with a warning)");
  command_->add_flag("--keep-going", o.keep_going,
                     "Scene JSON: draw a magenta placeholder (with a warning) for an object that cannot be "
                     "loaded (default: fail)");
  command_->add_flag(
      "--allow-outside-paths", o.allow_outside_paths,
      "Scene JSON: let object paths be absolute or leave the scene's directory (only for scenes you trust)");
  command_->add_option("--clip", o.clip, "glTF input: animation name or index (default: the first)");
  command_
      ->add_option("--time", o.time,
                   "Scene time in seconds, the same for every input: glTF clips, characters, generators, "
                   "hull scripts, the character script")
      ->capture_default_str();
  command_
      ->add_option("--hull-mode", o.hull_mode,
                   "Splat hulls: baked (opaque core octagons + shell in its heading order) or sorted (every "
                   "splat in the global sort) for every hull")
      ->check(CLI::IsMember({"baked", "sorted"}));
  command_->add_option("--light", o.light, "Splat hulls: the cel light on or off (default: the scene's, on)")
      ->check(CLI::IsMember({"on", "off"}));
  command_->add_option("--hull-lod", o.hull_lod, kHullLodHelp)->check(hullLodValidator());
  command_->add_option("--live-core", o.live_core, kLiveCoreHelp)->check(CLI::IsMember({"mesh", "sorted"}));
  command_->add_option("--outline", o.outline, kOutlineHelp);
  command_->add_option("--mesh-samples", o.mesh_samples, kMeshSamplesHelp)->check(meshSamplesValidator());
}

bool RenderCommand::parsed() const {
  return command_->parsed();
}

CharacterCommand::CharacterCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("character",
                                "Build, bind, preview and inspect splat characters; bake GNM head packs");
  command_->require_subcommand(1);
  CLI::App* build = command_->add_subcommand(
      "build", "Sample (or, with --train, train) gaussians on a skinned glTF's surface and bind them");
  build->add_option("--from-gltf", o.from_gltf, "Skinned glTF / GLB")->required();
  build->add_option("--splats,--budget", o.splats, "Gaussians to sample (with --train: to train)")
      ->check(CLI::Range(size_t{1}, size_t{50000000}))
      ->capture_default_str();
  build->add_option("--seed", o.seed, "Sampling (and training) seed")->capture_default_str();
  build->add_flag("--train", o.train,
                  "Train the gaussians first, in process, on views of the model at its rest pose rendered in "
                  "memory (`splatforge train`), then bind them");
  build->add_option("--train-steps", o.train_steps, "--train: optimisation steps")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  build->add_option("--train-size", o.train_size, "--train: view size in pixels")
      ->check(CLI::Range(8, 8192))
      ->capture_default_str();
  build->add_option("--train-views", o.train_views, "--train: train views")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  build
      ->add_option("--train-backend", o.train_backend,
                   "--train: auto, cpu or vulkan (as `splatforge train --backend`)")
      ->check(CLI::IsMember({"auto", "cpu", "vulkan"}))
      ->capture_default_str();
  build->add_option("-o,--output", o.output, "Package directory")->required();
  CLI::App* bind =
      command_->add_subcommand("bind", "Bind a trained splat PLY to the surface of its skinned mesh");
  bind->add_option("--splats", o.splat_file, "Splat file in the skin's bind-pose mesh space")->required();
  bind->add_option("--skin", o.skin, "Skinned glTF / GLB")->required();
  bind->add_option("-o,--output", o.output, "Package directory")->required();
  bind->add_flag(
      "--per-vertex", o.per_vertex,
      "Row i of the splat file belongs to vertex i of the skin (LAM avatars); its xyz is an offset");
  bind->add_option("--offset-scale", o.offset_scale,
                   "With --per-vertex: centre = vertex + scale * xyz (docs/formats/character.md)")
      ->capture_default_str();
  bind->add_option("--clips", o.clips,
                   "glTF whose animations are retargeted onto the skin by joint name (LAM: animation.glb)");
  build->add_option("--clips", o.clips, "glTF whose animations are retargeted onto the skin by joint name");
  bind->add_flag("--rgb-colors", o.rgb_colors,
                 "The file's f_dc_0..2 are plain RGB in [0, 1], not SH coefficients (LAM avatars)");
  CLI::App* preview =
      command_->add_subcommand("preview",
                               "Rig preview: a small gaussian per rig vertex, tinted: a character package "
                               "(--skin) or a splat file of the posed GNM pack (--pack)");
  auto* o_prev_skin = preview->add_option("--skin", o.skin, "Skinned glTF / GLB");
  preview->add_option("--pack", o.pack, "GNM pack (.sfgnm, docs/formats/gnm-pack.md), posed at zero controls")
      ->excludes(o_prev_skin);
  preview
      ->add_option("--tint", o.tint,
                   "joint (dominant joint; eye joints in cyan), uv, height or normal (radial pseudo-normal)")
      ->check(CLI::IsMember({"joint", "uv", "height", "normal"}))
      ->capture_default_str();
  preview->add_option("--sigma", o.sigma, "Gaussian standard deviation in metres")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  preview
      ->add_option("-o,--output", o.output,
                   "Package directory (--skin), or splat file by extension, e.g. .ply (--pack)")
      ->required();
  CLI::App* gnm_pack = command_->add_subcommand("gnm-pack",
                                                "Bake a skinned glTF's head (morph targets, skin, eye "
                                                "joints; its eyeballs bound to them) into a GNM pack");
  gnm_pack->add_option("skin", o.skin, "Skinned glTF / GLB (e.g. the LAM avatar's skin.glb)")->required();
  gnm_pack->add_option("-o,--output", o.output, "Pack file (.sfgnm)")->required();
  gnm_pack->add_option(
      "--eyes", o.eyes,
      "Eye joint names LEFT,RIGHT (default: joints named like lEye / rEye, see docs/formats/gnm-pack.md)");
  CLI::App* info = command_->add_subcommand(
      "info", "Describe a character package (counts, skin, expressions, clips, memory)");
  info->add_option("package", o.input, "Package directory")->required();
  info->add_flag("--json", o.json, "Machine-readable JSON output");
  // The action is the subcommand that was given.
  build->callback([&o] { o.action = "build"; });
  bind->callback([&o] { o.action = "bind"; });
  preview->callback([&o] { o.action = "preview"; });
  gnm_pack->callback([&o] { o.action = "gnm-pack"; });
  info->callback([&o] { o.action = "info"; });
}

bool CharacterCommand::parsed() const {
  return command_->parsed();
}

BenchCharactersCommand::BenchCharactersCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("bench-characters",
                                "Benchmark a crowd of animated splat characters on Vulkan (GPU deform pass)");
  command_->add_option("package", o.package, "Character package or decoder character bundle directory")
      ->required();
  command_->add_option("--count", o.count, "Characters in the crowd")
      ->check(CLI::Range(size_t{1}, size_t{10000}))
      ->capture_default_str();
  command_->add_option("--width", o.width, "Render width")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  command_->add_option("--height", o.height, "Render height")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  command_->add_option("--frames", o.frames, "Timed frames; the median is reported")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  command_->add_option("--device", o.device, "Vulkan device: index or part of its name");
  command_->add_flag("--validation", o.validation, "Enable Vulkan validation layers");
  command_->add_flag("--json", o.json, "Print the results as JSON to stdout (other output goes to stderr)");
  command_->add_option("--json-out", o.json_out, "Also write the results as JSON to this file");
}

bool BenchCharactersCommand::parsed() const {
  return command_->parsed();
}

AnimateCommand::AnimateCommand(CLI::App& app, LoadPolicyOptions& policy)
    : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ =
      app.add_subcommand("animate", "Render a scene over time to PNG frames or an MP4 (through ffmpeg)");
  command_->add_option("input", o.input, "Scene .json, glTF model (.gltf .glb) or splat file")->required();
  command_
      ->add_option("-o,--output", o.output,
                   "Frame pattern with one %0Nd field (frames/%04d.png), or a .mp4 file")
      ->capture_default_str();
  command_->add_option("--fps", o.fps, "Frames per second")->capture_default_str();
  command_->add_option("--duration", o.duration, "Seconds of scene time to render")->capture_default_str();
  command_->add_option("--orbit", o.orbit_deg,
                       "Turn the camera this many degrees about the vertical axis through the scene's centre "
                       "over the animation (a moving camera)");
  command_->add_option("--start", o.start, "Scene time of the first frame, in seconds")
      ->capture_default_str();
  command_
      ->add_option("--width", o.width,
                   "Image width (default " + std::to_string(kDefaultWidth) + ", or the camera's)")
      ->check(CLI::Range(1, 16384));
  command_
      ->add_option("--height", o.height,
                   "Image height (default " + std::to_string(kDefaultHeight) + ", or the camera's)")
      ->check(CLI::Range(1, 16384));
  command_->add_option("--camera", o.camera, "Camera JSON (intrinsics + world_to_camera, or look-at)");
  command_->add_option("--clip", o.clip, "glTF input: animation name or index (default: the first)");
  command_->add_option("--events-out", o.events_out,
                       "Write the animation events the frames cross to this .jsonl file, one JSON object a "
                       "line (default: one line each on stdout)");
  command_
      ->add_option("--hull-mode", o.hull_mode, "Splat hulls: baked or sorted for every hull (as for render)")
      ->check(CLI::IsMember({"baked", "sorted"}));
  command_->add_option("--light", o.light, "Splat hulls: the cel light on or off")
      ->check(CLI::IsMember({"on", "off"}));
  command_->add_option("--hull-lod", o.hull_lod, kHullLodHelp)->check(hullLodValidator());
  command_->add_option("--live-core", o.live_core, kLiveCoreHelp)->check(CLI::IsMember({"mesh", "sorted"}));
  command_->add_option("--outline", o.outline, kOutlineHelp);
  command_->add_option("--mesh-samples", o.mesh_samples, kMeshSamplesHelp)->check(meshSamplesValidator());
  addFrameOptions(command_, o.backend, o.device, o.validation, o.background, o.blend_space, o.lod_budget,
                  o.lod_pool);
  addRasterSliceOption(command_, o.raster_slice);
  addPrecisionOptions(command_, o.sh_precision, o.raster_precision);
  command_->add_flag(
      "--strict", policy.strict,
      "Refuse files holding NaN or infinite values (default: drop those gaussians with a warning)");
  command_->add_flag("--keep-going", o.keep_going,
                     "Scene JSON: draw a magenta placeholder (with a warning) for an object that cannot be "
                     "loaded (default: fail)");
  command_->add_flag(
      "--allow-outside-paths", o.allow_outside_paths,
      "Scene JSON: let object paths be absolute or leave the scene's directory (only for scenes you trust)");
}

bool AnimateCommand::parsed() const {
  return command_->parsed();
}

DemoCommand::DemoCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("demo", "Render the built-in procedural demo scene");
  command_->add_option("-o,--output", o.output, "Output PNG")->capture_default_str();
  command_->add_option("--width", o.width, "Image width")->check(CLI::Range(1, 16384))->capture_default_str();
  command_->add_option("--height", o.height, "Image height")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  command_->add_option("--save-float", o.save_float, "Also write the float RGBA image as .npy");
  command_->add_option(
      "--save-depth", o.save_depth,
      "Also write a (height, width, 2) float .npy: expected depth sum(d*alpha*T) (splats and meshes) and "
      "transmittance T per pixel");
  command_
      ->add_option("--backend", o.backend,
                   "Renderer: auto (Vulkan on a GPU; the CPU renderer where the only Vulkan device is a CPU "
                   "one, such as lavapipe), vulkan or cpu")
      ->check(CLI::IsMember({"auto", "vulkan", "cpu"}))
      ->capture_default_str();
  command_->add_option("--device", o.device, "Vulkan device: index or part of its name");
  command_->add_flag("--validation", o.validation, "Enable Vulkan validation layers");
}

bool DemoCommand::parsed() const {
  return command_->parsed();
}

DevicesCommand::DevicesCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("devices",
                                "List the Vulkan loader, devices with their drivers, and instance layers");
  command_->add_flag("--json", o.json, "Machine-readable JSON output");
}

bool DevicesCommand::parsed() const {
  return command_->parsed();
}

BenchCommand::BenchCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ =
      app.add_subcommand("bench", "Benchmark rendering (per-pass GPU times) and, with --loads, file loading");
  command_->add_option("input", o.input,
                       "Splat file, scene .json or neural generator .onnx (run every frame, in the frame on "
                       "Vulkan; default: the biker capture in the assets directory)");
  command_->add_option("--assets", o.assets,
                       "Assets directory (default $SPLATFORGE_ASSETS or ../shared/assets)");
  command_->add_option("--synthetic", o.synthetic, "Use a synthetic capture-like cloud of N gaussians")
      ->check(CLI::Range(size_t{1}, size_t{200000000}));
  command_->add_option("--copies", o.copies, "Tile N copies of the input, each its own object")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  command_->add_option("--sh-degree", o.sh_degree, "Raise the SH degree to D (0..3)")
      ->check(CLI::Range(0, 3));
  command_
      ->add_option(
          "--backend", o.backend,
          "Renderer: auto (Vulkan wherever a Vulkan device exists, a CPU one included), vulkan or cpu")
      ->check(CLI::IsMember({"auto", "vulkan", "cpu"}))
      ->capture_default_str();
  command_->add_option("--device", o.device, "Vulkan device: index or part of its name");
  command_->add_flag("--validation", o.validation, "Enable Vulkan validation layers");
  command_->add_option("--width", o.width, "Render width")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  command_->add_option("--height", o.height, "Render height")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  command_->add_option(
      "--camera", o.camera,
      "Camera JSON, as render --camera (default: framed automatically); its size unless --width/--height");
  command_->add_option("--save-scene", o.save_scene,
                       "Also write the scene as one world-space splat file (" + std::string(kWriteFormats) +
                           ") to time it elsewhere");
  command_->add_flag("--show-graph", o.show_graph,
                     "Vulkan: print the frame graph (passes, what each reads and writes, barriers)");
  command_->add_option("--frames", o.frames, "Timed frames; the median is reported")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  command_
      ->add_option("--back-to-back", o.back_to_back,
                   "Vulkan: also record the last frame N times (1.." +
                       std::to_string(sf::kMaxFramesPerSubmission) +
                       ") in one submission and report its medians (a GPU that never waits on the host)")
      ->check(CLI::Range(1, sf::kMaxFramesPerSubmission));
  addRasterSliceOption(command_, o.raster_slice);
  addPrecisionOptions(command_, o.sh_precision, o.raster_precision);
  command_->add_flag(
      "--raster-counts", o.raster_counts,
      "Vulkan: the timed frames' raster counts its work (the plain fp32 raster, counting: its time is "
      "then longer): batch entries its subgroups walk, pixel-entries evaluated and blended, batches its "
      "workgroups stage and the most one stages");
  command_->add_flag("--shader-stats", o.shader_stats,
                     "Vulkan: print what the driver reports of each compute pipeline the renderer made "
                     "(VK_KHR_pipeline_executable_properties: registers and shared memory on NVIDIA; JSON "
                     "\"shader_stats\", null where the device does not report them)");
  command_
      ->add_option(
          "--tile-binning", o.tile_binning,
          "Vulkan: how the frame counts and places each tile's pairs: partitioned (the lanes of a subgroup "
          "on one tile grouped in one instruction; the default on devices with "
          "VK_NV_shader_subgroup_partitioned), per-pair (one atomic a pair; the default elsewhere) or "
          "aggregated (the grouped walk's portable path); every path draws the same image")
      ->check(CLI::IsMember({"per-pair", "partitioned", "aggregated"}));
  command_->add_flag("--loads", o.loads,
                     "Also measure load throughput (MB/s) of biker.ply, biker.compressed.ply and biker.spz");
  command_->add_flag("--json", o.json, "Print the results as JSON to stdout (other output goes to stderr)");
  command_->add_option("--json-out", o.json_out, "Also write the results as JSON to this file");
  command_->add_flag("--allow-outside-paths", o.allow_outside_paths,
                     "Scene JSON input: let object paths be absolute or leave the scene's directory");
  command_->add_flag("--lod", o.lod,
                     "Fly through the input's level-of-detail objects as the viewer draws them (no frame "
                     "waits for the disk): per frame "
                     "the time, gaussians drawn, nodes resident, chunks read (docs/lod.md)");
  addLodBudgetOption(command_, o.lod_budget, o.lod_pool);
  addLodCutOption(command_, o.lod_cut);
  command_->add_option("--plot", o.plot, "--lod: also write the per-frame curves as a PNG");
  command_->add_flag(
      "--lod-reference", o.lod_reference,
      "--lod: also draw each frame's camera with every visible leaf (full resolution, waiting for "
      "the disk) and report per frame the PSNR against it and how much the image changed since "
      "the last frame, with level of detail and without (popping)");
  command_->add_flag(
      "--lod-settle", o.lod_settle,
      "--lod: every frame waits for the chunks its cut wants and cuts again until none is "
      "missing, fading as the viewer does, so every run makes the same cuts and fades (to compare "
      "the host's cut and draw between builds; with --lod-cut frame on the Vulkan backend)");
  // Given on the command line, --width and --height override a --camera file's size.
  command_->callback([&o, command = command_] {
    o.width_given = command->count("--width") > 0;
    o.height_given = command->count("--height") > 0;
  });
}

bool BenchCommand::parsed() const {
  return command_->parsed();
}

PoseCommand::PoseCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand(
      "pose", "Print a glTF file's joint world matrices and mesh bounds at one time of a clip");
  command_->add_option("file", o.input, "glTF file (.gltf or .glb)")->required();
  command_->add_option("--clip", o.clip,
                       "Animation name or index (default: the first; the rest pose when there is none)");
  command_->add_option("--time", o.time, "Time in seconds (clamped to the clip's keys)")
      ->capture_default_str();
  command_->add_flag("--json", o.json, "Machine-readable JSON output");
}

bool PoseCommand::parsed() const {
  return command_->parsed();
}

BenchSkinCommand::BenchSkinCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ =
      app.add_subcommand("bench-skin", "Benchmark a crowd of GPU-skinned instances of an animated glTF mesh");
  command_->add_option("file", o.input, "glTF/GLB with a skin and an animation")->required();
  command_->add_option("--instances", o.instances, "Animated instances")
      ->check(CLI::Range(size_t{1}, size_t{65535}))
      ->capture_default_str();
  command_->add_option("--frames", o.frames, "Timed frames; the median is reported")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  command_->add_option("--method", o.method, "Skinning: lbs (linear blend) or dqs (dual quaternion)")
      ->check(CLI::IsMember({"lbs", "dqs"}))
      ->capture_default_str();
  command_->add_option("--device", o.device, "Vulkan device: index or part of its name");
  command_->add_flag("--validation", o.validation, "Enable Vulkan validation layers");
  command_->add_flag("--json", o.json, "Print the results as JSON to stdout (other output goes to stderr)");
  command_->add_option("--json-out", o.json_out, "Also write the results as JSON to this file");
}

bool BenchSkinCommand::parsed() const {
  return command_->parsed();
}

ViewCommand::ViewCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand(
      "view",
      "Open a window on a splat file, glTF model, character package or scene JSON (orbit/fly camera, "
      "turntable, ground grid, upright flip, timeline, character controls, screenshots; docs/viewer.md)");
  command_->add_option(
      "input", o.input,
      "Splat file, glTF model, character package or scene .json (default: drop one on the window)");
  command_->add_option("--size", o.size, "Window size WIDTHxHEIGHT")->capture_default_str();
  command_->add_option("--camera", o.camera, "Camera JSON for the first view (as render --camera)");
  command_->add_option(
      "--script", o.script,
      "Run a script of viewer commands, one a line: camera, orbit, key, time, wait, drop, screenshot, "
      "screenshot-ui, save-camera, resize, grid, turntable, upright-flip, antialiased, clip, expression, "
      "look-at, quit (docs/viewer.md)");
  command_->add_option("--device", o.device, "Vulkan device: index or part of its name");
  command_->add_flag("--validation", o.validation, "Enable Vulkan validation layers");
  command_->add_flag(
      "--no-vsync", o.no_vsync,
      "Present without waiting for vertical blank (mailbox or immediate), to measure frame rates");
  command_->add_option("--bg,--background", o.background,
                       "Background colour R,G,B in [0, 1] (default: the scene's, else mid grey 0.5,0.5,0.5)");
  command_
      ->add_option(
          "--blend-space", o.blend_space,
          "Blend in display space (sRGB colours as they are, as INRIA's rasterizer) or in linear light "
          "(decoded, blended, encoded) (default: the scene's \"blend_space\", else display)")
      ->check(CLI::IsMember({"display", "linear"}));
  command_->add_flag(
      "--antialiased", o.antialiased,
      "Antialiased mode (opacity compensation) for every object; files trained with it always get it");
  addLodBudgetOption(command_, o.lod_budget, o.lod_pool);
  addLodCutOption(command_, o.lod_cut);
  command_->add_option("--clip", o.clip,
                       "glTF / character input: animation name or index (default: the first)");
  command_->add_option("--time", o.time, "glTF / character input: seconds into the clip")
      ->capture_default_str();
  command_->add_flag(
      "--full-res", o.full_res,
      "Render every frame at the window's size; by default frames drawn while the camera moves are "
      "rendered at 1/2 or 1/4 of it (to keep --target-frame-ms) and stretched, and a full-size one "
      "follows once it rests for 0.25 s");
  command_
      ->add_option(
          "--target-frame-ms", o.target_frame_ms,
          "Render time in milliseconds to keep while the camera moves, by rendering at a smaller size")
      ->capture_default_str();
  command_->add_flag(
      "--strict", o.strict,
      "Fail when a scene object cannot be loaded instead of drawing a placeholder, and refuse files "
      "holding NaN or infinite "
      "values instead of dropping those gaussians");
  command_->add_flag(
      "--allow-outside-paths", o.allow_outside_paths,
      "Scene JSON: let object paths be absolute or leave the scene's directory (only for scenes you trust)");
}

bool ViewCommand::parsed() const {
  return command_->parsed();
}

ViewsCommand::ViewsCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  train::ViewsOptions& v = o.views;
  command_ = app.add_subcommand("views",
                                "Render a training dataset of a glTF/GLB model: the model posed and "
                                "normalised into the 1.6 cube, orbit cameras at radius 3.2 (train "
                                "views on a golden spiral within an elevation belt, val and test views on "
                                "rings at fixed elevations), RGBA PNGs in a NeRF-synthetic "
                                "folder (transforms_{train,val,test}.json, OpenGL camera-to-world matrices) "
                                "that other trainers read too. Rendered on the CPU. "
                                "See docs/training.md");
  command_->add_option("model", o.input, "glTF / GLB model (static or skinned)")->required();
  command_->add_option("-o,--output", o.output, "Output folder (created; its transforms files are replaced)")
      ->required();
  command_->add_option("--count", v.train_count, "Train views (golden spiral in the belt)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command_->add_option("--val", v.val_count, "Validation views (a ring at 30 degrees)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  command_->add_option("--test", v.test_count, "Test views (rings at 20 and 40 degrees, half each)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  command_->add_option("--size", v.size, "Image width and height in pixels")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  command_
      ->add_option("--lighting", o.lighting,
                   "flat: the albedo; ao: the albedo under a white dome (ambient occlusion, no sun); cel: "
                   "the hull article's three cel "
                   "bands from a fixed key light")
      ->check(CLI::IsMember({"flat", "ao", "cel"}))
      ->capture_default_str();
  command_
      ->add_option("--belt", o.belt,
                   "Elevation belt of the train views MIN,MAX in degrees above the horizon (uniform in sin "
                   "between them)")
      ->check(CLI::Validator(
          [](std::string& text) {
            float lo = 0, hi = 0;
            return parseBelt(text, lo, hi)
                       ? std::string()
                       : "expected MIN,MAX in degrees with -90 <= MIN < MAX <= 90, got '" + text + "'";
          },
          "MIN,MAX"))
      ->capture_default_str();
  command_->add_option("--clip", v.clip,
                       "Pose the model at this animation (name or index; default: the bind pose)");
  command_->add_option("--time", v.time, "Clip time in seconds")->capture_default_str();
  command_
      ->add_option("--supersample", v.supersample,
                   "Samples per pixel along each axis (antialiased colour and alpha)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  command_->add_option("--ao-rays", v.ao_rays, "ao: occlusion rays per vertex")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  command_->add_option("--seed", v.seed, "Random seed (the occlusion rays)")->capture_default_str();
  command_->add_flag("--json", o.json, "Print a JSON summary to stdout (and no progress on stderr)");
}

bool ViewsCommand::parsed() const {
  return command_->parsed();
}

TrainCommand::TrainCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ =
      app.add_subcommand("train",
                         "Train exactly N gaussians on views of a glTF model (rendered by the engine) "
                         "or on a NeRF-synthetic dataset; writes the cloud, a JSON-lines log and a plot "
                         "of the loss and the validation PSNR/SSIM (--plot LOG draws that plot from a "
                         "log without training)");
  command_
      ->add_option("--mesh", o.mesh,
                   "glTF/GLB model: its views are rendered in memory (as `splatforge views`) and the "
                   "gaussians start on its surface")
      ->check(CLI::ExistingFile);
  command_
      ->add_option(
          "--dataset", o.dataset,
          "NeRF-synthetic folder (transforms_train.json, ...): the gaussians start inside its visual hull")
      ->check(CLI::ExistingDirectory);
  command_->add_option("-o,--output", o.output,
                       "Trained cloud (INRIA PLY, or any format by extension), in the dataset's normalised "
                       "frame; with --plot, the plot (.png; default: the log's name with .plot.png)");
  command_->add_option("--budget", o.budget, "Number of gaussians (MCMC: never exceeded)")
      ->check(CLI::Range(size_t{1}, size_t{10000000}))
      ->capture_default_str();
  command_->add_option("--steps", o.steps, "Optimisation steps")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  command_
      ->add_option("--size", o.size,
                   "View size in pixels (--mesh: rendered at this size; --dataset: larger images are "
                   "resampled to fit)")
      ->check(CLI::Range(8, 8192))
      ->capture_default_str();
  command_->add_option("--views", o.views, "--mesh: number of train views")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  command_->add_option("--lighting", o.lighting, "--mesh: flat, ao or cel (as `splatforge views`)")
      ->check(CLI::IsMember({"flat", "ao", "cel"}))
      ->capture_default_str();
  command_->add_option("--clip", o.clip,
                       "--mesh: pose the model at this clip (name or index); default: the bind pose");
  command_->add_option("--time", o.time, "--mesh: clip time, seconds");
  command_->add_option("--seed", o.seed, "Seed: the same seed gives the same cloud on one machine")
      ->capture_default_str();
  command_
      ->add_option(
          "--entropy", o.entropy,
          "Weight of the opacity entropy term o(1-o), annealed in over the last 40% of the steps (0: off)")
      ->check(CLI::Range(0.0f, 100.0f))
      ->capture_default_str();
  command_->add_flag("--black-background", o.black_background,
                     "Composite over black instead of a random grey per step (for comparison)");
  command_
      ->add_option("--steps-per-submission", o.steps_per_submission,
                   "Vulkan: steps recorded in one submission, the host waiting once per batch (a batch also "
                   "ends at a relocation or a log entry)")
      ->check(CLI::Range(1, train::kMaxStepsPerSubmission))
      ->capture_default_str();
  command_->add_option("--log", o.log,
                       "Training log, JSON lines (default: the output with .log.jsonl); the plot of the "
                       "training loss and the validation PSNR and SSIM is written beside the cloud, as the "
                       "output with .plot.png");
  command_
      ->add_option("--log-every", o.log_every,
                   "A log entry (mean loss, live count, opacity histogram) every N steps (default: 100, or "
                   "the largest divisor of --val-every up to 100)")
      ->check(CLI::Range(1, 10000000));
  command_
      ->add_option("--val-every", o.val_every,
                   "Score the validation views (L1, PSNR, SSIM) every N steps, a multiple of --log-every "
                   "(0: at the start and the end only)")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  command_->add_option("--val-images", o.val_images,
                       "At every validation write DIR/step_NNNNNN.png: the first 4 validation views "
                       "rendered (left) beside the ground truth (right), over white (default: none)");
  command_->add_option("--plot", o.plot,
                       "Draw the plot of an existing training log (LOG.jsonl) and train nothing: to -o, "
                       "default the log's name with .plot.png");
  command_
      ->add_option("--backend", o.backend,
                   "auto (Vulkan when a device can train, else the CPU), cpu or vulkan")
      ->check(CLI::IsMember({"auto", "cpu", "vulkan"}))
      ->capture_default_str();
  command_->add_option("--device", o.device, "Vulkan device: index or part of its name");
  command_->add_flag("--json", o.json,
                     "Print the run's summary as JSON to stdout (with --plot: what was drawn)");
}

bool TrainCommand::parsed() const {
  return command_->parsed();
}

namespace {

// `hull bake` and its options.
CLI::App* addHullBake(CLI::App& hull, HullCommand::Options& o) {
  CLI::App* bake = hull.add_subcommand(
      "bake", "Bake a splat hull from a glTF/GLB model (and optionally a trained splat file of it)");
  bake->add_option("model,--mesh", o.input, "glTF / GLB model")->required();
  bake->add_option("-o,--output", o.output,
                   "Output .spl2 (its meta sidecar is written beside it as NAME.meta.json)")
      ->required();
  bake->add_option("--splats", o.bake.splats,
                   "A trained splat file of the model, in the PLY frame as `train` writes it (default: "
                   "sample the mesh surface)");
  bake->add_flag("--splats-source-frame", o.bake.splats_in_source_frame,
                 "The --splats file's positions are in the model's own units (default: the model normalised "
                 "into the 1.6 cube, as "
                 "`views` and `train` have it)");
  bake->add_option("--budget", o.bake.budget, "Most splats in the hull (with --train: the gaussians trained)")
      ->capture_default_str();
  bake->add_flag("--train", o.train,
                 "Train the splats first, in process: views of the model rendered in memory, exactly "
                 "--budget gaussians (`splatforge train`)");
  bake->add_option("--train-steps", o.train_steps, "--train: optimisation steps")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  bake->add_option("--train-size", o.train_size, "--train: view size in pixels")
      ->check(CLI::Range(8, 8192))
      ->capture_default_str();
  bake->add_option("--train-views", o.train_views, "--train: train views")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  bake->add_option("--train-backend", o.train_backend,
                   "--train: auto, cpu or vulkan (as `splatforge train --backend`)")
      ->check(CLI::IsMember({"auto", "cpu", "vulkan"}))
      ->capture_default_str();
  bake->add_option("--train-entropy", o.train_entropy,
                   "--train: weight of the annealed opacity entropy term (pushes opacities to 0 or 1 for the "
                   "core/shell split)")
      ->check(CLI::Range(0.0f, 100.0f))
      ->capture_default_str();
  bake->add_option("--clip", o.bake.clip,
                   "Pose the model at this animation (name or index; default: the rest pose)");
  bake->add_option("--time", o.bake.time, "Clip time in seconds")->capture_default_str();
  bake->add_option("--belt", o.belt,
                   "Camera elevation belt MIN,MAX in degrees (belly cull, silhouettes, shell orders)")
      ->capture_default_str();
  bake->add_option("--ao-rays", o.bake.ao_rays, "Ambient-occlusion rays per splat")->capture_default_str();
  bake->add_option("--materials", o.bake.materials, "Material recipe: mech, organic, or a JSON file")
      ->capture_default_str();
  bake->add_option("--chunk-size", o.bake.chunk_size, "Splats per chunk, about")->capture_default_str();
  bake->add_option("--points", o.bake.points,
                   "Named points for the meta sidecar: nodes whose name contains one of these '|'-separated "
                   "words (any case)")
      ->capture_default_str();
  bake->add_option("--seed", o.bake.seed, "Random seed (sampling, chunks, per-splat random byte)")
      ->capture_default_str();
  bake->add_option("--device", o.play.device, "--train: Vulkan device (index or name part)");
  bake->add_flag("--json", o.json,
                 "Print the meta sidecar (with the bake report) to stdout instead of the summary");
  return bake;
}

// `hull play` and its options.
CLI::App* addHullPlay(CLI::App& hull, HullCommand::Options& o) {
  CLI::App* play = hull.add_subcommand(
      "play",
      "Play a script of hits, heals and effects on a splat hull and render it to PNG frames or an MP4");
  play->add_option("input", o.play.input, "SPL2 hull, or a scene JSON whose hull objects all play the script")
      ->required();
  play->add_option("--script", o.play.hull_script, "Hull script JSON (docs/formats/hull-script.md)")
      ->required();
  play->add_option("-o,--output", o.play.output,
                   "Frame pattern with one %0Nd field (frames/%04d.png), or a .mp4 file")
      ->capture_default_str();
  play->add_option("--seed", o.seed,
                   "Random seed of the destruction (default: the script's \"seed\", else 1)");
  play->add_option("--fps", o.play.fps, "Frames per second")->capture_default_str();
  play->add_option("--duration", o.duration, "Seconds to render (default: the script's duration)");
  play->add_option("--width", o.play.width, "Image width (default 1280)");
  play->add_option("--height", o.play.height, "Image height (default 720)");
  play->add_option("--camera", o.play.camera,
                   "Camera JSON (default: the hulls framed over the whole clip, from 41 degrees up)");
  play->add_option("--bg,--background", o.play.background,
                   std::string("Background colour R,G,B in [0, 1] (default: the scene's, else dark slate ") +
                       kHullPlayBackground + ")");
  play->add_option("--light", o.play.light, "The hulls' cel light: on or off")
      ->check(CLI::IsMember({"on", "off"}));
  play->add_option("--hull-lod", o.play.hull_lod, kHullLodHelp)->check(hullLodValidator());
  play->add_option("--live-core", o.play.live_core, kLiveCoreHelp)->check(CLI::IsMember({"mesh", "sorted"}));
  play->add_option("--outline", o.play.outline, kOutlineHelp);
  play->add_option("--backend", o.play.backend, "auto, cpu or vulkan")
      ->check(CLI::IsMember({"auto", "cpu", "vulkan"}))
      ->capture_default_str();
  play->add_option("--device", o.play.device, "Vulkan device (index or name part)");
  return play;
}

// `hull bench` and its options.
CLI::App* addHullBench(CLI::App& hull, HullCommand::Options& o) {
  CLI::App* bench = hull.add_subcommand(
      "bench", "Benchmark live hulls on the Vulkan frame: N hulls with every effect on and a hit per frame");
  bench->add_option("file", o.input, "SPL2 hull")->required();
  bench->add_option("--hulls", o.hulls, "Hulls on screen (a grid)")->capture_default_str();
  bench->add_option("--frames", o.frames, "Frames to time (the first is left out)")->capture_default_str();
  bench->add_option("--width", o.width, "Image width")->capture_default_str();
  bench->add_option("--height", o.height, "Image height")->capture_default_str();
  bench
      ->add_option("--back-to-back", o.back_to_back,
                   "Also record the last frame N times (1.." + std::to_string(kMaxFramesPerSubmission) +
                       ") in one submission and report its medians (a GPU that never waits on the host)")
      ->check(CLI::Range(1, kMaxFramesPerSubmission));
  bench
      ->add_option("--submissions", o.submissions,
                   "With --back-to-back: make that many such submissions in a row and report the medians of "
                   "the later half "
                   "(a GPU left idle between the timed frames raises its clock only under steady work)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bench->add_flag("--idle", o.idle, "No effects and no hits (the live path's floor)");
  bench
      ->add_option("--effects", o.bench_effects,
                   "all (default: every effect on every hull, which moves every chunk) or none (the hits "
                   "on the first hull only); --idle also stops the hits")
      ->check(CLI::IsMember({"all", "none"}))
      ->capture_default_str();
  bench
      ->add_option("--live-core", o.live_core,
                   "Live hulls' untouched chunks: sorted (every slot through the global sort), mesh (drawn "
                   "as the baked hull draws them), or both (time the frames with mesh, then again from the "
                   "undamaged hulls with sorted, and print both)")
      ->check(CLI::IsMember({"mesh", "sorted", "both"}))
      ->capture_default_str();
  bench
      ->add_option(
          "--mesh-samples", o.mesh_samples,
          "Samples per pixel of every hull's core mesh (baked hulls, and live hulls' untouched chunks with "
          "--live-core mesh): 1, 2, 4, 8 or 16; default 8, as render's --mesh-samples")
      ->check(meshSamplesValidator());
  bench->add_option("--lod", o.lod, "Every hull's runtime LOD: K, auto or off (as --hull-lod of render)")
      ->check(hullLodValidator())
      ->capture_default_str();
  bench
      ->add_option("--lod-sweep", o.lod_sweep,
                   "Time the frame at N splat budgets K = ceil(splats * j / N), j = 1..N (every hull at the "
                   "same K; after the runs at "
                   "--lod) and print the curve of frame time against K; with --plot, a PNG of it")
      ->check(CLI::Range(2, 64));
  bench->add_option("--plot", o.plot, "With --lod-sweep: write the frame-time-against-K chart to this PNG");
  bench
      ->add_option("--hull-mode", o.bench_mode,
                   "live (default: live hulls through their effects pass), or baked / sorted: static hulls "
                   "drawn in that mode (no "
                   "effects, no hits)")
      ->check(CLI::IsMember({"live", "baked", "sorted"}))
      ->capture_default_str();
  bench->add_flag(
      "--tile-stats", o.tile_stats,
      "Also print how the last frame's tile pairs spread over its tiles (reads the frame's buffers back)");
  bench->add_option("--device", o.play.device, "Vulkan device (index or name part)");
  bench->add_option("--json-out", o.json_out, "Also write the results as JSON to this file");
  return bench;
}

}  // namespace

HullCommand::HullCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("hull",
                                "Splat hulls (SPL2): bake them from glTF models, inspect them, play scripts "
                                "of hits and effects on them, benchmark live hulls");
  command_->require_subcommand(1);
  addHullBake(*command_, o);
  CLI::App* play = addHullPlay(*command_, o);
  CLI::App* bench = addHullBench(*command_, o);
  CLI::App* info = command_->add_subcommand(
      "info", "Describe an SPL2 hull: core and shell counts, orders, parts, emission, chunks and materials");
  info->add_option("file", o.input, "SPL2 file")->required();
  info->add_flag("--json", o.json, "Print JSON to stdout");
  info->callback([&o] { o.action = Options::Action::kInfo; });
  bench->callback([&o] { o.action = Options::Action::kBench; });
  play->callback([&o, play] {
    o.action = Options::Action::kPlay;
    o.seed_given = play->count("--seed") > 0;
    o.play.duration_given = play->count("--duration") > 0;
  });
}

bool HullCommand::parsed() const {
  return command_->parsed();
}

OnnxCommand::OnnxCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand(
      "onnx", "Inspect and run ONNX models (neural gaussian generators) on the CPU or Vulkan executor");
  command_->require_subcommand(1);
  CLI::App* info_cmd = command_->add_subcommand(
      "info",
      "List a model's inputs, outputs, operators (and whether each is supported) and generator contract");
  info_cmd->add_option("model", o.model, "ONNX model")->required();
  info_cmd->add_flag("--json", o.json, "Print JSON to stdout");
  info_cmd->callback([&o] { o.info = true; });
  CLI::App* run_cmd = command_->add_subcommand(
      "run", "Run a model on the CPU or Vulkan executor and print (or save) its outputs");
  run_cmd->add_option("model", o.model, "ONNX model")->required();
  run_cmd->add_option("--inputs", o.inputs,
                      "JSON file: input name -> number, nested array, or {\"type\", \"shape\", \"data\"}");
  run_cmd->add_option("--time", o.time, "Generators: the time input in seconds (unless --inputs gives it)")
      ->capture_default_str();
  run_cmd->add_option(
      "--camera", o.camera,
      "Generators: camera JSON for the view/projection inputs (default: at the origin, looking along +z)");
  run_cmd->add_option("-o,--output", o.output_dir, "Directory to write one float32 .npy per output into");
  run_cmd->add_option("--save-splats", o.save_splats,
                      "Generators: write the decoded gaussians as a splat file (format by extension)");
  run_cmd->add_flag("--json", o.json, "Print JSON (every output's values) to stdout");
  run_cmd
      ->add_option("--backend", o.backend,
                   "Executor: cpu (the reference), vulkan, or auto (vulkan where a device exists)")
      ->check(CLI::IsMember({"cpu", "vulkan", "auto"}))
      ->capture_default_str();
  run_cmd->add_option("--device", o.device, "Vulkan device by index or name substring");
  run_cmd
      ->add_option("--repeat", o.repeat,
                   "Run this many times and report the median (GPU time from timestamps on Vulkan)")
      ->capture_default_str();
  run_cmd->add_flag("--back-to-back", o.back_to_back,
                    "Vulkan: also record --repeat runs back to back in one submission (at most 4096; the GPU "
                    "never idles between "
                    "them, so its clock stays up) and report their median GPU time; the per-node profile is "
                    "then each node's median "
                    "over up to 64 profiled runs in the same submission");
}

bool OnnxCommand::parsed() const {
  return command_->parsed();
}

BatchCommand::BatchCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand(
      "batch",
      "Run a manifest of splatforge commands (hull bakes, trainings, converts, renders, ...): locally with N "
      "workers, or as one Slurm array job (--slurm); each job's outputs appear only when it succeeds, and a "
      "run "
      "again skips the jobs already done for the same inputs (docs/batch.md, "
      "docs/formats/batch-manifest.md)");
  command_->add_option("manifest", o.manifest, "Batch manifest (.json)");
  command_->add_option("-j,--jobs", o.jobs, "Jobs run at once here (with --slurm: by each task)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  command_->add_option("--devices", o.devices,
                       "GPUs to spread the jobs over, e.g. 0,1: worker w passes --device devices[w % n] to "
                       "the commands that take "
                       "--device (render, animate, train, hull bake, hull play, onnx run)");
  command_->add_flag(
      "--retry-failed", o.retry_failed,
      "Run again the jobs whose last run failed with the same inputs and command (default: skip them)");
  command_->add_option(
      "--task", o.task,
      "Run only task I's share: the jobs whose index modulo --tasks is I (what each Slurm array task runs)");
  command_
      ->add_option("--tasks", o.tasks,
                   "Tasks the jobs are split over (default with --task: one job per task); without --task, "
                   "the task index "
                   "comes from $SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
  command_->add_option("--shard", o.shard,
                       "Run only shard i of n (i/n, from 0): the same as --task i --tasks n");
  command_->add_flag("--slurm", o.slurm,
                     "Submit the jobs that need to run as one Slurm array job (sbatch --array) instead of "
                     "running them here");
  command_->add_option("--partition", o.partition, "--slurm: the partition");
  command_->add_option("--time", o.time_limit,
                       "--slurm: time limit per task (as sbatch --time, e.g. 2:00:00)");
  command_->add_option("--gpus-per-task", o.gpus_per_task, "--slurm: GPUs per task (--gres=gpu:N)")
      ->check(CLI::Range(0, 64));
  command_->add_option("--cpus-per-task", o.cpus_per_task, "--slurm: CPUs per task")
      ->check(CLI::Range(0, 4096));
  command_->add_option("--mem", o.memory, "--slurm: memory per task (as sbatch --mem, e.g. 32G)");
  command_->add_option("--max-parallel", o.max_parallel, "--slurm: at most K tasks at once (--array=...%K)")
      ->check(CLI::Range(0, 100000));
  command_->add_option("--job-name", o.job_name,
                       "--slurm: the array job's name (default splatforge-<manifest name>)");
  command_->add_option(
      "--sbatch-arg", o.sbatch_args,
      "--slurm: one more sbatch argument, passed as given (repeatable; --sbatch-arg=--exclusive)");
  command_->add_option("--sbatch", o.sbatch, "--slurm: the sbatch program")->capture_default_str();
  command_->add_flag("--dry-run", o.dry_run,
                     "Check the manifest and print what would run and why (with --slurm: write and print the "
                     "sbatch script, submit nothing)");
  command_->add_flag("--json", o.json, "Print the run's (or submission's) summary as JSON to stdout");
  CLI::App* status = command_->add_subcommand("status",
                                              "Where each job of a manifest stands (done, failed, running, "
                                              "interrupted, pending), totals and the slowest jobs");
  status->add_option("manifest", o.manifest, "Batch manifest (.json)")->required();
  status->add_flag("--json", o.json, "Print JSON to stdout");
  status->add_option("--slowest", o.slowest, "How many of the slowest jobs to list")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  status->add_option("--plot", o.plot,
                     "Also draw the job-time chart (PNG) here (every run writes STATE/job_times.png)");
  status->callback([&o] { o.status = true; });
}

bool BatchCommand::parsed() const {
  return command_->parsed();
}

LodCommand::LodCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ =
      app.add_subcommand("lod",
                         "Level of detail: build a hierarchy of merged gaussians from any splat file (a "
                         "binary PLY out of core), describe it, cut it for a camera under a budget of "
                         "gaussians (docs/lod.md)");
  command_->require_subcommand(1);
  CLI::App* build = command_->add_subcommand(
      "build",
      "Build a level-of-detail hierarchy (chunk files and an index) from a splat file: a binary PLY is "
      "streamed out of core, other formats are decoded whole first");
  build
      ->add_option(
          "input", o.input,
          "Splat file: a binary little-endian PLY (INRIA 3DGS layout) is read in pieces, never whole; "
          "any other format the engine reads (" +
              std::string(kReadFormats) +
              ", lod-meta.json at its finest level) is decoded whole into memory first, counted against "
              "--memory-mb")
      ->required();
  build
      ->add_option("-o,--output", o.output,
                   "Output directory (its index is replaced; chunk files of an earlier build are removed)")
      ->required();
  build->add_option("--fanout", o.fanout, "Children per parent")
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  build->add_option("--chunk-size", o.chunk_size, "Leaves per chunk, rounded up to a power of the fan-out")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 31))
      ->capture_default_str();
  build
      ->add_option("--memory-mb", o.memory_mb,
                   "Memory for the sort runs, merge buffers and a chunk, in MB (a binary PLY input may be "
                   "larger; another format's decoded cloud is held whole and counted in it)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24))
      ->capture_default_str();
  build->add_option("--scratch", o.scratch,
                    "Directory for the sort's run files (default: OUTPUT/.scratch); removed when done");
  CLI::App* info =
      command_->add_subcommand("info",
                               "Describe a level-of-detail hierarchy: leaves, nodes per level, chunks, bytes "
                               "(or PlayCanvas's streamed LOD: levels, leaves, files, environment)");
  info->add_option("dir", o.input, "Hierarchy directory (lod build's output), or a PlayCanvas lod-meta.json")
      ->required();
  info->add_flag("--json", o.json, "Machine-readable JSON output");
  info->add_flag("--verify", o.verify,
                 "Also read every chunk and check its size, checksum and nodes (lod-meta.json: read every "
                 "level's ranges, and the environment)");
  CLI::App* cut = command_->add_subcommand(
      "cut",
      "Choose the nodes a camera sees under a budget of gaussians (largest screen-space error refined first) "
      "and write them as a splat file");
  cut->add_option(
         "dir", o.input,
         "Hierarchy directory (lod build's output), or a PlayCanvas lod-meta.json (a level per leaf; its "
         "environment always drawn and counted in the budget)")
      ->required();
  cut->add_option("--budget", o.budget, "Most gaussians in the cut")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->required();
  cut->add_option("-o,--output", o.output,
                  "Output splat file, format by extension: " + std::string(kWriteFormats))
      ->required();
  cut->add_option("--camera", o.camera,
                  "Camera JSON (intrinsics + world_to_camera, or look-at), as render takes it (default: the "
                  "capture framed as render frames it)");
  cut->add_option("--width", o.width,
                  "Image width (default " + std::to_string(kDefaultWidth) + ", or the camera's)")
      ->check(CLI::Range(1, 16384));
  cut->add_option("--height", o.height,
                  "Image height (default " + std::to_string(kDefaultHeight) + ", or the camera's)")
      ->check(CLI::Range(1, 16384));
  cut->add_option(
         "--threshold", o.threshold,
         "Do not refine nodes whose projected size is at most this many pixels (0: the budget alone decides)")
      ->check(CLI::Range(0.0f, 1e6f))
      ->capture_default_str();
  cut->add_option("--camera-out", o.camera_out,
                  "Also write the camera used as JSON (for `render CUT --camera FILE`)");
  build->callback([&o] { o.action = Options::Action::kBuild; });
  info->callback([&o] { o.action = Options::Action::kInfo; });
  cut->callback([&o] { o.action = Options::Action::kCut; });
}

bool LodCommand::parsed() const {
  return command_->parsed();
}

SoakCommand::SoakCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand(
      "soak",
      "Render many frames with the scene changing under it (objects added and removed, the camera "
      "orbiting, the image resized) and report the frame time, GPU memory and resident memory over "
      "the run, with their drift over its second half (docs/benchmarks.md \"Soak\")");
  command_->add_option(
      "inputs", o.inputs,
      "Splat files, glTF models, character packages, ONNX generators, SPL2 hulls or scene JSONs; after a "
      "warm-up (--warmup) with all of them, each comes and goes on its own period (the first stays). "
      "Default: captures, a skinned glTF model, a character "
      "and a hull baked from the model playing hits and heals, from the assets directory");
  command_->add_option(
      "--assets", o.assets,
      "Assets directory of the default inputs (default $SPLATFORGE_ASSETS or ../shared/assets)");
  command_->add_option("--frames", o.frames, "Frames to render")
      ->check(CLI::Range(2, 100000000))
      ->capture_default_str();
  command_
      ->add_option("--width", o.width,
                   "Image width (every --resize-every frames it alternates with 3/4 of it)")
      ->check(CLI::Range(8, 16384))
      ->capture_default_str();
  command_->add_option("--height", o.height, "Image height")
      ->check(CLI::Range(8, 16384))
      ->capture_default_str();
  command_->add_option("--resize-every", o.resize_every, "Frames between resizes")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  command_
      ->add_option("--warmup", o.warmup,
                   "First frames with every input in the scene at once, so that the high-water mark of "
                   "memory is reached "
                   "before the curves are judged")
      ->check(CLI::Range(0, 100000000))
      ->capture_default_str();
  command_->add_option("--sample-every", o.sample_every, "Frames between samples of the curves")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  command_->add_option("--backend", o.backend, "auto, vulkan or cpu")
      ->check(CLI::IsMember({"auto", "vulkan", "cpu"}))
      ->capture_default_str();
  command_->add_option("--device", o.device, "Vulkan device: index or part of its name");
  command_->add_flag("--validation", o.validation,
                     "Enable Vulkan validation layers (a frame that raises an error fails the run)");
  command_->add_option("--bg,--background", o.background,
                       "Background colour R,G,B in [0, 1] (default 0,0,0)");
  command_->add_option(
      "--plot", o.plot,
      "Write the curves (frame time, GPU memory, resident memory over the frames) to this PNG");
  command_->add_option("--json-out", o.json_out,
                       "Write the report (figures and every sample) as JSON to this file");
  command_->add_flag("--json", o.json, "Print the report as JSON to stdout (no progress lines)");
  command_->add_option(
      "--max-drift", o.max_drift_mb,
      "Fail (exit 1) when GPU or resident memory drifts by more than this many MB per 1000 frames over the "
      "run's second half");
}

bool SoakCommand::parsed() const {
  return command_->parsed();
}

ExportWebCommand::ExportWebCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand(
      "export-web",
      "Write the web page (WebGPU, docs/web.md) with one splat file, glTF model, splat character package or "
      "neural generator (.onnx), or a scene JSON of splat objects and every file it names, as a "
      "self-contained static folder that any static web server can host; look at it with `splatforge serve "
      "DIR`");
  command_
      ->add_option(
          "input", o.input,
          "Splat file (.ply, .compressed.ply, .spz, .splat, .ksplat, .spl2), glTF model, splat "
          "character package (its folder), neural generator (.onnx: time, view and projection inputs) or "
          "scene JSON of splat files and glTF models the page opens")
      ->required();
  command_->add_option("-o,--output", o.output, "Output folder (created; its page files are replaced)")
      ->required();
  command_->add_option("--web-build", o.web_build,
                       "Folder holding the page's WebAssembly (default: build/web of the source tree, made "
                       "by scripts/build_web.sh)");
}

bool ExportWebCommand::parsed() const {
  return command_->parsed();
}

ServeCommand::ServeCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand(
      "serve",
      "Serve a folder (export-web's output) over HTTP to look at it in a browser; runs until Ctrl-C");
  command_->add_option("dir", o.dir, "Folder to serve")->required();
  command_->add_option("--port", o.port, "TCP port (0: any free port; the line printed names it)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  command_->add_option("--bind", o.bind, "Address to listen on (IPv4; 0.0.0.0 for every interface)")
      ->capture_default_str();
  command_->add_flag("--quiet", o.quiet, "No line per request on stderr");
}

bool ServeCommand::parsed() const {
  return command_->parsed();
}

namespace {

// A command name the parser would not know (`splatforge rendr x.spz`, `splatforge hull bak`): the message
// names it and the nearest known one. Empty when every command word is known. The global options that take
// a value are skipped with their value.
std::string unknownCommand(const CLI::App& app, int argc, char** argv) {
  const CLI::App* at = &app;
  std::string path = "splatforge";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("-", 0) == 0) {
      const bool takes_value = arg == "--max-gaussians" || arg == "--max-memory" ||
                               arg == "--max-gpu-memory" || arg == "--spz-axes" || arg == "--gltf-axes";
      if (takes_value && at == &app) ++i;
      if (at != &app) break;  // a command's own options: its parser judges them
      continue;
    }
    const std::vector<const CLI::App*> subs = at->get_subcommands([](const CLI::App*) { return true; });
    if (subs.empty()) break;  // a command without commands of its own: this is its argument
    // A command with actions and an argument of its own (`batch MANIFEST`, `batch status MANIFEST`): a word
    // that is no action is its argument.
    const bool takes_argument =
        !at->get_options([](const CLI::Option* opt) { return opt->get_positional(); }).empty();
    if (takes_argument &&
        std::none_of(subs.begin(), subs.end(), [&](const CLI::App* s) { return s->get_name() == arg; }))
      break;
    const CLI::App* next = nullptr;
    std::string nearest;
    size_t best = 3;  // suggestions within two edits
    for (const CLI::App* s : subs) {
      if (s->get_name() == arg) next = s;
      const size_t d = editDistance(arg, s->get_name());
      if (d < best || (!arg.empty() && s->get_name().rfind(arg, 0) == 0 && nearest.empty()))
        best = std::min(best, d), nearest = s->get_name();
    }
    if (!next)
      return "unknown command '" + arg + "'" + (path == "splatforge" ? "" : " of " + path.substr(11)) +
             (nearest.empty() ? "" : ", did you mean '" + nearest + "'?") + " (see " + path + " --help)";
    at = next;
    path += " " + arg;
  }
  return {};
}

// The command being parsed when the parser stopped ("splatforge render"), for a pointer to its --help.
std::string parsedCommand(CLI::App& app) {
  std::string path = "splatforge";
  for (CLI::App* at = &app;;) {
    const std::vector<CLI::App*> subs = at->get_subcommands();
    if (subs.empty()) return path;
    at = subs.front();
    path += " " + at->get_name();
  }
}

// Options of every command (before or after its name): the load limits of untrusted files
// (docs/untrusted-input.md) and the axes of files that do not say theirs (docs/formats/interop.md).
void addEveryCommandOptions(CLI::App& app, LoadPolicyOptions& policy) {
  const sf::LoadLimits defaults = sf::defaultLoadLimits();
  app.add_option(
         "--max-gaussians", policy.max_gaussians,
         "Most gaussians one file may declare (default " + std::to_string(defaults.max_gaussians) + ")")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--max-memory", policy.max_memory,
                 "Most memory one file's load may take, e.g. 8G (default half the machine's memory: " +
                     sf::formatBytes(defaults.max_bytes) + ")");
  app.add_option("--max-gpu-memory", policy.max_gpu_memory,
                 "Most Vulkan memory the renderer may hold, e.g. 512M (default: the device's); a frame past "
                 "it fails naming its size "
                 "and the budget");
  // Axes of files that do not say (docs/formats/interop.md), for every command that reads or writes them.
  app.add_option(
         "--spz-axes", policy.spz_axes,
         "SPZ axes. auto: read the file's coordinate-system record, else RUB; write version 4 in PLY axes "
         "with "
         "a record, versions 2-3 in RUB. rub: RUB (with a record in version 4). raw: PLY axes, no record")
      ->check(CLI::IsMember({"auto", "rub", "raw"}))
      ->capture_default_str();
  app.add_option("--gltf-axes", policy.gltf_axes,
                 "glTF splat files, reading and writing: gltf (y up, turned to and from the PLY frame) or "
                 "raw (values as stored)")
      ->check(CLI::IsMember({"gltf", "raw"}))
      ->capture_default_str();
}

// Each command's help ends with a pointer to the options every command takes (listed once, by the top-level
// help).
void addEveryCommandFooter(CLI::App& app) {
  const char* kEveryCommand =
      "Options of every command (before or after its name): --max-gaussians N, --max-memory SIZE, "
      "--max-gpu-memory SIZE, "
      "--spz-axes auto|rub|raw, --gltf-axes gltf|raw (splatforge --help describes them)";
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    command->footer(kEveryCommand);
    for (CLI::App* action : command->get_subcommands([](CLI::App*) { return true; }))
      action->footer(kEveryCommand);
  }
}

// Parses the command line and applies the load policy. Returns -1 to go on to the command, else the exit
// code: 0 for --help and --version, 2 for a usage error (one line naming the command and where its options
// are listed).
int parse(CLI::App& app, int argc, char** argv, const LoadPolicyOptions& policy) {
  if (const std::string unknown = unknownCommand(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "splatforge: error: %s\n", unknown.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A usage error: one line naming the command, and where its options are listed; exit code 2.
    const std::string command = parsedCommand(app);
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", command.c_str(), e.what(), command.c_str());
    return 2;
  }
  try {
    applyLoadPolicy(policy);
  } catch (const std::exception& e) {  // a global option's value: a usage error of the command it came with
    const std::string command = parsedCommand(app);
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", command.c_str(), e.what(), command.c_str());
    return 2;
  }
  return -1;
}

}  // namespace

}  // namespace sf::cli

int main(int argc, char** argv) {
  using namespace sf::cli;
  CLI::App app{"splatforge: real-time dynamic Gaussian splatting engine, command-line tools"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("splatforge ") + SPLATFORGE_VERSION);
  app.fallthrough();  // the options below may follow the command's name
  LoadPolicyOptions policy;
  addEveryCommandOptions(app, policy);

  // Registered in the order --help lists them within their groups.
  InfoCommand info(app, policy);
  ValidateCommand validate(app);
  ConvertCommand convert(app, policy);
  RenderCommand render(app, policy);
  CharacterCommand character(app);
  BenchCharactersCommand bench_characters(app);
  AnimateCommand animate(app, policy);
  DemoCommand demo(app);
  DevicesCommand devices(app);
  BenchCommand bench(app);
  PoseCommand pose(app);
  BenchSkinCommand bench_skin(app);
  ViewCommand view(app);
  OnnxCommand onnx(app);
  HullCommand hull(app);
  ViewsCommand views(app);
  TrainCommand train(app);
  BatchCommand batch(app);
  SoakCommand soak(app);
  LodCommand lod(app);
  ExportWebCommand export_web(app);
  ServeCommand serve(app);

  // --help lists the commands by what they are for.
  const char* kViewGroup = "View and render";
  const char* kFormatsGroup = "Formats";
  const char* kCharactersGroup = "Characters and animation";
  const char* kNeuralGroup = "Neural";
  const char* kHullGroup = "Splat hulls";
  const char* kBenchGroup = "Benchmarks and devices";
  const char* kTrainGroup = "Training";
  const char* kBatchGroup = "Batches and clusters";
  const char* kLodGroup = "Level of detail";
  const char* kWebGroup = "Web page";
  struct Entry {
    CLI::App* command;
    const char* group;
    std::function<int()> run;
  };
  const std::vector<Entry> commands = {
      {info.command(), kFormatsGroup, [&] { return info.run(); }},
      {validate.command(), kFormatsGroup, [&] { return validate.run(); }},
      {convert.command(), kFormatsGroup, [&] { return convert.run(); }},
      {render.command(), kViewGroup, [&] { return render.run(); }},
      {animate.command(), kViewGroup, [&] { return animate.run(); }},
      {demo.command(), kViewGroup, [&] { return demo.run(); }},
      {view.command(), kViewGroup, [&] { return view.run(); }},
      {character.command(), kCharactersGroup, [&] { return character.run(); }},
      {pose.command(), kCharactersGroup, [&] { return pose.run(); }},
      {bench.command(), kBenchGroup, [&] { return bench.run(); }},
      {bench_characters.command(), kBenchGroup, [&] { return bench_characters.run(); }},
      {bench_skin.command(), kBenchGroup, [&] { return bench_skin.run(); }},
      {devices.command(), kBenchGroup, [&] { return devices.run(); }},
      {soak.command(), kBenchGroup, [&] { return soak.run(); }},
      {onnx.command(), kNeuralGroup, [&] { return onnx.run(); }},
      {hull.command(), kHullGroup, [&] { return hull.run(); }},
      {views.command(), kTrainGroup, [&] { return views.run(); }},
      {train.command(), kTrainGroup, [&] { return train.run(); }},
      {batch.command(), kBatchGroup, [&] { return batch.run(); }},
      {lod.command(), kLodGroup, [&] { return lod.run(); }},
      {export_web.command(), kWebGroup, [&] { return export_web.run(); }},
      {serve.command(), kWebGroup, [&] { return serve.run(); }},
  };
  for (const Entry& c : commands) c.command->group(c.group);
  addEveryCommandFooter(app);

  if (const int rc = parse(app, argc, argv, policy); rc >= 0) return rc;
  for (const Entry& c : commands)
    if (c.command->parsed()) return c.run();
  return 2;
}
