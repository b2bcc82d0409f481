// One engine replica's state: running list, decode sums, paged KV cache with prefixes.
#include "replica.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace ridgeline::serving::detail {

namespace {
std::int64_t mod(std::int64_t a, std::int64_t m) {
  const std::int64_t r = a % m;
  return r < 0 ? r + m : r;
}
}  // namespace

Replica::Replica(std::vector<Req>& pool_, const EngineConfig& e, std::int64_t blocks, double window, std::int32_t index_)
    : index(index_), pool(pool_), engine(e), block_(std::max<std::int64_t>(1, e.kv_block)), window_(window) {
  total_blocks = free_blocks = blocks;
  free_queue_.push_back({-1, blocks});
  phase_.assign(static_cast<std::size_t>(block_), 0);
  new_token_ratio = e.new_token_ratio_init;
}

void Replica::push_running(std::int32_t r) {
  Req& q = pool[r];
  q.prev = tail;
  q.next = -1;
  if (tail >= 0) pool[tail].next = r;
  else head = r;
  tail = r;
  ++running_count;
}

void Replica::remove_running(std::int32_t r) {
  Req& q = pool[r];
  if (q.prev >= 0) pool[q.prev].next = q.next;
  else head = q.next;
  if (q.next >= 0) pool[q.next].prev = q.prev;
  else tail = q.prev;
  q.prev = q.next = -1;
  --running_count;
  if (q.phase == Phase::prefill) prefilling.erase(std::find(prefilling.begin(), prefilling.end(), r));
}

void Replica::join_decode(std::int32_t r) {
  Req& q = pool[r];
  q.phase = Phase::decode;
  q.d0 = dstep;
  q.c0 = q.computed;
  q.e0 = q.emitted;
  ++n_decode;
  n_warm_decode += q.warmup ? 1 : 0;
  s_all_ += q.c0 - q.d0;
  out_all_ += q.output - q.e0 + q.d0;
  ++phase_[static_cast<std::size_t>(mod(q.d0 - q.c0, block_))];
  finishes.push({q.d0 + (q.output - q.e0) - 1, r, q.version});
  // Inside the window while c0 + (d - d0) + 1 <= W, i.e. until step d0 + W - c0.
  q.above_window = window_ <= 0 || static_cast<double>(q.c0) + 1 > window_;
  if (!q.above_window) {
    ++n_below_;
    s_below_ += q.c0 - q.d0;
    crossings_.push({q.d0 + static_cast<std::int64_t>(window_) - q.c0, r, q.version});
  }
  new_decoders.push_back(r);
}

void Replica::leave_decode(std::int32_t r) {
  Req& q = pool[r];
  --n_decode;
  n_warm_decode -= q.warmup ? 1 : 0;
  s_all_ -= q.c0 - q.d0;
  out_all_ -= q.output - q.e0 + q.d0;
  --phase_[static_cast<std::size_t>(mod(q.d0 - q.c0, block_))];
  if (!q.above_window) {
    --n_below_;
    s_below_ -= q.c0 - q.d0;
  }
  ++q.version;  // its finish and window events are stale
  const auto it = std::find(new_decoders.begin(), new_decoders.end(), r);
  if (it != new_decoders.end()) new_decoders.erase(it);
}

void Replica::add_decodes(model::StepMix& mix) {
  const std::int64_t d = dstep;
  while (!crossings_.empty() && crossings_.top().step <= d) {
    const DecodeEvent ev = crossings_.top();
    crossings_.pop();
    Req& q = pool[ev.req];
    if (ev.version != q.version || q.phase != Phase::decode || q.above_window) continue;
    q.above_window = true;
    --n_below_;
    s_below_ -= q.c0 - q.d0;
  }
  if (n_decode == 0) return;
  // Each sequence attends to its cached tokens and the one it computes now: c0 + (d - d0) + 1.
  const double n = static_cast<double>(n_decode);
  const double kv = static_cast<double>(s_all_) + n * static_cast<double>(d + 1);
  const double nb = static_cast<double>(n_below_);
  const double kv_window = window_ > 0 ? static_cast<double>(s_below_) + nb * static_cast<double>(d + 1) +
                                             window_ * (n - nb)
                                       : kv;
  mix.decode_seqs += n;
  // A decode token's counts (ops::attention_counts at q_len 1): one query, as many pairs,
  // keys, scores and positions as its context.
  auto add = [n](ops::AttentionCounts& c, double context) {
    c.seqs += n, c.queries += n, c.pairs += context, c.keys += context, c.scores += context, c.positions += context;
  };
  add(mix.decode_full, kv);
  add(mix.decode_window, kv_window);
}

