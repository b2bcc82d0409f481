#pragma once
// One engine replica's state (private to the simulator): its requests, its paged KV cache
// with the prefix cache, and the running decode sequences kept as sums so that a step costs
// O(1) however many sequences decode (docs/serving.md#simulator).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <queue>
#include <vector>

#include "ridgeline/model/transformer.hpp"
#include "ridgeline/serving/engine.hpp"
#include "ridgeline/serving/kv_layout.hpp"

namespace ridgeline::serving::detail {

using Ps = std::int64_t;  // simulated time, picoseconds
inline constexpr double kPsPerS = 1e12;
inline Ps to_ps(double s) { return static_cast<Ps>(s * kPsPerS + 0.5); }
inline double to_s(Ps t) { return static_cast<double>(t) / kPsPerS; }

enum class Phase : std::uint8_t { waiting, prefill, decode, swapped, transfer, done };

// What an instance runs: both phases (aggregated), or one of them (disaggregated).
enum class Role : std::uint8_t { both, prefill, decode };

// A request in the system (a pool slot, reused once it ends).
struct Req {
  std::int64_t id = 0;
  Ps arrival = 0, admitted = -1, first_token = -1, last_token = -1;
  std::int64_t input = 0, output = 0;
  std::int32_t group = -1;
  std::int64_t prefix_tokens = 0;
  // Tokens whose KV must be in the cache to emit the next token: the prompt, and on a
  // recompute after preemption the prompt and the tokens emitted so far.
  std::int64_t target = 0;
  std::int64_t computed = 0;  // prefill: tokens in the cache
  std::int64_t blocks = 0;    // prefill / swapped: blocks of its own it holds
  std::int64_t shared = 0;    // blocks of its group's cached prefix it references
  std::int64_t emitted = 0;   // output tokens so far
  std::int64_t cached = 0;    // prompt tokens found in the prefix cache at its first admission
  std::int64_t commit = 0;    // Admission::completion: blocks committed to it
  // Decode: at decode step d it computes the token after c0 + (d - d0) cached ones.
  std::int64_t d0 = 0, c0 = 0, e0 = 0;
  std::int64_t pending = 0;  // decode: blocks its first step needs beyond what the block phases count
  bool above_window = false;
  bool window_growing = false;  // decode: its sliding-window block tables still grow (KvLayout::window_blocks)
  std::int32_t prev = -1, next = -1;  // running list, in admission order
  std::int32_t replica = 0, preemptions = 0;
  // Attention data-parallel ranks: the rank it runs on from its arrival to its end, chosen by its
  // (aggregated) replica's engine when routed there (Replica::place; read through Replica::rank_of).
  std::int32_t rank = 0;
  std::int32_t cohort = 0;    // speculative decoding: its acceptance class (Replica::cohorts_)
  std::int32_t source = -1;   // disaggregated: the prefill instance holding its KV until the transfer ends
  std::int64_t source_commit = 0;  // disaggregated: blocks committed to it on the prefill instance
  std::int64_t dest_shared = 0;    // disaggregated: blocks of its prefix the decode instance holds while its KV is in transfer
  Ps prefill_end = -1;        // disaggregated: when its prompt was prefilled
  // Outputs sent during the next step (engine_outputs_next_step): how much later than the step
  // that computed it its first token reached the client, and whether its end is recorded (a
  // sequence that ends inside a multi-step window is, while it keeps its place in the batch).
  Ps first_lag = 0;
  // How long the scheduler left it unread after it reached it (SGLang's --scheduler-recv-interval:
  // Simulation::start_step); 0 on an engine that reads every step.
  Ps unread = 0;
  bool recorded = false;
  std::uint32_t version = 0;  // bumped when it leaves decode: heap entries of an older version are stale
  Phase phase = Phase::waiting;
  bool warmup = false;
};

// Tokens q still has to compute or emit (the router's load): the rest of its prompt (or
// recompute) and its outputs. Not for a decoding request (its computed count is implicit).
inline std::int64_t remaining_tokens(const Req& q) {
  return (q.target - q.computed) + (q.output - q.emitted);
}

// A request's next event in decode-step units, for the lazy heaps (stale when version differs).
struct DecodeEvent {
  std::int64_t step;
  std::int32_t req;
  std::uint32_t version;
  bool operator>(const DecodeEvent& o) const noexcept { return step != o.step ? step > o.step : req > o.req; }
};
using EventHeap = std::priority_queue<DecodeEvent, std::vector<DecodeEvent>, std::greater<>>;

// A prefix group's cached blocks: referenced by running requests, or free but still cached
// (evicted least recently freed first, from the end of the prefix).
struct Group {
  std::int64_t cached = 0;  // blocks of its prefix in the cache
  std::int64_t refs = 0;    // running requests referencing them
  std::int64_t segment = -1;  // its segment in the free queue while refs == 0 and cached > 0
};

// What a step runs: the decode sequences (all of them, or none) and prefill chunks.
struct StepPlan {
  bool decode = false;
  bool drafted = false;  // the draft mixes hold this step's passes
  bool scheduled = true;  // the scheduler ran for this step (false inside a multi-step window)
  double extra_s = 0;  // swaps to and from the host
  std::int64_t preempted = 0;
  std::vector<std::pair<std::int32_t, std::int64_t>> chunks;  // (request, tokens)
  model::StepMix mix;
  // Speculative decoding: the draft's first pass (the chunks, and one token per decode
  // sequence) and each of its k - 1 further decode passes (at their mean context).
  model::StepMix draft_first, draft_rest;
  // Attention data-parallel ranks: each rank's own sequences (Replica::ranks() > 1; sized once),
  // and with speculative decoding each rank's part of the draft's first pass and further passes.
  std::vector<model::StepMix> ranks, draft_ranks_first, draft_ranks_rest;
  // Ranks that step apart (Replica::steps_apart: SGLang), each in a mode of its own: the ranks
  // whose sequences decode in this step (`decode`: any of them); empty: every rank's, if any.
  std::vector<std::uint8_t> decoding;
  void clear() {
    decode = false;
    std::fill(decoding.begin(), decoding.end(), std::uint8_t{0});
    scheduled = true;
    if (chunks.empty()) {
      // No chunk in the last step: its prefill sums are still zero (only chunks add them).
      mix.clear_decodes();
    } else {
      chunks.clear();
      mix = model::StepMix{};
    }
    if (drafted) draft_first = draft_rest = model::StepMix{};
    drafted = false;
    extra_s = 0;
    preempted = 0;
  }
};

// How decode sequences advance. Plain decoding: one token computed and one emitted per
// step. Speculative decoding: `queries` = k + 1 tokens computed per sequence (its last token
// and k drafts) and, on average, tokens_per_step emitted. Every sequence emits the same
// G(d + 1) - G(d) tokens at decode step d, G(d) = floor(d·rate / kRateOne): the expected
// tokens per step spread evenly over the steps, the same for every sequence, so that the
// decode sums stay O(1) (docs/serving.md#speculative-decoding).
struct Emission {
  static constexpr std::int64_t kRateOne = std::int64_t{1} << 16;
  std::int64_t queries = 1;
  std::int64_t rate = kRateOne;  // tokens per step x kRateOne (the mean over the cohorts)
  // Requests accept drafts at their own rates: each belongs to one of these classes (Req::cohort),
  // tokens per step x kRateOne each, equally likely (empty: one class at `rate`). Each class is
  // kept as its own decode sums (docs/serving.md#speculative-decoding).
  std::vector<std::int64_t> cohort_rates;
};

// Attention data-parallel ranks that schedule as engines of their own (Replica::rank_limits):
// vLLM V1 (not V0, which had no attention data parallelism): every DP rank its own scheduler
// with the configured limits and its own KV cache (vllm/v1/engine/core.py, DPEngineCoreProc:
// an EngineCore each); TensorRT-LLM with attention DP likewise (each rank's executor schedules
// its own requests within max_batch_size and max_num_tokens, in its own KV cache manager).
// SGLang too (--enable-dp-attention): a Scheduler per DP rank with its own queue, limits, ratio
// and token-to-KV pool, each rank choosing its own mode at each step (steps_apart below).
inline bool ranks_apart(const EngineConfig& e, std::int64_t ranks) {
  return limits_per_rank(e, ranks) || (ranks > 1 && e.kind == EngineKind::sglang);
}
// Ranks apart that also step apart: each rank's step a prefill or a decode step of its own, one
// rank prefilling while another decodes (SGLang: each rank's get_next_batch_to_run, the modes
// exchanged in prepare_mlp_sync_batch, managers/scheduler_dp_attn_mixin.py). vLLM V1 and
// TensorRT-LLM run every running sequence in every step: their ranks' steps are alike.
inline bool steps_apart(const EngineConfig& e, std::int64_t ranks) { return ranks > 1 && e.kind == EngineKind::sglang; }
// Blocks of rank k's pool of a replica of `blocks` blocks over `ranks` ranks: each rank's GPUs
// hold blocks / ranks (serve_memory counts a GPU's blocks times ep, so this is exact; a
// --kv-blocks override not divisible by ranks gives the first blocks mod ranks ranks one more).
inline std::int64_t rank_pool_blocks(std::int64_t blocks, std::int64_t ranks, std::int64_t k) {
  return blocks / ranks + (k < blocks % ranks ? 1 : 0);
}

class Replica {
 public:
  Replica(std::vector<Req>& pool, const EngineConfig& e, std::int64_t blocks, double window, std::int32_t index,
          Emission emission = {}, const KvLayout& layout = {}, std::int64_t ranks = 1);

