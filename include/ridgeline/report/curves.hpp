#pragma once
/// Kernel curves in reports: each class's measured points beside the model's times, and a
/// fit's figures (`hw show`, `hw fit`; docs/cost-model.md#kernel-curves).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridgeline/analysis/kernel_curves.hpp"
#include "ridgeline/hw/chip.hpp"

namespace ridgeline::report {

/// A kernel class's figures in words, the one spelling of `hw show`'s class list and of each
/// fit's (`hw show`, `hw fit`): "matrix 0.186, memory 0.926, each tile 166 columns of K more on
/// its loads, 13.31 us per kernel". `e` holds the figures (the chip file's own, or a fit's);
/// a fraction or fixed time it lacks that a sibling lends the class (hw::lent_figures), or
/// one equal to the lender's where `file` gives the class none, is named as the lender's:
/// "gemm_expert's memory 0.931".
std::string class_figures(const hw::ClassEfficiency& e, hw::KernelClass cls, const hw::EfficiencySpec& file);

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
