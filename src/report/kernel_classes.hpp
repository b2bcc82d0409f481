#pragma once
// A time split by kernel class (hw::KernelClass order), as the reports show it: a phase's or a
// step's realistic time by the class each of its kernels runs as, each class priced by the
// chip's figures for it (`hw show CHIP`).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>

#include "ridgeline/hw/chip.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

using ByKernelClass = std::array<double, hw::kKernelClassCount>;

/// "gemm 12.67 ms (73%), attention_decode 2.192 ms (13%), 2 others 19.07 us (<1%)": the classes
/// of 1% or more of the sum by name, largest first (at most `named` of them), then the others
/// together (by name when one is left); "" when nothing ran.
inline std::string by_class_text(const ByKernelClass& by, int named = hw::kKernelClassCount) {
  std::array<int, hw::kKernelClassCount> order{};
  double sum = 0;
  for (int k = 0; k < hw::kKernelClassCount; ++k) {
    order[static_cast<std::size_t>(k)] = k;
    sum += by[static_cast<std::size_t>(k)];
  }
  if (!(sum > 0)) return "";
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return by[static_cast<std::size_t>(a)] > by[static_cast<std::size_t>(b)]; });
  const auto share = [&](double x) { return x < 0.01 * sum ? std::string("<1%") : fmt::format("{:.0f}%", 100 * x / sum); };
  std::string out;
  double rest = 0;
  int others = 0, last = 0;
  for (int k : order) {
    const double x = by[static_cast<std::size_t>(k)];
    if (!(x > 0)) break;
    if (x < 0.01 * sum || named == 0) {
      rest += x;
      ++others;
      last = k;
      continue;
    }
    out += fmt::format("{}{} {} ({})", out.empty() ? "" : ", ", hw::name(static_cast<hw::KernelClass>(k)), t(x), share(x));
    --named;
  }
  if (others > 0) {
    const std::string what = others == 1 ? std::string(hw::name(static_cast<hw::KernelClass>(last))) : fmt::format("{} others", others);
    out += fmt::format("{}{} {} ({})", out.empty() ? "" : ", ", what, t(rest), share(rest));
  }
  return out;
}

/// The split read back from its JSON (by_class_json's object; names it does not know skipped).
inline ByKernelClass by_class_from_json(const nlohmann::json& o) {
  ByKernelClass by{};
  if (!o.is_object()) return by;
  for (int k = 0; k < hw::kKernelClassCount; ++k) {
    const auto it = o.find(std::string(hw::name(static_cast<hw::KernelClass>(k))));
    if (it != o.end() && it->is_number()) by[static_cast<std::size_t>(k)] = it->get<double>();
  }
  return by;
}

/// The same as JSON: seconds by class name, the classes that ran.
inline nlohmann::json by_class_json(const ByKernelClass& by) {
  nlohmann::json o = nlohmann::json::object();
  for (int k = 0; k < hw::kKernelClassCount; ++k) {
    const double x = by[static_cast<std::size_t>(k)];
    if (x > 0) o[std::string(hw::name(static_cast<hw::KernelClass>(k)))] = x;
  }
  return o;
}

}  // namespace ridgeline::report
