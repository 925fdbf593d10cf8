#include "gpu/gpu.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "core/limits.h"

namespace sf::gpu {

namespace {

std::once_flag g_volk_once;
bool g_volk_ok = false;

bool initVolk() {
  std::call_once(g_volk_once, [] { g_volk_ok = volkInitialize() == VK_SUCCESS; });
  return g_volk_ok;
}

VKAPI_ATTR VkBool32 VKAPI_CALL onDebugMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    static_cast<Context*>(user)->recordValidationError(data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

int typeRank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

// Sanitizer builds only: every module loaded so far (the Vulkan loader, the driver, its LLVM, implicit and
// explicit layers) stays mapped for the life of the process. The loader unloads drivers and layers at
// vkDestroyInstance; memory they keep in their globals then looks leaked from an "<unknown module>" to
// LeakSanitizer, whose report then cannot be symbolised or matched by the suppressions file. Release builds
// let the loader unload them as usual.
void keepDriverModulesLoaded() {
#if SPLATFORGE_SANITIZED
  for (const std::string& name : loadedModules())
    dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
#endif
}

VkInstance createInstance(bool validation, bool synchronization, bool* debug_utils,
                          const std::vector<std::string>& extra = {}) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "splatforge";
  app.pEngineName = "splatforge";
  app.apiVersion = VK_API_VERSION_1_3;
  std::vector<const char*> layers, extensions;
  uint32_t n = 0;
  SF_VK_CHECK(vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr));
  std::vector<VkExtensionProperties> exts(n);
  SF_VK_CHECK(vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data()));
  *debug_utils = std::any_of(exts.begin(), exts.end(), [](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) == 0;
  });
  if (*debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  for (const std::string& name : extra) {
    if (!std::any_of(exts.begin(), exts.end(),
                     [&](const VkExtensionProperties& e) { return name == e.extensionName; }))
      throw Error("Vulkan instance extension " + name +
                  " is not available (the window system needs it to present)");
    if (std::find_if(extensions.begin(), extensions.end(), [&](const char* e) { return name == e; }) ==
        extensions.end())
      extensions.push_back(name.c_str());
  }
  if (validation) {
    SF_VK_CHECK(vkEnumerateInstanceLayerProperties(&n, nullptr));
    std::vector<VkLayerProperties> props(n);
    SF_VK_CHECK(vkEnumerateInstanceLayerProperties(&n, props.data()));
    bool found = std::any_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
      return std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!found)
      throw Error(
          "Vulkan validation requested but VK_LAYER_KHRONOS_validation is not installed (Debian: "
          "vulkan-validationlayers)");
    if (!*debug_utils) throw Error("Vulkan validation requested but VK_EXT_debug_utils is unavailable");
    layers.push_back("VK_LAYER_KHRONOS_validation");
  }
  // Synchronization validation through VK_EXT_validation_features, which the validation layer provides.
  const VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  bool sync = false;
  if (validation && synchronization) {
    SF_VK_CHECK(vkEnumerateInstanceExtensionProperties("VK_LAYER_KHRONOS_validation", &n, nullptr));
    std::vector<VkExtensionProperties> layer_exts(n);
    SF_VK_CHECK(vkEnumerateInstanceExtensionProperties("VK_LAYER_KHRONOS_validation", &n, layer_exts.data()));
    sync = std::any_of(layer_exts.begin(), layer_exts.end(), [](const VkExtensionProperties& e) {
      return std::strcmp(e.extensionName, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME) == 0;
    });
    if (!sync)
      throw Error(
          "Vulkan synchronization validation requested but the validation layer lacks "
          "VK_EXT_validation_features");
    extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  }
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  if (sync) ci.pNext = &features;
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VkInstance instance = VK_NULL_HANDLE;
  SF_VK_CHECK(vkCreateInstance(&ci, nullptr, &instance));
  keepDriverModulesLoaded();
  volkLoadInstanceOnly(instance);
  return instance;
}

// Whether the device lists the extension `name` (false where it cannot be asked).
bool hasDeviceExtension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> extensions(n);
  if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, extensions.data()) != VK_SUCCESS) return false;
  extensions.resize(n);
  return std::any_of(extensions.begin(), extensions.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

DeviceInfo describe(VkPhysicalDevice pd, uint32_t index) {
  VkPhysicalDeviceProperties basic;
  vkGetPhysicalDeviceProperties(pd, &basic);
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &sub;
  if (basic.apiVersion >= VK_API_VERSION_1_2) sub.pNext = &driver;
  vkGetPhysicalDeviceProperties2(pd, &props);
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  DeviceInfo d;
  d.index = index;
  d.name = props.properties.deviceName;
  d.type = props.properties.deviceType;
  d.api_version = props.properties.apiVersion;
  d.subgroup_size = sub.subgroupSize;
  const VkSubgroupFeatureFlags voting_shuffles =
      VK_SUBGROUP_FEATURE_BALLOT_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  d.subgroup_voting_shuffles = (sub.supportedOperations & voting_shuffles) == voting_shuffles &&
                               (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  d.subgroup_partitioned = d.subgroup_voting_shuffles &&
                           (sub.supportedOperations & VK_SUBGROUP_FEATURE_PARTITIONED_BIT_NV) != 0 &&
                           hasDeviceExtension(pd, VK_NV_SHADER_SUBGROUP_PARTITIONED_EXTENSION_NAME);
  if (basic.apiVersion >= VK_API_VERSION_1_2) {
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &f12;
    vkGetPhysicalDeviceFeatures2(pd, &features);
    d.shader_float16 = f12.shaderFloat16 == VK_TRUE;
  }
  d.driver_name = driver.driverName;
  d.driver_info = driver.driverInfo;
  d.driver_version = props.properties.driverVersion;
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.device_local_bytes += mem.memoryHeaps[h].size;
  return d;
}

std::vector<VkPhysicalDevice> physicalDevices(VkInstance instance) {
  uint32_t n = 0;
  SF_VK_CHECK(vkEnumeratePhysicalDevices(instance, &n, nullptr));
  std::vector<VkPhysicalDevice> devices(n);
  SF_VK_CHECK(vkEnumeratePhysicalDevices(instance, &n, devices.data()));
  return devices;
}

}  // namespace

void check(VkResult result, const char* call, const char* file, int line) {
  if (result == VK_SUCCESS) return;
  const std::string what =
      std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + resultName(result);
  if (result == VK_ERROR_DEVICE_LOST) throw DeviceLost(what);
  throw Error(what);
}

const char* resultName(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default:
      return "VkResult (other)";
  }
}

