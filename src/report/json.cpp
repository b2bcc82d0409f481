#include "ridgeline/report/json.hpp"

#include <cmath>
#include <cstdint>

#include <string>

namespace ridgeline::report {

void integral_numbers(nlohmann::json& j) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isfinite(v) && v == std::trunc(v) && std::abs(v) <= 9007199254740992.0) j = static_cast<std::int64_t>(v);
  } else if (j.is_structured()) {
    for (auto& e : j) integral_numbers(e);
  }
}

using nlohmann::json;

namespace {
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json dtype_map(const std::array<double, kDTypeCount>& rates) {
  json j = json::object();
  for (DType t : kAllDTypes) {
    if (rates[index(t)] > 0) j[std::string(name(t))] = rates[index(t)];
  }
  return j;
}
}  // namespace

json catalog_json(const std::vector<io::CatalogEntry>& entries) {
  json a = json::array();
  for (const auto& e : entries) {
    a.push_back({{"name", e.name}, {"vendor", e.vendor}, {"kind", e.kind}, {"display_name", e.display_name}});
  }
  return a;
}

json chip_json(const hw::ChipSpec& c) {
  json j;
  j["name"] = c.name;
  j["display_name"] = c.display_name;
  j["vendor"] = c.vendor;
  j["kind"] = c.kind;
  j["arch"] = c.arch.empty() ? json(nullptr) : json(c.arch);
  j["peak_flops_per_s"] = dtype_map(c.matrix_flops_per_s);
  j["matmul_achievable_flops_per_s"] = dtype_map(c.matmul_achievable_flops_per_s);
  j["sparse_factor"] = c.sparse_factor;
  j["special_function_rate"] = c.special_function_rate > 0 ? nlohmann::json(c.special_function_rate) : nlohmann::json(nullptr);
  j["write_allocate"] = c.write_allocate;
  std::array<double, kDTypeCount> sparse{};
  // 2:4 structured sparsity exists for tf32, 16-bit, 8-bit and 4-bit formats, not fp64/fp32.
  for (int i = 0; i < kDTypeCount; ++i) {
    const DType d = static_cast<DType>(i);
    const bool sparse_ok = d != DType::fp64 && d != DType::fp32;
    sparse[i] = c.sparse_factor > 1 && sparse_ok ? c.matrix_flops_per_s[i] * c.sparse_factor : 0;
  }
  j["sparse_peak_flops_per_s"] = dtype_map(sparse);
  j["vector_flops_per_s"] = dtype_map(c.vector_flops_per_s);
  j["memory"] = json::array();
  for (const auto& m : c.memory) {
    j["memory"].push_back({{"name", m.name}, {"bandwidth_Bps", m.bandwidth_Bps}, {"capacity_bytes", m.capacity_bytes}});
  }
  j["links"] = json::array();
  for (const auto& l : c.links) {
    j["links"].push_back({{"name", l.name},
                          {"scope", std::string(hw::name(l.scope))},
                          {"bandwidth_Bps", l.chip_bandwidth_Bps()},
                          {"link_bandwidth_Bps", l.bandwidth_Bps},
                          {"count", l.count},
                          {"latency_s", l.latency_s},
                          {"efficiency", l.efficiency > 0 ? nlohmann::json(l.efficiency) : nlohmann::json(nullptr)}});
  }
  std::array<double, kDTypeCount> ridge{};
  for (DType t : kAllDTypes) ridge[index(t)] = c.ridge_flops_per_byte(t);
  j["ridge_flops_per_byte"] = dtype_map(ridge);
  for (DType t : kAllDTypes) sparse[index(t)] = sparse[index(t)] > 0 ? ridge[index(t)] * c.sparse_factor : 0;
  j["sparse_ridge_flops_per_byte"] = dtype_map(sparse);
  j["launch_overhead_s"] = c.launch_overhead_s;
  j["chips_per_node"] = c.chips_per_node;
  j["sms"] = c.sms > 0 ? nlohmann::json(c.sms) : nlohmann::json(nullptr);
  {
    const hw::TopologySpec& t = c.topology;
    j["topology"] = {{"fabric", std::string(hw::name(t.fabric))},
                     {"domain", t.fabric == hw::Fabric::torus ? t.max_slice : t.domain > 0 ? t.domain : c.chips_per_node},
                     {"in_switch_reduction", t.in_switch_reduction},
                     {"reduction_efficiency", t.reduction_efficiency > 0 ? nlohmann::json(t.reduction_efficiency) : nlohmann::json(nullptr)},
                     {"links_per_peer", t.links_per_peer},
                     {"torus_dims", t.torus_dims},
                     {"wrap_multiple", t.wrap_multiple},
                     {"library", std::string(hw::name(t.library))},
                     {"collective_sms", t.collective_sms}};
  }
  j["usd_per_hour"] = c.usd_per_hour > 0 ? nlohmann::json(c.usd_per_hour) : nlohmann::json(nullptr);
  j["efficiency"] = {{"matrix", c.efficiency.matrix},
                     {"vector", c.efficiency.vector},
                     {"memory", c.efficiency.memory},
                     {"link", c.efficiency.link},
                     {"overhead_s", c.efficiency.overhead_s},
                     {"pdl_overlap_s", c.efficiency.pdl_overlap_s}};
  // Per kernel class, the fractions in effect (the class's own or the chip-wide) and the
  // fixed time per kernel. gemm_fp8 only where the chip's fp8 GEMMs run at it (elsewhere gemm's
  // figures price them: hw::fp8_gemm_class).
  for (int k = 1; k < hw::kKernelClassCount; ++k) {
    if (k == static_cast<int>(hw::KernelClass::gemm_fp8) && hw::fp8_gemm_class(c.efficiency) != hw::KernelClass::gemm_fp8) continue;
    const hw::ClassEfficiency ce = hw::class_efficiency(c.efficiency, static_cast<hw::KernelClass>(k));
    auto pick = [](double own, double chip) { return own > 0 ? own : chip; };
    j["efficiency"][std::string(hw::name(static_cast<hw::KernelClass>(k)))] = {
        {"matrix", pick(ce.matrix, c.efficiency.matrix)},
        {"vector", pick(ce.vector, c.efficiency.vector)},
        {"memory", pick(ce.memory, c.efficiency.memory)},
        {"link", pick(ce.link, c.efficiency.link)},
        {"overhead_s", pick(ce.overhead_s, c.efficiency.overhead_s)},
        {"overlap", pick(ce.overlap, 0.5)},
        {"fill_k", ce.fill_k},
        {"k_loop_s", ce.k_loop_s},
        {"overlap_with", hw::overlap_partner(static_cast<hw::KernelClass>(k))}};
  }
  // The gemm class's share of the measured matmul rate (1: all of it).
  const double share = c.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].matmul;
  j["efficiency"]["gemm"]["matmul"] = share > 0 ? share : 1;
  // The attention class's work of a prefill's query tile, in keys (0: its tiles' shape only).
  j["efficiency"]["attention"]["tile_keys"] = c.efficiency.kernel[static_cast<int>(hw::KernelClass::attention)].tile_keys;
  j["sources"] = c.sources;
  j["provenance"] = c.provenance;
  return j;
}

