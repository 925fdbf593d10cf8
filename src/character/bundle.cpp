// Character bundles (see bundle.h).
#include "character/bundle.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "io/file.h"
#include "io/json.h"

namespace sf::character {
namespace fs = std::filesystem;
namespace {

// Names inside a bundle: relative, '/'-separated, no "..", no empty or "." parts.
std::string checkName(const std::string& name) {
  if (name.empty()) return "an empty file name";
  if (name.front() == '/' || name.find('\\') != std::string::npos || name.find(':') != std::string::npos)
    return "\"" + name + "\" is not a relative path";
  size_t start = 0;
  while (start <= name.size()) {
    const size_t end = std::min(name.find('/', start), name.size());
    const std::string part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      return "\"" + name + "\" leaves the bundle or has an empty part (bundle files are confined to it)";
    start = end + 1;
  }
  return {};
}

class DirectoryResolver final : public BundleResolver {
 public:
  explicit DirectoryResolver(std::string dir) : dir_(std::move(dir)) {}
  bool exists(const std::string& name) const override {
    if (!checkName(name).empty()) return false;
    std::error_code ec;
    return fs::is_regular_file(fs::path(dir_) / name, ec);
  }
  std::vector<uint8_t> read(const std::string& name) const override {
    if (std::string why = checkName(name); !why.empty()) throw Error(describe(name) + ": refused: " + why);
    const fs::path full = fs::path(dir_) / name;
    std::error_code ec;
    const fs::path base = fs::weakly_canonical(dir_, ec);
    if (ec) throw Error(describe(name) + ": the bundle directory cannot be resolved: " + ec.message());
    const fs::path real = fs::weakly_canonical(full, ec);
    if (ec) throw Error(describe(name) + ": cannot be resolved: " + ec.message());
    const std::string b = base.string(), r = real.string();
    if (r.size() <= b.size() || r.compare(0, b.size(), b) != 0 || r[b.size()] != '/')
      throw Error(describe(name) + ": refused: a symbolic link leads out of the bundle");
    return readFile(full.string());
  }
  std::string describe(const std::string& name) const override { return (fs::path(dir_) / name).string(); }
  std::string directory() const override { return dir_; }

 private:
  std::string dir_;
};

class MemoryResolver final : public BundleResolver {
 public:
  MemoryResolver(std::map<std::string, std::vector<uint8_t>> files, std::string label)
      : files_(std::move(files)), label_(std::move(label)) {}
  bool exists(const std::string& name) const override { return files_.count(name) != 0; }
  std::vector<uint8_t> read(const std::string& name) const override {
    auto it = files_.find(name);
    if (it == files_.end()) throw Error(describe(name) + ": no such file in the bundle");
    return it->second;
  }
  std::string describe(const std::string& name) const override { return label_ + ":" + name; }

