#include "hull_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "hull/bake.h"
#include "hull/hull_render.h"
#include "io/file.h"
#include "io/spl2.h"

namespace sf::cli {

struct HullCommand::Options {
  std::string input;   // bake: the glTF model; info: the SPL2 file
  std::string output;  // bake: the SPL2 file (the meta sidecar beside it)
  std::string belt = "32,50";
  bool json = false;
  hull::BakeOptions bake;
};

namespace {

int fail(const std::string& message) {
  fmt::print(stderr, "splatforge hull: error: {}\n", message);
  return 1;
}

void parseBelt(const std::string& text, hull::BakeOptions& o) {
  float lo = 0, hi = 0;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%f,%f%c", &lo, &hi, &extra) != 2 || !(lo < hi) || lo < -90 || hi > 90)
    throw Error("--belt '" + text + "': expected MIN,MAX in degrees with -90 <= MIN < MAX <= 90");
  o.belt_min = lo, o.belt_max = hi;
}

int runBake(HullCommand::Options& o) {
  if (std::filesystem::path(o.output).extension() != ".spl2") return fail("-o must name a .spl2 file, got '" + o.output + "'");
  parseBelt(o.belt, o.bake);
  if (!o.json) o.bake.progress = [](const std::string& line) { fmt::print(stderr, "  {}\n", line); };
  if (!o.json) fmt::print(stderr, "baking {} (budget {}{})\n", o.input, o.bake.budget, o.bake.splats.empty() ? ", sampled" : ", splats " + o.bake.splats);
  hull::BakeResult r = hull::bakeHull(o.input, o.bake);
  const std::string meta = hull::hullMetaPath(o.output);
  saveSpl2(r.hull, o.output);
  writeFileAtomic(meta, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(r.meta_json.data()), r.meta_json.size()));
  const hull::BakeReport& b = r.report;
  if (o.json) {
    fmt::print("{}", r.meta_json);
    return 0;
  }
  fmt::print("wrote {} ({:.1f} KB: {} core + {} shell, {} chunks, {} parts) and {}\n", o.output, static_cast<double>(b.bytes) / 1024.0, b.core,
             b.shell, b.chunks, b.parts, meta);
  fmt::print("winding: {} of {} components flipped ({:.1f}% of faces); {:.1f}% of splats snapped to a repaired face (normal flipped)\n", b.flipped_components,
             b.components, 100.0 * b.flipped_face_share, 100.0 * b.flipped_splat_share);
  fmt::print("floaters: {} by distance, {} detached, {} outside a silhouette (distance p50 {:.4f}, p99 {:.4f}); {} belly-culled, {} over "
             "the budget\n",
             b.floaters_distance, b.floaters_connectivity, b.floaters_silhouette, b.distance_p50, b.distance_p99, b.belly_culled, b.over_budget);
  fmt::print("time: {:.2f} s\n", b.seconds);
  return 0;
}

int runInfo(const HullCommand::Options& o) {
  const std::vector<uint8_t> bytes = readFile(o.input);
  const Spl2Hull h = decodeSpl2(bytes, o.input);
  size_t emissive = 0, parts[8] = {};
  auto count = [&](const Spl2Block& b) {
    for (const auto& a : b.attrs) {
      const int packed = static_cast<int>(a[1]);
      emissive += packed % 16 > 0;
      parts[packed / 16 % 8]++;
    }
  };
  count(h.core);
  count(h.shell);
  size_t materials[kSpl2Materials] = {};
  for (uint8_t m : h.material_of) materials[m < kSpl2Materials ? m : 0]++;
  if (o.json) {
    std::string file;  // a JSON string's contents
    for (char ch : o.input) {
      if (ch == '"' || ch == '\\') file += '\\';
      if (static_cast<unsigned char>(ch) < 0x20) file += fmt::format("\\u{:04x}", static_cast<int>(ch));
      else file += ch;
    }
    fmt::print("{{\"file\": \"{}\", \"bytes\": {}, \"core\": {}, \"shell\": {}, \"buckets\": {}, \"chunks\": {}, \"emissive\": {}}}\n", file,
               bytes.size(), h.core.size(), h.shell.size(), h.orders.size(), h.has_chunks ? h.chunks.size() : 0, emissive);
    return 0;
  }
  fmt::print("{}: SPL2 splat hull, {:.1f} KB\n", o.input, static_cast<double>(bytes.size()) / 1024.0);
  fmt::print("splats: {} core (opaque octagons), {} shell (sorted gaussians), {} shell orders\n", h.core.size(), h.shell.size(), h.orders.size());
  fmt::print("emissive: {}; parts:", emissive);
  for (int p = 0; p < 8; ++p)
    if (parts[p]) fmt::print(" {}={}", p, parts[p]);
  fmt::print("\n");
  if (h.has_chunks) {
    fmt::print("CHNK: {} chunks; materials:", h.chunks.size());
    for (int m = 0; m < kSpl2Materials; ++m)
      if (materials[m]) fmt::print(" {}={}", spl2MaterialName(m), materials[m]);
    fmt::print("\n");
  } else {
    fmt::print("CHNK: none\n");
  }
  const std::string meta = hull::hullMetaPath(o.input);
  if (std::filesystem::exists(meta)) fmt::print("meta: {}\n", meta);
  return 0;
}

}  // namespace

