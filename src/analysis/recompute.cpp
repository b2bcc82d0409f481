#include "ridgeline/analysis/recompute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string_view>

#include "ridgeline/core/error.hpp"

namespace ridgeline::analysis {

namespace {

RecomputePlan as_plan(const RecomputeChoice& c, double budget) {
  RecomputePlan p;
  p.action = c.action;
  p.memory_bytes = c.kept_bytes;
  p.recompute_s = c.recompute_s;
  p.offload_exposed_s = c.offload_exposed_s;
  p.added_s = c.added.realistic_s;
  p.feasible = c.kept_bytes <= budget;
  return p;
}

}  // namespace

RecomputeResult plan_recompute(const model::ModelConfig& m, const hw::System& sys_in, const TrainConfig& cfg_in,
                               std::optional<double> budget_bytes) {
  TrainConfig cfg = cfg_in;
  cfg.recompute = Recompute::automatic;
  cfg.offload = true;
  auto tr = std::make_unique<TrainResult>();
  train(m, sys_in, cfg, *tr);
  const LayerTensors& lt = tr->tensors;

  RecomputeResult r;
  r.count = lt.count;
  for (int i = 0; i < lt.count; ++i) r.tensors[i] = lt.tensors[i];
  r.layer_input_bytes = lt.layer_input_bytes;
  r.t_layer_forward_s = lt.layer_forward.realistic_s;
  r.t_layer_backward_s = lt.layer_backward.realistic_s;
  r.host_link_Bps = lt.host_link_Bps;
  const auto& mem = tr->memory;
  r.layers_in_memory = static_cast<std::int64_t>(std::ceil(static_cast<double>(m.layers) / static_cast<double>(cfg.pp)) *
                                                 mem.in_flight_micro_batches);
  if (budget_bytes) {
    r.budget_bytes = *budget_bytes;
  } else {
    r.budget_bytes = tr->activation_budget_bytes;
    if (!(r.budget_bytes > 0)) {
      throw InputError(fmt::format(
          "--budget: parameters, gradients, optimizer states and the other activations ({:.3g} GB with the margin) leave no room "
          "for a layer's activations in {:.3g} GB: shard more (--tp, --pp, --zero) or give --budget",
          (mem.params_bytes + mem.grads_bytes + mem.optimizer_bytes) * (1 + cfg.memory_margin) / 1e9, mem.capacity_bytes / 1e9));
    }
  }
  if (!(r.budget_bytes > 0)) throw InputError(fmt::format("--budget: {} bytes: expected more than zero", r.budget_bytes));

  // The front of every keep/recompute/offload combination (3^n, exact): the fastest that fits.
  r.best = as_plan(tr->frontier.best_within(r.budget_bytes), r.budget_bytes);
  r.combinations = tr->frontier.combinations;
  r.priced = tr->frontier.priced;
  r.kinds = lt.kinds;
  r.kind_count = lt.kind_count;
  std::array<TensorAction, LayerTensors::kMax> none{}, sel{}, full{};
  for (int i = 0; i < r.count; ++i) {
    full[i] = TensorAction::recompute;
    const std::string_view n = r.tensors[i].name;
    // The reference plan "selective" of this command: seed 000's ranking, the memory-bound
    // ops and the attention output (train --recompute selective is Megatron's, the core only).
    sel[i] = (r.tensors[i].memory_bound || n == "attn_out") ? TensorAction::recompute : TensorAction::keep;
  }
  r.none = as_plan(evaluate_choice(lt, none), r.budget_bytes);
  r.selective = as_plan(evaluate_choice(lt, sel), r.budget_bytes);
  r.full = as_plan(evaluate_choice(lt, full), r.budget_bytes);
  for (int i = 0; i < r.count; ++i) r.by_cost_per_byte[i] = i;
  std::sort(r.by_cost_per_byte.begin(), r.by_cost_per_byte.begin() + r.count, [&](int a, int b) {
    return r.tensors[a].recompute_s / r.tensors[a].bytes < r.tensors[b].recompute_s / r.tensors[b].bytes;
  });
  return r;
}

}  // namespace ridgeline::analysis
