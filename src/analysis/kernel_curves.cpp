// Kernel curves: measured kernel times by size, priced by the op costs, and the fit of a
// class's fixed time and achievable fractions to them (docs/cost-model.md#kernel-curves).
#include "ridgeline/analysis/kernel_curves.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "least_squares.hpp"
#include "ridgeline/analysis/calibration.hpp"
#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/model/graph.hpp"
#include "ridgeline/model/transformer.hpp"
#include "ridgeline/ops/attention.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "ridgeline/ops/pointwise.hpp"

namespace ridgeline::analysis {

namespace {

using hw::CurveOp;
using hw::KernelClass;

// The fit's parameters: the fixed time, then 1 / the fraction of the matrix, vector, memory
// and link parts, and the overlap share (a kernel takes at least that share of its matrix
// part and its partner's added, memory or attention's vector: hw::ClassEfficiency::overlap).
enum Param { kFixed, kMatrix, kVector, kMemory, kLink, kOverlap, kParams };
// Rounds of a fit: each decides again which part binds.
constexpr int kRounds = 20;

// A kernel of the class being fitted, by part: what a part costs at the peaks (or, where the
// fit cannot change it, its constant time at the chip's own figure).
struct Parts {
  std::array<double, kParams> raw{};    // seconds at the peak, per part (kFixed unused)
  std::array<bool, kParams> held{};     // the part's time is `constant`, whatever the fit
  std::array<double, kParams> constant{};
  double comm_latency = 0;              // added to the link part as it is
  int partner = kMemory;                // the part the overlap share adds to the matrix part (hw::overlaps_vector)
};

struct Row {
  const hw::CurvePoint* point = nullptr;
  double time = 0;      // measured, as the model's realistic time counts it (timing: kernel adds the boundaries back)
  double others = 0;    // the realistic time of the point's kernels of other classes
  std::vector<Parts> mine;  // its kernels of the class
};


hw::System one_chip(const hw::ChipSpec& chip, int chips = 1) {
  hw::System sys;
  sys.chip = chip;
  sys.chips = chips;
  sys.chips_per_node = std::max(chip.chips_per_node, 1);
  return sys;
}

// An elementwise kernel reading `read` bytes and writing `written`.
ops::Cost elementwise_cost(double read, double written) {
  ops::Cost c;
  c.add_main_bytes(read);
  c.add_main_stores(written);
  c.launches = 1;
  return c;
}

// The MoE layer of a one-layer model of the point's shape, as build_forward makes it.
void moe_kernels(const hw::CurvePoint& p, KernelClass cls, const hw::ChipSpec& chip, std::vector<CurveKernel>& out) {
  model::ModelConfig m;
  m.name = "curve point";
  m.model_type = "mixtral";
  m.hidden = static_cast<std::int64_t>(p.hidden);
  m.layers = 1;
  m.heads = m.kv_heads = 1;
  m.head_dim = m.hidden;
  m.intermediate = static_cast<std::int64_t>(p.intermediate);
  m.vocab = 1;
  m.max_positions = 2;
  m.moe.experts = static_cast<std::int64_t>(p.experts);
  m.moe.experts_per_token = static_cast<std::int64_t>(p.topk);
  m.moe.intermediate = m.intermediate;
  m.weight_dtype = p.dtype;
  model::ForwardConfig f;
  f.merged_kernels = true;
  // On a chip AITER runs on the engines run its fused MoE (serving::EngineConfig::rocm_aiter), whose
  // tuner's tables are its curves: two kernels, the activation and the weighted sum in their
  // epilogues, timed alone (csrc/ck_gemm_moe_2stages_codegen/gemm_moe_tune.py: stage 1 and stage
  // 2, no top-k, no sorting).
  const bool aiter = hw::runs_aiter(chip);
  f.moe_fused_epilogues = aiter;
  if (cls == KernelClass::gemm_expert_scaled || cls == KernelClass::gemm_expert_onestage) {
    // Experts in fp8 with a float scale a 128 x 128 block (DeepSeek-V3's quantization_config,
    // the checkpoints this class's kernel runs), in the engines' Triton fused MoE.
    m.quantized = true;
    m.quant.experts_only = true;
    m.quant.dtype = p.dtype;
    m.quant.scale_bits_per_weight = 32.0 / (128 * 128);
    f.scaled_gemm = model::ForwardConfig::ScaledGemm::triton;
    // AITER's one-stage kernel reads each expert's weights once per tile of its rows.
    f.expert_reread_tile = cls == KernelClass::gemm_expert_onestage ? p.tile : 0;
  } else if (cls == KernelClass::gemm_expert_w4a16) {
    // 4-bit experts with an 8-bit scale a 32 (MXFP4: gpt-oss's quantization_config), the rest
    // and the activations 16-bit: the products run in bf16 (W4A16).
    m.quantized = true;
    m.quant.experts_only = true;
    m.quant.dtype = p.dtype;
    m.quant.scale_bits_per_weight = 8.0 / 32;
  } else {
    f.precision.weight = p.dtype;
  }
  model::Graph g;
  model::build_forward(m, f, one_chip(chip), {p.tokens, 1, 1, nullptr}, g);
  for (int i = 0; i < g.op_count; ++i) {
    const model::GraphOp& op = g.ops[i];
    // The engines' MoE kernels take the router's logits: its GEMM is not theirs.
    if (op.block != model::Block::moe || std::string_view(op.name) == "router") continue;
    ops::Cost c;
    c.add_flops(hw::Unit::matrix, op.cost.matrix_dtype, op.cost.matrix_flops);
    c.add_flops(hw::Unit::vector, op.cost.vector_dtype, op.cost.vector_flops);
    c.matrix_pad_flops = op.cost.matrix_pad_flops;  // each tile's fill, where the class has one,
    c.main_pad_bytes = op.cost.main_pad_bytes;      // or on its loads (hw::fill_reads)
    c.add_main_bytes(op.cost.main_bytes - op.cost.main_store_bytes);
    c.add_main_stores(op.cost.main_store_bytes);
    c.launches = 1;
    // The experts' GEMMs are the curve's class (a 4-bit expert the graph would run W4A16 on a
    // chip without fp4 products is still the curve's kernel).
    const bool experts = op.kernel == KernelClass::gemm_expert || op.kernel == KernelClass::gemm_expert_w4a16;
    if (aiter && !experts && op.kernel != cls) continue;
    out.push_back({c, experts ? cls : op.kernel});
  }
}

}  // namespace

std::vector<CurveKernel> point_kernels(const hw::CurvePoint& p, KernelClass cls, const hw::ChipSpec& chip) {
  std::vector<CurveKernel> out;
  switch (p.op) {
    case CurveOp::matmul: {
      if (p.groups > 0) {
        // A grouped GEMM as the graph prices MoE's experts under DeepGEMM (model/transformer.cpp):
        // the groups' rows as one GEMM's FLOPs, each group's weights read once, no tile padding,
        // the activations in the weights' dtype (quantised before it), a bf16 output.
        ops::MatmulShape s;
        s.m = p.m, s.k = p.k, s.n = p.n;
        s.batch = p.groups;
        s.per_sample_weights = true;
        s.a = s.b = s.compute = p.dtype;
        s.out = DType::bf16;
        ops::Cost cost = ops::matmul_cost(s);
        if (p.dtype == DType::fp4) cost.add_main_bytes(p.groups * p.k * p.n * 0.5 / 8);  // NVFP4's scales, as below
        // Each tile's fill (ClassEfficiency::fill_k), over the groups' rows untiled.
        cost.matrix_pad_flops = ops::gemm_pad_flops(p.m, p.n, p.k, p.groups, ops::GemmTiling{}, hw::fill_k(chip.efficiency, cls));
        out.push_back({cost, cls});
        break;
      }
      OpConfig op;
      op.kind = OpKind::matmul;
      op.m = static_cast<std::int64_t>(p.m), op.n = static_cast<std::int64_t>(p.n), op.k = static_cast<std::int64_t>(p.k);
      op.a_dtype = op.b_dtype = p.dtype;
      op.out_dtype = DType::bf16;
      ops::Cost cost = op_cost(op, one_chip(chip));
      // Tiled as the class's kernel spreads its tiles (op_cost's is the BLAS library's).
      cost.matrix_pad_flops = ops::gemm_pad_flops(p.m, p.n, p.k, 1, chip.gemm_sms(), hw::gemm_split_for(chip.gemm_split, cls), hw::fill_k(chip.efficiency, cls));
      // NVFP4's block scales ride with the weights, an e4m3 per 16, as the graph counts them.
      if (p.dtype == DType::fp4) cost.add_main_bytes(p.k * p.n * 0.5 / 8);
      cost.loop_k = p.k;  // one kernel's K loop, as the graph's GEMMs (model/transformer.cpp gemm)
      out.push_back({cost, cls});
      break;
    }
    case CurveOp::decode_attention: {
      ops::AttentionShape a;
      a.batch = p.batch;
      a.q_len = 1;
      a.kv_len = p.kv_len;
      a.heads = p.heads;
      a.kv_heads = p.kv_heads;
      a.head_dim = p.head_dim;
      a.v_head_dim = p.v_head_dim > 0 ? p.v_head_dim : p.head_dim;
      a.latent_kv = p.latent;
      a.causal = true;
      a.dtype = DType::bf16;
      a.kv_dtype = p.dtype;
      // As the graph runs it: in fp8 where the cache is fp8 and the chip has fp8.
      a.compute = is_fp8(p.dtype) && chip.peak(hw::Unit::matrix, p.dtype) > 0 ? p.dtype : DType::bf16;
      out.push_back({ops::attention_cost(a), cls});
      break;
    }
    case CurveOp::rmsnorm: {
      const ops::RowsShape s{p.tokens, p.hidden, p.dtype, DType::fp32};
      ops::Cost c = ops::rmsnorm_cost(s, p.out_dtype);
      if (p.residual) ops::add_residual(c, s);
      out.push_back({c, cls});
      break;
    }
    case CurveOp::group_quant:
      // The benchmark's copy of the input before each call: read and written once.
      if (p.copy) out.push_back({elementwise_cost(p.tokens * p.hidden * bytes(p.dtype), p.tokens * p.hidden * bytes(p.dtype)), KernelClass::pointwise});
      // As the graph prices it (model/transformer.cpp group_quant): 1x128 groups, fp32 scales.
      out.push_back({ops::group_quant_cost({p.tokens, p.hidden, p.dtype, DType::fp32}, p.out_dtype, 128), cls});
      break;
    case CurveOp::elementwise: out.push_back({elementwise_cost(p.bytes / 2, p.bytes / 2), cls}); break;
    case CurveOp::allreduce:
    case CurveOp::alltoall: {
      // An alltoall is DeepEP's kernels as the graph prices them (docs/serving.md#deepep): an
      // all-to-all of the bytes over the chips, direct, placed a node at a time.
      OpConfig op;
      op.kind = p.op == CurveOp::allreduce ? OpKind::allreduce : OpKind::alltoall;
      op.bytes = p.bytes;
      op.chips = p.chips;
      op.algo = comm::Algo::direct;
      op.dtype = DType::bf16;
      out.push_back({op_cost(op, one_chip(chip, p.chips)), cls});
      break;
    }
    case CurveOp::moe: moe_kernels(p, cls, chip, out); break;
    case CurveOp::attention: {
      ops::AttentionShape a;
      a.batch = p.batch;
      a.q_len = a.kv_len = p.kv_len;
      a.heads = p.heads;
      a.kv_heads = p.kv_heads;
      a.head_dim = p.head_dim;
      a.v_head_dim = p.v_head_dim > 0 ? p.v_head_dim : p.head_dim;
      a.causal = p.causal;
      a.tile_keys = hw::class_efficiency(chip.efficiency, KernelClass::attention).tile_keys;
      a.dtype = a.kv_dtype = a.compute = p.dtype;
      out.push_back({ops::attention_cost(a), cls});
      break;
    }
    case CurveOp::attention_combine:
      // As the graph prices the merge after MLA's persistent decode (model/transformer.cpp):
      // every sequence's splits, one output row each.
      out.push_back({ops::attention_combine_cost(p.batch * p.splits, p.batch, p.heads, p.v_head_dim, p.dtype), cls});
      break;
  }
  return out;
}

std::string describe(const hw::CurvePoint& p) {
  switch (p.op) {
    case CurveOp::matmul:
      return p.groups > 0 ? fmt::format("matmul {} group{} of {}x{}x{} {}", p.groups, p.groups > 1 ? "s" : "", p.m, p.n, p.k, name(p.dtype))
                          : fmt::format("matmul {}x{}x{} {}", p.m, p.n, p.k, name(p.dtype));
    case CurveOp::decode_attention:
      return fmt::format("decode_attention b{} kv{} {}/{}x{}{} {}", p.batch, p.kv_len, p.heads, p.kv_heads, p.head_dim,
                         p.latent ? " latent" : "", name(p.dtype));
    case CurveOp::rmsnorm:
      return fmt::format("rmsnorm {}x{}{} {}->{}", p.tokens, p.hidden, p.residual ? " +residual" : "", name(p.dtype),
                         name(p.out_dtype));
    case CurveOp::group_quant:
      return fmt::format("group_quant {}x{}{} {}->{}", p.tokens, p.hidden, p.copy ? " +copy" : "", name(p.dtype), name(p.out_dtype));
    case CurveOp::elementwise: return fmt::format("elementwise {:.4g} MB", p.bytes / 1e6);
    case CurveOp::allreduce: return fmt::format("allreduce {:.4g} KB x{}", p.bytes / 1e3, p.chips);
    case CurveOp::alltoall: return fmt::format("alltoall {:.4g} KB x{}", p.bytes / 1e3, p.chips);
    case CurveOp::moe:
      return fmt::format("moe {} tokens {}x{} {}/{}{} {}", p.tokens, p.hidden, p.intermediate, p.topk, p.experts,
                         p.tile > 0 ? fmt::format(" tile {}", p.tile) : "", name(p.dtype));
    case CurveOp::attention:
      return fmt::format("attention b{} s{} {}/{}x{}{} {}", p.batch, p.kv_len, p.heads, p.kv_heads, p.head_dim,
                         p.causal ? " causal" : "", name(p.dtype));
    case CurveOp::attention_combine:
      return fmt::format("attention_combine b{} x{} splits {}x{} {}", p.batch, p.splits, p.heads, p.v_head_dim, name(p.dtype));
  }
  return "?";
}

namespace {

// The class's curves as rows of the fit on `chip` (its other classes' figures as they are).
std::vector<Row> rows_of(const hw::ChipSpec& chip, KernelClass cls) {
  const ops::Rates rates(chip);
  const ops::Rates::Achievable& own = rates.achievable[static_cast<int>(cls)];
  // cuBLAS's GEMMs fit their share of the chip's measured matmul rate (below); other GEMM
  // kernels (MoE's grouped ones, block-scaled ones) are their own and fit theirs.
  const bool gemm = cls == KernelClass::gemm, shared = !(chip.efficiency.kernel[static_cast<int>(cls)].matrix > 0);
  const double boundary = chip.efficiency.overhead_s;
  std::vector<Row> rows;
  for (const hw::KernelCurve& curve : chip.curves) {
    if (curve.cls != cls) continue;
    for (const hw::CurvePoint& p : curve.points) {
      Row row;
      row.point = &p;
      row.time = p.time_s;
      for (const CurveKernel& k : point_kernels(p, cls, chip)) {
        ops::TimeParts t = ops::time_parts(k.cost, rates);
        t.launch = 0;  // inside a graph, or the kernel alone: no host launch
        // A profiler's kernel time leaves the boundary out: add it back to the measurement.
        if (curve.timing == hw::CurveTiming::kernel) row.time += boundary;
        if (k.cls != cls) {
          row.others += t.realistic(rates, k.cls);
          continue;
        }
        // The class's K-loop time (its own figure, held: fit_looped tries each) a fixed time.
        row.others += t.loop_k * own.k_loop_s;
        Parts parts;
        parts.partner = hw::overlaps_vector(cls) ? kVector : kMemory;
        parts.raw[kMatrix] = t.matrix + t.matrix_pad;
        parts.raw[kVector] = t.vector;
        parts.raw[kMemory] = t.memory + t.memory_pad;
        parts.comm_latency = t.comm_latency;
        parts.raw[kLink] = t.comm - t.comm_latency;
        // cuBLAS's GEMMs run at a share of the chip's measured matmul rate (the best shape's),
        // fitted through their tiling (ClassEfficiency::matmul): the part at that rate, the
        // share the fit's. A dtype without a measured rate, or a class with a matrix fraction
        // of its own (calibrated, the tiling inside it), keeps its rate. A link with an
        // efficiency of its own keeps it.
        if (gemm) {
          const double measured = chip.matmul_achievable_flops_per_s[t.matrix_dtype], peak = chip.matrix_flops_per_s[t.matrix_dtype];
          if (shared && measured > 0 && peak > 0) {
            parts.raw[kMatrix] *= peak / measured;
          } else {
            parts.held[kMatrix] = true, parts.constant[kMatrix] = parts.raw[kMatrix] * own.inv_matrix[t.matrix_dtype];
          }
        }
        // A flash forward over whole prompts overlaps its loads with its math and binds on
        // the matrix part (its tiles' work included) at every size its curve has: its memory
        // and vector parts stay the chip's, not the fit's to free (fit_from holds its fixed
        // time too).
        if (cls == KernelClass::attention) {
          parts.held[kVector] = parts.held[kMemory] = true;
          parts.constant[kVector] = parts.raw[kVector] * own.inv_vector;
          parts.constant[kMemory] = parts.raw[kMemory] * own.inv_memory;
        }
        // The link part is the class's to fit: its fraction replaces the link's own (NCCL's).
        row.mine.push_back(parts);
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

// A part's time at the parameters (the link's latency included).
double part_time(const Parts& k, int part, const std::array<double, kParams>& x) {
  if (part == kOverlap) return x[kOverlap] * (part_time(k, kMatrix, x) + part_time(k, k.partner, x));
  const double t = k.held[part] ? k.constant[part] : k.raw[part] * x[part];
  return part == kLink && k.raw[kLink] + k.comm_latency > 0 ? t + k.comm_latency : t;
}

int binding(const Parts& k, const std::array<double, kParams>& x) {
  int best = kMatrix;
  double t = part_time(k, kMatrix, x);
  for (int part = kVector; part < kParams; ++part) {
    const double v = part_time(k, part, x);
    if (v > t) t = v, best = part;
  }
  return best;
}

double predicted(const Row& r, const std::array<double, kParams>& x) {
  double t = r.others;
  for (const Parts& k : r.mine) t += x[kFixed] + part_time(k, binding(k, x), x);
  return t;
}

CurveFit residuals_at(const std::vector<Row>& rows, KernelClass cls, const std::array<double, kParams>& x) {
  CurveFit fit;
  fit.cls = cls;
  fit.points = static_cast<int>(rows.size());
  double sum2 = 0;
  for (const Row& r : rows) {
    PointResidual pr;
    pr.shape = describe(*r.point);
    pr.measured_s = r.point->time_s;
    // The measurement's own terms: a kernel-timed point is compared without the boundaries.
    pr.predicted_s = predicted(r, x) - (r.time - r.point->time_s);
    pr.residual = pr.predicted_s / pr.measured_s - 1;
    sum2 += pr.residual * pr.residual;
    fit.max_residual = std::max(fit.max_residual, std::abs(pr.residual));
    fit.residuals.push_back(pr);
  }
  fit.rms_residual = rows.empty() ? 0 : std::sqrt(sum2 / static_cast<double>(rows.size()));
  return fit;
}

std::array<double, kParams> current(const hw::ChipSpec& chip, KernelClass cls) {
  const ops::Rates rates(chip);
  const ops::Rates::Achievable& a = rates.achievable[static_cast<int>(cls)];
  // cuBLAS's matrix parameter is 1 / its share of the measured matmul rate (rows_of).
  const double matmul = hw::class_efficiency(chip.efficiency, cls).matmul;
  const double matrix = cls == KernelClass::gemm ? 1 / (matmul > 0 ? matmul : 1) : a.inv_matrix[index(DType::bf16)];
  return {a.overhead_s, matrix, a.inv_vector, a.inv_memory, a.inv_link, a.overlap};
}

// Marks in `freed` the figures a kernel binding on part `s` leaves to the fit: that part's
// unless held, and the matrix part's and its partner's (unless held) when it binds on the
// overlap.
void mark_freed(const Parts& k, int s, std::array<bool, kParams>& freed) {
  if (s != kOverlap) {
    freed[s] = freed[s] || !k.held[s];
    return;
  }
  freed[kOverlap] = true;
  freed[kMatrix] = freed[kMatrix] || !k.held[kMatrix];
  freed[k.partner] = freed[k.partner] || !k.held[k.partner];
}

// Classes whose points are all long enough that they cannot tell a fixed time: it is held at
// what the class takes without a fit (fit_from).
bool holds_fixed(KernelClass cls) {
  return cls == KernelClass::attention || cls == KernelClass::deepep_intranode_dispatch ||
         cls == KernelClass::deepep_intranode_combine || cls == KernelClass::gemm_expert_w4a16;
}

// Classes whose points all run inside the L2 (a benchmark that keeps it warm, at the sizes of
// a decode step): they cannot tell a bandwidth, so the memory fraction is held at what the
// class takes without a fit (its fallback's: the quantisation kernels take the norms', the
// routing kernels the pointwise kernels').
bool holds_memory(KernelClass cls) {
  return cls == KernelClass::quant || cls == KernelClass::routing || cls == KernelClass::routing_compiled;
}

// The fit from the parameters `x`: each point's binding part is decided at x, then again at
// each fit until it settles.
CurveFit fit_from(const std::vector<Row>& rows, KernelClass cls, std::array<double, kParams> x) {
  CurveFit fit;
  if (rows.size() < 2) {
    fit = residuals_at(rows, cls, x);
    fit.notes.push_back(fmt::format("{} point{}: at least 2 are needed", rows.size(), rows.size() == 1 ? "" : "s"));
    return fit;
  }
  std::vector<std::vector<int>> side(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (const Parts& k : rows[i].mine) side[i].push_back(binding(k, x));
  }
  LinearParams<kParams> p;
  bool ok = false, settled = false;
  std::array<bool, kParams> held{};
  // A flash prefill's points run for 100 us and more, DeepEP's normal kernels' inside a node
  // for 500 us and more: they do not tell a fixed time (the chip's kernel boundary stays,
  // rows_of; DeepEP's low-latency kernels' fixed times, hw::fallback).
  const bool hold_fixed = holds_fixed(cls);
  held[kFixed] = hold_fixed;
  held[kMemory] = holds_memory(cls);
  for (int iter = 0; iter < kRounds && !settled; ++iter) {
    std::array<bool, kParams> used{};
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::size_t j = 0; j < rows[i].mine.size(); ++j) mark_freed(rows[i].mine[j], side[i][j], used);
    }
    p.value = x;
    p.fixed = {false, !used[kMatrix], !used[kVector], !used[kMemory], !used[kLink], true};
    const auto row = [&](std::size_t i, std::array<double, kParams>& a, double& rhs, double& w) {
      a = {};
      rhs = rows[i].time - rows[i].others;
      for (std::size_t j = 0; j < rows[i].mine.size(); ++j) {
        const Parts& k = rows[i].mine[j];
        const int s = side[i][j];
        a[kFixed] += 1;
        if (s == kOverlap) {
          // The share is held (fit_class tries each): the matrix part and its partner, times it.
          for (const int part : std::array<int, 2>{kMatrix, k.partner}) {
            if (k.held[part]) {
              rhs -= x[kOverlap] * k.constant[part];
            } else {
              a[part] += x[kOverlap] * k.raw[part];
            }
          }
        } else if (k.held[s]) {
          rhs -= part_time(k, s, x);
        } else {
          a[s] += k.raw[s];
          if (s == kLink) rhs -= k.comm_latency;
        }
      }
      w = 1 / (rows[i].time * rows[i].time);
    };
    for (int i = 0; i < kParams; ++i) {
      if (held[i]) p.fixed[i] = true;
    }
    ok = solve_least_squares<kParams>(rows.size(), row, p);
    if (!ok && !p.fixed[kFixed]) {
      p.fixed[kFixed] = held[kFixed] = true;  // too few distinct sizes for an intercept
      p.value[kFixed] = 0;
      ok = solve_least_squares<kParams>(rows.size(), row, p);
    }
    if (!ok) break;
    // Limits: no negative fixed time, no fraction above 1 (faster than the peak).
    for (int round = 0; round < kParams && ok; ++round) {
      bool changed = false;
      if (p.value[kFixed] < 0 && !p.fixed[kFixed]) p.fixed[kFixed] = held[kFixed] = changed = true, p.value[kFixed] = 0;
      for (int i = kMatrix; i < kOverlap; ++i) {
        if (!p.fixed[i] && p.value[i] < 1) p.fixed[i] = held[i] = changed = true, p.value[i] = 1;
      }
      if (!changed) break;
      ok = solve_least_squares<kParams>(rows.size(), row, p);
    }
    if (!ok) break;
    x = p.value;
    settled = true;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::size_t j = 0; j < rows[i].mine.size(); ++j) {
        const int s = binding(rows[i].mine[j], x);
        if (s != side[i][j]) side[i][j] = s, settled = false;
      }
    }
  }
  fit = residuals_at(rows, cls, x);
  if (!ok) {
    fit.notes.push_back("the points do not determine a fit (too few distinct sizes)");
    return fit;
  }
  if (!settled) fit.notes.push_back(fmt::format("which part binds did not settle in {} rounds; the last fit is kept", kRounds));
  if (held[kFixed] && !hold_fixed) fit.notes.push_back("fixed time held at 0 (the fit wanted none or a negative one)");
  static constexpr const char* kPart[kParams] = {"", "matrix", "vector", "memory", "link", "overlap"};
  // cuBLAS's matrix parameter is its share of the measured matmul rate (rows_of), the others
  // fractions of the peaks.
  const auto is_share = [&](int i) { return i == kMatrix && cls == KernelClass::gemm; };
  const auto what = [&](int i) { return is_share(i) ? std::string("share of the measured matmul rate") : std::string(kPart[i]) + " fraction"; };
  for (int i = kMatrix; i < kOverlap; ++i) {
    if (held[i] && p.value[i] == 1 && !(i == kMemory && holds_memory(cls))) {
      fit.past_peak = true;
      fit.notes.push_back(fmt::format("{} held at 1: points ran faster than {}", what(i),
                                      is_share(i) ? "it (the tiling or the chip's rate is off)" : "the peak (the counts or the chip's peak are off)"));
    }
  }
  fit.fitted = true;
  fit.efficiency.overhead_s = x[kFixed];  // (held: the class's own figure or the chip's, fit_class says which)
  std::array<bool, kParams> bound{};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = 0; j < rows[i].mine.size(); ++j) mark_freed(rows[i].mine[j], side[i][j], bound);
  }
  if (bound[kOverlap]) fit.efficiency.overlap = x[kOverlap];
  double* out[kParams] = {nullptr, is_share(kMatrix) ? &fit.efficiency.matmul : &fit.efficiency.matrix,
                          &fit.efficiency.vector, &fit.efficiency.memory, &fit.efficiency.link};
  for (int i = kMatrix; i < kOverlap; ++i) {
    if (!bound[i]) continue;
    *out[i] = 1 / x[i];
    if (*out[i] < kMinFraction) {
      fit.fitted = false;
      fit.notes.push_back(fmt::format("{} {:.3g} is below {}: the counts are missing or wrong; not used", what(i), *out[i], kMinFraction));
    }
  }
  if (fit.rms_residual > 0.5) {
    fit.fitted = false;
    fit.notes.push_back(fmt::format("rms residual {:.0f}%: the points do not follow one fixed time plus a rate; not used",
                                    100 * fit.rms_residual));
  }
  return fit;
}

