#pragma once
// A chip with round numbers so expected values can be derived by hand, and what the tests share
// beside it: catalog chips as systems, the simulator's time step and its tolerance.
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/io/hardware_file.hpp"

namespace ridgeline::testing {

inline hw::ChipSpec toy_chip() {
  hw::ChipSpec c;
  c.name = "toy";
  c.kind = "gpu";
  c.matrix_flops_per_s[index(DType::bf16)] = 100e12;
  c.matrix_flops_per_s[index(DType::int8)] = 200e12;
  c.matrix_flops_per_s[index(DType::fp8_e4m3)] = 200e12;
  c.vector_flops_per_s[index(DType::fp32)] = 10e12;
  c.memory = {{"HBM", 1e12, 16e9}};
  c.links = {{"NVL", hw::LinkScope::node, 50e9, 2, 1e-6}, {"IB", hw::LinkScope::network, 25e9, 1, 5e-6}};
  c.launch_overhead_s = 2e-6;
  c.efficiency = {0.8, 0.5, 0.9, 0.75};
  c.chips_per_node = 8;
  return c;
}

inline hw::System toy_system(int chips = 1) {
  hw::System s;
  s.chip = toy_chip();
  s.chips = chips;
  s.chips_per_node = 8;
  return s;
}

/// A catalog chip as a system, with the chip file's node size.
inline hw::System catalog_system(const char* name) {
  hw::System s;
  s.chip = io::catalog_chip(name);
  s.chips_per_node = s.chip.chips_per_node;
  return s;
}
inline hw::System chip(const char* name) { return catalog_system(name); }

/// The serving simulator keeps time in whole picoseconds (kPs); kExact is the relative tolerance
/// of sums of step times rounded to them or added in another order.
inline constexpr double kPs = 1e-12;
inline constexpr double kExact = 1e-9;

}  // namespace ridgeline::testing
