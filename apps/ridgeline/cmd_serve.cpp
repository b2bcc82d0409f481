// `ridgeline serve`: the request-level serving simulation (../shared/CLI.md#serve).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "common.hpp"
#include "emit.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/memory.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/io/request_trace.hpp"
#include "ridgeline/report/html.hpp"
#include "ridgeline/report/result_charts.hpp"
#include "ridgeline/report/seeds.hpp"
#include "ridgeline/report/serving.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/serving/simulator.hpp"

namespace ridgeline::cli {

namespace {

struct ServeFlags {
  HardwareFlags hw;
  ForwardFlags fw;
  bool json = false, cuda_graphs = false, eager = false, per_request = false;
  std::string engine = "vllm";
  std::string num_scheduler_steps, recv_interval, allreduce_fusion, pdl;
  std::string max_num_seqs, max_batched_tokens, chunked_prefill, kv_block, kv_blocks, kv_memory_fraction, prefix_caching;
  std::string preemption, step_overhead, front_end, eager_host, compiled_host, mixed_chunk, graph_max_batch, graph_padding, graph_sizes;
  WorkloadFlags load;
  SpecFlags spec;
  std::string disagg, disagg_link_bw, kv_transfer = "after", disagg_decode, kv_descriptor, accept_spread;
  std::string replicas = "1", router = "round-robin", slo, requests_out, steps_out, horizon, plot;
  EmitFlags emit;
};

// --graph-sizes 1,2,4,8,...: positive whole numbers, each larger than the one before, at most
// serving::kMaxGraphSizes of them.
std::vector<std::int64_t> graph_size_list(const std::string& v) {
  std::vector<std::int64_t> out;
  for (const std::string& item : split_list(v)) {
    const std::int64_t n = parse_positive_int(item, "--graph-sizes");
    if (!out.empty() && n <= out.back()) {
      throw InputError(fmt::format("--graph-sizes: {} after {}: expected the sizes in ascending order, each once", n, out.back()));
    }
    if (static_cast<int>(out.size()) == serving::kMaxGraphSizes) {
      throw InputError(fmt::format("--graph-sizes: more than {} sizes", serving::kMaxGraphSizes));
    }
    out.push_back(n);
  }
  if (out.empty()) throw InputError("--graph-sizes: no size given: expected a comma-separated list, e.g. 1,2,4,8,16");
  return out;
}

bool on_off(const std::string& v, const char* flag) {
  if (v == "on") return true;
  if (v == "off") return false;
  throw InputError(fmt::format("{}: '{}' is not on or off", flag, v));
}


// "2h", "30min", "600 s": above 0 (a run with no horizon takes no --horizon) and within the
// 4e6 s a run can simulate.
double horizon_s(const std::string& v) {
  const double s = parse_duration(v, "--horizon", 4e6);
  if (!(s > 0)) throw InputError(fmt::format("--horizon: '{}' would stop the run before it starts: expected a time above 0 (or no --horizon)", v));
  return s;
}

// The engine's preset for `m` at tensor parallelism `tp` with the knobs given as flags.
serving::EngineConfig engine_config(const ServeFlags& f, const model::ModelConfig& m, const hw::System& sys, const model::ForwardConfig& forward,
                                    std::int64_t tp) {
  const auto kind = serving::parse_engine(f.engine);
  if (!kind) throw InputError(fmt::format("--engine: '{}' is not an engine: expected vllm, sglang, trtllm or static (each optionally @MAJOR.MINOR)", f.engine));
  serving::EngineConfig e = serving::engine_preset(*kind, sys.chip, tp, m);
  if (!f.fw.algo.empty()) e.collective_algo = forward.algo;  // --algo given: the engine's collectives too
  if (!f.fw.kernels.empty()) e.merged_kernels = forward.merged_kernels;
  if (!f.fw.block_fp8_gemms.empty()) e.scaled_gemm = forward.scaled_gemm;
  if (!f.fw.moe_a2a.empty()) e.moe_a2a = forward.moe_a2a;
  if (!f.max_num_seqs.empty()) e.max_num_seqs = parse_positive_int(f.max_num_seqs, "--max-num-seqs");
  if (!f.max_batched_tokens.empty()) e.max_batched_tokens = parse_positive_int(f.max_batched_tokens, "--max-batched-tokens");
  if (!f.chunked_prefill.empty()) e.chunked_prefill = on_off(f.chunked_prefill, "--chunked-prefill");
  if (!f.num_scheduler_steps.empty()) e.scheduler_steps = parse_positive_int(f.num_scheduler_steps, "--num-scheduler-steps");
  if (!f.recv_interval.empty()) e.recv_interval = parse_positive_int(f.recv_interval, "--scheduler-recv-interval");
  if (!f.allreduce_fusion.empty()) {
    // On where the preset has it off: SGLang's fused kernel up to its own limit of tokens, the
    // others' wherever their own all-reduce runs.
    e.allreduce_norm = on_off(f.allreduce_fusion, "--allreduce-fusion");
    e.allreduce_norm_source = "--allreduce-fusion";
    e.allreduce_norm_max_tokens = !e.allreduce_norm                          ? 0
                                  : *kind == serving::EngineKind::sglang     ? serving::kSglangFusedAllreduceMaxTokens
                                                                             : e.allreduce_norm_max_tokens;
  }
  if (!f.pdl.empty()) {
    e.pdl = on_off(f.pdl, "--pdl");
    e.pdl_source = "--pdl";
    // CUDA's, from compute capability 9.0 (hw::supports_pdl: a GPU file naming no arch that may be
    // NVIDIA's is taken at its word).
    if (e.pdl && !hw::supports_pdl(sys.chip)) {
      const hw::ChipSpec& c = sys.chip;
      throw InputError(fmt::format("--pdl on: programmatic dependent launch needs an NVIDIA GPU of compute capability 9.0 or later, and "
                                   "{} is {}; expected --pdl off there",
                                   c.name, !c.arch.empty() ? c.arch : hw::vendor_and_kind(c)));
    }
  }
  if (!f.kv_block.empty()) e.kv_block = parse_positive_int(f.kv_block, "--kv-block");
  if (!f.kv_blocks.empty()) e.kv_blocks_override = parse_positive_int(f.kv_blocks, "--kv-blocks");
  if (!f.kv_memory_fraction.empty()) e.kv_memory_fraction = parse_number(f.kv_memory_fraction, "--kv-memory-fraction");
  if (!f.prefix_caching.empty()) e.prefix_caching = on_off(f.prefix_caching, "--prefix-caching");
  if (!f.mixed_chunk.empty()) {
    e.mixed_chunk = on_off(f.mixed_chunk, "--mixed-chunk");
    // SGLang's knob: the other engines' steps take decodes beside prefill chunks by their own rules.
    if (*kind != serving::EngineKind::sglang) {
      throw InputError(fmt::format("--mixed-chunk: SGLang's knob (decodes riding in prefill steps); --engine {} schedules its steps by its "
                                   "own rules: drop it or use --engine sglang",
                                   f.engine));
    }
  }
  if (!f.preemption.empty()) {
    if (f.preemption == "recompute") e.preemption = serving::Preemption::recompute;
    else if (f.preemption == "swap") e.preemption = serving::Preemption::swap;
    else throw InputError(fmt::format("--preemption: '{}' is not recompute or swap", f.preemption));
  }
  if (!f.step_overhead.empty()) {
    e.step_overhead_s = parse_quantity(f.step_overhead, Quantity::time, "--step-overhead", false);
    e.per_request_overhead_s = 0;
    e.host_source = "--step-overhead";
  }
  if (!f.front_end.empty()) {
    e.front_end_s = parse_quantity(f.front_end, Quantity::time, "--front-end", false);
    e.front_end_source = "--front-end";
  }
  // A host time per kernel (--eager-host, --compiled-host): at most a millisecond.
  auto kernel_host_s = [](const std::string& value, const char* flag, const char* example) {
    const double s = parse_quantity(value, Quantity::time, flag, false);
    if (s > 1e-3) {
      throw InputError(fmt::format("{}: '{}' is more than a millisecond a kernel: expected the host's time to launch one, e.g. '{}'", flag,
                                   value, example));
    }
    return s;
  };
  if (!f.eager_host.empty()) {
    e.eager_host_s = kernel_host_s(f.eager_host, "--eager-host", "25 us");
    e.eager_host_source = "--eager-host";
    // Every kernel the engine's Python launches, those of MLA's attention op among them, and
    // nothing more a call of it.
    if (e.mla_op_host_s > 0) {
      e.mla_op_host_s = e.eager_host_s;
      e.mla_op_call_host_s = 0;
      e.mla_op_host_source = "--eager-host";
    }
  }
  if (!f.compiled_host.empty()) {
    if (e.compiled_host_s <= 0) {
      throw InputError(fmt::format("--compiled-host: the {} engine runs no compiled model outside a graph (vLLM V1 does)",
                                   serving::name(e.ref())));
    }
    e.compiled_host_s = kernel_host_s(f.compiled_host, "--compiled-host", "9 us");
    e.compiled_host_source = "--compiled-host";
  }
  if (f.cuda_graphs && f.eager) throw InputError("--cuda-graphs/--eager: choose one");
  if (!f.compiled_host.empty() && f.eager) throw InputError("--compiled-host/--eager: --eager runs the model uncompiled");
  if (f.eager) {
    // vLLM's --enforce-eager also turns torch.compile off (optimization level -O0): every kernel
    // the Python model's own.
    e.decode_graphs = e.mixed_graphs = serving::GraphMode::eager;
    e.capture_follows_seqs = false;
    e.compiled_host_s = 0;
    e.compiled_host_source.clear();
  }
  if (!f.graph_max_batch.empty()) {
    if (f.eager) throw InputError("--graph-max-batch/--eager: --eager captures no graph");
    e.graph_max_batch = parse_positive_int(f.graph_max_batch, "--graph-max-batch");
    e.capture_follows_seqs = false;
    // vLLM V1 captures by tokens: its --max-cudagraph-capture-size bounds every step's graphs.
    if (e.graph_max_tokens > 0) e.graph_max_tokens = e.graph_max_batch;
  }
  if (!f.graph_padding.empty()) {
    if (f.eager) throw InputError("--graph-padding/--eager: --eager captures no graph");
    if (e.kind == serving::EngineKind::vllm) {
      throw InputError(fmt::format("--graph-padding: the {} engine always pads a step to its next captured size (vLLM has no switch for it); "
                                   "--graph-sizes or --graph-max-batch set its graphs",
                                   f.engine));
    }
    e.graph_exact_sizes = !on_off(f.graph_padding, "--graph-padding");
    // SGLang's switch (--disable-cuda-graph-padding) replays a graph only at its own captured
    // sizes, with its ranks still padded to the busiest's: not the exact sizes modelled here
    // (TensorRT-LLM's 1-32, 64 and 128).
    if (e.graph_exact_sizes && e.kind == serving::EngineKind::sglang) {
      throw InputError(fmt::format("--graph-padding off: the {} engine pads a decode batch to its next captured size; its "
                                   "--disable-cuda-graph-padding (a graph only at a captured size) is not modelled",
                                   f.engine));
    }
  }
  if (!f.graph_sizes.empty()) {
    if (f.eager) throw InputError("--graph-sizes/--eager: --eager captures no graph");
    if (!f.graph_max_batch.empty()) {
      throw InputError("--graph-sizes/--graph-max-batch: the largest captured size is the list's; give one of them");
    }
    if (!f.graph_padding.empty() && !on_off(f.graph_padding, "--graph-padding")) {
      throw InputError("--graph-sizes/--graph-padding off: a batch pads to the next of the sizes; without padding give --graph-max-batch");
    }
    if ((e.decode_graphs == serving::GraphMode::piecewise && e.kind != serving::EngineKind::vllm) ||
        (e.decode_graphs == serving::GraphMode::eager && !f.cuda_graphs)) {
      throw InputError(fmt::format("--graph-sizes: the {} engine's decode steps are not captured as one graph ({}): nothing pads (--cuda-graphs "
                                   "for the presets that capture none)",
                                   f.engine, serving::name(e.decode_graphs)));
    }
    e.graph_sizes = graph_size_list(f.graph_sizes);
    e.graph_exact_sizes = false;
    e.capture_follows_seqs = false;
  }
  // The list (the engine's own, or --graph-sizes) is cut to the limits once every limit is set:
  // pad_graphs in serve_config and decode_instances.
  if (f.cuda_graphs && e.decode_graphs == serving::GraphMode::eager) e.decode_graphs = serving::GraphMode::graph;
  return e;
}

// --disagg-decode tp=8,ep=1,max-num-seqs=256,max-batched-tokens=2048: the decode instances'
// own plan, and their engine (the preset at their TP with the flags' knobs and these limits).
void decode_instances(const ServeFlags& f, const model::ModelConfig& m, const hw::System& sys, serving::ServeConfig& cfg) {
  serving::Disagg& dg = cfg.disagg;
  std::int64_t seqs = 0, budget = 0;
  std::vector<std::string> seen;
  for (const std::string& item : split_list(f.disagg_decode)) {
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (eq == std::string::npos) {
      throw InputError(fmt::format("--disagg-decode: '{}' is not KEY=N, as in tp=8,max-num-seqs=256", item));
    }
    const std::string flag = "--disagg-decode " + key;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      throw InputError(fmt::format("--disagg-decode: {} is given twice in '{}': give each key once", key, f.disagg_decode));
    }
    seen.push_back(key);
    const std::int64_t v = parse_positive_int(item.substr(eq + 1), flag.c_str());
    if (key == "tp") dg.decode_tp = v;
    else if (key == "ep") dg.decode_ep = v;
    else if (key == "max-num-seqs") seqs = v;
    else if (key == "max-batched-tokens") budget = v;
    else throw InputError(fmt::format("--disagg-decode: '{}' is not a key: expected tp, ep, max-num-seqs or max-batched-tokens", key));
  }
  serving::EngineConfig& e = dg.decode_engine.emplace(engine_config(f, m, sys, cfg.forward, dg.decode_tp > 0 ? dg.decode_tp : cfg.forward.tp));
  if (seqs > 0) e.max_num_seqs = seqs;
  if (budget > 0) e.max_batched_tokens = budget;
  // The capture list within the decode instances' own limits.
  const bool listed = !e.graph_sizes.empty();
  serving::settle_graphs(e, cfg.spec.k);
  if (listed && e.graph_sizes.empty()) {
    throw InputError(fmt::format("--disagg-decode: '{}': no captured batch size within the decode instances' limits", f.disagg_decode));
  }
}

// `draft` holds the draft model of speculative decoding (it must outlive the configuration).
serving::ServeConfig serve_config(const ServeFlags& f, const model::ModelConfig& m, const hw::System& sys, model::ModelConfig& draft) {
  serving::ServeConfig cfg;
  cfg.forward = forward_config(f.fw, f.hw, m);
  cfg.forward.sampling = sampling_mode(f.load);
  cfg.spec = speculation(f.spec, m, draft);
  if (!f.accept_spread.empty()) {
    if (!cfg.spec.on()) throw InputError("--accept-spread: the spread of speculative decoding's acceptance needs --draft");
    cfg.accept_spread = parse_number(f.accept_spread, "--accept-spread");
  }
  cfg.engine = engine_config(f, m, sys, cfg.forward, cfg.forward.tp);
  // vLLM sizes its graphs from the sequence limit when not told (search serve's launch files tell
  // it); then the list a decode batch pads to.
  serving::settle_graphs(cfg.engine, cfg.spec.k);
  if (!f.graph_sizes.empty() && cfg.engine.graph_sizes.empty()) {
    throw InputError(fmt::format("--graph-sizes: {}: none within the engine's sequence limit ({}) and token budget ({}): no graph would be "
                                 "captured",
                                 f.graph_sizes, cfg.engine.max_num_seqs, cfg.engine.max_batched_tokens));
  }

  cfg.workload = workload_spec(f.load);
  cfg.window = measurement_window(f.load);
  cfg.replicas = f.replicas == "auto" ? 1 : parse_positive_int(f.replicas, "--replicas");
  const auto router = serving::parse_router(f.router);
  if (!router) throw InputError(fmt::format("--router: '{}' is not a router: expected round-robin, least-loaded or prefix", f.router));
  cfg.router = *router;
  if (!f.slo.empty()) cfg.slo = serving::parse_slo(f.slo);
  if (!f.horizon.empty()) cfg.horizon_s = horizon_s(f.horizon);
  if (!f.disagg.empty()) {
    const std::size_t colon = f.disagg.find(':');
    if (colon == std::string::npos) throw InputError(fmt::format("--disagg: '{}' is not P:D, as in 2:1", f.disagg));
    cfg.disagg.prefill = parse_positive_int(f.disagg.substr(0, colon), "--disagg");
    cfg.disagg.decode = parse_positive_int(f.disagg.substr(colon + 1), "--disagg");
  }
  if (!f.disagg_link_bw.empty()) cfg.disagg.link_Bps = parse_quantity(f.disagg_link_bw, Quantity::bandwidth, "--disagg-link-bw", false);
  if (f.kv_transfer != "after" && f.kv_transfer != "layerwise") {
    throw InputError(fmt::format("--kv-transfer: '{}' is not after or layerwise", f.kv_transfer));
  }
  cfg.disagg.layerwise = f.kv_transfer == "layerwise";
  if (!f.kv_descriptor.empty()) cfg.disagg.descriptor_s = parse_quantity(f.kv_descriptor, Quantity::time, "--kv-descriptor", false);
  if (f.replicas == "auto" && cfg.disagg.on()) {
    throw InputError("--replicas auto: a disaggregated deployment is sized by search serve --disagg on, not here");
  }
  if ((!f.disagg_link_bw.empty() || cfg.disagg.layerwise || !f.disagg_decode.empty() || !f.kv_descriptor.empty()) && !cfg.disagg.on()) {
    throw InputError("--disagg-link-bw/--kv-transfer/--disagg-decode/--kv-descriptor: a KV transfer needs --disagg P:D");
  }
  if (!f.disagg_decode.empty()) decode_instances(f, m, sys, cfg);
  return cfg;
}

// A run in which no request could be served has nothing to report: exit 2 with why.
void require_served(const model::ModelConfig& m, const serving::ServingResult& r) {
  if (r.simulated_requests == 0 || r.rejected < r.simulated_requests) return;
  throw InputError(fmt::format("serve: no request can be served: all {} were rejected ({})", r.rejected, report::rejections_text(m, r)));
}

// --per-request keeps a row of columns per request in memory until the document is printed:
// refused up front when they cannot fit (--requests-out streams them to a file instead).
void check_columns_fit(const serving::WorkloadSpec& w) {
  // 13 columns a row, each a JSON value (16 bytes) in an array, and ~150 bytes of text when printed.
  constexpr double kBytesPerRow = 13 * 16 + 150 + sizeof(serving::RequestRecord);
  const double limit = memory_limit_bytes(), need = static_cast<double>(w.requests) * kBytesPerRow;
  if (limit > 0 && need > limit / 2) {
    throw InputError(fmt::format("--per-request: {} requests' columns would need about {} in memory and this run may use {} (half of this "
                                 "process's memory limit): write them to a file with --requests-out FILE.csv instead",
                                 w.requests, format_quantity(need, Quantity::bytes), format_quantity(limit / 2, Quantity::bytes)));
  }
}

// A progress bar on stderr when it is a terminal and the run is long.
std::function<void(double)> progress_bar() {
  if (progress_hook()) return progress_hook();
  if (isatty(STDERR_FILENO) == 0) return {};
  const auto start = std::chrono::steady_clock::now();
  return [start](double frac) {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (el < 0.5) return;
    const int w = 30, filled = static_cast<int>(std::min(1.0, frac) * w);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(w, '.');
    std::fprintf(stderr, "\r[%s] %3.0f%%  ETA %.1f s   ", bar.c_str(), 100 * frac, frac > 0 ? el * (1 - frac) / frac : 0.0);
    if (frac >= 1) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace

void add_serve_flags(CLI::App* s, ServeFlags* f) {
  add_hardware_flags(s, f->hw);
  add_forward_flags(s, f->fw);
  s->add_flag("--json", f->json, "JSON on stdout");
  s->add_option("--engine", f->engine, "vllm, sglang, trtllm or static (each a preset of the knobs below); " + serving::engine_releases())
      ->capture_default_str();
  s->add_option("--max-num-seqs", f->max_num_seqs, "running requests at most (engine default)");
  s->add_option("--max-batched-tokens", f->max_batched_tokens, "tokens of one step (engine default)");
  s->add_option("--chunked-prefill", f->chunked_prefill, "on or off (engine default)");
  s->add_option("--num-scheduler-steps", f->num_scheduler_steps, "vllm@0.6: decode steps per scheduler call (multi-step scheduling; default 1)");
  s->add_option("--scheduler-recv-interval", f->recv_interval,
                "sglang: the scheduler reads new requests every n decode steps (at once after a step with prompt tokens, or idle; default 1)");
  s->add_option("--allreduce-fusion", f->allreduce_fusion,
                "on or off: each layer's all-reduce adds the residual and RMS-normalises in its kernel (engine and model default)");
  s->add_option("--pdl", f->pdl,
                "on or off: the engine launches its own kernels with programmatic dependent launch, each dispatched while the one "
                "before drains (engine default: trtllm 1.2+ and sglang 0.4+ on, on NVIDIA GPUs of compute capability 9.0+)");
  s->add_option("--kv-block", f->kv_block, "tokens per KV cache block (engine default)");
  s->add_option("--kv-blocks", f->kv_blocks, "KV cache blocks per replica instead of what memory leaves (vLLM num_gpu_blocks_override)");
  s->add_option("--kv-memory-fraction", f->kv_memory_fraction, "fraction of memory for the engine / the cache (engine default)");
  s->add_option("--prefix-caching", f->prefix_caching, "on or off (engine default)");
  s->add_option("--mixed-chunk", f->mixed_chunk, "sglang: decodes ride in prefill steps, on or off");
  s->add_option("--preemption", f->preemption, "recompute or swap (to host memory)");
  s->add_option("--step-overhead", f->step_overhead, "host time per step, e.g. '0.5 ms' (engine default)");
  s->add_option("--front-end", f->front_end, "the server's time per request before the scheduler sees it (HTTP, tokenise, hand-over), e.g. '4 ms' (engine default)");
  s->add_option("--compiled-host", f->compiled_host,
                "the host's time per kernel of a compiled model run outside a graph (vLLM V1 past its largest graph), e.g. '9 us' (engine "
                "default)");
  s->add_option("--eager-host", f->eager_host,
                "the engine's host time per kernel it launches outside a graph, e.g. '25 us': an eager step lasts at least its kernels times it "
                "(engine default; with MLA under vLLM its attention op's kernels too)");
  s->add_flag("--cuda-graphs", f->cuda_graphs, "decode steps as one graph, for the presets that capture none (static, trtllm@0.15: the TensorRT engine flow's cuda_graph_mode); the others capture graphs already");
  s->add_flag("--eager", f->eager, "no CUDA graphs: every kernel launched by the host");
  s->add_option("--graph-max-batch", f->graph_max_batch,
                "largest decode batch captured as a CUDA graph; vLLM V1: the largest step of any kind, in tokens (engine default)")
      ->type_name("INT");
  s->add_option("--graph-padding", f->graph_padding,
                "on: a decode batch pads to the next captured size (trtllm: its generated list, the padding rows priced); off: only batches of "
                "1-32, 64, 128 run as graphs (engine default)")
      ->type_name("on|off");
  s->add_option("--graph-sizes", f->graph_sizes,
                "the decode batch sizes captured as graphs, ascending, a batch padded to the next and its padding rows priced (TensorRT-LLM's "
                "cuda_graph_batch_sizes with padding); the largest is the largest graph")
      ->type_name("N,N,...");
  add_workload_flags(s, f->load);
  add_spec_flags(s, f->spec);
  s->add_option("--accept-spread", f->accept_spread,
                "speculative decoding: standard deviation of each request's shift of the acceptance rates (default 0.1, an assumption; 0: every request at --accept)")
      ->type_name("SD");
  s->add_option("--disagg", f->disagg, "disaggregated: P prefill and D decode instances (each --tp chips), the KV cache sent between them");
  s->add_option("--disagg-decode", f->disagg_decode,
                "disaggregated: the decode instances' own tp, ep, max-num-seqs, max-batched-tokens, e.g. tp=8,max-num-seqs=256");
  s->add_option("--disagg-link-bw", f->disagg_link_bw,
                "bandwidth per chip of the KV transfer between disaggregated instances (default: the node link within a domain, else the network)");
  s->add_option("--kv-transfer", f->kv_transfer,
                "disaggregated: after (the whole cache once the prefill ends, vLLM's NIXL) or layerwise (behind the prefill)")
      ->capture_default_str();
  s->add_option("--kv-descriptor", f->kv_descriptor,
                "disaggregated: the connector's time to post one transfer descriptor (a block of one K or V region; default 2.4 us, NIXL's)");
  s->add_option("--replicas", f->replicas, "identical engine instances behind a router; auto: the fewest meeting --slo")->capture_default_str();
  s->add_option("--router", f->router, "round-robin, least-loaded or prefix")->capture_default_str();
  s->add_option("--slo", f->slo, "targets, e.g. ttft_p99=1s,tpot_p99=50ms (goodput counts requests meeting all)");
  s->add_option("--requests-out", f->requests_out, "every request's times to FILE.csv or FILE.jsonl");
  s->add_option("--steps-out", f->steps_out,
                "every engine step to FILE.csv or FILE.jsonl: start, period, device time, prompt tokens and chunks, decodes and their context, launch");
  s->add_flag("--per-request", f->per_request, "--json: add every request's times as columns (`requests`)");
  s->add_option("--horizon", f->horizon, "stop at this simulated time, e.g. '600 s' or 2h");
  s->add_option("--plot", f->plot, "chart (.svg or .png): latency CDFs, or throughput against latency for a --qps sweep");
  add_emit_flags(s, f->emit);
}

// serve --hw a,b,c: these rows side by side.
constexpr report::Headline kServeRows[] = {
    {"TTFT p50", "/ttft_s/p50", report::Shown::time},
    {"TTFT p99", "/ttft_s/p99", report::Shown::time},
    {"TPOT p50", "/tpot_s/p50", report::Shown::time},
    {"TPOT p99", "/tpot_s/p99", report::Shown::time},
    {"end to end p99", "/e2e_s/p99", report::Shown::time},
    {"requests/s", "/requests_per_s", report::Shown::rate},
    {"output tokens/s", "/output_tokens_per_s", report::Shown::rate},
    {"  per GPU", "/output_tokens_per_s_per_gpu", report::Shown::rate},
    {"GPUs", "/gpus", report::Shown::number},
    {"sustainable", "/sustainable", report::Shown::flag},
    {"KV cache used (mean)", "/kv_utilisation/mean", report::Shown::fraction},
    {"preemptions", "/preemptions", report::Shown::number},
};

void register_serve(CLI::App& root, std::vector<Command>& commands) {
  auto f = std::make_shared<ServeFlags>();
  auto* s = root.add_subcommand("serve", "request-level serving simulation: continuous batching, TTFT/TPOT percentiles under load");
  add_serve_flags(s, f.get());
  commands.push_back({s, [f] {
                        per_chip(f->hw, f->json, kServeRows, [&] {
                        if (!f->hw.listed.empty() && (!f->plot.empty() || !f->requests_out.empty() || !f->steps_out.empty() || !f->emit.target.empty())) {
                          throw InputError("--plot, --requests-out, --steps-out, --emit: one file per chip: run with one --hw to write them");
                        }
                        const auto emit_to = emit_target(f->emit);
                        const model::ModelConfig m = io::resolve_model(f->fw.model);
                        const hw::System sys = load_chip_system(f->hw);
                        model::ModelConfig draft;
                        serving::ServeConfig cfg = serve_config(*f, m, sys, draft);
                        const std::vector<double> sweep = f->load.qps.empty() || !f->load.trace.empty() ? std::vector<double>{} : qps_rates(f->load.qps);
                        const serving::SeedsConfig seeds = seeds_config(f->load);
                        if (seeds.count > 1) {
                          if (sweep.size() > 1) throw InputError("--seeds: one rate at a time, not a --qps sweep");
                          if (f->replicas == "auto") throw InputError("--seeds/--replicas auto: search serve --seeds sizes a fleet on the worst seed");
                          if (!f->requests_out.empty() || !f->steps_out.empty() || f->per_request) {
                            throw InputError("--requests-out/--steps-out/--per-request: one seed's run: run that seed alone (--seed S)");
                          }
                          if (sweep.size() == 1) cfg.workload.qps = sweep[0];
                          const serving::SeedsResult runs =
                              serving::run_seeds(cfg, seeds, [&](const serving::ServeConfig& c) { return serving::simulate(m, sys, c); });
                          const serving::ServingResult& r = runs.runs[runs.chosen];
                          require_served(m, r);
                          serving::ServeConfig shown = cfg;
                          shown.workload.seed = cfg.workload.seed + runs.chosen;
                          nlohmann::json j = report::serving_json(m, sys, shown, r);
                          j["seeds"] = report::seeds_json(cfg, seeds, runs);
                          if (!f->plot.empty()) report::write_chart(f->plot, report::serving_latency_svg(j, "the run"), "--plot");
                          emit(f->json, j, report::serving_text(m, sys, shown, r) + report::seeds_text(cfg, seeds, runs));
                          return;
                        }
                        if (sweep.size() > 1) {
                          if (f->replicas == "auto") throw InputError("--replicas auto: one rate at a time, not a --qps sweep");
                          if (!f->requests_out.empty() || !f->steps_out.empty() || f->per_request || emit_to) {
                            throw InputError("--requests-out/--steps-out/--per-request/--emit: one rate at a time, not a --qps sweep");
                          }
                          std::vector<serving::ServingResult> runs;
                          nlohmann::json arr = nlohmann::json::array();
                          for (const double q : sweep) {
                            cfg.workload.qps = q;
                            runs.push_back(serving::simulate(m, sys, cfg));
                            require_served(m, runs.back());
                            arr.push_back(report::serving_json(m, sys, cfg, runs.back()));
                          }
                          const nlohmann::json doc{{"sweep", arr}};
                          if (!f->plot.empty()) report::write_chart(f->plot, report::serving_throughput_svg(doc, "the sweep"), "--plot");
                          emit(f->json, doc, report::serving_sweep_text(sweep, runs));
                          return;
                        }
                        if (sweep.size() == 1) cfg.workload.qps = sweep[0];
                        if (f->replicas == "auto") {
                          if (!cfg.slo.any()) throw InputError("--replicas auto: give the targets to meet with --slo, as in ttft_p99=1s");
                          if (!f->requests_out.empty() || !f->steps_out.empty() || f->per_request) {
                            throw InputError("--requests-out/--steps-out/--per-request: run the count --replicas auto finds");
                          }
                          const serving::ReplicaSearch found = serving::fewest_replicas(m, sys, cfg);
                          require_served(m, found.result);
                          cfg.replicas = found.replicas > 0 ? found.replicas : found.tried.back().first;
                          nlohmann::json j = report::serving_json(m, sys, cfg, found.result);
                          j["replicas_search"] = report::replica_search_json(found);
                          std::string text = report::replica_search_text(found, cfg) + report::serving_text(m, sys, cfg, found.result);
                          if (emit_to) emit_serve_launch(*emit_to, emit_dir(f->emit), m, f->fw.model, cfg, f->spec.draft, found.result, j, text);
                          emit(f->json, j, text);
                          return;
                        }
                        std::unique_ptr<report::RequestWriter> writer;
                        if (!f->requests_out.empty()) {
                          std::error_code ec;
                          if (!f->load.trace.empty() && std::filesystem::equivalent(f->load.trace, f->requests_out, ec)) {
                            throw InputError(fmt::format("--requests-out: {} is the --trace file: it would be overwritten", f->requests_out));
                          }
                          writer = std::make_unique<report::RequestWriter>(f->requests_out);
                        }
                        std::unique_ptr<report::StepWriter> step_writer;
                        serving::StepSink step_sink;
                        if (!f->steps_out.empty()) {
                          // (An input such as the --trace file, or the --requests-out file by any
                          // spelling, is refused by the writer: AtomicFile.)
                          step_writer = std::make_unique<report::StepWriter>(f->steps_out);
                          step_sink = [&](const serving::StepRecord& rec) { step_writer->write(rec); };
                        }
                        report::RequestColumns columns;
                        serving::RequestSink sink;
                        if (writer || f->per_request) {
                          sink = [&](const serving::RequestRecord& r) {
                            if (writer) writer->write(r);
                            if (f->per_request) columns.add(r);
                          };
                        }
                        if (f->per_request) check_columns_fit(cfg.workload);
                        const serving::ServingResult r = serving::simulate(m, sys, cfg, sink, progress_bar(), step_sink);
                        require_served(m, r);
                        if (writer) writer->commit();
                        if (step_writer) step_writer->commit();
                        nlohmann::json j = report::serving_json(m, sys, cfg, r);
                        if (f->per_request) j["requests"] = columns.json();
                        if (!f->plot.empty()) report::write_chart(f->plot, report::serving_latency_svg(j, "the run"), "--plot");
                        std::string text = report::serving_text(m, sys, cfg, r);
                        if (emit_to) emit_serve_launch(*emit_to, emit_dir(f->emit), m, f->fw.model, cfg, f->spec.draft, r, j, text);
                        emit(f->json, j, text);
                        });
                      }});
}

void register_report_serve(CLI::App& root, std::vector<Command>& commands) {
  auto f = std::make_shared<ServeFlags>();
  auto out = std::make_shared<std::string>();
  // `ridgeline report --serve ...` arrives here (run() renames it): hidden from the command list.
  auto* r = root.add_subcommand("report-serve", "");
  r->group("");
  add_serve_flags(r, f.get());
  r->add_option("--out", *out, "HTML file to write")->required();
  hide_flags(r, {"--emit", "--emit-dir", "--requests-out", "--steps-out"});
  commands.push_back({r, [f, out] {
                        if (!f->emit.target.empty()) throw InputError("--emit: launch files come from serve --emit, not a report");
                        if (!f->requests_out.empty() || !f->steps_out.empty()) {
                          throw InputError("--requests-out/--steps-out: files of a run come from serve, not a report");
                        }
                        const model::ModelConfig m = io::resolve_model(f->fw.model);
                        const hw::System sys = load_chip_system(f->hw);
                        model::ModelConfig draft;
                        serving::ServeConfig cfg = serve_config(*f, m, sys, draft);
                        const std::vector<double> q = f->load.qps.empty() || !f->load.trace.empty() ? std::vector<double>{} : qps_rates(f->load.qps);
                        if (q.size() > 1) throw InputError("--qps: one rate for a report");
                        if (q.size() == 1) cfg.workload.qps = q[0];
                        if (f->replicas == "auto") throw InputError("--replicas: a report takes a count");
                        const serving::ServingResult res = serving::simulate(m, sys, cfg);
                        require_served(m, res);
                        const std::string html = report::html_serving_report(report::serving_json(m, sys, cfg, res));
                        check_extension(*out, "--out", {".html", ".htm"});
                        report::write_file_atomically(*out, html);
                        emit(f->json, nlohmann::json{{"out", *out}, {"bytes", html.size()}}, "wrote " + *out + "\n");
                      }});
}

}  // namespace ridgeline::cli
