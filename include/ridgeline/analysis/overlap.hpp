#pragma once
/// Communication hidden behind compute (docs/training.md#interference): how much of a
/// collective a stretch of compute can hide, given the other traffic on the same link, and
/// what hiding it costs that compute — the multiprocessors the collective's kernel holds and
/// the main-memory bandwidth it takes while it runs.
#include "ridgeline/hw/chip.hpp"

namespace ridgeline::analysis {

/// A stretch of compute as a collective beside it sees it: realistic seconds, split into
/// kernels bound by main memory, other kernels (compute-bound) and communication on the
/// critical path, with the main-memory bytes of the compute-bound kernels and the seconds
/// the critical-path communication holds each link.
struct ComputeWindow {
  double time_s = 0;               ///< realistic, everything in it
  double memory_bound_s = 0;       ///< of which kernels bound by main memory
  double compute_bound_s = 0;      ///< of which kernels bound by their compute units
  double compute_bound_bytes = 0;  ///< main-memory bytes those compute-bound kernels move
  double up_busy_s = 0;            ///< seconds communication in it holds the scale-up link
  double net_busy_s = 0;           ///< seconds it holds the network
  /// Every figure times `k` (a share of the layers, a number of micro-batches).
  ComputeWindow scaled(double k) const noexcept {
    return {time_s * k, memory_bound_s * k, compute_bound_s * k, compute_bound_bytes * k, up_busy_s * k, net_busy_s * k};
  }
  void add(const ComputeWindow& o, double k = 1) noexcept {
    time_s += k * o.time_s, memory_bound_s += k * o.memory_bound_s, compute_bound_s += k * o.compute_bound_s;
    compute_bound_bytes += k * o.compute_bound_bytes, up_busy_s += k * o.up_busy_s, net_busy_s += k * o.net_busy_s;
  }
};

/// Communication that may run beside compute.
struct OverlapComm {
  double time_s = 0;     ///< realistic, alone
  double hbm_bytes = 0;  ///< main-memory bytes its kernel moves (reads what it sends, writes what it receives, reduces)
  double sms = 0;        ///< multiprocessors its kernel holds while it runs
  bool network = false;  ///< bound by the network link (else the scale-up link)
};

/// What came of it: seconds hidden, seconds left exposed (time - hidden) and seconds the
/// compute it hid behind lost to it.
struct OverlapCost {
  double hidden_s = 0, exposed_s = 0, interference_s = 0;
  OverlapCost& operator+=(const OverlapCost& o) noexcept {
    hidden_s += o.hidden_s, exposed_s += o.exposed_s, interference_s += o.interference_s;
    return *this;
  }
  OverlapCost scaled(double k) const noexcept { return {hidden_s * k, exposed_s * k, interference_s * k}; }
};

/// The slowdown of the compute in `w` per second of `c` running beside it
/// (docs/training.md#interference): its compute-bound kernels lose the collective's
/// multiprocessors, sms / S of the chip's S, or the main-memory bandwidth the two together
/// demand beyond the chip's achievable rate, whichever is more; its memory-bound kernels
/// lose the collective's share of that rate. Never throws.
double interference_rate(const OverlapComm& c, const ComputeWindow& w, const hw::ChipSpec& chip) noexcept;

/// `c` run beside `w`: of its `hideable_s` seconds (the rest always waits), `efficiency` of
/// what the window's free link time can hold is hidden (docs/training.md#interference):
/// hidden = efficiency · min(hideable, window − other traffic on c's link), exposed =
/// time − hidden, interference = hidden · interference_rate. Never throws.
OverlapCost overlap(const OverlapComm& c, double hideable_s, const ComputeWindow& w, double efficiency,
                    const hw::ChipSpec& chip) noexcept;

}  // namespace ridgeline::analysis
