// vLLM (V1) scheduler: one mixed step per iteration. Running requests first, in admission
// order — every decode sequence one token, then an unfinished prefill its next chunk — then
// waiting requests while the token budget and max_num_seqs allow, each admitted if the
// blocks of its first chunk are free (nothing is kept for its output). When a running
// request needs a block and none is free, the most recently admitted request is preempted
// (its blocks freed, back to the front of the queue) until the rest fit, and no new request
// is admitted in that step (vllm/v1/core/sched/scheduler.py; docs/serving.md#vllm).
// vLLM V0 (EngineConfig::prefills_apart, --engine vllm@0.6): waiting requests' prompts first, in a
// step of their own, decodes only in a step without prefills (vllm/core/scheduler.py
// _schedule_default); with --num-scheduler-steps n, a decode step opens a window of n steps
// whose batch is fixed: the scheduler is not called until the window ends
// (vllm/engine/llm_engine.py step, _has_remaining_steps; docs/serving.md#multi-step).
#include <algorithm>

#include "scheduler.hpp"

namespace ridgeline::serving::detail {

namespace {

class VllmScheduler final : public Scheduler {
 public:
  using Scheduler::Scheduler;

  void plan(Replica& r) override {
    r.plan.clear();
    const EngineConfig& e = ctx_.engine;
    if (e.prefills_apart) {
      plan_v0(r);
      return;
    }
    if (r.rank_limits) {
      plan_ranks(r);
      return;
    }
    std::int64_t left = e.max_batched_tokens - r.n_decode * r.queries();
    // What the running requests need: a block for every decode sequence whose blocks are
    // full, and the blocks of each unfinished prefill's next chunk.
    auto running_need = [&](std::int64_t budget) {
      std::int64_t need = r.n_decode > 0 ? r.decode_blocks_needed() : 0;
      for (const std::int32_t qi : r.prefilling) {
        const Req& q = ctx_.pool[qi];
        const std::int64_t chunk = std::min(q.target - q.computed, budget);
        if (chunk <= 0) break;
        need += chunk_blocks(r, q, chunk);
        budget -= chunk;
      }
      return need;
    };
    bool preempted = false;
    while (r.running_count > 0 && !r.fits(running_need(left), 0)) {
      preempt(r, r.tail);
      preempted = true;
      left = e.max_batched_tokens - r.n_decode * r.queries();
    }
    schedule_decodes(r);
    // Copy: scheduling a chunk never changes the prefilling list.
    for (std::size_t i = 0; i < r.prefilling.size() && left > 0; ++i) {
      const std::int32_t qi = r.prefilling[i];
      const Req& q = ctx_.pool[qi];
      const std::int64_t chunk = std::min(q.target - q.computed, left);
      schedule_chunk(r, qi, chunk);
      left -= chunk;
    }
    if (!preempted) admit_waiting(r, left);
    finish_plan(r);
  }

  void quiet_decode(Replica& r) override {
    r.fits(r.decode_blocks_needed(), 0);  // the preemption check's (it passes)
    r.take_decode_blocks();
  }

 private:
  // Attention data-parallel ranks (Replica::rank_limits): the same step, each rank with its own
  // token budget and sequence limit (each DP rank's Scheduler has the configured
  // max_num_batched_tokens and max_num_seqs: vllm/v1/engine/core.py DPEngineCoreProc runs an
  // EngineCore, with its own Scheduler, per rank), its requests waiting in their own queue
  // (kept as one queue in arrival order, each rank reading its own requests from it), and its
  // own KV pool (Replica::kv; each DP rank's KVCacheManager over its own GPUs): a rank short of
  // blocks preempts its own most recently admitted request until its running requests fit, and
  // admits none in that step; the other ranks go on.
  void plan_ranks(Replica& r) {
    const EngineConfig& e = ctx_.engine;
    std::vector<std::int64_t>& left = ctx_.rank_left;
    std::vector<std::uint8_t>& preempted = ctx_.rank_preempted;
    const std::size_t R = left.size();
    // What rank g's running requests need: a block for each of its decode sequences whose
    // blocks are full, and the blocks of each of its unfinished prefills' next chunk.
    auto running_need = [&](std::size_t g) {
      std::int64_t need = r.rank_decode[g] > 0 ? r.decode_blocks_needed(g) : 0;
      std::int64_t budget = e.max_batched_tokens - r.rank_decode[g] * r.queries();
      for (const std::int32_t qi : r.prefilling) {
        const Req& q = ctx_.pool[qi];
        if (static_cast<std::size_t>(r.rank_of(q)) != g) continue;
        const std::int64_t chunk = std::min(q.target - q.computed, budget);
        if (chunk <= 0) break;
        need += chunk_blocks(r, q, chunk);
        budget -= chunk;
      }
      return need;
    };
    for (std::size_t g = 0; g < R; ++g) {
      preempted[g] = 0;
      while (r.rank_running[g] > 0 && !r.fits(running_need(g), g)) {
        std::int32_t last = r.tail;  // its most recently admitted running request
        while (static_cast<std::size_t>(r.rank_of(ctx_.pool[last])) != g) last = ctx_.pool[last].prev;
        preempt(r, last);
        preempted[g] = 1;
      }
      left[g] = e.max_batched_tokens - r.rank_decode[g] * r.queries();
    }
    schedule_decodes(r);
    schedule_rank_chunks(r);
    admit_ranks(r);
    finish_plan(r);
  }

