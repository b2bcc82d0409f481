// `ridgeline search train|infer|serve`: the fastest plan that fits, and the trade-off curve.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>

#include "common.hpp"
#include "emit.hpp"
#include "ridgeline/analysis/search.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/planning/fleet.hpp"
#include "ridgeline/report/html.hpp"
#include "ridgeline/report/inference.hpp"
#include "ridgeline/report/planning.hpp"
#include "ridgeline/report/search.hpp"
#include "ridgeline/report/serving.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/report/text.hpp"
#include "ridgeline/report/training.hpp"
#include "ridgeline/serving/steady_state.hpp"

namespace ridgeline::cli {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) { g_stop.store(true); }

// Ctrl-C during a search stops it; the best plans found so far are still printed.
class SigintScope {
 public:
  SigintScope() { previous_ = std::signal(SIGINT, on_sigint); }
  ~SigintScope() { std::signal(SIGINT, previous_); }
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;

 private:
  void (*previous_)(int) = SIG_DFL;
};

// A progress bar on stderr when it is a terminal: plans, plans/s, best so far, ETA.
analysis::SearchControl control(const std::string& threads, const char* unit, double scale) {
  analysis::SearchControl c;
  c.stop = &g_stop;
  c.threads = parse_threads(threads);
  if (const std::function<void(double)> hook = progress_hook()) {
    c.progress = [hook](std::uint64_t done, std::uint64_t total, double) {
      hook(total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0.0);
    };
  } else if (isatty(STDERR_FILENO) != 0) {
    auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    c.progress = [start, unit, scale](std::uint64_t done, std::uint64_t total, double best) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
      const double frac = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0;
      const int w = 30, filled = static_cast<int>(frac * w);
      const double rate = el > 0 ? static_cast<double>(done) / el : 0;
      std::string bar(static_cast<size_t>(filled), '#');
      bar.resize(w, '.');
      std::string b = std::isfinite(best) ? fmt::format("{:.4g} {}", best * scale, unit) : "-";
      std::fprintf(stderr, "\r[%s] %3.0f%%  %llu plans  %.3g plans/s  best %s  ETA %.1f s   ", bar.c_str(), 100 * frac,
                   static_cast<unsigned long long>(done), rate, b.c_str(), rate > 0 ? static_cast<double>(total - std::min(total, done)) / rate : 0.0);
      if (done >= total) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  }
  return c;
}

