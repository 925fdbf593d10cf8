// GNM packs: the file format (docs/formats/gnm-pack.md), its untrusted-input reader and the builder from a
// skinned glTF.
#include "character/gnm_pack.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "character/character.h"
#include "character/expression.h"
#include "core/error.h"
#include "io/byte_reader.h"
#include "io/byte_writer.h"
#include "io/file.h"
#include "model/gltf_model.h"

namespace sf::character {

const std::array<const char*, 4> kGnmGazeNames = {"gazePitchLeft", "gazeYawLeft", "gazePitchRight",
                                                  "gazeYawRight"};

namespace {

constexpr char kMagic[8] = {'S', 'F', 'G', 'N', 'M', '0', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kFlagUvs = 1, kFlagArkitMap = 2;
constexpr uint64_t kHeaderBytes = 88, kJointRecordBytes = 100;

static_assert(sizeof(Vec3) == 12 && sizeof(std::array<float, 2>) == 8 &&
                  sizeof(std::array<uint16_t, 4>) == 8 && sizeof(std::array<float, 4>) == 16,
              "the pack's arrays are read and written as their file layout");

bool finite(float v) {
  return std::isfinite(v);
}
bool finite(const Vec3& v) {
  return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}
bool affine(const Mat4& m) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      if (!std::isfinite(m.m[r][c])) return false;
  return m.m[3][0] == 0 && m.m[3][1] == 0 && m.m[3][2] == 0 && m.m[3][3] == 1;
}

template <typename T>
void putArray(std::vector<uint8_t>& out, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(T));
}
void putMat34(std::vector<uint8_t>& out, const Mat4& m) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) putLE(out, m.m[r][c]);
}
void putName(std::vector<uint8_t>& out, const std::string& s) {
  putLE(out, static_cast<uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// Reads `count` elements of T as one block (sizes were checked against the data before the call).
template <typename T>
std::vector<T> readArray(ByteReader& r, uint64_t count, std::string_view what) {
  std::span<const uint8_t> s = r.bytes(count * sizeof(T), what);
  std::vector<T> v(static_cast<size_t>(count));
  if (!v.empty()) std::memcpy(v.data(), s.data(), s.size());
  return v;
}

// Rows 0..2 of an affine matrix (row 3 is 0 0 0 1); `what` names it in messages.
Mat4 readMat34(ByteReader& r, const std::string& what) {
  const size_t at = r.offset();
  Mat4 m;
  for (int row = 0; row < 3; ++row)
    for (int c = 0; c < 4; ++c) m.m[row][c] = r.readLE<float>(what);
  if (!affine(m)) r.failAt(at, what + " holds a non-finite value");
  return m;
}

std::string normalisedName(const std::string& name) {
  std::string out;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Mat4 translation(Vec3 t) {
  return Mat4::fromLinearTranslation(Mat3{}, t);
}

}  // namespace

std::string GnmPack::validate() const {
  const size_t v = neutral.size();
  if (v == 0) return "the pack has no vertices";
  if (v > kGnmMaxVertices)
    return std::to_string(v) + " vertices exceed the limit of " + std::to_string(kGnmMaxVertices);
  if (triangles.size() % 3)
    return std::to_string(triangles.size()) + " triangle indices are not a multiple of 3";
  if (triangles.size() / 3 > kGnmMaxTriangles)
    return std::to_string(triangles.size() / 3) + " triangles exceed the limit of " +
           std::to_string(kGnmMaxTriangles);
  for (size_t i = 0; i < triangles.size(); ++i)
    if (triangles[i] >= v)
      return "triangle " + std::to_string(i / 3) + " names vertex " + std::to_string(triangles[i]) + " of " +
             std::to_string(v);
  if (!uvs.empty() && uvs.size() != v)
    return std::to_string(uvs.size()) + " uvs for " + std::to_string(v) + " vertices";
  if (basis.size() % v)
    return "the basis is not a whole number of vectors of " + std::to_string(v) + " deltas";
  const size_t k = basis.size() / v;
  if (k > kGnmMaxBasis)
    return std::to_string(k) + " basis vectors exceed the limit of " + std::to_string(kGnmMaxBasis);
  if (joints.empty()) return "the pack has no joints";
  if (joints.size() > kGnmMaxJoints)
    return std::to_string(joints.size()) + " joints exceed the limit of " + std::to_string(kGnmMaxJoints);
  for (size_t j = 0; j < joints.size(); ++j) {
    const GnmJoint& jt = joints[j];
    if (jt.parent < -1 || jt.parent >= static_cast<int32_t>(j))
      return "joint " + std::to_string(j) + " ('" + jt.name + "') has parent " + std::to_string(jt.parent) +
             "; parents come first";
    if (!affine(jt.rest_local) || !affine(jt.inverse_bind))
      return "joint " + std::to_string(j) + " ('" + jt.name + "') has a non-affine or non-finite transform";
    if (jt.name.size() > kGnmMaxNameBytes)
      return "joint " + std::to_string(j) + "'s name is longer than " + std::to_string(kGnmMaxNameBytes) +
             " bytes";
  }
  if (lbs_joints.size() != v || lbs_weights.size() != v)
    return std::to_string(lbs_joints.size()) + " LBS joint sets and " + std::to_string(lbs_weights.size()) +
           " weight sets for " + std::to_string(v) + " vertices";
  for (size_t i = 0; i < v; ++i)
    for (size_t c = 0; c < 4; ++c) {
      if (!finite(lbs_weights[i][c]) || lbs_weights[i][c] < 0)
        return "vertex " + std::to_string(i) + " has a negative or non-finite LBS weight";
      if (lbs_weights[i][c] > 0 && lbs_joints[i][c] >= joints.size())
        return "vertex " + std::to_string(i) + " is weighted to joint " + std::to_string(lbs_joints[i][c]) +
               " of " + std::to_string(joints.size());
    }
  for (int side = 0; side < 2; ++side)
    if (eye_joints[side] < 0 || eye_joints[side] >= static_cast<int32_t>(joints.size()))
      return std::string(side ? "right" : "left") + " eye joint " + std::to_string(eye_joints[side]) +
             " is not one of the " + std::to_string(joints.size()) + " joints";
  if (eye_joints[0] == eye_joints[1])
    return "the left and right eye joints are the same joint " + std::to_string(eye_joints[0]);
  if (!affine(bind_transform)) return "the bind transform is not affine and finite";
  if (control_names.size() != k + kGnmGazeControls)
    return std::to_string(control_names.size()) + " control names for " + std::to_string(k) +
           " basis vectors + 4 gaze angles";
  for (const std::string& n : control_names)
    if (n.size() > kGnmMaxNameBytes)
      return "control name '" + n.substr(0, 40) + "...' is longer than " + std::to_string(kGnmMaxNameBytes) +
             " bytes";
  if (!arkit_map.empty() && arkit_map.size() != kArkit52.size() * k)
    return "the arkit_map holds " + std::to_string(arkit_map.size()) + " values, not 52 x " +
           std::to_string(k);
  for (size_t i = 0; i < v; ++i)
    if (!finite(neutral[i])) return "neutral vertex " + std::to_string(i) + " is not finite";
  for (size_t i = 0; i < basis.size(); ++i)
    if (!finite(basis[i]))
      return "basis vector " + std::to_string(i / v) + " has a non-finite delta at vertex " +
             std::to_string(i % v);
  for (size_t i = 0; i < uvs.size(); ++i)
    if (!finite(uvs[i][0]) || !finite(uvs[i][1])) return "uv " + std::to_string(i) + " is not finite";
  for (float m : arkit_map)
    if (!finite(m)) return "the arkit_map holds a non-finite value";
  return {};
}

std::vector<uint8_t> encodeGnmPack(const GnmPack& pack) {
  if (std::string why = pack.validate(); !why.empty())
    throw Error((pack.source.empty() ? std::string("GNM pack") : pack.source) + ": not written: " + why);
  const size_t v = pack.vertexCount(), k = pack.basisCount();
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(kHeaderBytes) + v * (12 + 8 + 24) + pack.basis.size() * 12 +
              pack.triangles.size() * 4 + pack.joints.size() * 120 + pack.arkit_map.size() * 4);
  for (char c : kMagic) out.push_back(static_cast<uint8_t>(c));
  putLE(out, kVersion);
  putLE(out, (pack.uvs.empty() ? 0u : kFlagUvs) | (pack.arkit_map.empty() ? 0u : kFlagArkitMap));
  putLE(out, static_cast<uint32_t>(v));
  putLE(out, static_cast<uint32_t>(pack.triangles.size() / 3));
  putLE(out, static_cast<uint32_t>(k));
  putLE(out, static_cast<uint32_t>(pack.joints.size()));
  putLE(out, pack.eye_joints[0]);
  putLE(out, pack.eye_joints[1]);
  putMat34(out, pack.bind_transform);
  putArray(out, pack.neutral);
  putArray(out, pack.triangles);
  putArray(out, pack.uvs);
  putArray(out, pack.basis);
  putArray(out, pack.lbs_joints);
  putArray(out, pack.lbs_weights);
  for (const GnmJoint& j : pack.joints) {
    putLE(out, j.parent);
    putMat34(out, j.rest_local);
    putMat34(out, j.inverse_bind);
  }
  putArray(out, pack.arkit_map);
  for (const std::string& n : pack.control_names) putName(out, n);
  for (const GnmJoint& j : pack.joints) putName(out, j.name);
  return out;
}

GnmPack decodeGnmPack(std::span<const uint8_t> bytes, const std::string& path) {
  ByteReader r(bytes, path);
  if (std::memcmp(r.bytes(8, "magic").data(), kMagic, 8) != 0)
    r.failAt(0, "not a GNM pack (the magic is not SFGNM001)");
  const uint32_t version = r.readLE<uint32_t>("version");
  if (version != kVersion)
    r.failAt(8, "GNM pack version " + std::to_string(version) + " unsupported (this build reads version " +
                    std::to_string(kVersion) + ")");
  const uint32_t flags = r.readLE<uint32_t>("flags");
  if (flags & ~(kFlagUvs | kFlagArkitMap))
    r.failAt(12, "unknown flags " + std::to_string(flags) + " (known: 1 uvs, 2 arkit_map)");
  auto count = [&](const char* what, uint32_t limit, bool nonzero) -> uint64_t {
    const size_t at = r.offset();
    const uint32_t n = r.readLE<uint32_t>(what);
    if (n > limit)
      r.failAt(
          at, std::string(what) + " " + std::to_string(n) + " exceeds the limit of " + std::to_string(limit));
    if (nonzero && n == 0) r.failAt(at, std::string(what) + " is 0");
    return n;
  };
  const uint64_t v = count("vertex count", kGnmMaxVertices, true);
  const uint64_t t = count("triangle count", kGnmMaxTriangles, false);
  const uint64_t k = count("basis count", kGnmMaxBasis, false);
  const uint64_t j = count("joint count", kGnmMaxJoints, true);
  GnmPack pack;
  pack.source = path;
  for (int side = 0; side < 2; ++side) {
    const size_t at = r.offset();
    pack.eye_joints[side] = r.readLE<int32_t>(side ? "right eye joint" : "left eye joint");
    if (pack.eye_joints[side] < 0 || static_cast<uint64_t>(pack.eye_joints[side]) >= j)
      r.failAt(at, std::string(side ? "right" : "left") + " eye joint " +
                       std::to_string(pack.eye_joints[side]) + " is not one of the " + std::to_string(j) +
                       " joints");
  }
  if (pack.eye_joints[0] == pack.eye_joints[1])
    r.failAt(36, "the left and right eye joints are the same joint " + std::to_string(pack.eye_joints[0]));
  pack.bind_transform = readMat34(r, "bind transform");

  // Every fixed-size section (and the names' length fields) must fit before anything is allocated.
  const bool has_uvs = flags & kFlagUvs, has_map = flags & kFlagArkitMap;
  const uint64_t need = v * 12 + t * 12 + (has_uvs ? v * 8 : 0) + k * v * 12 + v * 24 +
                        j * kJointRecordBytes + (has_map ? 52 * k * 4 : 0) + (k + kGnmGazeControls + j) * 4;
  if (need > r.remaining())
    r.fail("truncated: " + std::to_string(v) + " vertices, " + std::to_string(t) + " triangles, " +
           std::to_string(k) + " basis vectors and " + std::to_string(j) + " joints need at least " +
           std::to_string(need) + " bytes after the header, " + std::to_string(r.remaining()) + " remain");

  size_t at = r.offset();
  pack.neutral = readArray<Vec3>(r, v, "neutral vertices");
  for (size_t i = 0; i < pack.neutral.size(); ++i)
    if (!finite(pack.neutral[i]))
      r.failAt(at + 12 * i, "neutral vertex " + std::to_string(i) + " is not finite");
  at = r.offset();
  pack.triangles = readArray<uint32_t>(r, t * 3, "triangles");
  for (size_t i = 0; i < pack.triangles.size(); ++i)
    if (pack.triangles[i] >= v)
      r.failAt(at + 4 * i, "triangle " + std::to_string(i / 3) + " names vertex " +
                               std::to_string(pack.triangles[i]) + " of " + std::to_string(v));
  if (has_uvs) {
    at = r.offset();
    pack.uvs = readArray<std::array<float, 2>>(r, v, "uvs");
    for (size_t i = 0; i < pack.uvs.size(); ++i)
      if (!finite(pack.uvs[i][0]) || !finite(pack.uvs[i][1]))
        r.failAt(at + 8 * i, "uv " + std::to_string(i) + " is not finite");
  }
  at = r.offset();
  pack.basis = readArray<Vec3>(r, k * v, "basis");
  for (size_t i = 0; i < pack.basis.size(); ++i)
    if (!finite(pack.basis[i]))
      r.failAt(at + 12 * i, "basis vector " + std::to_string(i / v) + " has a non-finite delta at vertex " +
                                std::to_string(i % v));
  const size_t joints_at = r.offset();
  pack.lbs_joints = readArray<std::array<uint16_t, 4>>(r, v, "LBS joints");
  const size_t weights_at = r.offset();
  pack.lbs_weights = readArray<std::array<float, 4>>(r, v, "LBS weights");
  for (size_t i = 0; i < v; ++i)
    for (size_t c = 0; c < 4; ++c) {
      const float w = pack.lbs_weights[i][c];
      if (!finite(w) || w < 0)
        r.failAt(weights_at + 16 * i + 4 * c,
                 "vertex " + std::to_string(i) + " has a negative or non-finite LBS weight");
      if (w > 0 && pack.lbs_joints[i][c] >= j)
        r.failAt(joints_at + 8 * i + 2 * c, "vertex " + std::to_string(i) + " is weighted to joint " +
                                                std::to_string(pack.lbs_joints[i][c]) + " of " +
                                                std::to_string(j));
    }
  pack.joints.resize(static_cast<size_t>(j));
  for (size_t i = 0; i < pack.joints.size(); ++i) {
    GnmJoint& jt = pack.joints[i];
    at = r.offset();
    jt.parent = r.readLE<int32_t>("joint parent");
    if (jt.parent < -1 || jt.parent >= static_cast<int32_t>(i))
      r.failAt(at, "joint " + std::to_string(i) + " has parent " + std::to_string(jt.parent) +
                       "; parents come first (-1 for a root)");
    jt.rest_local = readMat34(r, "joint " + std::to_string(i) + "'s rest transform");
    jt.inverse_bind = readMat34(r, "joint " + std::to_string(i) + "'s inverse bind matrix");
  }
  if (has_map) {
    at = r.offset();
    pack.arkit_map = readArray<float>(r, 52 * k, "arkit_map");
    for (size_t i = 0; i < pack.arkit_map.size(); ++i)
      if (!finite(pack.arkit_map[i]))
        r.failAt(at + 4 * i, "arkit_map row " + std::to_string(i / k) + " holds a non-finite value");
  }
  auto name = [&](const std::string& what) {
    const size_t name_at = r.offset();
    const uint32_t n = r.readLE<uint32_t>(what + " length");
    if (n > kGnmMaxNameBytes)
      r.failAt(name_at, what + " is " + std::to_string(n) + " bytes long, over the limit of " +
                            std::to_string(kGnmMaxNameBytes));
    std::span<const uint8_t> s = r.bytes(n, what);
    return std::string(s.begin(), s.end());
  };
  pack.control_names.resize(static_cast<size_t>(k + kGnmGazeControls));
  for (size_t i = 0; i < pack.control_names.size(); ++i)
    pack.control_names[i] = name("control name " + std::to_string(i));
  for (size_t i = 0; i < pack.joints.size(); ++i)
    pack.joints[i].name = name("joint " + std::to_string(i) + "'s name");
  if (r.remaining() != 0) r.fail(std::to_string(r.remaining()) + " bytes after the end of the pack");
  if (std::string why = pack.validate(); !why.empty())
    r.failAt(0, why);  // (every condition was checked above)
  return pack;
}

GnmPack loadGnmPack(const std::string& path) {
  return decodeGnmPack(readFile(path), path);
}

void saveGnmPack(const GnmPack& pack, const std::string& path) {
  writeFileAtomic(path, encodeGnmPack(pack));
}

std::vector<int> eyeJointCandidates(std::span<const std::string> names, int side) {
  static const char* kLeft[] = {"leye", "lefteye", "eyeleft", "eyel"};
  static const char* kRight[] = {"reye", "righteye", "eyeright", "eyer"};
  std::vector<int> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string n = normalisedName(names[i]);
    for (const char* c : side == 0 ? kLeft : kRight)
      if (n == c) {
        out.push_back(static_cast<int>(i));
        break;
      }
  }
  return out;
}

