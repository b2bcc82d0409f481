#pragma once
/// What an operation needs: FLOPs per (unit, dtype), bytes per memory level, bytes and
/// latency steps per link, kernel launches. Additive; fixed size, never allocates.
#include <array>
#include <cstdint>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/hw/chip.hpp"

namespace ridgeline::ops {

struct Cost {
  /// FLOPs by executing unit and dtype.
  std::array<std::array<double, kDTypeCount>, hw::kUnitCount> flops{};
  /// Bytes moved at each memory level; [0] is main memory (HBM / DRAM).
  std::array<double, hw::kMaxMemoryLevels> bytes{};
  /// Bytes each chip sends over each link (indexed like ChipSpec::links), per direction.
  std::array<double, hw::kMaxLinks> link_bytes{};
  /// Sequential message steps over each link; each costs the link's latency.
  std::array<double, hw::kMaxLinks> link_steps{};
  /// Kernel launches.
  double launches = 0;
  /// Bit (unit·kDTypeCount + dtype) set for every FLOP entry that add_flops has touched,
  /// so evaluation visits only those.
  std::uint32_t flop_mask = 0;

  void add_flops(hw::Unit u, DType t, double f) noexcept {
    flops[static_cast<int>(u)][index(t)] += f;
    flop_mask |= 1u << (static_cast<int>(u) * kDTypeCount + index(t));
  }
  /// Adds `b` bytes of main-memory traffic.
  void add_main_bytes(double b) noexcept { bytes[0] += b; }

  /// FLOPs of one unit, all dtypes.
  double unit_flops(hw::Unit u) const noexcept {
    double s = 0;
    for (double f : flops[static_cast<int>(u)]) s += f;
    return s;
  }
  /// All FLOPs.
  double total_flops() const noexcept { return unit_flops(hw::Unit::matrix) + unit_flops(hw::Unit::vector); }
  /// Main-memory bytes.
  double main_bytes() const noexcept { return bytes[0]; }
  /// Bytes over all links.
  double total_link_bytes() const noexcept {
    double s = 0;
    for (double b : link_bytes) s += b;
    return s;
  }

  Cost& operator+=(const Cost& o) noexcept;
  /// Every count scaled by `k` (repeats).
  Cost& operator*=(double k) noexcept;
  friend Cost operator+(Cost a, const Cost& b) noexcept { return a += b; }
  friend Cost operator*(Cost a, double k) noexcept { return a *= k; }
};

}  // namespace ridgeline::ops
