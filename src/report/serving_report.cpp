// `serve` reports: text, JSON, per-request rows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/report/serving.hpp"

#include "ridgeline/planning/fleet.hpp"
#include "ridgeline/report/error_band.hpp"
#include "kernel_classes.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

using nlohmann::json;
using serving::ServingResult;

namespace {

// A host time of `step` a step and `per_request` a running request: "400 us + 1.1 us/request",
// or one time a step when nothing is per request (vLLM V0's scheduler, SGLang 0.3's loop,
// --step-overhead).
std::string host_time(double step, double per_request) {
  return per_request > 0 ? fmt::format("{} + {}/request", t(step), t(per_request)) : t(step);
}

// A capture list with its runs of four or more sizes an equal step apart written as one:
// "1, 2, 4, 8 to 256 in steps of 8, 272 to 512 in steps of 16".
std::string size_list_text(const std::vector<std::int64_t>& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t j = i + 1;
    if (j < s.size()) {
      const std::int64_t d = s[j] - s[i];
      while (j + 1 < s.size() && s[j + 1] - s[j] == d) ++j;
    }
    if (!out.empty()) out += ", ";
    if (j < s.size() && j - i + 1 >= 4) {
      out += fmt::format("{} to {} in steps of {}", s[i], s[j], s[i + 1] - s[i]);
      i = j + 1;
    } else {
      out += fmt::format("{}", s[i]);
      ++i;
    }
  }
  return out;
}

std::string graphs_text(const serving::EngineConfig& e) {
  if (e.decode_graphs == serving::GraphMode::eager && e.mixed_graphs == serving::GraphMode::eager) return "kernels launched eagerly";
  if (e.decode_graphs == serving::GraphMode::piecewise && e.mixed_graphs == serving::GraphMode::piecewise) {
    // vLLM 0.8's MLA attention op holds q_proj to o_proj's all-reduce (EngineConfig::mla_op).
    const char* eager = e.mla_op == model::ForwardConfig::MlaOp::projections ? "attention (with MLA, its op from q_proj to o_proj's all-reduce)"
                                                                              : "attention";
    std::string s = e.graph_max_tokens > 0 ? fmt::format("steps of up to {} tokens as piecewise graphs, {} launched eagerly between them; "
                                                         "longer steps eagerly",
                                                         e.graph_max_tokens, eager)
                                           : fmt::format("every step as piecewise graphs, {} launched eagerly between them", eager);
    if (!e.graph_sizes.empty()) {
      s += fmt::format("; a step padded to the next captured size ({}): the padding rows' kernels but attention priced",
                       size_list_text(e.graph_sizes));
    }
    return s;
  }
  std::string s = e.graph_exact_sizes
                      ? fmt::format("decode steps of 1-32, 64 or {} sequences as one graph, other decode steps as mixed ones",
                                    e.graph_max_batch)
                      : fmt::format("decode steps up to {} {} as {}", e.graph_max_batch, e.graph_max_tokens > 0 ? "tokens" : "sequences",
                                    e.decode_graphs == serving::GraphMode::graph ? "one graph" : std::string(serving::name(e.decode_graphs)));
  if (!e.graph_sizes.empty()) {
    s += fmt::format(", a {} padded to the next captured size ({}): the padding rows' kernels but attention priced",
                     e.graph_max_tokens > 0 ? "step" : "batch", size_list_text(e.graph_sizes));
  }
  if (e.mixed_graphs == serving::GraphMode::piecewise) {
    s += e.graph_max_tokens > 0 ? fmt::format(", other steps of up to {} tokens piecewise graphs, longer ones eagerly", e.graph_max_tokens)
                                : ", other steps piecewise graphs";
  }
  // Off the presets' own (V1: 512 tokens; V0: 256 sequences, its default limit's), the largest
  // graph is the one vLLM sizes from the sequence limit.
  // (Under speculative decoding the size before vLLM rounds it to the drafts' query.)
  const std::int64_t largest = e.graph_capture_max > 0 ? e.graph_capture_max : e.graph_max_batch;
  if (e.capture_follows_seqs && largest != (serving::is_vllm_v0(e.ref()) ? 256 : serving::kVllmLargestGraph)) {
    s += fmt::format(" (vLLM's largest graph from max_num_seqs {}; --graph-max-batch sets it)", e.max_num_seqs);
  }
  return s;
}

// Where a decode step's kernel fixed times come from: the chip's kernel-class figures (fitted
// to the curves of its file, each curve with its source: `hw show CHIP`), else its kernel
// boundary alone.
std::string fixed_times_source(const hw::ChipSpec& c) {
  std::string classes;
  for (int k = 0; k < hw::kKernelClassCount; ++k) {
    if (c.efficiency.kernel[static_cast<std::size_t>(k)].overhead_s <= 0) continue;
    classes += fmt::format("{}{}", classes.empty() ? "" : ", ", hw::name(static_cast<hw::KernelClass>(k)));
  }
  if (classes.empty()) return fmt::format("{}'s kernel boundary, no kernel curve (hw show {})", c.name, c.name);
  return fmt::format("{}'s kernel classes {} (their curves and sources: hw show {})", c.name, classes, c.name);
}

// Each target's percentile as its class's median error says a measurement would read it:
// predicted / (1 + e), e the metric's median error where negative (planning::band_lean; 0
// elsewhere, the prediction as it is).
struct BandRead {
  const serving::SloTarget* target = nullptr;
  double predicted_s = 0, error = 0, expected_s = 0;
  std::string from;  // the pool a class without rows of the metric borrows its error from
  bool within = false;
};
std::vector<BandRead> band_reads(const std::string& cls, const serving::Slo& slo, const serving::ServingResult& r) {
  std::vector<BandRead> out;
  for (const serving::SloTarget& g : slo.targets) {
    BandRead b;
    b.target = &g;
    b.predicted_s = serving::statistic(serving::summary_of(r, g.metric), g.q);
    const planning::BandLean l = planning::band_lean(cls, g.metric);
    b.error = l.error;
    b.from = l.from;
    b.expected_s = b.predicted_s / (1 + b.error);
    b.within = b.expected_s <= g.limit_s;
    out.push_back(b);
  }
  return out;
}

// The run's class in the validation table (docs/serving.md#errors-by-class).
std::string run_class(const model::ModelConfig& m, const hw::System& sys, const serving::ServeConfig& cfg, const serving::ServingResult& r) {
  return answer_class(serving::band_name(r.engine.ref()), m, cfg.forward, sys.chip);
}

// A mean request's time by part, as the text and the JSON give it (means add up: TTFT = front
// end + unread + queue + its prompt's steps + its first token's output lag; E2E = TTFT + its
// decode steps).
struct RequestParts {
  double queue_s, prefill_s, decode_s;
};
RequestParts request_parts(const serving::ServingResult& r) {
  return {std::max(0.0, r.queue.mean - r.unread_s), std::max(0.0, r.ttft.mean - r.engine.front_end_s - r.queue.mean - r.output_lag_s),
          std::max(0.0, r.e2e.mean - r.ttft.mean)};
}

}  // namespace

std::string engine_label(const serving::EngineConfig& e) {
  return fmt::format("{} ({})", serving::name(e.ref()), e.releases);
}

