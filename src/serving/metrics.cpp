// Latency distributions: exact samples, folded into a log-spaced histogram past a limit.
#include "ridgeline/serving/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ridgeline::serving {

namespace {
constexpr int kSubBits = 10;
constexpr int kSub = 1 << kSubBits;  // buckets per factor of two
constexpr int kMinExp = -40;    // 2^-40 s (~1 ps) and below share bucket 0
constexpr int kMaxExp = 30;     // up to 2^30 s
constexpr int kBuckets = (kMaxExp - kMinExp) * kSub + 1;
}  // namespace

int Distribution::bucket(double v) noexcept {
  if (!(v > 0)) return 0;
  // frexp's v = m·2^e, m in [0.5, 1), read off the bits of a positive double (no call): e is
  // the biased exponent less 1022, and (m - 0.5)·2·kSub, whose floor is the sub-bucket, is
  // the mantissa's top log2(kSub) bits (m = (1 + f)/2, so (m - 0.5)·2·kSub = f·kSub).
  std::uint64_t bits = 0;  // (std::bit_cast's bytes: the web build's libc++ has no bit_cast)
  std::memcpy(&bits, &v, sizeof bits);
  const int e = static_cast<int>(bits >> 52) - 1022;  // (a subnormal: -1022, far under kMinExp)
  if (e <= kMinExp) return 0;
  if (e > kMaxExp) return kBuckets - 1;  // (infinity too, which frexp left undefined here)
  const int sub = static_cast<int>((bits >> (52 - kSubBits)) & (kSub - 1));
  return 1 + (e - kMinExp - 1) * kSub + sub;
}

double Distribution::bucket_value(int b) noexcept {
  if (b <= 0) return 0;
  const int e = (b - 1) / kSub + kMinExp + 1, sub = (b - 1) % kSub;
  // The bucket's middle: m in [0.5 + sub/2048, 0.5 + (sub + 1)/2048).
  return std::ldexp(0.5 + (sub + 0.5) / (2.0 * kSub), e);
}

void Distribution::add(double v, double weight) {
  if (!(weight > 0)) return;
  v = std::max(v, 0.0);
  if (count_ == 0) min_ = max_ = v;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
  count_ += weight;
  sum_ += v * weight;
  if (!folded_) {
    // Consecutive equal values (every token of a decode step) share one entry, and the
    // histogram takes over past kExactLimit such entries. While every sample comes alone, an
    // equal neighbour is kept as an entry of its own, so that quantiles select their order
    // statistics rather than sort (the same values); up to 4 x the limit, then merged.
    const bool same = !exact_.empty() && exact_.back().first == v;
    if (same && unit_ && weight == 1 && exact_.size() < 4 * kExactLimit) {
      exact_.emplace_back(v, weight);
      return;
    }
    if (same) {
      if (unit_) merge_neighbours();
      exact_.back().second += weight;
      unit_ = false;
      return;
    }
    if (weight != 1 && unit_) merge_neighbours();
    if (weight != 1) unit_ = false;
    if (!exact_.empty() && v < exact_.back().first) sorted_ = false;
    exact_.emplace_back(v, weight);
    if (++entries_ > kExactLimit) fold();
    return;
  }
  hist_[static_cast<std::size_t>(bucket(v))] += weight;
}

void Distribution::merge_neighbours() {
  // The entries consecutive equal values would have shared all along (entries_ of them).
  std::size_t k = 0;
  for (std::size_t i = 0; i < exact_.size(); ++i) {
    if (k > 0 && exact_[k - 1].first == exact_[i].first) exact_[k - 1].second += exact_[i].second;
    else exact_[k++] = exact_[i];
  }
  exact_.resize(k);
  unit_ = false;
}

