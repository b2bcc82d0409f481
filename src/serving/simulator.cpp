// The serving simulator: arrivals, routing, replica steps, statistics (docs/serving.md#simulator).
// This file holds the event loop; each phase's members live in a file of their own (simulation.hpp).
#include "ridgeline/serving/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/memory.hpp"
#include "ridgeline/core/units.hpp"
#include "simulation.hpp"

namespace ridgeline::serving {

using detail::check_memory;
using detail::kMaxSimulated_s;
using detail::Simulation;

std::string_view name(Router r) noexcept {
  switch (r) {
    case Router::round_robin: return "round-robin";
    case Router::least_loaded: return "least-loaded";
    case Router::prefix: return "prefix";
  }
  return "?";
}

std::string_view name(Unsustainable u) noexcept {
  switch (u) {
    case Unsustainable::none: return "none";
    case Unsustainable::unfinished: return "unfinished";
    case Unsustainable::nothing_served: return "nothing_served";
    case Unsustainable::served_fraction: return "served_fraction";
    case Unsustainable::queue_grows: return "queue_grows";
  }
  return "?";
}

std::optional<Router> parse_router(std::string_view s) noexcept {
  if (s == "round-robin") return Router::round_robin;
  if (s == "least-loaded") return Router::least_loaded;
  if (s == "prefix") return Router::prefix;
  return std::nullopt;
}

std::string_view name(SloMetric m) noexcept {
  switch (m) {
    case SloMetric::ttft: return "ttft";
    case SloMetric::tpot: return "tpot";
    case SloMetric::itl: return "itl";
    case SloMetric::e2e: return "e2e";
  }
  return "?";
}

std::string name(const SloTarget& g) {
  return fmt::format("{}_{}", name(g.metric), g.q < 0 ? std::string("mean") : fmt::format("p{:g}", g.q * 100));
}

const SloTarget* Slo::find(SloMetric m) const noexcept {
  for (const SloTarget& t : targets) {
    if (t.metric == m) return &t;
  }
  return nullptr;
}

Slo& Slo::set(SloMetric m, double limit_s, double q) {
  for (SloTarget& t : targets) {
    if (t.metric == m) {
      t.limit_s = limit_s, t.q = q;
      return *this;
    }
  }
  targets.push_back({m, q, limit_s});
  return *this;
}

double statistic(const Summary& s, double q) noexcept {
  if (q < 0) return s.mean;
  if (q <= 0.5) return s.p50;
  if (q <= 0.9) return s.p90;
  if (q <= 0.95) return s.p95;
  return s.p99;
}

const Summary& summary_of(const ServingResult& r, SloMetric m) noexcept {
  switch (m) {
    case SloMetric::ttft: return r.ttft;
    case SloMetric::tpot: return r.tpot;
    case SloMetric::itl: return r.itl;
    case SloMetric::e2e: break;
  }
  return r.e2e;
}

Slo parse_slo(std::string_view s) {
  static constexpr const char* kKeys = "ttft, tpot, itl or e2e with _p50, _p90, _p95, _p99 or _mean, as in itl_p99";
  Slo slo;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = std::min(s.find(',', start), s.size());
    const std::string_view item = s.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw InputError(fmt::format("--slo: '{}' is not METRIC=TIME, as in ttft_p99=1s,tpot_p99=50ms", item));
    }
    const std::string_view key = item.substr(0, eq);
    const std::size_t us = key.find('_');
    const std::string_view metric = key.substr(0, us), stat = us == std::string_view::npos ? "" : key.substr(us + 1);
    std::optional<SloMetric> m;
    for (const SloMetric c : {SloMetric::ttft, SloMetric::tpot, SloMetric::itl, SloMetric::e2e}) {
      if (metric == name(c)) m = c;
    }
    if (!m) throw InputError(fmt::format("--slo: '{}' is not a key: expected {}", key, kKeys));
    double q = 0;
    if (stat == "p50") q = 0.5;
    else if (stat == "p90") q = 0.9;
    else if (stat == "p95") q = 0.95;
    else if (stat == "p99") q = 0.99;
    else if (stat == "mean") q = -1;  // the mean
    else throw InputError(fmt::format("--slo: '{}' is not a key: expected {}", key, kKeys));
    // Up to the 4e6 s a run can simulate (an end-to-end target may be hours: "2h").
    const double v = parse_duration(item.substr(eq + 1), fmt::format("--slo {}", key), 4e6);
    if (!(v > 0)) throw InputError(fmt::format("--slo {}: '{}' must be a positive time", key, item.substr(eq + 1)));
    // One target per metric: a second would silently replace the first.
    if (slo.find(*m)) throw InputError(fmt::format("--slo: {} is given a target twice ('{}'): give each metric one target", metric, s));
    slo.targets.push_back({*m, q, v});
  }
  if (!slo.any()) throw InputError(fmt::format("--slo: '{}' sets no target", s));
  return slo;
}

