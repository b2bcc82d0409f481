#pragma once
/// `--hw a,b,c`: one command's results on several chips side by side, a column per chip,
/// read from each run's JSON document (the numbers are the command's own).
#include <nlohmann/json.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ridgeline::report {

enum class Shown : std::uint8_t { time, rate, fraction, bytes, usd, flag, number, text };

/// A row: its label, where its value is in each document (a JSON pointer), how to show it.
struct Headline {
  const char* label;
  const char* pointer;
  Shown shown;
};

/// A table: a column per document (headed by its "hw"), a row per headline; "-" where a
/// document lacks the value. Headed by the first document's "model" and the chips.
std::string side_by_side_text(const std::vector<nlohmann::json>& docs, std::span<const Headline> rows);

}  // namespace ridgeline::report
