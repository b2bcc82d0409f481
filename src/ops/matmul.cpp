#include "ridgeline/ops/matmul.hpp"

#include <algorithm>
#include <cmath>
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

GemmTiling gemm_tiling(double m, double n, double k, double batch, int sms) noexcept {
  GemmTiling best;
  const bool finite = std::isfinite(m) && std::isfinite(n) && std::isfinite(k) && std::isfinite(batch);
  if (sms <= 0 || !finite || m <= 0 || n <= 0 || k <= 0 || batch <= 0) return best;
  const double s = sms;
  const auto up16 = [](double x) { return 16 * std::ceil(x / 16); };
  best.useful = -1;
  for (const auto& tile : kGemmTiles) {
    GemmTiling t;
    t.tile_m = std::min(tile[0], up16(m));
    t.tile_n = std::min(tile[1], up16(n));
    t.tiles = batch * std::ceil(m / t.tile_m) * std::ceil(n / t.tile_n);
    t.split_k = std::max(1.0, std::min(std::floor(s / t.tiles), std::floor(k / kMinSplitDepth)));
    t.waves = std::ceil(t.tiles * t.split_k / s);
    t.useful = batch * m * n * t.split_k / (t.waves * s * t.tile_m * t.tile_n);
    if (t.useful > best.useful) best = t;
  }
  return best;
}

static_assert(kGemmTiles[0][0] == 256 && kGemmTiles[1][0] == 128 && kGemmTiles[2][0] == 128,
              "GemmPadding works in rows of 128 and 256");

namespace {
// ⌈a/s⌉ for whole numbers a >= 0, s > 0 below 2^53, from a·(1/s) corrected by one either way.
double ceil_div(double a, double s, double inv_s) noexcept {
  double q = std::ceil(a * inv_s);
  if ((q - 1) * s >= a) q -= 1;
  if (q * s < a) q += 1;
  return q;
}
}  // namespace

GemmPadding::GemmPadding(double n, double k, int sms) noexcept {
  if (sms <= 0 || !std::isfinite(n) || !std::isfinite(k) || n <= 0 || k <= 0) return;
  n_ = n;
  k_ = k;
  sms_ = sms;
  inv_sms_ = 1 / sms_;
  k_cap_ = std::floor(k / kMinSplitDepth);
  small_ = mid_wide_ = mid_rest_ = std::numeric_limits<double>::infinity();
  // Work per row of tile height (or the whole work) of `tiles` tiles tile_n wide.
  const auto per_height = [&](double tiles, double tile_n) {
    const double split = std::max(1.0, std::min(std::floor(sms_ / tiles), k_cap_));
    return std::ceil(tiles * split / sms_) * sms_ * tile_n / split;
  };
  for (int t = 0; t < 3; ++t) {
    bn_[t] = std::min(kGemmTiles[t][1], 16 * std::ceil(n / 16));
    cols_[t] = std::ceil(n / bn_[t]);
    // Up to 128 rows every tile is narrowed to ⌈m/16⌉·16 rows: one row of cols_ tiles.
    small_ = std::min(small_, per_height(cols_[t], bn_[t]));
    // 129..256 rows: the 256-row tile is narrowed (one row of tiles), the 128-row ones make two.
    if (kGemmTiles[t][0] == 256) {
      mid_wide_ = std::min(mid_wide_, per_height(cols_[t], bn_[t]));
    } else {
      mid_rest_ = std::min(mid_rest_, per_height(2 * cols_[t], bn_[t]) * kGemmTiles[t][0]);
    }
  }
}

double GemmPadding::work(double m) const noexcept {
  if (!(sms_ > 0) || !(m > 0) || !(m <= kMaxRows)) return 0;
  const double rows16 = 16 * std::ceil(m * (1.0 / 16));  // exact: a power of two
  if (m <= 128) return small_ * rows16;
  if (m <= 256) return std::min(mid_wide_ * rows16, mid_rest_);
  // Above 256 rows no tile is narrowed: rows of 256 and of 128, ⌈m/256⌉ = ⌈⌈m/128⌉/2⌉.
  double work = std::numeric_limits<double>::infinity();
  const double r128 = std::ceil(m * (1.0 / 128)), r256 = std::ceil(r128 * 0.5);
  for (int t = 0; t < 3; ++t) {
    const double bm = kGemmTiles[t][0];
    const double tiles = (bm == 256 ? r256 : r128) * cols_[t];
    if (tiles >= sms_) {  // no split: the common case, without a division
      work = std::min(work, ceil_div(tiles, sms_, inv_sms_) * sms_ * bm * bn_[t]);
      continue;
    }
    const double split = std::max(1.0, std::min(std::floor(sms_ / tiles), k_cap_));
    work = std::min(work, std::ceil(tiles * split / sms_) * sms_ * bm * bn_[t] / split);
  }
  return work;
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
