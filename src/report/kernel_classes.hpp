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

/// "gemm 12.67 ms (73%), attention_decode 2.192 ms (13%), 2 others 19.07 us (0%)": the classes
/// of 1% or more of the sum, largest first, the others together; "" when nothing ran.
inline std::string by_class_text(const ByKernelClass& by) {
  std::array<int, hw::kKernelClassCount> order{};
  double sum = 0;
  for (int k = 0; k < hw::kKernelClassCount; ++k) {
    order[static_cast<std::size_t>(k)] = k;
    sum += by[static_cast<std::size_t>(k)];
  }
  if (!(sum > 0)) return "";
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return by[static_cast<std::size_t>(a)] > by[static_cast<std::size_t>(b)]; });
  std::string out;
  double rest = 0;
  int others = 0;
  for (int k : order) {
    const double x = by[static_cast<std::size_t>(k)];
    if (!(x > 0)) break;
    if (x < 0.01 * sum) {
      rest += x;
      ++others;
      continue;
    }
    out += fmt::format("{}{} {} ({:.0f}%)", out.empty() ? "" : ", ", hw::name(static_cast<hw::KernelClass>(k)), t(x), 100 * x / sum);
  }
  if (others > 0) out += fmt::format(", {} other{} {} ({:.0f}%)", others, others == 1 ? "" : "s", t(rest), 100 * rest / sum);
  return out;
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
