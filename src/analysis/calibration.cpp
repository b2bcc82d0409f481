#include "ridgeline/analysis/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "least_squares.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/text.hpp"

namespace ridgeline::analysis {

namespace {

bool has_any(const std::string& s, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return s.find(w) != std::string::npos; });
}

// The model's parameters: overhead, 1/f_compute, 1/f_memory (fixed ones held at their value).
using Params = LinearParams<3>;

// Weighted least squares on relative error: minimise sum ((t - o - u_c x_c - u_m x_m) / t)^2,
// where each sample contributes only its binding part.
bool solve(const std::vector<const CalibrationSample*>& s, const std::vector<bool>& compute, Params& p) {
  return solve_least_squares<3>(s.size(), [&](std::size_t k, std::array<double, 3>& row, double& rhs, double& w) {
    const double t = s[k]->time_s;
    row = {1, compute[k] ? s[k]->compute_s : 0, compute[k] ? 0 : s[k]->memory_s};
    rhs = t;
    w = 1 / (t * t);
  }, p);
}

void fit_class(std::vector<CalibrationSample*>& mine, ClassFit& fit) {
  std::vector<const CalibrationSample*> s(mine.begin(), mine.end());
  fit.samples = static_cast<int>(s.size());
  if (s.size() < 2) {
    fit.notes.push_back(fmt::format("{} kernel{}: at least 2 are needed", s.size(), s.size() == 1 ? "" : "s"));
    return;
  }
  std::vector<bool> compute(s.size());
  for (std::size_t k = 0; k < s.size(); ++k) compute[k] = s[k]->compute_s >= s[k]->memory_s;
  Params p;
  p.value = {0, 1, 1};
  bool ok = false, settled = false;
  bool held_overhead = false, held_compute = false, held_memory = false;
  for (int iter = 0; iter < 20 && !settled; ++iter) {
    const bool any_c = std::find(compute.begin(), compute.end(), true) != compute.end();
    const bool any_m = std::find(compute.begin(), compute.end(), false) != compute.end();
    p.fixed = {false, !any_c, !any_m};
    ok = solve(s, compute, p);
    if (!ok && !p.fixed[0]) {
      // Too few distinct kernels for an intercept: the fixed time is taken as zero.
      p.fixed[0] = true;
      p.value[0] = 0;
      held_overhead = true;
      ok = solve(s, compute, p);
    }
    if (!ok) break;
    // Limits: no negative fixed time, no fraction above 1 (faster than the peak). Each
    // parameter past its limit is held there and the rest fitted again.
    for (int round = 0; round < 3; ++round) {
      bool changed = false;
      if (p.value[0] < 0 && !p.fixed[0]) p.fixed[0] = true, p.value[0] = 0, held_overhead = changed = true;
      if (any_c && p.value[1] < 1 && !p.fixed[1]) p.fixed[1] = true, p.value[1] = 1, held_compute = changed = true;
      if (any_m && p.value[2] < 1 && !p.fixed[2]) p.fixed[2] = true, p.value[2] = 1, held_memory = changed = true;
      if (!changed) break;
      ok = solve(s, compute, p);
      if (!ok) break;
    }
    if (!ok) break;
    // Which part binds at the fitted rates (a part without an estimate keeps its kernels).
    settled = true;
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (!any_c || !any_m) break;
      const bool c = p.value[1] * s[k]->compute_s >= p.value[2] * s[k]->memory_s;
      if (c != compute[k]) compute[k] = c, settled = false;
    }
  }
  if (!ok) {
    fit.notes.push_back("the kernels do not determine a fit (too few distinct sizes)");
    return;
  }
  if (!settled) fit.notes.push_back("which part binds did not settle in 20 rounds; the last fit is kept");
  if (held_overhead) fit.notes.push_back("fixed time held at 0 (the fit wanted none or a negative one)");
  if (held_compute) fit.notes.push_back("compute fraction held at 1: kernels ran faster than the peak (FLOP counts or the chip's peak are off)");
  if (held_memory) fit.notes.push_back("memory fraction held at 1: kernels ran faster than the bandwidth (byte counts or the chip's bandwidth are off)");
  fit.fitted = true;
  fit.efficiency.overhead_s = p.value[0];
  int matrix = 0, vector = 0;
  double sum2 = 0;
  for (std::size_t k = 0; k < s.size(); ++k) {
    CalibrationSample& x = *mine[k];
    x.used = true;
    x.compute_bound = compute[k];
    // A part no kernel is bound by keeps 1/f = 1 (the peak): it cannot bind above the fitted one.
    x.predicted_s = p.value[0] + std::max(x.compute_s * p.value[1], x.memory_s * p.value[2]);
    x.residual = x.predicted_s / x.time_s - 1;
    sum2 += x.residual * x.residual;
    fit.max_residual = std::max(fit.max_residual, std::abs(x.residual));
    if (compute[k]) {
      ++fit.compute_samples;
      (x.unit == hw::Unit::matrix ? matrix : vector) += 1;
    } else {
      ++fit.memory_samples;
    }
  }
  fit.rms_residual = std::sqrt(sum2 / static_cast<double>(s.size()));
  // A fixed time above most kernels' measured time says their counts explain little of it.
  std::vector<double> times;
  for (const auto* x : s) times.push_back(x->time_s);
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
  if (p.value[0] > 0.5 * times[times.size() / 2]) {
    fit.notes.push_back("the fixed time is over half the median kernel's time: the kernels' FLOPs and bytes explain little of it (counts missing?)");
  }
  fit.compute_unit = vector > matrix ? hw::Unit::vector : hw::Unit::matrix;
  if (fit.compute_samples > 0) (fit.compute_unit == hw::Unit::matrix ? fit.efficiency.matrix : fit.efficiency.vector) = 1 / p.value[1];
  if (fit.memory_samples > 0) fit.efficiency.memory = 1 / p.value[2];
  // What kernels achieve is a fraction of a peak between kMinFraction and 1: a fit below it
  // says the counts are wrong (bytes or FLOPs missing), not that the chip is that slow; a fit
  // whose kernels scatter (rms residual over 50%) says they do not follow one line. Neither
  // is kept, and calibrate writes no chip file from it.
  for (auto [name, v] : {std::pair{"compute", fit.compute_samples > 0 ? 1 / p.value[1] : 1.0}, {"memory", fit.memory_samples > 0 ? 1 / p.value[2] : 1.0}}) {
    if (v < kMinFraction) {
      fit.fitted = false;
      fit.notes.push_back(fmt::format("{} fraction {:.3g} is below {}, outside what kernels achieve: the FLOP or byte counts are missing "
                                      "or wrong; not used", name, v, kMinFraction));
    }
  }
  if (fit.rms_residual > 0.5) {
    fit.fitted = false;
    fit.notes.push_back(fmt::format("contradictory kernels: rms residual {:.0f}% (they do not follow one fixed time plus a rate); not used",
                                    100 * fit.rms_residual));
  }
}

}  // namespace

