#pragma once
/// The recomputation planner: for every activation a layer saves for backward, keep it,
/// recompute it, or offload it to host memory; the exact best choice under a memory budget
/// (docs/training.md#recomputation-planner). `train --recompute auto` applies the same
/// choices (training.hpp: LayerTensors, RecomputeFrontier).
#include <array>
#include <cstdint>
#include <optional>

#include "ridgeline/analysis/training.hpp"

namespace ridgeline::analysis {

struct RecomputePlan {
  static constexpr int kMax = LayerTensors::kMax;
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
  double t_layer_forward_s = 0;  ///< realistic, one layer, one micro-batch (averaged over the kinds)
  double t_layer_backward_s = 0;
  double host_link_Bps = 0;
  double budget_bytes = 0;       ///< activation memory allowed per layer per micro-batch
  std::int64_t layers_in_memory = 0;  ///< layers x in-flight micro-batches on the first stage
  RecomputePlan best, none, selective, full;
  std::array<LayerKind, LayerTensors::kMaxKinds> kinds{};  ///< the kinds of layer and their tensors' ranges
  int kind_count = 0;
  double combinations = 0;     ///< choices the front covers exactly (2^n... 3^n per kind, multiplied)
  std::int64_t priced = 0;     ///< partial choices the dynamic programme priced
  std::array<int, RecomputePlan::kMax> by_cost_per_byte{};  ///< tensor indices, cheapest to rebuild per byte first
};

/// Plans recomputation for `cfg` (whose own `recompute` is ignored), offloads allowed. The
/// budget is what `train --recompute auto` computes — the memory left per layer per
/// in-flight micro-batch after parameters, gradients, optimizer states, the other
/// activations and the margin — unless `budget_bytes` is given. Per-layer figures are
/// averages over the kinds of layer (dense and MoE, full and sliding-window attention),
/// weighted by their layer counts.
RecomputeResult plan_recompute(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg,
                               std::optional<double> budget_bytes);

}  // namespace ridgeline::analysis
