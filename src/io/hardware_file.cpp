#include "ridgeline/io/hardware_file.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <sstream>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/text.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/embedded.hpp"

namespace ridgeline::io {

namespace {

// 2 adds `topology` and a link's `efficiency`; version 1 files are still read (their
// topology is the default: one switched domain of chips_per_node).
constexpr int kSchemaVersion = 2;
constexpr size_t kMaxChipFileBytes = 1 << 20;
constexpr int kMaxNesting = 16;

// yaml-cpp recurses per nesting level; refuse pathological nesting before it sees the text.
void check_nesting(std::string_view text, std::string_view source) {
  int depth = 0;
  size_t indent_levels = 0;
  bool line_start = true;
  size_t indent = 0;
  for (char c : text) {
    if (c == '\n') {
      line_start = true;
      indent = 0;
      continue;
    }
    if (line_start) {
      if (c == ' ' || c == '-') {
        ++indent;
        continue;
      }
      line_start = false;
      indent_levels = std::max(indent_levels, indent);
    }
    if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) {
        throw InputError(fmt::format("{}: nesting deeper than {} levels: not a hardware file", source, kMaxNesting));
      }
    } else if (c == ']' || c == '}') {
      depth = std::max(0, depth - 1);
    }
  }
  if (indent_levels > 2 * kMaxNesting + 16) {
    throw InputError(fmt::format("{}: indentation deeper than {} columns: not a hardware file", source,
                                 2 * kMaxNesting + 16));
  }
}

// Aliases make a small file a large document (20,000 aliases of a 60,000-character string:
// 1.2 GB): the document as expanded must stay within the file limit too, and within
// 100,000 nodes and the nesting limit (an alias of an enclosing node would never end).
void check_expanded_size(const YAML::Node& root, std::string_view source) {
  std::size_t bytes = 0, nodes = 0;
  auto fail = [&] {
    throw InputError(fmt::format("{}: its aliases expand it beyond {} bytes or 100000 nodes: not a hardware file", source, kMaxChipFileBytes));
  };
  auto walk = [&](auto&& self, const YAML::Node& n, int depth) -> void {
    if (++nodes > 100000 || depth > 2 * kMaxNesting) fail();
    if (n.IsScalar()) {
      bytes += n.Scalar().size();
      if (bytes > kMaxChipFileBytes) fail();
    } else if (n.IsSequence()) {
      for (const YAML::Node& c : n) self(self, c, depth + 1);
    } else if (n.IsMap()) {
      for (const auto& kv : n) {
        self(self, kv.first, depth + 1);
        self(self, kv.second, depth + 1);
      }
    }
  };
  walk(walk, root, 0);
}

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw InputError(fmt::format("{}: {}: {}", source_, path, why));
  }

  // Checks that `node` is a map whose keys are all in `allowed`, without duplicates.
  void check_map(const YAML::Node& node, const std::string& path, std::initializer_list<std::string_view> allowed) {
    check_map(node, path, std::span<const std::string_view>(allowed.begin(), allowed.size()));
  }
  void check_map(const YAML::Node& node, const std::string& path, std::span<const std::string_view> allowed) {
    if (!node.IsMap()) fail(path.empty() ? "(top level)" : path, "expected a mapping of keys to values");
    std::set<std::string> seen;
    for (const auto& kv : node) {
      std::string key = scalar(kv.first, path + "(key)");
      std::string full = path.empty() ? key : path + "." + key;
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(full, fmt::format("unknown key: expected one of {}", list));
      }
      if (!seen.insert(key).second) fail(full, "duplicate key");
    }
  }

  std::string scalar(const YAML::Node& node, const std::string& path) const {
    if (!node.IsDefined() || node.IsNull()) fail(path, "missing value");
    if (!node.IsScalar()) fail(path, "expected a single value, not a list or mapping");
    return node.Scalar();
  }

  YAML::Node required(const YAML::Node& map, std::string_view key, const std::string& path) const {
    YAML::Node n = map[std::string(key)];
    std::string full = path.empty() ? std::string(key) : path + "." + std::string(key);
    if (!n.IsDefined() || n.IsNull()) fail(full, "required key is missing");
    return n;
  }

  double quantity(const YAML::Node& node, Quantity kind, const std::string& path, bool positive) const {
    std::string text = scalar(node, path);
    double v = parse_quantity(text, kind, fmt::format("{}: {}", source_, path), false);
    if (positive && !(v > 0)) fail(path, fmt::format("'{}' must be greater than zero", text));
    return v;
  }

  double fraction(const YAML::Node& node, const std::string& path) const {
    std::string text = scalar(node, path);
    double v = parse_number(text, fmt::format("{}: {}", source_, path));
    if (!(v > 0 && v <= 1)) fail(path, fmt::format("'{}' must be a fraction in (0, 1]", text));
    return v;
  }

  double number(const YAML::Node& node, const std::string& path) const {
    return parse_number(scalar(node, path), fmt::format("{}: {}", source_, path));
  }

  long long integer(const YAML::Node& node, const std::string& path) const {
    return parse_positive_int(scalar(node, path), fmt::format("{}: {}", source_, path));
  }

 private:
  std::string source_;
};

void read_peaks(Reader& r, const YAML::Node& node, const std::string& path, std::array<double, kDTypeCount>& out) {
  if (!node.IsMap()) r.fail(path, "expected a mapping of dtype to rate, e.g. 'bf16: 989.4 TFLOPS'");
  std::set<std::string> seen;
  for (const auto& kv : node) {
    std::string key = r.scalar(kv.first, path + "(key)");
    std::string full = path + "." + key;
    auto t = parse_dtype(key);
    if (!t || key == "fp8") r.fail(full, fmt::format("unknown dtype: expected one of {}", dtype_names()));
    if (!seen.insert(key).second) r.fail(full, "duplicate key");
    out[index(*t)] = r.quantity(kv.second, Quantity::flop_rate, full, true);
  }
}

