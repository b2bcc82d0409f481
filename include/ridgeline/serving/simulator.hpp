#pragma once
/// The request-level serving simulator (docs/serving.md#simulator): requests arrive, a router
/// sends each to one of R identical engine replicas, each replica's scheduler builds steps of
/// decode tokens and prefill chunks under its token budget, sequence limit and paged KV
/// cache, and the step model prices every step. Event-driven (step ends and arrivals only),
/// integer picoseconds of simulated time, memory proportional to the requests in the system;
/// finished requests are streamed to a sink and folded into distributions.
#include <array>
#include <cstdint>
#include <limits>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/model/speculation.hpp"
#include "ridgeline/model/transformer.hpp"
#include "ridgeline/serving/engine.hpp"
#include "ridgeline/serving/kv_connector.hpp"
#include "ridgeline/serving/kv_layout.hpp"
#include "ridgeline/serving/metrics.hpp"
#include "ridgeline/serving/workload.hpp"

namespace ridgeline::serving {

/// How the router picks a replica for a new request.
enum class Router : std::uint8_t {
  round_robin,   ///< in turn
  least_loaded,  ///< fewest tokens still to compute (prompts to prefill and outputs to generate)
  prefix         ///< a prefix group always to the same replica (its cache), others least-loaded
};
std::string_view name(Router r) noexcept;
std::optional<Router> parse_router(std::string_view s) noexcept;

/// Disaggregated prefill and decode (docs/serving.md#disaggregated-prefill-and-decode):
/// `prefill` instances prefill the prompts and hand each request's KV cache to one of
/// `decode` instances over the link between them; the decode instance computes the last
/// prompt token again (vLLM's P/D connectors) and emits every output token. 0 and 0: aggregated.
struct Disagg {
  std::int64_t prefill = 0, decode = 0;
  /// The transfer overlaps the prefill layer by layer (Mooncake, Dynamo's layer-wise mode):
  /// what is left when the prefill ends; off: all of it after the prefill (vLLM's NIXL connector).
  bool layerwise = false;
  double link_Bps = 0;        ///< per chip; 0: the node link when every instance fits one domain, else the network link
  double link_latency_s = -1; ///< per transfer; < 0: the link's
  /// The connector posting one descriptor (a block of one K or V region), on the decode side
  /// before the link moves it: NIXL's, kNixlDescriptorS (docs/serving.md#kv-connector).
  double descriptor_s = kNixlDescriptorS;
  /// The decode instances' own plan (DistServe, Dynamo: each phase its parallelism and
  /// limits): their tensor and expert parallelism (0: the prefill instances', cfg.forward's)
  /// and their engine (unset: cfg.engine; set, the preset at their TP with their limits).
  /// The prefill instances run cfg.forward and cfg.engine.
  std::int64_t decode_tp = 0, decode_ep = 0;
  std::optional<EngineConfig> decode_engine;
  bool on() const noexcept { return prefill > 0 || decode > 0; }
};

/// A latency an SLO target is on (docs/serving.md#metrics).
enum class SloMetric : std::uint8_t {
  ttft,  ///< a request's arrival to its first output token
  tpot,  ///< a request's mean time between its output tokens
  itl,   ///< the time between two consecutive output tokens of a request, over every token (vLLM's ITL)
  e2e    ///< a request's arrival to its last output token
};
inline constexpr std::size_t kSloMetrics = 4;
std::string_view name(SloMetric m) noexcept;
struct SloTarget;
/// A target as --slo names it: "ttft_p99", "e2e_mean".
std::string name(const SloTarget& g);

/// One target: a statistic of a metric within a limit.
struct SloTarget {
  SloMetric metric = SloMetric::ttft;
  double q = 0.99;     ///< the percentile (0.5, 0.9, 0.95, 0.99), or the mean (< 0)
  double limit_s = 0;  ///< seconds
  /// A request's own value of it counts towards goodput (TTFT, TPOT, E2E); ITL is a
  /// distribution over tokens, not a request's (vLLM's goodput leaves it out too).
  bool per_request() const noexcept { return metric != SloMetric::itl; }
};

/// The targets of a run, a list of (metric, statistic, limit), each metric at most once. A
/// request meeting every per-request target counts towards goodput, and the run meets the SLO
/// when each target's statistic over the measured requests (ITL: their tokens) is within it.
struct Slo {
  std::vector<SloTarget> targets;
  bool any() const noexcept { return !targets.empty(); }
  /// The target on `m`, null when none.
  const SloTarget* find(SloMetric m) const noexcept;
  /// Sets (or replaces) the target on `m`: `limit_s` seconds on its q-percentile (q < 0: the mean).
  Slo& set(SloMetric m, double limit_s, double q = 0.99);
};
/// Parses "ttft_p99=1s,tpot_p99=50ms,itl_p95=80ms,e2e_p90=20s" (METRIC_STAT with METRIC ttft,
/// tpot, itl or e2e and STAT p50, p90, p95, p99 or mean); InputError naming --slo and the key.
Slo parse_slo(std::string_view s);
/// Statistic q of a distribution's summary (SloTarget::q): its mean for q < 0, else the
/// first of p50, p90, p95, p99 at or above q.
double statistic(const Summary& s, double q) noexcept;

/// A measurement window the run chooses itself (docs/serving.md#measurement-window): warm-up
/// until the fleet's running requests and KV use stop trending (the mean over the last quarter
/// of the arrivals so far within kSteadyTolerance of the quarter before), then the next
/// `per_instance` x instances arrivals measured, then arrivals go on unmeasured (cool-down)
/// until every measured request has finished, and the run stops: no ramp, no drain.
/// Throughput counts what the fleet served inside the window. `workload.requests` is then the
/// most requests the run may send (4 x the window's at least); when the trend has not stopped
/// by half of them, the window opens there and the run says it did not reach steady state.
struct MeasurementWindow {
  bool on = false;         ///< off: workload.requests sent, the first workload.warmup left out
  double quantile = 0.99;  ///< the highest percentile read (an --slo's highest wins)
  /// Measured requests per instance (0: 10 / (1 - quantile), 1000 for a p99: ten beyond it).
  std::int64_t per_instance = 0;
};

/// Relative change of the running requests and KV use between two quarters below which a run
/// has stopped trending (docs/serving.md#measurement-window).
inline constexpr double kSteadyTolerance = 0.03;

struct ServeConfig {
  model::ForwardConfig forward;
  EngineConfig engine;
  WorkloadSpec workload;
  model::Speculation spec;  ///< speculative decoding (k = 0: off); its draft runs with `forward`'s plan
  /// Speculative decoding: the spread (standard deviation) of each request's shift of the
  /// acceptance rates, model::tokens_per_step_classes; 0: every request at the given rates.
  /// 0.1 is an assumption, not a measurement (docs/serving.md#speculative-decoding).
  double accept_spread = 0.1;
  Disagg disagg;            ///< prefill and decode instances apart (replicas must be 1)
  std::int64_t replicas = 1;
  Router router = Router::round_robin;
  Slo slo;
  MeasurementWindow window;      ///< on: the run chooses its warm-up and window (the CLI's default)
  double horizon_s = 0;          ///< stop at this simulated time (0: when every request is served)
  bool find_max_rate = true;     ///< open loop, unsustainable: search the largest sustainable rate
  int timeline_points = 256;     ///< at most this many points of running / waiting / KV over time
  /// Stop as soon as the SLO can no longer be met: more measured requests beyond a target than
  /// its percentile allows (or a mean target already exceeded), whatever the rest do. A run
  /// that meets the SLO is never stopped, so its numbers are those of a run without it.
  bool stop_when_slo_missed = false;
  /// Only what a capacity search reads (TTFT, TPOT, E2E, throughput, the SLO, sustainability,
  /// KV use): no inter-token (unless an SLO target is on them) or queue latencies, no CDFs, no
  /// decode-step composition, no timeline.
  bool lean = false;
  /// Quiet decode steps of a replica (nothing but contexts growing) run in one loop, only
  /// the last one's end an event (docs/serving.md#simulator); same results. Off: every step an
  /// event (the tests compare the two).
  bool leap = true;
  /// The workload's requests drawn already (RequestSource of this very `workload`), as a search
  /// keeps them for its runs: read instead of drawn again. Null: drawn from the seed.
  const std::vector<Request>* drawn = nullptr;
};

/// The plan and engine one kind of instance runs: every replica (aggregated), the prefill
/// instances (cfg.forward, cfg.engine) or the decode instances (their Disagg overrides).
struct InstancePlan {
  model::ForwardConfig forward;
  EngineConfig engine;
};
InstancePlan instance_plan(const ServeConfig& cfg, bool decode = false);

/// One request's life, streamed to the sink as it ends.
struct RequestRecord {
  std::int64_t id = 0;             ///< order of sending
  std::int32_t replica = 0;
  double arrival_s = 0;
  double queue_s = 0;              ///< arrival to its first scheduled step
  double ttft_s = 0;               ///< arrival to its first output token
  double tpot_s = 0;               ///< mean time between its output tokens (0 with one token)
  double e2e_s = 0;                ///< arrival to its last token
  std::int64_t input = 0, output = 0;
  /// Output tokens streamed before it ended: `output` for a served request; for a refused one,
  /// those it streamed before a preemption left it unable to fit again (their inter-token gaps
  /// are in the ITL distribution, which records each gap as the client sees it).
  std::int64_t emitted = 0;
  std::int64_t cached_tokens = 0;  ///< prompt tokens found in the prefix cache
  std::int32_t preemptions = 0;
  /// An engine whose outputs go out during the next step (vLLM V0: engine_outputs_next_step):
  /// how much later than the end of the step that computed it its first token, and its last,
  /// reached the client; in ttft_s and e2e_s, not in the ITL, which takes each token at the
  /// end of its step (docs/serving.md#output-lag).
  double first_lag_s = 0, end_lag_s = 0;
  bool warmup = false;             ///< left out of the statistics
  bool rejected = false;           ///< can never fit (prompt + output beyond the cache or the model's context)
};
using RequestSink = std::function<void(const RequestRecord&)>;

/// One engine step as the simulator priced it, streamed to a StepSink as it starts.
struct StepRecord {
  std::int32_t replica = 0;
  std::int64_t index = 0;        ///< steps started before it, over the run
  double start_s = 0;            ///< when it starts
  double period_s = 0;           ///< start to the earliest start of the replica's next step (with what the host adds outside the device's time)
  double device_s = 0;           ///< the device's time: its kernels, a swap's copies, the draft's passes when speculating
  double prompt_tokens = 0;      ///< prompt tokens computed (Σ chunks)
  double prompt_chunks = 0;      ///< sequences computing a prompt chunk
  double decodes = 0;            ///< sequences computing decode tokens
  double decode_context = 0;     ///< their mean context (tokens attended on full-attention layers)
  GraphMode launch = GraphMode::eager;  ///< how the host launched it
};
using StepSink = std::function<void(const StepRecord&)>;

/// State of the fleet at one time (time-averaged over the interval the point stands for).
struct TimePoint {
  double t_s = 0;
  double running = 0, waiting = 0;  ///< requests, summed over replicas
  double kv_used = 0;               ///< fraction of the fleet's KV blocks held by requests
  double tokens_per_s = 0;          ///< output tokens per second over the interval
};

/// Memory of one chip of a replica.
struct ServeMemory {
  double capacity_bytes = 0, weights_bytes = 0, activations_bytes = 0, reserved_bytes = 0, kv_bytes = 0;
  double kv_bytes_per_token = 0;  ///< the target's cache and the draft's, when speculating
  double draft_weights_bytes = 0, draft_kv_bytes_per_token = 0;  ///< of which the draft's (in weights_bytes, kv_bytes_per_token)
  /// Of weights_bytes, the engine's padding of MXFP4 experts (model::ForwardConfig::mxfp4_expert_align;
  /// 0: none), and the alignment it pads to.
  double expert_pad_bytes = 0;
  int expert_pad_align = 0;
  std::int64_t kv_blocks = 0;  ///< per replica
  std::int64_t kv_tokens = 0;  ///< context tokens kv_blocks hold per request's block tables (KvLayout::tokens_in)
  double kv_block_bytes = 0;   ///< one block: a page of KvLayout::layers_per_block layers
  KvLayout kv_layout;          ///< the engine's KV cache groups (sliding-window layers apart when it frees them)
};

/// Latency distributions as quantiles at q = 0, 0.01, ..., 1 (for CDF charts).
struct ServingCdf {
  std::vector<double> q, ttft_s, tpot_s, itl_s, e2e_s;
};

/// A step of the run's mean composition, priced op by op (serving::step_reference): how much
/// of it is the kernels' floor and the collectives' latency rather than bandwidth or compute,
/// and what the host spends on it.
struct StepComposition {
  double device_s = 0;                ///< realistic device time of the step (its kernels alone)
  double kernel_fixed_s = 0;          ///< of it: kernel boundaries (analysis::PhaseTimes)
  double link_latency_s = 0;          ///< of it: collective latency steps
  double kernels = 0;                 ///< kernels the step runs
  double host_s = 0;                  ///< the engine's host time for such a step
  GraphMode launch = GraphMode::graph;  ///< how the engine launches it (EngineConfig's graph caps)
  /// Of its kernels, those the host launches itself (outside a graph), and their time on the
  /// host at the engine's eager_host_s: the step lasts at least that (docs/serving.md#eager-host).
  double host_launches = 0, eager_host_s = 0;
  /// Of those, the compiled model's own (model::ForwardConfig::compiled_host_s; 0 when it has none).
  double compiled_launches = 0;
  /// Of those, MLA's attention op's own (model::ForwardConfig::mla_op_host_s; 0 when it has none).
  double mla_op_launches = 0;
  /// And that op's calls (one a layer), each at model::ForwardConfig::mla_op_call_host_s (0: none).
  double mla_op_calls = 0;
  /// device_s by the kernel class each kernel runs as (hw::KernelClass order): where the
  /// device's time goes, each class priced by the chip's figures for it (`hw show`). They add up
  /// to device_s but where a pass's one launch outlasts its kernels (a graph of a few tiny ones).
  std::array<double, hw::kKernelClassCount> by_class_s{};
};

/// A decode step of the run's mean batch at its mean context.
struct DecodeStepComposition : StepComposition {
  double sequences = 0, context = 0;  ///< the mean decode batch and its mean context
  /// The rows it computes its kernels but attention on: `sequences`, or the captured size its
  /// graph pads them to (docs/serving.md#graph-padding), or, launched eagerly, what attention
  /// data-parallel ranks pad to in all (docs/serving.md#rank-padding).
  double padded_sequences = 0;
  /// Expert parallelism: the busiest chip's routed pairs over the mean in such a step
  /// (model::routing_imbalance), and where it comes from; "" without expert parallelism.
  double expert_imbalance = 1;
  std::string expert_imbalance_source;
};

/// The run's mean step that computes prompt tokens (a prefill step, or a mixed one with the
/// decodes it carries) on the instances that prefill: its mean count of prompt chunks, each of
/// the mean chunk's tokens ending at the chunks' mean context, and its mean count of decodes at
/// their mean context (counts are means, fractional). Launched by the mean of the tokens each
/// step's launch was chosen by (with attention data-parallel ranks, the busiest rank's); its
/// work spread evenly over such ranks. With a draft model, the target's forward alone.
struct PromptStepComposition : StepComposition {
  double steps = 0;                          ///< steps that compute prompt tokens (0: none ran)
  double chunks = 0, chunk_tokens = 0, chunk_context = 0;
  double decodes = 0, decode_context = 0;    ///< decodes carried (0: prefill steps only)
  double launch_tokens = 0;                  ///< the tokens its launch is chosen by
};

/// Speculative decoding at the run's mean decode batch and context (docs/serving.md#speculative-decoding).
struct SpeculationCost {
  int k = 0;                   ///< 0: off
  double tokens_per_step = 1;  ///< expected tokens each sequence emits per verification step
  double verify_s = 0;         ///< the target's step of k + 1 tokens per sequence
  double draft_s = 0;          ///< the draft's k passes
  double plain_s = 0;          ///< the target's plain decode step of one token per sequence
  /// Decode time per token against plain decoding: plain_s / ((verify_s + draft_s) / tokens_per_step).
  double speedup = 0;
  bool break_even = false;     ///< some acceptance rate pays for the drafts (else even k + 1 tokens a step does not)
  double break_even_accept = 0;  ///< the rate α at which it breaks even
};

/// What a disaggregated run moved between its instances.
struct DisaggResult {
  std::string link;              ///< "node" or "network" (or "given")
  double link_Bps = 0, link_latency_s = 0;
  double transfer_s_mean = 0;    ///< a request's exposed transfer, mean
  double kv_wait_s_mean = 0;     ///< prefill end to the decode instance's blocks, mean
  /// What the busiest chip of a transfer sends or receives: a decode chip's share of the KV
  /// (its TP's), times decode TP / prefill TP when fewer prefill chips send it.
  double bytes_per_request_mean = 0;
  double descriptors_per_request_mean = 0;  ///< the connector's descriptors a decode chip posts per transfer
  double decode_hit_tokens_mean = 0;        ///< prompt tokens found in the decode instance's own prefix cache, not pulled
  double descriptor_s = 0;                  ///< posting one descriptor (Disagg::descriptor_s)
  std::int64_t decode_tp = 0, decode_ep = 0;  ///< the decode instances' plan
  ServeMemory decode_memory;                 ///< one decode chip's memory (ServingResult::memory: a prefill chip's)
  EngineConfig decode_engine;                ///< the decode instances' engine as it ran
  /// Rate matching: requests/s one prefill instance prefills at its whole token budget, and
  /// one decode instance decodes at the batch its sequence limit and cache allow (mean
  /// lengths); prefill_per_decode = decode_rate / prefill_rate instances for a balanced pair.
  double prefill_rate = 0, decode_rate = 0, prefill_per_decode = 0;
};

/// Why a run is not sustainable (docs/serving.md#sustainable).
enum class Unsustainable : std::uint8_t {
  none,            ///< sustainable
  unfinished,      ///< requests unfinished when the run stopped (its horizon)
  nothing_served,  ///< every measured request was rejected
  served_fraction, ///< under half the offered rate served
  queue_grows      ///< the waiting queue grows over the run
};
std::string_view name(Unsustainable u) noexcept;

/// Why requests were rejected (each counted once, by the first reason that applies).
struct Rejections {
  std::int64_t context = 0;    ///< prompt + output beyond the model's context (max_position_embeddings)
  std::int64_t cache = 0;      ///< beyond the KV cache of an instance, alone
  std::int64_t budget = 0;     ///< a whole prompt beyond a step's token budget (an engine that does not chunk prompts)
  std::int64_t scheduler = 0;  ///< refused by the scheduler's own margin on an empty instance
};

/// Whether the run measured the fleet in steady state (docs/serving.md#measurement-window).
struct MeasuredWindow {
  /// The running requests and KV use had stopped trending when the measured requests began
  /// (with a fixed --warmup-requests: by the first measured arrival; 0 warm-up or one drained
  /// first: never).
  bool reached = false;
  bool window = false;            ///< the run chose its window (MeasurementWindow::on)
  bool drained = false;           ///< a warm-up ended before the measured requests began (WorkloadSpec::warmup_drained)
  double warmup_s = 0;            ///< when the window opened (the first measured arrival)
  double window_s = 0;            ///< its length: the first to the last measured arrival
  double trend_stopped_s = -1;    ///< when the trend was first seen to stop (-1: never)
  std::int64_t sent = 0;          ///< requests sent
  std::int64_t warmup_requests = 0, cooldown_requests = 0;  ///< sent before and after the measured ones
};

struct ServingResult {
  Summary ttft, tpot, itl, e2e, queue;
  DisaggResult disagg;
  DecodeStepComposition decode_step;
  PromptStepComposition prompt_step;
  SpeculationCost speculation;
  ServingCdf cdf;
  double requests_per_s = 0, input_tokens_per_s = 0, output_tokens_per_s = 0, output_tokens_per_s_per_gpu = 0;
  double gpus = 0;
  double goodput_requests_per_s = 0;  ///< requests meeting every SLO target, per second
  double slo_attainment = 0;          ///< fraction of measured requests meeting every target
  bool slo_met = false;               ///< every target's percentile within it
  bool sustainable = true;            ///< the waiting queue stays bounded (docs/serving.md#sustainable)
  Unsustainable unsustainable = Unsustainable::none;  ///< why not
  double max_sustainable_qps = 0;     ///< when not sustainable: the largest rate found sustainable (0: not searched)
  double offered_qps = 0;             ///< open loop: measured requests over their arrival span
  /// The measured requests' mean time from the end of the step that computed their first token
  /// to the client (an engine whose outputs go out during the next step, engine_outputs_next_step:
  /// vLLM V0); part of TTFT.
  double output_lag_s = 0;
  /// The measured requests' mean time from reaching the scheduler to its reading them, part of
  /// their queue: SGLang's --scheduler-recv-interval (EngineConfig::recv_interval) holds a request
  /// sent among decode steps unread until the count (docs/serving.md#recv-interval); 0 when the
  /// engine reads every step.
  double unread_s = 0;
  std::int64_t preemptions = 0;
  double generated_tokens = 0;        ///< output tokens of the requests served, warm-up requests included (not those of a request refused after a preemption)
  double prefix_hit_rate = 0;         ///< prompt tokens found cached over prompt tokens
  /// KV use: the fleet's blocks in use over all its blocks, time-averaged (over the window when
  /// there is one); and the fullest cache's peak (each replica's pool, or each attention rank's).
  double kv_utilisation_mean = 0, kv_utilisation_max = 0;
  std::int64_t simulated_requests = 0, measured_requests = 0, rejected = 0, unfinished = 0;
  Rejections rejected_by;             ///< `rejected`, by reason
  /// Open loop and traces: the measured requests' throughput over the rate they were offered
  /// at (their count over their arrival span); 0 when not measured (a closed loop, one request).
  double served_fraction = 0;
  double makespan_s = 0;              ///< simulated time from the first arrival to the last event
  double measured_span_s = 0;         ///< first measured arrival to last measured finish (the throughput window)
  double steps = 0, mixed_steps = 0, decode_steps = 0, prefill_steps = 0;
  /// The most requests one replica ran at once (one attention data-parallel rank, where each
  /// rank has its own sequence limit: vLLM at ep > 1): a run whose peak is below its sequence
  /// limit never met the limit, and runs the same under any limit above its peak.
  std::int64_t peak_running = 0;
  double mean_step_s = 0, mean_decode_batch = 0;
  double mean_in_system = 0;          ///< time average of requests in the system (Little's law: throughput x mean e2e)
  double mean_running = 0, mean_waiting = 0;
  /// Time average of requests in the system that neither run nor wait, less those that run out
  /// of it: vLLM V0's ends computed on the engine and not yet sent to the client, less sequences
  /// whose end was sent while their place in a multi-step window runs on (engine_outputs_next_step;
  /// 0 for every other engine). mean_in_system = mean_running + mean_waiting + mean_ending.
  double mean_ending = 0;
  bool horizon_reached = false;
  MeasuredWindow steady_state;
  /// The least room any check of a KV cache left (blocks, on any instance, the check on
  /// arrival that a request fits an empty cache included) and whether one refused (a request
  /// waited, retracted, was preempted or rejected for blocks). With none refused, the run is
  /// the same on caches d blocks smaller per instance for any d < kv_slack_blocks, or larger.
  double kv_slack_blocks = std::numeric_limits<double>::infinity();
  bool kv_refused = false;
  bool stopped_slo_missed = false;    ///< stopped early (ServeConfig::stop_when_slo_missed): the statistics are partial
  ServeMemory memory;
  EngineConfig engine;                ///< the engine as it ran (limits the preset leaves to the cache size resolved)
  std::vector<TimePoint> timeline;
  double wall_s = 0;
};

/// A run's distribution of a metric (ServingResult::ttft, tpot, itl or e2e).
const Summary& summary_of(const ServingResult& r, SloMetric m) noexcept;

/// Rate matching for disaggregated serving at mean lengths `prompt` and `gen`: requests/s one
/// prefill instance prefills at its whole token budget, and one decode instance decodes at the
/// largest batch its sequence limit and cache allow, at the mid-generation context (its
/// draft's passes and tokens per step included); each instance with its own plan, engine and
/// memory (the engines resolved as the simulator runs them). Fills prefill_rate, decode_rate,
/// prefill_per_decode.
void disagg_rates(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, double prompt, double gen,
                  DisaggResult& out);

/// Throws InputError naming the flag for a configuration that cannot run (the model plan,
/// the engine's knobs, the workload, memory that leaves no room for a cache block).
void validate(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg);

/// Memory of one chip under `cfg` (weights, the activations of one budgeted step, what the
/// engine reserves, and the KV cache of what is left); `decode`: of a decode instance.
ServeMemory serve_memory(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, bool decode = false);

/// The measured requests per instance of a run's MeasurementWindow: its per_instance, else
/// 10 / (1 - q) for the highest percentile read (window.quantile, or an --slo target's above it).
std::int64_t window_requests_per_instance(const ServeConfig& cfg);

/// Runs the simulation (validate first); `sink`, when set, receives every request as it ends.
/// `progress`, when set, is called now and then with the fraction of requests finished.
/// `steps`, when set, receives every engine step as it starts (the run then prices each step
/// on its own, without leaping over quiet ones: the same results, more slowly).
ServingResult simulate(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg,
                       const RequestSink& sink = {}, const std::function<void(double)>& progress = {}, const StepSink& steps = {});

/// The fewest replicas meeting every SLO target of `cfg` (which must have one) with a
/// sustainable load: counts doubled from 1 until one meets them, then bisected; each count a
/// full simulation of the same requests.
struct ReplicaSearch {
  std::int64_t replicas = 0;  ///< 0: not even `max_replicas` meet the targets
  ServingResult result;       ///< the run at `replicas` (at max_replicas when none meets them)
  std::vector<std::pair<std::int64_t, bool>> tried;  ///< (replicas, met) in the order tried
};
ReplicaSearch fewest_replicas(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg,
                              std::int64_t max_replicas = 1024);

}  // namespace ridgeline::serving