  // --- step in flight (first: read at every event) ----------------------------------------
  std::int32_t index = 0;
  bool busy = false, start_pending = false;
  Ps now = 0;  // when the step being planned starts
  Ps busy_until = -1;  // the last step's end (-1: none yet)
  // Work was left when the last step ended (running or waiting requests): an engine that
  // schedules ahead had planned its next step during it.
  bool ahead = false;
  std::int64_t outstanding_tokens = 0;  // router: prompt tokens to prefill + outputs to emit
  // vLLM V0 multi-step (EngineConfig::scheduler_steps): decode steps left in the window after
  // the one running; 0 when the next step calls the scheduler.
  std::int64_t window_left = 0;
  // The sequences whose last token a step of the window computed: they keep their place to its
  // end (Simulation::emit_decode), their last token's gap counted then.
  std::vector<DecodeEvent> window_done;
  // Outputs sent during the next step (engine_outputs_next_step): the requests whose first
  // token, whose end, or (inside a multi-step window) whose last token the last step computed,
  // sent when the next step has been launched (Simulation::send_outputs); the processing time
  // of that step's outputs.
  std::vector<std::int32_t> unsent_first, unsent_done, unsent_window;
  double unsent_proc_s = 0;
  bool unsent() const noexcept { return !unsent_first.empty() || !unsent_done.empty() || !unsent_window.empty(); }
  // A leap (Simulation::start_leap): quiet decode steps after the one started, leap_k of them;
  // steps [0, leap_f) of it finished and [0, leap_s) started (0: the one started normally).
  std::int32_t leap_k = 0, leap_f = 0, leap_s = 1;

