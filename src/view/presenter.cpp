#include "view/presenter.h"

#define GLFW_INCLUDE_NONE
#define GLFW_INCLUDE_VULKAN  // glfwCreateWindowSurface and glfwGetPhysicalDevicePresentationSupport
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace sf::view {

namespace {

// The ImGui Vulkan backend reports its VkResults here; an error ends the viewer like any other Vulkan error.
void checkImguiResult(VkResult r) {
  if (r != VK_SUCCESS) gpu::check(r, "Dear ImGui Vulkan backend call", __FILE__, __LINE__);
}

// Formats the copied 8-bit pixels can go to unchanged: byte order B,G,R,A or R,G,B,A. Copies move raw bytes,
// so the display-encoded values land as they are in UNORM and SRGB images alike (an SRGB image only changes
// how ImGui's own colours are written).
bool copyableFormat(VkFormat f, bool* bgra) {
  switch (f) {
    case VK_FORMAT_B8G8R8A8_UNORM:
    case VK_FORMAT_B8G8R8A8_SRGB:
      *bgra = true;
      return true;
    case VK_FORMAT_R8G8B8A8_UNORM:
    case VK_FORMAT_R8G8B8A8_SRGB:
      *bgra = false;
      return true;
    default:
      return false;
  }
}

// One channel of `frame` at 8 bits, rounded as the PNG writer rounds (toRgb8).
uint8_t toByte(float v) {
  return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f));
}

// Per destination column (or row) of a stretch from `from` to `to` pixels: the two source pixels and the
// weight of the second. Pixel centres map to pixel centres: source coordinate (x + 0.5) * from / to - 0.5.
struct Tap {
  uint32_t a, b;
  float w;
};
std::vector<Tap> stretchTaps(uint32_t from, uint32_t to) {
  std::vector<Tap> taps(to);
  const float ratio = static_cast<float>(from) / static_cast<float>(to), last = static_cast<float>(from - 1);
  for (uint32_t i = 0; i < to; ++i) {
    const float s = std::clamp((static_cast<float>(i) + 0.5f) * ratio - 0.5f, 0.0f, last);
    const uint32_t a = static_cast<uint32_t>(s);
    taps[i] = {a, std::min(a + 1, from - 1), s - static_cast<float>(a)};
  }
  return taps;
}

int formatRank(
    VkFormat f) {  // UNORM first: ImGui's colours are meant for a target that stores them as they are
  return f == VK_FORMAT_B8G8R8A8_UNORM ? 0 : f == VK_FORMAT_R8G8B8A8_UNORM ? 1 : 2;
}

// Swapchain images only move between transfer and present layouts: transfer stages on both sides.
void transition(VkCommandBuffer cmd, VkImage image, VkImageLayout from, VkImageLayout to,
                VkAccessFlags src_access, VkAccessFlags dst_access) {
  gpu::imageBarrier(cmd, image, VK_IMAGE_ASPECT_COLOR_BIT, from, to, VK_PIPELINE_STAGE_TRANSFER_BIT,
                    src_access, VK_PIPELINE_STAGE_TRANSFER_BIT, dst_access);
}

}  // namespace

void addPresentOptions(gpu::ContextOptions& options) {
  uint32_t n = 0;
  const char** names = glfwGetRequiredInstanceExtensions(&n);
  if (!names)
    throw Error(
        "GLFW found no Vulkan surface support for this display (glfwGetRequiredInstanceExtensions failed)");
  for (uint32_t i = 0; i < n; ++i) options.instance_extensions.emplace_back(names[i]);
  options.can_present = [](VkInstance instance, VkPhysicalDevice device, uint32_t family) {
    return glfwGetPhysicalDevicePresentationSupport(instance, device, family) == GLFW_TRUE;
  };
}

