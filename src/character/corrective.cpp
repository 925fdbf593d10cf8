// Pose correctives (see corrective.h): corrective/index.json and its files, the drives and the per-frame
// CPU reference, and the optional parts' report for `character info`.
#include "character/corrective.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "character/mouth.h"
#include "core/error.h"
#include "core/half.h"
#include "core/sha256.h"
#include "io/byte_writer.h"
#include "io/file.h"
#include "io/json.h"
#include "io/ply.h"

namespace sf::character {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr float kDegrees = 57.29577951308232f;
// index.json's keys of a correction's five files, and the names the writer gives them.
constexpr const char* kFileKeys[5] = {"fade", "side", "points", "pointsBindings", "pointsSide"};
constexpr const char* kFileNames[5] = {"fade.bin", "side.bin", "points.ply", "points_bindings.bin",
                                       "points_side.bin"};

// Rotation of a model matrix with its scale removed (columns normalised).
Mat3 rotationOf(const Mat4& m) {
  Mat3 r = m.linear();
  for (int c = 0; c < 3; ++c) {
    const float len = std::sqrt(r.m[0][c] * r.m[0][c] + r.m[1][c] * r.m[1][c] + r.m[2][c] * r.m[2][c]);
    if (len > 0)
      for (int k = 0; k < 3; ++k) r.m[k][c] /= len;
  }
  return r;
}

double wholeNumber(const JsonNode& n, double lo, double hi) {
  const double d = n.number();
  if (d != std::floor(d) || d < lo || d > hi)
    n.fail("expected a whole number in " + std::to_string(static_cast<int64_t>(lo)) + ".." +
           std::to_string(static_cast<int64_t>(hi)));
  return d;
}

float degreesIn(const JsonNode& n) {
  const double d = n.number();
  if (d < 0 || d > 180) n.fail("expected degrees in 0..180, got " + n.value.dump());
  return static_cast<float>(d);
}

JointRef jointRefOf(const JsonNode& n) {
  JointRef r;
  if (n.value.is_string()) {
    r.name = n.string();
    if (r.name.empty()) n.fail("expected a joint name or a skin joint index, got an empty name");
  } else if (n.value.is_number()) {
    r.skin_index = static_cast<int>(wholeNumber(n, 0, 65535));
  } else {
    n.fail("expected a joint name or a skin joint index, got " + std::string(n.value.type_name()));
  }
  return r;
}

Json jointRefJson(const JointRef& r) {
  return r.name.empty() ? Json(r.skin_index) : Json(r.name);
}

// The skeleton joint a reference names in the character, or -1 with `why` set.
int resolveJoint(const JointRef& r, const Character& c, std::string* why) {
  const GltfModel& m = c.model();
  if (!r.name.empty()) {
    const int j = m.skeleton().find(r.name);
    if (j < 0) *why = "joint '" + r.name + "' is not in the skeleton of " + m.document().path;
    return j;
  }
  const int node = m.drawInfo(static_cast<size_t>(c.boundDraw())).node;
  const int skin = node >= 0 ? m.document().nodes[static_cast<size_t>(node)].skin : -1;
  if (skin < 0) {
    *why = "skin joint index " + std::to_string(r.skin_index) + " but the bound mesh has no skin";
    return -1;
  }
  const std::vector<int>& joints = m.document().skins[static_cast<size_t>(skin)].joints;
  if (r.skin_index < 0 || static_cast<size_t>(r.skin_index) >= joints.size()) {
    *why = "skin joint index " + std::to_string(r.skin_index) + " but the skin has " +
           std::to_string(joints.size()) + " joints";
    return -1;
  }
  const int j = m.skeleton().findSource(joints[static_cast<size_t>(r.skin_index)]);
  if (j < 0) *why = "skin joint " + std::to_string(r.skin_index) + " is not a joint of the skeleton";
  return j;
}

// A correction's file: "name" or {"file": "name", "sha256": "…"}, relative to the index's folder.
std::vector<uint8_t> readEntry(const fs::path& dir, const JsonNode& n, std::string* path_out) {
  const JsonNode file = n.value.is_object() ? n["file"] : n;
  const std::string name = file.string();
  if (name.empty() || fs::path(name).is_absolute() || name.find("..") != std::string::npos)
    file.fail("'" + name + "' must be a relative path inside " + dir.string());
  *path_out = (dir / name).string();
  std::vector<uint8_t> bytes = readFile(*path_out);
  if (n.value.is_object() && n.has("sha256")) {
    const std::string want = n["sha256"].string(), got = sha256Hex(bytes);
    if (want != got) n["sha256"].fail(*path_out + ": SHA-256 " + got + " does not match " + want);
  }
  return bytes;
}

void checkCount(std::span<const uint8_t> bytes, const std::string& name, size_t count, size_t width) {
  const uint64_t need = uint64_t{count} * width;
  if (bytes.size() != need)
    throw FormatError(name, std::min<uint64_t>(bytes.size(), need),
                      std::to_string(count) + " values need " + std::to_string(need) +
                          " bytes, the file has " + std::to_string(bytes.size()) +
                          (bytes.size() < need ? " (truncated)" : " (trailing bytes)"));
}

}  // namespace