// `topology: {fabric: switched|mesh|torus, domain: N, in_switch_reduction: bool,
// reduction_efficiency: F, links_per_peer: N, torus_dims: 2|3, max_slice: N, wrap_multiple: N,
// library: nccl|none, collective_sms: N}`.
void read_topology(Reader& r, const YAML::Node& node, hw::ChipSpec& c) {
  if (!node.IsMap()) r.fail("topology", "expected a mapping");
  r.check_map(node, "topology", {"fabric", "domain", "in_switch_reduction", "reduction_efficiency", "links_per_peer",
                                 "torus_dims", "max_slice", "wrap_multiple", "library", "collective_sms"});
  hw::TopologySpec& t = c.topology;
  if (node["library"]) {
    const std::string lib = r.scalar(node["library"], "topology.library");
    if (lib == "nccl") t.library = hw::CollectiveLibrary::nccl;
    else if (lib != "none") r.fail("topology.library", fmt::format("'{}': expected nccl or none", lib));
  }
  const std::string fabric = r.scalar(r.required(node, "fabric", "topology"), "topology.fabric");
  if (fabric == "switched") t.fabric = hw::Fabric::switched;
  else if (fabric == "mesh") t.fabric = hw::Fabric::mesh;
  else if (fabric == "torus") t.fabric = hw::Fabric::torus;
  else r.fail("topology.fabric", fmt::format("'{}': expected switched, mesh or torus", fabric));
  auto count = [&](const char* key, long long hi) {
    const std::string path = std::string("topology.") + key;
    const long long n = r.integer(node[key], path);
    if (n > hi) r.fail(path, fmt::format("{}: expected at most {}", n, hi));
    return static_cast<int>(n);
  };
  if (node["domain"]) t.domain = count("domain", 1 << 20);
  if (node["links_per_peer"]) t.links_per_peer = count("links_per_peer", 1024);
  if (node["max_slice"]) t.max_slice = count("max_slice", 1 << 20);
  if (node["wrap_multiple"]) t.wrap_multiple = count("wrap_multiple", 1 << 20);
  if (node["collective_sms"]) t.collective_sms = count("collective_sms", 1 << 16);
  if (node["torus_dims"]) {
    t.torus_dims = count("torus_dims", 3);
    if (t.torus_dims < 2) r.fail("topology.torus_dims", fmt::format("{}: expected 2 or 3", t.torus_dims));
  }
  if (node["in_switch_reduction"]) {
    const std::string v = r.scalar(node["in_switch_reduction"], "topology.in_switch_reduction");
    if (v != "true" && v != "false") r.fail("topology.in_switch_reduction", fmt::format("'{}' must be true or false", v));
    t.in_switch_reduction = v == "true";
  }
  if (node["reduction_efficiency"]) t.reduction_efficiency = r.fraction(node["reduction_efficiency"], "topology.reduction_efficiency");
  if (t.fabric == hw::Fabric::torus && t.torus_dims == 0) r.fail("topology.torus_dims", "a torus needs torus_dims: 2 or 3");
  if (t.fabric != hw::Fabric::torus && (node["torus_dims"] || node["max_slice"] || node["wrap_multiple"])) {
    r.fail("topology", fmt::format("torus_dims, max_slice and wrap_multiple describe a torus, not a {} fabric", fabric));
  }
  if (t.in_switch_reduction && t.fabric != hw::Fabric::switched) {
    r.fail("topology.in_switch_reduction", "only switches reduce: expected fabric: switched");
  }
}

// `kernel_curves: [{class, kernel, source, timing: graph|kernel, points: [{op: ..., <its
// shape>, time}]}]` (docs/hardware.md#kernel-curves).
constexpr std::size_t kMaxCurves = 64, kMaxCurvePoints = 256;

