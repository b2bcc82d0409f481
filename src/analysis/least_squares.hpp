#pragma once
// Weighted linear least squares over a few parameters, some held at given values: the
// solver of calibrate's and the kernel curves' fits (docs/calibration.md#the-model-fitted).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

namespace ridgeline::analysis {

/// Parameters of a fit: `value[i]` is solved for unless `fixed[i]`, which holds it.
template <int P>
struct LinearParams {
  std::array<double, P> value{};
  std::array<bool, P> fixed{};
};

/// Minimises Σ_k w_k (rhs_k − Σ_i row_k[i] value[i])² over the free parameters, rows given by
/// `row(k, out_row, out_rhs, out_weight)` for k < n. Returns false when the normal equations
/// are singular (a pivot tiny against its row's scale) or a value is not finite.
template <int P, class Row>
bool solve_least_squares(std::size_t n, Row row, LinearParams<P>& p) {
  std::array<int, P> free{};
  int m = 0;
  for (int i = 0; i < P; ++i) {
    if (!p.fixed[i]) free[m++] = i;
  }
  if (m == 0) return true;
  double a[P][P + 1] = {};
  for (std::size_t k = 0; k < n; ++k) {
    std::array<double, P> r{};
    double rhs = 0, w = 1;
    row(k, r, rhs, w);
    for (int i = 0; i < P; ++i) {
      if (p.fixed[i]) rhs -= r[i] * p.value[i];
    }
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < m; ++j) a[i][j] += w * r[free[i]] * r[free[j]];
      a[i][m] += w * r[free[i]] * rhs;
    }
  }
  // Gaussian elimination with partial pivoting.
  for (int c = 0; c < m; ++c) {
    int piv = c;
    for (int r = c + 1; r < m; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    }
    double scale = 0;
    for (int j = 0; j < m; ++j) scale = std::max(scale, std::abs(a[piv][j]));
    if (!(scale > 0) || std::abs(a[piv][c]) < 1e-12 * scale) return false;
    for (int j = 0; j <= m; ++j) std::swap(a[c][j], a[piv][j]);
    for (int r = 0; r < m; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j <= m; ++j) a[r][j] -= f * a[c][j];
    }
  }
  for (int i = 0; i < m; ++i) p.value[free[i]] = a[i][m] / a[i][i];
  return std::all_of(p.value.begin(), p.value.end(), [](double v) { return std::isfinite(v); });
}

}  // namespace ridgeline::analysis
