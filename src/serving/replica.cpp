// One engine replica's state: running list, decode sums, paged KV cache with prefixes.
#include "replica.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "ridgeline/ops/attention.hpp"

namespace ridgeline::serving::detail {

namespace {
std::int64_t mod(std::int64_t a, std::int64_t m) {
  const std::int64_t r = a % m;
  return r < 0 ? r + m : r;
}
std::int64_t floor_div(std::int64_t a, std::int64_t m) { return (a - mod(a, m)) / m; }
}  // namespace

Replica::Replica(std::vector<Req>& pool_, const EngineConfig& e, std::int64_t blocks, double window, std::int32_t index_,
                 Emission emission, const KvLayout& layout, std::int64_t ranks)
    : index(index_), pool(pool_), engine(e), ranks_(std::max<std::int64_t>(1, ranks)), block_(std::max<std::int64_t>(1, e.kv_block)),
      layout_(layout), window_(window), emission_(emission) {
  layout_.block_tokens = block_;
  if ((block_ & (block_ - 1)) == 0) block_mask_ = block_ - 1;
  classes_ = std::max<std::size_t>(1, emission_.cohort_rates.size());
  cohorts_.resize(classes_ * static_cast<std::size_t>(ranks_));
  for (std::size_t i = 0; i < cohorts_.size(); ++i) {
    Cohort& c = cohorts_[i];
    c.rate = emission_.cohort_rates.empty() ? emission_.rate : emission_.cohort_rates[i % classes_];
    c.phase.assign(static_cast<std::size_t>(block_), 0);
    if (layout_.hybrid()) c.phase_window.assign(static_cast<std::size_t>(block_), 0);
  }
  const auto R = static_cast<std::size_t>(ranks_);
  if (ranks_ > 1) plan.ranks.assign(R, model::StepMix{});
  if (ranks_ > 1 && emission_.queries > 1) plan.draft_ranks_first = plan.draft_ranks_rest = plan.ranks;
  rank_limits = ranks_apart(e, ranks_);
  steps_apart = detail::steps_apart(e, ranks_);
  if (steps_apart) plan.decoding.assign(R, 0);
  new_token_ratio.assign(steps_apart ? R : 1, e.new_token_ratio_init);
  const std::size_t lanes = steps_apart ? R : 1;
  more_lanes_.resize(lanes - 1);
  if (rank_limits) {
    rank_running.assign(static_cast<std::size_t>(ranks_), 0);
    rank_decode.assign(static_cast<std::size_t>(ranks_), 0);
    rank_waiting.assign(static_cast<std::size_t>(ranks_), 0);
    rank_incoming.assign(static_cast<std::size_t>(ranks_), 0);
    rank_prompt_tokens.assign(static_cast<std::size_t>(ranks_), 0);
    rank_join_extra_.assign(static_cast<std::size_t>(ranks_), 0);
    rank_phase_need_.assign(static_cast<std::size_t>(ranks_), 0);
  }
  kv.resize(rank_limits ? static_cast<std::size_t>(ranks_) : 1);
  all_blocks_ = blocks;
  for (std::size_t k = 0; k < kv.size(); ++k) {
    KvPool& p = kv[k];
    p.total = p.free = kv.size() == 1 ? blocks : rank_pool_blocks(blocks, ranks_, static_cast<std::int64_t>(k));
    p.free_queue.push_back({-1, p.total});
  }
}

std::size_t Replica::phase_of(std::int64_t t) const {
  // t mod block, >= 0 (two's complement: the mask gives it for a power of two).
  return static_cast<std::size_t>(block_mask_ >= 0 ? (t & block_mask_) : mod(t, block_));
}

std::int64_t Replica::G_rate(const Cohort& c, std::int64_t d) { return floor_div(d * c.rate, Emission::kRateOne); }

std::int64_t Replica::first_step(const Cohort& c, std::int64_t x) {
  // floor(j·rate / one) >= x  <=>  j·rate >= x·one  <=>  j >= ceil(x·one / rate).
  return -floor_div(-x * Emission::kRateOne, c.rate);
}

std::int64_t Replica::lane_decode_tokens(std::size_t lane) const {
  std::int64_t s = 0;
  for (std::size_t i = lane_first(lane), end = lane_last(lane); i < end; ++i) {
    const Cohort& c = cohorts_[i];
    s += c.n == 0 ? 0 : c.n * (G(c, c.step + 1) - G(c, c.step));
  }
  return s;
}

void Replica::advance_lanes(Ps t) {
  for (std::size_t l = 0; l < lanes(); ++l) {
    if (!decodes(l)) continue;
    for (std::size_t i = lane_first(l), end = lane_last(l); i < end; ++i) ++cohorts_[i].step;
    lane(l).last_end = t;
  }
}

void Replica::place(Req& q) {
  // (Disaggregated instances: rank_of takes id mod ranks on each instance, its own ranks, as
  // before; SGLang's follow_bootstrap_room sends a request to bootstrap_room mod dp_size on each
  // side, the room drawn per request.)
  q.rank = 0;
  if (ranks_ == 1 || role != Role::both) return;
  std::int64_t k = 0;
  if (!balances_ranks()) {
    // SGLang: each server's DataParallelController sends its requests to its DP ranks in turn
    // (load_balance_method round_robin, the default: round_robin_scheduler sends to
    // workers[round_robin_counter] and advances the counter mod dp_size; the counter starts at 0).
    // python/sglang/srt/managers/data_parallel_controller.py at 000a3db1. (vLLM V0 and static
    // batching have no attention data parallelism of their own: the same turns.)
    k = rank_turn_;
    rank_turn_ = (rank_turn_ + 1) % ranks_;
  } else {
    k = engine.kind == EngineKind::vllm ? least_scored_rank() : balanced_rank();
  }
  q.rank = static_cast<std::int32_t>(k);
  if (balances_ranks()) rank_prompt_tokens[static_cast<std::size_t>(k)] += q.input;
}

std::int64_t Replica::least_scored_rank() const {
  // vLLM V1: the front end (DPLBAsyncMPClient.get_core_engine_for_request, vllm/v1/engine/
  // core_client.py at 364631ab) scans the engines from eng_start_index (0 for one API server)
  // and takes the first of the least score waiting x 4 + running, the counts the DP coordinator
  // publishes (vllm/v1/engine/coordinator.py at 0090ad12, CoordinatorProc: each engine's
  // num_waiting_reqs and num_running_reqs, at most every 100 ms) with 1 added to the chosen
  // engine's waiting at each request sent. Read here at the arrival, exact: a request the engine
  // has not yet queued (incoming) counts waiting, as the front end's own increment counts it.
  // (Early V1, 0.8.x, took the engine of fewest requests in flight, unweighted; the 0.8 and
  // 0.9-0.10 presets follow 0.10. Newer main rotates the scan start and weighs waiting by KV use,
  // PRs #47420 and #49204: not modelled, docs/serving.md#moe-layouts.)
  std::int64_t k = 0, best = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t g = 0; g < ranks_; ++g) {
    const auto i = static_cast<std::size_t>(g);
    const std::int64_t score = 4 * (rank_waiting[i] + rank_incoming[i]) + rank_running[i];
    if (score < best) best = score, k = g;
  }
  return k;
}

