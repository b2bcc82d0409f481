// The capacity planner (docs/serving.md#capacity-planning).
#include "ridgeline/planning/fleet.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "../analysis/search_pool.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/error_bands.hpp"
#include "ridgeline/model/graph.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "ridgeline/serving/step_model.hpp"

namespace ridgeline::planning {

std::string_view name(Reject r) noexcept {
  switch (r) {
    case Reject::layout: return "layout";
    case Reject::dtype: return "dtype";
    case Reject::memory: return "memory";
    case Reject::too_long: return "too_long";
    case Reject::ttft_floor: return "ttft_floor";
    case Reject::tpot_floor: return "tpot_floor";
    case Reject::fleet_size: return "fleet_size";
    case Reject::count: break;
  }
  return "?";
}

std::string_view name(ParetoAt p) noexcept { return p == ParetoAt::saturation ? "saturation" : "offered"; }

namespace {

using Clock = std::chrono::steady_clock;
using serving::ServeConfig;
using serving::ServingResult;

// One point of the space before it is evaluated.
struct Candidate {
  std::size_t chip = 0;
  serving::EngineRef engine = serving::EngineKind::vllm;
  std::int64_t tp = 1, ep = 1;
  model::ForwardConfig::Experts experts = model::ForwardConfig::Experts::tensor;
  std::optional<DType> w, kv;
  std::int64_t seqs = 0, budget = 0;
  std::optional<bool> chunked;  // none: the engine's preset
  std::optional<bool> padding;  // graph padding; none: the engine's preset
  bool disagg = false;
  std::int64_t dtp = 0, dep = 0;  // disaggregated: the decode instances' TP and EP
  int k = 0;             // speculative decoding: draft tokens per step
  std::size_t draft = 0;  // and the draft (index in FleetSpace::drafts)
};

// What became of a candidate.
struct Outcome {
  Reject reason = Reject::count;  // count: feasible
  Deployment d;
  std::string binding;
  double value_s = 0, target_s = 0;
  bool evaluated = false;
};

// The target furthest beyond (or least within) its value in a run: its name, value, target.
void binding_target(const serving::Slo& slo, const ServingResult& r, Outcome& o) {
  double worst = -1;
  for (const serving::SloTarget& g : slo.targets) {
    const double v = serving::statistic(serving::summary_of(r, g.metric), g.q);
    if (v / g.limit_s > worst) worst = v / g.limit_s, o.binding = serving::name(g.metric), o.value_s = v, o.target_s = g.limit_s;
  }
}

bool open_loop(const serving::WorkloadSpec& w) {
  return w.arrival == serving::Arrival::poisson || w.arrival == serving::Arrival::gamma || w.arrival == serving::Arrival::constant;
}

class Evaluator {
 public:
  Evaluator(const model::ModelConfig& m, const FleetSpace& s, const std::vector<serving::Request>& requests)
      : m_(m), s_(s), requests_(requests) {
    // The measured requests' mean lengths (the same for every deployment).
    for (std::size_t i = warmup(); i < requests_.size(); ++i) {
      mean_prompt_ += static_cast<double>(requests_[i].input), mean_gen_ += static_cast<double>(requests_[i].output), ++measured_;
    }
    if (measured_ > 0) mean_prompt_ /= static_cast<double>(measured_), mean_gen_ /= static_cast<double>(measured_);
    // The measured prompts' distinct lengths, and each request's among them (TTFT floors price
    // a length once).
    for (std::size_t i = warmup(); i < requests_.size(); ++i) prompts_.push_back(requests_[i].input);
    std::sort(prompts_.begin(), prompts_.end());
    prompts_.erase(std::unique(prompts_.begin(), prompts_.end()), prompts_.end());
    for (std::size_t i = warmup(); i < requests_.size(); ++i) {
      prompt_of_.push_back(static_cast<std::uint32_t>(std::lower_bound(prompts_.begin(), prompts_.end(), requests_[i].input) - prompts_.begin()));
    }
    prompt_s_.resize(prompts_.size());
    shared_prefixes_ = s_.base.workload.prefix_groups > 0;
    for (std::size_t i = warmup(); i < requests_.size(); ++i) {
      shared_prefixes_ = shared_prefixes_ || (requests_[i].prefix_group >= 0 && requests_[i].prefix_tokens > 0);
    }
  }

