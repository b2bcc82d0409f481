#pragma once
/// Request traces for `serve --trace` (docs/serving.md#traces): CSV with a header row or JSON
/// lines, one request each. Columns (keys): `timestamp_s`, `input_tokens`, `output_tokens`,
/// optional `prefix_group` and `prefix_tokens`; the Azure LLM inference trace's `TIMESTAMP`
/// (a date-time), `ContextTokens` and `GeneratedTokens` are read as they are. Times are made
/// relative to the first request. A trace is read row by row, as far as a run goes: the file
/// is never held whole, so memory does not grow with its length.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ridgeline/serving/workload.hpp"

namespace ridgeline::io {

/// A trace's requests one at a time, in file order. Errors (InputError) name the file, the
/// line (counted from 1, blank lines included), the column and the value: a row that is not
/// a request, a timestamp earlier than the row before, a prefix group whose prefix length
/// changes.
class RequestTraceReader final : public serving::RequestStream {
 public:
  /// Opens `path` (.jsonl / .ndjson: JSON lines, else CSV); InputError when it cannot be read.
  explicit RequestTraceReader(const std::string& path);
  /// Reads `text` (`source` names it in errors; `jsonl` picks the format).
  RequestTraceReader(std::string_view text, std::string_view source, bool jsonl);
  ~RequestTraceReader() override;
  RequestTraceReader(const RequestTraceReader&) = delete;
  RequestTraceReader& operator=(const RequestTraceReader&) = delete;

  /// The next request, or false after the last row.
  bool next(serving::Request& r) override;
  /// Instead of next(): counts the rows up to `limit` without parsing them past a CSV's
  /// header (checked); the reader is at its end or past `limit` rows afterwards.
  std::int64_t count_rows(std::int64_t limit);

 private:
  bool line(std::string_view& out);  // the next line without its end, false at the end
  bool header();                     // CSV: reads the header row; false for an empty file
  void parse_csv(std::string_view line, serving::Request& r);
  void parse_jsonl(std::string_view line, serving::Request& r);
  void check(serving::Request& r);  // order, prefix groups, relative time

  std::string source_;
  bool jsonl_ = false;
  std::FILE* file_ = nullptr;
  std::vector<char> buf_;  // a window of the file
  std::string_view text_;  // the text (in memory) or the window's filled part
  std::size_t pos_ = 0;
  bool eof_ = false;
  std::size_t line_ = 0;  // the line last returned
  std::int64_t rows_ = 0;
  bool headed_ = false, azure_ = false;
  int ts_ = -1, in_ = -1, out_ = -1, group_ = -1, prefix_ = -1;
  std::vector<std::string_view> fields_;
  double t0_ = 0, last_ = 0;
  std::size_t last_line_ = 0;
  std::unordered_map<std::int32_t, std::pair<std::int64_t, std::size_t>> groups_;  // prefix tokens, first line
};

/// Every request of a trace in memory (tests, fuzzing); InputError as the reader's, and for
/// a text with no request.
std::vector<serving::Request> parse_request_trace(std::string_view text, std::string_view source, bool jsonl);

/// The trace at `path` for a run: checks that it opens and has a valid header, counts its
/// requests up to `limit` (InputError for none) and returns their count with an opener that
/// reads it from its first row on each call (each simulation of a run reads it anew).
struct TraceFile {
  std::int64_t requests = 0;  ///< rows, at most `limit`
  std::function<std::unique_ptr<serving::RequestStream>()> open;
};
TraceFile open_request_trace(const std::string& path, std::int64_t limit);

}  // namespace ridgeline::io
