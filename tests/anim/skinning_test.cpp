// Joint palettes and skinning: cesium_man.gltf and rigged_simple.gltf skinned at several times against a
// plain reference written here (recursive scene-graph walk with double 4x4 matrices, world(joint) *
// inverseBind, linear blend); morph targets of morph-stress-test.glb against raw accessor bytes; LBS vs
// DQS on rigid motion and on a twisted two-bone cylinder.
#include "anim/skinning.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "anim/clip.h"
#include "anim/local_to_model.h"
#include "anim/raw_gltf.h"
#include "core/error.h"
#include "model/gltf_import.h"
#include "support/test_support.h"

namespace sf::anim {
namespace {

struct M4 {
  double m[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
};
M4 mul(const M4& a, const M4& b) {
  M4 r;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      r.m[i][j] = 0;
      for (int k = 0; k < 4; ++k) r.m[i][j] += a.m[i][k] * b.m[k][j];
    }
  return r;
}
M4 fromTrs(const Transform& x) {
  double w = x.rotation.w, i = x.rotation.x, j = x.rotation.y, k = x.rotation.z;
  double n = std::sqrt(w * w + i * i + j * j + k * k);
  w /= n, i /= n, j /= n, k /= n;
  double r[3][3] = {{1 - 2 * (j * j + k * k), 2 * (i * j - w * k), 2 * (i * k + w * j)},
                    {2 * (i * j + w * k), 1 - 2 * (i * i + k * k), 2 * (j * k - w * i)},
                    {2 * (i * k - w * j), 2 * (j * k + w * i), 1 - 2 * (i * i + j * j)}};
  double s[3] = {x.scale.x, x.scale.y, x.scale.z}, t[3] = {x.translation.x, x.translation.y, x.translation.z};
  M4 out;
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) out.m[a][b] = r[a][b] * s[b];
    out.m[a][3] = t[a];
  }
  return out;
}
M4 fromMat4(const Mat4& m) {
  M4 r;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) r.m[i][j] = m.m[i][j];
  return r;
}
Vec3 apply(const M4& m, Vec3 p) {
  double v[3];
  for (int i = 0; i < 3; ++i) v[i] = m.m[i][0] * p.x + m.m[i][1] * p.y + m.m[i][2] * p.z + m.m[i][3];
  return {static_cast<float>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2])};
}

// Reference: world-space skinned positions of the first skinned node's mesh at time t.
std::vector<Vec3> referenceSkin(const GltfDocument& doc, const Skeleton& skeleton,
                                const std::vector<Transform>& pose) {
  std::vector<M4> world(doc.nodes.size());
  std::function<void(int, const M4&)> walk = [&](int node, const M4& parent) {
    const GltfNode& n = doc.nodes[static_cast<size_t>(node)];
    M4 local =
        n.has_matrix ? fromMat4(n.matrix) : fromTrs(pose[static_cast<size_t>(skeleton.findSource(node))]);
    world[static_cast<size_t>(node)] = mul(parent, local);
    for (int c : n.children) walk(c, world[static_cast<size_t>(node)]);
  };
  for (size_t i = 0; i < doc.nodes.size(); ++i)
    if (doc.nodes[i].parent < 0) walk(static_cast<int>(i), M4{});
  size_t node = 0;
  while (doc.nodes[node].skin < 0) ++node;
  const GltfSkin& skin = doc.skins[static_cast<size_t>(doc.nodes[node].skin)];
  const GltfPrimitive& prim = doc.meshes[static_cast<size_t>(doc.nodes[node].mesh)].primitives[0];
  std::vector<M4> joint(skin.joints.size());
  for (size_t j = 0; j < skin.joints.size(); ++j)
    joint[j] = mul(world[static_cast<size_t>(skin.joints[j])], fromMat4(skin.inverse_bind[j]));
  std::vector<Vec3> out(prim.vertexCount());
  for (size_t v = 0; v < out.size(); ++v) {
    double sum = 0, p[3] = {0, 0, 0};
    for (size_t k = 0; k < 4; ++k) sum += prim.weights0[v][k];
    for (size_t k = 0; k < 4; ++k) {
      double w = prim.weights0[v][k] / sum;
      Vec3 q = apply(joint[prim.joints0[v][k]], prim.positions[v]);
      p[0] += w * q.x, p[1] += w * q.y, p[2] += w * q.z;
    }
    out[v] = {static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2])};
  }
  return out;
}

