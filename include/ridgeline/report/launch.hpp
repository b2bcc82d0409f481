#pragma once
/// Launch files of a deployment (docs/deploy.md): for each kind of instance a shell script
/// running the engine's command (and TensorRT-LLM's extra LLM-API YAML beside it), and a
/// README.md with the fleet, what ridgeline predicted for it and the notes. Presentation only:
/// the flags come from planning::launch_plan.
#include <string>
#include <vector>

#include "ridgeline/planning/launch.hpp"

namespace ridgeline::report {

struct LaunchFile {
  std::string name;  ///< relative to the directory: "replica.sh", "README.md"
  std::string text;
  bool executable = false;
};

/// The files of `plan`; `heading` (the ridgeline command, the predictions) opens the README.
std::vector<LaunchFile> launch_files(const planning::LaunchPlan& plan, const std::vector<std::string>& heading);

/// The command of one worker as one shell line per flag ("vllm serve M \\\n  --port ..."),
/// without the script around it.
std::string launch_command(const planning::LaunchWorker& w);

/// Writes `files` into `dir` (created with its parents), each atomically (temp file and
/// rename); InputError naming `flag` when it cannot.
void write_launch_files(const std::string& dir, const std::vector<LaunchFile>& files, const char* flag = "--emit-dir");

}  // namespace ridgeline::report
