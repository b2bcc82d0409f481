// Any bytes given to the hardware-file loader or the ERT importer either load a chip or
// raise InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/ert_file.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/ops/estimate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    ridgeline::hw::ChipSpec c = ridgeline::io::parse_chip_yaml(text, "fuzz.yaml");
    // A loaded chip must be usable: an estimate on it never crashes.
    ridgeline::ops::Cost cost;
    cost.add_main_bytes(1e9);
    cost.add_flops(ridgeline::hw::Unit::matrix, ridgeline::DType::bf16, 1e12);
    (void)ridgeline::ops::estimate(cost, c);
  } catch (const ridgeline::InputError&) {
  }
  try {
    ridgeline::io::ErtImportOptions o;
    o.capacities = {{"DRAM", 64e9}, {"L1", 32768}, {"L2", 1 << 20}, {"L3", 32 << 20}};
    (void)ridgeline::io::ert_chip_yaml(text, "fuzz.json", o);  // parses its own output back
  } catch (const ridgeline::InputError&) {
  }
  return 0;
}