hw::KernelClass classify_kernel(std::string_view name, std::string_view op) {
  const std::string n = ascii_lower(name), o = ascii_lower(op);
  if (has_any(n, {"nccl", "allreduce", "all_reduce", "allgather", "all_gather", "reducescatter", "reduce_scatter",
                  "alltoall", "all_to_all", "sendrecv"}) ||
      has_any(o, {"c10d::", "nccl"})) {
    return hw::KernelClass::collective;
  }
  if (has_any(n, {"flash", "fmha", "attention", "attn", "sdpa", "mha_"}) ||
      has_any(o, {"scaled_dot_product", "flash_attention", "efficient_attention"})) {
    return has_any(n, {"bwd", "backward"}) || has_any(o, {"backward"}) ? hw::KernelClass::attention_backward
                                                                        : hw::KernelClass::attention;
  }
  if (has_any(n, {"gemm", "cutlass", "xmma", "cublas", "matmul", "wgmma", "hmma", "_mma", "cijk_", "gemv"}) ||
      o == "aten::mm" || o == "aten::addmm" || o == "aten::bmm" || o == "aten::baddbmm" || o == "aten::linear" ||
      o == "aten::matmul") {
    return hw::KernelClass::gemm;
  }
  return hw::KernelClass::pointwise;
}

