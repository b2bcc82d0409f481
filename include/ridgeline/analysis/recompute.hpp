#pragma once
/// The recomputation planner: for every activation a layer saves for backward, keep it,
/// recompute it, or offload it to host memory; the exact best choice under a memory budget
/// (docs/training.md#recomputation-planner).
#include <array>
#include <cstdint>
#include <optional>

#include "ridgeline/analysis/training.hpp"

namespace ridgeline::analysis {

enum class TensorAction : std::uint8_t { keep, recompute, offload };
std::string_view name(TensorAction a) noexcept;

/// One activation a layer keeps for its backward, per micro-batch on one GPU.
struct SavedTensor {
  const char* name = "";
  const char* producers = "";  ///< the forward ops that rebuild it
  double bytes = 0;
  double recompute_s = 0;      ///< realistic forward time of its producers
  double offload_s = 0;        ///< bytes over the host link, one way
  bool memory_bound = false;   ///< produced by memory-bound ops only
  bool has_comm = false;       ///< rebuilding it repeats a collective
};

struct RecomputePlan {
  static constexpr int kMax = 12;
  std::array<TensorAction, kMax> action{};
  double memory_bytes = 0;       ///< kept activations, per layer per micro-batch
  double recompute_s = 0;        ///< per layer per micro-batch
  double offload_exposed_s = 0;  ///< transfers not hidden behind the layer's compute
  double added_s = 0;            ///< recompute + exposed offload
  bool feasible = false;         ///< within the budget
};

struct RecomputeResult {
  std::array<SavedTensor, RecomputePlan::kMax> tensors{};
  int count = 0;
  double layer_input_bytes = 0;  ///< always kept: the checkpoint every recomputation starts from
  double t_layer_forward_s = 0;  ///< realistic, one layer, one micro-batch
  double t_layer_backward_s = 0;
  double host_link_Bps = 0;
  double budget_bytes = 0;       ///< activation memory allowed per layer per micro-batch
  std::int64_t layers_in_memory = 0;  ///< layers x in-flight micro-batches on the first stage
  RecomputePlan best, none, selective, full;
  std::int64_t plans_evaluated = 0;
  std::array<int, RecomputePlan::kMax> by_cost_per_byte{};  ///< tensor indices, cheapest to rebuild per byte first
};

/// Plans recomputation for `cfg` (whose own `recompute` is ignored). The budget is the
/// memory left per layer per in-flight micro-batch after parameters, gradients, optimizer
/// states and the margin, unless `budget_bytes` is given. Throws InputError for plans the
/// planner does not cover (MLA, MoE).
RecomputeResult plan_recompute(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg,
                               std::optional<double> budget_bytes);

}  // namespace ridgeline::analysis
