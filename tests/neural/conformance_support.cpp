#include "neural/conformance_support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "neural/cpu_ops.h"

namespace sf::nn::conformance {
namespace {

constexpr double kRtol = 1e-3, kAtol = 1e-7;

// ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns (the model declares bfloat16):
// read such a tensor as the bfloat16 it stands for.
Tensor asDeclared(Tensor t, DType declared) {
  if (declared != DType::kBFloat16 || t.dtype != DType::kUInt16) return t;
  Tensor b(DType::kBFloat16, t.shape);
  for (size_t k = 0; k < t.i.size(); ++k) {
    const uint32_t bits = static_cast<uint32_t>(t.i[k]) << 16;
    std::memcpy(&b.f[k], &bits, 4);
  }
  return b;
}

fs::path inputFile(const fs::path& data, size_t k) {
  return data / ("input_" + std::to_string(k) + ".pb");
}
fs::path outputFile(const fs::path& data, size_t k) {
  return data / ("output_" + std::to_string(k) + ".pb");
}

// Whether a tensor is what a declared input accepts (symbolic dimensions match anything).
bool matchesDeclaration(const Tensor& t, const ValueInfo& v) {
  if (t.dtype != v.dtype) return false;
  if (!v.has_shape) return true;
  if (t.shape.size() != v.shape.size()) return false;
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (v.shape[d] >= 0 && v.shape[d] != t.shape[d]) return false;
  return true;
}

}  // namespace

std::string testDataDir() {
  const char* env = std::getenv("SPLATFORGE_ONNX_TESTDATA");
  return env && *env ? env : "/usr/share/libonnx-testdata/data/node";
}

// Claimed: the model loads; every node passes the load-time check of its kernel; every declared input and
// output is a tensor of a supported type; and the case's input files are what the model declares (one case
// of the data contradicts its own model: an executor that checks its inputs cannot run it as written).
Claim claimCase(const fs::path& dir) {
  Claim c;
  try {
    const Graph g = loadOnnxFile((dir / "model.onnx").string());
    for (const Node& n : g.nodes) c.ops.insert(n.op_type);
    for (const Node& n : g.nodes) checkCpuNode(n, g.opset);
    for (const auto* list : {&g.inputs, &g.outputs})
      for (const ValueInfo& v : *list)
        if (!isSupportedType(v.dtype))
          throw Error("'" + v.name + "' is of type " + dtypeName(v.dtype) + " (not a supported tensor)");
    for (int s = 0; fs::is_directory(dir / ("test_data_set_" + std::to_string(s))); ++s) {
      const fs::path data = dir / ("test_data_set_" + std::to_string(s));
      for (size_t k = 0; k < g.inputs.size() && fs::exists(inputFile(data, k)); ++k) {
        const Tensor t = asDeclared(loadTensorProtoFile(inputFile(data, k).string()), g.inputs[k].dtype);
        if (!matchesDeclaration(t, g.inputs[k]))
          throw Error("test data contradicts the model: input '" + g.inputs[k].name + "' is " +
                      dtypeName(t.dtype) + " " + shapeString(t.shape) + ", declared " +
                      dtypeName(g.inputs[k].dtype) + " " + shapeString(g.inputs[k].shape));
      }
    }
    c.claimed = true;
  } catch (const std::exception& e) {
    c.reason = e.what();
  }
  return c;
}

std::vector<fs::path> caseDirs() {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(testDataDir(), ec))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

namespace {

// numpy.testing.assert_allclose(actual, expected, rtol, atol) with equal_nan, for floats; exact equality for
// integers and bools. Empty when they match, else what differs.
std::string compareTensors(const Tensor& expected, const Tensor& actual) {
  if (expected.dtype != actual.dtype)
    return "type " + dtypeName(actual.dtype) + ", expected " + dtypeName(expected.dtype);
  if (expected.shape != actual.shape)
    return "shape " + shapeString(actual.shape) + ", expected " + shapeString(expected.shape);
  size_t bad = 0, first = 0;
  for (size_t k = 0; k < static_cast<size_t>(expected.numel()); ++k) {
    bool ok;
    if (expected.isFloat()) {
      const double e = expected.f[k], a = actual.f[k];
      if (std::isnan(e) || std::isnan(a))
        ok = std::isnan(e) && std::isnan(a);
      else if (std::isinf(e) || std::isinf(a))
        ok = e == a;
      else
        ok = std::fabs(a - e) <= kAtol + kRtol * std::fabs(e);
    } else {
      ok = expected.i[k] == actual.i[k];
    }
    if (!ok && bad++ == 0) first = k;
  }
  if (bad == 0) return {};
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << expected.numel() << " elements differ; first at " << first << ": "
     << actual.asDouble(first) << ", expected " << expected.asDouble(first);
  return os.str();
}

}  // namespace

TensorMap caseInputs(const fs::path& dir, const Graph& g, int s) {
  const fs::path data = dir / ("test_data_set_" + std::to_string(s));
  TensorMap feed;
  for (size_t k = 0; k < g.inputs.size() && fs::exists(inputFile(data, k)); ++k)
    feed[g.inputs[k].name] = asDeclared(loadTensorProtoFile(inputFile(data, k).string()), g.inputs[k].dtype);
  return feed;
}

// Runs every test data set of a case; empty on success, else the first problem.
std::string runCase(const fs::path& dir, const RunnerFactory& make) {
  try {
    const Graph g = loadOnnxFile((dir / "model.onnx").string());
    const std::vector<ValueInfo> inputs = g.inputs, outputs = g.outputs;
    const Runner executor = make(g);
    size_t sets = 0;
    for (int s = 0; fs::is_directory(dir / ("test_data_set_" + std::to_string(s))); ++s, ++sets) {
      const fs::path data = dir / ("test_data_set_" + std::to_string(s));
      TensorMap feed;
      size_t k = 0;
      for (; fs::exists(inputFile(data, k)); ++k) {
        if (k >= inputs.size())
          return data.string() + ": more input files than the model's " + std::to_string(inputs.size()) +
                 " inputs";
        feed[inputs[k].name] = asDeclared(loadTensorProtoFile(inputFile(data, k).string()), inputs[k].dtype);
      }
      if (k != inputs.size())
        return data.string() + ": " + std::to_string(k) + " input files for " +
               std::to_string(inputs.size()) + " inputs";
      const TensorMap result = executor(feed);
      size_t o = 0;
      for (; fs::exists(outputFile(data, o)); ++o) {
        if (o >= outputs.size()) return data.string() + ": more output files than the model's outputs";
        const Tensor expected =
            asDeclared(loadTensorProtoFile(outputFile(data, o).string()), outputs[o].dtype);
        const std::string diff = compareTensors(expected, result.at(outputs[o].name));
        if (!diff.empty()) return data.string() + ": output '" + outputs[o].name + "': " + diff;
      }
      if (o == 0) return data.string() + ": no output files";
    }
    if (sets == 0) return dir.string() + ": no test_data_set_N directory";
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

std::string reasonGist(const std::string& reason) {
  // "Op: reason" for a node ("... node 'name' (Op), opset N: reason"), the reason alone for a file
  // ("path: byte 0: reason").
  std::string gist = reason;
  const size_t node = gist.find("node '");
  if (node != std::string::npos) gist = gist.substr(node);
  const size_t open = gist.find(" ("), close = gist.find("), opset "), colon = gist.find(": ", close);
  if (gist.rfind("node '", 0) == 0 && open != std::string::npos && close != std::string::npos &&
      colon != std::string::npos) {
    gist = gist.substr(open + 2, close - open - 2) + ": " + gist.substr(colon + 2);
  } else if (size_t at = gist.find(": byte 0: "); at != std::string::npos) {
    gist = gist.substr(at + 10);
  }
  return gist;
}

}  // namespace sf::nn::conformance
