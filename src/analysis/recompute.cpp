#include "ridgeline/analysis/recompute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string_view>

#include "ridgeline/core/error.hpp"

namespace ridgeline::analysis {

std::string_view name(TensorAction a) noexcept {
  switch (a) {
    case TensorAction::keep: return "keep";
    case TensorAction::recompute: return "recompute";
    case TensorAction::offload: return "offload";
  }
  return "keep";
}

RecomputeResult plan_recompute(const model::ModelConfig& m, const hw::System& sys_in, const TrainConfig& cfg_in,
                               std::optional<double> budget_bytes) {
  if (m.is_mla() || m.is_moe()) {
    throw InputError(fmt::format("--model: the recomputation planner covers dense models with standard attention; {} is {}",
                                 m.name, m.is_mla() ? "MLA" : "a mixture of experts"));
  }
  TrainConfig cfg = cfg_in;
  cfg.recompute = Recompute::none;
  auto tr = std::make_unique<TrainResult>();
  train(m, sys_in, cfg, *tr);
  const hw::System sys = training_system(sys_in, cfg);
  const hw::ChipSpec& chip = sys.chip;
  const model::Graph& g = tr->graph;
  const ops::Rates rates(chip);

  RecomputeResult r;
  const double tp = static_cast<double>(cfg.tp);
  const double T = static_cast<double>(cfg.seq * cfg.micro_batch);
  const double h = static_cast<double>(m.hidden), hd = static_cast<double>(m.head_dim);
  const double heads = static_cast<double>(m.heads) / tp, kvh = std::max(1.0, static_cast<double>(m.kv_heads) / tp);
  const double I = static_cast<double>(m.intermediate) / tp;
  const double outside = cfg.sequence_parallel ? T / tp : T;  // tokens of norms and residuals on this GPU
  const bool gelu = m.mlp == model::MlpKind::gelu;

  // Realistic forward time of the named ops of the first layer group.
  auto time_of = [&](std::initializer_list<std::string_view> names, bool* comm) {
    double t = 0;
    for (int i = 0; i < g.op_count; ++i) {
      if (g.ops[i].group != 1) continue;  // group 0 is the embedding
      for (auto n : names) {
        if (n == g.ops[i].name) {
          t += tr->fwd[i].parts.realistic(rates, model::kernel_class(g.ops[i].cls));
          if (g.ops[i].cls == model::OpClass::comm && comm) *comm = true;
        }
      }
    }
    return t;
  };
  struct Item {
    const char* name;
    std::initializer_list<std::string_view> ops;
    const char* text;
    double bytes;
    bool memory_bound;
  };
  // RoPE rewrites Q and K in place: the rotated pair is what attention's backward needs.
  const std::initializer_list<std::string_view> qk_ops = {"q_proj", "k_proj", "rope"};
  const std::initializer_list<std::string_view> res_ops = {"o_proj", "attn_allreduce", "attn_reducescatter", "attn_residual"};
  Item items[] = {
      {"attn_norm_out", {"input_norm"}, "input_norm", 2 * T * h / (cfg.sequence_parallel ? tp : 1), true},
      {"q_k_rotated", qk_ops, "q_proj, k_proj, rope", 2 * T * (heads + kvh) * hd, false},
      {"v", {"v_proj"}, "v_proj", 2 * T * kvh * hd, false},
      {"attn_out", {"attention"}, "attention", 2 * T * heads * hd + 4 * T * heads, false},
      {"attn_residual_out", res_ops, "o_proj, all-reduce, residual add", 2 * outside * h, false},
      {"mlp_norm_out", {"post_attention_norm"}, "post_attention_norm", 2 * outside * h, true},
      {"gate_out", {"gate_proj"}, "gate_proj", 2 * T * I, false},
      {"up_out", {"up_proj"}, "up_proj", 2 * T * I, false},
      {"act_out", {"silu_mul", "gelu_mul"}, "silu_mul", 2 * T * I, true},
  };
  for (const Item& it : items) {
    if (gelu && std::string_view(it.name) == "gate_out") continue;
    SavedTensor& t = r.tensors[r.count++];
    t.name = it.name;
    t.producers = it.text;
    t.bytes = it.bytes;
    bool comm = false;
    t.recompute_s = time_of(it.ops, &comm);
    if (gelu && std::string_view(it.name) == "act_out") t.recompute_s = time_of({"gelu"}, &comm);
    t.has_comm = comm;
    t.memory_bound = it.memory_bound;
  }
  r.layer_input_bytes = 2 * outside * h;

  // One layer's compute windows, and the host link (PCIe) that offloads use.
  const double layers = static_cast<double>(m.layers);
  for (int i = 0; i < g.op_count; ++i) {
    if (g.ops[i].group != 1) continue;
    const hw::KernelClass k = model::kernel_class(g.ops[i].cls);
    r.t_layer_forward_s += tr->fwd[i].parts.realistic(rates, k);
    r.t_layer_backward_s += tr->bwd[i].parts.realistic(rates, k);
  }
  const int host = chip.link_index(hw::LinkScope::host);
  r.host_link_Bps = host >= 0 ? chip.links[host].chip_bandwidth_Bps() * chip.efficiency.link : 0;
  for (int i = 0; i < r.count; ++i) {
    r.tensors[i].offload_s = r.host_link_Bps > 0 ? r.tensors[i].bytes / r.host_link_Bps : 1e30;
  }

  // The budget: what is left for activations, per layer per in-flight micro-batch.
  const auto& mem = tr->memory;
  r.layers_in_memory = static_cast<std::int64_t>(std::ceil(layers / static_cast<double>(cfg.pp)) * mem.in_flight_micro_batches);
  if (budget_bytes) {
    r.budget_bytes = *budget_bytes;
  } else {
    const double fixed = (mem.params_bytes + mem.grads_bytes + mem.optimizer_bytes) * (1 + cfg.memory_margin);
    const double left = mem.capacity_bytes - fixed;
    r.budget_bytes = left / static_cast<double>(std::max<std::int64_t>(1, r.layers_in_memory)) - r.layer_input_bytes;
    if (!(r.budget_bytes > 0)) {
      throw InputError(fmt::format(
          "--budget: parameters, gradients and optimizer states ({:.3g} GB with the margin) leave no room for activations in "
          "{:.3g} GB: shard more (--tp, --pp, --zero) or give --budget",
          fixed / 1e9, mem.capacity_bytes / 1e9));
    }
  }
  if (!(r.budget_bytes > 0)) throw InputError(fmt::format("--budget: {} bytes: expected more than zero", r.budget_bytes));

  // Every combination of actions (3^n, n <= 9): exact.
  auto evaluate = [&](const std::array<TensorAction, RecomputePlan::kMax>& act) {
    RecomputePlan p;
    p.action = act;
    double off = 0;
    for (int i = 0; i < r.count; ++i) {
      const auto& t = r.tensors[i];
      switch (act[i]) {
        case TensorAction::keep: p.memory_bytes += t.bytes; break;
        case TensorAction::recompute: p.recompute_s += t.recompute_s; break;
        case TensorAction::offload: off += t.offload_s; break;
      }
    }
    // Offloads leave during the layer's forward and come back during its backward, on
    // one host link per direction: what does not fit in those windows is exposed.
    p.offload_exposed_s = std::max(0.0, off - r.t_layer_forward_s) + std::max(0.0, off - r.t_layer_backward_s);
    p.added_s = p.recompute_s + p.offload_exposed_s;
    p.feasible = p.memory_bytes <= r.budget_bytes;
    return p;
  };
  std::array<TensorAction, RecomputePlan::kMax> act{};
  std::int64_t total = 1;
  for (int i = 0; i < r.count; ++i) total *= 3;
  bool found = false;
  for (std::int64_t code = 0; code < total; ++code) {
    std::int64_t c = code;
    for (int i = 0; i < r.count; ++i, c /= 3) act[i] = static_cast<TensorAction>(c % 3);
    RecomputePlan p = evaluate(act);
    ++r.plans_evaluated;
    if (!p.feasible) continue;
    // Ties go to the plan that changes fewer tensors (keeping is free and simplest).
    int changes = 0, best_changes = 0;
    for (int i = 0; i < r.count; ++i) {
      changes += act[i] != TensorAction::keep;
      best_changes += r.best.action[i] != TensorAction::keep;
    }
    if (!found || p.added_s < r.best.added_s - 1e-15 || (std::abs(p.added_s - r.best.added_s) <= 1e-15 && changes < best_changes)) {
      r.best = p;
      found = true;
    }
  }
  if (!found) {
    // Nothing fits: the smallest-memory plan, marked infeasible.
    act.fill(TensorAction::recompute);
    r.best = evaluate(act);
  }
  std::array<TensorAction, RecomputePlan::kMax> none{}, sel{}, full{};
  for (int i = 0; i < r.count; ++i) {
    full[i] = TensorAction::recompute;
    const std::string_view n = r.tensors[i].name;
    // Megatron-style selective: the attention core and the memory-bound ops.
    sel[i] = (r.tensors[i].memory_bound || n == "attn_out") ? TensorAction::recompute : TensorAction::keep;
  }
  r.none = evaluate(none);
  r.selective = evaluate(sel);
  r.full = evaluate(full);
  for (int i = 0; i < r.count; ++i) r.by_cost_per_byte[i] = i;
  std::sort(r.by_cost_per_byte.begin(), r.by_cost_per_byte.begin() + r.count, [&](int a, int b) {
    return r.tensors[a].recompute_s / r.tensors[a].bytes < r.tensors[b].recompute_s / r.tensors[b].bytes;
  });
  return r;
}

}  // namespace ridgeline::analysis
