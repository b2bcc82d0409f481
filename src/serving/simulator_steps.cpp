// The simulator's engine steps: each kind of instance's step pricing and scheduler, a step
// planned, priced and started, and its end: tokens emitted, prompts completed (docs/serving.md#simulator).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "ridgeline/core/error.hpp"
#include "simulation.hpp"

namespace ridgeline::serving::detail {

namespace {

// The counts a step's launch is chosen by: the whole step's tokens (with prompt chunks, all of
// them; else its decode tokens) and decode sequences, or with attention data-parallel ranks the
// most any rank runs. Each rank runs its own forward, padded to the largest (vLLM's
// num_tokens_across_dp; SGLang's global_num_tokens).
struct LaunchCounts {
  double tokens = 0, seqs = 0;
  bool unequal = false;  // the ranks' decode batches differ (an idle rank's: its one dummy request)
};

LaunchCounts launch_counts(bool chunks, const model::StepMix& whole, const model::StepMix* ranks, std::size_t n) {
  if (n == 0) return {chunks ? whole.tokens() : whole.decode_tokens, whole.decode_seqs, false};
  LaunchCounts c;
  double fewest = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < n; ++g) {
    c.tokens = std::max(c.tokens, chunks ? ranks[g].tokens() : ranks[g].decode_tokens);
    c.seqs = std::max(c.seqs, ranks[g].decode_seqs);
    fewest = std::min(fewest, ranks[g].decode_seqs > 0 ? ranks[g].decode_seqs : 1);
  }
  c.unequal = fewest < std::max(c.seqs, 1.0);
  return c;
}

// How a step is launched (graphs, pieces or eagerly): a step with prompt chunks by its tokens, a
// decode-only step by its sequences and tokens (decode_step_graphs). TensorRT-LLM without
// padding (its default) replays a graph under attention data parallelism only when every rank's
// batch is the same size (maybe_get_cuda_graph: is_all_gen_only and all_batch_size_equal over the
// ranks' tp_allgather; an idle rank holds one dummy request, _pad_attention_dp_dummy_request),
// else every rank runs eagerly; with padding on, _get_padded_batch first pads every rank to the
// largest (docs/serving.md#rank-padding).
GraphMode step_graphs(const EngineConfig& e, bool chunks, const LaunchCounts& c) {
  if (chunks) return mixed_step_graphs(e, c.tokens);
  if (c.unequal && graphs_need_equal_ranks(e)) return mixed_step_graphs(e, c.tokens);
  return decode_step_graphs(e, c.seqs, c.tokens);
}

}  // namespace

double draft_passes_s(const StepModel& draft, const EngineConfig& e, int k, const model::StepMix& first, const model::StepMix& rest,
                      bool chunks, StepTimeMemo (&memo)[2], std::size_t ranks, const model::StepMix* first_ranks,
                      const model::StepMix* rest_ranks, StepModel::RankMemo* rank_memo) {
  double t = 0;
  if (first.seqs() > 0) {
    const GraphMode mode = step_graphs(e, chunks, launch_counts(chunks, first, first_ranks, ranks));
    t += ranks > 0 ? draft.slowest(first_ranks, ranks, first, mode, &rank_memo[0]) : memo[0].time(draft, first, mode);
  }
  if (k > 1 && rest.decode_seqs > 0) {
    const GraphMode mode = step_graphs(e, false, launch_counts(false, rest, rest_ranks, ranks));
    t += static_cast<double>(k - 1) * (ranks > 0 ? draft.slowest(rest_ranks, ranks, rest, mode, &rank_memo[1]) : memo[1].time(draft, rest, mode));
  }
  return t;
}

