// Thin Vulkan layer (through volk): a headless compute context, buffers with device addresses,
// compute pipelines from embedded SPIR-V, one-shot command submission, timestamps and debug names.
// Every VkResult is checked (release builds too) and failures throw sf::Error with file and line.
#pragma once

#include <volk.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"

namespace sf::gpu {

// The device was lost (VK_ERROR_DEVICE_LOST: a driver reset, a fault, a dispatch the driver's watchdog
// killed): nothing more can run on this context; its owner makes a new one (FrameDriver does;
// docs/untrusted-input.md "A lost device").
class DeviceLost : public Error {
 public:
  using Error::Error;
};

// Throws sf::Error("<file>:<line>: <call> failed: <VkResult name>") unless result is VK_SUCCESS; DeviceLost
// for VK_ERROR_DEVICE_LOST.
void check(VkResult result, const char* call, const char* file, int line);
#define SF_VK_CHECK(call) ::sf::gpu::check((call), #call, __FILE__, __LINE__)
const char* resultName(VkResult result);

struct DeviceInfo {
  uint32_t index = 0;
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;
  uint32_t subgroup_size = 0;
  // Subgroup ballots, votes and shuffles in compute shaders; and whether the device also groups a subgroup's
  // lanes by value in one instruction (VK_NV_shader_subgroup_partitioned, with the partitioned subgroup
  // operations in compute), which a context then enables.
  bool subgroup_voting_shuffles = false;
  bool subgroup_partitioned = false;
  // 16-bit float arithmetic in shaders (shaderFloat16), which a context then enables.
  bool shader_float16 = false;
  uint64_t device_local_bytes = 0;
  // The driver as it names itself (VkPhysicalDeviceDriverProperties): "llvmpipe" / "Mesa 22.3.6", "NVIDIA" /
  // "580.95.05"; its raw driverVersion too. Empty on drivers older than Vulkan 1.2.
  std::string driver_name, driver_info;
  uint32_t driver_version = 0;
  const char* typeName() const;
};

struct LayerInfo {
  std::string name, description;
  uint32_t spec_version = 0;            // the Vulkan API version the layer was written against
  uint32_t implementation_version = 0;  // the layer's own version
};

// The loader's instance API version (0 when there is no loader) and the instance layers it can enable.
// Never throw; used to say which driver stack a run met (`splatforge devices`, the test log).
uint32_t loaderVersion();
std::vector<LayerInfo> listLayers();
// "1.3.239" from a packed Vulkan version.
std::string versionString(uint32_t version);
// Paths of the shared libraries mapped into this process now (the Vulkan loader, drivers, layers, ...).
std::vector<std::string> loadedModules();

struct ContextOptions {
  // Khronos validation layer with a messenger that records every error (see Context::validationMessages).
  bool validation = false;
  // With validation: the layer's synchronization validation too (hazards between commands with no barrier
  // between them, such as a fill and an update of one buffer).
  bool synchronization_validation = true;
  // Device by index ("0") or by a case-insensitive substring of its name; empty: discrete > integrated >
  // virtual > CPU.
  std::string device;
  // Presenting to a window (splatforge view). Instance extensions the window system needs besides ours
  // (VK_KHR_surface and the platform's surface extension, as the windowing library names them), and a test
  // of whether a queue family of a device can present to the window's display. With can_present set, the
  // device is chosen among those with a compute queue family that passes it, that family is the context's
  // queue, and VK_KHR_swapchain is enabled.
  std::vector<std::string> instance_extensions;
  std::function<bool(VkInstance, VkPhysicalDevice, uint32_t queue_family)> can_present;
  // Capture what the driver reports of each compute pipeline it compiles
  // (VK_KHR_pipeline_executable_properties, where the device has it; which statistics is the driver's choice:
  // NVIDIA's give registers and shared memory): Context::shaderStatistics.
  bool shader_statistics = false;
};

// What the driver reported of one compute pipeline's compiled code (ContextOptions::shader_statistics): per
// statistic its name, as the driver names it, and its value.
struct ShaderStatistics {
  std::string pipeline;  // the pipeline's name
  struct Value {
    std::string name, description;
    double value = 0;
  };
  std::vector<Value> values;
};

// True when the Vulkan loader is present and at least one device supports Vulkan 1.2 compute with
// buffer device addresses. Never throws.
bool vulkanAvailable();

// A process-wide budget of Vulkan memory per context (0: none, the device's own limit), as a small device
// would have (`--max-gpu-memory`): an allocation past it throws MemoryBudgetError, as a device out of memory
// throws Error, before anything is half made.
void setMemoryBudget(uint64_t bytes);
uint64_t memoryBudget();
class MemoryBudgetError : public Error {
 public:
  using Error::Error;
};
// Whether a Vulkan 1.2 device other than a CPU implementation (lavapipe, SwiftShader) exists: what `auto`
// backends of the frame choose. A CPU device runs the frame slower than the CPU renderer on the same cores
// and takes several times its memory (docs/benchmarks.md), so without a GPU the CPU renderer is the default.
bool gpuDeviceAvailable();
// Devices the loader reports (empty when there is no loader). Never throws.
std::vector<DeviceInfo> listDevices();

struct Buffer;
struct Image;

class Context {
 public:
  explicit Context(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkInstance instance() const { return instance_; }
  VkDevice device() const { return device_; }
  VkPhysicalDevice physicalDevice() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queueFamily() const { return queue_family_; }
  uint32_t maxPushConstants() const { return max_push_constants_; }
  uint32_t maxSharedMemory() const { return max_shared_memory_; }
  uint32_t maxWorkgroupInvocations() const { return max_workgroup_invocations_; }
  double timestampPeriodNs() const { return timestamp_period_ns_; }
  bool validationEnabled() const { return validation_; }
  // Pipelines can require full subgroups of info().subgroup_size (Vulkan 1.3 subgroup size control).
  bool subgroupSizeControl() const { return subgroup_size_control_; }
  // The queue does graphics and Vulkan 1.3 dynamic rendering is enabled: GraphicsPipeline works.
  bool graphics() const { return graphics_ && dynamic_rendering_; }
  // 64-bit integer atomics on storage buffers (and shaderInt64) are enabled.
  bool bufferInt64Atomics() const { return buffer_int64_atomics_; }
  // Shader statistics were asked for and the device reports them (VK_KHR_pipeline_executable_properties);
  // those of every compute pipeline made since, in the order they were made (a pipeline made again is listed
  // again).
  bool capturesShaderStatistics() const { return capture_statistics_; }
  std::vector<ShaderStatistics> shaderStatistics() const;
  // Internal, for ComputePipeline.
  void addShaderStatistics(ShaderStatistics s);

  // Validation messages of severity error seen so far: their count, every message in order (the first
  // kMaxKeptMessages are kept), and those from index `since` on as one text, one numbered message per line.
  // The layer reports from whichever thread made the call, so the count and the report may be read while
  // other threads work; validationMessages() only while none does.
  static constexpr size_t kMaxKeptMessages = 1000;
  uint32_t validationErrors() const { return validation_errors_; }
  const std::vector<std::string>& validationMessages() const { return validation_messages_; }
  std::string validationReport(uint32_t since = 0) const;

  // Debug name for any Vulkan object (no-op without VK_EXT_debug_utils).
  void setName(VkObjectType type, uint64_t handle, const std::string& name) const;

  // Bytes of Vulkan memory this context's buffers and images hold now (allocated less freed), and the most
  // it held at once: what a long run checks stays flat (tests/frame: the soak test).
  uint64_t allocatedBytes() const { return allocated_bytes_; }
  uint64_t peakAllocatedBytes() const { return peak_allocated_bytes_; }
  // Internal, for Buffer and Image.
  void countAllocation(int64_t bytes);
  void checkBudget(uint64_t bytes, const std::string& name) const;

  // Device-local storage buffer with a device address (host_visible: mapped, host-coherent instead).
  Buffer createBuffer(VkDeviceSize size, bool host_visible, const std::string& name);

  // 2D device-local image with one view (colour or depth by `aspect`), for render targets.
  Image createImage(uint32_t width, uint32_t height, VkFormat format, VkImageUsageFlags usage,
                    VkImageAspectFlags aspect, const std::string& name);

  // Threads. A context has one queue, one command pool and one fence, and Vulkan requires the host to use
  // each from one thread at a time (recording into a command buffer uses its pool). begin() and submit() each
  // hold the context's lock while they run, so their own calls never meet another thread's; the work between
  // them (recording, and reading back what the submission wrote to a host-visible buffer) needs the caller to
  // hold lock() from before begin() until after the read-back, which every library entry point that records
  // does (VulkanRenderer's renders, the neural executor's runs, the deform, hull, lift and trainer passes).
  // The lock is recursive, so such an entry point may call another, and uncontended it costs one atomic
  // operation.
  [[nodiscard]] std::unique_lock<std::recursive_mutex> lock() const {
    return std::unique_lock<std::recursive_mutex>(mutex_);
  }

  // Records into a fresh primary command buffer; submit() waits for completion. A lost device throws
  // DeviceLost, then and at every later submit (lost() is true from then on). Callers on a context that other
  // threads use hold lock() across the pair (see above).
  VkCommandBuffer begin();
  // `what` names the work in a lost device's message ("uploading ...").
  void submit(VkCommandBuffer cmd, const char* what = nullptr);
  bool lost() const { return lost_; }
  // Fault injection for the tests of recovery: the submit with this 1-based count (of this context's submits)
  // and every later one fail as a lost device does (DeviceLost), after the work itself ran. 0: never. Set
  // from SPLATFORGE_FAULT_DEVICE_LOST=N for the first context the process makes.
  void failSubmitsFrom(uint64_t count) { fail_from_submit_ = count; }
  uint64_t submits() const { return submits_; }

  // Internal, for the messenger callback.
  void recordValidationError(const char* message);

 private:
  uint32_t memoryType(uint32_t bits, VkMemoryPropertyFlags flags) const;

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  DeviceInfo info_;
  uint32_t max_push_constants_ = 128, max_shared_memory_ = 16384, max_workgroup_invocations_ = 128;
  double timestamp_period_ns_ = 1.0;
  bool buffer_int64_atomics_ = false;
  bool validation_ = false, debug_utils_ = false, subgroup_size_control_ = false, graphics_ = false,
       dynamic_rendering_ = false, capture_statistics_ = false;
  mutable std::mutex statistics_mutex_;  // pipelines may be made on any thread
  std::vector<ShaderStatistics> statistics_;
  // Counters that calls outside the lock touch too (a buffer made or freed on one thread while another
  // renders, a validation message from either) are atomic; the kept messages have their own mutex.
  std::atomic<uint32_t> validation_errors_{0};
  mutable std::mutex messages_mutex_;
  std::vector<std::string> validation_messages_;
  std::atomic<uint64_t> allocated_bytes_{0}, peak_allocated_bytes_{0};
  std::atomic<uint64_t> submits_{0};
  uint64_t fail_from_submit_ = 0;
  std::atomic<bool> lost_{false};
  mutable std::recursive_mutex mutex_;  // lock(): the queue, the command pool and the fence
};

// A buffer and its memory; move-only, freed on destruction.
struct Buffer {
  Context* ctx = nullptr;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  VkDeviceAddress address = 0;
  void* mapped = nullptr;
  VkDeviceSize allocation = 0;  // bytes of its memory (counted by the context)

  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }
  void reset();
};

// A 2D image, its memory and a view; move-only, freed on destruction.
struct Image {
  Context* ctx = nullptr;
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkImageView view = VK_NULL_HANDLE;
  VkFormat format = VK_FORMAT_UNDEFINED;
  uint32_t width = 0, height = 0;
  VkDeviceSize allocation = 0;  // bytes of its memory (counted by the context)

