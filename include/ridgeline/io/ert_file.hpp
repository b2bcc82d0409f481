#pragma once
/// The Empirical Roofline Toolkit's roofline.json (measured ceilings) as a chip file.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ridgeline::io {

/// What ERT does not measure and a chip file needs.
struct ErtImportOptions {
  std::string name;  ///< chip name; empty: from the file's HOSTNAME ("ert" when absent)
  /// Capacity of each memory level by ERT's level name ("DRAM", "L1" ...), bytes. Every
  /// level in the file needs one: ERT measures bandwidths, not sizes.
  std::vector<std::pair<std::string, double>> capacities;
};

/// Chip YAML text in the catalog's schema from the text of an ERT roofline.json:
/// `empirical.gflops.data` ([label, GFLOP/s]; the label names the precision, FP64 when it
/// does not) become the peaks; `empirical.gbytes.data` ([level, GB/s], fastest first,
/// main memory last) the memory levels, main memory first. `source` names the file in
/// errors and in `sources:`. Throws InputError naming the key for anything else.
std::string ert_chip_yaml(std::string_view text, std::string_view source, const ErtImportOptions& o);

}  // namespace ridgeline::io