const char* DeviceInfo::typeName() const {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::vector<DeviceInfo> listDevices() {
  std::vector<DeviceInfo> out;
  if (!initVolk()) return out;
  try {
    bool debug_utils = false;
    VkInstance instance = createInstance(false, false, &debug_utils);
    auto devices = physicalDevices(instance);
    for (uint32_t i = 0; i < devices.size(); ++i) out.push_back(describe(devices[i], i));
    vkDestroyInstance(instance, nullptr);
  } catch (const Error&) {
    out.clear();
  }
  return out;
}

uint32_t loaderVersion() {
  if (!initVolk()) return 0;
  uint32_t v = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion && vkEnumerateInstanceVersion(&v) != VK_SUCCESS) return 0;
  return v;
}

std::vector<LayerInfo> listLayers() {
  std::vector<LayerInfo> out;
  if (!initVolk()) return out;
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return out;
  std::vector<VkLayerProperties> props(n);
  if (vkEnumerateInstanceLayerProperties(&n, props.data()) != VK_SUCCESS) return out;
  for (uint32_t i = 0; i < n; ++i)
    out.push_back(
        {props[i].layerName, props[i].description, props[i].specVersion, props[i].implementationVersion});
  return out;
}

std::vector<std::string> loadedModules() {
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && info->dlpi_name[0])
          static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &names);
  return names;
}

std::string versionString(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

bool vulkanAvailable() {
  for (const DeviceInfo& d : listDevices())
    if (d.api_version >= VK_API_VERSION_1_2) return true;
  return false;
}

namespace {
uint64_t g_memory_budget = 0;
}  // namespace

void setMemoryBudget(uint64_t bytes) {
  g_memory_budget = bytes;
}
uint64_t memoryBudget() {
  return g_memory_budget;
}

bool gpuDeviceAvailable() {
  for (const DeviceInfo& d : listDevices())
    if (d.api_version >= VK_API_VERSION_1_2 && d.type != VK_PHYSICAL_DEVICE_TYPE_CPU) return true;
  return false;
}

// SPLATFORGE_VALIDATION=1 in the environment turns validation (with synchronization validation) on for
// every context of the process: the test suite sets it, so every GPU test and every command a CLI test
// runs is validated.
bool validationForcedByEnvironment() {
  const char* v = std::getenv("SPLATFORGE_VALIDATION");
  return v && std::strcmp(v, "1") == 0;
}

namespace {

// The messenger that records the validation layer's errors and warnings into `context`.
VkDebugUtilsMessengerEXT createMessenger(VkInstance instance, Context* context) {
  VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mi.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mi.pfnUserCallback = onDebugMessage;
  mi.pUserData = context;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  SF_VK_CHECK(vkCreateDebugUtilsMessengerEXT(instance, &mi, nullptr, &messenger));
  return messenger;
}

// Presenting: the queue family must do compute and present to the window's display, and the device must
// offer swapchains.
bool presentFamily(const ContextOptions& options, VkInstance instance, VkPhysicalDevice pd, uint32_t family,
                   const VkQueueFamilyProperties& props) {
  return (props.queueFlags & VK_QUEUE_COMPUTE_BIT) &&
         (!options.can_present || options.can_present(instance, pd, family));
}

bool canPresent(const ContextOptions& options, VkInstance instance, VkPhysicalDevice pd) {
  if (!options.can_present) return true;
  if (!hasDeviceExtension(pd, VK_KHR_SWAPCHAIN_EXTENSION_NAME)) return false;
  uint32_t fn = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &fn, nullptr);
  std::vector<VkQueueFamilyProperties> fams(fn);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &fn, fams.data());
  for (uint32_t i = 0; i < fn; ++i)
    if (presentFamily(options, instance, pd, i, fams[i])) return true;
  return false;
}

struct DeviceChoice {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  DeviceInfo info;
};

