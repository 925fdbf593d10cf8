// ONNX's own backend node tests (Debian libonnx-testdata: data/node/test_*/ with model.onnx and
// test_data_set_N/{input,output}_K.pb), shared by the CPU and Vulkan conformance suites: which cases a
// backend claims, and running a case through an executor against the reference outputs under the rule of
// ONNX's backend test runner (numpy assert_allclose, rtol 1e-3, atol 1e-7; integers and bools exactly).
#pragma once

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "neural/cpu_executor.h"
#include "neural/graph.h"

namespace sf::nn::conformance {

namespace fs = std::filesystem;

// $SPLATFORGE_ONNX_TESTDATA, else Debian's /usr/share/libonnx-testdata/data/node.
std::string testDataDir();

struct Claim {
  bool claimed = false;
  std::string reason;         // why not, when not claimed
  std::set<std::string> ops;  // the op types of the model's nodes
};

// The CPU executor's claim: the model loads; every node passes the load-time check of its kernel; every
// declared input and output is a tensor of a supported type; the case's input files are what the model
// declares.
Claim claimCase(const fs::path& dir);
// Case directories in name order.
std::vector<fs::path> caseDirs();
// The inputs of test data set `s` of a case, by input name (empty when the set does not exist).
TensorMap caseInputs(const fs::path& dir, const Graph& g, int s);

// A function that runs a case's graph: made once per case from the loaded graph.
using Runner = std::function<TensorMap(const TensorMap& inputs)>;
using RunnerFactory = std::function<Runner(const Graph& graph)>;

// Runs every test data set of a case; empty on success, else the first problem.
std::string runCase(const fs::path& dir, const RunnerFactory& make);

// "Op: reason" gist of an unclaimed case's reason, for grouping in the summaries.
std::string reasonGist(const std::string& reason);

}  // namespace sf::nn::conformance