HullCommand::HullCommand(CLI::App& app) : options_(std::make_unique<Options>()) {
  Options& o = *options_;
  command_ = app.add_subcommand("hull", "Bake splat hulls (SPL2) from glTF models and inspect them");
  command_->require_subcommand(1);
  bake_ = command_->add_subcommand("bake", "Bake a splat hull from a glTF/GLB model (and optionally a trained splat file of it)");
  bake_->add_option("model", o.input, "glTF / GLB model")->required();
  bake_->add_option("-o,--output", o.output, "Output .spl2 (its meta sidecar is written beside it as NAME.meta.json)")->required();
  bake_->add_option("--splats", o.bake.splats, "A trained splat file of the model (default: sample the mesh surface)");
  bake_->add_flag("--splats-source-frame", o.bake.splats_in_source_frame,
                  "The --splats file is in the model's own frame (default: the hull frame, the model normalised into the 1.6 cube)");
  bake_->add_option("--budget", o.bake.budget, "Most splats in the hull")->capture_default_str();
  bake_->add_option("--clip", o.bake.clip, "Pose the model at this animation (name or index; default: the rest pose)");
  bake_->add_option("--time", o.bake.time, "Clip time in seconds")->capture_default_str();
  bake_->add_option("--belt", o.belt, "Camera elevation belt MIN,MAX in degrees (belly cull, silhouettes, shell orders)")->capture_default_str();
  bake_->add_option("--ao-rays", o.bake.ao_rays, "Ambient-occlusion rays per splat")->capture_default_str();
  bake_->add_option("--materials", o.bake.materials, "Material recipe: mech, organic, or a JSON file")->capture_default_str();
  bake_->add_option("--chunk-size", o.bake.chunk_size, "Splats per chunk, about")->capture_default_str();
  bake_->add_option("--points", o.bake.points, "Named points for the meta sidecar: nodes whose name contains one of these '|'-separated words (any case)")
      ->capture_default_str();
  bake_->add_option("--seed", o.bake.seed, "Random seed (sampling, chunks, per-splat random byte)")->capture_default_str();
  bake_->add_flag("--json", o.json, "Print the meta sidecar (with the bake report) to stdout instead of the summary");
  info_ = command_->add_subcommand("info", "Describe an SPL2 hull: core and shell counts, orders, parts, emission, chunks and materials");
  info_->add_option("file", o.input, "SPL2 file")->required();
  info_->add_flag("--json", o.json, "Print JSON to stdout");
}

HullCommand::~HullCommand() = default;

bool HullCommand::parsed() const { return command_->parsed(); }

int HullCommand::run() const {
  try {
    if (info_->parsed()) return runInfo(*options_);
    return runBake(*options_);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace sf::cli