std::int64_t Replica::balanced_rank() const {
  // TensorRT-LLM with attention DP (tensorrt_llm/_torch/pyexecutor/executor_request_queue.py at
  // 007a7508): _fetch_new_requests_attention_dp gathers each rank's active requests and the sum
  // of their prompt lengths (py_orig_prompt_len); _schedule_attention_dp_requests sets
  // expected = max(ceil((active + new) / ranks), most active on a rank); and
  // _balance_requests_across_ranks gives a new request to the least (prompt tokens, active
  // requests, rank) of the ranks with fewer than `expected` active requests. One new request:
  // active counts running and queued requests alike (a rank's requests stay active to their end).
  auto active = [&](std::size_t i) { return rank_running[i] + rank_waiting[i] + rank_incoming[i]; };
  std::int64_t total = 0, most = 0;
  for (std::size_t i = 0; i < rank_running.size(); ++i) {
    total += active(i);
    most = std::max(most, active(i));
  }
  const std::int64_t expected = std::max((total + 1 + ranks_ - 1) / ranks_, most);
  std::int64_t k = 0, best_tokens = std::numeric_limits<std::int64_t>::max(), best_active = 0;
  for (std::int64_t g = 0; g < ranks_; ++g) {
    const auto i = static_cast<std::size_t>(g);
    if (active(i) >= expected) continue;
    if (rank_prompt_tokens[i] < best_tokens || (rank_prompt_tokens[i] == best_tokens && active(i) < best_active)) {
      best_tokens = rank_prompt_tokens[i];
      best_active = active(i);
      k = g;
    }
  }
  return k;
}