 private:
  std::map<std::string, std::vector<uint8_t>> files_;
  std::string label_;
};

nlohmann::json readJson(const BundleResolver& files, const std::string& name) {
  const std::vector<uint8_t> bytes = files.read(name);
  return parseJsonText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                       files.describe(name));
}

bool boolean(const JsonNode& n) {
  if (!n.value.is_boolean()) n.fail("expected true or false");
  return n.value.get<bool>();
}

// A file named by the bundle: it must exist.
std::string fileKey(const JsonNode& n, const BundleResolver& files) {
  const std::string name = n.string();
  if (std::string why = checkName(name); !why.empty()) n.fail(why);
  if (!files.exists(name)) n.fail("names " + files.describe(name) + ", which is not in the bundle");
  return name;
}

LiftTuning parseLift(const JsonNode& n) {
  LiftTuning t;
  if (!n.value.is_object()) n.fail("expected an object");
  static const char* const kKeys[] = {"scale_mult",
                                      "thickness",
                                      "min_scale",
                                      "max_scale",
                                      "triangle_scale",
                                      "max_triangle_distance",
                                      "default_opacity_logit"};
  for (auto it = n.value.begin(); it != n.value.end(); ++it) {
    bool known = false;
    for (const char* k : kKeys) known |= it.key() == k;
    if (!known)
      n.fail("unknown key \"" + it.key() +
             "\" (lift keys: scale_mult, thickness, min_scale, max_scale, triangle_scale, "
             "max_triangle_distance, default_opacity_logit)");
  }
  float* const fields[] = {&t.scale_mult,
                           &t.thickness,
                           &t.min_scale,
                           &t.max_scale,
                           &t.triangle_scale,
                           &t.max_triangle_distance,
                           &t.default_opacity_logit};
  for (size_t k = 0; k < std::size(kKeys); ++k)
    if (n.has(kKeys[k])) *fields[k] = static_cast<float>(n[kKeys[k]].number());
  if (std::string why = t.validate(); !why.empty()) n.fail(why);
  return t;
}

// One branch's keys (a multi_region branch, or the schema_version 1 manifest itself).
BundleBranch parseBranch(const JsonNode& b, const std::string& name, const BundleResolver& files) {
  BundleBranch br;
  br.name = name;
  if (!b.value.is_object()) b.fail("expected an object");
  const JsonNode dec = b["decoders"];
  br.geom = fileKey(dec["geom"], files);
  br.appr = fileKey(dec["appr"], files);
  if (dec.has("trunk")) br.trunk = fileKey(dec["trunk"], files);
  const bool has_bin = b.has("mesh_bin") || b.has("mesh_json"), has_glb = b.has("mesh_glb");
  if (has_bin == has_glb)
    b.fail("a branch names its mesh as mesh_bin + mesh_json or as mesh_glb (exactly one of the two)");
  if (has_bin) {
    br.mesh_bin = fileKey(b["mesh_bin"], files);
    br.mesh_json = fileKey(b["mesh_json"], files);
  } else {
    br.mesh_glb = fileKey(b["mesh_glb"], files);
  }
  br.uv_resolution = b["uv_resolution"].positiveInt();
  if (br.uv_resolution < 2 || br.uv_resolution > 2048) b["uv_resolution"].fail("expected 2..2048 texels");
  if (b.has("lift")) br.lift = parseLift(b["lift"]);
  if (b.has("frame")) {
    const JsonNode f = b["frame"];
    if (f.has("center")) {
      br.frame.center = f["center"].vec3();
      for (int k = 0; k < 3; ++k)
        if (!std::isfinite(br.frame.center[k])) f["center"].fail("expected three numbers that fit a float");
    }
    if (f.has("scale")) {
      const double sc = f["scale"].number();
      if (!(sc >= 1e-6 && sc <= 1e6)) f["scale"].fail("expected a number in 1e-6..1e6");
      br.frame.scale = static_cast<float>(sc);
    }
  }
  if (b.has("static_geometry")) br.static_geometry = boolean(b["static_geometry"]);
  if (b.has("gaze_conditioned")) br.gaze_conditioned = boolean(b["gaze_conditioned"]);
  return br;
}

void parseEngineBlocks(const JsonNode& root, CharacterBundle& out, const BundleResolver& files) {
  if (root.has("rig")) {
    const JsonNode r = root["rig"];
    out.rig.declared = true;
    out.rig.backend = r["backend"].string();
    if (out.rig.backend != "gnm" && out.rig.backend != "skinned" && out.rig.backend != "orl")
      r["backend"].fail("unknown rig backend \"" + out.rig.backend + "\" (gnm, skinned or orl)");
    if (r.has("pack")) out.rig.pack = fileKey(r["pack"], files);
    if (out.rig.backend == "gnm" && out.rig.pack.empty()) r.fail("a gnm rig names its pack (\"pack\")");
    if (r.has("control_names")) {
      const JsonNode names = r["control_names"];
      if (!names.value.is_array()) names.fail("expected an array of names");
      for (size_t i = 0; i < names.value.size(); ++i) out.rig.control_names.push_back(names.at(i).string());
    }
    if (r.has("vertex_count")) {
      const double v = r["vertex_count"].number();
      if (v < 1 || v > 16.0e6 || v != std::floor(v))
        r["vertex_count"].fail("expected a whole number in 1..16000000");
      out.rig.vertex_count = static_cast<int64_t>(v);
    }
  } else if (files.exists("rig_names.json")) {
    // The default rig: orl with the bundle's own control names.
    const nlohmann::json names = readJson(files, "rig_names.json");
    const std::string where = files.describe("rig_names.json");
    const JsonNode n{names, "", where};
    if (!names.is_array()) n.fail("expected an array of control names");
    for (size_t i = 0; i < names.size(); ++i) out.rig.control_names.push_back(n.at(i).string());
  }
  if (root.has("expression_space")) {
    const JsonNode e = root["expression_space"];
    out.expression_space.declared = true;
    out.expression_space.kind = e["kind"].string();
    const std::string& kind = out.expression_space.kind;
    if (kind != "arkit52" && kind != "gnm" && kind != "gnm68")
      e["kind"].fail("unknown expression space \"" + kind + "\" (arkit52, gnm or gnm68)");
    out.expression_space.dim = kind == "arkit52" ? 52 : kind == "gnm68" ? 68 : 387;
    if (e.has("dim")) {
      const int dim = e["dim"].positiveInt();
      if (kind != "gnm" && dim != out.expression_space.dim)
        e["dim"].fail(kind + " has " + std::to_string(out.expression_space.dim) + " values, not " +
                      std::to_string(dim));
      out.expression_space.dim = dim;  // a gnm head of another basis size: coefficients + 4 gaze angles
      if (kind == "gnm" && dim < 5) e["dim"].fail("a gnm space holds its coefficients and the 4 gaze angles");
    }
    if (e.has("segments")) {
      const JsonNode segs = e["segments"];
      if (!segs.value.is_array()) segs.fail("expected an array");
      for (size_t i = 0; i < segs.value.size(); ++i) {
        const JsonNode s = segs.at(i);
        const double start = s["start"].number();
        const int dim = out.expression_space.dim;
        if (start < 0 || start != std::floor(start) || start >= dim)
          s["start"].fail("expected a whole number in 0.." + std::to_string(dim - 1));
        ExpressionSegment seg{s["name"].string(), static_cast<int>(start), s["count"].positiveInt()};
        if (static_cast<int64_t>(seg.start) + seg.count > dim)
          s.fail("the segment leaves the space's " + std::to_string(dim) + " values");
        out.expression_space.segments.push_back(seg);
      }
    }
  }
}

}  // namespace