std::vector<float> decodeFade(std::span<const uint8_t> bytes, const std::string& name, size_t count) {
  checkCount(bytes, name, count, 2);
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    const float v = halfToFloat(static_cast<uint16_t>(bytes[2 * i] | bytes[2 * i + 1] << 8));
    if (!(v >= 0 && v <= 1))
      throw FormatError(name, 2 * i,
                        "splat " + std::to_string(i) + ": fade " + std::to_string(v) +
                            " is not an opacity factor in [0, 1]");
    out[i] = v;
  }
  return out;
}

std::vector<uint8_t> decodeSides(std::span<const uint8_t> bytes, const std::string& name, size_t count) {
  checkCount(bytes, name, count, 1);
  for (size_t i = 0; i < count; ++i)
    if (bytes[i] > 1)
      throw FormatError(name, i,
                        "splat " + std::to_string(i) + ": side " + std::to_string(bytes[i]) +
                            " (expected 0 left or 1 right)");
  return {bytes.begin(), bytes.end()};
}

std::vector<uint8_t> encodeFade(std::span<const float> fade) {
  std::vector<uint8_t> out;
  out.reserve(fade.size() * 2);
  for (float f : fade) putLE(out, floatToHalf(f));
  return out;
}

void resolveCorrective(Corrective& c, const Character& character, const std::string& where) {
  GltfModel::Pose rest;
  character.model().pose(-1, 0.0f, rest);
  for (size_t i = 0; i < c.corrections.size(); ++i)
    for (size_t k = 0; k < 2; ++k) {
      CorrectiveDrive& d = c.corrections[i].drives[k];
      const std::string at =
          where + ": corrections[" + std::to_string(i) + "].drives[" + std::to_string(k) + "].";
      std::string why;
      for (size_t b = 0; b < 2; ++b)
        if ((d.bone_joint[b] = resolveJoint(d.bone[b], character, &why)) < 0)
          throw Error(at + "bone[" + std::to_string(b) + "]: " + why);
      if ((d.frame_joint = resolveJoint(d.frame, character, &why)) < 0) throw Error(at + "frame: " + why);
      const Vec3 a = rest.models[static_cast<size_t>(d.bone_joint[0])].translation(),
                 b = rest.models[static_cast<size_t>(d.bone_joint[1])].translation();
      if (!(length(b - a) > 0)) throw Error(at + "bone: the two joints coincide at rest (no arm direction)");
      d.frame_rest = rotationOf(rest.models[static_cast<size_t>(d.frame_joint)]);
    }
}

