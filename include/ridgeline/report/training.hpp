#pragma once
/// Back-ends for `train`: JSON and a terminal summary.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/analysis/training.hpp"

namespace ridgeline::report {

nlohmann::json training_json(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& cfg,
                             const analysis::TrainResult& r);
std::string training_text(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainConfig& cfg,
                          const analysis::TrainResult& r);

}  // namespace ridgeline::report
