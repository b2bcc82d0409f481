#include "ridgeline/ops/matmul.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ridgeline::ops {

Cost dot_cost(const DotShape& s) noexcept {
  Cost c;
  c.add_flops(hw::Unit::vector, s.compute, 2 * s.n - 1);
  c.add_main_bytes(2 * s.n * bytes(s.dtype));
  c.add_main_stores(bytes(s.dtype));
  c.launches = 1;
  return c;
}

namespace {
// ⌈a/s⌉ for whole numbers a >= 0, s > 0 below 2^53, from a·(1/s) corrected by one either way.
double ceil_div(double a, double s, double inv_s) noexcept {
  double q = std::ceil(a * inv_s);
  if ((q - 1) * s >= a) q -= 1;
  if (q * s < a) q += 1;
  return q;
}
// How `tiles` tiles run on s multiprocessors, as the work waves·s·tile_m·tile_n / split_k
// kept as a fraction num/den of whole numbers (exact): s tiles a wave when they are as many;
// fewer, each K loop split max(1, min(⌊s/tiles⌋, k_cap)) ways, the slices in waves (split-K),
// or the tiles' K iterations shared out over all s, each tile's over min(s/tiles, k_cap) (at
// least 1), in one wave (stream-K): the tiles' own work where k_cap lets the share reach s/tiles.
// As many or more, waves of s whole tiles; with `tail` (stream-K past one wave), a last wave
// less than half full is shared out over all s with the full wave before it, CUTLASS's SM90
// rule: the tiles' own work, tiles/s waves.
struct Split {
  double split, waves;  // split_k (stream-K: not whole) and waves (not whole when the tail is shared)
  double num, den;      // per unit of tile_m·tile_n: work = num / den tiles
};
Split split_and_waves(double tiles, double s, double inv_s, double k_cap, bool stream_k, bool tail) noexcept {
  if (tiles >= s) {
    const double w = ceil_div(tiles, s, inv_s);
    if (tail && 2 * (tiles - (w - 1) * s) < s) return {1, tiles * inv_s, tiles, 1};
    return {1, w, w * s, 1};
  }
  if (stream_k) {
    if (tiles * k_cap >= s) return {s / tiles, 1, tiles, 1};
    const double split = std::max(1.0, k_cap);
    return {split, 1, s, split};
  }
  const double split = std::max(1.0, std::min(std::floor(s / tiles), k_cap));
  const double w = ceil_div(tiles * split, s, inv_s);
  return {split, w, w * s, split};
}

// The tiling with the least padded work, waves·sms·tile_m·tile_n / split_k, among
// kGemmTiles, as `count(tile)` lays each out (tile_m, tile_n, tiles) and split_and_waves runs
// its tiles on s multiprocessors: compared as fractions of whole numbers (exact), the least
// wins, the first of equal ones.
template <class Count>
GemmTiling least_work(double m, double n, double batch, double s, double k_cap, bool stream_k, bool tail, Count count) noexcept {
  GemmTiling best;
  double best_num = 0, best_den = 1;
  const double inv_s = 1 / s;
  for (const auto& tile : kGemmTiles) {
    GemmTiling t = count(tile);
    const Split sw = split_and_waves(t.tiles, s, inv_s, k_cap, stream_k, tail);
    t.split_k = sw.split;
    t.waves = sw.waves;
    const double num = sw.num * t.tile_m * t.tile_n;
    if (best.tiles == 0 || num * best_den < best_num * sw.den) {
      best = t;
      best_num = num;
      best_den = sw.den;
    }
  }
  best.useful = batch * m * n * best_den / best_num;
  return best;
}
}  // namespace

