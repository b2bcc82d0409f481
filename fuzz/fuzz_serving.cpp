// Any bytes given to `serve`'s parsers (a request trace as CSV or JSON lines, a length
// distribution, an SLO, an arrival process, acceptance rates, a duration, the workload's flags
// together) parse or raise InputError; any small engine configuration the bytes pick (on a chip
// whose memory bandwidth and peak the bytes may lower until steps last days) runs to the end
// with every request served or rejected, every block given back (the simulator checks that
// itself) and no KV overcommitment, or stops with an InputError (simulated time past what a
// run can hold); a run that serves nothing is never called sustainable.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/hw/overrides.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/io/request_trace.hpp"
#include "ridgeline/model/speculation.hpp"
#include "ridgeline/serving/seeds.hpp"
#include "ridgeline/serving/simulator.hpp"

namespace {

using namespace ridgeline;

void trace(std::string_view text, bool jsonl) {
  try {
    const auto t = io::parse_request_trace(text, "fuzz", jsonl);
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!(t[i].arrival_s >= 0) || t[i].input < 1 || t[i].output < 1 || t[i].prefix_tokens > t[i].input) __builtin_trap();
      if (i > 0 && t[i].arrival_s < t[i - 1].arrival_s) __builtin_trap();
    }
  } catch (const InputError&) {
  }
}

void flags(std::string_view text) {
  try {
    const serving::LengthDist d = serving::parse_length(text, "fuzz");
    if (!(d.a >= 1)) __builtin_trap();
  } catch (const InputError&) {
  }
  try {
    const serving::Slo s = serving::parse_slo(text);
    if (!s.any()) __builtin_trap();
    // One target per metric: an SLO naming a metric twice is refused, never half applied.
    int named[4] = {0, 0, 0, 0};
    for (std::size_t start = 0; start <= text.size();) {
      const std::size_t end = std::min(text.find(',', start), text.size());
      const std::string_view item = text.substr(start, end - start);
      named[0] += item.substr(0, 5) == "ttft_", named[1] += item.substr(0, 5) == "tpot_", named[2] += item.substr(0, 4) == "e2e_";
      named[3] += item.substr(0, 4) == "itl_";
      start = end + 1;
    }
    if (named[0] > 1 || named[1] > 1 || named[2] > 1 || named[3] > 1) __builtin_trap();
    if (s.targets.size() > serving::kSloMetrics) __builtin_trap();
  } catch (const InputError&) {
  }
  try {
    const serving::ThinkTime t = serving::parse_think_time(text, "fuzz");
    if (!(t.a_s >= 0 && t.a_s <= 86400 && t.b_s >= 0 && t.b_s <= 86400)) __builtin_trap();
    if (t.kind == serving::ThinkTime::Kind::uniform && t.b_s < t.a_s) __builtin_trap();
  } catch (const InputError&) {
  }
  try {
    const double t = parse_duration(text, "fuzz", 4e6);
    if (!(t >= 0 && t <= 4e6)) __builtin_trap();
  } catch (const InputError&) {
  }
  try {
    serving::WorkloadSpec w;
    serving::parse_arrival(text, w);
  } catch (const InputError&) {
  }
  try {
    model::Speculation s;
    model::parse_accept(text, s);
    for (int i = 0; i < model::Speculation::kMaxTokens; ++i) {
      if (!(s.accept[static_cast<std::size_t>(i)] >= 0 && s.accept[static_cast<std::size_t>(i)] <= 1)) __builtin_trap();
    }
    if (s.k < 0 || s.k > model::Speculation::kMaxTokens) __builtin_trap();
    (void)model::accept_arg(s, s.k);  // the inverse renders whatever parsed
  } catch (const InputError&) {
  }
}

// The workload's flags, one a line: --qps and --arrival for a trace's requests (new arrivals),
// then --prompt and --prefix-tokens of synthetic ones. Validated, a workload draws requests
// that arrive at finite, nondecreasing times from 0, and whose prompts keep the length asked
// for when it is fixed (a shared prefix never silently lengthens them).
void workload(std::string_view text) {
  std::vector<std::string> f;
  for (std::size_t start = 0; start <= text.size() && f.size() < 4;) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    f.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  f.resize(4);
  try {
    serving::WorkloadSpec w;
    w.trace = {{0, 10, 2, -1, 0}, {0.5, 20, 3, -1, 0}, {0.5, 30, 4, -1, 0}, {9, 40, 5, -1, 0}};
    w.requests = 4;
    w.qps = parse_number(f[0], "--qps");
    serving::parse_arrival(f[1], w);
    w.retime = w.arrival;
    w.arrival = serving::Arrival::trace;
    serving::validate(w);
    serving::RequestSource src(w);
    serving::Request r;
    double last = 0;
    while (src.next(r)) {
      if (!std::isfinite(r.arrival_s) || !(r.arrival_s >= last)) __builtin_trap();
      last = r.arrival_s;
    }
  } catch (const InputError&) {
  }
  try {
    serving::WorkloadSpec w;
    w.requests = 16;
    w.prompt = serving::parse_length(f[2], "--prompt");
    w.prefix_groups = 2;
    w.prefix_tokens = parse_positive_int(f[3], "--prefix-tokens");
    serving::validate(w);
    serving::RequestSource src(w);
    serving::Request r;
    while (src.next(r)) {
      if (r.input <= r.prefix_tokens) __builtin_trap();
      if (w.prompt.kind == serving::LengthDist::Kind::fixed && static_cast<double>(r.input) != w.prompt.a) __builtin_trap();
    }
  } catch (const InputError&) {
  }
}