json engine_json(const serving::EngineConfig& e) {
  return {{"name", serving::name(e.ref())},
          {"releases", e.releases},
          {"max_batched_tokens", e.max_batched_tokens},
          {"max_num_seqs", e.max_num_seqs},
          {"max_prefill_tokens", e.max_prefill_tokens},
          {"chunked_prefill", e.chunked_prefill},
          {"mixed_chunk", e.mixed_chunk},
          {"kv_block", e.kv_block},
          {"kv_memory_fraction", e.kv_memory_fraction},
          {"prefix_caching", e.prefix_caching},
          {"fused_attention", e.fused_attention},
          {"decode_graphs", std::string(serving::name(e.decode_graphs))},
          {"mixed_graphs", std::string(serving::name(e.mixed_graphs))},
          {"graph_max_batch", e.graph_max_batch},
          {"graph_max_tokens", e.graph_max_tokens},
          {"capture_follows_seqs", e.capture_follows_seqs},
          {"mla_attention_op", e.mla_op == model::ForwardConfig::MlaOp::projections ? "projections"
                               : e.mla_op == model::ForwardConfig::MlaOp::absorbed  ? "absorbed"
                                                                                     : "attention"},
          {"mla_op_host_s", e.mla_op_host_s},
          {"mla_op_call_host_s", e.mla_op_call_host_s},
          {"mla_op_host_source", e.mla_op_host_source},
          {"mla_pad_v", e.mla_pad_v},
          {"mxfp4_expert_align", e.mxfp4_expert_align},
          {"expert_tiles_from_tokens", e.expert_tiles.from_tokens},
          {"expert_swap_ab_below", e.expert_tiles.swap_below},
          {"expert_small_tiles_upto", e.expert_tiles.small_upto},
          {"step_overhead_s", e.step_overhead_s},
          {"per_request_overhead_s", e.per_request_overhead_s},
          {"host_source", e.host_source},
          {"front_end_s", e.front_end_s},
          {"front_end_source", e.front_end_source},
          {"eager_host_s", e.eager_host_s},
          {"eager_host_source", e.eager_host_source},
          {"compiled_host_s", e.compiled_host_s},
          {"compiled_host_source", e.compiled_host_source},
          {"overlap_scheduling", e.overlap_scheduling},
          {"exposed_step_s", e.exposed_step_s},
          {"async_step_s", e.async_step_s},
          {"async_per_request_s", e.async_per_request_s},
          {"outputs_in_step", e.outputs_in_step},
          {"prefills_apart", e.prefills_apart},
          {"num_scheduler_steps", e.scheduler_steps},
          {"scheduler_recv_interval", e.recv_interval},
          {"graph_exact_sizes", e.graph_exact_sizes},
          {"graph_sizes", e.graph_sizes},
          {"preemption", e.preemption == serving::Preemption::swap ? "swap" : "recompute"},
          {"collective_algo", std::string(comm::name(e.collective_algo))},
          {"custom_allreduce_max_bytes", e.custom_allreduce_max_bytes},
          {"nccl_nvls", e.nccl_nvls},
          {"kernels", e.merged_kernels ? "merged" : "unfused"},
          {"block_fp8_gemms", e.scaled_gemm == model::ForwardConfig::ScaledGemm::deepgemm ? "deepgemm"
                              : e.rocm_aiter                                                 ? "aiter"
                                                                                             : "triton"},
          {"rocm_aiter", e.rocm_aiter},
          {"moe_a2a", model::name(e.moe_a2a)},
          {"gathered_dense", e.gathered_dense},
          {"fused_qkv_a", e.fused_qkv_a},
          {"fuse_shared_experts", e.fuse_shared_experts},
          {"moe_backend", e.moe_backend.empty() ? json(nullptr) : json(std::string(e.moe_backend))},
          {"allreduce_norm", e.allreduce_norm},
          {"allreduce_norm_max_tokens", e.allreduce_norm_max_tokens},
          {"allreduce_norm_source", e.allreduce_norm_source},
          {"pdl", e.pdl},
          {"pdl_source", e.pdl_source},
          {"sampler", e.sampler == model::ForwardConfig::Sampler::probs ? "probs" : "argmax"},
          {"draw", e.draw == model::ForwardConfig::Draw::flashinfer    ? "flashinfer"
                   : e.draw == model::ForwardConfig::Draw::multinomial ? "multinomial"
                                                                        : "exponential"},
          {"draw_source", e.draw_source},
          {"sources", e.sources}};
}

json summary_json(const serving::Summary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p95", s.p95}, {"p99", s.p99}, {"min", s.min}, {"max", s.max},
          {"count", s.count}};
}

std::string arrival_text(const serving::WorkloadSpec& w) {
  switch (w.arrival) {
    case serving::Arrival::poisson: return fmt::format("Poisson arrivals at {:g} req/s", w.qps);
    case serving::Arrival::gamma: return fmt::format("gamma arrivals (CV {:g}) at {:g} req/s", w.cv, w.qps);
    case serving::Arrival::constant: return fmt::format("one request every {}", t(1 / w.qps));
    case serving::Arrival::closed:
      if (w.think.kind != serving::ThinkTime::Kind::none) {
        return fmt::format("{} users (closed loop), each thinking {} between its requests", w.concurrency, w.think.text);
      }
      return fmt::format("{} concurrent clients (closed loop)", w.concurrency);
    case serving::Arrival::trace: {
      const std::string trace =
          w.trace_name.empty() ? fmt::format("a trace of {} requests", w.open_trace ? w.requests : static_cast<std::int64_t>(w.trace.size()))
                               : "trace " + w.trace_name;
      if (w.retime == serving::Arrival::trace) return trace;
      serving::WorkloadSpec timed = w;
      timed.arrival = w.retime;
      return fmt::format("{} with {}", trace, arrival_text(timed));
    }
  }
  return "";
}

std::string rejections_text(const model::ModelConfig& m, const ServingResult& r) {
  const serving::Rejections& b = r.rejected_by;
  std::string s;
  auto add = [&](std::int64_t n, const std::string& what) {
    if (n > 0) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, what);
  };
  add(b.context, fmt::format("longer than the model's context of {} tokens (prompt + output)", m.max_positions));
  add(b.cache, fmt::format("beyond the KV cache of {} tokens per instance", r.memory.kv_tokens));
  add(b.budget, fmt::format("with a prompt beyond the step budget of {} tokens (prompts not chunked)", r.engine.max_batched_tokens));
  add(b.scheduler, "refused by the scheduler's margin on an empty instance");
  return s;
}

std::string lengths_text(const serving::WorkloadSpec& w) {
  if (w.arrival == serving::Arrival::trace) return "lengths from the trace";
  return fmt::format("prompt {}, gen {}", w.prompt.text, w.gen.text);
}

namespace {

// Whether the run measured the fleet in steady state, and over which window.
std::string steady_state_text(const ServingResult& r) {
  const serving::MeasuredWindow& ss = r.steady_state;
  const std::string stopped =
      ss.trend_stopped_s >= 0 ? fmt::format("running requests and KV use stopped trending at {}", t(ss.trend_stopped_s))
                              : std::string("running requests and KV use never stopped trending");
  if (ss.window) {
    if (!ss.reached && r.measured_requests == 0 && ss.warmup_requests == ss.sent) {
      return fmt::format("steady state: NO ({} before the run ended: nothing measured)\n", stopped);
    }
    return ss.reached ? fmt::format("steady state: yes ({}; measured from then for {}, throughput over that window)\n", stopped, t(ss.window_s))
                      : fmt::format("steady state: NO ({} by the {}th request: measured from there anyway)\n", stopped,
                                    ss.warmup_requests);
  }
  if (ss.reached) return fmt::format("steady state: yes ({}, before the first measured request)\n", stopped);
  if (ss.drained) {
    return fmt::format("steady state: NO (the warm-up drained first, as benchmark clients run one: the measured requests start on an "
                       "idle fleet, and the statistics include the ramp{}; --warmup-drain off keeps the load on)\n",
                       r.measured_requests > 1 ? " and the drain" : "");
  }
  return fmt::format("steady state: NO ({}{}: the statistics include the ramp{}; without --requests the run chooses its window)\n", stopped,
                     ss.trend_stopped_s >= 0 ? ", after the first measured request" : "", r.measured_requests > 1 ? " and the drain" : "");
}

}  // namespace

