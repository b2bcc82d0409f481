#pragma once
/// SVG charts: rooflines of one or more chips with points on them, and sweeps.
#include <string>
#include <utility>
#include <vector>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/hw/chip.hpp"

namespace ridgeline::report {

/// `s` with &, <, > and " escaped for XML/HTML text and attributes.
std::string escape_markup(const std::string& s);

/// A point on a roofline chart.
struct ChartPoint {
  std::string label;  ///< the point's name, on hover
  double intensity_flops_per_byte = 0;
  double flops_per_s = 0;
  std::string tag;    ///< short text drawn beside the point ("decode q_proj"); empty: the label
  ChartPoint() = default;
  ChartPoint(std::string label_, double intensity, double rate, std::string tag_ = {})
      : label(std::move(label_)), intensity_flops_per_byte(intensity), flops_per_s(rate), tag(std::move(tag_)) {}
};

/// One curve of a sweep chart.
struct Series {
  std::string label;
  std::vector<double> x, y;
  bool line = true;                 ///< join the points
  bool markers = false;             ///< a circle per point (class "point", hover title from `labels`)
  std::vector<std::string> labels;  ///< per point, optional
  std::vector<std::string> tags;    ///< per point, optional: short text drawn beside the marker
};

/// Log-log roofline: per chip the matrix ceiling at `dtype`, the fp32 vector ceiling, one
/// slanted roof per memory level, the main-memory ridge point marked; points labelled.
std::string roofline_svg(const std::vector<hw::ChipSpec>& chips, DType dtype, const std::vector<ChartPoint>& points,
                         const std::string& title);
/// The same with a matrix ceiling per dtype: the first is drawn in full (ridge marked), the
/// others as thinner dashed ceilings labelled with dtype and peak (`plot roofline --dtype bf16,fp8`).
std::string roofline_svg(const std::vector<hw::ChipSpec>& chips, const std::vector<DType>& dtypes,
                         const std::vector<ChartPoint>& points, const std::string& title);

/// How a sweep chart labels and ranges its axes.
struct SweepOptions {
  bool y_flop_rate = true;  ///< y ticks as FLOP/s (else plain SI numbers)
  bool from_zero = true;    ///< linear axes start at 0 (else at the data, padded 5%)
};

/// A sweep: y against x for several series.
std::string sweep_svg(const std::vector<Series>& series, const std::string& x_label, const std::string& y_label,
                      const std::string& title, bool log_x, bool log_y, const SweepOptions& options = {});

/// One bar of a stacked-bar chart: named segments.
struct Bar {
  std::string label;
  std::vector<std::pair<std::string, double>> segments;
};

/// Stacked bars (e.g. time by op kind per phase, memory by kind), ticks formatted as `q`.
/// A `limit` above 0 draws a dashed horizontal line labelled `limit_label` (e.g. capacity).
std::string stacked_bars_svg(const std::vector<Bar>& bars, const std::string& y_label, const std::string& title,
                             Quantity q = Quantity::time, double limit = 0, const std::string& limit_label = "");

/// Charts side by side in one SVG, each keeping its own axes (panels of different scales,
/// such as a prefill in seconds beside a decode step in milliseconds).
std::string panels_svg(const std::vector<std::string>& charts);

/// Writes a chart: SVG as is, or PNG through rsvg-convert when `path` ends in .png (an
/// InputError when the converter is missing). Atomic either way.
void write_chart(const std::string& path, const std::string& svg, std::string_view flag = "--out");

/// Writes `text` to `path` atomically (core/files.hpp AtomicFile: an unpredictable temporary
/// beside it, renamed over it); throws InputError naming `flag` and the path.
void write_file_atomically(const std::string& path, const std::string& text, std::string_view flag = "--out");

}  // namespace ridgeline::report
