#pragma once
/// Fusion analysis: what vertical fusion of memory-bound chains, GEMM epilogue fusion and
/// CUDA graphs save, per layer and per step (docs/fusion.md).
#include <array>
#include <cstdint>
#include <vector>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::analysis {

enum class FusionKind : std::uint8_t { vertical, epilogue };

struct FusionCandidate {
  const char* name = "";
  const char* chain = "";          ///< the kernels as run unfused
  FusionKind kind = FusionKind::vertical;
  double per_layer = 1;            ///< occurrences per layer
  double unfused_bytes = 0;        ///< main-memory bytes of the unfused kernels, one occurrence
  double fused_bytes = 0;
  double unfused_launches = 0;
  double fused_launches = 0;
  double t_unfused_s = 0;          ///< lower bound, one occurrence (launch included)
  double t_fused_s = 0;
  double saved_per_pass_s = 0;     ///< x per_layer x layers
  /// The same inside a CUDA graph (no launches), at the realistic times: what is left is the
  /// bytes fused away and the kernel boundaries removed (hw::EfficiencySpec::overhead_s).
  double saved_in_graph_per_pass_s = 0;
  const char* note = "";
  bool alternative = false;        ///< one of several ways to fuse the same ops (addmm's either-or); not added to the totals
};

struct FusionConfig {
  std::int64_t tokens = 4096;  ///< tokens of one forward pass on one chip
  std::int64_t tp = 1;
  bool dit = false;            ///< add the DiT AdaLN chains (LayerNorm + modulate, gate·residual)
};

struct BucketWaste {
  double mean_length = 0;
  double mean_padded = 0;
  double waste_fraction = 0;   ///< padded tokens that carry nothing / padded tokens
};

struct FusionResult {
  std::vector<FusionCandidate> candidates;
  double layers = 0;
  double saved_per_pass_s = 0;
  double saved_in_graph_per_pass_s = 0;  ///< inside a CUDA graph (FusionCandidate's)
  double launches_saved_per_pass = 0;
};

/// Candidates for one forward pass of `m` on `chip`: the chains seed 000 names, with bytes
/// counted per tensor and dtype. Throws InputError for bad sizes.
FusionResult analyze_fusion(const model::ModelConfig& m, const hw::ChipSpec& chip, const FusionConfig& cfg);

/// Padding waste of CUDA graphs captured per bucket (seed 004): lengths uniform in
/// [min_len, max_len], each padded to the smallest bucket that holds it. Throws
/// InputError when a length exceeds the largest bucket.
BucketWaste bucket_waste(const std::vector<std::int64_t>& buckets, std::int64_t min_len, std::int64_t max_len);

}  // namespace ridgeline::analysis