Tier::Tier(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, const ServeMemory& memory, bool decode,
           std::vector<Req>& pool)
    : plan(instance_plan(cfg, decode)), engine(resolved_engine(m, plan, memory)), mem(memory), ctx{pool, engine, 0, 0, false, 0, 1, {}, {}, {}, {}, {}} {
  const model::ForwardConfig f = engine_forward(plan.forward, engine);
  step.prepare(m, sys, f);
  if (cfg.spec.on()) {
    draft = std::make_unique<StepModel>();
    draft->prepare(*cfg.spec.draft, sys, draft_forward(f, cfg.spec.mtp));
  }
  ctx.window = static_cast<double>(m.sliding_window);
  ctx.partial_reuse = engine.partial_reuse;
  ctx.groups = f.ep;
  if (f.ep > 1) {
    ctx.rank_left.assign(static_cast<std::size_t>(f.ep), 0);
    ctx.rank_stop.assign(static_cast<std::size_t>(f.ep), 0);
    ctx.rank_preempted.assign(static_cast<std::size_t>(f.ep), 0);
    ctx.rank_input_left.assign(static_cast<std::size_t>(f.ep), 0);
    ctx.rank_prefills.assign(static_cast<std::size_t>(f.ep), 0);
  }
  const int host = sys.chip.link_index(hw::LinkScope::host);
  if (host >= 0) ctx.swap_s_per_block = mem.kv_block_bytes / sys.chip.links[static_cast<std::size_t>(host)].chip_bandwidth_Bps();
  scheduler = detail::make_scheduler(ctx);
  // Decode-only steps priced by their token count: up to the sequence limit (4096 at most).
  const auto seqs_max = static_cast<std::size_t>(std::clamp<std::int64_t>(engine.max_num_seqs, 1, 4096));
  memo = StepTimeMemo(seqs_max * static_cast<std::size_t>(cfg.spec.k + 1));
  if (f.ep > 1) {
    for (auto& own : rank_memo.own) own.assign(seqs_max * static_cast<std::size_t>(cfg.spec.k + 1) + 1, -1.0);
    for (StepModel::RankMemo& passes : draft_rank_memo) {
      for (auto& own : passes.own) own.assign(seqs_max + 1, -1.0);
    }
  }
  if (draft) draft_memo[0] = draft_memo[1] = StepTimeMemo(seqs_max);
}

