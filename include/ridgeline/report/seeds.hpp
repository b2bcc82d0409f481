#pragma once
/// `--seeds N`: the spread of every percentile over the seeds, as JSON and text
/// (docs/serving.md#seeds).
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/serving/seeds.hpp"

namespace ridgeline::report {

/// {count, first, quantile, chosen_seed, badness[], spread{ttft_s, tpot_s, itl_s, e2e_s,
/// queue_s: {mean, p50, p90, p95, p99: {min, median, max}}, requests_per_s,
/// output_tokens_per_s: {min, median, max}}}.
nlohmann::json seeds_json(const serving::ServeConfig& cfg, const serving::SeedsConfig& seeds, const serving::SeedsResult& runs);
/// Which seed is shown and why, and each latency's p50, p99 and mean as min / median / max.
std::string seeds_text(const serving::ServeConfig& cfg, const serving::SeedsConfig& seeds, const serving::SeedsResult& runs);

}  // namespace ridgeline::report
