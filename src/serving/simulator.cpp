// The serving simulator: arrivals, routing, replica steps, statistics (docs/serving.md#simulator).
#include "ridgeline/serving/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "replica.hpp"
#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/memory.hpp"
#include "ridgeline/core/units.hpp"
#include "scheduler.hpp"

namespace ridgeline::serving {

using detail::Phase;
using detail::Ps;
using detail::Replica;
using detail::Req;
using detail::to_ps;
using detail::to_s;

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

Slo parse_slo(std::string_view s) {
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
    double q = 0;
    if (stat == "p50") q = 0.5;
    else if (stat == "p90") q = 0.9;
    else if (stat == "p95") q = 0.95;
    else if (stat == "p99") q = 0.99;
    else if (stat == "mean") q = -1;  // the mean
    else throw InputError(fmt::format("--slo: '{}' needs a statistic: p50, p90, p95, p99 or mean, as in ttft_p99", key));
    // Up to the 4e6 s a run can simulate (an end-to-end target may be hours: "2h").
    const double v = parse_duration(item.substr(eq + 1), fmt::format("--slo {}", key), 4e6);
    if (!(v > 0)) throw InputError(fmt::format("--slo {}: '{}' must be a positive time", key, item.substr(eq + 1)));
    double* target = metric == "ttft" ? &slo.ttft_s : metric == "tpot" ? &slo.tpot_s : metric == "e2e" ? &slo.e2e_s : nullptr;
    if (target == nullptr) throw InputError(fmt::format("--slo: '{}' is not a metric: expected ttft, tpot or e2e", metric));
    // One target per metric: a second would silently replace the first.
    if (*target > 0) throw InputError(fmt::format("--slo: {} is given a target twice ('{}'): give each metric one target", metric, s));
    *target = v;
    (metric == "ttft" ? slo.ttft_q : metric == "tpot" ? slo.tpot_q : slo.e2e_q) = q;
  }
  if (!slo.any()) throw InputError(fmt::format("--slo: '{}' sets no target", s));
  return slo;
}

namespace {

constexpr Ps kNever = INT64_MAX;
// Simulated time is int64 picoseconds (9.2e6 s at most): runs stay well inside it, so that
// the timeline's doubling bucket widths never overflow either. A step, a transfer or an
// arrival that would end past it stops the run with an InputError (time_overflow).
constexpr double kMaxSimulated_s = 4e6;
// Below this share of the offered rate served, a run is not sustainable (docs/serving.md#sustainable).
constexpr double kMinServedFraction = 0.5;
// Memory a request in the system holds: its pool slot and its entries in the queues and heaps.
constexpr double kBytesPerRequest = static_cast<double>(sizeof(detail::Req) + 64);

// `what` starting at t would last `s` seconds and end past the time a run can simulate (or
// lasts no finite time): the inputs, not the run, are at fault.
[[noreturn]] void time_overflow(const std::string& what, Ps t, double s) {
  throw InputError(fmt::format("serve: simulated time overflows: {} starting at {:.6g} s lasts {:.3g} s, past the {:g} s (46 days) a run "
                               "can simulate: the chip's rates (--peak, --mem-bw, --link-bw, --disagg-link-bw or its file) are too low for "
                               "this model and load",
                               what, to_s(t), s, kMaxSimulated_s));
}

// The engine as it will run: the SGLang sequence limit resolved from the cache size.
EngineConfig resolved_engine(const model::ModelConfig& m, EngineConfig e, const ServeMemory& mem) {
  if (e.max_num_seqs == 0) {
    // SGLang max_running_requests: clamp(tokens / context_len x 512, 2048, 4096), at most tokens / 2.
    const double tokens = static_cast<double>(mem.kv_tokens);
    const double context = m.max_positions > 0 ? static_cast<double>(m.max_positions) : 32768;
    const double reqs = std::clamp(std::floor(tokens / context * 512), 2048.0, 4096.0);
    e.max_num_seqs = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::min(reqs, std::floor(tokens / 2))));
  }
  return e;
}

// The link a disaggregated request's KV crosses, chip to chip: the node link when every
// instance's chips fit one scale-up domain, else the network; at the link's efficiency.
struct TransferLink {
  std::string name;
  double Bps = 0, latency_s = 0;
};
TransferLink transfer_link(const hw::System& sys, const ServeConfig& cfg) {
  const Disagg& dg = cfg.disagg;
  TransferLink l;
  const InstancePlan dp = instance_plan(cfg, true);
  const std::int64_t chips = dg.prefill * cfg.forward.tp * cfg.forward.ep + dg.decode * dp.forward.tp * dp.forward.ep;
  const int node = sys.chip.link_index(hw::LinkScope::node), net = sys.chip.link_index(hw::LinkScope::network);
  const int i = (chips <= sys.domain() && node >= 0) || net < 0 ? node : net;
  if (i >= 0) {
    const hw::LinkSpec& k = sys.chip.links[static_cast<std::size_t>(i)];
    l.name = std::string(hw::name(k.scope));
    l.Bps = k.chip_bandwidth_Bps() * (k.efficiency > 0 ? k.efficiency : sys.chip.efficiency.link);
    l.latency_s = k.latency_s;
  }
  if (dg.link_Bps > 0) l.name = "given", l.Bps = dg.link_Bps;
  if (dg.link_latency_s >= 0) l.latency_s = dg.link_latency_s;
  return l;
}

// The draft's k passes of a step: the first over `first` (the step's prefill chunks, when
// `chunks`, and one token per decode sequence), the other k - 1 each like `rest`.
double draft_passes_s(const StepModel& draft, const EngineConfig& e, int k, const model::StepMix& first, const model::StepMix& rest,
                      bool chunks, StepTimeMemo (&memo)[2]) {
  double t = 0;
  if (first.seqs() > 0) t += memo[0].time(draft, first, chunks ? e.mixed_graphs : decode_step_graphs(e, first.decode_tokens));
  if (k > 1 && rest.decode_seqs > 0) {
    t += static_cast<double>(k - 1) * memo[1].time(draft, rest, decode_step_graphs(e, rest.decode_tokens));
  }
  return t;
}

// Integrals over time of what the statistics average.
struct Integrals {
  double in_system = 0, running = 0, waiting = 0, kv_used = 0;
};

// Running / waiting / KV / tokens over time in at most 2·points buckets: when they fill up,
// neighbours merge and the bucket width doubles.
class Timeline {
 public:
  explicit Timeline(int points) : max_(std::max(2, points)) {}
  void add(Ps t0, Ps t1, double running, double waiting, double kv) {
    if (t1 <= t0 || max_ <= 0) return;
    if (width_ == 0) width_ = std::max<Ps>(1, to_ps(1e-3));
    while (t1 > static_cast<Ps>(2 * max_) * width_) grow();
    while (t0 < t1) {
      const std::size_t b = static_cast<std::size_t>(t0 / width_);
      if (b >= buckets_.size()) buckets_.resize(b + 1);
      const Ps end = std::min<Ps>(t1, static_cast<Ps>(b + 1) * width_);
      const double dt = to_s(end - t0);
      Bucket& k = buckets_[b];
      k.running += running * dt, k.waiting += waiting * dt, k.kv += kv * dt, k.covered += dt;
      t0 = end;
    }
  }
  void tokens(Ps t, double n) {
    if (width_ == 0) width_ = std::max<Ps>(1, to_ps(1e-3));
    std::size_t b = static_cast<std::size_t>(t / width_);
    while (b >= static_cast<std::size_t>(2 * max_)) grow(), b = static_cast<std::size_t>(t / width_);
    if (b >= buckets_.size()) buckets_.resize(b + 1);
    buckets_[b].tokens += n;
  }
  std::vector<TimePoint> points() const {
    std::vector<TimePoint> out;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      const Bucket& k = buckets_[b];
      const double w = to_s(width_);
      TimePoint p;
      p.t_s = (static_cast<double>(b) + 0.5) * w;
      if (k.covered > 0) p.running = k.running / k.covered, p.waiting = k.waiting / k.covered, p.kv_used = k.kv / k.covered;
      p.tokens_per_s = k.tokens / w;
      out.push_back(p);
    }
    return out;
  }

 private:
  struct Bucket {
    double running = 0, waiting = 0, kv = 0, covered = 0, tokens = 0;
  };
  void grow() {
    std::vector<Bucket> merged((buckets_.size() + 1) / 2);
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      Bucket& m = merged[b / 2];
      const Bucket& k = buckets_[b];
      m.running += k.running, m.waiting += k.waiting, m.kv += k.kv, m.covered += k.covered, m.tokens += k.tokens;
    }
    buckets_ = std::move(merged);
    width_ *= 2;
  }
  int max_;
  Ps width_ = 0;
  std::vector<Bucket> buckets_;
};

