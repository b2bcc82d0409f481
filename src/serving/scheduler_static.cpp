// Static batching, as `infer` models it: when the replica is empty, up to max_num_seqs
// waiting requests are admitted together (blocks to completion kept for each), prefilled in
// one step, and decoded until the last of them ends; then the next batch.
#include "scheduler.hpp"

namespace ridgeline::serving::detail {

namespace {

class StaticScheduler final : public Scheduler {
 public:
  using Scheduler::Scheduler;

  void plan(Replica& r) override {
    r.plan.clear();
    const EngineConfig& e = ctx_.engine;
    if (r.running_count == 0) {
      while (!r.waiting.empty() && r.running_count < e.max_num_seqs) {
        const std::int32_t qi = r.waiting.front();
        Req& q = ctx_.pool[qi];
        const std::int64_t commit = r.blocks_for(q.input + (r.role == Role::prefill ? 0 : q.output + r.lookahead()));
        if (!r.fits_commit(commit, 0)) break;
        const Admit a = probe(r, q);
        q.commit = commit;
        r.kv[0].committed += commit;
        admit(r, qi, a, q.target - a.hit);
      }
    } else {
      schedule_decodes(r);
    }
    finish_plan(r);
  }
};

}  // namespace

std::unique_ptr<Scheduler> make_static_scheduler(SimContext& ctx) { return std::make_unique<StaticScheduler>(ctx); }

}  // namespace ridgeline::serving::detail
