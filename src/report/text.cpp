#include "ridgeline/report/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/curves.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

namespace {
std::string time_or_na(double s) { return std::isfinite(s) ? format_quantity(s, Quantity::time) : "n/a"; }
std::string rate(double v) { return format_quantity(v, Quantity::flop_rate); }
std::string bw(double v) { return format_quantity(v, Quantity::bandwidth); }
std::string dt(const std::optional<DType>& d, DType fallback) { return std::string(d.has_value() ? name(*d) : name(fallback)); }
}  // namespace

std::string format_usd(double v) {
  if (v >= 1e6) return fmt::format("{:.2f} million", v / 1e6);
  return v >= 100 ? fmt::format("{:.0f}", v) : v >= 1 ? fmt::format("{:.2f}", v) : fmt::format("{:.3g}", v);
}

std::string shell_word(std::string_view word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || std::string_view("_-+=.,:/@%").find(c) != std::string_view::npos;
  });
  if (safe) return std::string(word);
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string catalog_text(const std::vector<io::CatalogEntry>& entries) {
  std::string out = fmt::format("{:<12} {:<8} {:<5} {}\n", "name", "vendor", "kind", "chip");
  for (const auto& e : entries) out += fmt::format("{:<12} {:<8} {:<5} {}\n", e.name, e.vendor, e.kind, e.display_name);
  return out;
}

std::string chip_text(const hw::ChipSpec& c) {
  std::string out = fmt::format("{} ({}, {} {}{})\n", c.display_name, c.name, c.vendor, c.kind, c.arch.empty() ? "" : ", " + c.arch);
  out += "\nmatrix unit, dense peak            ridge vs " + (c.memory.empty() ? std::string("memory") : c.memory[0].name) + "\n";
  for (DType d : kAllDTypes) {
    double p = c.matrix_flops_per_s[index(d)];
    if (p <= 0) continue;
    out += fmt::format("  {:<9} {:>18}   {:>8.1f} FLOPs/byte", name(d), rate(p), c.ridge_flops_per_byte(d));
    if (c.sparse_factor > 1 && d != DType::fp64 && d != DType::fp32) {
      out += fmt::format("   (2:4 sparse: {}, ridge {:.1f})", rate(p * c.sparse_factor), c.ridge_flops_per_byte(d) * c.sparse_factor);
    }
    if (const double a = c.matmul_achievable_flops_per_s[index(d)]; a > 0) {
      out += fmt::format("   matmul measured {} ({:.3f})", rate(a), a / p);
    }
    out += "\n";
  }
  out += "vector unit\n";
  for (DType d : kAllDTypes) {
    double p = c.vector_flops_per_s[index(d)];
    if (p > 0) out += fmt::format("  {:<9} {:>18}\n", name(d), rate(p));
  }
  if (c.special_function_rate > 0) {
    const double v = c.vector_flops_per_s[index(DType::fp32)];
    out += fmt::format("  {:<9} {:>18}", "exp", format_si(c.special_function_rate) + " exp/s");
    if (v > 0) out += fmt::format("   (special-function units: an exp costs {:.1f} fp32 FLOPs)", v / c.special_function_rate);
    out += "\n";
  }
  out += "memory (main first)\n";
  for (const auto& m : c.memory) out += fmt::format("  {:<9} {:>14}  {:>10}\n", m.name, bw(m.bandwidth_Bps), size(m.capacity_bytes));
  if (c.write_allocate) out += "  stores allocate: a plain store's line is read first past L1 (write_allocate)\n";
  if (!c.links.empty()) out += "links (per direction, per chip)\n";
  for (const auto& l : c.links) {
    out += fmt::format("  {:<16} {:>12}  = {} x {}, latency {}, scope {}", l.name, bw(l.chip_bandwidth_Bps()), l.count,
                       bw(l.bandwidth_Bps), time_or_na(l.latency_s), hw::name(l.scope));
    if (l.efficiency > 0) out += fmt::format(", collectives reach {:.0f}%", 100 * l.efficiency);
    out += "\n";
  }
  out += fmt::format("kernel launch   {}\nchips per node  {}\n", time_or_na(c.launch_overhead_s), c.chips_per_node);
  if (c.sms > 0) {
    out += fmt::format("multiprocessors {} (GEMM tiles run in waves over them; fewer tiles {})\n", c.sms,
                       c.gemm_split == hw::GemmSplit::stream_k ? "share their K loops over all of them, as does a last wave under half full with the one before it: stream-K" : "split their K loops whole ways: split-K");
  }
  {
    const hw::TopologySpec& tp = c.topology;
    const int domain = tp.domain > 0 ? tp.domain : c.chips_per_node;
    switch (tp.fabric) {
      case hw::Fabric::switched:
        if (domain > 1) {
          out += fmt::format("topology        switched domain of {} chips{}\n", domain,
                             tp.in_switch_reduction ? ", the switches reduce (NVLS)" : "");
        }
        break;
      case hw::Fabric::mesh: out += fmt::format("topology        full mesh of {} chips\n", domain); break;
      case hw::Fabric::torus:
        out += fmt::format("topology        {}-D torus, slices {}, {}\n", tp.torus_dims,
                           tp.max_slice > 0 ? fmt::format("up to {} chips", tp.max_slice) : std::string("of any size"),
                           tp.wrap_multiple > 0 ? fmt::format("wraparound on axes of a multiple of {}", tp.wrap_multiple)
                                                : std::string("no wraparound"));
        break;
    }
    if (tp.library == hw::CollectiveLibrary::nccl) {
      out += "collectives     NCCL's protocols: LL, LL128 and Simple priced by size, NVLS where the switches reduce\n";
    }
    if (tp.collective_sms > 0) {
      out += fmt::format("                a collective holds {} of the {} multiprocessors while it runs beside compute\n", tp.collective_sms,
                         c.sms);
    }
  }
  if (c.usd_per_hour > 0) out += fmt::format("price           ${:.4g} per chip-hour\n", c.usd_per_hour);
  out += fmt::format("efficiency      matrix {:.2f}, vector {:.2f}, memory {:.2f}, link {:.2f} (realistic figures only)\n",
                     c.efficiency.matrix, c.efficiency.vector, c.efficiency.memory, c.efficiency.link);
  if (c.efficiency.overhead_s > 0) {
    out += fmt::format("kernel boundary {} per kernel on the device, inside a CUDA graph too (realistic figures only)\n",
                       time_or_na(c.efficiency.overhead_s));
  }
  if (c.efficiency.pdl_overlap_s > 0) {
    out += fmt::format("PDL overlap     {} of a boundary hidden where an engine launches a kernel with programmatic dependent launch\n",
                       time_or_na(c.efficiency.pdl_hidden_s()));
  }
  for (int k = 1; k < hw::kKernelClassCount; ++k) {
    const hw::ClassEfficiency& ce = c.efficiency.kernel[k];
    if (ce == hw::ClassEfficiency{}) continue;
    const auto cls = static_cast<hw::KernelClass>(k);
    out += fmt::format("  {:<25} {}\n", hw::name(cls), class_figures(ce, cls, c.efficiency));
  }
  if (!c.sources.empty()) out += "sources\n";
  for (const auto& s : c.sources) out += "  - " + s + "\n";
  return out;
}