hw::CurvePoint read_curve_point(Reader& r, const YAML::Node& node, const std::string& path) {
  hw::CurvePoint p;
  if (!node.IsMap()) r.fail(path, "expected a mapping such as {op: matmul, m: 1, n: 4096, k: 4096, time: 12 us}");
  const std::string op = r.scalar(r.required(node, "op", path), path + ".op");
  if (op == "matmul") {
    p.op = hw::CurveOp::matmul;
    r.check_map(node, path, {"op", "groups", "m", "n", "k", "dtype", "time"});
  } else if (op == "decode_attention") {
    p.op = hw::CurveOp::decode_attention;
    r.check_map(node, path, {"op", "batch", "kv_len", "heads", "kv_heads", "head_dim", "v_head_dim", "latent", "dtype", "time"});
  } else if (op == "rmsnorm") {
    p.op = hw::CurveOp::rmsnorm;
    r.check_map(node, path, {"op", "tokens", "hidden", "residual", "dtype", "out_dtype", "time"});
  } else if (op == "elementwise") {
    p.op = hw::CurveOp::elementwise;
    r.check_map(node, path, {"op", "bytes", "time"});
  } else if (op == "allreduce") {
    p.op = hw::CurveOp::allreduce;
    r.check_map(node, path, {"op", "bytes", "chips", "time"});
  } else if (op == "alltoall") {
    p.op = hw::CurveOp::alltoall;
    r.check_map(node, path, {"op", "bytes", "chips", "time"});
  } else if (op == "moe") {
    p.op = hw::CurveOp::moe;
    r.check_map(node, path, {"op", "tokens", "hidden", "intermediate", "experts", "topk", "tile", "dtype", "time"});
  } else if (op == "group_quant") {
    p.op = hw::CurveOp::group_quant;
    r.check_map(node, path, {"op", "tokens", "hidden", "copy", "dtype", "out_dtype", "time"});
  } else if (op == "attention") {
    p.op = hw::CurveOp::attention;
    r.check_map(node, path, {"op", "batch", "seq_len", "heads", "kv_heads", "head_dim", "v_head_dim", "causal", "dtype", "time"});
  } else if (op == "attention_combine") {
    p.op = hw::CurveOp::attention_combine;
    r.check_map(node, path, {"op", "batch", "splits", "heads", "v_head_dim", "dtype", "time"});
  } else {
    r.fail(path + ".op", fmt::format("'{}': expected matmul, decode_attention, rmsnorm, elementwise, allreduce, alltoall, moe, attention, "
                                     "group_quant or attention_combine", op));
  }
  // Every shape key the op lists is required but the optional ones (v_head_dim, latent,
  // causal, residual, the dtypes; attention_combine's v_head_dim is required).
  auto dim = [&](const char* key, double& out, long long hi) {
    const std::string full = path + "." + key;
    const long long v = r.integer(r.required(node, key, path), full);
    if (v > hi) r.fail(full, fmt::format("{}: expected at most {}", v, hi));
    out = static_cast<double>(v);
  };
  auto flag = [&](const char* key, bool& out) {
    if (!node[key]) return;
    const std::string v = r.scalar(node[key], path + "." + key);
    if (v != "true" && v != "false") r.fail(path + "." + key, fmt::format("'{}' must be true or false", v));
    out = v == "true";
  };
  auto dtype = [&](const char* key, DType& out) {
    if (!node[key]) return;
    const std::string full = path + "." + key;
    const std::string v = r.scalar(node[key], full);
    auto t = parse_dtype(v);
    if (!t || v == "fp8") r.fail(full, fmt::format("unknown dtype '{}': expected one of {}", v, dtype_names()));
    out = *t;
  };
  constexpr long long kDim = 1LL << 24, kRows = 1LL << 30;
  switch (p.op) {
    case hw::CurveOp::matmul:
      dim("m", p.m, kRows), dim("n", p.n, kDim), dim("k", p.k, kDim);
      if (node["groups"]) dim("groups", p.groups, 1 << 16);
      break;
    case hw::CurveOp::decode_attention:
    case hw::CurveOp::attention:
      dim("batch", p.batch, kDim), dim(p.op == hw::CurveOp::attention ? "seq_len" : "kv_len", p.kv_len, kDim);
      dim("heads", p.heads, 1 << 16), dim("kv_heads", p.kv_heads, 1 << 16), dim("head_dim", p.head_dim, 1 << 16);
      if (node["v_head_dim"]) dim("v_head_dim", p.v_head_dim, 1 << 16);
      flag("latent", p.latent);
      flag("causal", p.causal);
      if (p.heads < p.kv_heads || static_cast<long long>(p.heads) % static_cast<long long>(p.kv_heads) != 0) {
        r.fail(path + ".kv_heads", fmt::format("{} must divide heads ({})", p.kv_heads, p.heads));
      }
      break;
    case hw::CurveOp::rmsnorm:
      dim("tokens", p.tokens, kRows), dim("hidden", p.hidden, kDim);
      flag("residual", p.residual);
      dtype("out_dtype", p.out_dtype);
      break;
    case hw::CurveOp::group_quant:
      dim("tokens", p.tokens, kRows), dim("hidden", p.hidden, kDim);
      flag("copy", p.copy);
      p.out_dtype = DType::fp8_e4m3;
      dtype("out_dtype", p.out_dtype);
      if (!is_fp8(p.out_dtype)) {
        r.fail(path + ".out_dtype", fmt::format("'{}': a group quantisation writes fp8_e4m3 or fp8_e5m2", name(p.out_dtype)));
      }
      break;
    case hw::CurveOp::elementwise:
    case hw::CurveOp::allreduce:
    case hw::CurveOp::alltoall:
      p.bytes = r.quantity(r.required(node, "bytes", path), Quantity::bytes, path + ".bytes", true);
      if (p.bytes > 1e15) r.fail(path + ".bytes", fmt::format("{} bytes: expected at most 1 PB", p.bytes));
      if (p.op != hw::CurveOp::elementwise) {
        double chips = 0;
        dim("chips", chips, 1 << 16);
        if (chips < 2) r.fail(path + ".chips", fmt::format("an {} needs at least 2 chips", p.op == hw::CurveOp::allreduce ? "all-reduce" : "all-to-all"));
        p.chips = static_cast<int>(chips);
      }
      break;
    case hw::CurveOp::moe:
      dim("tokens", p.tokens, kRows), dim("hidden", p.hidden, kDim), dim("intermediate", p.intermediate, kDim);
      dim("experts", p.experts, 1 << 16), dim("topk", p.topk, 1 << 16);
      if (p.topk > p.experts) r.fail(path + ".topk", fmt::format("{}: expected at most the {} experts", p.topk, p.experts));
      if (node["tile"]) {
        dim("tile", p.tile, 1 << 16);
        if (p.tile < 1) r.fail(path + ".tile", fmt::format("{}: expected the kernel's rows a tile, at least 1", p.tile));
      }
      break;
    case hw::CurveOp::attention_combine:
      dim("batch", p.batch, kDim), dim("splits", p.splits, 1 << 16), dim("heads", p.heads, 1 << 16);
      dim("v_head_dim", p.v_head_dim, 1 << 16);
      break;
  }
  dtype("dtype", p.dtype);
  if (p.op != hw::CurveOp::rmsnorm && p.op != hw::CurveOp::group_quant) p.out_dtype = p.dtype;
  p.time_s = r.quantity(r.required(node, "time", path), Quantity::time, path + ".time", true);
  if (p.time_s > 10) r.fail(path + ".time", fmt::format("{} s per call: expected at most 10 s", p.time_s));
  return p;
}

