// Einsum (cpu_ops_kernels.h): the equation parsed once per node (checkEinsum at load, einsumSpec per run,
// which the Vulkan executor shares through cpu_ops.h), then one sum of products per output element over the
// summed labels: batched products, contractions, transposes, diagonals, traces and sums of any number of
// operands, with numpy's implicit output (the labels used once, in ASCII order, after the ellipsis) and
// explicit one. Sums and products in double for floats, wrapping for integers.
#include <algorithm>
#include <array>

#include "neural/cpu_ops_kernels.h"

namespace sf::nn::cpu {
namespace {

// One term of the equation: its letters in order, and where the ellipsis stands among them (-1: none).
struct Term {
  std::string letters;
  int ellipsis = -1;
};

struct Equation {
  std::string text;
  std::vector<Term> inputs;
  Term output;  // explicit, or made as numpy's implicit output
};

[[noreturn]] void equationError(const Node& node, int64_t opset, const std::string& equation,
                                const std::string& reason) {
  nodeError(node, opset, "equation '" + equation + "': " + reason);
}

std::string termText(const Term& t) {
  std::string s = t.letters;
  if (t.ellipsis >= 0) s.insert(static_cast<size_t>(t.ellipsis), "...");
  return s;
}

bool isLetter(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

Term parseTerm(const Node& node, int64_t opset, const std::string& eq, const std::string& s) {
  Term t;
  for (size_t k = 0; k < s.size();) {
    if (isLetter(s[k])) {
      t.letters += s[k++];
    } else if (s.compare(k, 3, "...") == 0) {
      if (t.ellipsis >= 0) equationError(node, opset, eq, "a term has two ellipses ('" + s + "')");
      t.ellipsis = static_cast<int>(t.letters.size());
      k += 3;
    } else {
      equationError(node, opset, eq,
                    std::string("'") + s[k] + "' is not a label (letters a-z, A-Z and one '...' per term)");
    }
  }
  return t;
}

// The equation of `node` parsed and checked against its number of operands (spaces ignored).
Equation parseEquation(const Node& node, int64_t opset) {
  const Attribute* a = node.attr("equation");
  if (!a) nodeError(node, opset, "attribute equation is required");
  Equation e;
  e.text = node.attrString("equation", "");
  std::string s;
  for (char ch : e.text)
    if (ch != ' ') s += ch;
  const size_t arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  if (arrow != std::string::npos && s.find("->", arrow + 2) != std::string::npos)
    equationError(node, opset, e.text, "more than one '->'");
  for (size_t at = 0;;) {
    const size_t comma = lhs.find(',', at);
    e.inputs.push_back(parseTerm(node, opset, e.text, lhs.substr(at, comma - at)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (e.inputs.size() != node.inputs.size())
    equationError(
        node, opset, e.text,
        std::to_string(e.inputs.size()) + " term(s) for " + std::to_string(node.inputs.size()) + " input(s)");
  std::array<int, 128> uses{};
  bool any_ellipsis = false;
  for (const Term& t : e.inputs) {
    for (char ch : t.letters) ++uses[static_cast<unsigned char>(ch)];
    any_ellipsis = any_ellipsis || t.ellipsis >= 0;
  }
  if (arrow != std::string::npos) {
    e.output = parseTerm(node, opset, e.text, s.substr(arrow + 2));
    for (size_t k = 0; k < e.output.letters.size(); ++k) {
      const char ch = e.output.letters[k];
      if (uses[static_cast<unsigned char>(ch)] == 0)
        equationError(node, opset, e.text, std::string("output label '") + ch + "' is in no input term");
      if (e.output.letters.find(ch, k + 1) != std::string::npos)
        equationError(node, opset, e.text, std::string("output label '") + ch + "' is repeated");
    }
  } else {
    // numpy's implicit output: the broadcast (ellipsis) axes, then the labels used once, in ASCII order.
    if (any_ellipsis) e.output.ellipsis = 0;
    for (int ch = 0; ch < 128; ++ch)
      if (uses[static_cast<size_t>(ch)] == 1) e.output.letters += static_cast<char>(ch);
  }
  return e;
}

}  // namespace

void checkEinsum(const Node& node, int64_t opset) {
  parseEquation(node, opset);
}

// Every Einsum operand is read with the strides of einsumSpec: an odometer over the output's labels, and
// for each output element one over the summed labels.
Outputs opEinsum(const Ctx& c) {
  const size_t ops = c.inputs.size();
  if (ops == 0) c.fail("needs at least one input");
  std::vector<Shape> shapes;
  for (size_t k = 0; k < ops; ++k) {
    c.sameType(c.in(0), c.in(k), "inputs");
    shapes.push_back(c.in(k).shape);
  }
  const Tensor& first = c.in(0);
  if (first.dtype == DType::kBool) c.fail("inputs must be numeric, not bool");
  const EinsumSpec spec = einsumSpec(c.node, shapes, c.opset);
  Tensor y = c.output(first.dtype, spec.out);
  std::vector<bool> in_output(spec.labels.size(), false);
  for (size_t l : spec.output) in_output[l] = true;
  // Per operand, its strides along the output's axes and along the summed labels.
  Shape sum_dims;
  std::vector<std::vector<int64_t>> out_st(ops), sum_st(ops);
  for (size_t l = 0; l < spec.labels.size(); ++l)
    if (!in_output[l]) sum_dims.push_back(spec.labels[l].size);
  for (size_t j = 0; j < ops; ++j) {
    for (size_t l : spec.output) out_st[j].push_back(spec.labels[l].strides[j]);
    for (size_t l = 0; l < spec.labels.size(); ++l)
      if (!in_output[l]) sum_st[j].push_back(spec.labels[l].strides[j]);
  }
  const int64_t sums = c.count(sum_dims);
  // Advances an odometer over `dims`, moving each operand's offset by its strides.
  auto step = [ops](std::vector<int64_t>& index, const Shape& dims,
                    const std::vector<std::vector<int64_t>>& st, std::vector<int64_t>& off) {
    for (size_t d = dims.size(); d-- > 0;) {
      for (size_t j = 0; j < ops; ++j) off[j] += st[j][d];
      if (++index[d] < dims[d]) return;
      for (size_t j = 0; j < ops; ++j) off[j] -= st[j][d] * dims[d];
      index[d] = 0;
    }
  };
  std::vector<int64_t> out_index(spec.out.size(), 0), base(ops, 0);
  const int64_t n = y.numel();
  for (int64_t e = 0; e < n; ++e) {
    std::vector<int64_t> sum_index(sum_dims.size(), 0), off = base;
    if (y.isFloat()) {
      double acc = 0;
      for (int64_t r = 0; r < sums; ++r) {
        double p = 1;
        for (size_t j = 0; j < ops; ++j)
          p *= static_cast<double>(c.inputs[j]->f[static_cast<size_t>(off[j])]);
        acc += p;
        step(sum_index, sum_dims, sum_st, off);
      }
      y.f[static_cast<size_t>(e)] = static_cast<float>(acc);
    } else {
      int64_t acc = 0;
      for (int64_t r = 0; r < sums; ++r) {
        int64_t p = 1;
        for (size_t j = 0; j < ops; ++j) p = wrapMul(p, c.inputs[j]->i[static_cast<size_t>(off[j])]);
        acc = wrapAdd(acc, p);
        step(sum_index, sum_dims, sum_st, off);
      }
      y.i[static_cast<size_t>(e)] = wrapToIntType(acc, y.dtype);
    }
    step(out_index, spec.out, out_st, base);
  }
  return one(std::move(y));
}

}  // namespace sf::nn::cpu

namespace sf::nn {

EinsumSpec einsumSpec(const Node& node, std::span<const Shape> shapes, int64_t opset) {
  const cpu::Equation e = cpu::parseEquation(node, opset);
  auto fail = [&](const std::string& reason) { cpu::equationError(node, opset, e.text, reason); };
  if (shapes.size() != e.inputs.size())
    fail(std::to_string(e.inputs.size()) + " term(s) for " + std::to_string(shapes.size()) + " operand(s)");
  const size_t ops = shapes.size();
  // The number of axes each operand's ellipsis stands for; the broadcast ellipsis has the most.
  std::vector<size_t> ellipsis_dims(ops, 0);
  size_t broadcast_dims = 0;
  for (size_t j = 0; j < ops; ++j) {
    const cpu::Term& t = e.inputs[j];
    const size_t rank = shapes[j].size(), named = t.letters.size();
    if (t.ellipsis < 0 ? rank != named : rank < named)
      fail("term '" + cpu::termText(t) + "' does not fit operand " + std::to_string(j) + " of shape " +
           shapeString(shapes[j]));
    ellipsis_dims[j] = rank - named;
    broadcast_dims = std::max(broadcast_dims, ellipsis_dims[j]);
  }
  EinsumSpec spec;
  // Labels 0 .. broadcast_dims-1 are the ellipsis axes; letters follow as they are first met.
  auto newLabel = [&]() -> size_t {
    EinsumSpec::Label l;
    l.present.assign(ops, false);
    l.strides.assign(ops, 0);
    spec.labels.push_back(std::move(l));
    return spec.labels.size() - 1;
  };
  for (size_t k = 0; k < broadcast_dims; ++k) newLabel();
  std::array<int, 128> letter_label;
  letter_label.fill(-1);
  for (size_t j = 0; j < ops; ++j) {
    const cpu::Term& t = e.inputs[j];
    const std::vector<int64_t> st = rowStrides(shapes[j]);
    const size_t nd = ellipsis_dims[j];
    for (size_t axis = 0; axis < shapes[j].size(); ++axis) {
      const int64_t size = shapes[j][axis];
      const auto at = static_cast<size_t>(t.ellipsis);
      if (t.ellipsis >= 0 && axis >= at && axis < at + nd) {
        // An ellipsis axis, right-aligned with the other operands': numpy broadcasting.
        EinsumSpec::Label& l = spec.labels[broadcast_dims - nd + (axis - at)];
        if (size != 1 && l.size != 1 && size != l.size)
          fail("the axes '...' stands for do not broadcast (operand " + std::to_string(j) + " of shape " +
               shapeString(shapes[j]) + ")");
        if (size != 1) l.size = size;
        l.present[j] = true;
        if (size != 1) l.strides[j] = st[axis];
        continue;
      }
      const char ch = t.letters[t.ellipsis >= 0 && axis >= at + nd ? axis - nd : axis];
      int& id = letter_label[static_cast<unsigned char>(ch)];
      if (id < 0) {
        id = static_cast<int>(newLabel());
        spec.labels[static_cast<size_t>(id)].size = size;
      }
      EinsumSpec::Label& l = spec.labels[static_cast<size_t>(id)];
      if (l.size != size)
        fail(std::string("label '") + ch + "' has size " + std::to_string(l.size) + " and " +
             std::to_string(size) + " (operand " + std::to_string(j) + " of shape " + shapeString(shapes[j]) +
             ")");
      l.present[j] = true;
      l.strides[j] += st[axis];  // a letter repeated in one term reads its diagonal
    }
  }
  // An ellipsis axis no operand broadcasts to more than 1 still has size 1 (and strides 0): harmless.
  const cpu::Term& o = e.output;
  for (size_t k = 0; k <= o.letters.size(); ++k) {
    if (o.ellipsis == static_cast<int>(k))
      for (size_t b = 0; b < broadcast_dims; ++b) spec.output.push_back(b);
    if (k == o.letters.size()) break;
    spec.output.push_back(static_cast<size_t>(letter_label[static_cast<unsigned char>(o.letters[k])]));
  }
  for (size_t l : spec.output) spec.out.push_back(spec.labels[l].size);
  return spec;
}

}  // namespace sf::nn