std::shared_ptr<BundleResolver> directoryResolver(const std::string& dir) {
  return std::make_shared<DirectoryResolver>(dir);
}

std::shared_ptr<BundleResolver> memoryResolver(std::map<std::string, std::vector<uint8_t>> files,
                                               const std::string& label) {
  return std::make_shared<MemoryResolver>(std::move(files), label);
}

bool isCharacterBundle(const BundleResolver& files) {
  if (files.exists("export_manifest.json")) return true;
  if (!files.exists("scene.json")) return false;
  try {
    const nlohmann::json j = readJson(files, "scene.json");
    return j.is_object() && j.contains("mode");
  } catch (const std::exception&) {
    return true;  // a scene.json that does not parse is a broken bundle: its loader says why
  }
}

CharacterBundle loadCharacterBundle(std::shared_ptr<BundleResolver> files) {
  if (!files) throw Error("character bundle: no resolver");
  CharacterBundle out;
  out.files = files;
  if (files->exists("scene.json")) {
    out.where = files->describe("scene.json");
    const nlohmann::json doc = readJson(*files, "scene.json");
    const JsonNode root{doc, "", out.where};
    if (!doc.is_object()) root.fail("expected an object");
    out.layout = "multi_region";
    out.mode = root["mode"].string();
    if (out.mode != "multi_region")
      root["mode"].fail("unknown mode \"" + out.mode + "\" (this engine reads multi_region)");
    const JsonNode order = root["order"];
    if (!order.value.is_array() || order.value.empty())
      order.fail("expected a non-empty array of branch names");
    const JsonNode branches = root["branches"];
    if (!branches.value.is_object()) branches.fail("expected an object of branches by name");
    std::set<std::string> seen;
    if (order.value.size() > kMaxBundleBranches)
      order.fail("lists " + std::to_string(order.value.size()) + " branches; at most " +
                 std::to_string(kMaxBundleBranches));
    for (size_t i = 0; i < order.value.size(); ++i) {
      const std::string name = order.at(i).string();
      if (!seen.insert(name).second) order.at(i).fail("branch \"" + name + "\" is listed twice");
      if (!branches.value.contains(name))
        order.at(i).fail("names branch \"" + name + "\", which \"branches\" does not hold");
      out.branches.push_back(parseBranch(branches[name.c_str()], name, *files));
    }
    parseEngineBlocks(root, out, *files);
  } else if (files->exists("export_manifest.json")) {
    out.where = files->describe("export_manifest.json");
    const nlohmann::json doc = readJson(*files, "export_manifest.json");
    const JsonNode root{doc, "", out.where};
    if (!doc.is_object()) root.fail("expected an object");
    const JsonNode version = root["schema_version"];
    if (version.number() != 1)
      version.fail("schema_version " + version.value.dump() + " is not known (this engine reads 1)");
    out.layout = "schema_version 1";
    out.mode = "fused";
    out.branches.push_back(parseBranch(root, "fused", *files));
    parseEngineBlocks(root, out, *files);
  } else {
    throw Error(files->describe("") + ": not a character bundle (no scene.json or export_manifest.json)");
  }
  // A skinned rig poses the first branch's glTF unless it names one.
  if (out.rig.backend == "skinned" && out.rig.pack.empty()) {
    for (const BundleBranch& b : out.branches)
      if (!b.mesh_glb.empty() && !b.static_geometry) {
        out.rig.pack = b.mesh_glb;
        break;
      }
    if (out.rig.pack.empty())
      throw Error(out.where + ": rig: a skinned rig needs a glTF (\"pack\", or a posed branch's mesh_glb)");
  }
  return out;
}

