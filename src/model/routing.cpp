// Expert-parallel load imbalance of a balanced router (docs/serving.md#moe-layouts).
#include "ridgeline/model/routing.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::model {

double expected_max_normal(double n) noexcept {
  if (!(n > 1)) return 0;
  // The last answer of this thread: a deployment asks for its own G at every graph built.
  thread_local double last_n = 0, last = 0;
  if (n == last_n) return last;
  // n·φ(x)·Φ(x)^(n−1) is the density of the maximum; its mass beyond ±9 is below 1e-17·n.
  // The trapezoid rule on this smooth, fast-decaying integrand converges geometrically: steps
  // of 1/16 agree with 1/64 to 1e-14 up to n = 4096.
  constexpr double kStep = 1.0 / 16, kLimit = 9;
  constexpr int kPoints = static_cast<int>(2 * kLimit / kStep);
  const double inv_sqrt_2pi = 0.3989422804014327;
  double sum = 0;
  for (int i = 0; i <= kPoints; ++i) {
    const double x = -kLimit + i * kStep;
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double density = n * inv_sqrt_2pi * std::exp(-0.5 * x * x + (n - 1) * std::log(cdf));
    sum += (i == 0 || i == kPoints ? 0.5 : 1) * x * density;
  }
  last_n = n;
  last = sum * kStep;
  return last;
}

RoutingImbalance routing_imbalance(const ModelConfig& m, const ForwardConfig& f) noexcept {
  const double G = static_cast<double>(f.ep_size());
  if (!m.is_moe() || G <= 1) return {};
  if (f.expert_imbalance > 0) return {f.expert_imbalance, 0, 1};
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.experts_per_token);
  RoutingImbalance r;
  r.fixed = 0;
  // A chip's pairs over T tokens: T independent draws of a hypergeometric count (k of E
  // experts, E/G of them on the chip): mean T·k/G, variance T·k·(1/G)·(1 − 1/G)·(E − k)/(E − 1).
  // The G counts sum to T·k, so they are (to the central limit) Y_i − Ȳ with Y_i independent
  // of variance s² = variance/(1 − 1/G), and E[max] = mean + s·e_G:
  // F = 1 + e_G·s/mean = 1 + e_G·√(G·(E − k) / ((E − 1)·k·T)).
  r.scale = E > 1 ? expected_max_normal(G) * std::sqrt(G * (E - k) / ((E - 1) * k)) : 0;
  r.cap = G * std::min(k, E / G) / k;
  return r;
}

}  // namespace ridgeline::model
