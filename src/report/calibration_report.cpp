#include "ridgeline/report/calibration.hpp"

#include <fmt/format.h>

#include <ctime>

#include "ridgeline/io/hardware_file.hpp"

namespace ridgeline::report {

namespace {
using analysis::CalibrationResult;
using nlohmann::json;

std::string pct(double v) { return fmt::format("{:.1f}%", 100 * v); }
std::string frac(double v) { return v > 0 ? fmt::format("{:.3f}", v) : "-"; }
std::string us(double s) { return fmt::format("{:.2f} us", s * 1e6); }
}  // namespace

json calibration_json(const CalibrationResult& r, const hw::ChipSpec& chip, const std::string& source) {
  json classes = json::object();
  for (int k = 1; k < hw::kKernelClassCount; ++k) {
    const analysis::ClassFit& f = r.fits[k];
    if (f.samples == 0) continue;
    classes[std::string(hw::name(static_cast<hw::KernelClass>(k)))] = {
        {"fitted", f.fitted},
        {"kernels", f.samples},
        {"compute_bound", f.compute_samples},
        {"memory_bound", f.memory_samples},
        {"matrix", f.efficiency.matrix},
        {"vector", f.efficiency.vector},
        {"memory", f.efficiency.memory},
        {"overhead_s", f.efficiency.overhead_s},
        {"rms_residual", f.rms_residual},
        {"max_residual", f.max_residual},
        {"notes", f.notes}};
  }
  json kernels = json::array();
  for (const auto& s : r.samples) {
    kernels.push_back({{"name", s.name},
                       {"class", std::string(hw::name(s.cls))},
                       {"calls", s.calls},
                       {"measured_s", s.time_s},
                       {"compute_s", s.compute_s},
                       {"memory_s", s.memory_s},
                       {"used", s.used},
                       {"bound", s.used ? (s.compute_bound ? "compute" : "memory") : ""},
                       {"predicted_s", s.predicted_s},
                       {"residual", s.residual}});
  }
  return {{"hw", chip.name}, {"source", source}, {"classes", classes}, {"kernels", kernels}, {"skipped", r.skipped}, {"notes", r.notes}};
}

std::string calibration_text(const CalibrationResult& r, const hw::ChipSpec& chip, const std::string& source) {
  std::string out = fmt::format("calibration of {} from {}: {} kernels{}\n", chip.name, source, r.samples.size(),
                                r.skipped > 0 ? fmt::format(" ({} left out)", r.skipped) : "");
  out += "model: t = fixed time + max(FLOPs / (fraction x peak), bytes / (fraction x bandwidth)), per kernel class\n\n";
  out += fmt::format("{:<11} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>11} {:>9} {:>9}\n", "class", "kernels", "compute", "memory",
                     "matrix", "vector", "memory", "fixed time", "rms res.", "max res.");
  out += fmt::format("{:<11} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>11}\n", "", "", "-bound", "-bound", "frac.", "frac.", "frac.", "");
  for (int k = 1; k < hw::kKernelClassCount; ++k) {
    const analysis::ClassFit& f = r.fits[k];
    if (f.samples == 0) continue;
    const std::string name(hw::name(static_cast<hw::KernelClass>(k)));
    if (!f.fitted) {
      out += fmt::format("{:<11} {:>7}  not fitted\n", name, f.samples);
    } else {
      out += fmt::format("{:<11} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>11} {:>9} {:>9}\n", name, f.samples, f.compute_samples,
                         f.memory_samples, frac(f.efficiency.matrix), frac(f.efficiency.vector), frac(f.efficiency.memory),
                         us(f.efficiency.overhead_s), pct(f.rms_residual), pct(f.max_residual));
    }
    for (const auto& n : f.notes) out += fmt::format("  {}: {}\n", name, n);
  }
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  // The kernels the fit misses most.
  std::vector<const analysis::CalibrationSample*> worst;
  for (const auto& s : r.samples) {
    if (s.used) worst.push_back(&s);
  }
  std::sort(worst.begin(), worst.end(), [](auto* a, auto* b) { return std::abs(a->residual) > std::abs(b->residual); });
  if (!worst.empty()) {
    out += "\nlargest residuals (predicted / measured - 1)\n";
    for (std::size_t i = 0; i < worst.size() && i < 8; ++i) {
      const auto& s = *worst[i];
      out += fmt::format("  {:>7}  {:<10} {:>12} measured {:>12} predicted  {}\n", pct(s.residual), hw::name(s.cls),
                         fmt::format("{:.3g} s", s.time_s), fmt::format("{:.3g} s", s.predicted_s),
                         s.name.size() > 60 ? s.name.substr(0, 57) + "..." : s.name);
    }
  }
  return out;
}

std::string calibration_provenance(const CalibrationResult& r, const std::string& source, const std::string& command) {
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string y = fmt::format("calibrated:\n  date: \"{}\"\n  command: {}\n  file: {}\n", date, io::yaml_quoted(command),
                              io::yaml_quoted(source));
  for (int k = 1; k < hw::kKernelClassCount; ++k) {
    const analysis::ClassFit& f = r.fits[k];
    if (!f.fitted) continue;
    y += fmt::format("  {}: {{kernels: {}, rms_residual: {:.4f}, max_residual: {:.4f}}}\n", hw::name(static_cast<hw::KernelClass>(k)),
                     f.samples, f.rms_residual, f.max_residual);
  }
  return y;
}

}  // namespace ridgeline::report
