#pragma once
/// A whole training run from one step (docs/training.md#run-totals): how long a token budget
/// takes, or how many tokens some days train, in steps, GPU-hours and dollars. The step is
/// repeated as it is priced: no restarts, checkpoints, evaluations or warm-up are counted.

namespace ridgeline::analysis {

struct RunGoal {
  double tokens = 0;            ///< tokens to train (0: as many as `days` hold)
  double days = 0;              ///< wall-clock days (0: as long as `tokens` take)
  double usd_per_gpu_hour = 0;  ///< 0: no price
};

/// Whether `g` asks for anything.
constexpr bool wanted(const RunGoal& g) noexcept { return g.tokens > 0 || g.days > 0; }

struct RunTotals {
  double steps = 0;      ///< whole steps: ceil(tokens / tokens per step), or floor(days / step time)
  double tokens = 0;     ///< steps x tokens per step
  double seconds = 0;    ///< steps x step time
  double days = 0;
  double gpu_hours = 0;  ///< GPUs x seconds / 3600
  double usd_per_hour = 0;            ///< the whole allocation's (0 without a price)
  double usd = 0;                     ///< gpu_hours x price
  double usd_per_million_tokens = 0;
  bool within_days = true;            ///< with both a token budget and days: the tokens are trained in time
};

/// `step_s` seconds per step of `tokens_per_step` tokens on `gpus` GPUs. Never throws; a
/// goal of neither tokens nor days gives zeros.
RunTotals run_totals(double step_s, double tokens_per_step, double gpus, const RunGoal& g) noexcept;

}  // namespace ridgeline::analysis
