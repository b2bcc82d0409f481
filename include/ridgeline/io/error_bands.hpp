#pragma once
/// Error bands (docs/serving.md#errors-by-class): what the project's validation table measured
/// for a class of answers (engine, the GEMMs' dtype, dense or MoE) against published serving
/// measurements, read from the embedded data/validation/serving_error_bands.json that
/// scripts/serving_validation.py writes. Every `infer`, `serve` and `search serve` answer
/// quotes its class's band.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/transformer.hpp"

namespace ridgeline::io {

/// Errors of one metric over a class's rows: predicted / measured − 1.
struct MetricBand {
  int n = 0;                ///< rows
  double median = 0;        ///< the median signed error (its sign: the way the class leans)
  double median_abs = 0;    ///< the median |error|
  double p90_abs = 0;       ///< the 90th percentile |error|
  double low = 0, high = 0; ///< the most negative and the most positive error
  /// The class these figures are from: empty for the band's own class, else the pooled class
  /// a class without rows enough of the metric borrows them from (quoted_band).
  std::string from;
  /// A borrowed metric's own rows, too few to quote (kMinOwnRows): how many, their median and
  /// extremes (own_n 0: none).
  int own_n = 0;
  double own_median = 0, own_low = 0, own_high = 0;
};

/// Rows a class needs of a metric to quote its own band: a median needs a middle row (two rows'
/// "median" is their mean, their p90 the worse). With fewer it quotes its pool's, its own beside.
inline constexpr int kMinOwnRows = 3;

struct ErrorBand {
  std::string cls;  ///< "vllm, 16-bit, dense"
  std::map<std::string, MetricBand> metrics;  ///< ttft, tpot, e2e, output_tps (those measured)
  bool own_rows = false;  ///< the table has rows of the class itself
};

/// The class of an answer: the engine ("vllm", "sglang", "trtllm", "static"), the dtype the
/// GEMMs run in (fp8, fp4, else "16-bit") and whether the model is a mixture of experts.
std::string error_class(std::string_view engine, DType gemm_dtype, bool moe);

/// The class of `m` served by `engine` ("vllm", "sglang", "trtllm", "static") as `f` runs it
/// on `chip`: the dtype most of its GEMM work runs in (its experts' for a MoE checkpoint
/// whose experts alone are quantised); on a ROCm GPU (hw::is_rocm_gpu) the engine's name
/// reads "<engine> on ROCm", the engines' ROCm builds a class of their own.
std::string answer_class(std::string_view engine, const model::ModelConfig& m, const model::ForwardConfig& f,
                         const hw::ChipSpec& chip);

/// The band of `cls` from the embedded table, or nullopt when the table has no row of it.
std::optional<ErrorBand> error_band(std::string_view cls);

/// The metrics a band quotes, in the order answers print them.
inline constexpr const char* kBandMetrics[] = {"ttft", "tpot", "e2e", "output_tps"};

/// The band an answer of `cls` quotes (docs/serving.md#borrowed-bands): each metric from the
/// class's own rows where the table has kMinOwnRows of them, else from the first pooled class
/// that has that many (the own rows, if any, kept beside: MetricBand::own_n), else the class's
/// few own rows, else the first pool's few:
/// the modelled serving engines' rows of the same dtype and kind ("any engine, fp8, MoE"),
/// then of the kind over every dtype ("any engine, any dtype, MoE"), then all of them ("any
/// engine, any dtype, any kind"); the static engine's (`infer`) pool is its own rows by kind
/// ("static, any dtype, dense"), in the order the file's `pool_order` gives (written by
/// scripts/serving_validation.py, the one place it is kept). A class on ROCm ("sglang on ROCm,
/// fp8, MoE") takes the ROCm rows' pools of its dtype and kind, then of its kind ("any engine
/// on ROCm, ..."), before the other chips'. The metric's `from` names the pool.
ErrorBand quoted_band(std::string_view cls);

/// Where the bands come from, for reports.
inline constexpr const char* kErrorBandSource = "docs/serving.md#against-published-measurements";

}  // namespace ridgeline::io