void Replica::push_running(std::int32_t r) {
  Req& q = pool[r];
  q.prev = tail;
  q.next = -1;
  if (tail >= 0) pool[tail].next = r;
  else head = r;
  tail = r;
  ++running_count;
  if (rank_limits) {
    const std::int64_t n = ++rank_running[static_cast<std::size_t>(rank_of(q))];
    peak_running = std::max(peak_running, n);
    return;
  }
  peak_running = std::max(peak_running, running_count);
}

void Replica::remove_running(std::int32_t r) {
  Req& q = pool[r];
  if (q.prev >= 0) pool[q.prev].next = q.next;
  else head = q.next;
  if (q.next >= 0) pool[q.next].prev = q.prev;
  else tail = q.prev;
  q.prev = q.next = -1;
  --running_count;
  if (rank_limits) --rank_running[static_cast<std::size_t>(rank_of(q))];
  if (q.phase == Phase::prefill) prefilling.erase(std::find(prefilling.begin(), prefilling.end(), r));
}

void Replica::join_decode(std::int32_t r, bool first_blocks_taken) {
  Req& q = pool[r];
  q.phase = Phase::decode;
  Cohort& c = of(q);
  const std::size_t k = lane_of(q);
  q.d0 = c.step;
  q.c0 = q.computed;
  q.e0 = q.emitted;
  const std::int64_t g0 = G(c, q.d0), k1 = emission_.queries;
  ++n_decode;
  ++c.n;
  if (rank_limits) ++rank_decode[static_cast<std::size_t>(rank_of(q))];
  n_warm_decode += q.warmup ? 1 : 0;
  if (steps_apart) lane(k).measured += q.warmup ? 0 : 1;
  c.s_all += q.c0 - g0;
  c.out_all += q.output - q.e0 + g0;
  ++c.phase[phase_of(g0 - q.c0 - k1)];
  phase_need_step_ = kNoStep;
  // Its sliding-window tables grow at the slots j·block with j < window_blocks: the phases
  // count slot s at the t = s - (c0 - G(d0) + k1) of [G(d - 1), G(d)), the last growing one at
  // t* = (window_blocks - 1)·block - c0 + G(d0) - k1; it grows from step d0 on while t* >= G(d0 - 1).
  q.window_growing = false;
  if (layout_.hybrid()) {
    const std::int64_t last = (layout_.window_blocks - 1) * block_ - q.c0 + g0 - k1;
    if (last >= G(c, q.d0 - 1)) {
      q.window_growing = true;
      ++c.phase_window[phase_of(g0 - q.c0 - k1)];
      // The first step d whose t range starts past t*: G(d - 1) >= t* + 1.
      lane(k).window_caps.push({first_step(c, last + 1) + 1, r, q.version});
    }
  }
  // Its first step writes the slots c0 .. c0 + k1 - 1; the phases count those past
  // c0 + k1 - (G(d0) - G(d0 - 1)), the rest is pending (none in plain decoding).
  q.pending = first_blocks_taken ? 0 : blocks_for(q.c0 + k1 - (g0 - G(c, q.d0 - 1))) - blocks_for(q.c0);
  join_extra_ += q.pending;
  if (rank_limits) rank_join_extra_[kv_index(q)] += q.pending;
  // Its last token: the first step d with e0 + G(d + 1) - G(d0) >= output.
  lane(k).finishes.push({first_step(c, q.output - q.e0 + g0) - 1, r, q.version});
  // Inside the window while its cached context is below W: until the first step with
  // c0 + G(d) - G(d0) >= W.
  q.above_window = window_ <= 0 || static_cast<double>(q.c0) + 1 > window_;
  if (!q.above_window) {
    ++c.n_below;
    c.s_below += q.c0 - g0;
    lane(k).crossings.push({first_step(c, static_cast<std::int64_t>(window_) - q.c0 + g0), r, q.version});
  }
  new_decoders.push_back(r);
}