  // --- requests ------------------------------------------------------------------------
  std::deque<std::int32_t> waiting;
  // Arrived while a step ran on an engine that schedules one step ahead: the next step was
  // planned when this one started, so they join the waiting queue after it is planned. Under
  // SGLang's --scheduler-recv-interval N they wait here until the scheduler next reads its
  // socket (recv_count: the weight of the steps since it last did, Simulation::start_step).
  std::vector<std::int32_t> incoming;
  std::int64_t recv_count = 0;
  std::int64_t running_count = 0;
  std::int64_t peak_running = 0;  // the most running at once
  std::int32_t head = -1, tail = -1;  // running list
  std::vector<std::int32_t> prefilling;  // running requests in their prefill, in admission order
  void push_running(std::int32_t r);
  void remove_running(std::int32_t r);

  // --- decode sums ---------------------------------------------------------------------
  // Decode steps run so far (by any rank): the next one has this index.
  std::int64_t dstep = 0;
  // Ranks that step apart (SGLang, ranks > 1): plan.decoding says which decode in the step.
  // Then each rank is a lane of its own, which counts its own decode steps (lane_step: the
  // index of its next one) and keeps its own events; otherwise one lane, whose steps are dstep.
  bool steps_apart = false;
  // A lane's own decode events and its last decode step's end.
  struct Lane {
    EventHeap finishes;     // the decode step (of the lane) at which a sequence emits its last token
    EventHeap crossings;    // the decode step from which a sequence's context reaches the window
    EventHeap window_caps;  // the decode step from which a sequence's sliding-window tables stop growing
    Ps last_end = -1;       // the end of its last decode step (-1: none yet)
    std::int64_t measured = 0;  // its decode sequences not in warm-up (lanes apart only)
    std::int64_t joined = 0;    // scratch (Simulation::emit_decode)
  };
  // (The first inline: every replica has it, and it is read at every step.)
  Lane& lane(std::size_t l) { return l == 0 ? lane0_ : more_lanes_[l - 1]; }
  const Lane& lane(std::size_t l) const { return l == 0 ? lane0_ : more_lanes_[l - 1]; }
  std::size_t lanes() const { return 1 + more_lanes_.size(); }
  std::size_t lane_of(const Req& q) const { return steps_apart ? static_cast<std::size_t>(rank_of(q)) : 0; }
  bool decodes(std::size_t lane) const { return plan.decoding.empty() || plan.decoding[lane] != 0; }
  std::int64_t lane_step(std::size_t lane) const { return cohorts_[lane_first(lane)].step; }
  std::int64_t step_of(const Req& q) const { return of(q).step; }
  Ps last_end_of(const Req& q) const { return lane(lane_of(q)).last_end; }
  // The decode step planned ran (ended at t): each decoding lane's sequences are one step further.
  void advance_decode(Ps t) {
    ++dstep;
    if (!steps_apart) {
      for (Cohort& c : cohorts_) ++c.step;
      lane0_.last_end = t;
      return;
    }
    advance_lanes(t);
  }
  std::int64_t n_decode = 0;
  std::int64_t n_warm_decode = 0;  // of which warm-up requests (left out of the statistics)
  std::vector<std::int32_t> new_decoders;  // joined since the last decode step (their inter-token gap is their own)
  // r joins the decode sequences; `first_blocks_taken`: the blocks of its first step are
  // already its own (swapped back in), else the next decode_blocks_needed counts them.
  void join_decode(std::int32_t r, bool first_blocks_taken = false);
  void leave_decode(std::int32_t r);
  // Moves sequences past the window, then adds the next decode step to `mix` (each rank's next,
  // of the ranks that decode in it: decodes(k)): each sequence computing `queries` tokens after
  // its cached ones and `offset` more.
  void settle_window();
  void add_decodes(model::StepMix& mix, std::int64_t queries, double offset = 0) const {
    if (n_decode == 0) return;
    if (!steps_apart) add_cohorts(mix, 0, cohorts_.size(), n_decode, queries, offset);
    else add_lane_decodes(mix, queries, offset);
  }
  // A decode sequence's counts (ops::decode_attention_counts at q_len q, causal, no window) are
  // affine in its context kv: q·kv − q(q − 1)/2 pairs, kv keys read, q·kv scores, kv positions.
  // Those of n sequences of `context` keys in all (the tokens computed now included) are their
  // sums, without dividing the context (a leap prices every step with them).
  static ops::AttentionCounts decode_counts(double n, double q, double context) noexcept {
    ops::AttentionCounts c;
    c.seqs = n;
    c.queries = n * q;
    c.pairs = q * context - n * (q * (q - 1) / 2);
    c.keys = context;
    c.scores = q * context;
    c.positions = context;
    return c;
  }
  // A leap's step `offset` steps on (Replica::quiet_steps: one cohort, one token a step, no
  // window): the decode counts add_decodes(mix, 1, offset) adds, by the same operations
  // (one cohort: its sum alone), without the sums over cohorts. `at` is G(step) + 1.
  bool leap_counts_alone() const { return cohorts_.size() == 1 && window_ <= 0 && !steps_apart; }
  ops::AttentionCounts leap_counts(double at, double offset) const {
    const Cohort& c = cohorts_[0];
    return decode_counts(static_cast<double>(n_decode), 1, static_cast<double>(c.s_all) + static_cast<double>(c.n) * (at + offset));
  }
  double leap_at() const { return static_cast<double>(G(cohorts_[0], cohorts_[0].step)) + 1; }
  // Attention data-parallel ranks (ForwardConfig::ep > 1), each an engine of its own
  // (docs/serving.md#moe-layouts): a request runs on the rank its engine chose when it arrived
  // (place) to its end, and its decode sums are kept per rank. add_decodes of rank `rank`'s
  // sequences only.
  std::int64_t ranks() const { return ranks_; }
  // (A disaggregated instance: rank id mod ranks on each instance, ranks of its own; Req::rank is
  // its aggregated replica's choice.)
  std::int64_t rank_of(const Req& q) const { return ranks_ == 1 ? 0 : role == Role::both ? q.rank : q.id % ranks_; }
  // Chooses the rank of q, routed here, as its engine does (docs/serving.md#moe-layouts): vLLM V1
  // the least loaded (4 x waiting + running), TensorRT-LLM the rank of fewest active prompt tokens
  // among the less busy, SGLang (and the others) its replica's ranks in turn; a disaggregated
  // instance rank id mod ranks.
  void place(Req& q);
  // q, placed here, ended here (completed or rejected from the queue): its rank's load drops.
  void leave_rank(const Req& q) {
    if (balances_ranks()) rank_prompt_tokens[static_cast<std::size_t>(rank_of(q))] -= q.input;
  }
  void add_rank_decodes(model::StepMix& mix, std::int64_t rank, std::int64_t queries, double offset = 0) const;
  // Ranks with limits of their own (vLLM V1: each DP rank's scheduler its own max_num_seqs and
  // token budget; TensorRT-LLM likewise): running requests and decode sequences by rank (empty
  // otherwise); then peak_running is the most one rank ran at once, and each rank has its own
  // KV pool (kv).
  bool rank_limits = false;
  std::vector<std::int64_t> rank_running, rank_decode, rank_waiting;
  // q joined (+1) or left (-1) the waiting queue.
  void waiting_changed(const Req& q, std::int64_t d) {
    if (rank_limits) rank_waiting[static_cast<std::size_t>(rank_of(q))] += d;
  }
  // The loads place() reads (balances_ranks() only; empty otherwise): requests by rank sent here
  // while a step ran (incoming, not yet in the queue; the engine has them, vLLM's front end counts
  // them waiting), and the prompt tokens of the requests placed on each rank and not ended
  // (TensorRT-LLM's active requests' py_orig_prompt_len).
  std::vector<std::int64_t> rank_incoming, rank_prompt_tokens;
  void incoming_changed(const Req& q, std::int64_t d) {
    if (balances_ranks()) rank_incoming[static_cast<std::size_t>(rank_of(q))] += d;
  }
  // Ranks chosen by their loads: ranks apart under vLLM V1 and TensorRT-LLM (SGLang's in turn), not disaggregated.
  bool balances_ranks() const { return rank_limits && role == Role::both && engine.kind != EngineKind::sglang; }
  // Blocks the next decode step needs beyond those its sequences hold; of rank k's
  // sequences only (per-rank pools: rank_limits).
  std::int64_t decode_blocks_needed();
  std::int64_t decode_blocks_needed(std::size_t k) {
    if (layout_.hybrid()) settle_window_blocks();
    if (phase_need_step_ != dstep) settle_rank_needs();
    return rank_join_extra_[k] + rank_phase_need_[k];
  }
  // Takes them (each rank's of its pool): the sequences that joined since the last decode step
  // hold their first step's blocks.
  void take_decode_blocks();
  // The same of rank k only (steps_apart: a rank that decodes in the step).
  void take_decode_blocks(std::size_t k);
  std::int64_t decode_blocks(const Req& q) const;  // own blocks a decode sequence holds before its rank's next step
  std::int64_t emitted_before(const Req& q) const { const Cohort& c = of(q); return q.e0 + (G(c, c.step) - G(c, q.d0)); }
  std::int64_t context_before(const Req& q) const { const Cohort& c = of(q); return q.c0 + (G(c, c.step) - G(c, q.d0)); }
  // Tokens q emits at decode step d of its rank (its last step: at most what is left).
  std::int64_t step_tokens(const Req& q, std::int64_t d) const { const Cohort& c = of(q); return G(c, d + 1) - G(c, d); }
  // Tokens a lane's decode sequences emit at its next step (before the last steps' caps).
  std::int64_t lane_decode_tokens(std::size_t lane) const;
  // A lane's decoding sequences not in warm-up.
  std::int64_t lane_measured_decodes(std::size_t l) const { return steps_apart ? lane(l).measured : n_decode - n_warm_decode; }
  std::int64_t queries() const { return emission_.queries; }
  // KV slots a request holds at most beyond its prompt and output (the drafts verified in its last step).
  std::int64_t lookahead() const { return emission_.queries - 1; }
  // Σ tokens a step of n decode sequences emits over `steps` steps, for the SGLang reserve.
  std::int64_t tokens_over(std::int64_t steps) const { return steps * emission_.rate / Emission::kRateOne; }
  // With a decode step (index dstep) in flight: how many of the next steps, up to `most`, are
  // quiet. A quiet step starts when the one before ends and no sequence emits its last token
  // there, it settles no sliding-window crossing or block table, and the new blocks it needs
  // are free (those of the quiet steps before it taken). Plain decoding only (one token per
  // step; 0 otherwise).
  std::int64_t quiet_steps(std::int64_t most) const;

