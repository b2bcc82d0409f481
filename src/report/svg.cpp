#include "ridgeline/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/text.hpp"
#include "ridgeline/core/units.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

std::string escape_markup(const std::string& s) {
  std::string o;
  for (char c : valid_utf8(s)) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default:
        // XML 1.0 has no other control characters: U+FFFD in their place.
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) o += "\xEF\xBF\xBD";
        else o += c;
    }
  }
  return o;
}

namespace {

constexpr double kW = 920, kH = 600, kL = 110, kR = 200, kT = 50, kB = 70;  // canvas and margins
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

// Text on a chart that must not cross other text: boxes as the text measures (about 0.55 em
// per character) and where a new label fits, inside the plot area.
class Labels {
 public:
  struct Box {
    double x0, y0, x1, y1;
  };
  struct Place {
    double x, y;
    bool end;  // text-anchor end (left of the point)
  };
  void take(const Box& b) { taken_.push_back(b); }
  static Box box(double tx, double ty, std::size_t chars, bool end_anchored, double px_per_char = 6) {
    const double w = px_per_char * static_cast<double>(chars);
    return end_anchored ? Box{tx - w, ty - 11, tx, ty + 2} : Box{tx, ty - 11, tx + w, ty + 2};
  }
  bool free(const Box& b) const {
    if (b.x0 < kL || b.x1 > kW - kR || b.y0 < kT || b.y1 > kH - kB) return false;  // inside the plot, not cut at its edge
    for (const Box& t : taken_) {
      if (b.x0 < t.x1 && t.x0 < b.x1 && b.y0 < t.y1 && t.y0 < b.y1) return false;
    }
    return true;
  }
  /// The first place `chars` characters fit beside (px, py): right, then left, at the
  /// point's height, then up to `lines` lines above or below; taken when found.
  std::optional<Place> place(double px, double py, std::size_t chars, int lines = 8, double px_per_char = 6) {
    for (int shift = 0; shift <= lines; ++shift) {
      for (const double dy : {-13.0 * shift, 13.0 * shift}) {
        for (const bool left : {false, true}) {
          const double tx = left ? px - 7 : px + 7, ty = py + 4 + dy;
          const Box b = box(tx, ty, chars, left, px_per_char);
          if (!free(b)) continue;
          take(b);
          return Place{tx, ty, left};
        }
        if (shift == 0) break;
      }
    }
    return std::nullopt;
  }

 private:
  std::vector<Box> taken_;
};

struct Axis {
  double lo, hi;  // data range
  bool log;
  double a, b;    // pixel range
  double map(double v) const {
    const double f = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return a + f * (b - a);
  }
};

std::string header(const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"28\" font-size=\"16\" "
      "text-anchor=\"middle\">{}</text>\n",
      kW, kH, kW, kH, (kL + kW - kR) / 2, esc(title));
}

// Decade grid lines and labels on a log axis (or 5 even ticks on a linear one).
std::string axes(const Axis& x, const Axis& y, const std::string& xl, const std::string& yl, bool y_rate) {
  std::string s = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", kL, kT,
                              kW - kL - kR, kH - kT - kB);
  auto ticks = [](const Axis& ax) {
    std::vector<double> t;
    if (ax.log) {
      for (double e = std::floor(std::log10(ax.lo)); e <= std::ceil(std::log10(ax.hi)); ++e) {
        const double v = std::pow(10.0, e);
        if (v >= ax.lo * 0.999 && v <= ax.hi * 1.001) t.push_back(v);
      }
    } else {
      // Steps of 1, 2 or 5 times a power of ten, about five of them.
      const double raw = (ax.hi - ax.lo) / 5;
      const double p10 = std::pow(10.0, std::floor(std::log10(raw)));
      const double step = raw / p10 < 1.5 ? p10 : raw / p10 < 3.5 ? 2 * p10 : raw / p10 < 7.5 ? 5 * p10 : 10 * p10;
      for (double v = std::ceil(ax.lo / step) * step; v <= ax.hi * 1.0001; v += step) t.push_back(v);
    }
    return t;
  };
  for (double v : ticks(x)) {
    const double px = x.map(v);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>\n", px, kT, px, kH - kB);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px, kH - kB + 18, esc(format_si(v)));
  }
  for (double v : ticks(y)) {
    const double py = y.map(v);
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", kL, py, kW - kR, py);
    std::string label = y_rate ? format_quantity(v, Quantity::flop_rate) : format_si(v);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kL - 6, py + 4, esc(label));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (kL + kW - kR) / 2, kH - 20, esc(xl));
  s += fmt::format("<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n", (kT + kH - kB) / 2,
                   (kT + kH - kB) / 2, esc(yl));
  return s;
}

}  // namespace

