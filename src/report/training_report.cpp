#include <fmt/format.h>

#include <array>
#include <cmath>

#include "ridgeline/core/units.hpp"
#include "ridgeline/model/transformer.hpp"
#include "ridgeline/report/text.hpp"
#include "ridgeline/report/training.hpp"
#include "kernel_classes.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

using nlohmann::json;

namespace {
json part(const analysis::StepPart& p) {
  return {{"t_lower_s", p.lower_s}, {"t_upper_s", p.upper_s}, {"t_realistic_s", p.realistic_s}};
}
// A tensor's name; with several kinds of layer, prefixed by its kind's ("moe layers/attn_out").
std::string tensor_label(const std::array<analysis::SavedTensor, analysis::LayerTensors::kMax>& tensors,
                         const std::array<analysis::LayerKind, analysis::LayerTensors::kMaxKinds>& kinds, int kind_count, int i) {
  if (kind_count <= 1) return tensors[i].name;
  return fmt::format("{}/{}", kinds[tensors[i].kind].name, tensors[i].name);
}
constexpr const char* kFlopConvention =
    "model FLOPs = 3 x the forward pass's matrix-unit FLOPs (GEMMs and attention, causal pairs only), without "
    "recomputation; hardware FLOPs add recomputed forwards and FlashAttention's 2.5x backward";
}  // namespace

const analysis::PublishedMfu* mfu_reference(const model::ModelConfig& m, const hw::ChipSpec& chip, DType dtype) {
  return analysis::published_mfu(model::count_params(m).total, m.is_moe(), chip.name, dtype);
}

std::string mfu_warning(const analysis::PublishedMfu& ref, double mfu, double step_s, double hidden_comm_s,
                        double overlap_efficiency) {
  const double share = step_s > 0 ? hidden_comm_s / step_s : 0;
  std::string why;
  if (share >= 0.1) {
    why = fmt::format("it hides {} of communication behind compute ({:.0f}% of the step) and assumes {} of what can hide does "
                      "(--overlap-efficiency {:g}; lower it to price the plan more conservatively)",
                      t(hidden_comm_s), 100 * share, overlap_efficiency >= 1 ? std::string("all") : fmt::format("{:g}", overlap_efficiency),
                      overlap_efficiency);
  } else {
    why = "it assumes every kernel runs at the best rate measured alone (matmul_achievable, FlashAttention's), which a whole "
          "training step does not sustain";
  }
  return fmt::format("MFU {:.1f}% exceeds the best published for {} on {} ({:.1f}%: {}): {}", 100 * mfu, ref.size_class, ref.chip,
                     100 * ref.mfu, ref.run, why);
}

json run_json(const RunReport& run) {
  const analysis::RunTotals& r = run.totals;
  json j = {{"tokens", r.tokens}, {"steps", r.steps}, {"seconds", r.seconds}, {"days", r.days}, {"gpu_hours", r.gpu_hours}};
  if (run.goal.tokens > 0 && run.goal.days > 0) j["within_days"] = r.within_days;
  if (run.goal.usd_per_gpu_hour > 0) {
    j["usd_per_gpu_hour"] = run.goal.usd_per_gpu_hour;
    j["price_source"] = run.price_source;
    j["usd_per_hour"] = r.usd_per_hour;
    j["usd"] = r.usd;
    j["usd_per_million_tokens"] = r.usd_per_million_tokens;
  }
  return j;
}

std::string run_text(const RunReport& run, double gpus) {
  const analysis::RunTotals& r = run.totals;
  auto si = [](double v) { return format_quantity(v, Quantity::count); };  // "1.5 G", "19.7"
  const std::string span = r.days >= 1 ? fmt::format("{:.1f} days", r.days) : fmt::format("{:.1f} hours", r.seconds / 3600);
  std::string out = fmt::format("run           {} tokens in {:.0f} steps: {} on {:.0f} GPUs, {} GPU-hours", si(r.tokens), r.steps, span, gpus,
                                si(r.gpu_hours));
  if (run.goal.tokens > 0 && run.goal.days > 0) {
    out += r.within_days ? fmt::format(", within the {:g} days", run.goal.days) : fmt::format(", more than the {:g} days given", run.goal.days);
  }
  out += "\n";
  if (run.goal.usd_per_gpu_hour > 0) {
    out += fmt::format("              ${} at ${} per GPU-hour ({}): ${} per hour, ${} per million tokens\n", format_usd(r.usd),
                       format_usd(run.goal.usd_per_gpu_hour), run.price_source, format_usd(r.usd_per_hour), format_usd(r.usd_per_million_tokens));
  }
  out += "              (the step repeated: no restarts, checkpoints, evaluations or warm-up)\n";
  return out;
}