json op_config_json(const analysis::OpConfig& op) {
  using analysis::OpKind;
  json j;
  j["kind"] = std::string(analysis::name(op.kind));
  j["dtype"] = std::string(name(op.dtype));
  j["compute_dtype"] = std::string(name(analysis::effective_compute_dtype(op)));
  switch (op.kind) {
    case OpKind::custom:
      j["flops"] = op.flops;
      j["bytes"] = op.bytes;
      j["unit"] = std::string(hw::name(op.unit));
      break;
    case OpKind::dot: j["n"] = op.n; break;
    case OpKind::matmul:
      j["m"] = op.m;
      j["k"] = op.k;
      j["n"] = op.n;
      j["batch"] = op.batch;
      j["per_sample_weights"] = op.per_sample_weights;
      j["a_dtype"] = std::string(name(op.a_dtype.value_or(op.dtype)));
      j["b_dtype"] = std::string(name(op.b_dtype.value_or(op.dtype)));
      j["out_dtype"] = std::string(name(op.out_dtype.value_or(op.a_dtype.value_or(op.dtype))));
      if (op.tile_m > 0) j["tile"] = {op.tile_m, op.tile_k, op.tile_n};
      if (op.shard != analysis::Shard::none) {
        j["shard"] = op.shard == analysis::Shard::m ? "m" : op.shard == analysis::Shard::n ? "n" : "k";
        j["chips"] = op.chips;
        j["algo"] = std::string(comm::name(op.algo));
      }
      break;
    case OpKind::attention:
      j["batch"] = op.batch;
      j["q_len"] = op.q_len;
      j["kv_len"] = op.kv_len;
      j["heads"] = op.heads;
      j["kv_heads"] = op.kv_heads == 0 ? op.heads : op.kv_heads;
      j["head_dim"] = op.head_dim;
      j["causal"] = op.causal;
      j["impl"] = op.impl == ops::AttentionImpl::flash ? "flash" : "naive";
      j["kv_dtype"] = std::string(name(op.kv_dtype.value_or(op.dtype)));
      break;
    default:
      if (analysis::is_collective(op.kind)) {
        j["bytes"] = op.bytes;
        j["chips"] = op.chips;
        j["algo"] = std::string(comm::name(op.algo));
        break;
      }
      j["tokens"] = op.rows;
      j["hidden"] = op.cols;
      if (op.kind == OpKind::elementwise) {
        j["inputs"] = op.inputs;
        j["outputs"] = op.outputs;
        j["flops_per_element"] = op.flops_per_element;
      }
      if (op.kind == OpKind::rope) j["head_dim"] = op.head_dim;
      break;
  }
  return j;
}