void read_curves(Reader& r, const YAML::Node& node, hw::ChipSpec& c) {
  if (!node.IsSequence()) r.fail("kernel_curves", "expected a list of curves");
  if (node.size() > kMaxCurves) r.fail("kernel_curves", fmt::format("{} curves: expected at most {}", node.size(), kMaxCurves));
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string path = fmt::format("kernel_curves[{}]", i);
    const YAML::Node& n = node[i];
    r.check_map(n, path, {"class", "kernel", "source", "timing", "points"});
    hw::KernelCurve curve;
    const std::string cls = r.scalar(r.required(n, "class", path), path + ".class");
    bool found = false;
    std::string names;
    for (int k = 1; k < hw::kKernelClassCount; ++k) {
      const auto kc = static_cast<hw::KernelClass>(k);
      names += (names.empty() ? "" : ", ") + std::string(hw::name(kc));
      if (hw::name(kc) == cls) curve.cls = kc, found = true;
    }
    if (!found) r.fail(path + ".class", fmt::format("'{}': expected one of {}", cls, names));
    curve.kernel = r.scalar(r.required(n, "kernel", path), path + ".kernel");
    curve.source = r.scalar(r.required(n, "source", path), path + ".source");
    const std::string timing = r.scalar(r.required(n, "timing", path), path + ".timing");
    if (timing == "graph") curve.timing = hw::CurveTiming::graph;
    else if (timing == "kernel") curve.timing = hw::CurveTiming::kernel;
    else r.fail(path + ".timing", fmt::format("'{}': expected graph or kernel", timing));
    const YAML::Node& pts = r.required(n, "points", path);
    if (!pts.IsSequence() || pts.size() == 0) r.fail(path + ".points", "expected a list of measured points");
    if (pts.size() > kMaxCurvePoints) {
      r.fail(path + ".points", fmt::format("{} points: expected at most {}", pts.size(), kMaxCurvePoints));
    }
    for (std::size_t j = 0; j < pts.size(); ++j) {
      const std::string pp = fmt::format("{}.points[{}]", path, j);
      curve.points.push_back(read_curve_point(r, pts[j], pp));
      // A row tile is the one-stage fused MoE's (its weights read once per tile), and it has one.
      const hw::CurvePoint& p = curve.points.back();
      const bool onestage = curve.cls == hw::KernelClass::gemm_expert_onestage;
      if (p.op == hw::CurveOp::moe && onestage && !(p.tile > 0)) {
        r.fail(pp + ".tile", "missing: a point of gemm_expert_onestage gives its kernel's rows a tile (the instance's first dimension)");
      }
      if (p.tile > 0 && !onestage) r.fail(pp + ".tile", fmt::format("only a point of class gemm_expert_onestage has a row tile (this curve's: {})", cls));
    }
    c.curves.push_back(std::move(curve));
  }
}

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
  });
}

}  // namespace

std::string curves_yaml(const std::vector<hw::KernelCurve>& curves) {
  std::string y = "kernel_curves:\n";
  for (const hw::KernelCurve& k : curves) {
    y += fmt::format("  - class: {}\n    kernel: {}\n    source: {}\n    timing: {}\n    points:\n", hw::name(k.cls),
                     yaml_quoted(k.kernel), yaml_quoted(k.source), hw::name(k.timing));
    for (const hw::CurvePoint& p : k.points) {
      std::string f = fmt::format("op: {}", hw::name(p.op));
      auto num = [&](const char* key, double v) { f += fmt::format(", {}: {:.17g}", key, v); };
      switch (p.op) {
        case hw::CurveOp::matmul:
          if (p.groups > 0) num("groups", p.groups);
          num("m", p.m), num("n", p.n), num("k", p.k);
          break;
        case hw::CurveOp::decode_attention:
        case hw::CurveOp::attention:
          num("batch", p.batch), num(p.op == hw::CurveOp::attention ? "seq_len" : "kv_len", p.kv_len);
          num("heads", p.heads), num("kv_heads", p.kv_heads), num("head_dim", p.head_dim);
          if (p.v_head_dim > 0) num("v_head_dim", p.v_head_dim);
          if (p.latent) f += ", latent: true";
          if (p.causal) f += ", causal: true";
          break;
        case hw::CurveOp::rmsnorm:
          num("tokens", p.tokens), num("hidden", p.hidden);
          if (p.residual) f += ", residual: true";
          f += fmt::format(", out_dtype: {}", name(p.out_dtype));
          break;
        case hw::CurveOp::group_quant:
          num("tokens", p.tokens), num("hidden", p.hidden);
          if (p.copy) f += ", copy: true";
          f += fmt::format(", out_dtype: {}", name(p.out_dtype));
          break;
        case hw::CurveOp::elementwise: f += fmt::format(", bytes: {:.17g} B", p.bytes); break;
        case hw::CurveOp::allreduce:
        case hw::CurveOp::alltoall: f += fmt::format(", bytes: {:.17g} B, chips: {}", p.bytes, p.chips); break;
        case hw::CurveOp::moe:
          num("tokens", p.tokens), num("hidden", p.hidden), num("intermediate", p.intermediate), num("experts", p.experts);
          num("topk", p.topk);
          if (p.tile > 0) num("tile", p.tile);
          break;
        case hw::CurveOp::attention_combine:
          num("batch", p.batch), num("splits", p.splits), num("heads", p.heads), num("v_head_dim", p.v_head_dim);
          break;
      }
      if (p.op != hw::CurveOp::elementwise && p.op != hw::CurveOp::allreduce && p.op != hw::CurveOp::alltoall) {
        f += fmt::format(", dtype: {}", name(p.dtype));
      }
      y += fmt::format("      - {{{}, time: {:.17g} s}}\n", f, p.time_s);
    }
  }
  return y;
}

std::string catalog_name_for_device(std::string_view device, double memory_bytes) {
  std::string d(device);
  for (char& c : d) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto has = [&](const char* s) { return d.find(s) != std::string::npos; };
  if (has("A100")) return memory_bytes > 60e9 ? "a100-80gb" : "a100-40gb";
  if (has("H100")) return has("PCIE") ? "h100-pcie" : "h100-sxm";
  if (has("H200")) return "h200";
  if (has("B200")) return "b200";
  if (has("L40S")) return "l40s";
  if (has("TESLA T4") || has(" T4")) return "t4";
  if (has("MI300X")) return "mi300x";
  if (has("MI325X")) return "mi325x";
  return "";
}

