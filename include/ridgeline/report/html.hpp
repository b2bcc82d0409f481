#pragma once
/// `ridgeline report`: one self-contained HTML page (no network at view time) of a result
/// document — inputs, headline numbers, charts with hover details, sortable per-op tables.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/hw/chip.hpp"

namespace ridgeline::report {

/// The page for `infer --json` or `train --json` output on `chip`. Opened with the URL
/// fragment #selftest, the page checks itself (console errors, chart sizes and points, a
/// table sort) and writes the verdict as JSON into <pre id="selftest"> (docs/charts.md).
std::string html_report(const nlohmann::json& result, const hw::ChipSpec& chip);

/// The page for `serve --json` output: inputs (engine knobs, workload), headline latencies
/// and throughput, latency CDFs, requests and KV cache over time, the percentile table.
std::string html_serving_report(const nlohmann::json& result);

/// The fleet view (`report --fleet`): a capacity search's result (fleet_search_json), the
/// chosen deployment run again in full (serving_json; null when none was feasible) and the
/// search's Pareto chart: the deployment and its cost, its latency CDFs and load over time,
/// the Pareto chart, and every feasible deployment in a sortable cost table.
std::string html_fleet_report(const nlohmann::json& search, const nlohmann::json& best_run, const std::string& pareto_svg);

}  // namespace ridgeline::report
