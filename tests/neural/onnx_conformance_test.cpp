// ONNX's own backend node tests (Debian libonnx-testdata: data/node/test_*/ with model.onnx and
// test_data_set_N/{input,output}_K.pb) through the CPU executor. A case is claimed when the model loads,
// every node passes the kernels' load-time check (checkCpuNode: operator, opset, attributes) and every
// declared input, output and initializer has a supported element type; every claimed case is a test of
// its own (named after its directory) and must match the reference outputs under the rule of ONNX's
// backend test runner (numpy assert_allclose, rtol 1e-3, atol 1e-7; integers and bools exactly). The list
// is generated from the data, not written down: a kernel that cannot pass a case refuses its form at load.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "neural/conformance_support.h"
#include "neural/cpu_executor.h"
#include "neural/cpu_ops.h"
#include "neural/graph.h"
#include "support/test_support.h"

namespace sf::nn {
namespace {

using namespace conformance;

std::vector<std::string> claimedCases() {
  std::vector<std::string> names;
  for (const fs::path& dir : caseDirs())
    if (claimCase(dir).claimed) names.push_back(dir.filename().string());
  return names;
}

Runner cpuRunner(const Graph& g) {
  auto executor = std::make_shared<CpuExecutor>(g);
  return [executor](const TensorMap& inputs) { return executor->run(inputs); };
}

class OnnxConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxConformance, MatchesReference) {
  const std::string failure = runCase(fs::path(testDataDir()) / GetParam(), cpuRunner);
  EXPECT_TRUE(failure.empty()) << failure;
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxConformance, ::testing::ValuesIn(claimedCases()),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });
// Without the test data nothing is claimed; the summary below then skips (fails under CI).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxConformance);

// Per operator: the claimed cases whose model uses it, and how many pass; every operator of the table must
// be exercised by at least one claimed case. Prints the table docs/neural.md quotes.
TEST(OnnxConformanceSummary, EveryOperatorHasPassingCases) {
  if (!fs::is_directory(testDataDir()))
    SF_SKIP_OR_FAIL("ONNX backend test data not found at "
                    << testDataDir()
                    << " (Debian package libonnx-testdata; or set SPLATFORGE_ONNX_TESTDATA)");
  const std::vector<fs::path> dirs = caseDirs();
  ASSERT_FALSE(dirs.empty()) << "no test cases under " << testDataDir();
  std::map<std::string, std::pair<int, int>> per_op;  // claimed, passed
  for (const OpInfo& op : cpuOps()) per_op[op.op_type] = {0, 0};
  std::map<std::string, int> unclaimed_reasons;
  int claimed = 0, passed = 0;
  std::vector<std::string> failures;
  for (const fs::path& dir : dirs) {
    const Claim c = claimCase(dir);
    if (!c.claimed) {
      const std::string gist = reasonGist(c.reason);
      ++unclaimed_reasons[gist];
      continue;
    }
    ++claimed;
    const std::string failure = runCase(dir, cpuRunner);
    if (failure.empty())
      ++passed;
    else
      failures.push_back(dir.filename().string() + ": " + failure);
    for (const std::string& op : c.ops) {
      ++per_op[op].first;
      if (failure.empty()) ++per_op[op].second;
    }
  }
  std::cout << "[conformance] " << dirs.size() << " cases, " << claimed << " claimed, " << passed
            << " passed\n";
  for (const auto& [op, counts] : per_op)
    std::cout << "[conformance-op] " << op << " " << counts.first << " " << counts.second << "\n";
  for (const auto& [reason, count] : unclaimed_reasons)
    std::cout << "[unclaimed] " << count << " x " << reason << "\n";
  for (const auto& [op, counts] : per_op)
    EXPECT_GT(counts.first, 0) << "no claimed conformance case exercises " << op;
  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " claimed cases fail, first: " << (failures.empty() ? "" : failures[0]);
}

}  // namespace
}  // namespace sf::nn