  Image() = default;
  Image(Image&& o) noexcept { *this = std::move(o); }
  Image& operator=(Image&& o) noexcept;
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;
  ~Image() { reset(); }
  void reset();
};

// Layout transition of a whole image with a full barrier between the given stages and accesses.
void imageBarrier(VkCommandBuffer cmd, const Image& image, VkImageAspectFlags aspect, VkImageLayout from,
                  VkImageLayout to, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                  VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);
// The same for an image the layer does not own (a swapchain image).
void imageBarrier(VkCommandBuffer cmd, VkImage image, VkImageAspectFlags aspect, VkImageLayout from,
                  VkImageLayout to, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                  VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);

// A graphics pipeline for dynamic rendering (Vulkan 1.3): vertex + fragment shaders that pull their
// vertices through device addresses (no vertex input state), triangle lists, no culling, depth test and
// write with `depth_compare` against a `depth_format` attachment, and one colour attachment per format.
// Push constants are visible to both stages.
class GraphicsPipeline {
 public:
  GraphicsPipeline(Context& ctx, std::span<const uint32_t> vertex_spirv,
                   std::span<const uint32_t> fragment_spirv, uint32_t push_size,
                   std::span<const VkFormat> color_formats, VkFormat depth_format, VkCompareOp depth_compare,
                   const std::string& name);
  ~GraphicsPipeline();
  GraphicsPipeline(const GraphicsPipeline&) = delete;
  GraphicsPipeline& operator=(const GraphicsPipeline&) = delete;