// The device options.device names (index or part of its name), else the best kind that does Vulkan 1.2 (and
// can present, when asked). Throws naming the devices there are; on most refusals the instance (and the
// messenger) are destroyed first.
DeviceChoice chooseDevice(const ContextOptions& options, VkInstance instance,
                          VkDebugUtilsMessengerEXT messenger) {
  auto devices = physicalDevices(instance);
  if (devices.empty()) {
    vkDestroyInstance(instance, nullptr);
    throw Error("no Vulkan device found (for a CPU device install mesa-vulkan-drivers)");
  }
  std::vector<DeviceInfo> infos;
  for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(describe(devices[i], i));
  int chosen = -1;
  if (!options.device.empty()) {
    bool numeric = std::all_of(options.device.begin(), options.device.end(),
                               [](unsigned char c) { return std::isdigit(c); });
    for (const DeviceInfo& d : infos)
      if ((numeric && std::to_string(d.index) == options.device) ||
          (!numeric && lower(d.name).find(lower(options.device)) != std::string::npos)) {
        chosen = static_cast<int>(d.index);
        break;
      }
    if (chosen < 0) {
      std::string names;
      for (const DeviceInfo& d : infos)
        names += (names.empty() ? "" : ", ") + std::to_string(d.index) + ": " + d.name;
      vkDestroyInstance(instance, nullptr);
      throw Error("Vulkan device '" + options.device + "' not found (available: " + names + ")");
    }
  } else {
    for (const DeviceInfo& d : infos)
      if (d.api_version >= VK_API_VERSION_1_2 && canPresent(options, instance, devices[d.index]) &&
          (chosen < 0 || typeRank(d.type) < typeRank(infos[static_cast<size_t>(chosen)].type)))
        chosen = static_cast<int>(d.index);
    if (chosen < 0) chosen = 0;
  }
  DeviceChoice choice{devices[static_cast<size_t>(chosen)], infos[static_cast<size_t>(chosen)]};
  if (choice.info.api_version < VK_API_VERSION_1_2)
    throw Error("Vulkan device " + choice.info.name + " supports only Vulkan < 1.2");
  if (!canPresent(options, instance, choice.physical)) {
    if (messenger) vkDestroyDebugUtilsMessengerEXT(instance, messenger, nullptr);
    vkDestroyInstance(instance, nullptr);
    throw Error("Vulkan device " + choice.info.name +
                " cannot present to this window's display (no queue family with compute and present, or no "
                "VK_KHR_swapchain)");
  }
  return choice;
}

struct QueueChoice {
  uint32_t family = 0;
  bool graphics = false;
};

// A queue family that does compute (and presents, when asked), one that also does graphics where there is
// one (meshes are drawn with the graphics pipeline).
QueueChoice chooseQueueFamily(const ContextOptions& options, VkInstance instance, VkPhysicalDevice physical,
                              const DeviceInfo& info) {
  uint32_t qn = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, nullptr);
  std::vector<VkQueueFamilyProperties> families(qn);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &qn, families.data());
  for (uint32_t i = 0; i < qn; ++i)
    if ((families[i].queueFlags & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT)) ==
            (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT) &&
        presentFamily(options, instance, physical, i, families[i]))
      return {i, true};
  for (uint32_t i = 0; i < qn; ++i)
    if (presentFamily(options, instance, physical, i, families[i])) return {i, false};
  throw Error("Vulkan device " + info.name + " has no compute queue");
}

