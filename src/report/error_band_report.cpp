// An answer's error band in reports (docs/serving.md#errors-by-class).
#include "ridgeline/report/error_band.hpp"

#include <fmt/format.h>

#include "ridgeline/io/error_bands.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::report {

std::string answer_class(std::string_view engine, const model::ModelConfig& m, const model::ForwardConfig& f,
                         const hw::ChipSpec& chip) {
  // The checkpoint's dtype of the weights doing most of the work: a MoE checkpoint with its
  // experts alone quantised (gpt-oss's mxfp4) runs most of its FLOPs there.
  const model::GemmDtypes d = model::gemm_dtypes(m, f, chip);
  const bool experts = m.is_moe() && m.quantized && m.quant.experts_only;
  const DType w = experts ? d.expert_weight : d.dense_weight;
  const DType gemm = experts ? d.expert : d.dense;
  // 4-bit float weights are their own class whatever they are multiplied in (the table's
  // rows are NVFP4 checkpoints, priced today as bf16 GEMMs).
  return io::error_class(engine, w == DType::fp4 ? w : gemm, m.is_moe());
}

nlohmann::json error_band_json(std::string_view cls) {
  nlohmann::json j = {{"class", cls}, {"source", io::kErrorBandSource}, {"metrics", nlohmann::json::object()}};
  const auto band = io::error_band(cls);
  if (!band) {
    j["note"] = "the validation table has no published measurement of this class";
    return j;
  }
  for (const auto& [metric, v] : band->metrics) {
    j["metrics"][metric] = {{"n", v.n}, {"median", v.median}, {"median_abs", v.median_abs}, {"p90_abs", v.p90_abs},
                            {"low", v.low}, {"high", v.high}};
  }
  return j;
}

std::string error_band_text(std::string_view cls) {
  const auto band = io::error_band(cls);
  if (!band || band->metrics.empty()) {
    return fmt::format("error band ({}): no published measurement of this class in the validation table ({})\n", cls,
                       io::kErrorBandSource);
  }
  std::string out = fmt::format("error band ({}; against published runs, {}):", cls, io::kErrorBandSource);
  static constexpr std::pair<const char*, const char*> kOrder[] = {
      {"ttft", "TTFT"}, {"tpot", "TPOT"}, {"e2e", "E2E"}, {"output_tps", "output tok/s"}};
  bool first = true;
  for (const auto& [key, label] : kOrder) {
    const auto it = band->metrics.find(key);
    if (it == band->metrics.end()) continue;
    const io::MetricBand& v = it->second;
    out += fmt::format("{} {} {:+.0f}% median, |error| {:.0f}% median, {:.0f}% p90 ({} runs)", first ? "" : ";", label, 100 * v.median,
                       100 * v.median_abs, 100 * v.p90_abs, v.n);
    first = false;
  }
  return out + "\n";
}

}  // namespace ridgeline::report
