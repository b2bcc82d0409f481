#pragma once
/// Expert-parallel load imbalance: a balanced router's, or a measured router's skew extrapolated
/// (docs/serving.md#moe-layouts).
#include <cmath>

#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::model {

/// E[max of n independent standard normal draws] = ∫ x·n·φ(x)·Φ(x)^(n−1) dx (n ≥ 1; 0 at
/// n = 1, 1/√π at 2, 3/(2√π) at 3), by the trapezoid rule over [−9, 9] in steps of 1/16.
double expected_max_normal(double n) noexcept;

/// E[max of n independent log-normals of mean 1, e^(s·Z − s²/2)] = ∫ e^(s·x − s²/2)·n·φ(x)·Φ(x)^(n−1) dx
/// by the same quadrature (1 at n = 1 or s = 0; s up to 3, beyond which [−9, 9] clips the integrand).
double expected_max_lognormal(double n, double s) noexcept;

/// Expert popularity skew: expert e draws a share ∝ e^(σ·Z_e) of the pairs (Z_e standard normal,
/// a fresh draw per layer, persistent over the steps). A GPU of m = E/G experts holds their sum,
/// taken log-normal by Fenton–Wilkinson: log-spread s_G = √(ln(1 + (e^(σ²) − 1)/m)), so with many
/// tokens the busiest of G GPUs takes F∞ = expected_max_lognormal(G, s_G) times the mean.
/// routing_skew_excess gives F∞ − 1 for E experts over G GPUs.
double routing_skew_excess(double experts, double gpus, double sigma) noexcept;

/// The σ whose imbalance at the measurement's G and T equals its figure (bisection on [0, 3]);
/// 0 without a measurement or for a figure at or below a balanced router's.
double routing_skew_sigma(const ModelConfig& m) noexcept;

/// The busiest chip's routed token-expert pairs over the mean, for one deployment: either a
/// factor given (`--expert-imbalance F`) or the routing model (ForwardConfig::expert_imbalance 0).
/// Chance: every token picks k of the E experts uniformly and independently of the others, the
/// experts sit E/G on each of the G = ep_size() chips, and the busiest chip's load is taken
/// as its expectation over the step's T tokens by the central limit, an excess over the mean
/// of scale/√T, scale = e_G·√(G·(E − k) / ((E − 1)·k)), e_G = expected_max_normal(G).
/// Skew (a model with a measured routing): the persistent excess F∞ − 1 of routing_skew_excess.
/// The two excesses add in quadrature (exact for two independent normal spreads):
///   F(T) = min(cap, 1 + √(skew² + scale²/T)),  cap = G·min(k, E/G)/k;
/// skew 0 (a balanced router, a lower bound of real ones) is 1 + scale/√T exactly.
struct RoutingImbalance {
  double fixed = 1;  ///< the factor when given (> 0); 0: the routing model
  double scale = 0;  ///< e_G·√(G·(E − k) / ((E − 1)·k))
  double skew = 0;   ///< F∞ − 1 of the measured skew at this G; 0: a balanced router
  double cap = 1;    ///< G·min(k, E/G)/k: each token's pairs on one chip at most min(k, E/G)
  bool measured = false;  ///< the model's routing measurement sets skew (ModelConfig::moe.routing)
  /// F for a step routing `tokens` tokens over the G chips (all attention groups' tokens).
  double at(double tokens) const noexcept {
    if (fixed > 0) return fixed;
    if (!(tokens > 0)) return 1;
    const double f = skew > 0 ? 1 + std::sqrt(skew * skew + scale * scale / tokens) : 1 + scale / std::sqrt(tokens);
    return f < cap ? f : cap;
  }
  bool model() const noexcept { return fixed <= 0; }
};

/// The imbalance of `f` on `m`: F = 1 without expert parallelism (ep_size() 1 or a dense
/// model), f.expert_imbalance when given, else the routing model's constants (with the skew of
/// m.moe.routing when the model has a measurement).
RoutingImbalance routing_imbalance(const ModelConfig& m, const ForwardConfig& f) noexcept;

}  // namespace ridgeline::model