Presenter::Presenter(gpu::Context& ctx, GLFWwindow* window, bool vsync) : ctx_(ctx), window_(window) {
  try {
    SF_VK_CHECK(glfwCreateWindowSurface(ctx.instance(), window, nullptr, &surface_));
    VkBool32 supported = VK_FALSE;
    SF_VK_CHECK(
        vkGetPhysicalDeviceSurfaceSupportKHR(ctx.physicalDevice(), ctx.queueFamily(), surface_, &supported));
    if (!supported)
      throw Error("Vulkan device " + ctx.info().name + ": its queue cannot present to this window");

    uint32_t n = 0;
    SF_VK_CHECK(vkGetPhysicalDeviceSurfaceFormatsKHR(ctx.physicalDevice(), surface_, &n, nullptr));
    std::vector<VkSurfaceFormatKHR> formats(n);
    SF_VK_CHECK(vkGetPhysicalDeviceSurfaceFormatsKHR(ctx.physicalDevice(), surface_, &n, formats.data()));
    bool found = false;
    for (const VkSurfaceFormatKHR& f : formats) {
      bool bgra = false;
      if (f.colorSpace != VK_COLOR_SPACE_SRGB_NONLINEAR_KHR || !copyableFormat(f.format, &bgra)) continue;
      if (!found || formatRank(f.format) < formatRank(format_))
        format_ = f.format, bgra_ = bgra, found = true;
    }
    if (!found)
      throw Error("the window's surface offers no 8-bit RGBA or BGRA format in the sRGB colour space (" +
                  std::to_string(n) + " formats offered)");

    SF_VK_CHECK(vkGetPhysicalDeviceSurfacePresentModesKHR(ctx.physicalDevice(), surface_, &n, nullptr));
    std::vector<VkPresentModeKHR> modes(n);
    SF_VK_CHECK(vkGetPhysicalDeviceSurfacePresentModesKHR(ctx.physicalDevice(), surface_, &n, modes.data()));
    present_mode_ = VK_PRESENT_MODE_FIFO_KHR;  // always supported
    if (!vsync)
      for (VkPresentModeKHR want : {VK_PRESENT_MODE_MAILBOX_KHR, VK_PRESENT_MODE_IMMEDIATE_KHR})
        if (present_mode_ == VK_PRESENT_MODE_FIFO_KHR &&
            std::find(modes.begin(), modes.end(), want) != modes.end())
          present_mode_ = want;

    // The overlay's render pass: loads the copied frame, draws ImGui, leaves the image ready to present.
    VkAttachmentDescription color{};
    color.format = format_;
    color.samples = VK_SAMPLE_COUNT_1_BIT;
    color.loadOp = VK_ATTACHMENT_LOAD_OP_LOAD;
    color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    color.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    color.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    color.initialLayout = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
    color.finalLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
    VkAttachmentReference ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkSubpassDescription subpass{};
    subpass.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    subpass.colorAttachmentCount = 1;
    subpass.pColorAttachments = &ref;
    VkSubpassDependency deps[2] = {};
    deps[0].srcSubpass = VK_SUBPASS_EXTERNAL;  // the frame's copy (and the capture's read) before the overlay
    deps[0].dstSubpass = 0;
    deps[0].srcStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
    deps[0].srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    deps[0].dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    deps[0].dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
    deps[1].srcSubpass = 0;
    deps[1].dstSubpass = VK_SUBPASS_EXTERNAL;
    deps[1].srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    deps[1].srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
    deps[1].dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;  // a capture with the overlay reads it back
    deps[1].dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    VkRenderPassCreateInfo rp{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    rp.attachmentCount = 1;
    rp.pAttachments = &color;
    rp.subpassCount = 1;
    rp.pSubpasses = &subpass;
    rp.dependencyCount = 2;
    rp.pDependencies = deps;
    SF_VK_CHECK(vkCreateRenderPass(ctx.device(), &rp, nullptr, &render_pass_));
    ctx.setName(VK_OBJECT_TYPE_RENDER_PASS, reinterpret_cast<uint64_t>(render_pass_), "viewer overlay pass");

    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = ctx.queueFamily();
    SF_VK_CHECK(vkCreateCommandPool(ctx.device(), &pi, nullptr, &command_pool_));
    ctx.setName(VK_OBJECT_TYPE_COMMAND_POOL, reinterpret_cast<uint64_t>(command_pool_),
                "viewer command pool");
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = command_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    SF_VK_CHECK(vkAllocateCommandBuffers(ctx.device(), &ai, &cmd_));
    ctx.setName(VK_OBJECT_TYPE_COMMAND_BUFFER, reinterpret_cast<uint64_t>(cmd_), "viewer present commands");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    SF_VK_CHECK(vkCreateFence(ctx.device(), &fi, nullptr, &fence_));
    ctx.setName(VK_OBJECT_TYPE_FENCE, reinterpret_cast<uint64_t>(fence_), "viewer present fence");
    VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    SF_VK_CHECK(vkCreateSemaphore(ctx.device(), &si, nullptr, &acquired_));
    ctx.setName(VK_OBJECT_TYPE_SEMAPHORE, reinterpret_cast<uint64_t>(acquired_), "swapchain image acquired");

    VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 8};
    VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dp.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
    dp.maxSets = 8;
    dp.poolSizeCount = 1;
    dp.pPoolSizes = &pool_size;
    SF_VK_CHECK(vkCreateDescriptorPool(ctx.device(), &dp, nullptr, &descriptor_pool_));
    ctx.setName(VK_OBJECT_TYPE_DESCRIPTOR_POOL, reinterpret_cast<uint64_t>(descriptor_pool_),
                "imgui descriptors");

    createSwapchain();

    // Dear ImGui: no imgui.ini (a viewer run leaves no files behind), GLFW input, Vulkan drawing through the
    // entry points volk loaded (the backend is compiled with IMGUI_IMPL_VULKAN_NO_PROTOTYPES).
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    ImGui::StyleColorsDark();
    const bool loaded = ImGui_ImplVulkan_LoadFunctions(
        [](const char* name, void* user) {
          return vkGetInstanceProcAddr(static_cast<gpu::Context*>(user)->instance(), name);
        },
        &ctx);
    if (!loaded) throw Error("the Dear ImGui Vulkan backend could not load its Vulkan entry points");
    imgui_glfw_ = ImGui_ImplGlfw_InitForVulkan(window, true);
    if (!imgui_glfw_) throw Error("the Dear ImGui GLFW backend failed to initialise");
    ImGui_ImplVulkan_InitInfo info{};
    info.Instance = ctx.instance();
    info.PhysicalDevice = ctx.physicalDevice();
    info.Device = ctx.device();
    info.QueueFamily = ctx.queueFamily();
    info.Queue = ctx.queue();
    info.DescriptorPool = descriptor_pool_;
    info.Subpass = 0;
    // One frame in flight (present() waits for its frame), so two vertex-buffer sets are plenty whatever the
    // swapchain's image count.
    info.MinImageCount = 2;
    info.ImageCount = 2;
    info.MSAASamples = VK_SAMPLE_COUNT_1_BIT;
    info.CheckVkResultFn = checkImguiResult;
    imgui_vulkan_ = ImGui_ImplVulkan_Init(&info, render_pass_);
    if (!imgui_vulkan_) throw Error("the Dear ImGui Vulkan backend failed to initialise");
    {
      const auto lock = ctx.lock();  // the renderer's context: its pool and queue (gpu::Context::lock)
      VkCommandBuffer upload = ctx.begin();
      ImGui_ImplVulkan_CreateFontsTexture(upload);
      ctx.submit(upload);
    }
    ImGui_ImplVulkan_DestroyFontUploadObjects();
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

Presenter::~Presenter() {
  release();
}

void Presenter::release() {
  VkDevice device = ctx_.device();
  if (device) {
    const auto lock = ctx_.lock();  // waiting for the device uses its queue (gpu::Context::lock)
    vkDeviceWaitIdle(device);
  }
  if (imgui_vulkan_) ImGui_ImplVulkan_Shutdown();
  if (imgui_glfw_) ImGui_ImplGlfw_Shutdown();
  if (ImGui::GetCurrentContext()) ImGui::DestroyContext();
  imgui_vulkan_ = imgui_glfw_ = false;
  upload_.reset();
  readback_.reset();
  destroySwapchainViews();
  if (swapchain_) vkDestroySwapchainKHR(device, swapchain_, nullptr);
  swapchain_ = VK_NULL_HANDLE;
  if (acquired_) vkDestroySemaphore(device, acquired_, nullptr);
  if (fence_) vkDestroyFence(device, fence_, nullptr);
  if (command_pool_) vkDestroyCommandPool(device, command_pool_, nullptr);
  if (descriptor_pool_) vkDestroyDescriptorPool(device, descriptor_pool_, nullptr);
  if (render_pass_) vkDestroyRenderPass(device, render_pass_, nullptr);
  if (surface_) vkDestroySurfaceKHR(ctx_.instance(), surface_, nullptr);
  acquired_ = VK_NULL_HANDLE, fence_ = VK_NULL_HANDLE, command_pool_ = VK_NULL_HANDLE,
  descriptor_pool_ = VK_NULL_HANDLE;
  render_pass_ = VK_NULL_HANDLE, surface_ = VK_NULL_HANDLE;
}

void Presenter::destroySwapchainViews() {
  VkDevice device = ctx_.device();
  for (VkFramebuffer f : framebuffers_) vkDestroyFramebuffer(device, f, nullptr);
  for (VkImageView v : views_) vkDestroyImageView(device, v, nullptr);
  for (VkSemaphore s : render_done_) vkDestroySemaphore(device, s, nullptr);
  framebuffers_.clear(), views_.clear(), render_done_.clear(), images_.clear();
}

void Presenter::createSwapchain() {
  VkDevice device = ctx_.device();
  {
    const auto lock = ctx_.lock();  // waiting for the device uses its queue (gpu::Context::lock)
    SF_VK_CHECK(vkDeviceWaitIdle(device));
  }
  VkSurfaceCapabilitiesKHR caps;
  SF_VK_CHECK(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(ctx_.physicalDevice(), surface_, &caps));
  if (caps.currentExtent.width != UINT32_MAX) {
    extent_ = caps.currentExtent;
  } else {  // the surface takes the swapchain's size: the window's framebuffer size
    int w = 0, h = 0;
    glfwGetFramebufferSize(window_, &w, &h);
    extent_.width = std::clamp(static_cast<uint32_t>(std::max(w, 1)), caps.minImageExtent.width,
                               caps.maxImageExtent.width);
    extent_.height = std::clamp(static_cast<uint32_t>(std::max(h, 1)), caps.minImageExtent.height,
                                caps.maxImageExtent.height);
  }
  if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT) ||
      !(caps.supportedUsageFlags & VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT))
    throw Error(
        "the window's swapchain images cannot be copied to (no TRANSFER_DST usage); the viewer copies each "
        "frame into "
        "them");
  can_read_back_ = (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) != 0;
  min_images_ = std::max(caps.minImageCount, 2u);
  if (caps.maxImageCount) min_images_ = std::min(min_images_, caps.maxImageCount);
  VkSwapchainCreateInfoKHR ci{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
  ci.surface = surface_;
  ci.minImageCount = min_images_;
  ci.imageFormat = format_;
  ci.imageColorSpace = VK_COLOR_SPACE_SRGB_NONLINEAR_KHR;
  ci.imageExtent = extent_;
  ci.imageArrayLayers = 1;
  ci.imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                  (can_read_back_ ? VK_IMAGE_USAGE_TRANSFER_SRC_BIT : 0);
  ci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
  ci.preTransform = caps.currentTransform;
  ci.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
  if (!(caps.supportedCompositeAlpha & VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR))
    for (VkCompositeAlphaFlagBitsKHR a :
         {VK_COMPOSITE_ALPHA_INHERIT_BIT_KHR, VK_COMPOSITE_ALPHA_PRE_MULTIPLIED_BIT_KHR,
          VK_COMPOSITE_ALPHA_POST_MULTIPLIED_BIT_KHR})
      if (caps.supportedCompositeAlpha & a) {
        ci.compositeAlpha = a;
        break;
      }
  ci.presentMode = present_mode_;
  ci.clipped = VK_TRUE;
  ci.oldSwapchain = swapchain_;
  VkSwapchainKHR created = VK_NULL_HANDLE;
  SF_VK_CHECK(vkCreateSwapchainKHR(device, &ci, nullptr, &created));
  destroySwapchainViews();
  if (swapchain_) vkDestroySwapchainKHR(device, swapchain_, nullptr);
  swapchain_ = created;
  ctx_.setName(VK_OBJECT_TYPE_SWAPCHAIN_KHR, reinterpret_cast<uint64_t>(swapchain_), "viewer swapchain");

  uint32_t n = 0;
  SF_VK_CHECK(vkGetSwapchainImagesKHR(device, swapchain_, &n, nullptr));
  images_.resize(n);
  SF_VK_CHECK(vkGetSwapchainImagesKHR(device, swapchain_, &n, images_.data()));
  for (uint32_t i = 0; i < n; ++i) {
    const std::string name = "swapchain image " + std::to_string(i);
    ctx_.setName(VK_OBJECT_TYPE_IMAGE, reinterpret_cast<uint64_t>(images_[i]), name);
    VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vi.image = images_[i];
    vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
    vi.format = format_;
    vi.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    views_.push_back(VK_NULL_HANDLE);
    SF_VK_CHECK(vkCreateImageView(device, &vi, nullptr, &views_.back()));
    ctx_.setName(VK_OBJECT_TYPE_IMAGE_VIEW, reinterpret_cast<uint64_t>(views_.back()), name + " view");
    VkFramebufferCreateInfo fb{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fb.renderPass = render_pass_;
    fb.attachmentCount = 1;
    fb.pAttachments = &views_.back();
    fb.width = extent_.width;
    fb.height = extent_.height;
    fb.layers = 1;
    framebuffers_.push_back(VK_NULL_HANDLE);
    SF_VK_CHECK(vkCreateFramebuffer(device, &fb, nullptr, &framebuffers_.back()));
    ctx_.setName(VK_OBJECT_TYPE_FRAMEBUFFER, reinterpret_cast<uint64_t>(framebuffers_.back()),
                 name + " framebuffer");
    VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    render_done_.push_back(VK_NULL_HANDLE);
    SF_VK_CHECK(vkCreateSemaphore(device, &si, nullptr, &render_done_.back()));
    ctx_.setName(VK_OBJECT_TYPE_SEMAPHORE, reinterpret_cast<uint64_t>(render_done_.back()),
                 name + " ready to present");
  }
}

void Presenter::newFrame() {
  ImGui_ImplVulkan_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
}

namespace {

// `frame` as 8-bit pixels in the swapchain's byte order (B,G,R,A with `bgra`), rounded as the PNG writer
// rounds (toRgb8), opaque, into `dst` (buffer_w x buffer_h pixels): the frame as it is, or with `stretch`
// bilinearly stretched over the whole buffer.
void writeFrame(const ImageRGBA& frame, bool stretch, uint32_t buffer_w, uint32_t buffer_h, bool bgra,
                uint8_t* dst) {
  const int r = bgra ? 2 : 0, b = bgra ? 0 : 2;
  if (!stretch) {
    const std::vector<uint8_t> rgb = toRgb8(frame);
    const size_t pixels = rgb.size() / 3;
    for (size_t i = 0; i < pixels; ++i) {
      dst[i * 4 + 0] = rgb[i * 3 + static_cast<size_t>(r)];
      dst[i * 4 + 1] = rgb[i * 3 + 1];
      dst[i * 4 + 2] = rgb[i * 3 + static_cast<size_t>(b)];
      dst[i * 4 + 3] = 255;
    }
    return;
  }
  const std::vector<Tap> xs = stretchTaps(static_cast<uint32_t>(frame.width), buffer_w);
  const std::vector<Tap> ys = stretchTaps(static_cast<uint32_t>(frame.height), buffer_h);
  const size_t row = static_cast<size_t>(frame.width) * 4;
  for (uint32_t y = 0; y < buffer_h; ++y) {
    const Tap ty = ys[y];
    const float* row_a = frame.pixels.data() + ty.a * row;
    const float* row_b = frame.pixels.data() + ty.b * row;
    uint8_t* out = dst + static_cast<size_t>(y) * buffer_w * 4;
    for (uint32_t x = 0; x < buffer_w; ++x, out += 4) {
      const Tap tx = xs[x];
      float rgb[3];
      for (int c = 0; c < 3; ++c) {
        const float top = row_a[tx.a * 4 + c] + tx.w * (row_a[tx.b * 4 + c] - row_a[tx.a * 4 + c]);
        const float bottom = row_b[tx.a * 4 + c] + tx.w * (row_b[tx.b * 4 + c] - row_b[tx.a * 4 + c]);
        rgb[c] = top + ty.w * (bottom - top);
      }
      out[0] = toByte(rgb[r]), out[1] = toByte(rgb[1]), out[2] = toByte(rgb[b]), out[3] = 255;
    }
  }
}

// An image of `width` x `height` from 8-bit pixels in the swapchain's byte order, opaque.
ImageRGBA fromBytes(const void* bytes, uint32_t width, uint32_t height, bool bgra) {
  ImageRGBA image(static_cast<int>(width), static_cast<int>(height));
  const uint8_t* src = static_cast<const uint8_t*>(bytes);
  for (size_t i = 0, n = static_cast<size_t>(width) * height; i < n; ++i) {
    float* p = image.pixels.data() + i * 4;
    p[0] = static_cast<float>(src[i * 4 + (bgra ? 2 : 0)]) / 255.0f;
    p[1] = static_cast<float>(src[i * 4 + 1]) / 255.0f;
    p[2] = static_cast<float>(src[i * 4 + (bgra ? 0 : 2)]) / 255.0f;
    p[3] = 1.0f;
  }
  return image;
}

// Records the upload buffer's frame (buffer_w x buffer_h pixels, of which w x h fit) into swapchain image
// `image` of `extent`, the rest of the image cleared to `background`; the image is left in TRANSFER_DST.
void recordFrameCopy(VkCommandBuffer cmd, VkImage image, VkExtent2D extent, Vec3 background, VkBuffer upload,
                     uint32_t buffer_w, uint32_t buffer_h, uint32_t w, uint32_t h) {
  // The acquire semaphore is waited on at the transfer stage, which this first barrier's source scope chains
  // to.
  transition(cmd, image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0,
             VK_ACCESS_TRANSFER_WRITE_BIT);
  if (w < extent.width || h < extent.height) {
    VkClearColorValue clear{};
    clear.float32[0] = background.x, clear.float32[1] = background.y, clear.float32[2] = background.z,
    clear.float32[3] = 1.0f;
    VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdClearColorImage(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &clear, 1, &range);
    transition(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
               VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
  }
  if (w > 0 && h > 0) {
    VkBufferImageCopy copy{};
    copy.bufferRowLength = buffer_w;
    copy.bufferImageHeight = buffer_h;
    copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    copy.imageExtent = {w, h, 1};
    vkCmdCopyBufferToImage(cmd, upload, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &copy);
  }
}

// Records a copy of the whole image (in `layout`, last written with `access`) into `readback` for the host to
// read after the submission's fence, the image back in `layout` afterwards.
void recordReadback(VkCommandBuffer cmd, VkImage image, VkExtent2D extent, VkImageLayout layout,
                    VkAccessFlags access, VkBuffer readback) {
  VkBufferImageCopy shown{};
  shown.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  shown.imageExtent = {extent.width, extent.height, 1};
  transition(cmd, image, layout, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, access, VK_ACCESS_TRANSFER_READ_BIT);
  vkCmdCopyImageToBuffer(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback, 1, &shown);
  transition(cmd, image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, layout, VK_ACCESS_TRANSFER_READ_BIT, access);
  VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0,
                       nullptr, 0, nullptr);
}

// Submits `cmd` (waiting for `acquired` at the transfer stage, signalling `render_done` and `fence`) and
// presents swapchain image `index` once it is done. Returns what presenting returned.
VkResult submitAndPresent(gpu::Context& ctx, VkCommandBuffer cmd, VkFence fence, VkSemaphore acquired,
                          VkSemaphore render_done, VkSwapchainKHR swapchain, uint32_t index) {
  const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &acquired;
  si.pWaitDstStageMask = &wait_stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &render_done;
  // The queue is the renderer's context's: submitted to and presented on under its lock (gpu::Context::lock).
  const std::unique_lock<std::recursive_mutex> queue_lock = ctx.lock();
  SF_VK_CHECK(vkResetFences(ctx.device(), 1, &fence));
  SF_VK_CHECK(vkQueueSubmit(ctx.queue(), 1, &si, fence));
  VkPresentInfoKHR pi{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
  pi.waitSemaphoreCount = 1;
  pi.pWaitSemaphores = &render_done;
  pi.swapchainCount = 1;
  pi.pSwapchains = &swapchain;
  pi.pImageIndices = &index;
  return vkQueuePresentKHR(ctx.queue(), &pi);
}

}  // namespace

void Presenter::present(const ImageRGBA& frame, Vec3 background, const PresentOptions& options) {
  VkDevice device = ctx_.device();
  int fb_w = 0, fb_h = 0;
  glfwGetFramebufferSize(window_, &fb_w, &fb_h);
  if (fb_w <= 0 || fb_h <= 0) return;  // minimised: nothing to show
  if (static_cast<uint32_t>(fb_w) != extent_.width || static_cast<uint32_t>(fb_h) != extent_.height)
    createSwapchain();
  ImageRGBA* const capture = options.capture;
  const bool capture_overlay = options.capture_overlay;

  uint32_t index = 0;
  VkResult acquired =
      vkAcquireNextImageKHR(device, swapchain_, UINT64_MAX, acquired_, VK_NULL_HANDLE, &index);
  if (acquired == VK_ERROR_OUT_OF_DATE_KHR) {
    createSwapchain();
    acquired = vkAcquireNextImageKHR(device, swapchain_, UINT64_MAX, acquired_, VK_NULL_HANDLE, &index);
  }
  if (acquired != VK_SUBOPTIMAL_KHR) SF_VK_CHECK(acquired);
  const VkImage image = images_[index];

  // The frame in the swapchain's byte order, rounded as the PNG writer rounds (toRgb8), opaque; a frame
  // rendered at a reduced size is stretched over the whole image.
  const bool stretch = options.stretch && frame.width > 0 && frame.height > 0 &&
                       (static_cast<uint32_t>(frame.width) != extent_.width ||
                        static_cast<uint32_t>(frame.height) != extent_.height);
  const uint32_t buffer_w = stretch ? extent_.width : static_cast<uint32_t>(std::max(frame.width, 0));
  const uint32_t buffer_h = stretch ? extent_.height : static_cast<uint32_t>(std::max(frame.height, 0));
  const uint32_t w = std::min(buffer_w, extent_.width), h = std::min(buffer_h, extent_.height);
  const VkDeviceSize frame_bytes = static_cast<VkDeviceSize>(buffer_w) * buffer_h * 4;
  const bool reuse = options.same_frame && uploaded_valid_ && uploaded_w_ == buffer_w &&
                     uploaded_h_ == buffer_h && uploaded_stretch_ == stretch;
  if (frame_bytes > 0 && !reuse) {
    if (upload_.size < frame_bytes) upload_ = ctx_.createBuffer(frame_bytes, true, "viewer frame upload");
    writeFrame(frame, stretch, buffer_w, buffer_h, bgra_, static_cast<uint8_t*>(upload_.mapped));
    uploaded_w_ = buffer_w, uploaded_h_ = buffer_h, uploaded_stretch_ = stretch, uploaded_valid_ = true;
  }
  const bool read_back = capture && can_read_back_;
  const VkDeviceSize shown_bytes = static_cast<VkDeviceSize>(extent_.width) * extent_.height * 4;
  if (read_back && readback_.size < shown_bytes)
    readback_ = ctx_.createBuffer(shown_bytes, true, "viewer screenshot readback");

  SF_VK_CHECK(vkResetCommandBuffer(cmd_, 0));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  SF_VK_CHECK(vkBeginCommandBuffer(cmd_, &bi));
  recordFrameCopy(cmd_, image, extent_, background, upload_.buffer, buffer_w, buffer_h, w, h);
  if (read_back && !capture_overlay)  // the frame as shown, before the overlay is drawn over it
    recordReadback(cmd_, image, extent_, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_ACCESS_TRANSFER_WRITE_BIT,
                   readback_.buffer);
  VkRenderPassBeginInfo rb{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rb.renderPass = render_pass_;
  rb.framebuffer = framebuffers_[index];
  rb.renderArea.extent = extent_;
  vkCmdBeginRenderPass(cmd_, &rb, VK_SUBPASS_CONTENTS_INLINE);
  if (ImDrawData* draw = ImGui::GetDrawData()) ImGui_ImplVulkan_RenderDrawData(draw, cmd_);
  vkCmdEndRenderPass(cmd_);
  if (read_back && capture_overlay)  // the image as presented, overlay included
    recordReadback(cmd_, image, extent_, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, 0, readback_.buffer);
  SF_VK_CHECK(vkEndCommandBuffer(cmd_));

  const VkResult presented =
      submitAndPresent(ctx_, cmd_, fence_, acquired_, render_done_[index], swapchain_, index);
  // One frame in flight: the renderer's next frame reuses the queue right away, and this keeps the upload
  // buffer, the acquire semaphore and ImGui's vertex buffers free for the next frame without more
  // bookkeeping.
  SF_VK_CHECK(vkWaitForFences(device, 1, &fence_, VK_TRUE, UINT64_MAX));
  if (presented == VK_ERROR_OUT_OF_DATE_KHR || presented == VK_SUBOPTIMAL_KHR)
    createSwapchain();
  else
    SF_VK_CHECK(presented);

  if (!capture) return;
  if (read_back)
    *capture = fromBytes(readback_.mapped, extent_.width, extent_.height, bgra_);
  else if (!stretch)  // the surface does not allow reading its images: the frame copied into it
    *capture = frame;
  else  // the same, stretched: as the upload buffer holds it
    *capture = fromBytes(upload_.mapped, buffer_w, buffer_h, bgra_);
}

}  // namespace sf::view
