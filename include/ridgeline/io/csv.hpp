#pragma once
/// A small RFC 4180 CSV reader: quoted fields with "" escapes, commas and newlines inside
/// quotes, CRLF or LF line ends. Non-CSV lines such as Nsight Compute's "==PROF==" messages
/// can be skipped by the caller.
#include <string>
#include <string_view>
#include <vector>

namespace ridgeline::io {

/// Splits `text` into rows of fields. Throws InputError naming `source` and the line of
/// an unterminated quote, or when the text exceeds `max_fields` fields in total.
std::vector<std::vector<std::string>> parse_csv(std::string_view text, std::string_view source,
                                                size_t max_fields = 50'000'000);

}  // namespace ridgeline::io
