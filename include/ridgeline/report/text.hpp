#pragma once
/// Terminal back-end: human-readable tables.
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/analysis/threshold.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::report {

/// What `infer` and `train` say after "stores" on a chip whose stores allocate.
inline constexpr const char* kStoresAllocate =
    "allocate on this chip (write_allocate): op bytes count the line each store to a new tensor reads first";

/// `word` as one word of a POSIX shell command: as is when it has only safe characters,
/// else single-quoted (a quote inside as '\'').
std::string shell_word(std::string_view word);

/// US dollars without the sign: "2.50", "559", "0.0123"; "4.21 million" from a million up.
std::string format_usd(double v);

std::string catalog_text(const std::vector<io::CatalogEntry>& entries);
std::string chip_text(const hw::ChipSpec& chip);
/// One line naming the op and its shape, e.g. "matmul X[256,4096]·W[4096,4096] bf16".
std::string op_title(const analysis::OpConfig& op);
std::string estimate_text(const analysis::OpConfig& op, const hw::System& sys, const ops::Cost& cost,
                          const ops::Estimate& e, const comm::Priced* collective = nullptr,
                          const ops::GemmTiling* tiling = nullptr,
                          const ops::AttentionTiling* attention = nullptr);
std::string threshold_text(const analysis::OpConfig& op, const hw::System& sys, analysis::SolveVar var,
                           const analysis::ThresholdResult& r);

}  // namespace ridgeline::report
