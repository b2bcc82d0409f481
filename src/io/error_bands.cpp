// Error bands by class, from the embedded validation table (docs/serving.md#errors-by-class).
#include "ridgeline/io/error_bands.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <vector>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/io/embedded.hpp"

namespace ridgeline::io {

namespace {

constexpr std::string_view kPath = "validation/serving_error_bands.json";
// What an engine's name in a class says of its ROCm build ("sglang on ROCm"), as answer_class
// writes it and quoted_band reads it (scripts/serving_validation.py's ROCM).
constexpr std::string_view kRocm = " on ROCm";

// The parsed file's object under `key` ("classes", "pooled"), once: a missing or malformed
// file (a build without it) has no bands.
nlohmann::json section(const char* key) {
  for (const EmbeddedFile& f : embedded_files()) {
    if (f.path != kPath) continue;
    nlohmann::json j = nlohmann::json::parse(f.text, nullptr, false);
    if (!j.is_discarded() && j.contains(key) && j[key].is_object()) return j[key];
  }
  return nlohmann::json::object();
}
const nlohmann::json& table() {
  static const nlohmann::json t = section("classes");
  return t;
}
const nlohmann::json& pooled() {
  static const nlohmann::json t = section("pooled");
  return t;
}
// Each engine family's pools, first to last ("serving", "static", and on ROCm "serving on ROCm",
// "static on ROCm"), as scripts/serving_validation.py wrote them: names with {dtype} and {kind}
// for the class's own.
const nlohmann::json& pool_order() {
  static const nlohmann::json t = section("pool_order");
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
  const DType cls_dtype = w == DType::fp4 ? w : gemm;
  if (hw::is_rocm_gpu(chip)) return error_class(fmt::format("{}{}", engine, kRocm), cls_dtype, m.is_moe());
  return error_class(engine, cls_dtype, m.is_moe());
}

namespace {

MetricBand metric_band(const nlohmann::json& v) {
  MetricBand m;
  m.n = static_cast<int>(number(v, "n"));
  m.median = number(v, "median");
  m.median_abs = number(v, "median_abs");
  m.p90_abs = number(v, "p90_abs");
  m.low = number(v, "low");
  m.high = number(v, "high");
  return m;
}

// The row of `cls` in table `t`, or nullptr.
const nlohmann::json* row(const nlohmann::json& t, const std::string& cls) {
  const auto it = t.find(cls);
  return it != t.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace

std::optional<ErrorBand> error_band(std::string_view cls) {
  const nlohmann::json* r = row(table(), std::string(cls));
  if (r == nullptr) return std::nullopt;
  ErrorBand b;
  b.cls = std::string(cls);
  b.own_rows = true;
  for (const auto& [metric, v] : r->items()) {
    if (v.is_object()) b.metrics[metric] = metric_band(v);
  }
  return b;
}

ErrorBand quoted_band(std::string_view cls) {
  ErrorBand b = error_band(cls).value_or(ErrorBand{});
  b.cls = std::string(cls);
  // A class is "engine, dtype, kind". Its pools in the order the file gives its family
  // (pool_order): a serving engine's keep the dtype and kind, then the kind, then neither; the
  // static engine's (one batch: infer) is its own, by kind. An engine on ROCm ("sglang on
  // ROCm") has families of their own, its platform's pools before the others'.
  const std::size_t kind_at = cls.rfind(", ");
  const std::size_t dtype_at = kind_at == std::string_view::npos || kind_at == 0 ? std::string_view::npos : cls.rfind(", ", kind_at - 1);
  if (dtype_at == std::string_view::npos) return b;
  const std::string_view engine = cls.substr(0, dtype_at), kind = cls.substr(kind_at + 2);
  const std::string_view dtype = cls.substr(dtype_at + 2, kind_at - dtype_at - 2);
  std::vector<std::string> pools;
  const bool rocm = engine.size() > kRocm.size() && engine.substr(engine.size() - kRocm.size()) == kRocm;
  const std::string_view family_engine = rocm ? engine.substr(0, engine.size() - kRocm.size()) : engine;
  const std::string family = std::string(family_engine == "static" ? "static" : "serving") + (rocm ? std::string(kRocm) : "");
  const auto order = pool_order().find(family);
  if (order != pool_order().end() && order->is_array()) {
    for (const nlohmann::json& name : *order) {
      if (!name.is_string()) continue;
      try {
        pools.push_back(fmt::format(fmt::runtime(name.get_ref<const std::string&>()), fmt::arg("dtype", dtype), fmt::arg("kind", kind)));
      } catch (const fmt::format_error&) {
        // (a name the script did not write: no pool)
      }
    }
  }
  // Of the class's own rows of a metric and its pools', in that order, the first with
  // kMinOwnRows rows, else the first with any (a few rows beat none).
  for (const char* metric : kBandMetrics) {
    const auto own = b.metrics.find(metric);
    const bool has_own = own != b.metrics.end();
    if (has_own && own->second.n >= kMinOwnRows) continue;
    std::optional<MetricBand> enough, few;
    for (const std::string& pool : pools) {
      const nlohmann::json* r = row(pooled(), pool);
      if (r == nullptr || !r->contains(metric) || !(*r)[metric].is_object()) continue;
      MetricBand m = metric_band((*r)[metric]);
      m.from = pool;
      if (m.n >= kMinOwnRows) {
        enough = m;
        break;
      }
      if (!few) few = m;
    }
    if (enough && has_own) {
      enough->own_n = own->second.n;
      enough->own_median = own->second.median;
      enough->own_low = own->second.low;
      enough->own_high = own->second.high;
    }
    if (enough) b.metrics[metric] = *enough;
    else if (few && !has_own) b.metrics[metric] = *few;
  }
  return b;
}

}  // namespace ridgeline::io