json training_json(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& c,
                   const analysis::TrainResult& r, const RunReport* run) {
  json j;
  if (run) j["run"] = run_json(*run);
  j["model"] = m.name;
  j["hw"] = sys.chip.name;
  j["write_allocate"] = sys.chip.write_allocate;
  j["gpus"] = c.gpus;
  j["tp"] = c.tp;
  j["pp"] = c.pp;
  j["dp"] = r.dp;
  j["cp"] = c.cp;
  j["cp_algo"] = c.cp_ring ? "ring" : "ulysses";
  j["ep"] = c.ep;
  j["vpp"] = c.vpp;
  j["zero"] = c.zero;
  j["sequence_parallel"] = c.sequence_parallel;
  j["seq"] = c.seq;
  j["micro_batch"] = c.micro_batch;
  j["global_batch"] = c.global_batch > 0 ? c.global_batch : r.dp * c.micro_batch;
  j["micro_batches"] = r.micro_batches;
  j["recompute"] = std::string(analysis::name(c.recompute));
  j["dtype"] = std::string(name(c.dtype));
  j["step_time_s"] = r.step_time_s;
  j["step_time_lower_s"] = r.step_time_lower_s;
  j["step_time_upper_s"] = r.step_time_upper_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["model_flops_per_step"] = r.model_flops_per_step;
  j["hardware_flops_per_step"] = r.hardware_flops_per_step;
  j["model_flops_per_s_per_gpu"] = r.model_flops_per_step / r.step_time_s / static_cast<double>(c.gpus);
  j["hardware_flops_per_s_per_gpu"] = r.hardware_flops_per_step / r.step_time_s / static_cast<double>(c.gpus);
  j["mfu"] = r.mfu;
  j["mfu_full_attention"] = r.mfu_full_attention;
  j["model_flops_full_attention_per_step"] = r.model_flops_full_attention_per_step;
  j["hfu"] = r.hfu;
  j["flop_convention"] = kFlopConvention;
  j["exposed_comm_s"] = r.exposed_comm_s;
  // What the plan relies on (docs/training.md#interference).
  j["hidden_comm_s"] = r.hidden_comm_s;
  j["hidden_comm_share"] = r.step_time_s > 0 ? r.hidden_comm_s / r.step_time_s : 0;
  j["interference_s"] = r.interference_s;
  j["straggler_s"] = r.straggler_s;
  j["overlap_efficiency"] = r.overlap_efficiency;
  j["framework"] = std::string(analysis::name(c.framework));
  j["prefetch"] = c.prefetch;
  j["grad_reduce_dtype"] = std::string(name(c.grad_reduce_dtype));
  json warnings = json::array();
  if (const analysis::PublishedMfu* ref = mfu_reference(m, sys.chip, c.dtype)) {
    j["mfu_reference"] = {{"class", ref->size_class}, {"chip", ref->chip}, {"mfu", ref->mfu}, {"run", ref->run},
                          {"source", ref->source}, {"exceeded", r.mfu > ref->mfu}};
    if (r.mfu > ref->mfu) warnings.push_back(mfu_warning(*ref, r.mfu, r.step_time_s, r.hidden_comm_s, r.overlap_efficiency));
  } else {
    j["mfu_reference"] = nullptr;
  }
  j["warnings"] = warnings;
  j["bubble_s"] = r.bubble.realistic_s;
  j["tp_comm_s"] = r.tp_comm_s;
  j["params_per_gpu"] = r.params_per_gpu;  // held, as memory_per_gpu.params_bytes
  j["params_computed_per_gpu"] = r.params_computed_per_gpu;
  j["grad_bytes"] = r.grad_bytes;
  j["grad_bytes_uncompressed"] = r.grad_bytes_uncompressed;
  j["compression"] = part(r.compression);
  j["fp8_cast_bytes_per_micro_batch"] = r.fp8_cast_bytes;
  const auto& mem = r.memory;
  j["memory_per_gpu"] = {{"params_bytes", mem.params_bytes},
                         {"grads_bytes", mem.grads_bytes},
                         {"optimizer_bytes", mem.optimizer_bytes},
                         {"activations_bytes", mem.activations_bytes},
                         {"activation_bytes_per_layer", mem.activation_bytes_per_layer},
                         {"buffers_bytes", mem.buffers_bytes},
                         {"in_flight_micro_batches", mem.in_flight_micro_batches},
                         {"margin_bytes", mem.margin_bytes},
                         {"total_bytes", mem.total_bytes},
                         {"capacity_bytes", mem.capacity_bytes},
                         {"fits", mem.fits}};
  if (c.recompute == analysis::Recompute::automatic) {
    // The planner's choice: per layer and micro-batch, averaged over the kinds of layer.
    const analysis::RecomputeChoice& ch = r.recompute_choice;
    json actions = json::object();
    for (int i = 0; i < r.tensors.count; ++i) actions[tensor_label(r.tensors.tensors, r.tensors.kinds, r.tensors.kind_count, i)] = std::string(analysis::name(ch.action[i]));
    j["recompute_plan"] = {{"budget_bytes_per_layer", r.activation_budget_bytes},
                           {"kept_bytes_per_layer", ch.kept_bytes},
                           {"added_backward_s_per_layer", ch.added.realistic_s},
                           {"recompute_s_per_layer", ch.recompute_s},
                           {"offload_exposed_s_per_layer", ch.offload_exposed_s},
                           {"fits_budget", ch.kept_bytes <= r.activation_budget_bytes},
                           {"front_size", r.frontier.count},
                           {"combinations", r.frontier.combinations},
                           {"actions", actions}};
  }
  j["breakdown"] = json::array({
      {{"name", "forward"}, {"per", "micro_batch"}, {"times", part(r.forward)}},
      {{"name", "backward"}, {"per", "micro_batch"}, {"times", part(r.backward)}},
      {{"name", "pipeline_p2p"}, {"per", "micro_batch"}, {"times", part(r.p2p)}},
      {{"name", "pipeline"}, {"per", "step"}, {"times", part(r.pipeline)}},
      {{"name", "bubble"}, {"per", "step"}, {"times", part(r.bubble)}},
      {{"name", "dp_comm"}, {"per", "step"}, {"times", part(r.dp_comm)}},
      {{"name", "dp_comm_exposed"}, {"per", "step"}, {"times", part(r.exposed_dp_comm)}},
      {{"name", "optimizer"}, {"per", "step"}, {"times", part(r.optimizer)}},
      {{"name", "grad_norm"}, {"per", "step"}, {"times", part(r.grad_norm)}},
  });
  json kinds = json::object(), fwd = json::object(), bwd = json::object();
  for (int k = 0; k < 6; ++k) {
    const std::string n(model::name(static_cast<model::OpClass>(k)));
    kinds[n] = r.time_by_kind_s[k];
    fwd[n] = r.forward_time_by_kind_s[k];
    bwd[n] = r.backward_time_by_kind_s[k];
  }
  j["time_by_kind_s"] = kinds;
  j["forward_time_by_kind_s"] = fwd;
  j["backward_time_by_kind_s"] = bwd;
  j["time_by_kernel_class_s"] = by_class_json(r.time_by_kernel_class_s);
  // Every op of one micro-batch's forward on one GPU (all layers, repeat counts), with its
  // backward (recomputation not included: it is the forward again).
  json ops = json::array();
  const auto& g = r.graph;
  for (int i = 0; i < g.op_count; ++i) {
    const auto& op = g.ops[i];
    const auto& f = r.fwd[i];
    const auto& b = r.bwd[i];
    const double fl = f.parts.lower();
    ops.push_back({{"name", op.name},
                   {"group", g.groups[op.group].name},
                   {"repeat", g.repeat(i)},
                   {"kind", std::string(model::name(op.cls))},
                   {"block", std::string(model::name(op.block))},
                   {"flops", f.flops},
                   {"bytes", f.bytes},
                   {"comm_bytes", f.link_bytes},
                   {"intensity_flops_per_byte", f.bytes > 0 ? json(f.flops / f.bytes) : json(nullptr)},
                   {"bound", std::string(ops::name(f.parts.bound()))},
                   {"attained_flops_per_s", fl > 0 ? f.flops / fl : 0.0},
                   {"t_forward_lower_s", fl},
                   {"t_backward_lower_s", b.parts.lower()}});
  }
  j["ops"] = ops;
  return j;
}