void Replica::leave_decode(std::int32_t r) {
  Req& q = pool[r];
  Cohort& c = of(q);
  const std::int64_t g0 = G(c, q.d0);
  --n_decode;
  --c.n;
  if (rank_limits) --rank_decode[static_cast<std::size_t>(rank_of(q))];
  n_warm_decode -= q.warmup ? 1 : 0;
  if (steps_apart) lane(lane_of(q)).measured -= q.warmup ? 0 : 1;
  c.s_all -= q.c0 - g0;
  c.out_all -= q.output - q.e0 + g0;
  --c.phase[phase_of(g0 - q.c0 - emission_.queries)];
  if (q.window_growing) --c.phase_window[phase_of(g0 - q.c0 - emission_.queries)];
  q.window_growing = false;
  phase_need_step_ = kNoStep;
  join_extra_ -= q.pending;  // (kept on q: release counts its blocks with it)
  if (rank_limits) rank_join_extra_[kv_index(q)] -= q.pending;
  if (!q.above_window) {
    --c.n_below;
    c.s_below -= q.c0 - g0;
  }
  ++q.version;  // its finish and window events are stale
  const auto it = std::find(new_decoders.begin(), new_decoders.end(), r);
  if (it != new_decoders.end()) new_decoders.erase(it);
}

template <class F>
void Replica::settle_due(EventHeap Lane::*heap, F&& f) {
  for (std::size_t k = 0; k < lanes(); ++k) {
    EventHeap& h = lane(k).*heap;
    if (h.empty()) continue;
    const std::int64_t step = lane_step(k);
    while (!h.empty() && h.top().step <= step) {
      const DecodeEvent ev = h.top();
      h.pop();
      Req& q = pool[ev.req];
      if (ev.version == q.version && q.phase == Phase::decode) f(q);
    }
  }
}

void Replica::settle_window() {
  settle_due(&Lane::crossings, [&](Req& q) {
    if (q.above_window) return;
    q.above_window = true;
    Cohort& c = of(q);
    --c.n_below;
    c.s_below -= q.c0 - G(c, q.d0);
  });
}

void Replica::add_lane_decodes(model::StepMix& mix, std::int64_t queries, double offset) const {
  for (std::size_t k = 0; k < lanes(); ++k) {
    if (decodes(k)) add_rank_decodes(mix, static_cast<std::int64_t>(k), queries, offset);
  }
}

void Replica::add_rank_decodes(model::StepMix& mix, std::int64_t rank, std::int64_t queries, double offset) const {
  if (n_decode == 0) return;
  const std::size_t first = static_cast<std::size_t>(rank) * classes_;
  std::int64_t count = 0;
  for (std::size_t i = first; i < first + classes_; ++i) count += cohorts_[i].n;
  if (count > 0) add_cohorts(mix, first, first + classes_, count, queries, offset);
}

