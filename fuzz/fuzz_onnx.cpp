// libFuzzer target: ONNX models (docs/neural.md) through sf::nn::loadOnnx(bytes, "fuzz.onnx"), then what
// loading a generator does before any frame: the operator check, the contract detection and the CPU
// executor's construction (which folds constant subgraphs, so the kernels run on the file's tensors).
// Only sf::Error is caught.
#include "fuzz_target.h"
#include "neural/cpu_executor.h"
#include "neural/generator.h"

// A quarter of the other targets' byte limit: constant folding runs the CPU kernels on whatever the file's
// constants grow into, and at 64 MB one folded transpose takes seconds under the fuzzer's instrumentation
// (past its per-input timeout) without reaching any code that 16 MB does not.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sf::setLoadLimits({.max_gaussians = 1u << 20, .max_bytes = 16u << 20});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    sf::nn::Graph g = sf::nn::loadOnnx({data, size}, "fuzz.onnx");
    (void)sf::nn::unsupportedNodes(g);
    try {
      (void)sf::nn::detectContract(g);
    } catch (const sf::Error&) {
    }
    sf::nn::CpuExecutor executor(std::move(g));
  } catch (const sf::Error&) {
  }
  return 0;
}
