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
  const std::vector<std::string> panels = breakdown_panels(j, where, count);
  return panels.size() == 1 ? panels.front() : panels_svg(panels);
}

std::vector<std::string> breakdown_panels(const json& j, const std::string& where, size_t* count) {
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
    // The prefill takes seconds where a decode step takes milliseconds: one panel each, each
    // on its own axis, or the decode step would not show.
    const std::string who = fmt::format("{} on {}", json_string(j, "model"), json_string(j, "hw"));
    bar("prefill", j["prefill"]["time_by_kind_s"], 1);
    const double steps = json_number(j["decode"], "steps");
    if (steps > 0 && j["decode"].contains("total") && j["decode"]["total"].is_object() && j["decode"]["total"].contains("time_by_kind_s")) {
      const std::vector<Bar> prefill = {bars.front()};
      bars.clear();
      bar("decode (per step)", j["decode"]["total"]["time_by_kind_s"], 1 / steps);
      if (count != nullptr) *count = 2;
      return {stacked_bars_svg(prefill, "time", who + ": prefill by op kind (lower bound)"),
              stacked_bars_svg(bars, "time", who + ": one decode step by op kind (lower bound)")};
    }
    title = who + ": prefill by op kind (lower bound)";
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
  return {stacked_bars_svg(bars, "time", title)};
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
                        flops / bytes, rate, fmt::format("{} {}", phase, json_string(op, "name"))});
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

namespace {

// An array of numbers at `key` of `j` (InputError naming `where` otherwise).
std::vector<double> numbers(const json& j, const char* key, const std::string& where) {
  std::vector<double> out;
  const auto it = j.is_object() ? j.find(key) : j.end();
  if (it == j.end() || !it->is_array()) throw InputError(fmt::format("{}: no '{}' array: expected the output of `ridgeline serve --json`", where, key));
  for (const auto& v : *it) {
    if (!v.is_number()) throw InputError(fmt::format("{}: '{}' holds a non-number", where, key));
    out.push_back(v.get<double>());
  }
  return out;
}

std::string serving_title(const json& j, const std::string& what) {
  return fmt::format("{} · {} on {} (tp {}) · {} engine", what, json_string(j, "model"), json_string(j, "hw"),
                     json_number(j, "tp", 1), j.contains("engine") ? json_string(j["engine"], "name") : std::string("?"));
}

}  // namespace

std::string serving_latency_svg(const json& j, const std::string& where, size_t* count) {
  if (!j.is_object() || !j.contains("cdf")) throw InputError(fmt::format("{}: no 'cdf': expected the output of `ridgeline serve --json`", where));
  const json& cdf = j["cdf"];
  const std::vector<double> q = numbers(cdf, "q", where);
  std::vector<Series> series;
  for (const auto& [key, label] : {std::pair{"ttft_s", "TTFT"}, {"tpot_s", "TPOT"}, {"itl_s", "ITL"}, {"e2e_s", "E2E"}}) {
    const std::vector<double> v = numbers(cdf, key, where);
    Series se;
    se.label = label;
    for (std::size_t i = 0; i < v.size() && i < q.size(); ++i) {
      if (v[i] <= 0) continue;  // no such latency (one-token requests have no TPOT)
      se.x.push_back(v[i] * 1e3);
      se.y.push_back(100 * q[i]);
    }
    if (!se.x.empty()) series.push_back(std::move(se));
  }
  if (count != nullptr) *count = series.size();
  SweepOptions o;
  o.y_flop_rate = false;
  return sweep_svg(series, "latency (ms)", "requests (tokens for ITL) at most, %", serving_title(j, "Latency CDF"), true, false, o);
}

std::string serving_timeline_svg(const json& j, const std::string& where) {
  const auto it = j.is_object() ? j.find("timeline") : j.end();
  if (it == j.end() || !it->is_array() || it->empty()) {
    throw InputError(fmt::format("{}: no 'timeline': expected the output of `ridgeline serve --json`", where));
  }
  Series running, waiting;
  running.label = "running";
  waiting.label = "waiting";
  for (const auto& p : *it) {
    const double t = json_number(p, "t_s");
    running.x.push_back(t), running.y.push_back(json_number(p, "running"));
    waiting.x.push_back(t), waiting.y.push_back(json_number(p, "waiting"));
  }
  SweepOptions o;
  o.y_flop_rate = false;
  return sweep_svg({running, waiting}, "simulated time (s)", "requests (all replicas)", serving_title(j, "Requests over time"), false, false, o);
}

std::string serving_kv_svg(const json& j, const std::string& where) {
  const auto it = j.is_object() ? j.find("timeline") : j.end();
  if (it == j.end() || !it->is_array() || it->empty()) {
    throw InputError(fmt::format("{}: no 'timeline': expected the output of `ridgeline serve --json`", where));
  }
  Series kv;
  kv.label = "KV cache used (%)";
  for (const auto& p : *it) kv.x.push_back(json_number(p, "t_s")), kv.y.push_back(100 * json_number(p, "kv_used"));
  SweepOptions o;
  o.y_flop_rate = false;
  return sweep_svg({kv}, "simulated time (s)", "KV cache blocks held (%, mean over replicas)", serving_title(j, "KV cache over time"),
                   false, false, o);
}

std::string serving_throughput_svg(const json& sweep, const std::string& where, size_t* count) {
  const json& runs = sweep.is_object() && sweep.contains("sweep") ? sweep["sweep"] : sweep;
  if (!runs.is_array() || runs.empty()) throw InputError(fmt::format("{}: no 'sweep': expected the output of `ridgeline serve --qps A,B,... --json`", where));
  Series ttft, tpot;
  ttft.label = "TTFT p99";
  tpot.label = "TPOT p99";
  ttft.markers = tpot.markers = true;
  for (const auto& r : runs) {
    const double x = json_number(r, "output_tokens_per_s_per_gpu");
    const double qps = r.contains("workload") ? json_number(r["workload"], "qps") : 0;
    const std::string label = fmt::format("{:g} req/s: {:.4g} output tok/s per GPU{}", qps, x, json_bool(r, "sustainable", true) ? "" : " (not sustainable)");
    if (r.contains("ttft_s")) ttft.x.push_back(x), ttft.y.push_back(json_number(r["ttft_s"], "p99") * 1e3), ttft.labels.push_back(label);
    if (r.contains("tpot_s")) tpot.x.push_back(x), tpot.y.push_back(json_number(r["tpot_s"], "p99") * 1e3), tpot.labels.push_back(label);
  }
  if (count != nullptr) *count = ttft.x.size();
  SweepOptions o;
  o.y_flop_rate = false;
  o.from_zero = false;
  return sweep_svg({ttft, tpot}, "output tokens/s per GPU", "latency (ms)", serving_title(runs[0], "Throughput against latency"), false,
                   true, o);
}

}  // namespace ridgeline::report
