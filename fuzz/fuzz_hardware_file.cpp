// Any bytes given to the hardware-file loader either load a chip or raise InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ridgeline/core/error.hpp"
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
  return 0;
}
