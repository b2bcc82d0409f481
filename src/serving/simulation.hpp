#pragma once
// The serving simulation's state and its phases (private to the simulator): each phase's
// members are defined in a file of their own: simulator.cpp (the event loop),
// simulator_inputs.cpp (inputs checked, each instance's plan, engine and memory),
// simulator_admission.cpp (arrivals, routing, admission), simulator_steps.cpp (steps),
// simulator_transfers.cpp (disaggregated hand-over and KV transfer) and
// simulator_metrics.cpp (completions, statistics, the result) (docs/serving.md#simulator).
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "replica.hpp"
#include "ridgeline/serving/simulator.hpp"
#include "ridgeline/serving/step_model.hpp"
#include "scheduler.hpp"
#include "step_ends.hpp"
#include "timeline.hpp"

namespace ridgeline::serving::detail {

// Simulated time is int64 picoseconds (9.2e6 s at most): runs stay well inside it, so that
// the timeline's doubling bucket widths never overflow either. A step, a transfer or an
// arrival that would end past it stops the run with an InputError (time_overflow).
inline constexpr double kMaxSimulated_s = 4e6;
// Below this share of the offered rate served, a run is not sustainable (docs/serving.md#sustainable).
inline constexpr double kMinServedFraction = 0.5;
// A waiting queue whose mean rises quarter after quarter of the measured arrivals, by more than
// this share of them (plus two requests) over the four, grows: the run is neither steady nor
// sustainable (docs/serving.md#sustainable).
inline constexpr double kQueueTrend = 0.01;
// Memory a request in the system holds: its pool slot and its entries in the queues and heaps.
inline constexpr double kBytesPerRequest = static_cast<double>(sizeof(Req) + 64);

// `what` starting at t would last `s` seconds and end past the time a run can simulate (or
// lasts no finite time): the inputs, not the run, are at fault.
[[noreturn]] void time_overflow(const std::string& what, Ps t, double s);

// The engine as an instance of `plan` will run it: SGLang's sequence limit resolved from the
// cache size, and its admission ratio under attention data parallelism.
EngineConfig resolved_engine(const model::ModelConfig& m, const InstancePlan& plan, const ServeMemory& mem);

// The link a disaggregated request's KV crosses, chip to chip: the node link when every
// instance's chips fit one scale-up domain, else the network; at the link's efficiency.
struct TransferLink {
  std::string name;
  double Bps = 0, latency_s = 0;
};
TransferLink transfer_link(const hw::System& sys, const ServeConfig& cfg);

// The draft's k passes of a step: the first over `first` (the step's prefill chunks, when
// `chunks`, and one token per decode sequence), the other k - 1 each like `rest`. Attention
// data-parallel ranks (`ranks` > 0): each pass on the slowest rank, rank g's parts first_ranks[g]
// and rest_ranks[g] (StepModel::slowest; rank_memo[2] for the first and further passes).
double draft_passes_s(const StepModel& draft, const EngineConfig& e, int k, const model::StepMix& first, const model::StepMix& rest,
                      bool chunks, StepTimeMemo (&memo)[2], std::size_t ranks = 0, const model::StepMix* first_ranks = nullptr,
                      const model::StepMix* rest_ranks = nullptr, StepModel::RankMemo* rank_memo = nullptr);

// Refuses up front a run whose requests cannot fit in the memory this process may use.
void check_memory(const model::ModelConfig& m, const ServeConfig& cfg, const ServeMemory& mem, const ServeMemory& decode_mem);

// Integrals over time of what the statistics average.
struct Integrals {
  double in_system = 0, running = 0, waiting = 0, kv_used = 0;
  double ending = 0;  // of Simulation::ending_
};

// What the instances of one kind share: their plan, engine, cache, step pricing and
// scheduler. Aggregated, every replica is of one kind; disaggregated, the prefill instances
// are of the first and the decode instances of the second.
struct Tier {
  Tier(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, const ServeMemory& memory, bool decode,
       std::vector<Req>& pool);
  std::int64_t chips() const noexcept { return plan.forward.tp * plan.forward.ep; }