std::vector<CalibrationSample> samples_from_profile(const profile::ProfileAnalysis& a, int& skipped) {
  std::vector<CalibrationSample> out;
  for (const auto& k : a.kernels) {
    if (!(k.time_s > 0) || !(k.count > 0) || !(k.t_math_s > 0 || k.t_memory_s > 0)) {
      ++skipped;
      continue;
    }
    CalibrationSample s;
    s.name = k.name;
    s.cls = classify_kernel(k.name, k.op);
    s.calls = k.count;
    s.time_s = k.time_s / k.count;
    s.compute_s = k.t_math_s / k.count;
    s.memory_s = k.t_memory_s / k.count;
    s.unit = k.unit;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<CalibrationSample> samples_from_validation(std::string_view text, std::string_view source, int& skipped) {
  using nlohmann::json;
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception&) {
    throw InputError(fmt::format("{}: not JSON: expected the output of ridgeline validate --json", source));
  }
  if (!root.is_object() || !root.contains("ops") || !root["ops"].is_array()) {
    throw InputError(fmt::format("{}: no 'ops' list: expected the output of ridgeline validate --json", source));
  }
  auto number = [](const json& o, const char* key) {
    return o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0;
  };
  std::vector<CalibrationSample> out;
  for (const json& o : root["ops"]) {
    if (!o.is_object()) continue;
    CalibrationSample s;
    s.name = o.contains("name") && o["name"].is_string() ? o["name"].get<std::string>() : "";
    const std::string group = o.contains("group") && o["group"].is_string() ? o["group"].get<std::string>() : "";
    s.cls = group == "gemm"                 ? hw::KernelClass::gemm
            : group == "attention"          ? hw::KernelClass::attention
            : group == "attention_backward" ? hw::KernelClass::attention_backward
                                            : hw::KernelClass::pointwise;
    s.time_s = number(o, "measured_s");
    s.compute_s = number(o, "compute_s");
    s.memory_s = number(o, "memory_s");
    s.unit = hw::Unit::matrix;  // validate predicts GEMMs and attention on the matrix unit
    if (s.cls == hw::KernelClass::pointwise) s.unit = hw::Unit::vector;
    if (!(s.time_s > 0) || !std::isfinite(s.time_s) || !(s.compute_s >= 0 && s.memory_s >= 0) ||
        !std::isfinite(s.compute_s + s.memory_s) || !(s.compute_s > 0 || s.memory_s > 0)) {
      ++skipped;
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

CalibrationResult calibrate(std::vector<CalibrationSample> samples, int skipped) {
  CalibrationResult r;
  r.samples = std::move(samples);
  r.skipped = skipped;
  for (int c = 1; c < hw::kKernelClassCount; ++c) {
    const auto cls = static_cast<hw::KernelClass>(c);
    std::vector<CalibrationSample*> mine;
    for (auto& s : r.samples) {
      if (s.cls == cls) mine.push_back(&s);
    }
    ClassFit& fit = r.fits[c];
    if (cls == hw::KernelClass::collective) {
      fit.samples = static_cast<int>(mine.size());
      if (!mine.empty()) fit.notes.push_back("not fitted: a profile records no message sizes");
      continue;
    }
    if (mine.empty()) continue;
    fit_class(mine, fit);
  }
  if (r.skipped > 0) r.notes.push_back(fmt::format("{} kernel(s) without a time or without FLOPs and bytes were left out", r.skipped));
  return r;
}

hw::ChipSpec calibrated_chip(const hw::ChipSpec& base, const CalibrationResult& r) {
  hw::ChipSpec c = base;
  for (int k = 1; k < hw::kKernelClassCount; ++k) {
    if (!r.fits[k].fitted) continue;
    hw::ClassEfficiency& e = c.efficiency.kernel[k];
    const hw::ClassEfficiency was = e;
    e = r.fits[k].efficiency;
    e.k_loop_s = 0;  // a profile's kernels record no K: the fixed time fitted to them holds their K loops
    // A profile whose GEMMs fit no matrix fraction (all memory-bound) leaves the class's share
    // of the measured matmul rate as it was, and its overlap share (fitted with it); so for
    // attention the work of a query tile and the matrix fraction fitted with it and its share,
    // which a fraction fitted to its kernels' FLOPs holds already, and a GEMM class's tile
    // fill with the fraction fitted with it, likewise. (A flash prefill's tiles'
    // own shape, the masked diagonal, stays priced: a profile's FLOPs are its counters', which
    // count the pairs computed, and `validate` times naive attention, which has no tiles.)
    if (e.matrix <= 0) {
      e.matmul = was.matmul, e.tile_keys = was.tile_keys, e.fill_k = was.fill_k;
      if (e.overlap <= 0) e.overlap = was.overlap;
      if (was.tile_keys > 0 || was.fill_k > 0) e.matrix = was.matrix;
    }
  }
  return c;
}

}  // namespace ridgeline::analysis