std::string op_title(const analysis::OpConfig& op) {
  using analysis::OpKind;
  std::string k(analysis::name(op.kind));
  switch (op.kind) {
    case OpKind::custom: return fmt::format("custom: {:.4g} FLOPs ({} unit) and {:.4g} bytes", op.flops, hw::name(op.unit), op.bytes);
    case OpKind::dot: return fmt::format("dot {}[{}]·{}[{}]", name(op.dtype), op.n, name(op.dtype), op.n);
    case OpKind::matmul: {
      std::string a = dt(op.a_dtype, op.dtype), b = dt(op.b_dtype, op.dtype), o = dt(op.out_dtype, op.a_dtype.value_or(op.dtype));
      std::string s;
      if (op.batch > 1 && op.per_sample_weights) {
        s = fmt::format("matmul {}[{},{},{}]·{}[{},{},{}] -> {}[{},{},{}]", a, op.batch, op.m, op.k, b, op.batch, op.k, op.n, o, op.batch, op.m, op.n);
      } else if (op.batch > 1) {
        s = fmt::format("matmul {}[{},{},{}]·{}[{},{}] -> {}[{},{},{}]", a, op.batch, op.m, op.k, b, op.k, op.n, o, op.batch, op.m, op.n);
      } else {
        s = fmt::format("matmul {}[{},{}]·{}[{},{}] -> {}[{},{}]", a, op.m, op.k, b, op.k, op.n, o, op.m, op.n);
      }
      s += fmt::format(", {} compute", name(analysis::effective_compute_dtype(op)));
      if (op.shard != analysis::Shard::none) {
        s += fmt::format(", split on {} over {} chips", op.shard == analysis::Shard::m ? "m" : op.shard == analysis::Shard::n ? "n" : "k",
                         op.chips);
      }
      return s;
    }
    case OpKind::attention:
      return fmt::format("{} attention{}: batch {}, {} queries x {} keys, {} heads ({} kv), head dim {}, {}",
                         op.impl == ops::AttentionImpl::flash ? "flash" : "naive", op.causal ? " (causal)" : "", op.batch,
                         op.q_len, op.kv_len, op.heads, op.kv_heads == 0 ? op.heads : op.kv_heads, op.head_dim, name(op.dtype));
    default:
      if (analysis::is_collective(op.kind)) {
        return fmt::format("{} of {} over {} chips ({})", k, size(op.bytes), op.chips, comm::name(op.algo));
      }
      return fmt::format("{} {}[{},{}]", k, name(op.dtype), op.rows, op.cols);
  }
}

