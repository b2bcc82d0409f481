#pragma once
/// Back-ends for `infer` and `models`: JSON and terminal tables.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/analysis/block.hpp"
#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::report {

/// One row of `ridgeline models`.
struct ModelRow {
  model::ModelConfig config;
  model::ParamCount params;
};

nlohmann::json models_json(const std::vector<ModelRow>& rows);
std::string models_text(const std::vector<ModelRow>& rows);

nlohmann::json inference_json(const model::ModelConfig& m, const hw::System& sys, const analysis::InferenceConfig& cfg,
                              const analysis::InferenceResult& r);
std::string inference_text(const model::ModelConfig& m, const hw::System& sys, const analysis::InferenceConfig& cfg,
                           const analysis::InferenceResult& r, bool all_ops);

/// Seed 001's closed form for one decode step, beside the detailed TPOT, with the reasons they differ.
std::string quick_text(const analysis::InferenceConfig& cfg, const analysis::InferenceResult& r);

nlohmann::json block_json(const analysis::BlockConfig& cfg, const hw::System& sys, const analysis::BlockResult& r);
std::string block_text(const analysis::BlockConfig& cfg, const hw::System& sys, const analysis::BlockResult& r);

}  // namespace ridgeline::report
