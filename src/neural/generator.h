// Neural gaussian generators: ONNX models that output gaussians every frame through the "Gaussian
// Generator" contract of the WebGPU splatting platform whose exporters we follow (docs/neural.md):
//  inputs, matched by name (case-insensitive):
//   - time: contains "time" or is "t"; float32 [1] (or [1, 1]), the scene time in seconds;
//   - view: contains "camera", "view" or "matrix"; float32 [4, 4], the world-to-camera matrix (x right,
//     y down, z forward) stored column-major (tensor[i][j] = M[j][i]);
//   - projection: contains "proj"; float32 [4, 4], column-major, clip = P * view with |x|, |y| <= w on
//   screen;
//   - any other input is an extra control, given by name (scene JSON "inputs", or the C++ API).
//  outputs:
//   - gaussians: the first output whose name contains "gauss"; [N, 10] float16 or float32 = x, y, z,
//     opacity (already through the sigmoid), covariance xx, xy, xz, yy, yz, zz;
//   - colour: an output whose name contains "color", "colour", "sh" or "rgb" (the first other float output
//     otherwise); [N, 48] = SH degree 3, DC first, channel-interleaved ([coeff][rgb], as the exporters
//     write it), or [N, 3] (or [N, 4], alpha dropped) = RGB in [0, 1], unless the model's metadata says
//     color_mode=sh (then [N, 3] holds SH DC coefficients);
//   - count: "num_points" (or an int output of one element), int32/int64 [1]: the live count <= N.
// A model with no inputs is static: it runs once. Mismatches are refused with the model's own names and
// shapes in the message.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/covariance.h"
#include "core/gaussian_cloud.h"
#include "core/math.h"
#include "neural/cpu_executor.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"

namespace sf::nn {

// The model time a timeline plays for a generator with a time input: 4DGS models are trained on
// timestamps normalised to [0, 1], so one pass is 1 s of model time (1 / |speed| s of scene time).
inline constexpr double kGeneratorTimeSpan = 1.0;

struct GeneratorContract {
  std::string time_input, view_input, projection_input;  // empty when the model has none
  std::vector<std::string> control_inputs;               // the extra inputs, in model order
  std::string gauss_output, color_output, count_output;  // count may be empty (then all N rows are live)
  int64_t capacity = -1;   // N from the declared output shape; -1 when symbolic (known after a run)
  int color_channels = 0;  // 48 (SH degree 3) or 3 (RGB or SH DC)
  bool color_is_sh = false;
  DType gauss_type = DType::kUndefined;
  bool isStatic() const {
    return time_input.empty() && view_input.empty() && projection_input.empty() && control_inputs.empty();
  }
  // One paragraph for `onnx info` and messages.
  std::string describe() const;
};

// Detects the contract of a loaded model; throws sf::Error naming the model's inputs and outputs (with
// their types and shapes) when it does not follow it.
GeneratorContract detectContract(const Graph& graph);

// The projection matrix the view input is paired with (row-major; see above), for a camera and depth range.
Mat4 projectionMatrix(const Camera& cam, float near_plane = 0.01f, float far_plane = 1000.0f);
// Tensors of the matrix inputs as the contract stores them (column-major [4, 4] float32).
Tensor matrixInput(const Mat4& m);

// One frame's gaussians from a generator, in the model's (object) space: positions, opacity and colour in
// `cloud` (scales and rotations left at their defaults), the covariances beside it.
struct GeneratedGaussians {
  GaussianCloud cloud;
  std::vector<Cov6> covariances;
  int64_t live = 0;  // rows used (num_points), <= the output's N
};

// Decodes a generator's raw outputs (by name) under `contract`; `model_path` names the model in errors.
GeneratedGaussians decodeGenerated(const GeneratorContract& contract, const TensorMap& outputs,
                                   const std::string& model_path);

// The cloud with scales and rotations from the covariances (eigen-decomposition), for writing to a file.
GaussianCloud bakeGenerated(const GeneratedGaussians& g);

// A generator's GPU path (the Vulkan executor, attached by the layer that owns the device): each frame
// prepare() takes the frame's inputs and returns the source that writes the decoded gaussians straight
// into the renderer's slots (render/cpu_renderer.h), with no CPU round trip.
class GeneratorGpuPath {
 public:
  virtual ~GeneratorGpuPath() = default;
  virtual const GpuSplatSource& prepare(const TensorMap& inputs) = 0;
  virtual size_t capacity() const = 0;  // rows written (the outputs' N); rows past num_points are left out
  virtual int shDegree() const = 0;     // 3 for [N, 48] colours, else 0
};

class GaussianGenerator {
 public:
  // Loads and checks a model file (loader, contract, supported operators).
  explicit GaussianGenerator(const std::string& path);
  explicit GaussianGenerator(Graph graph);

  const GeneratorContract& contract() const { return contract_; }
  const Graph& graph() const { return executor_.graph(); }
  const std::string& path() const { return executor_.graph().path; }

  // Sets an extra control input by name (its declared type; values converted, shape checked against the
  // declaration). Throws naming the model's control inputs when `name` is not one of them.
  void setControl(const std::string& name, const Tensor& value);
  // The inputs a frame at `time` seen by `cam` gives the model (controls included), by input name.
  TensorMap frameInputs(double time, const Camera& cam) const;

  // Runs the model for a frame (static models run once and keep the result) and returns its decoded
  // outputs (a copy: callers keep their frame's gaussians while other threads or later frames run the
  // model; calls are serialised). Throws sf::Error when a control is unset or the outputs break the
  // contract (types, shapes, count > N).
  GeneratedGaussians generate(double time, const Camera& cam, std::vector<NodeTime>* times = nullptr);
  // Gaussians of the last frame run (0 before the first run).
  size_t lastCount() const;
  // Runs the model through `runner` from now on (nullptr: the CPU executor again); the executor's graph()
  // is what a runner is built from.
  void setRunner(GraphRunner runner);
  bool hasRunner() const;
  // Renders on the GPU from now on (poseScene then gives the frame a GpuSplatSource instead of running the
  // model; nullptr: back to generate()). The path's inputs are frameInputs().
  void setGpuPath(std::shared_ptr<GeneratorGpuPath> path);
  GeneratorGpuPath* gpuPath() const;
  // Decodes raw outputs (by name) under this contract; public for the GPU executor's results and tests.
  GeneratedGaussians decode(const TensorMap& outputs) const;

 private:
  CpuExecutor executor_;
  GraphRunner runner_;
  std::shared_ptr<GeneratorGpuPath> gpu_path_;
  GeneratorContract contract_;
  std::map<std::string, Tensor> controls_;
  GeneratedGaussians last_;
  bool ran_ = false;
  mutable std::mutex mutex_;  // generate, setControl and lastCount may be called from several threads
};

}  // namespace sf::nn
