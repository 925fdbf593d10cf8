// libFuzzer target: camera JSON (intrinsics or look-at) through sf::parseCameraJson(text, "fuzz.json"), as
// given and with a --width/--height override (the intrinsics scaling path). Only sf::Error is caught.
#include <string>

#include "fuzz_target.h"
#include "scene/scene.h"

SF_FUZZ_INITIALIZE_LIMITS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    sf::parseCameraJson(text, "fuzz.json");
  } catch (const sf::Error&) {
  }
  try {
    sf::parseCameraJson(text, "fuzz.json", 97, 61);
  } catch (const sf::Error&) {
  }
  return 0;
}
