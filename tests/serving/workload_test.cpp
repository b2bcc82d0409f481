// Workloads, distributions and traces: what a request source draws, how percentiles are
// computed, what a trace file may hold.
#include "ridgeline/serving/workload.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <random>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/request_trace.hpp"
#include "ridgeline/serving/metrics.hpp"
#include "ridgeline/serving/simulator.hpp"

namespace ridgeline::serving {
namespace {

std::vector<Request> draw(const WorkloadSpec& w) {
  RequestSource src(w);
  std::vector<Request> out;
  Request r;
  while (src.next(r)) out.push_back(r);
  return out;
}

// Mean and coefficient of variation of the gaps between arrivals.
std::pair<double, double> gaps(const std::vector<Request>& rs) {
  double sum = 0, sq = 0;
  for (std::size_t i = 1; i < rs.size(); ++i) {
    const double g = rs[i].arrival_s - rs[i - 1].arrival_s;
    sum += g;
    sq += g * g;
  }
  const double n = static_cast<double>(rs.size() - 1), mean = sum / n;
  return {mean, std::sqrt(sq / n - mean * mean) / mean};
}

TEST(Workload, PoissonGapsHaveTheRateAndCvOne) {
  // Exponential gaps: mean 1/qps, standard deviation equal to the mean. Over 10^5 gaps the
  // sample mean is within 1% (4.5 standard errors of 0.32%).
  WorkloadSpec w;
  w.qps = 4;
  w.requests = 100001;
  const auto rs = draw(w);
  EXPECT_EQ(rs.front().arrival_s, 0);
  const auto [mean, cv] = gaps(rs);
  EXPECT_NEAR(mean, 0.25, 0.0025);
  EXPECT_NEAR(cv, 1, 0.02);
}

TEST(Workload, GammaGapsHaveTheirCoefficientOfVariation) {
  WorkloadSpec w;
  parse_arrival("gamma:3", w);
  w.qps = 10;
  w.requests = 100001;
  const auto [mean, cv] = gaps(draw(w));
  EXPECT_NEAR(mean, 0.1, 0.003);
  EXPECT_NEAR(cv, 3, 0.15);
}

TEST(Workload, ConstantSpacingAndLengths) {
  WorkloadSpec w;
  w.arrival = Arrival::constant;
  w.qps = 2;
  w.requests = 5;
  w.prompt = parse_length("uniform:10,12", "--prompt");
  w.gen = parse_length("7", "--gen");
  const auto rs = draw(w);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    EXPECT_DOUBLE_EQ(rs[i].arrival_s, 0.5 * static_cast<double>(i));
    EXPECT_GE(rs[i].input, 10);
    EXPECT_LE(rs[i].input, 12);
    EXPECT_EQ(rs[i].output, 7);
  }
}

TEST(Workload, LognormalHasItsMeanAndLengthsKeepUnderRateChanges) {
  // Lengths and arrivals come from separate streams: at another rate every request keeps its
  // lengths. Lognormal with mean 500 and sigma 0.5: mean within 1% over 10^5 draws.
  WorkloadSpec w;
  w.requests = 100000;
  w.prompt = parse_length("lognormal:500,0.5", "--prompt");
  const auto a = draw(w);
  w.qps = 50;
  const auto b = draw(w);
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].input, b[i].input);
    sum += static_cast<double>(a[i].input);
  }
  EXPECT_NEAR(sum / static_cast<double>(a.size()), 500, 5);
}

TEST(Workload, PrefixGroupsAreSpreadAndHoldTheWholePrefix) {
  WorkloadSpec w;
  w.requests = 1000;
  w.prompt = parse_length("uniform:50,150", "--prompt");
  w.prefix_groups = 3;
  w.prefix_tokens = 100;
  int counts[3] = {0, 0, 0};
  for (const Request& r : draw(w)) {
    ASSERT_GE(r.prefix_group, 0);
    ASSERT_LT(r.prefix_group, 3);
    ++counts[r.prefix_group];
    // Every request of a group shares the 100 tokens and has at least one of its own.
    EXPECT_EQ(r.prefix_tokens, 100);
    EXPECT_GE(r.input, 101);
  }
  for (const int c : counts) EXPECT_GT(c, 250);
}