// The class's fit with its overlap share held at `overlap` (0.5: never binding).
CurveFit fit_held(const std::vector<Row>& rows, const hw::ChipSpec& chip, KernelClass cls, double overlap) {
  std::array<double, kParams> x = current(chip, cls);
  x[kOverlap] = overlap;
  CurveFit best = fit_from(rows, cls, x);
  // A fit frees only the parts its points bind on: a grouped or block-scaled GEMM class
  // starting from the chip-wide matrix rate may never let its largest points bind on the
  // matrix, though they run far below it (vLLM's fused MoE at 1024 tokens). Starts at a half,
  // a quarter and an eighth of the first start's rate (the class's figure in the file, else
  // the chip-wide one) let them (trtllm-gen's NVFP4 MoE on a B200 runs at 0.19 of the fp4
  // peak, under the half-rate start's reach); each fit is kept when it brings the rms residual
  // of the best before it down by a tenth or more (a fraction freed for a point or two of
  // noise is not). cuBLAS's class starts at the chip's measured rate, the best shape's, and
  // needs none.
  if (cls != KernelClass::gemm && rows.size() >= 2) {
    for (int start = 0; start < 3; ++start) {
      x[kMatrix] *= 2;
      CurveFit other = fit_from(rows, cls, x);
      if (other.fitted && (!best.fitted || other.rms_residual < 0.9 * best.rms_residual)) best = std::move(other);
    }
  }
  return best;
}