  // --- KV cache ------------------------------------------------------------------------
  // Prefix groups (by group, then pool), as cached on this replica (grown as requests of new groups arrive).
  std::vector<Group> groups;
  // Makes room for q's prefix group (a request routed or handed over here).
  void know_group(const Req& q) {
    if (q.group >= 0 && static_cast<std::size_t>(q.group) * kv.size() >= groups.size()) {
      groups.resize((static_cast<std::size_t>(q.group) + 1) * kv.size());
    }
  }
  // The paged KV cache: one pool of the replica's blocks, or (rank_limits: vLLM V1, TensorRT-LLM)
  // one per attention data-parallel rank, each of its own GPUs' blocks (rank_pool_blocks): a
  // rank's requests take, check and cache prefixes in their rank's pool only.
  struct FreeSegment {
    std::int32_t group;  // index into groups; -1: blocks without a cached prefix
    std::int64_t count;
  };
  struct KvPool {
    std::int64_t total = 0, free = 0;  // free: unused or cached but unreferenced
    std::int64_t committed = 0;        // Admission::completion
    std::int64_t peak = 0;             // the most blocks in use at once
    std::deque<FreeSegment> free_queue;  // least recently freed first
    std::int64_t segments_popped = 0;  // index of free_queue.front() in push order
  };
  std::vector<KvPool> kv;
  std::int64_t sum_blocks(std::int64_t KvPool::*m) const {
    std::int64_t n = 0;
    for (const KvPool& p : kv) n += p.*m;
    return n;
  }
  // (rank_limits: a pool per rank; else one.)
  std::size_t kv_index(const Req& q) const { return rank_limits ? static_cast<std::size_t>(rank_of(q)) : 0; }
  KvPool& kv_of(const Req& q) { return kv[kv_index(q)]; }
  const KvPool& kv_of(const Req& q) const { return kv[kv_index(q)]; }
  // Σ over the pools (the replica's KV use: blocks used over all its blocks).
  std::int64_t used_blocks() const {
    return rank_limits ? all_blocks_ - sum_blocks(&KvPool::free) : kv[0].total - kv[0].free;
  }
  // q's group's cached prefix, in q's pool (a prefix cached on one rank is not seen by another).
  std::size_t group_index(const Req& q) const {
    return rank_limits ? static_cast<std::size_t>(q.group) * kv.size() + kv_index(q) : static_cast<std::size_t>(q.group);
  }
  Group& group_of(const Req& q) { return groups[group_index(q)]; }
  const Group& group_of(const Req& q) const { return groups[group_index(q)]; }
  // Every check of the cache's room goes through room(): the least room a passing check left
  // (blocks, in the pool checked) and whether one refused. A run whose checks all passed with
  // more than d blocks to spare runs the same with a cache d blocks smaller, on every replica
  // (per rank: a replica d blocks smaller has ranks at most d blocks smaller; the fleet search
  // reuses it across sequence limits, whose activations leave different caches).
  double kv_slack = std::numeric_limits<double>::infinity();
  bool kv_refused = false;
  bool room(double slack, bool pass) {
    if (pass) kv_slack = std::min(kv_slack, slack);
    else kv_refused = true;
    return pass;
  }
  // need <= pool k's free blocks, and the same of a commitment against pool k's whole cache (Admission::completion).
  bool fits(std::int64_t need, std::size_t k) { return room(static_cast<double>(kv[k].free - need), need <= kv[k].free); }
  bool fits_commit(std::int64_t commit, std::size_t k) {
    const KvPool& p = kv[k];
    return room(static_cast<double>(p.total - p.committed - commit), p.committed + commit <= p.total);
  }
  // Blocks a request holds for `tokens` of context, over its block tables (KvLayout).
  std::int64_t blocks_for(std::int64_t tokens) const { return layout_.blocks_for(tokens); }
  std::int64_t block() const { return block_; }  // tokens per block
  // Takes n free blocks of pool k (evicting cached prefixes, least recently freed first); n <= its free blocks.
  void take_blocks(std::int64_t n, std::size_t k);
  // Gives n blocks back to pool k (no prefix cached in them).
  void give_blocks(std::int64_t n, std::size_t k);
  // Prompt tokens of `q` found in the cache (its group's prefix) and the blocks that holds.
  std::int64_t prefix_hit(const Req& q, bool partial_reuse) const {
    return q.group < 0 || !engine.prefix_caching ? 0 : cached_prefix(q, partial_reuse);
  }
  // References the cached prefix blocks of q's group (taking them off the free queue); q's
  // `hit` tokens lie in the first of them.
  void ref_prefix(Req& q, std::int64_t hit);
  // Drops q's reference; unreferenced prefixes join the free queue, still cached.
  void unref_prefix(Req& q);
  // q has computed its group's prefix: its first blocks become the group's cached prefix.
  void publish_prefix(Req& q);
  // Frees every block q holds (own and its prefix reference).
  void release(Req& q);

