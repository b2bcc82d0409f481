#pragma once
/// Text that leaves ridgeline (JSON, SVG, HTML, files, messages) is valid UTF-8 whatever the
/// bytes of the inputs it names (a chip's display name, a kernel name, a path).
#include <string>
#include <string_view>

namespace ridgeline {

/// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

/// `s` with every byte that does not start or continue a well-formed UTF-8 sequence replaced
/// by U+FFFD (the replacement character), as nlohmann-json's `replace` handler does.
std::string valid_utf8(std::string_view s);

/// `s` as one line of valid UTF-8: control characters written as escapes (\n, \t, \xNN).
std::string one_line(std::string_view s);

/// `s` with ASCII letters in lower case, other bytes as they are (names matched without case).
std::string ascii_lower(std::string_view s);

}  // namespace ridgeline
