#pragma once
/// One operation as a user describes it (the `op` and `threshold` commands): its kind,
/// shape and dtypes, on one chip or sharded over several.
#include <cstdint>
#include <optional>
#include <string_view>

#include "ridgeline/comm/collective.hpp"
#include "ridgeline/core/dtype.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/ops/attention.hpp"
#include "ridgeline/ops/cost.hpp"
#include "ridgeline/ops/matmul.hpp"

namespace ridgeline::analysis {

enum class OpKind : std::uint8_t {
  custom, dot, matmul, elementwise, reduction, rmsnorm, layernorm, rope, softmax, swiglu,
  attention, embedding, allreduce, allgather, reducescatter, alltoall, sendrecv
};
std::string_view name(OpKind k) noexcept;
/// True for allreduce, allgather, reducescatter, alltoall, sendrecv.
constexpr bool is_collective(OpKind k) noexcept { return k >= OpKind::allreduce; }
/// The kernel class whose efficiencies an op of kind `k` uses (custom and dot: other).
constexpr hw::KernelClass kernel_class(OpKind k) noexcept {
  if (is_collective(k)) return hw::KernelClass::collective;
  switch (k) {
    case OpKind::matmul: return hw::KernelClass::gemm;
    case OpKind::attention: return hw::KernelClass::attention;
    case OpKind::custom:
    case OpKind::dot: return hw::KernelClass::other;
    default: return hw::KernelClass::pointwise;
  }
}
/// True for the ops on a (tokens, hidden) activation: elementwise ... embedding.
constexpr bool is_pointwise(OpKind k) noexcept {
  return (k >= OpKind::elementwise && k <= OpKind::swiglu) || k == OpKind::embedding;
}
std::optional<OpKind> parse_op_kind(std::string_view s) noexcept;

/// How a matmul is split over `chips`: rows of X (m), columns of W (n), or the
/// contraction (k, partial sums all-reduced).
enum class Shard : std::uint8_t { none, m, n, k };

/// A user's description of one op. Dimensions are integers (validated to fit int64 in
/// every product the model forms); only the fields of `kind` are read.
struct OpConfig {
  OpKind kind = OpKind::matmul;
  std::int64_t m = 1, k = 1, n = 1;     ///< matmul X[m,k]·W[k,n]; dot uses n
  std::int64_t batch = 1;               ///< matmul batch / attention batch
  bool per_sample_weights = false;
  std::int64_t tile_m = 0, tile_k = 0, tile_n = 0;
  std::int64_t rows = 1, cols = 1;      ///< tokens x hidden for pointwise ops
  std::int64_t inputs = 1, outputs = 1;
  double flops_per_element = 1;
  std::int64_t head_dim = 128;          ///< rope and attention
  std::int64_t q_len = 1, kv_len = 1, heads = 1, kv_heads = 0;  ///< kv_heads 0: = heads
  bool causal = false;
  ops::AttentionImpl impl = ops::AttentionImpl::flash;
  double bytes = 0;                     ///< collectives and custom
  double flops = 0;                     ///< custom
  hw::Unit unit = hw::Unit::matrix;     ///< custom
  std::int64_t chips = 1;               ///< collectives: group size; matmul: shard count
  Shard shard = Shard::none;
  comm::Algo algo = comm::Algo::automatic;
  DType dtype = DType::bf16;
  std::optional<DType> a_dtype{}, b_dtype{}, out_dtype{}, compute_dtype{}, kv_dtype{};
};

/// Throws InputError naming the flag of the first bad field: non-positive sizes,
/// products that overflow 64 bits, options that do not apply.
void validate(const OpConfig& op);
/// validate(op), and what the op asks of `sys`'s topology (a forced nvls: switches that
/// reduce, the chips inside one domain).
void validate(const OpConfig& op, const hw::System& sys);

/// The dtype the op's main FLOPs run in (after defaults).
DType effective_compute_dtype(const OpConfig& op) noexcept;
/// The kernel class the op runs at on `chip`: kernel_class(kind), but a matmul of fp8 weights
/// computed in fp8 (fp8 operands, or --compute-dtype fp8; bf16 rows with fp8 weights compute in
/// bf16 here, where a model's W8A8 layers quantise their rows first) at the chip's fp8 GEMM class
/// (hw::fp8_gemm_class), as the model's W8A8 layers are.
hw::KernelClass op_kernel_class(const OpConfig& op, const hw::ChipSpec& chip) noexcept;

/// The collective of a collective kind (allreduce ... sendrecv).
comm::Collective collective_kind(OpKind k) noexcept;
/// A collective op priced on `sys`'s topology: the algorithm chosen, the traffic on each
/// link (its `cost` is what op_cost returns).
comm::Priced op_collective(const OpConfig& op, const hw::System& sys) noexcept;
/// How a matmul op runs on the chip's multiprocessors (ops::gemm_tiling on the busiest chip's
/// share); useful 1 and no tiles for other ops and chips without `sms`.
ops::GemmTiling op_tiling(const OpConfig& op, const hw::System& sys) noexcept;
/// How an attention op runs in query tiles (ops::attention_tiling, the chip's tile work);
/// no tiles for other ops, decode queries and naive attention.
ops::AttentionTiling op_attention_tiling(const OpConfig& op, const hw::System& sys) noexcept;
/// The op's Cost on one chip of `sys` (the busiest chip when sharded), a matmul with its tile
/// and wave quantisation (op_tiling). Does not validate.
ops::Cost op_cost(const OpConfig& op, const hw::System& sys) noexcept;

}  // namespace ridgeline::analysis