std::string training_text(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& c,
                          const analysis::TrainResult& r, const RunReport* run) {
  std::string out = fmt::format("{} on {} x {}: tp {} pp {} dp {} ep {}{}{}, ZeRO {}, seq {}, micro-batch {}, {} micro-batches, recompute {}\n\n",
                                m.name, c.gpus, sys.chip.display_name, c.tp, c.pp, r.dp, c.ep,
                                c.vpp > 1 ? fmt::format(" vpp {}", c.vpp) : "", c.sequence_parallel ? " +SP" : "", c.zero,
                                c.seq, c.micro_batch, r.micro_batches, analysis::name(c.recompute));
  out += fmt::format("step time     {} realistic ({} .. {})\n", t(r.step_time_s), t(r.step_time_lower_s), t(r.step_time_upper_s));
  out += fmt::format("throughput    {:.0f} tokens/s, {:.1f} TFLOP/s per GPU of model FLOPs ({:.1f} of hardware FLOPs)\n",
                     r.tokens_per_s, r.model_flops_per_step / r.step_time_s / static_cast<double>(c.gpus) / 1e12,
                     r.hardware_flops_per_step / r.step_time_s / static_cast<double>(c.gpus) / 1e12);
  out += fmt::format("MFU {:.1f}%   HFU {:.1f}%   ({}); MFU {:.1f}% counting attention over all s² pairs as PaLM and Megatron-LM do\n",
                     100 * r.mfu, 100 * r.hfu, kFlopConvention, 100 * r.mfu_full_attention);
  const double share = r.step_time_s > 0 ? r.hidden_comm_s / r.step_time_s : 0;
  out += fmt::format("hidden comm   {} behind compute ({:.0f}% of the step), assuming {} of it hides (--overlap-efficiency); "
                     "it costs the compute {}\n",
                     t(r.hidden_comm_s), 100 * share, r.overlap_efficiency >= 1 ? std::string("all") : fmt::format("{:g}", r.overlap_efficiency),
                     t(r.interference_s));
  if (const analysis::PublishedMfu* ref = mfu_reference(m, sys.chip, c.dtype); ref != nullptr && r.mfu > ref->mfu) {
    out += "warning       " + mfu_warning(*ref, r.mfu, r.step_time_s, r.hidden_comm_s, r.overlap_efficiency) + "\n";
  }
  if (run) out += run_text(*run, static_cast<double>(c.gpus));
  out += "\n";
  out += fmt::format("  forward  / micro-batch   {:>10}\n", t(r.forward.realistic_s));
  out += fmt::format("  backward / micro-batch   {:>10}   (recompute {})\n", t(r.backward.realistic_s), analysis::name(c.recompute));
  if (c.pp > 1) out += fmt::format("  pipeline sends / mb      {:>10}\n", t(r.p2p.realistic_s));
  out += fmt::format("  pipeline (all mbs)       {:>10}   bubble {}\n", t(r.pipeline.realistic_s), t(r.bubble.realistic_s));
  out += fmt::format("  data-parallel comm       {:>10}   exposed {}\n", t(r.dp_comm.realistic_s), t(r.exposed_dp_comm.realistic_s));
  out += fmt::format("  optimizer (Adam)         {:>10}   gradient norm and buffers {}\n", t(r.optimizer.realistic_s), t(r.grad_norm.realistic_s));
  if (r.straggler_s > 0) out += fmt::format("  slowest of the GPUs      {:>10}   (compute-bound kernels at the slowest of {} GPUs' rate)\n", t(r.straggler_s), c.gpus);
  if (c.powersgd_rank > 0) {
    out += fmt::format("  PowerSGD rank {:<4}       {:>10}   gradients {} instead of {}\n", c.powersgd_rank, t(r.compression.realistic_s),
                       size(r.grad_bytes), size(r.grad_bytes_uncompressed));
  }
  out += fmt::format("  tensor-parallel comm     {:>10}   (on the critical path, lower bound)\n", t(r.tp_comm_s));
  if (sys.chip.write_allocate) {
    out += fmt::format("  stores {}\n", kStoresAllocate);
  }
  out += "\ncompute by kind (lower bound, per step):";
  for (int k = 0; k < 6; ++k) {
    if (r.time_by_kind_s[k] > 0) out += fmt::format("  {} {}", model::name(static_cast<model::OpClass>(k)), t(r.time_by_kind_s[k]));
  }
  if (const std::string by = by_class_text(r.time_by_kernel_class_s); !by.empty()) {
    out += "\n  realistic by kernel class (before overlap): " + by;
  }
  const auto& mem = r.memory;
  out += fmt::format("\n\nmemory per GPU (first stage): params {}, grads {}, optimizer {}{}, activations {} ({} x {} layers x {:.2f} micro-batches), margin {}\n",
                     size(mem.params_bytes), size(mem.grads_bytes), size(mem.optimizer_bytes),
                     mem.buffers_bytes > 0 ? fmt::format(", gathered layers {}", size(mem.buffers_bytes)) : std::string(), size(mem.activations_bytes),
                     size(mem.activation_bytes_per_layer), std::ceil(static_cast<double>(m.layers) / static_cast<double>(c.pp * c.vpp)) * static_cast<double>(c.vpp), mem.in_flight_micro_batches, size(mem.margin_bytes));
  out += fmt::format("  total {} of {} -> {}\n", size(mem.total_bytes), size(mem.capacity_bytes), mem.fits ? "fits" : "DOES NOT FIT");
  if (!mem.fits) {
    out += "  (the step above is what it would take if it fit: `ridgeline search train` lists the plans that do, over TP, PP, ZeRO and "
           "recomputation)\n";
  }
  if (c.recompute == analysis::Recompute::automatic) {
    const analysis::RecomputeChoice& ch = r.recompute_choice;
    out += fmt::format("\nrecompute auto{} ({:.3g} choices covered exactly, {} on the front): per layer and micro-batch{}, {} of "
                       "activations kept of a {} budget, backward +{}\n",
                       c.offload ? " with offload" : "", r.frontier.combinations, r.frontier.count,
                       r.tensors.kind_count > 1 ? " (averaged over the kinds of layer)" : "", size(ch.kept_bytes),
                       size(std::max(0.0, r.activation_budget_bytes)), t(ch.added.realistic_s));
    const bool kinds = r.tensors.kind_count > 1;
    for (int k = 0; k < r.tensors.kind_count; ++k) {
      const analysis::LayerKind& kind = r.tensors.kinds[k];
      std::string keep, again, off;
      for (int i = kind.first; i < kind.first + kind.count; ++i) {
        std::string& list = ch.action[i] == analysis::TensorAction::keep ? keep : ch.action[i] == analysis::TensorAction::recompute ? again : off;
        list += (list.empty() ? "" : ", ") + std::string(r.tensors.tensors[i].name);
      }
      const char* pad = kinds ? "    " : "  ";
      if (kinds) out += fmt::format("  {} x {}:\n", kind.layers, kind.name);
      out += fmt::format("{}keep       {}\n{}recompute  {}\n", pad, keep.empty() ? "-" : keep, pad, again.empty() ? "-" : again);
      if (c.offload) out += fmt::format("{}offload    {}\n", pad, off.empty() ? "-" : off);
    }
    if (ch.kept_bytes > r.activation_budget_bytes) out += "  no choice fits: the smallest is shown\n";
  }
  return out;
}

