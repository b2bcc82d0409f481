// Request traces: CSV (our columns or the Azure LLM inference trace's) and JSON lines.
#include "ridgeline/io/request_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/number_chars.hpp"
#include "ridgeline/io/embedded.hpp"

namespace ridgeline::io {

namespace {

constexpr std::size_t kMaxRows = std::size_t{1} << 27;
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 26;
constexpr std::size_t kMaxBytes = std::size_t{4} << 30;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '"')) s.remove_suffix(1);
  return s;
}

// Printable for an error message: at most 40 bytes, bytes outside printable ASCII escaped.
std::string shown(std::string_view s) {
  std::string out;
  for (const char c : s.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > 40) out += "...";
  return out;
}

struct Where {
  std::string_view source;
  std::size_t row;
};

[[noreturn]] void fail(const Where& w, std::string_view column, std::string_view value, std::string_view expected) {
  throw InputError(fmt::format("{}: row {}: {} '{}': expected {}", w.source, w.row, column, shown(value), expected));
}

std::int64_t tokens(std::string_view v, const Where& w, std::string_view column, std::int64_t min) {
  v = trim(v);
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < min || n > kMaxTokens) {
    fail(w, column, v, fmt::format("a whole number of tokens from {} to {}", min, kMaxTokens));
  }
  return n;
}

// A prefix group id: 0 to 2^20 (a replica keeps one entry per id up to the largest).
std::int64_t group_id(std::string_view v, const Where& w) {
  v = trim(v);
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0 || n > (std::int64_t{1} << 20)) {
    fail(w, "prefix_group", v, "a group number from 0 to 1048576");
  }
  return n;
}

double seconds(std::string_view v, const Where& w, std::string_view column) {
  v = trim(v);
  double x = 0;
  const auto [end, ec] = parse_double_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x) || x < 0 || x > 1e9) {
    fail(w, column, v, "a time in seconds from 0 to 1e9");
  }
  return x;
}

// Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// "2023-11-16 18:15:46.6805900" (or with a T): seconds since 1970.
double date_time(std::string_view v, const Where& w, std::string_view column) {
  v = trim(v);
  auto num = [&](std::size_t pos, std::size_t len) -> std::optional<unsigned> {
    if (pos + len > v.size()) return std::nullopt;
    unsigned n = 0;
    const auto [end, ec] = std::from_chars(v.data() + pos, v.data() + pos + len, n);
    if (ec != std::errc() || end != v.data() + pos + len) return std::nullopt;
    return n;
  };
  const auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), s = num(17, 2);
  const bool seps = v.size() >= 19 && v[4] == '-' && v[7] == '-' && (v[10] == ' ' || v[10] == 'T') && v[13] == ':' && v[16] == ':';
  if (!seps || !y || !mo || !d || !h || !mi || !s || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *s > 60) {
    fail(w, column, v, "a date-time such as 2023-11-16 18:15:46.68");
  }
  double frac = 0;
  if (v.size() > 19) {
    std::string_view rest = v.substr(19);
    if (rest.front() == '.') {
      std::size_t n = 1;
      while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
      frac = std::stod(std::string("0") + std::string(rest.substr(0, n)));
      rest.remove_prefix(n);
    }
    if (!rest.empty() && rest != "Z" && rest != "+00:00") fail(w, column, v, "a date-time in UTC such as 2023-11-16 18:15:46.68");
  }
  return static_cast<double>(days_from_civil(*y, *mo, *d)) * 86400 + *h * 3600.0 + *mi * 60.0 + *s + frac;
}

// Calls fn(line, row) for each non-blank line of `text` (rows counted from 1, blank ones too).
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  std::size_t row = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++row;
    if (!trim(line).empty()) fn(line, row);
  }
}

// Times relative to the first request; they must not go back. A prefix group shares one
// prefix length, shorter than each of its prompts.
void finish(std::vector<serving::Request>& out, std::string_view source) {
  if (out.empty()) throw InputError(fmt::format("{}: no requests", source));
  std::unordered_map<std::int32_t, std::pair<std::int64_t, std::size_t>> groups;  // prefix tokens, first row
  for (std::size_t i = 0; i < out.size(); ++i) {
    const serving::Request& r = out[i];
    if (r.prefix_group < 0) continue;
    if (r.prefix_tokens >= r.input) {
      throw InputError(fmt::format("{}: row {}: prefix_tokens {} of {} input tokens: expected fewer (the last prompt token is "
                                   "always computed)",
                                   source, i + 2, r.prefix_tokens, r.input));
    }
    const auto [it, fresh] = groups.try_emplace(r.prefix_group, r.prefix_tokens, i + 2);
    if (!fresh && it->second.first != r.prefix_tokens) {
      throw InputError(fmt::format("{}: row {}: prefix_group {} shares {} tokens at row {}, {} here: expected one prefix length per group",
                                   source, i + 2, r.prefix_group, it->second.first, it->second.second, r.prefix_tokens));
    }
  }
  const double t0 = out.front().arrival_s;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i > 0 && out[i].arrival_s < out[i - 1].arrival_s) {
      throw InputError(fmt::format("{}: row {}: its timestamp is earlier than the row before: expected requests in time order",
                                   source, i + 2));
    }
  }
  for (serving::Request& r : out) r.arrival_s -= t0;
}