  Outcome run(const Candidate& c, std::uint64_t order) {
    Outcome o;
    o.evaluated = true;
    Deployment& d = o.d;
    d.chip = c.chip;
    d.engine = c.engine;
    d.tp = c.tp;
    d.ep = c.ep;
    d.experts = c.experts;
    d.weight_dtype = c.w;
    d.kv_dtype = c.kv;
    d.max_num_seqs = c.seqs;
    d.max_batched_tokens = c.budget;
    d.chunked_prefill = c.chunked;
    d.graph_padding = c.padding;
    d.replicas = 1;
    d.order = order;
    if (c.disagg) d.prefill = d.decode = 1, d.decode_tp = c.dtp, d.decode_ep = c.dep;
    d.spec_tokens = c.k;
    d.draft = c.draft;
    const hw::System& sys = s_.chips[c.chip].sys;
    ServeConfig cfg;
    try {
      cfg = serve_config(m_, s_, d);
    } catch (const InputError&) {
      // An engine that would not start so (vLLM with no CUDA-graph size left once rounded to its
      // drafts' query): this deployment, not the search.
      return reject(o, Reject::layout);
    }
    // Every kind of instance: its plan fits the model and the chip, and leaves room for a cache.
    const serving::InstancePlan dp = serving::instance_plan(cfg, c.disagg);
    // One replica (disaggregated: a prefill and a decode instance) until a fleet is sized: what
    // a rejection on a floor, which no count of replicas lifts, reports.
    d.gpus = static_cast<double>(c.tp * c.ep + (c.disagg ? dp.forward.tp * dp.forward.ep : 0));
    d.usd_per_hour = s_.chips[c.chip].usd_per_hour * d.gpus;
    const model::ForwardConfig f = serving::engine_forward(cfg.forward, cfg.engine), fd = serving::engine_forward(dp.forward, dp.engine);
    for (const model::ForwardConfig* x : {&f, &fd}) {
      if (model::check(m_, *x) != model::LayoutFault::none) return reject(o, Reject::layout);
      if (cfg.spec.on() && model::check(*cfg.spec.draft, *x) != model::LayoutFault::none) return reject(o, Reject::layout);
    }
    model::build_forward(m_, f, sys, {static_cast<double>(f.ep), 1, 1}, *graph_);
    for (int i = 0; i < graph_->op_count; ++i) {
      if (!ops::supported(graph_->ops[i].cost.expand(), sys.chip)) return reject(o, Reject::dtype);
    }
    const serving::ServeMemory mem = serving::serve_memory(m_, sys, cfg);
    const serving::ServeMemory dmem = c.disagg ? serving::serve_memory(m_, sys, cfg, true) : mem;
    if (mem.kv_blocks < 1 || dmem.kv_blocks < 1) return reject(o, Reject::memory);
    kv_blocks_ = {mem.kv_blocks, dmem.kv_blocks};
    try {
      serving::validate(m_, sys, cfg);
    } catch (const InputError&) {
      return reject(o, Reject::layout);
    }
    step_.prepare(m_, sys, f);
    if (c.disagg) decode_step_.prepare(m_, sys, fd);
    const serving::EngineConfig& e = cfg.engine;
    const serving::Slo& slo = cfg.slo;
    // Floors: what no number of replicas changes (a decode step on the instances that decode,
    // a prefill on those that prefill).
    d.floor_tpot_s = tpot_floor(c.disagg ? decode_step_ : step_, dp.engine, cfg.spec);
    // Every gap between two tokens is at least that step: a floor under TPOT and ITL alike.
    for (const serving::SloTarget& g : slo.targets) {
      if ((g.metric == serving::SloMetric::tpot || g.metric == serving::SloMetric::itl) && d.floor_tpot_s > g.limit_s) {
        return floor(o, Reject::tpot_floor, std::string(serving::name(g.metric)), d.floor_tpot_s, g.limit_s);
      }
    }
    // The same prefill instances (chip, plan, engine and budget) have the same floor: the last
    // candidate's, when it is of them (the sequence limits of a family).
    const FloorKey key{c.chip, c.engine, c.tp, c.ep, c.experts, c.w, c.kv, c.budget, c.chunked, c.padding, c.k, c.draft};
    const serving::SloTarget* ttft = slo.find(serving::SloMetric::ttft);
    if (!(floor_key_ && *floor_key_ == key)) floor_ttft_ = ttft_floor(e, ttft ? ttft->q : 0.99, f.ep), floor_key_ = key;
    d.floor_ttft_s = floor_ttft_;
    if (ttft && d.floor_ttft_s > ttft->limit_s) return floor(o, Reject::ttft_floor, "ttft", d.floor_ttft_s, ttft->limit_s);

    // The fewest replicas (disaggregated: instances, at least one of each, split as rate
    // matching says): from an estimate of one replica's capacity, galloping to a count that
    // meets the SLOs and one that does not, then bisecting.
    ServingResult met_run, last;
    bool too_long = false;
    double ratio = 1;  // prefill instances per decode instance
    if (c.disagg) {
      serving::DisaggResult rates;
      serving::disagg_rates(m_, sys, cfg, std::max(1.0, mean_prompt_), std::max(1.0, mean_gen_), rates);
      ratio = rates.prefill_per_decode;
    }
    // Prefill instances of a fleet of n instances, split as rate matching says.
    auto prefill_of = [&](std::int64_t n) {
      return std::clamp<std::int64_t>(std::llround(static_cast<double>(n) * ratio / (1 + ratio)), 1, n - 1);
    };
    // n instances as the deployment runs them: n replicas, or n split into prefill and decode.
    auto size = [&](std::int64_t n) {
      if (!c.disagg) {
        cfg.replicas = n;
        return;
      }
      cfg.disagg.prefill = prefill_of(n);
      cfg.disagg.decode = n - cfg.disagg.prefill;
    };
    // The most instances within max_gpus: a split's GPUs only grow with n (each side's count
    // does), so the last n that fits is found by bisection.
    const std::int64_t per = c.tp * c.ep, per_decode = dp.forward.tp * dp.forward.ep;
    auto gpus = [&](std::int64_t n) { return c.disagg ? prefill_of(n) * per + (n - prefill_of(n)) * per_decode : n * per; };
    std::int64_t max_r = std::max<std::int64_t>(0, s_.max_gpus / std::max(per, per_decode));
    for (std::int64_t up = s_.max_gpus / std::min(per, per_decode) + 1; up - max_r > 1;) {
      const std::int64_t mid = max_r + (up - max_r) / 2;
      (mid >= (c.disagg ? 2 : 1) && gpus(mid) <= s_.max_gpus ? max_r : up) = mid;
    }
    if (max_r < (c.disagg ? 2 : 1)) return reject(o, Reject::fleet_size);
    std::int64_t lo = c.disagg ? 1 : 0, hi = 0;
    // Simulates r replicas into `last`; a run that meets the SLOs becomes `met_run`.
    // `whole`: run to the end (the largest fleet, whose percentiles a rejection reports).
    auto attempt = [&](std::int64_t r, bool whole = false) {
      size(r);
      last = simulate(sys, cfg, !whole);
      ++d.simulations;
      if (last.rejected > 0) too_long = true;
      if (!met(slo, last)) return false;
      hi = r;
      met_run = std::move(last);
      return true;
    };
    // The first guess: the fleet the family's last feasible limit needed when its run there
    // stayed below this limit too (that run is kept: the same fleet meets the SLO), else the
    // capacity estimate.
    const bool same_fleet = family_fleet_ > 0 && c.seqs > 0 && family_peak_ < c.seqs;
    const std::int64_t guess = same_fleet ? family_fleet_ : estimate_replicas(cfg, mem) * (c.disagg ? 2 : 1);
    const std::int64_t r0 = std::clamp<std::int64_t>(guess, lo + 1, max_r);
    bool whole = r0 == max_r;
    if (attempt(r0, whole)) {
      for (std::int64_t step = 1; hi - 1 > lo; step *= 2) {
        const std::int64_t k = std::max(lo + 1, hi - step);
        if (!attempt(k)) lo = k;
        if (lo == k || too_long) break;
      }
    } else {
      // Galloping up; the largest fleet is run to the end, so that a rejection reports its
      // percentiles without running it again.
      lo = r0;
      for (std::int64_t step = 1; hi == 0 && !too_long && lo < max_r; step *= 2) {
        const std::int64_t k = std::min(max_r, lo + step);
        whole = k == max_r;
        if (!attempt(k, whole)) lo = k;
      }
      // Met by none: the last run was of max_r, run to the end (r0 itself when r0 = max_r).
    }
    if (too_long) return reject(o, Reject::too_long);
    if (hi == 0) {
      // The largest fleet tried, run to the end: how far its percentiles are from the targets.
      const ServingResult& largest = last;
      binding_target(slo, largest, o);
      d.replicas = cfg.replicas, d.prefill = cfg.disagg.prefill, d.decode = cfg.disagg.decode;
      fill(d, largest);
      d.gpus = static_cast<double>(gpus(lo));  // also when the run could not be simulated
      d.usd_per_hour = s_.chips[d.chip].usd_per_hour * d.gpus;
      return reject(o, Reject::fleet_size);
    }
    while (hi - lo > 1 && !too_long) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (!attempt(mid)) lo = mid;
    }
    if (too_long) return reject(o, Reject::too_long);
    size(hi);
    family_fleet_ = hi;
    family_peak_ = met_run.peak_running;
    if (c.disagg && s_.split_search) {
      // Every split cheaper than rate matching's: for each decode count D, the fewest prefill
      // instances that meet the SLO with it (bisected, assuming more instances of either
      // kind never serve worse), among those the budget left by the cheapest so far allows.
      std::int64_t best = gpus(hi), best_p = cfg.disagg.prefill, best_d = cfg.disagg.decode;
      auto meets = [&](std::int64_t p, std::int64_t n_d) {
        cfg.disagg.prefill = p, cfg.disagg.decode = n_d;
        last = simulate(sys, cfg, true);
        ++d.simulations;
        return met(slo, last);
      };
      for (std::int64_t n_d = 1; n_d * per_decode + per < best; ++n_d) {
        const std::int64_t p_max = (best - 1 - n_d * per_decode) / per;  // strictly cheaper
        if (!meets(p_max, n_d)) continue;
        std::int64_t p_lo = 0, p_hi = p_max;
        ServingResult p_run = std::move(last);
        while (p_hi - p_lo > 1) {
          const std::int64_t mid = p_lo + (p_hi - p_lo) / 2;
          if (meets(mid, n_d)) p_hi = mid, p_run = std::move(last);
          else p_lo = mid;
        }
        best = p_hi * per + n_d * per_decode, best_p = p_hi, best_d = n_d;
        met_run = std::move(p_run);
      }
      cfg.disagg.prefill = best_p, cfg.disagg.decode = best_d;
    }
    d.replicas = cfg.replicas, d.prefill = cfg.disagg.prefill, d.decode = cfg.disagg.decode;
    fill(d, met_run);
    const std::int64_t n = cfg.disagg.on() ? d.prefill + d.decode : hi;
    if (s_.max_rate && open_loop(cfg.workload)) d.max_qps = max_rate(sys, cfg, n);
    if (s_.pareto == ParetoAt::saturation) d.saturation = saturation(sys, cfg, n, met_run);
    return o;
  }