namespace {
json plan_json(const analysis::RecomputeResult& r, const analysis::RecomputePlan& p) {
  json actions = json::object();
  for (int i = 0; i < r.count; ++i) actions[tensor_label(r.tensors, r.kinds, r.kind_count, i)] = std::string(analysis::name(p.action[i]));
  return {{"actions", actions},
          {"memory_bytes", p.memory_bytes},
          {"recompute_s", p.recompute_s},
          {"offload_exposed_s", p.offload_exposed_s},
          {"added_s", p.added_s},
          {"fits", p.feasible}};
}
}  // namespace

json recompute_json(const analysis::RecomputeResult& r) {
  json j;
  j["budget_bytes_per_layer"] = r.budget_bytes;
  j["layers_in_memory"] = r.layers_in_memory;
  j["layer_input_bytes"] = r.layer_input_bytes;
  j["t_layer_forward_s"] = r.t_layer_forward_s;
  j["t_layer_backward_s"] = r.t_layer_backward_s;
  j["host_link_Bps"] = r.host_link_Bps;
  j["combinations"] = r.combinations;
  j["partial_choices_priced"] = r.priced;
  j["kinds"] = json::array();
  for (int k = 0; k < r.kind_count; ++k) {
    const auto& kind = r.kinds[k];
    j["kinds"].push_back({{"name", kind.name},
                          {"layers", kind.layers},
                          {"saved_bytes", kind.saved_bytes},
                          {"t_layer_forward_s", kind.layer_forward.realistic_s},
                          {"t_layer_backward_s", kind.layer_backward.realistic_s}});
  }
  j["tensors"] = json::array();
  for (int i = 0; i < r.count; ++i) {
    const auto& t = r.tensors[i];
    j["tensors"].push_back({{"name", t.name},
                            {"kind", r.kinds[t.kind].name},
                            {"producers", t.producers},
                            {"bytes", t.bytes},
                            {"recompute_s", t.recompute_s},
                            {"recompute_s_per_byte", t.recompute_s / t.bytes},
                            {"offload_s", t.offload_s},
                            {"memory_bound", t.memory_bound},
                            {"repeats_collective", t.has_comm},
                            {"action", std::string(analysis::name(r.best.action[i]))}});
  }
  json order = json::array();
  for (int i = 0; i < r.count; ++i) order.push_back(tensor_label(r.tensors, r.kinds, r.kind_count, r.by_cost_per_byte[i]));
  j["cheapest_to_recompute_per_byte"] = order;
  j["plan"] = plan_json(r, r.best);
  j["none"] = plan_json(r, r.none);
  j["selective"] = plan_json(r, r.selective);
  j["full"] = plan_json(r, r.full);
  return j;
}

