#pragma once
/// Dot products and matrix multiplications with per-operand dtypes (docs/cost-model.md#matmul).
#include <array>
#include <cmath>
#include <cstdint>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::ops {

/// x·y for x, y in `t`[n], result in `t`; runs on the vector unit in `compute`.
struct DotShape {
  double n = 1;
  DType dtype = DType::bf16;
  DType compute = DType::fp32;
};
/// FLOPs n multiplies + (n-1) adds; bytes 2·n·s + s (one result stored).
Cost dot_cost(const DotShape& s) noexcept;

/// X[batch, m, k] · W[k, n] -> Y[batch, m, n], or W[batch, k, n] with per-sample weights.
struct MatmulShape {
  double m = 1, k = 1, n = 1;
  double batch = 1;
  bool per_sample_weights = false;
  DType a = DType::bf16;        ///< X (activations)
  DType b = DType::bf16;        ///< W (weights)
  DType out = DType::bf16;      ///< Y
  DType compute = DType::bf16;  ///< matrix-unit dtype the FLOPs run in
  double tile_m = 0, tile_k = 0, tile_n = 0;  ///< 0: ideal reuse (each operand read once)
};

/// The dtype a matmul runs in when not given: the operands' dtype when they agree,
/// else the wider one (int8 weights with bf16 activations compute in bf16).
DType default_compute_dtype(DType a, DType b) noexcept;
/// A model's GEMMs on `chip` when not given: fp8 weights on a chip whose matrix unit runs
/// fp8 compute in fp8, the activations quantised on the fly (W8A8, as vLLM and TensorRT-LLM
/// run fp8 checkpoints on Hopper and Blackwell); elsewhere default_compute_dtype (fp8 weights
/// on an A100 dequantised to bf16: W8A16).
DType default_compute_dtype(DType act, DType weight, const hw::ChipSpec& chip) noexcept;

/// How a BLAS library runs a GEMM's output on a chip's multiprocessors
/// (docs/cost-model.md#gemm-shape): cut into tiles, the tiles (or, when there are fewer
/// than multiprocessors, slices of their K loop) run in waves of one per multiprocessor.
struct GemmTiling {
  double tile_m = 0, tile_n = 0;  ///< the tile: a large tile, narrowed to the GEMM's rows or columns in steps of 16
  double tiles = 0;               ///< output tiles, every batch
  double split_k = 1;             ///< multiprocessors sharing each tile's K loop when tiles are few (stream-K: sms/tiles, not whole)
  double waves = 0;               ///< rounds of tile slices over the multiprocessors (tiles / sms, not whole, where a last wave is shared)
  /// The fraction of the matrix units' work that is the GEMM's:
  /// batch·m·n·split_k / (waves·sms·tile_m·tile_n); 1 without multiprocessors.
  double useful = 1;
};
/// The library's large tiles, rows x columns, in the order ties are broken (NVIDIA's Matrix
/// Multiplication Background guide, "typical tile dimensions in cuBLAS": the largest tiles
/// reuse operands most and run fastest).
inline constexpr double kGemmTiles[3][2] = {{256, 128}, {128, 256}, {128, 128}};
/// Depth each slice of a split K loop keeps at least (two k-steps of 64).
inline constexpr double kMinSplitDepth = 128;
/// Whether a GEMM of depth k shares a last partial wave (hw::GemmSplit): stream-K past one wave
/// and more than 8 K tiles of 64 to share (CUTLASS's `min_iters_per_sk_unit_`, SM90's
/// `get_num_sk_tiles`; 64-deep K tiles are a 128-byte row of bf16; fp8's 128-deep ones would
/// make it K > 1024, not told apart here: the K of an LLM's GEMMs is past both).
inline bool shares_tail(hw::GemmSplit split, double k) noexcept { return split == hw::GemmSplit::stream_k && k > 8 * 64; }
/// The tiling of `batch` GEMMs [m, k] x [k, n] over `sms` multiprocessors with the least
/// matrix work among kGemmTiles (each narrowed to m and n rounded up to 16 when smaller);
/// with fewer tiles than multiprocessors each tile's K loop is split over
/// max(1, min(⌊sms / tiles⌋, ⌊k / kMinSplitDepth⌋)) of them (split-K), or, stream-K, the
/// tiles' K iterations are shared out over all of them, each tile's over min(sms / tiles,
/// ⌊k / kMinSplitDepth⌋) (at least 1), in one wave. With as many tiles or more they run in
/// waves of sms, whole, except where shares_tail: a last wave less than half full is shared
/// out with the full one before it, tiles / sms waves of the tiles' own work. sms <= 0: useful 1.
GemmTiling gemm_tiling(double m, double n, double k, double batch, int sms, hw::GemmSplit split) noexcept;
/// The matrix work a tiling adds beyond the GEMM's 2·batch·m·k·n FLOPs, in FLOPs
/// (Cost::matrix_pad_flops): those FLOPs x (1 / useful - 1); with a kernel's fill (`fill_k`
/// columns of K each tile costs more, hw::ClassEfficiency::fill_k) the tiles' work at depth
/// k + fill_k: 2·batch·m·n·((k + fill_k) / useful − k). No tiling (useful 1): the fill alone.
inline double gemm_pad_flops(double m, double n, double k, double batch, const GemmTiling& t, double fill_k = 0) noexcept {
  if (!(m > 0) || !std::isfinite(m)) return 0;
  const double useful = t.useful > 0 && t.useful < 1 ? t.useful : 1;
  return useful < 1 || fill_k > 0 ? 2 * batch * m * n * ((k + fill_k) / useful - k) : 0;
}
/// The same for the tiling gemm_tiling chooses on `sms` multiprocessors.
inline double gemm_pad_flops(double m, double n, double k, double batch, int sms, hw::GemmSplit split, double fill_k = 0) noexcept {
  return gemm_pad_flops(m, n, k, batch, gemm_tiling(m, n, k, batch, sms, split), fill_k);
}

