#pragma once
/// FLOPs and bytes of a PyTorch aten op from the shapes the profiler recorded
/// (`record_shapes=True`: "Input Dims", "Input type"), with ridgeline's own op models, for
/// kernels whose trace carries no counters (docs/profiles.md#estimates).
#include <string>
#include <vector>

#include "ridgeline/core/dtype.hpp"

namespace ridgeline::profile {

struct AtenEstimate {
  bool ok = false;         ///< false: an op (or dtype) without a model; nothing estimated
  double flops = 0;
  double bytes = 0;        ///< main memory: every input read once, every output written once
  bool matrix = false;     ///< the FLOPs run on the matrix unit (GEMMs)
  DType dtype = DType::fp32;
};

/// `dims`: one list of sizes per input (empty for scalars); `types`: one type name per
/// input ("float", "c10::BFloat16", "c10::Half", "double", "Scalar", ...).
AtenEstimate estimate_aten(const std::string& op, const std::vector<std::vector<double>>& dims,
                           const std::vector<std::string>& types) noexcept;

}  // namespace ridgeline::profile
