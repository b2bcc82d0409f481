#include "ridgeline/core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cctype>
#include <cmath>
#include <optional>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/number_chars.hpp"

namespace ridgeline {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Decimal SI prefix at the front of `unit`; returns its factor and strips it.
std::optional<double> take_decimal_prefix(std::string_view& unit) {
  if (unit.empty()) return 1.0;
  static constexpr std::array<std::pair<char, double>, 7> k = {
      {{'k', 1e3}, {'K', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}, {'P', 1e15}, {'E', 1e18}}};
  for (auto [c, f] : k) {
    if (unit.front() == c) {
      unit.remove_prefix(1);
      return f;
    }
  }
  return 1.0;
}

// Binary prefix "Ki", "Mi", ... at the front; returns its factor and strips it.
std::optional<double> take_binary_prefix(std::string_view& unit) {
  if (unit.size() < 2 || unit[1] != 'i') return std::nullopt;
  static constexpr std::array<std::pair<char, int>, 6> k = {
      {{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}, {'P', 50}, {'E', 60}}};
  for (auto [c, e] : k) {
    if (unit[0] == c) {
      unit.remove_prefix(2);
      return std::ldexp(1.0, e);
    }
  }
  return std::nullopt;
}

std::string_view expected_units(Quantity kind) {
  switch (kind) {
    case Quantity::flop_rate: return "a rate such as '989 TFLOPS', '394 TOPS' or '1.97e14 FLOP/s'";
    case Quantity::bandwidth: return "a bandwidth such as '3.35 TB/s', '450 GB/s', '400 Gb/s' or '64 GiB/s'";
    case Quantity::bytes: return "a size such as '80 GB', '80 GiB', '50 MiB' or '2048 B'";
    case Quantity::time: return "a time such as '2 us', '1.5 ms', '10 ns', '0.2 s', '30 min' or '2 h'";
    case Quantity::count: return "a number, optionally with a prefix k, M, G, T, P or E (15T = 15e12)";
  }
  return "a value";
}

// Factor converting one `unit` to base units of `kind`, or nullopt when unknown.
std::optional<double> unit_factor(std::string_view unit, Quantity kind) {
  switch (kind) {
    case Quantity::flop_rate: {
      double f = *take_decimal_prefix(unit);
      for (auto body : {"FLOPS", "FLOP/s", "FLOPs/s", "OPS", "OP/s", "OPs/s"}) {
        if (iequals(unit, body)) return f;
      }
      return std::nullopt;
    }
    case Quantity::bandwidth: {
      std::string_view u = unit;
      if (auto bf = take_binary_prefix(u)) {
        if (u == "B/s" || u == "Bps") return *bf;
        return std::nullopt;
      }
      double f = *take_decimal_prefix(unit);
      if (unit == "B/s" || unit == "Bps") return f;
      if (unit == "b/s" || unit == "bps" || unit == "bit/s") return f / 8.0;
      return std::nullopt;
    }
    case Quantity::bytes: {
      std::string_view u = unit;
      if (auto bf = take_binary_prefix(u)) {
        if (u == "B") return *bf;
        return std::nullopt;
      }
      if (unit == "bytes" || unit == "byte") return 1.0;
      double f = *take_decimal_prefix(unit);
      if (unit == "B") return f;
      return std::nullopt;
    }
    case Quantity::time: {
      if (unit == "s") return 1.0;
      if (unit == "ms") return 1e-3;
      if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1e-6;
      if (unit == "ns") return 1e-9;
      if (unit == "min") return 60.0;
      if (unit == "h") return 3600.0;
      return std::nullopt;
    }
    case Quantity::count: {
      const double f = *take_decimal_prefix(unit);
      if (unit.empty()) return f;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The number at the front of `t` (an optional '+' allowed): its value, where it ends,
// and whether one was found.
struct Leading {
  double value = 0;
  const char* end = nullptr;
  bool ok = false;
  bool out_of_range = false;  // a number too large or too small for a double
};

Leading leading_number(std::string_view t) {
  Leading r;
  const char* first = t.data();
  const char* last = t.data() + t.size();
  if (!t.empty() && *first == '+') ++first;
  auto [ptr, ec] = parse_double_chars(first, last, r.value);
  r.end = ptr;
  r.ok = !t.empty() && ec == std::errc() && ptr != first;
  r.out_of_range = ec == std::errc::result_out_of_range;
  return r;
}

// Values outside these ranges are typos (a missing unit, a wrong exponent) and would turn
// later arithmetic into infinities or denormals.
double check_range(double v, Quantity kind, std::string_view text, std::string_view where) {
  double lo = 0, hi = 0;
  switch (kind) {
    case Quantity::flop_rate: lo = 1e3, hi = 1e21; break;
    case Quantity::bandwidth: lo = 1e3, hi = 1e18; break;
    case Quantity::bytes: lo = 0, hi = 1e21; break;
    case Quantity::time: lo = 0, hi = 3600; break;
    case Quantity::count: return v;
  }
  if (v != 0 && (v < lo || v > hi)) {
    // Times in seconds (a kilosecond reads worse than 3600 s), the rest with their prefix.
    auto shown = [kind](double x) { return kind == Quantity::time ? fmt::format("{:g} s", x) : format_quantity(x, kind); };
    throw InputError(fmt::format("{}: '{}' is outside the plausible range {} to {}", where, text, shown(lo), shown(hi)));
  }
  return v;
}

}  // namespace

double parse_number(std::string_view text, std::string_view where) {
  std::string_view t = trim(text);
  Leading n = leading_number(t);
  if (!n.ok || n.end != t.data() + t.size() || !std::isfinite(n.value)) {
    throw InputError(fmt::format("{}: '{}' is not a finite number", where, text));
  }
  return n.value;
}

double parse_quantity(std::string_view text, Quantity kind, std::string_view where, bool allow_bare) {
  std::string_view t = trim(text);
  Leading n = leading_number(t);
  const double v = n.value;
  const char* ptr = n.end;
  const char* last = t.data() + t.size();
  if (!n.ok && n.out_of_range) {
    throw InputError(fmt::format("{}: '{}' is out of range: expected {}", where, text, expected_units(kind)));
  }
  if (!n.ok) {
    throw InputError(fmt::format("{}: '{}' does not start with a number: expected {}", where, text,
                                 expected_units(kind)));
  }
  if (!std::isfinite(v)) {
    throw InputError(fmt::format("{}: '{}' is not finite: expected {}", where, text, expected_units(kind)));
  }
  if (v < 0) {
    throw InputError(fmt::format("{}: '{}' is negative: expected {}", where, text, expected_units(kind)));
  }
  std::string_view unit = trim(std::string_view(ptr, static_cast<size_t>(last - ptr)));
  if (unit.empty()) {
    if (allow_bare || kind == Quantity::count) return check_range(v, kind, text, where);
    throw InputError(fmt::format("{}: '{}' has no unit: expected {}", where, text, expected_units(kind)));
  }
  auto f = unit_factor(unit, kind);
  if (!f) {
    throw InputError(fmt::format("{}: unknown unit '{}' in '{}': expected {}", where, unit, text,
                                 expected_units(kind)));
  }
  double r = v * *f;
  if (!std::isfinite(r)) {
    throw InputError(fmt::format("{}: '{}' overflows: expected {}", where, text, expected_units(kind)));
  }
  return check_range(r, kind, text, where);
}

double parse_duration(std::string_view text, std::string_view where, double max_s) {
  std::string_view t = trim(text);
  const Leading n = leading_number(t);
  if (!n.ok || !std::isfinite(n.value)) {
    throw InputError(fmt::format("{}: '{}' is not a time: expected {}", where, text, expected_units(Quantity::time)));
  }
  const std::string_view unit = trim(std::string_view(n.end, static_cast<size_t>(t.data() + t.size() - n.end)));
  if (unit.empty()) throw InputError(fmt::format("{}: '{}' has no unit: expected {}", where, text, expected_units(Quantity::time)));
  const auto f = unit_factor(unit, Quantity::time);
  if (!f) {
    throw InputError(fmt::format("{}: unknown unit '{}' in '{}': expected {}", where, unit, text, expected_units(Quantity::time)));
  }
  const double v = n.value * *f;
  if (!(v >= 0 && v <= max_s)) {
    throw InputError(fmt::format("{}: '{}' is out of range: expected 0 to {:g} s ({:.3g} days)", where, text, max_s, max_s / 86400));
  }
  return v;
}

long long parse_positive_int(std::string_view text, std::string_view where) {
  std::string_view t = trim(text);
  long long v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (!t.empty() && ec == std::errc() && ptr == t.data() + t.size()) {
    if (v <= 0) throw InputError(fmt::format("{}: {} is not positive: expected an integer >= 1", where, text));
    if (v > 9007199254740992LL) throw InputError(fmt::format("{}: '{}' is too large: expected an integer from 1 to 9e15", where, text));
    return v;
  }
  // Scientific notation for round numbers ("1e6") is accepted when exact.
  double d = 0;
  auto [p2, e2] = parse_double_chars(t.data(), t.data() + t.size(), d);
  if (!t.empty() && e2 == std::errc() && p2 == t.data() + t.size() && std::isfinite(d) && d > 9.007199254740992e15) {
    throw InputError(fmt::format("{}: '{}' is too large: expected an integer from 1 to 9e15", where, text));
  }
  if (t.empty() || e2 != std::errc() || p2 != t.data() + t.size() || !std::isfinite(d) || d != std::floor(d)) {
    throw InputError(fmt::format("{}: '{}' is not an integer: expected an integer >= 1", where, text));
  }
  if (d < 1) throw InputError(fmt::format("{}: {} is not positive: expected an integer >= 1", where, text));
  return static_cast<long long>(d);
}

std::string format_si(double value) {
  if (value == 0) return "0 ";
  if (!std::isfinite(value)) return fmt::format("{}", value);
  static constexpr std::array<std::pair<double, const char*>, 11> k = {{{1e18, "E"},
                                                                         {1e15, "P"},
                                                                         {1e12, "T"},
                                                                         {1e9, "G"},
                                                                         {1e6, "M"},
                                                                         {1e3, "k"},
                                                                         {1, ""},
                                                                         {1e-3, "m"},
                                                                         {1e-6, "u"},
                                                                         {1e-9, "n"},
                                                                         {1e-12, "p"}}};
  double a = std::fabs(value);
  for (auto [f, p] : k) {
    if (a >= f * 0.9995) return fmt::format("{:.4g} {}", value / f, p);
  }
  return fmt::format("{:.4g} ", value);
}

std::string format_quantity(double value, Quantity kind) {
  std::string s = format_si(value);
  switch (kind) {
    case Quantity::flop_rate: return s + "FLOP/s";
    case Quantity::bandwidth: return s + "B/s";
    case Quantity::bytes: return s + "B";
    case Quantity::time: return s + "s";
    case Quantity::count:
      if (!s.empty() && s.back() == ' ') s.pop_back();
      return s;
  }
  return s;
}

double parse_usd_per_hour(std::string_view s, std::string_view what) {
  // A word (a chip's name without its price, a typo) is no price: said so, where the rules below
  // would name a missing time unit.
  const std::size_t first = s.find_first_not_of(" $");
  if (first == std::string_view::npos || std::isalpha(static_cast<unsigned char>(s[first])) != 0) {
    throw InputError(fmt::format("{}: '{}' is not a price: expected US dollars per hour, as in 2.5/h", what, s));
  }
  const std::size_t slash = s.find('/');
  if (slash == std::string_view::npos) {
    throw InputError(fmt::format("{}: '{}' has no time unit: expected a price per hour, as in 2.5/h", what, s));
  }
  std::string_view amount = trim(s.substr(0, slash));
  const std::string_view per = trim(s.substr(slash + 1));
  double hours = 0;
  if (per == "h" || per == "hr" || per == "hour") hours = 1;
  else if (per == "day") hours = 24;
  else if (per == "month") hours = 730;  // 8760 h / 12
  else throw InputError(fmt::format("{}: '{}' is not a time unit: expected /h, /hour, /day or /month", what, per));
  if (!amount.empty() && amount.front() == '$') amount = trim(amount.substr(1));
  if (amount.size() > 3) {
    const std::string_view cur = amount.substr(amount.size() - 3);
    const bool letters = std::all_of(cur.begin(), cur.end(), [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); });
    if (letters) {
      if (cur != "USD" && cur != "usd") {
        throw InputError(fmt::format("{}: '{}' is priced in {}: prices are in USD (ridgeline holds no exchange rates)", what, s, cur));
      }
      amount = trim(amount.substr(0, amount.size() - 3));
    }
  }
  const double v = parse_number(amount, what);
  if (!(v > 0) || !std::isfinite(v) || v > 1e9) throw InputError(fmt::format("{}: '{}' must be a positive price", what, s));
  return v / hours;
}

}  // namespace ridgeline