// What the instances of one kind share: their plan, engine, cache, step pricing and
// scheduler. Aggregated, every replica is of one kind; disaggregated, the prefill instances
// are of the first and the decode instances of the second.
struct Tier {
  Tier(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, const ServeMemory& memory, bool decode,
       std::vector<Req>& pool)
      : plan(instance_plan(cfg, decode)), engine(resolved_engine(m, plan.engine, memory)), mem(memory), ctx{pool, engine} {
    const model::ForwardConfig f = engine_forward(plan.forward, engine);
    step.prepare(m, sys, f);
    if (cfg.spec.on()) {
      draft = std::make_unique<StepModel>();
      draft->prepare(*cfg.spec.draft, sys, f);
    }
    ctx.window = static_cast<double>(m.sliding_window);
    ctx.partial_reuse = engine.partial_reuse;
    const int host = sys.chip.link_index(hw::LinkScope::host);
    const double block_bytes = mem.kv_bytes_per_token * static_cast<double>(engine.kv_block);
    if (host >= 0) ctx.swap_s_per_block = block_bytes / sys.chip.links[static_cast<std::size_t>(host)].chip_bandwidth_Bps();
    scheduler = detail::make_scheduler(ctx);
    // Decode-only steps priced by their token count: up to the sequence limit (4096 at most).
    const auto seqs_max = static_cast<std::size_t>(std::clamp<std::int64_t>(engine.max_num_seqs, 1, 4096));
    memo = StepTimeMemo(seqs_max * static_cast<std::size_t>(cfg.spec.k + 1));
    if (draft) draft_memo[0] = draft_memo[1] = StepTimeMemo(seqs_max);
  }
  std::int64_t chips() const noexcept { return plan.forward.tp * plan.forward.ep; }

  InstancePlan plan;
  EngineConfig engine;  // as it runs (SGLang's sequence limit from the cache)
  ServeMemory mem;
  StepModel step;
  std::unique_ptr<StepModel> draft;  // speculative decoding
  StepTimeMemo memo, draft_memo[2];
  detail::SimContext ctx;
  std::unique_ptr<detail::Scheduler> scheduler;
};

// Each replica's step end (kNever: none in flight), the earliest first: a tournament tree
// over the replicas whose nodes hold the earliest (end, replica) of their subtree, ties to the
// lower index (the order a heap of (end, replica) pops them in). A replica's end changes in
// log2(replicas) steps up the tree, each the least of the new node and its sibling: the
// siblings' loads do not wait on each other and nothing branches, so an update costs a chain
// of compares, not of loads. A replica has one step in flight at most.
class StepEnds {
 public:
  explicit StepEnds(std::size_t n) {
    while (size_ < n) size_ *= 2;
    node_.resize(2 * size_);
    for (std::size_t i = 0; i < size_; ++i) node_[size_ + i] = {kNever, static_cast<std::int32_t>(i)};
    for (std::size_t i = size_ - 1; i >= 1; --i) node_[i] = least(node_[2 * i], node_[2 * i + 1]);
  }
  Ps first_end() const { return node_[1].end; }
  std::int32_t first() const { return node_[1].r; }
  Ps end(std::int32_t r) const { return node_[size_ + static_cast<std::size_t>(r)].end; }
  /// The earliest end of the others than r: the least of the subtrees beside r's path.
  Ps first_end_besides(std::int32_t r) const {
    Ps m = kNever;
    for (std::size_t i = size_ + static_cast<std::size_t>(r); i > 1; i /= 2) m = std::min(m, node_[i ^ 1].end);
    return m;
  }
  void set(std::int32_t r, Ps end) {
    Node v{end, r};
    std::size_t i = size_ + static_cast<std::size_t>(r);
    node_[i] = v;
    for (; i > 1; i /= 2) {
      v = least(v, node_[i ^ 1]);
      node_[i / 2] = v;
    }
  }

 private:
  struct Node {
    Ps end;
    std::int32_t r;
  };
  // b when it ends first, or as early with a lower index; else a. Blended by a mask, without
  // branches (which would mispredict at every level).
  static Node least(Node a, Node b) noexcept {
    const bool b_first = (b.end < a.end) | ((b.end == a.end) & (b.r < a.r));
    const std::int64_t mask = -static_cast<std::int64_t>(b_first);
    return {a.end ^ ((a.end ^ b.end) & mask), a.r ^ ((a.r ^ b.r) & static_cast<std::int32_t>(mask))};
  }
  std::size_t size_ = 1;
  std::vector<Node> node_;  // 1: the root; size_ + r: replica r
};

class Simulation {
 public:
  // `mem`: the prefill (or every) instances' memory; `decode_mem`: the decode instances'.
  Simulation(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, const ServeMemory& mem,
             const ServeMemory& decode_mem, const RequestSink& sink, const std::function<void(double)>& progress)
      : m_(m), sys_(sys), cfg_(cfg), sink_(sink), progress_(progress), source_(cfg.workload, cfg.drawn),
        steps_(static_cast<std::size_t>(cfg.disagg.on() ? cfg.disagg.prefill + cfg.disagg.decode : cfg.replicas)),
        timeline_(cfg.timeline_points) {
    const Disagg& dg = cfg.disagg;
    tiers_[0] = std::make_unique<Tier>(m, sys, cfg, mem, false, pool_);
    tiers_[1] = dg.on() ? std::make_unique<Tier>(m, sys, cfg, decode_mem, true, pool_) : nullptr;
    detail::Emission emission;
    if (cfg.spec.on()) {
      emission.queries = cfg.spec.k + 1;
      emission.rate = std::llround(model::tokens_per_step(cfg.spec) * static_cast<double>(detail::Emission::kRateOne));
    }
    const std::int64_t instances = dg.on() ? dg.prefill + dg.decode : cfg.replicas;
    replicas_.reserve(static_cast<std::size_t>(instances));
    for (std::int64_t i = 0; i < instances; ++i) {
      const bool decode = dg.on() && i >= dg.prefill;
      const Tier& k = *tiers_[decode ? 1 : 0];
      replicas_.emplace_back(pool_, k.engine, k.mem.kv_blocks, k.ctx.window, static_cast<std::int32_t>(i), emission);
      if (dg.on()) replicas_.back().role = decode ? detail::Role::decode : detail::Role::prefill;
      all_blocks_ += k.mem.kv_blocks;
      gpus_ += k.chips();
    }
    routed_ = static_cast<std::size_t>(dg.on() ? dg.prefill : instances);
    if (dg.on()) {
      const TransferLink l = transfer_link(sys, cfg);
      result_.disagg.link = l.name;
      result_.disagg.link_Bps = l.Bps;
      result_.disagg.link_latency_s = l.latency_s;
      fan_in_ = std::max(1.0, static_cast<double>(tiers_[1]->plan.forward.tp) / static_cast<double>(cfg.forward.tp));
    }
    snapshots_.resize(replicas_.size());
    touched_flag_.assign(replicas_.size(), 0);
    touched_.reserve(replicas_.size());
    total_ = source_.total();
    measured_total_ = total_ - std::min(total_, cfg.workload.warmup);
    horizon_ = cfg.horizon_s > 0 ? to_ps(cfg.horizon_s) : kNever;
    front_end_ = to_ps(cfg.engine.front_end_s);
    const double limit = memory_limit_bytes();
    if (limit > 0) max_in_system_ = static_cast<std::size_t>(std::max(1024.0, limit / 2 / kBytesPerRequest));
  }

