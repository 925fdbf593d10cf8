// Small text helpers shared by the front ends.
#pragma once

#include <cstddef>
#include <string>

namespace sf {

// The Levenshtein distance between `a` and `b` (insertions, deletions and substitutions of one byte each):
// how "did you mean" suggestions pick the nearest known word.
size_t editDistance(const std::string& a, const std::string& b);

}  // namespace sf
