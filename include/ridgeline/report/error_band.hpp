#pragma once
/// An answer's error band in reports (docs/serving.md#errors-by-class): its class's errors in
/// the validation table against published measurements.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/io/error_bands.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::report {

using io::answer_class;  // (the class of an answer: io/error_bands.hpp)
/// {class, source, metrics: {ttft: {n, median, median_abs, p90_abs, low, high}, ...}}; a
/// class the table has no row of: metrics {} and a note saying so.
nlohmann::json error_band_json(std::string_view cls);
/// "error band (vllm, 16-bit, dense; published runs): TTFT -8% median (|error| 12%, p90 25%, n 30), ..."
std::string error_band_text(std::string_view cls);

}  // namespace ridgeline::report
