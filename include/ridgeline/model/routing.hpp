#pragma once
/// Expert-parallel load imbalance of a balanced router (docs/serving.md#moe-layouts).
#include <cmath>

#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::model {

/// E[max of n independent standard normal draws] = ∫ x·n·φ(x)·Φ(x)^(n−1) dx (n ≥ 1; 0 at
/// n = 1, 1/√π at 2, 3/(2√π) at 3), by the trapezoid rule over [−9, 9] in steps of 1/16.
double expected_max_normal(double n) noexcept;

/// The busiest chip's routed token-expert pairs over the mean, for one deployment: either a
/// factor given (`--expert-imbalance F`) or the routing model (ForwardConfig::expert_imbalance 0):
/// every token picks k of the E experts uniformly and independently of the others, the
/// experts sit E/G on each of the G = ep_size() chips, and the busiest chip's load is taken
/// as its expectation over the step's T tokens by the central limit:
///   F(T) = min(cap, 1 + e_G·√(G·(E − k) / ((E − 1)·k·T))),  cap = G·min(k, E/G)/k,
/// e_G = expected_max_normal(G). A lower bound of real routers, which are skewed besides.
struct RoutingImbalance {
  double fixed = 1;  ///< the factor when given (> 0); 0: the routing model
  double scale = 0;  ///< e_G·√(G·(E − k) / ((E − 1)·k))
  double cap = 1;    ///< G·min(k, E/G)/k: each token's pairs on one chip at most min(k, E/G)
  /// F for a step routing `tokens` tokens over the G chips (all attention groups' tokens).
  double at(double tokens) const noexcept {
    if (fixed > 0) return fixed;
    if (!(tokens > 0)) return 1;
    const double f = 1 + scale / std::sqrt(tokens);
    return f < cap ? f : cap;
  }
  bool model() const noexcept { return fixed <= 0; }
};

/// The imbalance of `f` on `m`: F = 1 without expert parallelism (ep_size() 1 or a dense
/// model), f.expert_imbalance when given, else the routing model's constants.
RoutingImbalance routing_imbalance(const ModelConfig& m, const ForwardConfig& f) noexcept;

}  // namespace ridgeline::model
