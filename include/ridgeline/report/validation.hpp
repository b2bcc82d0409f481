#pragma once
/// Back-ends for `validate`: the JSON document and the terminal table.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/analysis/validation.hpp"

namespace ridgeline::report {

/// `hw`, `threads`, `blas`, `seconds`, `ops[{name, group, bound, working_set_bytes, level,
/// flops, model_bytes, write_allocate_bytes, predicted_s, measured_s, spread, ratio,
/// fraction_of_roofline, above_roof, checked, max_rel_error}]`, `summary`, `notes`.
nlohmann::json validation_json(const hw::ChipSpec& chip, const analysis::ValidationResult& r);
std::string validation_text(const hw::ChipSpec& chip, const analysis::ValidationResult& r);

}  // namespace ridgeline::report
