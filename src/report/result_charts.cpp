#include "ridgeline/report/result_charts.hpp"

#include <fmt/format.h>

#include <array>
#include <span>

#include "ridgeline/core/error.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::report {

using nlohmann::json;

std::string breakdown_svg(const json& j, const std::string& where, size_t* count) {
  std::vector<Bar> bars;
  auto bar = [&](const std::string& label, const json& kinds, double scale) {
    Bar br;
    br.label = label;
    for (const auto& [k, v] : kinds.items()) {
      if (v.is_number()) br.segments.emplace_back(k, v.get<double>() * scale);
    }
    bars.push_back(std::move(br));
  };
  std::string title;
  if (j.is_object() && j.contains("prefill") && j.contains("decode") && j["prefill"].is_object() &&
      j["prefill"].contains("time_by_kind_s")) {
    title = fmt::format("{} on {}: time by op kind (lower bound)", j.value("model", ""), j.value("hw", ""));
    bar("prefill", j["prefill"]["time_by_kind_s"], 1);
    const double steps = j["decode"].is_object() ? j["decode"].value("steps", 0.0) : 0.0;
    if (steps > 0 && j["decode"].contains("total") && j["decode"]["total"].contains("time_by_kind_s")) {
      bar("decode (per step)", j["decode"]["total"]["time_by_kind_s"], 1 / steps);
    }
  } else if (j.is_object() && j.contains("time_by_kind_s") && j.contains("step_time_s")) {
    title = fmt::format("{} on {}: compute time by op kind per step (lower bound)", j.value("model", ""), j.value("hw", ""));
    if (j.contains("forward_time_by_kind_s") && j.contains("backward_time_by_kind_s")) {
      bar("forward", j["forward_time_by_kind_s"], 1);
      bar("backward (+ recompute)", j["backward_time_by_kind_s"], 1);
    } else {
      bar("step", j["time_by_kind_s"], 1);
    }
  } else {
    throw InputError(fmt::format("{}: no time_by_kind_s: expected the output of `ridgeline infer --json` or `train --json`", where));
  }
  if (count != nullptr) *count = bars.size();
  return stacked_bars_svg(bars, "time", title);
}

std::string memory_svg(const json& j, const std::string& where, json* segments) {
  // Infer: weights, KV cache, activations. Train: Korthikanti's parts.
  static constexpr std::array<const char*, 3> kInfer = {"weights_bytes", "kv_cache_bytes", "activations_bytes"};
  static constexpr std::array<const char*, 5> kTrain = {"params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                                                        "margin_bytes"};
  const char* key = nullptr;
  std::span<const char* const> parts;
  if (j.is_object() && j.contains("memory") && j["memory"].is_object()) {
    key = "memory";
    parts = kInfer;
  } else if (j.is_object() && j.contains("memory_per_gpu") && j["memory_per_gpu"].is_object()) {
    key = "memory_per_gpu";
    parts = kTrain;
  } else {
    throw InputError(fmt::format("{}: no memory or memory_per_gpu: expected the output of `ridgeline infer --json` or `train --json`", where));
  }
  const json& m = j[key];
  Bar bar;
  bar.label = "one chip";
  json seg = json::object();
  for (const char* p : parts) {
    if (!m.contains(p) || !m[p].is_number()) throw InputError(fmt::format("{}: {}.{} is missing or not a number", where, key, p));
    const double v = m[p].get<double>();
    std::string name(p);
    name.resize(name.size() - 6);  // drop "_bytes"
    bar.segments.emplace_back(name, v);
    seg[name + "_bytes"] = v;
  }
  const double cap = m.contains("capacity_bytes") && m["capacity_bytes"].is_number() ? m["capacity_bytes"].get<double>() : 0.0;
  const bool fits = !m.contains("fits") || !m["fits"].is_boolean() || m["fits"].get<bool>();
  const std::string title = fmt::format("{} on {}: memory on one chip{}", j.value("model", ""), j.value("hw", ""), fits ? "" : " (does not fit)");
  if (segments != nullptr) *segments = seg;
  return stacked_bars_svg({bar}, "bytes", title, Quantity::bytes, cap, "capacity");
}

std::vector<ChartPoint> result_points(const json& j) {
  std::vector<ChartPoint> points;
  const bool train = j.contains("step_time_s");
  if (j.contains("ops") && j["ops"].is_array()) {
    for (const auto& op : j["ops"]) {
      const double flops = op.value("flops", 0.0), bytes = op.value("bytes", 0.0), rate = op.value("attained_flops_per_s", 0.0);
      if (!(flops > 0 && bytes > 0 && rate > 0)) continue;
      const std::string phase = train ? "forward" : op.value("phase", "");
      points.push_back({fmt::format("{}: {} ({}, x{:g})", phase, op.value("name", ""), op.value("group", ""), op.value("repeat", 1.0)),
                        flops / bytes, rate});
    }
  }
  return points;
}

std::string ops_roofline_svg(const json& j, const hw::ChipSpec& chip, size_t* count) {
  const std::vector<ChartPoint> points = result_points(j);
  const bool train = j.contains("step_time_s");
  DType dtype = DType::bf16;
  if (auto d = parse_dtype(j.value(train ? "dtype" : "act_dtype", std::string("bf16")))) dtype = *d;
  if (chip.peak(hw::Unit::matrix, dtype) <= 0) dtype = DType::bf16;
  if (count != nullptr) *count = points.size();
  return roofline_svg({chip}, dtype, points, fmt::format("{} on {}: every op on the roofline", j.value("model", ""), chip.display_name));
}

}  // namespace ridgeline::report
