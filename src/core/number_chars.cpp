// std::from_chars for doubles on fast_float (Debian libfast-float-dev, the parser GCC 12's
// libstdc++ itself uses), with libstdc++'s report of a number out of a double's range.
#include "ridgeline/core/number_chars.hpp"

#include <fast_float/fast_float.h>

#include <cmath>
#include <system_error>

namespace ridgeline {

std::from_chars_result parse_double_chars(const char* first, const char* last, double& value) noexcept {
  double v = 0;
  const fast_float::from_chars_result r = fast_float::from_chars(first, last, v, fast_float::chars_format::general);
  if (r.ec != std::errc()) return {first, r.ec};
  // fast_float gives infinity for "1e400" and zero for "1e-400"; std::from_chars calls both
  // out of range. "inf" and "infinity" are not numbers out of range, nor are zeros ("0e999").
  const char* p = first;
  if (p != r.ptr && *p == '-') ++p;
  const bool digits = p != r.ptr && ((*p >= '0' && *p <= '9') || *p == '.');
  if (digits && std::isinf(v)) return {r.ptr, std::errc::result_out_of_range};
  if (digits && v == 0) {
    for (; p != r.ptr && *p != 'e' && *p != 'E'; ++p) {
      if (*p >= '1' && *p <= '9') return {r.ptr, std::errc::result_out_of_range};
    }
  }
  value = v;
  return {r.ptr, std::errc()};
}

}  // namespace ridgeline
