#pragma once
/// What an operation needs: FLOPs per (unit, dtype), bytes per memory level, bytes and
/// latency steps per link, kernel launches. Additive; fixed size, never allocates.
#include <array>
#include <cmath>
#include <cstdint>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/hw/chip.hpp"

namespace ridgeline::ops {

class Cost {
 public:
  /// Bytes moved at each memory level; [0] is main memory (HBM / DRAM).
  std::array<double, hw::kMaxMemoryLevels> bytes{};
  /// Of bytes[0], those stored to lines the op has not read (a new output, not an in-place
  /// update). On a chip whose plain stores allocate (ChipSpec::write_allocate: x86 write-back
  /// memory) each such line is read before it is written, so these bytes move once more;
  /// estimates add them there (docs/cost-model.md#write-allocate).
  double main_store_bytes = 0;
  /// Bytes each chip sends over each link (indexed like ChipSpec::links), per direction.
  std::array<double, hw::kMaxLinks> link_bytes{};
  /// Sequential message steps over each link; each costs the link's latency.
  std::array<double, hw::kMaxLinks> link_steps{};
  /// Kernel launches.
  double launches = 0;
  /// Of the vector FLOPs, the special functions (exp) that run on the special-function
  /// units at their own rate (hw::ChipSpec::special_function_rate).
  double special_ops = 0;
  /// Matrix-unit work beyond the FLOPs, in FLOPs of the matrix part's dtype: the padded rows and
  /// columns of a GEMM's tiles and the multiprocessors its last wave leaves idle
  /// (docs/cost-model.md#gemm-shape). Time in the realistic and upper estimates, never FLOPs
  /// counted or the lower bound.
  double matrix_pad_flops = 0;
  /// Main-memory time beyond the bytes, in bytes at main memory's rate: each tile's fill where
  /// a kernel class waits it out on its loads (hw::fill_reads: Triton's fused MoE over
  /// block-scaled experts, docs/cost-model.md#short-k). Time in the realistic and upper
  /// estimates, never bytes counted or the lower bound.
  double main_pad_bytes = 0;
  /// Columns of K its GEMM kernels' output tiles loop over, one K loop a kernel, summed over its
  /// kernels: each column costs at least the class's K-loop time (hw::ClassEfficiency::k_loop_s,
  /// a kernel that never splits a tile's K loop and waits on its loads step by step;
  /// docs/cost-model.md#k-loops). A fixed time in the realistic and upper estimates.
  double loop_k = 0;
  /// True for a collective the switches reduce (NVLink SHARP): its link time runs at the
  /// topology's reduction efficiency, not the link's (hw::TopologySpec::reduction_efficiency).
  bool in_switch = false;
  /// Bit (unit·kDTypeCount + dtype) set for every (unit, dtype) that has FLOPs entered, so
  /// evaluation visits only those.
  std::uint32_t flop_mask = 0;

  // A Cost is built for every op of every graph. Its FLOP table (20 entries) is neither
  // zeroed nor copied whole: an entry is valid only where flop_mask has its bit. (Zeroing it
  // and copying whole objects, compiled to `rep stos` / `rep movs`, was a third of a graph build.)
  Cost() noexcept {}  // NOLINT(modernize-use-equals-default): must not zero flops_
  Cost(const Cost& o) noexcept
      : bytes(o.bytes), main_store_bytes(o.main_store_bytes), link_bytes(o.link_bytes), link_steps(o.link_steps), launches(o.launches), special_ops(o.special_ops), matrix_pad_flops(o.matrix_pad_flops), main_pad_bytes(o.main_pad_bytes), loop_k(o.loop_k), in_switch(o.in_switch), flop_mask(o.flop_mask) {
    copy_flops(o);
  }
  Cost& operator=(const Cost& o) noexcept {
    bytes = o.bytes;
    main_store_bytes = o.main_store_bytes;
    link_bytes = o.link_bytes;
    link_steps = o.link_steps;
    launches = o.launches;
    special_ops = o.special_ops;
    matrix_pad_flops = o.matrix_pad_flops;
    main_pad_bytes = o.main_pad_bytes;
    loop_k = o.loop_k;
    in_switch = o.in_switch;
    flop_mask = o.flop_mask;
    copy_flops(o);
    return *this;
  }