// The engine's pipeline: sample, local-to-model, palette, LBS; then to world space with the mesh node.
struct Posed {
  std::vector<Transform> pose;
  std::vector<Vec3> world_positions;
};
Posed engineSkin(const GltfDocument& doc, const Skeleton& skeleton, const Clip& clip, float t,
                 SkinningMethod method) {
  Posed r;
  r.pose.resize(skeleton.size());
  std::vector<float> weights(skeleton.weightTotal());
  SamplingJob{&clip, &skeleton, t, r.pose, weights}.run();
  std::vector<Mat4> models(skeleton.size());
  LocalToModelJob ltm;
  ltm.skeleton = &skeleton;
  ltm.input = r.pose;
  ltm.output = models;
  ltm.run();
  size_t node = 0;
  while (doc.nodes[node].skin < 0) ++node;
  SkinBinding skin = skinFromGltf(doc, static_cast<size_t>(doc.nodes[node].skin), skeleton);
  EXPECT_EQ(skin.mesh_joint, skeleton.findSource(static_cast<int>(node)));
  std::vector<Mat4> palette(skin.joints.size());
  PaletteJob{&skin, models, palette}.run();
  std::vector<DualQuatJoint> dq(palette.size());
  DualQuatPaletteJob{palette, dq}.run();
  const GltfPrimitive& prim = doc.meshes[static_cast<size_t>(doc.nodes[node].mesh)].primitives[0];
  std::vector<Vec3> out(prim.vertexCount()), normals(prim.normals.size());
  SkinningJob job;
  job.method = method;
  job.palette = palette;
  job.dq_palette = dq;
  job.positions = prim.positions;
  job.normals = prim.normals;
  job.joints0 = prim.joints0;
  job.weights0 = prim.weights0;
  job.out_positions = out;
  job.out_normals = normals;
  job.run();
  for (const Vec3& n : normals) EXPECT_NEAR(length(n), 1.0f, 1e-4f);
  const Mat4& mesh_world = models[static_cast<size_t>(skin.mesh_joint)];
  for (Vec3& p : out) p = transformPoint(mesh_world, p);
  r.world_positions = std::move(out);
  return r;
}

float extent(const std::vector<Vec3>& v) {
  Vec3 lo = v[0], hi = v[0];
  for (const Vec3& p : v)
    for (int k = 0; k < 3; ++k) lo[k] = std::min(lo[k], p[k]), hi[k] = std::max(hi[k], p[k]);
  return length(hi - lo);
}

void checkAsset(const std::string& path, std::initializer_list<float> times) {
  GltfDocument doc = loadGltf(path);
  Skeleton skeleton = skeletonFromGltf(doc);
  Clip clip = clipFromGltf(doc, 0, skeleton);
  std::vector<Vec3> previous;
  for (float t : times) {
    Posed e = engineSkin(doc, skeleton, clip, t, SkinningMethod::kLinearBlend);
    std::vector<Vec3> ref = referenceSkin(doc, skeleton, e.pose);
    ASSERT_EQ(ref.size(), e.world_positions.size());
    float tol = 2e-5f * extent(ref);
    float worst = 0;
    for (size_t v = 0; v < ref.size(); ++v) worst = std::max(worst, length(ref[v] - e.world_positions[v]));
    EXPECT_LT(worst, tol) << path << " t=" << t;
    if (!previous.empty()) {  // the animation really moves the mesh
      float moved = 0;
      for (size_t v = 0; v < ref.size(); ++v) moved = std::max(moved, length(ref[v] - previous[v]));
      EXPECT_GT(moved, 0.01f * extent(ref)) << path << " t=" << t;
    }
    previous = ref;
  }
}

TEST(Skinning, CesiumManPalettesAgainstReference) {
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  checkAsset(path, {0.0f, 0.5f, 1.0f, 1.37f, 2.0f});
}