/// gemm_pad_flops(m, n, k, 1, sms, split) of one GEMM's columns and depth for any rows m, with what
/// does not depend on m worked out once (the serving step model prices a GEMM's tiling at
/// every step). Padded work = waves·sms·tile_m·tile_n / split_k − m·n per unit of 2k, the
/// least over kGemmTiles (the largest useful fraction); up to 128 rows every tile is narrowed
/// to ⌈m/16⌉·16 rows in one row of tiles, so the best tile, its split and its waves are fixed
/// and the work is a constant times ⌈m/16⌉·16. Equal to gemm_pad_flops up to rounding.
class GemmPadding {
 public:
  GemmPadding() = default;
  GemmPadding(double n, double k, int sms, hw::GemmSplit split, double fill_k = 0) noexcept;
  /// Padded FLOPs for m rows (0 without multiprocessors, for m <= 0 or not finite).
  double flops(double m) const noexcept { return from_work(m, work(m)); }
  /// The tiles' matrix work for m rows > 0, in units of 2k FLOPs (waves·sms·tile_m·tile_n /
  /// split_k). Above 256 rows it depends on m only through ⌈m/128⌉ (callers may tabulate it).
  /// Inline up to 256 rows (one constant) and, above, where every tile shape has at least one
  /// tile per multiprocessor (no split, most prefill GEMMs: three whole-number ceilings).
  double work(double m) const noexcept {
    const double x = m * (1.0 / 128);  // exact: a power of two
    if (x > full_lo_ && x <= full_hi_) {
      auto r = static_cast<std::uint64_t>(x);
      r += static_cast<double>(r) < x;  // ⌈m/128⌉
      const std::uint64_t r256 = (r + 1) >> 1;
      const double w0 = whole_waves(r256 * cols_i_[0], 0), w1 = whole_waves(r * cols_i_[1], 1), w2 = whole_waves(r * cols_i_[2], 2);
      const double w01 = w1 < w0 ? w1 : w0;
      return w2 < w01 ? w2 : w01;
    }
    if (x > 0 && x <= 2) {  // up to 256 rows (0 without multiprocessors: every constant is 0)
      const double rows16 = 16 * std::ceil(m * (1.0 / 16));  // exact: a power of two
      if (x <= 1) return small_ * rows16;
      const double wide = mid_wide_ * rows16;
      return wide < mid_rest_ ? wide : mid_rest_;
    }
    return work_split(m);
  }
  /// Padded FLOPs for m rows when the tiles' work is `work` (from work(m)).
  double from_work(double m, double work) const noexcept {
    if (!(sms_ > 0 && m > 0 && m <= kMaxRows)) return 0;
    return 2 * ((k_ + fill_) * (work > m * n_ ? work : m * n_) - k_ * m * n_);
  }
  /// Rows beyond which (and non-finite m) nothing is padded: no graph has so many.
  static constexpr double kMaxRows = 1e15;