namespace detail {

Simulation::Simulation(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, const ServeMemory& mem,
           const ServeMemory& decode_mem, const RequestSink& sink, const std::function<void(double)>& progress,
           const StepSink& steps)
    : m_(m), sys_(sys), cfg_(cfg), sink_(sink), progress_(progress), step_sink_(steps), source_(cfg.workload, cfg.drawn),
      steps_(static_cast<std::size_t>(cfg.disagg.on() ? cfg.disagg.prefill + cfg.disagg.decode : cfg.replicas)),
      timeline_(cfg.timeline_points) {
  itl_on_ = !cfg.lean || cfg.slo.find(SloMetric::itl) != nullptr;
  const Disagg& dg = cfg.disagg;
  tiers_[0] = std::make_unique<Tier>(m, sys, cfg, mem, false, pool_);
  tiers_[1] = dg.on() ? std::make_unique<Tier>(m, sys, cfg, decode_mem, true, pool_) : nullptr;
  detail::Emission emission;
  if (cfg.spec.on()) {
    emission.queries = cfg.spec.k + 1;
    emission.rate = std::llround(model::tokens_per_step(cfg.spec) * static_cast<double>(detail::Emission::kRateOne));
    if (cfg.accept_spread > 0) {
      // Each request in one of the acceptance classes (Simulation::arrive), each its own emission.
      for (const double tau : model::tokens_per_step_classes(cfg.spec, cfg.accept_spread)) {
        emission.cohort_rates.push_back(std::llround(tau * static_cast<double>(detail::Emission::kRateOne)));
      }
    }
  }
  const std::int64_t instances = dg.on() ? dg.prefill + dg.decode : cfg.replicas;
  replicas_.reserve(static_cast<std::size_t>(instances));
  for (std::int64_t i = 0; i < instances; ++i) {
    const bool decode = dg.on() && i >= dg.prefill;
    const Tier& k = *tiers_[decode ? 1 : 0];
    replicas_.emplace_back(pool_, k.engine, k.mem.kv_blocks, k.ctx.window, static_cast<std::int32_t>(i), emission, k.mem.kv_layout,
                           k.ctx.groups);
    if (dg.on()) replicas_.back().role = decode ? detail::Role::decode : detail::Role::prefill;
    all_blocks_ += k.mem.kv_blocks;
    gpus_ += k.chips();
  }
  routed_ = static_cast<std::size_t>(dg.on() ? dg.prefill : instances);
  // Leaps where a quiet step is one of plain decoding that plan() fills the same every time:
  // not with speculative decoding (its own emission), a multi-step window, attention
  // data-parallel groups (each its own share of the batch) or disaggregated instances; nor
  // when every step is streamed out.
  leap_on_ = cfg.leap && !step_sink_ && !dg.on() && !cfg.spec.on() && tiers_[0]->engine.scheduler_steps <= 1 && tiers_[0]->ctx.groups == 1;
  if (leap_on_) {
    const std::size_t n = replicas_.size() * (kLeapMost + 1);
    leap_end_.assign(n, 0);
    leap_period_.assign(n, 0);
    leap_keys_.assign(n, 0);
  }
  if (dg.on()) {
    const TransferLink l = transfer_link(sys, cfg);
    result_.disagg.link = l.name;
    result_.disagg.link_Bps = l.Bps;
    result_.disagg.link_latency_s = l.latency_s;
    result_.disagg.descriptor_s = cfg.disagg.descriptor_s;
    fan_in_ = std::max(1.0, static_cast<double>(tiers_[1]->plan.forward.tp) / static_cast<double>(cfg.forward.tp));
  }
  snapshots_.resize(replicas_.size());
  touched_flag_.assign(replicas_.size(), 0);
  touched_.reserve(replicas_.size());
  total_ = source_.total();
  measured_total_ = total_ - std::min(total_, cfg.workload.warmup);
  window_ = cfg.window.on;
  if (window_) {
    // The measured requests: per_instance on each instance that completes requests, at most
    // a quarter of what the run may send; the window opens by half of those at the latest.
    const std::int64_t completing = dg.on() ? dg.decode : cfg.replicas;
    measured_total_ = std::clamp<std::int64_t>(window_requests_per_instance(cfg) * completing, 1, std::max<std::int64_t>(1, total_ / 4));
    force_at_ = std::min(total_ / 2, 16 * measured_total_);
  }
  // The trend's blocks: 32 to a window's measured requests (64 to a fixed run's), 16 arrivals at least.
  block_ = std::max<std::int64_t>(16, window_ ? measured_total_ / 32 : total_ / 64);
  marks_.reserve(static_cast<std::size_t>((window_ ? force_at_ : total_) / block_ + 2));
  horizon_ = cfg.horizon_s > 0 ? to_ps(cfg.horizon_s) : kNever;
  front_end_ = to_ps(cfg.engine.front_end_s);
  const double limit = memory_limit_bytes();
  if (limit > 0) max_in_system_ = static_cast<std::size_t>(std::max(1024.0, limit / 2 / kBytesPerRequest));
}

ServingResult Simulation::run() {
  const auto wall0 = std::chrono::steady_clock::now();
  closed_ = cfg_.workload.arrival == Arrival::closed;
  warming_ = drains_warmup();
  // A drained warm-up's clients send only its requests first (release_measured).
  if (closed_) send_clients(0, warming_ ? cfg_.workload.warmup : total_);
  draw_next();
  Ps last = 0;  // the events at this time are in
  for (;;) {
    const Ps ta = next_arrival_time();
    const Ps ts = steps_.first_end();
    const Ps tt = transfers_.empty() ? kNever : transfers_.top().first;
    const Ps t = std::min({ta, ts, tt});
    if (t == kNever) break;  // (a replica in a leap has its last step's end to come)
    if (slo_missed_ || window_done_) {
      catch_up_all(last, true);
      break;
    }
    if (t > horizon_) {
      result_.horizon_reached = true;
      // The leaps' steps to the horizon, as events of their own would have been.
      const Ps leapt = catch_up_all(horizon_, true);
      if (leapt > clock_) advance(leapt);
      break;
    }
    last = t;
    advance(t);
    // Every event at t first (steps ending, requests arriving — a closed loop's next ones
    // among them), then the next steps: requests arriving together are scheduled together.
    for (bool more = true; more;) {
      more = false;
      bool quiet = false;
      while (steps_.first_end() == t) {
        const std::int32_t ri = steps_.first();
        Replica& r = replicas_[static_cast<std::size_t>(ri)];
        if (r.leap_k > 0) end_leap(r, t);  // its last step: the others first
        finish_step(r, t);
        // Nothing else left at t (the common case): the replica starts its next step below,
        // which replaces its end in the tree (one update a step, not two).
        quiet = steps_.first_end_besides(ri) > t && next_arrival_time() > t && (transfers_.empty() || transfers_.top().first > t);
        if (quiet) break;
        steps_.set(ri, kNever);
        more = true;
      }
      if (quiet) break;
      while (!transfers_.empty() && transfers_.top().first == t) {
        const std::int32_t qi = transfers_.top().second;
        transfers_.pop();
        received(qi);
        more = true;
      }
      while (next_arrival_time() == t && !window_done_) {  // none once the window's last request ended
        arrive(t);
        more = true;
      }
    }
    for (const std::int32_t ri : to_start_) {
      Replica& r = replicas_[static_cast<std::size_t>(ri)];
      r.start_pending = false;
      if (!r.busy) start_step(r, t);
    }
    to_start_.clear();
  }
  summarise();
  result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return std::move(result_);
}

}  // namespace detail

