#include "ridgeline/io/csv.hpp"

#include <fmt/format.h>

#include "ridgeline/core/error.hpp"

namespace ridgeline::io {

std::vector<std::vector<std::string>> parse_csv(std::string_view text, std::string_view source, size_t max_fields) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  size_t line = 1, quote_line = 0, total = 0;
  auto end_field = [&] {
    if (++total > max_fields) throw InputError(fmt::format("{}: more than {} fields: not a profile this tool reads", source, max_fields));
    row.push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  auto end_row = [&] {
    end_field();
    if (!(row.size() == 1 && row[0].empty())) rows.push_back(std::move(row));
    row.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    switch (c) {
      case '"':
        if (!field_started || field.empty()) {
          quoted = true;
          quote_line = line;
          field_started = true;
        } else {
          field += c;  // a stray quote inside an unquoted field is kept as text
        }
        break;
      case ',': end_field(); break;
      case '\r':
        if (i + 1 < text.size() && text[i + 1] == '\n') break;
        end_row();
        ++line;
        break;
      case '\n':
        end_row();
        ++line;
        break;
      default:
        field += c;
        field_started = true;
    }
  }
  if (quoted) throw InputError(fmt::format("{}: line {}: a quoted field is never closed", source, quote_line));
  if (field_started || !field.empty() || !row.empty()) end_row();
  return rows;
}

}  // namespace ridgeline::io