  ServingResult run() {
    const auto wall0 = std::chrono::steady_clock::now();
    closed_ = cfg_.workload.arrival == Arrival::closed;
    if (closed_) {
      for (std::int64_t i = 0; i < cfg_.workload.concurrency && i < total_; ++i) pending_.push_back(front_end_);
    }
    draw_next();
    for (;;) {
      const Ps ta = next_arrival_time();
      const Ps ts = steps_.first_end();
      const Ps tt = transfers_.empty() ? kNever : transfers_.top().first;
      const Ps t = std::min({ta, ts, tt});
      if (t == kNever) break;
      if (t > horizon_) {
        result_.horizon_reached = true;
        break;
      }
      if (slo_missed_) break;
      advance(t);
      // Every event at t first (steps ending, requests arriving — a closed loop's next ones
      // among them), then the next steps: requests arriving together are scheduled together.
      for (bool more = true; more;) {
        more = false;
        bool quiet = false;
        while (steps_.first_end() == t) {
          const std::int32_t ri = steps_.first();
          finish_step(replicas_[static_cast<std::size_t>(ri)], t);
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
        while (next_arrival_time() == t) {
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

 private:
  // --- arrivals ------------------------------------------------------------------------
  void draw_next() {
    if (closed_) {
      // Closed loop: lengths from the source, arrival when a client is free.
      has_next_ = false;
      return;
    }
    has_next_ = source_.next(next_);
    // A trace's requests within half the time a run can simulate (synthetic arrivals: checked
    // in validate() from their count and rate; a random sum may pass it a little).
    const bool trace = cfg_.workload.arrival == Arrival::trace;
    if (has_next_ && !(next_.arrival_s <= (trace ? kMaxSimulated_s / 2 : kMaxSimulated_s))) {
      if (!trace) time_overflow(fmt::format("the arrival of request {}", sent_ + 1), 0, next_.arrival_s);
      throw InputError(fmt::format("--trace: request {} arrives {:.3g} s after the first: expected at most {:g} s (23 days)", sent_ + 1,
                                   next_.arrival_s, kMaxSimulated_s / 2));
    }
    next_ps_ = has_next_ ? to_ps(next_.arrival_s) + front_end_ : kNever;
  }
  Ps next_arrival_time() const {
    if (closed_) return pending_.empty() || sent_ >= total_ ? kNever : pending_.front();
    return next_ps_;
  }

  void arrive(Ps t) {
    Request r;
    if (closed_) {
      pending_.pop_front();
      source_.next(r);
    } else {
      r = next_;
      draw_next();
    }
    const std::int64_t id = sent_++;
    const std::int32_t qi = alloc_slot();
    Req& q = pool_[qi];
    // A slot's version only grows: heap entries of its earlier occupants stay stale.
    const std::uint32_t version = q.version + 1;
    q = Req{};
    q.version = version;
    q.id = id;
    q.arrival = t - front_end_;  // sent then; the scheduler sees it now (docs/serving.md#front-end)
    q.input = r.input;
    q.output = r.output;
    q.group = dense_group(r.prefix_group);
    q.prefix_tokens = std::min(r.prefix_tokens, r.input);
    q.target = r.input;
    q.warmup = id < cfg_.workload.warmup;
    if (!q.warmup) {
      ++measured_arrivals_;
      first_arrival_measured_ = std::min(first_arrival_measured_, to_s(t));
      last_measured_arrival_ = std::max(last_measured_arrival_, to_s(t));
    }
    ++in_system_;
    // The quarter of the measured arrivals now coming in (sustainability).
    const std::int64_t k = measured_total_ > 0 ? (id - cfg_.workload.warmup) * 4 / measured_total_ : 0;
    quarter_ = id < cfg_.workload.warmup ? -1 : static_cast<int>(std::min<std::int64_t>(k, 3));
    if (id + 1 == total_) quarter_ = 4;  // the last arrival ends the window
    if (m_.max_positions > 0 && q.input + q.output > m_.max_positions) {
      ++result_.rejected_by.context;
      reject(qi, t);
      return;
    }
    for (const Tier* tier : {tiers_[0].get(), tiers_[1].get()}) {
      if (tier == nullptr) continue;
      std::int64_t* why = !fits_cache(*tier, q)  ? &result_.rejected_by.cache
                          : !fits_step(*tier, q) ? &result_.rejected_by.budget
                                                 : nullptr;
      if (why != nullptr) {
        ++*why;
        reject(qi, t);
        return;
      }
    }
    Replica& rep = route(q, r.prefix_group);
    q.replica = rep.index;
    rep.know_group(q);
    // An engine that schedules one step ahead fixed the next step's batch when the running
    // step started: the request waits for the one after (docs/serving.md#host-time).
    if (rep.busy && tier(rep).engine.overlap_scheduling) rep.incoming.push_back(qi);
    else rep.waiting.push_back(qi);
    rep.outstanding_tokens += q.input + q.output;
    touch(rep);
    mark(rep);
  }

  // Whether an instance of tier k could ever serve q: it fits the cache alone (with the drafts
  // its last step verifies), and (fits_step) a whole prompt fits one step's budget when
  // prompts are not chunked (TensorRT-LLM's max_input_len <= max_num_tokens; vLLM without
  // chunked prefill). vLLM may preempt it, and then recomputes its prompt and outputs in one
  // chunk too.
  bool fits_cache(const Tier& k, const Req& q) const {
    const EngineConfig& e = k.engine;
    const std::int64_t blocks = (q.input + q.output + cfg_.spec.k + e.kv_block - 1) / e.kv_block;
    return blocks <= k.mem.kv_blocks;
  }
  bool fits_step(const Tier& k, const Req& q) const {
    return fits_budget(k.engine, static_cast<double>(q.input), static_cast<double>(q.output));
  }

  Tier& tier(const Replica& r) { return *tiers_[r.role == detail::Role::decode ? 1 : 0]; }
  const Tier& tier(const Replica& r) const { return *tiers_[r.role == detail::Role::decode ? 1 : 0]; }

  void mark(Replica& r) {
    if (r.busy || r.start_pending) return;
    r.start_pending = true;
    to_start_.push_back(r.index);
  }

  // A prefix group's index among the groups seen so far (-1: none): the replicas' tables hold
  // the groups that occur, not every id up to the largest (a trace's ids, or 2^24 synthetic ones).
  std::int32_t dense_group(std::int32_t group) {
    if (group < 0) return -1;
    return dense_groups_.try_emplace(group, static_cast<std::int32_t>(dense_groups_.size())).first->second;
  }

  // An arriving request's replica (disaggregated: its prefill instance); `group`: its prefix
  // group as drawn or read (the prefix router hashes it).
  Replica& route(const Req& q, std::int32_t group) {
    const std::size_t n = routed_;
    if (n > 1 && cfg_.router == Router::prefix && q.group >= 0) {
      // The group's replica: its prefix is cached there.
      std::uint64_t h = static_cast<std::uint64_t>(group) * 0x9e3779b97f4a7c15ull;
      h ^= h >> 29;
      return replicas_[static_cast<std::size_t>(h % n)];
    }
    return pick(0, n, rr_);
  }

  // One of the instances [first, first + n): in turn (`turn` counts them) under round-robin,
  // else the one with the fewest tokens still to compute.
  Replica& pick(std::size_t first, std::size_t n, std::size_t& turn) {
    if (n == 1) return replicas_[first];
    if (cfg_.router == Router::round_robin) return replicas_[first + turn++ % n];
    std::size_t best = first;
    for (std::size_t i = first + 1; i < first + n; ++i) {
      if (replicas_[i].outstanding_tokens < replicas_[best].outstanding_tokens) best = i;
    }
    return replicas_[best];
  }

  std::int32_t alloc_slot() {
    if (!free_slots_.empty()) {
      const std::int32_t s = free_slots_.back();
      free_slots_.pop_back();
      return s;
    }
    if (pool_.size() >= max_in_system_) {
      // Requests in the system take their memory; past what this process may use the run
      // would be killed, not finished: it stops here, saying what all of them would need.
      throw InputError(fmt::format(
          "serve: {} requests are in the system at once at {:.4g} s of simulated time ({} at {} bytes each; {} finished so far): "
          "the {} requests would need up to {} and this run may use {} (half of this process's memory limit): the deployment serves "
          "far less than the offered load (lower --qps or --requests, or add --replicas)",
          pool_.size(), to_s(clock_), format_quantity(static_cast<double>(pool_.size()) * kBytesPerRequest, Quantity::bytes),
          kBytesPerRequest, finished_, total_, format_quantity(static_cast<double>(total_) * kBytesPerRequest, Quantity::bytes),
          format_quantity(static_cast<double>(max_in_system_) * kBytesPerRequest, Quantity::bytes)));
    }
    pool_.emplace_back();
    return static_cast<std::int32_t>(pool_.size() - 1);
  }

  // --- steps ---------------------------------------------------------------------------
  void start_step(Replica& r, Ps t) {
    touch(r);
    r.now = t;
    // Requests whose KV arrived decode from this step: their last prompt token computed again.
    for (const std::int32_t qi : r.arrived) {
      r.push_running(qi);
      r.join_decode(qi);
    }
    r.arrived.clear();
    Tier& k = tier(r);
    k.scheduler->plan(r);
    // Requests that came in during the last step: planned from the step after this one, or in
    // this one when the engine has nothing else to run (its host was idle, not ahead).
    if (!r.incoming.empty()) {
      const bool idle = !r.plan.decode && r.plan.chunks.empty();
      for (const std::int32_t qi : r.incoming) r.waiting.push_back(qi);
      r.incoming.clear();
      if (idle) k.scheduler->plan(r);
    }
    // An empty replica that cannot admit the request at the head of its queue never will
    // (checked on arrival; a scheduler's own margin can still refuse it): it is rejected.
    while (!r.plan.decode && r.plan.chunks.empty() && r.running_count == 0 && r.in_transfer == 0 && !r.waiting.empty()) {
      const std::int32_t qi = r.waiting.front();
      r.waiting.pop_front();
      r.outstanding_tokens -= detail::remaining_tokens(pool_[qi]);
      ++result_.rejected_by.scheduler;
      reject(qi, t);
      k.scheduler->plan(r);
    }
    const detail::StepPlan& p = r.plan;
    if (!p.decode && p.chunks.empty()) {
      // Running requests always have a next step, unless blocks they need come back when a KV
      // transfer ends (which starts the replica again): a replica that stops otherwise is a bug.
      if (r.running_count > 0 && r.in_transfer == 0) {
        throw std::logic_error(fmt::format("serve: replica {} has {} running requests and no step to run", r.index, r.running_count));
      }
      r.busy = false;
      if (steps_.end(r.index) != kNever) steps_.set(r.index, kNever);  // its last step's end, left by run()
      return;
    }
    // Waiting requests that were admitted leave the queue count.
    const double mix_seqs = p.mix.seqs();
    const bool prefill = !p.chunks.empty();
    const EngineConfig& e = k.engine;
    const GraphMode mode = prefill ? e.mixed_graphs : decode_step_graphs(e, p.mix.decode_tokens);
    double device = k.memo.time(k.step, p.mix, mode) + p.extra_s;
    if (k.draft) device += draft_passes_s(*k.draft, e, cfg_.spec.k, p.draft_first, p.draft_rest, prefill, k.draft_memo);
    // An engine idle until now (no step ended at t, or it left no work) planned this step only now.
    const double period = step_period(e, device, mix_seqs, r.busy_until != t || !r.ahead);
    if (!(period <= kMaxSimulated_s - to_s(t))) {
      double chunk_tokens = 0;
      for (const auto& c : p.chunks) chunk_tokens += static_cast<double>(c.second);
      const char* who = r.role == detail::Role::decode ? "decode instance" : r.role == detail::Role::prefill ? "prefill instance" : "replica";
      time_overflow(fmt::format("a step of {} {} ({:g} prompt tokens, {:g} decoding sequences)", who, r.index, chunk_tokens, p.mix.decode_seqs),
                    t, period);
    }
    r.busy = true;
    r.busy_until = t + std::max<Ps>(1, to_ps(period));
    steps_.set(r.index, r.busy_until);
    ++result_.steps;
    step_time_sum_ += period;
    if (prefill && p.decode) ++result_.mixed_steps;
    else if (prefill) ++result_.prefill_steps;
    else ++result_.decode_steps;
    if (p.decode) decode_batch_sum_ += p.mix.decode_seqs, decode_context_sum_ += p.mix.decode_full.keys;
  }

  void finish_step(Replica& r, Ps t) {
    touch(r);
    const detail::StepPlan& p = r.plan;
    if (p.decode) {
      // Inter-token latency: the sequences of the last decode step waited since its end,
      // the ones that joined since then since their own last token.
      const double joined = static_cast<double>(r.new_decoders.size());
      double warm_new = 0;
      for (const std::int32_t qi : r.new_decoders) {
        Req& q = pool_[qi];
        if (q.first_token < 0) {
          // Handed over by a prefill instance: this step gives its first token (no gap before it).
          q.first_token = q.last_token = t;
          warm_new += q.warmup ? 1 : 0;
          continue;
        }
        if (q.warmup) {
          ++warm_new;
          continue;
        }
        if (!cfg_.lean) itl_.add(to_s(t - q.last_token));
      }
      const double old = static_cast<double>(r.n_decode - r.n_warm_decode) - (joined - warm_new);
      if (old > 0 && r.last_decode_end >= 0 && !cfg_.lean) itl_.add(to_s(t - r.last_decode_end), old);
      r.new_decoders.clear();
      // Every sequence emits the step's tokens; those that finish, only what they had left.
      const std::int64_t d = r.dstep;
      std::int64_t emitted = r.n_decode * r.step_tokens(d);
      while (!r.finishes.empty() && r.finishes.top().step <= d) {
        const detail::DecodeEvent ev = r.finishes.top();
        r.finishes.pop();
        Req& q = pool_[ev.req];
        if (ev.version != q.version || q.phase != Phase::decode) continue;
        emitted -= r.emitted_before(q) + r.step_tokens(d) - q.output;
        q.emitted = q.output;
        q.last_token = t;
        r.leave_decode(ev.req);
        finished_now_.push_back(ev.req);
      }
      ++r.dstep;
      r.last_decode_end = t;
      r.outstanding_tokens -= emitted;
      if (!cfg_.lean) timeline_.tokens(t, static_cast<double>(emitted));
      output_tokens_all_ += static_cast<double>(emitted);
      for (const std::int32_t qi : finished_now_) complete(r, qi, t);
      finished_now_.clear();
    }
    for (const auto& [qi, chunk] : p.chunks) {
      Req& q = pool_[qi];
      q.computed += chunk;
      r.outstanding_tokens -= chunk;
      if (q.group >= 0 && q.computed >= q.prefix_tokens) r.publish_prefix(q);
      if (q.computed < q.target) continue;
      if (r.role == detail::Role::prefill) {
        hand_over(r, qi, t);
        continue;
      }
      // The chunk that completes the prompt gives the next token.
      ++q.emitted;
      --r.outstanding_tokens;
      if (!cfg_.lean) timeline_.tokens(t, 1);
      output_tokens_all_ += 1;
      if (q.first_token < 0) {
        q.first_token = t;
      } else if (!q.warmup && !cfg_.lean) {
        itl_.add(to_s(t - q.last_token));  // a token after a preemption waited since its last one
      }
      q.last_token = t;
      if (q.emitted >= q.output) {
        complete(r, qi, t);
        continue;
      }
      r.prefilling.erase(std::find(r.prefilling.begin(), r.prefilling.end(), qi));
      r.join_decode(qi);
    }
    r.busy = false;
    r.ahead = r.running_count > 0 || !r.waiting.empty() || !r.incoming.empty();
    if (r.role == detail::Role::decode) allocate(r, t);
    mark(r);
  }

  // --- disaggregated: hand-over and KV transfer -------------------------------------------
  // A prompt prefilled on instance p: its request leaves p (keeping its blocks until its KV
  // is sent) for a decode instance, where it waits for the blocks to receive it.
  void hand_over(Replica& p, std::int32_t qi, Ps t) {
    Req& q = pool_[qi];
    p.remove_running(qi);
    p.outstanding_tokens -= q.output - q.emitted;
    q.phase = Phase::transfer;
    q.source = p.index;
    q.source_commit = q.commit;
    q.commit = 0;
    ++p.in_transfer;
    q.prefill_end = t;
    Replica& d = pick(routed_, replicas_.size() - routed_, decode_rr_);
    q.replica = d.index;
    d.know_group(q);  // a preempted request prefills again there, looking for its prefix
    d.outstanding_tokens += q.output;
    d.kv_queue.push_back(qi);
    allocate(d, t);
  }

  // Blocks of a handed-over request on decode instance d: the prompt's tokens but the last
  // (computed again); TensorRT-LLM and static commit the whole request, SGLang keeps room
  // for its output (clipped) as its admission does.
  void allocate(Replica& d, Ps t) {
    const Tier& k = tier(d);
    const EngineConfig& e = k.engine;
    while (!d.kv_queue.empty()) {
      const std::int32_t qi = d.kv_queue.front();
      Req& q = pool_[qi];
      const std::int64_t need = d.blocks_for(q.input - 1);
      if (e.admission == Admission::completion) {
        const std::int64_t commit = d.blocks_for(q.input + q.output + d.lookahead());
        if (d.committed + commit > d.total_blocks || need > d.free_blocks) return;
        q.commit = commit;
        d.committed += commit;
      } else {
        const std::int64_t room =
            e.admission == Admission::ratio_reserve ? d.blocks_for(std::min(q.output, e.reserve_clip_tokens)) : 0;
        if (need + room > d.free_blocks) return;
      }
      d.kv_queue.pop_front();
      d.take_blocks(need);
      touch(d);
      ++d.in_transfer;
      // The KV of input - 1 tokens, each decode chip receiving its share; fewer prefill chips
      // (a smaller TP) each send decode TP / prefill TP of those shares.
      const double bytes = static_cast<double>(q.input - 1) * k.mem.kv_bytes_per_token * fan_in_;
      const DisaggResult& link = result_.disagg;
      double send = bytes / link.link_Bps;
      if (cfg_.disagg.layerwise) {
        // Layer by layer behind the prefill: all but the last layer's share may be hidden.
        const double prefill_s = to_s(q.prefill_end - q.admitted);
        send = std::max(send / static_cast<double>(m_.layers), send - prefill_s);
      }
      const double exposed = link.link_latency_s + send;
      if (!(exposed <= kMaxSimulated_s - to_s(t))) {
        time_overflow(fmt::format("the KV transfer of request {} ({:.3g} bytes at {:.3g} B/s)", q.id, bytes, link.link_Bps), t, exposed);
      }
      transfer_s_sum_ += exposed;
      kv_wait_s_sum_ += to_s(t - q.prefill_end);
      bytes_sum_ += bytes;
      ++transfers_done_;
      transfers_.push({t + std::max<Ps>(1, to_ps(exposed)), qi});
    }
  }

  // The KV of request qi arrived: the prefill instance frees it, the decode instance runs it.
  void received(std::int32_t qi) {
    Req& q = pool_[qi];
    Replica& p = replicas_[static_cast<std::size_t>(q.source)];
    p.release(q);
    p.committed -= q.source_commit;
    q.source_commit = 0;
    --p.in_transfer;
    touch(p);
    mark(p);
    Replica& d = replicas_[static_cast<std::size_t>(q.replica)];
    q.computed = q.input - 1;
    q.target = q.input;
    q.blocks = 0;
    q.source = -1;
    --d.in_transfer;
    d.arrived.push_back(qi);
    touch(d);
    mark(d);
  }

  // A request leaves (its last token at t): blocks freed, statistics, the sink, the next
  // request of its client in a closed loop.
  void complete(Replica& r, std::int32_t qi, Ps t) {
    Req& q = pool_[qi];
    r.release(q);
    r.committed -= q.commit;
    q.commit = 0;
    r.remove_running(qi);
    q.phase = Phase::done;
    RequestRecord rec;
    rec.id = q.id;
    rec.replica = q.replica;
    rec.arrival_s = to_s(q.arrival);
    rec.queue_s = to_s(q.admitted - q.arrival - front_end_);
    rec.ttft_s = to_s(q.first_token - q.arrival);
    rec.e2e_s = to_s(t - q.arrival);
    rec.tpot_s = q.output > 1 ? to_s(t - q.first_token) / static_cast<double>(q.output - 1) : 0;
    rec.input = q.input;
    rec.output = q.output;
    rec.cached_tokens = q.cached;
    rec.preemptions = q.preemptions;
    rec.warmup = q.warmup;
    record(rec, t);
    free_slots_.push_back(qi);
  }

  void reject(std::int32_t qi, Ps t) {
    const Req& q = pool_[qi];
    RequestRecord rec;
    rec.id = q.id;
    rec.arrival_s = to_s(q.arrival);
    rec.input = q.input;
    rec.output = q.output;
    rec.warmup = q.warmup;
    rec.rejected = true;
    ++result_.rejected;
    record(rec, t);
    free_slots_.push_back(qi);
  }

  void record(const RequestRecord& rec, Ps t) {
    --in_system_;
    ++finished_;
    if (closed_ && sent_ + static_cast<std::int64_t>(pending_.size()) < total_) pending_.push_back(t + front_end_);
    if (sink_) sink_(rec);
    if (progress_ && (finished_ & 0xffff) == 0) progress_(static_cast<double>(finished_) / static_cast<double>(total_));
    if (rec.rejected) {
      measured_rejected_ += rec.warmup ? 0 : 1;
      return;
    }
    all_e2e_sum_ += rec.e2e_s;
    ++all_served_;
    if (rec.warmup) return;
    ++measured_;
    ttft_.add(rec.ttft_s);
    if (rec.output > 1) tpot_.add(rec.tpot_s);
    e2e_.add(rec.e2e_s);
    queue_.add(rec.queue_s);
    input_tokens_ += static_cast<double>(rec.input);
    output_tokens_ += static_cast<double>(rec.output);
    cached_tokens_ += static_cast<double>(rec.cached_tokens);
    first_measured_arrival_ = std::min(first_measured_arrival_, rec.arrival_s);
    last_measured_end_ = std::max(last_measured_end_, rec.arrival_s + rec.e2e_s);
    const Slo& s = cfg_.slo;
    if (!s.any()) return;
    const bool ttft_ok = s.ttft_s <= 0 || rec.ttft_s <= s.ttft_s, tpot_ok = s.tpot_s <= 0 || rec.output <= 1 || rec.tpot_s <= s.tpot_s;
    const bool e2e_ok = s.e2e_s <= 0 || rec.e2e_s <= s.e2e_s;
    if (ttft_ok && tpot_ok && e2e_ok) ++good_;
    if (cfg_.stop_when_slo_missed) {
      over_[0] += ttft_ok ? 0 : 1, over_[1] += tpot_ok ? 0 : 1, over_[2] += e2e_ok ? 0 : 1;
      slo_missed_ = slo_missed_ || missed(s.ttft_s, s.ttft_q, over_[0], ttft_) || missed(s.tpot_s, s.tpot_q, over_[1], tpot_) ||
                    missed(s.e2e_s, s.e2e_q, over_[2], e2e_);
    }
  }

  // Whether a target can no longer be met, whatever the requests still to come do. At most
  // N = measured_total_ samples end in the distribution (rejected ones and single-token
  // outputs are left out). The q-quantile of n samples lies between the sorted values of
  // indices floor(q(n-1)) and the next: once v >= n - floor(q(n-1)) samples exceed the target,
  // the value at that index does too. n - floor(q(n-1)) only grows with n, so v reaching it
  // at n = N settles every n <= N. Only while samples are kept exactly (a folded histogram
  // reports a bucket's middle). A mean target: the sum so far over N already exceeds it.
  bool missed(double target, double q, std::int64_t over, const Distribution& d) const {
    if (target <= 0) return false;
    const double n = static_cast<double>(measured_total_);
    if (q < 0) return d.mean() * d.count() > target * n;
    if (!d.exact() || measured_total_ > static_cast<std::int64_t>(Distribution::kExactLimit)) return false;
    return static_cast<double>(over) >= n - std::floor(q * (n - 1));
  }

  // A replica whose running, waiting or KV state may have changed since the last advance.
  void touch(const Replica& r) {
    const auto i = static_cast<std::size_t>(r.index);
    if (touched_flag_[i]) return;
    touched_flag_[i] = 1;
    touched_.push_back(r.index);
  }

  // Time-weighted state from the last event to t. The sums over replicas are kept up to date
  // from the replicas touched since the last advance (whole numbers: exact), so an event
  // costs the replicas it changed, not all of them.
  void advance(Ps t) {
    for (const std::int32_t i : touched_) {
      const Replica& r = replicas_[static_cast<std::size_t>(i)];
      Snapshot& sn = snapshots_[static_cast<std::size_t>(i)];
      // Waiting: for a step, or (disaggregated) for a decode instance's blocks to receive its KV.
      // Disaggregated, a decode instance's requests in a KV transfer wait too (for their KV):
      // the sustainability rule counts them with the queue (not the waiting statistics).
      const Snapshot now{r.running_count, static_cast<std::int64_t>(r.waiting.size() + r.incoming.size() + r.kv_queue.size()),
                         r.total_blocks - r.free_blocks,
                         r.role == detail::Role::decode ? r.in_transfer + static_cast<std::int64_t>(r.arrived.size()) : 0};
      sum_.running += now.running - sn.running;
      sum_.waiting += now.waiting - sn.waiting;
      sum_.transfer += now.transfer - sn.transfer;
      sum_.used += now.used - sn.used;
      sn = now;
      touched_flag_[static_cast<std::size_t>(i)] = 0;
    }
    touched_.clear();
    if (t <= clock_) return;
    const double dt = to_s(t - clock_);
    const double running = static_cast<double>(sum_.running), waiting = static_cast<double>(sum_.waiting);
    // The fleet's KV use, divided again only when its blocks changed.
    if (sum_.used != kv_used_blocks_) {
      const double blocks = static_cast<double>(all_blocks_);
      kv_now_ = blocks > 0 ? static_cast<double>(sum_.used) / blocks : 0;
      kv_used_blocks_ = sum_.used;
    }
    const double kv = kv_now_;
    integrals_.in_system += static_cast<double>(in_system_) * dt;
    integrals_.running += running * dt;
    integrals_.waiting += waiting * dt;
    integrals_.kv_used += kv * dt;
    if (quarter_ >= 0 && quarter_ < 4) {
      quarter_waiting_[static_cast<std::size_t>(quarter_)] += (waiting + static_cast<double>(sum_.transfer)) * dt;
      quarter_time_[static_cast<std::size_t>(quarter_)] += dt;
    }
    kv_max_ = std::max(kv_max_, kv);
    if (!cfg_.lean) timeline_.add(clock_, t, running, waiting, kv);
    clock_ = t;
  }

  void summarise() {
    ServingResult& r = result_;
    // Every block comes back when every request has ended: a leak is a bug, not a result.
    if (finished_ == total_) {
      for (const Replica& rep : replicas_) {
        if (rep.free_blocks != rep.total_blocks || rep.running_count != 0 || rep.committed != 0) {
          throw std::logic_error(fmt::format("serve: replica {} ended with {} of {} KV blocks free, {} running, {} committed",
                                             rep.index, rep.free_blocks, rep.total_blocks, rep.running_count, rep.committed));
        }
      }
    }
    r.ttft = ttft_.summary();
    r.tpot = tpot_.summary();
    r.e2e = e2e_.summary();
    if (!cfg_.lean) {
      r.itl = itl_.summary();
      r.queue = queue_.summary();
      for (int i = 0; i <= 100; ++i) r.cdf.q.push_back(i / 100.0);
      r.cdf.ttft_s = ttft_.quantiles(r.cdf.q);
      r.cdf.tpot_s = tpot_.quantiles(r.cdf.q);
      r.cdf.itl_s = itl_.quantiles(r.cdf.q);
      r.cdf.e2e_s = e2e_.quantiles(r.cdf.q);
    }
    r.gpus = static_cast<double>(gpus_);
    if (transfers_done_ > 0) {
      const double n = static_cast<double>(transfers_done_);
      r.disagg.transfer_s_mean = transfer_s_sum_ / n;
      r.disagg.kv_wait_s_mean = kv_wait_s_sum_ / n;
      r.disagg.bytes_per_request_mean = bytes_sum_ / n;
    }
    r.simulated_requests = finished_;
    r.measured_requests = measured_;
    r.unfinished = total_ - finished_;
    r.preemptions = tiers_[0]->ctx.preemptions + (tiers_[1] ? tiers_[1]->ctx.preemptions : 0);
    for (const Replica& rep : replicas_) r.peak_running = std::max(r.peak_running, rep.peak_running);
    r.generated_tokens = output_tokens_all_;
    r.makespan_s = to_s(clock_);
    r.measured_span_s = measured_ > 0 ? last_measured_end_ - first_measured_arrival_ : 0;
    const double span = r.measured_span_s;
    if (span > 0) {
      r.requests_per_s = static_cast<double>(measured_) / span;
      r.input_tokens_per_s = input_tokens_ / span;
      r.output_tokens_per_s = output_tokens_ / span;
      r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / r.gpus;
      r.goodput_requests_per_s = static_cast<double>(good_) / span;
    }
    r.slo_attainment = measured_ > 0 ? static_cast<double>(good_) / static_cast<double>(measured_) : 0;
    const Slo& s = cfg_.slo;
    auto within = [](const Distribution& d, double target, double q) { return target <= 0 || (q < 0 ? d.mean() : d.quantile(q)) <= target; };
    r.slo_met = s.any() && measured_ > 0 && within(ttft_, s.ttft_s, s.ttft_q) && within(tpot_, s.tpot_s, s.tpot_q) &&
                within(e2e_, s.e2e_s, s.e2e_q);
    r.prefix_hit_rate = input_tokens_ > 0 ? cached_tokens_ / input_tokens_ : 0;
    const double T = to_s(clock_);
    if (T > 0) {
      r.mean_in_system = integrals_.in_system / T;
      r.mean_running = integrals_.running / T;
      r.mean_waiting = integrals_.waiting / T;
      r.kv_utilisation_mean = integrals_.kv_used / T;
    }
    r.kv_utilisation_max = kv_max_;
    r.mean_step_s = r.steps > 0 ? step_time_sum_ / r.steps : 0;
    const double dsteps = r.decode_steps + r.mixed_steps;
    r.mean_decode_batch = dsteps > 0 ? decode_batch_sum_ / dsteps : 0;
    if (decode_batch_sum_ > 0 && !cfg_.lean) compose_decode_step(r);
    if (cfg_.disagg.on() && measured_ > 0 && !cfg_.lean) rate_match(r);
    r.memory = tiers_[0]->mem;
    r.engine = tiers_[0]->engine;
    if (tiers_[1]) {
      const Tier& d = *tiers_[1];
      r.disagg.decode_tp = d.plan.forward.tp, r.disagg.decode_ep = d.plan.forward.ep;
      r.disagg.decode_memory = d.mem;
      r.disagg.decode_engine = d.engine;
    }
    r.timeline = timeline_.points();
    r.offered_qps = 0;
    if (!closed_ && measured_total_ > 1) {
      r.offered_qps = cfg_.workload.arrival == Arrival::trace ? 0 : cfg_.workload.qps;
    }
    // The share of the offered rate served: the measured requests' throughput over the rate
    // they arrived at (their count over their arrivals' span). What the sustainability rule
    // reads leaves out the fastest request's own latency (its service, not a backlog): the
    // requests finished (served or rejected) over the span less that latency.
    const double arrivals_span = last_measured_arrival_ - first_arrival_measured_;
    if (!closed_ && measured_ > 0 && measured_arrivals_ > 1 && arrivals_span > 0 && r.requests_per_s > 0) {
      const double offered = static_cast<double>(measured_arrivals_) / arrivals_span;
      r.served_fraction = r.requests_per_s / offered;
      const double backlog_span = r.measured_span_s - e2e_.summary().min;
      const double finished = static_cast<double>(measured_ + measured_rejected_);
      backlog_fraction_ = backlog_span > 0 ? finished / backlog_span / offered : 1;
    }
    r.unsustainable = sustainable();
    r.sustainable = r.unsustainable == Unsustainable::none;
    r.stopped_slo_missed = slo_missed_;
    if (slo_missed_) r.slo_met = false;
  }

  // A decode step of the mean batch at the mean context, built op by op (step_reference).
  void compose_decode_step(ServingResult& r) const {
    // The instances that decode: every replica, or the decode instances.
    const Tier& k = *tiers_[tiers_[1] ? 1 : 0];
    const EngineConfig& engine = k.engine;
    DecodeStepComposition& d = r.decode_step;
    d.sequences = std::max(1.0, std::round(r.mean_decode_batch));
    d.context = std::max(1.0, std::round(decode_context_sum_ / decode_batch_sum_));
    const double q = static_cast<double>(cfg_.spec.k + 1);
    const model::ForwardConfig f = engine_forward(k.plan.forward, engine);
    auto g = std::make_unique<model::Graph>();
    // A decode step of the mean batch, `queries` tokens per sequence at context `kv`, of `m`, op by op.
    auto step = [&](const model::ModelConfig& m, double queries, double kv, analysis::PhaseTimes& t) {
      model::StepMix mix;
      for (double i = 0; i < d.sequences; ++i) mix.add_decode(kv, k.ctx.window, queries);
      mix.fused_attention = engine.fused_attention;
      step_reference(m, sys_, f, mix, decode_step_graphs(engine, mix.decode_tokens), *g, t);
      return t.t_realistic_s;
    };
    analysis::PhaseTimes t;
    if (cfg_.spec.on()) {
      // The draft's passes (as draft_time prices them) and the plain step, at the same batch and
      // context, before the verification step's graph is built last for the composition.
      SpeculationCost& s = r.speculation;
      const model::ModelConfig& dm = *cfg_.spec.draft;
      const double c = std::max(0.0, d.context - q);  // cached context before the step
      s.k = cfg_.spec.k;
      s.tokens_per_step = model::tokens_per_step(cfg_.spec);
      s.draft_s = step(dm, 1, c + 1, t) + (q > 2 ? (q - 2) * step(dm, 1, c + 1 + (q - 1) / 2, t) : 0);
      s.plain_s = step(m_, 1, c + 1, t);
    }
    step(m_, q, d.context, t);
    if (cfg_.spec.on()) {
      SpeculationCost& s = r.speculation;
      s.verify_s = t.t_realistic_s;
      s.speedup = s.plain_s / ((s.verify_s + s.draft_s) / s.tokens_per_step);
      const auto even = model::break_even_accept(s.k, (s.verify_s + s.draft_s) / s.plain_s);
      s.break_even = even.has_value();
      s.break_even_accept = even.value_or(1);
    }
    d.device_s = t.t_realistic_s;
    d.kernel_fixed_s = t.kernel_fixed_s;
    d.link_latency_s = t.link_latency_s;
    for (int i = 0; i < g->op_count; ++i) d.kernels += g->repeat(i) * g->ops[i].cost.launches;
    d.host_s = engine.step_overhead_s + engine.per_request_overhead_s * d.sequences;
  }

  void rate_match(ServingResult& r) const {
    const double n = static_cast<double>(measured_);
    disagg_rates(m_, sys_, cfg_, std::max(1.0, input_tokens_ / n), std::max(1.0, output_tokens_ / n), r.disagg);
  }

  // The waiting queue stays bounded: over the second and the last quarter of the measured
  // arrivals, the mean number of requests waiting (or in a KV transfer) does not grow by more
  // than half plus a margin of 2% of a quarter's arrivals; and the run served at least half
  // the rate it was offered (docs/serving.md#sustainable).
  Unsustainable sustainable() const {
    if (result_.unfinished > 0) return Unsustainable::unfinished;
    if (measured_total_ > 0 && measured_ == 0) return Unsustainable::nothing_served;  // every measured request rejected
    if (closed_) return Unsustainable::none;
    // A run whose requests, once the fastest one's own latency is set aside, finished at under
    // half the rate they arrived at did not sustain it, whatever its queue did (requests held
    // behind steps of hours, or arriving faster than any step).
    if (backlog_fraction_ < kMinServedFraction) return Unsustainable::served_fraction;
    if (quarter_time_[1] <= 0 || quarter_time_[3] <= 0) return Unsustainable::none;
    const double l2 = quarter_waiting_[1] / quarter_time_[1], l4 = quarter_waiting_[3] / quarter_time_[3];
    return l4 <= 1.5 * l2 + 4 + 0.02 * static_cast<double>(measured_total_) / 4 ? Unsustainable::none : Unsustainable::queue_grows;
  }

  const model::ModelConfig& m_;
  const hw::System& sys_;
  const ServeConfig& cfg_;
  RequestSink sink_;  // copies: a caller's temporaries end with the constructor
  std::function<void(double)> progress_;
  std::vector<Req> pool_;
  std::vector<std::int32_t> free_slots_;
  std::size_t max_in_system_ = SIZE_MAX;  // pool slots this process's memory allows (half of it)
  std::unordered_map<std::int32_t, std::int32_t> dense_groups_;  // prefix group as given -> index among those seen
  std::array<std::unique_ptr<Tier>, 2> tiers_;  // every replica's, or the prefill and the decode instances'
  std::vector<std::int32_t> finished_now_;   // sequences whose last token a decode step emits
  std::vector<Replica> replicas_;
  std::int64_t all_blocks_ = 0, gpus_ = 0;   // over the instances
  std::int64_t kv_used_blocks_ = 0;          // the used blocks kv_now_ is of (advance)
  double kv_now_ = 0;
  double fan_in_ = 1;  // disaggregated: decode chips per prefill chip of a request's transfer (at least 1)
  RequestSource source_;
  Request next_;
  bool has_next_ = false, closed_ = false;
  Ps next_ps_ = kNever;  // the next arrival's time (open loop)
  std::deque<Ps> pending_;  // closed loop: when each free client's request reaches the scheduler
  Ps front_end_ = 0;        // the server's time before the scheduler sees a request
  StepEnds steps_;  // replicas' step ends
  std::size_t rr_ = 0, decode_rr_ = 0;
  std::size_t routed_ = 0;  // arrivals go to replicas [0, routed_): all, or the prefill instances
  std::priority_queue<std::pair<Ps, std::int32_t>, std::vector<std::pair<Ps, std::int32_t>>, std::greater<>> transfers_;
  double transfer_s_sum_ = 0, kv_wait_s_sum_ = 0, bytes_sum_ = 0;
  std::int64_t transfers_done_ = 0;
  std::vector<std::int32_t> to_start_;  // replicas to start a step once every event at this time is in
  std::int64_t total_ = 0, measured_total_ = 0, sent_ = 0, finished_ = 0, measured_ = 0, all_served_ = 0, good_ = 0;
  std::int64_t in_system_ = 0;
  Ps clock_ = 0, horizon_ = kNever;
  Distribution ttft_, tpot_, itl_, e2e_, queue_;
  double input_tokens_ = 0, output_tokens_ = 0, cached_tokens_ = 0, output_tokens_all_ = 0, all_e2e_sum_ = 0;
  double first_measured_arrival_ = 1e300, last_measured_end_ = 0;
  // Every measured request's arrival, served or not (the rate offered).
  std::int64_t measured_arrivals_ = 0, measured_rejected_ = 0;
  double backlog_fraction_ = 1;  // sustainable(): finished requests over the span less the fastest latency, per offered rate
  double first_arrival_measured_ = 1e300, last_measured_arrival_ = 0;
  double step_time_sum_ = 0, decode_batch_sum_ = 0, decode_context_sum_ = 0, kv_max_ = 0;
  struct Snapshot {
    std::int64_t running = 0, waiting = 0, used = 0;  // used: KV blocks taken
    std::int64_t transfer = 0;                        // in a KV transfer to a decode instance
  };
  std::vector<Snapshot> snapshots_;  // each replica's state as last summed
  Snapshot sum_;                     // over the replicas
  std::vector<char> touched_flag_;
  std::vector<std::int32_t> touched_;
  std::array<std::int64_t, 3> over_{};  // measured requests beyond the TTFT, TPOT and E2E targets
  bool slo_missed_ = false;
  int quarter_ = -1;  // which quarter of the measured arrivals is coming in (4: all came)
  std::array<double, 4> quarter_waiting_{}, quarter_time_{};
  Integrals integrals_;
  Timeline timeline_;
  ServingResult result_;
};

}  // namespace

InstancePlan instance_plan(const ServeConfig& cfg, bool decode) {
  InstancePlan p{cfg.forward, cfg.engine};
  if (!decode) return p;
  const Disagg& dg = cfg.disagg;
  if (dg.decode_tp > 0) p.forward.tp = dg.decode_tp;
  if (dg.decode_ep > 0) p.forward.ep = dg.decode_ep;
  if (dg.decode_engine) p.engine = *dg.decode_engine;
  return p;
}

void disagg_rates(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, double prompt, double gen,
                  DisaggResult& out) {
  // Each instance's plan and engine as the simulator runs them.
  const InstancePlan pp = instance_plan(cfg, false), dp = instance_plan(cfg, true);
  // (The prefill side's sequence limit, which SGLang resolves from its cache, plays no part.)
  const ServeMemory mem = serve_memory(m, sys, cfg, true);
  const EngineConfig& pe = pp.engine;
  const EngineConfig e = resolved_engine(m, dp.engine, mem);
  auto step = std::make_unique<StepModel>();
  step->prepare(m, sys, engine_forward(pp.forward, pe));
  const double budget = static_cast<double>(pe.max_batched_tokens), window = static_cast<double>(m.sliding_window);
  model::StepMix pre;
  pre.fused_attention = pe.fused_attention;
  double prompts = 0;  // prompts one step prefills
  if (prompt >= budget) {
    pre.add_prefill(budget, budget, window);
    prompts = budget / prompt;
  } else {
    prompts = std::floor(budget / prompt);
    for (double i = 0; i < prompts; ++i) pre.add_prefill(prompt, prompt, window);
  }
  out.prefill_rate = prompts / step_period(pe, step->time(pre, pe.mixed_graphs), pre.seqs());
  const model::ForwardConfig f = engine_forward(dp.forward, e);
  step->prepare(m, sys, f);
  const double limit = e.max_num_seqs > 0 ? static_cast<double>(e.max_num_seqs) : 2048;
  const double batch = std::max(1.0, std::floor(std::min(limit, static_cast<double>(mem.kv_tokens) / (prompt + gen))));
  const double q = static_cast<double>(cfg.spec.k + 1), k = static_cast<double>(cfg.spec.k), c = prompt + gen / 2;
  model::StepMix dec, first, rest;
  for (double i = 0; i < batch; ++i) {
    dec.add_decode(c + q, window, q);
    first.add_decode(c + 1, window), rest.add_decode(c + 1 + k / 2, window);
  }
  dec.fused_attention = first.fused_attention = rest.fused_attention = e.fused_attention;
  const GraphMode mode = decode_step_graphs(e, dec.decode_tokens);
  double device = step->time(dec, mode);
  if (cfg.spec.on()) {
    // The draft's k passes, as the simulator prices them.
    step->prepare(*cfg.spec.draft, sys, f);
    StepTimeMemo memo[2];
    device += draft_passes_s(*step, e, cfg.spec.k, first, rest, false, memo);
  }
  out.decode_rate = batch * model::tokens_per_step(cfg.spec) / (gen * step_period(e, device, batch));
  out.prefill_per_decode = out.decode_rate / out.prefill_rate;
}

ServeMemory serve_memory(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, bool decode) {
  const InstancePlan plan = instance_plan(cfg, decode);
  const model::ForwardConfig& f = plan.forward;
  const EngineConfig& e = plan.engine;
  ServeMemory mem;
  auto g = std::make_unique<model::Graph>();
  model::build_forward(m, f, sys, {static_cast<double>(f.ep), 1, 1}, *g);
  mem.capacity_bytes = sys.chip.main_capacity_bytes();
  mem.weights_bytes = analysis::weight_bytes(*g);
  mem.kv_bytes_per_token = model::kv_bytes_per_token(m, f);
  if (cfg.spec.on()) {
    // The draft's weights (an MTP layer shares the target's embedding and head) and its own
    // KV cache beside the target's, in the same blocks.
    mem.draft_weights_bytes = analysis::draft_weight_bytes(cfg.spec, sys, f, *g);
    mem.draft_kv_bytes_per_token = model::kv_bytes_per_token(*cfg.spec.draft, f);
    mem.weights_bytes += mem.draft_weights_bytes;
    mem.kv_bytes_per_token += mem.draft_kv_bytes_per_token;
  }
  // The activations of the largest step: the token budget over as many sequences as may run.
  const double ep = static_cast<double>(f.ep);
  const double budget = static_cast<double>(e.max_batched_tokens);
  const double seqs = e.max_num_seqs > 0 ? std::min(static_cast<double>(e.max_num_seqs), budget) : budget;
  mem.activations_bytes = analysis::activation_bytes(m, f, std::max(1.0, seqs / ep), std::max(1.0, budget / ep));
  mem.reserved_bytes = e.reserved_bytes;
  const double C = mem.capacity_bytes, W = mem.weights_bytes, A = mem.activations_bytes, R = mem.reserved_bytes;
  switch (e.memory_rule) {
    case MemoryRule::profiled: mem.kv_bytes = e.kv_memory_fraction * C - W - A - R; break;
    case MemoryRule::static_fraction: mem.kv_bytes = e.kv_memory_fraction * C - W - R; break;
    case MemoryRule::of_free: mem.kv_bytes = e.kv_memory_fraction * (C - W - A - R); break;
  }
  const double block_bytes = mem.kv_bytes_per_token * static_cast<double>(e.kv_block);
  // Each EP group holds the cache of its own sequences.
  const double blocks = mem.kv_bytes > 0 && block_bytes > 0 ? std::floor(mem.kv_bytes / block_bytes) * ep : 0;
  mem.kv_blocks = e.kv_blocks_override > 0 ? e.kv_blocks_override : static_cast<std::int64_t>(std::min(blocks, 1e15));
  mem.kv_tokens = mem.kv_blocks * e.kv_block;
  return mem;
}

void validate(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg) {
  const model::ForwardConfig& f = cfg.forward;
  model::validate(m, f);
  model::validate(m, cfg.spec);
  if (cfg.spec.on()) {
    try {
      model::validate(*cfg.spec.draft, f);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--draft {}: {}", cfg.spec.draft->name, e.what()));
    }
  }
  if (f.cp != 1) throw InputError("--cp: serving engines do not split a request's sequence over chips");
  if (f.attention != ops::AttentionImpl::flash) throw InputError("--attention: serving engines run flash (paged) attention kernels");
  if (f.training) throw InputError("serve: a training pass cannot be served");
  validate(cfg.engine);
  validate(cfg.workload);
  if (cfg.replicas < 1 || cfg.replicas > 4096) {
    throw InputError(fmt::format("--replicas: {} is out of range: expected 1 to 4096", cfg.replicas));
  }
  const Disagg& dg = cfg.disagg;
  if (dg.on()) {
    if (dg.prefill < 1 || dg.decode < 1 || dg.prefill + dg.decode > 4096) {
      throw InputError(fmt::format("--disagg: {}:{} is out of range: expected at least one prefill and one decode instance, "
                                   "4096 in all", dg.prefill, dg.decode));
    }
    if (cfg.replicas != 1) throw InputError("--disagg/--replicas: a disaggregated deployment counts its instances in --disagg P:D");
    if (transfer_link(sys, cfg).Bps <= 0) {
      throw InputError(fmt::format("--disagg: {} has no link between instances: pass --disagg-link-bw", sys.chip.name));
    }
  }
  if (dg.decode_tp < 0 || dg.decode_tp > 4096 || dg.decode_ep < 0 || dg.decode_ep > 4096) {
    throw InputError(fmt::format("--disagg-decode: tp={} ep={} is out of range: expected 1 to 4096", dg.decode_tp, dg.decode_ep));
  }
  if (dg.decode_tp > 0 || dg.decode_ep > 0 || dg.decode_engine) {
    if (!dg.on()) throw InputError("--disagg-decode: decode instances of their own need --disagg P:D");
    // The decode instances' plan and engine, checked as the prefill instances' are below.
    const InstancePlan dp = instance_plan(cfg, true);
    try {
      model::validate(m, dp.forward);
      if (cfg.spec.on()) model::validate(*cfg.spec.draft, dp.forward);
      validate(dp.engine);
      if ((dp.forward.tp > 1 || dp.forward.ep > 1) && sys.chip.links.empty()) {
        throw InputError(fmt::format("tp={} ep={}: {} has no link between chips", dp.forward.tp, dp.forward.ep, sys.chip.name));
      }
      comm::check_algo(sys.chip, dp.engine.collective_algo);
      if (dp.engine.preemption == Preemption::swap &&
          (sys.chip.link_index(hw::LinkScope::host) < 0 || dp.engine.policy != StepPolicy::running_first)) {
        throw InputError("preemption by swap is vLLM's (V0) mode, over a host link");
      }
    } catch (const InputError& e) {
      throw InputError(fmt::format("--disagg-decode: {}", e.what()));
    }
  }
  if (sys.chip.main_bandwidth_Bps() <= 0) throw InputError(fmt::format("--hw {}: no main memory", sys.chip.name));
  if ((f.tp > 1 || f.ep > 1) && sys.chip.links.empty()) {
    throw InputError(fmt::format("--tp/--ep: {} has no link between chips: pass --link-bw", sys.chip.name));
  }
  comm::check_algo(sys.chip, f.algo);
  comm::check_algo(sys.chip, cfg.engine.collective_algo);
  if (cfg.engine.preemption == Preemption::swap && sys.chip.link_index(hw::LinkScope::host) < 0) {
    throw InputError(fmt::format("--preemption: swap needs a host link and {} has none", sys.chip.name));
  }
  if (!(cfg.horizon_s >= 0 && cfg.horizon_s <= kMaxSimulated_s)) {
    throw InputError(fmt::format("--horizon: {} s is out of range: expected 0 to {:g} s (46 days)", cfg.horizon_s, kMaxSimulated_s));
  }
  const WorkloadSpec& w = cfg.workload;
  const bool open = w.arrival == Arrival::poisson || w.arrival == Arrival::gamma || w.arrival == Arrival::constant;
  if (open && static_cast<double>(w.requests) / w.qps > kMaxSimulated_s / 2) {
    throw InputError(fmt::format("--qps: {} requests at {:g} per second arrive over {:.3g} s: expected at most {:g} s (23 days); "
                                 "raise --qps or lower --requests",
                                 w.requests, w.qps, static_cast<double>(w.requests) / w.qps, kMaxSimulated_s / 2));
  }
  if (w.arrival == Arrival::trace && !w.trace.empty() && w.trace.back().arrival_s > kMaxSimulated_s / 2) {
    throw InputError(fmt::format("--trace: its requests span {:.3g} s: expected at most {:g} s (23 days)", w.trace.back().arrival_s,
                                 kMaxSimulated_s / 2));
  }
  if (cfg.engine.preemption == Preemption::swap && cfg.engine.policy != StepPolicy::running_first) {
    throw InputError(fmt::format("--preemption: swap is vLLM's (V0) mode; {} {}", name(cfg.engine.kind),
                                 cfg.engine.policy == StepPolicy::prefill_first ? "retracts and recomputes" : "never preempts"));
  }
  // Room for a cache block on every kind of instance.
  for (const bool decode : {false, true}) {
    if (decode && !dg.on()) break;
    const ServeMemory mem = serve_memory(m, sys, cfg, decode);
    if (mem.kv_blocks >= 1) continue;
    const InstancePlan p = instance_plan(cfg, decode);
    throw InputError(fmt::format(
        "{}--hw {}: {} x {} leaves no room for the KV cache: weights {}, activations of a {}-token step {}, reserved {} "
        "within {} of {} (try more --tp, lower --weight-dtype, or a smaller --max-batched-tokens)",
        decode ? "--disagg-decode: " : "", sys.chip.name, p.forward.tp * p.forward.ep, sys.chip.name,
        format_quantity(mem.weights_bytes, Quantity::bytes), p.engine.max_batched_tokens, format_quantity(mem.activations_bytes, Quantity::bytes),
        format_quantity(mem.reserved_bytes, Quantity::bytes), p.engine.kv_memory_fraction, format_quantity(mem.capacity_bytes, Quantity::bytes)));
  }
}

namespace {

// An open loop or a closed one holds at least this many requests at once: a closed loop its
// clients; an open loop those that arrived by the last arrival less the most the fleet can
// have finished by then. Every step lasts at least the engine's host time per step and runs
// at most its sequence limit, and a request needs a step per output token (k + 1 tokens a step
// when speculating) at the fewest its length distribution allows. A trace's span is known
// only as it is read: the run checks it then (Simulation::alloc_slot).
double least_in_system(const model::ModelConfig& m, const ServeConfig& cfg, const ServeMemory& mem, const ServeMemory& decode_mem) {
  const WorkloadSpec& w = cfg.workload;
  const double n = static_cast<double>(w.requests);
  if (w.arrival == Arrival::closed) return std::min(n, static_cast<double>(w.concurrency));
  if (w.arrival == Arrival::trace) return 0;
  const EngineConfig e0 = resolved_engine(m, instance_plan(cfg, false).engine, mem);
  const EngineConfig e1 = resolved_engine(m, instance_plan(cfg, true).engine, decode_mem);
  const double step_s = std::min(e0.step_overhead_s, e1.step_overhead_s);
  if (!(step_s > 0)) return 0;
  const double seqs = static_cast<double>(std::max(e0.max_num_seqs, e1.max_num_seqs));
  const double instances = static_cast<double>(cfg.disagg.on() ? cfg.disagg.prefill + cfg.disagg.decode : cfg.replicas);
  const bool fixed = w.gen.kind == LengthDist::Kind::fixed || w.gen.kind == LengthDist::Kind::uniform;
  const double steps = std::max(1.0, std::ceil((fixed ? w.gen.a : 1) / static_cast<double>(cfg.spec.k + 1)));
  const double span = (n - 1) / w.qps;
  return std::max(0.0, n - instances * (span / step_s) * seqs / steps);
}

// Refuses up front a run whose requests cannot fit in the memory this process may use.
void check_memory(const model::ModelConfig& m, const ServeConfig& cfg, const ServeMemory& mem, const ServeMemory& decode_mem) {
  const double limit = memory_limit_bytes();
  const double least = least_in_system(m, cfg, mem, decode_mem);
  if (!(limit > 0) || least * kBytesPerRequest <= limit / 2) return;
  throw InputError(fmt::format("serve: at least {:.4g} of the {} requests would be in the system at once, {} at {} bytes each, and this run "
                               "may use {} (half of this process's memory limit): {}",
                               least, cfg.workload.requests, format_quantity(least * kBytesPerRequest, Quantity::bytes), kBytesPerRequest,
                               format_quantity(limit / 2, Quantity::bytes),
                               cfg.workload.arrival == Arrival::closed ? "lower --concurrency"
                                                                       : "the load outruns the fleet (lower --qps or --requests, or add --replicas)"));
}

}  // namespace

ServingResult simulate(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, const RequestSink& sink,
                       const std::function<void(double)>& progress) {
  validate(m, sys, cfg);
  const ServeMemory mem = serve_memory(m, sys, cfg);
  const ServeMemory decode_mem = cfg.disagg.on() ? serve_memory(m, sys, cfg, true) : mem;  // once for every run below
  check_memory(m, cfg, mem, decode_mem);
  ServingResult result;
  {
    auto sim = std::make_unique<Simulation>(m, sys, cfg, mem, decode_mem, sink, progress);
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
    const bool met = r.slo_met && r.sustainable;
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
