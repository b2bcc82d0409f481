#pragma once
/// Distributions of latencies (docs/serving.md#metrics): mean and percentiles of values that
/// may number in the hundreds of millions (every generated token's inter-token latency) in
/// bounded memory. Values are kept exactly up to a limit, then folded into a log-spaced
/// histogram whose buckets are 2^-10 wide in relative terms (percentiles within 0.07%).
#include <array>
#include <cstdint>
#include <vector>

namespace ridgeline::serving {

/// Mean and the percentiles benchmark clients report, seconds.
struct Summary {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, min = 0, max = 0;
  double count = 0;  ///< samples (weights summed)
};

class Distribution {
 public:
  static constexpr std::size_t kExactLimit = 1 << 16;  ///< distinct samples kept exactly
  /// Adds `weight` samples of `v` (>= 0).
  void add(double v, double weight = 1);
  /// The value at quantile q in [0, 1]: linear between the ranks of exact samples (numpy's
  /// default, as benchmark clients compute it), a bucket's middle once folded.
  double quantile(double q) const;
  /// quantile(q) for each of `qs` (ascending), in one pass.
  std::vector<double> quantiles(const std::vector<double>& qs) const;
  Summary summary() const;
  double count() const noexcept { return count_; }
  double mean() const noexcept { return count_ > 0 ? sum_ / count_ : 0; }
  bool exact() const noexcept { return !folded_; }

 private:
  void fold();
  void sort_values() const;
  void merge_neighbours();
  static int bucket(double v) noexcept;
  static double bucket_value(int b) noexcept;
  mutable std::vector<std::pair<double, double>> exact_;  // (value, weight)
  mutable bool sorted_ = true;
  bool unit_ = true;  // every exact entry holds one sample
  std::size_t entries_ = 0;  // exact entries were consecutive equal values merged (what the limit counts)
  bool folded_ = false;
  std::vector<double> hist_;  // weights per bucket, once folded
  double count_ = 0, sum_ = 0, min_ = 0, max_ = 0;
};

}  // namespace ridgeline::serving
