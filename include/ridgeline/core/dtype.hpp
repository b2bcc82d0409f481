#pragma once
/// Data types and their storage sizes.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ridgeline {

/// A numeric format. The order is stable: it indexes per-dtype tables.
enum class DType : std::uint8_t { fp64, fp32, tf32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, int4, fp4 };

inline constexpr int kDTypeCount = 10;

inline constexpr std::array<DType, kDTypeCount> kAllDTypes = {
    DType::fp64, DType::fp32,     DType::tf32,     DType::bf16, DType::fp16,
    DType::fp8_e4m3, DType::fp8_e5m2, DType::int8, DType::int4, DType::fp4};

/// Storage size in bits. tf32 is computed on 19 bits but stored in 32.
constexpr int bits(DType t) noexcept {
  constexpr std::array<int, kDTypeCount> k = {64, 32, 32, 16, 16, 8, 8, 8, 4, 4};
  return k[static_cast<int>(t)];
}

/// Storage size in bytes; int4 and fp4 count half a byte.
constexpr double bytes(DType t) noexcept { return bits(t) / 8.0; }

constexpr int index(DType t) noexcept { return static_cast<int>(t); }

/// True for the integer formats (int8, int4).
constexpr bool is_integer(DType t) noexcept { return t == DType::int8 || t == DType::int4; }
/// True for the 8-bit floating-point formats (fp8_e4m3, fp8_e5m2).
constexpr bool is_fp8(DType t) noexcept { return t == DType::fp8_e4m3 || t == DType::fp8_e5m2; }

/// Canonical lower-case name ("bf16", "fp8_e4m3").
std::string_view name(DType t) noexcept;

/// Parses a canonical name; "fp8" is accepted for fp8_e4m3 (the training format).
std::optional<DType> parse_dtype(std::string_view text) noexcept;

/// Parses or throws InputError naming `where` (a flag or key path).
DType parse_dtype_or_throw(std::string_view text, std::string_view where);

/// "fp64, fp32, ..." for error messages.
std::string_view dtype_names() noexcept;

}  // namespace ridgeline