// NCCL's spelling of its protocols.
std::string_view proto_label(comm::Proto p) noexcept {
  switch (p) {
    case comm::Proto::simple: return "Simple";
    case comm::Proto::ll128: return "LL128";
    case comm::Proto::ll: return "LL";
  }
  return "Simple";
}

std::string estimate_text(const analysis::OpConfig& op, const hw::System& sys, const ops::Cost& cost, const ops::Estimate& e,
                          const comm::Priced* collective, const ops::GemmTiling* tiling, const ops::AttentionTiling* attention) {
  const auto& c = sys.chip;
  std::string out = fmt::format("{}\non {} ({})\n", op_title(op), c.display_name, c.name);
  if (collective != nullptr) {
    const int up = c.link_index(hw::LinkScope::node), net = c.link_index(hw::LinkScope::network);
    const bool library = comm::library_prices(c.topology, collective->algo);
    out += fmt::format("algorithm {}{}{}", comm::name(collective->algo),
                       library ? fmt::format(", protocol {}{}, {} fixed{}", proto_label(collective->proto),
                                             collective->chunk_bytes > 0 ? fmt::format(" in {:g} KiB chunks", collective->chunk_bytes / 1024) : std::string(),
                                             time_or_na(collective->latency_s),
                                             collective->chunk_wait_s > 0 ? fmt::format(" + {} chunk waits", time_or_na(collective->chunk_wait_s)) : std::string())
                               : std::string(),
                       op.algo == comm::Algo::automatic ? " (auto: the fastest for this size on this topology)" : "");
    if (collective->net_bytes > 0 && net >= 0) {
      out += fmt::format("; per chip {} over {} and {} over {}", size(collective->up_bytes),
                         up >= 0 ? c.links[static_cast<std::size_t>(up)].name : "?", size(collective->net_bytes),
                         c.links[static_cast<std::size_t>(net)].name);
    }
    out += "\n";
  }
  out += "\n";
  if (e.flops > 0) {
    out += fmt::format("  FLOPs       {:>14}  (mostly {} unit, {})\n", format_si(e.flops), hw::name(e.compute_unit), name(e.compute_dtype));
  } else {
    out += fmt::format("  FLOPs       {:>14}\n", "0");
  }
  for (int l = 0; l < hw::kMaxMemoryLevels; ++l) {
    const double b = ops::level_bytes(cost, e, l);
    if (b <= 0) continue;
    int li = std::min<int>(l, static_cast<int>(c.memory.size()) - 1);
    out += fmt::format("  bytes       {:>14}  ({}", size(b), c.memory[li].name);
    if (l == 0 && e.write_allocate_bytes > 0) {
      out += fmt::format("; {} of them lines read before stores, as the chip's stores allocate", size(e.write_allocate_bytes));
    }
    out += ")\n";
  }
  for (int l = 0; l < hw::kMaxLinks; ++l) {
    if (cost.link_bytes[l] <= 0) continue;
    out += fmt::format("  on the wire {:>14}  per chip per direction over {}, {:.4g} steps\n", size(cost.link_bytes[l]),
                       l < static_cast<int>(c.links.size()) ? c.links[l].name : "?", cost.link_steps[l]);
  }
  if (e.flops > 0 && e.main_bytes > 0) {
    out += fmt::format("  intensity   {:>14.4g}  FLOPs/byte (ridge {:.4g} for {} {})\n", e.intensity_flops_per_byte,
                       e.ridge_flops_per_byte, hw::name(e.compute_unit), name(e.compute_dtype));
  }
  out += "\n";
  out += fmt::format("  t_math      {:>14}  (matrix {}, vector {})\n", time_or_na(e.t_math_s), time_or_na(e.t_matrix_s), time_or_na(e.t_vector_s));
  if (tiling != nullptr && tiling->tiles > 0) {
    const bool shared = tiling->waves != std::floor(tiling->waves);
    out += fmt::format("  tiles       {:>14}  ({:g}x{:g}{} over {} multiprocessors in {} wave{}{}: {:.1f}% of the matrix work useful; the rest, {} at the peak, is in realistic and upper)\n",
                       format_si(tiling->tiles), tiling->tile_m, tiling->tile_n,
                       tiling->split_k == 1 ? std::string()
                       : c.gemm_split == hw::GemmSplit::stream_k ? fmt::format(", each K loop shared by {:.3g} (stream-K)", tiling->split_k)
                                                                 : fmt::format(", K split {:g} ways", tiling->split_k),
                       c.gemm_sms(),
                       shared ? fmt::format("{:.3g}", tiling->waves) : fmt::format("{:g}", tiling->waves), tiling->waves == 1 ? "" : "s", shared ? ", the last under half full and shared out with the one before it (stream-K)" : "",
                       100 * tiling->useful, time_or_na(e.t_matrix_pad_s));
  }
  if (attention != nullptr && attention->tiles > 0) {
    out += fmt::format("  tiles       {:>14}  ({:g} queries of a head x {:g} keys, computed whole{}: {:.1f}% of the matrix work useful; the rest, {} at the peak, is in realistic and upper)\n",
                       format_si(attention->tiles), ops::kQueryTile, ops::kKeyTile,
                       attention->tile_keys > 0 ? fmt::format(", and {:g} keys' work more each", attention->tile_keys) : std::string(),
                       100 * attention->useful, time_or_na(e.t_matrix_pad_s));
  }
  out += fmt::format("  t_memory    {:>14}{}\n", time_or_na(e.t_memory_s), c.memory.empty() ? "" : "  (" + c.memory[e.memory_level].name + ")");
  if (e.link >= 0) out += fmt::format("  t_comm      {:>14}  ({})\n", time_or_na(e.t_comm_s), e.link < static_cast<int>(c.links.size()) ? c.links[e.link].name : "?");
  out += fmt::format("  t_launch    {:>14}  ({} launches)\n", time_or_na(e.t_launch_s), cost.launches);
  if (e.t_host_s > 0) out += fmt::format("  t_host      {:>14}  (a call waited on, --host-overhead: in every bound)\n", time_or_na(e.t_host_s));
  out += fmt::format("  lower bound {:>14}  (perfect overlap)\n", time_or_na(e.t_lower_s));
  out += fmt::format("  realistic   {:>14}  (overlap, each part over its efficiency: matrix {:.2f}, vector {:.2f}, memory {:.2f}, link {:.2f}{}{})\n",
                     time_or_na(e.t_realistic_s), e.applied.matrix, e.applied.vector, e.applied.memory, e.applied.link,
                     e.applied.overlap > 0.5 ? fmt::format("; at least {:.2f} of matrix + {}", e.applied.overlap, hw::overlap_partner(e.applied.overlap_vector)) : std::string(),
                     e.applied.overhead_s > 0 ? fmt::format("; + {} kernel boundary{}{}", time_or_na(e.applied.overhead_s), cost.launches > 1 ? fmt::format(" ({:g} kernels)", cost.launches) : "",
                                                                 cost.loop_k > 0 && e.applied.k_loop_s > 0 ? fmt::format(" with its K loop ({:g} columns)", cost.loop_k) : "") : std::string());
  out += fmt::format("  upper bound {:>14}  (no overlap, at those efficiencies; {} at peak)\n", time_or_na(e.t_upper_s), time_or_na(e.t_sum_at_peak_s));
  out += e.host_longer ? fmt::format("\n  bound: the host's time per call ({} on the device alone)", name(e.bound))
                       : fmt::format("\n  bound: {}", name(e.bound));
  if (e.flops > 0) {
    out += fmt::format(", attains {} = {:.1f}% of the {} {} peak", rate(e.attained_flops_per_s), 100 * e.fraction_of_peak,
                       hw::name(e.compute_unit), name(e.compute_dtype));
  }
  out += "\n";
  return out;
}

std::string threshold_text(const analysis::OpConfig& op, const hw::System& sys, analysis::SolveVar var,
                           const analysis::ThresholdResult& r) {
  std::string v(analysis::name(var));
  std::string out = fmt::format("{}\non {} ({})\n\n", op_title(op), sys.chip.display_name, sys.chip.name);
  if (r.always) {
    out += fmt::format("  compute-bound already at {} = {}\n", v, r.critical_int);
  } else if (r.found) {
    out += fmt::format("  compute-bound for {} >= {} (crossing at {} = {:.2f}; {}-bound below)\n", v, r.critical_int, v,
                       r.critical, ops::name(r.bound_below));
  } else {
    out += fmt::format("  never compute-bound: still {}-bound at {} = {} (intensity {:.4g} FLOPs/byte vs ridge {:.4g})\n",
                       ops::name(r.bound_at_max), v, r.searched_max, r.asymptotic_intensity, r.ridge_flops_per_byte);
  }
  return out;
}

}  // namespace ridgeline::report
