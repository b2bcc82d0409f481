#pragma once
/// Back-ends for `train`: JSON and a terminal summary.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/analysis/recompute.hpp"
#include "ridgeline/analysis/run_totals.hpp"
#include "ridgeline/analysis/published_mfu.hpp"
#include "ridgeline/analysis/training.hpp"

namespace ridgeline::report {


/// A whole run (train --tokens / --days): `goal` as asked, `r` as computed, the price's source.
struct RunReport {
  analysis::RunGoal goal;
  analysis::RunTotals totals;
  std::string price_source;  ///< "--price", "price_per_hour" (the chip file's); "" without a price
};
/// JSON `run`: tokens, steps, seconds, days, gpu_hours, within_days (with both goals), and
/// with a price usd_per_gpu_hour, price_source, usd_per_hour, usd, usd_per_million_tokens.
nlohmann::json run_json(const RunReport& run);
/// Two lines from "run": the tokens, steps and days on `gpus`, the GPU-hours and the cost.
std::string run_text(const RunReport& run, double gpus);

/// `train`'s output; `run` adds the whole run (JSON `run`, a text paragraph after the MFU).
nlohmann::json training_json(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& cfg,
                             const analysis::TrainResult& r, const RunReport* run = nullptr);
std::string training_text(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& cfg,
                          const analysis::TrainResult& r, const RunReport* run = nullptr);

/// The best published MFU for the plan's class (analysis::published_mfu; nullptr: none), and,
/// when the plan's MFU exceeds it, a warning naming the assumption that lets it: the
/// communication it hides behind compute, or kernels at their best standalone rates.
const analysis::PublishedMfu* mfu_reference(const model::ModelConfig& m, const hw::ChipSpec& chip, DType dtype);
std::string mfu_warning(const analysis::PublishedMfu& ref, double mfu, double step_s, double hidden_comm_s,
                        double overlap_efficiency);

nlohmann::json recompute_json(const analysis::RecomputeResult& r);
std::string recompute_text(const model::ModelConfig& m, const analysis::RecomputeResult& r);

}  // namespace ridgeline::report