std::int64_t window_requests_per_instance(const ServeConfig& cfg) {
  if (cfg.window.per_instance > 0) return cfg.window.per_instance;
  double q = cfg.window.quantile;
  for (const SloTarget& t : cfg.slo.targets) q = std::max(q, t.q);
  // Ten requests beyond the percentile: 1000 for a p99.
  return static_cast<std::int64_t>(std::ceil(10 / (1 - std::min(q, 0.999)) - 1e-9));
}

ServingResult simulate(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, const RequestSink& sink,
                       const std::function<void(double)>& progress, const StepSink& steps) {
  validate(m, sys, cfg);
  const ServeMemory mem = serve_memory(m, sys, cfg);
  const ServeMemory decode_mem = cfg.disagg.on() ? serve_memory(m, sys, cfg, true) : mem;  // once for every run below
  check_memory(m, cfg, mem, decode_mem);
  ServingResult result;
  {
    auto sim = std::make_unique<Simulation>(m, sys, cfg, mem, decode_mem, sink, progress, steps);
    result = sim->run();
  }
  const bool open = cfg.workload.arrival == Arrival::poisson || cfg.workload.arrival == Arrival::gamma ||
                    cfg.workload.arrival == Arrival::constant;
  if (!result.sustainable && open && cfg.find_max_rate) {
    // Bisection on the rate, with the same requests (same seed): the largest rate found
    // sustainable, to within 1/256 of the offered one.
    ServeConfig probe = cfg;
    probe.find_max_rate = false;
    probe.drawn = nullptr;  // drawn at the workload's own rate: the probes draw theirs
    probe.timeline_points = 2;
    double lo = 0, hi = cfg.workload.qps;
    for (int i = 0; i < 8; ++i) {
      const double mid = (lo + hi) / 2;
      // A rate whose arrivals pass the time a run can simulate is not tried: lo is what was found.
      if (static_cast<double>(cfg.workload.requests) / mid > kMaxSimulated_s / 2) break;
      probe.workload.qps = mid;
      auto sim = std::make_unique<Simulation>(m, sys, probe, mem, decode_mem, RequestSink{}, std::function<void(double)>{});
      bool ok = false;
      try {
        ok = sim->run().sustainable;
      } catch (const InputError&) {
        break;  // a probe's steps past the time a run can simulate: no rate below was found sustainable
      }
      (ok ? lo : hi) = mid;
    }
    result.max_sustainable_qps = lo;
  }
  return result;
}

ReplicaSearch fewest_replicas(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg,
                              std::int64_t max_replicas) {
  if (!cfg.slo.any()) throw InputError("--replicas auto: give the targets to meet with --slo");
  ReplicaSearch out;
  ServeConfig c = cfg;
  c.find_max_rate = false;
  auto run = [&](std::int64_t n, ServingResult* keep) {
    c.replicas = n;
    ServingResult r = simulate(m, sys, c);
    const bool met = r.slo_met && r.sustainable && (!r.steady_state.window || r.steady_state.reached);
    out.tried.emplace_back(n, met);
    if (keep != nullptr) *keep = std::move(r);
    return met;
  };
  // Doubling: the first count that meets the targets, and the last that did not.
  std::int64_t lo = 0, hi = 1;
  ServingResult best;
  while (!run(hi, &best)) {
    if (hi >= max_replicas) {
      out.result = std::move(best);
      return out;
    }
    lo = hi;
    hi = std::min(2 * hi, max_replicas);
  }
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    ServingResult r;
    if (run(mid, &r)) {
      hi = mid;
      best = std::move(r);
    } else {
      lo = mid;
    }
  }
  out.replicas = hi;
  out.result = std::move(best);
  return out;
}

}  // namespace ridgeline::serving