json estimate_json(const analysis::OpConfig& op, const hw::System& sys, const ops::Cost& cost, const ops::Estimate& e,
                   const comm::Priced* collective, const ops::GemmTiling* tiling, const ops::AttentionTiling* attention) {
  const auto& chip = sys.chip;
  json j;
  j["op"] = op_config_json(op);
  j["hw"] = chip.name;
  j["chips"] = sys.chips;
  if (collective != nullptr) {
    // The algorithm priced (auto resolved) and each link's share of the traffic.
    j["algo"] = std::string(comm::name(collective->algo));
    j["algo_requested"] = std::string(comm::name(op.algo));
    j["collective"] = {{"algo", std::string(comm::name(collective->algo))},
                       {"protocol", std::string(comm::name(collective->proto))},
                       {"scale_up_bytes", collective->up_bytes},
                       {"network_bytes", collective->net_bytes},
                       {"scale_up_lanes", collective->lanes},
                       {"latency_s", collective->latency_s},
                       {"chunk_bytes", collective->chunk_bytes},
                       {"chunk_wait_s", collective->chunk_wait_s},
                       {"in_switch_reduction", cost.in_switch}};
  }
  j["flops"] = e.flops;
  j["bytes"] = e.main_bytes;
  j["stored_bytes"] = cost.main_store_bytes;
  j["write_allocate_bytes"] = e.write_allocate_bytes;
  json by_unit = json::object();
  for (int u = 0; u < hw::kUnitCount; ++u) {
    std::array<double, kDTypeCount> flops{};
    for (DType t : kAllDTypes) flops[index(t)] = cost.flops(static_cast<hw::Unit>(u), t);
    by_unit[std::string(hw::name(static_cast<hw::Unit>(u)))] = dtype_map(flops);
  }
  j["flops_by_unit"] = by_unit;
  j["memory"] = json::array();
  for (int l = 0; l < hw::kMaxMemoryLevels; ++l) {
    const double b = ops::level_bytes(cost, e, l);
    if (b <= 0) continue;
    int li = std::min<int>(l, static_cast<int>(chip.memory.size()) - 1);
    j["memory"].push_back({{"name", chip.memory[li].name}, {"bytes", b}, {"t_s", e.t_memory_level_s[l]}});
  }
  j["comm"] = json::array();
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    if (cost.link_bytes[l] <= 0 && cost.link_steps[l] <= 0) continue;
    std::string lname = l < static_cast<int>(chip.links.size()) ? chip.links[l].name : "missing";
    j["comm"].push_back({{"link", lname}, {"bytes", cost.link_bytes[l]}, {"steps", cost.link_steps[l]}, {"t_s", number_or_null(e.t_link_s[l])}});
  }
  j["launches"] = cost.launches;
  j["intensity_flops_per_byte"] = e.main_bytes > 0 ? json(e.intensity_flops_per_byte) : json(nullptr);
  j["ridge_flops_per_byte"] = e.flops > 0 ? json(e.ridge_flops_per_byte) : json(nullptr);
  j["compute_unit"] = std::string(hw::name(e.compute_unit));
  j["compute_dtype"] = std::string(name(e.compute_dtype));
  j["peak_flops_per_s"] = e.peak_flops_per_s;
  j["t_matrix_s"] = number_or_null(e.t_matrix_s);
  j["t_matrix_pad_s"] = number_or_null(e.t_matrix_pad_s);
  if (tiling != nullptr && tiling->tiles > 0) {
    j["gemm_tiling"] = {{"tile_m", tiling->tile_m}, {"tile_n", tiling->tile_n}, {"tiles", tiling->tiles},
                        {"split_k", tiling->split_k}, {"waves", tiling->waves}, {"useful", tiling->useful},
                        {"multiprocessors", sys.chip.gemm_sms()},
                        {"split", sys.chip.gemm_split == hw::GemmSplit::stream_k ? "stream-k" : "split-k"}};
  }
  if (attention != nullptr && attention->tiles > 0) {
    j["attention_tiling"] = {{"query_tile", ops::kQueryTile}, {"key_tile", ops::kKeyTile}, {"tiles", attention->tiles},
                             {"tile_work_keys", attention->tile_keys}, {"useful", attention->useful}};
  }
  j["t_vector_s"] = number_or_null(e.t_vector_s);
  j["t_math_s"] = number_or_null(e.t_math_s);
  j["t_memory_s"] = e.t_memory_s;
  j["memory_level"] = chip.memory.empty() ? json(nullptr) : json(chip.memory[e.memory_level].name);
  j["t_comm_s"] = number_or_null(e.t_comm_s);
  j["link"] = (e.link >= 0 && e.link < static_cast<int>(chip.links.size())) ? json(chip.links[e.link].name) : json(nullptr);
  j["t_launch_s"] = e.t_launch_s;
  j["t_host_s"] = e.t_host_s;
  j["host_longer"] = e.host_longer;
  j["t_lower_s"] = number_or_null(e.t_lower_s);
  j["t_upper_s"] = number_or_null(e.t_upper_s);
  j["t_sum_at_peak_s"] = number_or_null(e.t_sum_at_peak_s);
  j["t_realistic_s"] = number_or_null(e.t_realistic_s);
  j["bound"] = std::string(name(e.bound));
  j["attained_flops_per_s"] = e.attained_flops_per_s;
  j["attained_total_flops_per_s"] = e.attained_total_flops_per_s;
  j["fraction_of_peak"] = e.fraction_of_peak;
  return j;
}