  // --- SGLang admission ------------------------------------------------------------------
  // By rank (one unless ranks step apart: each SGLang rank's scheduler its own).
  std::vector<double> new_token_ratio;
  std::int64_t remaining_output_sum() const;  // Σ output still to emit over running requests
  std::int64_t remaining_output_sum(std::size_t k) const;  // the same over rank k's (ranks apart)

  // --- disaggregated ------------------------------------------------------------------
  Role role = Role::both;
  std::deque<std::int32_t> kv_queue;   // decode: handed over, waiting for blocks to receive their KV
  std::vector<std::int32_t> arrived;   // decode: KV received, to join the decode sequences at the next step
  std::int64_t in_transfer = 0;        // requests in a KV transfer whose blocks it holds (sending or receiving)


  std::vector<Req>& pool;
  const EngineConfig& engine;

 private:
  Lane lane0_;
  std::vector<Lane> more_lanes_;  // lanes 1, 2, ... (ranks stepping apart)
  // The decode sequences of one acceptance class: their emission and their sums.
  struct alignas(64) Cohort {  // (its sums and phase tables in one cache line)
    std::int64_t rate = Emission::kRateOne;  // tokens per step x kRateOne
    std::int64_t step = 0;  // its rank's decode steps so far: the next has this index
    std::int64_t n = 0;
    // Σ (c0 - G(d0)) over its decode sequences and over those still inside the window.
    std::int64_t s_all = 0, s_below = 0, n_below = 0;
    std::int64_t out_all = 0;  // Σ (output - e0 + G(d0)): remaining outputs are out_all - n·G(step)
    // Its sequences by (G(d0) - c0 - queries) mod block: a sequence needs a new block at step
    // d for each t in [G(d - 1), G(d)) congruent to its key (docs/serving.md#simulator); and
    // those whose sliding-window tables still grow (a block at each crossing, in each of
    // layout_.window_groups tables); the others add one in each full-attention table only.
    std::vector<std::int64_t> phase, phase_window;
  };
  // By rank, then acceptance class: cohorts_[rank·classes_ + class].
  std::vector<Cohort> cohorts_;
  std::int64_t ranks_ = 1;
  std::int64_t rank_turn_ = 0;  // place(): the rank the next request takes in turn (SGLang's round_robin_counter)
  std::int64_t least_scored_rank() const;  // place() under vLLM V1
  std::int64_t balanced_rank() const;      // place() under TensorRT-LLM
  std::size_t classes_ = 1;
  std::size_t cohort_index(const Req& q) const {
    return static_cast<std::size_t>(rank_of(q)) * classes_ + static_cast<std::size_t>(q.cohort);
  }
  const Cohort& of(const Req& q) const { return cohorts_[cohort_index(q)]; }
  void advance_lanes(Ps t);  // advance_decode of lanes apart
  void add_lane_decodes(model::StepMix& mix, std::int64_t queries, double offset) const;  // add_decodes of lanes apart
  // A lane's cohorts: [lane_first, lane_last) (one lane: all of them).
  std::size_t lane_first(std::size_t lane) const { return lane * classes_; }
  std::size_t lane_last(std::size_t lane) const { return steps_apart ? (lane + 1) * classes_ : cohorts_.size(); }
  Cohort& of(const Req& q) { return cohorts_[cohort_index(q)]; }
  // add_decodes over cohorts_[first, last), which hold `count` > 0 sequences.
  void add_cohorts(model::StepMix& mix, std::size_t first, std::size_t last, std::int64_t count, std::int64_t queries,
                   double offset) const;
  // G(d): tokens each decode sequence of cohort c emitted in steps 0..d-1 (relative counts only matter).
  static std::int64_t G(const Cohort& c, std::int64_t d) { return c.rate == Emission::kRateOne ? d : G_rate(c, d); }
  static std::int64_t G_rate(const Cohort& c, std::int64_t d);
  // The first step index j with G(c, j) >= x.
  static std::int64_t first_step(const Cohort& c, std::int64_t x);
  std::int64_t block_;
  KvLayout layout_;
  // Whole blocks of a prefix that `units` cached blocks hold in every block table.
  std::int64_t prefix_blocks_in(std::int64_t units) const;
  std::int64_t block_mask_ = -1;  // block - 1 when a power of two
  std::size_t phase_of(std::int64_t t) const;  // t mod block, in [0, block)
  // Blocks c's sequences take at token t (their tables' crossings of phase t mod block), and
  // over the tokens its rank's next decode step computes (t in [G(step - 1), G(step))).
  std::int64_t phase_blocks(const Cohort& c, std::int64_t t) const;
  std::int64_t step_blocks(const Cohort& c) const;
  double window_;
  Emission emission_;
  std::int64_t all_blocks_ = 0;  // Σ kv[k].total
  std::int64_t join_extra_ = 0;  // Σ pending over the sequences that joined since the last decode step
  std::vector<std::int64_t> rank_join_extra_;  // the same by rank (per-rank pools only)
  void settle_window_blocks();
  // Pops each lane's events of `heap` due by its next step; f(q) for each still valid (q's
  // version, decoding).
  template <class F>
  void settle_due(EventHeap Lane::*heap, F&& f);
  std::int64_t cached_prefix(const Req& q, bool partial_reuse) const;  // prefix_hit of a request of a group
  void settle_rank_needs();  // rank_phase_need_ and phase_need_ of each rank's next step
  // Σ phase_ over the block phases step phase_need_step_ crosses (what decode_blocks_needed adds).
  static constexpr std::int64_t kNoStep = std::numeric_limits<std::int64_t>::min();
  std::int64_t phase_need_ = 0, phase_need_step_ = kNoStep;
  std::vector<std::int64_t> rank_phase_need_;  // phase_need_ by rank (per-rank pools only; their sum is phase_need_)

 public:
  StepPlan plan;  // the step in flight (last: its draft mixes are large and mostly unused)
};

}  // namespace ridgeline::serving::detail
