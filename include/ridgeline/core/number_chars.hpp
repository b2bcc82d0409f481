#pragma once
/// A double read from characters with std::from_chars's rules (chars_format::general), the
/// same in every build: GCC's libstdc++ has the floating-point overloads, the libc++ of
/// Debian's Emscripten (the WebAssembly build, docs/web.md) only the integer ones.
#include <charconv>

namespace ridgeline {

/// As std::from_chars(first, last, value, std::chars_format::general): no leading '+' or
/// space, "inf", "infinity" and "nan" taken, correctly rounded; a value too large or too
/// small for a double (not zero, rounding to zero) is result_out_of_range with `ptr` past
/// the number and `value` left as it was; invalid_argument with `ptr` == `first`.
std::from_chars_result parse_double_chars(const char* first, const char* last, double& value) noexcept;

}  // namespace ridgeline
