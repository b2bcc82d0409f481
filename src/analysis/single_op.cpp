#include "ridgeline/analysis/single_op.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "ridgeline/core/error.hpp"
#include "ridgeline/ops/matmul.hpp"
#include "ridgeline/ops/pointwise.hpp"

namespace ridgeline::analysis {

namespace {
constexpr std::array<std::string_view, 17> kKindNames = {
    "custom", "dot",  "matmul", "elementwise", "reduction", "rmsnorm",   "layernorm", "rope",    "softmax",
    "swiglu", "attention", "embedding", "allreduce", "allgather", "reducescatter", "alltoall", "sendrecv"};

using i64 = std::int64_t;

// Multiplies positive factors, throwing InputError naming `what` on 64-bit overflow.
i64 checked_product(std::initializer_list<i64> factors, std::string_view what) {
  i64 p = 1;
  for (i64 f : factors) {
    if (__builtin_mul_overflow(p, f, &p)) {
      throw InputError(fmt::format("{}: the product of the dimensions overflows 64-bit integers: use smaller sizes", what));
    }
  }
  return p;
}

void positive(i64 v, std::string_view flag) {
  if (v <= 0) throw InputError(fmt::format("{}: {} is not positive: expected an integer >= 1", flag, v));
}

double ceil_div(i64 a, i64 b) { return static_cast<double>((a + b - 1) / b); }

}  // namespace

std::string_view name(OpKind k) noexcept { return kKindNames[static_cast<int>(k)]; }

std::optional<OpKind> parse_op_kind(std::string_view s) noexcept {
  for (size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == s) return static_cast<OpKind>(i);
  }
  return std::nullopt;
}

void validate(const OpConfig& op) {
  positive(op.chips, "--chips");
  if (op.chips > (1 << 24)) throw InputError(fmt::format("--chips: {} is more than 16777216 chips", op.chips));
  const bool multi = op.kind == OpKind::matmul || is_collective(op.kind);
  if (!multi && op.chips > 1) {
    throw InputError(fmt::format("--chips: {} runs on one chip (only matmul with --shard and the collectives take --chips)", name(op.kind)));
  }
  switch (op.kind) {
    case OpKind::custom:
      if (!(op.flops >= 0 && op.flops <= 1e30) || !(op.bytes >= 0) || op.flops + op.bytes <= 0) {
        throw InputError(fmt::format("--flops/--bytes: {:g} and {:g}: expected values in 0 to 1e30, not both zero", op.flops, op.bytes));
      }
      break;
    case OpKind::dot:
      positive(op.n, "--n");
      checked_product({op.n, 2}, "--n");
      break;
    case OpKind::matmul: {
      positive(op.m, "--m");
      positive(op.k, "--k");
      positive(op.n, "--n");
      positive(op.batch, "--batch");
      checked_product({op.batch, op.m, op.k, op.n, 2}, "--m/--k/--n/--batch");
      if (op.tile_m < 0 || op.tile_k < 0 || op.tile_n < 0) throw InputError("--tile: expected positive tile sizes");
      if (op.shard != Shard::none && op.chips < 2) {
        throw InputError("--shard: a sharded matmul needs --chips 2 or more");
      }
      if (op.shard == Shard::none && op.chips > 1) {
        throw InputError(fmt::format("--chips: {} chips given for a matmul without --shard m|n|k", op.chips));
      }
      i64 dim = op.shard == Shard::m ? op.m : op.shard == Shard::n ? op.n : op.shard == Shard::k ? op.k : op.chips;
      if (op.shard != Shard::none && dim < op.chips) {
        throw InputError(fmt::format("--chips: {} chips cannot split a dimension of {}", op.chips, dim));
      }
      break;
    }
    case OpKind::elementwise:
      if (op.inputs < 0 || op.outputs < 0 || op.inputs + op.outputs == 0) {
        throw InputError("--inputs/--outputs: expected non-negative counts, not both zero");
      }
      if (!(op.flops_per_element >= 0 && op.flops_per_element <= 1e6)) {
        throw InputError(fmt::format("--flops-per-element: {} is outside 0 to 1e6", op.flops_per_element));
      }
      if (op.inputs > 1024 || op.outputs > 1024) {
        throw InputError(fmt::format("--inputs/--outputs: {} and {}: expected at most 1024 tensors", op.inputs, op.outputs));
      }
      [[fallthrough]];
    case OpKind::reduction:
    case OpKind::rmsnorm:
    case OpKind::layernorm:
    case OpKind::softmax:
    case OpKind::swiglu:
    case OpKind::embedding:
    case OpKind::rope:
      positive(op.rows, "--tokens");
      positive(op.cols, "--hidden");
      checked_product({op.rows, op.cols, 16}, "--tokens/--hidden");
      if (op.kind == OpKind::rope) {
        positive(op.head_dim, "--head-dim");
        if (op.head_dim % 2 != 0 || op.cols % op.head_dim != 0) {
          throw InputError(fmt::format("--head-dim: {} must be even and divide --hidden {}", op.head_dim, op.cols));
        }
      }
      break;
    case OpKind::attention: {
      positive(op.batch, "--batch");
      positive(op.q_len, "--q-len");
      positive(op.kv_len, "--kv-len");
      positive(op.heads, "--heads");
      positive(op.head_dim, "--head-dim");
      i64 g = op.kv_heads == 0 ? op.heads : op.kv_heads;
      positive(g, "--kv-heads");
      if (op.heads % g != 0) {
        throw InputError(fmt::format("--kv-heads: {} does not divide --heads {}", g, op.heads));
      }
      if (op.causal && op.q_len > op.kv_len) {
        throw InputError(fmt::format("--q-len: {} queries exceed --kv-len {} under a causal mask", op.q_len, op.kv_len));
      }
      checked_product({op.batch, op.heads, op.q_len, op.kv_len, op.head_dim, 8}, "--batch/--heads/--q-len/--kv-len/--head-dim");
      break;
    }
    case OpKind::allreduce:
    case OpKind::allgather:
    case OpKind::reducescatter:
    case OpKind::alltoall:
    case OpKind::sendrecv:
      if (!(op.bytes > 0) || op.bytes > 1e18) throw InputError("--bytes: expected a size in (0, 1e18] bytes");
      if (op.chips < 2) throw InputError(fmt::format("--chips: {} chip: a collective needs 2 or more", op.chips));
      if (op.kind == OpKind::alltoall && op.algo == comm::Algo::tree) {
        throw InputError("--algo: tree is not an all-to-all algorithm: expected auto, ring or direct");
      }
      if (op.algo == comm::Algo::nvls && op.kind != OpKind::allreduce) {
        throw InputError(fmt::format("--algo: nvls runs all-reduces only, not {}", name(op.kind)));
      }
      break;
  }
}