json serving_json(const model::ModelConfig& m, const hw::System& sys, const serving::ServeConfig& cfg, const ServingResult& r) {
  json j;
  j["model"] = m.name;
  j["hw"] = sys.chip.name;
  j["tp"] = cfg.forward.tp;
  j["ep"] = cfg.forward.ep;
  j["experts"] = cfg.forward.experts == model::ForwardConfig::Experts::expert ? "ep" : "tp";
  j["replicas"] = cfg.replicas;
  j["router"] = std::string(serving::name(cfg.router));
  j["engine"] = engine_json(r.engine);
  const serving::WorkloadSpec& w = cfg.workload;
  const bool trace = w.arrival == serving::Arrival::trace, timed = !trace || w.retime != serving::Arrival::trace;
  j["workload"] = {{"arrival", arrival_text(w)},
                   {"qps", w.arrival == serving::Arrival::closed || !timed ? json(nullptr) : json(w.qps)},
                   {"concurrency", w.arrival == serving::Arrival::closed ? json(w.concurrency) : json(nullptr)},
                   {"think_time", w.arrival == serving::Arrival::closed ? json(w.think.text) : json(nullptr)},
                   {"trace", trace && !w.trace_name.empty() ? json(w.trace_name) : json(nullptr)},
                   {"prompt", trace ? json(nullptr) : json(w.prompt.text)},
                   {"gen", trace ? json(nullptr) : json(w.gen.text)},
                   {"requests", cfg.window.on ? r.steady_state.sent : w.requests},
                   {"warmup_requests", cfg.window.on ? r.steady_state.warmup_requests : w.warmup},
                   {"warmup_drained", r.steady_state.drained},
                   {"seed", w.seed},
                   {"prefix_groups", w.prefix_groups},
                   {"prefix_tokens", w.prefix_tokens},
                   {"sampling", cfg.forward.sampling == model::ForwardConfig::Sampling::random ? "random" : "greedy"}};
  const std::string cls = run_class(m, sys, cfg, r);
  j["error_band"] = error_band_json(cls);
  if (cfg.slo.any()) {
    json targets = json::object();
    bool met = true;
    for (const BandRead& b : band_reads(cls, cfg.slo, r)) {
      met = met && b.within;
      targets[serving::name(*b.target)] = {{"predicted_s", b.predicted_s}, {"median_error", b.error},
                                           {"error_from", b.from.empty() ? json(nullptr) : json(b.from)}, {"expected_s", b.expected_s},
                                           {"target_s", b.target->limit_s}, {"within", b.within}};
    }
    j["slo_with_error_band"] = {{"class", cls}, {"met", met}, {"targets", targets}};
  }
  j["ttft_s"] = summary_json(r.ttft);
  j["tpot_s"] = summary_json(r.tpot);
  j["itl_s"] = summary_json(r.itl);
  j["e2e_s"] = summary_json(r.e2e);
  j["queue_s"] = summary_json(r.queue);
  j["cdf"] = {{"q", r.cdf.q}, {"ttft_s", r.cdf.ttft_s}, {"tpot_s", r.cdf.tpot_s}, {"itl_s", r.cdf.itl_s}, {"e2e_s", r.cdf.e2e_s}};
  j["requests_per_s"] = r.requests_per_s;
  j["input_tokens_per_s"] = r.input_tokens_per_s;
  j["output_tokens_per_s"] = r.output_tokens_per_s;
  j["output_tokens_per_s_per_gpu"] = r.output_tokens_per_s_per_gpu;
  j["gpus"] = r.gpus;
  if (cfg.slo.any()) {
    j["goodput_requests_per_s"] = r.goodput_requests_per_s;
    j["slo_attainment"] = r.slo_attainment;
    j["slo_met"] = r.slo_met;
  }
  const serving::MeasuredWindow& ss = r.steady_state;
  j["steady_state"] = {{"reached", ss.reached},
                       {"window", ss.window ? "chosen by the run" : "the requests given"},
                       {"drained", ss.drained},
                       {"warmup_s", ss.warmup_s},
                       {"window_s", ss.window_s},
                       {"trend_stopped_s", ss.trend_stopped_s >= 0 ? json(ss.trend_stopped_s) : json(nullptr)},
                       {"warmup_requests", ss.warmup_requests},
                       {"measured_requests", r.measured_requests},
                       {"cooldown_requests", ss.cooldown_requests}};
  j["sustainable"] = r.sustainable;
  if (!r.sustainable) j["max_sustainable_qps"] = r.max_sustainable_qps > 0 ? json(r.max_sustainable_qps) : json(nullptr);
  j["unsustainable_reason"] = r.sustainable ? json(nullptr) : json(std::string(serving::name(r.unsustainable)));
  j["served_fraction"] = r.served_fraction > 0 ? json(r.served_fraction) : json(nullptr);
  j["preemptions"] = r.preemptions;
  j["prefix_hit_rate"] = r.prefix_hit_rate;
  j["kv_utilisation"] = {{"mean", r.kv_utilisation_mean}, {"max", r.kv_utilisation_max}};
  j["simulated_requests"] = r.simulated_requests;
  j["measured_requests"] = r.measured_requests;
  j["rejected_requests"] = r.rejected;
  j["rejected_by"] = {{"context", r.rejected_by.context}, {"cache", r.rejected_by.cache}, {"budget", r.rejected_by.budget},
                      {"scheduler", r.rejected_by.scheduler}};
  j["unfinished_requests"] = r.unfinished;
  j["horizon_reached"] = r.horizon_reached;
  j["makespan_s"] = r.makespan_s;
  j["measured_span_s"] = r.measured_span_s;
  j["steps"] = {{"total", r.steps}, {"decode", r.decode_steps}, {"prefill", r.prefill_steps}, {"mixed", r.mixed_steps},
                {"mean_s", r.mean_step_s}, {"mean_decode_batch", r.mean_decode_batch}};
  // A composed step: its parts and where each comes from.
  const auto composition = [&](const serving::StepComposition& c) {
    json o = {{"device_s", c.device_s},       {"kernel_fixed_s", c.kernel_fixed_s},
              {"link_latency_s", c.link_latency_s}, {"kernels", c.kernels},
              {"host_s", c.host_s},           {"launch", serving::name(c.launch)},
              {"host_launches", c.host_launches}, {"compiled_launches", c.compiled_launches}, {"mla_op_launches", c.mla_op_launches},
              {"mla_op_calls", c.mla_op_calls},
              {"eager_host_s", c.eager_host_s}};
    o["by_kernel_class_s"] = by_class_json(c.by_class_s);
    o["sources"] = {{"device", fmt::format("{}'s rates and efficiencies (hw show {})", sys.chip.name, sys.chip.name)},
                    {"kernel_fixed", fixed_times_source(sys.chip)},
                    {"link_latency", fmt::format("{}'s links and collectives (hw show {})", sys.chip.name, sys.chip.name)},
                    {"host", r.engine.host_source},
                    {"eager_host", r.engine.eager_host_source}};
    if (r.engine.compiled_host_s > 0) o["sources"]["compiled_host"] = r.engine.compiled_host_source;
    if (c.mla_op_launches > 0) o["sources"]["mla_op_host"] = r.engine.mla_op_host_source;
    return o;
  };
  const serving::DecodeStepComposition& d = r.decode_step;
  j["decode_step"] = composition(d);
  j["decode_step"]["sequences"] = d.sequences;
  j["decode_step"]["context"] = d.context;
  j["decode_step"]["padded_sequences"] = d.padded_sequences;
  if (!d.expert_imbalance_source.empty()) {
    j["decode_step"]["expert_imbalance"] = d.expert_imbalance;
    j["decode_step"]["sources"]["expert_imbalance"] = d.expert_imbalance_source;
  }
  const serving::PromptStepComposition& ps = r.prompt_step;
  if (ps.steps > 0) {
    j["prompt_step"] = composition(ps);
    j["prompt_step"].update({{"steps", ps.steps}, {"chunks", ps.chunks}, {"chunk_tokens", ps.chunk_tokens}, {"chunk_context", ps.chunk_context},
                             {"decodes", ps.decodes}, {"decode_context", ps.decode_context}, {"launch_tokens", ps.launch_tokens}});
  }
  // A mean request's time by part (request_parts).
  const RequestParts parts = request_parts(r);
  j["request"] = {{"front_end_s", r.engine.front_end_s},
                  {"unread_s", r.unread_s},
                  {"queue_s", parts.queue_s},
                  {"prefill_s", parts.prefill_s},
                  {"output_s", r.output_lag_s},
                  {"decode_s", parts.decode_s},
                  {"sources", {{"front_end", r.engine.front_end_source},
                               {"unread", r.engine.recv_interval > 1 ? serving::kUnreadSource : "none: read every step"},
                               {"queue", "the simulation"}, {"prefill", "the simulated steps"},
                               {"output", serving::engine_outputs_next_step(r.engine) ? serving::kOutputLagSource : "none: sent as computed"},
                               {"decode", "the simulated steps"}}}};
  if (cfg.spec.on()) {
    const serving::SpeculationCost& sc = r.speculation;
    json rates = json::array();
    for (int i = 0; i < cfg.spec.k; ++i) rates.push_back(cfg.spec.accept[static_cast<std::size_t>(i)]);
    j["speculation"] = {{"draft", cfg.spec.draft->name},
                        {"mtp", cfg.spec.mtp},
                        {"k", cfg.spec.k},
                        {"accept", rates},
                        {"accept_form", std::string(model::name(cfg.spec.form))},
                        {"accept_given", model::accept_arg(cfg.spec, cfg.spec.k)},
                        {"tokens_per_step", model::tokens_per_step(cfg.spec)},
                        {"verify_s", sc.verify_s},
                        {"draft_s", sc.draft_s},
                        {"plain_s", sc.plain_s},
                        {"speedup", sc.speedup},
                        {"break_even_accept", sc.break_even ? json(sc.break_even_accept) : json(nullptr)}};
  } else {
    j["speculation"] = nullptr;
  }
  auto memory_json = [](const serving::ServeMemory& mem) {
    return json{{"capacity_bytes", mem.capacity_bytes}, {"weights_bytes", mem.weights_bytes},
                {"activations_bytes", mem.activations_bytes}, {"reserved_bytes", mem.reserved_bytes},
                {"kv_bytes", mem.kv_bytes}, {"kv_bytes_per_token", mem.kv_bytes_per_token},
                {"draft_weights_bytes", mem.draft_weights_bytes}, {"draft_kv_bytes_per_token", mem.draft_kv_bytes_per_token},
                {"expert_pad_bytes", mem.expert_pad_bytes}, {"expert_pad_align", mem.expert_pad_align},
                {"kv_blocks", mem.kv_blocks}, {"kv_tokens", mem.kv_tokens}};
  };
  if (cfg.disagg.on()) {
    const serving::DisaggResult& x = r.disagg;
    j["disagg"] = {{"prefill", cfg.disagg.prefill}, {"decode", cfg.disagg.decode},
                   {"prefill_tp", cfg.forward.tp}, {"prefill_ep", cfg.forward.ep},
                   {"decode_tp", x.decode_tp}, {"decode_ep", x.decode_ep},
                   {"decode_max_num_seqs", x.decode_engine.max_num_seqs}, {"decode_max_batched_tokens", x.decode_engine.max_batched_tokens},
                   {"decode_moe_backend", x.decode_engine.moe_backend.empty() ? json(nullptr) : json(std::string(x.decode_engine.moe_backend))},
                   {"decode_memory", memory_json(x.decode_memory)},
                   {"kv_transfer", cfg.disagg.layerwise ? "layerwise" : "after"},
                   {"link", x.link}, {"link_Bps", x.link_Bps}, {"link_latency_s", x.link_latency_s},
                   {"transfer_s_mean", x.transfer_s_mean}, {"kv_wait_s_mean", x.kv_wait_s_mean},
                   {"bytes_per_request_mean", x.bytes_per_request_mean}, {"descriptor_s", x.descriptor_s},
                   {"descriptors_per_request_mean", x.descriptors_per_request_mean},
                   {"decode_hit_tokens_mean", x.decode_hit_tokens_mean}, {"prefill_rate", x.prefill_rate},
                   {"decode_rate", x.decode_rate}, {"prefill_per_decode", x.prefill_per_decode}};
  } else {
    j["disagg"] = nullptr;
  }
  j["mean_in_system"] = r.mean_in_system;
  j["mean_running"] = r.mean_running;
  j["mean_waiting"] = r.mean_waiting;
  j["mean_ending"] = r.mean_ending;
  j["memory"] = memory_json(r.memory);
  json tl = json::array();
  for (const serving::TimePoint& p : r.timeline) {
    tl.push_back({{"t_s", p.t_s}, {"running", p.running}, {"waiting", p.waiting}, {"kv_used", p.kv_used},
                  {"output_tokens_per_s", p.tokens_per_s}});
  }
  j["timeline"] = tl;
  j["wall_s"] = r.wall_s;
  j["simulated_requests_per_s"] = r.wall_s > 0 ? static_cast<double>(r.simulated_requests) / r.wall_s : 0;
  return j;
}

