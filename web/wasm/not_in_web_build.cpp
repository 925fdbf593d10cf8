// The format the web build leaves out for now: PlayCanvas's streamed LOD (many SOG files). decodeSplats
// (io/formats.cpp) is compiled unchanged; these definitions take the place of io/lod_meta.cpp in the
// WebAssembly module and refuse such a file with the reason, naming it as every loader does. docs/web.md
// lists what the web build does not read yet.
#include "core/error.h"
#include "io/lod_meta.h"

namespace sf {

namespace {
const char* kHint =
    " (open it with the splatforge command line, or convert it there to .spz, .ply or .splat)";
}

LodMeta parseLodMeta(std::string_view, const std::string& path) {
  throw FormatError(path, 0,
                    std::string("PlayCanvas's streamed LOD (SOG files) is not in the web build yet") + kHint);
}

std::vector<int> lodMetaLevels(const LodMeta&, int) {
  throw Error("lod-meta.json is not in the web build yet");
}

GaussianCloud readLodMetaLeaves(const LodMeta&, std::span<const int>) {
  throw Error("lod-meta.json is not in the web build yet");
}

}  // namespace sf

// Neural generators: the page runs a model with onnxruntime-web (web/neural_worker.js) and compiles only the
// engine's contract (neural/generator.cpp: detectContract, the contract's messages) from src/neural/; the CPU
// executor and the protobuf loader (neural/cpu_executor.cpp, neural/onnx_model.cpp) stay out of the module.
// These take their place, refusing with the reason; nothing in the page calls them.
#include "neural/cpu_executor.h"

namespace sf::nn {

namespace {
const char* kNoExecutor =
    "the engine's CPU executor is not in the web build (the page runs generators with onnxruntime-web)";
}

CpuExecutor::CpuExecutor(Graph graph) : graph_(std::move(graph)) {
  throw Error(graph_.path + ": " + kNoExecutor);
}

TensorMap CpuExecutor::run(const TensorMap&, std::vector<NodeTime>*, const ValueObserver*) const {
  throw Error(graph_.path + ": " + kNoExecutor);
}

Graph loadOnnxFile(const std::string& path) {
  throw Error(path +
              ": reading ONNX files is not in the web build (the page reads models with onnxruntime-web)");
}

}  // namespace sf::nn