  InstancePlan plan;
  EngineConfig engine;  // as it runs (SGLang's sequence limit from the cache)
  ServeMemory mem;
  StepModel step;
  std::unique_ptr<StepModel> draft;  // speculative decoding
  StepTimeMemo memo, draft_memo[2];
  StepModel::RankMemo rank_memo;  // attention data-parallel ranks: own parts of decode-only ranks
  StepModel::RankMemo draft_rank_memo[2];  // the same of the draft's first and further passes
  detail::SimContext ctx;
  std::unique_ptr<detail::Scheduler> scheduler;
};

class Simulation {
 public:
  // `mem`: the prefill (or every) instances' memory; `decode_mem`: the decode instances'.
  Simulation(const model::ModelConfig& m, const hw::System& sys, const ServeConfig& cfg, const ServeMemory& mem,
             const ServeMemory& decode_mem, const RequestSink& sink, const std::function<void(double)>& progress,
             const StepSink& steps = {});

  ServingResult run();

 private:
  // --- arrivals, routing, admission (simulator_admission.cpp) ---------------------------
  void draw_next();
  Ps next_arrival_time() const {
    if (closed_) return pending_.empty() || sent_ >= total_ ? kNever : pending_.top();
    return next_ps_;
  }
  void arrive(Ps t);
  void release_measured(Ps t);  // a drained warm-up's requests have all ended, the latest at t
  // Closed loop: up to --concurrency clients, at most n, each sending a request at t.
  void send_clients(Ps t, std::int64_t n);
  // The run drains its warm-up before the measured requests (WorkloadSpec::warmup_drained; a
  // fixed count's, never a window's).
  bool drains_warmup() const noexcept { return !window_ && cfg_.workload.warmup_drained && cfg_.workload.warmup > 0; }
  bool fits_cache(const Tier& k, const Req& q);  // noted in cache_slack_
  bool fits_step(const Tier& k, const Req& q) const;
  std::int32_t dense_group(std::int32_t group);
  Replica& route(const Req& q, std::int32_t group);
  // The instance the next arrival will be routed to where route() knows it before the arrival
  // comes (the only one, or the next in turn under round-robin); -1 where it depends on it.
  std::int32_t next_routed() const;
  Replica& pick(std::size_t first, std::size_t n, std::size_t& turn);
  std::int32_t alloc_slot();

  Tier& tier(const Replica& r) { return *tiers_[r.role == detail::Role::decode ? 1 : 0]; }
  const Tier& tier(const Replica& r) const { return *tiers_[r.role == detail::Role::decode ? 1 : 0]; }

  void mark(Replica& r) {
    if (r.busy || r.start_pending) return;
    r.start_pending = true;
    to_start_.push_back(r.index);
  }

  // --- steps (simulator_steps.cpp) ------------------------------------------------------
  void start_step(Replica& r, Ps t);
  void finish_step(Replica& r, Ps t);
  // A decode step's end: its tokens, the gaps before them, the sequences it completes.
  void emit_decode(Replica& r, Ps t);
  // A step of r's plan ended: where its outputs go out during the next step (vLLM V0), the
  // processing that step does of them.
  void note_outputs(Replica& r) {
    const EngineConfig& e = tier(r).engine;
    if (engine_outputs_next_step(e)) r.unsent_proc_s = output_processing_s(e, r.plan.mix.seqs());
  }

