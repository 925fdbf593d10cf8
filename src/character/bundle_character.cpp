// A decoder character: rig, decoders and the UV lift per branch (see bundle_character.h).
#include "character/bundle_character.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "character/rig.h"
#include "core/clock.h"
#include "core/error.h"
#include "io/gltf.h"
#include "model/gltf_model.h"
#include "neural/cpu_executor.h"

namespace sf::character {
namespace {

// The first skinned triangle primitive of a glTF (the first triangle primitive when none is skinned): the
// mesh a skinned rig poses, in the same vertex order.
BranchMesh branchMeshFromGltf(const GltfDocument& doc, const std::string& where) {
  const GltfPrimitive* chosen = nullptr;
  for (int pass = 0; pass < 2 && !chosen; ++pass)
    for (const GltfMesh& m : doc.meshes)
      for (const GltfPrimitive& p : m.primitives)
        if (!chosen && p.mode == 4 && (pass == 1 || !p.joints0.empty())) chosen = &p;
  if (!chosen) throw Error(where + ": no triangle primitive");
  if (chosen->texcoords0.size() != chosen->positions.size())
    throw Error(where + ": the branch mesh has no TEXCOORD_0 (the UV layout the decoders write)");
  BranchMesh m;
  m.positions = chosen->positions;
  m.uvs.reserve(chosen->texcoords0.size());
  for (const GltfFloat2& t : chosen->texcoords0) m.uvs.push_back({t[0], t[1]});
  if (chosen->indices.empty()) {
    m.indices.resize(m.positions.size() - m.positions.size() % 3);
    for (size_t i = 0; i < m.indices.size(); ++i) m.indices[i] = static_cast<uint32_t>(i);
  } else {
    m.indices = chosen->indices;
  }
  return m;
}

const nn::ValueInfo* findValue(const std::vector<nn::ValueInfo>& list, const std::string& name) {
  for (const nn::ValueInfo& v : list)
    if (v.name == name) return &v;
  return nullptr;
}

std::string valueList(const std::vector<nn::ValueInfo>& list) {
  std::string s;
  for (const nn::ValueInfo& v : list) s += (s.empty() ? "" : ", ") + v.name + " " + nn::shapeString(v.shape);
  return s.empty() ? "none" : s;
}

// A UV map output [1, C, R, R] with C in {3, 4}; returns C.
int mapChannels(const nn::Tensor& t, int resolution, const std::string& what) {
  const nn::Shape& s = t.shape;
  if (s.size() != 4 || s[0] != 1 || (s[1] != 3 && s[1] != 4) || s[2] != resolution || s[3] != resolution)
    throw Error(what + " is " + nn::shapeString(s) + "; the branch needs [1, 3 or 4, " +
                std::to_string(resolution) + ", " + std::to_string(resolution) + "]");
  if (!t.isFloat()) throw Error(what + " is not a float tensor");
  return static_cast<int>(s[1]);
}

// Where a bundle's glTF finds its external buffers and images: its own folder inside the bundle (none for
// a bundle held in memory).
std::string glTFDirectory(const BundleResolver& files, const std::string& name) {
  if (files.directory().empty()) return {};
  return (std::filesystem::path(files.directory()) / std::filesystem::path(name).parent_path()).string();
}

// The rig a bundle names: a gnm pack, or a skinned glTF.
std::unique_ptr<RigBackend> makeRig(const std::string& backend, const BundleResolver& files,
                                    const std::string& pack) {
  const std::vector<uint8_t> bytes = files.read(pack);
  if (backend == "gnm") return std::make_unique<GnmRig>(decodeGnmPack(bytes, files.describe(pack)));
  auto model =
      std::make_shared<const GltfModel>(parseGltf(bytes, files.describe(pack), glTFDirectory(files, pack)));
  return std::make_unique<SkinnedRig>(model);
}

ExpressionSpace spaceOf(const std::string& kind, int dim) {
  if (kind == "arkit52") return arkit52Space();
  if (kind == "gnm68") return gnm68Space();
  return gnmSpace(static_cast<size_t>(dim - 4));
}

}  // namespace

std::map<std::string, nn::Tensor> decoderInputs(const nn::Graph& graph, const DecoderValues& values) {
  std::map<std::string, nn::Tensor> in;
  for (const nn::ValueInfo& v : graph.inputs) {
    const nn::Tensor* t = v.name == "verts"  ? values.verts
                          : v.name == "code" ? values.code
                          : v.name == "gaze" ? values.gaze
                          : v.name == "view" ? values.view
                                             : nullptr;
    if (!t)
      throw Error(graph.path + ": input '" + v.name +
                  "' has no value here (a branch gives verts, code, gaze and view)");
    in[v.name] = *t;
  }
  return in;
}

bool cameraMoved(const Camera& a, const Camera& b, const CameraChangeThreshold& t) {
  if (length(a.position() - b.position()) > t.move) return true;
  // Rows 2 and 1 of the world-to-camera rotation: the viewing direction and screen-down in world space
  // (a roll about the viewing direction turns the view too).
  for (int row : {2, 1}) {
    const Vec3 ra{a.world_to_camera.m[row][0], a.world_to_camera.m[row][1], a.world_to_camera.m[row][2]};
    const Vec3 rb{b.world_to_camera.m[row][0], b.world_to_camera.m[row][1], b.world_to_camera.m[row][2]};
    if (std::atan2(length(cross(ra, rb)), dot(ra, rb)) > t.turn) return true;
  }
  if (std::fabs(a.fy - b.fy) > t.focal * std::max(a.fy, b.fy)) return true;
  return a.width != b.width || a.height != b.height;
}

struct BundleCharacter::Branch {
  BundleBranch spec;
  BranchMesh mesh;
  std::vector<uint32_t> texel_triangle;
  std::unique_ptr<nn::CpuExecutor> trunk, geom, appr;
  uint64_t decoder_bytes = 0;
  size_t first = 0, texels = 0;
  // Cached between passes (touched only by the pass in flight).
  std::vector<Vec3> decoder_vertices;
  std::vector<float> geometry;
  int geometry_channels = 3;
  std::optional<nn::Tensor> code;
  std::vector<float> color;
  int color_channels = 3;
  std::vector<std::array<float, 9>> frame;
  std::vector<uint32_t> triim;
  std::vector<std::array<float, 2>> bounds;
};

struct BundleCharacter::Request {
  uint64_t version = 0;
  bool geometry = false;
  Camera camera;
  std::vector<Vec3> posed;  // the rig's posed vertices (when geometry)
  std::array<float, 4> gaze{};
};

struct BundleCharacter::Result {
  std::vector<Vec3> positions;
  std::vector<Cov6> covariances;
  std::vector<float> opacity;
  std::vector<std::array<float, 3>> rgb;
  bool geometry = false;
  double geometry_ms = 0, appearance_ms = 0;
};

std::string orlRefusal(const CharacterBundle& bundle) {
  if (bundle.rig.backend != "orl") return {};
  return bundle.where + ": rig backend \"orl\"" +
         (bundle.rig.declared ? "" : " (the default of a bundle without a \"rig\" block)") +
         " is refused: it poses the face by evaluating the character's own OpenRigLogic DNA, and this engine "
         "has no DNA reader or "
         "evaluator; the decoders were trained on vertices that rig poses, so another rig would draw a wrong "
         "face without a sign. "
         "Declare \"rig\": {\"backend\": \"gnm\", \"pack\": ...} or {\"backend\": \"skinned\"} "
         "(docs/formats/character-bundle.md)";
}

BundleCharacter::BundleCharacter(CharacterBundle bundle) : bundle_(std::move(bundle)) {
  const BundleResolver& files = *bundle_.files;
  const std::string& where = bundle_.where;
  if (std::string why = orlRefusal(bundle_); !why.empty()) throw Error(why);
  rig_ = makeRig(bundle_.rig.backend, files, bundle_.rig.pack);
  if (bundle_.rig.vertex_count >= 0 && static_cast<size_t>(bundle_.rig.vertex_count) != rig_->vertexCount())
    throw Error(where + ": rig.vertex_count is " + std::to_string(bundle_.rig.vertex_count) + " but " +
                files.describe(bundle_.rig.pack) + " poses " + std::to_string(rig_->vertexCount()) +
                " vertices");
  controls_.assign(rig_->controlNames().size(), 0.0f);
  size_t slots = 0;
  for (const BundleBranch& spec : bundle_.branches) {
    auto b = std::make_unique<Branch>();
    b->spec = spec;
    const std::string bw = where + ": branches." + spec.name;
    if (!spec.mesh_glb.empty()) {
      const std::vector<uint8_t> bytes = files.read(spec.mesh_glb);
      b->mesh = branchMeshFromGltf(
          parseGltf(bytes, files.describe(spec.mesh_glb), glTFDirectory(files, spec.mesh_glb)),
          files.describe(spec.mesh_glb));
    } else {
      b->mesh = decodeBranchMesh(files.read(spec.mesh_json), files.read(spec.mesh_bin),
                                 files.describe(spec.mesh_json), files.describe(spec.mesh_bin));
    }
    if (slots + static_cast<uint64_t>(spec.uv_resolution) * static_cast<uint64_t>(spec.uv_resolution) >
        kMaxBundleSlots)
      throw Error(bw + ".uv_resolution: the branches hold more than " + std::to_string(kMaxBundleSlots) +
                  " slots together");
    if (!spec.static_geometry && b->mesh.positions.size() != rig_->vertexCount())
      throw Error(
          bw + ": its mesh has " + std::to_string(b->mesh.positions.size()) + " vertices but the rig poses " +
          std::to_string(rig_->vertexCount()) +
          " (a posed branch shares the rig's topology; mark a mesh of its own \"static_geometry\": true)");
    const int r = spec.uv_resolution;
    b->texel_triangle = rasterizeUvLayout(b->mesh.uvs, b->mesh.indices, r, r);
    b->texels = static_cast<size_t>(r) * static_cast<size_t>(r);
    b->first = slots;
    slots += b->texels;
    auto load = [&](const std::string& name) {
      const std::vector<uint8_t> bytes = files.read(name);
      b->decoder_bytes += bytes.size();
      return std::make_unique<nn::CpuExecutor>(nn::loadOnnx(bytes, files.describe(name)));
    };
    if (!spec.trunk.empty()) b->trunk = load(spec.trunk);
    b->geom = load(spec.geom);
    b->appr = load(spec.appr);
    // The contract (docs/formats/character-bundle.md, "Decoders"): inputs by name.
    auto checkInputs = [&](const nn::CpuExecutor& e, std::initializer_list<const char*> allowed,
                           const char* role) {
      for (const nn::ValueInfo& in : e.graph().inputs) {
        bool ok = false;
        for (const char* a : allowed) ok |= in.name == a;
        if (!ok) {
          std::string names;
          for (const char* a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
          throw Error(e.graph().path + ": the " + role + " decoder has input \"" + in.name +
                      "\"; a branch gives " + names + " (inputs: " + valueList(e.graph().inputs) + ")");
        }
        if (in.name == std::string("gaze") && !spec.gaze_conditioned)
          throw Error(e.graph().path + ": takes \"gaze\" but the branch is not gaze_conditioned");
      }
    };
    if (b->trunk) checkInputs(*b->trunk, {"verts", "gaze"}, "trunk");
    checkInputs(*b->geom, {"verts", "code", "gaze"}, "geometry");
    checkInputs(*b->appr, {"view", "code", "gaze"}, "appearance");
    // Declared map shapes, where the decoder states them, against the branch's resolution (the passes check
    // what the decoders actually produce as well).
    auto checkDeclared = [&](const nn::Graph& g, const char* output) {
      const nn::ValueInfo* v = findValue(g.outputs, output);
      if (!v || !v->has_shape) return;
      const nn::Shape& sh = v->shape;
      const int64_t res = spec.uv_resolution;
      const bool ok = sh.size() == 4 && (sh[0] < 0 || sh[0] == 1) &&
                      (sh[1] < 0 || sh[1] == 3 || sh[1] == 4) && (sh[2] < 0 || sh[2] == res) &&
                      (sh[3] < 0 || sh[3] == res);
      if (!ok)
        throw Error(g.path + ": output " + output + " is declared " + nn::shapeString(sh) + "; " + bw +
                    ".uv_resolution is " + std::to_string(res) + " (the branch needs [1, 3 or 4, " +
                    std::to_string(res) + ", " + std::to_string(res) + "])");
    };
    checkDeclared(b->geom->graph(), "geom_uv");
    checkDeclared(b->appr->graph(), "color_uv");
    if (!findValue(b->geom->graph().outputs, "geom_uv"))
      throw Error(b->geom->graph().path + ": the geometry decoder has no output \"geom_uv\" (outputs: " +
                  valueList(b->geom->graph().outputs) + ")");
    if (!findValue(b->appr->graph().outputs, "color_uv"))
      throw Error(b->appr->graph().path + ": the appearance decoder has no output \"color_uv\" (outputs: " +
                  valueList(b->appr->graph().outputs) + ")");
    if (!findValue(b->appr->graph().inputs, "view"))
      throw Error(b->appr->graph().path + ": the appearance decoder has no input \"view\"");
    if (findValue(b->geom->graph().inputs, "code") && !b->trunk)
      throw Error(b->geom->graph().path + ": takes \"code\" but the branch has no trunk decoder");
    if (findValue(b->appr->graph().inputs, "code") && !b->trunk &&
        !findValue(b->geom->graph().outputs, "code"))
      throw Error(b->appr->graph().path +
                  ": takes \"code\" but neither a trunk nor the geometry decoder outputs one");
    branches_.push_back(std::move(b));
  }
  cloud_.resize(slots, 0);
  covariances_.assign(slots, Cov6{1e-8f, 0, 0, 1e-8f, 0, 1e-8f});
  for (size_t i = 0; i < slots; ++i) cloud_.opacities[i] = 0;  // nothing drawn before the first pass
}

BundleCharacter::~BundleCharacter() {
  try {
    finish();
  } catch (...) {  // a failed pass in flight: nothing to report at destruction
  }
}

std::pair<size_t, size_t> BundleCharacter::branchSlots(size_t branch) const {
  return {branches_.at(branch)->first, branches_.at(branch)->texels};
}

void BundleCharacter::setExpression(const Expression& e, std::vector<std::string>* missing) {
  const BundleExpressionSpace& declared = bundle_.expression_space;
  // The bundle's own space; an ARKit vector reaches a gnm rig only through its arkit map (mapToControls
  // refuses it without one). Any other space is refused, never reinterpreted.
  if (e.space != declared.kind && !(e.space == "arkit52" && rig_->kind() == "gnm"))
    throw Error(bundle_.where + ": the bundle's expression space is " + declared.kind + " (" +
                std::to_string(declared.dim) + " values); a " + e.space + " vector is refused");
  ExpressionSpace space = e.space == declared.kind ? spaceOf(declared.kind, declared.dim) : arkit52Space();
  std::vector<float> c = mapToControls(space, e.weights, *rig_, missing);
  setRig(c);
}

void BundleCharacter::setRig(std::span<const float> controls) {
  if (controls.size() != controls_.size())
    throw Error(bundle_.where + ": the rig takes " + std::to_string(controls_.size()) + " controls, got " +
                std::to_string(controls.size()));
  for (size_t i = 0; i < controls.size(); ++i)
    if (!std::isfinite(controls[i]))
      throw Error(bundle_.where + ": rig control " + std::to_string(i) + " is not finite");
  if (std::equal(controls.begin(), controls.end(), controls_.begin())) return;
  rig_->setControls(controls);
  controls_.assign(controls.begin(), controls.end());
  // A gnm rig's last four controls are the gaze: they drive the gaze-conditioned branches too.
  if (rig_->kind() == "gnm" && controls_.size() >= 4)
    std::copy(controls_.end() - 4, controls_.end(), gaze_.begin());
  ++state_version_;
}

void BundleCharacter::setGaze(const std::array<float, 4>& gaze) {
  for (float g : gaze)
    if (!std::isfinite(g)) throw Error(bundle_.where + ": the gaze angles must be finite");
  if (gaze == gaze_) return;
  if (rig_->kind() == "gnm" && controls_.size() >= 4) {  // a gnm rig's last four controls are the gaze
    std::vector<float> c = controls_;
    std::copy(gaze.begin(), gaze.end(), c.end() - 4);
    setRig(c);
    return;
  }
  gaze_ = gaze;
  ++state_version_;
}

BundleCharacter::Request BundleCharacter::request(const Camera& camera) const {
  Request r;
  r.version = state_version_;
  r.geometry = state_version_ != ran_version_;
  r.camera = camera;
  r.gaze = gaze_;
  return r;
}

void BundleCharacter::update(const Camera& camera, bool async) {
  ++counters_.updates;
  collect(!async);  // a synchronous update first completes what an earlier asynchronous one left in flight
  // What the newest state needs, against the state the last started pass ran for (a pending request is
  // replaced: latest-only).
  const bool geometry = state_version_ != ran_version_;
  const bool appearance =
      geometry || !ran_camera_ || cameraMoved(camera, *ran_camera_, CameraChangeThreshold{});
  if (!geometry && !appearance) {
    ++counters_.skipped;
    if (gpu_path_) gpu_path_->prepare(BundleFrameRequest{});  // the slots keep the last pass's gaussians
    return;
  }
  Request r = request(camera);
  if (r.geometry) rig_->pose(r.posed);
  ran_version_ = r.version;
  ran_camera_ = camera;
  if (gpu_path_) {
    gpu_path_->prepare(frameRequest(r.geometry, r.posed, camera));
    counters_.geometry_passes += r.geometry;
    counters_.appearance_passes += 1;
    return;
  }
  if (in_flight_.valid()) {
    if (pending_) {
      ++counters_.coalesced;
      r.geometry = r.geometry || pending_->geometry;  // the replaced request's geometry still has to run
      if (r.posed.empty()) r.posed = std::move(pending_->posed);
    }
    pending_ = std::make_unique<Request>(std::move(r));
    return;
  }
  if (async) {
    start(std::move(r));
    return;
  }
  std::unique_ptr<Result> res = std::make_unique<Result>(runPasses(r));
  std::promise<std::unique_ptr<Result>> done;
  done.set_value(std::move(res));
  in_flight_ = done.get_future();
  collect(true);
}

void BundleCharacter::start(Request r) {
  in_flight_ = std::async(std::launch::async,
                          [this, r = std::move(r)]() { return std::make_unique<Result>(runPasses(r)); });
}

void BundleCharacter::collect(bool wait) {
  while (in_flight_.valid()) {
    if (!wait && in_flight_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    std::unique_ptr<Result> res;
    try {
      res = in_flight_.get();  // rethrows a failed pass
    } catch (...) {
      // Nothing of the failed pass is drawn; the request waiting behind it is dropped and the newest state
      // is asked for again by the next update.
      pending_.reset();
      ran_version_ = 0;
      ran_camera_.reset();
      throw;
    }
    cloud_.positions = std::move(res->positions);
    covariances_ = std::move(res->covariances);
    cloud_.opacities = std::move(res->opacity);
    for (size_t i = 0; i < res->rgb.size(); ++i)
      for (size_t c = 0; c < 3; ++c) cloud_.sh[3 * i + c] = colorToShDc(res->rgb[i][c]);
    counters_.geometry_passes += res->geometry;
    counters_.appearance_passes += 1;
    if (res->geometry) counters_.last_geometry_ms = res->geometry_ms;
    counters_.last_appearance_ms = res->appearance_ms;
    if (pending_) {
      Request next = std::move(*pending_);
      pending_.reset();
      start(std::move(next));
    }
  }
}

void BundleCharacter::finish() {
  collect(true);
}

BundleCharacter::Result BundleCharacter::runPasses(const Request& r) {
  if (pass_hook_) pass_hook_(r.geometry);
  Result out;
  out.geometry = r.geometry;
  const size_t slots = cloud_.size();
  out.positions.resize(slots);
  out.covariances.resize(slots);
  out.opacity.resize(slots);
  out.rgb.resize(slots);
  for (std::unique_ptr<Branch>& bp : branches_) {
    Branch& b = *bp;
    const int res = b.spec.uv_resolution;
    nn::Tensor gaze(nn::DType::kFloat32, {1, 4});
    for (size_t k = 0; k < 4; ++k) gaze.f[k] = r.gaze[k];
    auto t0 = std::chrono::steady_clock::now();
    if (r.geometry || b.geometry.empty()) {
      // Geometry: the vertex transform, trunk and geometry decode, lift pass 1.
      const std::vector<Vec3>& src = b.spec.static_geometry ? b.mesh.positions : r.posed;
      if (src.size() != b.mesh.positions.size())
        throw Error(bundle_.where + ": branch \"" + b.spec.name + "\": the rig posed " +
                    std::to_string(src.size()) + " vertices");
      b.decoder_vertices.resize(src.size());
      nn::Tensor verts(nn::DType::kFloat32, {1, static_cast<int64_t>(src.size()), 3});
      for (size_t i = 0; i < src.size(); ++i) {
        b.decoder_vertices[i] = b.spec.frame.toDecoder(src[i]);
        for (int c = 0; c < 3; ++c) verts.f[3 * i + static_cast<size_t>(c)] = b.decoder_vertices[i][c];
      }
      b.code.reset();
      if (b.trunk) {
        nn::TensorMap t = b.trunk->run(decoderInputs(b.trunk->graph(), {&verts, nullptr, &gaze, nullptr}));
        // The trunk's "code", else its first declared output (as the GPU path takes it).
        const auto it = t.find("code");
        b.code = it != t.end() ? it->second : t.at(b.trunk->graph().outputs.front().name);
      }
      nn::TensorMap g =
          b.geom->run(decoderInputs(b.geom->graph(), {&verts, b.code ? &*b.code : nullptr, &gaze, nullptr}));
      const nn::Tensor& uv = g.at("geom_uv");
      b.geometry_channels = mapChannels(uv, res, b.geom->graph().path + ": output geom_uv");
      b.geometry = uv.f;
      if (!b.trunk)
        if (auto it = g.find("code"); it != g.end()) b.code = it->second;
      b.frame.resize(b.texels);
      b.triim.resize(b.texels);
      b.bounds.resize(b.texels);
      LiftPass1Job p1;
      p1.width = p1.height = res;
      p1.geometry = b.geometry;
      p1.geometry_channels = b.geometry_channels;
      p1.texel_triangle = b.texel_triangle;
      p1.vertices = b.decoder_vertices;
      p1.indices = b.mesh.indices;
      p1.tuning = b.spec.lift;
      p1.out_frame = b.frame;
      p1.out_triim = b.triim;
      p1.out_bounds = b.bounds;
      p1.run();
      out.geometry_ms += msSince(t0);
    }
    // Appearance: view rays from the camera centre, the appearance decode, lift pass 2.
    t0 = std::chrono::steady_clock::now();
    nn::Tensor view(nn::DType::kFloat32, {1, 6, res, res});
    plueckerRays(b.geometry, res, res, b.spec.frame.toDecoder(r.camera.position()), view.f);
    nn::TensorMap a =
        b.appr->run(decoderInputs(b.appr->graph(), {nullptr, b.code ? &*b.code : nullptr, &gaze, &view}));
    const nn::Tensor& col = a.at("color_uv");
    b.color_channels = mapChannels(col, res, b.appr->graph().path + ": output color_uv");
    b.color = col.f;
    LiftPass2Job p2;
    p2.width = p2.height = res;
    p2.geometry = b.geometry;
    p2.geometry_channels = b.geometry_channels;
    p2.color = b.color;
    p2.color_channels = b.color_channels;
    p2.frame = b.frame;
    p2.triim = b.triim;
    p2.bounds = b.bounds;
    p2.decoder_frame = b.spec.frame;
    p2.default_opacity_logit = b.spec.lift.default_opacity_logit;
    p2.out_positions = std::span(out.positions).subspan(b.first, b.texels);
    p2.out_covariances = std::span(out.covariances).subspan(b.first, b.texels);
    p2.out_opacity = std::span(out.opacity).subspan(b.first, b.texels);
    p2.out_rgb = std::span(out.rgb).subspan(b.first, b.texels);
    p2.run();
    out.appearance_ms += msSince(t0);
  }
  return out;
}

std::vector<BranchMemory> BundleCharacter::memoryReport() const {
  std::vector<BranchMemory> out;
  for (const std::unique_ptr<Branch>& b : branches_) {
    BranchMemory m;
    m.name = b->spec.name;
    m.slots = b->texels;
    m.decoder_bytes = b->decoder_bytes;
    const uint64_t mesh = b->mesh.positions.size() * (12 + 8 + 12) + b->mesh.indices.size() * 4;
    // Per texel: the layout (4), the maps (geometry and colour at up to 4 channels, view 6; float32), pass
    // 1's frame, triim and bounds (48) and the lifted gaussian as the CPU holds it (the cloud's centre,
    // scale, rotation, opacity and colour, 56, and its covariance, 24). Decoders count as their files.
    const uint64_t per_texel = 4 + 4 * (4 + 4 + 6) + 48 + 56 + 24;
    m.resident_bytes = m.decoder_bytes + mesh + per_texel * b->texels;
    m.gpu_bytes = kSlotBytes * b->texels;
    out.push_back(m);
  }
  return out;
}

BundleCharacter::BranchMaps BundleCharacter::branchMaps(size_t branch) const {
  const Branch& b = *branches_.at(branch);
  return {b.geometry, b.color, b.geometry_channels, b.color_channels, b.frame, b.triim, b.bounds};
}

BundleFrameRequest BundleCharacter::frameRequest(bool geometry, const std::vector<Vec3>& posed,
                                                 const Camera& camera) const {
  BundleFrameRequest g;
  g.geometry = geometry;
  g.appearance = true;
  g.gaze = gaze_;
  for (const std::unique_ptr<Branch>& b : branches_) {
    g.eyes.push_back(b->spec.frame.toDecoder(camera.position()));
    if (!geometry) continue;
    const std::vector<Vec3>& src = b->spec.static_geometry ? b->mesh.positions : posed;
    std::vector<Vec3>& dst = g.vertices.emplace_back(src.size());
    for (size_t i = 0; i < src.size(); ++i) dst[i] = b->spec.frame.toDecoder(src[i]);
  }
  return g;
}

BundleFrameRequest BundleCharacter::trialRequest() {
  std::vector<Vec3> posed;
  rig_->pose(posed);
  return frameRequest(true, posed, lookAtCamera({0, 0, 2}, {0, 0, 0}, {0, 1, 0}, 40, 64, 64));
}

void BundleCharacter::setGpuPath(std::shared_ptr<BundleGpuPath> path) {
  finish();
  gpu_path_ = std::move(path);
  ran_version_ = 0;  // the new path starts from nothing: the next update runs every pass
  ran_camera_.reset();
}

std::vector<BranchGpuInputs> BundleCharacter::gpuInputs() const {
  std::vector<BranchGpuInputs> out;
  for (const std::unique_ptr<Branch>& b : branches_) {
    BranchGpuInputs g;
    g.spec = &b->spec;
    g.texel_triangle = b->texel_triangle;
    g.indices = b->mesh.indices;
    g.first = b->first;
    g.texels = b->texels;
    g.vertices = b->mesh.positions.size();
    g.trunk = b->trunk ? &b->trunk->graph() : nullptr;
    g.geom = &b->geom->graph();
    g.appr = &b->appr->graph();
    out.push_back(g);
  }
  return out;
}

std::shared_ptr<BundleCharacter> loadBundleCharacter(const std::string& dir) {
  return std::make_shared<BundleCharacter>(loadCharacterBundle(directoryResolver(dir)));
}

}  // namespace sf::character
