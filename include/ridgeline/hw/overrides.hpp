#pragma once
/// A user's changes to a chip after loading (--peak, --mem-bw, --link-bw, --chips).
#include <optional>
#include <utility>
#include <vector>

#include "ridgeline/hw/chip.hpp"

namespace ridgeline::hw {

struct HardwareOverrides {
  std::vector<std::pair<DType, double>> matrix_peaks;  ///< dense FLOP/s per dtype
  std::optional<double> mem_bandwidth_Bps;             ///< main memory
  std::optional<double> link_bandwidth_Bps;            ///< per direction, the chip's communication link
  std::optional<int> chips;
};

/// Applies `o` to `chip` and builds the system. A link override replaces the node link
/// (or the first link; a link is added when the chip has none) by one link of that
/// per-direction bandwidth, so collectives use exactly that figure.
System make_system(ChipSpec chip, const HardwareOverrides& o);

}  // namespace ridgeline::hw
