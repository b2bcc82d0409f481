#pragma once
/// Requests and the workloads that make them (docs/serving.md#workloads): arrivals (open
/// loop at a rate: Poisson, gamma-bursty or evenly spaced; closed loop: a fixed number of
/// clients; or a trace) composed with length distributions and shared-prefix groups.
/// Seeded and deterministic: the same spec and seed give the same requests on every machine
/// (the generator and every distribution are written out here, not left to the standard
/// library's unspecified algorithms).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ridgeline::serving {

/// One request as a client sends it.
struct Request {
  double arrival_s = 0;        ///< when it is sent, seconds from the start
  std::int64_t input = 1;      ///< prompt tokens
  std::int64_t output = 1;     ///< tokens to generate (benchmark clients fix it: ignore_eos)
  std::int32_t prefix_group = -1;  ///< requests of a group share their first prefix_tokens (-1: none)
  std::int64_t prefix_tokens = 0;
};

/// A token-length distribution: fixed, uniform integers [a, b], normal (mean, sd), lognormal
/// (mean of the distribution, sigma of its log), or the empirical lengths of a trace.
struct LengthDist {
  enum class Kind : std::uint8_t { fixed, uniform, normal, lognormal, empirical };
  Kind kind = Kind::fixed;
  double a = 128, b = 0;             ///< fixed: a; uniform: [a, b]; normal: mean a, sd b; lognormal: mean a, sigma b
  std::vector<std::int64_t> values;  ///< empirical: drawn uniformly
  std::string text;                  ///< as given, for reports
};

/// Parses "N", "uniform:A,B", "normal:MEAN,SD", "lognormal:MEAN,SIGMA"; InputError naming `flag`.
LengthDist parse_length(std::string_view s, const char* flag);

/// A closed-loop user's think time between the end of its request and its next: none, fixed,
/// exponential (mean a_s) or uniform in [a_s, b_s] (docs/serving.md#workloads).
struct ThinkTime {
  enum class Kind : std::uint8_t { none, fixed, exponential, uniform };
  Kind kind = Kind::none;
  double a_s = 0, b_s = 0;
  std::string text = "0";  ///< as given, for reports
};

/// Parses "TIME" (fixed, "0" none), "exp:TIME" (exponential, that mean) or "uniform:TIME,TIME",
/// each at most a day; InputError naming `flag`.
ThinkTime parse_think_time(std::string_view s, const char* flag);

/// Requests read in order from elsewhere than a generator (io::RequestTraceReader reads a
/// trace file row by row).
class RequestStream {
 public:
  virtual ~RequestStream() = default;
  /// The next request (its arrival relative to the first), or false after the last;
  /// InputError for one that cannot be read.
  virtual bool next(Request& r) = 0;
};

/// How requests arrive.
enum class Arrival : std::uint8_t {
  poisson,   ///< exponential gaps at the rate
  gamma,     ///< gamma gaps with a coefficient of variation (bursty for CV > 1)
  constant,  ///< evenly spaced
  closed,    ///< `concurrency` clients, each sending its next request when the last finishes
  trace      ///< timestamps and lengths read from a file
};

struct WorkloadSpec {
  Arrival arrival = Arrival::poisson;
  double qps = 1;           ///< open loop: mean requests per second
  double cv = 1;            ///< gamma: coefficient of variation of the gaps
  std::int64_t concurrency = 1;  ///< closed loop: clients (users)
  ThinkTime think;               ///< closed loop: each user's pause between its requests
  LengthDist prompt, gen;   ///< lengths of synthetic requests
  std::int64_t requests = 1000;  ///< requests to send (a trace: at most its rows)
  std::int64_t warmup = 0;  ///< the first requests, served but left out of every statistic
  /// false: the warm-up is the first requests of one stream, the measured ones following on
  /// without a pause (a load already running, as a fleet sees it). true (`--warmup-drain on`):
  /// a phase of its own, as benchmark clients run it (vLLM's `bench serve --num-warmups`,
  /// perf_analyzer's `--warmup-request-count`, AIPerf's, InferenceX's client): the measured
  /// requests start once every warm-up request has ended, on an idle fleet (a closed loop's
  /// clients all at once; open-loop arrivals shifted to start then, their gaps kept). The
  /// warm-up requests themselves come as the load sends any request.
  bool warmup_drained = false;
  std::uint64_t seed = 1;
  std::int64_t prefix_groups = 0;  ///< synthetic: requests spread uniformly over this many groups
  std::int64_t prefix_tokens = 0;  ///< sharing their first prefix_tokens (at most the prompt)
  std::vector<Request> trace;      ///< arrival == trace: the requests (sorted by arrival), unless open_trace is set
  /// arrival == trace: opens the trace from its first row, as each run reads it (row by row,
  /// only as far as the run goes: memory does not grow with the trace); `requests` is then the
  /// number of its rows the run takes, counted when it was opened.
  std::function<std::unique_ptr<RequestStream>()> open_trace;
  std::string trace_name;          ///< the trace's file, for reports
  /// A trace's lengths with new arrivals at `qps` by this process (poisson, gamma with `cv`,
  /// constant); Arrival::trace: the trace's own timestamps.
  Arrival retime = Arrival::trace;
  /// Whether a trace is in the workload (in memory or opened row by row).
  bool has_trace() const noexcept { return arrival == Arrival::trace && (open_trace || !trace.empty()); }
};

/// Parses "poisson", "constant", "gamma:CV" into spec.arrival / spec.cv; InputError naming --arrival.
void parse_arrival(std::string_view s, WorkloadSpec& spec);

/// Throws InputError naming the flag for a spec that cannot make requests.
void validate(const WorkloadSpec& spec);

/// A counter-based generator (SplitMix64): a 64-bit state advanced by a fixed odd constant and
/// mixed, so streams are reproducible everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1): never 0, so its log is finite.
  double uniform() noexcept { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  double normal() noexcept;                ///< standard normal (Box-Muller, both values used)
  double exponential() noexcept;           ///< mean 1
  double gamma(double shape) noexcept;     ///< mean `shape`, scale 1 (Marsaglia-Tsang)

 private:
  std::uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

/// Draws the requests of a spec one at a time; arrivals and lengths come from independent
/// streams, so changing the rate keeps every request's lengths. Closed-loop arrivals are set
/// by the simulator (when a client's previous request ends): here they are 0.
class RequestSource {
 public:
  /// `drawn`: the requests of `spec` drawn already (read in order instead of drawn again).
  explicit RequestSource(const WorkloadSpec& spec, const std::vector<Request>* drawn = nullptr);
  /// The next request, or false when all were drawn; InputError for a trace row that cannot
  /// be read.
  bool next(Request& r);
  std::int64_t total() const noexcept { return total_; }
  /// A closed-loop user's next think time, seconds (a stream of its own: the lengths stay).
  double think_s() noexcept;

 private:
  /// `mu`: a lognormal's ln(mean) - sigma^2 / 2, worked out once (lognormal_mu).
  std::int64_t length(const LengthDist& d, double mu, Rng& rng) noexcept;
  const WorkloadSpec& spec_;
  double prompt_mu_ = 0, gen_mu_ = 0;
  const std::vector<Request>* drawn_list_ = nullptr;
  std::unique_ptr<RequestStream> stream_;  // a trace read row by row
  Rng arrivals_, lengths_, groups_, retime_, think_;
  double clock_s_ = 0;
  std::int64_t drawn_ = 0, total_ = 0;
};

}  // namespace ridgeline::serving
