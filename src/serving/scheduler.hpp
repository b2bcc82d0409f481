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
  std::vector<std::int64_t> rank_input_left;  // scratch: each rank's prefill token limit left (SGLang)
  std::vector<std::uint8_t> rank_prefills;    // scratch: ranks that prefill in the step (SGLang)
};

class Scheduler {
 public:
  explicit Scheduler(SimContext& ctx) : ctx_(ctx) {}
  virtual ~Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  // Fills r.plan (cleared first) with the next step; an empty plan means nothing can run.
  virtual void plan(Replica& r) = 0;
  // A quiet decode step (Replica::quiet_steps) run without plan(): what plan() changes besides
  // the step's decode sums. Its new blocks taken (TensorRT-LLM and static batching take them
  // unchecked: their commitments hold them); vLLM and SGLang check them first, and SGLang's ratio decays.
  virtual void quiet_decode(Replica& r) { r.take_decode_blocks(); }

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
  // Attention data-parallel ranks (Replica::rank_limits): each prefilling request's next chunk
  // within its own rank's budget left (SimContext::rank_left).
  void schedule_rank_chunks(Replica& r);
  // Each rank admits its own waiting requests in arrival order (one queue, each rank reading
  // its own from it): try_admit(qi, rank, at) admits the request at position `at` of the queue
  // (taking its rank's budget) or says no. A rank stops at its first refusal (first come,
  // first served within the rank), at its budget or its sequence limit `limit`, and after its
  // last waiting request; `blocked` (or null): ranks that admit nothing in this step. The scan
  // ends once every rank has stopped.
  template <class TryAdmit>
  void admit_by_rank(Replica& r, const std::vector<std::uint8_t>* blocked, std::int64_t limit, TryAdmit&& try_admit) {
    std::vector<std::int64_t>& left = ctx_.rank_left;
    std::vector<std::uint8_t>& stop = ctx_.rank_stop;
    const std::size_t R = left.size();
    auto full = [&](std::size_t g) { return left[g] <= 0 || r.rank_running[g] >= limit || r.rank_waiting[g] == 0; };
    std::size_t stopped = 0;
    for (std::size_t g = 0; g < R; ++g) {
      stop[g] = (blocked != nullptr && (*blocked)[g]) || full(g);
      stopped += stop[g];
    }
    std::size_t i = 0;
    while (i < r.waiting.size() && stopped < R) {
      const std::int32_t qi = r.waiting[i];
      const auto g = static_cast<std::size_t>(r.rank_of(ctx_.pool[qi]));
      if (stop[g]) {
        ++i;
        continue;
      }
      const bool admitted = try_admit(qi, g, i);
      // Admitted: it left the queue (the next one is at i now); else its rank stops.
      if (!admitted || full(g)) {
        if (!stop[g]) ++stopped;
        stop[g] = 1;
        if (!admitted) ++i;
      }
    }
  }

  SimContext& ctx_;
};

std::unique_ptr<Scheduler> make_vllm_scheduler(SimContext& ctx);
std::unique_ptr<Scheduler> make_sglang_scheduler(SimContext& ctx);
std::unique_ptr<Scheduler> make_trtllm_scheduler(SimContext& ctx);
std::unique_ptr<Scheduler> make_static_scheduler(SimContext& ctx);
std::unique_ptr<Scheduler> make_scheduler(SimContext& ctx);

}  // namespace ridgeline::serving::detail