// A small run whose knobs come from the bytes.
void simulation(const std::uint8_t* d, std::size_t n) {
  if (n < 12) return;
  static const model::ModelConfig llama = io::bundled_model("llama-3.1-8b");
  // A 17th byte may pick a model with sliding-window layers (vLLM frees their blocks): half of
  // gpt-oss-120b's, or every layer of mistral-7b's (no speculation then: the draft is llama's).
  static const model::ModelConfig gpt_oss = io::bundled_model("gpt-oss-120b"), mistral = io::bundled_model("mistral-7b");
  const std::uint8_t pick = n >= 17 ? d[16] % 3 : 0;
  const model::ModelConfig& m = pick == 1 ? gpt_oss : pick == 2 ? mistral : llama;
  // Read once: parsing the chip file was three quarters of an input's time (fuzz_hardware_file
  // fuzzes that parser).
  static const hw::ChipSpec h100 = io::catalog_chip("h100-sxm");
  hw::System sys;
  sys.chip = h100;
  sys.chips_per_node = 8;
  if (n >= 16 && d[15] != 0) {
    // A slower chip, down to 1 kB/s and 1 kFLOP/s: steps of hours, days, or past what a run holds.
    hw::HardwareOverrides o;
    o.mem_bandwidth_Bps = std::pow(10.0, 3 + d[15] % 10);
    if ((d[15] & 0x80) != 0) o.matrix_peaks.emplace_back(DType::bf16, std::pow(10.0, 3 + (d[15] >> 4) % 8));
    sys = hw::make_system(sys.chip, o);
    sys.chips_per_node = 8;
  }
  serving::ServeConfig cfg;
  const auto kinds = {serving::EngineKind::vllm, serving::EngineKind::sglang, serving::EngineKind::trtllm,
                      serving::EngineKind::static_batch};
  cfg.engine = serving::engine_preset(kinds.begin()[d[0] % 4], sys.chip);
  serving::EngineConfig& e = cfg.engine;
  e.max_batched_tokens = 16 + 16 * static_cast<std::int64_t>(d[1]);
  e.max_num_seqs = std::min<std::int64_t>(e.max_batched_tokens, 1 + d[2] % 64);
  e.chunked_prefill = (d[3] & 1) != 0;
  e.prefix_caching = (d[3] & 2) != 0;
  e.preemption = (d[3] & 4) != 0 ? serving::Preemption::swap : serving::Preemption::recompute;
  e.mixed_chunk = (d[3] & 8) != 0;
  e.kv_block = e.kind == serving::EngineKind::sglang ? 1 : 1 + d[4] % 32;
  e.kv_blocks_override = (1 + d[5] % 64) * 16 / e.kv_block;
  serving::WorkloadSpec& w = cfg.workload;
  w.requests = 1 + d[6] % 4;
  // The byte's higher bits: a warm-up of up to all but one request, in one stream or drained first.
  w.warmup = ((d[6] >> 2) & 7) % w.requests;
  w.warmup_drained = ((d[6] >> 5) & 1) != 0;
  w.seed = d[7];
  w.prompt.kind = serving::LengthDist::Kind::uniform;
  w.prompt.a = 1, w.prompt.b = 1 + 2.0 * d[8];
  w.gen.kind = serving::LengthDist::Kind::uniform;
  w.gen.a = 1, w.gen.b = 1 + d[9] % 32;
  if (d[10] % 3 == 0) {
    w.arrival = serving::Arrival::closed;
    w.concurrency = 1 + d[10] % 16;
    // Users thinking up to 3 s, fixed or exponential, from a byte more.
    if (n >= 19 && d[18] % 3 != 0) {
      w.think.kind = d[18] % 3 == 1 ? serving::ThinkTime::Kind::fixed : serving::ThinkTime::Kind::exponential;
      w.think.a_s = (d[18] >> 2) % 4;
      if (w.think.a_s == 0) w.think.kind = serving::ThinkTime::Kind::none;
    }
  } else {
    w.qps = 1 + d[10];
  }
  if (d[11] % 2 == 0) {
    w.prefix_groups = 1 + d[11] % 3;
    w.prefix_tokens = 1 + 4 * d[11];
  }
  cfg.replicas = 1 + d[11] % 3;
  cfg.find_max_rate = false;
  // Two more bytes: speculative decoding (an MTP layer, k and one rate) and disaggregation.
  static const model::ModelConfig draft = model::mtp_draft(llama);
  if (n >= 14 && (d[12] & 1) != 0 && pick == 0) {
    cfg.spec.k = 1 + (d[12] >> 1) % 4;
    cfg.spec.accept.fill((d[13] % 101) / 100.0);
    cfg.spec.draft = &draft;
    cfg.spec.mtp = true;
    cfg.accept_spread = n >= 18 ? d[17] / 255.0 : 0;  // requests in acceptance classes of their own
  }
  // The capture list a step pads to, within these limits and rounded to the drafts' query (vLLM),
  // as serve has it.
  try {
    serving::settle_draft_limits(e, cfg.spec.k);
    serving::pad_graphs(e, cfg.spec.k);
  } catch (const InputError&) {
    return;  // no size left: the engine would not start
  }
  if (n >= 14 && (d[12] & 0x20) != 0) {
    cfg.disagg.prefill = 1 + (d[13] >> 4) % 2;
    cfg.disagg.decode = 1 + (d[13] >> 6) % 2;
    cfg.disagg.layerwise = (d[12] & 0x40) != 0;
    cfg.disagg.descriptor_s = (d[13] & 1) != 0 ? 0 : serving::kNixlDescriptorS * (1 + d[13] % 8);
    cfg.replicas = 1;
    if (n >= 15 && (d[14] & 1) != 0) {
      // Decode instances of their own: TP 1 or 2, another sequence limit and cache.
      cfg.disagg.decode_tp = 1 + (d[14] >> 1) % 2;
      serving::EngineConfig& de = cfg.disagg.decode_engine.emplace(cfg.engine);
      de.max_num_seqs = std::min<std::int64_t>(de.max_batched_tokens, 1 + (d[14] >> 2) % 64);
      de.seqs_by_draft = false;  // (a limit given)
      de.kv_blocks_override = (1 + (d[14] >> 2) % 64) * 16 / de.kv_block;
      serving::settle_draft_limits(de, cfg.spec.k);
      serving::pad_graphs(de, cfg.spec.k);
    }
  }
  // Two more: a window the run chooses (up to 8 measured per instance, at most 16 x the
  // requests above sent), and up to 4 seeds.
  if (n >= 17 && (d[16] & 1) != 0) {
    cfg.window.on = true;
    cfg.window.per_instance = 1 + (d[16] >> 1) % 8;
    w.requests *= 16;
    w.warmup = 0;  // (serve takes no --warmup-requests with a window of the run's own)
  }
  const int seeds = n >= 18 ? 1 + d[17] % 4 : 1;
  try {
    const serving::SeedsResult runs =
        serving::run_seeds(cfg, {seeds, 1}, [&](const serving::ServeConfig& c) { return serving::simulate(m, sys, c); });
    if (runs.runs.size() != static_cast<std::size_t>(seeds) || runs.chosen >= runs.runs.size()) __builtin_trap();
    for (const serving::ServingResult& r : runs.runs) {
      // A window's run stops once its measured requests ended: it may send fewer.
      const bool sent_ok = cfg.window.on ? r.steady_state.sent <= w.requests : r.simulated_requests == w.requests;
      if (r.unfinished != 0 || r.kv_utilisation_max > 1 || !sent_ok) __builtin_trap();
      if (r.sustainable && r.measured_requests == 0) __builtin_trap();  // nothing served is not sustainable
      if (!(r.makespan_s >= 0 && r.makespan_s <= 4e6) || !(r.ttft.max <= r.makespan_s)) __builtin_trap();
      if (r.steady_state.window && r.steady_state.reached && r.steady_state.trend_stopped_s < 0) __builtin_trap();
      if (r.steady_state.drained && r.steady_state.reached) __builtin_trap();  // a drained warm-up leaves an idle fleet
    }
  } catch (const InputError&) {
  }
}

}  // namespace

// The first byte picks what the rest is: '!' a simulation's knobs, 'c' a CSV trace, 'j' JSON
// lines, 'w' the workload's flags, anything else a length, an SLO, a duration and an arrival
// (one parser per input keeps a run short under the sanitizers).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case '!': simulation(data + 1, size - 1); break;
    case 'c': trace(text, false); break;
    case 'j': trace(text, true); break;
    case 'w': workload(text); break;
    default: flags(std::string_view(reinterpret_cast<const char*>(data), size)); break;
  }
  return 0;
}
