#pragma once
/// Calibration (docs/calibration.md): from kernels measured on a chip — an imported GPU
/// profile or a `validate` run on the host — fit each kernel class's achievable fractions of
/// the peaks and its fixed time per kernel, the model `t = overhead + max(compute / f_c,
/// memory / f_m)` that the realistic times use, and report the residuals.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/hw/chip.hpp"
#include "ridgeline/profile/analysis.hpp"

namespace ridgeline::analysis {

/// One measured kernel (per call): its time and its roofline parts at the peaks.
struct CalibrationSample {
  std::string name;
  hw::KernelClass cls = hw::KernelClass::other;
  double calls = 1;
  double time_s = 0;     ///< measured, per call
  double compute_s = 0;  ///< FLOPs over the peak of the unit they ran on, per call
  double memory_s = 0;   ///< bytes over the bandwidth of the level they came from, per call
  hw::Unit unit = hw::Unit::matrix;  ///< where the FLOPs ran
  // After the fit:
  bool used = false;          ///< in its class's fit
  bool compute_bound = false; ///< the compute part binds at the fitted rates
  double predicted_s = 0;     ///< overhead + max(compute / f_c, memory / f_m)
  double residual = 0;        ///< predicted / measured - 1
};

/// One class's fit.
/// The smallest fraction of a peak a fit may give (5%): below it the counts are wrong.
inline constexpr double kMinFraction = 0.05;

struct ClassFit {
  bool fitted = false;
  int samples = 0, compute_samples = 0, memory_samples = 0;
  hw::ClassEfficiency efficiency;  ///< the fractions fitted (0: not determined) and the fixed time
  hw::Unit compute_unit = hw::Unit::matrix;  ///< the unit the compute fraction belongs to
  double rms_residual = 0, max_residual = 0;  ///< relative, over the class's samples
  std::vector<std::string> notes;  ///< why not fitted, or what was held at a limit
};

struct CalibrationResult {
  std::vector<CalibrationSample> samples;
  std::array<ClassFit, hw::kKernelClassCount> fits{};
  int skipped = 0;  ///< kernels without a time, or without FLOPs and bytes
  std::vector<std::string> notes;
};

/// The class of a kernel from its name and, for traces, the CPU op that launched it
/// (cuBLAS/CUTLASS/rocBLAS GEMMs, flash/fused attention, NCCL collectives; anything else is
/// pointwise).
hw::KernelClass classify_kernel(std::string_view name, std::string_view op = "");

/// Samples from a profile placed on a chip's roofline (per-call averages of each kernel).
std::vector<CalibrationSample> samples_from_profile(const profile::ProfileAnalysis& a, int& skipped);

/// Samples from a `ridgeline validate --json` document (its text); `source` names it in
/// errors. Memory parts count the op model's bytes, not the CPU's write-allocate traffic,
/// so that the fitted fraction applies to the bytes ridgeline's models count.
std::vector<CalibrationSample> samples_from_validation(std::string_view json_text, std::string_view source, int& skipped);

/// Fits every class with enough samples: weighted least squares on relative error, the
/// binding part of each kernel re-decided at the fitted rates until it settles; fractions
/// above 1 (faster than the peak) and negative fixed times are held at their limits, and
/// say so. Collectives are not fitted (profiles carry no message sizes).
CalibrationResult calibrate(std::vector<CalibrationSample> samples, int skipped);

/// `base` with the fitted classes' efficiencies (other classes as they were).
hw::ChipSpec calibrated_chip(const hw::ChipSpec& base, const CalibrationResult& r);

}  // namespace ridgeline::analysis
