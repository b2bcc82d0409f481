#pragma once
// The short spellings the report back-ends share, one definition each: t(0.0015) is "1.50 ms",
// size(2e9) "2.00 GB" (format_quantity), esc() markup-escaped text for SVG and HTML.
#include <string>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::report {

inline std::string t(double s) { return format_quantity(s, Quantity::time); }
inline std::string size(double bytes) { return format_quantity(bytes, Quantity::bytes); }
inline std::string esc(const std::string& s) { return escape_markup(s); }

}  // namespace ridgeline::report
