// What the WebAssembly build leaves out (web/CMakeLists.txt: the host-only sources), in
// place of its entry points: `measure` and `validate` time this machine's own kernels, and
// PyTorch traces are read with zlib and simdjson, neither built for WebAssembly in Debian.
// Each says so as a one-line input error (exit 2), as the CLI does for what it cannot do.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "common.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/io/profile_file.hpp"

namespace ridgeline::cli {

namespace {

void register_host_command(CLI::App& root, std::vector<Command>& commands, const char* name, const char* what) {
  auto* c = root.add_subcommand(name, what);
  c->allow_extras();
  const std::string n = name;
  commands.push_back({c, [n] {
                        throw InputError(fmt::format("{}: runs on the machine it measures, not in the browser: use the ridgeline CLI there (docs/web.md)", n));
                      }});
}

}  // namespace

void register_measure(CLI::App& root, std::vector<Command>& commands) {
  register_host_command(root, commands, "measure", "measure this machine's compute ceilings and bandwidths (CLI only)");
}

void register_validate(CLI::App& root, std::vector<Command>& commands) {
  register_host_command(root, commands, "validate", "time real kernels on this machine (CLI only)");
}

}  // namespace ridgeline::cli

namespace ridgeline::io {

profile::Profile parse_torch_trace(std::string_view, std::string_view source, const TraceLimits&) {
  throw InputError(fmt::format("{}: PyTorch traces are read by the ridgeline CLI, not in the browser (docs/web.md)", source));
}

profile::Profile read_torch_trace(const std::string& path) { return parse_torch_trace({}, path, {}); }

}  // namespace ridgeline::io