  /// FLOPs of unit `u` in dtype `t`.
  double flops(hw::Unit u, DType t) const noexcept {
    const int bit = static_cast<int>(u) * kDTypeCount + index(t);
    return (flop_mask >> bit) & 1u ? flops_[static_cast<int>(u)][index(t)] : 0;
  }
  /// Adds `f` FLOPs of unit `u` in dtype `t`.
  // The entry is read only when its mask bit says it was written; GCC at -O1 (the sanitizer
  // build) cannot see that through the mask and warns on the uninitialised array.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  void add_flops(hw::Unit u, DType t, double f) noexcept {
    const std::uint32_t b = 1u << (static_cast<int>(u) * kDTypeCount + index(t));
    double& e = flops_[static_cast<int>(u)][index(t)];
    if (flop_mask & b) {
      e += f;
    } else {
      e = f;
      flop_mask |= b;
    }
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  /// Adds `b` bytes of main-memory traffic that allocates nothing: loads, and stores back to
  /// lines the op has read (in-place updates).
  void add_main_bytes(double b) noexcept { bytes[0] += b; }
  /// Adds `b` bytes stored to main memory in lines the op has not read (new outputs): traffic
  /// like add_main_bytes, and counted in main_store_bytes for chips whose stores allocate.
  void add_main_stores(double b) noexcept {
    bytes[0] += b;
    main_store_bytes += b;
  }

  /// FLOPs of one unit, all dtypes (only the entries add_flops touched are visited).
  double unit_flops(hw::Unit u) const noexcept {
    const std::uint32_t row = ((1u << kDTypeCount) - 1) << (static_cast<int>(u) * kDTypeCount);
    return masked_sum(flop_mask & row);
  }
  /// All FLOPs.
  double total_flops() const noexcept { return masked_sum(flop_mask); }
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

 private:
  void copy_flops(const Cost& o) noexcept {
    for (std::uint32_t mask = o.flop_mask; mask != 0; mask &= mask - 1) {
      const int bit = __builtin_ctz(mask);
      flops_[bit / kDTypeCount][bit % kDTypeCount] = o.flops_[bit / kDTypeCount][bit % kDTypeCount];
    }
  }
  double masked_sum(std::uint32_t mask) const noexcept {
    double s = 0;
    for (; mask != 0; mask &= mask - 1) {
      const int bit = __builtin_ctz(mask);
      s += flops_[bit / kDTypeCount][bit % kDTypeCount];
    }
    return s;
  }
  /// FLOPs by unit and dtype: an entry is valid only where flop_mask has its bit.
  std::array<std::array<double, kDTypeCount>, hw::kUnitCount> flops_;
};

/// One operation's Cost in the compact form an op graph keeps: FLOPs in at most one dtype
/// per unit, bytes of main memory only (with the stored ones), traffic over at most one link. Every op the model
/// builder makes has this form (Graph::add flags any other as an overflow). A graph is
/// evaluated for every plan: at a fifth of a Cost's size its ops stay in the L1 cache.
struct OpCost {
  double matrix_flops = 0;  ///< on the matrix unit, in matrix_dtype
  double vector_flops = 0;  ///< on the vector unit, in vector_dtype
  double main_bytes = 0;
  double main_store_bytes = 0;  ///< of main_bytes, stored to lines not read (Cost::main_store_bytes)
  double link_bytes = 0;    ///< per chip per direction over `link`
  double link_steps = 0;
  double launches = 0;
  double special_ops = 0;   ///< Cost::special_ops
  double matrix_pad_flops = 0;  ///< Cost::matrix_pad_flops
  double main_pad_bytes = 0;    ///< Cost::main_pad_bytes
  double loop_k = 0;            ///< Cost::loop_k
  DType matrix_dtype = DType::bf16;
  DType vector_dtype = DType::fp32;
  std::int8_t link = -1;    ///< link index (ChipSpec::links), -1 without communication
  bool in_switch = false;   ///< Cost::in_switch

