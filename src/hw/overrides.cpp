#include "ridgeline/hw/overrides.hpp"

namespace ridgeline::hw {

System make_system(ChipSpec chip, const HardwareOverrides& o) {
  for (auto [t, rate] : o.matrix_peaks) chip.matrix_flops_per_s[index(t)] = rate;
  if (o.mem_bandwidth_Bps && !chip.memory.empty()) chip.memory[0].bandwidth_Bps = *o.mem_bandwidth_Bps;
  if (o.link_bandwidth_Bps) {
    int i = chip.link_index(LinkScope::node);
    if (i < 0 && !chip.links.empty()) i = 0;
    if (i < 0) {
      chip.links.push_back(LinkSpec{"link", LinkScope::node, *o.link_bandwidth_Bps, 1, 0});
    } else {
      chip.links[i].bandwidth_Bps = *o.link_bandwidth_Bps;
      chip.links[i].count = 1;
    }
  }
  bool changed = !o.matrix_peaks.empty() || o.mem_bandwidth_Bps || o.link_bandwidth_Bps;
  if (changed) chip.provenance += " (with overrides)";
  System s;
  s.chips_per_node = chip.chips_per_node;
  s.chips = o.chips.value_or(1);
  s.chip = std::move(chip);
  return s;
}

}  // namespace ridgeline::hw