TEST(Workload, BadLengthsAndArrivals) {
  for (const char* s : {"0", "uniform:5", "uniform:9,3", "uniform:1.5,3", "normal:0,1", "lognormal:100,9", "zipf:1,2",
                        "uniform:a,b", "123456789012"}) {
    EXPECT_THROW(parse_length(s, "--prompt"), InputError) << s;
  }
  WorkloadSpec w;
  for (const char* s : {"gamma", "gamma:0", "gamma:-1", "bursty"}) EXPECT_THROW(parse_arrival(s, w), InputError) << s;
}

// The message names what is wrong: an unknown distribution as such (not for its numbers), and a
// known one missing its second number with an example of its own kind.
TEST(Workload, ALengthsErrorNamesItsKind) {
  const auto message = [](const char* s) {
    try {
      parse_length(s, "--gen");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("poisson:200"),
            "--gen: 'poisson:200' is not a length: expected N, uniform:A,B, normal:MEAN,SD or lognormal:MEAN,SIGMA");
  EXPECT_EQ(message("lognormal:200"), "--gen: 'lognormal:200' needs two numbers after the colon, as in lognormal:200,0.6");
  EXPECT_EQ(message("normal:200"), "--gen: 'normal:200' needs two numbers after the colon, as in normal:200,50");
  EXPECT_EQ(message("uniform:5"), "--gen: 'uniform:5' needs two numbers after the colon, as in uniform:100,200");
}

TEST(Distribution, PercentilesAsNumpyComputesThem) {
  // numpy.percentile([1, 2, 3, 4, 5], q) with linear interpolation: rank q/100 x 4.
  Distribution d;
  for (const double v : {5.0, 1.0, 4.0, 2.0, 3.0}) d.add(v);
  EXPECT_DOUBLE_EQ(d.quantile(0.5), 3);
  EXPECT_DOUBLE_EQ(d.quantile(0.9), 4.6);
  EXPECT_DOUBLE_EQ(d.quantile(0.99), 4.96);
  EXPECT_DOUBLE_EQ(d.mean(), 3);
  // Weights count as repeated samples: [1, 1, 1, 10] -> p50 at rank 1.5 is 1; p90 at rank
  // 2.7 is 1 + 0.7 x 9 = 7.3.
  Distribution w;
  w.add(1, 3);
  w.add(10, 1);
  EXPECT_DOUBLE_EQ(w.quantile(0.5), 1);
  EXPECT_DOUBLE_EQ(w.quantile(0.9), 7.3);
  // In one pass, the same values.
  const std::vector<double> qs = {0, 0.5, 0.9, 1};
  const std::vector<double> expect = {1, 1, 7.3, 10}, got = w.quantiles(qs);
  ASSERT_EQ(got.size(), expect.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], expect[i]) << qs[i];
}

TEST(Distribution, SelectedPercentilesAreTheSortedOnes) {
  // Samples of one each, unsorted, are answered by selecting the order statistics rather than
  // sorting: the numpy value at rank q(n - 1) of the sorted samples, for ties, single samples,
  // and q at 0 and 1 alike. The reference sorts a copy and interpolates by hand.
  std::mt19937_64 rng(7);
  const std::vector<double> qs = {0, 0.5, 0.9, 0.95, 0.99, 1};
  for (int trial = 0; trial < 300; ++trial) {
    const auto n = static_cast<std::size_t>(1 + rng() % 400);
    const auto distinct = 1 + rng() % 50;  // few distinct values: many ties
    std::vector<double> v(n);
    for (double& x : v) x = static_cast<double>(rng() % distinct) * 0.25;
    Distribution d;
    for (const double x : v) d.add(x);
    std::sort(v.begin(), v.end());
    const std::vector<double> got = d.quantiles(qs);
    for (std::size_t k = 0; k < qs.size(); ++k) {
      const double rank = qs[k] * static_cast<double>(n - 1);
      const auto i = static_cast<std::size_t>(rank);
      const double expect = i + 1 < n ? v[i] + (rank - static_cast<double>(i)) * (v[i + 1] - v[i]) : v[i];
      EXPECT_EQ(got[k], expect) << "n " << n << " q " << qs[k];
    }
    Distribution again;
    for (std::size_t k = v.size(); k-- > 0;) again.add(v[k]);  // descending: unsorted again
    EXPECT_EQ(again.quantile(0.99), got[4]);
  }
}

