// SGLang scheduler: prefill first. Whenever new requests can be admitted (or a chunked one
// continues) the step is a prefill ("extend") step of their chunks, under the chunk budget
// (chunked_prefill_size) and the prefill token limit; otherwise it is a decode step of every
// running request. A request is admitted when the cache holds its prompt and its whole
// output (clipped at 4096) beside a decaying share (new_token_ratio) of what the running
// requests still have to generate. A decode step that finds the cache full retracts running
// requests, fewest output tokens first, until 20 steps of room are free, and raises the ratio
// (python/sglang/srt/managers/scheduler.py, schedule_policy.py; docs/serving.md#sglang).
// Under attention data parallelism (--enable-dp-attention) each DP rank is such a scheduler of
// its own, over its own queue, pool and ratio, with the chunk budget and the request limit
// divided by the ranks; each rank picks its own mode at each step (docs/serving.md#moe-layouts).
#include <algorithm>
#include <vector>

#include "scheduler.hpp"

namespace ridgeline::serving::detail {

namespace {

class SglangScheduler final : public Scheduler {
 public:
  using Scheduler::Scheduler;

  void plan(Replica& r) override {
    r.plan.clear();
    if (r.steps_apart) {
      plan_ranks(r);
      return;
    }
    if (plan_prefill(r)) {
      if (ctx_.engine.mixed_chunk && r.n_decode > 0 && r.fits(r.decode_blocks_needed(), 0)) schedule_decodes(r);
      finish_plan(r);
      return;
    }
    if (r.n_decode > 0) {
      retract_if_full(r, 0);
      schedule_decodes(r);
      // The ratio decays after every decode step that did not retract.
      if (r.plan.preempted == 0) decay_ratio(r, 0);
    }
    finish_plan(r);
  }

  void quiet_decode(Replica& r) override {
    r.fits(r.decode_blocks_needed(), 0);  // retract_if_full's check (it passes)
    r.take_decode_blocks();
    decay_ratio(r, 0);
  }

 private:
  // Rank g's ratio after a decode step of its own that did not retract.
  void decay_ratio(Replica& r, std::size_t g) const {
    r.new_token_ratio[g] = std::max(r.new_token_ratio[g] - decay_, ctx_.engine.new_token_ratio_min);
  }
  const double decay_ = (ctx_.engine.new_token_ratio_init - ctx_.engine.new_token_ratio_min) / ctx_.engine.new_token_ratio_decay_steps;

  bool plan_prefill(Replica& r) {
    if (r.prefilling.empty() && r.waiting.empty()) return false;  // nothing to prefill (most decode steps)
    const EngineConfig& e = ctx_.engine;
    std::int64_t chunk_left = e.chunked_prefill ? e.max_batched_tokens : INT64_MAX / 4;
    std::int64_t input_left = e.max_prefill_tokens > 0 ? e.max_prefill_tokens : e.max_batched_tokens;
    if (e.mixed_chunk) chunk_left -= r.n_decode * r.queries();
    // The chunked request goes first.
    for (std::size_t i = 0; i < r.prefilling.size() && chunk_left > 0; ++i) {
      const std::int32_t qi = r.prefilling[i];
      const Req& q = ctx_.pool[qi];
      const std::int64_t chunk = std::min(q.target - q.computed, chunk_left);
      if (!r.fits(chunk_blocks(r, q, chunk), 0)) break;
      schedule_chunk(r, qi, chunk);
      chunk_left -= chunk;
      input_left -= chunk;
    }
    const std::int64_t block = r.block();
    while (!r.waiting.empty() && chunk_left > 0 && input_left > 0 && r.running_count < e.max_num_seqs) {
      const std::int32_t qi = r.waiting.front();
      Req& q = ctx_.pool[qi];
      const Admit a = probe(r, q);
      const std::int64_t extend = q.target - a.hit;
      const bool chunked = extend > chunk_left;
      if (chunked && !e.chunked_prefill) break;
      const std::int64_t chunk = std::min(extend, chunk_left);
      // Room: free (and evictable) cache less the share kept for running requests' outputs.
      // (A prefill instance of a disaggregated deployment keeps nothing for outputs.)
      const bool outputs_here = r.role != Role::prefill;
      const double kept = outputs_here ? r.new_token_ratio[0] * static_cast<double>(r.remaining_output_sum()) : 0;
      const std::int64_t reserve = chunked || !outputs_here ? 0 : std::min(q.output - q.emitted, e.reserve_clip_tokens);
      const double need = static_cast<double>(r.blocks_for(a.hit + chunk) - a.prefix_blocks) +
                          static_cast<double>((reserve + block - 1) / block);
      const double room = static_cast<double>(a.free_after) - kept / static_cast<double>(block);
      if (!r.room(room - need, need < room)) break;
      admit(r, qi, a, chunk);
      chunk_left -= chunk;
      input_left -= chunk;
      if (chunked) break;  // one chunked request at a time
    }
    return !r.plan.chunks.empty();
  }

