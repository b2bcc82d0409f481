// Any JSON document given to the charts and the HTML report (`plot breakdown|memory|
// roofline --from`, which read users' files) either draws or raises InputError; any text
// given to calibrate as a validate run either calibrates or raises InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ridgeline/analysis/calibration.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/report/html.hpp"
#include "ridgeline/report/result_charts.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    int skipped = 0;
    auto r = ridgeline::analysis::calibrate(ridgeline::analysis::samples_from_validation(text, "fuzz.json", skipped), skipped);
    for (const auto& f : r.fits) {
      if (f.fitted && !(f.efficiency.overhead_s >= 0 && f.efficiency.matrix <= 1 && f.efficiency.memory <= 1)) __builtin_trap();
    }
  } catch (const ridgeline::InputError&) {
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  ridgeline::hw::ChipSpec chip;
  chip.name = "fuzz";
  chip.matrix_flops_per_s[ridgeline::index(ridgeline::DType::bf16)] = 1e15;
  chip.vector_flops_per_s[ridgeline::index(ridgeline::DType::fp32)] = 1e14;
  chip.memory = {{"HBM", 3e12, 80e9}};
  auto attempt = [](auto&& f) {
    try {
      if (f().empty()) __builtin_trap();
    } catch (const ridgeline::InputError&) {
    }
  };
  attempt([&] { return ridgeline::report::breakdown_svg(j, "fuzz.json"); });
  attempt([&] { return ridgeline::report::memory_svg(j, "fuzz.json"); });
  attempt([&] { return ridgeline::report::ops_roofline_svg(j, chip); });
  attempt([&] { return ridgeline::report::html_report(j, chip); });
  return 0;
}
