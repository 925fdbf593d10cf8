// Expression spaces of splat characters.
//   arkit52: the 52 ARKit blendshape names in canonical order (kArkit52); a vector drives the bound mesh's
//            morph targets of the same names; names the character lacks are reported, never remapped.
//   morph:   the character's own morph targets, one value per target in file order.
// A vector in a space the character does not declare is refused with the reason, never reinterpreted.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace sf::character {

extern const std::array<const char*, 52> kArkit52;
// Index of an ARKit name in kArkit52, or -1.
int arkitIndex(const std::string& name);

struct Expression {
  std::string space;           // "arkit52" or "morph"
  std::vector<float> weights;  // 52 values (arkit52) or one per morph target (morph)
};

}  // namespace sf::character