void Replica::add_cohorts(model::StepMix& mix, std::size_t first, std::size_t last, std::int64_t count, std::int64_t queries,
                          double offset) const {
  // Each sequence computes its q tokens after c0 + G(d) - G(d0) cached ones: context c + q.
  // Summed over the acceptance classes (and ranks), each at its own G (one class: one term).
  const double n = static_cast<double>(count), q = static_cast<double>(queries);
  double context = 0, below = 0, nb = 0;
  for (std::size_t i = first; i < last; ++i) {
    const Cohort& c = cohorts_[i];
    if (c.n == 0) continue;
    const double at = static_cast<double>(G(c, c.step)) + q + offset;
    context += static_cast<double>(c.s_all) + static_cast<double>(c.n) * at;
    if (c.n_below > 0) below += static_cast<double>(c.s_below) + static_cast<double>(c.n_below) * at;
    nb += static_cast<double>(c.n_below);
  }
  mix.decode_seqs += n;
  mix.decode_tokens += n * q;
  const ops::AttentionCounts full = decode_counts(n, q, context);
  mix.decode_full += full;
  if (window_ <= 0) {
    mix.decode_window += full;
    return;
  }
  // Sequences whose cached context has reached the window see W keys per query (read W + q - 1);
  // those below it their whole context (their last q - 1 queries may see a little more than W
  // keys, by q(q - 1)/2 pairs at most, in the few steps before they reach it).
  ops::AttentionShape a;
  a.q_len = q;
  a.causal = true;
  if (nb > 0) {
    a.batch = nb;
    a.kv_len = below / nb;
    mix.decode_window += ops::decode_attention_counts(a);
  }
  if (n > nb) {
    a.batch = n - nb;
    a.kv_len = window_ + q - 1;
    a.window = window_;
    mix.decode_window += ops::decode_attention_counts(a);
  }
}

std::int64_t Replica::quiet_steps(std::int64_t most) const {
  if (cohorts_.size() != 1 || emission_.queries != 1 || cohorts_[0].rate != Emission::kRateOne || join_extra_ != 0) return 0;
  // Step dstep + j (j >= 1) starts after step dstep + j - 1 ends: the last emits no sequence's
  // last token (finishes at dstep + j - 1 or before), the first settles no crossing or window
  // table (at dstep + j or before) and takes the blocks of the phase t = dstep + j - 1 (G(d) = d).
  // (One cohort: its step is dstep.)
  std::int64_t k = most;
  if (!lane0_.finishes.empty()) k = std::min(k, lane0_.finishes.top().step - dstep);
  if (!lane0_.crossings.empty()) k = std::min(k, lane0_.crossings.top().step - dstep - 1);
  if (!lane0_.window_caps.empty()) k = std::min(k, lane0_.window_caps.top().step - dstep - 1);
  // Each step's new blocks (decode_blocks_needed at its index) must be free when it starts:
  // then every engine's check passes and nothing is preempted or retracted.
  const Cohort& c = cohorts_[0];
  std::int64_t free = kv[0].free;
  for (std::int64_t j = 1; j <= k; ++j) {
    free -= phase_blocks(c, dstep + j - 1);
    if (free < 0) return j - 1;
  }
  return std::max<std::int64_t>(0, k);
}

std::int64_t Replica::phase_blocks(const Cohort& c, std::int64_t t) const {
  // A crossing adds a block to each full-attention table, and to each sliding-window table still growing.
  const std::size_t p = phase_of(t);
  return layout_.full_groups * c.phase[p] + (layout_.hybrid() ? layout_.window_groups * c.phase_window[p] : 0);
}

std::int64_t Replica::step_blocks(const Cohort& c) const {
  std::int64_t need = 0;
  if (c.n == 0) return need;
  for (std::int64_t t = G(c, c.step - 1), end = G(c, c.step); t < end; ++t) need += phase_blocks(c, t);
  return need;
}

void Replica::settle_window_blocks() {
  settle_due(&Lane::window_caps, [&](Req& q) {
    if (!q.window_growing) return;
    q.window_growing = false;
    Cohort& c = of(q);
    --c.phase_window[phase_of(G(c, q.d0) - q.c0 - emission_.queries)];
    phase_need_step_ = kNoStep;
  });
}