  // The next candidates are of another family: the runs kept so far are not theirs.
  void new_family() {
    kept_.clear();
    family_fleet_ = 0;
  }

  std::int64_t simulations() const noexcept { return simulations_; }
  double simulated_requests() const noexcept { return simulated_requests_; }

 private:
  static Outcome reject(Outcome& o, Reject r) {
    o.reason = r;
    return o;
  }
  static Outcome floor(Outcome& o, Reject r, std::string binding, double v, double target) {
    o.binding = std::move(binding);
    o.value_s = v;
    o.target_s = target;
    return reject(o, r);
  }

  // A run that chose its window sizes a fleet only once it reached steady state (its ramp is not the load).
  static bool met(const serving::Slo& slo, const ServingResult& r) {
    return (!slo.any() || r.slo_met) && r.sustainable && r.rejected == 0 && r.unfinished == 0 && !r.horizon_reached &&
           (!r.steady_state.window || r.steady_state.reached);
  }

  ServingResult simulate(const hw::System& sys, ServeConfig cfg, bool stop_early) {
    cfg.find_max_rate = false;
    cfg.stop_when_slo_missed = stop_early;
    cfg.lean = true;
    // The search's requests are this run's when it runs the space's traffic (a rate search's
    // other rates draw their own).
    const serving::WorkloadSpec& w0 = s_.base.workload;
    if (cfg.workload.qps == w0.qps && cfg.workload.concurrency == w0.concurrency && cfg.workload.requests == w0.requests) cfg.drawn = &requests_;
    // A run of the family that never reached its sequence limit, on the same fleet and traffic
    // and the same cache (or one its checks had room for: same_cache), is this run too if this
    // limit is above its peak as well.
    const std::int64_t seqs = cfg.engine.max_num_seqs;  // 0: resolved from the cache (not known here)
    for (const KeptRun& k : kept_) {
      if (k.replicas == cfg.replicas && k.prefill == cfg.disagg.prefill && k.decode == cfg.disagg.decode && k.qps == cfg.workload.qps &&
          k.concurrency == cfg.workload.concurrency && k.slo == cfg.slo.any() && k.stop_early == stop_early && same_cache(k) &&
          same_graphs(k, cfg) && seqs > 0 && k.r.peak_running < seqs) {
        ServingResult r = k.r;
        // The same blocks held, of a cache of another size.
        const double scale = static_cast<double>(k.kv_blocks[0]) / static_cast<double>(kv_blocks_[0]);
        r.kv_utilisation_mean *= scale;
        r.kv_utilisation_max *= scale;
        r.kv_slack_blocks -= static_cast<double>(k.kv_blocks[0] - kv_blocks_[0]);
        return r;
      }
    }
    auto one = [&](const ServeConfig& c) {
      ServingResult run;
      try {
        run = serving::simulate(m_, sys, c);
      } catch (const InputError&) {
        // A run that cannot be simulated (steps past the time a run can simulate, more requests
        // in the system than memory holds) serves nothing this deployment can be sized on.
        run.sustainable = false;
        run.unfinished = c.workload.requests;
      }
      ++simulations_;
      simulated_requests_ += static_cast<double>(run.simulated_requests);
      return run;
    };
    // Several seeds: the deployment is what its worst (or the quantile's) seed says.
    ServingResult r;
    if (s_.seeds.count > 1) {
      serving::SeedsResult runs = serving::run_seeds(cfg, s_.seeds, one);
      r = std::move(runs.runs[runs.chosen]);
    } else {
      r = one(cfg);
    }
    // Kept when no instance reached its limit (the decode instances' may be their own).
    const std::int64_t limit = cfg.disagg.on() ? std::min(r.engine.max_num_seqs, r.disagg.decode_engine.max_num_seqs) : r.engine.max_num_seqs;
    if (r.peak_running < limit && kept_.size() < kKeep) {
      kept_.push_back({cfg.replicas, cfg.disagg.prefill, cfg.disagg.decode, cfg.workload.qps, cfg.workload.concurrency, cfg.slo.any(),
                       stop_early, kv_blocks_, graphs_of(cfg.engine), cfg.disagg.decode_engine ? graphs_of(*cfg.disagg.decode_engine) : Graphs{}, r});
    }
    return r;
  }

  // An engine's captured graphs: the largest (of a decode batch, of a step's tokens) and the list
  // a batch pads to.
  struct Graphs {
    std::int64_t max = 0, max_tokens = 0;
    std::vector<std::int64_t> sizes;
    bool operator==(const Graphs&) const = default;
  };
  static Graphs graphs_of(const serving::EngineConfig& e) { return {e.graph_max_batch, e.graph_max_tokens, e.graph_sizes}; }

  // Whether `e` launches and pads every decode batch of at most `peak` sequences as graphs `g`
  // (of a run of the same engine) did: the same graphs, or (graphs counting sequences, not
  // tokens) both largest at `peak` or above and the lists alike up to their first size at or
  // above it (a batch pads to the next size).
  static bool same_graphs_to(const Graphs& g, const serving::EngineConfig& e, std::int64_t peak) {
    if (g.max == e.graph_max_batch && g.max_tokens == e.graph_max_tokens && g.sizes == e.graph_sizes) return true;
    if (serving::graphs_count_tokens(e) || g.max_tokens != e.graph_max_tokens || g.max < peak || e.graph_max_batch < peak) {
      return false;
    }
    const auto a = std::lower_bound(g.sizes.begin(), g.sizes.end(), peak);
    const auto b = std::lower_bound(e.graph_sizes.begin(), e.graph_sizes.end(), peak);
    const bool a_end = a == g.sizes.end(), b_end = b == e.graph_sizes.end();
    if (a_end != b_end) return false;
    // (No size at or above the peak: the lists must be alike whole; else through that size.)
    return a_end ? g.sizes == e.graph_sizes : std::equal(g.sizes.begin(), a + 1, e.graph_sizes.begin(), b + 1);
  }

  // A run kept for the family's other sequence limits.
  struct KeptRun {
    std::int64_t replicas = 0, prefill = 0, decode = 0;
    double qps = 0;
    std::int64_t concurrency = 0;
    bool slo = false;  // run against targets (the saturation's runs have none)
    bool stop_early = false;
    std::array<std::int64_t, 2> kv_blocks{};
    Graphs graphs, decode_graphs;  // the engine's (and the decode instances' own engine's)
    ServingResult r;
  };
  static constexpr std::size_t kKeep = 256;

  // Whether a kept run's graphs are this candidate's for every batch it ran: a sequence limit
  // can cut the list a batch pads to (TensorRT-LLM's and SGLang's none past it,
  // serving::pad_graphs), so a batch the run replayed padded could run eagerly under a lower
  // limit, or the reverse.
  static bool same_graphs(const KeptRun& k, const ServeConfig& cfg) {
    const std::int64_t peak = k.r.peak_running;
    if (!same_graphs_to(k.graphs, cfg.engine, peak)) return false;
    return cfg.disagg.decode_engine ? same_graphs_to(k.decode_graphs, *cfg.disagg.decode_engine, peak) : k.decode_graphs == Graphs{};
  }

