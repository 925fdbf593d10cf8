// splatforge: command-line front end. Argument parsing (CLI11) lives only in this file.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "commands.h"
#include "hull_command.h"
#include "onnx_command.h"
#include "train_command.h"
#include "view_command.h"
#include "views_command.h"
#include "core/limits.h"
#include "render/vulkan_renderer.h"

int main(int argc, char** argv) {
  using namespace sf::cli;
  CLI::App app{"splatforge: real-time dynamic Gaussian splatting engine, command-line tools"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("splatforge ") + SPLATFORGE_VERSION);
  app.fallthrough();  // the options below may follow the command's name

  // Limits for loading untrusted files, for every command (docs/untrusted-input.md).
  LoadPolicyOptions policy;
  const sf::LoadLimits defaults = sf::defaultLoadLimits();
  app.add_option("--max-gaussians", policy.max_gaussians,
                 "Most gaussians one file may declare (default " + std::to_string(defaults.max_gaussians) + ")")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--max-memory", policy.max_memory,
                 "Most memory one file's load may take, e.g. 8G (default half the machine's memory: " + sf::formatBytes(defaults.max_bytes) + ")");
  // Axes of files that do not say (docs/formats/interop.md), for every command that reads or writes them.
  app.add_option("--spz-axes", policy.spz_axes,
                 "SPZ axes. auto: read the file's coordinate-system record, else RUB; write version 4 in PLY axes with "
                 "a record, versions 2-3 in RUB. rub: RUB (with a record in version 4). raw: PLY axes, no record")
      ->check(CLI::IsMember({"auto", "rub", "raw"}))
      ->capture_default_str();
  app.add_option("--gltf-axes", policy.gltf_axes,
                 "glTF splat files, reading and writing: gltf (y up, turned to and from the PLY frame) or raw (values as stored)")
      ->check(CLI::IsMember({"gltf", "raw"}))
      ->capture_default_str();

  InfoOptions info;
  auto* c_info = app.add_subcommand("info", "Print a splat file's count, SH degree, format, bounds and memory");
  c_info->add_option("file", info.input, "Splat file (" + std::string(kReadFormats) + ")")->required();
  c_info->add_flag("--json", info.json, "Machine-readable JSON output");
  c_info->add_flag("--strict", policy.strict, "Refuse a file holding NaN or infinite values (default: drop those gaussians with a warning)");

  ConvertOptions conv;
  auto* c_conv = app.add_subcommand("convert", "Convert between splat formats (chosen by extension; atomic write)");
  c_conv->add_option("input", conv.input, "Input splat file (" + std::string(kReadFormats) + ")")->required();
  c_conv->add_option("-o,--output", conv.output, "Output file, format by extension: " + std::string(kWriteFormats));
  c_conv->add_option("out_file", conv.output_positional, "Output file (as -o; kept for older scripts)");
  c_conv->add_option("--spz-version", policy.spz_version, "SPZ version to write: 2, 3 or 4")->check(CLI::Range(2, 4))->capture_default_str();
  c_conv->add_flag("--strict", policy.strict,
                   "Refuse a file holding NaN or infinite values (default: drop those gaussians with a warning), and refuse a "
                   "conversion that loses information beyond the output format's quantisation (default: warn)");

  RenderOptions ren;
  auto* c_ren = app.add_subcommand("render", "Render a splat file, glTF/GLB model or scene JSON to a PNG");
  c_ren->add_option("input", ren.input, "Splat file (" + std::string(kReadFormats) + "), glTF model (.gltf .glb), character package or scene .json")->required();
  c_ren->add_option("-o,--output", ren.output, "Output PNG")->required();
  c_ren->add_option("--width", ren.width, "Image width (default " + std::to_string(kDefaultWidth) + ", or the camera's)")->check(CLI::Range(1, 16384));
  c_ren->add_option("--height", ren.height, "Image height (default " + std::to_string(kDefaultHeight) + ", or the camera's)")->check(CLI::Range(1, 16384));
  c_ren->add_option("--camera", ren.camera, "Camera JSON (intrinsics + world_to_camera, or look-at)");
  c_ren->add_option("--backend", ren.backend, "Renderer: auto (Vulkan when a device exists), vulkan or cpu")
      ->check(CLI::IsMember({"auto", "vulkan", "cpu"}))
      ->capture_default_str();
  c_ren->add_option("--device", ren.device, "Vulkan device: index or part of its name");
  c_ren->add_flag("--validation", ren.validation, "Enable Vulkan validation layers");
  c_ren->add_option("--bg", ren.background, "Background colour R,G,B in [0, 1] (default 0,0,0)");
  c_ren->add_option("--save-float", ren.save_float, "Also write the float RGBA image as .npy");
  c_ren->add_option("--save-depth", ren.save_depth,
                  "Also write a (height, width, 2) float .npy: expected splat depth sum(d*alpha*T) and transmittance T per pixel");
  c_ren->add_flag("--antialiased", ren.antialiased, "Antialiased mode (opacity compensation) for every object");
  c_ren->add_flag("--strict", ren.strict,
                  "Fail when a scene object cannot be loaded instead of drawing a placeholder, and refuse files holding NaN or "
                  "infinite values instead of dropping those gaussians");
  c_ren->add_flag("--allow-outside-paths", ren.allow_outside_paths,
                  "Scene JSON: let object paths be absolute or leave the scene's directory (only for scenes you trust)");
  c_ren->add_option("--clip", ren.clip, "glTF input: animation name or index (default: the first)");
  c_ren->add_option("--time", ren.time, "glTF input: seconds into the clip")->capture_default_str();
  c_ren->add_option("--hull-mode", ren.hull_mode, "Splat hulls: baked (opaque core octagons + shell in its heading order) or sorted (every splat in the global sort) for every hull")
      ->check(CLI::IsMember({"baked", "sorted"}));
  c_ren->add_option("--light", ren.light, "Splat hulls: the cel light on or off (default: the scene's, on)")->check(CLI::IsMember({"on", "off"}));

  CharacterOptions chr;
  auto* c_chr = app.add_subcommand("character", "Build, bind, preview and inspect splat characters; bake GNM head packs");
  c_chr->require_subcommand(1);
  auto* c_chr_build = c_chr->add_subcommand("build", "Sample (or, with --train, train) gaussians on a skinned glTF's surface and bind them");
  c_chr_build->add_option("--from-gltf", chr.from_gltf, "Skinned glTF / GLB")->required();
  c_chr_build->add_option("--splats,--budget", chr.splats, "Gaussians to sample (with --train: to train)")->check(CLI::Range(size_t{1}, size_t{50000000}))->capture_default_str();
  c_chr_build->add_option("--seed", chr.seed, "Sampling (and training) seed")->capture_default_str();
  c_chr_build->add_flag("--train", chr.train, "Train the gaussians first, in process, on views of the model at its rest pose rendered in memory (`splatforge train`), then bind them");
  c_chr_build->add_option("--train-steps", chr.train_steps, "--train: optimisation steps")->check(CLI::Range(1, 10000000))->capture_default_str();
  c_chr_build->add_option("--train-size", chr.train_size, "--train: view size in pixels")->check(CLI::Range(8, 8192))->capture_default_str();
  c_chr_build->add_option("--train-views", chr.train_views, "--train: train views")->check(CLI::Range(1, 10000))->capture_default_str();
  c_chr_build->add_option("--train-backend", chr.train_backend, "--train: auto, cpu or vulkan (as `splatforge train --backend`)")
      ->check(CLI::IsMember({"auto", "cpu", "vulkan"}))
      ->capture_default_str();
  c_chr_build->add_option("-o,--output", chr.output, "Package directory")->required();
  auto* c_chr_bind = c_chr->add_subcommand("bind", "Bind a trained splat PLY to the surface of its skinned mesh");
  c_chr_bind->add_option("--splats", chr.splat_file, "Splat file in the skin's bind-pose mesh space")->required();
  c_chr_bind->add_option("--skin", chr.skin, "Skinned glTF / GLB")->required();
  c_chr_bind->add_option("-o,--output", chr.output, "Package directory")->required();
  c_chr_bind->add_flag("--per-vertex", chr.per_vertex, "Row i of the splat file belongs to vertex i of the skin (LAM avatars); its xyz is an offset");
  c_chr_bind->add_option("--offset-scale", chr.offset_scale, "With --per-vertex: centre = vertex + scale * xyz (docs/formats/character.md)")
      ->capture_default_str();
  c_chr_bind->add_option("--clips", chr.clips, "glTF whose animations are retargeted onto the skin by joint name (LAM: animation.glb)");
  c_chr_build->add_option("--clips", chr.clips, "glTF whose animations are retargeted onto the skin by joint name");
  c_chr_bind->add_flag("--rgb-colors", chr.rgb_colors, "The file's f_dc_0..2 are plain RGB in [0, 1], not SH coefficients (LAM avatars)");
  auto* c_chr_prev = c_chr->add_subcommand(
      "preview", "Rig preview: a small gaussian per rig vertex, tinted: a character package (--skin) or a splat file of the posed GNM pack (--pack)");
  auto* o_prev_skin = c_chr_prev->add_option("--skin", chr.skin, "Skinned glTF / GLB");
  c_chr_prev->add_option("--pack", chr.pack, "GNM pack (.sfgnm, docs/formats/gnm-pack.md), posed at zero controls")->excludes(o_prev_skin);
  c_chr_prev->add_option("--tint", chr.tint, "joint (dominant joint; eye joints in cyan), uv, height or normal (radial pseudo-normal)")
      ->check(CLI::IsMember({"joint", "uv", "height", "normal"}))
      ->capture_default_str();
  c_chr_prev->add_option("--sigma", chr.sigma, "Gaussian standard deviation in metres")->check(CLI::PositiveNumber)->capture_default_str();
  c_chr_prev->add_option("-o,--output", chr.output, "Package directory (--skin), or splat file by extension, e.g. .ply (--pack)")->required();
  auto* c_chr_gnm = c_chr->add_subcommand("gnm-pack", "Bake a skinned glTF's head (morph targets, skin, eye joints; its eyeballs bound to them) into a GNM pack");
  c_chr_gnm->add_option("skin", chr.skin, "Skinned glTF / GLB (e.g. the LAM avatar's skin.glb)")->required();
  c_chr_gnm->add_option("-o,--output", chr.output, "Pack file (.sfgnm)")->required();
  c_chr_gnm->add_option("--eyes", chr.eyes, "Eye joint names LEFT,RIGHT (default: joints named like lEye / rEye, see docs/formats/gnm-pack.md)");
  auto* c_chr_info = c_chr->add_subcommand("info", "Describe a character package (counts, skin, expressions, clips, memory)");
  c_chr_info->add_option("package", chr.input, "Package directory")->required();
  c_chr_info->add_flag("--json", chr.json, "Machine-readable JSON output");

  BenchCharactersOptions bch;
  auto* c_bch = app.add_subcommand("bench-characters", "Benchmark a crowd of animated splat characters on Vulkan (GPU deform pass)");
  c_bch->add_option("package", bch.package, "Character package or decoder character bundle directory")->required();
  c_bch->add_option("--count", bch.count, "Characters in the crowd")->check(CLI::Range(size_t{1}, size_t{10000}))->capture_default_str();
  c_bch->add_option("--width", bch.width, "Render width")->check(CLI::Range(1, 16384))->capture_default_str();
  c_bch->add_option("--height", bch.height, "Render height")->check(CLI::Range(1, 16384))->capture_default_str();
  c_bch->add_option("--frames", bch.frames, "Timed frames; the median is reported")->check(CLI::Range(1, 10000))->capture_default_str();
  c_bch->add_option("--device", bch.device, "Vulkan device: index or part of its name");
  c_bch->add_flag("--validation", bch.validation, "Enable Vulkan validation layers");
  c_bch->add_flag("--json", bch.json, "Print the results as JSON to stdout (other output goes to stderr)");
  c_bch->add_option("--json-out", bch.json_out, "Also write the results as JSON to this file");

  AnimateOptions ani;
  auto* c_ani = app.add_subcommand("animate", "Render a scene over time to PNG frames or an MP4 (through ffmpeg)");
  c_ani->add_option("input", ani.input, "Scene .json, glTF model (.gltf .glb) or splat file")->required();
  c_ani->add_option("-o,--output", ani.output, "Frame pattern with one %0Nd field (frames/%04d.png), or a .mp4 file")->capture_default_str();
  c_ani->add_option("--fps", ani.fps, "Frames per second")->capture_default_str();
  c_ani->add_option("--duration", ani.duration, "Seconds of scene time to render")->capture_default_str();
  c_ani->add_option("--orbit", ani.orbit_deg, "Turn the camera this many degrees about the vertical axis through the scene's centre over the animation (a moving camera)");
  c_ani->add_option("--start", ani.start, "Scene time of the first frame, in seconds")->capture_default_str();
  c_ani->add_option("--width", ani.width, "Image width (default " + std::to_string(kDefaultWidth) + ", or the camera's)")->check(CLI::Range(1, 16384));
  c_ani->add_option("--height", ani.height, "Image height (default " + std::to_string(kDefaultHeight) + ", or the camera's)")->check(CLI::Range(1, 16384));
  c_ani->add_option("--camera", ani.camera, "Camera JSON (intrinsics + world_to_camera, or look-at)");
  c_ani->add_option("--clip", ani.clip, "glTF input: animation name or index (default: the first)");
  c_ani->add_option("--hull-mode", ani.hull_mode, "Splat hulls: baked or sorted for every hull (as for render)")->check(CLI::IsMember({"baked", "sorted"}));
  c_ani->add_option("--light", ani.light, "Splat hulls: the cel light on or off")->check(CLI::IsMember({"on", "off"}));
  c_ani->add_option("--backend", ani.backend, "Renderer: auto (Vulkan when a device exists), vulkan or cpu")
      ->check(CLI::IsMember({"auto", "vulkan", "cpu"}))
      ->capture_default_str();
  c_ani->add_option("--device", ani.device, "Vulkan device: index or part of its name");
  c_ani->add_flag("--validation", ani.validation, "Enable Vulkan validation layers");
  c_ani->add_option("--bg", ani.background, "Background colour R,G,B in [0, 1] (default 0,0,0)");
  c_ani->add_flag("--strict", ani.strict,
                  "Fail when a scene object cannot be loaded instead of drawing a placeholder, and refuse files holding NaN or "
                  "infinite values instead of dropping those gaussians");
  c_ani->add_flag("--allow-outside-paths", ani.allow_outside_paths,
                  "Scene JSON: let object paths be absolute or leave the scene's directory (only for scenes you trust)");

  DemoOptions demo;
  auto* c_demo = app.add_subcommand("demo", "Render the built-in procedural demo scene");
  c_demo->add_option("-o,--output", demo.output, "Output PNG")->capture_default_str();
  c_demo->add_option("--width", demo.width, "Image width")->check(CLI::Range(1, 16384))->capture_default_str();
  c_demo->add_option("--height", demo.height, "Image height")->check(CLI::Range(1, 16384))->capture_default_str();
  c_demo->add_option("--save-float", demo.save_float, "Also write the float RGBA image as .npy");
  c_demo->add_option("--save-depth", demo.save_depth,
                  "Also write a (height, width, 2) float .npy: expected splat depth sum(d*alpha*T) and transmittance T per pixel");
  c_demo->add_option("--backend", demo.backend, "Renderer: auto (Vulkan when a device exists), vulkan or cpu")
      ->check(CLI::IsMember({"auto", "vulkan", "cpu"}))
      ->capture_default_str();
  c_demo->add_option("--device", demo.device, "Vulkan device: index or part of its name");
  c_demo->add_flag("--validation", demo.validation, "Enable Vulkan validation layers");

  DevicesOptions dev;
  auto* c_dev = app.add_subcommand("devices", "List the Vulkan loader, devices with their drivers, and instance layers");
  c_dev->add_flag("--json", dev.json, "Machine-readable JSON output");

  BenchOptions bench;
  auto* c_bench = app.add_subcommand("bench", "Benchmark rendering (per-pass GPU times) and, with --loads, file loading");
  c_bench->add_option("input", bench.input, "Splat file, scene .json or neural generator .onnx (run every frame, in the frame on Vulkan; default: the biker capture in the assets directory)");
  c_bench->add_option("--assets", bench.assets, "Assets directory (default $SPLATFORGE_ASSETS or ../shared/assets)");
  c_bench->add_option("--synthetic", bench.synthetic, "Use a synthetic capture-like cloud of N gaussians")->check(CLI::Range(size_t{1}, size_t{200000000}));
  c_bench->add_option("--copies", bench.copies, "Tile N copies of the input, each its own object")->check(CLI::Range(1, 10000))->capture_default_str();
  c_bench->add_option("--sh-degree", bench.sh_degree, "Raise the SH degree to D (0..3)")->check(CLI::Range(0, 3));
  c_bench->add_option("--backend", bench.backend, "Renderer: auto, vulkan or cpu")->check(CLI::IsMember({"auto", "vulkan", "cpu"}))->capture_default_str();
  c_bench->add_option("--device", bench.device, "Vulkan device: index or part of its name");
  c_bench->add_flag("--validation", bench.validation, "Enable Vulkan validation layers");
  c_bench->add_option("--width", bench.width, "Render width")->check(CLI::Range(1, 16384))->capture_default_str();
  c_bench->add_option("--height", bench.height, "Render height")->check(CLI::Range(1, 16384))->capture_default_str();
  c_bench->add_option("--camera", bench.camera, "Camera JSON, as render --camera (default: framed automatically); its size unless --width/--height");
  c_bench->add_option("--save-scene", bench.save_scene, "Also write the scene as one world-space splat file (" + std::string(kWriteFormats) + ") to time it elsewhere");
  c_bench->add_flag("--show-graph", bench.show_graph, "Vulkan: print the frame graph (passes, what each reads and writes, barriers)");
  c_bench->add_option("--frames", bench.frames, "Timed frames; the median is reported")->check(CLI::Range(1, 10000))->capture_default_str();
  c_bench->add_option("--back-to-back", bench.back_to_back,
                      "Vulkan: also record the last frame N times (1.." + std::to_string(sf::kMaxFramesPerSubmission) +
                          ") in one submission and report its medians (a GPU that never waits on the host)")
      ->check(CLI::Range(1, sf::kMaxFramesPerSubmission));
  c_bench->add_flag("--loads", bench.loads, "Also measure load throughput (MB/s) of biker.ply, biker.compressed.ply and biker.spz");
  c_bench->add_flag("--json", bench.json, "Print the results as JSON to stdout (other output goes to stderr)");
  c_bench->add_option("--json-out", bench.json_out, "Also write the results as JSON to this file");
  c_bench->add_flag("--allow-outside-paths", bench.allow_outside_paths,
                    "Scene JSON input: let object paths be absolute or leave the scene's directory");

  PoseOptions pose;
  auto* c_pose = app.add_subcommand("pose", "Print a glTF file's joint world matrices and mesh bounds at one time of a clip");
  c_pose->add_option("file", pose.input, "glTF file (.gltf or .glb)")->required();
  c_pose->add_option("--clip", pose.clip, "Animation name or index (default: the first; the rest pose when there is none)");
  c_pose->add_option("--time", pose.time, "Time in seconds (clamped to the clip's keys)")->capture_default_str();
  c_pose->add_flag("--json", pose.json, "Machine-readable JSON output");

  BenchSkinOptions bskin;
  auto* c_bskin = app.add_subcommand("bench-skin", "Benchmark a crowd of GPU-skinned instances of an animated glTF mesh");
  c_bskin->add_option("file", bskin.input, "glTF/GLB with a skin and an animation")->required();
  c_bskin->add_option("--instances", bskin.instances, "Animated instances")->check(CLI::Range(size_t{1}, size_t{65535}))->capture_default_str();
  c_bskin->add_option("--frames", bskin.frames, "Timed frames; the median is reported")->check(CLI::Range(1, 10000))->capture_default_str();
  c_bskin->add_option("--method", bskin.method, "Skinning: lbs (linear blend) or dqs (dual quaternion)")
      ->check(CLI::IsMember({"lbs", "dqs"}))
      ->capture_default_str();
  c_bskin->add_option("--device", bskin.device, "Vulkan device: index or part of its name");
  c_bskin->add_flag("--validation", bskin.validation, "Enable Vulkan validation layers");
  c_bskin->add_flag("--json", bskin.json, "Print the results as JSON to stdout (other output goes to stderr)");
  c_bskin->add_option("--json-out", bskin.json_out, "Also write the results as JSON to this file");

  ViewCommand view(app);  // splatforge view: options in view_command.cpp
  OnnxCommand onnx(app);  // splatforge onnx info|run: options in onnx_command.cpp
  HullCommand hull(app);  // splatforge hull bake|info|play|bench: options in hull_command.cpp
  ViewsCommand views(app);  // splatforge views: options in views_command.cpp
  TrainCommand train(app);  // splatforge train: options in train_command.cpp

  // --help lists the commands by what they are for.
  const char* kViewGroup = "View and render";
  const char* kFormatsGroup = "Formats";
  const char* kCharactersGroup = "Characters and animation";
  const char* kNeuralGroup = "Neural";
  const char* kHullGroup = "Splat hulls";
  const char* kBenchGroup = "Benchmarks and devices";
  const char* kTrainGroup = "Training";
  for (auto [command, group] : std::initializer_list<std::pair<CLI::App*, const char*>>{
           {c_ren, kViewGroup}, {c_ani, kViewGroup}, {c_demo, kViewGroup}, {c_info, kFormatsGroup}, {c_conv, kFormatsGroup},
           {c_chr, kCharactersGroup}, {c_pose, kCharactersGroup}, {c_bench, kBenchGroup}, {c_bch, kBenchGroup},
           {c_bskin, kBenchGroup}, {c_dev, kBenchGroup}, {onnx.command(), kNeuralGroup}, {hull.command(), kHullGroup},
           {views.command(), kTrainGroup}, {train.command(), kTrainGroup}})
    command->group(group);
  app.get_subcommand("view")->group(kViewGroup);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A usage error: one line, exit code 2.
    std::fprintf(stderr, "splatforge: error: %s (see splatforge --help)\n", e.what());
    return 2;
  }
  policy.strict = policy.strict || ren.strict || ani.strict;
  try {
    applyLoadPolicy(policy);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "splatforge: error: %s\n", e.what());
    return 2;
  }
  if (c_info->parsed()) return runInfo(info);
  if (c_conv->parsed()) {
    conv.strict = policy.strict;
    return runConvert(conv);
  }
  if (c_ren->parsed()) return runRender(ren);
  if (c_demo->parsed()) return runDemo(demo);
  if (c_bench->parsed()) {
    bench.width_given = c_bench->count("--width") > 0;
    bench.height_given = c_bench->count("--height") > 0;
    return runBench(bench);
  }
  if (c_dev->parsed()) return runDevices(dev);
  if (c_bskin->parsed()) return runBenchSkin(bskin);
  if (c_pose->parsed()) return runPose(pose);
  if (c_ani->parsed()) return runAnimate(ani);
  if (c_bch->parsed()) return runBenchCharacters(bch);
  if (view.parsed()) return view.run();
  if (onnx.parsed()) return onnx.run();
  if (hull.parsed()) return hull.run();
  if (views.parsed()) return views.run();
  if (train.parsed()) return train.run();
  if (c_chr->parsed()) {
    chr.action = c_chr_build->parsed()  ? "build"
                 : c_chr_bind->parsed() ? "bind"
                 : c_chr_prev->parsed() ? "preview"
                 : c_chr_gnm->parsed()  ? "gnm-pack"
                                        : "info";
    return runCharacter(chr);
  }
  return 2;
}
