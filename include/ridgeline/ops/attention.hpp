#pragma once
/// Scaled dot-product attention, flash (fused) or naive (scores materialised); causal
/// masking, GQA/MQA through kv_heads (docs/cost-model.md#attention).
#include <algorithm>
#include <cmath>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::ops {

enum class AttentionImpl : std::uint8_t { flash, naive };

struct AttentionShape {
  double batch = 1;
  double q_len = 1;    ///< queries per sequence
  double kv_len = 1;   ///< keys per sequence (the queries are its last q_len positions)
  double heads = 1;    ///< query heads
  double kv_heads = 1; ///< key/value heads (heads for MHA, 1 for MQA)
  double head_dim = 128;    ///< query/key head dimension
  double v_head_dim = 0;    ///< value head dimension (0: head_dim); MLA uses 128 against 192
  double window = 0;        ///< sliding window in keys (0: none); implies a causal mask
  bool latent_kv = false;   ///< K and V are one shared latent tensor of head_dim (absorbed MLA)
  bool causal = false;
  /// Flash prefill (more than one query a sequence): the keys' worth of work each tile of
  /// kQueryTile queries of a head costs beyond its keys — loading its queries, the softmax's
  /// last rescale, writing its output, filling and draining the pipeline. The chip's attention
  /// class's figure (hw::ClassEfficiency::tile_keys), fitted from measured kernels; 0 counts
  /// only the tiles' own shape (docs/cost-model.md#attention-tiles).
  double tile_keys = 0;
  AttentionImpl impl = AttentionImpl::flash;
  DType dtype = DType::bf16;     ///< Q, O and the materialised scores
  DType kv_dtype = DType::bf16;  ///< K and V
  DType compute = DType::bf16;   ///< matrix-unit dtype
  DType vector = DType::fp32;    ///< softmax math
};

/// A flash kernel's tile in the forward over a prompt: kQueryTile query rows against kKeyTile
/// keys at a time (FlashAttention-2's and -3's forward at head dim 128: kBlockM 128; FA3
/// hopper/tile_size.h, tile_size_fwd_sm90: kBlockN 128 under a causal mask). A tile is
/// computed whole, its pairs past the causal mask's diagonal too.
inline constexpr double kQueryTile = 128, kKeyTile = 128;

namespace detail {
// std::ceil and std::floor without the library call they are on x86-64's baseline (no
// SSE4.1 roundsd): the tile counts run for every prefill chunk of every serving step.
// Exact for |x| < 2^52; beyond, or NaN, the library's.
inline double ceil_fast(double x) noexcept {
  if (!(std::fabs(x) < 4503599627370496.0)) return std::ceil(x);
  const double t = static_cast<double>(static_cast<long long>(x));
  return t < x ? t + 1 : t;
}
inline double floor_fast(double x) noexcept {
  if (!(std::fabs(x) < 4503599627370496.0)) return std::floor(x);
  const double t = static_cast<double>(static_cast<long long>(x));
  return t > x ? t - 1 : t;
}
// Sum of min(x, w) for x = a..b (a <= b).
inline double sum_min(double a, double b, double w) noexcept {
  if (b <= w) return (a + b) * (b - a + 1) / 2;
  if (a >= w) return w * (b - a + 1);
  return (a + w) * (w - a + 1) / 2 + w * (b - w);
}
}  // namespace detail

/// Query-key pairs that are computed: q_len·kv_len, or with a causal mask (flash only)
/// q_len·(kv_len - q_len) + q_len·(q_len + 1)/2; with a window W each query sees at most W keys.
/// (Inline, as the counts below: the serving simulator adds them at every step.)
inline double attention_pairs(const AttentionShape& s) noexcept {
  if (s.impl == AttentionImpl::naive) return s.q_len * s.kv_len;
  if (s.window > 0) {
    // Query at 0-based position p sees min(p + 1, W) keys; the queries are the last q_len.
    return detail::sum_min(s.kv_len - s.q_len + 1, s.kv_len, s.window);
  }
  if (!s.causal) return s.q_len * s.kv_len;
  // Query i (0-based among the last q_len positions) sees kv_len - q_len + i + 1 keys.
  return s.q_len * (s.kv_len - s.q_len) + s.q_len * (s.q_len + 1) / 2;
}

