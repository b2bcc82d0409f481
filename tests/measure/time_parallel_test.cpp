// The timing harness every measured kernel goes through (validate's kernels and measure's
// stream sweep): who runs the body, how many times, where, and what comes back.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "ridgeline/measure/kernels.hpp"

namespace ridgeline::measure {
namespace {

// reps = 3 timings of passes = 4 calls, after one warm-up call: 1 + 3 × 4 = 13 calls per
// thread, each with its own index and the team size; thread t runs on CPU t (checked where
// this process may run on CPUs 0 and 1: pinning is best effort).
TEST(TimeParallel, EveryThreadMakesTheSameCallsOnItsOwnCpu) {
  const int threads = std::min(2, static_cast<int>(std::thread::hardware_concurrency()));
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool can_pin = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_ISSET(0, &allowed) &&
                       (threads < 2 || CPU_ISSET(1, &allowed));
  std::vector<std::atomic<int>> calls(static_cast<std::size_t>(threads));
  std::atomic<int> wrong_cpu{0}, wrong_team{0};
  const Sample s = time_parallel(threads, 3, 4, [&](int t, int team) {
    calls[static_cast<std::size_t>(t)]++;
    if (team != threads) wrong_team++;
    if (can_pin && sched_getcpu() != t) wrong_cpu++;
  });
  for (int t = 0; t < threads; ++t) EXPECT_EQ(calls[static_cast<std::size_t>(t)].load(), 13) << "thread " << t;
  EXPECT_EQ(wrong_team.load(), 0);
  EXPECT_EQ(wrong_cpu.load(), 0);
  EXPECT_EQ(s.repetitions, 3);
}

// reps = 0: the warm-up call alone (validate runs each kernel once this way to check its
// output) and no timing.
TEST(TimeParallel, NoRepetitionsRunsTheBodyOnce) {
  std::atomic<int> calls{0};
  const Sample s = time_parallel(1, 0, 5, [&](int, int) { calls++; });
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(s.repetitions, 0);
  EXPECT_EQ(s.value, 0);
}

// Calibration: a first timing of passes = 1 call of >= 2 ms sets the count for 20 ms to
// ceil(20 / t1) with t1 >= 2 ms, so between 1 and 10 calls; the calls per thread are then
// 1 (warm-up) + 1 (calibration) + 3 × count, and each timed call lasts at least 2 ms.
TEST(TimeParallel, CalibrationSetsTheCountFromTheFirstTiming) {
  std::atomic<int> calls{0};
  const Sample s = time_parallel(
      1, 3, 1, [&](int, int) {
        calls++;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      },
      20e-3);
  const int timed = calls.load() - 2;
  EXPECT_EQ(timed % 3, 0) << calls.load();
  EXPECT_GE(timed / 3, 1);
  EXPECT_LE(timed / 3, 10);
  EXPECT_GE(s.value, 2e-3);
  EXPECT_EQ(s.repetitions, 3);
}

}  // namespace
}  // namespace ridgeline::measure
