#include "ridgeline/report/result_charts.hpp"

#include <fmt/format.h>

#include <array>
#include <span>

#include "ridgeline/core/error.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::report {

using nlohmann::json;

double json_number(const json& j, const char* key, double fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}
std::string json_string(const json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}
bool json_bool(const json& j, const char* key, bool fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string breakdown_svg(const json& j, const std::string& where, size_t* count) {
  std::vector<Bar> bars;
  auto bar = [&](const std::string& label, const json& kinds, double scale) {
    if (!kinds.is_object()) throw InputError(fmt::format("{}: time_by_kind_s is not an object of times by op kind", where));
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
    title = fmt::format("{} on {}: time by op kind (lower bound)", json_string(j, "model"), json_string(j, "hw"));
    bar("prefill", j["prefill"]["time_by_kind_s"], 1);
    const double steps = json_number(j["decode"], "steps");
    if (steps > 0 && j["decode"].contains("total") && j["decode"]["total"].is_object() && j["decode"]["total"].contains("time_by_kind_s")) {
      bar("decode (per step)", j["decode"]["total"]["time_by_kind_s"], 1 / steps);
    }
  } else if (j.is_object() && j.contains("time_by_kind_s") && j.contains("step_time_s")) {
    title = fmt::format("{} on {}: compute time by op kind per step (lower bound)", json_string(j, "model"), json_string(j, "hw"));
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
  const std::string title = fmt::format("{} on {}: memory on one chip{}", json_string(j, "model"), json_string(j, "hw"), fits ? "" : " (does not fit)");
  if (segments != nullptr) *segments = seg;
  return stacked_bars_svg({bar}, "bytes", title, Quantity::bytes, cap, "capacity");
}

std::vector<ChartPoint> result_points(const json& j) {
  std::vector<ChartPoint> points;
  const bool train = j.contains("step_time_s");
  if (j.contains("ops") && j["ops"].is_array()) {
    for (const auto& op : j["ops"]) {
      const double flops = json_number(op, "flops"), bytes = json_number(op, "bytes"), rate = json_number(op, "attained_flops_per_s");
      if (!(flops > 0 && bytes > 0 && rate > 0)) continue;
      const std::string phase = train ? "forward" : json_string(op, "phase");
      points.push_back({fmt::format("{}: {} ({}, x{:g})", phase, json_string(op, "name"), json_string(op, "group"), json_number(op, "repeat", 1)),
                        flops / bytes, rate});
    }
  }
  return points;
}

std::string ops_roofline_svg(const json& j, const hw::ChipSpec& chip, size_t* count) {
  const std::vector<ChartPoint> points = result_points(j);
  const bool train = j.contains("step_time_s");
  DType dtype = DType::bf16;
  if (auto d = parse_dtype(json_string(j, train ? "dtype" : "act_dtype", "bf16"))) dtype = *d;
  if (chip.peak(hw::Unit::matrix, dtype) <= 0) dtype = DType::bf16;
  if (count != nullptr) *count = points.size();
  return roofline_svg({chip}, dtype, points, fmt::format("{} on {}: every op on the roofline", json_string(j, "model"), chip.display_name));
}

}  // namespace ridgeline::report