std::string engine_host_text(const model::ModelConfig& m, const serving::EngineConfig& e, std::string_view indent) {
  std::string s;
  if (e.step_overhead_s <= 0 && e.per_request_overhead_s <= 0 && e.exposed_step_s <= 0 && e.async_step_s <= 0 && e.async_per_request_s <= 0 &&
      !e.overlap_scheduling && e.scheduler_steps <= 1) {
    // No host time priced and nothing planned ahead (TensorRT-LLM's C++ executor, whose loop has
    // no published figure; the static engine): said so, with where that comes from.
    s += fmt::format("{}host: none priced per step{}\n", indent, e.host_source.empty() ? std::string() : fmt::format(" ({})", e.host_source));
  } else {
    s += fmt::format("{}host {} per step{}{}{}{}{}\n", indent, host_time(e.step_overhead_s, e.per_request_overhead_s),
                     e.overlap_scheduling ? ", overlapped with the device (the next step planned as one starts: a new request waits a step more)"
                                          : ", between device steps",
                     e.exposed_step_s > 0 ? fmt::format(", and {} exposed per step", t(e.exposed_step_s)) : std::string(),
                     e.scheduler_steps > 1 ? fmt::format(", once per window of {} decode steps (multi-step: a request arriving in a window "
                                                         "waits for its end)", e.scheduler_steps)
                                           : std::string(),
                     e.recv_interval > 1 ? fmt::format("; new requests read every {} decode steps (--scheduler-recv-interval: one arriving "
                                                       "among decode steps waits for the count; at once after a step with prompt tokens)",
                                                       e.recv_interval)
                                         : std::string(),
                     e.async_step_s > 0 ? fmt::format("; output processing {} {}", host_time(e.async_step_s, e.async_per_request_s),
                                                      e.outputs_in_step ? "after the device (its asynchronous processor off: no graphs, or a draft)"
                                                                        : "beside the device, a step's outputs sent during the next one")
                                        : std::string());
  }
  if (e.front_end_s > 0) {
    s += fmt::format("{}front end {} per request before the scheduler sees it (HTTP, tokenise, hand-over; first token back): in TTFT and E2E\n",
                     indent, t(e.front_end_s));
  }
  if (e.eager_host_s > 0) {
    s += fmt::format("{}eager kernels {} each on the host (its Python): a step launched outside a graph lasts at least its kernels "
                     "times that ({})\n",
                     indent, t(e.eager_host_s), e.eager_host_source);
  }
  if (e.compiled_host_s > 0) {
    s += fmt::format("{}compiled kernels {} each on the host outside a graph (every kernel but attention's, past the largest "
                     "graph: {})\n",
                     indent, t(e.compiled_host_s), e.compiled_host_source);
  }
  if (m.is_mla() && e.mla_op_host_s > 0) {
    // A prompt's kernels in the op: its latents' up-projection and its keys' assembly, and under
    // vLLM 0.8 V's padding and the output's slice (model::ForwardConfig::mla_pad_v).
    const std::string prompt = std::string("a prompt's kv_b_proj and keys' assembly") + (e.mla_pad_v ? ", V's padding and output's slice" : "");
    const std::string decode = "absorptions with FlashMLA's query concatenation and the output's reshape";
    const std::string call = e.mla_op_call_host_s > 0 ? fmt::format("{} a call (one a layer) and ", t(e.mla_op_call_host_s)) : "";
    s += fmt::format("{}MLA's attention op: {}{} each of its own kernels on the host outside a whole graph ({}; {})\n", indent, call,
                     t(e.mla_op_host_s),
                     e.mla_op == model::ForwardConfig::MlaOp::projections
                         ? fmt::format("RoPE's 16 PyTorch kernels a path, the cache write, {} or {}, attention, each path's output "
                                       "copied into the step's; its q_proj, o_proj and all-reduce at the eager kernels' time",
                                       decode, prompt)
                         : fmt::format("the cache write, {} or {}, attention, each path's output copied into the step's", decode, prompt),
                     e.mla_op_host_source);
  }
  return s;
}

