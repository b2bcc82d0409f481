// Workloads: arrival processes and length distributions, drawn from written-out generators.
#include "ridgeline/serving/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"

namespace ridgeline::serving {

namespace {

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 26;
constexpr double kTwoPi = 6.283185307179586476925286766559;

// "A,B" after a distribution's name: two numbers (`example` the name's own, as in
// lognormal:200,0.6).
std::pair<double, double> two_numbers(std::string_view args, std::string_view s, const char* flag, const char* example) {
  const auto comma = args.find(',');
  if (comma == std::string_view::npos) {
    throw InputError(fmt::format("{}: '{}' needs two numbers after the colon, as in {}", flag, s, example));
  }
  const std::string where = fmt::format("{} '{}'", flag, s);
  return {parse_number(args.substr(0, comma), where), parse_number(args.substr(comma + 1), where)};
}

}  // namespace

ThinkTime parse_think_time(std::string_view s, const char* flag) {
  constexpr double kDay = 86400;
  ThinkTime t;
  t.text = std::string(s);
  auto time = [&](std::string_view v) {
    const double x = parse_duration(v, flag, kDay);
    if (!(x >= 0)) throw InputError(fmt::format("{}: '{}' must be a time of 0 or more", flag, v));
    return x;
  };
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) {
    t.a_s = s == "0" ? 0 : time(s);
    t.kind = t.a_s > 0 ? ThinkTime::Kind::fixed : ThinkTime::Kind::none;
    return t;
  }
  const std::string_view kind = s.substr(0, colon), args = s.substr(colon + 1);
  if (kind == "exp") {
    t.kind = ThinkTime::Kind::exponential;
    t.a_s = time(args);
  } else if (kind == "uniform") {
    const auto comma = args.find(',');
    if (comma == std::string_view::npos) throw InputError(fmt::format("{}: '{}' is not uniform:MIN,MAX, as in uniform:1s,5s", flag, s));
    t.kind = ThinkTime::Kind::uniform;
    t.a_s = time(args.substr(0, comma));
    t.b_s = time(args.substr(comma + 1));
    if (t.b_s < t.a_s) throw InputError(fmt::format("{}: '{}' has its maximum below its minimum", flag, s));
  } else {
    throw InputError(fmt::format("{}: '{}' is not a think time: expected TIME, exp:MEAN or uniform:MIN,MAX (as in exp:5s)", flag, s));
  }
  if (t.a_s == 0 && t.b_s == 0) t.kind = ThinkTime::Kind::none;
  return t;
}

LengthDist parse_length(std::string_view s, const char* flag) {
  LengthDist d;
  d.text = std::string(s);
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) {
    d.kind = LengthDist::Kind::fixed;
    d.a = static_cast<double>(parse_positive_int(s, flag));
    if (d.a > static_cast<double>(kMaxTokens)) {
      throw InputError(fmt::format("{}: {} tokens is out of range: expected 1 to {}", flag, s, kMaxTokens));
    }
    return d;
  }
  // The name first: a length that is none of these is refused as such, not for its numbers.
  const std::string_view kind = s.substr(0, colon);
  const char* example = nullptr;
  if (kind == "uniform") {
    d.kind = LengthDist::Kind::uniform;
    example = "uniform:100,200";
  } else if (kind == "normal") {
    d.kind = LengthDist::Kind::normal;
    example = "normal:200,50";
  } else if (kind == "lognormal") {
    d.kind = LengthDist::Kind::lognormal;
    example = "lognormal:200,0.6";
  } else {
    throw InputError(fmt::format("{}: '{}' is not a length: expected N, uniform:A,B, normal:MEAN,SD or lognormal:MEAN,SIGMA", flag, s));
  }
  const auto [a, b] = two_numbers(s.substr(colon + 1), s, flag, example);
  const double max = static_cast<double>(kMaxTokens);
  if (d.kind == LengthDist::Kind::uniform) {
    if (!(a >= 1 && b >= a && b <= max) || a != std::floor(a) || b != std::floor(b)) {
      throw InputError(fmt::format("{}: '{}' needs whole numbers 1 <= A <= B <= {}", flag, s, kMaxTokens));
    }
  } else if (d.kind == LengthDist::Kind::normal) {
    if (!(a >= 1 && a <= max && b >= 0 && b <= max)) {
      throw InputError(fmt::format("{}: '{}' needs a mean of 1 to {} tokens and a standard deviation of 0 or more", flag, s, kMaxTokens));
    }
  } else {  // lognormal
    if (!(a >= 1 && a <= max && b >= 0 && b <= 4)) {
      throw InputError(fmt::format("{}: '{}' needs a mean of 1 to {} tokens and a sigma of 0 to 4", flag, s, kMaxTokens));
    }
  }
  d.a = a;
  d.b = b;
  return d;
}

