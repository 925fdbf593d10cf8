// A splat hull's meta sidecar as the runtime reads it (docs/formats/spl2.md): where it lies beside the SPL2
// file and the camera belt its shell orders were baked for. The bake (hull/bake.h, offline) writes the
// sidecar.
#pragma once

#include <string>
#include <vector>

#include "core/math.h"

namespace sf::hull {

// The sidecar path of a hull file: "drone.spl2" -> "drone.meta.json".
std::string hullMetaPath(const std::string& spl2_path);
// The middle of the camera belt a meta sidecar records (where the bucket cameras of its orders sit); throws
// sf::Error naming the file and JSON path when it is malformed.
float readHullMetaBeltMiddle(const std::string& meta_path);

// A gun of a hull: its barrel tip and axis (the node's +z), hull frame, from the sidecar's named points.
struct HullGun {
  std::string name;    // the node's name in the source model
  Vec3 tip;            // hull frame
  Vec3 axis{0, 0, 1};  // unit, hull frame
};
// The guns a meta sidecar names, in name order (script `fire` gun ids index this list): the named points
// whose name contains "tip" or "muzzle" (any case); when none does, those containing "barrel" or "gun". Axes
// from "axes" (the same name), else +z. None when the sidecar has no "points". Throws sf::Error naming the
// file and the JSON path when a point or axis is malformed.
std::vector<HullGun> readHullMetaGuns(const std::string& meta_path);

// The engines a meta sidecar names: nozzles (the named points containing "engine" or "exhaust", in name
// order; the trail leaves along -axis) and the engine parts (bit p set for each entry of "parts" whose "name"
// contains "engine", any case). Throws sf::Error naming the file and JSON path when malformed.
struct HullEngines {
  std::vector<HullGun> nozzles;
  uint32_t part_mask = 0;
};
HullEngines readHullMetaEngines(const std::string& meta_path);

}  // namespace sf::hull
