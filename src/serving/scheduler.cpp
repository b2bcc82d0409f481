// The moves every scheduler makes: admit, chunk, decode, preempt, swap back in.
#include "scheduler.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::serving::detail {

Scheduler::Admit Scheduler::probe(const Replica& r, const Req& q) const {
  Admit a;
  a.hit = r.prefix_hit(q, ctx_.partial_reuse);
  a.free_after = r.kv_of(q).free;
  if (a.hit > 0) {
    const Group& g = r.group_of(q);
    a.prefix_blocks = std::min(g.cached, r.blocks_for(a.hit));
    if (g.refs == 0) a.free_after -= g.cached;  // referencing them takes them off the free queue
  }
  return a;
}

void Scheduler::admit(Replica& r, std::int32_t qi, const Admit& a, std::int64_t chunk, std::size_t at) {
  Req& q = ctx_.pool[qi];
  if (at == 0) r.waiting.pop_front();
  else r.waiting.erase(r.waiting.begin() + static_cast<std::ptrdiff_t>(at));
  r.waiting_changed(q, -1);
  q.phase = Phase::prefill;
  q.computed = a.hit;
  q.blocks = 0;
  if (q.admitted < 0) {
    q.admitted = r.now;
    q.cached = a.hit;
  }
  r.outstanding_tokens -= a.hit;  // found cached: nothing to compute
  if (a.hit > 0) r.ref_prefix(q, a.hit);
  r.push_running(qi);
  r.prefilling.push_back(qi);
  if (chunk > 0) schedule_chunk(r, qi, chunk);
}

std::int64_t Scheduler::chunk_blocks(const Replica& r, const Req& q, std::int64_t chunk) const {
  return std::max<std::int64_t>(0, r.blocks_for(q.computed + chunk) - q.shared - q.blocks);
}

void Scheduler::schedule_chunk(Replica& r, std::int32_t qi, std::int64_t chunk) {
  Req& q = ctx_.pool[qi];
  const std::int64_t n = chunk_blocks(r, q, chunk);
  r.take_blocks(n, r.kv_index(q));
  q.blocks += n;
  r.plan.chunks.emplace_back(qi, chunk);
}

void Scheduler::schedule_rank_chunks(Replica& r) {
  std::vector<std::int64_t>& left = ctx_.rank_left;
  for (std::size_t i = 0; i < r.prefilling.size(); ++i) {
    const std::int32_t qi = r.prefilling[i];
    const auto g = static_cast<std::size_t>(r.rank_of(ctx_.pool[qi]));
    const std::int64_t chunk = std::min(ctx_.pool[qi].target - ctx_.pool[qi].computed, left[g]);
    if (chunk <= 0) continue;
    schedule_chunk(r, qi, chunk);
    left[g] -= chunk;
  }
}

void Scheduler::schedule_decodes(Replica& r) {
  if (r.n_decode == 0) return;
  r.take_decode_blocks();
  r.plan.decode = true;
}

void Scheduler::preempt(Replica& r, std::int32_t qi) {
  Req& q = ctx_.pool[qi];
  ++q.preemptions;
  ++ctx_.preemptions;
  ++r.plan.preempted;
  const bool decoding = q.phase == Phase::decode;
  if (decoding) {
    // Its last token came at the end of the last decode step it took part in.
    if (q.d0 < r.step_of(q)) q.last_token = r.last_end_of(q);
    q.computed = r.context_before(q);
    q.emitted = r.emitted_before(q);
  }
  // The router's load: a recompute adds its prompt and outputs again.
  const std::int64_t before = decoding ? q.output - q.emitted : remaining_tokens(q);
  r.remove_running(qi);
  if (decoding && ctx_.engine.preemption == Preemption::swap) {
    // Its KV (own blocks and a private copy of its prefix) goes to host memory: the blocks of
    // its cached tokens (slots of drafts its last step rejected are not kept).
    const std::int64_t own = r.decode_blocks(q), total = r.blocks_for(q.computed);
    r.leave_decode(qi);
    r.give_blocks(own, r.kv_index(q));
    r.unref_prefix(q);
    q.blocks = total;
    q.phase = Phase::swapped;
    r.plan.extra_s += static_cast<double>(total) * ctx_.swap_s_per_block;
  } else {
    if (decoding) r.leave_decode(qi);
    r.release(q);
    q.phase = Phase::waiting;
    q.computed = 0;
    q.target = q.input + q.emitted;  // the prompt and every token emitted so far
    r.outstanding_tokens += remaining_tokens(q) - before;
  }
  r.kv_of(q).committed -= q.commit;
  q.commit = 0;
  r.waiting.push_front(qi);
  r.waiting_changed(q, 1);
}

