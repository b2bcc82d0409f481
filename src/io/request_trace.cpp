// Request traces: CSV (our columns or the Azure LLM inference trace's) and JSON lines, read
// row by row through a window of the file.
#include "ridgeline/io/request_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/number_chars.hpp"

namespace ridgeline::io {

namespace {

constexpr std::int64_t kMaxRows = std::int64_t{1} << 27;
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 26;
constexpr std::size_t kWindow = std::size_t{1} << 20;  // bytes read at a time
constexpr std::size_t kMaxLine = std::size_t{1} << 20;  // a row longer than this is not a request

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
  std::size_t line;
};

[[noreturn]] void fail(const Where& w, std::string_view column, std::string_view value, std::string_view expected) {
  throw InputError(fmt::format("{}: line {}: {} '{}': expected {}", w.source, w.line, column, shown(value), expected));
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

// A prefix group id: 0 to 2^20.
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

// Days in month m of year y (Gregorian leap years: every 4th, not every 100th, every 400th).
unsigned days_in_month(unsigned y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// "2023-11-16 18:15:46.6805900" (or with a T): seconds since 1970, for a real date from
// 1970 on (no 31 February, no year 0).
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
  if (!seps || !y || !mo || !d || !h || !mi || !s || *mo < 1 || *mo > 12 || *d < 1 || *h > 23 || *mi > 59 || *s > 60) {
    fail(w, column, v, "a date-time such as 2023-11-16 18:15:46.68");
  }
  if (*y < 1970) fail(w, column, v, "a date from 1970 on");
  if (*d > days_in_month(*y, *mo)) fail(w, column, v, fmt::format("a day of the month from 1 to {}", days_in_month(*y, *mo)));
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

bool ends_with(std::string_view s, std::string_view e) { return s.size() >= e.size() && s.substr(s.size() - e.size()) == e; }

}  // namespace

RequestTraceReader::RequestTraceReader(const std::string& path) : source_(path) {
  jsonl_ = ends_with(path, ".jsonl") || ends_with(path, ".ndjson");
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw InputError(fmt::format("{}: not a regular file: expected a request trace (CSV or JSON lines)", path));
  }
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    throw InputError(fmt::format("{}: cannot open: {}: expected a request trace (CSV or JSON lines)", path, std::strerror(errno)));
  }
  note_input(path);
  buf_.resize(kWindow + kMaxLine);
}

RequestTraceReader::RequestTraceReader(std::string_view text, std::string_view source, bool jsonl)
    : source_(source), jsonl_(jsonl), text_(text), eof_(true) {}

RequestTraceReader::~RequestTraceReader() {
  if (file_ != nullptr) std::fclose(file_);
}

bool RequestTraceReader::line(std::string_view& out) {
  for (;;) {
    const std::size_t nl = text_.find('\n', pos_);
    if (nl != std::string_view::npos) {
      out = text_.substr(pos_, nl - pos_);
      pos_ = nl + 1;
      break;
    }
    const std::size_t rest = text_.size() - pos_;
    if (eof_) {
      if (rest == 0) return false;
      out = text_.substr(pos_);
      pos_ = text_.size();
      break;
    }
    if (rest > kMaxLine) {
      throw InputError(fmt::format("{}: line {}: longer than {} bytes: expected one request per line", source_, line_ + 1, kMaxLine));
    }
    // The unfinished line to the window's start, then the next bytes after it.
    if (rest > 0) std::memmove(buf_.data(), text_.data() + pos_, rest);
    const std::size_t got = std::fread(buf_.data() + rest, 1, kWindow, file_);
    if (got < kWindow) {
      if (std::ferror(file_) != 0) throw InputError(fmt::format("{}: read error after line {}", source_, line_));
      eof_ = true;
    }
    text_ = std::string_view(buf_.data(), rest + got);
    pos_ = 0;
  }
  ++line_;
  if (out.size() > kMaxLine) {
    throw InputError(fmt::format("{}: line {}: longer than {} bytes: expected one request per line", source_, line_, kMaxLine));
  }
  return true;
}

bool RequestTraceReader::header() {
  if (headed_ || jsonl_) return true;
  std::string_view l;
  do {
    if (!line(l)) return false;
  } while (trim(l).empty());
  headed_ = true;
  std::size_t pos = 0;
  for (int i = 0; pos <= l.size(); ++i) {
    const std::size_t comma = std::min(l.find(',', pos), l.size());
    const std::string_view name = trim(l.substr(pos, comma - pos));
    pos = comma + 1;
    if (name == "timestamp_s") ts_ = i;
    else if (name == "TIMESTAMP") ts_ = i, azure_ = true;
    else if (name == "input_tokens" || name == "ContextTokens") in_ = i;
    else if (name == "output_tokens" || name == "GeneratedTokens") out_ = i;
    else if (name == "prefix_group") group_ = i;
    else if (name == "prefix_tokens") prefix_ = i;
  }
  if (ts_ < 0 || in_ < 0 || out_ < 0) {
    throw InputError(fmt::format("{}: line {}: the header needs the columns timestamp_s, input_tokens and output_tokens "
                                 "(or the Azure trace's TIMESTAMP, ContextTokens, GeneratedTokens); found '{}'",
                                 source_, line_, shown(l)));
  }
  return true;
}