// Tile work tried for the attention class (ClassEfficiency::tile_keys): 0 to 1024 keys.
constexpr int kMaxTileKeys = 1024;

// The attention class's fit: its tile work and its overlap share held in turn, the rest fitted.
CurveFit fit_attention(const hw::ChipSpec& chip) {
  constexpr KernelClass cls = KernelClass::attention;
  // A flash prefill's tile work (docs/cost-model.md#attention-tiles) and its overlap share
  // (the matmuls' and the softmax's, docs/cost-model.md#overlap) are not least-squares
  // unknowns: the work enters every point through its tiles' count, at the matrix fraction;
  // the share's product with it would make the error a surface of several minima. Each pair
  // is held in turn: every key from 0 to 1024 without a share (0.5), every 16th with shares
  // 0.52 to 1 in steps of 0.02 too, then around the best of those (every key within 16, shares
  // within 0.02 in steps of 0.01); the pair of least rms residual is kept (of equals, the first
  // tried: within a pass the least work and the least share). A share is kept only when its
  // fit is a tenth or more under the best without one, as for the GEMM classes.
  hw::ChipSpec c = chip;
  hw::ClassEfficiency& e = c.efficiency.kernel[static_cast<int>(cls)];
  CurveFit best, plain;
  bool any = false, any_plain = false;
  int best_keys = 0;
  double best_share = 0.5;
  const auto consider = [&](const std::vector<Row>& rows, int keys, double share) {
    CurveFit f = fit_held(rows, c, cls, share);
    if (!f.fitted) return;
    f.efficiency.tile_keys = keys;
    if (share == 0.5 && (!any_plain || f.rms_residual < plain.rms_residual - 1e-12)) plain = f, any_plain = true;
    if (!any || f.rms_residual < best.rms_residual - 1e-12) best = std::move(f), any = true, best_keys = keys, best_share = share;
  };
  // The shares from `from` to `to` (whole hundredths) in steps of `step` at `keys`, and none
  // (0.5) if `unshared`.
  const auto scan = [&](int keys, bool unshared, double from, double to, double step) {
    e.tile_keys = keys;
    const std::vector<Row> rows = rows_of(c, cls);
    if (unshared) consider(rows, keys, 0.5);
    for (double s = std::max(0.51, from); s <= std::min(1.0, to) + 1e-9; s += step) consider(rows, keys, std::round(s * 100) / 100);
  };
  for (int keys = 0; keys <= kMaxTileKeys; ++keys) scan(keys, true, keys % 16 == 0 ? 0.52 : 2, 1, 0.02);
  if (!any) return fit_held(rows_of(chip, cls), chip, cls, 0.5);
  const int k0 = best_keys;
  const double s0 = best_share;
  for (int keys = std::max(0, k0 - 16); keys <= std::min(kMaxTileKeys, k0 + 16); ++keys) scan(keys, false, s0 - 0.02, s0 + 0.02, 0.01);
  if (any_plain && best.efficiency.overlap > 0.5 && !(best.rms_residual < 0.9 * plain.rms_residual)) best = plain;
  // The fixed time was held at the class's own (or, without one, the chip's kernel
  // boundary): what the class keeps.
  best.efficiency.overhead_s = chip.efficiency.kernel[static_cast<int>(cls)].overhead_s;
  if (best.efficiency.tile_keys == kMaxTileKeys) {
    best.notes.push_back(fmt::format("tile work held at {} keys, the most tried: the points want more", kMaxTileKeys));
  }
  return best;
}

