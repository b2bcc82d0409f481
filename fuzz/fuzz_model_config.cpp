// Any bytes given to the config.json reader either load a model or raise InputError; a
// loaded model's graph builds and its parameters count without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/transformer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    ridgeline::model::ModelConfig m = ridgeline::io::parse_model_config(text, "fuzz.json");
    ridgeline::model::ForwardConfig f;
    ridgeline::model::validate(m, f);
    auto p = ridgeline::model::count_params(m);
    if (!(p.total >= 0)) __builtin_trap();
  } catch (const ridgeline::InputError&) {
  }
  return 0;
}
