// The slowest GPU of a synchronous step: the expected slowest of n GPUs whose GEMM rates spread
// normally around the measured one (docs/training.md#the-slowest-gpu).
#include "ridgeline/analysis/stragglers.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::analysis {

double normal_quantile(double p) noexcept {
  // P. J. Acklam, "An algorithm for computing the inverse normal cumulative distribution
  // function" (2003): rational functions in the centre and in each tail.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double low = 0.02425;
  if (!(p > 0)) return -INFINITY;
  if (!(p < 1)) return INFINITY;
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  if (p < low) return tail(std::sqrt(-2 * std::log(p)));
  if (p > 1 - low) return -tail(std::sqrt(-2 * std::log1p(-p)));
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double expected_max_normal(double n) noexcept {
  if (!(n > 1)) return 0;
  return normal_quantile((n - 0.375) / (n + 0.25));
}

double straggler_slowdown(std::int64_t gpus, double spread) noexcept {
  const double behind = spread * expected_max_normal(static_cast<double>(gpus));
  // The slowest GPU's rate is (1 − σ·e) of the typical one's; bounded so that an absurd spread
  // cannot stop the GPU altogether.
  return 1 / std::max(0.5, 1 - behind) - 1;
}

}  // namespace ridgeline::analysis