// GEMM classes whose fit holds each overlap share in turn (fit_rates): one GEMM a kernel, not
// a fused MoE's several, but on a chip AITER runs on, whose `moe` points are its fused MoE's
// two GEMMs alone (moe_kernels: no top-k, the activation and the sum in their epilogues),
// each a GEMM whose loads and products overlap as a dense one's do.
bool scans_overlap(const hw::ChipSpec& chip, KernelClass cls) {
  if (hw::parent(cls) != KernelClass::gemm) return false;
  const bool fused_moe =
      cls == KernelClass::gemm_expert || cls == KernelClass::gemm_expert_scaled || cls == KernelClass::gemm_expert_w4a16 ||
      cls == KernelClass::gemm_expert_onestage;
  return !fused_moe || hw::runs_aiter(chip);
}

// The class's fit at the chip's figures of what it does not fit (fit_class, below).
CurveFit fit_rates(const hw::ChipSpec& chip, KernelClass cls) {
  const std::vector<Row> rows = rows_of(chip, cls);
  CurveFit best = fit_held(rows, chip, cls, 0.5);
  // A held fixed time is the class's own figure (0: none, the one it falls back to applies).
  if (holds_fixed(cls)) best.efficiency.overhead_s = chip.efficiency.kernel[static_cast<int>(cls)].overhead_s;
  if (holds_memory(cls)) best.efficiency.memory = chip.efficiency.kernel[static_cast<int>(cls)].memory;
  if (rows.size() < 2 || !best.fitted) return best;
  // The overlap share (docs/cost-model.md#overlap) is not a least-squares unknown: its product
  // with the memory fraction would make the fit's error a surface of several minima. Each
  // share from 0.51 to 1 in steps of 0.01 is held in turn and the rest fitted as above; the
  // one of least rms residual is kept when that is at least a tenth under the fit without a
  // share (0.5). Whatever the chip file says, then, the fit is the same. Only for one GEMM a
  // kernel (scans_overlap): elsewhere a `moe` point is several kernels (top-k, two grouped
  // GEMMs, activation, sum), and its share trades against its matrix fraction (Mixtral's and
  // Qwen3's fused MoE on an H100 fit as well with matrix 0.48 and no share as with 0.98 and
  // 0.88): not told apart; on a chip AITER runs on it is AITER's two GEMMs alone.
  if (!scans_overlap(chip, cls)) return best;
  const double base = best.rms_residual;
  for (int step = 51; step <= 100; ++step) {
    CurveFit other = fit_held(rows, chip, cls, step / 100.0);
    // (and by more than rounding: where the fit without a share is exact, a share can be too)
    if (other.fitted && other.rms_residual < 0.9 * base && other.rms_residual < base - 1e-9 &&
        (best.efficiency.overlap <= 0 || other.rms_residual < best.rms_residual)) {
      best = std::move(other);
    }
  }
  return best;
}

