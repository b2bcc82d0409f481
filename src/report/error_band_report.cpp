// An answer's error band in reports (docs/serving.md#errors-by-class).
#include "ridgeline/report/error_band.hpp"

#include <fmt/format.h>

#include "ridgeline/io/error_bands.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::report {

nlohmann::json error_band_json(std::string_view cls) {
  nlohmann::json j = {{"class", cls}, {"source", io::kErrorBandSource}, {"metrics", nlohmann::json::object()}};
  const io::ErrorBand band = io::quoted_band(cls);
  j["own_rows"] = band.own_rows;
  if (!band.own_rows) {
    j["note"] = band.metrics.empty() ? "the validation table has no published measurement of this class"
                                     : "the validation table has no published measurement of this class: each metric is a pooled "
                                       "class's, named by its 'from' (docs/serving.md#borrowed-bands)";
  }
  for (const auto& [metric, v] : band.metrics) {
    nlohmann::json& m = j["metrics"][metric];
    m = {{"n", v.n}, {"median", v.median}, {"median_abs", v.median_abs}, {"p90_abs", v.p90_abs}, {"low", v.low}, {"high", v.high}};
    if (!v.from.empty()) m["from"] = v.from;
    // A borrowed metric's own rows, too few to quote (io::kMinOwnRows).
    if (v.own_n > 0) m["own"] = {{"n", v.own_n}, {"median", v.own_median}, {"low", v.own_low}, {"high", v.own_high}};
  }
  return j;
}

std::string error_band_text(std::string_view cls) {
  const io::ErrorBand band = io::quoted_band(cls);
  if (band.metrics.empty()) {
    return fmt::format("error band ({}): no published measurement of this class in the validation table ({})\n", cls,
                       io::kErrorBandSource);
  }
  std::string out = band.own_rows ? fmt::format("error band ({}; against published runs, {}):", cls, io::kErrorBandSource)
                                  : fmt::format("error band ({}; no published measurement of this class, its pooled classes' "
                                                "instead, docs/serving.md#borrowed-bands):",
                                                cls);
  bool first = true;
  for (const char* key : io::kBandMetrics) {
    const std::string_view k = key;
    const char* label = k == "ttft" ? "TTFT" : k == "tpot" ? "TPOT" : k == "e2e" ? "E2E" : "output tok/s";
    const auto it = band.metrics.find(key);
    if (it == band.metrics.end()) continue;
    const io::MetricBand& v = it->second;
    const std::string own = v.own_n > 0 ? fmt::format("; its own {}, too few: {:+.0f}% median, {:+.0f}% to {:+.0f}%", v.own_n,
                                                      100 * v.own_median, 100 * v.own_low, 100 * v.own_high)
                                        : "";
    out += fmt::format("{} {} {:+.0f}% median, |error| {:.0f}% median, {:.0f}% p90 ({} runs{}{}{})", first ? "" : ";", label, 100 * v.median,
                       100 * v.median_abs, 100 * v.p90_abs, v.n, v.from.empty() ? "" : " of ", v.from, own);
    first = false;
  }
  return out + "\n";
}

}  // namespace ridgeline::report