hw::ChipSpec parse_chip_yaml(std::string_view text, std::string_view source) {
  if (text.size() > kMaxChipFileBytes) {
    throw InputError(fmt::format("{}: file is {} bytes: expected a hardware file under 1 MiB", source, text.size()));
  }
  check_nesting(text, source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: line {}, column {}: malformed YAML: {}", source, e.mark.line + 1,
                                 e.mark.column + 1, e.msg));
  }
  check_expanded_size(root, source);
  Reader r(source);
  r.check_map(root, "", {"schema_version", "name", "display_name", "vendor", "kind", "arch", "matrix_peak", "matmul_achievable",
                         "vector_peak", "special_function_rate", "sparse_factor", "write_allocate", "memory", "links", "launch_overhead",
                         "chips_per_node", "sms", "gemm_split", "topology", "price_per_hour", "efficiency", "kernel_curves", "sources", "notes",
                         "measured", "calibrated"});
  hw::ChipSpec c;
  long long version = r.integer(r.required(root, "schema_version", ""), "schema_version");
  if (version < 1 || version > kSchemaVersion) {
    r.fail("schema_version", fmt::format("{} is not supported: expected 1 to {}", version, kSchemaVersion));
  }
  c.name = r.scalar(r.required(root, "name", ""), "name");
  if (!valid_name(c.name)) r.fail("name", fmt::format("'{}' must be 1-64 characters of a-z, 0-9, '-', '.', '_'", c.name));
  c.display_name = root["display_name"] ? r.scalar(root["display_name"], "display_name") : c.name;
  c.vendor = r.scalar(r.required(root, "vendor", ""), "vendor");
  c.kind = r.scalar(r.required(root, "kind", ""), "kind");
  if (c.kind != "gpu" && c.kind != "tpu" && c.kind != "cpu") {
    r.fail("kind", fmt::format("'{}' is not a chip kind: expected gpu, tpu or cpu", c.kind));
  }
  if (root["arch"]) {
    // The instruction set the engines choose kernels by (hw::runs_deepgemm): a GPU's only, and
    // its vendor's (docs/hardware.md#arch).
    c.arch = r.scalar(root["arch"], "arch");
    const std::optional<hw::Arch> a = hw::parse_arch(c.arch);
    if (!a) {
      r.fail("arch", fmt::format("'{}' is not an instruction set: expected sm_ and a compute capability's digits (sm_90, sm_100) or "
                                 "an AMD gfx target (gfx942)",
                                 c.arch));
    }
    const bool cuda = a->isa == hw::Arch::Isa::cuda;
    const char* vendor = cuda ? "nvidia" : "amd";
    if (c.kind != "gpu" || !hw::vendor_is(c, vendor)) {
      r.fail("arch", fmt::format("'{}' names {} GPU's instruction set: expected vendor {} and kind gpu, not {} {}", c.arch,
                                 cuda ? "an NVIDIA" : "an AMD", vendor, c.vendor, c.kind));
    }
  }
  read_peaks(r, r.required(root, "matrix_peak", ""), "matrix_peak", c.matrix_flops_per_s);
  if (std::none_of(c.matrix_flops_per_s.begin(), c.matrix_flops_per_s.end(), [](double v) { return v > 0; })) {
    r.fail("matrix_peak", "at least one dtype is required");
  }
  read_peaks(r, r.required(root, "vector_peak", ""), "vector_peak", c.vector_flops_per_s);
  if (root["matmul_achievable"]) {
    read_peaks(r, root["matmul_achievable"], "matmul_achievable", c.matmul_achievable_flops_per_s);
    for (DType d : kAllDTypes) {
      const double a = c.matmul_achievable_flops_per_s[index(d)], peak = c.matrix_flops_per_s[index(d)];
      if (a <= 0) continue;
      const std::string path = fmt::format("matmul_achievable.{}", name(d));
      if (peak <= 0) r.fail(path, fmt::format("the chip has no {} matrix peak: add it under matrix_peak first", name(d)));
      if (a > peak) r.fail(path, fmt::format("{:g} FLOP/s exceeds the {} matrix peak, {:g} FLOP/s: a measured rate is at most the peak", a, name(d), peak));
    }
  }
  if (root["special_function_rate"]) {
    c.special_function_rate = r.quantity(root["special_function_rate"], Quantity::flop_rate, "special_function_rate", true);
  }
  if (root["sparse_factor"]) {
    std::string s = r.scalar(root["sparse_factor"], "sparse_factor");
    c.sparse_factor = parse_number(s, fmt::format("{}: sparse_factor", source));
    if (!(c.sparse_factor >= 1 && c.sparse_factor <= 16)) r.fail("sparse_factor", fmt::format("'{}' must be in [1, 16]", s));
  }
  if (root["write_allocate"]) {
    const std::string s = r.scalar(root["write_allocate"], "write_allocate");
    if (s == "true") c.write_allocate = true;
    else if (s == "false") c.write_allocate = false;
    else r.fail("write_allocate", fmt::format("'{}' must be true or false", s));
  }

  YAML::Node mem = r.required(root, "memory", "");
  if (!mem.IsSequence() || mem.size() == 0) r.fail("memory", "expected a list of levels, main memory first");
  if (mem.size() > static_cast<size_t>(hw::kMaxMemoryLevels)) {
    r.fail("memory", fmt::format("{} levels: at most {} are supported", mem.size(), hw::kMaxMemoryLevels));
  }
  for (size_t i = 0; i < mem.size(); ++i) {
    std::string p = fmt::format("memory[{}]", i);
    r.check_map(mem[i], p, {"name", "bandwidth", "capacity"});
    hw::MemoryLevelSpec m;
    m.name = r.scalar(r.required(mem[i], "name", p), p + ".name");
    m.bandwidth_Bps = r.quantity(r.required(mem[i], "bandwidth", p), Quantity::bandwidth, p + ".bandwidth", true);
    m.capacity_bytes = r.quantity(r.required(mem[i], "capacity", p), Quantity::bytes, p + ".capacity", true);
    c.memory.push_back(std::move(m));
  }

  if (root["links"]) {
    YAML::Node links = root["links"];
    if (!links.IsSequence()) r.fail("links", "expected a list of links");
    if (links.size() > static_cast<size_t>(hw::kMaxLinks)) {
      r.fail("links", fmt::format("{} links: at most {} are supported", links.size(), hw::kMaxLinks));
    }
    for (size_t i = 0; i < links.size(); ++i) {
      std::string p = fmt::format("links[{}]", i);
      r.check_map(links[i], p, {"name", "scope", "bandwidth", "count", "latency", "efficiency"});
      hw::LinkSpec l;
      l.name = r.scalar(r.required(links[i], "name", p), p + ".name");
      std::string scope = r.scalar(r.required(links[i], "scope", p), p + ".scope");
      if (scope == "node") l.scope = hw::LinkScope::node;
      else if (scope == "network") l.scope = hw::LinkScope::network;
      else if (scope == "host") l.scope = hw::LinkScope::host;
      else r.fail(p + ".scope", fmt::format("'{}' is not a scope: expected node, network or host", scope));
      l.bandwidth_Bps = r.quantity(r.required(links[i], "bandwidth", p), Quantity::bandwidth, p + ".bandwidth", true);
      long long n = r.integer(r.required(links[i], "count", p), p + ".count");
      if (n > 1024) r.fail(p + ".count", fmt::format("{} links: expected at most 1024", n));
      l.count = static_cast<int>(n);
      l.latency_s = r.quantity(r.required(links[i], "latency", p), Quantity::time, p + ".latency", false);
      if (links[i]["efficiency"]) l.efficiency = r.fraction(links[i]["efficiency"], p + ".efficiency");
      c.links.push_back(std::move(l));
    }
  }
  c.launch_overhead_s = r.quantity(r.required(root, "launch_overhead", ""), Quantity::time, "launch_overhead", false);
  if (root["chips_per_node"]) {
    long long n = r.integer(root["chips_per_node"], "chips_per_node");
    if (n > 1 << 20) r.fail("chips_per_node", fmt::format("{}: expected at most 1048576", n));
    c.chips_per_node = static_cast<int>(n);
  }
  if (root["sms"]) {
    long long n = r.integer(root["sms"], "sms");
    if (n > 1 << 16) r.fail("sms", fmt::format("{}: expected at most 65536 multiprocessors", n));
    c.sms = static_cast<int>(n);
  }
  if (root["gemm_split"]) {
    const std::string v = r.scalar(root["gemm_split"], "gemm_split");
    if (v == "split-k") c.gemm_split = hw::GemmSplit::split_k;
    else if (v == "stream-k") c.gemm_split = hw::GemmSplit::stream_k;
    else r.fail("gemm_split", fmt::format("'{}': expected split-k or stream-k", v));
  }
  if (root["topology"]) read_topology(r, root["topology"], c);
  if (root["price_per_hour"]) {
    c.usd_per_hour = parse_usd_per_hour(r.scalar(root["price_per_hour"], "price_per_hour"), fmt::format("{}: price_per_hour", source));
  }
  if (root["efficiency"]) {
    YAML::Node e = root["efficiency"];
    // The chip-wide figures, then every kernel class by name (hw::name), in the enum's order.
    std::array<std::string_view, 6 + hw::kKernelClassCount - 1> keys{"matrix", "vector", "memory", "link", "overhead", "pdl_overlap"};
    for (int k = 1; k < hw::kKernelClassCount; ++k) keys[static_cast<std::size_t>(5 + k)] = hw::name(static_cast<hw::KernelClass>(k));
    r.check_map(e, "efficiency", keys);
    if (e["matrix"]) c.efficiency.matrix = r.fraction(e["matrix"], "efficiency.matrix");
    if (e["vector"]) c.efficiency.vector = r.fraction(e["vector"], "efficiency.vector");
    if (e["memory"]) c.efficiency.memory = r.fraction(e["memory"], "efficiency.memory");
    if (e["link"]) c.efficiency.link = r.fraction(e["link"], "efficiency.link");
    if (e["overhead"]) {
      c.efficiency.overhead_s = r.quantity(e["overhead"], Quantity::time, "efficiency.overhead", false);
      if (c.efficiency.overhead_s > 1e-3) {
        r.fail("efficiency.overhead", fmt::format("{} s per kernel: expected at most 1 ms", c.efficiency.overhead_s));
      }
    }
    if (e["pdl_overlap"]) {
      c.efficiency.pdl_overlap_s = r.quantity(e["pdl_overlap"], Quantity::time, "efficiency.pdl_overlap", false);
      if (c.efficiency.pdl_overlap_s > 1e-3) {
        r.fail("efficiency.pdl_overlap", fmt::format("{} s per kernel: expected at most 1 ms", c.efficiency.pdl_overlap_s));
      }
      // Programmatic dependent launch is CUDA's from compute capability 9.0.
      if (c.efficiency.pdl_overlap_s > 0 && !hw::supports_pdl(c)) {
        r.fail("efficiency.pdl_overlap", fmt::format("{} s on {}: programmatic dependent launch needs an NVIDIA GPU of compute "
                                                     "capability 9.0 or later (sm_90, sm_100)",
                                                     c.efficiency.pdl_overlap_s,
                                                     c.arch.empty() ? hw::vendor_and_kind(c) + " naming no arch"
                                                                    : "arch " + c.arch));
      }
    }
    // Per kernel class: fractions that refine the chip-wide ones, and a fixed time per kernel.
    for (int k = 1; k < hw::kKernelClassCount; ++k) {
      const std::string key(hw::name(static_cast<hw::KernelClass>(k)));
      if (!e[key]) continue;
      const std::string p = "efficiency." + key;
      YAML::Node n = e[key];
      r.check_map(n, p, {"matrix", "vector", "memory", "link", "overhead", "overlap", "matmul", "tile_keys", "fill_k", "k_loop"});
      hw::ClassEfficiency& ce = c.efficiency.kernel[k];
      if (n["matrix"]) ce.matrix = r.fraction(n["matrix"], p + ".matrix");
      if (n["vector"]) ce.vector = r.fraction(n["vector"], p + ".vector");
      if (n["memory"]) ce.memory = r.fraction(n["memory"], p + ".memory");
      if (n["link"]) ce.link = r.fraction(n["link"], p + ".link");
      if (n["overhead"]) {
        ce.overhead_s = r.quantity(n["overhead"], Quantity::time, p + ".overhead", false);
        if (ce.overhead_s > 1) r.fail(p + ".overhead", fmt::format("{} s per kernel: expected at most 1 s", ce.overhead_s));
      }
      if (n["matmul"]) {
        ce.matmul = r.fraction(n["matmul"], p + ".matmul");
        if (k != static_cast<int>(hw::KernelClass::gemm)) {
          r.fail(p + ".matmul", fmt::format("{}: only the gemm class (the BLAS library's GEMMs) runs at a share of the measured matmul rate", ce.matmul));
        }
        if (n["matrix"]) r.fail(p + ".matmul", fmt::format("{}: the class's own matrix fraction replaces the measured rate and any share of it", ce.matmul));
      }
      if (n["tile_keys"]) {
        ce.tile_keys = r.number(n["tile_keys"], p + ".tile_keys");
        if (k != static_cast<int>(hw::KernelClass::attention)) {
          r.fail(p + ".tile_keys", fmt::format("{}: only the attention class (a flash prefill's forward) runs in query tiles", ce.tile_keys));
        }
        if (!(ce.tile_keys >= 0 && ce.tile_keys <= 65536)) {
          r.fail(p + ".tile_keys", fmt::format("{}: expected 0 to 65536 keys a tile", ce.tile_keys));
        }
      }
      if (n["fill_k"]) {
        ce.fill_k = r.number(n["fill_k"], p + ".fill_k");
        if (hw::parent(static_cast<hw::KernelClass>(k)) != hw::KernelClass::gemm) {
          r.fail(p + ".fill_k", fmt::format("{}: only a GEMM class's tiles run a K loop", ce.fill_k));
        }
        if (!(ce.fill_k >= 0 && ce.fill_k <= 65536)) r.fail(p + ".fill_k", fmt::format("{}: expected 0 to 65536 columns of K a tile", ce.fill_k));
      }
      if (n["k_loop"]) {
        // The time a column of K of one tile's K loop takes at least (such as '1.5 ns').
        const std::string said = r.scalar(n["k_loop"], p + ".k_loop");
        ce.k_loop_s = r.quantity(n["k_loop"], Quantity::time, p + ".k_loop", false);
        if (!hw::takes_k_loop(static_cast<hw::KernelClass>(k))) {
          r.fail(p + ".k_loop", fmt::format("'{}': only a dense GEMM class without a tile fill (gemm, gemm_scaled, gemm_fp8) takes a K-loop time", said));
        }
        if (ce.k_loop_s > 1e-6) r.fail(p + ".k_loop", fmt::format("'{}' a column of K: expected at most 1 us", said));
      }
      if (n["overlap"]) {
        ce.overlap = r.fraction(n["overlap"], p + ".overlap");
        if (ce.overlap < 0.5) {
          r.fail(p + ".overlap", fmt::format("{}: expected 0.5 (matrix and its partner, memory or attention's vector, fully overlapped) to 1 (not overlapped)", ce.overlap));
        }
      }
    }
  }
  if (root["kernel_curves"]) read_curves(r, root["kernel_curves"], c);
  if (root["sources"]) {
    YAML::Node s = root["sources"];
    if (!s.IsSequence()) r.fail("sources", "expected a list of strings");
    for (size_t i = 0; i < s.size(); ++i) c.sources.push_back(r.scalar(s[i], fmt::format("sources[{}]", i)));
  }
  if (root["notes"]) (void)r.scalar(root["notes"], "notes");
  if (root["measured"] && !root["measured"].IsMap()) r.fail("measured", "expected a mapping");
  if (root["measured"] && root["measured"]["threads"]) {
    const long long n = r.integer(root["measured"]["threads"], "measured.threads");
    if (n > 1 << 20) r.fail("measured.threads", fmt::format("{}: expected at most 1048576", n));
    c.measured_threads = static_cast<int>(n);
  }
  if (root["calibrated"] && !root["calibrated"].IsMap()) r.fail("calibrated", "expected a mapping");
  c.provenance = std::string(source);
  return c;
}

