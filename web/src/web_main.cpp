// The WebAssembly module's entry point (docs/web.md): one command line in, what the CLI
// prints out. The page and the equality test call ridgeline_web_run with the arguments the
// CLI would take (`infer --model llama-3.1-8b --hw h100-sxm --json`); it runs the CLI's own
// run() (apps/ridgeline/run.cpp) and returns {"status", "stdout", "stderr"} as JSON.
#include <emscripten.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"

// Progress of a search or a long simulation (fraction 0..1) to the page's worker.
EM_JS(void, ridgeline_web_progress, (double fraction), {
  if (Module["onProgress"]) Module["onProgress"](fraction);
});

namespace {

std::string g_result;  // the last result, alive until the next call

}  // namespace

/// `args_json`: a JSON array of strings, the arguments after the program name. Returns a
/// JSON object {status: the exit status, stdout, stderr: what the CLI printed}.
extern "C" EMSCRIPTEN_KEEPALIVE const char* ridgeline_web_run(const char* args_json) {
  nlohmann::json result;
  std::vector<std::string> args;
  try {
    const nlohmann::json a = nlohmann::json::parse(args_json);
    for (const auto& x : a) args.push_back(x.get<std::string>());
  } catch (const std::exception& e) {
    result = {{"status", 2}, {"stdout", ""}, {"stderr", std::string("ridgeline: error: the arguments are not a JSON array of strings: ") + e.what() + "\n"}};
    g_result = result.dump();
    return g_result.c_str();
  }
  std::vector<char*> argv;
  static char program[] = "ridgeline";
  argv.push_back(program);
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  ridgeline::cli::progress_hook() = [](double f) { ridgeline_web_progress(f); };
  const int status = ridgeline::cli::run(static_cast<int>(args.size() + 1), argv.data(), out, err);
  ridgeline::cli::progress_hook() = nullptr;
  result = {{"status", status}, {"stdout", out.str()}, {"stderr", err.str()}};
  g_result = result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return g_result.c_str();
}
