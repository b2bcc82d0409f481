#pragma once
/// Reading Hugging Face config.json files and the bundled models (data/models/).
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/model/model_config.hpp"

namespace ridgeline::io {

/// Parses the text of a config.json; `source` names it in errors. A missing required
/// field, a wrong type or an inconsistent shape throws InputError naming the key.
model::ModelConfig parse_model_config(std::string_view text, std::string_view source);

/// Reads and parses a config.json from disk.
model::ModelConfig load_model_file(const std::string& path);

/// Names of the bundled models, sorted.
std::vector<std::string> bundled_model_names();

/// A bundled model by name (case-insensitive); throws InputError listing the names.
model::ModelConfig bundled_model(std::string_view name);

/// `--model` resolution: a Hugging Face repository id ("ORG/NAME", no file of that name) is the
/// bundled model whose config.json came from it (else an InputError naming the bundled model
/// whose repository it extends); a path ending in .json (or containing '/') is read as a file;
/// anything else is a bundled name.
model::ModelConfig resolve_model(std::string_view model);

}  // namespace ridgeline::io
