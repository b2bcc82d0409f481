#pragma once
/// `ridgeline validate`: real kernels timed on this machine beside ridgeline's prediction
/// from the machine's measured ceilings, at the memory level each working set fits in (a
/// cache-aware roofline). docs/measurement.md#validate.
#include <string>
#include <vector>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::analysis {

struct ValidationConfig {
  bool quick = true;  ///< fewer repetitions and sizes (CI); full: more repetitions, larger GEMMs
  int threads = 0;    ///< 0: every online CPU
  /// Kernel groups to run (stream, norm, fusion, gemm, attention); empty: all. Another name
  /// is an InputError naming `--only`.
  std::vector<std::string> groups;
};

struct KernelCheck {
  std::string name;   ///< e.g. "triad (DRAM)", "sgemm 512"
  std::string group;  ///< stream, norm, fusion, gemm, attention
  double working_set_bytes = 0;
  std::string level;  ///< the memory level the prediction reads from
  ops::Bound bound = ops::Bound::memory;
  double flops = 0;
  double model_bytes = 0;           ///< bytes of ridgeline's op model (no write-allocate)
  double write_allocate_bytes = 0;  ///< read for ownership of lines stored without being read first (chips whose stores allocate; 0 in L1)
  double predicted_s = 0;           ///< lower bound: max(FLOPs / peak, (model + write-allocate bytes) / level bandwidth)
  double compute_s = 0;             ///< FLOPs / peak (the prediction's math part)
  double memory_s = 0;              ///< model bytes / level bandwidth: the memory part without write-allocate (for calibrate)
  double measured_s = 0;            ///< median
  double spread = 0;                ///< max/min - 1 over the repetitions
  int repetitions = 0;
  double ratio = 0;                 ///< measured / predicted: >= 1 under the roof
  bool above_roof = false;          ///< faster than the roof by more than the noise: a model error
  bool checked = false;             ///< the output matched a double-precision reference
  double max_rel_error = 0;
};

struct ValidationResult {
  std::vector<KernelCheck> kernels;
  double median_ratio_memory = 0, worst_ratio_memory = 0;    ///< memory-bound kernels
  double median_ratio_compute = 0, worst_ratio_compute = 0;  ///< compute-bound kernels
  int threads = 1;
  bool blas = false;  ///< OpenBLAS present (GEMMs and attention ran)
  std::string blas_config;  ///< openblas_get_config(): the version and the kernels it chose for this CPU
  bool sbgemm = false;  ///< OpenBLAS's bf16 GEMMs ran (cblas_sbgemm present, the chip has a bf16 matrix rate)
  std::string onednn;   ///< the oneDNN loaded for the bf16 matmul and int8 GEMM ("oneDNN 2.6.3 (OpenMP)"), or why none was
  std::string onednn_bf16_impl;  ///< the implementation oneDNN chose for the bf16 matmuls (e.g. brg:avx512_core_bf16)
  double seconds = 0;
  std::vector<std::string> notes;
};

/// Throws InputError (naming `--only`) for a name that is not a kernel group.
void check_groups(const std::vector<std::string>& groups);

/// Runs every kernel on `chip`'s host (the chip file must describe this machine, e.g. from
/// `ridgeline measure`). Throws InputError when the chip has no fp32 rate or no memory level.
ValidationResult validate_kernels(const hw::ChipSpec& chip, const ValidationConfig& cfg);

}  // namespace ridgeline::analysis