// The features a context enables, chained for vkCreateDevice (enable, then the pipeline-executable feature
// where the shader statistics are on, then enable12, then enable13 where any of its features is on). Not
// copied: the chain points into it.
struct EnabledFeatures {
  VkPhysicalDeviceFeatures2 enable{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan12Features enable12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features enable13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  bool buffer_int64_atomics = false, dynamic_rendering = false, subgroup_size_control = false,
       shader_statistics = false;

  EnabledFeatures() = default;
  EnabledFeatures(const EnabledFeatures&) = delete;
  EnabledFeatures& operator=(const EnabledFeatures&) = delete;
};

// Buffer device addresses and scalar block layout (required), 64-bit integers and their buffer atomics,
// 16-bit float arithmetic, dynamic rendering (with a graphics queue) and full compute subgroups of the
// device's size where the device has them; the pipelines' statistics when asked for and the device reports
// them.
void chooseFeatures(VkPhysicalDevice physical, const DeviceInfo& info, bool graphics, bool statistics,
                    EnabledFeatures& out) {
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  supported.pNext = &f12;
  const bool api13 = info.api_version >= VK_API_VERSION_1_3;
  if (api13) f12.pNext = &f13;
  vkGetPhysicalDeviceFeatures2(physical, &supported);
  if (!f12.bufferDeviceAddress || !f12.scalarBlockLayout)
    throw Error("Vulkan device " + info.name + " lacks bufferDeviceAddress or scalarBlockLayout");
  out.enable12.bufferDeviceAddress = VK_TRUE;
  out.enable12.scalarBlockLayout = VK_TRUE;
  // 16-bit float arithmetic where the device has it (the half-precision raster,
  // render/shaders/raster_half.comp).
  out.enable12.shaderFloat16 = f12.shaderFloat16;
  // 64-bit integer atomics on buffers where the device has them (the GPU trainer's fixed-point gradient
  // sums).
  out.enable12.shaderBufferInt64Atomics = f12.shaderBufferInt64Atomics;
  out.buffer_int64_atomics =
      f12.shaderBufferInt64Atomics == VK_TRUE && supported.features.shaderInt64 == VK_TRUE;
  if (api13 && f13.dynamicRendering && graphics) {
    out.enable13.dynamicRendering = VK_TRUE;
    out.enable12.pNext = &out.enable13;
    out.dynamic_rendering = true;
  }
  if (api13 && f13.subgroupSizeControl && f13.computeFullSubgroups) {
    VkPhysicalDeviceVulkan13Properties p13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props2.pNext = &p13;
    vkGetPhysicalDeviceProperties2(physical, &props2);
    if ((p13.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
        p13.minSubgroupSize <= info.subgroup_size && info.subgroup_size <= p13.maxSubgroupSize) {
      out.enable13.subgroupSizeControl = VK_TRUE;
      out.enable13.computeFullSubgroups = VK_TRUE;
      out.enable12.pNext = &out.enable13;
      out.subgroup_size_control = true;
    }
  }
  out.enable.pNext = &out.enable12;
  out.enable.features.shaderInt64 = supported.features.shaderInt64;
  if (statistics && hasDeviceExtension(physical, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR has{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 query{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    query.pNext = &has;
    vkGetPhysicalDeviceFeatures2(physical, &query);
    if (has.pipelineExecutableInfo) {
      out.executable.pipelineExecutableInfo = VK_TRUE;
      out.executable.pNext = out.enable.pNext;
      out.enable.pNext = &out.executable;
      out.shader_statistics = true;
    }
  }
}

// The device with one queue of `family`, the features `enable` chains, VK_KHR_swapchain when presenting,
// VK_NV_shader_subgroup_partitioned where the device has it and VK_KHR_pipeline_executable_properties for the
// shader statistics.
VkDevice createDevice(VkPhysicalDevice physical, uint32_t family, const VkPhysicalDeviceFeatures2& enable,
                      bool swapchain, bool partitioned, bool statistics) {
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &enable;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  std::vector<const char*> extensions;
  if (swapchain) extensions.push_back(VK_KHR_SWAPCHAIN_EXTENSION_NAME);
  if (partitioned) extensions.push_back(VK_NV_SHADER_SUBGROUP_PARTITIONED_EXTENSION_NAME);
  if (statistics) extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  di.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  di.ppEnabledExtensionNames = extensions.data();
  VkDevice device = VK_NULL_HANDLE;
  SF_VK_CHECK(vkCreateDevice(physical, &di, nullptr, &device));
  return device;
}

}  // namespace

Context::Context(const ContextOptions& options)
    : validation_(options.validation || validationForcedByEnvironment()) {
  if (!initVolk())
    throw Error(
        "Vulkan loader (libvulkan.so.1) not found; install libvulkan1 and a driver (Debian: "
        "mesa-vulkan-drivers)");
  const bool forced = validation_ && !options.validation;
  instance_ = createInstance(validation_, options.synchronization_validation || forced, &debug_utils_,
                             options.instance_extensions);
  if (debug_utils_ && validation_) messenger_ = createMessenger(instance_, this);
  const DeviceChoice choice = chooseDevice(options, instance_, messenger_);
  physical_ = choice.physical;
  info_ = choice.info;

  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical_, &props);
  max_push_constants_ = props.limits.maxPushConstantsSize;
  max_shared_memory_ = props.limits.maxComputeSharedMemorySize;
  max_workgroup_invocations_ = props.limits.maxComputeWorkGroupInvocations;
  timestamp_period_ns_ = props.limits.timestampPeriod;
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

  const QueueChoice queue = chooseQueueFamily(options, instance_, physical_, info_);
  queue_family_ = queue.family;
  graphics_ = queue.graphics;
  EnabledFeatures features;
  chooseFeatures(physical_, info_, graphics_, options.shader_statistics, features);
  buffer_int64_atomics_ = features.buffer_int64_atomics;
  dynamic_rendering_ = features.dynamic_rendering;
  subgroup_size_control_ = features.subgroup_size_control;
  capture_statistics_ = features.shader_statistics;
  device_ = createDevice(physical_, queue_family_, features.enable, static_cast<bool>(options.can_present),
                         info_.subgroup_partitioned, capture_statistics_);
  keepDriverModulesLoaded();
  volkLoadDevice(device_);
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  setName(VK_OBJECT_TYPE_QUEUE, reinterpret_cast<uint64_t>(queue_), "compute queue");

  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT | VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = queue_family_;
  SF_VK_CHECK(vkCreateCommandPool(device_, &pi, nullptr, &pool_));
  setName(VK_OBJECT_TYPE_COMMAND_POOL, reinterpret_cast<uint64_t>(pool_), "command pool");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  SF_VK_CHECK(vkCreateFence(device_, &fi, nullptr, &fence_));
  setName(VK_OBJECT_TYPE_FENCE, reinterpret_cast<uint64_t>(fence_), "submit fence");
  // The fault is injected into the first context of the process only: the device made to replace the lost one
  // works (what the recovery tests check).
  static std::atomic<bool> fault_taken{false};
  if (const char* fault = std::getenv("SPLATFORGE_FAULT_DEVICE_LOST"); fault && !fault_taken.exchange(true))
    fail_from_submit_ = std::strtoull(fault, nullptr, 10);
}

Context::~Context() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    vkDestroyFence(device_, fence_, nullptr);
    vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

void Context::recordValidationError(const char* message) {
  std::lock_guard<std::mutex> hold(messages_mutex_);
  ++validation_errors_;
  if (validation_messages_.size() < kMaxKeptMessages) validation_messages_.emplace_back(message);
}

std::vector<ShaderStatistics> Context::shaderStatistics() const {
  std::lock_guard<std::mutex> hold(statistics_mutex_);
  return statistics_;
}

void Context::addShaderStatistics(ShaderStatistics s) {
  std::lock_guard<std::mutex> hold(statistics_mutex_);
  statistics_.push_back(std::move(s));
}

std::string Context::validationReport(uint32_t since) const {
  std::lock_guard<std::mutex> hold(messages_mutex_);
  std::string out;
  for (size_t i = since; i < validation_messages_.size(); ++i) {
    if (!out.empty()) out += '\n';
    out.append("  [").append(std::to_string(i + 1)).append("] ").append(validation_messages_[i]);
  }
  if (validation_errors_ > validation_messages_.size())
    out.append("\n  (")
        .append(std::to_string(validation_errors_ - validation_messages_.size()))
        .append(" more not kept)");
  return out;
}

void Context::setName(VkObjectType type, uint64_t handle, const std::string& name) const {
  if (!debug_utils_ || !device_ || !vkSetDebugUtilsObjectNameEXT) return;
  VkDebugUtilsObjectNameInfoEXT ni{VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT};
  ni.objectType = type;
  ni.objectHandle = handle;
  ni.pObjectName = name.c_str();
  SF_VK_CHECK(vkSetDebugUtilsObjectNameEXT(device_, &ni));
}

uint32_t Context::memoryType(uint32_t bits, VkMemoryPropertyFlags flags) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & flags) == flags) return i;
  throw Error("no Vulkan memory type with the required properties");
}