json threshold_json(const analysis::OpConfig& op, const hw::System& sys, analysis::SolveVar var,
                    const analysis::ThresholdResult& r) {
  std::string v(analysis::name(var));
  for (char& c : v) {
    if (c == '-') c = '_';
  }
  json j;
  j["op"] = op_config_json(op);
  // The solved dimension has no given value.
  if (var == analysis::SolveVar::seq) {
    j["op"].erase("q_len");
    j["op"].erase("kv_len");
  } else if (var == analysis::SolveVar::tokens || var == analysis::SolveVar::hidden) {
    j["op"].erase(var == analysis::SolveVar::tokens ? "tokens" : "hidden");
  } else {
    j["op"].erase(v);
  }
  j["hw"] = sys.chip.name;
  j["chips"] = sys.chips;
  j["solve"] = v;
  j["critical_" + v] = r.found ? json(r.critical) : json(nullptr);
  j["critical_" + v + "_min_int"] = r.found ? json(r.critical_int) : json(nullptr);
  j["compute_bound_always"] = r.always;
  j["bound_below"] = std::string(ops::name(r.bound_below));
  j["searched_max"] = r.searched_max;
  if (!r.found) j["intensity_at_searched_max_flops_per_byte"] = r.asymptotic_intensity;
  j["ridge_flops_per_byte"] = r.ridge_flops_per_byte;
  if (!r.found) j["bound_at_searched_max"] = std::string(ops::name(r.bound_at_max));
  return j;
}

}  // namespace ridgeline::report
