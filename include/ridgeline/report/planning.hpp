#pragma once
/// Reports of `search serve` (the capacity planner): JSON (keys of ../shared/CLI.md#search-serve),
/// a terminal table, and the Pareto chart of output tokens/s per GPU against per user.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/model/model_config.hpp"
#include "ridgeline/planning/fleet.hpp"

namespace ridgeline::report {

/// The `serve` flags that run deployment `d` ("--hw h100-sxm --tp 2 --engine vllm ...").
std::string deployment_flags(const planning::FleetSpace& space, const planning::Deployment& d);

/// `search serve --json`; `serve_prefix` starts each deployment's `command` (the model and
/// workload flags as given) and is followed by deployment_flags.
nlohmann::json fleet_search_json(const model::ModelConfig& m, const planning::FleetSpace& space,
                                 const planning::FleetSearchResult& r, const std::string& serve_prefix);
std::string fleet_search_text(const model::ModelConfig& m, const planning::FleetSpace& space,
                              const planning::FleetSearchResult& r, const std::string& serve_prefix);
/// Output tokens/s per GPU against tokens/s per user: the Pareto front, every other feasible
/// deployment listed, the best marked.
std::string fleet_pareto_svg(const model::ModelConfig& m, const planning::FleetSpace& space, const planning::FleetSearchResult& r);

}  // namespace ridgeline::report