GemmTiling gemm_tiling(double m, double n, double k, double batch, int sms, hw::GemmSplit split) noexcept {
  const bool finite = std::isfinite(m) && std::isfinite(n) && std::isfinite(k) && std::isfinite(batch);
  if (sms <= 0 || !finite || m <= 0 || n <= 0 || k <= 0 || batch <= 0) return {};
  const double s = sms;
  const bool stream_k = split != hw::GemmSplit::split_k, tail = shares_tail(split, k);
  const double k_cap = std::floor(k / kMinSplitDepth);
  // A whole batch while 128x128 tiles stay under 2^40 (and k under 2^53): the tile counts in
  // whole numbers, by shifts, where the doubles below take ceilings (the same values: every
  // quantity is a whole number the doubles hold exactly).
  if (batch == std::floor(batch) && m < 1e15 && n < 1e15 && k < 9e15 &&
      batch * (m * (1.0 / 128) + 1) * (n * (1.0 / 128) + 1) < 1099511627776.0) {
    const auto M = static_cast<std::int64_t>(std::ceil(m)), N = static_cast<std::int64_t>(std::ceil(n));
    const auto B = static_cast<std::int64_t>(batch);
    const std::int64_t rows16 = (M + 15) >> 4 << 4, cols16 = (N + 15) >> 4 << 4;
    return least_work(m, n, batch, s, k_cap, stream_k, tail, [&](const double* tile) {
      const auto bm = static_cast<std::int64_t>(tile[0]), bn = static_cast<std::int64_t>(tile[1]);
      const std::int64_t tm = std::min(bm, rows16), tn = std::min(bn, cols16);
      const std::int64_t rows = tm < bm ? 1 : (M + bm - 1) >> (bm == 256 ? 8 : 7);
      const std::int64_t cols = tn < bn ? 1 : (N + bn - 1) >> (bn == 256 ? 8 : 7);
      GemmTiling t;
      t.tile_m = static_cast<double>(tm);
      t.tile_n = static_cast<double>(tn);
      t.tiles = static_cast<double>(B * rows * cols);
      return t;
    });
  }
  const double rows16 = 16 * std::ceil(m * (1.0 / 16)), cols16 = 16 * std::ceil(n * (1.0 / 16));
  return least_work(m, n, batch, s, k_cap, stream_k, tail, [&](const double* tile) {
    GemmTiling t;
    t.tile_m = std::min(tile[0], rows16);
    t.tile_n = std::min(tile[1], cols16);
    // A tile narrowed to the GEMM covers it in one; the others are 128 or 256: exact.
    const double rows = t.tile_m < tile[0] ? 1 : std::ceil(m * (tile[0] == 256 ? 1.0 / 256 : 1.0 / 128));
    const double cols = t.tile_n < tile[1] ? 1 : std::ceil(n * (tile[1] == 256 ? 1.0 / 256 : 1.0 / 128));
    t.tiles = batch * rows * cols;
    return t;
  });
}

static_assert(kGemmTiles[0][0] == 256 && kGemmTiles[1][0] == 128 && kGemmTiles[2][0] == 128 &&
                  kGemmTiles[0][1] == 128 && kGemmTiles[1][1] == 256 && kGemmTiles[2][1] == 128,
              "gemm_tiling and GemmPadding divide by tiles of 128 and 256 exactly");


GemmPadding::GemmPadding(double n, double k, int sms, hw::GemmSplit split, double fill_k) noexcept {
  if (sms <= 0 || !std::isfinite(n) || !std::isfinite(k) || n <= 0 || k <= 0) return;
  n_ = n;
  k_ = k;
  fill_ = std::isfinite(fill_k) && fill_k > 0 ? fill_k : 0;
  sms_ = sms;
  split_ = split;
  stream_k_ = split != hw::GemmSplit::split_k;
  tail_ = shares_tail(split, k);
  const double inv_sms = 1 / sms_, k_cap = std::floor(k / kMinSplitDepth);
  small_ = mid_wide_ = mid_rest_ = std::numeric_limits<double>::infinity();
  // Work per row of tile height (or the whole work) of `tiles` tiles tile_n wide.
  const auto per_height = [&](double tiles, double tile_n) {
    const Split sw = split_and_waves(tiles, sms_, inv_sms, k_cap, stream_k_, tail_);
    return sw.num * tile_n / sw.den;
  };
  // ⌊a/s⌋ = (a·magic) >> 40 for a < 2^24, s <= 2^16: magic = ⌊2^40/s⌋ + 1 errs by under
  // a/2^40 < 2^-16 <= 1/s, less than the gap from a/s's fraction to the next whole number.
  if (sms >= 2 && sms <= 65536) {
    sms_i_ = static_cast<std::uint64_t>(sms);
    magic_ = (std::uint64_t{1} << 40) / sms_i_ + 1;
    k_cap_i_ = static_cast<std::uint64_t>(std::min(k_cap, 65536.0));  // a split never exceeds sms
  }
  for (int t = 0; t < 3; ++t) {
    const double bn = std::min(kGemmTiles[t][1], 16 * std::ceil(n / 16)), cols = std::ceil(n / bn);
    cols_i_[t] = cols < 16777216 ? static_cast<std::uint64_t>(cols) : 0;
    wave_work_[t] = sms_ * kGemmTiles[t][0] * bn;
    tile_work_[t] = kGemmTiles[t][0] * bn;
    // Up to 128 rows every tile is narrowed to ⌈m/16⌉·16 rows: one row of `cols` tiles.
    small_ = std::min(small_, per_height(cols, bn));
    // 129..256 rows: the 256-row tile is narrowed (one row of tiles), the 128-row ones make two.
    if (kGemmTiles[t][0] == 256) {
      mid_wide_ = std::min(mid_wide_, per_height(cols, bn));
    } else {
      mid_rest_ = std::min(mid_rest_, per_height(2 * cols, bn) * kGemmTiles[t][0]);
    }
  }
  // The rows ⌈m/128⌉ = r where work() needs no split: from 3 (above 256 rows) while every
  // tile shape has sms tiles or more (the 256-row one ⌈r/2⌉ rows of them) and fewer than
  // 2^24 − sms, and m < 10^9, in whole numbers.
  if (magic_ == 0 || cols_i_[0] == 0 || cols_i_[1] == 0 || cols_i_[2] == 0) return;
  const std::uint64_t room = (std::uint64_t{1} << 24) - sms_i_ - 1;
  auto at_least = [&](std::uint64_t c) { return (sms_i_ + c - 1) / c; };  // rows for sms tiles
  const std::uint64_t lo = std::max({std::uint64_t{3}, 2 * at_least(cols_i_[0]) - 1, at_least(cols_i_[1]), at_least(cols_i_[2])});
  const std::uint64_t hi = std::min({std::uint64_t{7812499}, 2 * (room / cols_i_[0]), room / cols_i_[1], room / cols_i_[2]});
  if (lo > hi) return;
  // ⌈x⌉ >= lo exactly when x > lo − 1; ⌈x⌉ <= hi exactly when x <= hi.
  full_lo_ = static_cast<double>(lo - 1);
  full_hi_ = static_cast<double>(hi);
}

