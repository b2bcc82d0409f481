#include "ridgeline/hw/chip.hpp"

namespace ridgeline::hw {

std::string_view name(Unit u) noexcept { return u == Unit::matrix ? "matrix" : "vector"; }

std::string_view name(LinkScope s) noexcept {
  switch (s) {
    case LinkScope::node: return "node";
    case LinkScope::network: return "network";
    case LinkScope::host: return "host";
  }
  return "node";
}

}  // namespace ridgeline::hw