 private:
  double n_ = 0, k_ = 0, sms_ = 0, fill_ = 0;  ///< fill_: the kernel's fill_k (gemm_pad_flops)
  double small_ = 0;  ///< up to 128 rows: the least waves·sms·tile_n/split_k, work per row
  double mid_wide_ = 0, mid_rest_ = 0;  ///< 129..256 rows: the 256-row tile's work per row, the others' least work
  // Above 256 rows, in integers while tiles + sms < 2^24: ⌈a/sms⌉ = ((a + sms - 1)·magic_) >> 40.
  std::array<std::uint64_t, 3> cols_i_{};
  std::array<double, 3> wave_work_{};  ///< sms·tile_m·tile_n: a full wave's work
  std::array<double, 3> tile_work_{};  ///< tile_m·tile_n
  std::uint64_t sms_i_ = 0, magic_ = 0, k_cap_i_ = 0;
  hw::GemmSplit split_ = hw::GemmSplit::split_k;
  bool stream_k_ = false, tail_ = false;  ///< split_ is not split-K; shares_tail(split_, k_)
  /// m/128 above full_lo_ and up to full_hi_ (never when lo > hi): above 256 rows, every tile
  /// shape has at least sms tiles and fewer than 2^24 − sms, in whole numbers.
  double full_lo_ = 1, full_hi_ = 0;
  double work_split(double m) const noexcept;  ///< work() elsewhere
  /// The work of `tiles` >= sms tiles of shape t (< 2^24): whole waves, or with tail_ a last
  /// wave under half full shared out with the one before it (the tiles' own work).
  double whole_waves(std::uint64_t tiles, int t) const noexcept {
    const std::uint64_t waves = ((tiles + sms_i_ - 1) * magic_) >> 40;
    if (tail_ && 2 * (tiles - (waves - 1) * sms_i_) < sms_i_) return static_cast<double>(tiles) * tile_work_[t];
    return static_cast<double>(waves) * wave_work_[t];
  }
};

/// FLOPs 2·batch·m·k·n on the matrix unit; bytes X + W + Y each in its own dtype, with
/// X re-read ceil(n/tile_n) and W re-read ceil(m/tile_m) times when tiles are given; Y is
/// stored (Cost::main_store_bytes).
/// Inline: the model builder makes one per GEMM of every graph.
inline Cost matmul_cost(const MatmulShape& s) noexcept {
  Cost c;
  c.add_flops(hw::Unit::matrix, s.compute, 2 * s.batch * s.m * s.k * s.n);
  double x_reads = s.tile_n > 0 ? std::ceil(s.n / s.tile_n) : 1;
  double w_reads = s.tile_m > 0 ? std::ceil(s.m / s.tile_m) : 1;
  double x = s.batch * s.m * s.k * bytes(s.a);
  double w = (s.per_sample_weights ? s.batch : 1) * s.k * s.n * bytes(s.b);
  // Shared weights tiled across a batch are re-read for every sample's row tiles.
  if (!s.per_sample_weights && s.tile_m > 0) w *= s.batch;
  double y = s.batch * s.m * s.n * bytes(s.out);
  c.add_main_bytes(x * x_reads + w * w_reads);
  c.add_main_stores(y);
  c.launches = 1;
  return c;
}


}  // namespace ridgeline::ops
