#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/profile.hpp"

namespace ridgeline::report {

using nlohmann::json;

namespace {

// A kernel's name for a table column: without the return type, template arguments and
// parameter list that make C++ kernels read alike ("void at::native::(anonymous
// namespace)::elementwise_kernel<128, 2, ...>(int, ...)" is "at::native::(anon)::elementwise_kernel"),
// and past `width` its end, where the name is. JSON keeps the whole name.
std::string short_kernel_name(const std::string& full, std::size_t width) {
  std::string n = full.rfind("void ", 0) == 0 ? full.substr(5) : full;
  std::string out;
  int angle = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    if (n.compare(i, 21, "(anonymous namespace)") == 0) {
      if (angle == 0) out += "(anon)";
      i += 20;
      continue;
    }
    if (c == '(' && angle == 0) break;  // the parameter list: the name has ended
    if (c == '<') ++angle;
    else if (c == '>' && angle > 0) --angle;
    else if (angle == 0) out += c;
  }
  if (out.empty()) out = full;
  if (out.size() <= width) return out;
  return "..." + out.substr(out.size() - (width - 3));
}

// The table's names: short, and where two kernels would read the same, told apart by the
// CPU op that launched them ("at::native::reduce_kernel [aten::sum]") or else a number ("#2").
std::vector<std::string> table_names(const std::vector<profile::KernelSummary>& kernels, std::size_t width) {
  std::vector<std::string> base(kernels.size()), out(kernels.size());
  std::map<std::string, int> uses, with_op, numbered;  // by short name; by short name and op
  auto pair = [&](std::size_t i) { return base[i] + '\n' + kernels[i].op; };
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    ++uses[base[i] = short_kernel_name(kernels[i].name, width)];
    ++with_op[pair(i)];
  }
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (uses[base[i]] == 1) {
      out[i] = base[i];
      continue;
    }
    const std::string& op = kernels[i].op;
    const std::string tag = !op.empty() && with_op[pair(i)] == 1 ? " [" + op + "]" : fmt::format(" #{}", ++numbered[base[i]]);
    out[i] = short_kernel_name(kernels[i].name, width > tag.size() + 8 ? width - tag.size() : 8) + tag;
  }
  return out;
}

// Shares of their sum, largest first, as JSON.
json shares_json(const std::vector<profile::TimeShare>& v) {
  double total = 0;
  for (const auto& s : v) total += s.time_s;
  json a = json::array();
  for (const auto& s : v) a.push_back({{"name", s.name}, {"time_s", s.time_s}, {"share", total > 0 ? s.time_s / total : 0.0}, {"count", s.count}});
  return a;
}

// "gemm 45.1% (4.8 ms, 120)", the first `top` of them and how many more.
std::string shares_text(const std::vector<profile::TimeShare>& v, std::size_t top, bool short_names) {
  double total = 0;
  for (const auto& s : v) total += s.time_s;
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < top; ++i) {
    out += fmt::format("{}{} {:.1f}% ({}, {:.0f})", i ? ", " : "", short_names ? short_kernel_name(v[i].name, 40) : v[i].name,
                       total > 0 ? 100 * v[i].time_s / total : 0.0, format_quantity(v[i].time_s, Quantity::time), v[i].count);
  }
  if (v.size() > top) out += fmt::format(", and {} more (--json lists all)", v.size() - top);
  return out;
}

