#pragma once
/// Back-ends for `train`: JSON and a terminal summary.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/analysis/recompute.hpp"
#include "ridgeline/analysis/training.hpp"

namespace ridgeline::report {

nlohmann::json training_json(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& cfg,
                             const analysis::TrainResult& r);
std::string training_text(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& cfg,
                          const analysis::TrainResult& r);

nlohmann::json recompute_json(const analysis::RecomputeResult& r);
std::string recompute_text(const model::ModelConfig& m, const analysis::RecomputeResult& r);

}  // namespace ridgeline::report