std::string roofline_svg(const std::vector<hw::ChipSpec>& chips, DType dtype, const std::vector<ChartPoint>& points,
                         const std::string& title) {
  return roofline_svg(chips, std::vector<DType>{dtype}, points, title);
}

std::string roofline_svg(const std::vector<hw::ChipSpec>& chips, const std::vector<DType>& dtypes,
                         const std::vector<ChartPoint>& points, const std::string& title) {
  const DType dtype = dtypes.empty() ? DType::bf16 : dtypes.front();
  // Ranges: intensity from 1/100 to 10x the largest ridge (and every point); rate from the
  // smallest slanted roof at the left edge to 2x the highest peak.
  double xmax = 1e3, ymax = 1e9, ymin = 1e30, xmin = 1e-2;
  for (const auto& c : chips) {
    for (DType d : dtypes) {
      xmax = std::max(xmax, 10 * std::max(c.ridge_flops_per_byte(d), 1.0));
      ymax = std::max(ymax, 2 * c.peak(hw::Unit::matrix, d));
    }
    for (const auto& m : c.memory) ymin = std::min(ymin, m.bandwidth_Bps * xmin);
  }
  // A point needs a positive, finite intensity and rate to sit on log axes; others are left out.
  auto drawable = [](const ChartPoint& p) {
    return p.intensity_flops_per_byte > 0 && std::isfinite(p.intensity_flops_per_byte) && p.flops_per_s > 0 &&
           std::isfinite(p.flops_per_s);
  };
  for (const auto& p : points) {
    if (!drawable(p)) continue;
    xmin = std::min(xmin, p.intensity_flops_per_byte / 2);
    xmax = std::max(xmax, p.intensity_flops_per_byte * 2);
    ymin = std::min(ymin, p.flops_per_s / 2);
    ymax = std::max(ymax, p.flops_per_s * 2);
  }
  ymin = std::pow(10.0, std::floor(std::log10(std::max(ymin, 1.0))));
  xmin = std::pow(10.0, std::floor(std::log10(xmin)));
  xmax = std::pow(10.0, std::ceil(std::log10(xmax)));
  ymax = std::pow(10.0, std::ceil(std::log10(ymax)));
  Axis x{xmin, xmax, true, kL, kW - kR}, y{ymin, ymax, true, kH - kB, kT};
  std::string s = header(title) + axes(x, y, "arithmetic intensity (FLOPs/byte)", "attainable FLOP/s", true);
  s += fmt::format("<clipPath id=\"plot\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n<g clip-path=\"url(#plot)\">\n",
                   kL, kT, kW - kL - kR, kH - kT - kB);
  std::string legend;
  // Text already on the plot (ridge labels, then point labels): boxes a label must not cross.
  Labels labels;
  double legend_y = kT + 10;
  for (size_t ci = 0; ci < chips.size(); ++ci) {
    const auto& c = chips[ci];
    const char* col = kColors[ci % 8];
    const double peak = c.peak(hw::Unit::matrix, dtype);
    double top = peak;  // the highest ceiling drawn: the slanted roofs run up to it
    for (DType d : dtypes) top = std::max(top, c.peak(hw::Unit::matrix, d));
    for (size_t li = 0; li < c.memory.size(); ++li) {
      const double bw = c.memory[li].bandwidth_Bps;
      // The slanted roof up to where it meets the (highest) matrix ceiling.
      const double x_end = top > 0 ? std::min(xmax, top / bw) : xmax;
      s += fmt::format("<line class=\"roof\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
                       x.map(xmin), y.map(bw * xmin), x.map(x_end), y.map(bw * x_end), col, li == 0 ? 2 : 1,
                       li == 0 ? "" : " stroke-dasharray=\"6 3\"");
    }
    if (peak > 0) {
      const double ridge = c.ridge_flops_per_byte(dtype);
      s += fmt::format("<line class=\"ceiling\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                       x.map(std::max(ridge, xmin)), y.map(peak), x.map(xmax), y.map(peak), col);
      s += fmt::format("<circle class=\"ridge\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", x.map(ridge), y.map(peak), col);
      const std::string ridge_text = fmt::format("ridge {:.4g}", ridge);
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">{}</text>\n", x.map(ridge) + 6, y.map(peak) + 16, col, ridge_text);
      labels.take(Labels::box(x.map(ridge) + 6, y.map(peak) + 16, ridge_text.size(), false));
    }
    // Further matrix dtypes: their own ceilings, thinner, labelled at the right edge (one
    // line for dtypes with the same peak, e.g. fp8 and int8 on Hopper).
    for (size_t di = 1; di < dtypes.size(); ++di) {
      const double p = c.peak(hw::Unit::matrix, dtypes[di]);
      if (!(p > 0) || p == peak) continue;
      bool drawn = false;
      for (size_t dj = 1; dj < di; ++dj) drawn = drawn || c.peak(hw::Unit::matrix, dtypes[dj]) == p;
      if (drawn) continue;
      std::string names(name(dtypes[di]));
      for (size_t dj = di + 1; dj < dtypes.size(); ++dj) {
        if (c.peak(hw::Unit::matrix, dtypes[dj]) == p) names += fmt::format(", {}", name(dtypes[dj]));
      }
      const double r = p / c.main_bandwidth_Bps();
      s += fmt::format("<line class=\"ceiling dtype\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"1\" stroke-dasharray=\"8 3\"/>\n",
                       x.map(std::max(r, xmin)), y.map(p), x.map(xmax), y.map(p), col);
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\" text-anchor=\"end\">{} {}</text>\n", x.map(xmax) - 4, y.map(p) - 4, col,
                       names, esc(format_quantity(p, Quantity::flop_rate)));
    }
    const double vec = c.peak(hw::Unit::vector, DType::fp32);
    if (vec > 0) {
      s += fmt::format("<line class=\"vector\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-dasharray=\"2 3\"/>\n",
                       x.map(std::max(xmin, vec / c.main_bandwidth_Bps())), y.map(vec), x.map(xmax), y.map(vec), col);
    }
    // Three or four lines per chip (name; matrix peak; main memory; the dotted vector
    // ceiling), to fit the right margin.
    const double ly = legend_y;
    legend += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                          kW - kR + 12, ly, col, kW - kR + 30, ly + 4, esc(c.name));
    legend += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#555\">{} {}</text>\n", kW - kR + 30, ly + 18, name(dtype),
                          esc(format_quantity(peak, Quantity::flop_rate)));
    legend += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#555\">{} {}</text>\n", kW - kR + 30, ly + 32,
                          esc(c.memory.empty() ? "" : c.memory[0].name),
                          esc(format_quantity(c.main_bandwidth_Bps(), Quantity::bandwidth)));
    legend_y += 50;
    if (vec > 0) {
      legend += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-dasharray=\"2 3\"/><text x=\"{}\" y=\"{}\" fill=\"#555\">vector fp32 {}</text>\n",
                            kW - kR + 12, ly + 42, kW - kR + 26, ly + 42, col, kW - kR + 30, ly + 46,
                            esc(format_quantity(vec, Quantity::flop_rate)));
      legend_y += 14;
    }
  }
  // Points, each labelled where its label crosses no other text and stays inside the plot:
  // right of the point, then left, at its height or a few lines above or below. A point whose
  // label fits nowhere gets a number, and the number and label go to a key under the legend.
  // Past 300 points no label would be read: their names are on hover only (and it keeps the
  // placement, points x candidates x boxes, bounded).
  std::size_t drawn = 0;
  for (const auto& p : points) {
    if (!drawable(p)) continue;
    ++drawn;
    const double px = x.map(p.intensity_flops_per_byte), py = y.map(p.flops_per_s);
    labels.take({px - 4, py - 4, px + 4, py + 4});  // the points themselves
  }
  const bool labelled = drawn <= 300;
  std::string key;
  int numbered = 0, unnamed = 0;
  for (const auto& p : points) {
    if (!drawable(p)) continue;
    const double px = x.map(p.intensity_flops_per_byte), py = y.map(p.flops_per_s);
    s += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"black\"><title>{}: {:.4g} FLOPs/byte, {}</title></circle>\n",
                     px, py, esc(p.label), p.intensity_flops_per_byte, esc(format_quantity(p.flops_per_s, Quantity::flop_rate)));
    if (!labelled) continue;
    const std::string& text = p.tag.empty() ? p.label : p.tag;
    const std::string label = text.size() > 40 ? text.substr(0, 37) + "..." : text;
    if (const auto at = labels.place(px, py, label.size())) {
      s += fmt::format("<text class=\"point-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\"{}>{}</text>\n", at->x, at->y,
                       at->end ? " text-anchor=\"end\"" : "", esc(label));
      continue;
    }
    // The key: a number beside the point and "n  label" under the legend, both or neither:
    // when the key is full or the number fits nowhere beside the point, it is named on hover.
    const double ky = legend_y + 14 + 13 * static_cast<double>(numbered + 1);
    const std::string n = std::to_string(numbered + 1);
    bool placed = false;
    for (const bool left : {false, true}) {
      if (ky >= kH - 8 - 13) break;
      const Labels::Box b = Labels::box(left ? px - 5 : px + 5, py + 4, n.size(), left);
      if (!labels.free(b)) continue;
      labels.take(b);
      s += fmt::format("<text class=\"point-number\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\"{}>{}</text>\n", left ? px - 5 : px + 5,
                       py + 4, left ? " text-anchor=\"end\"" : "", n);
      placed = true;
      break;
    }
    if (!placed) {
      ++unnamed;
      continue;
    }
    ++numbered;
    key += fmt::format("<text class=\"key\" x=\"{}\" y=\"{}\" font-size=\"10\">{}  {}</text>\n", kW - kR + 12, ky, n,
                       esc(label.size() > 28 ? label.substr(0, 25) + "..." : label));
  }
  if (unnamed > 0) {
    key += fmt::format("<text class=\"key-more\" x=\"{}\" y=\"{}\" font-size=\"10\">{} more: hover for names</text>\n", kW - kR + 12,
                       legend_y + 14 + 13 * static_cast<double>(numbered + 1), unnamed);
  }
  if (!labelled) {
    key += fmt::format("<text class=\"key\" x=\"{}\" y=\"{}\" font-size=\"10\">{} points: hover for names</text>\n", kW - kR + 12,
                       legend_y + 14, drawn);
  }
  s += "</g>\n" + legend + key + "</svg>\n";
  return s;
}