std::string yaml_quoted(std::string_view s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) r += c;
  }
  return r + "\"";
}

std::string chip_yaml(const hw::ChipSpec& c, std::string_view notes, std::string_view provenance) {
  std::string y = fmt::format("schema_version: {}\nname: {}\ndisplay_name: {}\nvendor: {}\nkind: {}\n", kSchemaVersion, c.name,
                              yaml_quoted(c.display_name), yaml_quoted(c.vendor), c.kind);
  if (!c.arch.empty()) y += fmt::format("arch: {}\n", c.arch);
  auto peaks = [](const std::array<double, kDTypeCount>& a) {
    std::string s;
    for (DType d : kAllDTypes) {
      if (a[index(d)] > 0) s += fmt::format("  {}: {:.17g} FLOP/s\n", name(d), a[index(d)]);
    }
    return s.empty() ? std::string(" {}\n") : "\n" + s;
  };
  y += "matrix_peak:" + peaks(c.matrix_flops_per_s);
  if (std::any_of(c.matmul_achievable_flops_per_s.begin(), c.matmul_achievable_flops_per_s.end(), [](double v) { return v > 0; })) {
    y += "matmul_achievable:" + peaks(c.matmul_achievable_flops_per_s);
  }
  if (c.sparse_factor != 1) y += fmt::format("sparse_factor: {:.17g}\n", c.sparse_factor);
  if (c.special_function_rate > 0) y += fmt::format("special_function_rate: {:.17g} FLOP/s\n", c.special_function_rate);
  y += "vector_peak:" + peaks(c.vector_flops_per_s);
  if (c.write_allocate) y += "write_allocate: true\n";
  y += "memory:\n";
  for (const auto& m : c.memory) {
    y += fmt::format("  - {{name: {}, bandwidth: {:.17g} B/s, capacity: {:.17g} B}}\n", yaml_quoted(m.name), m.bandwidth_Bps,
                     m.capacity_bytes);
  }
  if (!c.links.empty()) {
    y += "links:\n";
    for (const auto& l : c.links) {
      y += fmt::format("  - {{name: {}, scope: {}, bandwidth: {:.17g} B/s, count: {}, latency: {:.17g} s{}}}\n",
                       yaml_quoted(l.name), hw::name(l.scope), l.bandwidth_Bps, l.count, l.latency_s,
                       l.efficiency > 0 ? fmt::format(", efficiency: {:.17g}", l.efficiency) : std::string());
    }
  }
  y += fmt::format("launch_overhead: {:.17g} s\nchips_per_node: {}\n", c.launch_overhead_s, c.chips_per_node);
  if (c.sms > 0) y += fmt::format("sms: {}\n", c.sms);
  if (c.gemm_split == hw::GemmSplit::stream_k) y += "gemm_split: stream-k\n";
  if (c.topology != hw::TopologySpec{}) {
    const hw::TopologySpec& t = c.topology;
    y += fmt::format("topology:\n  fabric: {}\n", hw::name(t.fabric));
    if (t.domain > 0) y += fmt::format("  domain: {}\n", t.domain);
    if (t.in_switch_reduction) y += "  in_switch_reduction: true\n";
    if (t.reduction_efficiency > 0) y += fmt::format("  reduction_efficiency: {:.17g}\n", t.reduction_efficiency);
    if (t.links_per_peer > 0) y += fmt::format("  links_per_peer: {}\n", t.links_per_peer);
    if (t.torus_dims > 0) y += fmt::format("  torus_dims: {}\n", t.torus_dims);
    if (t.max_slice > 0) y += fmt::format("  max_slice: {}\n", t.max_slice);
    if (t.wrap_multiple > 0) y += fmt::format("  wrap_multiple: {}\n", t.wrap_multiple);
    if (t.library != hw::CollectiveLibrary::none) y += fmt::format("  library: {}\n", hw::name(t.library));
  }
  if (c.usd_per_hour > 0) y += fmt::format("price_per_hour: {:.17g} USD/h\n", c.usd_per_hour);
  const hw::EfficiencySpec& e = c.efficiency;
  y += fmt::format("efficiency:\n  matrix: {:.17g}\n  vector: {:.17g}\n  memory: {:.17g}\n  link: {:.17g}\n", e.matrix,
                   e.vector, e.memory, e.link);
  if (e.overhead_s > 0) y += fmt::format("  overhead: {:.17g} s\n", e.overhead_s);
  if (e.pdl_overlap_s > 0) y += fmt::format("  pdl_overlap: {:.17g} s\n", e.pdl_overlap_s);
  for (int k = 1; k < hw::kKernelClassCount; ++k) {
    const hw::ClassEfficiency& ce = e.kernel[k];
    if (ce == hw::ClassEfficiency{}) continue;
    std::string fields;
    for (auto [key, v] : {std::pair{"matrix", ce.matrix}, {"vector", ce.vector}, {"memory", ce.memory}, {"link", ce.link}}) {
      if (v > 0) fields += fmt::format("{}{}: {:.17g}", fields.empty() ? "" : ", ", key, v);
    }
    if (ce.overhead_s > 0) fields += fmt::format("{}overhead: {:.17g} s", fields.empty() ? "" : ", ", ce.overhead_s);
    if (ce.overlap > 0) fields += fmt::format("{}overlap: {:.17g}", fields.empty() ? "" : ", ", ce.overlap);
    if (ce.matmul > 0) fields += fmt::format("{}matmul: {:.17g}", fields.empty() ? "" : ", ", ce.matmul);
    if (ce.tile_keys > 0) fields += fmt::format("{}tile_keys: {:.17g}", fields.empty() ? "" : ", ", ce.tile_keys);
    if (ce.fill_k > 0) fields += fmt::format("{}fill_k: {:.17g}", fields.empty() ? "" : ", ", ce.fill_k);
    if (ce.k_loop_s > 0) fields += fmt::format("{}k_loop: {:.17g} s", fields.empty() ? "" : ", ", ce.k_loop_s);
    y += fmt::format("  {}: {{{}}}\n", hw::name(static_cast<hw::KernelClass>(k)), fields);
  }
  if (!c.curves.empty()) y += curves_yaml(c.curves);
  if (!c.sources.empty()) {
    y += "sources:\n";
    for (const auto& src : c.sources) y += "  - " + yaml_quoted(src) + "\n";
  }
  if (!notes.empty()) y += "notes: " + yaml_quoted(notes) + "\n";
  y += provenance;
  return y;
}

