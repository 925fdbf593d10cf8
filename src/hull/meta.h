// A splat hull's meta sidecar as the runtime reads it (docs/formats/spl2.md): where it lies beside the SPL2 file
// and the camera belt its shell orders were baked for. The bake (hull/bake.h, offline) writes the sidecar.
#pragma once

#include <string>

namespace sf::hull {

// The sidecar path of a hull file: "drone.spl2" -> "drone.meta.json".
std::string hullMetaPath(const std::string& spl2_path);
// The middle of the camera belt a meta sidecar records (where the bucket cameras of its orders sit); throws
// sf::Error naming the file and JSON path when it is malformed.
float readHullMetaBeltMiddle(const std::string& meta_path);

}  // namespace sf::hull
