#pragma once
/// Seed 000's holistic view: one Llama-style block, every op's time in units of one
/// (s,h)x(h,h) GEMM on the chosen chip (docs/inference.md#block).
#include <array>
#include <cstdint>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::analysis {

struct BlockConfig {
  std::int64_t seq = 4096;     ///< s: tokens of the (s,h) activation on this chip
  std::int64_t hidden = 4096;  ///< h
  double intermediate = 0;     ///< MLP width; 0: 8/3·h (the seed's SwiGLU ratio)
  std::int64_t heads = 32;
  std::int64_t kv_heads = 32;
  std::int64_t cp = 8;         ///< context-parallel group of the four all-to-alls
  bool seed_shapes = false;    ///< seed 000's simplification: every memory-bound op moves (s,h) tensors, all-to-alls 2sh bytes
  bool causal = true;          ///< exact shapes only: causal FlashAttention (the seed's 4s²h is not causal)
  DType dtype = DType::bf16;
};

enum class BlockPart : std::uint8_t { gemm, attention, memory, comm };

struct BlockOp {
  const char* name = "";
  BlockPart part = BlockPart::gemm;
  double t_s = 0;     ///< lower bound on the chip
  double units = 0;   ///< t_s / gemm_unit_s
  ops::Bound bound = ops::Bound::compute;
};

struct BlockResult {
  std::array<BlockOp, 24> ops{};
  int count = 0;
  double gemm_unit_s = 0;  ///< one (s,h)x(h,h) GEMM
  std::array<double, 4> units_by_part{};  ///< gemm, attention, memory, comm
  double total_units = 0;
};

/// Throws InputError naming the flag for bad sizes.
BlockResult block(const BlockConfig& cfg, const hw::System& sys);

}  // namespace ridgeline::analysis
