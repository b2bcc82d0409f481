#pragma once
/// Kernel curves in reports: each class's measured points beside the model's times, and a
/// fit's figures (`hw show`, `hw fit`; docs/cost-model.md#kernel-curves).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridgeline/analysis/kernel_curves.hpp"
#include "ridgeline/hw/chip.hpp"

namespace ridgeline::report {

/// The curves of `chip` with `fits` (analysis::curve_residuals or fit_curves, one per class
/// with curves): per class its kernels and sources, every point measured and modelled, the
/// residuals, and the figures (fitted, or the chip's own) with the notes.
std::string curves_text(const hw::ChipSpec& chip, const std::vector<analysis::CurveFit>& fits);
/// The same as JSON: [{class, curves: [{kernel, source, timing}], points: [{shape, measured_s,
/// predicted_s, residual}], rms_residual, max_residual, fitted, overhead_s, matrix, vector,
/// memory, link, notes}].
nlohmann::json curves_json(const hw::ChipSpec& chip, const std::vector<analysis::CurveFit>& fits);
/// The fitted classes as the chip file's `efficiency` entries, e.g.
/// "  gemm: {memory: 0.931, overhead: 3.85 us}" (four significant digits), one per line.
std::string fitted_efficiency_yaml(const std::vector<analysis::CurveFit>& fits);

}  // namespace ridgeline::report
