#pragma once
/// Plan search (docs/search.md): every valid training plan (TP, PP, CP and its algorithm,
/// EP, VPP, micro-batch, recomputation, ZeRO, sequence parallelism) or serving plan
/// (TP, EP, batch, weight and KV dtypes) evaluated by the same code as `train` / `infer`,
/// the top K by an objective and the Pareto front of throughput against memory (training)
/// or TPOT (serving).
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/analysis/training.hpp"

namespace ridgeline::analysis {

enum class TrainObjective : std::uint8_t { step_time, mfu, tokens_per_s };
enum class InferObjective : std::uint8_t { tokens_per_s_per_chip, latency };

/// The training search space. `base` carries what every plan shares (gpus, gpus per node,
/// seq, global batch, dtype, attention, dropout, margin, network bandwidth, compression);
/// a set optional fixes that dimension.
struct TrainSearchSpace {
  TrainConfig base;
  std::optional<std::int64_t> tp, pp, cp, ep, vpp, micro_batch;
  std::optional<int> zero;
  std::optional<Recompute> recompute;
  std::optional<bool> sequence_parallel, cp_ring;
  std::int64_t tp_max = 0;     ///< 0: the GPUs of one node (or any with tp_across_nodes)
  std::int64_t pp_max = 0, cp_max = 0, vpp_max = 0, micro_batch_max = 0;  ///< 0: no limit
  bool tp_across_nodes = false;
  double memory_headroom = 0;  ///< keep this fraction of the GPU's memory free
  TrainObjective objective = TrainObjective::step_time;
  int top = 5;
};

/// One training plan: its settings (what differs between plans) and the numbers the search ranks by.
struct TrainPlan {
  std::int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vpp = 1, micro_batch = 1;
  int zero = 0;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false, cp_ring = false;
  double step_time_s = 0, tokens_per_s = 0, mfu = 0, memory_bytes = 0;
  double hidden_comm_s = 0;  ///< communication the plan hides behind compute per step (TrainStep::hidden_comm_s)
  std::uint64_t order = 0;  ///< enumeration order: breaks ties, so results do not depend on threads
};

/// `base` with the plan's settings: the configuration `train` evaluates to the same numbers.
TrainConfig train_config(const TrainConfig& base, const TrainPlan& p) noexcept;

struct SearchStats {
  std::uint64_t evaluated = 0;  ///< plans considered: feasible + rejected
  std::uint64_t feasible = 0;
  std::array<std::uint64_t, kRejectCount> rejected{};
  std::uint64_t timed = 0;      ///< plans whose times were computed (passed every rule before memory and latency)
  std::uint64_t shapes = 0;     ///< distinct per-graph evaluations (training) or graphs built
  double elapsed_s = 0;
  bool interrupted = false;
  double plans_per_s() const noexcept { return elapsed_s > 0 ? static_cast<double>(evaluated) / elapsed_s : 0; }
};

struct TrainSearchResult {
  SearchStats stats;
  std::vector<TrainPlan> best;    ///< top K by the objective, best first
  std::vector<TrainPlan> pareto;  ///< tokens/s against memory per GPU, by memory ascending
};

/// Progress callback: plans evaluated so far and the best objective value so far (called
/// from one thread, at most every `progress_interval_s`).
struct SearchControl {
  const std::atomic<bool>* stop = nullptr;  ///< set (e.g. by SIGINT) to stop early
  std::function<void(std::uint64_t evaluated, std::uint64_t total_estimate, double best)> progress;
  double progress_interval_s = 0.2;
  int threads = 0;                          ///< 0: all cores
};

/// Throws InputError for an impossible request (naming the flag).
void validate(const model::ModelConfig& m, const hw::System& sys, const TrainSearchSpace& space);
TrainSearchResult search_train(const model::ModelConfig& m, const hw::System& sys, const TrainSearchSpace& space,
                               const SearchControl& control = {});

/// The serving search space: chips up to `chips_max` as tp x ep, every batch from 1 to the
/// largest that fits (or `batch_max`), the weight and KV dtypes listed.
/// Prices a group's serving plans (tp, ep and dtypes fixed) at any batch in place of the
/// static batches of ServingCurve: serving::ContinuousBatching runs them as an engine serves B
/// users. One per thread, prepared once per group.
class BatchModel {
 public:
  virtual ~BatchModel() = default;
  /// Why the group cannot run at all (Reject::memory: no room for a cache block;
  /// Reject::too_long: its prompts exceed the token budget of an engine that does not chunk
  /// them), Reject::count when it can.
  virtual Reject prepare(const model::ModelConfig& m, const hw::System& sys, const InferenceConfig& cfg) = 0;
  virtual ServingPoint at(double batch) const = 0;
  virtual std::int64_t max_batch() const = 0;  ///< the most sequences it serves (cache, sequence limit)
};

struct InferSearchSpace {
  InferenceConfig base;  ///< prompt, gen, activation dtype, attention, algo, CUDA graphs
  std::int64_t chips_max = 8;
  std::optional<std::int64_t> tp, ep;
  std::int64_t batch_max = 0;  ///< 0: up to the largest that fits
  std::vector<DType> weight_dtypes;  ///< empty: the checkpoint's dtype
  std::vector<DType> kv_dtypes;      ///< empty: the activation dtype
  std::optional<double> ttft_max_s, tpot_max_s;
  InferObjective objective = InferObjective::tokens_per_s_per_chip;
  int top = 5;
  /// Empty: static batches (infer's numbers). Else a model per thread: plans priced by it
  /// (batch = users in flight), its numbers returned as they are.
  std::function<std::unique_ptr<BatchModel>()> batch_model;
  std::string engine = "static";  ///< what prices the plans, for reports: static, or the engine of batch_model
};

struct InferPlan {
  std::int64_t chips = 1, tp = 1, ep = 1, batch = 1;
  std::optional<DType> weight_dtype, kv_dtype;
  double ttft_s = 0, tpot_s = 0, e2e_s = 0, output_tokens_per_s = 0, tokens_per_s_per_chip = 0, memory_bytes = 0;
  std::uint64_t order = 0;
};

InferenceConfig infer_config(const InferenceConfig& base, const InferPlan& p) noexcept;

struct InferSearchResult {
  SearchStats stats;
  std::vector<InferPlan> best;
  std::vector<InferPlan> pareto;  ///< output tokens/s per chip against TPOT, by TPOT ascending
};

void validate(const model::ModelConfig& m, const hw::System& sys, const InferSearchSpace& space);
InferSearchResult search_infer(const model::ModelConfig& m, const hw::System& sys, const InferSearchSpace& space,
                               const SearchControl& control = {});

}  // namespace ridgeline::analysis
