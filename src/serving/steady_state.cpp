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
  const GraphMode mode = chunks > 0 ? e.mixed_graphs : decode_step_graphs(e, decodes);
  return step_period(e, step.time(mix, mode), mix.seqs());
}

}  // namespace

SteadyState steady_state(const StepModel& step, const EngineConfig& e, double P, double G, double B, double window) noexcept {
  SteadyState s;
  const double T = static_cast<double>(e.max_batched_tokens);
  // L, the steps of a request's cycle: its prompt's chunks (at least ceil(P / c) steps with
  // c = T - n_d the budget decodes leave), then G - 1 decode steps; and no fewer than the
  // prefill capacity allows, B·P / c steps for B prompts. n_d = B(G - 1)/L depends on L:
  // iterated to its fixed point (L only grows, bounded).
  double L = std::max(1.0, G);
  double c = T;
  for (int i = 0; i < 64; ++i) {
    const double nd = B * (G - 1) / L;
    c = T - nd;
    if (c < 1) {
      s.stable = false;
      return s;
    }
    const double next = std::max(G - 1 + std::ceil(P / c), B * P / c);
    if (std::abs(next - L) <= 1e-9 * L) {
      L = next;
      break;
    }
    L = next;
  }
  s.cycle_steps = L;
  s.prefill_steps = L - (G - 1);
  s.decode_seqs = B * (G - 1) / L;
  s.prefill_tokens = B * P / L;
  const double kv = P + G / 2;  // a decode step's mean context (with the token it computes)
  const double chunk = std::min(P, c);  // a prompt's chunk
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
  s.ttft_s = s.prefill_steps * t_prefill_step;
  s.tpot_s = G > 1 ? t_decode_steps : 0;
  s.e2e_s = s.ttft_s + (G - 1) * t_decode_steps;
  s.output_tokens_per_s = s.e2e_s > 0 ? B * G / s.e2e_s : 0;
  return s;
}

bool ContinuousBatching::prepare(const model::ModelConfig& m, const hw::System& sys, const analysis::InferenceConfig& cfg) {
  ServeConfig sc;
  sc.forward = cfg.forward;
  sc.engine = engine_preset(kind_, sys.chip, cfg.forward.tp);
  mem_ = serve_memory(m, sys, sc);
  if (mem_.kv_blocks < 1) return false;
  engine_ = sc.engine;
  prompt_ = static_cast<double>(cfg.prompt);
  gen_ = static_cast<double>(cfg.gen);
  window_ = static_cast<double>(m.sliding_window);
  // Each sequence holds its prompt and outputs in whole blocks; at most max_num_seqs run.
  const std::int64_t per = (cfg.prompt + cfg.gen + engine_.kv_block - 1) / engine_.kv_block;
  max_batch_ = mem_.kv_blocks / per;
  if (engine_.max_num_seqs > 0) max_batch_ = std::min(max_batch_, engine_.max_num_seqs);
  step_->prepare(m, sys, engine_forward(cfg.forward, engine_));
  return true;
}

analysis::ServingPoint ContinuousBatching::at(double batch) const {
  analysis::ServingPoint p;
  const SteadyState s = steady_state(*step_, engine_, prompt_, gen_, batch, window_);
  p.fits = s.stable && batch <= static_cast<double>(max_batch_);
  p.ttft_s = s.ttft_s;
  p.tpot_s = s.tpot_s;
  p.e2e_s = s.e2e_s;
  p.output_tokens_per_s = s.output_tokens_per_s;
  p.memory_bytes = mem_.weights_bytes + mem_.activations_bytes + mem_.reserved_bytes +
                   batch * (prompt_ + gen_) * mem_.kv_bytes_per_token;
  return p;
}

}  // namespace ridgeline::serving
