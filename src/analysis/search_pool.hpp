#pragma once
// The search pool shared by the plan searches (search.cpp) and the capacity planner
// (planning/fleet.cpp): items in parallel on oneTBB, progress from a side thread, a stop flag.
// Without oneTBB (the WebAssembly build, docs/web.md, defines RIDGELINE_ONE_THREAD) the items
// run in order on the calling thread and progress is reported between items: the same
// items, the same results (plans carry their enumeration order and ties break on it).
#if !defined(RIDGELINE_ONE_THREAD) && !__has_include(<tbb/parallel_for.h>)
#define RIDGELINE_ONE_THREAD 1
#endif
#ifndef RIDGELINE_ONE_THREAD
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>

#include "ridgeline/analysis/search.hpp"

namespace ridgeline::analysis::detail {

#ifndef RIDGELINE_ONE_THREAD
/// Each thread's own T, made on its first local(); iterating visits those made.
template <class T>
using PerThread = tbb::enumerable_thread_specific<T>;

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
#else
/// One thread's T, made on the first local(); iterating visits it once made.
template <class T>
class PerThread {
 public:
  T& local() {
    made_ = true;
    return one_;
  }
  T* begin() { return &one_; }
  T* end() { return made_ ? &one_ + 1 : &one_; }

 private:
  T one_{};
  bool made_ = false;
};

// Progress reported by the one thread between items (tick(), from run_parallel), at most
// every progress_interval_s, and once more when destroyed.
class Progress {
 public:
  Progress(const SearchControl& c, const std::atomic<std::uint64_t>& done, std::uint64_t total,
           const std::atomic<double>& best)
      : c_(c), done_(done), total_(total), best_(best), last_(std::chrono::steady_clock::now()) {
    if (!c_.progress) return;
    previous_ = active();
    active() = this;
  }
  ~Progress() {
    if (!c_.progress) return;
    active() = previous_;
    report();
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /// Reports when the interval has passed since the last report (no-op without a Progress).
  static void tick() {
    Progress* p = active();
    if (p == nullptr) return;
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - p->last_).count() < std::max(0.01, p->c_.progress_interval_s)) return;
    p->last_ = now;
    p->report();
  }

 private:
  static Progress*& active() {
    static Progress* p = nullptr;
    return p;
  }
  void report() const { c_.progress(done_.load(std::memory_order_relaxed), total_, best_.load(std::memory_order_relaxed)); }
  const SearchControl& c_;
  const std::atomic<std::uint64_t>& done_;
  std::uint64_t total_;
  const std::atomic<double>& best_;
  std::chrono::steady_clock::time_point last_;
  Progress* previous_ = nullptr;
};
#endif

inline void lower_to(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

inline bool stopped(const SearchControl& c) { return c.stop != nullptr && c.stop->load(std::memory_order_relaxed); }

template <class F>
void run_parallel(const SearchControl& c, std::size_t n, F&& body) {
#ifdef RIDGELINE_ONE_THREAD
  for (std::size_t i = 0; i != n; ++i) {
    body(i);
    Progress::tick();
  }
  (void)c;
#else
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
#endif
}

}  // namespace ridgeline::analysis::detail