  // Before a decode step: if the cache cannot take this step's tokens, retract requests —
  // fewest output tokens first, then longest prompt — until retract_steps steps fit. Of rank g's
  // requests in its pool when ranks step apart (g = 0 otherwise: the replica's).
  void retract_if_full(Replica& r, std::size_t g) {
    const bool apart = r.steps_apart;
    const auto mine = [&](const Req& q) { return !apart || static_cast<std::size_t>(r.rank_of(q)) == g; };
    const auto need = [&] { return apart ? r.decode_blocks_needed(g) : r.decode_blocks_needed(); };
    const auto decoding = [&] { return apart ? r.rank_decode[g] : r.n_decode; };
    if (r.fits(need(), g)) return;
    const EngineConfig& e = ctx_.engine;
    std::vector<std::int32_t> order;
    for (std::int32_t qi = r.head; qi >= 0; qi = ctx_.pool[qi].next) {
      if (ctx_.pool[qi].phase == Phase::decode && mine(ctx_.pool[qi])) order.push_back(qi);
    }
    std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
      const Req &x = ctx_.pool[a], &y = ctx_.pool[b];
      const std::int64_t ox = r.emitted_before(x), oy = r.emitted_before(y);
      return ox != oy ? ox > oy : x.input < y.input;  // retracted from the back
    });
    const auto short_of_room = [&] {
      return r.kv[g].free < need() || r.kv[g].free < decoding() * r.tokens_over(e.retract_steps) / r.block();
    };
    while (!order.empty() && decoding() > 1 && short_of_room()) {
      preempt(r, order.back());
      order.pop_back();
    }
    // The last decoding request always fits alone (checked on arrival): a chunked prefill
    // still holding blocks makes way for it.
    const auto last_prefilling = [&] {
      for (auto it = r.prefilling.rbegin(); it != r.prefilling.rend(); ++it) {
        if (mine(ctx_.pool[*it])) return *it;
      }
      return std::int32_t{-1};
    };
    for (std::int32_t qi = 0; r.kv[g].free < need() && (qi = last_prefilling()) >= 0;) preempt(r, qi);
    // On a decode instance of a disaggregated deployment, blocks received for KV still in
    // transfer are not the running requests' to take: the last one retracts too, and
    // prefills again here when there is room.
    while (r.kv[g].free < need() && r.in_transfer > 0 && !order.empty()) {
      preempt(r, order.back());
      order.pop_back();
    }
    // The ratio after a retraction: what the remaining requests decoded and will decode.
    double decoded = 0, total = 0;
    for (std::int32_t qi = r.head; qi >= 0; qi = ctx_.pool[qi].next) {
      const Req& q = ctx_.pool[qi];
      if (!mine(q)) continue;
      decoded += static_cast<double>(q.phase == Phase::decode ? r.emitted_before(q) : q.emitted);
      total += static_cast<double>(q.output);
    }
    r.new_token_ratio[g] =
        std::min(1.0, (decoded + static_cast<double>(r.tokens_over(e.retract_steps)) * static_cast<double>(decoding())) / (total + 1));
  }