hw::ChipSpec load_chip_file(const std::string& path) {
  return parse_chip_yaml(read_text_file(path, "a hardware .yaml file"), path);
}

namespace {
bool is_hardware(const EmbeddedFile& f) { return f.path.rfind("hardware/", 0) == 0; }
}  // namespace

std::vector<CatalogEntry> catalog() {
  std::vector<CatalogEntry> out;
  for (const auto& f : embedded_files()) {
    if (!is_hardware(f)) continue;
    hw::ChipSpec c = parse_chip_yaml(f.text, f.path);
    out.push_back({c.name, c.vendor, c.kind, c.display_name});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

hw::ChipSpec catalog_chip(std::string_view name) {
  std::string want = ascii_lower(name);
  for (const auto& f : embedded_files()) {
    if (!is_hardware(f)) continue;
    // File names are the catalog names: hardware/<vendor>/<name>.yaml.
    std::string_view p = f.path;
    auto slash = p.rfind('/');
    auto stem = p.substr(slash + 1, p.size() - slash - 1 - 5);
    if (stem == want) {
      hw::ChipSpec c = parse_chip_yaml(f.text, f.path);
      c.provenance = "catalog:" + std::string(f.path);
      return c;
    }
  }
  // A family's name without its variant ("h100", "A100") names the catalog's chips it begins; a
  // name that runs past a catalog name ("h100-sxm5") names that one.
  std::string names, close;
  for (const auto& e : catalog()) {
    names += (names.empty() ? "" : ", ") + e.name;
    if (!want.empty() && (e.name.rfind(want, 0) == 0 || want.rfind(e.name, 0) == 0)) close += (close.empty() ? "" : " or ") + e.name;
  }
  throw InputError(fmt::format("--hw: unknown hardware '{}'{}: expected a catalog name ({}) or a .yaml file", name,
                               close.empty() ? "" : fmt::format(" (did you mean {}?)", close), names));
}

hw::ChipSpec resolve_chip(std::string_view hw) {
  auto ends_with = [&](std::string_view suf) {
    return hw.size() >= suf.size() && hw.substr(hw.size() - suf.size()) == suf;
  };
  if (ends_with(".yaml") || ends_with(".yml") || hw.find('/') != std::string_view::npos) {
    return load_chip_file(std::string(hw));
  }
  return catalog_chip(hw);
}

}  // namespace ridgeline::io
