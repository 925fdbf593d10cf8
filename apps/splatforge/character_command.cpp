#include "character_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "anim/clip.h"
#include "character/bundle.h"
#include "character/bundle_character.h"
#include "character/character.h"
#include "character/corrective.h"
#include "character/expression.h"
#include "character/gnm_pack.h"
#include "character/rig.h"
#include "commands.h"
#include "core/error.h"
#include "core/gaussian_cloud.h"
#include "io/file.h"
#include "io/formats.h"
#include "model/gltf_model.h"
#include "render/vulkan_renderer.h"
#include "train/trainer.h"
#include "train/views.h"
#include "train_command.h"

namespace sf::cli {

namespace {

std::string matrixJson(const Mat4& m) {
  return fmt::format("[[{}, {}, {}, {}], [{}, {}, {}, {}], [{}, {}, {}, {}], [{}, {}, {}, {}]]", m.m[0][0],
                     m.m[0][1], m.m[0][2], m.m[0][3], m.m[1][0], m.m[1][1], m.m[1][2], m.m[1][3], m.m[2][0],
                     m.m[2][1], m.m[2][2], m.m[2][3], m.m[3][0], m.m[3][1], m.m[3][2], m.m[3][3]);
}

std::string matrixText(const Mat4& m) {
  return fmt::format(
      "[{: .4f} {: .4f} {: .4f} {: .4f} | {: .4f} {: .4f} {: .4f} {: .4f} | {: .4f} {: .4f} {: .4f} {: .4f}]",
      m.m[0][0], m.m[0][1], m.m[0][2], m.m[0][3], m.m[1][0], m.m[1][1], m.m[1][2], m.m[1][3], m.m[2][0],
      m.m[2][1], m.m[2][2], m.m[2][3]);
}

// Bytes a character occupies on the GPU: its splat slots (inputs and per-slot preprocess outputs of the
// frame's sink) and its per-frame override staging.
size_t characterGpuBytes(const character::Character& c) {
  const size_t slot = 12 + 24 + 4 + static_cast<size_t>(c.splats().shStride()) * 4  // sink inputs
                      + 8 + 16 + 16 + 8 + 4 + 4 + 4;                                // preprocess outputs
  return c.splats().size() * (slot + 12 + 24);
}

// `character info BUNDLE`: a decoder character's layout, rig, expression space and per-branch memory.
int bundleInfo(const CharacterCommand::Options& o) {
  const character::BundleCharacter c(character::loadCharacterBundle(character::directoryResolver(o.input)));
  const character::CharacterBundle& b = c.bundle();
  const std::vector<character::BranchMemory> mem = c.memoryReport();
  uint64_t resident = 0, gpu = 0, decoders = 0;
  for (const character::BranchMemory& m : mem)
    resident += m.resident_bytes, gpu += m.gpu_bytes, decoders += m.decoder_bytes;
  if (o.json) {
    fmt::print("{{\n  \"bundle\": \"{}\",\n  \"layout\": \"{}\",\n  \"mode\": \"{}\",\n", jsonEscape(o.input),
               b.layout, b.mode);
    fmt::print(
        "  \"rig\": {{\"backend\": \"{}\", \"declared\": {}, \"pack\": \"{}\", \"controls\": {}, "
        "\"vertices\": {}}},\n",
        b.rig.backend, b.rig.declared, jsonEscape(b.rig.pack), c.rig().controlNames().size(),
        c.rig().vertexCount());
    fmt::print(
        "  \"expression_space\": {{\"kind\": \"{}\", \"dim\": {}, \"declared\": {}}},\n  \"branches\": [\n",
        b.expression_space.kind, b.expression_space.dim, b.expression_space.declared);
    for (size_t i = 0; i < b.branches.size(); ++i) {
      const character::BundleBranch& br = b.branches[i];
      const character::BranchMemory& m = mem[i];
      fmt::print(
          "    {{\"name\": \"{}\", \"uv_resolution\": {}, \"trunk\": {}, \"static_geometry\": {}, "
          "\"gaze_conditioned\": {}, \"slots\": {}, "
          "\"decoder_bytes\": {}, \"resident_bytes\": {}, \"gpu_bytes\": {}}}{}\n",
          br.name, br.uv_resolution, !br.trunk.empty(), br.static_geometry, br.gaze_conditioned, m.slots,
          m.decoder_bytes, m.resident_bytes, m.gpu_bytes, i + 1 < b.branches.size() ? "," : "");
    }
    fmt::print(
        "  ],\n  \"memory\": {{\"resident_bytes\": {}, \"gpu_bytes\": {}, \"decoder_bytes\": {}, \"slots\": "
        "{}, \"bytes_per_gaussian\": {}}}\n}}\n",
        resident, gpu, decoders, c.size(), character::kSlotBytes);
    return 0;
  }
  fmt::print("bundle:      {} ({}, mode {})\n", o.input, b.layout, b.mode);
  fmt::print("rig:         {}{}: {} controls, {} vertices{}\n", b.rig.backend,
             b.rig.declared ? "" : " (default)", c.rig().controlNames().size(), c.rig().vertexCount(),
             b.rig.pack.empty() ? "" : " (" + b.rig.pack + ")");
  fmt::print("expressions: {} ({} values){}\n", b.expression_space.kind, b.expression_space.dim,
             b.expression_space.declared ? "" : " (default)");
  fmt::print("branches:    {}\n", b.branches.size());
  for (size_t i = 0; i < b.branches.size(); ++i) {
    const character::BundleBranch& br = b.branches[i];
    const character::BranchMemory& m = mem[i];
    fmt::print("  {:<10} {}x{} texels = {} slots; decoders {}{}{} ({:.2f} MB); mesh {}{}{}\n", br.name,
               br.uv_resolution, br.uv_resolution, m.slots, br.geom, br.trunk.empty() ? "" : " + " + br.trunk,
               " + " + br.appr, static_cast<double>(m.decoder_bytes) / 1e6,
               br.mesh_glb.empty() ? br.mesh_bin : br.mesh_glb, br.static_geometry ? ", static geometry" : "",
               br.gaze_conditioned ? ", gaze-conditioned" : "");
    fmt::print("  {:<10} memory: resident {:.2f} MB, GPU {:.2f} MB\n", "",
               static_cast<double>(m.resident_bytes) / 1e6, static_cast<double>(m.gpu_bytes) / 1e6);
  }
  fmt::print(
      "memory:      resident {:.2f} MB (decoders {:.2f} MB), GPU {:.2f} MB, {} slots at {} bytes per "
      "gaussian "
      "(centre 12, covariance 24, opacity 4, colour 12: the document's 52)\n",
      static_cast<double>(resident) / 1e6, static_cast<double>(decoders) / 1e6,
      static_cast<double>(gpu) / 1e6, c.size(), character::kSlotBytes);
  return 0;
}

int characterInfo(const CharacterCommand::Options& o) {
  if (character::isCharacterBundle(*character::directoryResolver(o.input))) return bundleInfo(o);
  const character::Character c = character::Character::loadPackage(o.input);
  character::Character::Frame f;
  c.pose(-1, 0.0f, f);  // for the skin's joint count
  size_t triangle_bound = 0, joint_bound = 0;
  for (const character::SplatBinding& b : c.bindings())
    (b.kind == character::BindingKind::kTriangle ? triangle_bound : joint_bound)++;
  const GltfModel& m = c.model();
  const GltfModel::DrawInfo d = m.drawInfo(static_cast<size_t>(c.boundDraw()));
  const GltfPrimitive& prim = m.primitiveOf(static_cast<size_t>(c.boundDraw()));
  const size_t targets = prim.targets.size();
  if (o.json) {
    fmt::print(
        "{{\n  \"package\": \"{}\",\n  \"splats\": {},\n  \"sh_degree\": {},\n  \"bindings\": "
        "{{\"triangle\": {}, \"joints\": {}}},\n",
        jsonEscape(o.input), c.splats().size(), c.splats().sh_degree, triangle_bound, joint_bound);
    fmt::print(
        "  \"skin\": {{\"file\": \"{}\", \"node\": {}, \"mesh\": {}, \"primitive\": {}, \"vertices\": {}, "
        "\"morph_targets\": {}, "
        "\"joints\": {}}},\n",
        jsonEscape(m.document().path), d.node, d.mesh, d.primitive, prim.positions.size(), targets,
        d.skin >= 0 ? f.pose.palettes[static_cast<size_t>(d.skin)].size() : 0);
    fmt::print("  \"expression_space\": \"{}\",\n  \"default_clip\": \"{}\",\n  \"clips\": {},\n",
               c.expressionSpace(), jsonEscape(c.defaultClip()), m.clips().size());
    fmt::print("  {},\n", character::describeParts(c, true));
    fmt::print("  \"memory\": {{\"resident_bytes\": {}, \"gpu_bytes\": {}, \"slots\": {}}}\n}}\n",
               c.residentBytes(), characterGpuBytes(c), c.splats().size());
    return 0;
  }
  fmt::print("package:     {}\n", o.input);
  fmt::print("splats:      {} (SH degree {}), {} bound to triangles, {} to joints\n", c.splats().size(),
             c.splats().sh_degree, triangle_bound, joint_bound);
  fmt::print("skin:        {} node {} meshes[{}].primitives[{}]: {} vertices, {} morph targets\n",
             m.document().path, d.node, d.mesh, d.primitive, prim.positions.size(), targets);
  fmt::print("expressions: {}\n", c.expressionSpace());
  fmt::print("clips:       {}{}\n", m.clips().size(), m.clips().empty() ? "" : " (" + m.clipList() + ")");
  fmt::print("default:     {}\n", c.defaultClip().empty() ? "rest pose" : c.defaultClip());
  fmt::print("{}", character::describeParts(c, false));  // mouth, teeth, corrective: counts, drives at rest
  fmt::print("memory:      resident {:.2f} MB, GPU {:.2f} MB, {} slots (body part: all splats)\n",
             static_cast<double>(c.residentBytes()) / 1e6, static_cast<double>(characterGpuBytes(c)) / 1e6,
             c.splats().size());
  return 0;
}

// `character gnm-pack SKIN -o PACK [--eyes L,R]`: a GNM pack from a skinned glTF (character/gnm_pack.h).
int characterGnmPack(const CharacterCommand::Options& o) {
  auto t0 = Clock::now();
  character::GnmFromGltfOptions go;
  if (!o.eyes.empty()) {
    const size_t comma = o.eyes.find(',');
    if (comma == std::string::npos || comma == 0 || comma + 1 == o.eyes.size() ||
        o.eyes.find(',', comma + 1) != std::string::npos)
      return reportUsage("character gnm-pack",
                         "--eyes takes two joint names, LEFT,RIGHT; got '" + o.eyes + "'");
    go.left_eye = o.eyes.substr(0, comma);
    go.right_eye = o.eyes.substr(comma + 1);
  }
  progress("baking a GNM pack from " + o.skin);
  const GltfModel model(o.skin);
  const character::GnmPack pack = character::fromSkinnedGltf(model, go);
  const std::vector<uint8_t> bytes = character::encodeGnmPack(pack);
  writeFileAtomic(o.output, bytes);
  size_t arkit_names = 0;
  for (size_t k = 0; k < pack.basisCount(); ++k)
    arkit_names += character::arkitIndex(pack.control_names[k]) >= 0;
  const Vec3 lift = pack.bind_transform.translation();
  fmt::print(
      "wrote {} ({} bytes): {} vertices, {} triangles, {} basis vectors, {} joints, eyes '{}' / '{}', {}\n",
      o.output, bytes.size(), pack.vertexCount(), pack.triangles.size() / 3, pack.basisCount(),
      pack.joints.size(), pack.joints[static_cast<size_t>(pack.eye_joints[0])].name,
      pack.joints[static_cast<size_t>(pack.eye_joints[1])].name,
      pack.arkit_map.empty() ? std::string("no arkit_map")
                             : fmt::format("arkit_map from {} ARKit-named targets", arkit_names));
  fmt::print("head-local neutral; the bind transform lifts it by ({:.4f}, {:.4f}, {:.4f}) m\n", lift.x,
             lift.y, lift.z);
  fmt::print("time: {:.3f} s\n", secondsSince(t0));
  return 0;
}

// `character preview --pack PACK -o FILE`: the GNM pack posed at zero controls, one gaussian per vertex.
int characterPackPreview(const CharacterCommand::Options& o) {
  auto t0 = Clock::now();
  progress("rig preview of the GNM pack " + o.pack + " tinted by " + o.tint);
  character::GnmRig rig(character::loadGnmPack(o.pack));
  const GaussianCloud cloud = character::rigPreviewCloud(rig, o.tint, o.sigma);
  saveSplats(cloud, o.output);
  Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
  for (const Vec3& p : cloud.positions)
    for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
  fmt::print(
      "wrote {} ({} gaussians, one per vertex, sigma {} m; posed bounds ({:.3f}, {:.3f}, {:.3f}) .. ({:.3f}, "
      "{:.3f}, {:.3f}) m)\n",
      o.output, cloud.size(), o.sigma, lo.x, lo.y, lo.z, hi.x, hi.y, hi.z);
  fmt::print("time: {:.3f} s\n", secondsSince(t0));
  return 0;
}

}  // namespace

CharacterCommand::~CharacterCommand() = default;

int CharacterCommand::run() const {
  const Options& o = *options_;
  try {
    auto t0 = Clock::now();
    if (o.action == "info") return characterInfo(o);
    if (o.action == "gnm-pack") return characterGnmPack(o);
    if (o.action == "preview" && !o.pack.empty()) return characterPackPreview(o);
    if (o.action == "preview" && o.skin.empty())
      return reportUsage("character preview",
                         "give the rig: --skin FILE (a skinned glTF) or --pack FILE (a GNM pack)");
    character::Character c = [&] {
      if (o.action == "build" && o.train) {
        auto model = std::make_shared<GltfModel>(o.from_gltf);
        const int draw = character::Character::fromGltf(model, 1, o.seed).boundDraw();
        train::ViewsOptions vo;
        vo.train_count = o.train_views;
        vo.size = o.train_size;
        vo.seed = o.seed;
        train::TrainOptions to;
        to.budget = o.splats;
        to.steps = o.train_steps;
        to.seed = o.seed;
        to.progress = [](int step, int steps, double loss, size_t live) {
          if (step == steps || step % std::max(1, steps / 10) == 0)
            progress(fmt::format("train: step {}/{} loss {:.5f} live {}", step, steps, loss, live));
        };
        progress(fmt::format("training {} gaussians on {} views of {} ({} steps at {}x{})", o.splats,
                             vo.train_count, o.from_gltf, to.steps, vo.size, vo.size));
        std::unique_ptr<VulkanRenderer> renderer;
        const train::MeshTrainResult r =
            train::trainFromMesh(o.from_gltf, vo, to, trainerFor(o.train_backend, "", renderer));
        progress(
            fmt::format("trained in {:.2f} s; validation L1 {:.5f} -> {:.5f}, PSNR {:.2f} -> {:.2f} dB, "
                        "SSIM {:.4f} -> {:.4f}",
                        r.train.seconds, r.train.initial.l1, r.train.final.l1, r.train.initial.psnr,
                        r.train.final.psnr, r.train.initial.ssim, r.train.final.ssim));
        GaussianCloud cloud = train::restToBindSpace(
            *model, draw, train::toSourceFrame(train::toCloud(r.train.params), r.scale, r.offset));
        return character::Character::bindSplats(model, std::move(cloud));
      }
      if (o.action == "build") {
        progress(fmt::format("sampling {} gaussians on {}", o.splats, o.from_gltf));
        return character::Character::fromGltf(std::make_shared<GltfModel>(o.from_gltf), o.splats, o.seed);
      }
      if (o.action == "preview") {
        progress("rig preview of " + o.skin + " tinted by " + o.tint);
        return character::Character::rigPreview(std::make_shared<GltfModel>(o.skin), o.tint, o.sigma);
      }
      progress("binding " + o.splat_file + " to " + o.skin +
               (o.per_vertex ? fmt::format(" (per vertex, offset scale {})", o.offset_scale) : ""));
      LoadedSplats l = loadSplats(o.splat_file);
      auto model = std::make_shared<GltfModel>(o.skin);
      if (o.per_vertex)
        return character::Character::bindPerVertex(model, std::move(l.cloud), o.offset_scale, o.rgb_colors);
      if (o.rgb_colors)
        for (size_t i = 0; i < l.cloud.size(); ++i)
          for (size_t k = 0; k < 3; ++k) {
            float& dc = l.cloud.sh[i * static_cast<size_t>(l.cloud.shStride()) + k];
            dc = colorToShDc(dc);
          }
      return character::Character::bindSplats(model, std::move(l.cloud));
    }();
    if (!o.clips.empty()) {
      const anim::RetargetReport r = c.attachClips(o.clips);
      progress(fmt::format(
          "retargeted {} clips from {}: {} tracks kept, {} dropped ({} joints missing from the skin)",
          c.model().clips().size(), o.clips, r.mapped, r.dropped, r.missing_joints.size()));
    }
    c.savePackage(o.output);
    fmt::print("wrote {} ({} splats bound to {}; expression space {})\n", o.output, c.splats().size(),
               c.model().document().path, c.expressionSpace());
    fmt::print("time: {:.3f} s\n", secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("character " + o.action, e);
  }
}

PoseCommand::~PoseCommand() = default;

int PoseCommand::run() const {
  const Options& o = *options_;
  try {
    auto t0 = Clock::now();
    if (!std::isfinite(o.time)) throw UsageError("--time must be a finite number of seconds");
    const GltfModel model(o.input);
    const GltfDocument& doc = model.document();
    const anim::Skeleton& skeleton = model.skeleton();

    // The clip: --clip by name or index; default the first; the rest pose when the file has none.
    int clip_index = -1;
    if (!o.clip.empty()) {
      clip_index = model.findClip(o.clip);
      if (clip_index < 0)
        throw Error(fmt::format("--clip '{}': {} has no animation of that name or index ({} animations{}{})",
                                o.clip, o.input, doc.animations.size(), doc.animations.empty() ? "" : ": ",
                                model.clipList()));
    } else if (!doc.animations.empty()) {
      clip_index = 0;
    }
    const anim::Clip clip = clip_index >= 0 ? model.clips()[static_cast<size_t>(clip_index)] : anim::Clip{};
    GltfModel::Pose pose;
    model.pose(clip_index, static_cast<float>(o.time), pose);
    const std::vector<Mat4>& models = pose.models;

    // Every drawn primitive, morphed with its sampled weights and skinned when it has a skin, in world space.
    int shown_skin = -1, shown_mesh_node = -1;
    for (size_t n = 0; n < doc.nodes.size() && shown_skin < 0; ++n)
      if (doc.nodes[n].mesh >= 0 && doc.nodes[n].skin >= 0)
        shown_skin = doc.nodes[n].skin, shown_mesh_node = static_cast<int>(n);
    Vec3 lo{INFINITY, INFINITY, INFINITY}, hi{-INFINITY, -INFINITY, -INFINITY};
    size_t vertices = 0;
    for (const RenderMesh& m : model.renderMeshes(pose, Mat4{})) {
      for (const Vec3& p : m.positions) {
        Vec3 w = transformPoint(m.object_to_world, p);
        for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], w[k]), hi[k] = std::max(hi[k], w[k]);
      }
      vertices += m.positions.size();
    }

    // What to list: the first skin's joints, else every node.
    std::vector<int> listed;
    if (shown_skin >= 0)
      listed = doc.skins[static_cast<size_t>(shown_skin)].joints;
    else
      for (size_t n = 0; n < doc.nodes.size(); ++n) listed.push_back(static_cast<int>(n));
    const char* what = shown_skin >= 0 ? "joints" : "nodes";
    std::string clip_name = clip_index >= 0 ? doc.animations[static_cast<size_t>(clip_index)].name : "";
    if (o.json) {
      fmt::print("{{\n  \"file\": \"{}\",\n", jsonEscape(o.input));
      if (clip_index >= 0)
        fmt::print("  \"clip\": {{\"index\": {}, \"name\": \"{}\", \"duration\": {}}},\n", clip_index,
                   jsonEscape(clip_name), clip.duration);
      else
        fmt::print("  \"clip\": null,\n");
      fmt::print("  \"time\": {},\n  \"skin\": {},\n  \"mesh_node\": {},\n  \"{}\": [\n", o.time, shown_skin,
                 shown_mesh_node, what);
      for (size_t i = 0; i < listed.size(); ++i) {
        int node = listed[i];
        fmt::print("    {{\"node\": {}, \"name\": \"{}\", \"world\": {}}}{}\n", node,
                   jsonEscape(doc.nodes[static_cast<size_t>(node)].name),
                   matrixJson(models[static_cast<size_t>(skeleton.findSource(node))]),
                   i + 1 < listed.size() ? "," : "");
      }
      fmt::print("  ],\n  \"vertices\": {}", vertices);
      if (vertices > 0) fmt::print(",\n  \"bounds\": {{\"min\": {}, \"max\": {}}}", vecJson(lo), vecJson(hi));
      fmt::print("\n}}\n");
      fmt::print(stderr, "  time: {:.3f} s\n", secondsSince(t0));
      return 0;
    }
    fmt::print("file:     {}\n", o.input);
    if (clip_index >= 0)
      fmt::print("clip:     {} '{}' ({:.3f} s, {} tracks)\n", clip_index, clip_name, clip.duration,
                 clip.tracks.size());
    else
      fmt::print("clip:     none (rest pose)\n");
    fmt::print("at:       {:.4f} s\n", o.time);
    if (shown_skin >= 0)
      fmt::print("skin:     {} ({} joints) on node {}\n", shown_skin, listed.size(), shown_mesh_node);
    fmt::print("{} world matrices (rows 0-2 of the 4x4):\n", what);
    for (int node : listed)
      fmt::print("  {:>4} {:<28} {}\n", node, doc.nodes[static_cast<size_t>(node)].name,
                 matrixText(models[static_cast<size_t>(skeleton.findSource(node))]));
    if (vertices > 0)
      fmt::print("bounds:   min {}  max {}  ({} vertices)\n", vecText(lo), vecText(hi), vertices);
    else
      fmt::print("bounds:   no mesh\n");
    fmt::print("time:     {:.3f} s\n", secondsSince(t0));
    return 0;
  } catch (const std::exception& e) {
    return reportFailure("pose", e);
  }
}

}  // namespace sf::cli