// Throws MemoryBudgetError when `bytes` more for `name` would pass the budget (setMemoryBudget).
void Context::checkBudget(uint64_t bytes, const std::string& name) const {
  if (g_memory_budget && allocated_bytes_ + bytes > g_memory_budget)
    throw MemoryBudgetError("'" + name + "' needs " + formatBytes(bytes) + " of GPU memory, and " +
                            formatBytes(allocated_bytes_) + " of the " + formatBytes(g_memory_budget) +
                            " budget (--max-gpu-memory) are in use");
}

void Context::countAllocation(int64_t bytes) {
  const uint64_t now = allocated_bytes_.fetch_add(static_cast<uint64_t>(bytes)) +
                       static_cast<uint64_t>(bytes);  // (mod 2^64: a free subtracts)
  uint64_t peak = peak_allocated_bytes_.load();
  while (now > peak && !peak_allocated_bytes_.compare_exchange_weak(peak, now)) {
  }
}

Buffer Context::createBuffer(VkDeviceSize size, bool host_visible, const std::string& name) {
  Buffer b;
  b.ctx = this;
  b.size = std::max<VkDeviceSize>(size, 16);
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = b.size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
             VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  SF_VK_CHECK(vkCreateBuffer(device_, &bi, nullptr, &b.buffer));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  VkMemoryAllocateFlagsInfo fl{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  fl.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &fl;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memoryType(req.memoryTypeBits, host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                                                   : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  checkBudget(req.size, name);  // (b's destructor destroys the buffer on a throw)
  VkResult r = vkAllocateMemory(device_, &ai, nullptr, &b.memory);
  if (r != VK_SUCCESS)
    throw Error("cannot allocate " + std::to_string(req.size) + " bytes of Vulkan memory for '" + name +
                "': " + resultName(r));
  b.allocation = req.size;
  countAllocation(static_cast<int64_t>(req.size));
  SF_VK_CHECK(vkBindBufferMemory(device_, b.buffer, b.memory, 0));
  VkBufferDeviceAddressInfo ad{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  ad.buffer = b.buffer;
  b.address = vkGetBufferDeviceAddress(device_, &ad);
  if (host_visible) SF_VK_CHECK(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped));
  setName(VK_OBJECT_TYPE_BUFFER, reinterpret_cast<uint64_t>(b.buffer), name);
  setName(VK_OBJECT_TYPE_DEVICE_MEMORY, reinterpret_cast<uint64_t>(b.memory), name + " memory");
  return b;
}

VkCommandBuffer Context::begin() {
  const std::lock_guard<std::recursive_mutex> hold(mutex_);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd;
  SF_VK_CHECK(vkAllocateCommandBuffers(device_, &ai, &cmd));
  setName(VK_OBJECT_TYPE_COMMAND_BUFFER, reinterpret_cast<uint64_t>(cmd), "frame commands");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  SF_VK_CHECK(vkBeginCommandBuffer(cmd, &bi));
  return cmd;
}

void Context::submit(VkCommandBuffer cmd, const char* what) {
  const std::lock_guard<std::recursive_mutex> hold(mutex_);
  SF_VK_CHECK(vkEndCommandBuffer(cmd));
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  ++submits_;
  if (lost_) {
    vkFreeCommandBuffers(device_, pool_, 1, &cmd);
    throw DeviceLost("vkQueueSubmit: the device " + info_.name + " was lost earlier (VK_ERROR_DEVICE_LOST)");
  }
  try {
    SF_VK_CHECK(vkResetFences(device_, 1, &fence_));
    SF_VK_CHECK(vkQueueSubmit(queue_, 1, &si, fence_));
    SF_VK_CHECK(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX));
  } catch (const DeviceLost& e) {
    lost_ = true;
    vkFreeCommandBuffers(device_, pool_, 1, &cmd);
    throw DeviceLost(std::string(e.what()) + (what ? std::string(" while ") + what : std::string()));
  }
  vkFreeCommandBuffers(device_, pool_, 1, &cmd);
  if (fail_from_submit_ != 0 && submits_ >= fail_from_submit_) {
    lost_ = true;
    throw DeviceLost("vkWaitForFences: VK_ERROR_DEVICE_LOST (simulated: SPLATFORGE_FAULT_DEVICE_LOST=" +
                     std::to_string(fail_from_submit_) + ")" +
                     (what ? std::string(" while ") + what : std::string()));
  }
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    ctx = o.ctx, buffer = o.buffer, memory = o.memory, size = o.size, address = o.address, mapped = o.mapped,
    allocation = o.allocation;
    o.buffer = VK_NULL_HANDLE, o.memory = VK_NULL_HANDLE, o.mapped = nullptr, o.size = 0, o.address = 0,
    o.allocation = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (ctx && buffer) {
    vkDestroyBuffer(ctx->device(), buffer, nullptr);
    vkFreeMemory(ctx->device(), memory, nullptr);
    ctx->countAllocation(-static_cast<int64_t>(allocation));
  }
  buffer = VK_NULL_HANDLE, memory = VK_NULL_HANDLE, mapped = nullptr, size = 0, address = 0, allocation = 0;
}

Image Context::createImage(uint32_t width, uint32_t height, VkFormat format, VkImageUsageFlags usage,
                           VkImageAspectFlags aspect, const std::string& name) {
  Image img;
  img.ctx = this;
  img.format = format;
  img.width = width, img.height = height;
  VkImageCreateInfo ii{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  ii.imageType = VK_IMAGE_TYPE_2D;
  ii.format = format;
  ii.extent = {width, height, 1};
  ii.mipLevels = 1;
  ii.arrayLayers = 1;
  ii.samples = VK_SAMPLE_COUNT_1_BIT;
  ii.tiling = VK_IMAGE_TILING_OPTIMAL;
  ii.usage = usage;
  ii.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ii.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkResult r = vkCreateImage(device_, &ii, nullptr, &img.image);
  if (r != VK_SUCCESS)
    throw Error("cannot create a " + std::to_string(width) + "x" + std::to_string(height) +
                " Vulkan image '" + name + "': " + resultName(r));
  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(device_, img.image, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  checkBudget(req.size, name);
  r = vkAllocateMemory(device_, &ai, nullptr, &img.memory);
  if (r != VK_SUCCESS)
    throw Error("cannot allocate " + std::to_string(req.size) + " bytes of Vulkan memory for '" + name +
                "': " + resultName(r));
  img.allocation = req.size;
  countAllocation(static_cast<int64_t>(req.size));
  SF_VK_CHECK(vkBindImageMemory(device_, img.image, img.memory, 0));
  VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vi.image = img.image;
  vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vi.format = format;
  vi.subresourceRange = {aspect, 0, 1, 0, 1};
  SF_VK_CHECK(vkCreateImageView(device_, &vi, nullptr, &img.view));
  setName(VK_OBJECT_TYPE_IMAGE, reinterpret_cast<uint64_t>(img.image), name);
  setName(VK_OBJECT_TYPE_IMAGE_VIEW, reinterpret_cast<uint64_t>(img.view), name + " view");
  setName(VK_OBJECT_TYPE_DEVICE_MEMORY, reinterpret_cast<uint64_t>(img.memory), name + " memory");
  return img;
}

Image& Image::operator=(Image&& o) noexcept {
  if (this != &o) {
    reset();
    ctx = o.ctx, image = o.image, memory = o.memory, view = o.view, format = o.format, width = o.width,
    height = o.height;
    allocation = o.allocation;
    o.image = VK_NULL_HANDLE, o.memory = VK_NULL_HANDLE, o.view = VK_NULL_HANDLE, o.width = o.height = 0,
    o.allocation = 0;
  }
  return *this;
}

void Image::reset() {
  if (ctx && image) {
    vkDestroyImageView(ctx->device(), view, nullptr);
    vkDestroyImage(ctx->device(), image, nullptr);
    vkFreeMemory(ctx->device(), memory, nullptr);
    ctx->countAllocation(-static_cast<int64_t>(allocation));
  }
  image = VK_NULL_HANDLE, memory = VK_NULL_HANDLE, view = VK_NULL_HANDLE, width = height = 0, allocation = 0;
}

void imageBarrier(VkCommandBuffer cmd, const Image& image, VkImageAspectFlags aspect, VkImageLayout from,
                  VkImageLayout to, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                  VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  imageBarrier(cmd, image.image, aspect, from, to, src_stage, src_access, dst_stage, dst_access);
}

void imageBarrier(VkCommandBuffer cmd, VkImage image, VkImageAspectFlags aspect, VkImageLayout from,
                  VkImageLayout to, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                  VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  b.oldLayout = from;
  b.newLayout = to;
  b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.image = image;
  b.subresourceRange = {aspect, 0, 1, 0, 1};
  vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, nullptr, 0, nullptr, 1, &b);
}

namespace {
VkShaderModule shaderModule(VkDevice device, std::span<const uint32_t> spirv) {
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = spirv.size() * 4;
  mi.pCode = spirv.data();
  VkShaderModule module;
  SF_VK_CHECK(vkCreateShaderModule(device, &mi, nullptr, &module));
  return module;
}
}  // namespace

GraphicsPipeline::GraphicsPipeline(Context& ctx, std::span<const uint32_t> vertex_spirv,
                                   std::span<const uint32_t> fragment_spirv, uint32_t push_size,
                                   std::span<const VkFormat> color_formats, VkFormat depth_format,
                                   VkCompareOp depth_compare, const std::string& name)
    : ctx_(ctx) {
  if (!ctx.graphics())
    throw Error("pipeline " + name + ": Vulkan device " + ctx.info().name +
                " has no graphics queue with dynamic rendering (Vulkan 1.3); meshes cannot be drawn on it");
  if (push_size > ctx.maxPushConstants())
    throw Error("pipeline " + name + ": push constants of " + std::to_string(push_size) +
                " bytes exceed the device limit " + std::to_string(ctx.maxPushConstants()));
  VkPushConstantRange range{VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, push_size};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  VkShaderModule vs = shaderModule(ctx.device(), vertex_spirv);
  VkShaderModule fs = VK_NULL_HANDLE;
  VkResult made = vkCreatePipelineLayout(ctx.device(), &li, nullptr, &layout_);
  if (made == VK_SUCCESS) {
    try {
      fs = shaderModule(ctx.device(), fragment_spirv);
    } catch (...) {
      made = VK_ERROR_INVALID_SHADER_NV;
    }
  }
  if (made != VK_SUCCESS) {
    vkDestroyShaderModule(ctx.device(), vs, nullptr);
    if (layout_) vkDestroyPipelineLayout(ctx.device(), layout_, nullptr);
    check(made, "vkCreatePipelineLayout / vkCreateShaderModule", __FILE__, __LINE__);
  }
  VkPipelineShaderStageCreateInfo stages[2] = {{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO},
                                               {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO}};
  stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT;
  stages[0].module = vs;
  stages[0].pName = "main";
  stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT;
  stages[1].module = fs;
  stages[1].pName = "main";
  VkPipelineVertexInputStateCreateInfo vin{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
  VkPipelineInputAssemblyStateCreateInfo ia{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
  ia.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
  VkPipelineViewportStateCreateInfo vp{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
  vp.viewportCount = 1;
  vp.scissorCount = 1;
  VkPipelineRasterizationStateCreateInfo rs{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
  rs.polygonMode = VK_POLYGON_MODE_FILL;
  rs.cullMode = VK_CULL_MODE_NONE;
  rs.frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE;
  rs.lineWidth = 1.0f;
  VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
  ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
  VkPipelineDepthStencilStateCreateInfo ds{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
  ds.depthTestEnable = VK_TRUE;
  ds.depthWriteEnable = VK_TRUE;
  ds.depthCompareOp = depth_compare;
  std::vector<VkPipelineColorBlendAttachmentState> blend(color_formats.size());
  for (auto& b : blend)
    b.colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT |
                       VK_COLOR_COMPONENT_A_BIT;
  VkPipelineColorBlendStateCreateInfo cb{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
  cb.attachmentCount = static_cast<uint32_t>(blend.size());
  cb.pAttachments = blend.data();
  VkDynamicState dyn[2] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
  VkPipelineDynamicStateCreateInfo dy{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
  dy.dynamicStateCount = 2;
  dy.pDynamicStates = dyn;
  VkPipelineRenderingCreateInfo rendering{VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO};
  rendering.colorAttachmentCount = static_cast<uint32_t>(color_formats.size());
  rendering.pColorAttachmentFormats = color_formats.data();
  rendering.depthAttachmentFormat = depth_format;
  VkGraphicsPipelineCreateInfo gi{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
  gi.pNext = &rendering;
  gi.stageCount = 2;
  gi.pStages = stages;
  gi.pVertexInputState = &vin;
  gi.pInputAssemblyState = &ia;
  gi.pViewportState = &vp;
  gi.pRasterizationState = &rs;
  gi.pMultisampleState = &ms;
  gi.pDepthStencilState = &ds;
  gi.pColorBlendState = &cb;
  gi.pDynamicState = &dy;
  gi.layout = layout_;
  VkResult r = vkCreateGraphicsPipelines(ctx.device(), VK_NULL_HANDLE, 1, &gi, nullptr, &pipeline_);
  vkDestroyShaderModule(ctx.device(), vs, nullptr);
  vkDestroyShaderModule(ctx.device(), fs, nullptr);
  if (r != VK_SUCCESS)
    vkDestroyPipelineLayout(ctx.device(), layout_, nullptr);  // the destructor will not run
  check(r, "vkCreateGraphicsPipelines", __FILE__, __LINE__);
  ctx.setName(VK_OBJECT_TYPE_PIPELINE, reinterpret_cast<uint64_t>(pipeline_), name);
  ctx.setName(VK_OBJECT_TYPE_PIPELINE_LAYOUT, reinterpret_cast<uint64_t>(layout_), name + " layout");
}

GraphicsPipeline::~GraphicsPipeline() {
  vkDestroyPipeline(ctx_.device(), pipeline_, nullptr);
  vkDestroyPipelineLayout(ctx_.device(), layout_, nullptr);
}

uint32_t spirvLocalSizeX(std::span<const uint32_t> spirv) {
  // Header is 5 words; then instructions: word count in the high 16 bits, opcode in the low 16.
  constexpr uint32_t kOpExecutionMode = 16, kLocalSize = 17;
  for (size_t i = 5; i < spirv.size();) {
    uint32_t count = spirv[i] >> 16, op = spirv[i] & 0xffffu;
    if (count == 0 || i + count > spirv.size()) break;
    if (op == kOpExecutionMode && count >= 4 && spirv[i + 2] == kLocalSize) return spirv[i + 3];
    i += count;
  }
  return 0;
}

namespace {
// Whether the workgroup size comes from specialisation constants (`layout(local_size_x_id = ...)`): the
// value decorated BuiltIn WorkgroupSize, which overrides the LocalSize execution mode, is a specialisation
// constant composite (a shader that only reads gl_WorkGroupSize of a fixed size has a plain constant there).
bool spirvSpecialisesWorkgroupSize(std::span<const uint32_t> spirv) {
  constexpr uint32_t kOpDecorate = 71, kDecorationBuiltIn = 11, kBuiltInWorkgroupSize = 25,
                     kOpSpecConstantComposite = 51;
  uint32_t size_id = 0;
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t count = spirv[i] >> 16, op = spirv[i] & 0xffffu;
    if (count == 0 || i + count > spirv.size()) break;
    if (op == kOpDecorate && count >= 4 && spirv[i + 2] == kDecorationBuiltIn &&
        spirv[i + 3] == kBuiltInWorkgroupSize)
      size_id = spirv[i + 1];
    if (op == kOpSpecConstantComposite && count >= 3 && size_id != 0 && spirv[i + 2] == size_id) return true;
    i += count;
  }
  return false;
}
}  // namespace

namespace {

// The statistics the driver gives of a pipeline made with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR, of
// each of its executables (a compute pipeline has one; were there more, each statistic's name says which).
ShaderStatistics readStatistics(VkDevice device, VkPipeline pipeline, const std::string& name) {
  ShaderStatistics out;
  out.pipeline = name;
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = pipeline;
  uint32_t executables = 0;
  SF_VK_CHECK(vkGetPipelineExecutablePropertiesKHR(device, &pi, &executables, nullptr));
  std::vector<VkPipelineExecutablePropertiesKHR> props(
      executables, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  SF_VK_CHECK(vkGetPipelineExecutablePropertiesKHR(device, &pi, &executables, props.data()));
  props.resize(executables);
  for (uint32_t e = 0; e < executables; ++e) {
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline;
    ei.executableIndex = e;
    uint32_t n = 0;
    SF_VK_CHECK(vkGetPipelineExecutableStatisticsKHR(device, &ei, &n, nullptr));
    std::vector<VkPipelineExecutableStatisticKHR> stats(
        n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    SF_VK_CHECK(vkGetPipelineExecutableStatisticsKHR(device, &ei, &n, stats.data()));
    stats.resize(n);
    const std::string prefix = executables > 1 ? std::string(props[e].name) + ": " : std::string();
    for (const VkPipelineExecutableStatisticKHR& st : stats) {
      ShaderStatistics::Value v{prefix + st.name, st.description, 0.0};
      switch (st.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
          v.value = st.value.b32 ? 1 : 0;
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
          v.value = static_cast<double>(st.value.i64);
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
          v.value = static_cast<double>(st.value.u64);
          break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
          v.value = st.value.f64;
          break;
        default:
          continue;
      }
      out.values.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace

ComputePipeline::ComputePipeline(Context& ctx, std::span<const uint32_t> spirv, uint32_t push_size,
                                 uint32_t local_size_x, const std::string& name, bool full_subgroups)
    : ctx_(ctx) {
  const bool specialised = spirvSpecialisesWorkgroupSize(spirv);
  const uint32_t shader_size = spirvLocalSizeX(spirv);
  if (!specialised && shader_size != local_size_x)
    throw Error("pipeline " + name + ": shader workgroup size " + std::to_string(shader_size) +
                " differs from the host's " + std::to_string(local_size_x));
  if (push_size > ctx.maxPushConstants())
    throw Error("pipeline " + name + ": push constants of " + std::to_string(push_size) +
                " bytes exceed the device limit " + std::to_string(ctx.maxPushConstants()));
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = spirv.size() * 4;
  mi.pCode = spirv.data();
  VkShaderModule module;
  SF_VK_CHECK(vkCreateShaderModule(ctx.device(), &mi, nullptr, &module));
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  SF_VK_CHECK(vkCreatePipelineLayout(ctx.device(), &li, nullptr, &layout_));
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  const VkSpecializationMapEntry size_entry{0, 0, sizeof(uint32_t)};
  const VkSpecializationInfo size_spec{1, &size_entry, sizeof(uint32_t), &local_size_x};
  if (specialised) {
    if (local_size_x == 0 || local_size_x > ctx.maxWorkgroupInvocations())
      throw Error("pipeline " + name + ": workgroup size " + std::to_string(local_size_x) +
                  " outside the device's 1.." + std::to_string(ctx.maxWorkgroupInvocations()));
    ci.stage.pSpecializationInfo = &size_spec;
  }
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  if (full_subgroups && ctx.subgroupSizeControl()) {
    required.requiredSubgroupSize = ctx.info().subgroup_size;
    ci.stage.pNext = &required;
    ci.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  }
  ci.layout = layout_;
  if (ctx.capturesShaderStatistics()) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkResult r = vkCreateComputePipelines(ctx.device(), VK_NULL_HANDLE, 1, &ci, nullptr, &pipeline_);
  vkDestroyShaderModule(ctx.device(), module, nullptr);
  check(r, "vkCreateComputePipelines", __FILE__, __LINE__);
  if (ctx.capturesShaderStatistics()) {
    try {
      ctx.addShaderStatistics(readStatistics(ctx.device(), pipeline_, name));
    } catch (...) {  // no destructor runs for a constructor that throws
      vkDestroyPipeline(ctx.device(), pipeline_, nullptr);
      vkDestroyPipelineLayout(ctx.device(), layout_, nullptr);
      throw;
    }
  }
  ctx.setName(VK_OBJECT_TYPE_PIPELINE, reinterpret_cast<uint64_t>(pipeline_), name);
  ctx.setName(VK_OBJECT_TYPE_PIPELINE_LAYOUT, reinterpret_cast<uint64_t>(layout_), name + " layout");
}

ComputePipeline::~ComputePipeline() {
  vkDestroyPipeline(ctx_.device(), pipeline_, nullptr);
  vkDestroyPipelineLayout(ctx_.device(), layout_, nullptr);
}

void computeBarrier(VkCommandBuffer cmd) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT |
                           VK_PIPELINE_STAGE_TRANSFER_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
}

void shaderBarrier(VkCommandBuffer cmd) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                       &mb, 0, nullptr, 0, nullptr);
}

}  // namespace sf::gpu
