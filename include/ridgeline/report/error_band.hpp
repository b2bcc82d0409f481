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
/// {class, source, metrics: {ttft: {n, median, median_abs, p90_abs, low, high[, from][, own]}, ...}}:
/// the band the answer quotes (io::quoted_band), a borrowed metric's `from` naming the pooled
/// class and `own` ({n, median, low, high}) the class's own rows, too few to quote; a class the
/// table has no row of also carries a note saying so.
nlohmann::json error_band_json(std::string_view cls);
/// "error band (vllm, 16-bit, dense; against published runs, ...): TTFT -17% median, |error| 17% median,
/// 44% p90 (10 runs of any engine, 16-bit, dense; its own 2, too few: -14% median, -15% to -14%); TPOT
/// -8% median, ... (8 runs); ..."
std::string error_band_text(std::string_view cls);

}  // namespace ridgeline::report
