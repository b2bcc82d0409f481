#pragma once
/// Advice: rules that fire on the numbers of a profile or an analysis, each with what
/// triggered it, the estimated gain in seconds, and the fix (docs/advice.md).
#include <string>
#include <vector>

#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/analysis/search.hpp"
#include "ridgeline/analysis/training.hpp"
#include "ridgeline/profile/analysis.hpp"

namespace ridgeline::analysis {

struct Advice {
  std::string rule;     ///< short id, e.g. "cuda-graphs"
  std::string trigger;  ///< the numbers that fired it
  double gain_s = 0;    ///< estimated time saved (per the scope below); 0 when not a time
  std::string scope;    ///< what gain_s is per: "step", "request batch", "profile"
  std::string fix;
  std::string source;   ///< the seed or reference the rule comes from
};

/// Rules on a captured profile, largest gain first.
std::vector<Advice> advise_profile(const profile::Profile& p, const profile::ProfileAnalysis& a, const hw::ChipSpec& chip);

/// Rules on an inference analysis (re-evaluating variants of the plan to size the gains).
/// With `served` (serving::ContinuousBatching), advice on the batch is sized as an engine
/// serves that many users continuously, with the TTFT and TPOT they would see; without it,
/// as static batches (infer's numbers).
std::vector<Advice> advise_inference(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg,
                                     const InferenceResult& r, BatchModel* served = nullptr);

/// Rules on a training step.
std::vector<Advice> advise_training(const model::ModelConfig& m, const hw::System& sys, const TrainConfig& cfg,
                                    const TrainResult& r);

}  // namespace ridgeline::analysis
