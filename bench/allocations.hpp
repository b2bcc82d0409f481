#pragma once
// Heap allocations so far in the benchmark binary (bench_estimate.cpp replaces the global
// operator new to count them): a benchmark reports the difference as allocs_per_iter.
namespace ridgeline::bench {
long allocations() noexcept;
}  // namespace ridgeline::bench