void Simulation::start_step(Replica& r, Ps t) {
  touch(r);
  r.now = t;
  // Requests whose KV arrived decode from this step: their last prompt token computed again.
  for (const std::int32_t qi : r.arrived) {
    r.push_running(qi);
    r.join_decode(qi);
  }
  r.arrived.clear();
  Tier& k = tier(r);
  // Requests that came in during the last step join the queue. SGLang's
  // --scheduler-recv-interval N (SchedulerRecvSkipper) reads them only once the weights of the
  // steps since it last did reach N: each pass of its loop adds its last batch's, 1 for a decode
  // step and 1000 for one with prompt tokens (at once), and starts again from 0 when it reads.
  // Its last batch: the step that just ended (r.plan still), or under overlap scheduling the
  // one starting now, launched by the pass before (docs/serving.md#recv-interval).
  const std::int64_t every = k.engine.recv_interval;
  const bool overlap = k.engine.overlap_scheduling;
  bool recv = true;
  const auto tally = [&] {
    r.recv_count += r.plan.chunks.empty() ? 1 : kRecvPromptWeight;
    recv = r.recv_count >= every;
    if (recv) r.recv_count = 0;
  };
  const auto take_incoming = [&] {
    for (const std::int32_t qi : r.incoming) {
      if (every > 1) pool_[qi].unread = t - pool_[qi].arrival - front_end_;  // reached the scheduler, then read now
      r.waiting.push_back(qi);
      r.incoming_changed(pool_[qi], -1);
      r.waiting_changed(pool_[qi], 1);
    }
    r.incoming.clear();
  };
  if (every > 1 && !overlap) {
    tally();
    if (recv) take_incoming();
  }
  k.scheduler->plan(r);
  if (every > 1 && overlap) tally();
  // Under overlap scheduling they are planned from the step after this one, or in this one when
  // the engine has nothing else to run (its host was idle, not ahead; an idle loop spins, a
  // pass in microseconds, and reads them at once whatever the interval).
  if (!r.incoming.empty()) {
    const bool idle = !r.plan.decode && r.plan.chunks.empty();
    if (recv || idle) {
      if (!recv) r.recv_count = 0;
      take_incoming();
      if (idle) k.scheduler->plan(r);
    }
  }
  // An empty replica that cannot admit the request at the head of its queue never will
  // (checked on arrival; a scheduler's own margin can still refuse it): it is rejected.
  while (!r.plan.decode && r.plan.chunks.empty() && r.running_count == 0 && r.in_transfer == 0 && !r.waiting.empty()) {
    const std::int32_t qi = r.waiting.front();
    r.waiting.pop_front();
    r.waiting_changed(pool_[qi], -1);
    r.leave_rank(pool_[qi]);
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
    // No next step here, but the engine's: it learns of a request's end only by processing
    // its outputs, so it runs one more decode step of the sequences it still has running ("an
    // extra decode run is done to process the final tokens", vllm/core/scheduler.py
    // _schedule_running, v0.6.0), its scheduler's host time and a graph's launch before the
    // processing. That step's own device time is not priced.
    if (r.unsent()) send_outputs(r, t + std::max<Ps>(0, to_ps(k.engine.step_overhead_s + r.unsent_proc_s)));
    return;
  }
  // Waiting requests that were admitted leave the queue count.
  const double mix_seqs = p.mix.seqs();
  const bool prefill = !p.chunks.empty();
  const EngineConfig& e = k.engine;
  const LaunchCounts counts = launch_counts(prefill, p.mix, p.ranks.data(), p.ranks.size());
  const double tokens = counts.tokens;
  const GraphMode mode = step_graphs(e, prefill, counts);
  // Attention data-parallel ranks step together: the step lasts as long as the slowest rank,
  // its own part and the expert part over all ranks' tokens (docs/serving.md#moe-layouts).
  double device = (p.ranks.empty() ? k.memo.time(k.step, p.mix, mode) : k.step.slowest(p.ranks.data(), p.ranks.size(), p.mix, mode, &k.rank_memo)) + p.extra_s;
  if (k.draft) {
    device += draft_passes_s(*k.draft, e, cfg_.spec.k, p.draft_first, p.draft_rest, prefill, k.draft_memo, p.draft_ranks_first.size(),
                             p.draft_ranks_first.data(), p.draft_ranks_rest.data(), k.draft_rank_memo);
  }
  // An engine idle until now (no step ended at t, or it left no work) planned this step only now.
  const bool after_idle = r.busy_until != t || !r.ahead;
  // An engine whose outputs go out during the next step (vLLM V0) processes them once it has
  // launched the step's forward: a graph's replay at once, an eager step's kernels at the host's
  // pace (step_period: the step lasts at least that launch and the processing).
  const bool lag = engine_outputs_next_step(e);
  const double launch = lag ? k.step.eager_host_s(p.mix, mode) : 0;
  // (The outputs it processes: those of the step that ended now, none after an idle engine.)
  const double period = step_period(e, device, mix_seqs, after_idle, p.scheduled ? 1 : 0, launch,
                                    lag ? (r.busy_until == t ? r.unsent_proc_s : 0) : -1);
  if (r.unsent()) {
    // The last step's outputs go out once this step is scheduled (its host time before the
    // device, as step_period counts it) and launched, and they have been processed.
    const double host = e.overlap_scheduling && !after_idle ? 0 : (e.step_overhead_s + e.per_request_overhead_s * mix_seqs) * (p.scheduled ? 1 : 0);
    send_outputs(r, t + std::max<Ps>(0, to_ps(host + launch + r.unsent_proc_s)));
  }
  if (!(period <= kMaxSimulated_s - to_s(t))) {
    double chunk_tokens = 0;
    for (const auto& c : p.chunks) chunk_tokens += static_cast<double>(c.second);
    const char* who = r.role == detail::Role::decode ? "decode instance" : r.role == detail::Role::prefill ? "prefill instance" : "replica";
    time_overflow(fmt::format("a step of {} {} ({:g} prompt tokens, {:g} decoding sequences)", who, r.index, chunk_tokens, p.mix.decode_seqs),
                  t, period);
  }
  r.busy = true;
  r.busy_until = t + std::max<Ps>(1, to_ps(period));
  ++result_.steps;
  step_time_sum_ += period;
  if (prefill && p.decode) {
    ++result_.mixed_steps;
  } else if (prefill) {
    ++result_.prefill_steps;
  } else {
    ++result_.decode_steps;
    ++decode_launches_[static_cast<std::size_t>(mode)];
  }
  if (p.decode) decode_batch_sum_ += p.mix.decode_seqs, decode_context_sum_ += p.mix.decode_full.keys;
  // (A decode instance's prompt steps, recomputing preempted requests, are its own: not these.)
  if (prefill && r.role != detail::Role::decode) {
    PromptSums& s = prompt_sums_;
    s.steps += 1, s.chunks += p.mix.prefill_seqs, s.tokens += p.mix.prefill_tokens, s.positions += p.mix.prefill_positions;
    s.decodes += p.mix.decode_seqs, s.decode_context += p.mix.decode_full.keys;
    s.launch_tokens += tokens;
  }
  if (step_sink_) {
    StepRecord s;
    s.replica = r.index;
    s.index = static_cast<std::int64_t>(result_.steps) - 1;
    s.start_s = to_s(t);
    s.period_s = period;
    s.device_s = device;
    s.prompt_tokens = p.mix.prefill_tokens;
    s.prompt_chunks = p.mix.prefill_seqs;
    s.decodes = p.mix.decode_seqs;
    s.decode_context = p.mix.decode_seqs > 0 ? p.mix.decode_full.positions / p.mix.decode_seqs : 0;
    s.launch = mode;
    step_sink_(s);
  }
  steps_.set(r.index, leap_on_ ? start_leap(r, k) : r.busy_until);
}