void parse_arrival(std::string_view s, WorkloadSpec& spec) {
  if (s == "poisson") {
    spec.arrival = Arrival::poisson;
  } else if (s == "constant") {
    spec.arrival = Arrival::constant;
  } else if (s.substr(0, 6) == "gamma:") {
    spec.arrival = Arrival::gamma;
    spec.cv = parse_number(s.substr(6), "--arrival gamma:CV");
    if (!(spec.cv > 0.01 && spec.cv <= 100)) {
      throw InputError(fmt::format("--arrival: '{}' needs a coefficient of variation above 0.01 and at most 100", s));
    }
  } else {
    throw InputError(fmt::format("--arrival: '{}' is not an arrival process: expected poisson, constant or gamma:CV", s));
  }
}

void validate(const WorkloadSpec& w) {
  if (w.think.kind != ThinkTime::Kind::none && w.arrival != Arrival::closed) {
    throw InputError("--think-time: users think between their requests in a closed loop: give --users N");
  }
  const bool open = w.arrival == Arrival::poisson || w.arrival == Arrival::gamma || w.arrival == Arrival::constant;
  if (open && !(w.qps > 0 && w.qps <= 1e7)) {
    throw InputError(fmt::format("--qps: {} is out of range: expected more than 0 and at most 1e7 requests per second", w.qps));
  }
  if (w.arrival == Arrival::closed && (w.concurrency < 1 || w.concurrency > (std::int64_t{1} << 24))) {
    throw InputError(fmt::format("--concurrency: {} is out of range: expected 1 to {}", w.concurrency, std::int64_t{1} << 24));
  }
  if (w.requests < 1 || w.requests > (std::int64_t{1} << 27)) {
    throw InputError(fmt::format("--requests: {} is out of range: expected 1 to {}", w.requests, std::int64_t{1} << 27));
  }
  if (w.warmup < 0 || w.warmup >= w.requests) {
    throw InputError(fmt::format("--warmup-requests: {} leaves no request to measure out of --requests {}", w.warmup, w.requests));
  }
  if (w.prefix_groups < 0 || w.prefix_groups > (std::int64_t{1} << 24)) {
    throw InputError(fmt::format("--prefix-groups: {} is out of range: expected 0 to {}", w.prefix_groups, std::int64_t{1} << 24));
  }
  if (w.prefix_tokens < 0 || w.prefix_tokens > kMaxTokens) {
    throw InputError(fmt::format("--prefix-tokens: {} is out of range: expected 0 to {}", w.prefix_tokens, kMaxTokens));
  }
  if ((w.prefix_groups > 0) != (w.prefix_tokens > 0) && w.arrival != Arrival::trace) {
    throw InputError("--prefix-groups/--prefix-tokens: give both (requests of a group share their first prefix tokens)");
  }
  if (w.prefix_groups > 0 && w.arrival != Arrival::trace) {
    // Every prompt holds the shared prefix and a token of its own: a draw shorter than that is
    // lengthened to prefix + 1 (docs/serving.md#workloads). A prefix as long as the prompts'
    // mean would lengthen most of them (a fixed length: all) and is refused.
    const LengthDist& p = w.prompt;
    double mean = p.a;
    if (p.kind == LengthDist::Kind::uniform) mean = (p.a + p.b) / 2;
    if (p.kind == LengthDist::Kind::empirical) {
      double sum = 0;
      for (const std::int64_t v : p.values) sum += static_cast<double>(v);
      mean = p.values.empty() ? 1 : sum / static_cast<double>(p.values.size());
    }
    if (static_cast<double>(w.prefix_tokens) >= mean) {
      throw InputError(fmt::format("--prefix-tokens: {} shared tokens leave no token of its own in {} {:g} tokens (--prompt {}): "
                                   "expected fewer",
                                   w.prefix_tokens, p.kind == LengthDist::Kind::fixed ? "a prompt of" : "prompts of mean", mean, p.text));
    }
  }
  if (w.arrival == Arrival::trace && !w.has_trace()) throw InputError("--trace: the file has no requests");
  if (w.arrival == Arrival::trace && w.retime != Arrival::trace) {
    if (!(w.qps > 0 && w.qps <= 1e7)) {
      throw InputError(fmt::format("--qps: {} is out of range: expected more than 0 and at most 1e7 requests per second (new arrivals for "
                                   "the trace's requests)",
                                   w.qps));
    }
    if (w.retime != Arrival::poisson && w.retime != Arrival::gamma && w.retime != Arrival::constant) {
      throw InputError("--arrival: a trace's requests take new arrivals from poisson, constant or gamma:CV");
    }
  }
}

