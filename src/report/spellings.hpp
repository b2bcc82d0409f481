#pragma once
// The short spellings the report back-ends share, one definition each: t(1.0107e-3) is
// "1.011 ms", size(80e9) "80 GB" (format_quantity), esc() markup-escaped text for SVG and HTML.
#include <string>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::report {

inline std::string t(double s) { return format_quantity(s, Quantity::time); }
inline std::string size(double bytes) { return format_quantity(bytes, Quantity::bytes); }
inline std::string esc(const std::string& s) { return escape_markup(s); }

}  // namespace ridgeline::report