void RequestTraceReader::parse_csv(std::string_view l, serving::Request& r) {
  fields_.clear();
  for (std::size_t pos = 0; pos <= l.size();) {
    const std::size_t comma = std::min(l.find(',', pos), l.size());
    fields_.push_back(l.substr(pos, comma - pos));
    pos = comma + 1;
  }
  const Where w{source_, line_};
  const int needed = std::max({ts_, in_, out_, group_, prefix_});
  if (static_cast<int>(fields_.size()) <= needed) {
    throw InputError(fmt::format("{}: line {}: {} fields, expected at least {}", source_, line_, fields_.size(), needed + 1));
  }
  auto at = [&](int c) { return fields_[static_cast<std::size_t>(c)]; };
  r.arrival_s = azure_ ? date_time(at(ts_), w, "TIMESTAMP") : seconds(at(ts_), w, "timestamp_s");
  r.input = tokens(at(in_), w, azure_ ? "ContextTokens" : "input_tokens", 1);
  r.output = tokens(at(out_), w, azure_ ? "GeneratedTokens" : "output_tokens", 1);
  if (group_ >= 0) r.prefix_group = static_cast<std::int32_t>(group_id(at(group_), w));
  if (prefix_ >= 0) r.prefix_tokens = tokens(at(prefix_), w, "prefix_tokens", 0);
  if (r.prefix_tokens > r.input) fail(w, "prefix_tokens", at(prefix_), "at most input_tokens");
  if (r.prefix_tokens > 0 && r.prefix_group < 0) fail(w, "prefix_group", "", "a group for a shared prefix");
}

void RequestTraceReader::parse_jsonl(std::string_view l, serving::Request& r) {
  const Where w{source_, line_};
  const nlohmann::json j = nlohmann::json::parse(l, nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail(w, "line", l, "one JSON object per line");
  auto field = [&](const char* key, bool required) -> std::optional<std::string> {
    const auto it = j.find(key);
    if (it == j.end()) {
      if (required) throw InputError(fmt::format("{}: line {}: no key '{}'", source_, line_, key));
      return std::nullopt;
    }
    if (it->is_number()) return it->dump();
    if (it->is_string()) return it->get<std::string>();
    fail(w, key, it->dump(), "a number");
  };
  r.arrival_s = seconds(*field("timestamp_s", true), w, "timestamp_s");
  r.input = tokens(*field("input_tokens", true), w, "input_tokens", 1);
  r.output = tokens(*field("output_tokens", true), w, "output_tokens", 1);
  if (const auto g = field("prefix_group", false)) r.prefix_group = static_cast<std::int32_t>(group_id(*g, w));
  if (const auto p = field("prefix_tokens", false)) {
    r.prefix_tokens = tokens(*p, w, "prefix_tokens", 0);
    if (r.prefix_tokens > r.input) fail(w, "prefix_tokens", *p, "at most input_tokens");
    if (r.prefix_tokens > 0 && r.prefix_group < 0) fail(w, "prefix_group", "", "a group for a shared prefix");
  }
}

// Times must not go back; a prefix group shares one prefix length, shorter than each of its
// prompts. Times become relative to the first request.
void RequestTraceReader::check(serving::Request& r) {
  if (r.prefix_group >= 0) {
    if (r.prefix_tokens >= r.input) {
      throw InputError(fmt::format("{}: line {}: prefix_tokens {} of {} input tokens: expected fewer (the last prompt token is "
                                   "always computed)",
                                   source_, line_, r.prefix_tokens, r.input));
    }
    const auto [it, fresh] = groups_.try_emplace(r.prefix_group, r.prefix_tokens, line_);
    if (!fresh && it->second.first != r.prefix_tokens) {
      throw InputError(fmt::format("{}: line {}: prefix_group {} shares {} tokens at line {}, {} here: expected one prefix length per group",
                                   source_, line_, r.prefix_group, it->second.first, it->second.second, r.prefix_tokens));
    }
  }
  if (rows_ == 0) t0_ = r.arrival_s;
  if (rows_ > 0 && r.arrival_s < last_) {
    throw InputError(fmt::format("{}: line {}: its timestamp is earlier than line {}'s: expected requests in time order", source_, line_,
                                 last_line_));
  }
  last_ = r.arrival_s;
  last_line_ = line_;
  if (++rows_ > kMaxRows) throw InputError(fmt::format("{}: more than {} requests", source_, kMaxRows));
  r.arrival_s -= t0_;
}

bool RequestTraceReader::next(serving::Request& r) {
  if (!header()) return false;
  std::string_view l;
  do {
    if (!line(l)) return false;
  } while (trim(l).empty());
  r = serving::Request{};
  if (jsonl_) parse_jsonl(l, r);
  else parse_csv(l, r);
  check(r);
  return true;
}

std::int64_t RequestTraceReader::count_rows(std::int64_t limit) {
  if (!header()) return 0;
  std::int64_t n = 0;
  std::string_view l;
  while (n < limit && line(l)) n += trim(l).empty() ? 0 : 1;
  return n;
}

std::vector<serving::Request> parse_request_trace(std::string_view text, std::string_view source, bool jsonl) {
  RequestTraceReader reader(text, source, jsonl);
  std::vector<serving::Request> out;
  serving::Request r;
  while (reader.next(r)) out.push_back(r);
  if (out.empty()) {
    if (!jsonl && trim(text).empty()) throw InputError(fmt::format("{}: empty: expected a header row and one row per request", source));
    throw InputError(fmt::format("{}: no requests", source));
  }
  return out;
}

TraceFile open_request_trace(const std::string& path, std::int64_t limit) {
  TraceFile t;
  {
    RequestTraceReader reader(path);
    t.requests = reader.count_rows(limit);
  }
  if (t.requests == 0) throw InputError(fmt::format("{}: no requests: expected a header row and one row per request", path));
  t.open = [path] { return std::make_unique<RequestTraceReader>(path); };
  return t;
}

}  // namespace ridgeline::io