double Rng::normal() noexcept {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double r = std::sqrt(-2 * std::log(uniform())), t = kTwoPi * uniform();
  spare_ = r * std::sin(t);
  has_spare_ = true;
  return r * std::cos(t);
}

double Rng::exponential() noexcept { return -std::log(uniform()); }

double Rng::gamma(double shape) noexcept {
  // Marsaglia and Tsang (2000); shapes below 1 through Gamma(shape + 1)·U^(1/shape).
  if (shape < 1) return gamma(shape + 1) * std::pow(uniform(), 1 / shape);
  const double d = shape - 1.0 / 3, c = 1 / std::sqrt(9 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = normal();
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
  }
}

namespace {

// A lognormal length's mu, `a` being its mean: ln(a) - sigma^2 / 2 (0 for the other kinds).
double lognormal_mu(const LengthDist& d) noexcept {
  return d.kind == LengthDist::Kind::lognormal ? std::log(d.a) - d.b * d.b / 2 : 0;
}

}  // namespace

RequestSource::RequestSource(const WorkloadSpec& spec, const std::vector<Request>* drawn)
    : spec_(spec), drawn_list_(drawn), arrivals_(spec.seed * 3 + 1), lengths_(spec.seed * 3 + 2), groups_(spec.seed * 3 + 3),
      retime_(spec.seed * 7 + 5), think_(spec.seed * 11 + 6) {
  total_ = spec.arrival != Arrival::trace ? spec.requests
           : spec.open_trace               ? spec.requests
                                           : std::min<std::int64_t>(spec.requests, static_cast<std::int64_t>(spec.trace.size()));
  if (drawn_list_ != nullptr && static_cast<std::int64_t>(drawn_list_->size()) != total_) drawn_list_ = nullptr;
  if (drawn_list_ == nullptr && spec.arrival == Arrival::trace && spec.open_trace) stream_ = spec.open_trace();
  prompt_mu_ = lognormal_mu(spec.prompt);
  gen_mu_ = lognormal_mu(spec.gen);
}

double RequestSource::think_s() noexcept {
  const ThinkTime& t = spec_.think;
  switch (t.kind) {
    case ThinkTime::Kind::none: return 0;
    case ThinkTime::Kind::fixed: return t.a_s;
    case ThinkTime::Kind::exponential: return t.a_s * think_.exponential();
    case ThinkTime::Kind::uniform: return t.a_s + (t.b_s - t.a_s) * think_.uniform();
  }
  return 0;
}

