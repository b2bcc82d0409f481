// Any bytes given to the unit, number, dtype and integer parsers either parse or raise InputError.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/text.hpp"
#include "ridgeline/core/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto kind : {ridgeline::Quantity::flop_rate, ridgeline::Quantity::bandwidth, ridgeline::Quantity::bytes,
                    ridgeline::Quantity::time, ridgeline::Quantity::count}) {
    for (bool bare : {false, true}) {
      try {
        double v = ridgeline::parse_quantity(text, kind, "fuzz", bare);
        if (!(v >= 0) || v != v) __builtin_trap();  // never negative, never NaN
        (void)ridgeline::format_quantity(v, kind);
      } catch (const ridgeline::InputError&) {
      }
    }
  }
  // A bare number (--overlap-efficiency, --prefetch, --qps): finite or refused.
  try {
    if (!std::isfinite(ridgeline::parse_number(text, "fuzz"))) __builtin_trap();
  } catch (const ridgeline::InputError&) {
  }
  // A dtype name (--dtype, --grad-reduce-dtype).
  try {
    (void)ridgeline::parse_dtype_or_throw(text, "fuzz");
  } catch (const ridgeline::InputError&) {
  }
  try {
    (void)ridgeline::parse_positive_int(text, "fuzz");
  } catch (const ridgeline::InputError&) {
  }
  try {
    const double usd = ridgeline::parse_usd_per_hour(text, "fuzz");
    if (!(usd > 0) || usd > 1e9) __builtin_trap();  // a positive, bounded price
  } catch (const ridgeline::InputError&) {
  }
  // Whatever the bytes, what leaves ridgeline is UTF-8, and valid text is left as it is.
  const std::string clean = ridgeline::valid_utf8(text);
  if (!ridgeline::is_valid_utf8(clean) || ridgeline::valid_utf8(clean) != clean) __builtin_trap();
  if (ridgeline::is_valid_utf8(text) && clean != text) __builtin_trap();
  const std::string line = ridgeline::one_line(text);
  if (line.find('\n') != std::string::npos || !ridgeline::is_valid_utf8(line)) __builtin_trap();
  return 0;
}
