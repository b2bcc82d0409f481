#pragma once
// Runs the ridgeline binary and captures stdout, stderr and the exit status.
#include <nlohmann/json.hpp>
#include <string>

namespace ridgeline::testing {

// Whether the binaries are built with AddressSanitizer (gcc defines __SANITIZE_ADDRESS__,
// clang answers __has_feature): it reserves terabytes of address space, so no test puts a
// limit on that under it.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitized = true;
#else
inline constexpr bool kAddressSanitized = false;
#endif
#else
inline constexpr bool kAddressSanitized = false;
#endif

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

/// A path under the build's test directory (RIDGELINE_TMP_DIR).
std::string tmp_path(const std::string& name);

/// The whole contents of a file (empty when it cannot be read).
std::string slurp(const std::string& path);

}  // namespace ridgeline::testing