double GemmPadding::work_split(double m) const noexcept {
  if (!(sms_ > 0) || !(m > 0) || !(m <= kMaxRows)) return 0;
  const double rows16 = 16 * std::ceil(m * (1.0 / 16));  // exact: a power of two
  if (m <= 128) return small_ * rows16;
  if (m <= 256) return std::min(mid_wide_ * rows16, mid_rest_);
  // Above 256 rows no tile is narrowed: rows of 256 and of 128, ⌈m/256⌉ = ⌈⌈m/128⌉/2⌉.
  double work = std::numeric_limits<double>::infinity();
  if (magic_ > 0 && m < 1e9) {  // whole numbers: no division, no rounding
    const std::uint64_t r128 = (static_cast<std::uint64_t>(std::ceil(m)) + 127) >> 7, r256 = (r128 + 1) >> 1;
    bool whole = true;
    for (int t = 0; t < 3; ++t) {
      const std::uint64_t tiles = (t == 0 ? r256 : r128) * cols_i_[t];
      if (tiles == 0 || tiles + sms_i_ >= (std::uint64_t{1} << 24)) {
        whole = false;  // too many tiles (or columns): gemm_tiling below
        break;
      }
      if (tiles >= sms_i_) {
        work = std::min(work, whole_waves(tiles, t));
        continue;
      }
      if (stream_k_) {
        // Fewer tiles than multiprocessors, stream-K: as split_and_waves lays them out (one wave).
        const Split sw = split_and_waves(static_cast<double>(tiles), sms_, 1 / sms_, static_cast<double>(k_cap_i_), true, false);
        work = std::min(work, sw.num * tile_work_[t] / sw.den);
        continue;
      }
      // Fewer tiles than multiprocessors: K split min(⌊sms/tiles⌋, ⌊k/128⌋) ways, at least 1.
      const std::uint64_t split = std::max<std::uint64_t>(1, std::min(sms_i_ / tiles, k_cap_i_));
      const std::uint64_t waves = ((tiles * split + sms_i_ - 1) * magic_) >> 40;
      work = std::min(work, static_cast<double>(waves) * wave_work_[t] / static_cast<double>(split));
    }
    if (whole) return work;
  }
  // Rows beyond the whole-number range, tiles by the millions, one multiprocessor: the tiling.
  const GemmTiling t = gemm_tiling(m, n_, k_, 1, static_cast<int>(sms_), split_);
  return t.waves * sms_ * t.tile_m * t.tile_n / t.split_k;
}

DType default_compute_dtype(DType a, DType b) noexcept {
  if (a == b) return a;
  // Mixed operands are dequantised to the wider format before the multiply.
  return bits(a) >= bits(b) ? (is_integer(a) && !is_integer(b) ? b : a) : (is_integer(b) && !is_integer(a) ? a : b);
}

DType default_compute_dtype(DType act, DType weight, const hw::ChipSpec& chip) noexcept {
  if (is_fp8(weight) && bits(act) > 8 && chip.peak(hw::Unit::matrix, weight) > 0) return weight;
  return default_compute_dtype(act, weight);
}

}  // namespace ridgeline::ops
