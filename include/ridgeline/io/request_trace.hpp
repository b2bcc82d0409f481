#pragma once
/// Request traces for `serve --trace` (docs/serving.md#traces): CSV with a header row or JSON
/// lines, one request each. Columns (keys): `timestamp_s`, `input_tokens`, `output_tokens`,
/// optional `prefix_group` and `prefix_tokens`; the Azure LLM inference trace's `TIMESTAMP`
/// (a date-time), `ContextTokens` and `GeneratedTokens` are read as they are. Times are made
/// relative to the first request.
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/serving/workload.hpp"

namespace ridgeline::io {

/// Parses a trace from `text` (`source` names it in errors; `jsonl` picks the format).
/// InputError naming the file, row, column and value for anything it cannot use.
std::vector<serving::Request> parse_request_trace(std::string_view text, std::string_view source, bool jsonl);

/// Reads a trace file (.jsonl / .json lines by extension, CSV otherwise).
std::vector<serving::Request> read_request_trace(const std::string& path);

}  // namespace ridgeline::io