  // admit_waiting per rank: each rank that preempted nothing in the step admits its own
  // waiting requests in arrival order while its budget, sequence limit and pool allow; a
  // request of a rank that cannot admit it stops that rank's admissions (first come, first
  // served within the rank), and so does its last waiting request (Replica::rank_waiting). The
  // scan stops once every rank has stopped.
  void admit_ranks(Replica& r) {
    const EngineConfig& e = ctx_.engine;
    std::vector<std::int64_t>& left = ctx_.rank_left;
    admit_by_rank(r, &ctx_.rank_preempted, e.max_num_seqs, [&](std::int32_t qi, std::size_t g, std::size_t at) {
      Req& q = ctx_.pool[qi];
      if (q.phase == Phase::swapped) {
        if (!swap_in(r, qi, at)) return false;
        --left[g];
        return true;
      }
      const Admit a = probe(r, q);
      const std::int64_t tokens = q.target - a.hit;
      if (!e.chunked_prefill && tokens > left[g]) return false;
      const std::int64_t chunk = std::min(tokens, left[g]);
      const std::int64_t own = std::max<std::int64_t>(0, r.blocks_for(a.hit + chunk) - a.prefix_blocks);
      if (!r.room(static_cast<double>(a.free_after - own), own <= a.free_after)) return false;
      admit(r, qi, a, chunk, at);
      left[g] -= chunk;
      return true;
    });
  }

  void plan_v0(Replica& r) {
    const EngineConfig& e = ctx_.engine;
    const bool in_window = r.window_left > 0 && r.n_decode > 0;
    if (in_window) {
      --r.window_left;
      r.plan.scheduled = false;
    } else {
      r.window_left = 0;
      admit_waiting(r, e.max_batched_tokens);
      if (!r.plan.chunks.empty() || r.plan.decode) {  // prefills (or a swapped request back) and nothing else
        finish_plan(r);
        return;
      }
    }
    // Decodes of every running request, the most recently admitted preempted while the blocks
    // of the step are short. A window's first step keeps the blocks of its other n - 1 steps
    // too (V0's lookahead slots, num_lookahead_slots = n - 1, checked by _can_append_slots when
    // the window is scheduled), counted at their most: blocks_for((n - 1) tokens) per sequence,
    // so that nothing is preempted inside a window.
    if (!in_window) {
      const std::int64_t ahead = e.scheduler_steps > 1 ? r.blocks_for((e.scheduler_steps - 1) * r.queries()) : 0;
      while (r.running_count > 0 && r.n_decode > 0 && !r.fits(r.decode_blocks_needed() + r.n_decode * ahead, 0)) preempt(r, r.tail);
    }
    schedule_decodes(r);
    if (!in_window && r.plan.decode) r.window_left = e.scheduler_steps - 1;
    finish_plan(r);
  }

  void admit_waiting(Replica& r, std::int64_t left) {
    const EngineConfig& e = ctx_.engine;
    while (!r.waiting.empty() && left > 0 && r.running_count < e.max_num_seqs) {
      const std::int32_t qi = r.waiting.front();
      Req& q = ctx_.pool[qi];
      if (q.phase == Phase::swapped) {
        if (!swap_in(r, qi)) break;
        --left;
        continue;
      }
      const Admit a = probe(r, q);
      const std::int64_t tokens = q.target - a.hit;
      if (!e.chunked_prefill && tokens > left) break;
      const std::int64_t chunk = std::min(tokens, left);
      const std::int64_t own = std::max<std::int64_t>(0, r.blocks_for(a.hit + chunk) - a.prefix_blocks);
      if (!r.room(static_cast<double>(a.free_after - own), own <= a.free_after)) break;  // first come, first served: nothing overtakes it
      admit(r, qi, a, chunk);
      left -= chunk;
    }
  }
};

}  // namespace

std::unique_ptr<Scheduler> make_vllm_scheduler(SimContext& ctx) { return std::make_unique<VllmScheduler>(ctx); }

}  // namespace ridgeline::serving::detail
