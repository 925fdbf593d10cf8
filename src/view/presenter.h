// The viewer's window side: a GLFW window's Vulkan surface and swapchain on the renderer's own context, and
// the Dear ImGui backends (GLFW input, Vulkan drawing) on top.
//
// Frame path (the simple one): the Vulkan renderer produces its frame as a float image on the host
// (VulkanRenderer::render, the same frame `splatforge render` writes); present() converts it to 8 bits with
// the rounding of the PNG writer (stretching a frame rendered at a reduced size over the window, bilinear),
// copies it into the acquired swapchain image (vkCmdCopyBufferToImage), draws the ImGui overlay over it in a
// render pass that loads the copied pixels, and presents. A zero-copy path (the raster pass writing into the
// swapchain image) is a later optimisation.
#pragma once

#include <volk.h>

#include <memory>
#include <vector>

#include "core/image.h"
#include "core/math.h"
#include "gpu/gpu.h"

struct GLFWwindow;

namespace sf::view {

// Adds what presenting to GLFW windows needs to a context's options: GLFW's required instance extensions
// and its per-queue-family presentation test. GLFW must be initialised.
void addPresentOptions(gpu::ContextOptions& options);

// What one present() call does besides showing the frame.
struct PresentOptions {
  // The frame was rendered at a fraction of the window's size (adaptive resolution, view/render_scale.h):
  // stretched over the whole swapchain image, bilinear, pixel edges on pixel edges.
  bool stretch = false;
  // The frame is the one the previous call showed, unchanged: its converted pixels are reused (a window at
  // rest shows its last frame again without converting it).
  bool same_frame = false;
  // Read back the image as shown but without the UI into it (8-bit values as floats, alpha 1); with
  // `capture_overlay`, the image as presented, overlay included.
  ImageRGBA* capture = nullptr;
  bool capture_overlay = false;
};

class Presenter {
 public:
  // Creates the window's surface, a swapchain of its framebuffer size and the ImGui context and backends.
  // vsync: FIFO presentation; otherwise mailbox or immediate where the surface offers them.
  // Throws sf::Error naming what the surface or device lacks.
  Presenter(gpu::Context& ctx, GLFWwindow* window, bool vsync);
  ~Presenter();
  Presenter(const Presenter&) = delete;
  Presenter& operator=(const Presenter&) = delete;

  // Starts an ImGui frame (call after glfwPollEvents; build the UI, then ImGui::Render()).
  void newFrame();

  // Shows `frame` (colour already display-encoded, as the renderers produce it) with this frame's ImGui
  // draw data on top. A frame whose size differs from the swapchain's (a resize in between) is copied where
  // they overlap, the rest cleared to `background`, unless it is to be stretched (PresentOptions). Recreates
  // the swapchain when the window's size changed or the surface reports it out of date.
  void present(const ImageRGBA& frame, Vec3 background, const PresentOptions& options = {});

  // Swapchain size (the window's framebuffer size in pixels).
  uint32_t width() const { return extent_.width; }
  uint32_t height() const { return extent_.height; }
  VkFormat format() const { return format_; }
  VkPresentModeKHR presentMode() const { return present_mode_; }

 private:
  void createSwapchain();
  void release();
  void destroySwapchainViews();

  gpu::Context& ctx_;
  GLFWwindow* window_;
  VkSurfaceKHR surface_ = VK_NULL_HANDLE;
  VkSwapchainKHR swapchain_ = VK_NULL_HANDLE;
  VkFormat format_ = VK_FORMAT_UNDEFINED;
  VkPresentModeKHR present_mode_ = VK_PRESENT_MODE_FIFO_KHR;
  VkExtent2D extent_{0, 0};
  bool bgra_ = true;            // byte order of the swapchain format
  bool can_read_back_ = false;  // swapchain images allow TRANSFER_SRC
  uint32_t min_images_ = 2;
  std::vector<VkImage> images_;
  std::vector<VkImageView> views_;
  std::vector<VkFramebuffer> framebuffers_;
  std::vector<VkSemaphore> render_done_;  // one per swapchain image: present waits on the one of its image
  VkRenderPass render_pass_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkSemaphore acquired_ = VK_NULL_HANDLE;
  gpu::Buffer upload_, readback_;
  // What upload_ holds: the converted frame's size in the buffer, whether it was stretched; valid after a
  // conversion until the swapchain's size changes.
  uint32_t uploaded_w_ = 0, uploaded_h_ = 0;
  bool uploaded_stretch_ = false, uploaded_valid_ = false;
  bool imgui_glfw_ = false, imgui_vulkan_ = false;
};

}  // namespace sf::view