TEST(Distribution, EqualNeighboursCountOnceTowardsTheExactLimit) {
  // Consecutive equal samples count as one entry towards the 65,536 kept exactly, whether
  // kept apart (to select percentiles) or merged: 300,000 copies of 1 then 2, 3, ... 1001 are
  // 1001 entries, exact. Sorted, index 300,000 holds 2: the p99.9 at rank 0.999 x 300,999 =
  // 300,698.001 lies between 700 and 701, at 700.001.
  Distribution d;
  for (int i = 0; i < 300000; ++i) d.add(1);
  for (int v = 2; v <= 1001; ++v) d.add(v);
  EXPECT_TRUE(d.exact());
  EXPECT_NEAR(d.quantile(0.999), 700.001, 1e-6);
  EXPECT_EQ(d.quantile(0.5), 1);
  // 65,536 distinct values, each twice in a row: exact; one more distinct value: folded.
  Distribution e;
  for (int v = 1; v <= 65536; ++v) e.add(v), e.add(v);
  EXPECT_TRUE(e.exact());
  EXPECT_EQ(e.quantile(1), 65536);
  e.add(65537);
  EXPECT_FALSE(e.exact());
}

TEST(Distribution, FoldedPercentilesWithinABucket) {
  // 10^6 values 1..10^6 ms: past the exact limit the histogram answers within 2^-10.
  Distribution d;
  for (int i = 1; i <= 1000000; ++i) d.add(i * 1e-3);
  EXPECT_FALSE(d.exact());
  EXPECT_NEAR(d.quantile(0.5) / 500.0, 1, 1e-3);
  EXPECT_NEAR(d.quantile(0.99) / 990.0, 1, 1e-3);
  EXPECT_NEAR(d.mean(), 500.0005, 1e-6);
}

TEST(Slo, ParsedWithUnitsOnly) {
  const Slo s = parse_slo("ttft_p99=1s,tpot_p90=50ms,itl_p95=80ms,e2e_mean=20s");
  // A list in the order given: (metric, percentile, limit in seconds), the mean as q = -1.
  ASSERT_EQ(s.targets.size(), 4U);
  EXPECT_EQ(s.targets[0].metric, SloMetric::ttft);
  EXPECT_DOUBLE_EQ(s.targets[0].limit_s, 1);
  EXPECT_DOUBLE_EQ(s.targets[0].q, 0.99);
  EXPECT_EQ(s.targets[1].metric, SloMetric::tpot);
  EXPECT_DOUBLE_EQ(s.targets[1].limit_s, 0.05);
  EXPECT_DOUBLE_EQ(s.targets[1].q, 0.9);
  EXPECT_EQ(s.targets[2].metric, SloMetric::itl);
  EXPECT_DOUBLE_EQ(s.targets[2].limit_s, 0.08);
  EXPECT_DOUBLE_EQ(s.targets[2].q, 0.95);
  EXPECT_FALSE(s.targets[2].per_request());
  EXPECT_EQ(s.targets[3].metric, SloMetric::e2e);
  EXPECT_DOUBLE_EQ(s.targets[3].q, -1);
  EXPECT_EQ(s.find(SloMetric::itl), &s.targets[2]);
  for (const char* bad : {"ttft_p99=1", "ttft=1s", "ttft_p42=1s", "itl_p42=1s", "foo_p99=1s", "ttft_p99", "ttft_p99=-1s", ",",
                          "itl_p99=1s,itl_p50=2s"}) {
    EXPECT_THROW(parse_slo(bad), InputError) << bad;
  }
}