TEST(Skinning, RiggedSimplePalettesAgainstReference) {
  SF_REQUIRE_ASSET(path, "gltf/rigged_simple.gltf");
  checkAsset(path, {0.0f, 0.5f, 1.0f, 1.6f});
}

TEST(Skinning, DqsMatchesLbsOnCesiumManClosely) {
  // Cesium Man has no extreme twists: the two methods stay within a few percent of the body size.
  SF_REQUIRE_ASSET(path, "gltf/cesium_man.gltf");
  GltfDocument doc = loadGltf(path);
  Skeleton skeleton = skeletonFromGltf(doc);
  Clip clip = clipFromGltf(doc, 0, skeleton);
  Posed lbs = engineSkin(doc, skeleton, clip, 0.8f, SkinningMethod::kLinearBlend);
  Posed dqs = engineSkin(doc, skeleton, clip, 0.8f, SkinningMethod::kDualQuaternion);
  float worst = 0;
  for (size_t v = 0; v < lbs.world_positions.size(); ++v)
    worst = std::max(worst, length(lbs.world_positions[v] - dqs.world_positions[v]));
  EXPECT_LT(worst, 0.05f * extent(lbs.world_positions));
}

TEST(Skinning, MorphTargetsAgainstRawBytes) {
  SF_REQUIRE_ASSET(path, "gltf/morph-stress-test.glb");
  GltfDocument doc = loadGltf(path);
  test::RawGltf raw(path);
  std::vector<float> weights = {0.1f, 0.9f, 0.0f, 0.5f, 1.0f, 0.25f, 0.0f, 0.7f};
  float moved = 0;
  ASSERT_EQ(doc.meshes[0].primitives.size(), raw.arraySize("/meshes/0/primitives"));
  for (size_t p = 0; p < doc.meshes[0].primitives.size(); ++p) {
    const GltfPrimitive& prim = doc.meshes[0].primitives[p];
    std::string pp = "/meshes/0/primitives/" + std::to_string(p);
    std::vector<float> base = raw.floats(raw.integer(pp + "/attributes/POSITION"));
    std::vector<std::vector<float>> deltas;
    std::vector<MorphTargetView> views;
    for (size_t t = 0; t < 8; ++t) {
      deltas.push_back(raw.floats(raw.integer(pp + "/targets/" + std::to_string(t) + "/POSITION")));
      views.push_back({prim.targets[t].positions, prim.targets[t].normals});
    }
    std::vector<Vec3> out(prim.vertexCount()), out_n(prim.normals.size());
    MorphJob job;
    job.positions = prim.positions;
    job.normals = prim.normals;
    job.targets = views;
    job.weights = weights;
    job.out_positions = out;
    job.out_normals = out_n;
    job.run();
    for (size_t v = 0; v < out.size(); ++v)
      for (size_t k = 0; k < 3; ++k) {
        double want = base[3 * v + k];
        for (size_t t = 0; t < 8; ++t) want += weights[t] * deltas[t][3 * v + k];
        EXPECT_NEAR(out[v][static_cast<int>(k)], want, 1e-5) << "primitive " << p << " vertex " << v;
        moved = std::max(moved, static_cast<float>(std::abs(want - base[3 * v + k])));
      }
    job.weights = std::span<const float>(weights).first(7);
    EXPECT_NE(job.validate().find("7 weights for 8 targets"), std::string::npos);
    EXPECT_THROW(job.run(), Error);
  }
  EXPECT_GT(moved, 0.01f);
}

// ---- synthetic two-bone cylinder along +y: joint 0 at the origin, joint 1 at y = 1 ----

struct Cylinder {
  std::vector<Vec3> positions, normals;
  std::vector<JointIndices4> joints;
  std::vector<JointWeights4> weights;
};
constexpr float kRadius = 0.2f;

Cylinder makeCylinder() {
  Cylinder c;
  for (int ring = 0; ring <= 20; ++ring) {
    float y = static_cast<float>(ring) * 0.1f;
    float w1 = std::clamp((y - 0.8f) / 0.4f, 0.0f, 1.0f);  // blend zone [0.8, 1.2]
    for (int k = 0; k < 16; ++k) {
      float a = static_cast<float>(k) * 6.2831853f / 16;
      c.positions.push_back({kRadius * std::cos(a), y, kRadius * std::sin(a)});
      c.normals.push_back({std::cos(a), 0, std::sin(a)});
      c.joints.push_back({0, 1, 0, 0});
      c.weights.push_back({1 - w1, w1, 0, 0});
    }
  }
  return c;
}