// Columns of K tried for a GEMM class's tile fill (ClassEfficiency::fill_k): 0 to 2048.
constexpr int kMaxFillK = 2048;

// Classes whose curves vary K enough to tell each tile's fill from the rate: DeepGEMM's (its
// dense table's K runs from 512 to 16384; its grouped GEMMs' 2048 and 7168), and the Triton
// fused MoE of block-scaled experts, whose fill costs its loads instead (hw::fill_reads; the
// H200's curves have K of 256 to 7168 in their two GEMMs).
bool fits_fill(KernelClass cls) {
  return cls == KernelClass::gemm_scaled_deepgemm || cls == KernelClass::gemm_expert_deepgemm || cls == KernelClass::gemm_expert_scaled;
}

// The best of a class's fits with one figure held in turn (`hold(c, v)` writes value v into the
// chip copy c; fit_rates fits the rest): every `step` from `step` to `most`, then every `fine`
// within step − fine of the best; of equals, the first tried. `best` starts as the fit without
// the figure (value 0) and is replaced only by a fit of a lower rms residual; returns the value.
template <class Hold>
int scan_held(const hw::ChipSpec& chip, KernelClass cls, int step, int most, int fine, CurveFit& best, Hold hold) {
  hw::ChipSpec c = chip;
  int best_v = 0;
  const auto consider = [&](int v) {
    hold(c, v);
    CurveFit f = fit_rates(c, cls);
    if (!f.fitted || !(f.rms_residual < best.rms_residual - 1e-12)) return;
    best = std::move(f), best_v = v;
  };
  for (int v = step; v <= most; v += step) consider(v);
  const int v0 = best_v;
  for (int v = std::max(fine, v0 - (step - fine)); v <= std::min(most, v0 + (step - fine)); v += fine) {
    if (v != v0) consider(v);
  }
  return best_v;
}

