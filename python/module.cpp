// The Python extension `ridgeline._ridgeline`: the command line as a function. Every
// Python function of the package is one `run` of the CLI with --json (python/ridgeline).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common.hpp"
#include "ridgeline/core/text.hpp"

namespace py = pybind11;

namespace {

std::tuple<int, std::string, std::string> run(const std::vector<std::string>& args) {
  std::vector<std::string> owned;
  owned.reserve(args.size() + 1);
  owned.emplace_back("ridgeline");
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(owned.size());
  for (auto& a : owned) argv.push_back(a.data());
  // A NUL would cut the argument short where C reads it ("h200\0/etc/passwd" runs as h200).
  for (std::size_t i = 1; i < owned.size(); ++i) {
    if (owned[i].find('\0') != std::string::npos) {
      return {2, "", "ridgeline: error: argument " + std::to_string(i) + " ('" + ridgeline::one_line(owned[i].substr(0, owned[i].find('\0'))) +
                         "\\0...') contains a NUL character: no argument can\n"};
    }
  }
  std::ostringstream out, err;
  const int status = ridgeline::cli::run(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

}  // namespace

PYBIND11_MODULE(_ridgeline, m) {
  m.doc() = "ridgeline's command line as a function (use the functions of the ridgeline package)";
  m.def("run", &run, py::arg("args"),
        "Runs `ridgeline ARGS...`; returns (exit status, stdout, stderr).");
  m.def(
      "flags",
      [](const std::vector<std::string>& path) {
        py::list out;
        for (const auto& f : ridgeline::cli::command_flags(path)) {
          py::dict d;
          d["name"] = f.name;
          d["kind"] = f.kind;
          d["default"] = f.default_value;
          d["description"] = f.description;
          d["positional"] = f.positional;
          d["required"] = f.required;
          d["repeatable"] = f.repeatable;
          out.append(d);
        }
        return out;
      },
      py::arg("path"), "The options of `ridgeline PATH...` as its --help lists them (the functions' signatures come from these).");
}