TEST(Trace, OurColumnsAzureAndJsonLines) {
  auto t = io::parse_request_trace("input_tokens,output_tokens,timestamp_s,prefix_group,prefix_tokens\n"
                                   "100,10,5.5,0,64\n200,20,6.0,1,0\n",
                                   "t.csv", false);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0].arrival_s, 0);
  EXPECT_DOUBLE_EQ(t[1].arrival_s, 0.5);
  EXPECT_EQ(t[0].prefix_tokens, 64);
  EXPECT_EQ(t[1].prefix_group, 1);
  // The Azure trace's date-times, across a midnight: 23:59:59.5 to 00:00:00.25 is 0.75 s.
  t = io::parse_request_trace("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 23:59:59.5,10,1\r\n2023-11-17 00:00:00.25,20,2\r\n",
                              "azure.csv", false);
  EXPECT_NEAR(t[1].arrival_s, 0.75, 1e-9);
  EXPECT_EQ(t[1].input, 20);
  t = io::parse_request_trace("{\"timestamp_s\": 1, \"input_tokens\": 5, \"output_tokens\": 6}\n\n"
                              "{\"timestamp_s\": 3, \"input_tokens\": \"7\", \"output_tokens\": 8}\n",
                              "t.jsonl", true);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[1].arrival_s, 2);
  EXPECT_EQ(t[1].input, 7);
}

TEST(Trace, BadRowsNameTheirRowColumnAndValue) {
  const std::pair<const char*, const char*> bad[] = {
      {"timestamp_s,input_tokens\n0,1\n", "output_tokens"},
      {"timestamp_s,input_tokens,output_tokens\n0,1\n", "line 2"},
      {"timestamp_s,input_tokens,output_tokens\n0,1,0\n", "output_tokens '0'"},
      {"timestamp_s,input_tokens,output_tokens\n-1,1,1\n", "timestamp_s '-1'"},
      {"timestamp_s,input_tokens,output_tokens\n0,1.5,1\n", "input_tokens '1.5'"},
      {"timestamp_s,input_tokens,output_tokens\n2,1,1\n1,1,1\n", "line 3"},
      {"timestamp_s,input_tokens,output_tokens,prefix_group,prefix_tokens\n0,10,1,0,20\n", "prefix_tokens"},
      {"timestamp_s,input_tokens,output_tokens,prefix_group,prefix_tokens\n0,10,1,0,10\n", "fewer"},
      {"timestamp_s,input_tokens,output_tokens,prefix_group,prefix_tokens\n0,100,1,3,64\n1,100,1,3,32\n", "line 3: prefix_group 3"},
      {"timestamp_s,input_tokens,output_tokens,prefix_group\n0,100,1,99999999\n", "prefix_group"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 00:00:00,1,1\n", "TIMESTAMP"},
      // Issue 42: days that no month has, and years before the times a trace holds.
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-31 00:00:00,1,1\n", "day of the month from 1 to 28"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-04-31 00:00:00,1,1\n", "day of the month from 1 to 30"},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n0000-01-01 00:00:00,1,1\n", "a date from 1970 on"},
      // Lines are counted as the file has them, blank ones too (a row's number would be 2).
      {"timestamp_s,input_tokens,output_tokens\n\n0,1,1\n\n0.5,x,1\n", "line 5: input_tokens 'x'"},
      {"timestamp_s,input_tokens,output_tokens\n", "no requests"},
      {"", "empty"},
  };
  for (const auto& [text, mention] : bad) {
    try {
      io::parse_request_trace(text, "t.csv", false);
      ADD_FAILURE() << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("t.csv"), std::string::npos) << e.what();
    }
  }
  // JSON lines have no header: the third line of three is line 3 (issue 42: it was named row 4).
  try {
    io::parse_request_trace("{\"timestamp_s\":1,\"input_tokens\":5,\"output_tokens\":5}\n{\"timestamp_s\":2,\"input_tokens\":5,"
                            "\"output_tokens\":5}\n{\"timestamp_s\":0,\"input_tokens\":5,\"output_tokens\":5}\n",
                            "u.jsonl", true);
    ADD_FAILURE() << "an unsorted JSON lines trace";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("u.jsonl: line 3: its timestamp is earlier than line 2's"), std::string::npos) << e.what();
  }
  // A leap day is a day.
  EXPECT_EQ(io::parse_request_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-02-29 00:00:00,1,1\n", "t.csv", false).size(), 1u);
  EXPECT_THROW(io::parse_request_trace("{\"timestamp_s\": 0}\n", "t.jsonl", true), InputError);
  EXPECT_THROW(io::parse_request_trace("[1, 2]\n", "t.jsonl", true), InputError);
  EXPECT_THROW(io::parse_request_trace("{\"timestamp_s\": 0, \"input_tokens\": [1], \"output_tokens\": 1}\n", "t.jsonl", true),
               InputError);
}

}  // namespace
}  // namespace ridgeline::serving