std::int64_t Replica::decode_blocks_needed() {
  if (layout_.hybrid()) settle_window_blocks();
  if (phase_need_step_ != dstep) {  // (the schedulers ask again within a step)
    if (rank_limits) {  // (the ranks' needs, cached with their sum)
      settle_rank_needs();
      return join_extra_ + phase_need_;
    }
    phase_need_ = 0;
    for (const Cohort& c : cohorts_) phase_need_ += step_blocks(c);
    phase_need_step_ = dstep;
  }
  return join_extra_ + phase_need_;
}

void Replica::settle_rank_needs() {
  // decode_blocks_needed of each rank k over its cohorts (cohorts_[k·classes_, (k + 1)·classes_)),
  // all at once once a step (the same cache as their sum: phase_need_step_).
  phase_need_ = 0;
  for (std::size_t g = 0; g < rank_phase_need_.size(); ++g) {
    std::int64_t need = 0;
    for (std::size_t i = g * classes_; i < (g + 1) * classes_ && rank_decode[g] > 0; ++i) need += step_blocks(cohorts_[i]);
    rank_phase_need_[g] = need;
    phase_need_ += need;
  }
  phase_need_step_ = dstep;
}

void Replica::take_decode_blocks() {
  if (rank_limits) {
    for (std::size_t k = 0; k < kv.size(); ++k) take_decode_blocks(k);
    return;
  }
  take_blocks(decode_blocks_needed(), 0);
  for (const std::int32_t r : new_decoders) pool[r].pending = 0;
  join_extra_ = 0;
}

void Replica::take_decode_blocks(std::size_t k) {
  const std::int64_t need = decode_blocks_needed(k);
  if (need > 0) take_blocks(need, k);
  for (const std::int32_t r : new_decoders) {
    if (kv_index(pool[r]) == k) pool[r].pending = 0;
  }
  join_extra_ -= rank_join_extra_[k];
  rank_join_extra_[k] = 0;
}

std::int64_t Replica::decode_blocks(const Req& q) const {
  // Its slots up to its rank's last step's: c0 + G(step - 1) - G(d0) + queries, less what is pending.
  const Cohort& c = of(q);
  return blocks_for(q.c0 + (G(c, c.step - 1) - G(c, q.d0)) + emission_.queries) - q.pending - q.shared;
}

std::int64_t Replica::remaining_output_sum() const {
  std::int64_t s = 0;
  for (const Cohort& c : cohorts_) s += c.out_all - c.n * G(c, c.step);
  for (const std::int32_t r : prefilling) s += pool[r].output - pool[r].emitted;
  return s;
}

std::int64_t Replica::remaining_output_sum(std::size_t k) const {
  std::int64_t s = 0;
  for (std::size_t i = k * classes_; i < (k + 1) * classes_; ++i) s += cohorts_[i].out_all - cohorts_[i].n * G(cohorts_[i], cohorts_[i].step);
  for (const std::int32_t r : prefilling) {
    if (kv_index(pool[r]) == k) s += pool[r].output - pool[r].emitted;
  }
  return s;
}

// --- KV cache ------------------------------------------------------------------------------

void Replica::take_blocks(std::int64_t n, std::size_t k) {
  KvPool& p = kv[k];
  if (n > p.free) {
    throw std::logic_error(fmt::format("serve: replica {} takes {} KV blocks with {} free (pool {})", index, n, p.free, k));
  }
  p.free -= n;
  p.peak = std::max(p.peak, p.total - p.free);
  while (n > 0 && !p.free_queue.empty()) {
    FreeSegment& s = p.free_queue.front();
    const std::int64_t m = std::min(n, s.count);
    s.count -= m;
    n -= m;
    if (s.group >= 0 && m > 0) {
      // Evicts the end of the group's prefix (its blocks were freed last block first).
      Group& g = groups[static_cast<std::size_t>(s.group)];
      g.cached -= m;
    }
    if (s.count == 0) {
      if (s.group >= 0) {
        Group& g = groups[static_cast<std::size_t>(s.group)];
        if (g.segment == p.segments_popped) g.segment = -1;
      }
      p.free_queue.pop_front();
      ++p.segments_popped;
    }
  }
}