  // Ranks stepping apart (Replica::steps_apart): each rank's scheduler plans its own step, as
  // plan() plans a replica's, over its own requests, pool and ratio. Its chunk budget is
  // chunked_prefill_size // dp_size and its request limit max_running_requests // dp_size
  // (ServerArgs._handle_data_parallelism, Scheduler.per_dp_max_running_requests); each rank's
  // max_prefill_tokens is the whole. A rank with a prompt to prefill runs a prefill (extend) step
  // (its decodes beside it under mixed chunking), another a decode step, in the same step: the
  // ranks step together (prepare_mlp_sync_batch), each in its own mode.
  void plan_ranks(Replica& r) {
    const EngineConfig& e = ctx_.engine;
    std::vector<std::int64_t>& left = ctx_.rank_left;
    std::vector<std::int64_t>& input_left = ctx_.rank_input_left;
    std::vector<std::uint8_t>& prefills = ctx_.rank_prefills;
    const std::size_t R = left.size();
    const auto ranks = static_cast<std::int64_t>(R);
    // (At least 1 each: a limit below the ranks is refused, validate_ranks.)
    const std::int64_t budget = e.chunked_prefill ? e.max_batched_tokens / ranks : INT64_MAX / 4;
    const std::int64_t limit = e.max_num_seqs / ranks;
    for (std::size_t g = 0; g < R; ++g) {
      left[g] = budget - (e.mixed_chunk ? r.rank_decode[g] * r.queries() : 0);
      input_left[g] = e.max_prefill_tokens > 0 ? e.max_prefill_tokens : budget;
      prefills[g] = 0;
    }
    // Each rank's chunked request goes first.
    for (std::size_t i = 0; i < r.prefilling.size(); ++i) {
      const std::int32_t qi = r.prefilling[i];
      const Req& q = ctx_.pool[qi];
      const auto g = static_cast<std::size_t>(r.rank_of(q));
      const std::int64_t chunk = std::min(q.target - q.computed, left[g]);
      if (chunk <= 0 || !r.fits(chunk_blocks(r, q, chunk), g)) continue;
      schedule_chunk(r, qi, chunk);
      left[g] -= chunk;
      input_left[g] -= chunk;
      prefills[g] = 1;
    }
    // Then each rank admits its own waiting requests, first come first served, as plan_prefill.
    const bool outputs_here = r.role != Role::prefill;
    const std::int64_t block = r.block();
    admit_by_rank(r, nullptr, limit, [&](std::int32_t qi, std::size_t g, std::size_t at) {
      Req& q = ctx_.pool[qi];
      if (input_left[g] <= 0) return false;
      const Admit a = probe(r, q);
      const std::int64_t extend = q.target - a.hit;
      const bool chunked = extend > left[g];
      if (chunked && !e.chunked_prefill) return false;
      const std::int64_t chunk = std::min(extend, left[g]);
      const double kept = outputs_here ? r.new_token_ratio[g] * static_cast<double>(r.remaining_output_sum(g)) : 0;
      const std::int64_t reserve = chunked || !outputs_here ? 0 : std::min(q.output - q.emitted, e.reserve_clip_tokens);
      const double need = static_cast<double>(r.blocks_for(a.hit + chunk) - a.prefix_blocks) +
                          static_cast<double>((reserve + block - 1) / block);
      const double room = static_cast<double>(a.free_after) - kept / static_cast<double>(block);
      if (!r.room(room - need, need < room)) return false;
      admit(r, qi, a, chunk, at);
      left[g] -= chunk;
      input_left[g] -= chunk;
      prefills[g] = 1;
      if (chunked || input_left[g] <= 0) left[g] = 0;  // one chunked request at a time; the prefill limit
      return true;
    });
    // Each rank's decodes: beside its prefill (mixed chunking, if its blocks are free), or a
    // decode step of its own when it prefills nothing.
    for (std::size_t g = 0; g < R; ++g) {
      if (r.rank_decode[g] == 0) continue;
      if (prefills[g]) {
        if (!e.mixed_chunk || !r.fits(r.decode_blocks_needed(g), g)) continue;
      } else {
        const std::int64_t before = r.plan.preempted;
        retract_if_full(r, g);
        if (r.plan.preempted == before) decay_ratio(r, g);
        if (r.rank_decode[g] == 0) continue;
      }
      r.take_decode_blocks(g);
      r.plan.decoding[g] = 1;
      r.plan.decode = true;
    }
    finish_plan(r);
  }
};

}  // namespace

std::unique_ptr<Scheduler> make_sglang_scheduler(SimContext& ctx) { return std::make_unique<SglangScheduler>(ctx); }

}  // namespace ridgeline::serving::detail