  // --- leaps: quiet decode steps in one loop (simulator_leap.cpp) -----------------------
  // After start_step: the quiet steps that follow (Replica::quiet_steps) priced now, the
  // replica's event the last one's end. Their ends and starts are applied when something
  // reads the replica (catch_up): its own event, an arrival, a change of what is counted.
  // At most 16 steps: those priced beyond the arrival that ends a leap are wasted (at 64, a third
  // of BM_SearchServe70B's priced steps were never applied: 363 M priced, 239 M applied), and a
  // leap's own cost is small beside 16 steps'; 12 to 24 ran alike, 64 4–6% slower.
  static constexpr std::int32_t kLeapMost = 16;
  // The weight SGLang's SchedulerRecvSkipper gives a step of any mode but decode (and
  // target-verify): _DEFAULT_WEIGHT, 1000 (SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DEFAULT).
  static constexpr std::int64_t kRecvPromptWeight = 1000;
  Ps start_leap(Replica& r, Tier& k);  // the replica's next event
  // Applies the leap's step ends at or before t and its step starts before t (and at t when
  // `starts_at_t`), the blocks those take in the KV integrals from their start.
  void catch_up(Replica& r, Ps t, bool starts_at_t);
  // The leap ends at t (its last step's end, or an arrival routed to r): r as the steps left it.
  void end_leap(Replica& r, Ps t);
  // Every leap caught up to t (the run stops, the router reads every replica, what is counted
  // changes); the last step end applied (-1: none).
  Ps catch_up_all(Ps t, bool starts_at_t);
  Ps* leap_ends(const Replica& r) { return &leap_end_[static_cast<std::size_t>(r.index) * (kLeapMost + 1)]; }
  double* leap_periods(const Replica& r) { return &leap_period_[static_cast<std::size_t>(r.index) * (kLeapMost + 1)]; }
  double* leap_keys(const Replica& r) { return &leap_keys_[static_cast<std::size_t>(r.index) * (kLeapMost + 1)]; }

  // --- disaggregated: hand-over and KV transfer (simulator_transfers.cpp) ---------------
  void hand_over(Replica& p, std::int32_t qi, Ps t);
  void allocate(Replica& d, Ps t);
  void received(std::int32_t qi);

  // --- the measurement window (simulator_window.cpp) ------------------------------------
  // The arrival `id` at t: at a block's end, the trend of running requests and KV use
  // checked; in window mode, the window opened or closed. Whether the request is measured.
  bool measure_arrival(std::int64_t id, Ps t) {
    if (id == next_mark_) {
      next_mark_ += block_;
      mark_block(t);
    }
    return window_ ? window_arrival(t) : id >= cfg_.workload.warmup;
  }
  bool window_arrival(Ps t);
  void mark_block(Ps t);
  bool trend_stopped();
  void open_window(Ps t, bool reached);
  void summarise_window(ServingResult& r) const;
  bool queue_trend() const;

  // --- completions, statistics, the result (simulator_metrics.cpp) ----------------------
  // A request leaves at t: its state released (retire) and its end recorded (record_end).
  void complete(Replica& r, std::int32_t qi, Ps t) {
    retire(r, qi);
    record_end(qi, t);
  }
  // Its last token computed at t: completed, or where outputs go out during the next step
  // (engine_outputs_next_step), its state released now and its end recorded when they do.
  void end(Replica& r, std::int32_t qi, Ps t);
  void retire(Replica& r, std::int32_t qi);
  // Its end seen by the client at t; its slot freed once it is retired too.
  void record_end(std::int32_t qi, Ps t);
  // The last step's outputs reach the client at t (engine_outputs_next_step).
  void send_outputs(Replica& r, Ps t);
  void reject(std::int32_t qi, Ps t);
  void record(const RequestRecord& rec, Ps t);
  bool missed(const SloTarget& target, std::int64_t over) const;
  // The measured requests' distribution of a metric (ITL: of their tokens' gaps).
  const Distribution& distribution(SloMetric m) const noexcept {
    return m == SloMetric::ttft ? ttft_ : m == SloMetric::tpot ? tpot_ : m == SloMetric::itl ? itl_ : e2e_;
  }
  // A replica whose running, waiting or KV state may have changed since the last advance.
  void touch(const Replica& r) {
    const auto i = static_cast<std::size_t>(r.index);
    if (touched_flag_[i]) return;
    touched_flag_[i] = 1;
    touched_.push_back(r.index);
  }
  void advance(Ps t);
  void summarise();
  void compose_decode_step(ServingResult& r) const;
  void compose_prompt_step(ServingResult& r) const;
  void rate_match(ServingResult& r) const;
  Unsustainable sustainable() const;