  /// Writes `c` in compact form into `out`; false (out unspecified) when `c` does not have it.
  static bool compact(const Cost& c, OpCost& out) noexcept;
  /// The full Cost (for estimates and reports).
  Cost expand() const noexcept;
  double total_flops() const noexcept { return matrix_flops + vector_flops; }
  double total_link_bytes() const noexcept { return link_bytes; }
  /// Adds `o`'s work, done in the same kernel: its FLOPs (in this cost's dtypes), main-memory
  /// bytes and stores, special-function ops and pads; not its launches or link traffic.
  void add_work(const OpCost& o) noexcept {
    matrix_flops += o.matrix_flops;
    vector_flops += o.vector_flops;
    special_ops += o.special_ops;
    matrix_pad_flops += o.matrix_pad_flops;
    main_pad_bytes += o.main_pad_bytes;
    main_bytes += o.main_bytes;
    main_store_bytes += o.main_store_bytes;
  }
};

// Without branches on the values (bitwise | and selects): this runs for every op built.
inline bool OpCost::compact(const Cost& c, OpCost& o) noexcept {
  static_assert(hw::kMaxMemoryLevels == 4 && hw::kUnitCount == 2);
  constexpr std::uint32_t kRow = (1u << kDTypeCount) - 1;
  const std::uint32_t m = c.flop_mask & kRow, v = (c.flop_mask >> kDTypeCount) & kRow;
  const int md = m != 0 ? __builtin_ctz(m) : index(DType::bf16);
  const int vd = v != 0 ? __builtin_ctz(v) : index(DType::fp32);
  o.matrix_dtype = static_cast<DType>(md);
  o.vector_dtype = static_cast<DType>(vd);
  o.matrix_flops = c.flops(hw::Unit::matrix, o.matrix_dtype);
  o.vector_flops = c.flops(hw::Unit::vector, o.vector_dtype);
  o.main_bytes = c.bytes[0];
  o.main_store_bytes = c.main_store_bytes;
  o.launches = c.launches;
  o.special_ops = c.special_ops;
  o.matrix_pad_flops = c.matrix_pad_flops;
  o.main_pad_bytes = c.main_pad_bytes;
  o.loop_k = c.loop_k;
  o.in_switch = c.in_switch;
  // Most ops cross no link: one test of the summed magnitudes skips the scan.
  const double any_link = std::fabs(c.link_bytes[0]) + std::fabs(c.link_bytes[1]) + std::fabs(c.link_bytes[2]) +
                          std::fabs(c.link_bytes[3]) + std::fabs(c.link_steps[0]) + std::fabs(c.link_steps[1]) +
                          std::fabs(c.link_steps[2]) + std::fabs(c.link_steps[3]);
  static_assert(hw::kMaxLinks == 4);
  int links = 0, link = 0;
  if (any_link != 0) {
    for (int l = 0; l < hw::kMaxLinks; ++l) {
      const bool used = (static_cast<int>(c.link_bytes[l] != 0) | static_cast<int>(c.link_steps[l] != 0)) != 0;
      links += used;
      link = used ? l : link;
    }
  }
  o.link = static_cast<std::int8_t>(links > 0 ? link : -1);
  o.link_bytes = links > 0 ? c.link_bytes[link] : 0;
  o.link_steps = links > 0 ? c.link_steps[link] : 0;
  const bool two_dtypes = ((m & (m - 1)) | (v & (v - 1))) != 0;
  const bool cache_levels = std::fabs(c.bytes[1]) + std::fabs(c.bytes[2]) + std::fabs(c.bytes[3]) != 0;
  return (static_cast<int>(!two_dtypes) & static_cast<int>(!cache_levels) & static_cast<int>(links <= 1)) != 0;
}

}  // namespace ridgeline::ops
