#pragma once
// --emit ENGINE [--emit-dir DIR] on `serve` and `search serve`: the engine's launch files of a
// deployment (docs/deploy.md).
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ridgeline/planning/launch.hpp"

namespace ridgeline::cli {

struct EmitFlags {
  std::string target, dir;
};
void add_emit_flags(CLI::App* app, EmitFlags& f);
/// The engine --emit names (nullopt without --emit); InputError naming the flag otherwise.
std::optional<planning::LaunchTarget> emit_target(const EmitFlags& f);
/// The directory written: --emit-dir, else launch-ENGINE.
std::string emit_dir(const EmitFlags& f);

/// How the launch names the model of `cfg` and its draft: their Hugging Face repositories when
/// known, else as --model and --draft gave them.
planning::LaunchNames launch_names(const model::ModelConfig& m, const std::string& model_arg, const serving::ServeConfig& cfg,
                                   const std::string& draft_arg);

/// What was written: {"dir", "engine", "release", "files": [...], "notes": [...]}.
struct Emitted {
  nlohmann::json json;
  std::vector<std::string> files;
};
/// Writes the launch of `cfg` into `dir`; `heading` opens its README.
Emitted write_launch(planning::LaunchTarget target, const std::string& dir, const model::ModelConfig& m, const serving::ServeConfig& cfg,
                     const planning::LaunchNames& names, const std::vector<std::string>& heading);

}  // namespace ridgeline::cli

namespace ridgeline::cli {

/// `serve --emit`: the launch of the run `r` of `cfg`, its predictions in the README; adds
/// `emitted` to `j` and a line to `text`.
void emit_serve_launch(planning::LaunchTarget target, const std::string& dir, const model::ModelConfig& m, const std::string& model_arg,
                       const serving::ServeConfig& cfg, const std::string& draft_arg, const serving::ServingResult& r, nlohmann::json& j,
                       std::string& text);

}  // namespace ridgeline::cli

#include "ridgeline/planning/fleet.hpp"

namespace ridgeline::cli {

/// `search serve --emit`: the launches of the best deployment (DIR/best), the Pareto front's
/// (DIR/pareto/NN) and the listed feasible ones (DIR/feasible/NN) that run `target`'s engine;
/// adds `emitted` to `j` (JSON) and lines to `text`.
void emit_fleet_launches(planning::LaunchTarget target, const std::string& dir, const model::ModelConfig& m, const std::string& model_arg,
                         const planning::FleetSpace& space, const planning::FleetSearchResult& r, const std::string& serve_prefix,
                         nlohmann::json& j, std::string& text);

}  // namespace ridgeline::cli
