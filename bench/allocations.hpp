#pragma once
// What the benchmarks share: heap allocations counted by a replaced global operator new
// (defined in bench_estimate.cpp; a benchmark reports the difference as allocs_per_iter),
// and the H100 system they run on.
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/io/hardware_file.hpp"

namespace ridgeline::bench {

long allocations() noexcept;

// The chip file is read once: a benchmark that builds a System in its loop times the model,
// not the YAML parser (the H100's file, with its kernel curves, takes ~4 ms to read).
inline hw::System h100() {
  static const hw::ChipSpec chip = io::catalog_chip("h100-sxm");
  hw::System s;
  s.chip = chip;
  s.chips_per_node = s.chip.chips_per_node;
  return s;
}

}  // namespace ridgeline::bench
