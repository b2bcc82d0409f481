// The simulator's arrivals, routing and admission: requests drawn or read, checked against
// what an instance could ever serve, sent to a replica's queue (docs/serving.md#simulator).
#include <fmt/format.h>

#include <algorithm>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "simulation.hpp"

namespace ridgeline::serving::detail {

void Simulation::draw_next() {
  if (closed_) {
    // Closed loop: lengths from the source, arrival when a client is free.
    has_next_ = false;
    return;
  }
  has_next_ = source_.next(next_);
  if (has_next_) ++drawn_;
  // A trace's requests within half the time a run can simulate (synthetic arrivals: checked
  // in validate() from their count and rate; a random sum may pass it a little).
  const bool trace = cfg_.workload.arrival == Arrival::trace;
  // A window's run sends requests only while they arrive within half the time it can simulate.
  if (window_ && has_next_ && !(next_.arrival_s <= kMaxSimulated_s / 2)) has_next_ = false;
  if (has_next_ && !(next_.arrival_s <= (trace ? kMaxSimulated_s / 2 : kMaxSimulated_s))) {
    if (!trace) time_overflow(fmt::format("the arrival of request {}", sent_ + 1), 0, next_.arrival_s);
    throw InputError(fmt::format("--trace: request {} arrives {:.3g} s after the first: expected at most {:g} s (23 days)", sent_ + 1,
                                 next_.arrival_s, kMaxSimulated_s / 2));
  }
  // A drained warm-up's requests sent: the first measured one waits for them all to end.
  if (has_next_ && warming_ && drawn_ > cfg_.workload.warmup) {
    held_ = true;
    next_ps_ = kNever;
    return;
  }
  if (has_next_ && shift_ != 0 && !(next_.arrival_s + to_s(shift_) <= kMaxSimulated_s)) {
    time_overflow(fmt::format("the arrival of request {}, after the warm-up drained", drawn_), 0, next_.arrival_s + to_s(shift_));
  }
  next_ps_ = has_next_ ? to_ps(next_.arrival_s) + shift_ + front_end_ : kNever;
}

// A drained warm-up's last request ended at t (the latest end of its requests, which may lie
// after the clock: an end sent with the next step's outputs, Simulation::record): the measured
// requests start at t, on an idle fleet, as a benchmark client starts its run once its warm-up
// requests have returned. A closed loop's clients all send at once; an open loop's arrivals
// shift so that the first measured one is sent at t, the gaps after it kept.
void Simulation::release_measured(Ps t) {
  warming_ = false;
  if (closed_) {
    send_clients(t, total_ - cfg_.workload.warmup);
    return;
  }
  if (!held_) return;
  held_ = false;
  shift_ = t - to_ps(next_.arrival_s);
  next_ps_ = t + front_end_;
}

void Simulation::send_clients(Ps t, std::int64_t n) {
  for (std::int64_t i = 0; i < cfg_.workload.concurrency && i < n; ++i) pending_.push(t + front_end_);
}

void Simulation::arrive(Ps t) {
  Request r;
  if (closed_) {
    pending_.pop();
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
  if (cfg_.spec.on() && cfg_.accept_spread > 0) {
    // Its acceptance class, from its id and the seed (splitmix64): the same request in the same class in every run.
    std::uint64_t h = static_cast<std::uint64_t>(id) + 0x9e3779b97f4a7c15ULL * (cfg_.workload.seed + 1);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    q.cohort = static_cast<std::int32_t>(h % model::kAcceptClasses);
  }
  q.arrival = t - front_end_;  // sent then; the scheduler sees it now (docs/serving.md#front-end)
  q.input = r.input;
  q.output = r.output;
  q.group = dense_group(r.prefix_group);
  q.prefix_tokens = std::min(r.prefix_tokens, r.input);
  q.target = r.input;
  q.warmup = !measure_arrival(id, t);
  if (!q.warmup) {
    ++measured_arrivals_;
    first_arrival_measured_ = std::min(first_arrival_measured_, to_s(t));
    last_measured_arrival_ = std::max(last_measured_arrival_, to_s(t));
  }
  ++in_system_;
  // The quarter of the measured arrivals now coming in (sustainability); after the last, 4.
  if (!q.warmup) {
    const std::int64_t k = measured_total_ > 0 ? (measured_arrivals_ - 1) * 4 / measured_total_ : 0;
    quarter_ = measured_arrivals_ >= measured_total_ ? 4 : static_cast<int>(std::min<std::int64_t>(k, 3));
  } else if (window_state_ == 2) {
    quarter_ = 4;
  }
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
  // The least-loaded choice reads every replica's tokens left (the least-loaded router, and the
  // prefix router for a request of no group): their leaps' steps to t first.
  if (leaping_ > 0 && cfg_.router != Router::round_robin) catch_up_all(t, false);
  Replica& rep = route(q, r.prefix_group);
  if (rep.leap_k > 0) end_leap(rep, t);  // it schedules this request from its next step
  q.replica = rep.index;
  rep.place(q);  // its attention data-parallel rank, from the replica's loads now
  rep.know_group(q);
  // An engine that schedules one step ahead fixed the next step's batch when the running
  // step started: the request waits for the one after (docs/serving.md#host-time). One that
  // reads its socket only every few steps holds it until then (docs/serving.md#recv-interval),
  // also when it arrives as a step ends with more to run (the next step starts at that instant:
  // the engine's loop reads before it, gated).
  const EngineConfig& e = tier(rep).engine;
  const bool gated = e.recv_interval > 1 && (rep.busy || (rep.ahead && rep.busy_until == t));
  if ((rep.busy && e.overlap_scheduling) || gated) {
    rep.incoming.push_back(qi);
    rep.incoming_changed(q, 1);
  } else {
    rep.waiting.push_back(qi);
    rep.waiting_changed(q, 1);
  }
  rep.outstanding_tokens += q.input + q.output;
  touch(rep);
  mark(rep);
}

// Whether an instance of tier k could ever serve q: it fits the cache alone (with the drafts
// its last step verifies), and (fits_step) a whole prompt fits one step's budget when
// prompts are not chunked (TensorRT-LLM's max_input_len <= max_num_tokens; vLLM without
// chunked prefill). vLLM may preempt it, and then recomputes its prompt and outputs in one
// chunk too.
bool Simulation::fits_cache(const Tier& k, const Req& q) {
  // Ranks with pools of their own (ranks_apart): q's rank's pool (Replica::rank_of). Its rank is
  // chosen after this check, from the loads of the replica it is routed to (Replica::place): the
  // smallest pool then, the last rank's (all the same but for a --kv-blocks override not
  // divisible by the ranks); a disaggregated instance's rank id mod ranks.
  const std::int64_t ranks = k.ctx.groups;
  const std::int64_t rank = cfg_.disagg.on() ? q.id % ranks : ranks - 1;
  const std::int64_t blocks = ranks_apart(k.engine, ranks) ? rank_pool_blocks(k.mem.kv_blocks, ranks, rank) : k.mem.kv_blocks;
  const std::int64_t room = blocks - k.mem.kv_layout.blocks_for(q.input + q.output + cfg_.spec.k);
  if (room >= 0) cache_slack_ = std::min(cache_slack_, static_cast<double>(room));
  return room >= 0;
}

bool Simulation::fits_step(const Tier& k, const Req& q) const {
  return fits_budget(k.engine, static_cast<double>(q.input), static_cast<double>(q.output));
}

// A prefix group's index among the groups seen so far (-1: none): the replicas' tables hold
// the groups that occur, not every id up to the largest (a trace's ids, or 2^24 synthetic ones).
std::int32_t Simulation::dense_group(std::int32_t group) {
  if (group < 0) return -1;
  return dense_groups_.try_emplace(group, static_cast<std::int32_t>(dense_groups_.size())).first->second;
}

// An arriving request's replica (disaggregated: its prefill instance); `group`: its prefix
// group as drawn or read (the prefix router hashes it).
Replica& Simulation::route(const Req& q, std::int32_t group) {
  const std::size_t n = routed_;
  if (n > 1 && cfg_.router == Router::prefix && q.group >= 0) {
    // The group's replica: its prefix is cached there.
    std::uint64_t h = static_cast<std::uint64_t>(group) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    return replicas_[static_cast<std::size_t>(h % n)];
  }
  return pick(0, n, rr_);
}

std::int32_t Simulation::next_routed() const {
  if (routed_ == 1) return 0;
  if (cfg_.router == Router::round_robin) return static_cast<std::int32_t>(rr_ % routed_);  // pick's turn
  return -1;
}

// One of the instances [first, first + n): in turn (`turn` counts them) under round-robin,
// else the one with the fewest tokens still to compute.
Replica& Simulation::pick(std::size_t first, std::size_t n, std::size_t& turn) {
  if (n == 1) return replicas_[first];
  if (cfg_.router == Router::round_robin) return replicas_[first + turn++ % n];
  std::size_t best = first;
  for (std::size_t i = first + 1; i < first + n; ++i) {
    if (replicas_[i].outstanding_tokens < replicas_[best].outstanding_tokens) best = i;
  }
  return replicas_[best];
}

std::int32_t Simulation::alloc_slot() {
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

}  // namespace ridgeline::serving::detail
