// The activations each kind of layer keeps for backward, and the exact front of every choice
// of keeping, recomputing or offloading them (docs/training.md#recomputation): shared by
// `train` (memory), `train --recompute auto`, the plan search and `ridgeline recompute`.
#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <vector>

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

namespace {

// A saved tensor as the accounting defines it: its producers in the graph (by op name),
// its bytes, and whether only memory-bound ops make it.
struct Item {
  const char* name;
  std::array<std::string_view, 6> ops;  // "" past the last
  const char* text;
  double bytes;
  bool memory_bound;
};

struct Items {
  std::array<Item, LayerTensors::kMaxPerKind> at{};
  int count = 0;
  void add(const Item& it) noexcept {
    if (count < LayerTensors::kMaxPerKind) at[count++] = it;
  }
};

// The tensors one layer of a kind saves (16-bit activations, 2 bytes, unless said). `moe`:
// the layer's MLP is a mixture of experts.
void layer_items(const model::ModelConfig& m, const TrainConfig& cfg, const model::Graph& g, int group, bool moe,
                 Items& out, double& core_bytes) noexcept {
  const double tp = static_cast<double>(cfg.tp);
  const double s = static_cast<double>(cfg.seq) / static_cast<double>(cfg.cp);
  const double b = static_cast<double>(cfg.micro_batch);
  const double T = s * b;  // tokens of this GPU's micro-batch
  const double h = static_cast<double>(m.hidden), hd = static_cast<double>(m.head_dim);
  const double a = static_cast<double>(m.heads);
  const double heads = a / tp, kvh = std::max(1.0, static_cast<double>(m.kv_heads) / tp);
  const double outside = cfg.sequence_parallel ? T / tp : T;  // tokens of norms and residuals on this GPU
  const bool gelu = m.mlp == model::MlpKind::gelu;
  const char* act_op = gelu ? "gelu" : (m.mlp == model::MlpKind::gated_gelu ? "gelu_mul" : "silu_mul");
  auto has = [&](std::string_view op) {
    for (int i = 0; i < g.op_count; ++i) {
      if (g.ops[i].group == group && op == g.ops[i].name) return true;
    }
    return false;
  };

  // Attention. FlashAttention keeps its output and the fp32 log-sum-exp per row and head;
  // naive attention the s x s softmax output (and with dropout its 1-byte mask and output).
  const double core = cfg.attention == ops::AttentionImpl::naive ? (cfg.dropout ? 5 : 2) * a * s * s * b / tp : 4 * T * heads;
  core_bytes = core;
  out.add({"attn_norm_out", {"input_norm"}, "input_norm", 2 * outside * h, true});
  if (m.is_mla()) {
    // MLA (training decompresses K and V): the low-rank latents before and after their norms
    // feed the norms' and the up-projections' backward; RoPE is linear, its backward needs
    // no input. The decompressed K carries the shared rotated part per head, as the
    // attention kernel reads it.
    const auto& la = m.mla;
    const double qk = static_cast<double>(la.qk_nope_head_dim + la.qk_rope_head_dim);
    const double lora = static_cast<double>(la.kv_lora_rank), v = static_cast<double>(la.v_head_dim);
    if (la.q_lora_rank > 0) {
      const double ql = static_cast<double>(la.q_lora_rank);
      out.add({"q_a_out", {"q_a_proj"}, "q_a_proj", 2 * T * ql, false});
      out.add({"q_a_norm_out", {"q_a_norm"}, "q_a_norm", 2 * T * ql, true});
      out.add({"q_rotated", {"q_b_proj", "rope"}, "q_b_proj, rope", 2 * T * heads * qk, false});
    } else {
      out.add({"q_rotated", {"q_proj", "rope"}, "q_proj, rope", 2 * T * heads * qk, false});
    }
    out.add({"kv_a_out", {"kv_a_proj"}, "kv_a_proj", 2 * T * lora, false});
    out.add({"kv_a_norm_out", {"kv_a_norm"}, "kv_a_norm", 2 * T * lora, true});
    out.add({"k_v", {"kv_b_proj"}, "kv_b_proj", 2 * T * heads * (qk + v), false});
    out.add({"attn_out", {"attention"}, "attention", 2 * T * heads * v + core, false});
  } else {
    // RoPE rewrites Q and K in place: the rotated pair is what attention's backward needs.
    out.add({"q_k_rotated", {"q_proj", "k_proj", "q_norm", "k_norm", "rope"},
             m.qk_norm ? "q_proj, k_proj, q_norm, k_norm, rope" : "q_proj, k_proj, rope", 2 * T * (heads + kvh) * hd, false});
    out.add({"v", {"v_proj"}, "v_proj", 2 * T * kvh * hd, false});
    out.add({"attn_out", {"attention", "attn_dropout"}, "attention", 2 * T * heads * hd + core, false});
  }
  if (m.parallel_block) {
    // Phi, Cohere, StableLM's parallel residual: the MLP reads the input norm's output (kept
    // above); no norm reads the sum.
  } else if (m.sandwich_norms) {
    // Gemma 2/3: the attention's output feeds a norm of its own (its backward needs that input),
    // whose output the residual add sums with the stream.
    out.add({"attn_proj_out", {"o_proj", "attn_allreduce", "attn_reducescatter"}, "o_proj, all-reduce", 2 * outside * h, false});
    out.add({"attn_residual_out", {"attn_out_norm", "attn_residual"}, "attn_out_norm, residual add", 2 * outside * h, true});
  } else {
    out.add({"attn_residual_out", {"o_proj", "attn_allreduce", "attn_reducescatter", "attn_residual"},
             "o_proj, all-reduce, residual add", 2 * outside * h, false});
  }
  if (!m.parallel_block) out.add({"mlp_norm_out", {"post_attention_norm"}, "post_attention_norm", 2 * outside * h, true});

  // The MLP: gate and up outputs (the activation's backward), the activation's output (the
  // down projection's weight gradient); a GELU MLP keeps its input and output.
  auto dense = [&](double width, const char* gate, const char* up, const char* act, const char* gate_name, const char* up_name,
                   const char* act_name) {
    const double I = width / tp;
    if (!gelu) out.add({gate_name, {gate}, gate, 2 * T * I, false});
    out.add({up_name, {up}, up, 2 * T * I, false});
    out.add({act_name, {act}, act, 2 * T * I, true});
  };
  // Gemma 2/3: the MLP's output feeds its own norm before the residual add.
  if (m.sandwich_norms) {
    out.add({"mlp_proj_out", {"down_proj", "experts_down", "moe_combine", "shared_down", "mlp_allreduce", "mlp_reducescatter"},
             "the MLP's output, all-reduce", 2 * outside * h, false});
  }
  if (!moe) {
    dense(static_cast<double>(m.intermediate), "gate_proj", "up_proj", act_op, "gate_out", "up_out", "act_out");
    return;
  }
  // A mixture of experts: the router's softmax output (its backward) with the chosen gates
  // (bf16) and expert indices (int32) per token; the k·T token-expert pairs this GPU
  // processes as they arrive (after the all-to-all; without expert parallelism the grouped
  // GEMM gathers them from the norm's output, nothing more is kept), the experts' gate-up
  // and activation outputs, and the experts' outputs (the combine's backward needs them for
  // the gates' gradient); the shared experts as a dense MLP.
  const auto& mo = m.moe;
  const double E = static_cast<double>(mo.experts), k = static_cast<double>(mo.experts_per_token);
  const double pairs = T * k, Il = static_cast<double>(mo.intermediate) / tp;
  out.add({"router_probs", {"router", "router_topk"}, "router, top-k", 2 * T * E + T * k * (2 + 4), false});
  if (has("ep_dispatch")) out.add({"dispatched", {"ep_dispatch"}, "ep_dispatch (all-to-all)", 2 * pairs * h, false});
  out.add({"experts_gate_up_out", {"experts_gate_up"}, "experts_gate_up", 2 * pairs * 2 * Il, false});
  out.add({"experts_act_out", {"experts_act"}, "experts_act", 2 * pairs * Il, true});
  out.add({"experts_out", {"experts_down", "ep_combine"}, "experts_down, ep_combine", 2 * pairs * h, false});
  if (mo.shared_experts > 0) {
    dense(static_cast<double>(mo.shared_intermediate), "shared_gate", "shared_up", "shared_act", "shared_gate_out", "shared_up_out",
          "shared_act_out");
  }
}

// Offload time not hidden: out during the layer's forward, back during its backward, one
// host link per direction.
double exposed(double off, double forward, double backward) noexcept {
  return std::max(0.0, off - forward) + std::max(0.0, off - backward);
}

// A partial choice of the dynamic programme: one kind's first tensors decided.
struct State {
  double kept, off, rc;  // bytes kept; realistic offload and recompute seconds
  int changes;
  std::uint64_t code;    // 2 bits per tensor: TensorAction
};

// A choice on a front: per-layer averages so far, one code per kind.
struct Point {
  double kept, added;
  int changes;
  std::array<std::uint64_t, LayerTensors::kMaxKinds> code;
};

// (rc, changes) lexicographically: time first, then fewer tensors changed.
bool lex_less(double r1, int c1, double r2, int c2) noexcept { return r1 < r2 || (r1 == r2 && c1 < c2); }

struct Scratch {
  std::vector<State> cur, next;
  std::vector<double> offs;
  std::vector<std::pair<double, int>> fenwick;  // prefix minimum of (rc, changes) over offload ranks
  std::vector<double> above;                    // the same of rc + 2 off over reversed ranks
  std::vector<Point> front, merged, pairs;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Drops every state another beats or equals in kept bytes, offloaded time and (recompute
// time, changes): what is left is exactly what can still lead to a best choice, since the
// remaining tensors add the same to both and the exposed offload grows with the offloaded
// time. Sort by (kept, off, rc, changes); a state is beaten by an earlier one with no more
// offload and no worse (rc, changes): a prefix minimum over offload ranks (Fenwick tree);
// or with more offload and less rc + 2 off (a suffix minimum).
void prune(std::vector<State>& in, std::vector<State>& out, bool offload, Scratch& sc) {
  std::sort(in.begin(), in.end(), [](const State& x, const State& y) {
    if (x.kept != y.kept) return x.kept < y.kept;
    if (x.off != y.off) return x.off < y.off;
    if (x.rc != y.rc) return x.rc < y.rc;
    return x.changes < y.changes;
  });
  out.clear();
  if (!offload) {
    // Two dimensions: keep a state only if it beats every state keeping less.
    double best_rc = 0;
    int best_ch = 0;
    for (const State& st : in) {
      if (!out.empty() && !lex_less(st.rc, st.changes, best_rc, best_ch)) continue;
      out.push_back(st);
      best_rc = st.rc;
      best_ch = st.changes;
    }
    return;
  }
  sc.offs.clear();
  for (const State& st : in) sc.offs.push_back(st.off);
  std::sort(sc.offs.begin(), sc.offs.end());
  sc.offs.erase(std::unique(sc.offs.begin(), sc.offs.end()), sc.offs.end());
  const int n = static_cast<int>(sc.offs.size());
  sc.fenwick.assign(static_cast<size_t>(n) + 1, {1e300, 1 << 30});
  sc.above.assign(static_cast<size_t>(n) + 1, 1e300);
  for (const State& st : in) {
    const int rank = static_cast<int>(std::lower_bound(sc.offs.begin(), sc.offs.end(), st.off) - sc.offs.begin()) + 1;
    std::pair<double, int> best{1e300, 1 << 30};
    for (int i = rank; i > 0; i -= i & -i) {
      if (lex_less(sc.fenwick[i].first, sc.fenwick[i].second, best.first, best.second)) best = sc.fenwick[i];
    }
    if (!lex_less(st.rc, st.changes, best.first, best.second)) continue;  // beaten or equalled
    // A state that offloads more also beats this one if its extra offload, exposed at worst
    // on both trips (the exposed time grows at most twice as fast as the offloaded time),
    // costs less than the recomputation it saves: min(rc + 2 off) over higher offload ranks.
    double above = 1e300;
    for (int i = n - rank; i > 0; i -= i & -i) above = std::min(above, sc.above[i]);
    if (above < st.rc + 2 * st.off) continue;
    out.push_back(st);
    for (int i = rank; i <= n; i += i & -i) {
      if (lex_less(st.rc, st.changes, sc.fenwick[i].first, sc.fenwick[i].second)) sc.fenwick[i] = {st.rc, st.changes};
    }
    for (int i = n - rank + 1; i <= n; i += i & -i) sc.above[i] = std::min(sc.above[i], st.rc + 2 * st.off);
  }
}

// The 2-D front of points: kept ascending, each faster (then fewer changes) than every
// point keeping less.
void front_of(std::vector<Point>& in, std::vector<Point>& out) {
  std::sort(in.begin(), in.end(), [](const Point& x, const Point& y) {
    if (x.kept != y.kept) return x.kept < y.kept;
    if (x.added != y.added) return x.added < y.added;
    return x.changes < y.changes;
  });
  out.clear();
  for (const Point& p : in) {
    if (!out.empty() && !lex_less(p.added, p.changes, out.back().added, out.back().changes)) continue;
    out.push_back(p);
  }
}

// Bounding: every completion of a state keeps at least what it keeps and adds at least its
// recompute time and exposed offload so far. Three completions of each state (keep,
// recompute or offload every remaining tensor) are whole choices; a state whose bound a
// whole choice keeping no more beats outright can only lead to dominated choices, and goes.
void bound(const LayerTensors& t, const LayerKind& kind, int from, bool offload, Scratch& sc) {
  double rest_bytes = 0, rest_rc = 0, rest_off = 0;
  for (int n = from; n < kind.count; ++n) {
    const SavedTensor& x = t.tensors[kind.first + n];
    rest_bytes += x.bytes;
    rest_rc += x.recompute_s;
    rest_off += x.offload_s;
  }
  const double F = kind.layer_forward.realistic_s, B = kind.layer_backward.realistic_s;
  sc.pairs.clear();
  for (const State& st : sc.cur) {
    const double lb = st.rc + exposed(st.off, F, B);
    sc.pairs.push_back(Point{st.kept + rest_bytes, lb, 0, {}});
    sc.pairs.push_back(Point{st.kept, lb + rest_rc, 0, {}});
    if (offload) sc.pairs.push_back(Point{st.kept, st.rc + exposed(st.off + rest_off, F, B), 0, {}});
  }
  front_of(sc.pairs, sc.front);
  size_t w = 0;
  for (const State& st : sc.cur) {
    // The fastest whole choice keeping no more than this state already does.
    const auto it = std::upper_bound(sc.front.begin(), sc.front.end(), st.kept, [](double k, const Point& p) { return k < p.kept; });
    if (it != sc.front.begin() && std::prev(it)->added < st.rc + exposed(st.off, F, B)) continue;
    sc.cur[w++] = st;
  }
  sc.cur.resize(w);
}

}  // namespace

void layer_tensors(const model::ModelConfig& m, const TrainConfig& cfg, const model::Graph& g, const OpTimesArray& fwd,
                   const OpTimesArray& bwd, const ops::Rates& rates, const hw::ChipSpec& chip, bool timed,
                   LayerTensors& out) noexcept {
  out.count = 0;
  out.kind_count = 0;
  out.saved_bytes = out.core_bytes = 0;
  out.layer_forward = out.layer_backward = {};
  const int host = chip.link_index(hw::LinkScope::host);
  out.host_link_peak_Bps = host >= 0 ? chip.links[host].chip_bandwidth_Bps() : 0;
  out.host_link_Bps = host >= 0 ? out.host_link_peak_Bps * chip.efficiency.link : 0;
  const double tp = static_cast<double>(cfg.tp);
  const double T = static_cast<double>(cfg.seq) / static_cast<double>(cfg.cp) * static_cast<double>(cfg.micro_batch);
  const double outside = cfg.sequence_parallel ? T / tp : T;
  out.layer_input_bytes = 2 * outside * static_cast<double>(m.hidden);
  out.fixed_bytes = cfg.dropout ? 2 * outside * static_cast<double>(m.hidden) : 0;  // two 1-byte dropout masks on the residual stream

  // The kinds of layer: the graph's groups that hold attention.
  double all_layers = 0;
  std::array<Items, LayerTensors::kMaxKinds> items;
  std::array<bool, model::Graph::kMaxGroups> attention{}, moe{};
  for (int i = 0; i < g.op_count; ++i) {
    attention[g.ops[i].group] = attention[g.ops[i].group] || g.ops[i].block == model::Block::attention;
    moe[g.ops[i].group] = moe[g.ops[i].group] || g.ops[i].block == model::Block::moe;
  }
  for (int gi = 0; gi < g.group_count && out.kind_count < LayerTensors::kMaxKinds; ++gi) {
    if (!attention[gi]) continue;
    LayerKind& k = out.kinds[out.kind_count];
    k = LayerKind{};
    k.name = g.groups[gi].name;
    k.group = gi;
    k.layers = g.groups[gi].repeat;
    k.first = out.count;
    all_layers += k.layers;
    Items& kind_items = items[out.kind_count];
    kind_items.count = 0;
    layer_items(m, cfg, g, gi, moe[gi], kind_items, k.core_bytes);
    for (int n = 0; n < kind_items.count; ++n) {
      const Item& it = kind_items.at[n];
      SavedTensor& t = out.tensors[out.count++];
      t = SavedTensor{};
      t.name = it.name;
      t.producers = it.text;
      t.kind = out.kind_count;
      t.bytes = it.bytes;
      t.memory_bound = it.memory_bound;
      k.saved_bytes += it.bytes;
    }
    k.count = kind_items.count;
    ++out.kind_count;
  }
  for (int k = 0; k < out.kind_count; ++k) {
    LayerKind& kind = out.kinds[k];
    kind.share = all_layers > 0 ? kind.layers / all_layers : 0;
    out.saved_bytes += kind.share * kind.saved_bytes;
    out.core_bytes += kind.share * kind.core_bytes;
  }
  if (!timed) return;

  for (int k = 0; k < out.kind_count; ++k) {
    LayerKind& kind = out.kinds[k];
    // The layer's forward and backward (no recomputation) on the chip: the windows
    // offloads hide in.
    for (int i = 0; i < g.op_count; ++i) {
      if (g.ops[i].group != kind.group) continue;
      const hw::KernelClass kc = g.ops[i].kernel;
      add(kind.layer_forward, part_of(fwd[i].parts, rates, kc));
      add(kind.layer_backward, part_of(bwd[i].parts, rates, model::backward_kernel_class(g.ops[i].kernel)));
    }
    add(out.layer_forward, kind.layer_forward, kind.share);
    add(out.layer_backward, kind.layer_backward, kind.share);
    // Each tensor's producers: re-running them rebuilds it.
    for (int n = 0; n < kind.count; ++n) {
      SavedTensor& t = out.tensors[kind.first + n];
      const Item& it = items[k].at[n];
      for (int i = 0; i < g.op_count; ++i) {
        if (g.ops[i].group != kind.group) continue;
        const std::string_view op_name(g.ops[i].name);
        if (op_name.empty() || std::find(it.ops.begin(), it.ops.end(), op_name) == it.ops.end()) continue;
        const StepPart p = part_of(fwd[i].parts, rates, g.ops[i].kernel);
        const double lower = p.lower_s;
        add(t.recompute, p);
        t.matrix_flops += g.ops[i].cost.matrix_flops;
        t.kind_s[static_cast<int>(g.ops[i].cls)] += lower;
        t.class_s[static_cast<int>(g.ops[i].kernel)] += p.realistic_s;
        if (g.ops[i].cls == model::OpClass::comm) {
          t.comm_s += lower;
          t.has_comm = true;
        }
      }
      t.recompute_s = t.recompute.realistic_s;
      t.offload_s = out.host_link_Bps > 0 ? t.bytes / out.host_link_Bps : 1e30;
      t.offload_peak_s = out.host_link_peak_Bps > 0 ? t.bytes / out.host_link_peak_Bps : 1e30;
    }
  }
}

RecomputeChoice evaluate_choice(const LayerTensors& t, const std::array<TensorAction, LayerTensors::kMax>& action) noexcept {
  RecomputeChoice c;
  c.action = action;
  for (int k = 0; k < t.kind_count; ++k) {
    const LayerKind& kind = t.kinds[k];
    const double w = kind.share;
    double off = 0, off_peak = 0;
    for (int i = kind.first; i < kind.first + kind.count; ++i) {
      const SavedTensor& x = t.tensors[i];
      switch (action[i]) {
        case TensorAction::keep: c.kept_bytes += w * x.bytes; break;
        case TensorAction::recompute:
          add(c.added, x.recompute, w);
          c.recompute_s += w * x.recompute_s;
          c.matrix_flops += w * x.matrix_flops;
          for (int j = 0; j < 6; ++j) c.kind_s[j] += w * x.kind_s[j];
          c.comm_s += w * x.comm_s;
          ++c.changes;
          break;
        case TensorAction::offload:
          off += x.offload_s;
          off_peak += x.offload_peak_s;
          ++c.changes;
          break;
      }
    }
    // What does not fit in the layer's forward and backward windows is exposed; with no
    // overlap at all (the upper bound) both trips are.
    const double ex = exposed(off, kind.layer_forward.realistic_s, kind.layer_backward.realistic_s);
    c.offload_exposed_s += w * ex;
    c.added.realistic_s += w * ex;
    c.added.lower_s += w * exposed(off_peak, kind.layer_forward.lower_s, kind.layer_backward.lower_s);
    c.added.upper_s += w * 2 * off;
  }
  return c;
}

void build_frontier(const LayerTensors& t, bool offload, RecomputeFrontier& f) noexcept {
  Scratch& sc = scratch();
  f.count = 0;
  f.priced = 0;
  f.combinations = 1;
  // The front so far, over the kinds done: per-layer averages (weighted by layer counts).
  sc.merged.clear();
  sc.merged.push_back(Point{0, 0, 0, {}});
  for (int k = 0; k < t.kind_count; ++k) {
    const LayerKind& kind = t.kinds[k];
    // One kind: the dynamic programme over its tensors, one at a time.
    sc.cur.clear();
    sc.cur.push_back(State{0, 0, 0, 0, 0});
    for (int n = 0; n < kind.count; ++n) {
      const SavedTensor& x = t.tensors[kind.first + n];
      f.combinations *= offload ? 3 : 2;
      sc.next.clear();
      for (const State& st : sc.cur) {
        const std::uint64_t bit = std::uint64_t{1} << (2 * n);
        sc.next.push_back(State{st.kept + x.bytes, st.off, st.rc, st.changes, st.code});
        sc.next.push_back(State{st.kept, st.off, st.rc + x.recompute_s, st.changes + 1, st.code | bit});
        if (offload) sc.next.push_back(State{st.kept, st.off + x.offload_s, st.rc, st.changes + 1, st.code | (bit << 1)});
      }
      f.priced += static_cast<std::int64_t>(sc.next.size());
      prune(sc.next, sc.cur, offload, sc);
      if (n + 1 < kind.count) bound(t, kind, n + 1, offload, sc);
    }
    sc.pairs.clear();
    for (const State& st : sc.cur) {
      Point p{st.kept, st.rc + exposed(st.off, kind.layer_forward.realistic_s, kind.layer_backward.realistic_s), st.changes, {}};
      p.code[k] = st.code;
      sc.pairs.push_back(p);
    }
    front_of(sc.pairs, sc.front);
    // Combine with the kinds before: every pair of choices, weighted by layer counts.
    sc.pairs.clear();
    for (const Point& a : sc.merged) {
      for (const Point& b : sc.front) {
        Point p{a.kept + kind.share * b.kept, a.added + kind.share * b.added, a.changes + b.changes, a.code};
        p.code[k] = b.code[k];
        sc.pairs.push_back(p);
      }
    }
    f.priced += static_cast<std::int64_t>(sc.pairs.size());
    front_of(sc.pairs, sc.merged);
  }
  // Each choice on the front, priced in full (lower and upper bounds, FLOPs, by kind).
  f.plans.resize(std::max(f.plans.size(), sc.merged.size()));
  for (const Point& p : sc.merged) {
    std::array<TensorAction, LayerTensors::kMax> act{};
    for (int k = 0; k < t.kind_count; ++k) {
      for (int n = 0; n < t.kinds[k].count; ++n) {
        act[t.kinds[k].first + n] = static_cast<TensorAction>((p.code[k] >> (2 * n)) & 3);
      }
    }
    // Priced in full, sums run in another order: keep the front strictly ordered in those
    // sums too (what differs in the last bit is the same plan either way).
    const RecomputeChoice x = evaluate_choice(t, act);
    while (f.count > 0 && f.plans[f.count - 1].kept_bytes >= x.kept_bytes &&
           !lex_less(f.plans[f.count - 1].added.realistic_s, f.plans[f.count - 1].changes, x.added.realistic_s, x.changes)) {
      --f.count;
    }
    if (f.count > 0 && !lex_less(x.added.realistic_s, x.changes, f.plans[f.count - 1].added.realistic_s, f.plans[f.count - 1].changes)) {
      continue;
    }
    f.plans[f.count++] = x;
  }
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