hw::KernelClass op_kernel_class(const OpConfig& op, const hw::ChipSpec& chip) noexcept {
  if (op.kind == OpKind::matmul && is_fp8(op.b_dtype.value_or(op.dtype)) && is_fp8(effective_compute_dtype(op))) {
    return hw::fp8_gemm_class(chip.efficiency);
  }
  return kernel_class(op.kind);
}

DType effective_compute_dtype(const OpConfig& op) noexcept {
  if (op.compute_dtype) return *op.compute_dtype;
  switch (op.kind) {
    case OpKind::matmul:
      return ops::default_compute_dtype(op.a_dtype.value_or(op.dtype), op.b_dtype.value_or(op.dtype));
    case OpKind::attention:
      return op.dtype;
    case OpKind::custom:
      return op.dtype;
    default:
      return DType::fp32;  // vector math of pointwise ops and reductions accumulates in fp32
  }
}

comm::Collective collective_kind(OpKind k) noexcept {
  switch (k) {
    case OpKind::allgather: return comm::Collective::all_gather;
    case OpKind::reducescatter: return comm::Collective::reduce_scatter;
    case OpKind::alltoall: return comm::Collective::all_to_all;
    case OpKind::sendrecv: return comm::Collective::send_recv;
    default: return comm::Collective::all_reduce;
  }
}

void validate(const OpConfig& op, const hw::System& sys) {
  validate(op);
  if (op.algo != comm::Algo::nvls) return;
  comm::check_algo(sys.chip, op.algo);
  if (op.chips > sys.domain()) {
    throw InputError(fmt::format("--algo: nvls reduces inside one NVLink domain of {} chips, not {}", sys.domain(), op.chips));
  }
}

comm::Priced op_collective(const OpConfig& op, const hw::System& sys) noexcept {
  const comm::Collective kind = collective_kind(op.kind);
  // A send/recv is between two chips; any other collective spans --chips, contiguous ranks.
  const double chips = static_cast<double>(kind == comm::Collective::send_recv ? std::max<i64>(op.chips, 2) : op.chips);
  const comm::Wiring w = comm::wiring(sys);
  return comm::price(w, comm::place(w, chips), kind, op.bytes, op.dtype, op.algo);
}

