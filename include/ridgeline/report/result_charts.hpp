#pragma once
/// Charts drawn from a result document (`infer --json` or `train --json`): used by
/// `plot breakdown|memory` and by the HTML report, so both draw the same thing.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::report {

/// Typed reads of a result document that never throw: the value when `j` is an object
/// holding `key` with that type, `fallback` otherwise (result files come from users).
double json_number(const nlohmann::json& j, const char* key, double fallback = 0);
std::string json_string(const nlohmann::json& j, const char* key, const std::string& fallback = "");
bool json_bool(const nlohmann::json& j, const char* key, bool fallback);

/// Time by op kind per phase (prefill, decode per step; or a training step), stacked.
/// `where` names the document in errors. `bars` receives the bar count.
std::string breakdown_svg(const nlohmann::json& result, const std::string& where, size_t* bars = nullptr);
/// The same chart's panels apart (an inference's prefill and its decode step, each on its own
/// axis): one SVG each, for a page that lays them out at their own size.
std::vector<std::string> breakdown_panels(const nlohmann::json& result, const std::string& where, size_t* bars = nullptr);

/// Memory on one chip by kind against its capacity. `segments` receives {kind_bytes: value}.
std::string memory_svg(const nlohmann::json& result, const std::string& where, nlohmann::json* segments = nullptr);

/// The ops of a result document with FLOPs, bytes and a time, as roofline points.
std::vector<ChartPoint> result_points(const nlohmann::json& result);

/// The chip's roofline with every op of the document that has FLOPs and time as a point
/// (infer: prefill and decode ops; train: forward ops). `points` receives the count.
std::string ops_roofline_svg(const nlohmann::json& result, const hw::ChipSpec& chip, size_t* points = nullptr);

/// `serve --json`: the CDFs of TTFT, TPOT, ITL and E2E (milliseconds, log axis).
/// `series` receives the curve count.
std::string serving_latency_svg(const nlohmann::json& result, const std::string& where, size_t* series = nullptr);

/// `serve --json`: running and waiting requests over simulated time.
std::string serving_timeline_svg(const nlohmann::json& result, const std::string& where);

/// `serve --json`: the KV cache used (percent) and output tokens per second over simulated time.
std::string serving_kv_svg(const nlohmann::json& result, const std::string& where);

/// `serve --qps A,B,... --json` (a sweep): p99 TTFT and TPOT against output tokens/s per GPU,
/// one point per rate. `points` receives the point count.
std::string serving_throughput_svg(const nlohmann::json& sweep, const std::string& where, size_t* points = nullptr);

}  // namespace ridgeline::report
