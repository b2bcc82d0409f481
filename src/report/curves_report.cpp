// Kernel curves in reports (`hw show`, `hw fit`).
#include "ridgeline/report/curves.hpp"

#include <fmt/format.h>

#include <string>
#include <tuple>
#include <utility>

#include "ridgeline/core/units.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

std::string class_figures(const hw::ClassEfficiency& e, hw::KernelClass cls, const hw::EfficiencySpec& file) {
  const hw::ClassEfficiency& own = file.kernel[static_cast<int>(cls)];
  const hw::ClassEfficiency lent = hw::lent_figures(file, cls);
  const std::string via = std::string(hw::name(hw::fallback(cls))) + "'s ";
  std::string out;
  const auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  // A figure `e` lacks is the file's own for the class, else the lender's; one that equals the
  // lender's where the file gives the class none of its own is named as the lender's: the
  // figure shown and the name before it.
  const auto pick = [&](double v, double mine, double theirs) {
    const double shown = v > 0 ? v : mine > 0 ? mine : theirs;
    return std::pair{shown, mine <= 0 && theirs > 0 && shown == theirs ? via : std::string()};
  };
  for (auto [part, v, mine, theirs] : {std::tuple{"matrix", e.matrix, own.matrix, lent.matrix}, {"vector", e.vector, own.vector, lent.vector},
                                       {"memory", e.memory, own.memory, lent.memory}, {"link", e.link, own.link, lent.link}}) {
    const auto [shown, name] = pick(v, mine, theirs);
    if (shown > 0) add(fmt::format("{}{} {:.3f}", name, part, shown));
  }
  if (e.matmul > 0) add(fmt::format("{:.3f} of the measured matmul rate", e.matmul));
  if (e.tile_keys > 0) add(fmt::format("a prefill's query tile {:g} keys' work", e.tile_keys));
  if (e.fill_k > 0) add(fmt::format("each tile {:g} columns of K more{}", e.fill_k, hw::fill_reads(cls) ? " on its loads" : ""));
  if (e.k_loop_s > 0) add(fmt::format("a tile's K loop at least {} a column", t(e.k_loop_s)));
  if (e.overlap > 0.5) add(fmt::format("at least {:.3f} of matrix + {}", e.overlap, hw::overlap_partner(cls)));
  const auto [overhead, name] = pick(e.overhead_s, own.overhead_s, lent.overhead_s);
  if (overhead > 0) add(fmt::format("{}{} per kernel", name, t(overhead)));
  return out;
}

namespace {

// A fit's figures as the chip file keeps them (fitted_efficiency_yaml's 4 significant digits):
// what `hw show` prints once they are written, 0.8195 and not the fit's 0.81946, which three
// decimals would print 0.819 against `hw show`'s 0.820.
hw::ClassEfficiency as_stored(hw::ClassEfficiency e) {
  for (double* v : {&e.matrix, &e.vector, &e.memory, &e.link, &e.overlap, &e.matmul}) {
    if (*v > 0) *v = std::stod(fmt::format("{:.4g}", *v));
  }
  return e;
}

}  // namespace

std::string curves_text(const hw::ChipSpec& chip, const std::vector<analysis::CurveFit>& fits) {
  if (fits.empty()) return "";
  std::string out = "kernel curves (measured times by size; a class's figures are their fit: `ridgeline hw fit`)\n";
  for (const analysis::CurveFit& f : fits) {
    out += fmt::format("  {}: {}\n", hw::name(f.cls), class_figures(as_stored(f.efficiency), f.cls, chip.efficiency));
    for (const hw::KernelCurve& k : chip.curves) {
      if (k.cls == f.cls) out += fmt::format("    {} ({} timing): {}\n", k.kernel, hw::name(k.timing), k.source);
    }
    out += fmt::format("    {:<44} {:>11} {:>11} {:>8}\n", "point", "measured", "model", "error");
    for (const analysis::PointResidual& p : f.residuals) {
      out += fmt::format("    {:<44} {:>11} {:>11} {:>+7.1f}%\n", p.shape, t(p.measured_s), t(p.predicted_s), 100 * p.residual);
    }
    out += fmt::format("    rms error {:.1f}%, largest {:.1f}% over {} points\n", 100 * f.rms_residual, 100 * f.max_residual, f.points);
    for (const std::string& n : f.notes) out += "    note: " + n + "\n";
  }
  return out;
}

nlohmann::json curves_json(const hw::ChipSpec& chip, const std::vector<analysis::CurveFit>& fits) {
  nlohmann::json out = nlohmann::json::array();
  for (const analysis::CurveFit& f : fits) {
    nlohmann::json j;
    j["class"] = hw::name(f.cls);
    j["curves"] = nlohmann::json::array();
    for (const hw::KernelCurve& k : chip.curves) {
      if (k.cls == f.cls) j["curves"].push_back({{"kernel", k.kernel}, {"source", k.source}, {"timing", hw::name(k.timing)}});
    }
    j["points"] = nlohmann::json::array();
    for (const analysis::PointResidual& p : f.residuals) {
      j["points"].push_back({{"shape", p.shape}, {"measured_s", p.measured_s}, {"predicted_s", p.predicted_s}, {"residual", p.residual}});
    }
    j["rms_residual"] = f.rms_residual;
    j["max_residual"] = f.max_residual;
    j["fitted"] = f.fitted;
    j["overhead_s"] = f.efficiency.overhead_s;
    j["matrix"] = f.efficiency.matrix;
    j["vector"] = f.efficiency.vector;
    j["memory"] = f.efficiency.memory;
    j["link"] = f.efficiency.link;
    j["overlap"] = f.efficiency.overlap;
    j["matmul"] = f.efficiency.matmul;
    j["tile_keys"] = f.efficiency.tile_keys;
    j["fill_k"] = f.efficiency.fill_k;
    j["k_loop_s"] = f.efficiency.k_loop_s;
    j["notes"] = f.notes;
    out.push_back(std::move(j));
  }
  return out;
}

std::string fitted_efficiency_yaml(const std::vector<analysis::CurveFit>& fits) {
  std::string y;
  for (const analysis::CurveFit& f : fits) {
    if (!f.fitted) continue;
    std::string fields;
    const hw::ClassEfficiency& e = f.efficiency;
    for (auto [part, v] : {std::pair{"matrix", e.matrix}, {"vector", e.vector}, {"memory", e.memory}, {"link", e.link}}) {
      if (v > 0) fields += fmt::format("{}{}: {:.4g}", fields.empty() ? "" : ", ", part, v);
    }
    if (e.overhead_s > 0) fields += fmt::format("{}overhead: {:.4g} us", fields.empty() ? "" : ", ", e.overhead_s * 1e6);
    if (e.overlap > 0.5) fields += fmt::format("{}overlap: {:.4g}", fields.empty() ? "" : ", ", e.overlap);
    if (e.matmul > 0) fields += fmt::format("{}matmul: {:.4g}", fields.empty() ? "" : ", ", e.matmul);
    if (e.tile_keys > 0) fields += fmt::format("{}tile_keys: {:g}", fields.empty() ? "" : ", ", e.tile_keys);
    if (e.fill_k > 0) fields += fmt::format("{}fill_k: {:g}", fields.empty() ? "" : ", ", e.fill_k);
    if (e.k_loop_s > 0) fields += fmt::format("{}k_loop: {:.4g} ns", fields.empty() ? "" : ", ", e.k_loop_s * 1e9);
    y += fmt::format("  {}: {{{}}}\n", hw::name(f.cls), fields);
  }
  return y;
}

}  // namespace ridgeline::report
