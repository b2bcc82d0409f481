#pragma once
// Runs the ridgeline binary and captures stdout, stderr and the exit status.
#include <nlohmann/json.hpp>
#include <string>

namespace ridgeline::testing {

struct RunResult {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `ridgeline <args>` (args are passed to /bin/sh, so quote as in a shell).
RunResult run(const std::string& args);

/// Runs with --json appended, expects exit 0 and returns the parsed document.
nlohmann::json run_json(const std::string& args);

/// Expects exit status 2, nothing on stdout and one line on stderr mentioning `mentions`.
void expect_bad(const std::string& args, const std::string& mentions);

/// The whole contents of a file (empty when it cannot be read).
std::string slurp(const std::string& path);

}  // namespace ridgeline::testing
