#include <algorithm>

#include <fmt/format.h>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/inference.hpp"
#include "ridgeline/report/error_band.hpp"
#include "ridgeline/report/text.hpp"
#include "kernel_classes.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

using nlohmann::json;

namespace {

constexpr const char* kBounds[4] = {"compute", "memory", "comm", "launch"};

json phase_json(const analysis::PhaseTimes& p) {
  json j;
  j["t_lower_s"] = p.t_lower_s;
  j["t_upper_s"] = p.t_upper_s;
  j["t_realistic_s"] = p.t_realistic_s;
  j["bound"] = std::string(ops::name(p.bound));
  j["flops"] = p.flops;
  j["bytes"] = p.bytes;
  j["comm_bytes"] = p.comm_bytes;
  j["launches"] = p.launches;
  j["kernel_fixed_s"] = p.kernel_fixed_s;
  j["link_latency_s"] = p.link_latency_s;
  json by_bound = json::object(), by_kind = json::object();
  for (int b = 0; b < 4; ++b) by_bound[kBounds[b]] = p.lower_by_bound_s[b];
  for (int c = 0; c < 6; ++c) by_kind[std::string(model::name(static_cast<model::OpClass>(c)))] = p.lower_by_class_s[c];
  j["time_by_bound_s"] = by_bound;
  j["time_by_kind_s"] = by_kind;
  return j;
}

json ops_json(const char* phase, const model::Graph& g, const std::array<analysis::OpRow, model::Graph::kMaxOps>& rows,
              double phase_lower, json& out) {
  for (int i = 0; i < g.op_count; ++i) {
    const auto& op = g.ops[i];
    const auto& e = rows[i].e;
    const double rep = g.repeat(i);
    out.push_back({{"phase", phase},
                   {"group", g.groups[op.group].name},
                   {"repeat", rep},
                   {"name", op.name},
                   {"kind", std::string(model::name(op.cls))},
                   {"block", std::string(model::name(op.block))},
                   {"flops", e.flops},
                   {"bytes", e.main_bytes},
                   {"write_allocate_bytes", e.write_allocate_bytes},
                   {"comm_bytes", op.cost.total_link_bytes()},
                   {"intensity_flops_per_byte", e.main_bytes > 0 ? json(e.intensity_flops_per_byte) : json(nullptr)},
                   {"bound", std::string(ops::name(e.bound))},
                   {"attained_flops_per_s", e.attained_total_flops_per_s},
                   {"t_lower_s", e.t_lower_s},
                   {"t_total_lower_s", e.t_lower_s * rep},
                   {"kernel_class", std::string(hw::name(op.kernel))},
                   {"t_realistic_s", e.t_realistic_s},
                   {"t_total_realistic_s", e.t_realistic_s * rep},
                   {"share", phase_lower > 0 ? e.t_lower_s * rep / phase_lower : 0.0}});
  }
  return out;
}

std::string dtype_or(std::optional<DType> d, std::string_view fallback) {
  return d ? std::string(name(*d)) : std::string(fallback);
}

}  // namespace

json models_json(const std::vector<ModelRow>& rows) {
  json a = json::array();
  for (const auto& r : rows) {
    const auto& m = r.config;
    a.push_back({{"name", m.name},
                 {"model_type", m.model_type},
                 {"params", r.params.total},
                 {"active_params", r.params.active},
                 {"layers", m.layers},
                 {"hidden", m.hidden},
                 {"heads", m.heads},
                 {"kv_heads", m.kv_heads},
                 {"head_dim", m.head_dim},
                 {"vocab", m.vocab},
                 {"experts", m.moe.experts},
                 {"experts_per_token", m.moe.experts_per_token},
                 {"mla", m.is_mla()},
                 {"max_positions", m.max_positions},
                 {"repository", m.hf_repo.empty() ? json(nullptr) : json(m.hf_repo)}});
  }
  return a;
}

std::string models_text(const std::vector<ModelRow>& rows) {
  std::string out = fmt::format("{:<16} {:<12} {:>9} {:>9} {:>6} {:>7} {:>9} {:>8}\n", "name", "type", "params", "active",
                                "layers", "hidden", "heads/kv", "experts");
  for (const auto& r : rows) {
    const auto& m = r.config;
    out += fmt::format("{:<16} {:<12} {:>8.2f}B {:>8.2f}B {:>6} {:>7} {:>9} {:>8}\n", m.name, m.model_type, r.params.total / 1e9,
                       r.params.active / 1e9, m.layers, m.hidden, fmt::format("{}/{}", m.heads, m.kv_heads),
                       m.is_moe() ? fmt::format("{}/{}", m.moe.experts_per_token, m.moe.experts) : std::string("-"));
  }
  return out;
}

