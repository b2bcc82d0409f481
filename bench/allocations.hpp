#pragma once
// What the benchmarks share: heap allocations counted by a replaced global operator new
// (defined in bench_estimate.cpp; a benchmark reports the difference as allocs_per_iter),
// and the H100 system they run on.
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/io/hardware_file.hpp"

namespace ridgeline::bench {

long allocations() noexcept;

inline hw::System h100() {
  hw::System s;
  s.chip = io::catalog_chip("h100-sxm");
  s.chips_per_node = s.chip.chips_per_node;
  return s;
}

}  // namespace ridgeline::bench
