#pragma once
/// An answer's error band in reports (docs/serving.md#errors-by-class): its class's errors in
/// the validation table against published measurements.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::report {

/// The class of `m` served by `engine` ("vllm", "sglang", "trtllm", "static") as `f` runs it
/// on `chip`: the dtype most of its GEMM work runs in (its experts' for a MoE checkpoint
/// whose experts alone are quantised).
std::string answer_class(std::string_view engine, const model::ModelConfig& m, const model::ForwardConfig& f,
                         const hw::ChipSpec& chip);
/// {class, source, metrics: {ttft: {n, median, median_abs, p90_abs, low, high}, ...}}; a
/// class the table has no row of: metrics {} and a note saying so.
nlohmann::json error_band_json(std::string_view cls);
/// "error band (vllm, 16-bit, dense; published runs): TTFT -8% median (|error| 12%, p90 25%, n 30), ..."
std::string error_band_text(std::string_view cls);

}  // namespace ridgeline::report
