// A decoder character (docs/formats/character-bundle.md): a bundle's branches, each run as
//   rig -> vertex transform into the decoders' frame -> ONNX trunk / geometry decoder (a UV position map)
//   and appearance decoder ((code, view rays) -> a UV colour map) -> lift pass 1 -> lift pass 2
// into the branch's slot range of the character's one splat object (every branch sorts with every other).
//
// Per update the work splits in two: geometry (rig, vertex transform, trunk and geometry decode, lift) runs
// when the expression, the rig controls or the gaze changed; appearance (view rays and the appearance
// decode against the geometry pass's cached code, then the lift's pass 2) when the camera moved more than
// 2 mm, turned more than 2 mrad or changed its focal length by more than 0.2% since the state the last
// pass ran for; otherwise nothing runs. With `async` passes run on a worker thread and are coalesced
// latest-only: while one is in flight, further updates collapse to the most recent state rather than
// queueing, and the drawn gaussians are those of the last completed pass.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "character/bundle.h"
#include "character/expression.h"
#include "core/gaussian_cloud.h"
#include "render/camera.h"
#include "render/cpu_renderer.h"

namespace sf::nn {
struct Graph;
struct Tensor;
}  // namespace sf::nn

namespace sf::character {

class RigBackend;

// The tensors a branch can give its decoders (docs/formats/character-bundle.md, "Decoders"); null where
// not available.
struct DecoderValues {
  const nn::Tensor* verts = nullptr;  // [1, V, 3], decoder frame
  const nn::Tensor* code = nullptr;   // the trunk's or the geometry decoder's code
  const nn::Tensor* gaze = nullptr;   // [1, 4]
  const nn::Tensor* view = nullptr;   // [1, 6, R, R] Pluecker rays
};
// The inputs of `graph` by name from `values` (each input it declares among verts, code, gaze and view).
// Throws sf::Error naming the graph and the input when a declared one is not available.
std::map<std::string, nn::Tensor> decoderInputs(const nn::Graph& graph, const DecoderValues& values);

// The appearance threshold (see the top of the file).
struct CameraChangeThreshold {
  float move = 0.002f;   // camera centre, character-frame units (metres)
  float turn = 0.002f;   // angle between viewing directions, radians
  float focal = 0.002f;  // relative change of the focal length
};
// Whether a camera differs from another by more than the threshold (both in the character's frame).
bool cameraMoved(const Camera& a, const Camera& b, const CameraChangeThreshold& t);

// Counters over a character's life (the benchmark's and the tests' view of the scheduling).
struct PassCounters {
  uint64_t updates = 0;            // update() calls
  uint64_t geometry_passes = 0;    // geometry passes run (each branch's lift counted once per pass)
  uint64_t appearance_passes = 0;  // appearance passes run (with or without geometry)
  uint64_t skipped = 0;            // updates that needed nothing (the 2 mm threshold and unchanged controls)
  uint64_t coalesced = 0;          // requests replaced by a newer one while a pass was in flight
  double last_geometry_ms = 0, last_appearance_ms = 0;  // CPU time of the last pass's parts
};

// Per branch figures of memoryReport().
struct BranchMemory {
  std::string name;
  uint64_t slots = 0;           // gaussians (texels) of the branch
  uint64_t decoder_bytes = 0;   // ONNX files as loaded
  uint64_t resident_bytes = 0;  // CPU: decoders, mesh, UV layout, maps and lifted gaussians
  uint64_t gpu_bytes = 0;       // the frame's slots for the branch (kSlotBytes each)
};
// Bytes one gaussian of a decoder character takes in the frame's slots: centre 12, covariance 24,
// opacity 4, colour 12 (SH degree 0), the same 52 bytes per gaussian the character document counts.
inline constexpr uint64_t kSlotBytes = 52;

// What one update asks of a GPU path: the passes to run this frame and their inputs, per branch, in the
// decoders' frame.
struct BundleFrameRequest {
  bool geometry = false;    // rig output changed: trunk, geometry decode, pass 1 (then appearance too)
  bool appearance = false;  // view rays, appearance decode, pass 2
  std::array<float, 4> gaze{0, 0, 0, 0};
  std::vector<std::vector<Vec3>> vertices;  // per branch (when geometry): its posed or static vertices
  std::vector<Vec3> eyes;                   // per branch: the camera centre
};

// The static inputs of a branch a GPU path uploads once.
struct BranchGpuInputs {
  const BundleBranch* spec = nullptr;
  std::span<const uint32_t> texel_triangle, indices;
  size_t first = 0, texels = 0, vertices = 0;
  const nn::Graph* trunk = nullptr;  // may be null
  const nn::Graph* geom = nullptr;
  const nn::Graph* appr = nullptr;
};

// A decoder character's passes on a GPU (character/gpu_lift.h): prepare() takes each update's request and
// source() is what the frame records (decoders, lift passes, into the character's slots).
class BundleGpuPath {
 public:
  virtual ~BundleGpuPath() = default;
  virtual void prepare(const BundleFrameRequest& request) = 0;
  virtual const GpuSplatSource& source() const = 0;
};

class BundleCharacter {
 public:
  // Loads the bundle's rig, meshes and decoders and checks every decoder's inputs and outputs against the
  // contract; throws sf::Error naming the file and the cause (a rig backend this engine has no runtime for,
  // "orl", is refused here).
  explicit BundleCharacter(CharacterBundle bundle);
  ~BundleCharacter();
  BundleCharacter(const BundleCharacter&) = delete;
  BundleCharacter& operator=(const BundleCharacter&) = delete;

