// Expert-parallel load imbalance: a balanced router's, or a measured skew extrapolated
// (docs/serving.md#moe-layouts).
#include "ridgeline/model/routing.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::model {

namespace {

// The quadrature of expected maxima: the trapezoid rule over [−9, 9] in steps of 1/16.
constexpr double kStep = 1.0 / 16, kLimit = 9;
constexpr int kPoints = static_cast<int>(2 * kLimit / kStep);

// n·φ(x)·Φ(x)^(n−1): the density of the maximum of n standard normals at x.
double max_density(double n, double x) noexcept {
  const double inv_sqrt_2pi = 0.3989422804014327;
  const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
  return n * inv_sqrt_2pi * std::exp(-0.5 * x * x + (n - 1) * std::log(cdf));
}

// The trapezoid weights times the density of the maximum of n at the quadrature's points.
void max_weights(double n, double (&w)[kPoints + 1]) noexcept {
  for (int i = 0; i <= kPoints; ++i) w[i] = (i == 0 || i == kPoints ? 0.5 : 1) * max_density(n, -kLimit + i * kStep) * kStep;
}

// E[max of n log-normals e^(s·Z − s²/2)] from max_weights(n).
double lognormal_max(const double (&w)[kPoints + 1], double s) noexcept {
  double sum = 0;
  for (int i = 0; i <= kPoints; ++i) sum += w[i] * std::exp(s * (-kLimit + i * kStep) - 0.5 * s * s);
  return sum;
}

// The log-spread of the sum of m experts' popularities e^(σ·Z) (Fenton–Wilkinson: the log-normal
// of the sum's mean m·e^(σ²/2) and variance m·(e^(σ²) − 1)·e^(σ²)).
double gpu_spread(double m, double sigma) noexcept { return std::sqrt(std::log1p(std::expm1(sigma * sigma) / m)); }

// The libraries' exp, log and erfc may differ in their last bits between platforms (glibc in
// the CLI, musl's in the WebAssembly page, which must print what the CLI prints): each result
// of a quadrature is kept to 1e-12 (the quadratures are good to about 1e-9 anyway), with IEEE
// multiplication, rounding and division only, which give the same bits everywhere.
double portable(double x) noexcept { return std::round(x * 1e12) / 1e12; }

// A balanced router's excess at one token: e_G·√(G·(E − k) / ((E − 1)·k)).
double chance_scale(double E, double k, double G) noexcept {
  return E > 1 ? expected_max_normal(G) * std::sqrt(G * (E - k) / ((E - 1) * k)) : 0;
}

}  // namespace

double expected_max_normal(double n) noexcept {
  if (!(n > 1)) return 0;
  // The last answer of this thread: a deployment asks for its own G at every graph built.
  thread_local double last_n = 0, last = 0;
  if (n == last_n) return last;
  // n·φ(x)·Φ(x)^(n−1) is the density of the maximum; its mass beyond ±9 is below 1e-17·n.
  // The trapezoid rule on this smooth, fast-decaying integrand converges geometrically: steps
  // of 1/16 agree with 1/64 to 1e-14 up to n = 4096.
  double sum = 0;
  for (int i = 0; i <= kPoints; ++i) {
    const double x = -kLimit + i * kStep;
    sum += (i == 0 || i == kPoints ? 0.5 : 1) * x * max_density(n, x);
  }
  last_n = n;
  last = portable(sum * kStep);
  return last;
}

double expected_max_lognormal(double n, double s) noexcept {
  if (!(n > 1) || !(s > 0)) return 1;
  // The weight e^(s·x − s²/2) tilts the maximum's density by s; at s = 3 the tilted mass beyond
  // 9 is 1e-9 of the integral at n = 2 to 256, 1e-8 at n = 65536 (integrating to 16 instead).
  thread_local double last_n = 0, last_s = 0, last = 0;
  if (n == last_n && s == last_s) return last;
  double w[kPoints + 1];
  max_weights(n, w);
  last_n = n;
  last_s = s;
  last = portable(lognormal_max(w, s));
  return last;
}

double routing_skew_excess(double experts, double gpus, double sigma) noexcept {
  if (!(gpus > 1) || !(sigma > 0) || !(experts >= gpus)) return 0;
  return expected_max_lognormal(gpus, gpu_spread(experts / gpus, sigma)) - 1;
}

double routing_skew_sigma(const ModelConfig& m) noexcept {
  const RoutingMeasurement& r = m.moe.routing;
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.experts_per_token);
  const double G = static_cast<double>(r.gpus);
  if (!m.is_moe() || !(G > 1) || !(E >= G) || !(r.tokens_per_step > 0) || !(r.imbalance > 1)) return 0;
  // The last answer of this thread: every graph of a deployment asks again.
  thread_local double key[5] = {}, last = 0;
  if (key[0] == E && key[1] == k && key[2] == G && key[3] == r.tokens_per_step && key[4] == r.imbalance) return last;
  // The measured excess less the chance part at its T, in quadrature (RoutingImbalance::at).
  const double cap = G * std::min(k, E / G) / k, F = std::min(r.imbalance, cap);
  const double chance = chance_scale(E, k, G) / std::sqrt(r.tokens_per_step);
  const double target2 = (F - 1) * (F - 1) - chance * chance;
  double sigma = 0;
  if (target2 > 0) {
    // F∞ − 1 rises with σ: bisect [0, 3] (60 halvings: to 3e-18), the maximum's weights computed once.
    const double target = std::sqrt(target2);
    double w[kPoints + 1];
    max_weights(G, w);
    double lo = 0, hi = 3;
    for (int i = 0; i < 60; ++i) {
      const double mid = 0.5 * (lo + hi);
      (lognormal_max(w, gpu_spread(E / G, mid)) - 1 < target ? lo : hi) = mid;
    }
    sigma = portable(0.5 * (lo + hi));
  }
  key[0] = E, key[1] = k, key[2] = G, key[3] = r.tokens_per_step, key[4] = r.imbalance;
  last = sigma;
  return last;
}

RoutingImbalance routing_imbalance(const ModelConfig& m, const ForwardConfig& f) noexcept {
  const double G = static_cast<double>(f.ep_size());
  if (!m.is_moe() || G <= 1) return {};
  if (f.expert_imbalance > 0) return {f.expert_imbalance, 0, 0, 1, false};
  const double E = static_cast<double>(m.moe.experts), k = static_cast<double>(m.moe.experts_per_token);
  RoutingImbalance r;
  r.fixed = 0;
  // A chip's pairs over T tokens: T independent draws of a hypergeometric count (k of E
  // experts, E/G of them on the chip): mean T·k/G, variance T·k·(1/G)·(1 − 1/G)·(E − k)/(E − 1).
  // The G counts sum to T·k, so they are (to the central limit) Y_i − Ȳ with Y_i independent
  // of variance s² = variance/(1 − 1/G), and E[max] = mean + s·e_G:
  // F = 1 + e_G·√(G·(E − k) / ((E − 1)·k·T)).
  r.scale = chance_scale(E, k, G);
  r.cap = G * std::min(k, E / G) / k;
  // A measured router: its popularity skew at this G (docs/serving.md#moe-layouts).
  if (m.moe.routing.gpus > 0) {
    r.measured = true;
    r.skew = routing_skew_excess(E, G, routing_skew_sigma(m));
  }
  return r;
}

}  // namespace ridgeline::model