std::string serving_text(const model::ModelConfig& m, const hw::System& sys, const serving::ServeConfig& cfg,
                         const ServingResult& r) {
  const serving::EngineConfig& e = r.engine;
  const serving::WorkloadSpec& w = cfg.workload;
  const std::int64_t chips = cfg.forward.tp * cfg.forward.ep;
  const std::string chip = sys.chip.display_name.empty() ? sys.chip.name : sys.chip.display_name;
  const serving::DisaggResult& dr = r.disagg;
  const bool own_decode = cfg.disagg.on() && (dr.decode_tp != cfg.forward.tp || dr.decode_ep != cfg.forward.ep);
  // "2", or "2, experts ep" with whole experts over each tp group (docs/serving.md#moe-layouts).
  const std::string ep = fmt::format("{}{}", cfg.forward.ep, cfg.forward.experts == model::ForwardConfig::Experts::expert ? ", experts ep" : "");
  std::string s = own_decode
                      ? fmt::format("{} on {} prefill instance{} of {} x {} (tp {}, ep {}) + {} decode instance{} of {} (tp {}, ep {}): {} engine\n",
                                    m.name, cfg.disagg.prefill, cfg.disagg.prefill == 1 ? "" : "s", chips, chip, cfg.forward.tp,
                                    ep, cfg.disagg.decode, cfg.disagg.decode == 1 ? "" : "s", dr.decode_tp * dr.decode_ep,
                                    dr.decode_tp, dr.decode_ep, engine_label(e))
                  : cfg.disagg.on()
                      ? fmt::format("{} on {} x {} (tp {}, ep {}) x ({} prefill + {} decode instances): {} engine\n", m.name, chips,
                                    chip, cfg.forward.tp, ep, cfg.disagg.prefill, cfg.disagg.decode, engine_label(e))
                      : fmt::format("{} on {} x {} (tp {}, ep {}) x {} replica{}: {} engine\n", m.name, chips, chip, cfg.forward.tp,
                                    ep, cfg.replicas, cfg.replicas == 1 ? "" : "s", engine_label(e));
  if (cfg.window.on) {
    const serving::MeasuredWindow& ss = r.steady_state;
    s += fmt::format("workload: {}, {}; {} requests chosen by the run ({} warm-up, {} measured, {} cool-down), seed {}\n", arrival_text(w),
                     lengths_text(w), ss.sent, ss.warmup_requests, r.measured_requests, ss.cooldown_requests, w.seed);
  } else {
    s += fmt::format("workload: {}, {}; {} requests ({} warm-up{}), seed {}\n", arrival_text(w), lengths_text(w),
                     w.arrival == serving::Arrival::trace && !w.open_trace ? static_cast<std::int64_t>(w.trace.size()) : w.requests, w.warmup,
                     r.steady_state.drained ? ", drained before the measured ones start" : "", w.seed);
  }
  if (w.prefix_groups > 0) s += fmt::format("          {} prefix groups sharing their first {} tokens\n", w.prefix_groups, w.prefix_tokens);
  if (cfg.forward.sampling == model::ForwardConfig::Sampling::random) {
    s += fmt::format("          sampled at a temperature, nothing cut: each step the logits divided by it, their softmax and a draw: {}\n",
                     e.draw_source);
  }
  // Attention data-parallel ranks: vLLM V1's and TensorRT-LLM's limits are each rank's; SGLang's
  // the server's, which it divides over its ranks (docs/serving.md#moe-layouts).
  const std::int64_t dp = cfg.forward.ep;
  std::string per_rank;
  if (dp > 1 && e.kind == serving::EngineKind::sglang) {
    per_rank = fmt::format(" (the server's: {} and {} per DP rank)", e.max_batched_tokens / dp, e.max_num_seqs / dp);
  } else if (serving::limits_per_rank(e, dp)) {
    per_rank = " per DP rank";
  }
  s += fmt::format("engine: {} tokens/step, {} sequences{}, {}, KV block {}, {}; {}\n", e.max_batched_tokens, e.max_num_seqs, per_rank,
                   e.chunked_prefill ? "chunked prefill" : "whole prompts", e.kv_block,
                   e.prefix_caching ? "prefix caching" : "no prefix caching", graphs_text(e));
  s += engine_host_text(m, e, "        ");
  if (e.allreduce_norm) {
    s += fmt::format("        each all-reduce with the residual add and RMSNorm after it as one kernel {} ({}; docs/serving.md#allreduce-norm)\n",
                     e.allreduce_norm_max_tokens > 0 ? fmt::format("up to {} tokens a step", e.allreduce_norm_max_tokens)
                                                     : std::string("wherever the engine's own all-reduce runs"),
                     e.allreduce_norm_source);
  }
  if (e.pdl) {
    const hw::EfficiencySpec& eff = sys.chip.efficiency;
    const double hidden = eff.pdl_hidden_s();
    s += fmt::format("        its own kernels launched with programmatic dependent launch, {} ({}; docs/cost-model.md#pdl)\n",
                     hidden > 0                ? fmt::format("each dispatched while the one before drains: {} of its boundary hidden", t(hidden))
                     : eff.pdl_overlap_s > 0 ? fmt::format("whose boundary on the {} is none: nothing to hide", sys.chip.name)
                                             : fmt::format("which no measurement found for the {} says hides anything: none priced",
                                                           sys.chip.name),
                     e.pdl_source);
  }
  const serving::ServeMemory& mem = r.memory;
  if (cfg.spec.on()) {
    // The rates as given, and each position's given the ones before where that differs.
    std::string rates = model::accept_arg(cfg.spec, cfg.spec.k);
    if (cfg.spec.form == model::AcceptForm::alpha) {
      rates = "alpha " + rates;
    } else {
      std::string cond = fmt::format("{:.3g}", cfg.spec.accept[0]);
      for (int i = 1; i < cfg.spec.k; ++i) cond += fmt::format(",{:.3g}", cfg.spec.accept[static_cast<std::size_t>(i)]);
      rates = cfg.spec.form == model::AcceptForm::vllm ? fmt::format("{} per position as vLLM reports them (each given the ones before: {})", rates, cond)
                                                        : fmt::format("{} (each given the ones before)", rates.substr(rates.find(':') + 1));
    }
    s += fmt::format("speculative decoding: {} drafts {} token{} a step, acceptance {}: {:.3g} tokens per verification step\n",
                     cfg.spec.draft->name, cfg.spec.k, cfg.spec.k == 1 ? "" : "s", rates, model::tokens_per_step(cfg.spec));
  }
  s += fmt::format("memory per chip: weights {}, activations {}, {}KV cache {} = {} tokens ({} blocks per {})\n",
                   size(mem.weights_bytes), size(mem.activations_bytes),
                   mem.reserved_bytes > 0 ? fmt::format("reserved {}{}, ", size(mem.reserved_bytes),
                                                        e.moe_a2a == model::ForwardConfig::MoeA2A::deepep ? " (DeepEP's buffers)" : "")
                                          : std::string(),
                   size(mem.kv_bytes), mem.kv_tokens, mem.kv_blocks, own_decode ? "prefill instance" : "replica");
  // The padding of MXFP4 experts (ServeMemory::expert_pad_bytes) under the memory line it is of.
  const auto pad_line = [](const serving::ServeMemory& x) {
    return x.expert_pad_bytes > 0 ? fmt::format("                 of the weights {} the MXFP4 experts' padding: each chip's widths "
                                                "rounded up to {} for the engine's fused MoE (FlashInfer's trtllm-gen), their "
                                                "products and reads priced too\n",
                                                size(x.expert_pad_bytes), x.expert_pad_align)
                                  : std::string();
  };
  s += pad_line(mem);
  if (cfg.spec.on()) {
    s += fmt::format("                 of which the draft's weights {}, its KV {} of {} per token\n", size(mem.draft_weights_bytes),
                     size(mem.draft_kv_bytes_per_token), size(mem.kv_bytes_per_token));
  }
  if (own_decode || (cfg.disagg.on() && (dr.decode_engine.max_num_seqs != e.max_num_seqs ||
                                          dr.decode_engine.max_batched_tokens != e.max_batched_tokens))) {
    const serving::EngineConfig& de = dr.decode_engine;
    const serving::ServeMemory& dm = dr.decode_memory;
    s += fmt::format("decode instances: {} tokens/step, {} sequences; per chip weights {}, activations {}, KV cache {} = {} tokens ({} blocks)\n",
                     de.max_batched_tokens, de.max_num_seqs, size(dm.weights_bytes), size(dm.activations_bytes), size(dm.kv_bytes),
                     dm.kv_tokens, dm.kv_blocks);
    s += pad_line(dm);
  }
  s += "\n";

  s += fmt::format("{:<8}{:>12}{:>12}{:>12}{:>12}{:>12}\n", "", "mean", "p50", "p90", "p95", "p99");
  auto row = [&](const char* name, const serving::Summary& d) {
    s += fmt::format("{:<8}{:>12}{:>12}{:>12}{:>12}{:>12}\n", name, t(d.mean), t(d.p50), t(d.p90), t(d.p95), t(d.p99));
  };
  row("TTFT", r.ttft);
  row("TPOT", r.tpot);
  row("ITL", r.itl);
  row("E2E", r.e2e);
  row("queue", r.queue);
  s += fmt::format("\nthroughput: {:.4g} req/s, {:.4g} input tok/s, {:.4g} output tok/s ({:.4g} per GPU, {} GPUs)\n",
                   r.requests_per_s, r.input_tokens_per_s, r.output_tokens_per_s, r.output_tokens_per_s_per_gpu, r.gpus);
  if (cfg.slo.any()) {
    s += fmt::format("SLO: {}; goodput {:.4g} req/s ({:.1f}% of requests within every target)\n",
                     r.slo_met ? "met" : "not met", r.goodput_requests_per_s, 100 * r.slo_attainment);
  }
  const std::string cls = run_class(m, sys, cfg, r);
  s += error_band_text(cls);
  if (cfg.slo.any()) {
    // The targets again, each percentile divided by 1 + its class's median error where the
    // class runs optimistic: what a measurement would typically read.
    // (Every target decides met; the line lists those the class reads optimistic.)
    std::string line;
    bool met = true;
    for (const BandRead& b : band_reads(cls, cfg.slo, r)) {
      met = met && b.within;
      if (!(b.error < 0)) continue;
      line += fmt::format("{}{} {} / (1 {:+.0f}%{}) = {} {} {}", line.empty() ? "" : "; ", serving::name(*b.target), t(b.predicted_s),
                          100 * b.error, b.from.empty() ? "" : " of " + b.from, t(b.expected_s), b.within ? "within" : "over",
                          t(b.target->limit_s));
    }
    if (!line.empty()) s += fmt::format("SLO with the class's median errors: {}: {}\n", met ? "met" : "likely missed", line);
  }
  s += fmt::format("steps: {:.0f}, mean {} ({:.0f} decode, {:.0f} prefill, {:.0f} mixed); mean decode batch {:.1f}\n", r.steps,
                   t(r.mean_step_s), r.decode_steps, r.prefill_steps, r.mixed_steps, r.mean_decode_batch);
  // A composed step's device time and its parts, its host time, and the kernels the host
  // launches outside a graph when there are any.
  const auto parts = [&](const serving::StepComposition& c) {
    std::string out = fmt::format("{} on the device, of which {:.0f} kernels' fixed times {} ({:.0f}%) and collective latency {} ({:.0f}%); host {}\n",
                                  t(c.device_s), c.kernels, t(c.kernel_fixed_s), 100 * c.kernel_fixed_s / c.device_s, t(c.link_latency_s),
                                  100 * c.link_latency_s / c.device_s, t(c.host_s));
    if (const std::string by = by_class_text(c.by_class_s); !by.empty()) out += fmt::format("  by kernel class: {}\n", by);
    if (c.eager_host_s > 0) {
      // The engine's Python kernels at its time, and the compiled model's at its own.
      const double python = c.host_launches - c.compiled_launches - c.mla_op_launches;
      std::string each;
      if (python > 0) each = fmt::format("{:.0f} at {} each", python, t(r.engine.eager_host_s));
      if (c.mla_op_launches > 0) {
        each += fmt::format("{}{:.0f} of MLA's attention op at {}", each.empty() ? "" : ", ", c.mla_op_launches, t(r.engine.mla_op_host_s));
        if (c.mla_op_calls > 0) each += fmt::format(" and its {:.0f} calls at {}", c.mla_op_calls, t(r.engine.mla_op_call_host_s));
      }
      if (c.compiled_launches > 0) {
        each += fmt::format("{}{:.0f} of the compiled model at {}", each.empty() ? "" : ", ", c.compiled_launches, t(r.engine.compiled_host_s));
      }
      out += fmt::format("  launched by the host outside a graph: {:.0f} kernels, {} ({}){}\n", c.host_launches, t(c.eager_host_s), each,
                         c.eager_host_s > c.device_s ? ": longer than the device's time, the step lasts that" : "");
    }
    return out;
  };
  // Where a composed step's parts come from (once, after the first step line).
  const std::string sources =
      fmt::format("  fixed times: {}; host: {}\n", fixed_times_source(sys.chip), r.engine.host_source.empty() ? "none" : r.engine.host_source);
  if (r.decode_step.device_s > 0) {
    const serving::DecodeStepComposition& d = r.decode_step;
    // Padded rows in a step launched eagerly: attention data-parallel ranks padded to the busiest's.
    const std::string pad = !(d.padded_sequences > d.sequences) ? ""
                            : d.launch == serving::GraphMode::eager
                                ? fmt::format(", its ranks padded to {:.0f} in all, docs/serving.md#rank-padding", d.padded_sequences)
                                : fmt::format(", run padded to {:.0f} in their graph, docs/serving.md#graph-padding", d.padded_sequences);
    s += fmt::format("a mean decode step ({:.0f} sequences at context {:.0f}{}): {}", d.sequences, d.context, pad, parts(d));
    s += sources;
    if (!d.expert_imbalance_source.empty()) {
      s += fmt::format("  expert load: the busiest GPU routes {:.3g}x the mean token-expert pairs: {}\n", d.expert_imbalance,
                       d.expert_imbalance_source);
    }
  }
  if (r.prompt_step.device_s > 0) {
    const serving::PromptStepComposition& p = r.prompt_step;
    const std::string decodes = p.decodes > 0 ? fmt::format(" and {:.3g} decode{} at context {:.0f}", p.decodes, p.decodes == 1 ? "" : "s", p.decode_context) : "";
    const std::string launch = launched(serving::name(p.launch));
    s += fmt::format("a mean step with prompt tokens ({:.0f} of {:.0f} steps; {:.3g} chunk{} of {:.0f} tokens to context {:.0f}{}, launched {}{}): {}", p.steps, r.steps,
                     p.chunks, p.chunks == 1 ? "" : "s", p.chunk_tokens, p.chunk_context, decodes, launch,
                     cfg.spec.on() ? "; the target model's" : "", parts(p));
    // (Sources as the decode step's line gives them, when there was none: prompts of one token out.)
    if (!(r.decode_step.device_s > 0)) s += sources;
  }
  if (r.measured_requests > 0) {
    const double fe = r.engine.front_end_s;
    const bool lag = serving::engine_outputs_next_step(r.engine);
    const bool unread = r.engine.recv_interval > 1;
    const RequestParts request = request_parts(r);
    s += fmt::format("a mean request: front end {}, {}queue {}, its prompt's steps {}{} (TTFT {}), then its decode steps {} (E2E {})\n", t(fe),
                     unread ? fmt::format("unread {} (new requests read every {} decode steps), ", t(r.unread_s), r.engine.recv_interval)
                            : std::string(),
                     t(request.queue_s), t(request.prefill_s),
                     lag ? fmt::format(", its first token sent during the next step {}", t(r.output_lag_s)) : std::string(), t(r.ttft.mean),
                     t(request.decode_s), t(r.e2e.mean));
    if (fe > 0) s += fmt::format("  front end: {}\n", r.engine.front_end_source);
    if (unread) s += fmt::format("  unread: {}\n", serving::kUnreadSource);
    if (lag) s += fmt::format("  output: {}\n", serving::kOutputLagSource);
  }
  if (cfg.spec.on() && r.speculation.plain_s > 0) {
    const serving::SpeculationCost& sc = r.speculation;
    s += fmt::format("speculation at that batch: verification {} + draft {} for {:.3g} tokens, against {} a token plainly: "
                     "{:.2f}x; {}\n",
                     t(sc.verify_s), t(sc.draft_s), sc.tokens_per_step, t(sc.plain_s), sc.speedup,
                     sc.break_even ? fmt::format("breaks even at alpha {:.3f} (one rate at every position)", sc.break_even_accept)
                                   : std::string("no acceptance rate pays for the drafts"));
  }
  if (cfg.disagg.on()) {
    const serving::DisaggResult& d = r.disagg;
    s += fmt::format("KV transfer ({}, {}): {} per request over the {} link at {}/s, {} exposed, {} waiting for decode blocks (means)\n",
                     cfg.disagg.layerwise ? "layer by layer" : "after the prefill", fmt::format("{}:{}", cfg.disagg.prefill, cfg.disagg.decode),
                     size(d.bytes_per_request_mean), d.link, size(d.link_Bps), t(d.transfer_s_mean), t(d.kv_wait_s_mean));
    s += fmt::format("  the connector posts {:.0f} descriptors per request at {} each ({}); {:.0f} prompt tokens found in the decode side's cache, not pulled\n",
                     d.descriptors_per_request_mean, t(d.descriptor_s), t(d.descriptors_per_request_mean * d.descriptor_s), d.decode_hit_tokens_mean);
    if (d.prefill_rate > 0) {
      s += fmt::format("rate matching: a prefill instance serves {:.3g} req/s, a decode instance {:.3g}: {:.2f} prefill per decode instance\n",
                       d.prefill_rate, d.decode_rate, d.prefill_per_decode);
    }
  }
  s += fmt::format("KV cache: {:.1f}% used on average, the fullest {:.1f}% at its peak; {} preemptions; prefix hits {:.1f}% of prompt tokens\n",
                   100 * r.kv_utilisation_mean, 100 * r.kv_utilisation_max, r.preemptions, 100 * r.prefix_hit_rate);
  s += fmt::format("requests: mean {:.1f} running, {:.1f} waiting, {:.1f} in the system{}\n", r.mean_running, r.mean_waiting,
                   r.mean_in_system,
                   r.mean_ending != 0 ? fmt::format(" (its ends sent apart from the engine's: {:+.2f}, docs/serving.md#output-lag)", r.mean_ending)
                                      : std::string());
  if (r.rejected > 0) s += fmt::format("rejected: {} requests can never fit ({})\n", r.rejected, rejections_text(m, r));
  if (r.horizon_reached) s += fmt::format("horizon reached: {} requests unfinished\n", r.unfinished);
  s += steady_state_text(r);
  if (r.sustainable) {
    s += "sustainable: yes (the queue stays bounded)\n";
    // Served slowly but in parallel (a KV transfer of hours, a run shorter than its requests):
    // said, so that no one reads the rates above as the offered ones.
    if (r.served_fraction > 0 && r.served_fraction < 0.5) {
      s += fmt::format("  but only {:.3g}% of the offered rate was served over the run: its requests took longer than they took to arrive\n",
                       100 * r.served_fraction);
    }
  } else {
    std::string why;
    switch (r.unsustainable) {
      case serving::Unsustainable::unfinished: why = "requests are unfinished"; break;
      case serving::Unsustainable::nothing_served: why = "no request was served"; break;
      case serving::Unsustainable::served_fraction:
        why = fmt::format("the requests finished at under half the rate they arrived ({:.3g}% of the offered rate served)", 100 * r.served_fraction);
        break;
      default: why = "the queue grows"; break;
    }
    s += fmt::format("sustainable: NO, {}{}\n", why,
                     r.max_sustainable_qps > 0 ? fmt::format("; the largest sustainable rate found is {:.4g} req/s", r.max_sustainable_qps) : "");
  }
  s += fmt::format("simulated {} requests in {} ({:.3g} requests/s)\n", r.simulated_requests, t(r.wall_s),
                   r.wall_s > 0 ? static_cast<double>(r.simulated_requests) / r.wall_s : 0);
  return s;
}