  const CharacterBundle& bundle() const { return bundle_; }
  const RigBackend& rig() const { return *rig_; }
  size_t size() const { return cloud_.size(); }  // slots over all branches
  // The first slot and slot count of a branch, by index in bundle().branches.
  std::pair<size_t, size_t> branchSlots(size_t branch) const;

  // An expression in the bundle's space (bundle().expression_space): mapped to the rig's controls. A
  // vector in another space is refused (an arkit52 vector for a gnm rig only through its arkit map);
  // `missing` receives the ARKit names with weight the rig lacks.
  void setExpression(const Expression& e, std::vector<std::string>* missing = nullptr);
  // The rig's raw control vector (RigBackend::controlNames), bypassing the expression space.
  void setRig(std::span<const float> controls);
  // The rig's raw control vector as last set (setExpression or setRig).
  std::span<const float> rigControls() const { return controls_; }
  // Gaze [pitchL, yawL, pitchR, yawR] in radians, pitch positive-down, for gaze-conditioned branches (a
  // gnm rig takes it through its four gaze controls as well).
  void setGaze(const std::array<float, 4>& gaze);

  // Runs what the state needs for `camera` (in the character's frame; see the top of the file). `async`
  // runs passes on a worker (latest-only); otherwise each pass completes before update returns.
  void update(const Camera& camera, bool async = false);
  // Waits for a pass in flight (and the pending one after it) to complete.
  void finish();

  // The lifted gaussians of the last completed pass, one slot per texel of every branch in order: centres
  // and colours in the cloud, covariances beside it; culled texels have opacity 0.
  const GaussianCloud& cloud() const { return cloud_; }
  const std::vector<Cov6>& covariances() const { return covariances_; }
  const PassCounters& counters() const { return counters_; }
  // Called at the start of every pass, on the thread that runs it, with whether it includes geometry (for
  // instrumentation, and for tests that hold a pass in flight). Set it while no pass is in flight.
  void setPassHook(std::function<void(bool geometry)> hook) { pass_hook_ = std::move(hook); }
  std::vector<BranchMemory> memoryReport() const;

  // A branch's maps and pass 1 outputs of the last completed CPU pass (for tests and inspection; valid
  // while no pass is in flight): the decoder outputs channel-major, then pass 1's frame, triim, bounds.
  struct BranchMaps {
    std::span<const float> geometry, color;
    int geometry_channels = 3, color_channels = 3;
    std::span<const std::array<float, 9>> frame;
    std::span<const uint32_t> triim;
    std::span<const std::array<float, 2>> bounds;
  };
  BranchMaps branchMaps(size_t branch) const;

  // Runs the passes on a GPU from now on (nullptr: the CPU again): update() then hands each request to
  // the path, whose source the frame records in place of cloud()'s values (cloud() still sizes the slots).
  // The frame's submission completes before the next update, so nothing is ever in flight to coalesce.
  void setGpuPath(std::shared_ptr<BundleGpuPath> path);
  BundleGpuPath* gpuPath() const { return gpu_path_.get(); }
  // Why a GPU path was refused for this character (empty: none was); a frame tries once per character.
  void setGpuRefusal(std::string why) { gpu_refusal_ = std::move(why); }
  const std::string& gpuRefusal() const { return gpu_refusal_; }
  std::vector<BranchGpuInputs> gpuInputs() const;
  // A request for every pass at the rig's current controls (a GPU path plans with it before it is attached).
  BundleFrameRequest trialRequest();

 private:
  struct Branch;
  struct Request;
  struct Result;
  Result runPasses(const Request& r);
  void start(Request r);
  void collect(bool wait);
  Request request(const Camera& camera) const;
  BundleFrameRequest frameRequest(bool geometry, const std::vector<Vec3>& posed, const Camera& camera) const;

  CharacterBundle bundle_;
  std::unique_ptr<RigBackend> rig_;
  std::vector<std::unique_ptr<Branch>> branches_;
  std::vector<float> controls_;
  std::array<float, 4> gaze_{0, 0, 0, 0};
  uint64_t state_version_ = 1;  // bumped by every control or gaze change
  uint64_t ran_version_ = 0;    // of the last pass started
  std::optional<Camera> ran_camera_;
  GaussianCloud cloud_;
  std::vector<Cov6> covariances_;
  PassCounters counters_;
  std::future<std::unique_ptr<Result>> in_flight_;
  std::unique_ptr<Request> pending_;
  std::function<void(bool)> pass_hook_;
  std::shared_ptr<BundleGpuPath> gpu_path_;
  std::string gpu_refusal_;
};

// Loads a bundle directory into a character.
std::shared_ptr<BundleCharacter> loadBundleCharacter(const std::string& dir);

// Why a bundle is refused for its rig backend, or empty: a bundle declaring the orl rig backend (OpenRigLogic
// DNA), or defaulting to it without a "rig" block, gets this refusal (docs/formats/character-bundle.md, "The
// orl rig backend") from the BundleCharacter constructor, the scene loader (an object or a script's spawn,
// strict or not) and CharacterWorld::spawn, never a placeholder: it names the marker file, says this engine
// has no runtime that evaluates a DNA and what to declare instead.
std::string orlRefusal(const CharacterBundle& bundle);

}  // namespace sf::character