  const model::ModelConfig& m_;
  const hw::System& sys_;
  const ServeConfig& cfg_;
  RequestSink sink_;  // copies: a caller's temporaries end with the constructor
  std::function<void(double)> progress_;
  StepSink step_sink_;  // every step as it starts (leaps off)
  std::vector<Req> pool_;
  std::vector<std::int32_t> free_slots_;
  std::size_t max_in_system_ = SIZE_MAX;  // pool slots this process's memory allows (half of it)
  std::unordered_map<std::int32_t, std::int32_t> dense_groups_;  // prefix group as given -> index among those seen
  double cache_slack_ = std::numeric_limits<double>::infinity();  // the least room a request left in an empty cache
  std::array<std::unique_ptr<Tier>, 2> tiers_;  // every replica's, or the prefill and the decode instances'
  std::vector<std::int32_t> finished_now_;   // sequences whose last token a decode step emits
  std::vector<Replica> replicas_;
  std::int64_t all_blocks_ = 0, gpus_ = 0;   // over the instances
  std::int64_t kv_used_blocks_ = 0;          // the used blocks kv_now_ is of (advance)
  double kv_now_ = 0;
  double fan_in_ = 1;  // disaggregated: decode chips per prefill chip of a request's transfer (at least 1)
  RequestSource source_;
  Request next_;
  bool has_next_ = false, closed_ = false;
  Ps next_ps_ = kNever;  // the next arrival's time (open loop)
  // A drained warm-up (WorkloadSpec::warmup_drained) still running: the measured requests wait
  // until its last request ends (release_measured). An open loop's next request held meanwhile
  // (held_), its arrival then shifted by shift_, as every arrival after it. warm_end_: the
  // latest end of its requests recorded so far (an end sent with the next step's outputs is
  // recorded at its own time, which may come after a later-recorded one's: record_end).
  bool warming_ = false, held_ = false;
  Ps shift_ = 0, warm_end_ = 0;
  std::int64_t drawn_ = 0;  // open loop: the requests drawn from the source so far
  // Closed loop: when each free user's next request reaches the scheduler, the earliest first
  // (think times drawn apart need not keep their order).
  std::priority_queue<Ps, std::vector<Ps>, std::greater<>> pending_;
  Ps front_end_ = 0;        // the server's time before the scheduler sees a request
  StepEnds steps_;  // replicas' step ends
  std::size_t rr_ = 0, decode_rr_ = 0;
  std::size_t routed_ = 0;  // arrivals go to replicas [0, routed_): all, or the prefill instances
  std::priority_queue<std::pair<Ps, std::int32_t>, std::vector<std::pair<Ps, std::int32_t>>, std::greater<>> transfers_;
  double transfer_s_sum_ = 0, kv_wait_s_sum_ = 0, bytes_sum_ = 0, descriptors_sum_ = 0, hit_tokens_sum_ = 0;
  std::int64_t transfers_done_ = 0;
  std::vector<std::int32_t> to_start_;  // replicas to start a step once every event at this time is in
  std::int64_t total_ = 0, measured_total_ = 0, sent_ = 0, finished_ = 0, measured_ = 0, all_served_ = 0, good_ = 0;
  std::int64_t in_system_ = 0;
  Ps clock_ = 0, horizon_ = kNever;
  Distribution ttft_, tpot_, itl_, e2e_, queue_;
  bool itl_on_ = false;  // inter-token latencies recorded: not lean, or an SLO target on them
  double input_tokens_ = 0, output_tokens_ = 0, cached_tokens_ = 0, output_tokens_all_ = 0, all_e2e_sum_ = 0;
  double output_lag_sum_ = 0;  // measured requests: their first token's time from its step's end to the client
  double unread_sum_ = 0;      // measured requests: their time unread by the scheduler (Req::unread)
  // Requests in the system neither running nor waiting, less those running out of it: ended on
  // the engine with their end not yet sent, less those whose end was sent while their place in a
  // multi-step window runs on (engine_outputs_next_step). In the system = running + waiting + this.
  std::int64_t ending_ = 0;
  double first_measured_arrival_ = 1e300, last_measured_end_ = 0;
  // Every measured request's arrival, served or not (the rate offered).
  std::int64_t measured_arrivals_ = 0, measured_rejected_ = 0;
  double backlog_fraction_ = 1;  // sustainable(): finished requests over the span less the fastest latency, per offered rate
  double first_arrival_measured_ = 1e300, last_measured_arrival_ = 0;
  double step_time_sum_ = 0, decode_batch_sum_ = 0, decode_context_sum_ = 0;
  // Over the steps that compute prompt tokens (on the instances that prefill): their count,
  // their chunks, the chunks' tokens and the contexts they end at, the decodes they carry and
  // those decodes' contexts, and the tokens each step's launch was chosen by (the busiest
  // attention data-parallel rank's).
  // Decode-only steps by how they were launched (GraphMode: eager, graph, piecewise), for the
  // composed decode step of attention data-parallel ranks (compose_decode_step).
  std::array<double, 3> decode_launches_{};
  struct PromptSums {
    double steps = 0, chunks = 0, tokens = 0, positions = 0, decodes = 0, decode_context = 0, launch_tokens = 0;
  } prompt_sums_;
  struct Snapshot {
    std::int64_t running = 0, waiting = 0, used = 0;  // used: KV blocks taken
    std::int64_t transfer = 0;                        // in a KV transfer to a decode instance
  };
  std::vector<Snapshot> snapshots_;  // each replica's state as last summed
  Snapshot sum_;                     // over the replicas
  std::vector<char> touched_flag_;
  std::vector<std::int32_t> touched_;
  std::array<std::int64_t, kSloMetrics> over_{};  // measured requests beyond each SLO target (in cfg_.slo's order)
  bool slo_missed_ = false;
  int quarter_ = -1;  // which quarter of the measured arrivals is coming in (4: all came)
  std::array<double, 4> quarter_waiting_{}, quarter_time_{};
  Integrals integrals_;
  Timeline timeline_;
  // The measurement window (simulator_window.cpp, docs/serving.md#measurement-window).
  struct Mark {
    double t_s = 0, in_system = 0, running = 0, kv_used = 0;  // at a block's end: the time and the integrals so far
  };
  bool window_ = false;         // cfg_.window.on
  int window_state_ = 0;        // window mode: 0 warm-up, 1 open (arrivals measured), 2 closed (cool-down)
  bool window_done_ = false;    // every measured request finished: the run stops
  bool window_forced_ = false;  // opened without the trend stopping
  bool queue_grew_ = false;     // at the last check of the trend, the requests waiting grew
  std::size_t flat_since_ = 0;  // the first of the checks (blocks marked) flat ever since; 0: the last was not
  std::int64_t block_ = 1;      // arrivals per block of the trend's marks
  std::int64_t next_mark_ = 0;  // the arrival that ends the next block
  std::int64_t force_at_ = 0;   // window mode: the arrival at which the window opens at the latest
  std::int64_t warmup_sent_ = 0, measured_done_ = 0;
  std::vector<Mark> marks_;     // marks_[i]: at the end of block i (marks_[0]: the start), reserved up front
  double trend_stopped_s_ = -1;
  double open_s_ = 0, close_s_ = 0;  // the window: its first and last measured arrival
  Integrals at_open_, at_close_;     // the integrals then
  std::int64_t window_served_ = 0, window_rejected_ = 0;  // requests that ended inside the window
  double window_tokens_ = 0, window_input_tokens_ = 0;    // output tokens emitted inside it; the prompts of those served
  ServingResult result_;
  // Leaps: on for the run's kind of deployment (cfg_.leap); per replica, its steps' ends,
  // periods and attention keys (kLeapMost + 1 each, step 0 the one started normally).
  bool leap_on_ = false;
  std::int64_t leaping_ = 0;  // replicas in a leap
  std::vector<Ps> leap_end_;
  std::vector<double> leap_period_, leap_keys_;
};

}  // namespace ridgeline::serving::detail
