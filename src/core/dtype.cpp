#include "ridgeline/core/dtype.hpp"

#include <fmt/format.h>

#include "ridgeline/core/error.hpp"

namespace ridgeline {

namespace {
constexpr std::array<std::string_view, kDTypeCount> kNames = {
    "fp64", "fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8", "int4", "fp4"};
}

std::string_view name(DType t) noexcept { return kNames[static_cast<int>(t)]; }

std::optional<DType> parse_dtype(std::string_view text) noexcept {
  for (int i = 0; i < kDTypeCount; ++i) {
    if (kNames[i] == text) return static_cast<DType>(i);
  }
  if (text == "fp8") return DType::fp8_e4m3;
  return std::nullopt;
}

DType parse_dtype_or_throw(std::string_view text, std::string_view where) {
  if (auto t = parse_dtype(text)) return *t;
  throw InputError(fmt::format("{}: unknown dtype '{}': expected one of {}", where, text, dtype_names()));
}

std::string_view dtype_names() noexcept {
  return "fp64, fp32, tf32, bf16, fp16, fp8_e4m3 (or fp8), fp8_e5m2, int8, int4, fp4";
}

}  // namespace ridgeline