/// Of a flash prefill over one sequence, its query tiles and the query-key pairs they compute
/// (none for a single query, which decode kernels run with the query heads packed). Tile j
/// (0-based) holds queries 128j to 128(j + 1) and computes its rows against the whole key
/// tiles (from key 0, 128 at a time) its queries reach: up to its last query, from its first
/// query's first key in a window. A last tile of fewer queries is that fraction of a tile: its
/// other rows hold other query heads of the same KV head (FA3's PackGQA, always on for varlen
/// batches of a GQA model, as engines run them: hopper/heuristics.h, should_pack_gqa), not
/// padding. Closed forms, whatever the chunk's length (the serving simulator adds them at
/// every step).
struct QueryTiles {
  double tiles = 0, pairs = 0;
};
inline QueryTiles query_tiles(const AttentionShape& s) noexcept {
  if (s.impl == AttentionImpl::naive || s.q_len <= 1) return {};
  const double tiles = s.q_len / kQueryTile;
  if (!s.causal && !(s.window > 0)) return {tiles, s.q_len * kKeyTile * detail::ceil_fast(s.kv_len / kKeyTile)};
  // Tile j < n - 1 holds the queries at positions p + 128j to p + 128j + 127 (p cached before
  // the chunk) and reaches key tile floor((p + 128j + 127) / 128) = a + j, a = ceil(p / 128)
  // (positions are whole); in a window W, from key tile floor((p + 128j - W + 1) / 128) =
  // j + c, c = floor((p - W + 1) / 128), or 0: a + j + 1 - max(0, j + c) tiles. The last
  // tile, of the remaining r queries, reaches ceil(kv / 128) = floor((kv - 1) / 128) + 1 less
  // its own window start.
  const double n = detail::ceil_fast(tiles), p = s.kv_len - s.q_len, r = s.q_len - (n - 1) * kQueryTile;
  const double a = detail::ceil_fast(p / kKeyTile);
  double whole = (n - 1) * (a + 1) + (n - 1) * (n - 2) / 2;  // sum over j < n - 1 of a + j + 1
  double last = detail::ceil_fast(s.kv_len / kKeyTile);
  if (s.window > 0) {
    const double c = detail::floor_fast((p - s.window + 1) / kKeyTile);
    // Sum over j = lo..n - 2 of j + c, where j + c > 0.
    const double lo = std::max(0.0, 1 - c), hi = n - 2;
    if (lo <= hi) whole -= (lo + c + hi + c) * (hi - lo + 1) / 2;
    last -= std::max(0.0, detail::floor_fast((p + (n - 1) * kQueryTile - s.window + 1) / kKeyTile));
  }
  return {tiles, (whole * kQueryTile + r * last) * kKeyTile};
}

/// Keys each sequence reads from memory: kv_len, or at most the window for a single query.
inline double attention_keys_read(const AttentionShape& s) noexcept {
  if (s.window > 0 && s.impl == AttentionImpl::flash) {
    // The earliest query needs keys from (kv_len - q_len + 1 - W) on.
    return std::min(s.kv_len, s.window + s.q_len - 1);
  }
  return s.kv_len;
}