std::string serving_sweep_text(const std::vector<double>& qps, const std::vector<ServingResult>& runs) {
  std::string s = fmt::format("{:>10}{:>12}{:>12}{:>12}{:>12}{:>14}{:>13}\n", "qps", "req/s", "out tok/s", "TTFT p99",
                              "TPOT p99", "E2E mean", "sustainable");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ServingResult& r = runs[i];
    s += fmt::format("{:>10.4g}{:>12.4g}{:>12.4g}{:>12}{:>12}{:>14}{:>13}\n", qps[i], r.requests_per_s, r.output_tokens_per_s,
                     t(r.ttft.p99), t(r.tpot.p99), t(r.e2e.mean), r.sustainable ? "yes" : "no");
  }
  return s;
}

json replica_search_json(const serving::ReplicaSearch& s) {
  json tried = json::array();
  for (const auto& [n, met] : s.tried) tried.push_back({{"replicas", n}, {"met", met}});
  return {{"replicas", s.replicas > 0 ? json(s.replicas) : json(nullptr)}, {"tried", tried}};
}

std::string replica_search_text(const serving::ReplicaSearch& s, const serving::ServeConfig& cfg) {
  std::string tried;
  for (const auto& [n, met] : s.tried) tried += fmt::format("{}{} {}", tried.empty() ? "" : ", ", n, met ? "met" : "not met");
  const std::int64_t per = cfg.forward.tp * cfg.forward.ep;
  if (s.replicas == 0) {
    return fmt::format("no count of replicas up to {} meets the SLO (tried {}); the largest is shown\n\n", s.tried.back().first, tried);
  }
  return fmt::format("fewest replicas meeting the SLO: {} ({} chips; tried {})\n\n", s.replicas, s.replicas * per, tried);
}

