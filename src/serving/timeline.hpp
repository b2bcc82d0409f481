#pragma once
// The serving run's state over time, bucketed (private to the simulator; docs/serving.md#simulator).
#include <algorithm>
#include <cstddef>
#include <vector>

#include "replica.hpp"
#include "ridgeline/serving/simulator.hpp"

namespace ridgeline::serving::detail {

// Running / waiting / KV / tokens over time in at most 2·points buckets: when they fill up,
// neighbours merge and the bucket width doubles.
class Timeline {
 public:
  explicit Timeline(int points) : max_(std::max(2, points)) {}
  void add(Ps t0, Ps t1, double running, double waiting, double kv) {
    over(t0, t1, [&](Bucket& k, double dt) { k.running += running * dt, k.waiting += waiting * dt, k.kv += kv * dt, k.covered += dt; });
  }
  // kv more KV use over [t0, t1), whose time is counted already (or is to be: a correction).
  void add_kv(Ps t0, Ps t1, double kv) {
    over(t0, t1, [&](Bucket& k, double dt) { k.kv += kv * dt; });
  }
  void tokens(Ps t, double n) {
    if (t >= lo_ && t < hi_) {  // (the last bucket touched: most events fall in it)
      buckets_[last_].tokens += n;
      return;
    }
    if (width_ == 0) width_ = std::max<Ps>(1, to_ps(1e-3));
    while (t >= static_cast<Ps>(2 * max_) * width_) grow();
    buckets_[bucket(t)].tokens += n;
  }
  std::vector<TimePoint> points() const {
    std::vector<TimePoint> out;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      const Bucket& k = buckets_[b];
      const double w = to_s(width_);
      TimePoint p;
      p.t_s = (static_cast<double>(b) + 0.5) * w;
      if (k.covered > 0) p.running = k.running / k.covered, p.waiting = k.waiting / k.covered, p.kv_used = k.kv / k.covered;
      p.tokens_per_s = k.tokens / w;
      out.push_back(p);
    }
    return out;
  }

 private:
  struct Bucket {
    double running = 0, waiting = 0, kv = 0, covered = 0, tokens = 0;
  };
  // f(bucket, seconds of [t0, t1) in it) for each bucket [t0, t1) spans.
  template <class F>
  void over(Ps t0, Ps t1, F f) {
    if (t1 <= t0 || max_ <= 0) return;
    if (width_ == 0) width_ = std::max<Ps>(1, to_ps(1e-3));
    while (t1 > static_cast<Ps>(2 * max_) * width_) grow();
    for (auto b = t0 >= lo_ && t0 < hi_ ? last_ : static_cast<std::size_t>(t0 / width_); t0 < t1; ++b) {
      if (b >= buckets_.size()) buckets_.resize(b + 1);
      const Ps end = std::min<Ps>(t1, static_cast<Ps>(b + 1) * width_);
      f(buckets_[b], to_s(end - t0));
      t0 = end;
    }
  }
  // The bucket of time t (within the 2·points), made to exist; remembered with its bounds.
  std::size_t bucket(Ps t) {
    last_ = static_cast<std::size_t>(t / width_);
    lo_ = static_cast<Ps>(last_) * width_;
    hi_ = lo_ + width_;
    if (last_ >= buckets_.size()) buckets_.resize(last_ + 1);
    return last_;
  }
  void grow() {
    std::vector<Bucket> merged((buckets_.size() + 1) / 2);
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      Bucket& m = merged[b / 2];
      const Bucket& k = buckets_[b];
      m.running += k.running, m.waiting += k.waiting, m.kv += k.kv, m.covered += k.covered, m.tokens += k.tokens;
    }
    buckets_ = std::move(merged);
    width_ *= 2;
    lo_ = hi_ = 0;  // (no bucket remembered)
  }
  int max_;
  Ps width_ = 0;
  std::vector<Bucket> buckets_;
  std::size_t last_ = 0;  // the bucket last found (bucket()), over [lo_, hi_)
  Ps lo_ = 0, hi_ = 0;
};

}  // namespace ridgeline::serving::detail