namespace {

// Where the busiest chip's share of the routed pairs comes from (docs/serving.md#moe-layouts).
std::string expert_imbalance_source(const model::ModelConfig& m, const analysis::InferenceResult& r, const model::ForwardConfig& f) {
  if (!r.routing_model) return "--expert-imbalance";
  if (r.routing_measured) {
    return fmt::format("measured: {}; its skew extrapolated to {} GPUs and the pass's tokens (docs/serving.md#moe-layouts)",
                       m.moe.routing.source, f.ep_size());
  }
  return fmt::format("a balanced router's expected busiest of {} GPUs for the pass's tokens (docs/serving.md#moe-layouts)", f.ep_size());
}

// The matrix-unit dtypes the prefill's GEMMs run in, the most FLOPs first, with their shares
// ("fp8_e4m3 97.9%, bf16 2.1%"; one dtype alone without a share).
std::string gemm_compute(const model::Graph& g) {
  std::array<double, kDTypeCount> f{};
  double total = 0;
  for (int i = 0; i < g.op_count; ++i) {
    const auto& op = g.ops[i];
    if (op.cls != model::OpClass::gemm || op.cost.matrix_flops <= 0) continue;
    f[index(op.cost.matrix_dtype)] += op.cost.matrix_flops * g.repeat(i);
    total += op.cost.matrix_flops * g.repeat(i);
  }
  std::string out;
  for (int n = 0; n < kDTypeCount; ++n) {
    const auto k = static_cast<std::size_t>(std::max_element(f.begin(), f.end()) - f.begin());
    if (f[k] <= 0) break;
    if (!out.empty()) out += ", ";
    out += std::string(name(static_cast<DType>(k)));
    const double share = 100 * f[k] / total;
    if (f[k] < total) out += share < 0.05 ? std::string(" <0.1%") : fmt::format(" {:.1f}%", share);
    f[k] = 0;
  }
  return out.empty() ? "-" : out;
}

}  // namespace