std::string recompute_text(const model::ModelConfig& m, const analysis::RecomputeResult& r) {
  std::string out = fmt::format("{}: activations of one layer, one micro-batch, one GPU; budget {} per layer ({} layer-micro-batches in memory)\n",
                                m.name, size(r.budget_bytes), r.layers_in_memory);
  out += fmt::format("layer forward {}, backward {}; host link {} per direction; {:.3g} choices covered exactly ({} partial "
                     "choices priced)\n",
                     t(r.t_layer_forward_s), t(r.t_layer_backward_s), format_quantity(r.host_link_Bps, Quantity::bandwidth),
                     r.combinations, r.priced);
  if (r.kind_count > 1) {
    out += "per-layer figures are averages over the kinds of layer, weighted by their layer counts:";
    for (int k = 0; k < r.kind_count; ++k) {
      out += fmt::format("{} {} x {} (forward {})", k ? "," : "", r.kinds[k].layers, r.kinds[k].name, t(r.kinds[k].layer_forward.realistic_s));
    }
    out += "\n";
  }
  for (int k = 0; k < r.kind_count; ++k) {
    const int w = r.kind_count > 1 ? 30 : 20;
    out += fmt::format("\n  {:<{}} {:>10} {:>12} {:>14} {:>11}  {}\n", r.kind_count > 1 ? r.kinds[k].name : "tensor", w, "bytes",
                       "recompute", "per MB", "offload", "choice");
    for (int i = r.kinds[k].first; i < r.kinds[k].first + r.kinds[k].count; ++i) {
      const auto& x = r.tensors[i];
      out += fmt::format("  {:<{}} {:>10} {:>12} {:>14} {:>11}  {}\n", x.name, w, size(x.bytes), t(x.recompute_s),
                         t(x.recompute_s / x.bytes * 1e6), t(x.offload_s), analysis::name(r.best.action[i]));
    }
  }
  auto row = [&](const char* label, const analysis::RecomputePlan& p) {
    out += fmt::format("  {:<10} memory {:>10}  added {:>10} (recompute {}, exposed offload {}){}\n", label, size(p.memory_bytes),
                       t(p.added_s), t(p.recompute_s), t(p.offload_exposed_s), p.feasible ? "" : "  over budget");
  };
  out += "\n";
  row("planned", r.best);
  row("none", r.none);
  row("selective", r.selective);
  row("full", r.full);
  return out;
}

}  // namespace ridgeline::report
