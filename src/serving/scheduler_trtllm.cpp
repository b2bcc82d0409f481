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
      if (!r.fits_commit(commit)) break;
      const Admit a = probe(r, q);
      const std::int64_t tokens = q.target - a.hit;
      if (!e.chunked_prefill && tokens > left) break;
      const std::int64_t chunk = std::min(tokens, left);
      q.commit = commit;
      r.committed += commit;
      admit(r, qi, a, chunk);
      left -= chunk;
    }
    finish_plan(r);
  }
};

}  // namespace

std::unique_ptr<Scheduler> make_trtllm_scheduler(SimContext& ctx) { return std::make_unique<TrtllmScheduler>(ctx); }

}  // namespace ridgeline::serving::detail
