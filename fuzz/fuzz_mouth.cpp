// libFuzzer target: the binary files of a character package's mouth parts and pose correctives
// (docs/formats/character-extras.md). The first input byte picks the reader (its value modulo 5) that gets
// the rest of the input:
//  0: mouth_hidden.bin, sf::character::decodeMouthHidden for a package of 64 splats and a bound mesh of 32
//     vertices (header, record count against the size, rows, kinds, lip vertices, axes);
//  1: teeth.bin, decodeTeethPoints for a bound mesh of 16 triangles (record count, triangles, barycentrics,
//     offset and set-back); points that decode are encoded again (encodeTeethPoints), which must give the
//     same bytes (values are stored bit for bit);
//  2: a correction's fade.bin, decodeFade, for the count the size implies (size / 2) and for 8 splats;
//     factors that decode are encoded again (encodeFade: each float16 in [0, 1] decodes to one float, which
//     rounds back to it), which must give the same bytes;
//  3: a correction's side.bin, decodeSides, for the count the size implies and for 8 splats;
//  4: mouth_meshes.bin, decodeMouthMeshes for a bound mesh of 16 triangles (mesh count, per mesh its counts
//     against the bytes left, colour, vertex records, indices, trailing bytes); meshes that decode are
//     encoded again (encodeMouthMeshes), which must give the same bytes.
// fade.bin and side.bin have no header: their count is the package's, so the second call reaches the size
// check. Only sf::Error is caught.
#include <cstring>
#include <span>
#include <vector>

#include "character/corrective.h"
#include "character/mouth.h"
#include "fuzz_target.h"

SF_FUZZ_INITIALIZE_LIMITS

namespace {

constexpr size_t kSplats = 64, kVertices = 32, kTriangles = 16, kFixedCount = 8;

bool same(const std::vector<uint8_t>& a, std::span<const uint8_t> b) {
  return a.size() == b.size() && (b.empty() || std::memcmp(a.data(), b.data(), b.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      try {
        sf::character::decodeMouthHidden(rest, "fuzz_mouth_hidden.bin", kSplats, kVertices);
      } catch (const sf::Error&) {
      }
      break;
    case 1:
      try {
        const std::vector<sf::character::TeethPoint> points =
            sf::character::decodeTeethPoints(rest, "fuzz_teeth.bin", kTriangles);
        if (!same(sf::character::encodeTeethPoints(points), rest)) __builtin_trap();
      } catch (const sf::Error&) {
      }
      break;
    case 2:
      try {
        const std::vector<float> fade = sf::character::decodeFade(rest, "fuzz_fade.bin", rest.size() / 2);
        if (!same(sf::character::encodeFade(fade), rest)) __builtin_trap();
      } catch (const sf::Error&) {
      }
      try {
        sf::character::decodeFade(rest, "fuzz_fade.bin", kFixedCount);
      } catch (const sf::Error&) {
      }
      break;
    case 4:
      try {
        const std::vector<sf::character::MouthMesh> meshes =
            sf::character::decodeMouthMeshes(rest, "fuzz_mouth_meshes.bin", kTriangles);
        if (!same(sf::character::encodeMouthMeshes(meshes), rest)) __builtin_trap();
      } catch (const sf::Error&) {
      }
      break;
    default:
      try {
        sf::character::decodeSides(rest, "fuzz_side.bin", rest.size());
      } catch (const sf::Error&) {
      }
      try {
        sf::character::decodeSides(rest, "fuzz_side.bin", kFixedCount);
      } catch (const sf::Error&) {
      }
      break;
  }
  return 0;
}
