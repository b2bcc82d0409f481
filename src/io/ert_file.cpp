// ERT roofline.json → chip YAML. The result is parsed back by parse_chip_yaml before it
// is returned, so whatever this writes loads as `--hw FILE`.
#include "ridgeline/io/ert_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/io/hardware_file.hpp"

namespace ridgeline::io {
namespace {

using nlohmann::json;

std::string upper(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

// ERT's kernels run in double precision unless built with ERT_PRECISION; later versions
// put the precision in the label ("FP32 GFLOPs").
// A label naming any other precision ("FP7 GFLOPs", "BF16 GFLOPs", "INT8 GOPs") is an
// error, never an fp64 peak.
DType precision_of(std::string_view label, std::string_view source) {
  const std::string u = upper(label);
  if (u.find("FP16") != std::string::npos || u.find("HALF") != std::string::npos) return DType::fp16;
  if (u.find("FP32") != std::string::npos || u.find("SINGLE") != std::string::npos || u.find("SP ") != std::string::npos) {
    return DType::fp32;
  }
  if (u.find("FP64") != std::string::npos || u.find("DOUBLE") != std::string::npos || u.find("DP ") != std::string::npos) return DType::fp64;
  for (const char* other : {"FP", "BF", "TF32", "INT", "E4M3", "E5M2"}) {
    if (u.find(other) != std::string::npos) {
      throw InputError(fmt::format("{}: empirical.gflops: '{}' names a precision ERT does not measure: expected FP64, FP32, FP16 or no "
                                   "precision (ERT's default, FP64)",
                                   source, label));
    }
  }
  return DType::fp64;
}

// [[label, value], ...] under empirical.<key>.data.
std::vector<std::pair<std::string, double>> pairs(const json& root, const char* key, std::string_view source) {
  const std::string where = fmt::format("{}: empirical.{}.data", source, key);
  const json* e = root.contains("empirical") ? &root["empirical"] : nullptr;
  if (e == nullptr || !e->is_object() || !e->contains(key) || !(*e)[key].is_object() || !(*e)[key].contains("data") ||
      !(*e)[key]["data"].is_array()) {
    throw InputError(fmt::format("{} is missing: expected an ERT roofline.json", where));
  }
  std::vector<std::pair<std::string, double>> out;
  for (const auto& row : (*e)[key]["data"]) {
    if (!row.is_array() || row.size() != 2 || !row[0].is_string() || !row[1].is_number()) {
      throw InputError(fmt::format("{}: {} is not [name, number]", where, row.dump()));
    }
    const double v = row[1].get<double>();
    if (!(v > 0) || !std::isfinite(v)) throw InputError(fmt::format("{}: {} must be a positive number", where, row.dump()));
    // ERT reports GB/s and GFLOP/s: 10^9 of them (10^18 per second) is beyond any machine.
    if (v > 1e9) throw InputError(fmt::format("{}: {} is beyond any machine: expected {} under 10^9", where, row.dump(), key));
    out.emplace_back(row[0].get<std::string>(), v);
  }
  if (out.empty()) throw InputError(fmt::format("{} is empty: ERT measured nothing", where));
  return out;
}

std::string chip_name(const json& root, const ErtImportOptions& o) {
  if (!o.name.empty()) return o.name;
  std::string host;
  const json* m = root["empirical"].contains("metadata") ? &root["empirical"]["metadata"] : nullptr;
  if (m != nullptr && m->is_object() && m->contains("HOSTNAME")) {
    const json& h = (*m)["HOSTNAME"];
    if (h.is_string()) host = h.get<std::string>();
    else if (h.is_array() && !h.empty() && h[0].is_string()) host = h[0].get<std::string>();
  }
  std::string n = "ert";
  if (!host.empty()) n += "-";
  for (char c : host) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    n += (std::isalnum(static_cast<unsigned char>(l)) || l == '.' || l == '_') ? l : '-';
  }
  return n.substr(0, 64);
}

bool ert_gpu(const json& root) {
  const json& e = root["empirical"];
  if (!e.contains("metadata") || !e["metadata"].is_object() || !e["metadata"].contains("CONFIG")) return false;
  const json& c = e["metadata"]["CONFIG"];
  if (!c.is_object() || !c.contains("ERT_GPU")) return false;
  const json& g = c["ERT_GPU"];
  const json& v = g.is_array() && !g.empty() ? g[0] : g;
  return (v.is_boolean() && v.get<bool>()) || (v.is_string() && upper(v.get<std::string>()) == "TRUE");
}

}  // namespace

std::string ert_chip_yaml(std::string_view text, std::string_view source, const ErtImportOptions& o) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception&) {
    throw InputError(fmt::format("{}: not JSON: expected an ERT roofline.json", source));
  }
  if (!root.is_object()) throw InputError(fmt::format("{}: expected a JSON object (an ERT roofline.json)", source));
  const auto flops = pairs(root, "gflops", source);
  const auto levels = pairs(root, "gbytes", source);
  if (levels.size() > static_cast<size_t>(hw::kMaxMemoryLevels)) {
    throw InputError(fmt::format("{}: empirical.gbytes.data has {} levels: at most {} are supported", source, levels.size(),
                                 hw::kMaxMemoryLevels));
  }
  for (size_t i = 0; i < levels.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (upper(levels[i].first) == upper(levels[j].first)) {
        throw InputError(fmt::format("{}: empirical.gbytes.data names the level {} twice: expected one rate per level", source, levels[i].first));
      }
    }
  }
  // Every level needs its capacity; name the missing ones together.
  std::vector<double> capacity(levels.size(), 0);
  std::string missing, first_missing;
  for (size_t i = 0; i < levels.size(); ++i) {
    for (const auto& [n, v] : o.capacities) {
      if (upper(n) == upper(levels[i].first)) capacity[i] = v;
    }
    if (!(capacity[i] > 0)) {
      if (missing.empty()) first_missing = levels[i].first;
      missing += (missing.empty() ? "" : ", ") + levels[i].first;
    }
  }
  for (const auto& cap : o.capacities) {
    const std::string n = upper(cap.first);
    if (std::none_of(levels.begin(), levels.end(), [&n](const auto& l) { return upper(l.first) == n; })) {
      throw InputError(fmt::format("--capacity: {} is not a level of {}: expected one of its empirical.gbytes names", cap.first, source));
    }
  }
  if (!missing.empty()) {
    throw InputError(fmt::format("--capacity: {} has no capacity for {}: ERT measures bandwidth, not size (e.g. --capacity {}=32KiB)",
                                 source, missing, first_missing));
  }
  // The best rate per precision (ERT may list one per kernel).
  std::array<double, kDTypeCount> peak{};
  for (const auto& [label, gflops] : flops) {
    auto& p = peak[index(precision_of(label, source))];
    p = std::max(p, gflops * 1e9);
  }
  hw::ChipSpec c;
  c.name = chip_name(root, o);
  c.display_name = fmt::format("ERT ceilings from {}", source);
  c.vendor = "ert";
  c.kind = ert_gpu(root) ? "gpu" : "cpu";
  // ERT times FMA loops on the cores (CUDA cores on a GPU, never tensor cores): the same
  // figure serves both units, and a GPU's matrix peak wants a --peak override.
  c.matrix_flops_per_s = c.vector_flops_per_s = peak;
  for (size_t k = 0; k < levels.size(); ++k) {
    // Main memory (ERT's last, slowest level) first, then the caches outermost first.
    const size_t i = levels.size() - 1 - k;
    c.memory.push_back({levels[i].first, levels[i].second * 1e9, capacity[i]});
  }
  c.launch_overhead_s = 0;
  c.chips_per_node = 1;
  c.efficiency = {1, 1, 1, 1};  // measured ceilings are achieved rates
  c.sources = {fmt::format("Empirical Roofline Toolkit measurement: {} (empirical.gflops, empirical.gbytes)", source)};
  const std::string y = chip_yaml(c, "ERT measures neither launch overhead (0 here) nor tensor-core peaks (the FMA-core rate here)",
                                  fmt::format("measured:\n  tool: ERT\n  file: {}\n", yaml_quoted(source)));
  (void)parse_chip_yaml(y, source);  // what is written always loads
  return y;
}

}  // namespace ridgeline::io
