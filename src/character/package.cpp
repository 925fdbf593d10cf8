// Character packages: character.json + splats.ply + bindings.bin + the skin glTF
// (docs/formats/character.md). Hashes, sizes and counts are checked before anything is built.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "character/character.h"
#include "character/corrective.h"
#include "character/mouth.h"
#include "character/package_files.h"
#include "core/error.h"
#include "core/sha256.h"
#include "io/file.h"
#include "io/gltf.h"
#include "io/json.h"
#include "io/ply.h"

namespace sf::character {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kFormat = "splatforge-character";
constexpr int kVersion = 1;

Json fileEntry(const std::string& name, std::span<const uint8_t> bytes, size_t count) {
  Json j;
  j["file"] = name;
  j["bytes"] = bytes.size();
  j["sha256"] = sha256Hex(bytes);
  if (count) j["count"] = count;
  return j;
}

void writeBytes(const fs::path& path, std::span<const uint8_t> bytes) {
  writeFileAtomic(path.string(), bytes);
}

// A file entry of character.json: reads the file and checks size and hash. `what` is the JSON key.
std::vector<uint8_t> readVerified(const fs::path& dir, const Json& root, const char* what,
                                  const std::string& json_path) {
  auto fail = [&](const std::string& why) -> std::vector<uint8_t> {
    throw Error(json_path + ": " + what + ": " + why);
  };
  if (!root.contains(what) || !root[what].is_object()) return fail("missing entry");
  const Json& e = root[what];
  if (!e.contains("file") || !e["file"].is_string()) return fail("missing \"file\"");
  if (!e.contains("sha256") || !e["sha256"].is_string()) return fail("missing \"sha256\"");
  const std::string name = e["file"].get<std::string>();
  if (name.empty() || fs::path(name).is_absolute() || name.find("..") != std::string::npos)
    return fail("file name '" + name + "' must be relative to the package directory");
  const fs::path path = dir / name;
  if (!package_files::exists(path.string())) return fail((path.string() + ": file is missing").c_str());
  std::vector<uint8_t> bytes = package_files::read(path.string());
  if (e.contains("bytes") && e["bytes"].is_number_unsigned() && e["bytes"].get<uint64_t>() != bytes.size())
    return fail(path.string() + ": " + std::to_string(bytes.size()) + " bytes, character.json says " +
                std::to_string(e["bytes"].get<uint64_t>()));
  const std::string hash = sha256Hex(bytes);
  if (hash != e["sha256"].get<std::string>())
    return fail(path.string() + ": SHA-256 " + hash + " does not match character.json's " +
                e["sha256"].get<std::string>());
  return bytes;
}

// Typed optional members: a value of the wrong type is an error naming the key, never a JSON exception.
std::string stringOr(const Json& obj, const char* key, const std::string& fallback,
                     const std::string& where) {
  if (!obj.contains(key)) return fallback;
  if (!obj[key].is_string()) throw Error(where + ": " + key + ": expected a string, got " + obj[key].dump());
  return obj[key].get<std::string>();
}
int64_t integerOr(const Json& obj, const char* key, int64_t fallback, const std::string& where) {
  if (!obj.contains(key)) return fallback;
  if (!obj[key].is_number_integer())
    throw Error(where + ": " + key + ": expected an integer, got " + obj[key].dump());
  return obj[key].get<int64_t>();
}

size_t countOf(const Json& root, const char* what) {
  const Json& e = root[what];
  return e.contains("count") && e["count"].is_number_unsigned() ? e["count"].get<size_t>() : 0;
}

// A package copies one glTF file: a .gltf naming external buffers or images would arrive incomplete.
void requireSelfContained(std::span<const uint8_t> bytes, const std::string& path) {
  if (fs::path(path).extension() != ".gltf") return;  // GLB carries its binary chunk
  Json j = parseJsonText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path);
  for (const char* list : {"buffers", "images"}) {
    if (!j.contains(list) || !j[list].is_array()) continue;
    for (size_t i = 0; i < j[list].size(); ++i) {
      const Json& e = j[list][i];
      if (e.contains("uri") && e["uri"].is_string() && e["uri"].get<std::string>().rfind("data:", 0) != 0)
        throw Error(
            path + ": " + list + "[" + std::to_string(i) + "] refers to the external file '" +
            e["uri"].get<std::string>() +
            "'; a character package holds one self-contained skin file (use a GLB or embedded data URIs)");
    }
  }
}

