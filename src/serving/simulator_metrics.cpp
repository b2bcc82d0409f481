// The simulator's statistics: requests completed or rejected and recorded, the state over
// time integrated, and the run's result summarised with its sustainability (docs/serving.md#sustainable).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/model/routing.hpp"
#include "simulation.hpp"

namespace ridgeline::serving::detail {

// A request's state released: blocks freed, out of the running list and its rank.
void Simulation::retire(Replica& r, std::int32_t qi) {
  Req& q = pool_[qi];
  r.release(q);
  r.kv_of(q).committed -= q.commit;
  q.commit = 0;
  r.remove_running(qi);
  r.leave_rank(q);
  q.phase = Phase::done;
  ++ending_;
  if (q.recorded) free_slots_.push_back(qi);
}

void Simulation::end(Replica& r, std::int32_t qi, Ps t) {
  if (!engine_outputs_next_step(tier(r).engine)) {
    complete(r, qi, t);
    return;
  }
  const bool recorded = pool_[qi].recorded;  // inside a multi-step window, when its end went out
  retire(r, qi);
  if (!recorded) r.unsent_done.push_back(qi);
}

// Its end as the client sees it (its last token at t): statistics, the sink, the next request
// of its client in a closed loop.
void Simulation::record_end(std::int32_t qi, Ps t) {
  Req& q = pool_[qi];
  q.recorded = true;
  --ending_;
  // Sent after now (engine_outputs_next_step): in the system until then, the time integrated
  // here (what advance() integrates from now on no longer counts it).
  if (t > clock_) {
    const double ahead = to_s(t - clock_);
    integrals_.in_system += ahead;
    integrals_.ending += ahead;
  }
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
  rec.emitted = q.output;
  rec.cached_tokens = q.cached;
  rec.preemptions = q.preemptions;
  rec.first_lag_s = to_s(q.first_lag);
  rec.end_lag_s = to_s(t - q.last_token);
  rec.warmup = q.warmup;
  if (!q.warmup) {
    output_lag_sum_ += rec.first_lag_s;
    unread_sum_ += to_s(q.unread);
  }
  record(rec, t);
  if (q.phase == Phase::done) free_slots_.push_back(qi);
}

// vLLM V0's asynchronous output processor (engine_outputs_next_step): the last step's outputs
// are processed while the next one runs, once it is launched, and sent then: first tokens,
// ends, and the ends of sequences that stopped inside a multi-step window (which keep their
// place in it).
void Simulation::send_outputs(Replica& r, Ps t) {
  for (const std::int32_t qi : r.unsent_first) {
    Req& q = pool_[qi];
    q.first_lag = t - q.first_token;
    q.first_token = t;
  }
  for (const std::int32_t qi : r.unsent_window) record_end(qi, t);
  for (const std::int32_t qi : r.unsent_done) record_end(qi, t);
  r.unsent_first.clear();
  r.unsent_window.clear();
  r.unsent_done.clear();
}

void Simulation::reject(std::int32_t qi, Ps t) {
  const Req& q = pool_[qi];
  // A request refused after a preemption (its recompute no longer fits an empty instance)
  // leaves with no answer: the tokens it had emitted are not counted as generated.
  output_tokens_all_ -= static_cast<double>(q.emitted);
  RequestRecord rec;
  rec.id = q.id;
  rec.arrival_s = to_s(q.arrival);
  rec.input = q.input;
  rec.output = q.output;
  rec.emitted = q.emitted;
  rec.warmup = q.warmup;
  rec.rejected = true;
  ++result_.rejected;
  record(rec, t);
  free_slots_.push_back(qi);
}

void Simulation::record(const RequestRecord& rec, Ps t) {
  --in_system_;
  ++finished_;
  // Closed loop: the user sends its next request after its think time (docs/serving.md#workloads).
  // (During a drained warm-up only its own requests: the measured ones start once they all ended.)
  if (closed_ && sent_ + static_cast<std::int64_t>(pending_.size()) < (warming_ ? cfg_.workload.warmup : total_)) {
    const double think = cfg_.workload.think.kind == ThinkTime::Kind::none ? 0 : source_.think_s();
    if (!(to_s(t) + think <= kMaxSimulated_s)) time_overflow(fmt::format("the think time of the user of request {}", rec.id + 1), t, think);
    pending_.push(t + to_ps(think) + front_end_);
  }
  if (warming_) {
    // The client starts its measured requests once every warm-up has come back: at the latest
    // of their ends, not the last recorded (vLLM V0 records an end at the time its step's
    // outputs go out, which can come after an end recorded later on another instance).
    warm_end_ = std::max(warm_end_, t);
    if (finished_ == cfg_.workload.warmup) release_measured(warm_end_);
  }
  if (sink_) sink_(rec);
  if (progress_ && (finished_ & 0xffff) == 0) progress_(static_cast<double>(finished_) / static_cast<double>(total_));
  if (window_state_ == 1) {
    // Inside the window: what the fleet served then (warm-up requests' last tokens among them).
    if (rec.rejected) ++window_rejected_;
    else ++window_served_, window_input_tokens_ += static_cast<double>(rec.input);
  }
  if (!rec.warmup && ++measured_done_ == measured_total_ && window_state_ == 2) window_done_ = true;
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
  // A request is good when it meets every per-request target (TPOT: with more than one token).
  bool good = true;
  for (std::size_t i = 0; i < s.targets.size(); ++i) {
    const SloTarget& g = s.targets[i];
    if (!g.per_request()) continue;
    const double v = g.metric == SloMetric::ttft ? rec.ttft_s : g.metric == SloMetric::tpot ? rec.tpot_s : rec.e2e_s;
    const bool ok = (g.metric == SloMetric::tpot && rec.output <= 1) || v <= g.limit_s;
    good = good && ok;
    if (cfg_.stop_when_slo_missed) {
      over_[i] += ok ? 0 : 1;
      slo_missed_ = slo_missed_ || missed(g, over_[i]);
    }
  }
  if (good) ++good_;
}

// Whether a target can no longer be met, whatever the requests still to come do. At most
// N = measured_total_ samples end in the distribution (rejected ones and single-token
// outputs are left out). The q-quantile of n samples lies between the sorted values of
// indices floor(q(n-1)) and the next: once v >= n - floor(q(n-1)) samples exceed the target,
// the value at that index does too. n - floor(q(n-1)) only grows with n, so v reaching it
// at n = N settles every n <= N. Only while samples are kept exactly (a folded histogram
// reports a bucket's middle). A mean target: the sum so far over N already exceeds it.
bool Simulation::missed(const SloTarget& g, std::int64_t over) const {
  if (!g.per_request()) return false;  // ITL: its samples (tokens) are not counted in advance
  const Distribution& d = distribution(g.metric);
  const double n = static_cast<double>(measured_total_);
  if (g.q < 0) return d.mean() * d.count() > g.limit_s * n;
  if (!d.exact() || measured_total_ > static_cast<std::int64_t>(Distribution::kExactLimit)) return false;
  return static_cast<double>(over) >= n - std::floor(g.q * (n - 1));
}

// Time-weighted state from the last event to t. The sums over replicas are kept up to date
// from the replicas touched since the last advance (whole numbers: exact), so an event
// costs the replicas it changed, not all of them.
void Simulation::advance(Ps t) {
  for (const std::int32_t i : touched_) {
    const Replica& r = replicas_[static_cast<std::size_t>(i)];
    Snapshot& sn = snapshots_[static_cast<std::size_t>(i)];
    // Waiting: for a step, or (disaggregated) for a decode instance's blocks to receive its KV.
    // Disaggregated, a decode instance's requests in a KV transfer wait too (for their KV):
    // the sustainability rule counts them with the queue (not the waiting statistics).
    const Snapshot now{r.running_count, static_cast<std::int64_t>(r.waiting.size() + r.incoming.size() + r.kv_queue.size()),
                       r.used_blocks(),
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
  integrals_.ending += static_cast<double>(ending_) * dt;
  integrals_.running += running * dt;
  integrals_.waiting += waiting * dt;
  integrals_.kv_used += kv * dt;
  if (quarter_ >= 0 && quarter_ < 4) {
    quarter_waiting_[static_cast<std::size_t>(quarter_)] += (waiting + static_cast<double>(sum_.transfer)) * dt;
    quarter_time_[static_cast<std::size_t>(quarter_)] += dt;
  }
  if (!cfg_.lean) timeline_.add(clock_, t, running, waiting, kv);
  clock_ = t;
}

void Simulation::summarise() {
  ServingResult& r = result_;
  // Every block comes back when every request has ended: a leak is a bug, not a result. (A run
  // stopped early can have sent a request's end while its place in a multi-step window runs on:
  // ending_ < 0.)
  if (finished_ == total_ && ending_ == 0) {
    for (const Replica& rep : replicas_) {
      for (std::size_t k = 0; k < rep.kv.size(); ++k) {
        const Replica::KvPool& p = rep.kv[k];
        if (p.free != p.total || rep.running_count != 0 || p.committed != 0) {
          throw std::logic_error(fmt::format("serve: replica {} (KV pool {}) ended with {} of {} KV blocks free, {} running, "
                                             "{} committed", rep.index, k, p.free, p.total, rep.running_count, p.committed));
        }
      }
    }
  }
  r.ttft = ttft_.summary();
  r.tpot = tpot_.summary();
  r.e2e = e2e_.summary();
  if (measured_ > 0) {
    r.output_lag_s = output_lag_sum_ / static_cast<double>(measured_);
    r.unread_s = unread_sum_ / static_cast<double>(measured_);
  }
  if (itl_on_) r.itl = itl_.summary();
  if (!cfg_.lean) {
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
    r.disagg.descriptors_per_request_mean = descriptors_sum_ / n;
    r.disagg.decode_hit_tokens_mean = hit_tokens_sum_ / n;
  }
  r.simulated_requests = finished_;
  r.measured_requests = measured_;
  // A window's run stops once its measured requests end: the cool-down's left are not unfinished.
  r.unfinished = window_ ? measured_arrivals_ - measured_done_ : total_ - finished_;
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
  // A window's throughput: what the fleet served between its first and last measured arrival,
  // under the load before and after it (no ramp, no drain).
  const double window_span = window_state_ == 2 ? close_s_ - open_s_ : 0;
  if (window_span > 0) {
    r.measured_span_s = window_span;
    r.requests_per_s = static_cast<double>(window_served_) / window_span;
    r.input_tokens_per_s = window_input_tokens_ / window_span;
    r.output_tokens_per_s = window_tokens_ / window_span;
    r.output_tokens_per_s_per_gpu = r.output_tokens_per_s / r.gpus;
    r.goodput_requests_per_s = r.slo_attainment * r.requests_per_s;
  }
  r.slo_met = cfg_.slo.any() && measured_ > 0;
  for (const SloTarget& g : cfg_.slo.targets) {
    const Distribution& d = distribution(g.metric);
    r.slo_met = r.slo_met && (g.q < 0 ? d.mean() : d.quantile(g.q)) <= g.limit_s;
  }
  r.prefix_hit_rate = input_tokens_ > 0 ? cached_tokens_ / input_tokens_ : 0;
  // Time averages over the run, or over a window.
  const double T = window_span > 0 ? window_span : to_s(clock_);
  Integrals in = integrals_;
  if (window_span > 0) {
    in.in_system = at_close_.in_system - at_open_.in_system, in.running = at_close_.running - at_open_.running;
    in.waiting = at_close_.waiting - at_open_.waiting, in.kv_used = at_close_.kv_used - at_open_.kv_used;
    in.ending = at_close_.ending - at_open_.ending;
  }
  if (T > 0) {
    r.mean_in_system = in.in_system / T;
    r.mean_running = in.running / T;
    r.mean_waiting = in.waiting / T;
    r.mean_ending = in.ending / T;
    r.kv_utilisation_mean = in.kv_used / T;
  }
  // The fullest cache at its fullest: each pool's peak (a replica's, or an attention rank's).
  for (const Replica& rep : replicas_) {
    for (const Replica::KvPool& p : rep.kv) {
      if (p.total > 0) r.kv_utilisation_max = std::max(r.kv_utilisation_max, static_cast<double>(p.peak) / static_cast<double>(p.total));
    }
  }
  r.mean_step_s = r.steps > 0 ? step_time_sum_ / r.steps : 0;
  const double dsteps = r.decode_steps + r.mixed_steps;
  r.mean_decode_batch = dsteps > 0 ? decode_batch_sum_ / dsteps : 0;
  if (decode_batch_sum_ > 0 && !cfg_.lean) compose_decode_step(r);
  if (prompt_sums_.chunks > 0 && !cfg_.lean) compose_prompt_step(r);
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
    // A window: the requests that ended inside it over its span (the load went on after it).
    if (window_span > 0) backlog_fraction_ = static_cast<double>(window_served_ + window_rejected_) / window_span / offered;
  }
  summarise_window(r);
  r.kv_slack_blocks = cache_slack_;
  for (const Replica& rep : replicas_) {
    r.kv_slack_blocks = std::min(r.kv_slack_blocks, rep.kv_slack);
    r.kv_refused = r.kv_refused || rep.kv_refused;
  }
  r.kv_refused = r.kv_refused || result_.rejected_by.cache > 0;
  r.unsustainable = sustainable();
  r.sustainable = r.unsustainable == Unsustainable::none;
  r.stopped_slo_missed = slo_missed_;
  if (slo_missed_) r.slo_met = false;
}

// The waiting queue's trend over the measured arrivals (open loop): with l1..l4 its
// time-averaged length in each quarter, the least-squares line through them,
// (3 (l4 - l1) + (l3 - l2)) / 10 a quarter, rises over the four quarters by more than
// kQueueTrend of the measured arrivals plus two requests. A queue growing by g per arrival
// (arrivals at f times the capacity: g = 1 - 1/f) rises by g N over N arrivals: caught from
// g = 1% (f = 1.01) as N grows. Random arrivals make a growing queue's quarters fall now and
// then, so no quarter-by-quarter rise is asked for (docs/serving.md#steady-state: Poisson
// arrivals against one server). Only over quarters of twice the requests' mean E2E less their
// mean wait in the queue at least: shorter, the count in the system rises as the fleet fills
// (requests of hours arriving within seconds), whatever the load.
bool Simulation::queue_trend() const {
  if (closed_) return false;
  std::array<double, 4> l{};
  for (std::size_t i = 0; i < 4; ++i) {
    if (quarter_time_[i] <= 0) return false;
    l[i] = quarter_waiting_[i] / quarter_time_[i];
    // A quarter shorter than twice a request's mean life once running is the fleet filling,
    // not a trend (its life less its wait in the queue: an overloaded queue's waits grow with it).
    if (quarter_time_[i] < 2 * (e2e_.mean() - queue_.mean())) return false;
  }
  const double rise = 4 * (3 * (l[3] - l[0]) + (l[2] - l[1])) / 10;
  return rise > kQueueTrend * static_cast<double>(measured_total_) + 2;
}

namespace {

// `mix` launched as `mode`, priced op by op into `c`: the device's time (the kernels alone:
// the host's launches, the step's floor when eager, are a part of their own, docs/serving.md#eager-host),
// its fixed times and latencies, its kernels and those the host launches; `busiest`: its
// busiest attention data-parallel rank's rows where the ranks pad to it (step_reference).
void compose_step(const model::ModelConfig& m, const hw::System& sys, const model::ForwardConfig& f, const model::StepMix& mix,
                  GraphMode mode, StepComposition& c, double busiest = 0) {
  auto g = std::make_unique<model::Graph>();
  analysis::PhaseTimes t;
  step_reference(m, sys, f, mix, mode, *g, t, busiest, &c.by_class_s);
  c.launch = mode;
  const HostLaunches launched = host_launch_counts(*g, mode);
  c.host_launches = launched.attention + launched.mla_op + launched.other;
  c.compiled_launches = f.compiled_host_s > 0 ? launched.other : 0;
  c.mla_op_launches = f.mla_op_host_s > 0 ? launched.mla_op : 0;
  c.mla_op_calls = f.mla_op_call_host_s > 0 ? launched.mla_op_calls : 0;
  c.eager_host_s = host_launch_s(launched, f);
  if (c.eager_host_s > 0) {
    model::ForwardConfig device_only = f;
    device_only.eager_host_s = device_only.compiled_host_s = device_only.mla_op_host_s = device_only.mla_op_call_host_s = 0;
    step_reference(m, sys, device_only, mix, mode, *g, t, busiest, &c.by_class_s);
  }
  c.device_s = t.t_realistic_s;
  c.kernel_fixed_s = t.kernel_fixed_s;
  c.link_latency_s = t.link_latency_s;
  c.kernels = g->kernels();
}

}  // namespace

// A decode step of the mean batch at the mean context, built op by op (step_reference).
void Simulation::compose_decode_step(ServingResult& r) const {
  // The instances that decode: every replica, or the decode instances.
  const Tier& k = *tiers_[tiers_[1] ? 1 : 0];
  const EngineConfig& engine = k.engine;
  DecodeStepComposition& d = r.decode_step;
  d.sequences = std::max(1.0, std::round(r.mean_decode_batch));
  d.context = std::max(1.0, std::round(decode_context_sum_ / decode_batch_sum_));
  const double q = static_cast<double>(cfg_.spec.k + 1);
  const model::ForwardConfig f = engine_forward(k.plan.forward, engine);
  // Launched as the simulator launches it: attention data-parallel ranks by the busiest rank's
  // sequences and tokens (the mean batch spread evenly over them), or as most of the run's
  // decode steps were where the ranks' own batches chose it (TensorRT-LLM without padding runs
  // ranks of unequal batches eagerly: step_graphs).
  const std::size_t most = static_cast<std::size_t>(
      std::max_element(decode_launches_.begin(), decode_launches_.end()) - decode_launches_.begin());
  const bool by_steps = k.ctx.groups > 1 && decode_launches_[most] > 0;
  auto graphs = [&](double seqs, double tokens) {
    if (by_steps) return static_cast<GraphMode>(most);
    return decode_step_graphs(engine, rank_tokens(seqs, k.ctx.groups), rank_tokens(tokens, k.ctx.groups));
  };
  // The mean batch, `queries` tokens per sequence at context `kv`.
  auto batch = [&](double queries, double kv) {
    model::StepMix mix;
    for (double i = 0; i < d.sequences; ++i) mix.add_decode(kv, k.ctx.window, queries);
    mix.fused_attention = engine.fused_attention;
    return mix;
  };
  if (cfg_.spec.on()) {
    // The draft's passes (as draft_time prices them) and the plain step, at the same batch and
    // context.
    auto g = std::make_unique<model::Graph>();
    const model::ForwardConfig fd = draft_forward(f, cfg_.spec.mtp);
    auto step = [&](const model::ModelConfig& m, double queries, double kv) {
      const model::StepMix mix = batch(queries, kv);
      analysis::PhaseTimes t;
      step_reference(m, sys_, &m == cfg_.spec.draft ? fd : f, mix, graphs(mix.decode_seqs, mix.decode_tokens), *g, t);
      return t.t_realistic_s;
    };
    SpeculationCost& s = r.speculation;
    const model::ModelConfig& dm = *cfg_.spec.draft;
    const double c = std::max(0.0, d.context - q);  // cached context before the step
    s.k = cfg_.spec.k;
    s.tokens_per_step = model::tokens_per_step(cfg_.spec);
    s.draft_s = step(dm, 1, c + 1) + (q > 2 ? (q - 2) * step(dm, 1, c + 1 + (q - 1) / 2) : 0);
    s.plain_s = step(m_, 1, c + 1);
    // The verification step as the simulator prices it (the eager floor included).
    s.verify_s = step(m_, q, d.context);
    s.speedup = s.plain_s / ((s.verify_s + s.draft_s) / s.tokens_per_step);
    const auto even = model::break_even_accept(s.k, (s.verify_s + s.draft_s) / s.plain_s);
    s.break_even = even.has_value();
    s.break_even_accept = even.value_or(1);
  }
  const model::StepMix mean = batch(q, d.context);
  const GraphMode mode = graphs(d.sequences, d.sequences * q);
  compose_step(m_, sys_, f, mean, mode, d);
  d.padded_sequences = padded_sequences(f, mean, mode);
  // The imbalance the tier's steps were priced with (its StepModel, prepared from the same forward pass).
  const model::RoutingImbalance& routing = k.step.routing();
  if (m_.is_moe() && f.ep_size() > 1) {
    d.expert_imbalance = routing.at(d.sequences * q);
    const double T = d.sequences * q;
    d.expert_imbalance_source =
        !routing.model()   ? std::string("--expert-imbalance")
        : routing.measured ? fmt::format("measured: {}; its skew extrapolated to {} GPUs and the step's {:.0f} token{} (docs/serving.md#moe-layouts)",
                                         m_.moe.routing.source, f.ep_size(), T, T == 1 ? "" : "s")
                           : fmt::format("a balanced router's expected busiest of {} GPUs for the step's {:.0f} token{} (docs/serving.md#moe-layouts)",
                                         f.ep_size(), T, T == 1 ? "" : "s");
  }
  // A multi-step window (vLLM V0) pays the scheduler once in n decode steps: a step's share.
  d.host_s = (engine.step_overhead_s + engine.per_request_overhead_s * d.sequences) * decode_schedule_share(engine);
}

// The mean step that computes prompt tokens, built op by op: its mean count of chunks, each of
// the mean chunk's tokens at the mean context they end at, and the decodes it carries (means,
// fractional counts: 1.6 chunks of 1000 tokens are 1600 tokens, not 2000), launched as the mean
// of the tokens each step's launch was chosen by. With attention data-parallel ranks the step's
// work is spread evenly over them, as the decode step's.
void Simulation::compose_prompt_step(ServingResult& r) const {
  // The instances that prefill: every replica, or the prefill instances.
  const Tier& k = *tiers_[0];
  const EngineConfig& engine = k.engine;
  PromptStepComposition& p = r.prompt_step;
  const PromptSums& s = prompt_sums_;
  p.steps = s.steps;
  p.chunks = s.chunks / s.steps;
  p.chunk_tokens = std::max(1.0, std::round(s.tokens / s.chunks));
  p.chunk_context = std::max(p.chunk_tokens, std::round(s.positions / s.chunks));
  p.decodes = s.decodes / s.steps;
  p.decode_context = s.decodes > 0 ? std::max(1.0, std::round(s.decode_context / s.decodes)) : 0;
  p.launch_tokens = std::ceil(s.launch_tokens / s.steps);
  model::StepMix mix;
  mix.add_prefill(p.chunk_tokens, p.chunk_context, k.ctx.window);
  mix.scale(p.chunks);
  if (p.decodes > 0) {
    model::StepMix decodes;
    decodes.add_decode(p.decode_context, k.ctx.window, static_cast<double>(cfg_.spec.k + 1));
    decodes.scale(p.decodes);
    mix.add_decodes(decodes);
  }
  mix.fused_attention = engine.fused_attention;
  const model::ForwardConfig f = engine_forward(k.plan.forward, engine);
  // (Ranks that pad to their busiest: to the mean of the busiest rank's tokens, as they ran.)
  compose_step(m_, sys_, f, mix, mixed_step_graphs(engine, p.launch_tokens), p, p.launch_tokens);
  p.host_s = engine.step_overhead_s + engine.per_request_overhead_s * mix.seqs();
}

void Simulation::rate_match(ServingResult& r) const {
  const double n = static_cast<double>(measured_);
  disagg_rates(m_, sys_, cfg_, std::max(1.0, input_tokens_ / n), std::max(1.0, output_tokens_ / n), r.disagg);
}

// The waiting queue stays bounded: over the second and the last quarter of the measured
// arrivals, the mean number of requests waiting (or in a KV transfer) does not grow by more
// than half plus a margin of 2% of a quarter's arrivals; and the run served at least half
// the rate it was offered (docs/serving.md#sustainable).
Unsustainable Simulation::sustainable() const {
  if (result_.unfinished > 0) return Unsustainable::unfinished;
  if (measured_total_ > 0 && measured_ == 0) return Unsustainable::nothing_served;  // every measured request rejected
  if (closed_) return Unsustainable::none;
  // A run whose requests, once the fastest one's own latency is set aside, finished at under
  // half the rate they arrived at did not sustain it, whatever its queue did (requests held
  // behind steps of hours, or arriving faster than any step).
  if (backlog_fraction_ < kMinServedFraction) return Unsustainable::served_fraction;
  // A queue rising through the measured arrivals: a fleet a few percent beyond its capacity,
  // whose slow growth the rule below, relative to the queue it started from, lets pass.
  if (queue_trend()) return Unsustainable::queue_grows;
  // A window opened without the trend stopping while the queue still grew (over quarters of
  // the whole warm-up, longer than the window's).
  if (window_forced_ && queue_grew_) return Unsustainable::queue_grows;
  if (quarter_time_[1] <= 0 || quarter_time_[3] <= 0) return Unsustainable::none;
  const double l2 = quarter_waiting_[1] / quarter_time_[1], l4 = quarter_waiting_[3] / quarter_time_[3];
  return l4 <= 1.5 * l2 + 4 + 0.02 * static_cast<double>(measured_total_) / 4 ? Unsustainable::none : Unsustainable::queue_grows;
}

}  // namespace ridgeline::serving::detail