std::vector<DType> dtype_list(const std::string& v, const char* flag) {
  std::vector<DType> out;
  for (const std::string& item : split_list(v)) {
    if (item.empty()) throw InputError(fmt::format("{}: '{}' has an empty item: expected dtypes separated by commas", flag, v));
    const DType d = parse_dtype_or_throw(item, flag);
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

std::optional<std::int64_t> opt_int(const std::string& v, const char* flag) {
  if (v.empty()) return std::nullopt;
  return parse_positive_int(v, flag);
}

void finish(bool interrupted) {
  if (!interrupted) return;
  out_stream()->flush();
  std::fprintf(stderr, "ridgeline: search interrupted: the plans shown are the best of those evaluated\n");
  exit_status() = 130;
}

}  // namespace

// search train|infer --hw a,b,c: each chip's best plan side by side.
constexpr report::Headline kSearchTrainRows[] = {
    {"tp", "/best/0/tp", report::Shown::number},
    {"pp", "/best/0/pp", report::Shown::number},
    {"dp", "/best/0/dp", report::Shown::number},
    {"cp", "/best/0/cp", report::Shown::number},
    {"ep", "/best/0/ep", report::Shown::number},
    {"vpp", "/best/0/vpp", report::Shown::number},
    {"micro-batch", "/best/0/micro_batch", report::Shown::number},
    {"ZeRO", "/best/0/zero", report::Shown::number},
    {"recompute", "/best/0/recompute", report::Shown::text},
    {"step time", "/best/0/step_time_s", report::Shown::time},
    {"tokens/s", "/best/0/tokens_per_s", report::Shown::rate},
    {"MFU", "/best/0/mfu", report::Shown::fraction},
    {"memory per GPU", "/best/0/memory_per_gpu/total_bytes", report::Shown::bytes},
    {"run days", "/best/0/run/days", report::Shown::number},
    {"run cost", "/best/0/run/usd", report::Shown::usd},
    {"feasible plans", "/feasible", report::Shown::number},
};
constexpr report::Headline kSearchInferRows[] = {
    {"chips", "/best/0/chips", report::Shown::number},
    {"tp", "/best/0/tp", report::Shown::number},
    {"ep", "/best/0/ep", report::Shown::number},
    {"batch", "/best/0/batch", report::Shown::number},
    {"weights", "/best/0/weight_dtype", report::Shown::text},
    {"KV cache", "/best/0/kv_dtype", report::Shown::text},
    {"TTFT", "/best/0/ttft_s", report::Shown::time},
    {"TPOT", "/best/0/tpot_s", report::Shown::time},
    {"output tokens/s", "/best/0/output_tokens_per_s", report::Shown::rate},
    {"  per chip", "/best/0/output_tokens_per_s_per_chip", report::Shown::rate},
    {"feasible plans", "/feasible", report::Shown::number},
};

namespace {

// search serve's flags (report --fleet takes them too).
struct ServeSearchFlags {
  HardwareFlags hw;
  WorkloadFlags load;
  bool json = false;
  std::string model = "llama-3.1-8b", tp, ep, experts, weight_dtypes, kv_dtypes, act_dtype = "bf16", engines = "vllm";
  std::string max_num_seqs, max_batched_tokens, router = "round-robin", slo, max_gpus = "1024", top = "10", threads, plot, margin;
  std::string max_rate = "on", pareto = "offered";
  std::vector<std::string> prices;
  std::vector<std::string> drafts, accepts;  // --draft and --accept, repeatable: paired in order
  const CLI::App* app = nullptr;             // the command: the order its flags were given in
  std::string spec_tokens;
  std::string disagg = "off", decode_tp, decode_ep, disagg_split = "search", chunked_prefill, graph_padding, moe_a2a;
  EmitFlags emit;
};

// A knob the search tries on, off or both ways (both: `first`, then the other).
std::vector<bool> on_off_both(const std::string& v, const char* flag, bool first) {
  if (v == "on") return {true};
  if (v == "off") return {false};
  if (v == "both") return {first, !first};
  throw InputError(fmt::format("{}: '{}' is not on, off or both", flag, v));
}

void add_serve_search_flags(CLI::App* app, ServeSearchFlags* f) {
  f->app = app;
  add_hardware_flags(app, f->hw);
  hide_flags(app, {"--chips"});
  add_workload_flags(app, f->load);
  app->add_flag("--json", f->json, "JSON on stdout");
  app->add_option("--model", f->model, "bundled model, its Hugging Face repository (ORG/NAME), or config.json")->capture_default_str();
  app->add_option("--tp", f->tp, "tensor parallelism to try, comma-separated (default: 1, 2, 4, 8 within a node)");
  app->add_option("--ep", f->ep, "expert parallelism to try (default: 1; MoE: powers of two within a node)");
  app->add_option("--experts", f->experts,
                  "MoE: expert layouts to try inside each tp group, tp,ep (tp: each expert's width split; ep: whole experts, "
                  "attention tensor-parallel; default: both at tp > 1)");
  app->add_option("--moe-a2a", f->moe_a2a,
                  "pairs, gather or deepep: how every deployment's expert parallelism moves the tokens, an all-to-all of the "
                  "pairs, every rank's tokens gathered and the outputs reduce-scattered (the engines' default) or DeepEP's kernels "
                  "(docs/serving.md#deepep)");
  app->add_option("--weight-dtype", f->weight_dtypes,
                  "weight dtypes to try, comma-separated (default: the checkpoint's, and fp8 on chips that compute fp8 unless the checkpoint is quantised)");
  app->add_option("--kv-dtype", f->kv_dtypes, "KV-cache dtypes to try (default: --act-dtype, and fp8 on chips that compute fp8)");
  app->add_option("--act-dtype", f->act_dtype, "activations")->capture_default_str();
  app->add_option("--engine", f->engines, "engines to try: vllm, sglang, trtllm, static")->capture_default_str();
  app->add_option("--max-num-seqs", f->max_num_seqs, "sequence limits to try (default: the engine's and 512 ... 16 below it)");
  app->add_option("--max-batched-tokens", f->max_batched_tokens, "token budgets to try (default: the engine's)");
  app->add_option("--chunked-prefill", f->chunked_prefill,
                  "on, off or both: prompts split over steps within the token budget or not (default: each engine's own, on for vLLM and SGLang, off for TensorRT-LLM)");
  app->add_option("--graph-padding", f->graph_padding,
                  "TensorRT-LLM: on, off or both: a decode batch padded to the next captured CUDA graph, or replayed as a graph only at "
                  "1-32, 64 and 128 (cuda_graph_config.enable_padding; default off, its own; vLLM and SGLang pad)")
      ->type_name("on|off|both");
  app->add_option("--router", f->router, "round-robin, least-loaded or prefix")->capture_default_str();
  app->add_option("--slo", f->slo, "targets, e.g. ttft_p99=1s,tpot_p99=50ms");
  app->add_option("--margin", f->margin,
                  "headroom: meet every --slo target with this fraction to spare, e.g. 0.1 or 10%; or band: each deployment's targets "
                  "tightened by its class's median error in the validation table, where its class runs optimistic")
      ->type_name("FRACTION");
  app->add_option("--price", f->prices,
                  "USD per GPU-hour for every chip, e.g. 2.5/h, or CHIP=USD/h for one chip of --hw, e.g. h100-sxm=2.5/h (repeatable; default: the "
                  "chip file's price_per_hour)");
  app->add_option("--max-gpus", f->max_gpus, "largest fleet")->capture_default_str();
  app->add_option("--max-rate", f->max_rate, "on: each feasible deployment's largest rate within the SLOs (open loop)")->capture_default_str();
  app->add_option("--pareto", f->pareto,
                  "offered|saturation: the Pareto front at the offered load, or each feasible fleet at its own saturation (the SLO not applied)")
      ->capture_default_str();
  app->add_option("--top", f->top, "feasible deployments to list")->capture_default_str();
  app->add_option("--threads", f->threads, "worker threads (default: all cores)");
  app->add_option("--plot", f->plot, "write the Pareto chart (.svg or .png)");
  app->add_option("--draft", f->drafts,
                  "speculative decoding: a draft to try, a model (bundled or config.json) of the target's vocabulary or mtp; "
                  "repeatable, each followed by its --accept")
      ->allow_extra_args(false);
  app->add_option("--spec-tokens", f->spec_tokens,
                  "draft tokens per step to try with each draft, comma-separated, 0 for plain decoding (default: as many as its --accept rates)");
  app->add_option("--accept", f->accepts,
                  "the acceptance rate of the --draft before it: one for every position, or one per position (0.9,0.8,0.7)")
      ->allow_extra_args(false);
  app->add_option("--disagg", f->disagg,
                 "off (aggregated replicas), on (prefill and decode instances apart, split by rate matching) or both (compared)")
      ->capture_default_str();
  app->add_option("--decode-tp", f->decode_tp,
                  "disaggregated: the decode instances' TPs to try with each prefill --tp (default: every --tp), or same");
  app->add_option("--decode-ep", f->decode_ep,
                  "disaggregated: the decode instances' EPs to try with each prefill --ep (default: every --ep at the decode TP), or same");
  app->add_option("--disagg-split", f->disagg_split,
                  "disaggregated: search (every P:D cheaper than rate matching's split) or match (rate matching's split only)")
      ->capture_default_str();
  add_emit_flags(app, f->emit);
}

// The space `search serve` searches, and the `serve` command each deployment's numbers come from.
struct FleetRun {
  model::ModelConfig model;
  std::deque<model::ModelConfig> drafts;  // the --draft models (the space's drafts point at them)
  planning::FleetSpace space;
  std::string prefix;
};
void fleet_run(ServeSearchFlags* v, FleetRun& run) {
  run.model = io::resolve_model(v->model);
  const model::ModelConfig& m = run.model;
  planning::FleetSpace& s = run.space;
  std::string& prefix = run.prefix;
  if (!v->hw.chips.empty()) throw InputError("--chips: the search takes --tp and --ep");
  // Chips, each with its price.
  for (const std::string& n : chip_names(v->hw.hw, "in one search")) {
    HardwareFlags one = v->hw;
    one.hw = n;
    planning::ChipChoice c;
    c.sys = load_chip_system(one);
    c.arg = n;
    c.usd_per_hour = c.sys.chip.usd_per_hour;
    if (c.usd_per_hour > 0) c.price_source = "price_per_hour";
    s.chips.push_back(std::move(c));
  }
  for (const std::string& p : v->prices) {
    const std::size_t eq = p.find('=');
    if (eq == std::string::npos) {
      // One USD/h for every chip of the search, as `train` takes it (the help said USD/h and the
      // search refused it).
      for (const planning::ChipChoice& c : s.chips) {
        if (p == c.arg || p == c.sys.chip.name) throw InputError(fmt::format("--price: '{}' names a chip without its price: expected CHIP=USD/h, as in {}=2.5/h", p, p));
        if (c.price_source == "--price") {
          throw InputError(fmt::format("--price: '{}' prices {} again: give each chip one price (CHIP=USD/h), or one USD/h for all", p, c.arg));
        }
      }
      // (A value that begins with a letter, past spaces and a dollar sign, is a word: a chip's
      // name without its price or a typo, said so; a price's own faults are parse_usd_per_hour's.)
      const std::size_t first = p.find_first_not_of(" $");
      if (first == std::string::npos || std::isalpha(static_cast<unsigned char>(p[first])) != 0) {
        throw InputError(fmt::format("--price: '{}' is neither USD/h nor CHIP=USD/h (as in 2.5/h, or {}=2.5/h for one chip of --hw)", p,
                                     s.chips.front().arg));
      }
      const double usd = parse_usd_per_hour(p, "--price");
      for (planning::ChipChoice& c : s.chips) {
        c.usd_per_hour = usd;
        c.price_source = "--price";
      }
      continue;
    }
    const std::string chip = p.substr(0, eq);
    std::size_t k = 0;
    while (k < s.chips.size() && s.chips[k].sys.chip.name != chip && s.chips[k].arg != chip) ++k;
    if (k == s.chips.size()) throw InputError(fmt::format("--price: '{}' is not one of the --hw chips ({})", chip, v->hw.hw));
    if (s.chips[k].price_source == "--price") throw InputError(fmt::format("--price: {} is priced twice: give each chip one price", chip));
    s.chips[k].usd_per_hour = parse_usd_per_hour(p.substr(eq + 1), fmt::format("--price {}", chip));
    s.chips[k].price_source = "--price";
  }
  serving::ServeConfig& b = s.base;
  b.workload = workload_spec(v->load);
  b.window = measurement_window(v->load);
  s.seeds = seeds_config(v->load);
  if (!v->load.qps.empty() && v->load.trace.empty() && qps_rates(v->load.qps).size() != 1) {
    throw InputError("--qps: one rate for a search (the search finds each deployment's largest)");
  }
  b.forward.precision.activation = parse_dtype_or_throw(v->act_dtype, "--act-dtype");
  b.forward.sampling = sampling_mode(v->load);
  b.forward.expert_imbalance = 0;  // serve's default: the routing model (docs/serving.md#moe-layouts)
  // Speculation: each --draft with the --accept after it; --spec-tokens may list counts to try
  // with each (0: plain decoding), else each draft's own (as many as its rates).
  std::vector<int> ks;
  if (!v->spec_tokens.empty()) {
    for (const std::string& item : split_list(v->spec_tokens)) {
      const std::int64_t k = item == "0" ? 0 : parse_positive_int(item, "--spec-tokens");
      if (k > model::Speculation::kMaxTokens) {
        throw InputError(fmt::format("--spec-tokens: {} is out of range: expected 0 to {}", k, model::Speculation::kMaxTokens));
      }
      if (std::find(ks.begin(), ks.end(), static_cast<int>(k)) == ks.end()) ks.push_back(static_cast<int>(k));
    }
  }
  const int k_max = ks.empty() ? 0 : *std::max_element(ks.begin(), ks.end());
  if (!ks.empty() && k_max == 0) throw InputError("--spec-tokens: only 0 (plain decoding): drop --draft, --spec-tokens and --accept");
  if (v->drafts.size() > 16) throw InputError(fmt::format("--draft: {} drafts; at most 16", v->drafts.size()));
  if (v->drafts.empty() && !v->accepts.empty()) throw InputError("--accept: speculative decoding needs --draft MODEL or mtp");
  // Each --draft is followed by its own --accept, before the next --draft ('d' and 'a' in the
  // order given).
  std::string order;
  if (v->app != nullptr) {
    for (const CLI::Option* o : v->app->parse_order()) {
      if (o->get_name() == "--draft") order += 'd';
      if (o->get_name() == "--accept") order += 'a';
    }
  }
  for (std::size_t i = 0, d = 0; i < order.size(); ++i) {
    const bool draft = order[i] == 'd';
    if (draft && i + 1 < order.size() && order[i + 1] == 'd') {
      throw InputError(fmt::format("--draft: '{}' has no --accept before the next --draft: give --draft A --accept RATE --draft B --accept RATE",
                                   v->drafts[d]));
    }
    if (!draft && (i == 0 || order[i - 1] != 'd')) {
      throw InputError("--accept: each --accept follows its own --draft: give --draft A --accept RATE --draft B --accept RATE");
    }
    d += draft ? 1 : 0;
  }
  if (v->drafts.size() != v->accepts.size() && !v->drafts.empty()) {
    throw InputError(fmt::format("--accept: {} --draft and {} --accept: give each draft its own rates (--draft A --accept 0.7 --draft B --accept 0.6)",
                                 v->drafts.size(), v->accepts.size()));
  }
  if (v->drafts.empty() && !ks.empty()) throw InputError("--spec-tokens: speculative decoding needs --draft MODEL or mtp");
  for (std::size_t i = 0; i < v->drafts.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (v->drafts[j] == v->drafts[i] && v->accepts[j] == v->accepts[i]) {
        throw InputError(fmt::format("--draft: '{}' with --accept {} is given twice", v->drafts[i], v->accepts[i]));
      }
    }
    SpecFlags one{v->drafts[i], "", v->accepts[i]};
    const std::size_t rates = split_list(one.accept).size();
    // One rate serves every count tried; rates per position cover as many tokens as they are.
    if (!ks.empty() && rates <= 1) one.tokens = std::to_string(k_max);
    planning::DraftChoice c;
    c.spec = speculation(one, m, run.drafts.emplace_back());
    c.arg = v->drafts[i];
    s.drafts.push_back(std::move(c));  // planning::validate checks each draft's rates cover every count
  }
  s.spec_tokens = ks;
  s.disaggregated = on_off_both(v->disagg, "--disagg", false);
  if (!v->slo.empty()) b.slo = serving::parse_slo(v->slo);
  s.slo_asked = b.slo;
  std::string margin_word = v->margin;  // "band" in any case, spaces around it allowed
  margin_word.erase(0, margin_word.find_first_not_of(" \t"));
  margin_word.erase(margin_word.find_last_not_of(" \t") + 1);
  std::transform(margin_word.begin(), margin_word.end(), margin_word.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (margin_word == "band") {
    // Each deployment's own targets, from its class's errors (planning::band_slo); planning::validate
    // refuses it without --slo targets.
    s.margin_band = true;
  } else if (!v->margin.empty()) {
    // A fraction, or a percentage: the fleet must meet each target with it to spare.
    const std::string& mg = v->margin;
    const bool pct = mg.size() > 1 && mg.back() == '%';
    if (std::any_of(mg.begin(), mg.end(), [](unsigned char c) { return std::isalpha(c) && c != 'e' && c != 'E'; })) {
      throw InputError(fmt::format("--margin: '{}' is not headroom: expected a fraction from 0 to 0.9 (or 0% to 90%), or band", mg));
    }
    const double x = parse_number(pct ? mg.substr(0, mg.size() - 1) : mg, "--margin") / (pct ? 100 : 1);
    if (!(x >= 0 && x < 0.9)) {
      throw InputError(fmt::format("--margin: '{}' is out of range: expected a fraction from 0 to 0.9 (or 0% to 90%), or band", mg));
    }
    if (!b.slo.any()) throw InputError("--margin: headroom over the SLO needs --slo targets");
    s.margin = x;
    for (serving::SloTarget& g : b.slo.targets) g.limit_s *= 1 - x;
  }
  const auto router = serving::parse_router(v->router);
  if (!router) throw InputError(fmt::format("--router: '{}' is not a router: expected round-robin, least-loaded or prefix", v->router));
  b.router = *router;
  auto ints = [](const std::string& list, const char* flag) {
    std::vector<std::int64_t> out;
    if (list.empty()) return out;
    for (const std::string& item : split_list(list)) {
      const std::int64_t x = parse_positive_int(item, flag);
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    }
    if (out.size() > 64) throw InputError(fmt::format("{}: {} values; at most 64", flag, out.size()));
    return out;
  };
  s.tp = ints(v->tp, "--tp");
  s.ep = ints(v->ep, "--ep");
  if (!v->experts.empty()) {
    for (const std::string& x : split_list(v->experts, ',')) {
      using Experts = model::ForwardConfig::Experts;
      if (x != "tp" && x != "ep") throw InputError(fmt::format("--experts: '{}' is not a layout: expected tp, ep or tp,ep", x));
      const Experts e = x == "ep" ? Experts::expert : Experts::tensor;
      if (std::find(s.experts.begin(), s.experts.end(), e) == s.experts.end()) s.experts.push_back(e);
    }
  }
  if (!v->moe_a2a.empty()) s.moe_a2a = parse_moe_a2a(v->moe_a2a);
  if (v->decode_tp == "same") s.decode_tp_same = true;
  else s.decode_tp = ints(v->decode_tp, "--decode-tp");
  if (v->decode_ep == "same") s.decode_ep_same = true;
  else s.decode_ep = ints(v->decode_ep, "--decode-ep");
  for (const auto& [value, flag] : {std::pair{&v->decode_tp, "--decode-tp"}, {&v->decode_ep, "--decode-ep"}}) {
    if (!value->empty() && v->disagg == "off") throw InputError(fmt::format("{}: decode instances are searched with --disagg on or both", flag));
  }
  if (v->disagg_split != "match" && v->disagg_split != "search") {
    throw InputError(fmt::format("--disagg-split: '{}' is not match or search", v->disagg_split));
  }
  s.split_search = v->disagg_split == "search";
  s.max_num_seqs = ints(v->max_num_seqs, "--max-num-seqs");
  s.max_batched_tokens = ints(v->max_batched_tokens, "--max-batched-tokens");
  if (!v->chunked_prefill.empty()) s.chunked_prefill = on_off_both(v->chunked_prefill, "--chunked-prefill", true);
  if (!v->graph_padding.empty()) s.graph_padding = on_off_both(v->graph_padding, "--graph-padding", false);
  if (!v->weight_dtypes.empty()) {
    for (DType d : dtype_list(v->weight_dtypes, "--weight-dtype")) s.weight_dtypes.emplace_back(d);
  }
  if (!v->kv_dtypes.empty()) {
    for (DType d : dtype_list(v->kv_dtypes, "--kv-dtype")) s.kv_dtypes.emplace_back(d);
  }
  // Without --weight-dtype (--kv-dtype): the checkpoint's (the activations') and fp8 where the
  // chip computes it, as a planner would try both.
  s.fp8_by_default = true;
  for (const std::string& item : split_list(v->engines)) {
    const auto kind = serving::parse_engine(item);
    if (!kind) throw InputError(fmt::format("--engine: '{}' is not an engine: expected vllm, sglang, trtllm or static (each optionally @MAJOR.MINOR)", item));
    if (std::find(s.engines.begin(), s.engines.end(), *kind) == s.engines.end()) s.engines.push_back(*kind);
  }
  b.engine.kind = s.engines.front().kind;
  b.engine.version = s.engines.front().version;
  s.max_gpus = parse_positive_int(v->max_gpus, "--max-gpus");
  s.top = static_cast<int>(std::min<long long>(parse_positive_int(v->top, "--top"), 1000000));
  if (v->max_rate != "on" && v->max_rate != "off") throw InputError(fmt::format("--max-rate: '{}' is not on or off", v->max_rate));
  s.max_rate = v->max_rate == "on";
  if (v->pareto != "offered" && v->pareto != "saturation") {
    throw InputError(fmt::format("--pareto: '{}' is not a load: expected offered or saturation", v->pareto));
  }
  s.pareto = v->pareto == "saturation" ? planning::ParetoAt::saturation : planning::ParetoAt::offered;
  // The `serve` command each deployment's numbers come from: the model and the workload as given.
  using report::shell_word;
  prefix = "ridgeline serve --model " + shell_word(v->model);
  auto flag = [&](const char* name, const std::string& val) { prefix += fmt::format(" {} {}", name, shell_word(val)); };
  const WorkloadFlags& l = v->load;
  for (auto [name, val] : {std::pair{"--qps", &l.qps}, {"--concurrency", &l.concurrency}, {"--users", &l.users}, {"--think-time", &l.think_time}, {"--trace", &l.trace},
                           {"--requests", &l.requests}, {"--prefix-groups", &l.prefix_groups},
                           {"--prefix-tokens", &l.prefix_tokens}, {"--seeds", &l.seeds}, {"--seed-quantile", &l.seed_quantile}}) {
    if (!val->empty()) flag(name, *val);
  }
  if (l.trace.empty()) {  // a trace gives the lengths (serve refuses --prompt and --gen with it)
    flag("--prompt", l.prompt);
    flag("--gen", l.gen);
  }
  if (l.arrival != "poisson") flag("--arrival", l.arrival);
  if (l.warmup != "0") flag("--warmup-requests", l.warmup);
  if (l.warmup_drain != "off") flag("--warmup-drain", l.warmup_drain);
  if (l.seed != "1") flag("--seed", l.seed);
  if (l.sampling != "greedy") flag("--sampling", l.sampling);
  for (const std::string& p : v->hw.peaks) flag("--peak", p);
  if (!v->hw.mem_bw.empty()) flag("--mem-bw", v->hw.mem_bw);
  if (!v->hw.link_bw.empty()) flag("--link-bw", v->hw.link_bw);
  if (v->act_dtype != "bf16") flag("--act-dtype", v->act_dtype);
  if (v->router != "round-robin") flag("--router", v->router);
  if (s.moe_a2a) flag("--moe-a2a", model::name(*s.moe_a2a));
  if (!v->slo.empty()) flag("--slo", v->slo);
  // Speculation (--draft, --spec-tokens, --accept) is each deployment's own.
}

}  // namespace

void register_search(CLI::App& root, std::vector<Command>& commands) {
  auto* search = root.add_subcommand("search", "the fastest plan that fits, and the Pareto front (train, infer), or the cheapest serving fleet (serve)");
  search->require_subcommand(1);

  struct TrainFlags {
    HardwareFlags hw;
    bool json = false, fsdp = false, sp = false, dropout = false, uneven = false, across = false;
    std::string model = "llama-3.1-8b", gpus, gpus_per_node, seq = "2048", global_batch, dtype = "bf16", attention = "flash";
    std::string node_link_bw, margin = "0.05", headroom = "0", objective = "step_time", top = "5", threads, plot;
    std::string tp, pp, cp, cp_algo, ep, vpp, micro_batch, zero, recompute;
    std::string tp_max, pp_max, cp_max, vpp_max, micro_batch_max;
    RunFlags run;
    OverlapFlags overlap;
  };
  auto f = std::make_shared<TrainFlags>();
  auto* t = search->add_subcommand("train", "every training plan: TP, PP, CP, EP, VPP, micro-batch, recomputation, ZeRO, SP");
  add_hardware_flags(t, f->hw);
  hide_flags(t, {"--chips"});
  t->add_flag("--json", f->json, "JSON on stdout");
  t->add_option("--model", f->model, "bundled model, its Hugging Face repository (ORG/NAME), or config.json")->capture_default_str();
  t->add_option("--gpus", f->gpus, "GPUs")->required();
  t->add_option("--gpus-per-node", f->gpus_per_node, "GPUs per node (default: the chip file's)");
  t->add_option("--seq", f->seq, "sequence length")->capture_default_str();
  t->add_option("--global-batch", f->global_batch, "sequences per step")->required();
  t->add_option("--dtype", f->dtype, "GEMM dtype: bf16 or fp8")->capture_default_str();
  t->add_option("--attention", f->attention, "flash or naive")->capture_default_str();
  t->add_option("--node-link-bw", f->node_link_bw, "per-GPU network bandwidth between nodes, per direction");
  t->add_option("--memory-margin", f->margin, "allocator fragmentation margin, a fraction (as train)")->capture_default_str();
  t->add_option("--memory-headroom", f->headroom, "keep this fraction of each GPU's memory free")->capture_default_str();
  t->add_flag("--dropout", f->dropout, "keep dropout masks (GPT-3-era runs)");
  t->add_flag("--uneven-stages", f->uneven, "allow layers not divisible by pp x vpp");
  t->add_flag("--tp-across-nodes", f->across, "allow tensor parallelism wider than a node");
  add_overlap_flags(t, f->overlap);
  for (auto [name, var, what] : {std::tuple{"--tp", &f->tp, "fix tensor parallelism"}, {"--pp", &f->pp, "fix pipeline stages"},
                                 {"--cp", &f->cp, "fix context parallelism"}, {"--ep", &f->ep, "fix expert parallelism"},
                                 {"--vpp", &f->vpp, "fix virtual stages"}, {"--micro-batch", &f->micro_batch, "fix the micro-batch"},
                                 {"--zero", &f->zero, "fix the ZeRO stage"}, {"--recompute", &f->recompute, "fix: none, selective, full or auto"},
                                 {"--cp-algo", &f->cp_algo, "fix: ulysses or ring"}, {"--tp-max", &f->tp_max, "largest tp (default: a node)"},
                                 {"--pp-max", &f->pp_max, "largest pp"}, {"--cp-max", &f->cp_max, "largest cp"},
                                 {"--vpp-max", &f->vpp_max, "largest vpp"}, {"--micro-batch-max", &f->micro_batch_max, "largest micro-batch"}}) {
    t->add_option(name, *var, what);
  }
  t->add_flag("--fsdp", f->fsdp, "fix ZeRO-3 (FSDP)");
  t->add_flag("--sequence-parallel", f->sp, "fix sequence parallelism on (default: both)");
  t->add_option("--objective", f->objective, "step_time, mfu or tokens_per_s")->capture_default_str();
  t->add_option("--top", f->top, "plans to list")->capture_default_str();
  t->add_option("--threads", f->threads, "worker threads (default: all cores)");
  t->add_option("--plot", f->plot, "write the Pareto front as a chart (.svg or .png)");
  add_run_flags(t, f->run);
  commands.push_back({t, [f] {
                        per_chip(f->hw, f->json, kSearchTrainRows, [&] {
                        if (!f->hw.listed.empty() && !f->plot.empty()) throw InputError("--plot: one chart per chip: run with one --hw to draw it");
                        model::ModelConfig m = io::resolve_model(f->model);
                        hw::System sys = load_chip_system(f->hw);
                        if (!f->hw.chips.empty()) throw InputError("--chips: training takes --gpus");
                        analysis::TrainSearchSpace s;
                        auto& b = s.base;
                        b.gpus = parse_positive_int(f->gpus, "--gpus");
                        if (!f->gpus_per_node.empty()) b.gpus_per_node = parse_positive_int(f->gpus_per_node, "--gpus-per-node");
                        b.seq = parse_positive_int(f->seq, "--seq");
                        b.global_batch = parse_positive_int(f->global_batch, "--global-batch");
                        b.dtype = parse_dtype_or_throw(f->dtype, "--dtype");
                        if (f->attention == "naive") b.attention = ops::AttentionImpl::naive;
                        else if (f->attention != "flash") throw InputError(fmt::format("--attention: '{}' is not flash or naive", f->attention));
                        if (!f->node_link_bw.empty()) {
                          const double v = parse_quantity(f->node_link_bw, Quantity::bandwidth, "--node-link-bw", true);
                          if (!(v > 0)) throw InputError("--node-link-bw: must be greater than zero");
                          b.network_bandwidth_Bps = v;
                        }
                        b.memory_margin = parse_number(f->margin, "--memory-margin");
                        if (!(b.memory_margin >= 0 && b.memory_margin <= 1)) throw InputError("--memory-margin: expected a fraction in [0, 1]");
                        b.dropout = f->dropout;
                        b.uneven_stages = f->uneven;
                        apply_overlap_flags(f->overlap, b);
                        s.memory_headroom = parse_number(f->headroom, "--memory-headroom");
                        s.tp_across_nodes = f->across;
                        s.tp = opt_int(f->tp, "--tp");
                        s.pp = opt_int(f->pp, "--pp");
                        s.cp = opt_int(f->cp, "--cp");
                        s.ep = opt_int(f->ep, "--ep");
                        s.vpp = opt_int(f->vpp, "--vpp");
                        s.micro_batch = opt_int(f->micro_batch, "--micro-batch");
                        if (!f->zero.empty()) s.zero = static_cast<int>(parse_number(f->zero, "--zero"));
                        if (f->fsdp && s.zero && *s.zero != 3) {
                          throw InputError(fmt::format("--fsdp --zero {}: FSDP is ZeRO stage 3: give one of them", *s.zero));
                        }
                        if (f->fsdp) s.zero = 3;
                        if (!f->recompute.empty()) {
                          if (f->recompute == "none") s.recompute = analysis::Recompute::none;
                          else if (f->recompute == "selective") s.recompute = analysis::Recompute::selective;
                          else if (f->recompute == "full") s.recompute = analysis::Recompute::full;
                          else if (f->recompute == "auto") s.recompute = analysis::Recompute::automatic;
                          else throw InputError(fmt::format("--recompute: '{}' is not none, selective, full or auto", f->recompute));
                        }
                        if (!f->cp_algo.empty()) {
                          if (f->cp_algo != "ring" && f->cp_algo != "ulysses") throw InputError(fmt::format("--cp-algo: '{}' is not ulysses or ring", f->cp_algo));
                          s.cp_ring = f->cp_algo == "ring";
                        }
                        if (f->sp) s.sequence_parallel = true;
                        auto max = [](const std::string& v, const char* flag) { return v.empty() ? 0 : parse_positive_int(v, flag); };
                        s.tp_max = max(f->tp_max, "--tp-max");
                        s.pp_max = max(f->pp_max, "--pp-max");
                        s.cp_max = max(f->cp_max, "--cp-max");
                        s.vpp_max = max(f->vpp_max, "--vpp-max");
                        s.micro_batch_max = max(f->micro_batch_max, "--micro-batch-max");
                        if (f->objective == "step_time") s.objective = analysis::TrainObjective::step_time;
                        else if (f->objective == "mfu") s.objective = analysis::TrainObjective::mfu;
                        else if (f->objective == "tokens_per_s") s.objective = analysis::TrainObjective::tokens_per_s;
                        else throw InputError(fmt::format("--objective: '{}' is not step_time, mfu or tokens_per_s", f->objective));
                        s.top = static_cast<int>(parse_number(f->top, "--top"));
                        const double scale = s.objective == analysis::TrainObjective::step_time ? 1 : -1;
                        const char* unit = s.objective == analysis::TrainObjective::step_time ? "s"
                                           : s.objective == analysis::TrainObjective::mfu ? "MFU" : "tokens/s";
                        analysis::SearchControl c = control(f->threads, unit, scale);
                        analysis::TrainSearchResult r;
                        {
                          SigintScope scope;
                          r = analysis::search_train(m, sys, s, c);
                        }
                        // The whole run (--tokens, --days) of a plan: its step repeated.
                        report::RunReport run = run_goal(f->run, sys.chip, f->hw);
                        const bool whole_run = analysis::wanted(run.goal);
                        const double tokens_per_step = static_cast<double>(s.base.global_batch) * static_cast<double>(s.base.seq);
                        auto run_of = [&](double step_s) {
                          report::RunReport x = run;
                          x.totals = analysis::run_totals(step_s, tokens_per_step, static_cast<double>(s.base.gpus), run.goal);
                          return x;
                        };
                        if (!f->plot.empty() && !r.pareto.empty()) report::write_chart(f->plot, report::train_pareto_svg(m, sys, r), "--plot");
                        if (f->json) {
                          // Each plan as `train --json` gives it: the same code, the same numbers.
                          auto plans = [&](const std::vector<analysis::TrainPlan>& v) {
                            nlohmann::json a = nlohmann::json::array();
                            auto tr = std::make_unique<analysis::TrainResult>();
                            for (const auto& p : v) {
                              const analysis::TrainConfig cfg = analysis::train_config(s.base, p);
                              analysis::train(m, sys, cfg, *tr);
                              const report::RunReport pr = run_of(tr->step_time_s);
                              nlohmann::json pj = report::training_json(m, sys, cfg, *tr, whole_run ? &pr : nullptr);
                              pj.erase("ops");  // the per-op table: `train --json` with these flags gives it
                              a.push_back(std::move(pj));
                            }
                            return a;
                          };
                          nlohmann::json j = report::search_stats_json(r.stats);
                          j["model"] = m.name;
                          j["hw"] = sys.chip.name;
                          j["gpus"] = s.base.gpus;
                          j["seq"] = s.base.seq;
                          j["global_batch"] = s.base.global_batch;
                          j["objective"] = f->objective;
                          j["best"] = plans(r.best);
                          j["pareto"] = plans(r.pareto);
                          emit(true, j, "");
                        } else {
                          const report::RunReport best = run_of(r.best.empty() ? 0 : r.best.front().step_time_s);
                          emit(false, {}, report::train_search_text(m, sys, s, r, whole_run && !r.best.empty() ? &best : nullptr));
                        }
                        finish(r.stats.interrupted);
                        });
                      }});

  struct InferFlags {
    HardwareFlags hw;
    bool json = false, cuda_graphs = false;
    std::string model = "llama-3.1-8b", chips_max = "8", prompt = "128", gen = "128", tp, ep, batch_max;
    std::string weight_dtypes, kv_dtypes, act_dtype = "bf16", compute_dtype, attention = "flash", algo = "auto";
    std::string memory_utilization = "0.9";
    std::string ttft_max, tpot_max, objective = "tokens_per_s_per_chip", top = "5", threads, plot;
    std::string engine = "vllm";
  };
  auto g = std::make_shared<InferFlags>();
  auto* i = search->add_subcommand("infer", "every serving plan: chips, TP, EP, batch, weight and KV dtypes");
  add_hardware_flags(i, g->hw);
  hide_flags(i, {"--chips"});
  i->add_flag("--json", g->json, "JSON on stdout");
  i->add_option("--model", g->model, "bundled model, its Hugging Face repository (ORG/NAME), or config.json")->capture_default_str();
  i->add_option("--chips-max", g->chips_max, "most chips per replica (tp x ep)")->capture_default_str();
  i->add_option("--prompt", g->prompt, "prompt tokens per sequence")->capture_default_str();
  i->add_option("--gen", g->gen, "generated tokens per sequence")->capture_default_str();
  i->add_option("--tp", g->tp, "fix tensor parallelism");
  i->add_option("--ep", g->ep, "fix expert parallelism");
  i->add_option("--batch-max", g->batch_max, "largest batch (default: the largest that fits)");
  i->add_option("--weight-dtypes", g->weight_dtypes, "weight dtypes to try, comma-separated (default: the checkpoint's and fp8)");
  i->add_option("--kv-dtypes", g->kv_dtypes, "KV-cache dtypes to try (default: --act-dtype and fp8)");
  i->add_option("--act-dtype", g->act_dtype, "activations")->capture_default_str();
  i->add_option("--compute-dtype", g->compute_dtype,
                "matrix-unit dtype of every plan (default: fp8 weights on a chip with fp8 compute run in fp8, W8A8; else from "
                "weights and activations)");
  i->add_option("--attention", g->attention, "flash or naive")->capture_default_str();
  i->add_option("--algo", g->algo, "collective algorithm: auto, ring, tree, direct, nvls")->capture_default_str();
  i->add_flag("--cuda-graphs", g->cuda_graphs, "decode steps replayed as graphs");
  i->add_option("--memory-utilization", g->memory_utilization,
                "of the chip's memory, what the engine may use (vLLM's gpu_memory_utilization)")
      ->capture_default_str();
  i->add_option("--ttft-max", g->ttft_max, "latest acceptable time to first token (e.g. 500ms)");
  i->add_option("--tpot-max", g->tpot_max, "slowest acceptable time per output token (e.g. 50ms)");
  i->add_option("--objective", g->objective, "tokens_per_s_per_chip or latency")->capture_default_str();
  i->add_option("--top", g->top, "plans to list")->capture_default_str();
  i->add_option("--threads", g->threads, "worker threads (default: all cores)");
  i->add_option("--plot", g->plot, "write the Pareto front as a chart (.svg or .png)");
  i->add_option("--engine", g->engine,
                "vllm, sglang or trtllm: a batch is that many users served continuously (their steady state); static: one batch "
                "prefilled together and decoded to its end, as infer prices it")
      ->capture_default_str();
  commands.push_back({i, [g] {
                        // An engine that does not run on one of the chips side by side is refused
                        // before any is searched (TensorRT-LLM off NVIDIA GPUs: serving::runs_on).
                        if (const auto k = serving::parse_engine(g->engine); k && g->hw.hw.find(',') != std::string::npos) {
                          for (const std::string& n : chip_names(g->hw.hw, "side by side")) {
                            HardwareFlags one = g->hw;
                            one.hw = n;
                            one.chips.clear();
                            const hw::System chip = load_system(one);
                            serving::check_runs_on(*k, chip.chip);
                          }
                        }
                        per_chip(g->hw, g->json, kSearchInferRows, [&] {
                        if (!g->hw.listed.empty() && !g->plot.empty()) throw InputError("--plot: one chart per chip: run with one --hw to draw it");
                        model::ModelConfig m = io::resolve_model(g->model);
                        hw::System sys = load_chip_system(g->hw);
                        if (!g->hw.chips.empty()) throw InputError("--chips: the search takes --chips-max");
                        analysis::InferSearchSpace s;
                        const auto kind = serving::parse_engine(g->engine);
                        if (!kind) throw InputError(fmt::format("--engine: '{}' is not an engine: expected vllm, sglang, trtllm or static (each optionally @MAJOR.MINOR)", g->engine));
                        s.engine = g->engine;
                        if (kind->kind != serving::EngineKind::static_batch) {
                          s.batch_model = [k = *kind] { return std::make_unique<serving::ContinuousBatching>(k); };
                        }
                        s.chips_max = parse_positive_int(g->chips_max, "--chips-max");
                        s.base.prompt = parse_positive_int(g->prompt, "--prompt");
                        s.base.gen = parse_positive_int(g->gen, "--gen");
                        s.tp = opt_int(g->tp, "--tp");
                        s.ep = opt_int(g->ep, "--ep");
                        if (!g->batch_max.empty()) s.batch_max = parse_positive_int(g->batch_max, "--batch-max");
                        auto& fw = s.base.forward;
                        fw.precision.activation = parse_dtype_or_throw(g->act_dtype, "--act-dtype");
                        fw.expert_imbalance = 0;  // infer's default: the routing model (docs/serving.md#moe-layouts)
                        if (!g->compute_dtype.empty()) fw.precision.compute = parse_dtype_or_throw(g->compute_dtype, "--compute-dtype");
                        if (g->attention == "naive") fw.attention = ops::AttentionImpl::naive;
                        else if (g->attention != "flash") throw InputError(fmt::format("--attention: '{}' is not flash or naive", g->attention));
                        fw.algo = comm::algo_flag(g->algo);
                        s.base.cuda_graphs = g->cuda_graphs;
                        s.base.memory_utilization = parse_number(g->memory_utilization, "--memory-utilization");
                        if (!(s.base.memory_utilization > 0 && s.base.memory_utilization <= 1)) {
                          throw InputError(fmt::format("--memory-utilization: {} is out of range: expected more than 0 and at most 1",
                                                       s.base.memory_utilization));
                        }
                        // Default precisions: the checkpoint's weights and fp8 (a quantised checkpoint: its own
                        // mix only, an empty list), the activation dtype for the KV cache and fp8.
                        auto and_fp8 = [](DType d) {
                          return d == DType::fp8_e4m3 ? std::vector<DType>{d} : std::vector<DType>{d, DType::fp8_e4m3};
                        };
                        if (!g->weight_dtypes.empty()) s.weight_dtypes = dtype_list(g->weight_dtypes, "--weight-dtypes");
                        else if (!m.quantized) s.weight_dtypes = and_fp8(m.weight_dtype);
                        s.kv_dtypes = g->kv_dtypes.empty() ? and_fp8(fw.precision.activation) : dtype_list(g->kv_dtypes, "--kv-dtypes");
                        if (!g->ttft_max.empty()) s.ttft_max_s = parse_quantity(g->ttft_max, Quantity::time, "--ttft-max", true);
                        if (!g->tpot_max.empty()) s.tpot_max_s = parse_quantity(g->tpot_max, Quantity::time, "--tpot-max", true);
                        if (g->objective == "tokens_per_s_per_chip") s.objective = analysis::InferObjective::tokens_per_s_per_chip;
                        else if (g->objective == "latency") s.objective = analysis::InferObjective::latency;
                        else throw InputError(fmt::format("--objective: '{}' is not tokens_per_s_per_chip or latency", g->objective));
                        s.top = static_cast<int>(parse_number(g->top, "--top"));
                        const bool lat = s.objective == analysis::InferObjective::latency;
                        analysis::SearchControl c = control(g->threads, lat ? "s" : "tokens/s/chip", lat ? 1 : -1);
                        analysis::InferSearchResult r;
                        {
                          SigintScope scope;
                          r = analysis::search_infer(m, sys, s, c);
                        }
                        if (!g->plot.empty() && !r.pareto.empty()) report::write_chart(g->plot, report::infer_pareto_svg(m, sys, r), "--plot");
                        if (g->json) {
                          auto plans = [&](const std::vector<analysis::InferPlan>& v) {
                            nlohmann::json a = nlohmann::json::array();
                            auto ir = std::make_unique<analysis::InferenceResult>();
                            for (const auto& p : v) {
                              if (s.batch_model) {
                                a.push_back(report::infer_plan_json(s, p));  // the engine's steady state, as ranked
                                continue;
                              }
                              const analysis::InferenceConfig cfg = analysis::infer_config(s.base, p);
                              analysis::infer(m, sys, cfg, *ir);
                              nlohmann::json pj = report::inference_json(m, sys, cfg, *ir);
                              pj.erase("ops");  // the per-op table: `infer --json` with these flags gives it
                              a.push_back(std::move(pj));
                            }
                            return a;
                          };
                          nlohmann::json j = report::search_stats_json(r.stats);
                          j["model"] = m.name;
                          j["hw"] = sys.chip.name;
                          j["chips_max"] = s.chips_max;
                          j["prompt"] = s.base.prompt;
                          j["gen"] = s.base.gen;
                          j["objective"] = g->objective;
                          j["engine"] = g->engine;
                          j["best"] = plans(r.best);
                          j["pareto"] = plans(r.pareto);
                          emit(true, j, "");
                        } else {
                          emit(false, {}, report::infer_search_text(m, sys, s, r));
                        }
                        finish(r.stats.interrupted);
                        });
                      }});

  auto v = std::make_shared<ServeSearchFlags>();
  auto* sv = search->add_subcommand("serve", "the cheapest serving fleet meeting SLOs: chips, TP, EP, dtypes, engine knobs, replicas");
  add_serve_search_flags(sv, v.get());
  commands.push_back({sv, [v] {
                        const auto emit_to = emit_target(v->emit);
                        FleetRun run;
                        fleet_run(v.get(), run);
                        const model::ModelConfig& m = run.model;
                        const planning::FleetSpace& s = run.space;
                        const std::string& prefix = run.prefix;
                        analysis::SearchControl c = control(v->threads, s.chips.front().usd_per_hour > 0 ? "USD/h" : "GPUs", 1);
                        planning::FleetSearchResult r;
                        {
                          SigintScope scope;
                          r = planning::search_fleet(m, s, c);
                        }
                        if (!v->plot.empty() && !r.pareto.empty()) report::write_chart(v->plot, report::fleet_pareto_svg(m, s, r), "--plot");
                        nlohmann::json j = v->json ? report::fleet_search_json(m, s, r, prefix) : nlohmann::json{};
                        std::string text = v->json ? "" : report::fleet_search_text(m, s, r, prefix);
                        if (emit_to) emit_fleet_launches(*emit_to, emit_dir(v->emit), m, v->model, s, r, prefix, j, text);
                        emit(v->json, j, text);
                        finish(r.interrupted);
                      }});
}

void register_report_fleet(CLI::App& root, std::vector<Command>& commands) {
  auto v = std::make_shared<ServeSearchFlags>();
  auto out = std::make_shared<std::string>();
  // `ridgeline report --fleet ...` arrives here (run() renames it): hidden from the command list.
  auto* r = root.add_subcommand("report-fleet", "");
  r->group("");
  add_serve_search_flags(r, v.get());
  hide_flags(r, {"--plot", "--top", "--emit", "--emit-dir"});
  r->add_option("--out", *out, "HTML file to write")->required();
  commands.push_back({r, [v, out] {
                        check_extension(*out, "--out", {".html", ".htm"});
                        if (!v->emit.target.empty()) throw InputError("--emit: launch files come from search serve --emit, not a report");
                        v->top = "10000";  // every feasible deployment in the cost table (the most --top takes)
                        FleetRun run;
                        fleet_run(v.get(), run);
                        analysis::SearchControl c = control(v->threads, run.space.chips.front().usd_per_hour > 0 ? "USD/h" : "GPUs", 1);
                        planning::FleetSearchResult res;
                        {
                          SigintScope scope;
                          res = planning::search_fleet(run.model, run.space, c);
                        }
                        // The chosen deployment again, in full: its CDFs and its load over time.
                        nlohmann::json best_run = nullptr;
                        if (res.best) {
                          const serving::ServeConfig cfg = planning::serve_config(run.model, run.space, *res.best);
                          const hw::System& sys = run.space.chips[res.best->chip].sys;
                          best_run = report::serving_json(run.model, sys, cfg, serving::simulate(run.model, sys, cfg));
                        }
                        const std::string html =
                            report::html_fleet_report(report::fleet_search_json(run.model, run.space, res, run.prefix), best_run,
                                                      res.pareto.empty() ? std::string() : report::fleet_pareto_svg(run.model, run.space, res));
                        report::write_file_atomically(*out, html);
                        emit(v->json, nlohmann::json{{"out", *out}, {"bytes", html.size()}, {"feasible", res.feasible_count}},
                             "wrote " + *out + "\n");
                        finish(res.interrupted);
                      }});
}

}  // namespace ridgeline::cli
