#include "neural/graph.h"

#include "core/error.h"

namespace sf::nn {
namespace {

const char* kindName(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kFloat:
      return "float";
    case Attribute::Kind::kInt:
      return "int";
    case Attribute::Kind::kString:
      return "string";
    case Attribute::Kind::kTensor:
      return "tensor";
    case Attribute::Kind::kFloats:
      return "floats";
    case Attribute::Kind::kInts:
      return "ints";
    case Attribute::Kind::kStrings:
      return "strings";
    case Attribute::Kind::kGraph:
      return "graph";
    default:
      return "unsupported kind";
  }
}

const Attribute* typed(const Node& n, const std::string& key, Attribute::Kind want) {
  const Attribute* a = n.attr(key);
  if (a && a->kind != want)
    throw Error(n.describe() + ": attribute '" + key + "' is " + kindName(a->kind) + ", expected " +
                kindName(want));
  return a;
}

}  // namespace

std::string Node::describe() const {
  return "node '" + name + "' (" + op_type + ")";
}

int64_t Node::attrInt(const std::string& key, int64_t fallback) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::kInt);
  return a ? a->i : fallback;
}

float Node::attrFloat(const std::string& key, float fallback) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::kFloat);
  return a ? a->f : fallback;
}

std::string Node::attrString(const std::string& key, const std::string& fallback) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::kString);
  return a ? a->s : fallback;
}

std::vector<int64_t> Node::attrInts(const std::string& key, const std::vector<int64_t>& fallback) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::kInts);
  return a ? a->ints : fallback;
}

std::vector<float> Node::attrFloats(const std::string& key, const std::vector<float>& fallback) const {
  const Attribute* a = typed(*this, key, Attribute::Kind::kFloats);
  return a ? a->floats : fallback;
}

}  // namespace sf::nn
