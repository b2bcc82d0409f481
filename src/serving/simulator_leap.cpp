// The simulator's leaps: a replica's quiet decode steps — nothing changes in them but the
// contexts growing — priced in one loop, only the last one's end an event; each step's end
// and start applied when something reads the replica (docs/serving.md#simulator).
#include <algorithm>

#include "simulation.hpp"

namespace ridgeline::serving::detail {

Ps Simulation::start_leap(Replica& r, Tier& k) {
  StepPlan& p = r.plan;
  // A decode-only step, and nothing else for the replica to schedule.
  if (!p.decode || !p.chunks.empty() || p.extra_s != 0 || p.preempted != 0 || !p.scheduled || !r.waiting.empty() ||
      !r.incoming.empty() || !r.prefilling.empty() || !r.arrived.empty()) {
    return r.busy_until;
  }
  const std::int64_t most = r.quiet_steps(kLeapMost);
  if (most <= 0) return r.busy_until;
  Ps* end = leap_ends(r);
  double* period = leap_periods(r);
  double* keys = leap_keys(r);
  end[0] = r.busy_until;
  // Step j of the leap (index dstep + j) as start_step would plan and price it: its decodes
  // j tokens further (G(d) = d: the same whole numbers), after a step that left work (not idle).
  // The steps' tokens and sequences are the same: the part of their price that reads only
  // those (StepTimeMemo::base) is the same too.
  const EngineConfig& e = k.engine;
  // Each step's mix is the plan's with its decodes' sums changed, in place (a copy of the whole
  // mix at every leap was a tenth of this function's time); the plan's own are put back after.
  model::StepMix& mix = p.mix;
  const double seqs0 = mix.decode_seqs, tokens0 = mix.decode_tokens;
  const ops::AttentionCounts full0 = mix.decode_full, window0 = mix.decode_window;
  const GraphMode mode = decode_step_graphs(e, mix.decode_seqs, mix.decode_tokens);
  const double base = k.memo.base(k.step, mix, mode);
  // vLLM V0's host processes the last step's outputs (the same sequences') once it has launched
  // this one's forward, as start_step prices it.
  const double launch = engine_outputs_next_step(e) ? k.step.eager_host_s(mix, mode) : 0;
  std::int32_t n = 0;
  // One cohort without a window (most leaps): only the attention counts change from step to
  // step, and they are computed as add_decodes computes them.
  const bool alone = r.leap_counts_alone();
  const double at = alone ? r.leap_at() : 0;
  // The instance the next arrival goes to (next_routed) ends its leap then (end_leap): a step
  // starting then or later is planned again, so it is not priced here (it was priced for
  // nothing). An arrival turned away before routing ends no leap and leaves the turn: the leap
  // is only shorter, its steps the same.
  const Ps cut = next_routed() == r.index ? next_arrival_time() : kNever;
  for (std::int64_t j = 1; j <= most && end[j - 1] < cut; ++j) {
    if (alone && j > 1) {
      mix.decode_full = mix.decode_window = r.leap_counts(at, static_cast<double>(j));
    } else {
      mix.clear_decodes();
      r.add_decodes(mix, 1, static_cast<double>(j));
    }
    const double device = k.step.with_attention(base, mix, mode) + p.extra_s;
    const double s = step_period(e, device, mix.seqs(), false, 1, launch);
    if (!(s <= kMaxSimulated_s - to_s(end[j - 1]))) break;  // start_step says why
    end[j] = end[j - 1] + std::max<Ps>(1, to_ps(s));
    period[j] = s;
    keys[j] = mix.decode_full.keys;
    n = static_cast<std::int32_t>(j);
  }
  mix.decode_seqs = seqs0;
  mix.decode_tokens = tokens0;
  mix.decode_full = full0;
  mix.decode_window = window0;
  if (n == 0) return r.busy_until;
  r.leap_k = n;
  r.leap_f = 0;
  r.leap_s = 1;
  ++leaping_;
  return end[n];
}

void Simulation::catch_up(Replica& r, Ps t, bool starts_at_t) {
  const Ps* end = leap_ends(r);
  const double* periods = leap_periods(r);
  const double* keys = leap_keys(r);
  Scheduler& scheduler = *tier(r).scheduler;
  const std::int64_t every = tier(r).engine.recv_interval;
  // The blocks the steps applied here take are counted by the next advance from clock_ on: each
  // step's are added to the KV integral over [at, clock_) (taken before clock_), or taken off
  // over [clock_, at) (a step ahead of the last advance: the run stopping at its horizon). On
  // the timeline, those taken before clock_ are a staircase: `taken` blocks since `from`.
  const double per_block = all_blocks_ > 0 ? 1 / static_cast<double>(all_blocks_) : 0;
  std::int64_t taken = 0;
  Ps from = 0;
  for (;;) {
    if (r.leap_s == r.leap_f + 1) {
      // Step leap_f in flight: its end (the leap's last is an event of its own).
      if (r.leap_f >= r.leap_k || end[r.leap_f] > t) break;
      emit_decode(r, end[r.leap_f]);
      r.ahead = true;  // its sequences go on
      note_outputs(r);  // (vLLM V0: the outputs the next step processes are this one's, as finish_step notes them)
      ++r.leap_f;
    } else {
      // Step leap_s starts as the one before ends, as start_step would count it.
      const std::int32_t j = r.leap_s;
      const Ps at = end[j - 1];
      if (at > t || (at == t && !starts_at_t)) break;
      r.now = at;
      r.busy_until = end[j];
      ++result_.steps;
      ++result_.decode_steps;
      step_time_sum_ += periods[j];
      decode_batch_sum_ += static_cast<double>(r.n_decode);
      decode_context_sum_ += keys[j];
      const std::int64_t used = r.used_blocks();
      // A decode step's weight toward SGLang's next read of its socket, which finds nothing (an
      // arrival ends the leap): start_step's count.
      if (every > 1 && ++r.recv_count >= every) r.recv_count = 0;
      scheduler.quiet_decode(r);
      ++r.leap_s;
      const std::int64_t blocks = r.used_blocks() - used;
      if (blocks == 0) continue;
      touch(r);
      const double kv = static_cast<double>(blocks) * per_block;
      integrals_.kv_used += kv * to_s(clock_ - at);
      if (cfg_.lean) continue;
      if (at < clock_) {
        if (taken != 0) timeline_.add_kv(from, at, static_cast<double>(taken) * per_block);
        taken += blocks;
        from = at;
      } else {
        timeline_.add_kv(clock_, at, -kv);
      }
    }
  }
  if (taken != 0) timeline_.add_kv(from, clock_, static_cast<double>(taken) * per_block);
}

void Simulation::end_leap(Replica& r, Ps t) {
  catch_up(r, t, false);
  if (r.leap_s == r.leap_f) {
    // Its step ended at t; the next starts once every event at t is in.
    r.busy = false;
    mark(r);
    steps_.set(r.index, kNever);
  } else {
    if (r.leap_f > 0) {
      // The step in flight as start_step planned it (the first is).
      StepPlan& p = r.plan;
      p.mix.clear_decodes();
      r.add_decodes(p.mix, 1);
    }
    if (steps_.end(r.index) != r.busy_until) steps_.set(r.index, r.busy_until);
  }
  r.leap_k = r.leap_f = 0;
  r.leap_s = 1;
  --leaping_;
}

Ps Simulation::catch_up_all(Ps t, bool starts_at_t) {
  Ps last = -1;
  if (leaping_ == 0) return last;
  for (Replica& r : replicas_) {
    if (r.leap_k == 0) continue;
    catch_up(r, t, starts_at_t);
    if (r.leap_f > 0) last = std::max(last, leap_ends(r)[r.leap_f - 1]);
  }
  return last;
}

}  // namespace ridgeline::serving::detail