  // Whether a kept run is this candidate's on its cache: the same cache, or one the run's every
  // cache check had room for. The limits of a family reserve different activations, so their
  // caches differ by a few blocks; a run in which no check refused and each left more room
  // than the caches differ by takes every decision alike on both (ServingResult::kv_slack_blocks).
  // Not with shared prefixes (evicting cached prefixes follows the unused blocks, not the
  // checks), disaggregated (the hand-overs' checks are not counted) or a chosen window (its
  // KV trend is a fraction of the cache).
  bool same_cache(const KeptRun& k) const {
    if (k.kv_blocks == kv_blocks_) return true;
    if (k.prefill > 0 || shared_prefixes_ || k.r.steady_state.window || k.r.kv_refused) return false;
    return static_cast<double>(k.kv_blocks[0] - kv_blocks_[0]) < k.r.kv_slack_blocks;
  }

  std::vector<KeptRun> kept_;
  std::array<std::int64_t, 2> kv_blocks_{};  // the candidate's caches: prefill (or every) and decode instances'
  std::int64_t family_fleet_ = 0;  // replicas (instances) of the family's last feasible deployment
  std::int64_t family_peak_ = 0;   // and the peak running of its run there

  // A decode step of one sequence at the shortest context any request decodes at: every gap
  // between two output tokens is at least one such step. With speculation, the target's
  // verification step alone (the draft's passes left out) over the k + 1 tokens it may emit.
  double tpot_floor(const serving::StepModel& step, const serving::EngineConfig& e, const model::Speculation& spec) const {
    double shortest = std::numeric_limits<double>::infinity();
    for (std::size_t i = warmup(); i < requests_.size(); ++i) {
      if (requests_[i].output > 1) shortest = std::min(shortest, static_cast<double>(requests_[i].input));
    }
    if (!std::isfinite(shortest)) return 0;
    model::StepMix mix;
    mix.fused_attention = e.fused_attention;
    const double q = static_cast<double>(spec.k + 1);
    mix.add_decode(shortest + q, static_cast<double>(m_.sliding_window), q);
    // Inside a multi-step window no scheduler runs: the floor leaves its time out.
    // One group's step (attention data-parallel groups: the sequence on one of them, as the
    // simulation prices a lone request; not its tokens spread over the groups).
    return serving::step_period(e, step.time(mix, mix, serving::decode_step_graphs(e, 1, q)), 1, false, e.scheduler_steps > 1 ? 0 : 1) / q;
  }

  // Each request's prompt prefilled alone, chunk after chunk at the whole budget: its TTFT
  // can only be longer; the percentile of these bounds the percentile of the TTFTs. Not with
  // shared prefixes (a cached prefix is not prefilled).
  double ttft_floor(const serving::EngineConfig& e, double q, std::int64_t ranks) {
    if (shared_prefixes_) return e.front_end_s;
    // Each distinct prompt length priced once.
    const double window = static_cast<double>(m_.sliding_window);
    for (std::size_t k = 0; k < prompts_.size(); ++k) {
      const double prompt = static_cast<double>(prompts_[k]);
      const double chunk = e.chunked_prefill ? static_cast<double>(e.max_batched_tokens) : prompt;
      double t = e.front_end_s;
      for (double done = 0; done < prompt;) {
        const double c = std::min(chunk, prompt - done);
        model::StepMix mix;
        mix.fused_attention = e.fused_attention;
        mix.add_prefill(c, done + c, window);
        // On one group, as tpot_floor. Ranks that pad a prompt's step only when it runs as graphs
        // (vLLM 0.17+; SGLang's eager padding is of decodes alone) pad the idle ones to a chunk
        // launched as graphs, but not in a step that chunk shares with a decode past the largest
        // graph, launched eagerly: the cheaper of the two bounds it.
        const serving::GraphMode mode = serving::mixed_step_graphs(e, c);
        double step = step_.time(mix, mix, mode);
        const model::ForwardConfig::RankPad pad = serving::rank_padding(e);
        if (mode != serving::GraphMode::eager && (pad == model::ForwardConfig::RankPad::graphs || pad == model::ForwardConfig::RankPad::max_len) &&
            ranks > 1) {
          step = std::min(step, step_.time(mix, mix, serving::GraphMode::eager));
        }
        t += serving::step_period(e, step, 1);
        done += c;
      }
      prompt_s_[k] = t;
    }
    serving::Distribution dist;
    for (const std::uint32_t k : prompt_of_) dist.add(prompt_s_[k]);
    return q < 0 ? dist.mean() : dist.quantile(q);
  }

  std::size_t warmup() const noexcept {
    return static_cast<std::size_t>(std::min<std::int64_t>(s_.base.workload.warmup, static_cast<std::int64_t>(requests_.size())));
  }

  // Replicas the load needs if each ran at the capacity of its fullest batch: the decode
  // batch as large as the sequence limit and the cache allow at the mean context, prompts
  // prefilled at the whole budget. A starting point for the search, not a bound.
  std::int64_t estimate_replicas(const ServeConfig& cfg, const serving::ServeMemory& mem) const {
    const serving::EngineConfig& e = cfg.engine;
    if (measured_ == 0) return 1;
    const double prompt = mean_prompt_, gen = mean_gen_;
    // (Each attention data-parallel rank's own limit under vLLM V1 and TensorRT-LLM.)
    const double ranks = serving::limits_per_rank(e, cfg.forward.ep) ? static_cast<double>(cfg.forward.ep) : 1;
    const double seqs_limit = ranks * (e.max_num_seqs > 0 ? static_cast<double>(e.max_num_seqs) : 2048);
    // Sequences the cache holds: its tokens over a request's, or (sliding-window layers freed) its blocks over a request's.
    const double held = mem.kv_layout.hybrid() ? static_cast<double>(mem.kv_blocks) /
                                                     static_cast<double>(mem.kv_layout.blocks_for(std::llround(prompt + gen)))
                                               : static_cast<double>(mem.kv_tokens) / (prompt + gen);
    const double batch = std::max(1.0, std::floor(std::min(seqs_limit, held)));
    const serving::WorkloadSpec& w = cfg.workload;
    if (w.arrival == serving::Arrival::closed) return static_cast<std::int64_t>(std::ceil(static_cast<double>(w.concurrency) / batch));
    const double window = static_cast<double>(m_.sliding_window);
    model::StepMix dec;
    dec.fused_attention = e.fused_attention;
    for (double i = 0; i < batch; ++i) dec.add_decode(prompt + gen / 2, window);
    const double rank = serving::rank_tokens(batch, cfg.forward.ep);
    const double t_token =
        serving::step_period(e, step_.time(dec, serving::decode_step_graphs(e, rank, rank)), batch,
                             false, serving::decode_schedule_share(e)) /
        batch;
    const double chunk = std::max(1.0, std::min(static_cast<double>(e.max_batched_tokens), std::round(prompt)));
    model::StepMix pre;
    pre.fused_attention = e.fused_attention;
    pre.add_prefill(chunk, chunk, window);
    const double t_prompt_token = serving::step_period(e, step_.time(pre, serving::mixed_step_graphs(e, chunk)), 1) / chunk;
    const double per_request = prompt * t_prompt_token + gen * t_token;
    double rate = w.qps;
    if (w.arrival == serving::Arrival::trace && requests_.size() > 1) {
      const double span = requests_.back().arrival_s - requests_.front().arrival_s;
      rate = span > 0 ? static_cast<double>(requests_.size() - 1) / span : 1e9;
    }
    const double r = std::ceil(rate * per_request);
    return r > 1e9 ? std::int64_t{1000000000} : static_cast<std::int64_t>(std::max(1.0, r));
  }

