#include <fmt/format.h>

#include <cmath>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/compare.hpp"
#include "ridgeline/report/text.hpp"

namespace ridgeline::report {

namespace {

std::string shown(const nlohmann::json& v, Shown how) {
  if (how == Shown::flag) return v.is_boolean() ? (v.get<bool>() ? "yes" : "no") : "-";
  if (how == Shown::text) return v.is_string() ? v.get<std::string>() : v.is_number() ? v.dump() : "-";
  if (!v.is_number()) return "-";
  const double x = v.get<double>();
  switch (how) {
    case Shown::time: return format_quantity(x, Quantity::time);
    case Shown::rate: {
      if (x < 1e4) return fmt::format("{:.4g}", x);
      return format_quantity(x, Quantity::count);  // "72.98 k"
    }
    case Shown::usd: return "$" + format_usd(x);
    case Shown::fraction: return fmt::format("{:.1f}%", 100 * x);
    case Shown::bytes: return format_quantity(x, Quantity::bytes);
    default: return x == std::floor(x) && std::fabs(x) < 1e15 ? fmt::format("{:.0f}", x) : fmt::format("{:.4g}", x);
  }
}

}  // namespace

std::string side_by_side_text(const std::vector<nlohmann::json>& docs, std::span<const Headline> rows) {
  std::size_t label = 0;
  for (const Headline& h : rows) label = std::max(label, std::string_view(h.label).size());
  std::vector<std::vector<std::string>> cells(rows.size());
  std::vector<std::string> heads;
  std::size_t width = 12;
  for (const nlohmann::json& d : docs) {
    heads.push_back(d.contains("hw") && d["hw"].is_string() ? d["hw"].get<std::string>() : "?");
    width = std::max(width, heads.back().size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const nlohmann::json::json_pointer p(rows[r].pointer);
      cells[r].push_back(d.contains(p) ? shown(d[p], rows[r].shown) : "-");
      width = std::max(width, cells[r].back().size());
    }
  }
  std::string out;
  if (!docs.empty() && docs.front().contains("model") && docs.front()["model"].is_string()) {
    out += fmt::format("{} on each chip (the command with --hw CHIP, one column each):\n\n", docs.front()["model"].get<std::string>());
  }
  out += fmt::format("{:<{}}", "", label);
  for (const std::string& h : heads) out += fmt::format("  {:>{}}", h, width);
  out += "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out += fmt::format("{:<{}}", rows[r].label, label);
    for (const std::string& c : cells[r]) out += fmt::format("  {:>{}}", c, width);
    out += "\n";
  }
  return out;
}

}  // namespace ridgeline::report
