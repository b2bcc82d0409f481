// Continuous batching in steady state (docs/serving.md#steady-state).
#include "ridgeline/serving/steady_state.hpp"

#include <algorithm>
#include <cmath>


namespace ridgeline::serving {

namespace {

// A step of `decodes` sequences at context `kv` and `chunks` prefill chunks of `q` tokens
// ending at context `q_kv` on average, as the engine launches it.
double step_s(const StepModel& step, const EngineConfig& e, double decodes, double kv, double chunks, double q, double q_kv,
              double window) {
  model::StepMix d, p;
  if (decodes > 0) {
    d.add_decode(kv, window);
    d.scale(decodes);
  }
  if (chunks > 0) {
    p.add_prefill(q, q_kv, window);
    p.scale(chunks);
  }
  model::StepMix mix = d;
  mix.prefill_seqs = p.prefill_seqs, mix.prefill_tokens = p.prefill_tokens, mix.prefill_positions = p.prefill_positions;
  mix.prefill_full = p.prefill_full, mix.prefill_window = p.prefill_window;
  mix.fused_attention = e.fused_attention;
  if (mix.seqs() <= 0) return 0;
  const GraphMode mode = chunks > 0 ? mixed_step_graphs(e, mix.tokens()) : decode_step_graphs(e, decodes, decodes);
  return step_period(e, step.time(mix, mode), mix.seqs(), false, chunks > 0 ? 1 : decode_schedule_share(e));
}

// From a request's last token to its user's next prompt in a step: the server's front end
// (EngineConfig::front_end_s) brings the prompt to the scheduler inside a step of the others
// (`t` on average), which it joins when that step ends: whole steps; an engine that plans a step
// ahead (overlap scheduling) fixed the next one already, and runs it a step later still. The
// simulator's rule (docs/serving.md#front-end). A lone user (B = 1) finds the engine idle and
// waits the front end alone. The users outside the engine meanwhile are still counted in its
// batch (a bound on the slowdown, exact when the front end is 0).
double front_end_wait(const EngineConfig& e, double t, double B) noexcept {
  if (e.front_end_s <= 0 || !(t > 0) || B <= 1) return std::max(0.0, e.front_end_s);
  return std::ceil(e.front_end_s / t) * t + (e.overlap_scheduling ? t : 0);
}

// Σ_k P(X = k)·f(k) for X ~ Binomial(n, p), n whole, over the k from 8 standard deviations
// below the mean to 8 above and 4 more (a small mean's tail is not normal: P(X >= k) is about
// mean^k/k!, so the mass left out is below 1e-11). False, with nothing summed, when n is not
// whole or that is more than kMaxTerms terms (a standard deviation above about 1.1): the
// caller prices the mean sizes instead.
constexpr int kMaxTerms = 24;
template <class F>
bool binomial_expectation(double n, double p, const F& f, double& out) {
  if (n < 0 || n != std::floor(n)) return false;
  if (p >= 1 || n == 0) {
    out = f(p >= 1 ? n : 0.0);
    return true;
  }
  const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
  const double lo = std::max(0.0, std::floor(mean - 8 * sd)), hi = std::min(n, std::ceil(mean + 8 * sd + 4));
  if (hi - lo + 1 > kMaxTerms) return false;
  const double log_n = std::lgamma(n + 1), lp = std::log(p), lq = std::log1p(-p);
  out = 0;
  for (double k = lo; k <= hi; ++k) out += std::exp(log_n - std::lgamma(k + 1) - std::lgamma(n - k + 1) + k * lp + (n - k) * lq) * f(k);
  return true;
}

// SGLang's prefill-first steps (docs/serving.md#sglang-prefill-first): every step is a
// prefill step of the prompts waiting (within the budget, one chunk at a time beyond it) or a
// decode step of every running sequence. A user's request ends in a decode step and its next
// prompt arrives with it, so a decode step in which any user finished is followed by the
// prefill steps of every prompt that arrived with it: a group.
SteadyState prefill_first(const StepModel& step, const EngineConfig& e, double P, double G, double B, double window) noexcept {
  SteadyState s;
  double T = static_cast<double>(e.max_batched_tokens);
  if (e.max_prefill_tokens > 0) T = std::min(T, static_cast<double>(e.max_prefill_tokens));
  // D decode steps a cycle, each of all B users (no user decodes while another prefills).
  // Each user ends in one of them at random: X ~ Binomial(B, 1/D) users end in a given step,
  // and a user's own group is 1 + Binomial(B - 1, 1/D) (it is found in large groups more often).
  const double D = std::max(1.0, G - 1), p = 1 / D;
  const double chunks_of = std::ceil(P / T);
  // A group of x prompts takes ceil(xP/T) prefill steps: whole prompts (P within the budget),
  // x/steps of them a step, or chunks of T ending at the mean chunk end of a prompt.
  auto steps_of = [&](double x) { return x <= 0 ? 0.0 : std::max(1.0, std::ceil(x * P / T)); };
  auto step_of = [&](double x) {
    if (x <= 0) return 0.0;
    return P <= T ? step_s(step, e, 0, 0, x / steps_of(x), P, P, window) : step_s(step, e, 0, 0, 1, T, T * (chunks_of + 1) / 2, window);
  };
  // A user's first token comes at the end of its prompt's last chunk: on average after
  // (x + 1)P/(2T) of its group's steps, no fewer than its own prompt's ceil(P/T), no more
  // than the group's.
  auto first_of = [&](double x) { return std::clamp((x + 1) * P / (2 * T), chunks_of, steps_of(x)); };
  // Over the group sizes where that is a few terms, else at the mean sizes: the prefill time
  // and steps of a cycle, and those of a user's own group.
  double cycle_prefill_s = 0, cycle_prefill_steps = 0, own_prefill_s = 0, ttft = 0, first = 0;
  const bool exact = binomial_expectation(B, p, [&](double x) { return steps_of(x) * step_of(x); }, cycle_prefill_s) &&
                     binomial_expectation(B, p, steps_of, cycle_prefill_steps) &&
                     binomial_expectation(B - 1, p, [&](double x) { return steps_of(1 + x) * step_of(1 + x); }, own_prefill_s) &&
                     binomial_expectation(B - 1, p, [&](double x) { return first_of(1 + x) * step_of(1 + x); }, ttft) &&
                     binomial_expectation(B - 1, p, [&](double x) { return first_of(1 + x); }, first);
  if (exact) {
    cycle_prefill_s *= D, cycle_prefill_steps *= D;
  } else {
    const double K = D * (1 - std::pow(1 - p, B)), g = B / K, own = 1 + (B - 1) * p;
    cycle_prefill_s = K * steps_of(g) * step_of(g);
    cycle_prefill_steps = K * steps_of(g);
    own_prefill_s = steps_of(own) * step_of(own);
    first = first_of(own);
    ttft = first * step_of(own);
  }
  const double t_decode = step_s(step, e, B, P + G / 2, 0, 0, 0, window);
  s.cycle_steps = D + cycle_prefill_steps;
  s.prefill_steps = first;
  s.decode_seqs = B * D / s.cycle_steps;
  s.prefill_tokens = B * P / s.cycle_steps;
  // The step a prompt lands in: a decode step or another group's prefill step, the cycle's mean.
  const double mean_step = (D * t_decode + cycle_prefill_s) / (D + cycle_prefill_steps);
  // Its TTFT: the front end's wait, then its group's steps up to its prompt; its TPOT: its D
  // decode steps and, among them, the prefill steps of the cycle's other groups.
  s.ttft_s = front_end_wait(e, mean_step, B) + ttft;
  s.tpot_s = G > 1 ? (D * t_decode + std::max(0.0, cycle_prefill_s - own_prefill_s)) / D : 0;
  s.e2e_s = s.ttft_s + (G - 1) * s.tpot_s;
  s.output_tokens_per_s = s.e2e_s > 0 ? B * G / s.e2e_s : 0;
  return s;
}

}  // namespace

SteadyState steady_state(const StepModel& step, const EngineConfig& e, double P, double G, double B, double window) noexcept {
  if (e.policy == StepPolicy::prefill_first && !e.mixed_chunk) return prefill_first(step, e, P, G, B, window);
  SteadyState s;
  const double T = static_cast<double>(e.max_batched_tokens);
  // An engine that runs prompts whole admits one in a step whose decodes leave it room: a
  // prompt over the budget never runs (fits_budget, the simulator's rule), one within it takes
  // one step. (When the mean decodes leave less room than a prompt, prompts wait for room in
  // the engine; not modelled: docs/serving.md#steady-state.)
  const bool whole = whole_prompts(e);
  if (!fits_budget(e, P, G)) {
    s.stable = false;
    return s;
  }
  // L, the steps of a request's cycle: its prompt's chunks (at least ceil(P / c) steps with
  // c = T - n_d the budget decodes leave), then G - 1 decode steps; and no fewer than the
  // prefill capacity allows, B·P / c steps for B prompts. n_d = B(G - 1)/L depends on L:
  // iterated to its fixed point (64 rounds at most).
  auto need = [&](double c) { return std::max(G - 1 + (whole ? 1 : std::ceil(P / c)), B * P / c); };
  double L = std::max(1.0, G);
  double c = T;
  bool converged = false;
  for (int i = 0; i < 64 && !converged; ++i) {
    const double nd = B * (G - 1) / L;
    c = T - nd;
    if (c < 1) {
      s.stable = false;
      return s;
    }
    const double next = need(c);
    converged = std::abs(next - L) <= 1e-9 * L;
    L = next;
  }
  if (!converged) {
    // The steps needed fall as L rises (fewer decodes a step leave more room), so the rounds
    // can circle the fixed point: L - need rises with L, and the least L that meets its need
    // is found by bisection, from where the decodes leave one token (c = 1) upwards.
    auto room = [&](double l) { return T - B * (G - 1) / l; };
    double lo = std::max(1.0, B * (G - 1) / (T - 1)), hi = std::max(lo, G);
    for (int i = 0; i < 64 && hi < need(room(hi)); ++i) hi *= 2;
    for (int i = 0; i < 100; ++i) {
      const double mid = lo + (hi - lo) / 2;
      (mid < need(room(mid)) ? lo : hi) = mid;
    }
    L = hi;
    c = room(L);
  }
  s.cycle_steps = L;
  s.prefill_steps = L - (G - 1);
  s.decode_seqs = B * (G - 1) / L;
  s.prefill_tokens = B * P / L;
  const double kv = P + G / 2;  // a decode step's mean context (with the token it computes)
  const double chunk = whole ? P : std::min(P, c);  // a prompt's chunk
  const double chunks_of = std::ceil(P / chunk);
  const double chunk_kv = chunk * (chunks_of + 1) / 2;  // a chunk's mean end context over the prompt
  // A closed loop seen by one user: its own prompt arrives in its own prefill steps, never in
  // its decode steps, and it decodes in none of its prefill steps. The others decode
  // (B - 1)(G - 1)/L sequences a step and bring (B - 1)·P/L prompt tokens a step.
  const double other_decodes = (B - 1) * (G - 1) / L, others = (B - 1) * P / L;
  double t_decode_steps = 0, t_prefill_step = 0;
  if (s.prefill_steps <= 1) {
    // Whole prompts: its decode steps carry the others' (a fraction others/P of the steps one
    // each while fewer than one a step arrives, else every step others/P of them); its prefill
    // step its own and the others' of that step.
    const double decodes = 1 + other_decodes;
    if (others < P) {
      const double f = others / P;
      t_decode_steps = f * step_s(step, e, decodes, kv, 1, P, P, window) + (1 - f) * step_s(step, e, decodes, kv, 0, 0, 0, window);
    } else {
      t_decode_steps = step_s(step, e, decodes, kv, others / P, P, P, window);
    }
    t_prefill_step = step_s(step, e, other_decodes, kv, 1 + others / P, P, P, window);
  } else {
    // Every step carries the cycle's prompt tokens in chunks: its own steps alike.
    const double t = step_s(step, e, s.decode_seqs, kv, s.prefill_tokens / chunk, chunk, chunk_kv, window);
    t_decode_steps = t_prefill_step = t;
  }
  s.ttft_s = front_end_wait(e, t_decode_steps, B) + s.prefill_steps * t_prefill_step;
  s.tpot_s = G > 1 ? t_decode_steps : 0;
  s.e2e_s = s.ttft_s + (G - 1) * t_decode_steps;
  s.output_tokens_per_s = s.e2e_s > 0 ? B * G / s.e2e_s : 0;
  return s;
}

analysis::Reject ContinuousBatching::prepare(const model::ModelConfig& m, const hw::System& sys,
                                             const analysis::InferenceConfig& cfg) {
  ServeConfig sc;
  sc.forward = cfg.forward;
  sc.engine = engine_preset(kind_, sys.chip, cfg.forward.tp, m);
  if (moe_a2a_) sc.engine.moe_a2a = *moe_a2a_;
  // Its largest graph and the list a decode batch pads to, as serve has them.
  settle_graphs(sc.engine, 0);
  // An engine that runs prompts whole runs each in one step, within its budget.
  if (!fits_budget(sc.engine, static_cast<double>(cfg.prompt), static_cast<double>(cfg.gen))) return analysis::Reject::too_long;
  mem_ = serve_memory(m, sys, sc);
  if (mem_.kv_blocks < 1) return analysis::Reject::memory;
  engine_ = sc.engine;
  prompt_ = static_cast<double>(cfg.prompt);
  gen_ = static_cast<double>(cfg.gen);
  window_ = static_cast<double>(m.sliding_window);
  // Each sequence holds its prompt and outputs in whole blocks; at most max_num_seqs run.
  const std::int64_t per = mem_.kv_layout.blocks_for(cfg.prompt + cfg.gen);
  max_batch_ = mem_.kv_blocks / per;
  if (engine_.max_num_seqs > 0) max_batch_ = std::min(max_batch_, engine_.max_num_seqs);
  step_->prepare(m, sys, engine_forward(cfg.forward, engine_));
  return analysis::Reject::count;
}

analysis::ServingPoint ContinuousBatching::at(double batch) const {
  analysis::ServingPoint p;
  const SteadyState s = steady_state(*step_, engine_, prompt_, gen_, batch, window_);
  p.fits = s.stable && batch <= static_cast<double>(max_batch_);
  p.ttft_s = s.ttft_s;
  p.tpot_s = s.tpot_s;
  p.e2e_s = s.e2e_s;
  p.output_tokens_per_s = s.output_tokens_per_s;
  // The cache: its tokens' bytes, or with sliding-window layers freed, its blocks'.
  const double kv = mem_.kv_layout.hybrid()
                        ? static_cast<double>(mem_.kv_layout.blocks_for(static_cast<std::int64_t>(prompt_ + gen_))) * mem_.kv_block_bytes
                        : (prompt_ + gen_) * mem_.kv_bytes_per_token;
  p.memory_bytes = mem_.weights_bytes + mem_.activations_bytes + mem_.reserved_bytes + batch * kv;
  return p;
}

}  // namespace ridgeline::serving
