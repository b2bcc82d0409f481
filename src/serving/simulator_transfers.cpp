// Disaggregated serving in the simulator: a prefilled request handed over to a decode
// instance, its KV sent over the link between them, and the rates that match the two sides
// (docs/serving.md#disaggregated-prefill-and-decode).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "ridgeline/core/error.hpp"
#include "ridgeline/serving/kv_connector.hpp"
#include "simulation.hpp"

namespace ridgeline::serving {

using detail::draft_passes_s;
using detail::resolved_engine;

namespace detail {

TransferLink transfer_link(const hw::System& sys, const ServeConfig& cfg) {
  const Disagg& dg = cfg.disagg;
  TransferLink l;
  const InstancePlan dp = instance_plan(cfg, true);
  const std::int64_t chips = dg.prefill * cfg.forward.tp * cfg.forward.ep + dg.decode * dp.forward.tp * dp.forward.ep;
  const int node = sys.chip.link_index(hw::LinkScope::node), net = sys.chip.link_index(hw::LinkScope::network);
  const int i = (chips <= sys.domain() && node >= 0) || net < 0 ? node : net;
  if (i >= 0) {
    const hw::LinkSpec& k = sys.chip.links[static_cast<std::size_t>(i)];
    l.name = std::string(hw::name(k.scope));
    l.Bps = k.chip_bandwidth_Bps() * (k.efficiency > 0 ? k.efficiency : sys.chip.efficiency.link);
    l.latency_s = k.latency_s;
  }
  if (dg.link_Bps > 0) l.name = "given", l.Bps = dg.link_Bps;
  if (dg.link_latency_s >= 0) l.latency_s = dg.link_latency_s;
  return l;
}

// A prompt prefilled on instance p: its request leaves p (keeping its blocks until its KV
// is sent) for a decode instance, where it waits for the blocks to receive it.
void Simulation::hand_over(Replica& p, std::int32_t qi, Ps t) {
  Req& q = pool_[qi];
  p.remove_running(qi);
  p.outstanding_tokens -= q.output - q.emitted;
  q.phase = Phase::transfer;
  q.source = p.index;
  q.source_commit = q.commit;
  q.commit = 0;
  ++p.in_transfer;
  q.prefill_end = t;
  Replica& d = pick(routed_, replicas_.size() - routed_, decode_rr_);
  q.replica = d.index;
  d.know_group(q);  // a preempted request prefills again there, looking for its prefix
  d.outstanding_tokens += q.output;
  d.kv_queue.push_back(qi);
  allocate(d, t);
}

// Blocks of a handed-over request on decode instance d: the prompt's tokens but the last
// (computed again), less the prefix its own cache holds; TensorRT-LLM and static commit the
// whole request, SGLang keeps room for its output (clipped) as its admission does.
void Simulation::allocate(Replica& d, Ps t) {
  Tier& k = tier(d);
  const EngineConfig& e = k.engine;
  // First come, first served within each pool: with a pool per attention data-parallel rank
  // (Replica::kv), each rank's scheduler keeps its own queue of requests waiting for their KV,
  // so one its rank has no room for holds back that rank's later ones only.
  const std::size_t pools = d.kv.size();
  std::vector<std::uint8_t>& held = k.ctx.rank_stop;  // (scratch, sized to the ranks)
  if (pools > 1) std::fill(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(pools), std::uint8_t{0});
  std::size_t blocked = 0;
  for (std::size_t i = 0; i < d.kv_queue.size() && blocked < pools;) {
    const std::int32_t qi = d.kv_queue[i];
    Req& q = pool_[qi];
    const std::size_t rank = d.kv_index(q);
    if (pools > 1 && held[rank] != 0) {
      ++i;
      continue;
    }
    // The decode side pulls only what its prefix cache lacks (vLLM's NIXL connector:
    // get_num_new_matched_tokens counts the prompt beyond the local hit): the hit's blocks are
    // referenced, taken off the free queue when nothing else references them.
    const std::int64_t hit = d.prefix_hit(q, e.partial_reuse);
    std::int64_t shared = 0, unfree = 0;
    if (hit > 0) {
      const detail::Group& g = d.group_of(q);
      shared = std::min(g.cached, d.blocks_for(hit));
      unfree = g.refs == 0 ? g.cached : 0;
    }
    const std::int64_t need = d.blocks_for(q.input - 1) - shared;
    detail::Replica::KvPool& kv = d.kv[rank];  // (its rank's pool: Replica::kv)
    const std::int64_t commit = e.admission == Admission::completion ? d.blocks_for(q.input + q.output + d.lookahead()) : 0;
    const std::int64_t room = e.admission == Admission::ratio_reserve ? d.blocks_for(std::min(q.output, e.reserve_clip_tokens)) : 0;
    if (kv.committed + commit > kv.total || need + unfree + room > kv.free) {
      if (pools > 1) held[rank] = 1;
      ++blocked;
      ++i;
      continue;
    }
    if (e.admission == Admission::completion) {
      q.commit = commit;
      kv.committed += commit;
    }
    d.kv_queue.erase(d.kv_queue.begin() + static_cast<std::ptrdiff_t>(i));
    if (hit > 0) {
      // q.shared is still the prefill instance's reference until the transfer ends.
      const std::int64_t source_shared = q.shared;
      d.ref_prefix(q, hit);
      q.dest_shared = q.shared;
      q.shared = source_shared;
    }
    d.take_blocks(need, rank);
    touch(d);
    ++d.in_transfer;
    // The KV of the input - 1 - hit tokens pulled, each decode chip receiving its share; fewer
    // prefill chips (a smaller TP) each send decode TP / prefill TP of those shares. The
    // connector posts a descriptor per block of each region (K and V of each layer) on every
    // decode chip before the link moves them (docs/serving.md#kv-connector).
    const std::int64_t pulled = q.input - 1 - hit;
    const double bytes = static_cast<double>(pulled) * k.mem.kv_bytes_per_token * fan_in_;
    const double descriptors =
        static_cast<double>(kv_regions(m_)) * static_cast<double>((q.input - 1 + e.kv_block - 1) / e.kv_block - hit / e.kv_block);
    const DisaggResult& link = result_.disagg;
    double send = kv_transfer_s(bytes, descriptors, link.link_Bps, 0, cfg_.disagg.descriptor_s);
    if (cfg_.disagg.layerwise) {
      // Layer by layer behind the prefill: all but the last layer's share may be hidden.
      const double prefill_s = to_s(q.prefill_end - q.admitted);
      send = std::max(send / static_cast<double>(m_.layers), send - prefill_s);
    }
    const double exposed = link.link_latency_s + send;
    if (!(exposed <= kMaxSimulated_s - to_s(t))) {
      time_overflow(fmt::format("the KV transfer of request {} ({:.3g} bytes at {:.3g} B/s)", q.id, bytes, link.link_Bps), t, exposed);
    }
    transfer_s_sum_ += exposed;
    kv_wait_s_sum_ += to_s(t - q.prefill_end);
    bytes_sum_ += bytes;
    descriptors_sum_ += descriptors;
    hit_tokens_sum_ += static_cast<double>(hit);
    ++transfers_done_;
    transfers_.push({t + std::max<Ps>(1, to_ps(exposed)), qi});
  }
}

// The KV of request qi arrived: the prefill instance frees it, the decode instance runs it.
void Simulation::received(std::int32_t qi) {
  Req& q = pool_[qi];
  Replica& p = replicas_[static_cast<std::size_t>(q.source)];
  p.release(q);
  p.kv_of(q).committed -= q.source_commit;
  q.source_commit = 0;
  --p.in_transfer;
  touch(p);
  mark(p);
  Replica& d = replicas_[static_cast<std::size_t>(q.replica)];
  q.shared = q.dest_shared;  // the decode instance's prefix hit (allocate)
  q.dest_shared = 0;
  q.computed = q.input - 1;
  q.target = q.input;
  q.blocks = 0;
  q.source = -1;
  if (q.group >= 0 && q.computed >= q.prefix_tokens) d.publish_prefix(q);  // its prefix now cached there too
  --d.in_transfer;
  d.arrived.push_back(qi);
  touch(d);
  mark(d);
}

}  // namespace detail

void disagg_rates(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, double prompt, double gen,
                  DisaggResult& out) {
  // Each instance's plan and engine as the simulator runs them.
  const InstancePlan pp = instance_plan(cfg, false), dp = instance_plan(cfg, true);
  // (The prefill side's sequence limit, which SGLang resolves from its cache, plays no part.)
  const ServeMemory mem = serve_memory(m, sys, cfg, true);
  const EngineConfig& pe = pp.engine;
  const EngineConfig e = resolved_engine(m, dp, mem);
  auto step = std::make_unique<StepModel>();
  step->prepare(m, sys, engine_forward(pp.forward, pe));
  const double budget = static_cast<double>(pe.max_batched_tokens), window = static_cast<double>(m.sliding_window);
  // Attention data-parallel ranks (docs/serving.md#moe-layouts): each runs its own forward,
  // launched by its own tokens; under vLLM V1 and TensorRT-LLM each has the whole budget and
  // sequence limit, under SGLang its share of the server's.
  const double pranks = static_cast<double>(std::max<std::int64_t>(1, pp.forward.ep));
  const double dranks = static_cast<double>(std::max<std::int64_t>(1, dp.forward.ep));
  const double budgets = limits_per_rank(pe, pp.forward.ep) ? pranks : 1;
  model::StepMix pre;
  pre.fused_attention = pe.fused_attention;
  double prompts = 0;  // prompts one step prefills
  if (prompt >= budget) {
    pre.add_prefill(budget, budget, window);
    prompts = budget / prompt;
  } else {
    prompts = std::floor(budget / prompt);
    for (double i = 0; i < prompts; ++i) pre.add_prefill(prompt, prompt, window);
  }
  pre.scale(budgets);
  prompts *= budgets;
  out.prefill_rate = prompts / step_period(pe, step->time(pre, mixed_step_graphs(pe, rank_tokens(pre.tokens(), pp.forward.ep))), pre.seqs());
  const model::ForwardConfig f = engine_forward(dp.forward, e);
  step->prepare(m, sys, f);
  const double limit = (e.max_num_seqs > 0 ? static_cast<double>(e.max_num_seqs) : 2048) * (limits_per_rank(e, dp.forward.ep) ? dranks : 1);
  const double batch = std::max(1.0, std::floor(std::min(limit, static_cast<double>(mem.kv_tokens) / (prompt + gen))));
  const double q = static_cast<double>(cfg.spec.k + 1), k = static_cast<double>(cfg.spec.k), c = prompt + gen / 2;
  model::StepMix dec, first, rest;
  for (double i = 0; i < batch; ++i) {
    dec.add_decode(c + q, window, q);
    first.add_decode(c + 1, window), rest.add_decode(c + 1 + k / 2, window);
  }
  dec.fused_attention = first.fused_attention = rest.fused_attention = e.fused_attention;
  const GraphMode mode = decode_step_graphs(e, rank_tokens(dec.decode_seqs, dp.forward.ep), rank_tokens(dec.decode_tokens, dp.forward.ep));
  double device = step->time(dec, mode);
  if (cfg.spec.on()) {
    // The draft's k passes, as the simulator prices them: with ranks, each rank's equal share,
    // launched by its own tokens.
    step->prepare(*cfg.spec.draft, sys, draft_forward(f, cfg.spec.mtp));
    StepTimeMemo memo[2];
    const std::size_t n = dranks > 1 ? static_cast<std::size_t>(dranks) : 0;
    const std::vector<model::StepMix> first_ranks(n, step->group_share(first)), rest_ranks(n, step->group_share(rest));
    StepModel::RankMemo rank_memo[2];
    device += draft_passes_s(*step, e, cfg.spec.k, first, rest, false, memo, n, first_ranks.data(), rest_ranks.data(), rank_memo);
  }
  out.decode_rate = batch * model::tokens_per_step(cfg.spec) / (gen * step_period(e, device, batch, false, decode_schedule_share(e)));
  out.prefill_per_decode = out.decode_rate / out.prefill_rate;
}

}  // namespace ridgeline::serving