json inference_json(const model::ModelConfig& m, const hw::System& sys, const analysis::InferenceConfig& cfg,
                    const analysis::InferenceResult& r) {
  const auto& p = cfg.forward.precision;
  json j;
  j["model"] = m.name;
  j["hw"] = sys.chip.name;
  j["write_allocate"] = sys.chip.write_allocate;
  j["chips"] = r.chips;
  j["tp"] = cfg.forward.tp;
  j["ep"] = cfg.forward.ep;
  j["experts"] = cfg.forward.experts == model::ForwardConfig::Experts::expert ? "ep" : "tp";
  if (r.expert_imbalance_prefill > 0) {
    j["expert_imbalance"] = {{"prefill", r.expert_imbalance_prefill}, {"decode", r.expert_imbalance_decode},
                             {"source", expert_imbalance_source(m, r, cfg.forward)}};
  }
  j["batch"] = cfg.batch;
  j["prompt"] = cfg.prompt;
  j["gen"] = cfg.gen;
  j["weight_dtype"] = dtype_or(p.weight, m.quantized ? std::string(name(m.quant.dtype)) + " (checkpoint)"
                                                     : std::string(name(m.weight_dtype)) + " (checkpoint)");
  j["act_dtype"] = std::string(name(p.activation));
  j["kv_dtype"] = dtype_or(p.kv_cache, name(p.activation));
  j["error_band"] = error_band_json(answer_class("static", m, cfg.forward, sys.chip));
  j["compute_dtype"] = gemm_compute(r.prefill_graph);
  j["attention"] = cfg.forward.attention == ops::AttentionImpl::flash ? "flash" : "naive";
  j["cuda_graphs"] = cfg.cuda_graphs;
  j["kernels"] = cfg.forward.merged_kernels ? "merged" : "unfused";
  j["block_fp8_gemms"] = cfg.forward.scaled_gemm == model::ForwardConfig::ScaledGemm::deepgemm ? "deepgemm" : "triton";
  j["moe_a2a"] = model::name(cfg.forward.moe_a2a);
  j["algo"] = std::string(comm::name(cfg.forward.algo));
  j["prefill"] = phase_json(r.prefill);
  j["prefill"]["time_by_kernel_class_s"] = by_class_json(r.prefill_by_class_s);
  json d;
  const double steps = static_cast<double>(cfg.gen - 1);
  d["steps"] = steps;
  d["first"] = phase_json(r.decode_first);
  d["last"] = phase_json(r.decode_last);
  d["last"]["time_by_kernel_class_s"] = by_class_json(r.decode_last_by_class_s);
  d["total"] = phase_json(r.decode_total);
  d["t_lower_s"] = steps > 0 ? r.decode_total.t_lower_s / steps : 0;
  d["t_upper_s"] = steps > 0 ? r.decode_total.t_upper_s / steps : 0;
  d["t_realistic_s"] = r.tpot_s;
  d["kernel_fixed_s"] = steps > 0 ? r.decode_total.kernel_fixed_s / steps : 0;  // per step
  d["link_latency_s"] = steps > 0 ? r.decode_total.link_latency_s / steps : 0;
  d["bound"] = std::string(ops::name(r.decode_total.bound));
  j["decode"] = d;
  j["ttft_s"] = r.ttft_s;
  j["tpot_s"] = r.tpot_s;
  j["e2e_latency_s"] = r.e2e_s;
  j["e2e_latency_lower_s"] = r.e2e_lower_s;
  j["e2e_latency_upper_s"] = r.e2e_upper_s;
  j["throughput_tokens_per_s"] = r.throughput_tokens_per_s;
  j["output_tokens_per_s"] = r.output_tokens_per_s;
  j["throughput_tokens_per_s_per_chip"] = r.throughput_tokens_per_s / r.chips;
  j["output_tokens_per_s_per_chip"] = r.output_tokens_per_s / r.chips;
  j["memory"] = {{"weights_bytes", r.memory.weights_bytes},
                 {"kv_cache_bytes", r.memory.kv_cache_bytes},
                 {"kv_cache_bytes_per_token", r.memory.kv_bytes_per_token},
                 {"activations_bytes", r.memory.activations_bytes},
                 {"total_bytes", r.memory.total_bytes},
                 {"capacity_bytes", r.memory.capacity_bytes},
                 {"fits", r.memory.fits}};
  j["max_batch"] = r.max_batch;
  if (cfg.spec.on() && cfg.gen > 1) {
    const analysis::SpeculativeDecode& sd = r.spec;
    json rates = json::array();
    for (int i = 0; i < cfg.spec.k; ++i) rates.push_back(cfg.spec.accept[static_cast<std::size_t>(i)]);
    j["speculation"] = {{"draft", cfg.spec.draft->name}, {"mtp", cfg.spec.mtp}, {"k", cfg.spec.k}, {"accept", rates},
                        {"accept_form", std::string(model::name(cfg.spec.form))}, {"accept_given", model::accept_arg(cfg.spec, cfg.spec.k)},
                        {"tokens_per_step", sd.tokens_per_step}, {"steps", sd.steps},
                        {"verify_first_s", sd.verify_first_s}, {"verify_last_s", sd.verify_last_s},
                        {"draft_first_s", sd.draft_first_s}, {"draft_last_s", sd.draft_last_s},
                        {"draft_prefill_s", sd.draft_prefill_s}, {"ttft_s", sd.ttft_s}, {"tpot_s", sd.tpot_s},
                        {"e2e_latency_s", sd.e2e_s}, {"output_tokens_per_s", sd.output_tokens_per_s}, {"speedup", sd.speedup},
                        {"break_even_accept", sd.break_even ? json(sd.break_even_accept) : json(nullptr)},
                        {"draft_weights_bytes", sd.draft_weights_bytes}, {"draft_kv_cache_bytes", sd.draft_kv_cache_bytes},
                        {"fits", sd.fits}};
  } else {
    j["speculation"] = nullptr;
  }
  j["params"] = r.params;
  j["active_params"] = r.active_params;
  j["critical_batch"] = r.critical_batch > 0 ? json(r.critical_batch) : json(nullptr);
  j["launch"] = {{"overhead_per_kernel_s", r.launch_overhead_s},
                 {"decode_step_launches", r.decode_last.launches},
                 {"decode_step_launch_s", r.decode_launch_s},
                 {"cuda_graphs_gain_per_step_s", r.cuda_graphs_gain_s}};
  j["quick"] = {{"t_memory_s", r.quick.t_memory_s},
                {"t_compute_s", r.quick.t_compute_s},
                {"t_network_s", r.quick.t_network_s},
                {"tpot_lower_s", r.quick.t_lower_s},
                {"tpot_upper_s", r.quick.t_upper_s}};
  json ops = json::array();
  ops_json("prefill", r.prefill_graph, r.prefill_ops, r.prefill.t_lower_s, ops);
  ops_json("decode", r.decode_graph, r.decode_ops, r.decode_last.t_lower_s, ops);
  j["ops"] = ops;
  return j;
}

