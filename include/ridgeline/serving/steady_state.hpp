#pragma once
/// Continuous batching in steady state (docs/serving.md#steady-state): B users in a closed
/// loop on one engine instance, each request a prompt of P tokens and G output tokens, the
/// engine mixing decode tokens and prefill chunks in one step under its token budget (vLLM,
/// TensorRT-LLM), or running prompts and decodes in steps apart, prompts first (SGLang).
/// Closed form from the step model, a few step prices per batch: what the
/// plan search (`search infer --engine`) ranks, where the simulator would cost milliseconds.
#include <cstdint>
#include <memory>

#include "ridgeline/analysis/search.hpp"
#include "ridgeline/serving/engine.hpp"
#include "ridgeline/serving/simulator.hpp"
#include "ridgeline/serving/step_model.hpp"

namespace ridgeline::serving {

struct SteadyState {
  double cycle_steps = 0;      ///< steps a user's request takes, arrival to last token: L
  double prefill_steps = 0;    ///< of which to its first token (its prompt's chunks, and waiting for the budget)
  double decode_seqs = 0;      ///< decode sequences in a step, B(G - 1)/L
  double prefill_tokens = 0;   ///< prompt tokens in a step, B·P/L
  double ttft_s = 0, tpot_s = 0, e2e_s = 0, output_tokens_per_s = 0;
  bool stable = true;          ///< false: decodes alone fill the token budget, prompts never start (or, on an engine that does not chunk prefills, a prompt exceeds the budget)
};

/// The steady state of `batch` users (see the header comment) under engine `e` priced by
/// `step` (prepared for the engine's forward pass); `window` the model's sliding window.
SteadyState steady_state(const StepModel& step, const EngineConfig& e, double prompt, double gen, double batch,
                         double window) noexcept;

/// analysis::BatchModel for the plan search: a group's plans priced as `kind` serves B users
/// (its memory rule sizing the cache, its budget and graphs pricing the steps); `moe_a2a`, where
/// given (--moe-a2a), the way its expert parallelism moves the tokens, else the engine's own.
class ContinuousBatching final : public analysis::BatchModel {
 public:
  explicit ContinuousBatching(EngineRef kind, std::optional<model::ForwardConfig::MoeA2A> moe_a2a = std::nullopt)
      : kind_(kind), moe_a2a_(moe_a2a) {}
  analysis::Reject prepare(const model::ModelConfig& m, const hw::System& sys, const analysis::InferenceConfig& cfg) override;
  analysis::ServingPoint at(double batch) const override;
  std::int64_t max_batch() const override { return max_batch_; }

 private:
  EngineRef kind_;
  std::optional<model::ForwardConfig::MoeA2A> moe_a2a_;
  EngineConfig engine_;
  ServeMemory mem_;
  std::unique_ptr<StepModel> step_ = std::make_unique<StepModel>();
  double prompt_ = 0, gen_ = 0, window_ = 0;
  std::int64_t max_batch_ = 0;
};

}  // namespace ridgeline::serving