// A GEMM class's fit with its tile fill held in turn (fit_rates for the rest): the fill enters
// every point through its K at the matrix fraction (at the memory fraction, on the experts'
// weights, for a class whose fill costs its loads: hw::fill_reads), its product with which is
// not a least-squares unknown (as attention's tile work, fit_attention). Every 32nd column of K
// from 0 to 2048, then every one within 31 of the best; the least rms residual is kept (of
// equals, the first tried), and kept only when it is a tenth or more under the fit without a
// fill, as an overlap share is, or where the fit without one held a fraction at 1 (points
// faster than a peak) and the fill's holds none: the fill is what let those points run as fast.
CurveFit fit_filled(const hw::ChipSpec& chip, KernelClass cls) {
  hw::ChipSpec c = chip;
  c.efficiency.kernel[static_cast<int>(cls)].fill_k = 0;
  CurveFit plain = fit_rates(c, cls), best = plain;
  if (!plain.fitted) return plain;
  const int best_fill = scan_held(c, cls, 32, kMaxFillK, 1, best, [cls](hw::ChipSpec& h, int k) { h.efficiency.kernel[static_cast<int>(cls)].fill_k = k; });
  best.efficiency.fill_k = best_fill;
  const bool admits = plain.past_peak && !best.past_peak;
  if (best_fill == 0 || !(best.rms_residual < 0.9 * plain.rms_residual || admits)) return plain;
  if (best_fill == kMaxFillK) best.notes.push_back(fmt::format("tile fill held at {} columns of K, the most tried: the points want more", kMaxFillK));
  return best;
}