void Replica::give_blocks(std::int64_t n, std::size_t k) {
  if (n <= 0) return;
  KvPool& p = kv[k];
  p.free += n;
  if (!p.free_queue.empty() && p.free_queue.back().group < 0) {
    p.free_queue.back().count += n;
  } else {
    p.free_queue.push_back({-1, n});
  }
}

std::int64_t Replica::prefix_blocks_in(std::int64_t units) const {
  // The most b with blocks_for(b·block) <= units: full_groups·b + window_groups·min(b, window_blocks).
  const std::int64_t f = layout_.full_groups, w = layout_.window_groups, cap = layout_.window_blocks;
  if (w == 0) return units / f;
  if (units >= (f + w) * cap) return f > 0 ? cap + (units - (f + w) * cap) / f : std::numeric_limits<std::int64_t>::max();
  return units / (f + w);
}

std::int64_t Replica::cached_prefix(const Req& q, bool partial_reuse) const {
  const Group& g = group_of(q);
  const std::int64_t full = q.prefix_tokens / block_;  // full blocks of the prefix
  const std::int64_t blocks = std::min(prefix_blocks_in(g.cached), full);
  if (blocks <= 0) return 0;
  // The last token is always computed (its logits give the next token).
  std::int64_t tokens = blocks * block_;
  if (partial_reuse && blocks == full) tokens = q.prefix_tokens;
  tokens = std::min(tokens, q.target - 1);
  if (!partial_reuse) tokens = tokens / block_ * block_;
  return std::max<std::int64_t>(0, tokens);
}

void Replica::ref_prefix(Req& q, std::int64_t hit) {
  Group& g = group_of(q);
  if (g.refs == 0 && g.segment >= 0) {
    // Off the free queue: its blocks are in use again.
    KvPool& p = kv_of(q);
    p.free_queue[static_cast<std::size_t>(g.segment - p.segments_popped)].count = 0;
    p.free -= g.cached;
    p.peak = std::max(p.peak, p.total - p.free);
    g.segment = -1;
  }
  ++g.refs;
  q.shared = std::min(g.cached, blocks_for(hit));  // the blocks its hit covers
}

void Replica::unref_prefix(Req& q) {
  if (q.shared == 0 || q.group < 0) return;
  Group& g = group_of(q);
  q.shared = 0;
  if (--g.refs > 0 || g.cached == 0) return;
  // Still cached, now evictable: to the back of its pool's free queue.
  KvPool& p = kv_of(q);
  p.free += g.cached;
  g.segment = p.segments_popped + static_cast<std::int64_t>(p.free_queue.size());
  p.free_queue.push_back({static_cast<std::int32_t>(group_index(q)), g.cached});
}

void Replica::publish_prefix(Req& q) {
  if (q.group < 0 || !engine.prefix_caching) return;
  Group& g = group_of(q);
  const std::int64_t whole = q.prefix_tokens / block_;
  if (whole <= 0) return;
  const std::int64_t full = blocks_for(whole * block_);  // over its block tables
  if (q.shared == 0 && g.cached == 0) {
    // The request's first `full` blocks now hold the group's prefix (it references them).
    g.cached = full;
    g.refs = 1;
    g.segment = -1;
    q.shared = full;
    if (q.phase == Phase::prefill || q.phase == Phase::swapped) q.blocks -= full;
  } else if (q.shared > 0 && q.shared < full && g.refs == 1 && g.cached == q.shared) {
    // It found the prefix partly evicted and computed the rest: the group's cache grows back.
    if (q.phase == Phase::prefill || q.phase == Phase::swapped) q.blocks -= full - q.shared;
    g.cached = full;
    q.shared = full;
  }
}

void Replica::release(Req& q) {
  std::int64_t own = q.blocks;
  if (q.phase == Phase::decode) own = decode_blocks(q);
  give_blocks(own, kv_index(q));
  q.blocks = 0;
  unref_prefix(q);
}

}  // namespace ridgeline::serving::detail