// mesh_json: {"vertex_count": V, "triangle_count": T, "positions": {"offset": o}, "uvs": {"offset": o},
// "indices": {"offset": o}}; mesh_bin: V x 3 float32, V x 2 float32 and T x 3 uint32, little-endian, at
// those byte offsets.
BranchMesh decodeBranchMesh(std::span<const uint8_t> json, std::span<const uint8_t> bin,
                            const std::string& json_name, const std::string& bin_name) {
  const nlohmann::json doc =
      parseJsonText(std::string_view(reinterpret_cast<const char*>(json.data()), json.size()), json_name);
  const JsonNode root{doc, "", json_name};
  const double v = root["vertex_count"].number(), t = root["triangle_count"].number();
  if (v < 3 || v > 16.0e6 || v != std::floor(v))
    root["vertex_count"].fail("expected a whole number in 3..16000000");
  if (t < 1 || t > 32.0e6 || t != std::floor(t))
    root["triangle_count"].fail("expected a whole number in 1..32000000");
  const size_t vc = static_cast<size_t>(v), tc = static_cast<size_t>(t);
  // Every block inside mesh_bin, checked before anything is allocated (offsets compared as doubles first:
  // no cast of an out-of-range value, no wrapping sum).
  auto block = [&](const char* key, uint64_t bytes) {
    const JsonNode off = root[key]["offset"];
    const double o = off.number();
    if (o < 0 || o != std::floor(o) || o > static_cast<double>(bin.size()) ||
        static_cast<uint64_t>(o) % 4 != 0)
      off.fail("expected a byte offset that is a multiple of 4 inside " + bin_name + " (" +
               std::to_string(bin.size()) + " bytes)");
    const uint64_t start = static_cast<uint64_t>(o);
    if (bytes > bin.size() - start)
      off.fail(bin_name + " holds " + std::to_string(bin.size()) + " bytes; " + key + " needs " +
               std::to_string(bytes) + " bytes from " + std::to_string(start));
    return bin.data() + start;
  };
  const uint8_t* positions = block("positions", uint64_t{12} * vc);
  const uint8_t* uvs = block("uvs", uint64_t{8} * vc);
  const uint8_t* indices = block("indices", uint64_t{12} * tc);
  BranchMesh m;
  m.positions.resize(vc);
  m.uvs.resize(vc);
  m.indices.resize(3 * tc);
  std::memcpy(m.positions.data(), positions, 12 * vc);
  std::memcpy(m.uvs.data(), uvs, 8 * vc);
  std::memcpy(m.indices.data(), indices, 12 * tc);
  for (size_t i = 0; i < vc; ++i) {
    const Vec3 p = m.positions[i];
    if (!std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z) || !std::isfinite(m.uvs[i][0]) ||
        !std::isfinite(m.uvs[i][1]))
      throw Error(bin_name + ": vertex " + std::to_string(i) + " is not finite");
  }
  for (size_t i = 0; i < m.indices.size(); ++i)
    if (m.indices[i] >= vc)
      throw Error(bin_name + ": triangle " + std::to_string(i / 3) + " indexes vertex " +
                  std::to_string(m.indices[i]) + " of " + std::to_string(vc));
  return m;
}

std::pair<std::string, std::vector<uint8_t>> encodeBranchMesh(const BranchMesh& mesh) {
  const size_t vc = mesh.positions.size(), tc = mesh.indices.size() / 3;
  std::vector<uint8_t> bin(20 * vc + 12 * tc);
  std::memcpy(bin.data(), mesh.positions.data(), 12 * vc);
  std::memcpy(bin.data() + 12 * vc, mesh.uvs.data(), 8 * vc);
  std::memcpy(bin.data() + 20 * vc, mesh.indices.data(), 12 * tc);
  nlohmann::json j = {{"vertex_count", vc},
                      {"triangle_count", tc},
                      {"positions", {{"offset", 0}}},
                      {"uvs", {{"offset", 12 * vc}}},
                      {"indices", {{"offset", 20 * vc}}}};
  return {j.dump(2), std::move(bin)};
}

}  // namespace sf::character
