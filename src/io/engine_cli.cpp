// The engines' flag lists, from the embedded data/engines/*.json (docs/deploy.md#flag-lists).
#include "ridgeline/io/engine_cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ridgeline/io/embedded.hpp"

namespace ridgeline::io {

namespace {

std::vector<std::string> strings(const nlohmann::json& j, const char* key, std::string_view path) {
  std::vector<std::string> out;
  const auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) throw std::logic_error(fmt::format("{}: {}: expected an array of strings", path, key));
  for (const auto& v : *it) {
    if (!v.is_string()) throw std::logic_error(fmt::format("{}: {}: expected strings", path, key));
    out.push_back(v.get<std::string>());
  }
  return out;
}

// The embedded lists are the project's own data: a malformed one is a build error, not input.
EngineCliSpec parse(std::string_view text, std::string_view path) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::logic_error(fmt::format("{}: not a JSON object", path));
  EngineCliSpec s;
  for (auto [field, key] : {std::pair{&s.engine, "engine"}, {&s.preset, "preset"}, {&s.release, "release"}, {&s.source, "source"}}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) throw std::logic_error(fmt::format("{}: {}: expected a string", path, key));
    *field = it->get<std::string>();
  }
  s.command = strings(j, "command", path);
  s.also_presets = strings(j, "also_presets", path);
  s.flags = strings(j, "flags", path);
  s.yaml_keys = strings(j, "yaml_keys", path);
  if (const auto it = j.find("choices"); it != j.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) s.choices[k] = strings(*it, k.c_str(), path);
  }
  return s;
}

}  // namespace

bool EngineCliSpec::has_flag(std::string_view flag) const noexcept {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool EngineCliSpec::has_yaml_key(std::string_view key) const noexcept {
  return std::find(yaml_keys.begin(), yaml_keys.end(), key) != yaml_keys.end();
}

bool EngineCliSpec::allows(std::string_view key, std::string_view value) const noexcept {
  const auto it = choices.find(std::string(key));
  return it == choices.end() || std::find(it->second.begin(), it->second.end(), value) != it->second.end();
}

const std::vector<EngineCliSpec>& engine_clis() {
  static const std::vector<EngineCliSpec> all = [] {
    std::vector<EngineCliSpec> v;
    for (const EmbeddedFile& f : embedded_files()) {
      if (f.path.rfind("engines/", 0) == 0) v.push_back(parse(f.text, f.path));
    }
    return v;
  }();
  return all;
}

const EngineCliSpec* engine_cli(std::string_view preset) {
  for (const EngineCliSpec& s : engine_clis()) {
    if (s.preset == preset || std::find(s.also_presets.begin(), s.also_presets.end(), preset) != s.also_presets.end()) return &s;
  }
  return nullptr;
}

}  // namespace ridgeline::io