  VkPipeline pipeline() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }

 private:
  Context& ctx_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// A compute pipeline with a push-constant range and no descriptor sets (buffers are reached through
// device addresses in the push constants).
class ComputePipeline {
 public:
  // Checks the shader's LocalSize against `local_size_x` and the push size against the device limit. A
  // shader declaring `layout(local_size_x_id = 0)` gets `local_size_x` through that specialisation constant.
  // full_subgroups: where the device allows, require full subgroups of info().subgroup_size.
  ComputePipeline(Context& ctx, std::span<const uint32_t> spirv, uint32_t push_size, uint32_t local_size_x,
                  const std::string& name, bool full_subgroups = false);
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  VkPipeline pipeline() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }

 private:
  Context& ctx_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// Reads the LocalSize x of a compute shader's SPIR-V (0 when absent or given as a constant id).
uint32_t spirvLocalSizeX(std::span<const uint32_t> spirv);

// Barrier making all earlier compute/transfer writes visible to later compute/transfer/indirect reads.
void computeBarrier(VkCommandBuffer cmd);
// Barrier between compute shaders only: earlier shader writes visible to later shaders' reads and writes
// (no transfer or indirect-argument stage waits on it).
void shaderBarrier(VkCommandBuffer cmd);

}  // namespace sf::gpu