// The finding that matters most, first: a GPU idle most of the trace's span; else where the
// time goes and the kernel with the most to gain.
std::string headline(const profile::Profile& p, const profile::ProfileAnalysis& a) {
  auto t = [](double s) { return format_quantity(s, Quantity::time); };
  const double busy = p.span_s > 0 ? (p.span_s - p.idle_s) / p.span_s : 1;
  if (p.span_s > 0 && busy < 0.5) {
    return fmt::format("headline: the GPU is busy {:.1f}% of the {} the trace spans ({} idle in {:.0f} gaps): the time goes outside the "
                       "kernels (the host, data loading, synchronisation), not to them", 100 * busy, t(p.span_s), t(p.idle_s), p.idle_gaps);
  }
  std::string h = "headline: ";
  double total = 0;
  for (const profile::TimeShare& c : a.by_category) total += c.time_s;
  if (!a.by_category.empty() && total > 0) {
    h += fmt::format("{} takes {:.0f}% of the GPU's time", a.by_category.front().name, 100 * a.by_category.front().time_s / total);
  }
  const auto most = std::max_element(a.kernels.begin(), a.kernels.end(), [](const auto& x, const auto& y) { return x.gap_s < y.gap_s; });
  if (most != a.kernels.end() && most->gap_s > 0) {
    h += fmt::format("{}{} would save {} at its roof ({:.0f}% of its time)", h.size() > 10 ? "; " : "", short_kernel_name(most->name, 60),
                     t(most->gap_s), most->time_s > 0 ? 100 * most->gap_s / most->time_s : 0.0);
  } else if (a.unknown_time_s > 0) {
    h += fmt::format("{}{} of kernels have no byte counts: no roofline for them", h.size() > 10 ? "; " : "", t(a.unknown_time_s));
  }
  return h;
}

}  // namespace

json profile_json(const profile::Profile& p, const profile::ProfileAnalysis& a) {
  json j;
  j["source"] = p.source;
  j["format"] = p.format;
  j["hw"] = a.chip;
  j["total_kernel_time_s"] = a.total_kernel_time_s;
  j["launches"] = a.total_launches;
  j["time_by_bound_s"] = {{"compute", a.time_by_bound_s[0]}, {"memory", a.time_by_bound_s[1]}, {"unknown", a.unknown_time_s}};
  j["copy_time_s"] = p.memcpy.time_s + p.memset.time_s;  // a trace's copies and fills, besides the kernels
  j["gpu_time_s"] = a.total_kernel_time_s + p.memcpy.time_s + p.memset.time_s;
  j["kernels"] = json::array();
  for (const auto& k : a.kernels) {
    j["kernels"].push_back({{"name", k.name},
                            {"count", k.count},
                            {"time_s", k.time_s},
                            {"share", a.total_kernel_time_s > 0 ? k.time_s / a.total_kernel_time_s : 0.0},
                            {"flops", k.flops},
                            {"bytes", k.bytes},
                            {"intensity_flops_per_byte", k.bytes > 0 ? json(k.intensity_flops_per_byte) : json(nullptr)},
                            {"attained_flops_per_s", k.attained_flops_per_s},
                            {"attained_Bps", k.attained_Bps},
                            {"roof_flops_per_s", k.roof_flops_per_s},
                            {"bound", k.unknown ? std::string("unknown") : std::string(ops::name(k.bound))},
                            {"unknown_reason", !k.unknown ? json(nullptr)
                                               : k.has_flops && k.flops > 0 ? json("no byte count: intensity unknown")
                                                                            : json("no FLOP or byte count")},
                            {"unit", std::string(hw::name(k.unit))},
                            {"dtype", std::string(name(k.dtype))},
                            {"fraction_of_roof", k.unknown ? json(nullptr) : json(k.fraction_of_roof)},
                            {"t_at_roof_s", k.t_at_roof_s},
                            {"t_floor_s", k.t_floor_s},
                            {"gap_s", k.gap_s},
                            {"above_roof", k.above_roof},
                            {"has_flops", k.has_flops},
                            {"has_bytes", k.has_bytes},
                            {"estimated", k.estimated},
                            {"op", k.op}});
  }
  if (p.span_s > 0) {
    j["timeline"] = {{"span_s", p.span_s}, {"idle_s", p.idle_s}, {"idle_gaps", p.idle_gaps},
                     {"busy_fraction", (p.span_s - p.idle_s) / p.span_s}};
  }
  j["breakdown"] = {{"by_category", shares_json(a.by_category)}, {"by_cpu_op", shares_json(p.by_cpu_op)}, {"by_stream", shares_json(p.by_stream)}};
  j["warnings"] = p.warnings;
  if (!a.above_roof_warning.empty()) j["warnings"].push_back(a.above_roof_warning);
  j["above_roof_kernels"] = a.above_roof;
  return j;
}