std::vector<Vec3> skinCylinder(const Cylinder& c, std::span<const Mat4> palette, SkinningMethod method,
                               std::vector<Vec3>* normals = nullptr) {
  std::vector<DualQuatJoint> dq(palette.size());
  DualQuatPaletteJob{palette, dq}.run();
  std::vector<Vec3> out(c.positions.size()), n(c.normals.size());
  SkinningJob job;
  job.method = method;
  job.palette = palette;
  job.dq_palette = dq;
  job.positions = c.positions;
  job.normals = c.normals;
  job.joints0 = c.joints;
  job.weights0 = c.weights;
  job.out_positions = out;
  job.out_normals = n;
  job.run();
  if (normals) *normals = n;
  return out;
}

Mat4 rigid(Vec3 axis, float angle, Vec3 t) {
  axis = normalize(axis);
  float s = std::sin(angle / 2);
  return Mat4::fromLinearTranslation(
      rotationMatrix({std::cos(angle / 2), axis.x * s, axis.y * s, axis.z * s}), t);
}

TEST(Skinning, LbsAndDqsAgreeOnRigidMotion) {
  Cylinder c = makeCylinder();
  Mat4 m = rigid({1, 2, 3}, 1.1f, {0.5f, -2, 3});
  Mat4 palette[2] = {m, m};
  std::vector<Vec3> ln, dn;
  std::vector<Vec3> lbs = skinCylinder(c, palette, SkinningMethod::kLinearBlend, &ln);
  std::vector<Vec3> dqs = skinCylinder(c, palette, SkinningMethod::kDualQuaternion, &dn);
  for (size_t v = 0; v < lbs.size(); ++v) {
    Vec3 want = transformPoint(m, c.positions[v]);
    EXPECT_LT(length(lbs[v] - want), 1e-5f);
    EXPECT_LT(length(dqs[v] - want), 1e-5f);
    EXPECT_LT(length(ln[v] - dn[v]), 1e-5f);
    EXPECT_LT(length(ln[v] - m.linear() * c.normals[v]), 1e-5f);
  }
  // With uniform scale too (DQS carries it in the stretch matrix).
  Mat4 scaled = m;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) scaled.m[i][j] *= 1.5f;
  Mat4 palette2[2] = {scaled, scaled};
  lbs = skinCylinder(c, palette2, SkinningMethod::kLinearBlend);
  dqs = skinCylinder(c, palette2, SkinningMethod::kDualQuaternion);
  for (size_t v = 0; v < lbs.size(); ++v) EXPECT_LT(length(lbs[v] - dqs[v]), 1e-5f);
}

TEST(Skinning, DqsKeepsVolumeWhereLbsCollapses) {
  Cylinder c = makeCylinder();
  for (float degrees : {90.0f, 120.0f, 160.0f}) {
    // Joint 1 twists about the bone axis (y) around its own origin (0, 1, 0): palette = T R T^-1.
    Mat4 twist = rigid({0, 1, 0}, degrees * 3.14159265f / 180, {0, 0, 0});
    Mat4 to_joint = Mat4::fromLinearTranslation(Mat3{}, {0, 1, 0}),
         from_joint = Mat4::fromLinearTranslation(Mat3{}, {0, -1, 0});
    Mat4 palette[2] = {Mat4{}, to_joint * twist * from_joint};
    std::vector<Vec3> lbs = skinCylinder(c, palette, SkinningMethod::kLinearBlend);
    std::vector<Vec3> dqs = skinCylinder(c, palette, SkinningMethod::kDualQuaternion);
    float lbs_min = 1e9f, dqs_min = 1e9f, dqs_max = 0;
    for (size_t v = 0; v < lbs.size(); ++v) {
      float rl = std::hypot(lbs[v].x, lbs[v].z), rd = std::hypot(dqs[v].x, dqs[v].z);
      lbs_min = std::min(lbs_min, rl);
      dqs_min = std::min(dqs_min, rd);
      dqs_max = std::max(dqs_max, rd);
      EXPECT_NEAR(dqs[v].y, c.positions[v].y, 1e-5f);  // a pure twist keeps every ring at its height
    }
    // LBS at the half-way ring: radius r cos(angle / 2); DQS keeps r.
    EXPECT_NEAR(lbs_min, kRadius * std::cos(degrees * 3.14159265f / 360), 1e-4f) << degrees;
    EXPECT_LT(lbs_min, 0.75f * kRadius) << degrees;
    EXPECT_NEAR(dqs_min, kRadius, 1e-4f) << degrees;
    EXPECT_NEAR(dqs_max, kRadius, 1e-4f) << degrees;
  }
}