std::string inference_text(const model::ModelConfig& m, const hw::System& sys, const analysis::InferenceConfig& cfg,
                           const analysis::InferenceResult& r, bool all_ops) {
  const bool whole_experts = cfg.forward.experts == model::ForwardConfig::Experts::expert;
  std::string out = fmt::format("{} on {} x {} (tp {}, ep {}{}): batch {}, prompt {}, gen {}\n", m.name, r.chips,
                                sys.chip.display_name, cfg.forward.tp, cfg.forward.ep, whole_experts ? ", experts ep" : "", cfg.batch,
                                cfg.prompt, cfg.gen);
  out += fmt::format("params {:.2f}B ({:.2f}B active per token)\n", r.params / 1e9, r.active_params / 1e9);
  if (r.expert_imbalance_prefill > 0) {
    out += fmt::format("expert load: the busiest GPU routes {:.3g}x the mean token-expert pairs in prefill, {:.3g}x in a decode step: {}\n",
                       r.expert_imbalance_prefill, r.expert_imbalance_decode, expert_imbalance_source(m, r, cfg.forward));
  }
  {
    const auto& p = cfg.forward.precision;
    out += fmt::format("dtypes: weights {}, activations {}, KV cache {}, GEMMs in {}\n\n",
                       p.weight ? std::string(name(*p.weight)) : std::string(name(m.checkpoint_dtype())),
                       name(p.activation), name(p.kv_cache.value_or(p.activation)), gemm_compute(r.prefill_graph));
  }
  out += fmt::format("{:<22} {:>12} {:>12} {:>12}  {}\n", "", "lower", "realistic", "upper", "bound");
  auto row = [&](const char* label, const analysis::PhaseTimes& p, double div) {
    out += fmt::format("{:<22} {:>12} {:>12} {:>12}  {}\n", label, t(p.t_lower_s / div), t(p.t_realistic_s / div),
                       t(p.t_upper_s / div), ops::name(p.bound));
  };
  row("prefill (TTFT)", r.prefill, 1);
  if (cfg.gen > 1) {
    row("decode, first step", r.decode_first, 1);
    row("decode, last step", r.decode_last, 1);
    row("decode, mean (TPOT)", r.decode_total, static_cast<double>(cfg.gen - 1));
  }
  out += fmt::format("{:<22} {:>12} {:>12} {:>12}\n", "end to end", t(r.e2e_lower_s), t(r.e2e_s), t(r.e2e_upper_s));
  out += error_band_text(answer_class("static", m, cfg.forward, sys.chip));
  out += fmt::format("\nthroughput  {:.1f} tokens/s ({:.1f} generated), {:.1f} per chip\n", r.throughput_tokens_per_s,
                     r.output_tokens_per_s, r.throughput_tokens_per_s / r.chips);
  const auto& mem = r.memory;
  out += fmt::format("memory/chip weights {}, KV cache {} ({} per token), activations {}: {} of {} usable ({:g}% of {}) -> {}\n",
                     size(mem.weights_bytes), size(mem.kv_cache_bytes), size(mem.kv_bytes_per_token), size(mem.activations_bytes),
                     size(mem.total_bytes), size(mem.capacity_bytes), 100 * cfg.memory_utilization,
                     size(sys.chip.main_capacity_bytes()), mem.fits ? "fits" : "DOES NOT FIT");
  if (!mem.fits) {
    out += "            (the times above are what it would take if it fit: more chips (--chips N, --tp N), fp8 or fp4 weights "
           "(--weight-dtype), or `ridgeline search infer` for the layouts that fit)\n";
  }
  out += fmt::format("max batch   {} at {} tokens of context\n", r.max_batch, cfg.prompt + cfg.gen);
  if (r.critical_batch > 0) {
    out += fmt::format("decode GEMMs turn compute-bound at batch {:.0f}\n", std::ceil(r.critical_batch));
  } else {
    out += "decode GEMMs never turn compute-bound in these dtypes\n";
  }
  if (cfg.gen > 1) {
    // CUDA graphs are a GPU's; elsewhere the same saving is a step replayed as one captured graph.
    out += fmt::format("launches    {} kernels per decode step x {} = {}; {} {} per step{}\n",
                       r.decode_last.launches, t(r.launch_overhead_s), t(r.decode_launch_s),
                       sys.chip.kind == "gpu" ? "CUDA graphs save" : "one captured graph per step (--cuda-graphs) would save", t(r.cuda_graphs_gain_s),
                       cfg.cuda_graphs ? " (on)" : "");
  }
  if (cfg.gen > 1 && (r.decode_total.kernel_fixed_s > 0 || r.decode_total.link_latency_s > 0)) {
    // What a step costs whatever its bytes and FLOPs: kernels' fixed times and collective latency.
    const double n = static_cast<double>(cfg.gen - 1), step = r.decode_total.t_realistic_s / n;
    const double fixed = r.decode_total.kernel_fixed_s / n, lat = r.decode_total.link_latency_s / n;
    out += fmt::format("floor       of a {} decode step: kernels' fixed times {} ({:.0f}%), collective latency {} ({:.0f}%)\n",
                       t(step), t(fixed), 100 * fixed / step, t(lat), 100 * lat / step);
  }
  if (cfg.spec.on() && cfg.gen > 1) {
    const analysis::SpeculativeDecode& sd = r.spec;
    out += fmt::format("speculative {} drafts {} token{}, {:.3g} a step: verification {} .. {} + draft {} .. {} per step, "
                       "{:.4g} steps\n",
                       cfg.spec.draft->name, cfg.spec.k, cfg.spec.k == 1 ? "" : "s", sd.tokens_per_step, t(sd.verify_first_s), t(sd.verify_last_s),
                       t(sd.draft_first_s), t(sd.draft_last_s), sd.steps);
    out += fmt::format("            TTFT {} (draft prefill {}), TPOT {} ({:.2f}x), end to end {}, {:.1f} tokens/s generated; {}\n",
                       t(sd.ttft_s), t(sd.draft_prefill_s), t(sd.tpot_s), sd.speedup, t(sd.e2e_s), sd.output_tokens_per_s,
                       sd.break_even ? fmt::format("breaks even at alpha {:.3f} (one rate at every position)", sd.break_even_accept)
                                     : std::string("no acceptance rate pays for the drafts"));
    out += fmt::format("            draft weights {}, draft KV cache {} per chip -> {}\n", size(sd.draft_weights_bytes),
                       size(sd.draft_kv_cache_bytes), sd.fits ? "fits" : "DOES NOT FIT");
  }
  out += fmt::format("quick (seed 001) per decode step: memory {}, compute {}, network {} -> {} .. {}\n", t(r.quick.t_memory_s),
                     t(r.quick.t_compute_s), t(r.quick.t_network_s), t(r.quick.t_lower_s), t(r.quick.t_upper_s));
  if (sys.chip.write_allocate) {
    out += fmt::format("stores      {}\n", kStoresAllocate);
  }

  auto table = [&](const char* title, const model::Graph& g, const std::array<analysis::OpRow, model::Graph::kMaxOps>& rows,
                   const analysis::PhaseTimes& p, const std::array<double, hw::kKernelClassCount>& by_class) {
    out += fmt::format("\n{}: lower bounds by kind", title);
    for (int c = 0; c < 6; ++c) {
      if (p.lower_by_class_s[c] > 0) {
        out += fmt::format("  {} {:.1f}%", model::name(static_cast<model::OpClass>(c)), 100 * p.lower_by_class_s[c] / p.t_lower_s);
      }
    }
    out += "\n";
    if (const std::string by = by_class_text(by_class); !by.empty()) {
      out += fmt::format("  realistic by kernel class: {}\n", by);
    }
    int group = -1;
    for (int i = 0; i < g.op_count; ++i) {
      const auto& op = g.ops[i];
      const auto& e = rows[i].e;
      const double share = p.t_lower_s > 0 ? e.t_lower_s * g.repeat(i) / p.t_lower_s : 0;
      if (!all_ops && share < 0.005) continue;
      if (op.group != group) {
        group = op.group;
        out += fmt::format("  {} (x{:g})\n", g.groups[group].name, g.groups[group].repeat);
        out += fmt::format("    {:<20} {:>10} {:>10} {:>9} {:>8} {:>10} {:>6} {:>10}  {}\n", "op", "FLOPs", "bytes", "FLOP/B", "bound",
                           "lower", "share", "realistic", "kernel class");
      }
      out += fmt::format("    {:<20} {:>10} {:>10} {:>9.3g} {:>8} {:>10} {:>5.1f}% {:>10}  {}\n", op.name, format_si(e.flops),
                         size(e.main_bytes), e.intensity_flops_per_byte, ops::name(e.bound), t(e.t_lower_s), 100 * share,
                         t(e.t_realistic_s), hw::name(op.kernel));
    }
  };
  table("prefill", r.prefill_graph, r.prefill_ops, r.prefill, r.prefill_by_class_s);
  if (cfg.gen > 1) table("decode (last step)", r.decode_graph, r.decode_ops, r.decode_last, r.decode_last_by_class_s);
  if (!all_ops) out += "\n(ops under 0.5% of a phase hidden; --all-ops shows every op)\n";
  return out;
}