std::string sweep_svg(const std::vector<Series>& series, const std::string& x_label, const std::string& y_label,
                      const std::string& title, bool log_x, bool log_y, const SweepOptions& options) {
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const auto& se : series) {
    for (size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      xmin = std::min(xmin, se.x[i]);
      xmax = std::max(xmax, se.x[i]);
      ymin = std::min(ymin, se.y[i]);
      ymax = std::max(ymax, se.y[i]);
    }
  }
  if (!(xmax > 0)) throw InputError("plot: no points to draw");
  if (log_x) {
    xmin = std::max(xmin, 1e-12);
  } else if (options.from_zero) {
    xmin = 0;
  } else {
    const double pad = 0.05 * std::max(xmax - xmin, 0.01 * std::abs(xmax));
    xmin = std::max(0.0, xmin - pad);
    xmax += pad;
  }
  if (log_y) {
    ymin = std::max(ymin, 1e-30);
  } else if (options.from_zero) {
    ymin = 0;
  } else {
    const double pad = 0.05 * std::max(ymax - ymin, 0.01 * std::abs(ymax));
    ymin = std::max(0.0, ymin - pad);
  }
  if (xmax <= xmin) xmax = xmin * 10 + 1;
  if (ymax <= ymin) ymax = ymin + 1;
  Axis x{xmin, xmax, log_x, kL, kW - kR}, y{ymin, ymax * 1.05, log_y, kH - kB, kT};
  std::string s = header(title) + axes(x, y, x_label, y_label, options.y_flop_rate);
  std::string legend;
  // Tags (short text beside markers) where they cross no marker and no other tag.
  Labels labels;
  for (const auto& se : series) {
    for (size_t i = 0; se.markers && i < se.x.size() && i < se.y.size(); ++i) {
      const double px = x.map(std::max(se.x[i], xmin)), py = y.map(std::max(se.y[i], ymin));
      labels.take({px - 4, py - 4, px + 4, py + 4});
    }
  }
  for (size_t si = 0; si < series.size(); ++si) {
    const auto& se = series[si];
    std::string d;
    for (size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      d += fmt::format("{}{:.1f},{:.1f}", i == 0 ? "M" : " L", x.map(std::max(se.x[i], xmin)), y.map(std::max(se.y[i], ymin)));
    }
    if (se.line) s += fmt::format("<path class=\"series\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", d, kColors[si % 8]);
    for (size_t i = 0; se.markers && i < se.x.size() && i < se.y.size(); ++i) {
      s += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{}</title></circle>\n",
                       x.map(std::max(se.x[i], xmin)), y.map(std::max(se.y[i], ymin)), kColors[si % 8],
                       esc(i < se.labels.size() ? se.labels[i] : se.label));
      if (i < se.tags.size() && !se.tags[i].empty()) {
        const auto at = labels.place(x.map(std::max(se.x[i], xmin)), y.map(std::max(se.y[i], ymin)), se.tags[i].size(), 2, 5.5);
        if (at) {
          s += fmt::format("<text class=\"tag\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\"{}>{}</text>\n", at->x, at->y,
                           at->end ? " text-anchor=\"end\"" : "", esc(se.tags[i]));
        }
      }
    }
    legend += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                          kW - kR + 12, kT + 10 + 20 * static_cast<double>(si), kColors[si % 8], kW - kR + 30, kT + 14 + 20 * static_cast<double>(si), esc(se.label));
  }
  return s + legend + "</svg>\n";
}