json request_json(const serving::RequestRecord& r) {
  return {{"id", r.id},           {"replica", r.replica},        {"arrival_s", r.arrival_s}, {"queue_s", r.queue_s},
          {"ttft_s", r.ttft_s},   {"tpot_s", r.tpot_s},          {"e2e_s", r.e2e_s},         {"input_tokens", r.input},
          {"output_tokens", r.output}, {"cached_tokens", r.cached_tokens}, {"preemptions", r.preemptions},
          {"warmup", r.warmup},   {"rejected", r.rejected},      {"first_lag_s", r.first_lag_s}, {"end_lag_s", r.end_lag_s}};
}

RowFile::RowFile(std::string path, std::string_view flag, std::string_view header) {
  const auto ends = [&](std::string_view e) { return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0; };
  if (ends(".csv")) csv_ = true;
  else if (ends(".jsonl")) csv_ = false;
  else throw InputError(fmt::format("{}: '{}' needs the extension .csv or .jsonl", flag, path));
  file_ = std::make_unique<AtomicFile>(std::move(path), flag);
  f_ = file_->stream();
  if (csv_) fmt::print(f_, "{}\n", header);
}

RowFile::~RowFile() = default;  // an uncommitted file_ removes its temporary

void RowFile::write_json(const nlohmann::json& row) {
  if (f_ == nullptr) return;
  const std::string line = row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fputs(line.c_str(), f_);
}