bool Scheduler::swap_in(Replica& r, std::int32_t qi, std::size_t at) {
  Req& q = ctx_.pool[qi];
  // Its blocks come back, and those of the slots it computes now (one more when they are full).
  const std::int64_t need = q.blocks + r.blocks_for(q.computed + r.queries()) - r.blocks_for(q.computed);
  if (!r.fits(need, r.kv_index(q))) return false;
  if (at == 0) r.waiting.pop_front();
  else r.waiting.erase(r.waiting.begin() + static_cast<std::ptrdiff_t>(at));
  r.waiting_changed(q, -1);
  r.take_blocks(need, r.kv_index(q));
  r.plan.extra_s += static_cast<double>(q.blocks) * ctx_.swap_s_per_block;
  q.blocks = 0;
  r.push_running(qi);
  r.join_decode(qi, true);
  r.plan.decode = true;
  return true;
}

void Scheduler::finish_plan(Replica& r) {
  StepPlan& p = r.plan;
  if (p.decode) {
    r.settle_window();
    r.add_decodes(p.mix, r.queries());
  }
  for (const auto& [qi, chunk] : p.chunks) {
    const Req& q = ctx_.pool[qi];
    p.mix.add_prefill(static_cast<double>(chunk), static_cast<double>(q.computed + chunk), ctx_.window);
  }
  p.mix.fused_attention = ctx_.engine.fused_attention;
  if (r.ranks() > 1) rank_mixes(r);
  if (r.queries() == 1) return;
  // The draft: a first pass over the chunks and one token per decode sequence, then k - 1
  // passes of one token each, priced at their mean context (after 1 + k/2 more tokens).
  const std::int64_t k = r.queries() - 1;
  p.drafted = true;
  p.draft_first = p.mix;
  p.draft_first.clear_decodes();
  if (p.decode) {
    r.add_decodes(p.draft_first, 1);
    if (k > 1) r.add_decodes(p.draft_rest, 1, static_cast<double>(k) / 2);
  }
  p.draft_rest.fused_attention = p.draft_first.fused_attention = ctx_.engine.fused_attention;
  if (r.ranks() == 1) return;
  // Each rank drafts its own sequences: its chunks and one token per decode sequence, then its
  // decode sequences alone (the draft's steps are the ranks' too: its MoE layers, if any, wait
  // for every rank, and an idle rank runs a dummy pass).
  for (std::size_t g = 0; g < p.ranks.size(); ++g) {
    model::StepMix& first = p.draft_ranks_first[g];
    model::StepMix& rest = p.draft_ranks_rest[g];
    first = p.ranks[g];
    first.clear_decodes();
    rest = model::StepMix{};
    rest.fused_attention = first.fused_attention;
    if (!p.decode || !r.decodes(g)) continue;
    r.add_rank_decodes(first, static_cast<std::int64_t>(g), 1);
    if (k > 1) r.add_rank_decodes(rest, static_cast<std::int64_t>(g), 1, static_cast<double>(k) / 2);
  }
}

void Scheduler::rank_mixes(Replica& r) {
  // Each attention data-parallel rank is an engine of its own (vLLM: a DPEngineCoreProc with its
  // own Scheduler and KV cache per rank, vllm/v1/engine/core.py; SGLang --enable-dp-attention: a
  // scheduler per DP rank behind the DataParallelController), and the ranks step together (the
  // MoE all-to-alls; idle ranks run dummy batches: DPEngineCoreProc's execute_dummy_batch).
  // Each rank's mix: its own decode sequences at their own contexts and the chunks of its own
  // requests (Replica::rank_of).
  StepPlan& p = r.plan;
  for (model::StepMix& m : p.ranks) {
    m = model::StepMix{};
    m.fused_attention = p.mix.fused_attention;
  }
  if (p.decode) {
    for (std::size_t g = 0; g < p.ranks.size(); ++g) {
      if (r.decodes(g)) r.add_rank_decodes(p.ranks[g], static_cast<std::int64_t>(g), r.queries());
    }
  }
  for (const auto& [qi, chunk] : p.chunks) {
    const Req& q = ctx_.pool[qi];
    p.ranks[static_cast<std::size_t>(r.rank_of(q))].add_prefill(static_cast<double>(chunk), static_cast<double>(q.computed + chunk), ctx_.window);
  }
}

std::unique_ptr<Scheduler> make_scheduler(SimContext& ctx) {
  switch (ctx.engine.kind) {
    case EngineKind::vllm: return make_vllm_scheduler(ctx);
    case EngineKind::sglang: return make_sglang_scheduler(ctx);
    case EngineKind::trtllm: return make_trtllm_scheduler(ctx);
    case EngineKind::static_batch: return make_static_scheduler(ctx);
  }
  return make_vllm_scheduler(ctx);
}

}  // namespace ridgeline::serving::detail
