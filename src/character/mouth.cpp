// The inside of the mouth (see mouth.h): mouth_hidden.bin and teeth.json / teeth.ply / teeth.bin, their
// readers and writers, and the per-frame CPU reference.
#include "character/mouth.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/covariance.h"
#include "core/error.h"
#include "core/sha256.h"
#include "io/byte_reader.h"
#include "io/byte_writer.h"
#include "io/file.h"
#include "io/json.h"
#include "io/ply.h"
#include "render/mesh_shared.h"

namespace sf::character {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr char kHiddenMagic[8] = {'A', 'O', 'S', 'M', 'H', 'D', '0', '1'};
constexpr char kTeethMagic[8] = {'A', 'O', 'S', 'T', 'T', 'H', '0', '1'};
constexpr char kMeshesMagic[8] = {'A', 'O', 'S', 'M', 'M', 'S', '0', '1'};
constexpr const char* kTeethFormat = "aosrig-splat-teeth";
static_assert(2 * kMaxLipPairs <= SF_MESH_MASK_MAX, "the lip opening must fit a mesh mask");

std::string recordPrefix(size_t i) {
  return "record " + std::to_string(i) + ": ";
}

// A finite, non-zero axis from the file, normalised.
Vec3 readAxis(ByteReader& r, const char* what) {
  const size_t at = r.offset();
  Vec3 v;
  for (int k = 0; k < 3; ++k) v[k] = r.readLE<float>(what);
  const float len = length(v);  // overflows to infinity for huge components: refused as well
  if (!std::isfinite(v.x) || !std::isfinite(v.y) || !std::isfinite(v.z) || !(len > 1e-6f) ||
      !std::isfinite(len))
    r.failAt(at, std::string(what) + " must be a finite, non-zero vector of finite length");
  return normalize(v);
}

// Checks the magic and reads the record count, refusing a count the remaining bytes cannot hold (before
// anything is allocated) or bytes left over after the records.
// Checks a file's 8-byte magic and steps past it.
void readMagic(ByteReader& r, const char (&magic)[8], const char* what) {
  if (r.size() < 8 || std::memcmp(r.data().data(), magic, 8) != 0)
    r.failAt(0, std::string("not ") + what + " (magic " + std::string(magic, 8) + " expected)");
  r.skip(8, "magic");
}

uint32_t readHeader(ByteReader& r, const char (&magic)[8], const char* what, size_t header_bytes,
                    size_t record_bytes) {
  readMagic(r, magic, what);
  const uint32_t count = r.readLE<uint32_t>("record count");
  if (r.size() < header_bytes) r.need(header_bytes - r.offset(), "the header");
  const uint64_t need = uint64_t{count} * record_bytes, have = r.size() - header_bytes;
  if (need != have)
    r.failAt(8, std::to_string(count) + " records need " + std::to_string(need) + " bytes after the " +
                    std::to_string(header_bytes) + "-byte header, the file has " + std::to_string(have) +
                    (need > have ? " (truncated)" : " (trailing bytes)"));
  return count;
}

// A file named by a part's JSON: relative to `dir`, inside it (no ".."), read and checked against its
// "sha256" when given.
std::vector<uint8_t> readNamedFile(const fs::path& dir, const JsonNode& entry, std::string* path_out) {
  const std::string name = entry["file"].string();
  if (name.empty() || fs::path(name).is_absolute() || name.find("..") != std::string::npos)
    entry["file"].fail("'" + name + "' must be a relative path inside " + dir.string());
  const std::string path = (dir / name).string();
  std::vector<uint8_t> bytes = readFile(path);
  if (entry.has("sha256")) {
    const std::string want = entry["sha256"].string(), got = sha256Hex(bytes);
    if (want != got) entry["sha256"].fail(path + ": SHA-256 " + got + " does not match " + want);
  }
  *path_out = path;
  return bytes;
}

uint32_t indexBelow(const JsonNode& n, size_t limit, const char* what) {
  const double d = n.number();
  if (d != std::floor(d) || d < 0 || d >= static_cast<double>(limit))
    n.fail("expected " + std::string(what) + " index in 0.." + std::to_string(limit == 0 ? 0 : limit - 1) +
           ", got " + n.value.dump());
  return static_cast<uint32_t>(d);
}

Vec3 axisOf(const JsonNode& n) {
  const Vec3 v = n.vec3();
  if (!(length(v) > 1e-6f)) n.fail("expected a non-zero vector");
  return normalize(v);
}

void writeText(const fs::path& path, const std::string& text) {
  writeFileAtomic(path.string(),
                  std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// Linear part of the blended skin matrix of a vertex of the bound mesh in a frame (identity when the mesh
// is not skinned or the vertex has no weight): the head's rotation at the upper lip.
Mat3 skinLinear(const Character& c, const Character::Frame& f, uint32_t v) {
  const std::span<const Mat4> palette = c.palette(f);
  const GltfPrimitive& prim = c.model().primitiveOf(static_cast<size_t>(c.boundDraw()));
  if (palette.empty() || v >= prim.joints0.size() || v >= prim.weights0.size()) return Mat3{};
  Mat3 a = Mat3::diagonal({0, 0, 0});
  float sum = 0;
  for (int set = 0; set < 2; ++set) {
    const auto& joints = set == 0 ? prim.joints0 : prim.joints1;
    const auto& weights = set == 0 ? prim.weights0 : prim.weights1;
    if (v >= joints.size() || v >= weights.size()) continue;
    for (size_t k = 0; k < 4; ++k) {
      const float w = weights[v][k];
      if (w == 0 || joints[v][k] >= palette.size()) continue;
      const Mat3 l = palette[joints[v][k]].linear();
      for (int r = 0; r < 3; ++r)
        for (int col = 0; col < 3; ++col) a.m[r][col] += w * l.m[r][col];
      sum += w;
    }
  }
  return sum > 0 ? a : Mat3{};
}

std::span<const Vec3> restVertices(const Character& c) {
  return c.model().primitiveOf(static_cast<size_t>(c.boundDraw())).positions;
}

std::span<const Vec3> posedChecked(const Character& c, const Character::Frame& f) {
  const std::span<const Vec3> posed = c.posedVertices(f);
  if (posed.size() != restVertices(c).size())
    throw Error(c.source() +
                ": the mouth parts need the frame's posed vertices of the bound mesh (a CPU-deformed frame)");
  return posed;
}

float gapOf(const Character& c, const Character::Frame& f, std::span<const Vec3> posed, Vec3 up,
            uint32_t upper, uint32_t lower, Vec3* up_now) {
  const std::span<const Vec3> rest = restVertices(c);
  const Vec3 u = normalize(skinLinear(c, f, upper) * up);
  if (up_now) *up_now = u;
  return std::max(0.0f, dot(posed[upper] - posed[lower], u) - dot(rest[upper] - rest[lower], up));
}

// Orthonormal frame of a triangle: columns e1 / |e1|, n x e1 / |..|, n (unit normal).
Mat3 orthonormalFrame(Vec3 v0, Vec3 v1, Vec3 v2) {
  const Vec3 e1 = normalize(v1 - v0), n = normalize(cross(v1 - v0, v2 - v0)), b = cross(n, e1);
  Mat3 t;
  for (int k = 0; k < 3; ++k) t.m[k][0] = e1[k], t.m[k][1] = b[k], t.m[k][2] = n[k];
  return t;
}

// Caps the sizes of a covariance at `cap` by `ramp`: s -> s - ramp max(0, s - cap), through its
// eigen-decomposition; left bit for bit when no size exceeds the cap.
void capSizes(Cov6& cov, float cap, float ramp) {
  ScaleRotation sr = decomposeCovariance(cov);
  bool changed = false;
  for (int k = 0; k < 3; ++k)
    if (sr.scale[k] > cap) sr.scale[k] -= ramp * (sr.scale[k] - cap), changed = true;
  if (changed) cov = covarianceFromScaleRotation(sr.scale, sr.rotation);
}

}  // namespace

float smoothstep(float e0, float e1, float x) {
  const float t = std::clamp((x - e0) / (e1 - e0), 0.0f, 1.0f);
  return t * t * (3 - 2 * t);
}

// --- mouth_hidden.bin -------------------------------------------------------------------------------------

std::vector<uint8_t> encodeMouthHidden(const MouthHidden& m) {
  std::vector<uint8_t> out(kHiddenMagic, kHiddenMagic + 8);
  out.reserve(kMouthHiddenHeaderBytes + m.splats.size() * kMouthHiddenRecordBytes);
  putLE(out, static_cast<uint32_t>(m.splats.size()));
  for (int k = 0; k < 3; ++k) putLE(out, m.up[k]);
  for (int k = 0; k < 3; ++k) putLE(out, m.forward[k]);
  for (const HiddenSplat& s : m.splats) {
    putLE(out, s.row);
    putLE(out, static_cast<uint32_t>(s.kind));
    putLE(out, s.upper);
    putLE(out, s.lower);
  }
  return out;
}

MouthHidden decodeMouthHidden(std::span<const uint8_t> bytes, const std::string& name, size_t splat_count,
                              size_t vertex_count) {
  ByteReader r(bytes, name);
  const uint32_t count =
      readHeader(r, kHiddenMagic, "a mouth_hidden file", kMouthHiddenHeaderBytes, kMouthHiddenRecordBytes);
  MouthHidden m;
  m.up = readAxis(r, "head up");
  m.forward = readAxis(r, "head forward");
  m.splats.resize(count);
  std::vector<uint8_t> seen(splat_count, 0);
  for (size_t i = 0; i < count; ++i) {
    HiddenSplat& s = m.splats[i];
    const size_t at = r.offset();
    s.row = r.readLE<uint32_t>("row");
    const uint32_t kind = r.readLE<uint32_t>("kind");
    s.upper = r.readLE<uint32_t>("upper lip vertex");
    s.lower = r.readLE<uint32_t>("lower lip vertex");
    if (s.row >= splat_count)
      r.failAt(at, recordPrefix(i) + "row " + std::to_string(s.row) + " but the package has " +
                       std::to_string(splat_count) + " splats");
    if (seen[s.row]) r.failAt(at, recordPrefix(i) + "row " + std::to_string(s.row) + " listed twice");
    seen[s.row] = 1;
    if (kind < 1 || kind > 3)
      r.failAt(at + 4, recordPrefix(i) + "kind " + std::to_string(kind) +
                           " unknown (1 plug, 2 inside point, 3 lip band)");
    s.kind = static_cast<HiddenKind>(kind);
    for (const auto& [v, off, what] : {std::tuple{s.upper, 8, "upper"}, std::tuple{s.lower, 12, "lower"}})
      if (v >= vertex_count)
        r.failAt(at + static_cast<size_t>(off), recordPrefix(i) + what + " lip vertex " + std::to_string(v) +
                                                    " but the bound mesh has " +
                                                    std::to_string(vertex_count) + " vertices");
    if (s.upper == s.lower)
      r.failAt(at + 8, recordPrefix(i) + "the upper and lower lip vertex are the same (" +
                           std::to_string(s.upper) + ")");
  }
  return m;
}

void writeMouthHidden(const std::string& package_dir, const MouthHidden& m) {
  fs::create_directories(package_dir);
  writeFileAtomic((fs::path(package_dir) / "mouth_hidden.bin").string(), encodeMouthHidden(m));
}

// --- teeth ----------------------------------------------------------------------------------------------

namespace {

void putTeethPoint(std::vector<uint8_t>& out, const TeethPoint& p) {
  putLE(out, p.triangle);
  for (float b : p.barycentrics) putLE(out, b);
  putLE(out, p.offset);
  putLE(out, p.setback);
}

// One 24-byte teeth.bin record (also a mouth mesh's vertex), checked; `prefix` names it in errors.
TeethPoint readTeethPoint(ByteReader& r, const std::string& prefix, size_t triangle_count) {
  TeethPoint p;
  const size_t at = r.offset();
  p.triangle = r.readLE<uint32_t>("triangle");
  for (float& b : p.barycentrics) b = r.readLE<float>("barycentric");
  p.offset = r.readLE<float>("offset");
  p.setback = r.readLE<float>("set-back");
  if (p.triangle >= triangle_count)
    r.failAt(at, prefix + "triangle " + std::to_string(p.triangle) + " but the bound mesh has " +
                     std::to_string(triangle_count));
  const float sum = p.barycentrics[0] + p.barycentrics[1] + p.barycentrics[2];
  if (!std::isfinite(sum) || std::abs(sum - 1) > 1e-3f)
    r.failAt(at + 4, prefix + "barycentrics must be finite and sum to 1");
  if (!std::isfinite(p.offset) || !std::isfinite(p.setback))
    r.failAt(at + 16, prefix + "offset and set-back must be finite");
  return p;
}

}  // namespace

std::vector<uint8_t> encodeTeethPoints(std::span<const TeethPoint> points) {
  std::vector<uint8_t> out(kTeethMagic, kTeethMagic + 8);
  out.reserve(kTeethHeaderBytes + points.size() * kTeethRecordBytes);
  putLE(out, static_cast<uint32_t>(points.size()));
  for (const TeethPoint& p : points) putTeethPoint(out, p);
  return out;
}

std::vector<TeethPoint> decodeTeethPoints(std::span<const uint8_t> bytes, const std::string& name,
                                          size_t triangle_count) {
  ByteReader r(bytes, name);
  const uint32_t count = readHeader(r, kTeethMagic, "a teeth file", kTeethHeaderBytes, kTeethRecordBytes);
  std::vector<TeethPoint> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = readTeethPoint(r, recordPrefix(i), triangle_count);
  return out;
}

std::vector<uint8_t> encodeMouthMeshes(std::span<const MouthMesh> meshes) {
  std::vector<uint8_t> out(kMeshesMagic, kMeshesMagic + 8);
  putLE(out, static_cast<uint32_t>(meshes.size()));
  for (const MouthMesh& m : meshes) {
    putLE(out, static_cast<uint32_t>(m.vertices.size()));
    putLE(out, static_cast<uint32_t>(m.indices.size() / 3));
    for (float c : m.color) putLE(out, c);
    for (const TeethPoint& p : m.vertices) putTeethPoint(out, p);
    for (uint32_t i : m.indices) putLE(out, i);
  }
  return out;
}

std::vector<MouthMesh> decodeMouthMeshes(std::span<const uint8_t> bytes, const std::string& name,
                                         size_t triangle_count) {
  ByteReader r(bytes, name);
  readMagic(r, kMeshesMagic, "a mouth meshes file");
  const uint32_t count = r.readLE<uint32_t>("mesh count");
  if (count < 1 || count > kMaxMouthMeshes)
    r.failAt(8, std::to_string(count) + " meshes (expected 1 to " + std::to_string(kMaxMouthMeshes) + ")");
  std::vector<MouthMesh> out(count);
  for (size_t k = 0; k < count; ++k) {
    MouthMesh& m = out[k];
    const std::string mesh = "mesh " + std::to_string(k) + ": ";
    const size_t at = r.offset();
    const uint32_t vertices = r.readLE<uint32_t>("vertex count"),
                   triangles = r.readLE<uint32_t>("triangle count");
    if (vertices < 3 || vertices > kMaxMouthMeshVertices)
      r.failAt(at, mesh + std::to_string(vertices) + " vertices (expected 3 to " +
                       std::to_string(kMaxMouthMeshVertices) + ")");
    if (triangles < 1) r.failAt(at + 4, mesh + "no triangles");
    for (float& c : m.color) c = r.readLE<float>("colour");
    for (size_t c = 0; c < 4; ++c)
      if (!(m.color[c] >= 0 && m.color[c] <= 1))
        r.failAt(at + 8 + 4 * c, mesh + "colour components must be in [0, 1]");
    // The mesh's records must fit in what is left before they are allocated.
    const uint64_t need = uint64_t{vertices} * kTeethRecordBytes + uint64_t{triangles} * 12;
    if (need > r.size() - r.offset())
      r.failAt(r.offset(), mesh + std::to_string(vertices) + " vertices and " + std::to_string(triangles) +
                               " triangles need " + std::to_string(need) + " bytes, " +
                               std::to_string(r.size() - r.offset()) + " are left (truncated)");
    m.vertices.resize(vertices);
    for (size_t i = 0; i < vertices; ++i)
      m.vertices[i] = readTeethPoint(r, mesh + "vertex " + std::to_string(i) + ": ", triangle_count);
    m.indices.resize(size_t{triangles} * 3);
    for (size_t i = 0; i < m.indices.size(); ++i) {
      const size_t idx_at = r.offset();
      m.indices[i] = r.readLE<uint32_t>("index");
      if (m.indices[i] >= vertices)
        r.failAt(idx_at, mesh + "triangle " + std::to_string(i / 3) + ": vertex " +
                             std::to_string(m.indices[i]) + " but the mesh has " + std::to_string(vertices));
    }
  }
  if (r.offset() != r.size())
    r.failAt(r.offset(), std::to_string(r.size() - r.offset()) + " trailing bytes after the last mesh");
  return out;
}

void writeTeeth(const std::string& package_dir, const Teeth& teeth) {
  const fs::path dir(package_dir);
  const std::vector<uint8_t> ply = writePly(teeth.splats), bin = encodeTeethPoints(teeth.points);
  fs::create_directories(dir);
  writeFileAtomic((dir / "teeth.ply").string(), ply);
  writeFileAtomic((dir / "teeth.bin").string(), bin);
  std::vector<uint8_t> meshes;
  if (!teeth.meshes.empty()) {
    meshes = encodeMouthMeshes(teeth.meshes);
    writeFileAtomic((dir / "mouth_meshes.bin").string(), meshes);
  }
  Json j;
  j["format"] = kTeethFormat;
  j["version"] = 1;
  j["splats"] = {{"file", "teeth.ply"}, {"sha256", sha256Hex(ply)}, {"count", teeth.splats.size()}};
  j["bindings"] = {{"file", "teeth.bin"}, {"sha256", sha256Hex(bin)}};
  if (!teeth.meshes.empty()) j["meshes"] = {{"file", "mouth_meshes.bin"}, {"sha256", sha256Hex(meshes)}};
  j["up"] = {teeth.up.x, teeth.up.y, teeth.up.z};
  j["forward"] = {teeth.forward.x, teeth.forward.y, teeth.forward.z};
  j["lips"] = Json::array();
  for (const auto& pair : teeth.lips) j["lips"].push_back({pair[0], pair[1]});
  writeText(dir / "teeth.json", j.dump(2) + "\n");
}

Teeth readTeeth(const std::string& json_path, const Character& character) {
  const std::vector<uint8_t> text = readFile(json_path);
  const Json root =
      parseJsonText(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), json_path);
  const JsonNode n{root, "", json_path};
  if (!root.is_object()) n.fail("expected an object");
  if (n["format"].string() != kTeethFormat)
    n["format"].fail("expected \"" + std::string(kTeethFormat) + "\"");
  if (n["version"].number() != 1) n["version"].fail(n["version"].value.dump() + " unsupported (expected 1)");
  const size_t vertices = restVertices(character).size(), triangles = character.triangles().size() / 3;
  Teeth t;
  if (n.has("up")) t.up = axisOf(n["up"]);
  if (n.has("forward")) t.forward = axisOf(n["forward"]);
  const JsonNode lips = n["lips"];
  if (!lips.value.is_array() || lips.value.size() < 2)
    lips.fail("expected an array of at least two [upper, lower] lip vertex pairs");
  if (lips.value.size() > kMaxLipPairs)  // the opening is a mesh mask of two points per pair
    lips.fail(std::to_string(lips.value.size()) + " lip pairs, at most " + std::to_string(kMaxLipPairs));
  for (size_t i = 0; i < lips.value.size(); ++i) {
    const JsonNode pair = lips.at(i);
    if (!pair.value.is_array() || pair.value.size() != 2) pair.fail("expected [upper, lower] lip vertices");
    const uint32_t u = indexBelow(pair.at(0), vertices, "a vertex"),
                   l = indexBelow(pair.at(1), vertices, "a vertex");
    if (u == l) pair.fail("the upper and lower lip vertex are the same");
    t.lips.push_back({u, l});
  }
  const fs::path dir = fs::path(json_path).parent_path();
  std::string ply_path, bin_path;
  const std::vector<uint8_t> ply = readNamedFile(dir, n["splats"], &ply_path);
  const std::vector<uint8_t> bin = readNamedFile(dir, n["bindings"], &bin_path);
  t.splats = readPly(ply, ply_path);
  t.splats.color_space = character.splats().color_space;
  if (const NonFiniteReport bad = findNonFinite(t.splats); bad.rows > 0)
    n["splats"].fail(ply_path + ": " + bad.describe(t.splats.size()));
  if (n["splats"].has("count") && n["splats"]["count"].number() != static_cast<double>(t.splats.size()))
    n["splats"]["count"].fail(n["splats"]["count"].value.dump() + " but " + ply_path + " holds " +
                              std::to_string(t.splats.size()) + " splats");
  t.points = decodeTeethPoints(bin, bin_path, triangles);
  if (t.points.size() != t.splats.size())
    n["bindings"].fail(bin_path + " holds " + std::to_string(t.points.size()) + " points, " + ply_path + " " +
                       std::to_string(t.splats.size()));
  const std::span<const Vec3> rest = restVertices(character);
  const std::vector<uint32_t>& tris = character.triangles();
  auto checkArea = [&](const JsonNode& entry, const std::string& what, const TeethPoint& p) {
    const uint32_t* v = &tris[static_cast<size_t>(p.triangle) * 3];
    if (!(length(cross(rest[v[1]] - rest[v[0]], rest[v[2]] - rest[v[0]])) > 0))
      entry.fail(what + " is bound to triangle " + std::to_string(p.triangle) +
                 ", which has zero area at rest");
  };
  for (size_t i = 0; i < t.points.size(); ++i)
    checkArea(n["bindings"], bin_path + ": point " + std::to_string(i), t.points[i]);
  if (n.has("meshes")) {
    std::string meshes_path;
    t.meshes = decodeMouthMeshes(readNamedFile(dir, n["meshes"], &meshes_path), meshes_path, triangles);
    for (size_t k = 0; k < t.meshes.size(); ++k)
      for (size_t i = 0; i < t.meshes[k].vertices.size(); ++i)
        checkArea(n["meshes"], meshes_path + ": mesh " + std::to_string(k) + " vertex " + std::to_string(i),
                  t.meshes[k].vertices[i]);
  }
  return t;
}

// --- per frame ------------------------------------------------------------------------------------------

float lipGap(const Character& character, const Character::Frame& f, Vec3 up, uint32_t upper, uint32_t lower) {
  return gapOf(character, f, posedChecked(character, f), normalize(up), upper, lower, nullptr);
}

void applyMouthHidden(const MouthHidden& m, const Character& character, Character::Frame& f) {
  const std::span<const Vec3> posed = posedChecked(character, f);
  for (const HiddenSplat& s : m.splats) {
    Vec3 up_now;
    const float gap = gapOf(character, f, posed, m.up, s.upper, s.lower, &up_now);
    const float ramp = smoothstep(kHiddenRampStart, kHiddenRampEnd, gap);
    if (s.kind == HiddenKind::kLipBand) {
      if (ramp > 0) capSizes(f.covariances[s.row], kLipBandCap, ramp);
      continue;
    }
    if (ramp > 0) character.frameOpacities(f)[s.row] *= 1 - ramp;
    if (s.kind == HiddenKind::kPlug) {
      const Vec3 forward_now = normalize(skinLinear(character, f, s.upper) * m.forward);
      const float back = kPlugPushBack * smoothstep(0.0f, kPlugPushEnd, gap) + 0.25f * gap;
      f.positions[s.row] = (posed[s.upper] + posed[s.lower]) * 0.5f - forward_now * back;
    }
  }
}

namespace {

// Where a bound point (a teeth point, a mouth mesh's vertex) sits this frame, and the rotation of its
// triangle from rest (`q`).
Vec3 placeBound(const TeethPoint& tp, std::span<const Vec3> posed, std::span<const Vec3> rest,
                const std::vector<uint32_t>& tris, Vec3 forward, Mat3* q_out) {
  const uint32_t* v = &tris[static_cast<size_t>(tp.triangle) * 3];
  const Mat3 frame_rest = orthonormalFrame(rest[v[0]], rest[v[1]], rest[v[2]]);
  const Mat3 frame_now = orthonormalFrame(posed[v[0]], posed[v[1]], posed[v[2]]);
  const Mat3 q = frame_now * transpose(frame_rest);  // the triangle's rotation from rest
  if (q_out) *q_out = q;
  const Vec3 on =
      posed[v[0]] * tp.barycentrics[0] + posed[v[1]] * tp.barycentrics[1] + posed[v[2]] * tp.barycentrics[2];
  return on + frame_now.col(2) * tp.offset - (q * forward) * tp.setback;
}

}  // namespace

void applyTeeth(const Teeth& t, const Character& character, Character::Frame& f) {
  const std::span<const Vec3> posed = posedChecked(character, f), rest = restVertices(character);
  float gap = 0;
  for (const auto& pair : t.lips)
    gap = std::max(gap, gapOf(character, f, posed, t.up, pair[0], pair[1], nullptr));
  const float ramp = smoothstep(kTeethGapStart, kTeethGapEnd, gap);
  if (!(ramp > 0)) return;
  Character::Part p;
  p.name = "teeth";
  p.cloud = &t.splats;
  const size_t n = t.points.size();
  p.positions.resize(n);
  p.covariances.resize(n);
  p.opacities.resize(n);
  const std::vector<uint32_t>& tris = character.triangles();
  for (size_t i = 0; i < n; ++i) {
    Mat3 q;
    p.positions[i] = placeBound(t.points[i], posed, rest, tris, t.forward, &q);
    const Mat3 cov = covarianceMatrix(covarianceFromScaleRotation(t.splats.scales[i], t.splats.rotations[i]));
    p.covariances[i] = covarianceUpper(q * cov * transpose(q));
    p.opacities[i] = t.splats.opacities[i] * ramp;
  }
  // The mouth's meshes: vertices placed likewise, area-weighted vertex normals of the posed triangles.
  p.mesh_opacity = ramp;
  for (const MouthMesh& m : t.meshes) {
    Character::Part::Mesh pm;
    pm.source = &m;
    pm.positions.resize(m.vertices.size());
    for (size_t i = 0; i < m.vertices.size(); ++i)
      pm.positions[i] = placeBound(m.vertices[i], posed, rest, tris, t.forward, nullptr);
    pm.normals.assign(m.vertices.size(), Vec3{});
    for (size_t k = 0; k + 2 < m.indices.size(); k += 3) {
      const uint32_t a = m.indices[k], b = m.indices[k + 1], c = m.indices[k + 2];
      const Vec3 face = cross(pm.positions[b] - pm.positions[a], pm.positions[c] - pm.positions[a]);
      for (uint32_t v : {a, b, c}) pm.normals[v] = pm.normals[v] + face;
    }
    for (Vec3& nv : pm.normals) nv = length(nv) > 0 ? normalize(nv) : Vec3{0, 0, 1};
    p.meshes.push_back(std::move(pm));
  }
  for (const auto& pair : t.lips) p.outline.push_back(posed[pair[0]]);
  for (auto it = t.lips.rbegin(); it != t.lips.rend(); ++it) p.outline.push_back(posed[(*it)[1]]);
  f.parts.push_back(std::move(p));
}

void applyTeethRim(Character::Part& teeth, const Camera& cam, const Mat4& object_to_world) {
  if (teeth.outline.size() < 3) return;
  const Mat4 m = cam.world_to_camera * object_to_world;
  std::vector<std::array<float, 2>> poly;
  for (const Vec3& p : teeth.outline) {
    const Vec3 c = transformPoint(m, p);
    if (!(c.z > kNearPlane)) return;
    poly.push_back({cam.fx * c.x / c.z + cam.cx, cam.fy * c.y / c.z + cam.cy});
  }
  const float width = kTeethRimPixels * static_cast<float>(cam.width) / kTeethRimReferenceWidth;
  for (size_t i = 0; i < teeth.positions.size(); ++i) {
    const Vec3 c = transformPoint(m, teeth.positions[i]);
    if (!(c.z > kNearPlane)) continue;
    teeth.opacities[i] *= maskCoverage(poly, cam.fx * c.x / c.z + cam.cx, cam.fy * c.y / c.z + cam.cy, width);
  }
}

std::vector<RenderMesh> mouthRenderMeshes(const Character::Part& teeth, const Mat4& object_to_world) {
  std::vector<RenderMesh> out;
  for (const Character::Part::Mesh& pm : teeth.meshes) {
    RenderMesh r;
    r.positions = pm.positions;
    r.normals = pm.normals;
    r.indices = pm.source->indices;
    r.base_color = pm.source->color;
    r.object_to_world = object_to_world;
    r.shading = MeshShading::kCamera;
    r.opacity = std::clamp(teeth.mesh_opacity, 0.0f, 1.0f);
    r.mask = teeth.outline;
    r.mask_rim = kTeethRimPixels / kTeethRimReferenceWidth;
    out.push_back(r);
  }
  return out;
}

}  // namespace sf::character
