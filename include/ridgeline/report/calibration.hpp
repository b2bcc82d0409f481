#pragma once
/// Output of `ridgeline calibrate`: the fit per kernel class and every kernel's residual.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/analysis/calibration.hpp"

namespace ridgeline::report {

nlohmann::json calibration_json(const analysis::CalibrationResult& r, const hw::ChipSpec& chip, const std::string& source);
std::string calibration_text(const analysis::CalibrationResult& r, const hw::ChipSpec& chip, const std::string& source);

/// The `calibrated:` block of the chip file written: date, command, file, and per fitted
/// class its kernel count and residuals.
std::string calibration_provenance(const analysis::CalibrationResult& r, const std::string& source, const std::string& command);

}  // namespace ridgeline::report