namespace {
// The matmul on the busiest chip: a sharded matmul holds the ceiling share of the split dimension.
ops::MatmulShape matmul_shape(const OpConfig& op, DType compute) noexcept {
  ops::MatmulShape s;
  s.m = static_cast<double>(op.m);
  s.k = static_cast<double>(op.k);
  s.n = static_cast<double>(op.n);
  s.batch = static_cast<double>(op.batch);
  s.per_sample_weights = op.per_sample_weights;
  s.a = op.a_dtype.value_or(op.dtype);
  s.b = op.b_dtype.value_or(op.dtype);
  s.out = op.out_dtype.value_or(s.a);
  s.compute = compute;
  s.tile_m = static_cast<double>(op.tile_m);
  s.tile_k = static_cast<double>(op.tile_k);
  s.tile_n = static_cast<double>(op.tile_n);
  if (op.shard == Shard::m) s.m = ceil_div(op.m, op.chips);
  if (op.shard == Shard::n) s.n = ceil_div(op.n, op.chips);
  if (op.shard == Shard::k) s.k = ceil_div(op.k, op.chips);
  return s;
}
// An attention op's shape, its tile work the chip's attention class's (docs/cost-model.md#attention-tiles).
ops::AttentionShape attention_shape(const OpConfig& op, const hw::System& sys, DType compute) noexcept {
  ops::AttentionShape s;
  s.batch = static_cast<double>(op.batch);
  s.q_len = static_cast<double>(op.q_len);
  s.kv_len = static_cast<double>(op.kv_len);
  s.heads = static_cast<double>(op.heads);
  s.kv_heads = static_cast<double>(op.kv_heads == 0 ? op.heads : op.kv_heads);
  s.head_dim = static_cast<double>(op.head_dim);
  s.causal = op.causal;
  s.tile_keys = hw::class_efficiency(sys.chip.efficiency, hw::KernelClass::attention).tile_keys;
  s.impl = op.impl;
  s.dtype = op.dtype;
  s.kv_dtype = op.kv_dtype.value_or(op.dtype);
  s.compute = compute;
  return s;
}
}  // namespace

ops::AttentionTiling op_attention_tiling(const OpConfig& op, const hw::System& sys) noexcept {
  if (op.kind != OpKind::attention) return {};
  return ops::attention_tiling(attention_shape(op, sys, effective_compute_dtype(op)));
}

ops::GemmTiling op_tiling(const OpConfig& op, const hw::System& sys) noexcept {
  if (op.kind != OpKind::matmul) return {};
  const ops::MatmulShape s = matmul_shape(op, op.dtype);
  return ops::gemm_tiling(s.m, s.n, s.k, s.batch, sys.chip.gemm_sms(), hw::gemm_split_for(sys.chip.gemm_split, op_kernel_class(op, sys.chip)));
}

ops::Cost op_cost(const OpConfig& op, const hw::System& sys) noexcept {
  const DType compute = effective_compute_dtype(op);
  auto rows = [&] {
    return ops::RowsShape{static_cast<double>(op.rows), static_cast<double>(op.cols), op.dtype, compute};
  };
  switch (op.kind) {
    case OpKind::custom: {
      ops::Cost c;
      c.add_flops(op.unit, compute, op.flops);
      c.add_main_bytes(op.bytes);
      c.launches = 1;
      return c;
    }
    case OpKind::dot:
      return ops::dot_cost({static_cast<double>(op.n), op.dtype, op.compute_dtype.value_or(DType::fp32)});
    case OpKind::matmul: {
      const ops::MatmulShape s = matmul_shape(op, compute);
      ops::Cost c = ops::matmul_cost(s);
      const hw::KernelClass cls = op_kernel_class(op, sys.chip);
      c.matrix_pad_flops = ops::gemm_pad_flops(s.m, s.n, s.k, s.batch, sys.chip.gemm_sms(), hw::gemm_split_for(sys.chip.gemm_split, cls),
                                               hw::fill_k(sys.chip.efficiency, cls));
      c.loop_k = s.k;  // one kernel's K loop
      if (op.shard == Shard::k) {
        // Partial sums Y_p[batch, m, n] are all-reduced over the chips.
        const comm::Wiring w = comm::wiring(sys);
        c += comm::price(w, comm::place(w, static_cast<double>(op.chips)), comm::Collective::all_reduce,
                         s.batch * s.m * s.n * bytes(s.out), s.out, op.algo).cost;
      }
      return c;
    }
    case OpKind::elementwise:
      return ops::elementwise_cost(rows(), static_cast<double>(op.inputs), static_cast<double>(op.outputs),
                                   op.flops_per_element);
    case OpKind::reduction: return ops::reduction_cost(rows());
    case OpKind::rmsnorm: return ops::rmsnorm_cost(rows());
    case OpKind::layernorm: return ops::layernorm_cost(rows());
    case OpKind::rope: return ops::rope_cost(rows(), static_cast<double>(op.head_dim));
    case OpKind::softmax: return ops::softmax_cost(rows());
    case OpKind::swiglu: return ops::swiglu_cost(rows());
    case OpKind::embedding: return ops::embedding_cost(rows());
    case OpKind::attention: return ops::attention_cost(attention_shape(op, sys, compute));
    case OpKind::allreduce:
    case OpKind::allgather:
    case OpKind::reducescatter:
    case OpKind::alltoall:
    case OpKind::sendrecv: return op_collective(op, sys).cost;
  }
  return {};
}

}  // namespace ridgeline::analysis
