#pragma once
/// Back-ends for `search train` and `search infer`: JSON and terminal tables. Each plan
/// arrives already evaluated by `train` / `infer` (its JSON object); the report only lays
/// them out.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/analysis/search.hpp"
#include "ridgeline/report/training.hpp"

namespace ridgeline::report {

/// `evaluated`, `feasible`, `rejected` {reason: count}, `shapes`, `elapsed_s`, `plans_per_s`, `interrupted`.
nlohmann::json search_stats_json(const analysis::SearchStats& s);
/// "N plans (F feasible; T timed, S <shapes>) in T: R plans/s" and the rejections by reason;
/// `shapes` names what SearchStats::shapes counts ("distinct graphs", "serving curves").
std::string search_stats_text(const analysis::SearchStats& s, std::string_view shapes);

/// `run`: the whole run of the best plan (--tokens, --days), after its table.
std::string train_search_text(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainSearchSpace& space,
                              const analysis::TrainSearchResult& r, const RunReport* run = nullptr);
/// A serving plan as the search priced it (continuous batching: its steady state): its
/// layout, dtypes, batch (users in flight) and numbers.
nlohmann::json infer_plan_json(const analysis::InferSearchSpace& space, const analysis::InferPlan& p);
std::string infer_search_text(const model::ModelConfig& m, const hw::System& sys, const analysis::InferSearchSpace& space,
                              const analysis::InferSearchResult& r);

/// The Pareto front as a chart: tokens/s against memory per GPU (training) or output
/// tokens/s per chip against TPOT (serving), with the top plans marked.
std::string train_pareto_svg(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainSearchResult& r);
std::string infer_pareto_svg(const model::ModelConfig& m, const hw::System& sys, const analysis::InferSearchResult& r);

}  // namespace ridgeline::report