std::string profile_text(const profile::Profile& p, const profile::ProfileAnalysis& a, const hw::ChipSpec& chip) {
  auto t = [](double s) { return format_quantity(s, Quantity::time); };
  // The GPU's time: the kernels, and a trace's copies and fills (the breakdowns count both).
  const double copies_s = p.memcpy.time_s + p.memset.time_s, copies = p.memcpy.count + p.memset.count;
  std::string out = headline(p, a) + "\n";
  out += fmt::format("{} ({}) on {}: {:.0f} launches, {} of kernel time ({} memory-bound, {} compute-bound{})", p.source, p.format,
                     chip.display_name, a.total_launches, t(a.total_kernel_time_s), t(a.time_by_bound_s[1]), t(a.time_by_bound_s[0]),
                     a.unknown_time_s > 0 ? fmt::format(", {} unknown: no byte counts, so no intensity", t(a.unknown_time_s)) : "");
  if (copies > 0) {
    out += fmt::format("; and {} in {:.0f} copies and fills: {} on the GPU", t(copies_s), copies, t(a.total_kernel_time_s + copies_s));
  }
  out += "\n\n";
  out += fmt::format("  {:<40} {:>5} {:>10} {:>6} {:>9} {:>12} {:>12} {:>7} {:>7} {:>10}\n", "kernel", "calls", "time", "share",
                     "FLOP/B", "FLOP/s", "B/s", "bound", "of roof", "gap");
  const std::vector<std::string> names = table_names(a.kernels, 40);
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    const auto& k = a.kernels[i];
    const std::string& n = names[i];
    if (k.unknown) {
      // FLOPs without bytes: the rate attained, but no intensity, bound or roof.
      const std::string rate = k.has_flops && k.flops > 0 ? format_quantity(k.attained_flops_per_s, Quantity::flop_rate) : "-";
      out += fmt::format("  {:<40} {:>5.0f} {:>10} {:>5.1f}% {:>9} {:>12} {:>12} {:>7} {:>7} {:>10}\n", n, k.count, t(k.time_s),
                         100 * k.time_s / a.total_kernel_time_s, "-", rate, "-", "unknown", "-", "-");
      continue;
    }
    out += fmt::format("  {:<40} {:>5.0f} {:>10} {:>5.1f}% {:>9.3g} {:>12} {:>12} {:>7} {:>6.1f}% {:>10}{}\n", n, k.count, t(k.time_s),
                       100 * k.time_s / a.total_kernel_time_s, k.intensity_flops_per_byte,
                       format_quantity(k.attained_flops_per_s, Quantity::flop_rate),
                       format_quantity(k.attained_Bps, Quantity::bandwidth), ops::name(k.bound), 100 * k.fraction_of_roof,
                       t(k.gap_s), k.above_roof ? "  ABOVE THE ROOF: counts or chip wrong" : "");
  }
  if (p.span_s > 0) {
    out += fmt::format("\n  timeline: {} from the first kernel to the last, {} idle in {:.0f} gaps over 1 us ({:.1f}% busy)\n",
                       t(p.span_s), t(p.idle_s), p.idle_gaps, 100 * (p.span_s - p.idle_s) / p.span_s);
  }
  out += fmt::format("\n  by category{}: ", copies > 0 ? fmt::format(" (the {} on the GPU)", t(a.total_kernel_time_s + copies_s)) : "") +
         shares_text(a.by_category, 7, false) + "\n";
  if (!p.by_cpu_op.empty()) out += "  by CPU op:   " + shares_text(p.by_cpu_op, 6, false) + "\n";
  if (p.by_stream.size() > 1) out += "  by stream:   " + shares_text(p.by_stream, 6, false) + "\n";
  for (const auto& w : p.warnings) out += "  note: " + w + "\n";
  if (!a.above_roof_warning.empty()) out += "  warning: " + a.above_roof_warning + "\n";
  return out;
}

}  // namespace ridgeline::report
