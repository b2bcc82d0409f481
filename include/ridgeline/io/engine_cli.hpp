#pragma once
/// The documented command lines of the serving engines, by the preset that follows each
/// release (docs/deploy.md#flag-lists): the flags `vllm serve`, `python -m
/// sglang.launch_server` and `trtllm-serve` define, the keys of TensorRT-LLM's extra LLM-API
/// YAML, and the values some of them take, each list with where it was read. Embedded from
/// data/engines/*.json; launch files (planning/launch.hpp) are checked against them.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ridgeline::io {

struct EngineCliSpec {
  std::string engine;   ///< "vllm", "sglang", "trtllm"
  std::string preset;   ///< the preset it belongs to, as --engine names it: "vllm", "vllm@0.13", "sglang@0.3", ...
  /// Presets of other releases it serves too, its flags being theirs (trtllm's list, read from
  /// both the 0.19-0.20 serve.py and the 1.x one, for trtllm@1.1).
  std::vector<std::string> also_presets;
  std::string release;  ///< the release the list is of, e.g. "0.14"
  std::vector<std::string> command;  ///< the program and its subcommand: {"vllm", "serve"}
  std::string source;   ///< where the flags were read
  std::vector<std::string> flags;      ///< every flag, with its dashes
  std::vector<std::string> yaml_keys;  ///< dotted keys of a YAML of options (TensorRT-LLM's extra LLM-API options)
  /// The values a flag (or a key, or "FLAG FIELD" of a JSON flag) takes, where the list is known.
  std::map<std::string, std::vector<std::string>> choices;

  bool has_flag(std::string_view flag) const noexcept;
  bool has_yaml_key(std::string_view key) const noexcept;
  /// Whether `value` is one of `key`'s choices (true when the list has none for it).
  bool allows(std::string_view key, std::string_view value) const noexcept;
};

/// The list of the preset named `preset` ("vllm", "vllm@0.13", "sglang", "sglang@0.3",
/// "trtllm"), or the one serving it too (trtllm@1.1: trtllm's), or nullptr.
const EngineCliSpec* engine_cli(std::string_view preset);
/// Every embedded list.
const std::vector<EngineCliSpec>& engine_clis();

}  // namespace ridgeline::io
