#include "ridgeline/hw/chip.hpp"

namespace ridgeline::hw {

std::string_view name(Unit u) noexcept { return u == Unit::matrix ? "matrix" : "vector"; }

std::string_view name(KernelClass k) noexcept {
  switch (k) {
    case KernelClass::other: return "other";
    case KernelClass::gemm: return "gemm";
    case KernelClass::attention: return "attention";
    case KernelClass::pointwise: return "pointwise";
    case KernelClass::collective: return "collective";
  }
  return "other";
}

std::string_view name(LinkScope s) noexcept {
  switch (s) {
    case LinkScope::node: return "node";
    case LinkScope::network: return "network";
    case LinkScope::host: return "host";
  }
  return "node";
}

}  // namespace ridgeline::hw