// K-loop times tried for a GEMM class (ClassEfficiency::k_loop_s), in picoseconds a column of
// K: every 250 from 250 to 10000, then every 10 within 240 of the best (scan_held).
constexpr int kMaxKLoopPs = 10000;

// A GEMM class's fit with its K-loop time held in turn (fit_rates for the rest), for a class
// whose file gives it one (a kernel that never splits a tile's K loop: the file says so by
// the figure; the fit finds its value): the time enters every point as a fixed time, K times
// it a kernel, whose product with the fixed time and the fractions is not a least-squares
// unknown. The least rms residual is kept (of equals, the first tried), and kept only when it
// is a tenth or more under the fit without one, as a tile fill is.
CurveFit fit_looped(const hw::ChipSpec& chip, KernelClass cls) {
  hw::ChipSpec c = chip;
  c.efficiency.kernel[static_cast<int>(cls)].k_loop_s = 0;
  CurveFit plain = fit_rates(c, cls), best = plain;
  if (!plain.fitted) return plain;
  const int best_ps = scan_held(c, cls, 250, kMaxKLoopPs, 10, best,
                                [cls](hw::ChipSpec& h, int ps) { h.efficiency.kernel[static_cast<int>(cls)].k_loop_s = ps * 1e-12; });
  best.efficiency.k_loop_s = best_ps * 1e-12;
  if (best_ps == 0 || !(best.rms_residual < 0.9 * plain.rms_residual)) return plain;
  if (best_ps == kMaxKLoopPs) best.notes.push_back(fmt::format("K-loop time held at {} ns a column, the most tried: the points want more", kMaxKLoopPs / 1000));
  return best;
}

