#pragma once
/// The best model FLOPs utilisation published for a class of training runs (dense models of a
/// size band, on one chip, in one GEMM dtype), in ridgeline's convention (docs/training.md#flops-mfu-and-hfu:
/// causal attention pairs only), each with its run and source (docs/training.md#published-mfu).
/// A plan predicted above it for its class leans on an assumption worth naming.
#include <string_view>

#include "ridgeline/core/dtype.hpp"

namespace ridgeline::analysis {

struct PublishedMfu {
  const char* chip = "";      ///< catalog name
  bool fp8 = false;           ///< GEMMs in fp8 (MFU of the fp8 peak), else bf16/fp16
  double min_params = 0;      ///< the class: total parameters in [min, max)
  double max_params = 0;
  const char* size_class = "";  ///< e.g. "dense 20-150B"
  double mfu = 0;             ///< ridgeline's MFU at the published step time
  const char* run = "";       ///< the run: model, GPUs, plan, step time
  const char* source = "";
};

/// The entry for a dense model of `params` parameters on chip `chip` training in `dtype`;
/// nullptr where the table has none (MoE models, other chips and dtypes).
const PublishedMfu* published_mfu(double params, bool moe, std::string_view chip, DType dtype) noexcept;

}  // namespace ridgeline::analysis
