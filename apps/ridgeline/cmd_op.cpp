// `ridgeline op KIND ...` and `ridgeline threshold KIND ... --solve VAR`.
#include <fmt/format.h>

#include <cmath>

#include "common.hpp"
#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/analysis/threshold.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "ridgeline/report/json.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/report/text.hpp"

namespace ridgeline::cli {

namespace {

// --bytes: a whole number of bytes ("1.5" or "0.5 B" is not a buffer).
double whole_bytes(const std::string& v) {
  const double b = parse_quantity(v, Quantity::bytes, "--bytes", true);
  if (b != std::floor(b)) throw InputError(fmt::format("--bytes: '{}' is {} bytes: expected a whole number", v, b));
  return b;
}

using analysis::OpKind;

struct OpFlags {
  HardwareFlags hw;
  bool json = false;
  std::string m = "1", k = "1", n = "1", batch = "1", tile, shape, tokens, hidden;
  std::string inputs = "1", outputs = "1", flops_per_element = "1", head_dim = "128";
  std::string q_len = "1", kv_len, heads = "1", kv_heads, bytes, flops = "0", unit = "matrix";
  std::string shard, algo = "auto", impl = "flash", solve, sweep, plot, host_overhead;
  std::string dtype = "bf16", a_dtype, b_dtype, out_dtype, compute_dtype, kv_dtype;
  bool causal = false, per_sample_weights = false;
};

using analysis::is_collective;
bool is_rows(OpKind k) { return analysis::is_pointwise(k); }

void add_flags(CLI::App* app, OpKind kind, OpFlags& f, bool solving) {
  // Dimensions are checked after parsing (require_dims): under `threshold` the solved one,
  // under `op --sweep` the swept one needs no value.
  auto req = [](CLI::Option* o) { return o; };
  (void)solving;
  add_hardware_flags(app, f.hw);
  app->add_flag("--json", f.json, "JSON on stdout");
  app->add_option("--dtype", f.dtype, "element dtype")->capture_default_str();
  switch (kind) {
    case OpKind::custom:
      app->add_option("--flops", f.flops, "FLOPs");
      app->add_option("--bytes", f.bytes, "main-memory bytes");
      app->add_option("--unit", f.unit, "matrix or vector")->capture_default_str();
      break;
    case OpKind::dot:
      req(app->add_option("--n", f.n, "vector length"));
      app->add_option("--compute-dtype", f.compute_dtype, "vector-unit dtype (default fp32)");
      break;
    case OpKind::matmul:
      req(app->add_option("--m", f.m, "rows of X (tokens / batch)"));
      req(app->add_option("--k", f.k, "contraction dimension"));
      req(app->add_option("--n", f.n, "columns of W"));
      app->add_option("--a-dtype", f.a_dtype, "dtype of X (default --dtype)");
      app->add_option("--b-dtype", f.b_dtype, "dtype of W (default --dtype)");
      app->add_option("--out-dtype", f.out_dtype, "dtype of the output (default the X dtype)");
      app->add_option("--compute-dtype", f.compute_dtype, "matrix-unit dtype (default from the operands)");
      app->add_option("--batch", f.batch, "independent matmuls")->capture_default_str();
      app->add_flag("--per-sample-weights", f.per_sample_weights, "a different W per batch element");
      app->add_option("--shard", f.shard, "split over --chips along m, n or k (k all-reduces partial sums)");
      app->add_option("--algo", f.algo, "all-reduce algorithm for --shard k: auto, ring, tree, direct, nvls")->capture_default_str();
      app->add_option("--tile", f.tile, "tile sizes bm,bk,bn: operands re-read once per tile row/column");
      break;
    case OpKind::attention:
      app->add_option("--batch", f.batch, "sequences")->capture_default_str();
      app->add_option("--q-len", f.q_len, "queries per sequence")->capture_default_str();
      app->add_option("--kv-len", f.kv_len, "keys per sequence (default --q-len)");
      req(app->add_option("--heads", f.heads, "query heads"));
      app->add_option("--kv-heads", f.kv_heads, "key/value heads (default --heads)");
      app->add_option("--head-dim", f.head_dim, "head dimension")->capture_default_str();
      app->add_flag("--causal", f.causal, "causal mask (flash skips masked blocks)");
      app->add_option("--impl", f.impl, "flash or naive (scores materialised)")->capture_default_str();
      app->add_option("--kv-dtype", f.kv_dtype, "dtype of K and V (default --dtype)");
      app->add_option("--compute-dtype", f.compute_dtype, "matrix-unit dtype (default --dtype)");
      break;
    default:
      if (is_collective(kind)) {
        app->add_option("--bytes", f.bytes, "buffer size (per chip; the gathered output for allgather)")->required();
        app->add_option("--algo", f.algo, "auto (the fastest for the size, as NCCL's tuner), ring, tree, direct or nvls")->capture_default_str();
      } else if (kind == OpKind::elementwise || kind == OpKind::reduction) {
        app->add_option("--shape", f.shape, "ROWS,COLS (tokens,hidden)");
        app->add_option("--tokens", f.tokens, "rows");
        app->add_option("--hidden", f.hidden, "columns");
        app->add_option("--compute-dtype", f.compute_dtype, "vector-unit dtype (default fp32)");
        if (kind == OpKind::elementwise) {
          app->add_option("--inputs", f.inputs, "input tensors")->capture_default_str();
          app->add_option("--outputs", f.outputs, "output tensors")->capture_default_str();
          app->add_option("--flops-per-element", f.flops_per_element, "FLOPs per output element")->capture_default_str();
        }
      } else {
        req(app->add_option("--tokens", f.tokens, "tokens (rows)"));
        req(app->add_option("--hidden", f.hidden, "hidden width (columns)"));
        app->add_option("--compute-dtype", f.compute_dtype, "vector-unit dtype (default fp32)");
        if (kind == OpKind::rope) app->add_option("--head-dim", f.head_dim, "head dimension")->capture_default_str();
      }
      break;
  }
}

std::optional<DType> opt_dtype(const std::string& s, std::string_view flag) {
  if (s.empty()) return std::nullopt;
  return parse_dtype_or_throw(s, flag);
}

analysis::OpConfig build_config(OpKind kind, const OpFlags& f, int chips) {
  analysis::OpConfig op;
  op.kind = kind;
  op.dtype = parse_dtype_or_throw(f.dtype, "--dtype");
  op.a_dtype = opt_dtype(f.a_dtype, "--a-dtype");
  op.b_dtype = opt_dtype(f.b_dtype, "--b-dtype");
  op.out_dtype = opt_dtype(f.out_dtype, "--out-dtype");
  op.compute_dtype = opt_dtype(f.compute_dtype, "--compute-dtype");
  op.kv_dtype = opt_dtype(f.kv_dtype, "--kv-dtype");
  op.chips = chips;
  switch (kind) {
    case OpKind::custom:
      op.flops = parse_number(f.flops, "--flops");
      op.bytes = f.bytes.empty() ? 0 : whole_bytes(f.bytes);
      if (f.unit == "matrix") op.unit = hw::Unit::matrix;
      else if (f.unit == "vector") op.unit = hw::Unit::vector;
      else throw InputError(fmt::format("--unit: '{}' is not a unit: expected matrix or vector", f.unit));
      break;
    case OpKind::dot: op.n = parse_positive_int(f.n, "--n"); break;
    case OpKind::matmul: {
      op.m = parse_positive_int(f.m, "--m");
      op.k = parse_positive_int(f.k, "--k");
      op.n = parse_positive_int(f.n, "--n");
      op.batch = parse_positive_int(f.batch, "--batch");
      op.per_sample_weights = f.per_sample_weights;
      if (!f.shard.empty()) {
        if (f.shard == "m") op.shard = analysis::Shard::m;
        else if (f.shard == "n") op.shard = analysis::Shard::n;
        else if (f.shard == "k") op.shard = analysis::Shard::k;
        else throw InputError(fmt::format("--shard: '{}' is not a dimension: expected m, n or k", f.shard));
        const std::int64_t dim = op.shard == analysis::Shard::m ? op.m : op.shard == analysis::Shard::n ? op.n : op.k;
        if (chips > 1 && dim % chips != 0) {
          throw InputError(fmt::format("--shard {}: {} does not divide over {} chips: expected a multiple of --chips", f.shard, dim, chips));
        }
      }
      if (!f.tile.empty()) {
        auto c1 = f.tile.find(','), c2 = f.tile.rfind(',');
        if (c1 == std::string::npos || c1 == c2) throw InputError(fmt::format("--tile: '{}' is not BM,BK,BN", f.tile));
        op.tile_m = parse_positive_int(f.tile.substr(0, c1), "--tile (bm)");
        op.tile_k = parse_positive_int(f.tile.substr(c1 + 1, c2 - c1 - 1), "--tile (bk)");
        op.tile_n = parse_positive_int(f.tile.substr(c2 + 1), "--tile (bn)");
      }
      break;
    }
    case OpKind::attention:
      op.batch = parse_positive_int(f.batch, "--batch");
      op.q_len = parse_positive_int(f.q_len, "--q-len");
      op.kv_len = f.kv_len.empty() ? op.q_len : parse_positive_int(f.kv_len, "--kv-len");
      op.heads = parse_positive_int(f.heads, "--heads");
      op.kv_heads = f.kv_heads.empty() ? op.heads : parse_positive_int(f.kv_heads, "--kv-heads");
      op.head_dim = parse_positive_int(f.head_dim, "--head-dim");
      op.causal = f.causal;
      if (f.impl == "flash") op.impl = ops::AttentionImpl::flash;
      else if (f.impl == "naive") op.impl = ops::AttentionImpl::naive;
      else throw InputError(fmt::format("--impl: '{}' is not an implementation: expected flash or naive", f.impl));
      break;
    default:
      if (is_collective(kind)) {
        op.bytes = whole_bytes(f.bytes);
      } else if (is_rows(kind)) {
        std::string tokens = f.tokens, hidden = f.hidden;
        if (!f.shape.empty()) {
          if (!f.tokens.empty() || !f.hidden.empty()) {
            throw InputError(fmt::format("--shape: {} given with --tokens/--hidden: give one or the other", f.shape));
          }
          auto c = f.shape.find(',');
          if (c == std::string::npos || f.shape.find(',', c + 1) != std::string::npos) throw InputError(fmt::format("--shape: '{}' is not ROWS,COLS (two numbers)", f.shape));
          tokens = f.shape.substr(0, c);
          hidden = f.shape.substr(c + 1);
        }
        if (tokens.empty() || hidden.empty()) {
          throw InputError(fmt::format("--shape: '{}' needs ROWS,COLS (or give --tokens and --hidden)", f.shape));
        }
        op.rows = parse_positive_int(tokens, f.shape.empty() ? "--tokens" : "--shape");
        op.cols = parse_positive_int(hidden, f.shape.empty() ? "--hidden" : "--shape");
        if (kind == OpKind::elementwise) {
          op.inputs = static_cast<std::int64_t>(parse_number(f.inputs, "--inputs"));
          op.outputs = static_cast<std::int64_t>(parse_number(f.outputs, "--outputs"));
          op.flops_per_element = parse_number(f.flops_per_element, "--flops-per-element");
        }
        if (kind == OpKind::rope) op.head_dim = parse_positive_int(f.head_dim, "--head-dim");
      }
      break;
  }
  if (kind == OpKind::matmul || is_collective(kind)) {
    op.algo = comm::algo_flag(f.algo);
  }
  analysis::validate(op);
  return op;
}

constexpr OpKind kKinds[] = {OpKind::matmul,    OpKind::dot,       OpKind::elementwise, OpKind::reduction,
                             OpKind::rmsnorm,   OpKind::layernorm, OpKind::rope,        OpKind::softmax,
                             OpKind::swiglu,    OpKind::attention, OpKind::embedding,   OpKind::allreduce,
                             OpKind::allgather, OpKind::reducescatter, OpKind::alltoall, OpKind::sendrecv,
                             OpKind::custom};

std::string kind_help(OpKind k) {
  switch (k) {
    case OpKind::matmul: return "X[m,k]·W[k,n] with per-operand dtypes, batched, tiled or sharded";
    case OpKind::dot: return "dot product of two vectors (vector unit)";
    case OpKind::elementwise: return "I inputs -> O outputs, F FLOPs per element";
    case OpKind::reduction: return "sum over the last dimension";
    case OpKind::attention: return "scaled dot-product attention (flash or naive, causal, GQA)";
    case OpKind::embedding: return "embedding lookup of --tokens rows of width --hidden";
    case OpKind::custom: return "any FLOPs and bytes";
    case OpKind::allreduce:
    case OpKind::allgather:
    case OpKind::reducescatter:
    case OpKind::alltoall:
    case OpKind::sendrecv: return "collective over --chips (ring, tree, direct)";
    default: return std::string(analysis::name(k)) + " of a (tokens, hidden) activation";
  }
}

}  // namespace

std::string op_kind_names() {
  std::string s;
  for (OpKind k : kKinds) s += (s.empty() ? "" : ", ") + std::string(analysis::name(k));
  return s;
}

// Every dimension of `kind` must be given except `free` (the solved or swept one), which
// must not be: its value would be silently ignored.
void require_dims(CLI::App* sub, OpKind kind, const OpFlags& f, std::optional<analysis::SolveVar> free, const std::string& free_flag) {
  using V = analysis::SolveVar;
  auto need = [&](const char* flag, V v) {
    if (sub->count(flag) == 0 && (!free || *free != v)) {
      throw InputError(free ? fmt::format("{}: required (only the varied dimension, {}, may be left out)", flag, free_flag)
                            : fmt::format("{}: required", flag));
    }
  };
  if (kind == OpKind::matmul) {
    need("--m", V::m);
    need("--k", V::k);
    need("--n", V::n);
  } else if (kind == OpKind::dot) {
    need("--n", V::n);
  } else if (kind == OpKind::attention) {
    need("--heads", V::heads);
  } else if (is_rows(kind) && f.shape.empty()) {
    need("--tokens", V::tokens);
    need("--hidden", V::hidden);
  }
  if (!free) return;
  static constexpr std::pair<V, const char*> kFlag[] = {
      {V::m, "--m"},         {V::k, "--k"},           {V::n, "--n"},           {V::batch, "--batch"},
      {V::tokens, "--tokens"}, {V::hidden, "--hidden"}, {V::q_len, "--q-len"}, {V::kv_len, "--kv-len"},
      {V::heads, "--heads"}, {V::head_dim, "--head-dim"}};
  for (auto [v, flag] : kFlag) {
    if (v == *free && sub->get_option_no_throw(flag) != nullptr && sub->count(flag) > 0) {
      throw InputError(fmt::format("{}: given, but {} varies it: leave it out", flag, free_flag));
    }
  }
}

// `op KIND ... --sweep DIM=FROM..TO [--plot F.svg]`: the op at every value of one dimension
// when there are at most 600, else at 600 values (geometrically spaced when the range spans
// two decades or more, where the chart's x axis is logarithmic too).
struct Sweep {
  analysis::SolveVar var;
  std::int64_t lo, hi;
};

Sweep parse_sweep(const std::string& spec, OpKind kind) {
  const auto eq = spec.find('='), dots = spec.find("..");
  if (eq == std::string::npos || dots == std::string::npos || dots < eq) {
    throw InputError(fmt::format("--sweep: '{}' is not DIM=FROM..TO (e.g. m=1..4096)", spec));
  }
  const std::string dim = spec.substr(0, eq);
  auto var = analysis::parse_solve_var(dim);
  if (!var) throw InputError(fmt::format("--sweep: '{}' is not a dimension: expected m, k, n, batch, tokens, hidden, q-len, kv-len, seq, heads or head-dim", dim));
  if (!analysis::applies(*var, kind)) throw InputError(fmt::format("--sweep: '{}' is not a dimension of {}", dim, analysis::name(kind)));
  const auto lo = parse_positive_int(spec.substr(eq + 1, dots - eq - 1), "--sweep");
  const auto hi = parse_positive_int(spec.substr(dots + 2), "--sweep");
  if (hi < lo || hi > (std::int64_t{1} << 40)) throw InputError(fmt::format("--sweep: {}..{} is not a range FROM <= TO <= 2^40", lo, hi));
  return {*var, lo, hi};
}

// Gives dimension `v` the value `text` in the flags (seq: both lengths).
void placeholder(OpFlags& g, OpKind kind, analysis::SolveVar v, const std::string& text) {
  using V = analysis::SolveVar;
  switch (v) {
    case V::m: g.m = text; break;
    case V::k: g.k = text; break;
    case V::n: g.n = text; break;
    case V::batch: g.batch = text; break;
    case V::tokens: g.tokens = text; break;
    case V::hidden: g.hidden = text; break;
    case V::q_len: g.q_len = text; break;
    case V::kv_len: g.kv_len = text; break;
    case V::seq: g.q_len = g.kv_len = text; break;
    case V::heads: g.heads = text; break;
    case V::head_dim: g.head_dim = text; break;
  }
  if (kind == OpKind::attention && g.kv_len.empty()) g.kv_len = g.q_len;
}

// The system an op runs on, checked against what the op asks of it (a forced nvls).
hw::System op_system(const HardwareFlags& hw, const analysis::OpConfig& cfg) {
  hw::System sys = load_system(hw);
  analysis::validate(cfg, sys);
  return sys;
}

void run_sweep(OpKind kind, const OpFlags& f, const Sweep& sw, analysis::OpConfig cfg, const hw::System& sys) {
  const auto var = std::optional<analysis::SolveVar>(sw.var);
  const std::int64_t lo = sw.lo, hi = sw.hi;
  const bool log_axis = hi >= 100 * lo;
  const bool geometric = log_axis && hi - lo + 1 > 600;
  const int steps = static_cast<int>(std::min<std::int64_t>(600, hi - lo + 1));
  hw::ChipSpec chip = sys.chip;
  chip.launch_overhead_s = 0;  // the roofline, not the launch floor
  std::vector<double> xs, ys, ts;
  std::vector<std::string> bounds;
  std::int64_t last = 0;
  for (int i = 0; i < steps; ++i) {
    const double t = steps > 1 ? static_cast<double>(i) / (steps - 1) : 0;
    const double v = geometric ? static_cast<double>(lo) * std::pow(static_cast<double>(hi) / static_cast<double>(lo), t)
                               : static_cast<double>(lo) + t * static_cast<double>(hi - lo);
    const auto value = static_cast<std::int64_t>(std::llround(v));
    if (value == last) continue;
    last = value;
    analysis::set_dim(cfg, *var, value);
    try {
      analysis::validate(cfg);  // e.g. heads not a multiple of the KV heads: not a point
    } catch (const InputError&) {
      if (i + 1 == steps && xs.empty()) throw;
      continue;
    }
    ops::Cost cost = analysis::op_cost(cfg, sys);
    ops::check_supported(cost, chip);
    const ops::Estimate e = ops::estimate(cost, chip, analysis::op_kernel_class(cfg, chip));
    xs.push_back(static_cast<double>(value));
    ys.push_back(e.attained_flops_per_s);
    ts.push_back(e.t_lower_s);
    bounds.emplace_back(ops::name(e.bound));
  }
  const std::string dname(analysis::name(*var));
  if (!f.plot.empty()) {
    report::Series se{std::string(analysis::name(kind)), xs, ys, true, false, {}, {}};
    report::write_chart(f.plot, report::sweep_svg({se}, dname, "attained FLOP/s (launch overhead left out)",
                                                  fmt::format("{} on {}: {} from {} to {}", analysis::name(kind), sys.chip.display_name, dname, lo, hi),
                                                  log_axis, false),
                        "--plot");
  }
  std::string text = fmt::format("{} on {}, {} from {} to {} (launch overhead left out)\n\n{:>12} {:>16} {:>12}  {}\n", analysis::name(kind),
                                 sys.chip.display_name, dname, lo, hi, dname, "attained", "time", "bound");
  for (size_t i = 0; i < xs.size(); ++i) {
    // The ends and every change of bound.
    if (i == 0 || i + 1 == xs.size() || bounds[i] != bounds[i - 1]) {
      text += fmt::format("{:>12} {:>16} {:>12}  {}\n", static_cast<std::int64_t>(xs[i]), format_quantity(ys[i], Quantity::flop_rate),
                          format_quantity(ts[i], Quantity::time), bounds[i]);
    }
  }
  if (!f.plot.empty()) text += "wrote " + f.plot + "\n";
  nlohmann::json j = {{"op", std::string(analysis::name(kind))}, {"hw", sys.chip.name}, {"dimension", dname}, {"values", xs},
                      {"attained_flops_per_s", ys}, {"t_lower_s", ts}, {"bound", bounds}};
  if (!f.plot.empty()) j["out"] = f.plot;
  emit(f.json, j, text);
}

void register_op(CLI::App& root, std::vector<Command>& commands) {
  auto* op = root.add_subcommand("op", "one operation on one chip (or sharded): FLOPs, bytes, times, bound");
  op->require_subcommand(1);
  auto* th = root.add_subcommand("threshold", "the value of a dimension at which an op becomes compute-bound");
  th->require_subcommand(1);
  for (OpKind kind : kKinds) {
    std::string kname(analysis::name(kind));
    {
      auto f = std::make_shared<OpFlags>();
      auto* sub = op->add_subcommand(kname, kind_help(kind));
      add_flags(sub, kind, *f, false);
      const bool sweepable = kind != OpKind::custom && !is_collective(kind);
      if (sweepable) {
        sub->add_option("--sweep", f->sweep, "DIM=FROM..TO: the op over a range of one dimension (m, k, n, batch, tokens, hidden, q-len, kv-len, seq, heads, head-dim)");
        sub->add_option("--plot", f->plot, "with --sweep: attained FLOP/s against the dimension (.svg or .png)");
      }
      sub->add_option("--host-overhead", f->host_overhead,
                      "the host's time per call when a program waits on each call (e.g. 20us: PyTorch dispatch, enqueue, launch, sync); added to every bound");
      commands.push_back({sub, [f, kind, sub] {
                            // Send/recv is between two chips unless told otherwise.
                            const int fallback = kind == OpKind::sendrecv ? 2 : 1;
                            const long long n = f->hw.chips.empty() ? fallback : parse_positive_int(f->hw.chips, "--chips");
                            if (n > (1 << 24)) throw InputError(fmt::format("--chips: {} is more than 16777216 chips", n));
                            int chips = static_cast<int>(n);
                            if (!f->plot.empty() && f->sweep.empty()) throw InputError("--plot: draws a --sweep: give --sweep DIM=FROM..TO");
                            if (!f->host_overhead.empty() && !f->sweep.empty()) {
                              throw InputError("--host-overhead: a --sweep draws the roofline without host or launch time: give one or the other");
                            }
                            const double host_s = f->host_overhead.empty() ? 0 : parse_quantity(f->host_overhead, Quantity::time, "--host-overhead", false);
                            if (host_s > 1) throw InputError(fmt::format("--host-overhead: '{}' is more than a second a call", f->host_overhead));
                            if (!f->sweep.empty()) {
                              Sweep sw = parse_sweep(f->sweep, kind);
                              // Queries without a given context attend to themselves, as in `op`: sweep both.
                              if (kind == OpKind::attention && sw.var == analysis::SolveVar::q_len && sub->count("--kv-len") == 0) {
                                sw.var = analysis::SolveVar::seq;
                              }
                              require_dims(sub, kind, *f, sw.var, "--sweep " + f->sweep.substr(0, f->sweep.find('=')));
                              // The swept dimension gets its first value; run_sweep sets each in turn.
                              OpFlags g = *f;
                              placeholder(g, kind, sw.var, std::to_string(sw.lo));
                              analysis::OpConfig cfg = build_config(kind, g, chips);
                              run_sweep(kind, g, sw, cfg, op_system(f->hw, cfg));
                              return;
                            }
                            require_dims(sub, kind, *f, std::nullopt, "");
                            analysis::OpConfig cfg = build_config(kind, *f, chips);
                            hw::System sys = op_system(f->hw, cfg);
                            ops::Cost cost = analysis::op_cost(cfg, sys);
                            ops::check_supported(cost, sys.chip);
                            ops::Estimate e = ops::estimate(cost, sys.chip, analysis::op_kernel_class(cfg, sys.chip));
                            ops::add_host_time(e, host_s);
                            if (is_collective(kind)) {
                              const comm::Priced pr = analysis::op_collective(cfg, sys);
                              emit(f->json, report::estimate_json(cfg, sys, cost, e, &pr), report::estimate_text(cfg, sys, cost, e, &pr));
                              return;
                            }
                            const ops::GemmTiling tiling = analysis::op_tiling(cfg, sys);
                            const ops::AttentionTiling tiles = analysis::op_attention_tiling(cfg, sys);
                            emit(f->json, report::estimate_json(cfg, sys, cost, e, nullptr, &tiling, &tiles),
                                 report::estimate_text(cfg, sys, cost, e, nullptr, &tiling, &tiles));
                          }});
    }
    if (kind == OpKind::custom || is_collective(kind)) continue;
    {
      auto f = std::make_shared<OpFlags>();
      auto* sub = th->add_subcommand(kname, kind_help(kind));
      add_flags(sub, kind, *f, true);
      sub->add_option("--solve", f->solve, "dimension to solve for (m, k, n, batch, tokens, hidden, q-len, kv-len, seq, heads, head-dim)")
          ->required();
      commands.push_back({sub, [f, kind, sub] {
                            auto var = analysis::parse_solve_var(f->solve);
                            if (!var) {
                              throw InputError(fmt::format("--solve: '{}' is not a dimension: expected m, k, n, batch, tokens, hidden, q-len, kv-len, seq, heads or head-dim", f->solve));
                            }
                            if (!analysis::applies(*var, kind)) {
                              throw InputError(fmt::format("--solve: '{}' is not a dimension of {}", f->solve, analysis::name(kind)));
                            }
                            using V = analysis::SolveVar;
                            require_dims(sub, kind, *f, var, "--solve " + f->solve);
                            // Queries without a given context attend to themselves, as in `op`: solve both.
                            if (kind == OpKind::attention && *var == V::q_len && sub->count("--kv-len") == 0) var = V::seq;
                            OpFlags g = *f;
                            // The solved dimension needs no value; give it one that validates (the
                            // solver then searches from the smallest valid value).
                            const std::string chips_text = g.hw.chips.empty() ? "1" : g.hw.chips;
                            switch (*var) {
                              case V::m: g.m = chips_text; break;
                              case V::k: g.k = chips_text; break;
                              case V::n: g.n = kind == OpKind::matmul ? chips_text : "1"; break;
                              case V::batch: g.batch = "1"; break;
                              case V::tokens: g.tokens = "1"; break;
                              case V::hidden: g.hidden = kind == OpKind::rope ? g.head_dim : "1"; break;
                              case V::q_len: g.q_len = "1"; break;
                              case V::kv_len: g.kv_len = g.q_len; break;
                              case V::seq: g.q_len = g.kv_len = "1"; break;
                              case V::heads: g.heads = g.kv_heads.empty() ? "1" : g.kv_heads; break;
                              case V::head_dim: g.head_dim = "2"; break;
                            }
                            if (kind == OpKind::attention && g.kv_len.empty()) g.kv_len = g.q_len;
                            int chips = g.hw.chips.empty() ? 1 : static_cast<int>(parse_positive_int(g.hw.chips, "--chips"));
                            analysis::OpConfig cfg = build_config(kind, g, chips);
                            hw::System sys = op_system(g.hw, cfg);
                            ops::check_supported(analysis::op_cost(cfg, sys), sys.chip);
                            auto r = analysis::solve_threshold(cfg, sys, *var);
                            emit(f->json, report::threshold_json(cfg, sys, *var, r), report::threshold_text(cfg, sys, *var, r));
                          }});
    }
  }
}

}  // namespace ridgeline::cli
