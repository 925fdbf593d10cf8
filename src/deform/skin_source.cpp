#include "deform/skin_source.h"

#include <vector>

#include "anim/skinning.h"
#include "core/error.h"

namespace sf {

std::string SkinSource::validate() const {
  const size_t n = positions.size();
  if (!normals.empty() && normals.size() != n)
    return "skin source: " + std::to_string(normals.size()) + " normals for " + std::to_string(n) +
           " vertices";
  if (n && morph_positions.size() % n != 0)
    return "skin source: morph position deltas are not a whole number of targets";
  const size_t targets = targetCount();
  if (n > UINT32_MAX / 16 || (targets + 1) * n > UINT32_MAX / 12)  // the GPU pass indexes floats with 32 bits
    return "skin source: " + std::to_string(n) + " vertices with " + std::to_string(targets) +
           " morph targets exceed the GPU pass's 32-bit indexing";
  if (!morph_normals.empty() && morph_normals.size() != targets * n)
    return "skin source: morph normal deltas differ from the position deltas in count";
  if (morph_weights.size() != targets)
    return "skin source: " + std::to_string(morph_weights.size()) + " morph weights for " +
           std::to_string(targets) + " targets";
  if (joints0.empty() != weights0.empty() ||
      (!joints0.empty() && (joints0.size() != n || weights0.size() != n)))
    return "skin source: joints0/weights0 must both have one entry per vertex";
  if (joints1.empty() != weights1.empty() ||
      (!joints1.empty() && (joints1.size() != n || weights1.size() != n || joints0.empty())))
    return "skin source: joints1/weights1 must both be empty or have one entry per vertex (with joints0)";
  if (joints0.empty() != palette.empty())
    return joints0.empty() ? "skin source: a palette without joints"
                           : "skin source: joints without a palette";
  auto check = [&](std::span<const std::array<uint16_t, 4>> j,
                   std::span<const std::array<float, 4>> w) -> std::string {
    for (size_t v = 0; v < j.size(); ++v)
      for (size_t k = 0; k < 4; ++k)
        if (w[v][k] > 0 && j[v][k] >= palette.size())
          return "skin source: vertex " + std::to_string(v) + " uses joint " + std::to_string(j[v][k]) +
                 " of a " + std::to_string(palette.size()) + "-joint palette";
    return {};
  };
  if (std::string why = check(joints0, weights0); !why.empty()) return why;
  return check(joints1, weights1);
}

void SkinSource::run(std::span<Vec3> out_positions, std::span<Vec3> out_normals) const {
  if (std::string why = validate(); !why.empty()) throw Error(why);
  const size_t n = positions.size(), targets = targetCount();
  if (out_positions.size() != n || out_normals.size() != normals.size())
    throw Error("skin source: output sizes differ from the inputs");
  std::vector<anim::MorphTargetView> views(targets);
  for (size_t t = 0; t < targets; ++t) {
    views[t].positions = morph_positions.subspan(t * n, n);
    if (!morph_normals.empty() && !normals.empty()) views[t].normals = morph_normals.subspan(t * n, n);
  }
  std::vector<Vec3> morphed_p(n), morphed_n(normals.size());
  anim::MorphJob morph;
  morph.positions = positions;
  morph.normals = normals;
  morph.targets = views;
  morph.weights = morph_weights;
  morph.out_positions = morphed_p;
  morph.out_normals = morphed_n;
  morph.run();
  if (!skinned()) {
    std::copy(morphed_p.begin(), morphed_p.end(), out_positions.begin());
    for (size_t v = 0; v < morphed_n.size(); ++v) out_normals[v] = normalize(morphed_n[v]);
    return;
  }
  std::vector<anim::DualQuatJoint> dq;
  anim::SkinningJob skin;
  if (dual_quaternion) {
    dq.resize(palette.size());
    anim::DualQuatPaletteJob{palette, dq}.run();
    skin.method = anim::SkinningMethod::kDualQuaternion;
    skin.dq_palette = dq;
  } else {
    skin.palette = palette;
  }
  skin.positions = morphed_p;
  skin.normals = morphed_n;
  skin.joints0 = joints0;
  skin.weights0 = weights0;
  skin.joints1 = joints1;
  skin.weights1 = weights1;
  skin.out_positions = out_positions;
  skin.out_normals = out_normals;
  skin.run();
}

}  // namespace sf
