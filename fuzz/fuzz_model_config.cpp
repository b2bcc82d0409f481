// Any bytes given to the config.json reader either load a model or raise InputError; a
// loaded model's graph builds and its parameters count without crashing; a routing
// measurement gives an imbalance from 1 to its cap at the measured and other EP sizes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/routing.hpp"
#include "ridgeline/model/transformer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    ridgeline::model::ModelConfig m = ridgeline::io::parse_model_config(text, "fuzz.json");
    ridgeline::model::ForwardConfig f;
    ridgeline::model::validate(m, f);
    auto p = ridgeline::model::count_params(m);
    if (!(p.total >= 0)) __builtin_trap();
    if (m.moe.routing.gpus > 1) {
      for (const std::int64_t g : {m.moe.routing.gpus, m.moe.experts}) {
        f.tp = 1;
        f.ep = g;
        f.expert_imbalance = 0;  // auto
        const ridgeline::model::RoutingImbalance r = ridgeline::model::routing_imbalance(m, f);
        if (!(r.skew >= 0 && r.skew < 1e300)) __builtin_trap();
        for (const double T : {1.0, m.moe.routing.tokens_per_step, 1e9}) {
          const double F = r.at(T);
          if (!(F >= 1 && F <= r.cap)) __builtin_trap();
        }
      }
    }
  } catch (const ridgeline::InputError&) {
  }
  return 0;
}