namespace {

// The left and right eye joints among the skin's joints `names`: named in the options, or found by the name
// rule; the two must differ.
std::array<int, 2> findEyeJoints(const std::vector<std::string>& names, const GnmFromGltfOptions& options,
                                 const std::string& path) {
  std::array<int, 2> eyes{};
  for (int side = 0; side < 2; ++side) {
    const std::string& wanted = side ? options.right_eye : options.left_eye;
    const char* label = side ? "right" : "left";
    if (!wanted.empty()) {
      auto it = std::find(names.begin(), names.end(), wanted);
      if (it == names.end())
        throw Error(path + ": the " + std::string(label) + " eye joint '" + wanted +
                    "' is not a joint of the skin");
      eyes[side] = static_cast<int>(it - names.begin());
      continue;
    }
    const std::vector<int> found = eyeJointCandidates(names, side);
    if (found.size() != 1) {
      std::string list;
      for (int f : found) list += (list.empty() ? "" : ", ") + names[static_cast<size_t>(f)];
      throw Error(
          path + ": " +
          (found.empty() ? "no skin joint" : std::to_string(found.size()) + " skin joints (" + list + ")") +
          " match the " + label + " eye name rule (" +
          (side ? "rEye, right_eye, eyeRight, eye_R" : "lEye, left_eye, eyeLeft, eye_L") +
          ", any case and separators); name the eye joints explicitly (--eyes LEFT,RIGHT)");
    }
    eyes[side] = found[0];
  }
  if (eyes[0] == eyes[1])
    throw Error(path + ": the left and right eye joints are the same joint '" +
                names[static_cast<size_t>(eyes[0])] + "'");
  return eyes;
}

// The skin's joint hierarchy: each joint's skin parent (the nearest ancestor that is a skin joint), whether
// that is its node's direct parent, and a parents-first order (stable by depth).
struct SkinTree {
  std::vector<int> parent;
  std::vector<bool> direct;
  std::vector<size_t> order;    // pack joint -> skin joint
  std::vector<int> pack_index;  // skin joint -> pack joint
};

// The joint hierarchy of `skin` from the document's node tree.
SkinTree skinTree(const GltfDocument& doc, const GltfSkin& skin) {
  const size_t nj = skin.joints.size();
  SkinTree t;
  std::vector<int> skin_of_node(doc.nodes.size(), -1);
  for (size_t i = 0; i < nj; ++i) skin_of_node[static_cast<size_t>(skin.joints[i])] = static_cast<int>(i);
  t.parent.assign(nj, -1);
  t.direct.assign(nj, false);
  std::vector<int> depth(nj, 0);
  for (size_t i = 0; i < nj; ++i) {
    int n = doc.nodes[static_cast<size_t>(skin.joints[i])].parent;
    t.direct[i] = true;
    while (n >= 0 && skin_of_node[static_cast<size_t>(n)] < 0)
      n = doc.nodes[static_cast<size_t>(n)].parent, t.direct[i] = false;
    t.parent[i] = n >= 0 ? skin_of_node[static_cast<size_t>(n)] : -1;
  }
  for (size_t i = 0; i < nj; ++i)
    for (int p = t.parent[i]; p >= 0 && depth[i] <= static_cast<int>(nj);
         p = t.parent[static_cast<size_t>(p)])
      ++depth[i];
  t.order.resize(nj);
  for (size_t i = 0; i < nj; ++i) t.order[i] = i;
  std::stable_sort(t.order.begin(), t.order.end(), [&](size_t a, size_t b) { return depth[a] < depth[b]; });
  t.pack_index.resize(nj);
  for (size_t i = 0; i < nj; ++i) t.pack_index[t.order[i]] = static_cast<int>(i);
  return t;
}

// The vertices of the pack (head-local: less the pivot): positions, triangles, UVs, the morph basis and the
// LBS influences (joints renumbered into the pack's order).
void packVertices(const GltfPrimitive& prim, const SkinTree& tree, size_t nj, Vec3 pivot,
                  const std::string& where, GnmPack& pack) {
  const size_t nv = prim.positions.size();
  const std::vector<int>& pack_index = tree.pack_index;
  pack.neutral.resize(nv);
  for (size_t i = 0; i < nv; ++i) pack.neutral[i] = prim.positions[i] - pivot;
  pack.triangles = triangleList(prim);
  if (prim.texcoords0.size() == nv) pack.uvs.assign(prim.texcoords0.begin(), prim.texcoords0.end());
  const size_t k = prim.targets.size();
  if (k > kGnmMaxBasis)
    throw Error(where + ": " + std::to_string(k) + " morph targets exceed a GNM pack's " +
                std::to_string(kGnmMaxBasis));
  pack.basis.assign(k * nv, Vec3{});
  for (size_t t = 0; t < k; ++t)
    if (prim.targets[t].positions.size() == nv)
      std::copy(prim.targets[t].positions.begin(), prim.targets[t].positions.end(),
                pack.basis.begin() + static_cast<std::ptrdiff_t>(t * nv));
  pack.lbs_joints.resize(nv);
  pack.lbs_weights.resize(nv);
  for (size_t i = 0; i < nv; ++i)
    for (size_t c = 0; c < 4; ++c) {
      const float w = prim.weights0[i][c];
      const uint16_t joint = prim.joints0[i][c];
      if (w > 0 && joint >= nj)
        throw Error(where + ": vertex " + std::to_string(i) + " is weighted to joint " +
                    std::to_string(joint) + " of the skin's " + std::to_string(nj));
      pack.lbs_weights[i][c] = w;
      pack.lbs_joints[i][c] = joint < nj ? static_cast<uint16_t>(pack_index[joint]) : 0;
    }
}

// Binds each eyeball to its eye joint: of the connected components by triangles (union-find), the one nearest
// the eye's centre (head-local), when it holds at most a quarter of the vertices.
void bindEyeballs(const std::array<Vec3, 2>& eye_centres, GnmPack& pack) {
  const size_t nv = pack.neutral.size();
  std::vector<uint32_t> root(nv);
  for (size_t i = 0; i < nv; ++i) root[i] = static_cast<uint32_t>(i);
  auto find = [&](uint32_t x) {
    while (root[x] != x) x = root[x] = root[root[x]];
    return x;
  };
  for (size_t t = 0; t + 2 < pack.triangles.size(); t += 3)
    for (size_t e = 0; e < 2; ++e) root[find(pack.triangles[t + e])] = find(pack.triangles[t + e + 1]);
  std::vector<uint32_t> size(nv, 0);
  for (size_t i = 0; i < nv; ++i) ++size[find(static_cast<uint32_t>(i))];
  std::array<uint32_t, 2> part{UINT32_MAX, UINT32_MAX};
  for (size_t side = 0; side < 2; ++side) {
    const Vec3 c = eye_centres[side];
    size_t nearest = 0;
    for (size_t i = 1; i < nv; ++i)
      if (length(pack.neutral[i] - c) < length(pack.neutral[nearest] - c)) nearest = i;
    const uint32_t r = find(static_cast<uint32_t>(nearest));
    if (static_cast<size_t>(size[r]) * 4 <= nv && r != part[0]) part[side] = r;
  }
  for (size_t i = 0; i < nv; ++i)
    for (size_t side = 0; side < 2; ++side)
      if (find(static_cast<uint32_t>(i)) == part[side]) {
        pack.lbs_joints[i] = {static_cast<uint16_t>(pack.eye_joints[side]), 0, 0, 0};
        pack.lbs_weights[i] = {1, 0, 0, 0};
      }
}

// The control names (the morph targets', then the gaze controls) and the ARKit map of targets named as ARKit
// shapes.
void packControls(const GltfMesh& mesh, size_t k, GnmPack& pack) {
  for (size_t t = 0; t < k; ++t)
    pack.control_names.push_back(mesh.target_names.size() == k ? mesh.target_names[t]
                                                               : "target" + std::to_string(t));
  for (const char* g : kGnmGazeNames) pack.control_names.push_back(g);
  bool any_arkit = false;
  std::vector<float> map(kArkit52.size() * k, 0.0f);
  for (size_t t = 0; t < k; ++t)
    if (const int a = arkitIndex(pack.control_names[t]); a >= 0)
      map[static_cast<size_t>(a) * k + t] = 1.0f, any_arkit = true;
  if (any_arkit) pack.arkit_map = std::move(map);
}

}  // namespace

