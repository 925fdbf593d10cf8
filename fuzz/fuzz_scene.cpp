// libFuzzer target: scene JSON through sf::parseSceneJson(text, "/nonexistent-dir/scene.json", options)
// with options.strict = false: objects (files, glTF models, characters) name paths in a directory that
// does not exist, so they fail to load and become placeholders, which exercises that path too. A scene
// that parses then runs its character script (docs/formats/character.md, "Commands") in a
// character::CharacterWorld up to its last command, as `render` does at t = 0 and `animate` over time;
// spawned packages fail to load and keep their placeholder. Only sf::Error is caught.
#include <algorithm>
#include <string>

#include "character/world.h"
#include "fuzz_target.h"
#include "scene/scene.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sf::SceneLoadOptions options;
  options.strict = false;
  try {
    sf::Scene scene = sf::parseSceneJson(text, "/nonexistent-dir/scene.json", options);
    if (!scene.script.empty()) {
      sf::character::CharacterWorld world;
      world.advanceTo(std::min(scene.script.back().t, 1000.0), scene.script);
      world.renderObjects(false);
      world.takeLog();
    }
  } catch (const sf::Error&) {
  }
  return 0;
}
