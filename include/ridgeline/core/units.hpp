#pragma once
/// Human units: parsing "4.8 TB/s", "989 TFLOPS", "80 GiB", "2 us", and printing with prefixes.
/// Values are SI base units: FLOP/s, bytes/s, bytes, seconds.
#include <string>
#include <string_view>

namespace ridgeline {

/// What a quantity measures; decides which units are accepted.
enum class Quantity { flop_rate, bandwidth, bytes, time, count };

/// Parses a value with its unit ("4.8 TB/s"). With `allow_bare`, a plain number
/// ("989e12") is taken in base units. Throws InputError naming `where` for a bad
/// number, an unknown unit, a unit of the wrong kind, a bare number where a unit is
/// required, NaN or infinity. Negative values are rejected; zero is allowed (callers
/// that need a positive value check it).
double parse_quantity(std::string_view text, Quantity kind, std::string_view where, bool allow_bare);

/// Formats with an SI prefix and the unit: "989.4 TFLOP/s", "3.35 TB/s", "80 GB", "1.011 ms".
std::string format_quantity(double value, Quantity kind);

/// Formats a plain number with an SI prefix and no unit ("1.2 G"), for counts.
std::string format_si(double value);

/// Parses a time with its unit (ns, us, ms, s, min, h) from 0 to `max_s` seconds: a duration
/// of a run or a latency target, which may be hours ("2h", "7200 s"). Throws InputError naming
/// `where` for a number without a unit, an unknown unit, or a time outside the range.
double parse_duration(std::string_view text, std::string_view where, double max_s);

/// Parses a finite double (no unit); throws InputError naming `where`.
double parse_number(std::string_view text, std::string_view where);

/// Parses a positive integer that fits in int64; throws InputError naming `where`.
long long parse_positive_int(std::string_view text, std::string_view where);

/// Parses a price per hour in US dollars: "2.5/h", "2.5 USD/h", "$2.5/hour", "60/day",
/// "1800/month" (730 h). Throws InputError naming `where` for a price without a time unit,
/// in another currency (no exchange rates are held), or not positive.
double parse_usd_per_hour(std::string_view text, std::string_view where);

}  // namespace ridgeline