CurveFit fit_class(const hw::ChipSpec& chip, KernelClass cls) {
  if (cls == KernelClass::attention) return fit_attention(chip);
  if (chip.efficiency.kernel[static_cast<int>(cls)].k_loop_s > 0) return fit_looped(chip, cls);
  return fits_fill(cls) ? fit_filled(chip, cls) : fit_rates(chip, cls);
}

// Classes in an order where each one's points see the fits of the classes they also run.
constexpr KernelClass kOrder[] = {KernelClass::pointwise,  KernelClass::norm,      KernelClass::quant,       KernelClass::routing,
                                  KernelClass::routing_compiled, KernelClass::sampling, KernelClass::attention_combine,
                                  KernelClass::gemm,       KernelClass::gemm_scaled, KernelClass::gemm_scaled_deepgemm, KernelClass::attention,
                                  KernelClass::attention_decode, KernelClass::attention_decode_mla, KernelClass::attention_backward,
                                  KernelClass::collective,
                                  KernelClass::allreduce_custom,   KernelClass::allreduce_norm, KernelClass::deepep_dispatch, KernelClass::deepep_combine,
                                  KernelClass::deepep_intranode_dispatch, KernelClass::deepep_intranode_combine,
                                  KernelClass::gemm_expert, KernelClass::gemm_expert_scaled, KernelClass::gemm_expert_onestage,
                                  KernelClass::gemm_expert_deepgemm,
                                  KernelClass::gemm_expert_w4a16, KernelClass::gemm_fp8};
static_assert(std::size(kOrder) == hw::kKernelClassCount - 1, "every class but `other` is fitted in order");

bool has_curves(const hw::ChipSpec& chip, KernelClass cls) {
  return std::any_of(chip.curves.begin(), chip.curves.end(), [&](const hw::KernelCurve& k) { return k.cls == cls; });
}

}  // namespace

std::vector<CurveFit> fit_curves(const hw::ChipSpec& chip) {
  std::vector<CurveFit> fits;
  hw::ChipSpec c = chip;
  for (const KernelClass cls : kOrder) {
    if (!has_curves(c, cls)) continue;
    fits.push_back(fit_class(c, cls));
    c = with_curve_fits(c, {fits.back()});
  }
  return fits;
}

hw::ChipSpec with_curve_fits(const hw::ChipSpec& chip, const std::vector<CurveFit>& fits) {
  hw::ChipSpec c = chip;
  for (const CurveFit& f : fits) {
    if (!f.fitted) continue;
    hw::ClassEfficiency& e = c.efficiency.kernel[static_cast<int>(f.cls)];
    e.overhead_s = f.efficiency.overhead_s;
    if (f.efficiency.matrix > 0) e.matrix = f.efficiency.matrix;
    if (f.efficiency.vector > 0) e.vector = f.efficiency.vector;
    if (f.efficiency.memory > 0) e.memory = f.efficiency.memory;
    if (f.efficiency.link > 0) e.link = f.efficiency.link;
    // A class whose fit tries every share keeps the one it found, or none (0) where it kept
    // none, whatever the file said.
    if (f.efficiency.overlap > 0 || scans_overlap(chip, f.cls)) e.overlap = f.efficiency.overlap;
    if (f.efficiency.matmul > 0) e.matmul = f.efficiency.matmul;
    if (f.cls == KernelClass::attention) e.tile_keys = f.efficiency.tile_keys;
    if (fits_fill(f.cls)) e.fill_k = f.efficiency.fill_k;
    // A class whose file gives a K-loop time keeps the one its fit found (0: none helped).
    if (e.k_loop_s > 0) e.k_loop_s = f.efficiency.k_loop_s;
  }
  return c;
}

std::vector<CurveFit> curve_residuals(const hw::ChipSpec& chip) {
  std::vector<CurveFit> out;
  for (const KernelClass cls : kOrder) {
    if (!has_curves(chip, cls)) continue;
    CurveFit f = residuals_at(rows_of(chip, cls), cls, current(chip, cls));
    f.efficiency = hw::class_efficiency(chip.efficiency, cls);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ridgeline::analysis