void Distribution::sort_values() const {
  // By value only: the order of equal values' entries changes no quantile (their weights are
  // whole counts, summed exactly in any order).
  std::sort(exact_.begin(), exact_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
}

void Distribution::fold() {
  hist_.assign(kBuckets, 0);
  for (const auto& [v, w] : exact_) hist_[static_cast<std::size_t>(bucket(v))] += w;
  exact_.clear();
  exact_.shrink_to_fit();
  folded_ = true;
}

double Distribution::quantile(double q) const {
  if (count_ <= 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  if (!folded_ && !sorted_ && unit_) return quantiles({q}).front();  // selected, not sorted
  if (!folded_) {
    if (!sorted_) {
      sort_values();
      sorted_ = true;
    }
    // Linear between order statistics: rank q·(n - 1) over the n samples (weights count as
    // repeated samples).
    const double rank = q * (count_ - 1);
    double below = 0;  // samples before the current entry
    for (std::size_t i = 0; i < exact_.size(); ++i) {
      const double w = exact_[i].second;
      if (rank <= below + w - 1 || i + 1 == exact_.size()) return exact_[i].first;
      if (rank < below + w) {
        // Between the entry's last copy and the next entry.
        const double frac = rank - (below + w - 1);
        return exact_[i].first + frac * (exact_[i + 1].first - exact_[i].first);
      }
      below += w;
    }
    return exact_.back().first;
  }
  const double target = q * count_;
  double seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += hist_[static_cast<std::size_t>(b)];
    if (seen >= target && hist_[static_cast<std::size_t>(b)] > 0) return std::clamp(bucket_value(b), min_, max_);
  }
  return max_;
}

std::vector<double> Distribution::quantiles(const std::vector<double>& qs) const {
  std::vector<double> out;
  out.reserve(qs.size());
  if (folded_) {
    for (const double q : qs) out.push_back(quantile(q));
    return out;
  }
  if (count_ <= 0) return std::vector<double>(qs.size(), 0);
  if (!sorted_ && unit_ && qs.size() <= 8) {
    // Every entry one sample: the order statistics each q reads, selected rather than sorted
    // (what the walk below finds: the value at rank ⌊q(n - 1)⌋, and the next one when q(n - 1)
    // lies between them). The qs ascend, so each selection searches what the last left above.
    const auto less = [](const auto& a, const auto& b) { return a.first < b.first; };
    const auto begin = exact_.begin();
    std::size_t from = 0;
    for (double q : qs) {
      q = std::clamp(q, 0.0, 1.0);
      const double rank = q * (count_ - 1);
      const auto i = std::min(static_cast<std::size_t>(rank), exact_.size() - 1);
      std::nth_element(begin + static_cast<std::ptrdiff_t>(from), begin + static_cast<std::ptrdiff_t>(i), exact_.end(), less);
      from = i;
      const double v = exact_[i].first;
      if (rank <= static_cast<double>(i) || i + 1 == exact_.size()) {
        out.push_back(v);
        continue;
      }
      const double next = std::min_element(begin + static_cast<std::ptrdiff_t>(i) + 1, exact_.end(), less)->first;
      out.push_back(v + (rank - static_cast<double>(i)) * (next - v));
    }
    return out;
  }
  if (!sorted_) {
    sort_values();
    sorted_ = true;
  }
  // The walk of quantile(), resumed from where the last q left it.
  std::size_t i = 0;
  double below = 0;
  for (double q : qs) {
    q = std::clamp(q, 0.0, 1.0);
    const double rank = q * (count_ - 1);
    while (i + 1 < exact_.size() && rank >= below + exact_[i].second) below += exact_[i++].second;
    const double w = exact_[i].second;
    if (rank <= below + w - 1 || i + 1 == exact_.size()) {
      out.push_back(exact_[i].first);
    } else {
      const double frac = rank - (below + w - 1);
      out.push_back(exact_[i].first + frac * (exact_[i + 1].first - exact_[i].first));
    }
  }
  return out;
}

Summary Distribution::summary() const {
  Summary s;
  s.count = count_;
  if (count_ <= 0) return s;
  s.mean = mean();
  s.min = min_;
  s.max = max_;
  const std::vector<double> q = quantiles({0.5, 0.9, 0.95, 0.99});
  s.p50 = q[0], s.p90 = q[1], s.p95 = q[2], s.p99 = q[3];
  return s;
}

}  // namespace ridgeline::serving
