// The Vulkan executor's planner (internal to src/neural/vulkan_*.cpp): the passes that turn a graph and one
// set of inputs into a Plan (vulkan_lowering.h), each a function over the plan in progress (PlanState). In
// the order buildPlanOnce runs them:
//
//   foldStatics      the dry run on the CPU: every value's type and shape; static values become constants
//   linkValues       who produces each value and who reads it
//   fuseEpilogues    an activation right after a matrix product (its only reader) goes into its epilogue
//   findAliases      the nodes the GPU runs; reshapes, same-type casts and those activations share storage
//   composeMoves     a data-movement node read only by data-movement nodes is composed into them
//   findViews        one read only by elementwise nodes becomes a strided view of its source (or an alias)
//   dropDeadNodes    nodes whose outputs nothing reads any more
//   fuseChains       chains of elementwise float operators become one fused dispatch
//   findStoredReads  the stored values each node reads
//   assignWaves      waves of independent nodes (one barrier per wave, not per node)
//   lastUses         liveness: the last wave that reads each stored value
//   allocate         constants and inputs placed, then wave by wave: each node's outputs placed and the node
//                    lowered, and the space of values no later wave reads given back
//   finishPlan       the arena's size and the outputs' places
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "neural/cpu_executor.h"
#include "neural/vulkan_lowering.h"

namespace sf::nn::vulkan {

// Waves of independent nodes: a node runs one wave after the latest wave that produced a value it reads.
struct Waves {
  std::vector<size_t> of;     // per node: its wave
  std::vector<size_t> order;  // node indices in run order: by wave, in graph order within one
  size_t count = 0;
};

// The plan in progress: the graph, the plan being filled, and what each pass found (named beside it).
// Lowering `low` holds what the lowering reads besides the slots (sizes_ and shapes_ from foldStatics,
// acts_ from fuseEpilogues, absorbed_ from composeMoves, views_ from findViews, chains_ from fuseChains).
struct PlanState {
  PlanState(const Graph& graph, Plan& plan);
  PlanState(const PlanState&) = delete;
  PlanState& operator=(const PlanState&) = delete;

  const Graph& g;
  Plan& plan;
  Lowering low;

  std::set<std::string>
      static_names;  // foldStatics: values computed from initializers and keyed inputs alone
  ValueTypes info;   // foldStatics: every value's type and shape
  std::map<std::string, int>
      readers;  // linkValues: reads of each value (one per node input, one per graph output)
  std::map<std::string, const Node*> producer;  // linkValues
  std::map<std::string, std::vector<const Node*>>
      consumers;                    // linkValues: the nodes reading each value, per input
  std::set<const Node*> epilogues;  // fuseEpilogues: activations done in their product's epilogue
  std::map<std::string, std::string>
      root;                      // findAliases, findViews: alias -> the value whose storage it shares
  std::set<const Node*> on_gpu;  // findAliases: the nodes it chose
  std::vector<const Node*>
      gpu_nodes;  // the nodes to run, in graph order: findAliases, pruned by later passes
  std::vector<std::vector<std::string>>
      node_reads;  // findStoredReads: per node of gpu_nodes, the stored values it reads
  Waves waves;     // assignWaves
  std::map<std::string, size_t> last_use;  // lastUses: stored value -> the last wave that reads it

  // The value whose storage `name` shares (itself when it is no alias).
  std::string rootOf(const std::string& name) const;
  // Whether `n` is lowered through a gather map (a data-movement node).
  bool isMapNode(const Node& n) const;
};

// Reads the graph and `inputs`; writes static_names, info, low.sizes_, low.shapes_, plan.statics and
// plan.key_values (keyed inputs). Runs the CPU executor once (its errors propagate).
void foldStatics(const CpuExecutor& cpu, const TensorMap& inputs, PlanState& st);
// Writes readers, producer and consumers.
void linkValues(PlanState& st);
// Reads info, static_names, readers, producer; writes epilogues and low.acts_.
void fuseEpilogues(PlanState& st);
// Reads info, static_names, epilogues; writes root, gpu_nodes and on_gpu. Refuses a Constant, Shape, ... node
// computed from the inputs (NeedsKey when small inputs would make it static).
void findAliases(PlanState& st);
// Reads consumers, readers, root, on_gpu; writes low.absorbed_ and drops those nodes from gpu_nodes.
void composeMoves(PlanState& st);
// Reads consumers, root, on_gpu, info, low.absorbed_; writes low.views_ and root (a whole in-order copy is an
// alias of its source) and drops those nodes from gpu_nodes.
void findViews(PlanState& st);
// Drops from gpu_nodes every node none of whose outputs a graph output or another node reads (through views,
// aliases and composed moves), until none is left.
void dropDeadNodes(PlanState& st);
// Reads gpu_nodes, info, readers, low.views_; writes low.chains_ (keyed by a chain's last node, which stays
// in gpu_nodes) and drops the chains' other nodes from gpu_nodes.
void fuseChains(PlanState& st);
// Writes node_reads: per node of gpu_nodes, the stored values it reads (a view's source, an alias's root,
// a composed move's own sources, a chain's external inputs).
void findStoredReads(PlanState& st);
// The waves of `nodes`, whose stored reads are `reads` (one list per node).
Waves assignWaves(std::span<const Node* const> nodes, const std::vector<std::vector<std::string>>& reads);
// Stored value -> the last wave that reads it; `reads` one list per node, `wave_of` its wave.
std::map<std::string, size_t> lastUses(const std::vector<std::vector<std::string>>& reads,
                                       const std::vector<size_t>& wave_of);
// Reads everything above; writes plan.slots (constants, inputs, each node's outputs, aliases),
// plan.constants, plan.params, plan.dispatches, plan.nodes, plan.waves and plan.input_words.
void allocate(PlanState& st);
// Checks the arena's size and that every output has a place; writes plan.output_words and plan.arena_words.
void finishPlan(PlanState& st);

// Every pass in order, into `plan` (its key and keyed inputs set by the caller). Throws NeedsKey when the
// plan must be keyed on more inputs' values, Error when the graph cannot run on the GPU.
void buildPlanOnce(const CpuExecutor& cpu, Plan& plan, const TensorMap& inputs);
// Plans, keying the plan on the values of small inputs that shapes or folds turn out to need.
void buildPlan(const CpuExecutor& cpu, Plan& plan, const TensorMap& inputs);

}  // namespace sf::nn::vulkan
