#pragma once
/// Capacity planning (docs/serving.md#capacity-planning): for a model, a workload and its
/// SLOs, every deployment of the space — chip, tensor and expert parallelism, weight and KV
/// dtypes, engine and its knobs — is given the fewest replicas that serve the load within
/// the SLOs, each count a simulation of the same requests (serving::simulate); the result is
/// the cheapest fleet, every feasible deployment with its cost, and the Pareto front of
/// output tokens/s per GPU against tokens/s per user. Deployments no count of replicas can
/// help (the plan does not fit, a latency floor above the target) are rejected before any
/// simulation, by reason.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/analysis/search.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/speculation.hpp"
#include "ridgeline/serving/seeds.hpp"
#include "ridgeline/serving/simulator.hpp"

namespace ridgeline::planning {

/// Where the Pareto front's points are taken (`--pareto`, docs/serving.md#largest-rate-cost-ranking-pareto).
enum class ParetoAt : std::uint8_t {
  offered,     ///< each deployment's fleet at the offered load
  saturation   ///< each deployment's fleet at its own saturation (vendors' plots)
};
std::string_view name(ParetoAt p) noexcept;

/// A chip the search may deploy, with its price.
struct ChipChoice {
  hw::System sys;           ///< one chip's system (chips per node from its file)
  std::string arg;          ///< how the user named it (--hw): a catalog name or a file
  double usd_per_hour = 0;  ///< per chip (0: no price)
  std::string price_source; ///< where the price comes from ("--price", the chip file's)
};

/// A draft the search may speculate with.
struct DraftChoice {
  model::Speculation spec;  ///< the draft (a model, or mtp), its acceptance rates; k: the positions the rates cover
  std::string arg;          ///< how the user named it (--draft): each deployment's serve command (empty: spec.draft's name)
};

/// The search space. `base` carries what every deployment shares: the workload, the SLOs,
/// the router, the activation dtype; its engine kind is the one used when `engines` is empty.
/// Its speculation is not read: each deployment's comes from `drafts` and `spec_tokens`.
struct FleetSpace {
  serving::ServeConfig base;
  std::vector<ChipChoice> chips;
  std::vector<serving::EngineRef> engines;        ///< empty: base.engine's kind and version
  std::vector<std::int64_t> tp;                   ///< empty: 1, 2, 4, 8 up to a node
  std::vector<std::int64_t> ep;                   ///< empty: 1 (a dense model) or 1 and every power of two with tp x ep up to a node (MoE)
  /// How each tp group splits the experts (model::ForwardConfig::experts). Empty: base.forward's,
  /// and for a MoE model at tp > 1 both (docs/serving.md#moe-layouts).
  std::vector<model::ForwardConfig::Experts> experts;
  /// How every deployment's expert parallelism moves the tokens (none: each engine preset's, the
  /// ranks' tokens gathered; --moe-a2a deepep: DeepEP's kernels, docs/serving.md#deepep).
  std::optional<model::ForwardConfig::MoeA2A> moe_a2a;
  std::vector<std::optional<DType>> weight_dtypes;  ///< empty: base.forward's (and fp8, with fp8_by_default)
  std::vector<std::optional<DType>> kv_dtypes;      ///< empty: base.forward's (and fp8, with fp8_by_default)
  /// With weight_dtypes (kv_dtypes) empty, fp8 (e4m3) besides base.forward's on every chip with
  /// an fp8 matrix rate: weights when the checkpoint is not quantised already, the KV cache
  /// when the activations are not fp8 already (`search serve`'s default; docs/serving.md#capacity-planning-search-serve).
  bool fp8_by_default = false;
  std::vector<std::int64_t> max_num_seqs;         ///< empty: the preset's and the powers of two from 16 below it
  std::vector<std::int64_t> max_batched_tokens;   ///< empty: the preset's
  std::vector<bool> chunked_prefill;              ///< prompts split over steps or not; empty: each engine's preset
  /// A decode batch padded to the next captured graph or not (TensorRT-LLM's
  /// cuda_graph_config.enable_padding), for the engines the search chooses it for
  /// (takes_graph_padding); empty: each engine's preset.
  std::vector<bool> graph_padding;
  /// Layouts to try: false, aggregated replicas; true, disaggregated prefill and decode
  /// instances split by rate matching. Empty: aggregated only.
  std::vector<bool> disaggregated;
  /// Disaggregated: the decode instances' TPs, each with each prefill TP (`tp`). Empty: every TP
  /// of the space; `decode_tp_same`: only the prefill instances' own.
  std::vector<std::int64_t> decode_tp;
  bool decode_tp_same = false;
  /// Disaggregated: the decode instances' EPs, each with each prefill EP. Empty: every EP of
  /// the space at the decode TP (`ep`, or its default: 1 for a dense model, the powers of two
  /// within a node for MoE); `decode_ep_same`: only the prefill instances' own.
  std::vector<std::int64_t> decode_ep;
  bool decode_ep_same = false;
  /// Disaggregated: besides rate matching's split of each instance count, every split (P, D)
  /// cheaper than the one it finds (for each D the fewest P meeting the SLO). Off: rate
  /// matching's only.
  bool split_search = true;
  /// Speculative decoding: the drafts to try, each with its own acceptance rates (rates
  /// differ by draft). Empty: plain decoding only.
  std::vector<DraftChoice> drafts;
  /// The draft tokens per step to try with each draft, 0 for none (plain decoding, once).
  /// Empty: each draft at its own spec.k (and no plain decoding).
  std::vector<int> spec_tokens;
  std::int64_t max_gpus = 1024;                   ///< fleets larger than this are rejected
  bool max_rate = true;                           ///< open loop: each feasible deployment's largest rate within the SLOs
  /// Headroom (`--margin`): the fraction every target is met with to spare. `base.slo` holds
  /// the targets the simulations check, those asked (`slo_asked`) times 1 − margin.
  double margin = 0;
  /// Headroom from the validation table (`--margin band`, docs/serving.md#headroom-and-the-distance-to-the-slo):
  /// each deployment's targets tightened by its own class's median error where the class runs
  /// optimistic, target × (1 + e) for a median e < 0 (TTFT's for ttft, TPOT's for tpot and
  /// itl, E2E's for e2e; io::quoted_band: a metric the class has fewer than three rows of, its
  /// pool's). `base.slo`
  /// then holds the targets as asked.
  bool margin_band = false;
  serving::Slo slo_asked;
  int top = 10;                                   ///< feasible deployments kept, cheapest first
  /// Every run of a deployment with this many seeds, the fleet sized on the worst (or the
  /// quantile's) run (docs/serving.md#seeds).
  serving::SeedsConfig seeds;
  /// The Pareto front at the offered load, or each feasible deployment's fleet at its own
  /// saturation: open loop, the largest rate it sustains in steady state (the SLO not applied,
  /// Evaluator::max_rate's search); closed loop, as many clients as its sequence limits hold.
  ParetoAt pareto = ParetoAt::offered;
};

/// Why a deployment was rejected.
enum class Reject : std::uint8_t {
  layout,      ///< tp / ep do not divide the model's heads, experts or widths, or the engine would not start so
  dtype,       ///< the chip has no rate for a dtype the plan computes in
  memory,      ///< no room for a KV cache block after weights and activations
  too_long,    ///< some request cannot fit its cache or the model's positions
  ttft_floor,  ///< even alone on the replica, too many prompts prefill beyond the TTFT target
  tpot_floor,  ///< a decode step of one sequence alone is beyond the TPOT target
  fleet_size,  ///< more than max_gpus would be needed
  count
};
std::string_view name(Reject r) noexcept;

/// A deployment's fleet at its saturation (FleetSpace::pareto): the load, and how it serves it.
struct Saturation {
  double qps = 0;                  ///< open loop: the largest rate sustained, to 1/32 (0: closed loop)
  std::int64_t concurrency = 0;    ///< closed loop: clients, the fleet's sequence limits (0: open loop)
  double output_tokens_per_s_per_gpu = 0;
  double output_tokens_per_s_per_user = 0;  ///< 1 / mean TPOT at that load
  serving::Summary ttft, tpot;
};

/// One deployment: what differs between them, and how its fleet serves the load.
struct Deployment {
  std::size_t chip = 0;  ///< index in FleetSpace::chips
  serving::EngineRef engine = serving::EngineKind::vllm;
  std::int64_t tp = 1, ep = 1, replicas = 0;
  model::ForwardConfig::Experts experts = model::ForwardConfig::Experts::tensor;  ///< how each tp group splits the experts
  /// Disaggregated: prefill and decode instances (replicas 1); 0 and 0: aggregated replicas.
  std::int64_t prefill = 0, decode = 0;
  std::int64_t decode_tp = 0;  ///< disaggregated: the decode instances' TP (the prefill instances': tp)
  std::int64_t decode_ep = 0;  ///< disaggregated: the decode instances' EP (the prefill instances': ep)
  int spec_tokens = 0;         ///< speculative decoding: draft tokens per step (0: none)
  std::size_t draft = 0;       ///< speculative decoding: index in FleetSpace::drafts
  std::optional<DType> weight_dtype, kv_dtype;
  std::int64_t max_num_seqs = 0, max_batched_tokens = 0;
  std::optional<bool> chunked_prefill;  ///< the search's choice (FleetSpace::chunked_prefill); none: the engine's preset
  std::optional<bool> graph_padding;    ///< the search's choice (FleetSpace::graph_padding); none: the engine's preset
  double gpus = 0, usd_per_hour = 0;
  serving::Summary ttft, tpot, e2e;
  double output_tokens_per_s = 0, input_tokens_per_s = 0, output_tokens_per_s_per_gpu = 0;
  double output_tokens_per_s_per_user = 0;  ///< 1 / mean TPOT: the speed a user reads at
  double usd_per_million_output_tokens = 0, usd_per_million_tokens = 0;  ///< the fleet's hour over its tokens (0: no price)
  double slo_attainment = 0, kv_utilisation_mean = 0, mean_decode_batch = 0;
  /// Distance to the SLO as asked (before any margin): the least 1 − value / target over its
  /// targets (0.2: every target met with 20% to spare), and the target that binds; 1, "": none.
  double slo_slack = 1;
  std::string slo_binding;
  /// The same distance for each target as asked, by metric (serving::SloMetric's order; 1: no
  /// target on it): 1 − its statistic / its limit.
  std::array<double, serving::kSloMetrics> target_slack{1, 1, 1, 1};
  double max_qps = 0;         ///< open loop: the largest rate the fleet serves within the SLOs, to 1/32 (0: not searched)
  std::optional<Saturation> saturation;  ///< with FleetSpace::pareto saturation (none: no sustained run found)
  double floor_ttft_s = 0, floor_tpot_s = 0;  ///< the latency floors checked before simulating
  std::int64_t simulations = 0;  ///< runs this deployment took
  std::uint64_t order = 0;       ///< enumeration order: breaks ties
};

/// A deployment that was rejected before any fleet met the SLOs, closest to meeting them.
struct Closest {
  Deployment deployment;
  Reject reason = Reject::count;
  std::string binding;  ///< which target binds: "ttft", "tpot" or "" (memory, fleet size)
  double value_s = 0, target_s = 0;  ///< the floor (or the fleet's percentile) and the target
};

/// The cheapest feasible deployment on each chip of the space, in its order (a chip with none
/// is left out): `feasible` is ranked cheapest first.
std::vector<const Deployment*> best_per_chip(const FleetSpace& space, const std::vector<Deployment>& feasible);

struct FleetSearchResult {
  std::optional<Deployment> best;   ///< cheapest (or fewest GPUs) meeting the SLOs
  std::vector<Deployment> feasible; ///< every one, cheapest first (reports list FleetSpace::top)
  /// Output tokens/s per GPU against per user, by per-user speed ascending; at the offered load
  /// or at each deployment's saturation (FleetSpace::pareto; deployments without one left out).
  std::vector<Deployment> pareto;
  std::optional<Closest> closest;   ///< when nothing is feasible
  std::uint64_t evaluated = 0, feasible_count = 0;
  std::array<std::uint64_t, static_cast<int>(Reject::count)> rejected{};
  std::int64_t simulations = 0;
  double simulated_requests = 0;
  bool priced = false;  ///< every chip has a price: ranked by cost, else by GPUs
  /// The engine and chip pairs not tried because the engine does not run there
  /// (serving::runs_on): "trtllm on mi300x".
  std::vector<std::string> left_out;
  double elapsed_s = 0;
  bool interrupted = false;
};

/// Whether the search chooses `e`'s graph padding (FleetSpace::graph_padding): TensorRT-LLM's
/// PyTorch backend, whose decode steps replay one captured graph, padded or at its exact sizes
/// (its default). vLLM always pads (no switch); SGLang pads by default and its switch
/// (--disable-cuda-graph-padding) only takes graphs away; the TensorRT engine flow captures none.
bool takes_graph_padding(const serving::EngineConfig& e) noexcept;

/// The configuration `serve` runs for a deployment: `base` with its plan, engine and replicas,
/// and its targets (band_slo with FleetSpace::margin_band).
serving::ServeConfig serve_config(const model::ModelConfig& m, const FleetSpace& space, const Deployment& d);
/// The largest CUDA graph `serve` must be told (--graph-max-batch) to run `d` as it was
/// searched: the preset's, where the engine would otherwise size it from d's sequence limit
/// (vLLM V1 0.11+: serving::capture_from_seqs). 0: serve's own default is the searched one (vLLM
/// V0 always: no flag sizes its graphs, each deployment is searched with the ones it captures).
std::int64_t pinned_graph_max_batch(const FleetSpace& space, const Deployment& d);

/// The SLO as asked: `slo_asked`, or `base.slo` where the caller set that alone (before any
/// headroom).
const serving::Slo& asked_slo(const FleetSpace& space) noexcept;

/// The deployment's class in the validation table (io::answer_class of its engine, its
/// weights' dtype and the model on its chip).
std::string deployment_class(const model::ModelConfig& m, const FleetSpace& space, const Deployment& d);

/// The targets as asked (asked_slo), each tightened by the median error of the
/// deployment's class for its metric where that error is negative: target × (1 + e). A
/// prediction p within it is within the target asked once divided by 1 + e, the class's
/// typical ratio of predicted to measured. A metric with fewer than three rows in the class
/// takes its pooled class's error, as the answer quotes it (io::quoted_band).
serving::Slo band_slo(const model::ModelConfig& m, const FleetSpace& space, const Deployment& d);

/// The median error band_slo applies to a metric of the class (0 where it leaves the target),
/// and the pooled class it is borrowed from (empty: the class's own rows; io::quoted_band).
struct BandLean {
  double error = 0;
  std::string from;
};
BandLean band_lean(std::string_view cls, serving::SloMetric metric);

/// Throws InputError naming the flag for a space no search can run (no chips, a price on
/// some chips only, limits out of range, a workload that cannot make requests).
void validate(const model::ModelConfig& m, const FleetSpace& space);

/// Runs the search; `control` gives threads, a stop flag and progress (deployments done).
FleetSearchResult search_fleet(const model::ModelConfig& m, const FleetSpace& space, const analysis::SearchControl& control = {});

}  // namespace ridgeline::planning
