#pragma once
// The short spellings the report back-ends share, one definition each: t(1.0107e-3) is
// "1.011 ms", size(80e9) "80 GB" (format_quantity), esc() markup-escaped text for SVG and HTML,
// launched("eager") "eagerly" (a step's launch by its JSON name, serving::name(GraphMode)).
#include <string>
#include <string_view>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::report {

inline std::string t(double s) { return format_quantity(s, Quantity::time); }
inline std::string size(double bytes) { return format_quantity(bytes, Quantity::bytes); }
inline std::string esc(const std::string& s) { return escape_markup(s); }
inline std::string launched(std::string_view mode) {
  return mode == "eager" ? "eagerly" : mode == "piecewise" ? "as piecewise graphs" : mode == "graph" ? "as one graph" : std::string(mode);
}

}  // namespace ridgeline::report
