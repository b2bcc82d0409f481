#include "ridgeline/analysis/run_totals.hpp"

#include <cmath>

namespace ridgeline::analysis {

RunTotals run_totals(double step_s, double tokens_per_step, double gpus, const RunGoal& g) noexcept {
  RunTotals r;
  if (!wanted(g) || !(step_s > 0) || !(tokens_per_step > 0)) return r;
  constexpr double kDay = 86400;
  // A run trains whole steps: a token budget rounds up, a time budget down.
  r.steps = g.tokens > 0 ? std::ceil(g.tokens / tokens_per_step) : std::floor(g.days * kDay / step_s);
  r.tokens = r.steps * tokens_per_step;
  r.seconds = r.steps * step_s;
  r.days = r.seconds / kDay;
  r.gpu_hours = gpus * r.seconds / 3600;
  r.within_days = !(g.tokens > 0 && g.days > 0) || r.seconds <= g.days * kDay;
  if (g.usd_per_gpu_hour > 0) {
    r.usd_per_hour = gpus * g.usd_per_gpu_hour;
    r.usd = r.gpu_hours * g.usd_per_gpu_hour;
    if (r.tokens > 0) r.usd_per_million_tokens = r.usd / r.tokens * 1e6;
  }
  return r;
}

}  // namespace ridgeline::analysis
