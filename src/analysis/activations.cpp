// The activations one layer keeps for backward, and every choice of keeping, recomputing or
// offloading them (docs/training.md#recomputation): shared by `train --recompute auto`, the
// plan search and `ridgeline recompute`.
#include <algorithm>
#include <array>
#include <string_view>

#include "ridgeline/analysis/training.hpp"

namespace ridgeline::analysis {

std::string_view name(TensorAction a) noexcept {
  switch (a) {
    case TensorAction::keep: return "keep";
    case TensorAction::recompute: return "recompute";
    case TensorAction::offload: return "offload";
  }
  return "keep";
}

const char* recompute_planner_gap(const model::ModelConfig& m) noexcept {
  if (m.is_mla()) return "MLA";
  if (m.is_moe()) return "a mixture of experts";
  if (m.sliding_layers > 0 && m.sliding_layers < m.layers) return "a model with layers of two kinds (sliding and full attention)";
  return "";
}

void layer_tensors(const model::ModelConfig& m, const TrainConfig& cfg, const model::Graph& g, const OpTimesArray& fwd,
                   const OpTimesArray& bwd, const ops::Rates& rates, const hw::ChipSpec& chip, LayerTensors& out) noexcept {
  out.count = 0;
  out.uncovered = recompute_planner_gap(m);
  if (*out.uncovered != '\0') return;
  // The layers' group: the one the first attention op belongs to.
  int group = -1;
  for (int i = 0; i < g.op_count && group < 0; ++i) {
    if (g.ops[i].block == model::Block::attention) group = g.ops[i].group;
  }
  if (group < 0) {
    out.uncovered = "a model without attention layers";
    return;
  }
  const double tp = static_cast<double>(cfg.tp);
  const double s = static_cast<double>(cfg.seq) / static_cast<double>(cfg.cp);
  const double b = static_cast<double>(cfg.micro_batch);
  const double T = s * b;  // tokens of this GPU's micro-batch
  const double h = static_cast<double>(m.hidden), hd = static_cast<double>(m.head_dim);
  const double a = static_cast<double>(m.heads);
  const double heads = a / tp, kvh = std::max(1.0, static_cast<double>(m.kv_heads) / tp);
  const double I = static_cast<double>(m.intermediate) / tp;
  const double outside = cfg.sequence_parallel ? T / tp : T;  // tokens of norms and residuals on this GPU
  const bool gelu = m.mlp == model::MlpKind::gelu;

  // The layer's forward and backward (no recomputation) on the chip: the windows offloads
  // hide in.
  out.layer_forward = out.layer_backward = {};
  for (int i = 0; i < g.op_count; ++i) {
    if (g.ops[i].group != group) continue;
    const hw::KernelClass k = model::kernel_class(g.ops[i].cls);
    const ops::TimeParts& f = fwd[i].parts;
    const ops::TimeParts& w = bwd[i].parts;
    out.layer_forward.lower_s += f.lower();
    out.layer_forward.upper_s += f.upper(rates, k);
    out.layer_forward.realistic_s += f.realistic(rates, k);
    out.layer_backward.lower_s += w.lower();
    out.layer_backward.upper_s += w.upper(rates, k);
    out.layer_backward.realistic_s += w.realistic(rates, k);
  }
  const int host = chip.link_index(hw::LinkScope::host);
  out.host_link_peak_Bps = host >= 0 ? chip.links[host].chip_bandwidth_Bps() : 0;
  out.host_link_Bps = host >= 0 ? out.host_link_peak_Bps * chip.efficiency.link : 0;

  struct Item {
    const char* name;
    std::array<std::string_view, 4> ops;  // the producer ops' names ("" past the last)
    const char* text;
    double bytes;
    bool memory_bound;
  };
  // 16-bit activations, 2 bytes (Korthikanti et al.'s accounting, tensor by tensor). RoPE
  // rewrites Q and K in place: the rotated pair is what attention's backward needs.
  // FlashAttention keeps its output and the fp32 log-sum-exp per row; naive attention the
  // s x s softmax output (and with dropout its mask and output).
  const double core = cfg.attention == ops::AttentionImpl::naive ? (cfg.dropout ? 5 : 2) * a * s * s * b / tp : 4 * T * heads;
  const Item items[] = {
      {"attn_norm_out", {"input_norm"}, "input_norm", 2 * T * h / (cfg.sequence_parallel ? tp : 1), true},
      {"q_k_rotated", {"q_proj", "k_proj", "rope"}, "q_proj, k_proj, rope", 2 * T * (heads + kvh) * hd, false},
      {"v", {"v_proj"}, "v_proj", 2 * T * kvh * hd, false},
      {"attn_out", {"attention"}, "attention", 2 * T * heads * hd + core, false},
      {"attn_residual_out", {"o_proj", "attn_allreduce", "attn_reducescatter", "attn_residual"},
       "o_proj, all-reduce, residual add", 2 * outside * h, false},
      {"mlp_norm_out", {"post_attention_norm"}, "post_attention_norm", 2 * outside * h, true},
      {"gate_out", {"gate_proj"}, "gate_proj", 2 * T * I, false},
      {"up_out", {"up_proj"}, "up_proj", 2 * T * I, false},
      {"act_out", gelu ? std::array<std::string_view, 4>{"gelu"} : std::array<std::string_view, 4>{"silu_mul", "gelu_mul"},
       gelu ? "gelu" : "silu_mul", 2 * T * I, true},
  };
  for (const Item& it : items) {
    if (gelu && std::string_view(it.name) == "gate_out") continue;
    SavedTensor& t = out.tensors[out.count++];
    t = SavedTensor{};
    t.name = it.name;
    t.producers = it.text;
    t.bytes = it.bytes;
    t.memory_bound = it.memory_bound;
    for (int i = 0; i < g.op_count; ++i) {
      if (g.ops[i].group != group) continue;
      const std::string_view op_name(g.ops[i].name);
      if (op_name.empty() || std::find(it.ops.begin(), it.ops.end(), op_name) == it.ops.end()) continue;
      const hw::KernelClass k = model::kernel_class(g.ops[i].cls);
      const ops::TimeParts& p = fwd[i].parts;
      const double lower = p.lower();
      t.recompute.lower_s += lower;
      t.recompute.upper_s += p.upper(rates, k);
      t.recompute.realistic_s += p.realistic(rates, k);
      t.matrix_flops += g.ops[i].cost.matrix_flops;
      t.kind_s[static_cast<int>(g.ops[i].cls)] += lower;
      if (g.ops[i].cls == model::OpClass::comm) {
        t.comm_s += lower;
        t.has_comm = true;
      }
    }
    t.recompute_s = t.recompute.realistic_s;
    t.offload_s = out.host_link_Bps > 0 ? t.bytes / out.host_link_Bps : 1e30;
    t.offload_peak_s = out.host_link_peak_Bps > 0 ? t.bytes / out.host_link_peak_Bps : 1e30;
  }
  out.layer_input_bytes = 2 * outside * h;
  out.fixed_bytes = cfg.dropout ? 2 * outside * h : 0;  // two 1-byte dropout masks on the (tokens, h) residual stream
}

RecomputeChoice evaluate_choice(const LayerTensors& t, const std::array<TensorAction, LayerTensors::kMax>& action) noexcept {
  RecomputeChoice c;
  c.action = action;
  double off = 0, off_peak = 0;
  for (int i = 0; i < t.count; ++i) {
    const SavedTensor& x = t.tensors[i];
    switch (action[i]) {
      case TensorAction::keep: c.kept_bytes += x.bytes; break;
      case TensorAction::recompute:
        c.added.lower_s += x.recompute.lower_s;
        c.added.upper_s += x.recompute.upper_s;
        c.added.realistic_s += x.recompute.realistic_s;
        c.recompute_s += x.recompute_s;
        c.matrix_flops += x.matrix_flops;
        for (int k = 0; k < 6; ++k) c.kind_s[k] += x.kind_s[k];
        c.comm_s += x.comm_s;
        ++c.changes;
        break;
      case TensorAction::offload:
        off += x.offload_s;
        off_peak += x.offload_peak_s;
        ++c.changes;
        break;
    }
  }
  // Offloads leave during the layer's forward and come back during its backward, one host
  // link per direction: what does not fit in those windows is exposed (with no overlap at
  // all, the upper bound, both trips are).
  c.offload_exposed_s = std::max(0.0, off - t.layer_forward.realistic_s) + std::max(0.0, off - t.layer_backward.realistic_s);
  c.added.realistic_s += c.offload_exposed_s;
  c.added.lower_s += std::max(0.0, off_peak - t.layer_forward.lower_s) + std::max(0.0, off_peak - t.layer_backward.lower_s);
  c.added.upper_s += 2 * off;
  return c;
}

void build_frontier(const LayerTensors& t, bool offload, RecomputeFrontier& f) noexcept {
  f.count = 0;
  f.evaluated = 0;
  if (t.count == 0) {
    f.plans[0] = evaluate_choice(t, {});
    f.count = 1;
    return;
  }
  // The best choice for each kept set (what it keeps fixes its bytes): least added time,
  // then fewest tensors changed.
  static_assert((1 << LayerTensors::kMax) <= RecomputeFrontier::kMax);
  const int n = t.count;
  const int sets = 1 << n;
  const int base = offload ? 3 : 2;
  std::int64_t total = 1;
  for (int i = 0; i < n; ++i) total *= base;
  std::array<bool, RecomputeFrontier::kMax> have{};
  std::array<TensorAction, LayerTensors::kMax> act{};
  for (std::int64_t code = 0; code < total; ++code) {
    std::int64_t c = code;
    int kept = 0;
    for (int i = 0; i < n; ++i, c /= base) {
      act[i] = static_cast<TensorAction>(c % base);
      if (act[i] == TensorAction::keep) kept |= 1 << i;
    }
    const RecomputeChoice x = evaluate_choice(t, act);
    RecomputeChoice& best = f.plans[kept];
    if (!have[kept] || x.added.realistic_s < best.added.realistic_s ||
        (x.added.realistic_s == best.added.realistic_s && x.changes < best.changes)) {
      best = x;
      have[kept] = true;
    }
  }
  f.evaluated = total;
  // The front: by kept bytes ascending, each plan faster (then fewer changes) than every
  // plan keeping less.
  std::array<int, RecomputeFrontier::kMax> order;
  for (int k = 0; k < sets; ++k) order[k] = k;
  std::sort(order.begin(), order.begin() + sets, [&](int x, int y) {
    const RecomputeChoice &p = f.plans[x], &q = f.plans[y];
    if (p.kept_bytes != q.kept_bytes) return p.kept_bytes < q.kept_bytes;
    if (p.added.realistic_s != q.added.realistic_s) return p.added.realistic_s < q.added.realistic_s;
    return p.changes < q.changes;
  });
  std::array<RecomputeChoice, RecomputeFrontier::kMax>& plans = f.plans;
  // Compacting in place would overwrite plans still to be read: pick the indices first.
  std::array<int, RecomputeFrontier::kMax> keep_idx;
  int count = 0;
  for (int k = 0; k < sets; ++k) {
    const RecomputeChoice& p = plans[order[k]];
    if (count > 0) {
      const RecomputeChoice& last = plans[keep_idx[count - 1]];
      const bool better = p.added.realistic_s < last.added.realistic_s ||
                          (p.added.realistic_s == last.added.realistic_s && p.changes < last.changes);
      if (!better) continue;
    }
    keep_idx[count++] = order[k];
  }
  // Move the kept plans to the front of the array, in order (indices ascending in kept
  // bytes but not in position: go through a copy of each, which is small).
  for (int k = 0; k < count; ++k) {
    const int from = keep_idx[k];
    if (from == k) continue;
    std::swap(plans[k], plans[from]);
    // The plan that was at k moved to `from`: fix any later index that pointed at k.
    for (int j = k + 1; j < count; ++j) {
      if (keep_idx[j] == k) keep_idx[j] = from;
    }
  }
  f.count = count;
}

const RecomputeChoice& RecomputeFrontier::best_within(double budget) const noexcept {
  // The last plan keeping at most the budget is the fastest that fits.
  int lo = 0, hi = count;  // first plan over the budget
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (plans[mid].kept_bytes <= budget) lo = mid + 1;
    else hi = mid;
  }
  return plans[lo > 0 ? lo - 1 : 0];
}

}  // namespace ridgeline::analysis