std::vector<serving::Request> parse_csv_trace(std::string_view text, std::string_view source) {
  std::vector<serving::Request> out;
  std::vector<std::string_view> fields;
  auto split = [&](std::string_view line) {
    fields.clear();
    std::size_t pos = 0;
    while (pos <= line.size()) {
      const std::size_t comma = std::min(line.find(',', pos), line.size());
      fields.push_back(line.substr(pos, comma - pos));
      pos = comma + 1;
    }
  };
  int ts = -1, in = -1, outc = -1, group = -1, prefix = -1;
  bool azure = false;
  for_each_line(text, [&](std::string_view line, std::size_t row) {
    split(line);
    if (ts < 0) {
      for (std::size_t i = 0; i < fields.size(); ++i) {
        const std::string_view name = trim(fields[i]);
        const int c = static_cast<int>(i);
        if (name == "timestamp_s") ts = c;
        else if (name == "TIMESTAMP") ts = c, azure = true;
        else if (name == "input_tokens" || name == "ContextTokens") in = c;
        else if (name == "output_tokens" || name == "GeneratedTokens") outc = c;
        else if (name == "prefix_group") group = c;
        else if (name == "prefix_tokens") prefix = c;
      }
      if (ts < 0 || in < 0 || outc < 0) {
        throw InputError(fmt::format("{}: row 1: the header needs the columns timestamp_s, input_tokens and output_tokens "
                                     "(or the Azure trace's TIMESTAMP, ContextTokens, GeneratedTokens); found '{}'",
                                     source, shown(line)));
      }
      return;
    }
    if (out.size() >= kMaxRows) throw InputError(fmt::format("{}: more than {} requests", source, kMaxRows));
    const Where w{source, row};
    const int needed = std::max({ts, in, outc, group, prefix});
    if (static_cast<int>(fields.size()) <= needed) {
      throw InputError(fmt::format("{}: row {}: {} fields, expected at least {}", source, row, fields.size(), needed + 1));
    }
    serving::Request r;
    r.arrival_s = azure ? date_time(fields[static_cast<std::size_t>(ts)], w, "TIMESTAMP")
                        : seconds(fields[static_cast<std::size_t>(ts)], w, "timestamp_s");
    r.input = tokens(fields[static_cast<std::size_t>(in)], w, azure ? "ContextTokens" : "input_tokens", 1);
    r.output = tokens(fields[static_cast<std::size_t>(outc)], w, azure ? "GeneratedTokens" : "output_tokens", 1);
    if (group >= 0) r.prefix_group = static_cast<std::int32_t>(group_id(fields[static_cast<std::size_t>(group)], w));
    if (prefix >= 0) r.prefix_tokens = tokens(fields[static_cast<std::size_t>(prefix)], w, "prefix_tokens", 0);
    if (r.prefix_tokens > r.input) fail(w, "prefix_tokens", fields[static_cast<std::size_t>(prefix)], "at most input_tokens");
    if (r.prefix_tokens > 0 && r.prefix_group < 0) fail(w, "prefix_group", "", "a group for a shared prefix");
    out.push_back(r);
  });
  if (ts < 0) throw InputError(fmt::format("{}: empty: expected a header row and one row per request", source));
  finish(out, source);
  return out;
}

std::vector<serving::Request> parse_jsonl_trace(std::string_view text, std::string_view source) {
  std::vector<serving::Request> out;
  for_each_line(text, [&](std::string_view line, std::size_t row) {
    if (out.size() >= kMaxRows) throw InputError(fmt::format("{}: more than {} requests", source, kMaxRows));
    const Where w{source, row};
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail(w, "line", line, "one JSON object per line");
    auto field = [&](const char* key, bool required) -> std::optional<std::string> {
      const auto it = j.find(key);
      if (it == j.end()) {
        if (required) throw InputError(fmt::format("{}: row {}: no key '{}'", source, row, key));
        return std::nullopt;
      }
      if (it->is_number()) return it->dump();
      if (it->is_string()) return it->get<std::string>();
      fail(w, key, it->dump(), "a number");
    };
    serving::Request r;
    r.arrival_s = seconds(*field("timestamp_s", true), w, "timestamp_s");
    r.input = tokens(*field("input_tokens", true), w, "input_tokens", 1);
    r.output = tokens(*field("output_tokens", true), w, "output_tokens", 1);
    if (const auto g = field("prefix_group", false)) r.prefix_group = static_cast<std::int32_t>(group_id(*g, w));
    if (const auto p = field("prefix_tokens", false)) {
      r.prefix_tokens = tokens(*p, w, "prefix_tokens", 0);
      if (r.prefix_tokens > r.input) fail(w, "prefix_tokens", *p, "at most input_tokens");
      if (r.prefix_tokens > 0 && r.prefix_group < 0) fail(w, "prefix_group", "", "a group for a shared prefix");
    }
    out.push_back(r);
  });
  finish(out, source);
  return out;
}

}  // namespace

std::vector<serving::Request> parse_request_trace(std::string_view text, std::string_view source, bool jsonl) {
  return jsonl ? parse_jsonl_trace(text, source) : parse_csv_trace(text, source);
}

std::vector<serving::Request> read_request_trace(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > kMaxBytes) throw InputError(fmt::format("{}: larger than 4 GiB: not a trace this tool reads", path));
  const std::string text = read_text_file(path, "a request trace (CSV or JSON lines)");
  if (text.size() > kMaxBytes) throw InputError(fmt::format("{}: larger than 4 GiB", path));
  const auto ends = [&](std::string_view e) { return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0; };
  return parse_request_trace(text, path, ends(".jsonl") || ends(".ndjson"));
}

}  // namespace ridgeline::io