  // The largest rate `replicas` serve within the SLOs: galloping up from the workload's rate
  // (met), then five halvings of the bracket (to 1/32 of it). With R > 1 replicas the first
  // guess is the rate at which R - 1 failed, scaled to R.
  // `cfg` holds the fleet of `replicas` (instances, disaggregated).
  // `at`, when given, receives the run at the rate returned (left as it is at the workload's rate).
  double max_rate(const hw::System& sys, ServeConfig cfg, std::int64_t replicas, ServingResult* at = nullptr) {
    const double base = cfg.workload.qps;
    auto ok = [&](double qps) {
      cfg.workload.qps = qps;
      const std::int64_t requests = cfg.workload.requests;
      if (static_cast<double>(requests) / qps > 2e6) return false;  // beyond the simulator's span
      ServingResult r = simulate(sys, cfg, true);
      if (!met(cfg.slo, r)) return false;
      if (at) *at = std::move(r);
      return true;
    };
    double lo = base, hi = replicas > 1 ? base * static_cast<double>(replicas) / static_cast<double>(replicas - 1) : 2 * base;
    for (int i = 0; i < 8 && ok(hi); ++i) lo = hi, hi *= 2;
    for (int i = 0; i < 5; ++i) {
      const double mid = (lo + hi) / 2;
      (ok(mid) ? lo : hi) = mid;
    }
    return lo;
  }

  // The fleet of `n` instances in `cfg` (meeting the SLO at the offered load, run `offered`)
  // at its saturation, the SLO not applied (docs/serving.md#largest-rate-cost-ranking-pareto): open loop, the largest
  // rate it sustains in steady state (max_rate from the offered rate up); closed loop, as many
  // clients as its decoding instances' sequence limits hold. None when that run is not sustained.
  std::optional<Saturation> saturation(const hw::System& sys, ServeConfig cfg, std::int64_t n, const ServingResult& offered) {
    cfg.slo = {};
    Saturation s;
    ServingResult r = offered;
    if (open_loop(cfg.workload)) {
      s.qps = max_rate(sys, cfg, n, &r);
    } else {
      const std::int64_t seqs = cfg.disagg.on() ? offered.disagg.decode_engine.max_num_seqs : offered.engine.max_num_seqs;
      s.concurrency = (cfg.disagg.on() ? cfg.disagg.decode : cfg.replicas) * std::max<std::int64_t>(1, seqs);
      cfg.workload.concurrency = s.concurrency;
      cfg.workload.requests = std::max(cfg.workload.requests, 2 * s.concurrency);
      r = simulate(sys, cfg, false);
      if (!met(cfg.slo, r)) return std::nullopt;
    }
    s.output_tokens_per_s_per_gpu = r.output_tokens_per_s_per_gpu;
    s.output_tokens_per_s_per_user = r.tpot.mean > 0 ? 1 / r.tpot.mean : 0;
    s.ttft = r.ttft, s.tpot = r.tpot;
    return s;
  }

  void fill(Deployment& d, const ServingResult& r) const {
    const ChipChoice& chip = s_.chips[d.chip];
    d.gpus = r.gpus;
    d.usd_per_hour = chip.usd_per_hour * r.gpus;
    d.ttft = r.ttft;
    d.tpot = r.tpot;
    d.e2e = r.e2e;
    d.output_tokens_per_s = r.output_tokens_per_s;
    d.input_tokens_per_s = r.input_tokens_per_s;
    d.output_tokens_per_s_per_gpu = r.output_tokens_per_s_per_gpu;
    d.output_tokens_per_s_per_user = r.tpot.mean > 0 ? 1 / r.tpot.mean : 0;
    if (d.usd_per_hour > 0 && r.output_tokens_per_s > 0) {
      d.usd_per_million_output_tokens = d.usd_per_hour / 3600 / r.output_tokens_per_s * 1e6;
      d.usd_per_million_tokens = d.usd_per_hour / 3600 / (r.output_tokens_per_s + r.input_tokens_per_s) * 1e6;
    }
    d.slo_attainment = r.slo_attainment;
    d.kv_utilisation_mean = r.kv_utilisation_mean;
    d.mean_decode_batch = r.mean_decode_batch;
    Outcome o;
    binding_target(asked_slo(s_), r, o);
    d.slo_slack = o.binding.empty() ? 1 : 1 - o.value_s / o.target_s;
    d.slo_binding = o.binding;
    const serving::Slo& asked = asked_slo(s_);
    d.target_slack.fill(1);
    for (const serving::SloTarget& g : asked.targets) {
      d.target_slack[static_cast<std::size_t>(g.metric)] = 1 - serving::statistic(serving::summary_of(r, g.metric), g.q) / g.limit_s;
    }
  }

  const model::ModelConfig& m_;
  const FleetSpace& s_;
  const std::vector<serving::Request>& requests_;
  double mean_prompt_ = 0, mean_gen_ = 0;
  std::size_t measured_ = 0;
  std::vector<std::int64_t> prompts_;     // the measured requests' distinct prompt lengths, ascending
  std::vector<std::uint32_t> prompt_of_;  // each measured request's among them
  std::vector<double> prompt_s_;          // a prompt of each length prefilled alone (ttft_floor's)
  bool shared_prefixes_ = false;          // some measured request shares a cached prefix: no TTFT floor
  // What a TTFT floor depends on, and the last one.
  struct FloorKey {
    std::size_t chip;
    serving::EngineRef engine;
    std::int64_t tp, ep;
    model::ForwardConfig::Experts experts;
    std::optional<DType> w, kv;
    std::int64_t budget;
    std::optional<bool> chunked, padding;
    int k;              // draft tokens: the engine's step period under them (settle_output_processing)
    std::size_t draft;
    bool operator==(const FloorKey&) const = default;
  };
  std::optional<FloorKey> floor_key_;
  double floor_ttft_ = 0;
  serving::StepModel step_, decode_step_;  // the prefill (or every) instances' steps; the decode instances'
  std::unique_ptr<model::Graph> graph_ = std::make_unique<model::Graph>();
  std::int64_t simulations_ = 0;
  double simulated_requests_ = 0;
};

}  // namespace

bool takes_graph_padding(const serving::EngineConfig& e) noexcept {
  return e.kind == serving::EngineKind::trtllm && !serving::is_trtllm_engines(e.ref()) && e.decode_graphs == serving::GraphMode::graph;
}

