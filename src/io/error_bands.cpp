// Error bands by class, from the embedded validation table (docs/serving.md#errors-by-class).
#include "ridgeline/io/error_bands.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ridgeline/io/embedded.hpp"

namespace ridgeline::io {

namespace {

constexpr std::string_view kPath = "validation/serving_error_bands.json";

// The parsed table, once: a missing or malformed file (a build without it) has no bands.
const nlohmann::json& table() {
  static const nlohmann::json t = [] {
    for (const EmbeddedFile& f : embedded_files()) {
      if (f.path != kPath) continue;
      nlohmann::json j = nlohmann::json::parse(f.text, nullptr, false);
      if (!j.is_discarded() && j.contains("classes") && j["classes"].is_object()) return j["classes"];
    }
    return nlohmann::json::object();
  }();
  return t;
}

double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

}  // namespace

std::string error_class(std::string_view engine, DType gemm_dtype, bool moe) {
  const std::string_view dtype = is_fp8(gemm_dtype) ? "fp8" : gemm_dtype == DType::fp4 ? "fp4" : "16-bit";
  return fmt::format("{}, {}, {}", engine, dtype, moe ? "MoE" : "dense");
}

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
  return error_class(engine, w == DType::fp4 ? w : gemm, m.is_moe());
}

std::optional<ErrorBand> error_band(std::string_view cls) {
  const nlohmann::json& t = table();
  const auto it = t.find(std::string(cls));
  if (it == t.end() || !it->is_object()) return std::nullopt;
  ErrorBand b;
  b.cls = std::string(cls);
  for (const auto& [metric, v] : it->items()) {
    if (!v.is_object()) continue;
    MetricBand m;
    m.n = static_cast<int>(number(v, "n"));
    m.median = number(v, "median");
    m.median_abs = number(v, "median_abs");
    m.p90_abs = number(v, "p90_abs");
    m.low = number(v, "low");
    m.high = number(v, "high");
    b.metrics[metric] = m;
  }
  return b;
}

}  // namespace ridgeline::io
