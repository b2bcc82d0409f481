#pragma once
// Engine schedulers behind one interface (private to the simulator): each fills a replica's
// next step from its running and waiting requests (docs/serving.md#engines). The shared
// moves — admitting, chunking, preempting — are the Scheduler's own helpers.
#include <cstdint>
#include <memory>
#include <vector>

#include "replica.hpp"

namespace ridgeline::serving::detail {

// What every scheduler of a run shares.
struct SimContext {
  std::vector<Req>& pool;
  const EngineConfig& engine;
  double window = 0;            // the model's sliding window (0: none)
  double swap_s_per_block = 0;  // host link time of one KV block, one direction
  bool partial_reuse = false;   // a partly filled last prefix block is reused (TensorRT-LLM)
  std::int64_t preemptions = 0;
  // Attention data-parallel ranks (ForwardConfig::ep), each an engine of its own
  // (docs/serving.md#moe-layouts).
  std::int64_t groups = 1;
  std::vector<std::int64_t> rank_left;  // scratch: each rank's token budget left in the step
  std::vector<std::uint8_t> rank_stop;  // scratch: ranks that admit no more in the step
  std::vector<std::uint8_t> rank_preempted;  // scratch: ranks that preempted in the step
};

class Scheduler {
 public:
  explicit Scheduler(SimContext& ctx) : ctx_(ctx) {}
  virtual ~Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  // Fills r.plan (cleared first) with the next step; an empty plan means nothing can run.
  virtual void plan(Replica& r) = 0;
  // A quiet decode step (Replica::quiet_steps) run without plan(): what plan() would change
  // besides the step's decode sums (nothing, but for SGLang's decaying ratio).
  virtual void quiet_decode(Replica&) {}

 protected:
  // The tokens of q still to compute before its next output, after a prefix hit on admission.
  struct Admit {
    std::int64_t hit = 0;         // tokens found cached
    std::int64_t free_after = 0;  // free blocks once its prefix is referenced
    std::int64_t prefix_blocks = 0;  // blocks of the prefix it would reference
  };
  Admit probe(const Replica& r, const Req& q) const;
  // StepPlan::ranks of a step whose mix is complete (Replica::ranks() > 1).
  void rank_mixes(Replica& r);
  // Admits q (at `at` in the waiting queue: its front unless ranks queue apart) with `a` and
  // a first chunk of `chunk` tokens.
  void admit(Replica& r, std::int32_t q, const Admit& a, std::int64_t chunk, std::size_t at = 0);
  // Own blocks q needs to hold computed + chunk tokens, beyond those it holds.
  std::int64_t chunk_blocks(const Replica& r, const Req& q, std::int64_t chunk) const;
  // Adds a chunk of q to the plan, taking its blocks.
  void schedule_chunk(Replica& r, std::int32_t q, std::int64_t chunk);
  // Takes the blocks of the decode step and adds the decode sequences to the plan.
  void schedule_decodes(Replica& r);
  // Preempts running request q (recompute or swap); back to the front of the waiting queue.
  void preempt(Replica& r, std::int32_t q);
  // A swapped request at the front of the waiting queue comes back if its blocks are free:
  // it decodes again from this step on.
  bool swap_in(Replica& r, std::int32_t q, std::size_t at = 0);
  // Fills the plan's mix from its decodes and chunks.
  void finish_plan(Replica& r);

  SimContext& ctx_;
};

std::unique_ptr<Scheduler> make_vllm_scheduler(SimContext& ctx);
std::unique_ptr<Scheduler> make_sglang_scheduler(SimContext& ctx);
std::unique_ptr<Scheduler> make_trtllm_scheduler(SimContext& ctx);
std::unique_ptr<Scheduler> make_static_scheduler(SimContext& ctx);
std::unique_ptr<Scheduler> make_scheduler(SimContext& ctx);

}  // namespace ridgeline::serving::detail
