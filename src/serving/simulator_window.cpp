// The simulator's measurement window: when the fleet's running requests and KV use stop
// trending (warm-up over), which arrivals are measured, and when the run has measured enough
// (docs/serving.md#measurement-window).
#include <algorithm>
#include <cmath>

#include "simulation.hpp"

namespace ridgeline::serving::detail {

// Every block_ arrivals (its first at 0), the time and the running and KV integrals so far;
// then, until it first holds, whether the trend has stopped.
void Simulation::mark_block(Ps t) {
  // Reserved for every block until the window opens at the latest; none needed once the trend stopped.
  if (trend_stopped_s_ >= 0 || marks_.size() == marks_.capacity()) return;
  catch_up_all(t, false);  // the blocks leaps took before t are in the KV integral
  marks_.push_back({to_s(t), integrals_.in_system, integrals_.running, integrals_.kv_used});
  // Flat at a check k0 and again at the first check k >= 4 k0 / 3 (else k0 is looked for
  // again): a lull in a queue that drifts up passes one check more often than two.
  if (trend_stopped_s_ >= 0) return;
  const std::size_t k = marks_.size() - 1;
  if (flat_since_ > 0 && 3 * k < 4 * flat_since_) return;
  const bool flat = trend_stopped();
  if (flat && flat_since_ > 0) trend_stopped_s_ = to_s(t);
  else flat_since_ = flat ? k : 0;
}

// With k blocks marked, the time averages of the requests in the system, those running and
// the KV use over the third quarter of the blocks [k/2, 3k/4) and over the last [3k/4, k): the
// trend has stopped when each moved by at most kSteadyTolerance of the larger (plus half a
// request, or half a percent of the cache, so that an idle fleet's noise is no trend).
// Comparing the last two quarters of everything so far, a slow drift is caught once the run is
// long enough for it to show (a run twice as long compares quarters twice as long). A fleet
// fills with requests of every age only over their lifetimes: each quarter lasts at least
// twice the mean E2E of the requests served so far (a plateau shorter than that is no
// steady state); at least 8 blocks. Whether the requests waiting (in the system, not running)
// grew as much is kept: a window opened without the trend stopping while they did is a queue
// that grows (sustainable()).
bool Simulation::trend_stopped() {
  const std::size_t k = marks_.size() - 1;  // blocks ended
  if (k < 8) return false;
  const Mark &a = marks_[k / 2], &b = marks_[3 * k / 4], &c = marks_[k];
  if (!(c.t_s > b.t_s && b.t_s > a.t_s)) return false;
  auto mean = [&](double Mark::*v, const Mark& from, const Mark& to) { return (to.*v - from.*v) / (to.t_s - from.t_s); };
  const double life = all_served_ > 0 ? all_e2e_sum_ / static_cast<double>(all_served_) : 0;
  // A count n's time average over a quarter T long varies by about sqrt(n x 2 life / T) (n
  // requests of lifetimes ~life): two quarters' differ within twice sqrt(2) of that, and the
  // KV use within as large a share of itself as the requests in the system.
  const double tq = std::min(b.t_s - a.t_s, c.t_s - b.t_s);
  auto noise = [&](double n) { return 2 * std::sqrt(2.0) * std::sqrt(std::max(0.0, n) * 2 * life / tq); };
  const double n_sys = std::max(mean(&Mark::in_system, a, b), mean(&Mark::in_system, b, c));
  auto flat = [&](double Mark::*v, double slack, double noise_share) {
    const double m1 = mean(v, a, b), m2 = mean(v, b, c);
    return std::abs(m2 - m1) <= kSteadyTolerance * std::max(m1, m2) + slack + noise_share;
  };
  const double w1 = mean(&Mark::in_system, a, b) - mean(&Mark::running, a, b), w2 = mean(&Mark::in_system, b, c) - mean(&Mark::running, b, c);
  queue_grew_ = w2 > (1 + kSteadyTolerance) * w1 + 0.5;
  if (tq < 2 * life) return false;
  const double kv = std::max(mean(&Mark::kv_used, a, b), mean(&Mark::kv_used, b, c));
  return flat(&Mark::in_system, 0.5, noise(n_sys)) &&
         flat(&Mark::running, 0.5, noise(std::max(mean(&Mark::running, a, b), mean(&Mark::running, b, c)))) &&
         flat(&Mark::kv_used, 0.005, n_sys > 0 ? kv * noise(n_sys) / n_sys : 0);
}

// Window mode: the requests arriving from now are measured, `reached`: because the trend stopped.
void Simulation::open_window(Ps t, bool reached) {
  catch_up_all(t, false);  // the tokens of steps ended before it are not the window's
  window_state_ = 1;
  window_forced_ = !reached;
  open_s_ = to_s(t);
  at_open_ = integrals_;
  warmup_sent_ = sent_ - 1;  // the arrivals before this one
}

bool Simulation::window_arrival(Ps t) {
  if (window_state_ == 0) {
    if (trend_stopped_s_ >= 0) open_window(t, true);
    else if (sent_ - 1 >= force_at_) open_window(t, false);
    else return false;
  }
  if (window_state_ != 1) return false;
  // The last measured arrival closes the window: the ones after keep the load on (cool-down).
  if (measured_arrivals_ + 1 == measured_total_) {
    catch_up_all(t, false);  // the tokens of steps ended before it are the window's
    window_state_ = 2;
    close_s_ = to_s(t);
    at_close_ = integrals_;
  }
  return true;
}

void Simulation::summarise_window(ServingResult& r) const {
  MeasuredWindow& s = r.steady_state;
  s.window = window_;
  s.sent = sent_;
  s.trend_stopped_s = trend_stopped_s_;
  if (window_) {
    s.reached = window_state_ > 0 && !window_forced_ && !queue_trend();
    s.warmup_s = open_s_;
    s.window_s = window_state_ == 2 ? close_s_ - open_s_ : 0;
    s.warmup_requests = window_state_ > 0 ? warmup_sent_ : sent_;
    s.cooldown_requests = sent_ - s.warmup_requests - measured_arrivals_;
  } else {
    // A fixed count: steady when the trend had stopped by the first measured arrival; never
    // after a drained warm-up, whose measured requests start on an idle fleet.
    s.drained = drains_warmup();
    s.warmup_s = measured_arrivals_ > 0 ? first_arrival_measured_ : 0;
    s.window_s = last_measured_arrival_ - first_arrival_measured_;
    s.reached = !s.drained && trend_stopped_s_ >= 0 && measured_arrivals_ > 0 && trend_stopped_s_ <= first_arrival_measured_ &&
                !queue_trend();
    s.warmup_requests = std::min(cfg_.workload.warmup, sent_);
  }
}

}  // namespace ridgeline::serving::detail
