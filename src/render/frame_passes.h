// Passes that modules contribute to the Vulkan frame: a neural generator's network and decode, a live hull's
// effects, the level-of-detail pool's gather, a decoder character's networks and UV lift, the trainer's
// activation and its backward tail, the post model and the hull outline over the image. A module declares
// each of its passes with the resources it reads and writes (the frame's own, FrameResources, or its own by
// name) and a callback that records it; the frame graph (render/frame_graph.h) puts the barriers between
// them as between the renderer's own passes, and lastFrameGraph() shows them by name. A pass of several
// dispatches keeps its own barriers between them.
//
// Where they go: GpuSplatSource passes before preprocess (each object writes its own part of the splat
// slots), FrameTail passes after the raster, ImagePass passes between the raster and the readback (and again
// after the raster slices of a frame drawn in slices). Image passes follow one another in the order given;
// the GpuSplatSource passes of different contributors are interleaved by their position in their
// contributor's list (every contributor's first pass, then every second one, ...): each contributor's passes
// keep their order, and the same step of independent objects (200 live hulls' effects) shares one stretch
// between barriers. No GPU types here: the command buffer is a VkCommandBuffer passed as void*.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "render/frame_graph.h"

namespace sf {

// The frame's own resources, as a contributed pass declares them.
struct FrameResources {
  FrameResource splats;     // every object's slots (centres, covariances, opacities, SH, shape words)
  FrameResource projected;  // preprocess's per-slot records (screen mean, conic, colour, depth, tile rect)
  FrameResource ranges;     // each tile's [begin, end) in the tile pairs
  FrameResource pairs;      // the tile lists: (depth, slot) pairs sorted per tile
  FrameResource counters;   // the frame's counters (pairs, overflow)
  FrameResource image;  // the raster's image and per-pixel planes (depth, final transmittance, last splat)
};

class FramePasses {
 public:
  FramePasses(FrameGraph& graph, const FrameResources& frame, void* command_buffer)
      : graph_(graph), frame_(frame), cmd_(command_buffer) {}
  FramePasses(const FramePasses&) = delete;
  FramePasses& operator=(const FramePasses&) = delete;

  const FrameResources& frame() const { return frame_; }
  // A resource of the contributor's own (a buffer between its passes). The same name is the same resource in
  // one frame, so two modules' passes that meet in a buffer name it alike; name it after the module
  // ("training: gradients").
  FrameResource resource(const std::string& name) { return graph_.resource(name); }
  // Adds a pass of the current contributor; `record` gets the frame's command buffer.
  void add(std::string name, std::vector<FrameResource> reads, std::vector<FrameResource> writes,
           std::function<void(void* command_buffer)> record);

  // The frame's side: starts the next contributor's list, then adds every list's passes to the graph,
  // interleaved as the top of the file says (independent contributors: GpuSplatSource objects) or list after
  // list (a chain: image passes, each reading what the one before wrote). Returns the passes added.
  enum class Order { kInterleaved, kInSequence };
  void nextContributor() { lists_.emplace_back(); }
  size_t addToGraph(Order order);

 private:
  struct Pass {
    std::string name;
    std::vector<FrameResource> reads, writes;
    std::function<void(void*)> record;
  };
  FrameGraph& graph_;
  FrameResources frame_;
  void* cmd_;
  std::vector<std::vector<Pass>> lists_;
};

}  // namespace sf
