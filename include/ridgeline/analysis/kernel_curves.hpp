#pragma once
/// Kernel curves (docs/cost-model.md#kernel-curves): a chip file's measured kernel times by
/// size, each point priced by the same op costs as every graph, and the fit of a kernel
/// class's fixed time and achievable fractions to them — the figures `efficiency` holds.
#include <string>
#include <vector>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/ops/cost.hpp"

namespace ridgeline::analysis {

/// One kernel a curve point runs, as the model prices it.
struct CurveKernel {
  ops::Cost cost;
  hw::KernelClass cls = hw::KernelClass::other;
};

/// The kernels point `p` of a curve of class `cls` runs on `chip`: its one kernel (in class
/// `cls`), or for a `moe` point the engine's MoE layer without its router GEMM (top-k, the
/// grouped expert GEMMs in `cls`, the activation, the weighted sum), as the graph builds it;
/// a `group_quant` point with `copy` runs its input's copy first (a pointwise kernel).
std::vector<CurveKernel> point_kernels(const hw::CurvePoint& p, hw::KernelClass cls, const hw::ChipSpec& chip);

/// The point's op in a few words: "matmul 1x12288x5376 bf16", "decode_attention b16 kv4096 32/8x128 bf16".
std::string describe(const hw::CurvePoint& p);

/// A point beside the model's time for it.
struct PointResidual {
  std::string shape;       ///< describe(point)
  double measured_s = 0;   ///< per call
  double predicted_s = 0;  ///< its kernels' realistic times (timing `kernel`: each less the chip's kernel boundary)
  double residual = 0;     ///< predicted / measured − 1
  bool used = true;        ///< in the fit
};

/// The fit of one kernel class to the points of its curves.
struct CurveFit {
  hw::KernelClass cls = hw::KernelClass::other;
  bool fitted = false;
  /// The figures fitted: the fixed time per kernel and the fraction of each part some point
  /// binds on (0: not determined, the chip's figure stays). The gemm class's matrix part is
  /// fitted as its share of the chip's measured matmul rate, through the tiling (`matmul`,
  /// docs/cost-model.md#past-one-wave), never as a fraction of the peak.
  hw::ClassEfficiency efficiency;
  int points = 0;
  double rms_residual = 0, max_residual = 0;
  /// A fraction was held at 1: some points ran faster than its peak allows (said in `notes`).
  bool past_peak = false;
  std::vector<PointResidual> residuals;  ///< every point of the class's curves, in file order
  std::vector<std::string> notes;        ///< figures held at a limit, or why the class was not fitted
};

/// Fits every class with curves on `chip`, one after another in an order where a class's
/// fit sees the fits of the classes its points also run (pointwise and norm before gemm,
/// gemm before gemm_expert): weighted least squares on the relative error, each kernel's
/// binding part re-decided at the fitted rates until it settles; fractions above 1 and
/// negative fixed times held at their limits, and said.
std::vector<CurveFit> fit_curves(const hw::ChipSpec& chip);

/// `chip` with each fitted class's figures in its efficiency (the fixed time and the
/// fractions fitted; the others as they were).
hw::ChipSpec with_curve_fits(const hw::ChipSpec& chip, const std::vector<CurveFit>& fits);

/// Every curve point of `chip` against the chip's own figures (no fit): what `hw show`
/// prints, one CurveFit per class with curves (`fitted` false, `efficiency` the chip's).
std::vector<CurveFit> curve_residuals(const hw::ChipSpec& chip);

}  // namespace ridgeline::analysis
