// The serving workload's flags, shared by `serve` and `search serve` (../shared/CLI.md#serve).
#include <fmt/format.h>

#include "common.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/request_trace.hpp"

namespace ridgeline::cli {

namespace {

// A length distribution, or `empirical:FILE`: the prompt (or output) lengths of a trace's rows,
// drawn uniformly.
serving::LengthDist length_flag(const std::string& v, const char* flag, bool prompt) {
  if (v.rfind("empirical:", 0) != 0) return serving::parse_length(v, flag);
  serving::LengthDist d;
  d.kind = serving::LengthDist::Kind::empirical;
  d.text = v;
  io::RequestTraceReader reader(v.substr(10));
  serving::Request r;
  while (reader.next(r)) d.values.push_back(prompt ? r.input : r.output);
  if (d.values.empty()) throw InputError(fmt::format("{}: {}: no requests to draw lengths from", flag, v.substr(10)));
  return d;
}

// The most requests a run that chooses its window may send: half of them for the warm-up at
// most (docs/serving.md#measurement-window).
constexpr std::int64_t kWindowRequests = std::int64_t{1} << 18;

std::int64_t count_flag(const std::string& v, const char* flag) {
  if (v == "0") return 0;
  return parse_positive_int(v, flag);
}

}  // namespace

void add_workload_flags(CLI::App* s, WorkloadFlags& f) {
  f.app = s;
  s->add_option("--qps", f.qps, "open loop: requests per second (several, comma-separated: a sweep)");
  s->add_option("--arrival", f.arrival, "poisson, constant or gamma:CV")->capture_default_str();
  s->add_option("--concurrency", f.concurrency, "closed loop: clients each sending a request when the last ends");
  s->add_option("--users", f.users, "closed loop: users each sending a request --think-time after the last ends")->type_name("N");
  s->add_option("--think-time", f.think_time, "with --users: TIME, exp:MEAN or uniform:MIN,MAX between a user's requests (default 0)")
      ->type_name("DIST");
  s->add_option("--trace", f.trace, "requests from a CSV or JSONL file (timestamp_s, input_tokens, output_tokens; or the Azure trace)");
  s->add_option("--prompt", f.prompt, "prompt tokens: N, uniform:A,B, normal:MEAN,SD, lognormal:MEAN,SIGMA or empirical:TRACE")->capture_default_str();
  s->add_option("--gen", f.gen, "output tokens, as --prompt")->capture_default_str();
  s->add_option("--requests", f.requests,
                "requests to send, the first --warmup-requests left out (default: the run measures a window of its own, warm-up "
                "and drain left out; with --trace, all its rows)");
  s->add_option("--warmup-requests", f.warmup, "first requests served but left out of the statistics (a count fixed by hand)")->capture_default_str();
  s->add_option("--warmup-drain", f.warmup_drain,
                "with --warmup-requests: off, the measured requests follow the warm-up's in one stream; on, they start once the "
                "warm-up's have all ended, on an idle fleet, as benchmark clients run a warm-up")
      ->capture_default_str();
  s->add_option("--seed", f.seed, "random seed")->capture_default_str();
  s->add_option("--seeds", f.seeds, "runs with seeds S, S+1, ..., S+N-1: every percentile's spread, fleets sized on the worst (1 to 64)")
      ->type_name("N");
  s->add_option("--seed-quantile", f.seed_quantile,
                "with --seeds: the run at this quantile of the seeds ordered by distance to the targets (default 1: the worst)")
      ->type_name("Q");
  s->add_option("--prefix-groups", f.prefix_groups, "requests spread over this many groups sharing a prefix");
  s->add_option("--prefix-tokens", f.prefix_tokens, "tokens of the prefix a group shares");
  s->add_option("--sampling", f.sampling,
                "the clients' sampling: greedy (temperature 0) or random (a temperature, nothing cut); top-p and top-k are not modelled")
      ->capture_default_str();
}

model::ForwardConfig::Sampling sampling_mode(const WorkloadFlags& f) {
  if (f.sampling == "greedy") return model::ForwardConfig::Sampling::greedy;
  if (f.sampling == "random") return model::ForwardConfig::Sampling::random;
  throw InputError(fmt::format("--sampling: '{}': expected greedy or random (top-p and top-k are not modelled: docs/serving.md#sampling)",
                               f.sampling));
}

std::vector<double> qps_rates(const std::string& v) {
  std::vector<double> out;
  for (const std::string& item : split_list(v)) out.push_back(parse_number(item, "--qps"));
  if (out.size() > 64) throw InputError(fmt::format("--qps: {} rates; at most 64 in one sweep", out.size()));
  return out;
}

serving::MeasurementWindow measurement_window(const WorkloadFlags& f) {
  serving::MeasurementWindow m;
  const bool warmup_given = f.app != nullptr && f.app->count("--warmup-requests") > 0;
  m.on = f.requests.empty() && f.trace.empty() && !warmup_given;
  return m;
}

serving::SeedsConfig seeds_config(const WorkloadFlags& f) {
  serving::SeedsConfig s;
  if (!f.seeds.empty()) {
    const std::int64_t n = parse_positive_int(f.seeds, "--seeds");
    if (n > serving::kMaxSeeds) {
      throw InputError(fmt::format("--seeds: {} is out of range: expected 1 to {} runs", f.seeds, serving::kMaxSeeds));
    }
    s.count = static_cast<int>(n);
  }
  if (!f.seed_quantile.empty()) {
    const double q = parse_number(f.seed_quantile, "--seed-quantile");
    if (!(q > 0 && q <= 1)) throw InputError(fmt::format("--seed-quantile: {} is out of range: expected above 0 and at most 1", f.seed_quantile));
    if (s.count < 2) throw InputError("--seed-quantile: a quantile of the seeds needs --seeds N of 2 or more");
    s.quantile = q;
  }
  return s;
}

serving::WorkloadSpec workload_spec(const WorkloadFlags& f) {
  serving::WorkloadSpec w;
  const int loads = (f.qps.empty() ? 0 : 1) + (f.concurrency.empty() ? 0 : 1) + (f.trace.empty() ? 0 : 1) + (f.users.empty() ? 0 : 1);
  if (loads == 0) throw InputError("serve: give the load: --qps R, --concurrency N, --users N or --trace FILE");
  if (!f.users.empty() && loads > 1) throw InputError("--users: a closed loop of users takes no --qps, --concurrency or --trace");
  if (!f.concurrency.empty() && loads > 1) throw InputError("--concurrency: a closed loop takes no --qps or --trace");
  if (!f.think_time.empty() && f.users.empty()) throw InputError("--think-time: the pause of each of --users N between requests: give --users");
  // A flag the load does not use is refused, never echoed as applied (given: on the command line).
  auto given = [&](const char* flag) { return f.app != nullptr && f.app->count(flag) > 0; };
  if (!f.trace.empty()) {
    for (const char* flag : {"--prompt", "--gen", "--prefix-groups", "--prefix-tokens"}) {
      if (given(flag)) {
        throw InputError(fmt::format("{}: a trace gives each request's lengths and prefix (its columns input_tokens, output_tokens, "
                                     "prefix_group, prefix_tokens): drop {} or the trace",
                                     flag, flag));
      }
    }
    if (given("--arrival") && f.qps.empty()) {
      throw InputError("--arrival: a trace's requests arrive at its timestamps: give --qps R too for new arrivals at that rate");
    }
  }
  if ((!f.concurrency.empty() || !f.users.empty()) && given("--arrival")) {
    throw InputError("--arrival: a closed loop's clients each send their next request when the last ends: no arrival process");
  }
  w.prompt = length_flag(f.prompt, "--prompt", true);
  w.gen = length_flag(f.gen, "--gen", false);
  // Without --requests the run chooses its window: this is then the most it may send.
  w.requests = f.requests.empty() ? kWindowRequests : parse_positive_int(f.requests, "--requests");
  w.warmup = count_flag(f.warmup, "--warmup-requests");
  if (f.warmup_drain != "on" && f.warmup_drain != "off") {
    throw InputError(fmt::format("--warmup-drain: '{}': expected on or off", f.warmup_drain));
  }
  if (f.warmup_drain == "on" && w.warmup == 0) {
    throw InputError("--warmup-drain: on drains a warm-up: give --warmup-requests K too (with none, the measured requests start at once)");
  }
  w.warmup_drained = f.warmup_drain == "on";
  w.seed = static_cast<std::uint64_t>(count_flag(f.seed, "--seed"));
  if (!f.prefix_groups.empty()) w.prefix_groups = count_flag(f.prefix_groups, "--prefix-groups");
  if (!f.prefix_tokens.empty()) w.prefix_tokens = count_flag(f.prefix_tokens, "--prefix-tokens");
  if (!f.users.empty()) {
    w.arrival = serving::Arrival::closed;
    w.concurrency = parse_positive_int(f.users, "--users");
    if (w.concurrency > (std::int64_t{1} << 24)) throw InputError(fmt::format("--users: {} is out of range: expected 1 to {}", f.users, std::int64_t{1} << 24));
    if (!f.think_time.empty()) w.think = serving::parse_think_time(f.think_time, "--think-time");
  } else if (!f.concurrency.empty()) {
    w.arrival = serving::Arrival::closed;
    w.concurrency = parse_positive_int(f.concurrency, "--concurrency");
  } else if (!f.trace.empty()) {
    w.arrival = serving::Arrival::trace;
    w.prompt.text = w.gen.text = "from the trace";
    // Read row by row as each run goes: only the rows it takes are counted now (the whole
    // trace unless --requests asks for fewer), none is kept.
    constexpr std::int64_t kMaxRequests = std::int64_t{1} << 27;
    const io::TraceFile t = io::open_request_trace(f.trace, f.requests.empty() ? kMaxRequests + 1 : std::min(w.requests, kMaxRequests + 1));
    if (t.requests > kMaxRequests) {
      throw InputError(fmt::format("--trace: {} has more than {} requests: take some with --requests N", f.trace, kMaxRequests));
    }
    w.requests = t.requests;
    w.open_trace = t.open;
    w.trace_name = f.trace;
    if (!f.qps.empty()) {
      // The trace's lengths with new arrivals at this rate.
      const std::vector<double> r = qps_rates(f.qps);
      if (r.size() != 1) throw InputError("--qps: one rate with --trace");
      w.qps = r[0];
      serving::parse_arrival(f.arrival, w);
      w.retime = w.arrival;
      w.arrival = serving::Arrival::trace;
    }
  } else {
    serving::parse_arrival(f.arrival, w);
    w.qps = qps_rates(f.qps)[0];
  }
  return w;
}

}  // namespace ridgeline::cli
