#pragma once
/// Reading hardware files (data/hardware/<vendor>/<sku>.yaml) and the built-in catalog.
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/hw/chip.hpp"

namespace ridgeline::io {

/// The catalog chip a profiler's device name stands for ("NVIDIA A100-SXM4-80GB" with its
/// memory: a100-80gb; "NVIDIA H100 PCIe": h100-pcie), or "" when the catalog has none.
std::string catalog_name_for_device(std::string_view device, double memory_bytes);

/// Parses the text of a hardware file; `source` names it in errors. Unknown keys,
/// missing keys, unit-less or non-positive figures throw InputError with the key path.
hw::ChipSpec parse_chip_yaml(std::string_view text, std::string_view source);

/// `c` as a hardware file (the catalog's schema) that parse_chip_yaml reads back to the same
/// ChipSpec (figures in base units, 17 significant digits). `notes` (may be empty) and
/// `provenance` — a YAML block such as "measured:\n  date: ...\n" — are appended as given.
std::string chip_yaml(const hw::ChipSpec& c, std::string_view notes, std::string_view provenance);

/// A chip file's `kernel_curves` block (every figure in base units, 17 significant digits),
/// as parse_chip_yaml reads it back.
std::string curves_yaml(const std::vector<hw::KernelCurve>& curves);
/// `s` as a double-quoted YAML scalar (quotes and backslashes escaped, control characters dropped).
std::string yaml_quoted(std::string_view s);

/// Reads and parses a hardware file from disk.
hw::ChipSpec load_chip_file(const std::string& path);

/// One catalog entry for `hw list`.
struct CatalogEntry {
  std::string name;
  std::string vendor;
  std::string kind;
  std::string display_name;
};

/// Every chip in the built-in catalog, sorted by name.
std::vector<CatalogEntry> catalog();

/// A catalog chip by name (case-insensitive); throws InputError listing the names.
hw::ChipSpec catalog_chip(std::string_view name);

/// `--hw` resolution: a path ending in .yaml/.yml (or containing '/') is read as a
/// file, anything else is a catalog name.
hw::ChipSpec resolve_chip(std::string_view hw);

}  // namespace ridgeline::io