std::string quick_text(const analysis::InferenceConfig& cfg, const analysis::InferenceResult& r) {
  std::string out = "seed 001's closed form, one decode step:\n";
  out += fmt::format("  t_mem     = memory / bandwidth          {}\n", t(r.quick.t_memory_s));
  out += fmt::format("  t_compute = 2·B·P_active / peak          {}\n", t(r.quick.t_compute_s));
  out += fmt::format("  T_network = 4(N-1)·B·D·S·L / link        {}\n", t(r.quick.t_network_s));
  out += fmt::format("  TPOT      = {} .. {} (max .. sum)\n", t(r.quick.t_lower_s), t(r.quick.t_upper_s));
  if (cfg.gen > 1) {
    out += fmt::format("detailed TPOT: {} .. {} (lower .. upper), {} realistic; the detailed model reads what each\n",
                       t(r.decode_total.t_lower_s / static_cast<double>(cfg.gen - 1)),
                       t(r.decode_total.t_upper_s / static_cast<double>(cfg.gen - 1)), t(r.tpot_s));
    out += "kernel reads (not the whole memory), charges kernels shorter than a launch at the launch\n";
    out += "overhead, and counts the tensor-parallel all-reduces instead of 4 all-gathers per layer.\n";
  }
  return out;
}

namespace {
constexpr const char* kParts[4] = {"gemm", "attention", "memory", "comm"};
}