/// What an attention kernel does, as sums over the sequences it serves: every count is
/// additive, so a kernel over sequences of different lengths (an engine step mixing prefill
/// chunks and decode tokens) costs attention_cost(shape, sum of each sequence's counts).
struct AttentionCounts {
  double seqs = 0;       ///< sequences
  double queries = 0;    ///< query positions (q_len per sequence)
  double pairs = 0;      ///< query-key pairs computed (attention_pairs per sequence)
  double keys = 0;       ///< keys read from memory (attention_keys_read per sequence)
  double scores = 0;     ///< q_len·kv_len per sequence (naive: the materialised score matrix)
  double positions = 0;  ///< kv_len per sequence (naive: K and V expanded to every head)
  double q_tiles = 0;    ///< a flash prefill's query tiles (query_tiles per sequence)
  double tile_waste = 0; ///< the pairs those tiles compute past `pairs` (the masked diagonal, a window's ragged start, key tiles' rounding)
  AttentionCounts& operator+=(const AttentionCounts& o) noexcept {
    seqs += o.seqs, queries += o.queries, pairs += o.pairs, keys += o.keys, scores += o.scores, positions += o.positions;
    q_tiles += o.q_tiles, tile_waste += o.tile_waste;
    return *this;
  }
  /// Every count times `k` (a chip's share, a group's).
  AttentionCounts& operator*=(double k) noexcept {
    seqs *= k, queries *= k, pairs *= k, keys *= k, scores *= k, positions *= k, q_tiles *= k, tile_waste *= k;
    return *this;
  }
};

/// The counts of `s` as a decode kernel runs its queries: packed over the heads, without
/// tiles of their own (one query a sequence, or a speculative step's few). The serving
/// simulator's decode counts, at every step.
inline AttentionCounts decode_attention_counts(const AttentionShape& s) noexcept {
  AttentionCounts n;
  n.seqs = s.batch;
  n.queries = s.batch * s.q_len;
  n.pairs = s.batch * attention_pairs(s);
  n.keys = s.batch * attention_keys_read(s);
  n.scores = s.batch * s.q_len * s.kv_len;
  n.positions = s.batch * s.kv_len;
  return n;
}

/// The counts of `s` (its batch of sequences, each q_len queries over kv_len keys), a flash
/// prefill's in its query tiles.
inline AttentionCounts attention_counts(const AttentionShape& s) noexcept {
  AttentionCounts n = decode_attention_counts(s);
  const QueryTiles t = query_tiles(s);
  if (t.tiles > 0) {
    n.q_tiles = s.batch * t.tiles;
    n.tile_waste = std::max(0.0, s.batch * t.pairs - n.pairs);
  }
  return n;
}

/// How a flash prefill runs in tiles (docs/cost-model.md#attention-tiles): its query tiles
/// over all heads and sequences, and the share of the work they do that is the useful pairs'
/// (against the tiles' whole pairs and their tile_keys work); no tiles, useful 1, for decode
/// queries and naive attention.
struct AttentionTiling {
  double tiles = 0;
  double useful = 1;
  double tile_keys = 0;
};
inline AttentionTiling attention_tiling(const AttentionShape& s) noexcept {
  const AttentionCounts n = attention_counts(s);
  if (n.q_tiles <= 0) return {};
  const double work = n.pairs + n.tile_waste + n.q_tiles * kQueryTile * s.tile_keys;
  return {s.heads * n.q_tiles, work > 0 ? n.pairs / work : 1, s.tile_keys};
}

/// One kernel over `n` (the per-sequence fields of `s` — batch, q_len, kv_len — unused): heads,
/// dims, dtypes and implementation from `s`.
Cost attention_cost(const AttentionShape& s, const AttentionCounts& n) noexcept;

/// attention_cost(s, attention_counts(s)).
Cost attention_cost(const AttentionShape& s) noexcept;

/// The merge of a split-KV decode's partial outputs into `rows` output rows of `heads` heads
/// (AITER's mla_reduce_v1 after its persistent MLA decode, the kernel class
/// attention_combine): `partials` partial results a head (the rows' splits, summed over the
/// rows), each `v_dim` fp32 values and its fp32 log-sum-exp, read; per partial a scale
/// exp(lse_s - lse) and v_dim multiply-adds (an online softmax's merge, 2·v_dim + 2 FLOPs), per
/// output value its normalisation; each row's v_dim values a head written in `out`.
Cost attention_combine_cost(double partials, double rows, double heads, double v_dim, DType out) noexcept;

}  // namespace ridgeline::ops