// An optional part (docs/formats/character-extras.md): character.json's entry `key` ({file_key: name,
// "sha256" when given, "enabled" optional}), else `fallback` beside character.json when it exists.
struct PartFile {
  std::string path;  // empty: absent
  bool enabled = true;
};
PartFile findPart(const fs::path& dir, const Json& root, const char* key, const char* file_key,
                  const char* fallback, const std::string& jp) {
  PartFile p;
  if (!root.contains(key)) {
    if (package_files::exists((dir / fallback).string())) p.path = (dir / fallback).string();
  } else {
    const std::string where = jp + ": " + key;
    const Json& e = root[key];
    if (!e.is_object()) throw Error(where + ": expected an object");
    const std::string name = stringOr(e, file_key, "", where);
    if (name.empty() || fs::path(name).is_absolute() || name.find("..") != std::string::npos)
      throw Error(where + "." + file_key + ": '" + name +
                  "' must be a file name relative to the package directory");
    p.path = (dir / name).string();
    if (!package_files::exists(p.path)) throw Error(where + ": " + p.path + ": file is missing");
    if (e.contains("sha256")) {
      const std::string want = stringOr(e, "sha256", "", where), got = sha256Hex(package_files::read(p.path));
      if (want != got)
        throw Error(where + ": " + p.path + ": SHA-256 " + got + " does not match character.json's " + want);
    }
    if (e.contains("enabled") && !e["enabled"].is_boolean())
      throw Error(where + ".enabled: expected true or false, got " + e["enabled"].dump());
    p.enabled = e.value("enabled", true);
  }
  if (const std::string why = package_files::partRefusal(); !p.path.empty() && !why.empty())
    throw Error(jp + ": " + key + ": " + p.path + ": " + why);
  return p;
}

}  // namespace