GnmPack fromSkinnedGltf(const GltfModel& model, const GnmFromGltfOptions& options) {
  const GltfDocument& doc = model.document();
  const int draw = boundDrawOf(model);
  const GltfModel::DrawInfo info = model.drawInfo(static_cast<size_t>(draw));
  const std::string where = doc.path + ": meshes[" + std::to_string(info.mesh) + "].primitives[" +
                            std::to_string(info.primitive) + "]";
  if (info.skin < 0) throw Error(doc.path + ": has no skinned triangle primitive to build a GNM pack from");
  const GltfPrimitive& prim = model.primitiveOf(static_cast<size_t>(draw));
  const GltfSkin& skin = doc.skins[static_cast<size_t>(doc.nodes[static_cast<size_t>(info.node)].skin)];
  const size_t nv = prim.positions.size(), nj = skin.joints.size();
  if (prim.joints0.size() != nv || prim.weights0.size() != nv)
    throw Error(where + ": a skinned primitive without JOINTS_0 / WEIGHTS_0 for every vertex");
  for (const GltfFloat4& w : prim.weights1)
    for (float x : w)
      if (x != 0)
        throw Error(where +
                    ": uses JOINTS_1 / WEIGHTS_1 (more than 4 influences); a GNM pack holds 4 per vertex");
  if (nj == 0 || nj > kGnmMaxJoints)
    throw Error(doc.path + ": the skin has " + std::to_string(nj) + " joints (a GNM pack holds 1 to " +
                std::to_string(kGnmMaxJoints) + ")");
  std::vector<std::string> names(nj);
  for (size_t i = 0; i < nj; ++i) names[i] = doc.nodes[static_cast<size_t>(skin.joints[i])].name;

  // The eye joints: named, or by the name rule.
  const std::array<int, 2> eyes = findEyeJoints(names, options, doc.path);

  // Rest model matrices (W) of the skin's joints; bind-space positions of a joint: inverse(inverseBind).
  GltfModel::Pose rest;
  model.pose(-1, 0.0f, rest);
  const anim::Skeleton& sk = model.skeleton();
  std::vector<int> sk_index(nj);
  for (size_t i = 0; i < nj; ++i) sk_index[i] = sk.findSource(skin.joints[i]);
  auto bindPosition = [&](size_t i) { return inverseAffine(skin.inverse_bind[i]).translation(); };
  int origin = -1;
  for (size_t i = 0; i < nj; ++i)
    if (normalisedName(names[i]) == "head") {
      origin = static_cast<int>(i);
      break;
    }
  const size_t frame_joint = static_cast<size_t>(origin >= 0 ? origin : eyes[0]);
  const Vec3 pivot =
      origin >= 0
          ? bindPosition(frame_joint)
          : (bindPosition(static_cast<size_t>(eyes[0])) + bindPosition(static_cast<size_t>(eyes[1]))) * 0.5f;
  // bind space -> model space at rest, then head-local = bind space - pivot: B = (world x inverseBind) x
  // T(pivot).
  const Mat4 bind_to_model =
      rest.models[static_cast<size_t>(sk_index[frame_joint])] * skin.inverse_bind[frame_joint];
  const Mat4 bind = bind_to_model * translation(pivot);
  const Mat4 to_head = inverseAffine(bind);

  // Skin parents (the nearest ancestor that is a skin joint), then a parents-first order (stable by depth).
  const SkinTree tree = skinTree(doc, skin);
  const std::vector<int>& parent = tree.parent;
  const std::vector<bool>& direct = tree.direct;
  const std::vector<size_t>& order = tree.order;
  const std::vector<int>& pack_index = tree.pack_index;

  GnmPack pack;
  pack.source = doc.path;
  pack.bind_transform = bind;
  pack.eye_joints = {pack_index[static_cast<size_t>(eyes[0])], pack_index[static_cast<size_t>(eyes[1])]};
  pack.joints.resize(nj);
  const Mat4 untranslate = translation(pivot);
  for (size_t i = 0; i < nj; ++i) {
    const size_t s = order[i];
    GnmJoint& jt = pack.joints[i];
    jt.name = names[s];
    jt.parent = parent[s] >= 0 ? pack_index[static_cast<size_t>(parent[s])] : -1;
    const Mat4& world = rest.models[static_cast<size_t>(sk_index[s])];
    if (parent[s] < 0)
      jt.rest_local = to_head * world;
    else if (direct[s])
      jt.rest_local = anim::toMatrix(sk.rest()[static_cast<size_t>(sk_index[s])]);
    else
      jt.rest_local =
          inverseAffine(rest.models[static_cast<size_t>(sk_index[static_cast<size_t>(parent[s])])]) * world;
    jt.inverse_bind = skin.inverse_bind[s] * untranslate;  // head-local -> bind space -> joint space
    jt.rest_local.m[3][0] = jt.rest_local.m[3][1] = jt.rest_local.m[3][2] = 0, jt.rest_local.m[3][3] = 1;
    jt.inverse_bind.m[3][0] = jt.inverse_bind.m[3][1] = jt.inverse_bind.m[3][2] = 0,
    jt.inverse_bind.m[3][3] = 1;
  }

  packVertices(prim, tree, nj, pivot, where, pack);
  if (options.bind_eyeballs)
    bindEyeballs({bindPosition(static_cast<size_t>(eyes[0])) - pivot,
                  bindPosition(static_cast<size_t>(eyes[1])) - pivot},
                 pack);
  const GltfMesh& mesh = doc.meshes[static_cast<size_t>(info.mesh)];
  packControls(mesh, prim.targets.size(), pack);
  if (std::string why = pack.validate(); !why.empty())
    throw Error(doc.path + ": the GNM pack built from it is inconsistent: " + why);
  return pack;
}

}  // namespace sf::character