void Simulation::finish_step(Replica& r, Ps t) {
  touch(r);
  const detail::StepPlan& p = r.plan;
  const bool lag = engine_outputs_next_step(tier(r).engine);  // this step's outputs go out during the next one
  note_outputs(r);
  if (p.decode) emit_decode(r, t);
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
    if (window_state_ == 1) window_tokens_ += 1;
    if (!cfg_.lean) timeline_.tokens(t, 1);
    output_tokens_all_ += 1;
    if (q.first_token < 0) {
      q.first_token = t;
      if (lag) r.unsent_first.push_back(qi);
    } else if (!q.warmup && itl_on_) {
      itl_.add(to_s(t - q.last_token));  // a token after a preemption waited since its last one
    }
    q.last_token = t;
    if (q.emitted >= q.output) {
      end(r, qi, t);
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

void Simulation::emit_decode(Replica& r, Ps t) {
  const bool lag = engine_outputs_next_step(tier(r).engine);  // outputs go out during the next step
  // Every sequence emits the step's tokens; those that finish, only what they had left. In a
  // multi-step window (vLLM V0) a sequence that is done keeps its place until the window ends:
  // the tokens it computed beyond its last are dropped then. (Of lane l, at its decode step d.)
  std::int64_t emitted = 0;
  // Sequence qi's last tokens come out at t (its decode step d the last it ran).
  const auto ends = [&](std::int32_t qi, std::int64_t d) __attribute__((always_inline)) {
    Req& q = pool_[qi];
    emitted -= r.emitted_before(q) + r.step_tokens(q, d) - q.output;
    q.emitted = q.output;
    q.last_token = t;
    r.leave_decode(qi);
    finished_now_.push_back(qi);
  };
  const auto finish = [&](std::size_t l, std::int64_t d) __attribute__((always_inline)) {
    detail::EventHeap& finishes = r.lane(l).finishes;
    while (r.window_left == 0 && !finishes.empty() && finishes.top().step <= d) {
      const detail::DecodeEvent ev = finishes.top();
      finishes.pop();
      const Req& q = pool_[ev.req];
      if (ev.version == q.version && q.phase == Phase::decode) ends(ev.req, d);
    }
  };
  // Inter-token latency: the sequences of the last decode step waited since its end,
  // the ones that joined since then since their own last token.
  if (!r.steps_apart) {
    const std::int64_t d = r.dstep;  // (one lane: its decode steps are the replica's)
    const Ps last = r.lane(0).last_end;
    // Inside a multi-step window (vLLM V0) a sequence whose last token this step computes keeps
    // its place to the window's end. Where outputs go out during the next step (V0's
    // asynchronous output processor, on by default: engine_outputs_next_step), its end goes out
    // during the window's next step (MultiStepModelRunner's callback stops it there), its last
    // gap counted now; without it, its tokens come out at the window's end, its last gap
    // counted then, from its token before (its last gaps are one, as many as its tokens).
    const bool window = r.window_left > 0;
    std::int64_t kept = 0;  // of those done at an earlier step (or all, without the lag), not in warm-up, not joined now
    if (window || !r.window_done.empty()) {
      detail::EventHeap& finishes = r.lane(0).finishes;
      const std::size_t before = r.window_done.size();
      while (window && !finishes.empty() && finishes.top().step <= d) {
        const detail::DecodeEvent ev = finishes.top();
        finishes.pop();
        Req& q = pool_[ev.req];
        if (ev.version != q.version || q.phase != Phase::decode) continue;
        if (lag) {
          r.unsent_window.push_back(ev.req);
          if (q.d0 < d) q.last_token = t;  // (one that joined now: its gap below, from its token before)
        } else if (q.d0 < d) {
          q.last_token = last;
        }
        r.window_done.push_back(ev);
      }
      const std::size_t counted = lag ? before : r.window_done.size();
      for (std::size_t i = 0; i < counted; ++i) {
        const Req& q = pool_[r.window_done[i].req];
        kept += q.warmup || q.d0 == d ? 0 : 1;
      }
    }
    std::int64_t joined = 0;  // not in warm-up
    for (const std::int32_t qi : r.new_decoders) {
      Req& q = pool_[qi];
      joined += q.warmup ? 0 : 1;
      if (q.first_token < 0) {
        // Handed over by a prefill instance: this step gives its first token (no gap before it).
        q.first_token = q.last_token = t;
        if (lag) r.unsent_first.push_back(qi);
        continue;
      }
      const bool done_in_window = window && r.emitted_before(q) + r.step_tokens(q, d) >= q.output;
      if (done_in_window && !lag) continue;  // (its last gap at the window's end)
      if (!q.warmup && itl_on_) itl_.add(to_s(t - q.last_token));
      if (done_in_window) q.last_token = t;
    }
    const std::int64_t old = r.n_decode - r.n_warm_decode - joined - kept;
    if (old > 0 && last >= 0 && itl_on_) itl_.add(to_s(t - last), static_cast<double>(old));
    r.new_decoders.clear();
    emitted = r.lane_decode_tokens(0);
    if (!window && !r.window_done.empty()) {
      // The window ends: the tokens of its done sequences come out now.
      for (const detail::DecodeEvent& ev : r.window_done) {
        const Req& q = pool_[ev.req];
        if (ev.version != q.version || q.phase != Phase::decode) continue;
        if (!q.warmup && itl_on_ && !lag) itl_.add(to_s(t - q.last_token));
        ends(ev.req, d);
      }
      r.window_done.clear();
    }
    finish(0, d);
  } else {
    // Ranks stepping apart: the lanes that decode in this step, each since its own last decode
    // step; the sequences of the others that joined stay new.
    for (std::size_t l = 0; l < r.lanes(); ++l) r.lane(l).joined = 0;
    std::size_t kept = 0;
    for (const std::int32_t qi : r.new_decoders) {
      Req& q = pool_[qi];
      const std::size_t l = r.lane_of(q);
      if (!r.decodes(l)) {
        r.new_decoders[kept++] = qi;  // (over entries already read)
        continue;
      }
      r.lane(l).joined += q.warmup ? 0 : 1;
      if (q.first_token < 0) {
        q.first_token = q.last_token = t;
        if (lag) r.unsent_first.push_back(qi);
        continue;
      }
      if (!q.warmup && itl_on_) itl_.add(to_s(t - q.last_token));
    }
    r.new_decoders.resize(kept);
    for (std::size_t l = 0; l < r.lanes(); ++l) {
      if (!r.decodes(l)) continue;
      const detail::Replica::Lane& lane = r.lane(l);
      const std::int64_t old = r.lane_measured_decodes(l) - lane.joined;
      if (old > 0 && lane.last_end >= 0 && itl_on_) itl_.add(to_s(t - lane.last_end), static_cast<double>(old));
      emitted += r.lane_decode_tokens(l);
      finish(l, r.lane_step(l));
    }
  }
  r.advance_decode(t);
  r.outstanding_tokens -= emitted;
  if (window_state_ == 1) window_tokens_ += static_cast<double>(emitted);
  if (!cfg_.lean) timeline_.tokens(t, static_cast<double>(emitted));
  output_tokens_all_ += static_cast<double>(emitted);
  for (const std::int32_t qi : finished_now_) end(r, qi, t);
  finished_now_.clear();
}

}  // namespace ridgeline::serving::detail
