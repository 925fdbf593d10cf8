// ONNX's own backend node tests through the Vulkan executor (the CPU suite's data and rule, see
// conformance_support.h). A case is claimed for the GPU when the CPU executor claims it and the Vulkan
// executor plans every one of its test data sets (vulkanPlanProblem: an operator with a GPU kernel, shapes
// within the kernels' limits, shape inputs that are constants, types the GPU holds); every claimed case is
// a test of its own and must match the reference outputs. The list is generated from the data.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <memory>

#include "core/error.h"
#include "gpu/gpu.h"
#include "neural/conformance_support.h"
#include "neural/vulkan_executor.h"
#include "support/test_support.h"
#include "vulkan_test_device.h"

namespace sf::nn {
namespace {

using namespace conformance;

// The GPU claim: empty when claimed, else why not.
std::string vulkanClaim(const fs::path& dir) {
  const Claim c = claimCase(dir);
  if (!c.claimed) return "CPU: " + c.reason;
  try {
    const CpuExecutor cpu(loadOnnxFile((dir / "model.onnx").string()));
    for (int s = 0; fs::is_directory(dir / ("test_data_set_" + std::to_string(s))); ++s)
      if (std::string why = vulkanPlanProblem(cpu, caseInputs(dir, cpu.graph(), s)); !why.empty()) return why;
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

std::vector<std::string> claimedCases() {
  std::vector<std::string> names;
  for (const fs::path& dir : caseDirs())
    if (vulkanClaim(dir).empty()) names.push_back(dir.filename().string());
  return names;
}

// One device for the whole process (a case is a process under ctest; the summary runs them all).
using optest::device;

Runner vulkanRunner(const Graph& g) {
  auto executor = std::make_shared<VulkanExecutor>(*device(), g);
  return [executor](const TensorMap& inputs) { return executor->run(inputs); };
}

class OnnxConformanceVulkan : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxConformanceVulkan, MatchesReference) {
  if (!device()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  const std::string failure = runCase(fs::path(testDataDir()) / GetParam(), vulkanRunner);
  EXPECT_TRUE(failure.empty()) << failure;
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxConformanceVulkan, ::testing::ValuesIn(claimedCases()),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxConformanceVulkan);

// Per GPU operator: the GPU-claimed cases whose model uses it and how many pass; every operator of the GPU
// table must be exercised by a claimed case. Prints the table docs/neural.md quotes, and why the rest of
// the CPU's cases are not claimed.
TEST(OnnxConformanceVulkanSummary, EveryOperatorHasPassingCases) {
  if (!fs::is_directory(testDataDir()))
    SF_SKIP_OR_FAIL("ONNX backend test data not found at "
                    << testDataDir()
                    << " (Debian package libonnx-testdata; or set SPLATFORGE_ONNX_TESTDATA)");
  if (!device()) SF_SKIP_OR_FAIL("no Vulkan device (install mesa-vulkan-drivers)");
  std::map<std::string, std::pair<int, int>> per_op;  // claimed, passed
  for (const GpuOpInfo& op : vulkanOps()) per_op[op.op_type] = {0, 0};
  std::map<std::string, int> unclaimed;
  int cpu_claimed = 0, claimed = 0, passed = 0;
  std::vector<std::string> failures;
  for (const fs::path& dir : caseDirs()) {
    const Claim c = claimCase(dir);
    if (!c.claimed) continue;
    ++cpu_claimed;
    if (std::string why = vulkanClaim(dir); !why.empty()) {
      ++unclaimed[reasonGist(why)];
      continue;
    }
    ++claimed;
    const std::string failure = runCase(dir, vulkanRunner);
    if (failure.empty())
      ++passed;
    else
      failures.push_back(dir.filename().string() + ": " + failure);
    for (const std::string& op : c.ops) {
      ++per_op[op].first;
      if (failure.empty()) ++per_op[op].second;
    }
  }
  std::cout << "[conformance-vulkan] " << cpu_claimed << " CPU-claimed cases, " << claimed << " claimed, "
            << passed << " passed\n";
  for (const auto& [op, counts] : per_op)
    std::cout << "[conformance-vulkan-op] " << op << " " << counts.first << " " << counts.second << "\n";
  for (const auto& [reason, count] : unclaimed)
    std::cout << "[unclaimed] " << count << " x " << reason << "\n";
  for (const auto& [op, counts] : per_op)
    EXPECT_GT(counts.second, 0) << "no passing conformance case exercises " << op << " on the GPU";
  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " claimed cases fail, first: " << (failures.empty() ? "" : failures[0]);
  for (const std::string& f : failures) std::cout << "[failure] " << f << "\n";
}

}  // namespace
}  // namespace sf::nn