void Character::savePackage(const std::string& dir_name) const {
  const fs::path dir(dir_name);
  // Every input is read and checked before anything is written.
  const std::vector<uint8_t> ply = writePly(splats_);
  const std::vector<uint8_t> bindings = encodeBindings(bindings_);
  const std::vector<uint8_t> skin = readFile(skin_path_);
  const std::string skin_name = std::string("skin") + fs::path(skin_path_).extension().string();
  requireSelfContained(skin, skin_path_);
  std::vector<uint8_t> animations;
  std::string animations_name;
  if (!animations_path_.empty()) {
    animations = readFile(animations_path_);
    animations_name = std::string("animations") + fs::path(animations_path_).extension().string();
    requireSelfContained(animations, animations_path_);
  }
  fs::create_directories(dir);
  writeBytes(dir / "splats.ply", ply);
  writeBytes(dir / "bindings.bin", bindings);
  writeBytes(dir / skin_name, skin);
  if (!animations.empty()) writeBytes(dir / animations_name, animations);
  if (mouth_hidden_) writeMouthHidden(dir_name, *mouth_hidden_);  // found beside character.json
  if (teeth_) writeTeeth(dir_name, *teeth_);
  if (corrective_) writeCorrective(dir_name, *corrective_);
  const GltfModel::DrawInfo info = model_->drawInfo(static_cast<size_t>(draw_));
  Json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["splats"] = fileEntry("splats.ply", ply, splats_.size());
  j["bindings"] = fileEntry("bindings.bin", bindings, bindings_.size());
  j["skin"] = fileEntry(skin_name, skin, 0);
  j["skin"]["node"] = info.node;
  j["skin"]["mesh"] = info.mesh;
  j["skin"]["primitive"] = info.primitive;
  if (!animations_name.empty()) j["animations"] = fileEntry(animations_name, animations, 0);
  j["colorSpace"] = splats_.color_space == ColorSpace::kLinear ? "linear" : "srgb";
  j["expressionSpace"] = expression_space_;
  j["defaultClip"] = default_clip_;
  j["source"] = fs::path(source_).filename().string();
  const std::string text = j.dump(2) + "\n";
  writeBytes(dir / "character.json",
             std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Character Character::loadPackage(const std::string& dir_name) {
  const fs::path dir(dir_name);
  const fs::path json_path = dir / "character.json";
  const std::string jp = json_path.string();
  if (!package_files::exists(jp))
    throw Error(jp + ": file is missing (a character package is a directory holding character.json)");
  const std::vector<uint8_t> text = package_files::read(jp);
  Json root = parseJsonText(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), jp);
  if (!root.is_object() || stringOr(root, "format", "", jp) != kFormat)
    throw Error(jp + ": format: expected \"" + std::string(kFormat) + "\"");
  if (integerOr(root, "version", 0, jp) != kVersion)
    throw Error(jp +
                ": version: " + (root.contains("version") ? root["version"].dump() : std::string("missing")) +
                " unsupported (expected 1)");
  // Every file is verified before anything is decoded.
  const std::vector<uint8_t> ply = readVerified(dir, root, "splats", jp);
  const std::vector<uint8_t> bindings_bytes = readVerified(dir, root, "bindings", jp);
  const std::vector<uint8_t> skin_bytes = readVerified(dir, root, "skin", jp);
  const std::vector<uint8_t> animation_bytes =
      root.contains("animations") ? readVerified(dir, root, "animations", jp) : std::vector<uint8_t>{};
  const std::string color_space = stringOr(root, "colorSpace", "srgb", jp);
  if (color_space != "srgb" && color_space != "linear")
    throw Error(jp + ": colorSpace: expected \"srgb\" or \"linear\", got \"" + color_space + "\"");
  const std::string space = stringOr(root, "expressionSpace", "none", jp);
  if (space != "arkit52" && space != "morph" && space != "none")
    throw Error(jp + ": expressionSpace: expected \"arkit52\", \"morph\" or \"none\", got \"" + space + "\"");

  Character c;
  c.source_ = dir_name;
  c.skin_path_ = (dir / root["skin"]["file"].get<std::string>()).string();
  c.splats_ = readPly(ply, (dir / root["splats"]["file"].get<std::string>()).string());
  c.splats_.color_space = color_space == "linear" ? ColorSpace::kLinear : ColorSpace::kSrgb;
  if (const NonFiniteReport bad = findNonFinite(c.splats_);
      bad.rows > 0)  // rows cannot be dropped: bindings align with them
    throw Error(jp + ": splats: " + bad.describe(c.splats_.size()) +
                "; a package's splats are refused rather than realigned");
  c.bindings_ = decodeBindings(bindings_bytes, (dir / root["bindings"]["file"].get<std::string>()).string());
  const size_t splat_count = countOf(root, "splats"), binding_count = countOf(root, "bindings");
  if (splat_count != c.splats_.size())
    throw Error(jp + ": splats.count " + std::to_string(splat_count) + " but the PLY holds " +
                std::to_string(c.splats_.size()));
  if (binding_count != c.bindings_.size() || c.bindings_.size() != c.splats_.size())
    throw Error(jp + ": bindings.count " + std::to_string(binding_count) + ", bindings.bin holds " +
                std::to_string(c.bindings_.size()) + ", the PLY " + std::to_string(c.splats_.size()) +
                " splats; all three must agree");
  {
    // Read from the bytes verified above (a .gltf's external files, if any, through io/gltf_files.h).
    auto baseOf = [](const std::string& path) {
      const std::string d = fs::path(path).parent_path().string();
      return d.empty() ? std::string(".") : d;
    };
    auto model = std::make_shared<GltfModel>(parseGltf(skin_bytes, c.skin_path_, baseOf(c.skin_path_)));
    if (root.contains("animations")) {
      c.animations_path_ = (dir / root["animations"]["file"].get<std::string>()).string();
      model->addRetargetedClips(parseGltf(animation_bytes, c.animations_path_, baseOf(c.animations_path_)));
    }
    c.model_ = std::move(model);
  }
  const Json& skin = root["skin"];
  const int mesh = static_cast<int>(integerOr(skin, "mesh", -1, jp + ": skin")),
            prim = static_cast<int>(integerOr(skin, "primitive", -1, jp + ": skin")),
            node = static_cast<int>(integerOr(skin, "node", -1, jp + ": skin"));
  c.draw_ = c.model_->findDraw(mesh, prim, node);
  if (c.draw_ < 0)
    throw Error(jp + ": skin: node " + std::to_string(node) + " does not draw meshes[" +
                std::to_string(mesh) + "].primitives[" + std::to_string(prim) + "] in " + c.skin_path_);
  c.triangles_ = triangleList(c.model_->primitiveOf(static_cast<size_t>(c.draw_)));
  const size_t tris = c.triangles_.size() / 3;
  const GltfModel::DrawInfo info = c.model_->drawInfo(static_cast<size_t>(c.draw_));
  GltfModel::Pose rest;
  c.model_->pose(-1, 0.0f, rest);
  const size_t joints = info.skin >= 0 ? rest.palettes[static_cast<size_t>(info.skin)].size() : 0;
  for (size_t i = 0; i < c.bindings_.size(); ++i) {
    const SplatBinding& b = c.bindings_[i];
    if (b.kind == BindingKind::kTriangle && b.triangle >= tris)
      throw Error(jp + ": bindings.bin record " + std::to_string(i) + " names triangle " +
                  std::to_string(b.triangle) + " but the bound primitive has " + std::to_string(tris));
    if (b.kind == BindingKind::kJoints)
      for (size_t k = 0; k < 4; ++k)
        if (b.weights[k] != 0 && b.joints[k] >= joints)
          throw Error(jp + ": bindings.bin record " + std::to_string(i) + " names joint " +
                      std::to_string(b.joints[k]) + " but the bound " +
                      (joints ? "skin has " + std::to_string(joints) + " joints"
                              : std::string("primitive has no skin")));
  }
  const std::string offered = expressionSpaceOf(*c.model_, c.draw_);
  if (space != "none" && space != offered)
    throw Error(jp + ": expressionSpace: \"" + space + "\" declared, but the bound mesh of " + c.skin_path_ +
                " offers \"" + offered + "\"" +
                (offered == "none"    ? " (it has no morph targets)"
                 : offered == "morph" ? " (its morph targets are not ARKit-named)"
                                      : ""));
  c.expression_space_ = space;
  c.default_clip_ = stringOr(root, "defaultClip", "", jp);
  if (!c.default_clip_.empty() && c.model_->findClip(c.default_clip_) < 0)
    throw Error(jp + ": defaultClip: '" + c.default_clip_ + "' is not an animation of " + c.skin_path_);
  // Optional parts, checked against the character built so far.
  if (const PartFile m = findPart(dir, root, "mouthHidden", "file", "mouth_hidden.bin", jp);
      !m.path.empty()) {
    const size_t vertices = c.model_->primitiveOf(static_cast<size_t>(c.draw_)).positions.size();
    c.mouth_hidden_ = std::make_shared<MouthHidden>(
        decodeMouthHidden(package_files::read(m.path), m.path, c.splats_.size(), vertices));
    c.enabled_.mouth_hidden = m.enabled;
  }
  if (const PartFile t = findPart(dir, root, "teeth", "file", "teeth.json", jp); !t.path.empty()) {
    c.teeth_ = std::make_shared<Teeth>(readTeeth(t.path, c));
    c.enabled_.teeth = t.enabled;
  }
  if (const PartFile k = findPart(dir, root, "corrective", "index", "corrective/index.json", jp);
      !k.path.empty()) {
    c.corrective_ = std::make_shared<Corrective>(readCorrective(k.path, c));
    c.enabled_.corrective = k.enabled;
  }
  return c;
}

}  // namespace sf::character