Corrective readCorrective(const std::string& index_path, const Character& character) {
  const std::vector<uint8_t> text = readFile(index_path);
  const Json root =
      parseJsonText(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), index_path);
  const JsonNode n{root, "", index_path};
  if (!root.is_object()) n.fail("expected an object");
  if (n["format"].string() != kCorrectiveFormat)
    n["format"].fail("expected \"" + std::string(kCorrectiveFormat) + "\"");
  if (n["version"].number() != kCorrectiveVersion)
    n["version"].fail(n["version"].value.dump() + " unsupported (expected 1)");
  const JsonNode list = n["corrections"];
  if (!list.value.is_array()) list.fail("expected an array");
  if (list.value.size() > kMaxCorrections)
    list.fail(std::to_string(list.value.size()) + " corrections; at most 2 play (four weight slots)");
  const fs::path dir = fs::path(index_path).parent_path();
  const size_t splats = character.splats().size(), triangles = character.triangles().size() / 3;
  GltfModel::Pose rest;
  character.model().pose(-1, 0.0f, rest);
  const int skin = character.model().drawInfo(static_cast<size_t>(character.boundDraw())).skin;
  const size_t joints = skin >= 0 ? rest.palettes[static_cast<size_t>(skin)].size() : 0;
  Corrective c;
  for (size_t i = 0; i < list.value.size(); ++i) {
    const JsonNode cn = list.at(i);
    Correction& k = c.corrections.emplace_back();
    k.name = cn["name"].string();
    if (k.name.empty()) cn["name"].fail("expected a non-empty name");
    if (wholeNumber(cn["splatCount"], 0, 4294967295.0) != static_cast<double>(splats))
      cn["splatCount"].fail(cn["splatCount"].value.dump() + " but the package has " + std::to_string(splats) +
                            " splats");
    const size_t points = static_cast<size_t>(wholeNumber(cn["points"], 0, 4294967295.0));
    const JsonNode drives = cn["drives"];
    if (!drives.value.is_array() || drives.value.size() != 2)
      drives.fail("expected two drives (side 0 and side 1)");
    for (size_t s = 0; s < 2; ++s) {
      const JsonNode dn = drives.at(s);
      CorrectiveDrive& d = k.drives[s];
      d.side = static_cast<uint32_t>(wholeNumber(dn["side"], 0, 1));
      const JsonNode bone = dn["bone"];
      if (!bone.value.is_array() || bone.value.size() != 2)
        bone.fail("expected [upper arm joint, the joint after it]");
      for (size_t b = 0; b < 2; ++b) d.bone[b] = jointRefOf(bone.at(b));
      d.frame = jointRefOf(dn["frame"]);
      d.rest_deg = degreesIn(dn["restDeg"]);
      d.from_deg = degreesIn(dn["fromDeg"]);
      d.to_deg = degreesIn(dn["toDeg"]);
      if (d.from_deg == d.to_deg) dn["toDeg"].fail("must differ from fromDeg");
      if (dn.has("curve") && dn["curve"].string() != "smoothstep")
        dn["curve"].fail("\"" + dn["curve"].string() + "\" unknown (expected \"smoothstep\")");
    }
    if (k.drives[0].side == k.drives[1].side)
      drives.at(1)["side"].fail("both drives take side " + std::to_string(k.drives[0].side) +
                                "; one must be 0, the other 1");
    const JsonNode files = cn["files"];
    if (!files.value.is_object()) files.fail("expected an object naming the five files");
    std::string path;
    k.fade = decodeFade(readEntry(dir, files[kFileKeys[0]], &path), path, splats);
    k.side = decodeSides(readEntry(dir, files[kFileKeys[1]], &path), path, splats);
    const std::vector<uint8_t> ply = readEntry(dir, files[kFileKeys[2]], &path);
    k.points = readPly(ply, path);
    k.points.color_space = character.splats().color_space;
    if (const NonFiniteReport bad = findNonFinite(k.points); bad.rows > 0)
      files[kFileKeys[2]].fail(path + ": " + bad.describe(k.points.size()));
    if (k.points.size() != points)
      cn["points"].fail(std::to_string(points) + " but " + path + " holds " +
                        std::to_string(k.points.size()) + " splats");
    k.point_bindings = decodeBindings(readEntry(dir, files[kFileKeys[3]], &path), path);
    if (k.point_bindings.size() != points)
      cn["points"].fail(std::to_string(points) + " but " + path + " holds " +
                        std::to_string(k.point_bindings.size()) + " bindings");
    for (size_t b = 0; b < points; ++b) {
      const SplatBinding& sb = k.point_bindings[b];
      if (sb.kind == BindingKind::kTriangle && sb.triangle >= triangles)
        files[kFileKeys[3]].fail(path + ": record " + std::to_string(b) + " names triangle " +
                                 std::to_string(sb.triangle) + " of " + std::to_string(triangles));
      if (sb.kind == BindingKind::kJoints)
        for (size_t q = 0; q < 4; ++q)
          if (sb.weights[q] != 0 && sb.joints[q] >= joints)
            files[kFileKeys[3]].fail(path + ": record " + std::to_string(b) + " names joint " +
                                     std::to_string(sb.joints[q]) + " of " + std::to_string(joints));
    }
    k.point_side = decodeSides(readEntry(dir, files[kFileKeys[4]], &path), path, points);
  }
  resolveCorrective(c, character, index_path);
  return c;
}