json block_json(const analysis::BlockConfig& cfg, const hw::System& sys, const analysis::BlockResult& r) {
  json j;
  j["hw"] = sys.chip.name;
  j["seq"] = cfg.seq;
  j["hidden"] = cfg.hidden;
  j["intermediate"] = cfg.intermediate > 0 ? cfg.intermediate : 8.0 / 3.0 * static_cast<double>(cfg.hidden);
  j["heads"] = cfg.heads;
  j["kv_heads"] = cfg.kv_heads;
  j["cp"] = cfg.cp;
  j["shapes"] = cfg.seed_shapes ? "seed" : "exact";
  j["gemm_unit_s"] = r.gemm_unit_s;
  j["ops"] = json::array();
  for (int i = 0; i < r.count; ++i) {
    const auto& op = r.ops[i];
    j["ops"].push_back({{"name", op.name},
                        {"part", kParts[static_cast<int>(op.part)]},
                        {"units", op.units},
                        {"t_s", op.t_s},
                        {"bound", std::string(ops::name(op.bound))}});
  }
  json parts = json::object();
  for (int p = 0; p < 4; ++p) parts[kParts[p]] = r.units_by_part[p];
  j["units_by_part"] = parts;
  j["total_units"] = r.total_units;
  return j;
}

std::string block_text(const analysis::BlockConfig& cfg, const hw::System& sys, const analysis::BlockResult& r) {
  std::string out = fmt::format("one block, s = {}, h = {}, cp = {}, {} shapes, on {}\n", cfg.seq, cfg.hidden, cfg.cp,
                                cfg.seed_shapes ? "seed 000's" : "exact", sys.chip.display_name);
  out += fmt::format("unit: one ({},{})x({},{}) GEMM = {}\n\n", cfg.seq, cfg.hidden, cfg.hidden, cfg.hidden, t(r.gemm_unit_s));
  out += fmt::format("  {:<16} {:>10} {:>10}  {}\n", "op", "units", "time", "bound");
  for (int i = 0; i < r.count; ++i) {
    const auto& op = r.ops[i];
    out += fmt::format("  {:<16} {:>10.4f} {:>10}  {}\n", op.name, op.units, t(op.t_s), ops::name(op.bound));
  }
  out += "\n";
  for (int p = 0; p < 4; ++p) out += fmt::format("  {:<16} {:>10.4f}\n", kParts[p], r.units_by_part[p]);
  out += fmt::format("  {:<16} {:>10.4f}\n", "total", r.total_units);
  return out;
}

}  // namespace ridgeline::report