namespace {

std::vector<std::int64_t> powers_of_two_up_to(std::int64_t max) {
  std::vector<std::int64_t> out;
  for (std::int64_t v = 1; v <= max && v <= 4096; v *= 2) out.push_back(v);
  return out;
}

// The engines a space tries: its list, or the base configuration's.
std::vector<serving::EngineRef> engines_tried(const FleetSpace& s) {
  std::vector<serving::EngineRef> engines = s.engines;
  if (engines.empty()) engines.push_back(s.base.engine.ref());
  return engines;
}

std::vector<Candidate> enumerate(const model::ModelConfig& m, const FleetSpace& s) {
  std::vector<Candidate> out;
  const std::vector<serving::EngineRef> engines = engines_tried(s);
  std::vector<std::optional<DType>> ws_given = s.weight_dtypes, kvs_given = s.kv_dtypes;
  if (ws_given.empty()) ws_given.push_back(s.base.forward.precision.weight);
  if (kvs_given.empty()) kvs_given.push_back(s.base.forward.precision.kv_cache);
  std::vector<bool> layouts = s.disaggregated;
  if (layouts.empty()) layouts.push_back(false);
  std::vector<std::optional<bool>> chunkings(s.chunked_prefill.begin(), s.chunked_prefill.end());
  if (chunkings.empty()) chunkings.emplace_back();
  std::vector<std::optional<bool>> paddings(s.graph_padding.begin(), s.graph_padding.end());
  if (paddings.empty()) paddings.emplace_back();
  // Speculation: (draft tokens, draft) pairs; plain decoding once.
  std::vector<std::pair<int, std::size_t>> specs;
  if (s.spec_tokens.empty()) {
    for (std::size_t i = 0; i < s.drafts.size(); ++i) specs.emplace_back(s.drafts[i].spec.k, i);
    if (specs.empty()) specs.emplace_back(0, 0);
  }
  for (const int k : s.spec_tokens) {
    if (k == 0) specs.emplace_back(0, 0);
    for (std::size_t i = 0; k > 0 && i < s.drafts.size(); ++i) specs.emplace_back(k, i);
  }
  for (std::size_t ci = 0; ci < s.chips.size(); ++ci) {
    const hw::System& sys = s.chips[ci].sys;
    const std::int64_t node = std::max(1, sys.chips_per_node);
    // The dtypes on this chip: those given, or the defaults and fp8 where the chip computes it.
    std::vector<std::optional<DType>> ws = ws_given, kvs = kvs_given;
    const bool fp8_chip = sys.chip.matrix_flops_per_s[index(DType::fp8_e4m3)] > 0;
    if (s.fp8_by_default && fp8_chip) {
      const auto& p = s.base.forward.precision;
      if (s.weight_dtypes.empty() && !m.quantized && ws.front() != DType::fp8_e4m3) ws.push_back(DType::fp8_e4m3);
      if (s.kv_dtypes.empty() && !is_fp8(p.kv_cache.value_or(p.activation))) kvs.push_back(DType::fp8_e4m3);
    }
    const std::vector<std::int64_t> tps = s.tp.empty() ? powers_of_two_up_to(std::min<std::int64_t>(node, 8)) : s.tp;
    // The EPs tried with TP tp: the space's, or 1 (dense), or each power of two within a node (MoE).
    auto eps_at = [&](std::int64_t tp) {
      std::vector<std::int64_t> eps = s.ep;
      if (eps.empty()) eps = m.is_moe() ? powers_of_two_up_to(node / tp) : std::vector<std::int64_t>{1};
      if (eps.empty()) eps.push_back(1);
      return eps;
    };
    // The expert layouts tried with TP tp: the space's, or the base's and, for a MoE model split
    // over tp > 1 chips, whole experts over them too (the engines' EP; at tp 1 both are one).
    using Experts = model::ForwardConfig::Experts;
    auto experts_at = [&](std::int64_t tp) {
      if (!s.experts.empty()) return s.experts;
      std::vector<Experts> x{s.base.forward.experts};
      if (m.is_moe() && tp > 1) x = {Experts::tensor, Experts::expert};
      return x;
    };
    for (const std::int64_t tp : tps) {
      for (const std::int64_t ep : eps_at(tp)) {
       for (const Experts experts : experts_at(tp)) {
        for (const serving::EngineRef kind : engines) {
          if (!serving::runs_on(kind, sys.chip)) continue;
          const serving::EngineConfig preset = serving::engine_preset(kind, sys.chip, tp, m);
          // A static batch prefills its prompts whole whatever the flag: its preset only.
          const std::vector<std::optional<bool>> chunk_choices =
              kind.kind == serving::EngineKind::static_batch ? std::vector<std::optional<bool>>{std::nullopt} : chunkings;
          // Graph padding where the engine has the switch (else its preset, once).
          const std::vector<std::optional<bool>> pad_choices =
              takes_graph_padding(preset) ? paddings : std::vector<std::optional<bool>>{std::nullopt};
          std::vector<std::int64_t> budgets = s.max_batched_tokens;
          if (budgets.empty()) budgets.push_back(preset.max_batched_tokens);
          std::vector<std::int64_t> seqs = s.max_num_seqs;
          if (seqs.empty()) {
            seqs.push_back(preset.max_num_seqs);
            for (std::int64_t v = 512; v >= 16; v /= 2) {
              if (preset.max_num_seqs == 0 || v < preset.max_num_seqs) seqs.push_back(v);
            }
          }
          // The knobs of one engine at this plan: dtypes, budget, chunking, graph padding,
          // sequence limit, speculation, layout (and the decode instances' own plan).
          for (const auto& w : ws) {
            for (const auto& kv : kvs) {
              for (const std::int64_t b : budgets) {
                for (const std::optional<bool> chunked : chunk_choices) {
                 for (const std::optional<bool> pad : pad_choices) {
                  for (const std::int64_t q : seqs) {
                    for (const auto& [k, draft] : specs) {
                      for (const bool disagg : layouts) {
                        if (!disagg) {
                          out.push_back({ci, kind, tp, ep, experts, w, kv, q, b, chunked, pad, false, 0, 0, k, draft});
                          continue;
                        }
                        for (const std::int64_t dtp : s.decode_tp_same ? std::vector<std::int64_t>{tp} : s.decode_tp.empty() ? tps : s.decode_tp) {
                          for (const std::int64_t dep : s.decode_ep_same ? std::vector<std::int64_t>{ep} : s.decode_ep.empty() ? eps_at(dtp) : s.decode_ep) {
                            out.push_back({ci, kind, tp, ep, experts, w, kv, q, b, chunked, pad, true, dtp, dep, k, draft});
                          }
                        }
                      }
                    }
                  }
                 }
                }
              }
            }
          }
        }
       }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<const Deployment*> best_per_chip(const FleetSpace& space, const std::vector<Deployment>& feasible) {
  std::vector<const Deployment*> out;
  for (std::size_t c = 0; c < space.chips.size(); ++c) {
    const auto it = std::find_if(feasible.begin(), feasible.end(), [&](const Deployment& d) { return d.chip == c; });
    if (it != feasible.end()) out.push_back(&*it);
  }
  return out;
}

const serving::Slo& asked_slo(const FleetSpace& space) noexcept { return space.slo_asked.any() ? space.slo_asked : space.base.slo; }

std::string deployment_class(const model::ModelConfig& m, const FleetSpace& space, const Deployment& d) {
  model::ForwardConfig f = space.base.forward;
  if (d.weight_dtype) f.precision.weight = d.weight_dtype;
  return io::answer_class(serving::band_name(d.engine), m, f, space.chips[d.chip].sys.chip);
}

BandLean band_lean(std::string_view cls, serving::SloMetric metric) {
  // The band the answer quotes: a serving class without rows of the metric borrows a pooled
  // class's (io::quoted_band), so none is held to its targets as asked for want of a row.
  const io::ErrorBand band = io::quoted_band(cls);
  // ITL's rows are in the TPOT line (the table keeps a stream's per-token times together).
  const char* key = metric == serving::SloMetric::ttft ? "ttft" : metric == serving::SloMetric::e2e ? "e2e" : "tpot";
  const auto it = band.metrics.find(key);
  if (it == band.metrics.end()) return {};
  return {std::min(0.0, it->second.median), it->second.from};
}

serving::Slo band_slo(const model::ModelConfig& m, const FleetSpace& space, const Deployment& d) {
  serving::Slo slo = asked_slo(space);
  const std::string cls = deployment_class(m, space, d);
  for (serving::SloTarget& g : slo.targets) g.limit_s *= 1 + band_lean(cls, g.metric).error;
  return slo;
}

// vLLM V0 (0.6) sizes its graphs from the sequence limit and has no flag to size them otherwise:
// a deployment is priced with what it captures (serve_config), where vLLM V1's is pinned to the
// preset's and launched so (--max-cudagraph-capture-size).
namespace {
bool capture_unpinned(const serving::EngineConfig& e) { return serving::is_vllm_v0(e.ref()); }

// A deployment's graphs as searched: the limits its drafts impose (SGLang's 48 requests), vLLM
// V0's graphs from its sequence limit, then the list a step pads to within its limits, rounded
// to the drafts' query (as serve's).
void searched_graphs(serving::EngineConfig& e, int spec_tokens) {
  serving::settle_draft_limits(e, spec_tokens);
  if (capture_unpinned(e)) serving::capture_from_seqs(e, spec_tokens);
  serving::pad_graphs(e, spec_tokens);
}
}  // namespace

std::int64_t pinned_graph_max_batch(const FleetSpace& space, const Deployment& d) {
  const serving::EngineConfig preset = serving::engine_preset(d.engine, space.chips[d.chip].sys.chip, d.tp);
  if (capture_unpinned(preset)) return 0;
  serving::EngineConfig own = preset;
  own.max_num_seqs = d.max_num_seqs;
  serving::capture_from_seqs(own, d.spec_tokens);
  return own.graph_max_batch != preset.graph_max_batch ? preset.graph_max_batch : 0;
}

serving::ServeConfig serve_config(const model::ModelConfig& m, const FleetSpace& space, const Deployment& d) {
  ServeConfig c = space.base;
  if (space.margin_band) c.slo = band_slo(m, space, d);
  c.forward.tp = d.tp;
  c.forward.ep = d.ep;
  c.forward.experts = d.experts;
  c.forward.precision.weight = d.weight_dtype;
  c.forward.precision.kv_cache = d.kv_dtype;
  c.engine = serving::engine_preset(d.engine, space.chips[d.chip].sys.chip, d.tp, m);
  c.engine.max_num_seqs = d.max_num_seqs;
  c.engine.max_batched_tokens = d.max_batched_tokens;
  if (d.chunked_prefill) c.engine.chunked_prefill = *d.chunked_prefill;
  if (d.graph_padding) c.engine.graph_exact_sizes = !*d.graph_padding;
  if (space.moe_a2a) c.engine.moe_a2a = *space.moe_a2a;
  c.replicas = d.replicas;
  c.spec = d.spec_tokens > 0 ? space.drafts.at(d.draft).spec : model::Speculation{};
  c.spec.k = d.spec_tokens;
  c.disagg.prefill = d.prefill;
  c.disagg.decode = d.decode;
  if ((d.decode_tp > 0 && d.decode_tp != d.tp) || (d.decode_ep > 0 && d.decode_ep != d.ep)) {
    // The decode instances' preset at their own TP, with the same limits.
    c.disagg.decode_tp = d.decode_tp > 0 ? d.decode_tp : d.tp;
    c.disagg.decode_ep = d.decode_ep > 0 ? d.decode_ep : d.ep;
    serving::EngineConfig& e = c.disagg.decode_engine.emplace(serving::engine_preset(d.engine, space.chips[d.chip].sys.chip, c.disagg.decode_tp, m));
    e.max_num_seqs = d.max_num_seqs;
    e.max_batched_tokens = d.max_batched_tokens;
    if (d.chunked_prefill) e.chunked_prefill = *d.chunked_prefill;
    if (d.graph_padding) e.graph_exact_sizes = !*d.graph_padding;
    if (space.moe_a2a) e.moe_a2a = *space.moe_a2a;
    serving::settle_output_processing(e, c.spec.on());
    searched_graphs(e, d.spec_tokens);
  }
  serving::settle_output_processing(c.engine, c.spec.on());
  searched_graphs(c.engine, d.spec_tokens);
  return c;
}

void validate(const model::ModelConfig& m, const FleetSpace& s) {
  if (s.chips.empty()) throw InputError("--hw: no chip to deploy");
  if (s.margin_band && !asked_slo(s).any()) throw InputError("--margin: band: headroom over the SLO needs --slo targets");
  if (s.margin_band && s.margin > 0) throw InputError("--margin: band and a fraction together: give one of them");
  std::size_t priced = 0;
  for (const ChipChoice& c : s.chips) priced += c.usd_per_hour > 0 ? 1 : 0;
  if (priced > 0 && priced < s.chips.size()) {
    for (const ChipChoice& c : s.chips) {
      if (c.usd_per_hour <= 0) {
        throw InputError(fmt::format("--price: {} has no price while other chips have one: price every chip or none", c.sys.chip.name));
      }
    }
  }
  // Each engine tried runs on one of the chips at least (TensorRT-LLM on NVIDIA GPUs only): the
  // others are left out of its candidates (enumerate).
  {
    for (const serving::EngineRef& k : engines_tried(s)) {
      if (std::none_of(s.chips.begin(), s.chips.end(), [&](const ChipChoice& c) { return serving::runs_on(k, c.sys.chip); })) {
        serving::check_runs_on(k, s.chips.front().sys.chip);
      }
    }
  }
  if (s.max_gpus < 1 || s.max_gpus > 1000000) throw InputError(fmt::format("--max-gpus: {} is out of range: expected 1 to 1000000", s.max_gpus));
  if (s.top < 1 || s.top > 10000) throw InputError(fmt::format("--top: {} is out of range: expected 1 to 10000", s.top));
  for (auto [list, flag] : {std::pair{&s.tp, "--tp"}, {&s.ep, "--ep"}, {&s.decode_tp, "--decode-tp"}, {&s.decode_ep, "--decode-ep"}}) {
    for (const std::int64_t v : *list) {
      if (v < 1 || v > 4096) throw InputError(fmt::format("{}: {} is out of range: expected 1 to 4096", flag, v));
    }
  }
  for (const model::ForwardConfig::Experts e : s.experts) {
    if (e == model::ForwardConfig::Experts::expert && !m.is_moe()) {
      throw InputError(fmt::format("--experts: ep: {} is not a mixture of experts", m.name));
    }
  }
  if (!s.graph_padding.empty()) {
    // At least one engine of the space with the switch (each preset's graphs are the same at
    // every chip and TP).
    const std::vector<serving::EngineRef> engines = engines_tried(s);
    const bool any = std::any_of(engines.begin(), engines.end(), [&](const serving::EngineRef& k) {
      const auto chip = std::find_if(s.chips.begin(), s.chips.end(), [&](const ChipChoice& c) { return serving::runs_on(k, c.sys.chip); });
      return chip != s.chips.end() && takes_graph_padding(serving::engine_preset(k, chip->sys.chip, 1, m));
    });
    if (!any) {
      throw InputError("--graph-padding: none of the engines tried has the knob (TensorRT-LLM's cuda_graph_config.enable_padding; vLLM and "
                       "SGLang pad by default): add --engine trtllm");
    }
  }
  for (const std::int64_t v : s.max_num_seqs) {
    if (v < 1 || v > (std::int64_t{1} << 20)) throw InputError(fmt::format("--max-num-seqs: {} is out of range: expected 1 to 2^20", v));
  }
  for (const std::int64_t v : s.max_batched_tokens) {
    if (v < 1 || v > (std::int64_t{1} << 24)) throw InputError(fmt::format("--max-batched-tokens: {} is out of range: expected 1 to 2^24", v));
  }
  // Speculation: each draft's rates cover every draft token count tried with it.
  for (const int k : s.spec_tokens) {
    if (k < 0 || k > model::Speculation::kMaxTokens) {
      throw InputError(fmt::format("--spec-tokens: {} is out of range: expected 0 to {}", k, model::Speculation::kMaxTokens));
    }
    if (k > 0 && s.drafts.empty()) throw InputError(fmt::format("--spec-tokens: {} draft tokens without a --draft", k));
  }
  for (const DraftChoice& d : s.drafts) {
    if (d.spec.draft == nullptr || !d.spec.on()) throw InputError("--draft: a draft without its model or its --accept rates");
    model::validate(m, d.spec);
    for (const int k : s.spec_tokens) {
      if (k > d.spec.k) {
        throw InputError(fmt::format("--spec-tokens: {} draft tokens with --draft {}'s {} --accept rates: give one rate, or one per position",
                                     k, d.arg.empty() ? d.spec.draft->name : d.arg, d.spec.k));
      }
    }
  }
  serving::validate(s.base.workload);
  if (s.pareto == ParetoAt::saturation && !open_loop(s.base.workload) && s.base.workload.arrival != serving::Arrival::closed) {
    throw InputError("--pareto: saturation sweeps an arrival rate or a number of clients: give --qps or --concurrency, not a trace");
  }
  if (s.base.replicas != 1) throw InputError("--replicas: the search chooses the replicas");
}

FleetSearchResult search_fleet(const model::ModelConfig& m, const FleetSpace& space, const analysis::SearchControl& control) {
  validate(m, space);
  const auto t0 = Clock::now();
  FleetSearchResult out;
  out.priced = std::all_of(space.chips.begin(), space.chips.end(), [](const ChipChoice& c) { return c.usd_per_hour > 0; });
  for (const serving::EngineRef& k : engines_tried(space)) {
    for (const ChipChoice& c : space.chips) {
      if (!serving::runs_on(k, c.sys.chip)) out.left_out.push_back(fmt::format("{} on {}", serving::name(k), c.sys.chip.name));
    }
  }
  // The requests every deployment serves (the simulator draws the same ones from the seed).
  std::vector<serving::Request> requests;
  {
    serving::RequestSource src(space.base.workload);
    serving::Request r;
    while (src.next(r)) requests.push_back(r);
  }
  const std::vector<Candidate> cands = enumerate(m, space);
  // Families: candidates alike but for their sequence limit, evaluated in order by one thread
  // so that each takes the runs of those before it that its limit does not change.
  std::vector<std::vector<std::size_t>> families;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    auto same = [&](const std::vector<std::size_t>& f) {
      const Candidate& o = cands[f.front()];
      return o.chip == c.chip && o.engine == c.engine && o.tp == c.tp && o.ep == c.ep && o.experts == c.experts && o.w == c.w && o.kv == c.kv &&
             o.budget == c.budget && o.chunked == c.chunked && o.padding == c.padding && o.disagg == c.disagg && o.dtp == c.dtp && o.dep == c.dep && o.k == c.k && o.draft == c.draft;
    };
    const auto it = std::find_if(families.begin(), families.end(), same);
    if (it == families.end()) families.push_back({i});
    else it->push_back(i);
  }
  // A space of fewer than four families (one chip and TP, say, over the limits) would keep a
  // thread idle: its candidates go alone, as many tasks as candidates, sharing nothing (the
  // same deployments; more simulations). The rule does not depend on the machine.
  if (families.size() < 4) {
    families.clear();
    for (std::size_t i = 0; i < cands.size(); ++i) families.push_back({i});
  }
  std::vector<Outcome> outcomes(cands.size());
  analysis::detail::PerThread<std::unique_ptr<Evaluator>> evaluators;
  std::atomic<std::uint64_t> done{0};
  std::atomic<double> best{std::numeric_limits<double>::infinity()};
  std::atomic<bool> interrupted{false};
  const bool priced = out.priced;
  {
    analysis::detail::Progress progress(control, done, cands.size(), best);
    analysis::detail::run_parallel(control, families.size(), [&](std::size_t f) {
      auto& ev = evaluators.local();
      if (!ev) ev = std::make_unique<Evaluator>(m, space, requests);
      ev->new_family();
      for (const std::size_t i : families[f]) {
        if (analysis::detail::stopped(control)) {
          interrupted = true;
          return;
        }
        outcomes[i] = ev->run(cands[i], i);
        const Outcome& o = outcomes[i];
        if (o.reason == Reject::count) analysis::detail::lower_to(best, priced ? o.d.usd_per_hour : o.d.gpus);
        done.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& ev : evaluators) {
    if (!ev) continue;
    out.simulations += ev->simulations();
    out.simulated_requests += ev->simulated_requests();
  }
  std::vector<Deployment> feasible;
  for (const Outcome& o : outcomes) {
    if (!o.evaluated) continue;
    ++out.evaluated;
    if (o.reason != Reject::count) {
      ++out.rejected[static_cast<int>(o.reason)];
      // Closest: the smallest overshoot of a target among those rejected on latency.
      if (!o.binding.empty() && o.target_s > 0) {
        const double over = o.value_s / o.target_s;
        if (!out.closest || over < out.closest->value_s / out.closest->target_s ||
            (over == out.closest->value_s / out.closest->target_s && o.d.order < out.closest->deployment.order)) {
          out.closest = Closest{o.d, o.reason, o.binding, o.value_s, o.target_s};
        }
      }
      continue;
    }
    feasible.push_back(o.d);
  }
  out.feasible_count = feasible.size();
  auto key = [priced](const Deployment& d) { return priced ? d.usd_per_hour : d.gpus; };
  std::sort(feasible.begin(), feasible.end(), [&](const Deployment& a, const Deployment& b) {
    if (key(a) != key(b)) return key(a) < key(b);
    if (a.output_tokens_per_s_per_user != b.output_tokens_per_s_per_user) return a.output_tokens_per_s_per_user > b.output_tokens_per_s_per_user;
    return a.order < b.order;
  });
  if (!feasible.empty()) {
    out.best = feasible.front();
    out.closest.reset();
  }
  // Pareto: no other deployment both faster per GPU and per user (at the offered load, or each
  // at its saturation). Walking down the per-GPU speed, each point kept is faster per user than
  // every one before: ascending per user.
  const bool sat = space.pareto == ParetoAt::saturation;
  auto gpu = [sat](const Deployment& d) { return sat ? d.saturation->output_tokens_per_s_per_gpu : d.output_tokens_per_s_per_gpu; };
  auto user = [sat](const Deployment& d) { return sat ? d.saturation->output_tokens_per_s_per_user : d.output_tokens_per_s_per_user; };
  std::vector<Deployment> byx;
  for (const Deployment& d : feasible) {
    if (!sat || d.saturation) byx.push_back(d);
  }
  std::sort(byx.begin(), byx.end(), [&](const Deployment& a, const Deployment& b) {
    if (gpu(a) != gpu(b)) return gpu(a) > gpu(b);
    if (user(a) != user(b)) return user(a) > user(b);
    return a.order < b.order;
  });
  double best_user = -1;
  for (const Deployment& d : byx) {
    if (user(d) > best_user) {
      out.pareto.push_back(d);
      best_user = user(d);
    }
  }
  out.feasible = std::move(feasible);
  out.interrupted = interrupted;
  out.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

}  // namespace ridgeline::planning