std::string panels_svg(const std::vector<std::string>& charts) {
  const double width = kW * static_cast<double>(charts.size());
  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">\n", width, kH,
                              width, kH);
  for (std::size_t i = 0; i < charts.size(); ++i) {
    // Each chart is a whole <svg> of kW x kH: nested at its offset.
    const std::string& c = charts[i];
    if (c.rfind("<svg ", 0) != 0) throw std::logic_error("panels_svg: not an SVG chart");
    s += fmt::format("<svg x=\"{}\" y=\"0\" ", kW * static_cast<double>(i)) + c.substr(5);
  }
  return s + "</svg>\n";
}

std::string stacked_bars_svg(const std::vector<Bar>& bars, const std::string& y_label, const std::string& title, Quantity q,
                             double limit, const std::string& limit_label) {
  double ymax = 0;
  std::vector<std::string> keys;  // segment names in first-seen order: one colour each
  for (const auto& b : bars) {
    double total = 0;
    for (const auto& [k, v] : b.segments) {
      total += std::max(0.0, v);
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    ymax = std::max(ymax, total);
  }
  if (!(ymax > 0)) throw InputError("plot: nothing to draw (all values are zero)");
  if (limit > 0) ymax = std::max(ymax, limit);
  Axis x{0, std::max<double>(1, static_cast<double>(bars.size())), false, kL, kW - kR};
  Axis y{0, ymax * 1.05, false, kH - kB, kT};
  std::string s = header(title);
  // y axis only: the x positions are categories.
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", kL, kT, kW - kL - kR,
                   kH - kT - kB);
  const double raw = ymax / 5, p10 = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / p10 < 1.5 ? p10 : raw / p10 < 3.5 ? 2 * p10 : raw / p10 < 7.5 ? 5 * p10 : 10 * p10;
  for (double v = 0; v <= ymax * 1.05; v += step) {
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", kL, y.map(v), kW - kR, y.map(v));
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kL - 6, y.map(v) + 4,
                     esc(format_quantity(v, q)));
  }
  s += fmt::format("<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{}</text>\n", (kT + kH - kB) / 2,
                   (kT + kH - kB) / 2, esc(y_label));
  const double slot = (kW - kL - kR) / std::max<double>(1, static_cast<double>(bars.size()));
  for (size_t bi = 0; bi < bars.size(); ++bi) {
    const double x0 = kL + slot * static_cast<double>(bi) + slot * 0.2, w = slot * 0.6;
    double base = 0;
    for (const auto& [k, v] : bars[bi].segments) {
      if (!(v > 0)) continue;
      const size_t ki = static_cast<size_t>(std::find(keys.begin(), keys.end(), k) - keys.begin());
      const double top = y.map(base + v), bottom = y.map(base);
      s += fmt::format("<rect class=\"segment\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
                       x0, top, w, bottom - top, kColors[ki % 8], esc(k), esc(format_quantity(v, q)));
      base += v;
    }
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x0 + w / 2, kH - kB + 18, esc(bars[bi].label));
  }
  // Over the bars, so that a bar above the limit shows where it crosses.
  if (limit > 0) {
    s += fmt::format("<line class=\"limit\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#c00\" stroke-dasharray=\"6 4\"/>\n", kL,
                     y.map(limit), kW - kR, y.map(limit));
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#c00\">{} {}</text>\n", kW - kR - 4, y.map(limit) - 4,
                     esc(limit_label), esc(format_quantity(limit, q)));
  }
  for (size_t ki = 0; ki < keys.size(); ++ki) {
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n", kW - kR + 12,
                     kT + 4 + 20 * static_cast<double>(ki), kColors[ki % 8], kW - kR + 30, kT + 14 + 20 * static_cast<double>(ki), esc(keys[ki]));
  }
  (void)x;
  return s + "</svg>\n";
}