std::int64_t Replica::decode_blocks_needed() const { return phase_[static_cast<std::size_t>(mod(dstep, block_))]; }

std::int64_t Replica::decode_blocks(const Req& q) const {
  return blocks_for(q.c0 + (dstep - q.d0)) - q.shared;
}

std::int64_t Replica::remaining_output_sum() const {
  std::int64_t s = out_all_ - n_decode * dstep;
  for (const std::int32_t r : prefilling) s += pool[r].output - pool[r].emitted;
  return s;
}

// --- KV cache ------------------------------------------------------------------------------

void Replica::take_blocks(std::int64_t n) {
  if (n > free_blocks) {
    throw std::logic_error(fmt::format("serve: replica {} takes {} KV blocks with {} free", index, n, free_blocks));
  }
  free_blocks -= n;
  while (n > 0 && !free_queue_.empty()) {
    Segment& s = free_queue_.front();
    const std::int64_t k = std::min(n, s.count);
    s.count -= k;
    n -= k;
    if (s.group >= 0 && k > 0) {
      // Evicts the end of the group's prefix (its blocks were freed last block first).
      Group& g = groups[static_cast<std::size_t>(s.group)];
      g.cached -= k;
    }
    if (s.count == 0) {
      if (s.group >= 0) {
        Group& g = groups[static_cast<std::size_t>(s.group)];
        if (g.segment == segments_popped_) g.segment = -1;
      }
      free_queue_.pop_front();
      ++segments_popped_;
    }
  }
}

void Replica::give_blocks(std::int64_t n) {
  if (n <= 0) return;
  free_blocks += n;
  if (!free_queue_.empty() && free_queue_.back().group < 0) {
    free_queue_.back().count += n;
  } else {
    free_queue_.push_back({-1, n});
  }
}

std::int64_t Replica::prefix_hit(const Req& q, bool partial_reuse) const {
  if (q.group < 0 || !engine.prefix_caching) return 0;
  const Group& g = groups[static_cast<std::size_t>(q.group)];
  const std::int64_t full = q.prefix_tokens / block_;  // full blocks of the prefix
  const std::int64_t blocks = std::min(g.cached, full);
  if (blocks <= 0) return 0;
  // The last token is always computed (its logits give the next token).
  std::int64_t tokens = blocks * block_;
  if (partial_reuse && blocks == full) tokens = q.prefix_tokens;
  tokens = std::min(tokens, q.target - 1);
  if (!partial_reuse) tokens = tokens / block_ * block_;
  return std::max<std::int64_t>(0, tokens);
}

void Replica::ref_prefix(Req& q, std::int64_t hit) {
  Group& g = groups[static_cast<std::size_t>(q.group)];
  if (g.refs == 0 && g.segment >= 0) {
    // Off the free queue: its blocks are in use again.
    free_queue_[static_cast<std::size_t>(g.segment - segments_popped_)].count = 0;
    free_blocks -= g.cached;
    g.segment = -1;
  }
  ++g.refs;
  q.shared = std::min(g.cached, blocks_for(hit));  // the blocks its hit covers
}

void Replica::unref_prefix(Req& q) {
  if (q.shared == 0 || q.group < 0) return;
  Group& g = groups[static_cast<std::size_t>(q.group)];
  q.shared = 0;
  if (--g.refs > 0 || g.cached == 0) return;
  // Still cached, now evictable: to the back of the free queue.
  free_blocks += g.cached;
  g.segment = segments_popped_ + static_cast<std::int64_t>(free_queue_.size());
  free_queue_.push_back({q.group, g.cached});
}

void Replica::publish_prefix(Req& q) {
  if (q.group < 0 || !engine.prefix_caching) return;
  Group& g = groups[static_cast<std::size_t>(q.group)];
  const std::int64_t full = q.prefix_tokens / block_;
  if (full <= 0) return;
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
  give_blocks(own);
  q.blocks = 0;
  unref_prefix(q);
}

}  // namespace ridgeline::serving::detail
