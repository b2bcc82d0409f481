#pragma once
/// What a planner deploys (docs/deploy.md): a serving configuration as the engine's own launch
/// — `vllm serve ...`, `python -m sglang.launch_server ...`, `trtllm-serve ...` with its extra
/// LLM-API YAML —, one worker kind for aggregated replicas, a prefill and a decode kind for a
/// disaggregated fleet. Every flag, YAML key and listed value comes from the configuration the
/// simulation ran (its plan, dtypes, engine knobs, memory fraction, speculation, layout) and is
/// checked against the flag list of the release its preset follows (io/engine_cli.hpp).
/// Structured data only: report/launch.hpp writes the files.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/model/model_config.hpp"
#include "ridgeline/serving/simulator.hpp"

namespace ridgeline::planning {

/// The engines whose launch files can be written (`--emit`).
enum class LaunchTarget : std::uint8_t { vllm, sglang, trtllm };
std::string_view name(LaunchTarget t) noexcept;
/// "vllm", "sglang" or "trtllm"; nullopt otherwise.
std::optional<LaunchTarget> parse_launch_target(std::string_view s) noexcept;
/// The engine a target launches.
serving::EngineKind engine_kind(LaunchTarget t) noexcept;

enum class LaunchRole : std::uint8_t { replica, prefill, decode };
std::string_view name(LaunchRole r) noexcept;

/// One command-line flag; an empty value is a switch.
struct LaunchArg {
  std::string flag, value;
};
/// One entry of a YAML of options: a dotted key and its value as YAML writes it ("0.9",
/// "true", "fp8", "null").
struct LaunchYaml {
  std::string key, value;
};

/// One kind of engine instance of the fleet.
struct LaunchWorker {
  LaunchRole role = LaunchRole::replica;
  std::int64_t instances = 1;          ///< how many run
  std::int64_t gpus_per_instance = 1;  ///< tp x ep
  std::int64_t port = 8000;            ///< the port each listens on (a default; one instance per host and port)
  std::vector<std::string> command;    ///< the program, its subcommand and the model: {"vllm", "serve", "meta-llama/Llama-3.1-8B"}
  std::vector<LaunchArg> args;         ///< in the order written, --port first
  /// Environment variables the script exports before the command (name, value): ROCm's AITER
  /// switch where the preset has it on (serving::EngineConfig::rocm_aiter).
  std::vector<LaunchArg> env;
  std::vector<LaunchYaml> yaml;        ///< TensorRT-LLM's extra LLM-API options (its --extra_llm_api_options file)
};

/// A fleet as one engine launches it.
struct LaunchPlan {
  LaunchTarget target = LaunchTarget::vllm;
  std::string preset;   ///< the preset the simulation ran: "vllm", "vllm@0.13", "trtllm@1.1", ...
  std::string flags_preset;  ///< the preset whose flag list the launch follows (trtllm@1.1: trtllm's)
  std::string release;  ///< the release that flag list was read from: "0.14"
  std::string flags_source;  ///< where the flag list was read
  std::string model;    ///< the model as the engine loads it (a Hugging Face repository or a path)
  std::vector<LaunchWorker> workers;
  /// What the engine runs differently from the simulation, or what the operator must supply
  /// (a quantised checkpoint, a router in front of disaggregated instances).
  std::vector<std::string> notes;
};

/// How the launch names the models: `model` the target (a Hugging Face repository or a path:
/// ModelConfig::hf_repo, else what --model gave), `draft` a speculative draft's.
struct LaunchNames {
  std::string model, draft;
};

/// The launch of `cfg` (as `serve` runs it) on `target`'s engine. Throws InputError naming
/// --emit when the simulation ran another engine, or when the release the preset follows has no
/// flag for something the simulation assumed (SGLang 0.3 and expert parallelism, an fp8 cache
/// format an engine does not store, ...).
LaunchPlan launch_plan(const model::ModelConfig& m, const serving::ServeConfig& cfg, LaunchTarget target, const LaunchNames& names);

/// The first of `plan`'s flags, YAML keys or values absent from the flag list of its release,
/// as "FLAG" or "FLAG VALUE"; empty when every one is listed. launch_plan never returns a plan
/// with one (tests check it on many deployments).
std::string unlisted(const LaunchPlan& plan);

}  // namespace ridgeline::planning
