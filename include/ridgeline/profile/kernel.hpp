#pragma once
/// A kernel launch as a profiler measured it, and what the importers produce.
#include <string>
#include <vector>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/hw/chip.hpp"

namespace ridgeline::profile {

/// One measured launch. FLOPs are split by where they ran; bytes by memory level.
struct KernelLaunch {
  std::string name;
  double duration_s = 0;
  double flops_fp64 = 0, flops_fp32 = 0, flops_fp16 = 0;  ///< from SASS instruction counters (FMA = 2)
  double flops_tensor = 0;   ///< tensor-core FLOPs where the profile has them
  double dram_bytes = 0;     ///< main memory
  double l2_bytes = 0;
  double l1_bytes = 0;
  bool has_flops = false;    ///< some FLOP counter was present
  bool has_bytes = false;    ///< a DRAM byte count (or throughput) was present
  bool flops_estimated = false;  ///< FLOPs and bytes estimated from the launching aten op's shapes
  std::string op;               ///< the CPU op that launched it (traces), e.g. "aten::addmm"
  double count = 1;          ///< launches this record stands for
};

/// Adds `k`, per-launch figures standing for `k.count` launches, to `totals`, sums over the
/// launches it holds so far (an importer's record by name, the analysis's kernel by name).
inline void add_launches(KernelLaunch& totals, const KernelLaunch& k) noexcept {
  totals.count += k.count;
  totals.duration_s += k.duration_s * k.count;
  totals.flops_fp64 += k.flops_fp64 * k.count;
  totals.flops_fp32 += k.flops_fp32 * k.count;
  totals.flops_fp16 += k.flops_fp16 * k.count;
  totals.flops_tensor += k.flops_tensor * k.count;
  totals.dram_bytes += k.dram_bytes * k.count;
  totals.l2_bytes += k.l2_bytes * k.count;
  totals.l1_bytes += k.l1_bytes * k.count;
  totals.has_flops |= k.has_flops;
  totals.has_bytes |= k.has_bytes;
  totals.flops_estimated |= k.flops_estimated;
}

/// Time spent under one name (a category, a CPU op, a stream) and the launches it took.
struct TimeShare {
  std::string name;
  double time_s = 0;
  double count = 0;
};

/// Where a profile came from and what it lacked.
struct Profile {
  std::string source;
  std::string format;
  std::vector<KernelLaunch> launches;
  std::vector<std::string> warnings;  ///< e.g. kernels without FLOP counters
  // Timeline (traces only): the first kernel's start to the last one's end, per device summed.
  double span_s = 0;
  double idle_s = 0;      ///< gaps between consecutive kernels of a device: the GPU waited
  double idle_gaps = 0;   ///< how many gaps over 1 us
  // The device the profile ran on, where it says (a Kineto trace's deviceProperties).
  std::string device_name;         ///< e.g. "NVIDIA A100-SXM4-80GB" ("": not said)
  double device_memory_bytes = 0;  ///< its totalGlobalMem
  // Traces only: kernel time by the CPU op that launched it ("(no CPU op)" for the rest),
  // kernel and copy time by stream ("stream 7"), largest first; copies and fills (cat
  // gpu_memcpy, gpu_memset), which are not kernels.
  std::vector<TimeShare> by_cpu_op, by_stream;
  TimeShare memcpy{"memcpy", 0, 0}, memset{"memset", 0, 0};
};

}  // namespace ridgeline::profile
