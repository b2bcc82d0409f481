#pragma once
// The search pool shared by the plan searches (search.cpp) and the capacity planner
// (planning/fleet.cpp): items in parallel on oneTBB, progress from a side thread, a stop flag.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "ridgeline/analysis/search.hpp"

namespace ridgeline::analysis::detail {

// Progress reporting from a side thread while the pool works; stops when destroyed.
class Progress {
 public:
  Progress(const SearchControl& c, const std::atomic<std::uint64_t>& done, std::uint64_t total,
           const std::atomic<double>& best)
      : c_(c), done_(done), total_(total), best_(best) {
    if (c_.progress) thread_ = std::thread([this] { loop(); });
  }
  ~Progress() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(m_);
      finished_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  void loop() {
    const auto interval = std::chrono::duration<double>(std::max(0.01, c_.progress_interval_s));
    std::unique_lock<std::mutex> lock(m_);
    while (!cv_.wait_for(lock, interval, [this] { return finished_; })) {
      c_.progress(done_.load(std::memory_order_relaxed), total_, best_.load(std::memory_order_relaxed));
    }
    c_.progress(done_.load(std::memory_order_relaxed), total_, best_.load(std::memory_order_relaxed));
  }
  const SearchControl& c_;
  const std::atomic<std::uint64_t>& done_;
  std::uint64_t total_;
  const std::atomic<double>& best_;
  std::mutex m_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::thread thread_;
};

inline void lower_to(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

inline bool stopped(const SearchControl& c) { return c.stop != nullptr && c.stop->load(std::memory_order_relaxed); }

template <class F>
void run_parallel(const SearchControl& c, std::size_t n, F&& body) {
  auto work = [&] {
    // One task per item: items differ in cost by orders of magnitude (a rejected serving group
    // is one check, a feasible one thousands of batches), which the automatic partitioner's
    // few large chunks balanced poorly.
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, n, 1),
        [&](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t i = r.begin(); i != r.end(); ++i) body(i);
        },
        tbb::simple_partitioner());
  };
  if (c.threads > 0) {
    tbb::task_arena arena(c.threads);
    arena.execute(work);
  } else {
    work();
  }
}

}  // namespace ridgeline::analysis::detail