void RowFile::commit() {
  if (f_ == nullptr) return;
  f_ = nullptr;
  file_->commit();
}

RequestWriter::RequestWriter(std::string path)
    : file_(std::move(path), "--requests-out",
            "id,replica,arrival_s,queue_s,ttft_s,tpot_s,e2e_s,input_tokens,output_tokens,cached_tokens,preemptions,warmup,rejected,"
            "first_lag_s,end_lag_s") {}

void RequestWriter::write(const serving::RequestRecord& r) {
  std::FILE* f = file_.stream();
  if (f == nullptr) return;
  if (!file_.csv()) return file_.write_json(request_json(r));
  fmt::print(f, "{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{},{},{},{},{:.9g},{:.9g}\n", r.id, r.replica, r.arrival_s, r.queue_s, r.ttft_s,
             r.tpot_s, r.e2e_s, r.input, r.output, r.cached_tokens, r.preemptions, r.warmup ? 1 : 0, r.rejected ? 1 : 0, r.first_lag_s,
             r.end_lag_s);
}

json step_json(const serving::StepRecord& s) {
  return {{"step", s.index},
          {"replica", s.replica},
          {"start_s", s.start_s},
          {"period_s", s.period_s},
          {"device_s", s.device_s},
          {"prompt_tokens", s.prompt_tokens},
          {"prompt_chunks", s.prompt_chunks},
          {"decodes", s.decodes},
          {"decode_context", s.decode_context},
          {"launch", std::string(serving::name(s.launch))}};
}

StepWriter::StepWriter(std::string path)
    : file_(std::move(path), "--steps-out", "step,replica,start_s,period_s,device_s,prompt_tokens,prompt_chunks,decodes,decode_context,launch") {}

void StepWriter::write(const serving::StepRecord& s) {
  std::FILE* f = file_.stream();
  if (f == nullptr) return;
  if (!file_.csv()) return file_.write_json(step_json(s));
  fmt::print(f, "{},{},{:.12g},{:.12g},{:.12g},{:.9g},{:.9g},{:.9g},{:.9g},{}\n", s.index, s.replica, s.start_s, s.period_s, s.device_s,
             s.prompt_tokens, s.prompt_chunks, s.decodes, s.decode_context, serving::name(s.launch));
}

void RequestColumns::add(const serving::RequestRecord& r) { rows_.push_back(r); }

json RequestColumns::json() const {
  nlohmann::json j;
  auto col = [&](const char* key, auto get) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rows_) a.push_back(get(r));
    j[key] = std::move(a);
  };
  using R = serving::RequestRecord;
  col("id", [](const R& r) { return r.id; });
  col("replica", [](const R& r) { return r.replica; });
  col("arrival_s", [](const R& r) { return r.arrival_s; });
  col("queue_s", [](const R& r) { return r.queue_s; });
  col("ttft_s", [](const R& r) { return r.ttft_s; });
  col("tpot_s", [](const R& r) { return r.tpot_s; });
  col("e2e_s", [](const R& r) { return r.e2e_s; });
  col("input_tokens", [](const R& r) { return r.input; });
  col("output_tokens", [](const R& r) { return r.output; });
  col("cached_tokens", [](const R& r) { return r.cached_tokens; });
  col("preemptions", [](const R& r) { return r.preemptions; });
  col("warmup", [](const R& r) { return r.warmup; });
  col("rejected", [](const R& r) { return r.rejected; });
  col("first_lag_s", [](const R& r) { return r.first_lag_s; });
  col("end_lag_s", [](const R& r) { return r.end_lag_s; });
  return j;
}

}  // namespace ridgeline::report