std::int64_t RequestSource::length(const LengthDist& d, double mu, Rng& rng) noexcept {
  double v = d.a;
  switch (d.kind) {
    case LengthDist::Kind::fixed: break;
    case LengthDist::Kind::uniform:
      v = d.a + std::floor(rng.uniform() * (d.b - d.a + 1));
      break;
    case LengthDist::Kind::normal: v = std::round(d.a + d.b * rng.normal()); break;
    case LengthDist::Kind::lognormal: v = std::round(std::exp(mu + d.b * rng.normal())); break;
    case LengthDist::Kind::empirical:
      v = d.values.empty() ? 1
                           : static_cast<double>(d.values[static_cast<std::size_t>(
                                 std::min<double>(rng.uniform() * static_cast<double>(d.values.size()),
                                                  static_cast<double>(d.values.size() - 1)))]);
      break;
  }
  return static_cast<std::int64_t>(std::clamp(v, 1.0, static_cast<double>(kMaxTokens)));
}

bool RequestSource::next(Request& r) {
  if (drawn_ >= total_) return false;
  const std::int64_t i = drawn_++;
  if (drawn_list_ != nullptr) {
    r = (*drawn_list_)[static_cast<std::size_t>(i)];
    return true;
  }
  if (spec_.arrival == Arrival::trace) {
    if (stream_) {
      if (!stream_->next(r)) {
        // Fewer rows than counted when it was opened: the file changed under the run.
        throw InputError(fmt::format("--trace {}: {} requests when opened, {} now: the file changed during the run", spec_.trace_name,
                                     total_, i));
      }
    } else {
      r = spec_.trace[static_cast<std::size_t>(i)];
    }
    if (spec_.retime != Arrival::trace) {
      // The trace's lengths, arrivals drawn anew: the first at 0, each next a gap of mean 1/qps later.
      if (i > 0) {
        const double shape = 1 / (spec_.cv * spec_.cv);
        clock_s_ += (spec_.retime == Arrival::constant ? 1.0
                     : spec_.retime == Arrival::gamma  ? retime_.gamma(shape) / shape
                                                       : retime_.exponential()) /
                    spec_.qps;
      }
      r.arrival_s = clock_s_;
    }
    return true;
  }
  // The first request at 0, each next one a gap later.
  if (i > 0) {
    switch (spec_.arrival) {
      case Arrival::poisson: clock_s_ += arrivals_.exponential() / spec_.qps; break;
      case Arrival::gamma: {
        // Gaps of mean 1/qps and coefficient of variation cv: shape 1/cv^2, scale cv^2/qps.
        const double shape = 1 / (spec_.cv * spec_.cv);
        clock_s_ += arrivals_.gamma(shape) / (shape * spec_.qps);
        break;
      }
      case Arrival::constant: clock_s_ = static_cast<double>(i) / spec_.qps; break;
      default: break;  // closed loop: the simulator sets it
    }
  }
  r.arrival_s = clock_s_;
  r.input = length(spec_.prompt, prompt_mu_, lengths_);
  r.output = length(spec_.gen, gen_mu_, lengths_);
  r.prefix_group = -1;
  r.prefix_tokens = 0;
  if (spec_.prefix_groups > 0) {
    r.prefix_group = static_cast<std::int32_t>(std::min<double>(groups_.uniform() * static_cast<double>(spec_.prefix_groups),
                                                                static_cast<double>(spec_.prefix_groups - 1)));
    // Every request of a group holds the whole shared prefix and at least one token of its own.
    r.prefix_tokens = spec_.prefix_tokens;
    r.input = std::max(r.input, spec_.prefix_tokens + 1);
  }
  return true;
}

}  // namespace ridgeline::serving