void write_chart(const std::string& path, const std::string& svg, std::string_view flag) {
  check_extension(path, flag, {".svg", ".png"});
  check_output_path(path, flag);
  const bool png = path.size() > 4 && path.substr(path.size() - 4) == ".png";
  if (!png) {
    write_file_atomically(path, svg, flag);
    return;
  }
  if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
    throw InputError(fmt::format("{}: {}: PNG needs rsvg-convert (Debian package librsvg2-bin); write .svg instead", flag, path));
  }
  // The SVG on the converter's standard input, the PNG into the temporary (atomic as any output).
  AtomicFile out(path, flag);
  const std::string& tmp = out.temporary();
  bool ok = tmp.find('\'') == std::string::npos;
  if (ok) {
    // A converter that stops reading early must fail the write, not kill this process.
    void (*previous)(int) = std::signal(SIGPIPE, SIG_IGN);
    std::FILE* pipe = ::popen(fmt::format("rsvg-convert -f png -o '{}'", tmp).c_str(), "w");
    ok = pipe != nullptr;
    if (ok) {
      ok = std::fwrite(svg.data(), 1, svg.size(), pipe) == svg.size();
      ok = ::pclose(pipe) == 0 && ok;
    }
    std::signal(SIGPIPE, previous);
  }
  if (!ok) throw InputError(fmt::format("{}: {}: rsvg-convert could not write the PNG", flag, path));
  out.commit();
}

void write_file_atomically(const std::string& path, const std::string& text, std::string_view flag) {
  AtomicFile out(path, flag);
  const std::string body = valid_utf8(text);
  if (std::fwrite(body.data(), 1, body.size(), out.stream()) != body.size()) {
    throw InputError(fmt::format("{}: {}: writing failed", flag, path));
  }
  out.commit();
}

}  // namespace ridgeline::report