void writeCorrective(const std::string& package_dir, const Corrective& c) {
  const fs::path dir = fs::path(package_dir) / "corrective";
  Json index;
  index["format"] = kCorrectiveFormat;
  index["version"] = kCorrectiveVersion;
  index["corrections"] = Json::array();
  for (size_t i = 0; i < c.corrections.size(); ++i) {
    const Correction& k = c.corrections[i];
    const std::vector<uint8_t> bytes[5] = {encodeFade(k.fade), k.side, writePly(k.points),
                                           encodeBindings(k.point_bindings), k.point_side};
    fs::create_directories(dir / std::to_string(i));
    Json e;
    e["name"] = k.name;
    e["splatCount"] = k.fade.size();
    e["points"] = k.points.size();
    e["drives"] = Json::array();
    for (const CorrectiveDrive& d : k.drives)
      e["drives"].push_back({{"side", d.side},
                             {"bone", {jointRefJson(d.bone[0]), jointRefJson(d.bone[1])}},
                             {"frame", jointRefJson(d.frame)},
                             {"restDeg", d.rest_deg},
                             {"fromDeg", d.from_deg},
                             {"toDeg", d.to_deg},
                             {"curve", "smoothstep"}});
    for (size_t f = 0; f < 5; ++f) {
      const std::string name = std::to_string(i) + "/" + kFileNames[f];
      writeFileAtomic((dir / name).string(), bytes[f]);
      e["files"][kFileKeys[f]] = {{"file", name}, {"sha256", sha256Hex(bytes[f])}};
    }
    index["corrections"].push_back(e);
  }
  const std::string text = index.dump(2) + "\n";
  fs::create_directories(dir);
  writeFileAtomic((dir / "index.json").string(),
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

float driveAngle(const CorrectiveDrive& d, const GltfModel::Pose& pose) {
  for (int j : {d.bone_joint[0], d.bone_joint[1], d.frame_joint})
    if (j < 0 || static_cast<size_t>(j) >= pose.models.size())
      throw Error("corrective drive: joint " + std::to_string(j) +
                  " unresolved or outside the pose (resolveCorrective first)");
  const Vec3 a = pose.models[static_cast<size_t>(d.bone_joint[0])].translation(),
             b = pose.models[static_cast<size_t>(d.bone_joint[1])].translation();
  const Vec3 dir = normalize(b - a);
  const Vec3 in_rest =
      d.frame_rest * (transpose(rotationOf(pose.models[static_cast<size_t>(d.frame_joint)])) * dir);
  return kDegrees * std::acos(std::clamp(-in_rest.y, -1.0f, 1.0f));
}

float driveWeight(const CorrectiveDrive& d, float theta_deg) {
  const float t = std::clamp((theta_deg - d.from_deg) / (d.to_deg - d.from_deg), 0.0f, 1.0f);
  return t * t * (3 - 2 * t);
}

CorrectiveWeights correctiveWeights(const Corrective& c, const GltfModel::Pose& pose) {
  CorrectiveWeights w;
  for (size_t i = 0; i < c.corrections.size() && i < kMaxCorrections; ++i)
    for (const CorrectiveDrive& d : c.corrections[i].drives) {
      const size_t slot = 2 * i + d.side;
      w.angle_deg[slot] = driveAngle(d, pose);
      w.weight[slot] = driveWeight(d, w.angle_deg[slot]);
    }
  return w;
}

void applyCorrective(const Corrective& c, const Character& character, Character::Frame& f) {
  const CorrectiveWeights w = correctiveWeights(c, f.pose);
  if (!w.any()) return;
  for (size_t i = 0; i < c.corrections.size() && i < kMaxCorrections; ++i) {
    const Correction& k = c.corrections[i];
    const float ws[2] = {w.weight[2 * i], w.weight[2 * i + 1]};
    if (!(ws[0] > 0 || ws[1] > 0)) continue;
    const std::span<float> opacity = character.frameOpacities(f);
    for (size_t s = 0; s < k.fade.size(); ++s)
      if (const float ww = ws[k.side[s]]; ww > 0) opacity[s] *= 1 - ww * (1 - k.fade[s]);
    if (k.points.size() == 0) continue;
    Character::Part p;
    p.name = "corrective " + k.name;
    p.cloud = &k.points;
    p.positions.resize(k.points.size());
    p.covariances.resize(k.points.size());
    DeformJob job;
    job.bindings = k.point_bindings;
    job.vertices = character.posedVertices(f);
    if (!job.vertices.empty()) job.indices = character.triangles();
    job.palette = character.palette(f);
    job.out_positions = p.positions;
    job.out_covariances = p.covariances;
    job.run();
    p.opacities.resize(k.points.size());
    for (size_t j = 0; j < k.points.size(); ++j) p.opacities[j] = k.points.opacities[j] * ws[k.point_side[j]];
    f.parts.push_back(std::move(p));
  }
}

std::string describeParts(const Character& c, bool json) {
  const MouthHidden* m = c.mouthHidden();
  const Teeth* t = c.teeth();
  const Corrective* k = c.corrective();
  size_t kinds[4] = {0, 0, 0, 0};
  if (m)
    for (const HiddenSplat& s : m->splats) ++kinds[static_cast<uint32_t>(s.kind)];
  CorrectiveWeights w;
  if (k) {
    Character::Frame rest;
    c.pose(-1, 0.0f, rest);
    w = correctiveWeights(*k, rest.pose);
  }
  const Character::PartSwitches& on = c.enabledParts();
  if (json) {
    Json j = Json::object();
    j["mouth_hidden"] = m ? Json{{"splats", m->splats.size()},
                                 {"plugs", kinds[1]},
                                 {"inside", kinds[2]},
                                 {"lip_band", kinds[3]},
                                 {"enabled", on.mouth_hidden}}
                          : Json(nullptr);
    j["teeth"] = Json(nullptr);
    if (t) {
      j["teeth"] = Json{{"splats", t->splats.size()},
                        {"lip_pairs", t->lips.size()},
                        {"enabled", on.teeth},
                        {"meshes", Json::array()}};
      for (const MouthMesh& mm : t->meshes)
        j["teeth"]["meshes"].push_back(
            {{"vertices", mm.vertices.size()}, {"triangles", mm.indices.size() / 3}});
    }
    j["corrective"] = Json(nullptr);
    if (k) {
      j["corrective"] = Json{{"enabled", on.corrective}, {"corrections", Json::array()}};
      for (size_t i = 0; i < k->corrections.size(); ++i) {
        Json e{{"name", k->corrections[i].name},
               {"points", k->corrections[i].points.size()},
               {"drives", Json::array()}};
        for (const CorrectiveDrive& d : k->corrections[i].drives)
          e["drives"].push_back({{"side", d.side},
                                 {"rest_deg", d.rest_deg},
                                 {"from_deg", d.from_deg},
                                 {"to_deg", d.to_deg},
                                 {"angle_at_rest_deg", w.angle_deg[2 * i + d.side]},
                                 {"weight_at_rest", w.weight[2 * i + d.side]}});
        j["corrective"]["corrections"].push_back(e);
      }
    }
    return "\"parts\": " + j.dump();
  }
  auto fixed = [](float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(v));
    return std::string(buf);
  };
  std::string out;
  const char* off = " (disabled)";
  if (m)
    out += "mouth:       " + std::to_string(m->splats.size()) +
           " hidden splats: " + std::to_string(kinds[1]) + " plugs, " + std::to_string(kinds[2]) +
           " inside points, " + std::to_string(kinds[3]) + " lip band" + (on.mouth_hidden ? "" : off) + "\n";
  if (t) {
    size_t vertices = 0, triangles = 0;
    for (const MouthMesh& mm : t->meshes) vertices += mm.vertices.size(), triangles += mm.indices.size() / 3;
    out += "teeth:       " + std::to_string(t->splats.size()) + " splats, " + std::to_string(t->lips.size()) +
           " lip pairs" +
           (t->meshes.empty()
                ? std::string()
                : ", " + std::to_string(t->meshes.size()) + " mouth meshes (" + std::to_string(vertices) +
                      " vertices, " + std::to_string(triangles) + " triangles)") +
           (on.teeth ? "" : off) + "\n";
  }
  if (k)
    for (size_t i = 0; i < k->corrections.size(); ++i) {
      out += "corrective:  " + k->corrections[i].name + ": " +
             std::to_string(k->corrections[i].points.size()) + " new points" + (on.corrective ? "" : off);
      for (const CorrectiveDrive& d : k->corrections[i].drives)
        out += std::string("; ") + (d.side == 0 ? "left" : "right") + " " +
               fixed(w.angle_deg[2 * i + d.side]) + " deg at rest (file " + fixed(d.rest_deg) + "), weight " +
               fixed(w.weight[2 * i + d.side]) + " (" + fixed(d.from_deg) + " to " + fixed(d.to_deg) +
               " deg)";
      out += "\n";
    }
  if (out.empty()) out = "parts:       none\n";
  return out;
}

}  // namespace sf::character
