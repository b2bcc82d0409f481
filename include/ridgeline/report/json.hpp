#pragma once
/// JSON back-end: results as nlohmann::json, keys in snake_case with units in their names.
#include <nlohmann/json.hpp>

#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/analysis/threshold.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::report {

/// `hw list`: [{name, vendor, kind, display_name}].
/// Whole numbers kept as doubles (counts of chips, launches, requests) written as integers:
/// `"chips": 4`, not `4.0`. Finite values within ±2^53 only; the document is changed in place.
void integral_numbers(nlohmann::json& j);

nlohmann::json catalog_json(const std::vector<io::CatalogEntry>& entries);
/// `hw show`: the chip in the CLI.md form.
nlohmann::json chip_json(const hw::ChipSpec& chip);
/// The op's inputs as given (kind, dims, dtypes).
nlohmann::json op_config_json(const analysis::OpConfig& op);
/// `op`: cost and estimate on `sys`.
/// `collective`: a collective op's pricing (analysis::op_collective): the algorithm chosen
/// and the traffic on each link.
nlohmann::json estimate_json(const analysis::OpConfig& op, const hw::System& sys, const ops::Cost& cost,
                             const ops::Estimate& e, const comm::Priced* collective = nullptr,
                          const ops::GemmTiling* tiling = nullptr,
                             const ops::AttentionTiling* attention = nullptr);
/// `threshold`: critical_<var> and how it was found.
nlohmann::json threshold_json(const analysis::OpConfig& op, const hw::System& sys, analysis::SolveVar var,
                              const analysis::ThresholdResult& r);

}  // namespace ridgeline::report