TEST(Skinning, EightInfluencesAndRenormalisation) {
  Cylinder c = makeCylinder();
  const size_t n = c.positions.size();
  // Split each vertex's weights over both sets, unnormalised (x3); result must equal the 4-influence one.
  std::vector<JointWeights4> w0(n), w1(n);
  std::vector<JointIndices4> j1(n, JointIndices4{1, 0, 0, 0});
  for (size_t v = 0; v < n; ++v) {
    w0[v] = {3 * c.weights[v][0], 1.5f * c.weights[v][1], 0, 0};
    w1[v] = {1.5f * c.weights[v][1], 0, 0, 0};
  }
  Mat4 palette[2] = {rigid({0, 0, 1}, 0.3f, {0, 0, 0}), rigid({1, 0, 0}, 0.9f, {0.1f, 0, 0})};
  std::vector<Vec3> want = skinCylinder(c, palette, SkinningMethod::kLinearBlend);
  std::vector<Vec3> out(n);
  SkinningJob job;
  job.palette = palette;
  job.positions = c.positions;
  job.joints0 = c.joints;
  job.weights0 = w0;
  job.joints1 = j1;
  job.weights1 = w1;
  job.out_positions = out;
  job.run();
  for (size_t v = 0; v < n; ++v) EXPECT_LT(length(out[v] - want[v]), 1e-5f);
  // Validation: a joint outside the palette with a weight is refused.
  j1[n - 1] = {7, 0, 0, 0};  // the top ring is fully on the second set
  EXPECT_NE(job.validate().find("joint 7 outside the palette of 2"), std::string::npos) << job.validate();
  EXPECT_THROW(job.run(), Error);
  job.weights1 = {};
  EXPECT_NE(job.validate().find("joints1 and weights1"), std::string::npos);
}

TEST(Skinning, PaletteUsesInverseMeshWorld) {
  // Joint model matrices and a mesh node with its own transform: palette = inv(mesh) * joint * ibm.
  JointDesc d[3];
  d[0].name = "root";
  d[0].rest.translation = {1, 2, 3};
  d[1].name = "mesh";
  d[1].parent = 0;
  d[1].rest.scale = {2, 2, 2};
  d[2].name = "bone";
  d[2].parent = 0;
  d[2].rest.rotation = normalize(Quat{1, 0.3f, 0, 0});
  Skeleton s = Skeleton::build(d);
  std::vector<Mat4> models(3);
  LocalToModelJob ltm;
  ltm.skeleton = &s;
  ltm.input = s.rest();
  ltm.output = models;
  ltm.run();
  SkinBinding skin;
  skin.joints = {s.find("bone")};
  skin.inverse_bind = {rigid({0, 1, 0}, 0.4f, {0.5f, 0, 0})};
  skin.mesh_joint = s.find("mesh");
  std::vector<Mat4> palette(1);
  PaletteJob{&skin, models, palette}.run();
  Mat4 world = models[static_cast<size_t>(skin.mesh_joint)] * palette[0];
  Mat4 want = models[static_cast<size_t>(s.find("bone"))] * skin.inverse_bind[0];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(world.m[i][j], want.m[i][j], 1e-5f);
  skin.mesh_joint = 9;
  EXPECT_NE(PaletteJob({&skin, models, palette}).validate().find("mesh joint 9"), std::string::npos);
  EXPECT_EQ(LocalToModelJob{}.validate(), "no skeleton");
}

}  // namespace
}  // namespace sf::anim
