// TensorRT-LLM scheduler (PyTorch backend, in-flight batching): every step carries the
// generation token of each running request first, then context requests in arrival order
// within max_num_tokens — whole prompts unless context chunking is on — up to max_batch_size.
// GUARANTEED_NO_EVICT admits a request only when the blocks of its prompt and its whole
// output fit beside what every running request will need to its end, so nothing is ever
// preempted (batch_manager/capacityScheduler.cpp, microBatchScheduler.cpp;
// docs/serving.md#tensorrt-llm).
#include <algorithm>

#include "scheduler.hpp"

namespace ridgeline::serving::detail {

namespace {

class TrtllmScheduler final : public Scheduler {
 public:
  using Scheduler::Scheduler;

  void plan(Replica& r) override {
    r.plan.clear();
    if (r.rank_limits) {
      plan_ranks(r);
      return;
    }
    const EngineConfig& e = ctx_.engine;
    schedule_decodes(r);
    std::int64_t left = e.max_batched_tokens - r.n_decode * r.queries();
    for (std::size_t i = 0; i < r.prefilling.size() && left > 0; ++i) {
      const std::int32_t qi = r.prefilling[i];
      const Req& q = ctx_.pool[qi];
      const std::int64_t chunk = std::min(q.target - q.computed, left);
      schedule_chunk(r, qi, chunk);
      left -= chunk;
    }
    while (!r.waiting.empty() && left > 0 && r.running_count < e.max_num_seqs) {
      const std::int32_t qi = r.waiting.front();
      Req& q = ctx_.pool[qi];
      const std::int64_t commit = r.blocks_for(q.input + (r.role == Role::prefill ? 0 : q.output + r.lookahead()));
      if (!r.fits_commit(commit, 0)) break;
      const Admit a = probe(r, q);
      const std::int64_t tokens = q.target - a.hit;
      if (!e.chunked_prefill && tokens > left) break;
      const std::int64_t chunk = std::min(tokens, left);
      q.commit = commit;
      r.kv[0].committed += commit;
      admit(r, qi, a, chunk);
      left -= chunk;
    }
    finish_plan(r);
  }

 private:
  // Attention data-parallel ranks (Replica::rank_limits; TensorRT-LLM's enable_attention_dp):
  // each rank schedules its own requests with the configured max_num_tokens and
  // max_batch_size, as the one-rank plan above does, its requests waiting in their own queue
  // (kept as one queue in arrival order, each rank reading its own from it; first come, first
  // served within a rank). Each rank has its own KV pool (Replica::kv): a commitment is
  // checked against its rank's cache.
  void plan_ranks(Replica& r) {
    const EngineConfig& e = ctx_.engine;
    std::vector<std::int64_t>& left = ctx_.rank_left;
    schedule_decodes(r);
    for (std::size_t g = 0; g < left.size(); ++g) left[g] = e.max_batched_tokens - r.rank_decode[g] * r.queries();
    schedule_rank_chunks(r);
    admit_by_rank(r, nullptr, ctx_.engine.max_num_seqs, [&](std::int32_t qi, std::size_t g, std::size_t at) {
      Req& q = ctx_.pool[qi];
      const std::int64_t commit = r.blocks_for(q.input + (r.role == Role::prefill ? 0 : q.output + r.lookahead()));
      if (!r.fits_commit(commit, g)) return false;
      const Admit a = probe(r, q);
      const std::int64_t tokens = q.target - a.hit;
      if (!e.chunked_prefill && tokens > left[g]) return false;
      const std::int64_t chunk = std::min(tokens, left[g]);
      q.commit = commit;
      r.kv[g].committed += commit;
      admit(r, qi, a, chunk, at);
      left[g] -= chunk;
      return true;
    });
    finish_plan(r);
  }
};

}  // namespace

std::unique_ptr<Scheduler> make_trtllm_scheduler(SimContext& ctx) { return std::make_unique<TrtllmScheduler>(ctx); }

}  // namespace ridgeline::serving::detail
