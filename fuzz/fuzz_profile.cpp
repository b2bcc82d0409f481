// Any bytes given to the profile importers either import or raise InputError; an imported
// profile always analyses and calibrates. Each input goes to one importer, picked by its
// length: mutations that change the length move an input between them, so every importer
// sees every kind of text, at a third of the cost of running all three on every input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ridgeline/analysis/calibration.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/io/profile_file.hpp"
#include "ridgeline/profile/analysis.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ridgeline::hw::ChipSpec chip;
  chip.matrix_flops_per_s[ridgeline::index(ridgeline::DType::bf16)] = 1e15;
  chip.vector_flops_per_s[ridgeline::index(ridgeline::DType::fp32)] = 1e14;
  chip.memory = {{"HBM", 3e12, 80e9}};
  {
    const std::size_t which = size % 3;
    try {
      auto p = which == 0   ? ridgeline::io::parse_ncu_csv(text, "fuzz.csv")
               : which == 1 ? ridgeline::io::parse_generic_csv(text, "fuzz.csv")
                            : ridgeline::io::parse_torch_trace(text, "fuzz.json");
      auto a = ridgeline::profile::analyze(p, chip, ridgeline::DType::bf16);
      if (!(a.total_kernel_time_s >= 0)) __builtin_trap();
      int skipped = 0;
      auto r = ridgeline::analysis::calibrate(ridgeline::analysis::samples_from_profile(a, skipped), skipped);
      for (const auto& f : r.fits) {
        if (f.fitted && !(f.efficiency.overhead_s >= 0 && f.efficiency.matrix <= 1 && f.efficiency.memory <= 1)) __builtin_trap();
      }
    } catch (const ridgeline::InputError&) {
    }
  }
  return 0;
}
