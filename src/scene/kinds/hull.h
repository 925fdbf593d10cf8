// Splat hull objects (an SPL2 file, {"hull": ...}): drawn in their mode with the scene's cel light, their
// runtime LOD applied; a live hull (effects, a script, a seed) through its effect pass (hull/effects.h), its
// untouched chunks in the baked path unless its live core is sorted, its script advanced by posing. The
// object's `cloud` holds the hull's rest gaussians (for bounds and counts); its heading is part of
// object_to_world.
#pragma once

#include <memory>
#include <string>

#include "hull/effects.h"
#include "hull/hull_lod.h"
#include "hull/hull_render.h"
#include "hull/hull_script.h"
#include "hull/outline.h"
#include "scene/scene_object.h"

namespace sf {

class HullObject final : public SceneObjectKind {
 public:
  explicit HullObject(std::shared_ptr<const hull::HullAsset> hull_asset) : asset(std::move(hull_asset)) {}
  std::string_view kindName() const override { return "hull"; }
  std::string describe(const SceneObject& object) const override;
  void pose(const SceneObject& object, const PoseContext& ctx, PoseSink& out) const override;
  void attachGpu(const SceneObject& object, GpuAttach& gpu) const override;
  void detachGpu(GpuAttach& gpu) const override;
  bool posedContent() const override { return true; }

  std::shared_ptr<const hull::HullAsset> asset;
  hull::HullMode mode = hull::HullMode::kBaked;
  // Runtime LOD (scene JSON "lod" on a hull object, --hull-lod; hull/hull_lod.h): the first K splats in
  // importance order, or K by the distance rule, in every mode and for live hulls (a script's `lod` event
  // replaces it from its time on).
  hull::HullLod lod;
  // A live hull (scene JSON "effects", "script", "seed"; `hull play`): effects and destruction. Mutable:
  // posing advances its script.
  std::shared_ptr<hull::HullInstance> live;
  std::shared_ptr<hull::HullScriptPlayer> script;
  // How the live hull draws its untouched chunks (scene JSON "liveCore", --live-core; hull/effects.h
  // LiveCore): as the baked hull (the core mesh and the baked shell), or every slot through the sort.
  hull::LiveCore live_core = hull::LiveCore::kSorted;
  // The screen-space outline (scene JSON "outline", --outline; hull/outline.h): selected from time 0 or not;
  // a script's `select` events and its hits' flash change it over time.
  hull::OutlineSpec outline;
};

// A hull's posed storage: its lit splats and core octagons this frame.
struct HullPosed : PosedState {
  hull::HullFrame frame;
};

// Fills a scene object from an SPL2 file (and its meta sidecar): the hull, its rest gaussians as the
// object's cloud. Throws sf::Error.
HullObject& loadHullObject(SceneObject& obj, const std::string& path);

}  // namespace sf
