#include <fmt/format.h>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/validation.hpp"

namespace ridgeline::report {

using nlohmann::json;

json validation_json(const hw::ChipSpec& chip, const analysis::ValidationResult& r) {
  json ops = json::array();
  for (const auto& k : r.kernels) {
    ops.push_back({{"name", k.name},
                   {"group", k.group},
                   {"bound", std::string(ops::name(k.bound))},
                   {"working_set_bytes", k.working_set_bytes},
                   {"level", k.level},
                   {"flops", k.flops},
                   {"model_bytes", k.model_bytes},
                   {"bytes", k.model_bytes + k.write_allocate_bytes},
                   {"attained_flops_per_s", k.measured_s > 0 ? k.flops / k.measured_s : 0.0},
                   {"write_allocate_bytes", k.write_allocate_bytes},
                   {"predicted_s", k.predicted_s},
                   {"compute_s", k.compute_s},
                   {"memory_s", k.memory_s},
                   {"measured_s", k.measured_s},
                   {"spread", k.spread},
                   {"repetitions", k.repetitions},
                   {"ratio", k.ratio},
                   {"fraction_of_roofline", k.ratio > 0 ? 1 / k.ratio : 0.0},
                   {"above_roof", k.above_roof},
                   {"checked", k.checked},
                   {"max_rel_error", k.max_rel_error}});
  }
  return {{"hw", chip.name},
          {"threads", r.threads},
          {"blas", r.blas},
          {"blas_config", r.blas_config},
          {"sbgemm", r.sbgemm},
          {"onednn", r.onednn},
          {"onednn_bf16_impl", r.onednn_bf16_impl},
          {"write_allocate", chip.write_allocate},
          {"seconds", r.seconds},
          {"ops", ops},
          {"summary",
           {{"memory", {{"median_ratio", r.median_ratio_memory}, {"worst_ratio", r.worst_ratio_memory}}},
            {"compute", {{"median_ratio", r.median_ratio_compute}, {"worst_ratio", r.worst_ratio_compute}}}}},
          {"notes", r.notes}};
}

std::string validation_text(const hw::ChipSpec& chip, const analysis::ValidationResult& r) {
  std::string s = fmt::format("{} on {} threads: measured / predicted (>= 1 under the roof; predicted from this chip's ceilings at the "
                              "memory level each working set fits in, {})\n\n",
                              chip.display_name, r.threads,
                              chip.write_allocate ? "write-allocate counted past L1" : "no write-allocate: the chip file's stores do not allocate");
  s += fmt::format("  {:<36} {:>10} {:>6} {:>8} {:>11} {:>11} {:>7} {:>7}  {}\n", "kernel", "set", "level", "bound", "predicted",
                   "measured", "ratio", "spread", "check");
  for (const auto& k : r.kernels) {
    s += fmt::format("  {:<36} {:>10} {:>6} {:>8} {:>11} {:>11} {:>7.2f} {:>6.0f}%  {}{}\n", k.name, format_quantity(k.working_set_bytes, Quantity::bytes),
                     k.level, ops::name(k.bound), format_quantity(k.predicted_s, Quantity::time), format_quantity(k.measured_s, Quantity::time), k.ratio,
                     100 * k.spread, k.checked ? "ok" : fmt::format("FAILED (error {:.2g})", k.max_rel_error),
                     k.above_roof ? "  ABOVE THE ROOF: model error" : "");
  }
  s += fmt::format("\nmemory-bound: median ratio {:.2f}, worst {:.2f};  compute-bound: median {:.2f}, worst {:.2f};  {:.1f} s\n",
                   r.median_ratio_memory, r.worst_ratio_memory, r.median_ratio_compute, r.worst_ratio_compute, r.seconds);
  for (const auto& n : r.notes) s += "note: " + n + "\n";
  return s;
}

}  // namespace ridgeline::report
