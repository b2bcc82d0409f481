#include "ridgeline/analysis/fusion.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ridgeline/core/error.hpp"

namespace ridgeline::analysis {

namespace {

// A kernel that moves `bytes` and does `flops` vector FLOPs (fp32); `stored` of the bytes
// are its output, stored to lines it has not read.
ops::Cost kernel(double bytes_, double stored, double flops) {
  ops::Cost c;
  c.add_main_bytes(bytes_ - stored);
  c.add_main_stores(stored);
  c.add_flops(hw::Unit::vector, DType::fp32, flops);
  c.launches = 1;
  return c;
}

// A kernel's realistic time replayed in a CUDA graph: no launch, its boundary if it is a
// kernel of its own (an epilogue runs inside its GEMM's).
double in_graph(const ops::Cost& c, const ops::Rates& rates) {
  ops::TimeParts p = ops::time_parts(c, rates);
  p.launch = 0;
  const double t = p.realistic(rates, hw::KernelClass::pointwise);
  return c.launches > 0 ? t : t - rates.achievable[static_cast<int>(hw::KernelClass::pointwise)].overhead_s;
}

}  // namespace

FusionResult analyze_fusion(const model::ModelConfig& m, const hw::ChipSpec& chip, const FusionConfig& cfg) {
  if (cfg.tokens < 1 || cfg.tokens > (std::int64_t{1} << 26)) {
    throw InputError(fmt::format("--tokens: {} is out of range: expected 1 to 67108864", cfg.tokens));
  }
  if (cfg.tp < 1 || m.heads % cfg.tp != 0) throw InputError(fmt::format("--tp: {} does not divide the {} heads", cfg.tp, m.heads));
  FusionResult r;
  r.layers = static_cast<double>(m.layers);
  const ops::Rates rates(chip);
  const double T = static_cast<double>(cfg.tokens), h = static_cast<double>(m.hidden), s = 2;  // bf16 activations
  const double I = static_cast<double>(m.is_moe() ? m.moe.intermediate : m.intermediate) / static_cast<double>(cfg.tp);
  const double hd = static_cast<double>(m.head_dim);
  const double qk = (static_cast<double>(m.heads) + static_cast<double>(m.kv_heads)) / static_cast<double>(cfg.tp) * hd;
  const double Th = T * h * s, TI = T * I * s;

  auto add = [&](const char* name, const char* chain, FusionKind kind, double per_layer, std::initializer_list<ops::Cost> unfused,
                 ops::Cost fused, const char* note, bool alternative = false) {
    // An epilogue runs inside the GEMM's kernel: no launch of its own.
    if (kind == FusionKind::epilogue) fused.launches = 0;
    FusionCandidate c;
    c.name = name;
    c.chain = chain;
    c.kind = kind;
    c.per_layer = per_layer;
    double graph_unfused = 0;
    for (const auto& k : unfused) {
      const ops::Estimate e = ops::estimate(k, chip);
      c.unfused_bytes += e.main_bytes;
      c.unfused_launches += k.launches;
      c.t_unfused_s += e.t_lower_s;
      graph_unfused += in_graph(k, rates);
    }
    const ops::Estimate e = ops::estimate(fused, chip);
    c.fused_bytes = e.main_bytes;
    c.fused_launches = fused.launches;
    c.t_fused_s = e.t_lower_s;
    c.saved_per_pass_s = (c.t_unfused_s - c.t_fused_s) * per_layer * r.layers;
    c.saved_in_graph_per_pass_s = (graph_unfused - in_graph(fused, rates)) * per_layer * r.layers;
    c.note = note;
    c.alternative = alternative;
    if (!alternative) {
      r.saved_per_pass_s += c.saved_per_pass_s;
      r.saved_in_graph_per_pass_s += c.saved_in_graph_per_pass_s;
      r.launches_saved_per_pass += (c.unfused_launches - c.fused_launches) * per_layer * r.layers;
    }
    r.candidates.push_back(c);
  };

  // RMSNorm as eager PyTorch runs it: x.pow(2) -> mean -> + eps, rsqrt -> x * rstd -> * weight.
  add("rmsnorm", "pow, mean, rsqrt, mul, mul", FusionKind::vertical, 2,
      {kernel(2 * Th, Th, T * h), kernel(Th + T * 4, T * 4, T * h), kernel(2 * T * 4, T * 4, 2 * T), kernel(2 * Th + T * 4, Th, T * h),
       kernel(2 * Th + h * s, Th, T * h)},
      kernel(2 * Th + h * s, Th, 4 * T * h + 2 * T), "one pass: read x and the weight, write y");
  // The residual add feeding the next norm: add (2 in, 1 out) then the fused norm (1 in, 1 out).
  add("residual_add+rmsnorm", "add, rmsnorm", FusionKind::vertical, 2, {kernel(3 * Th, Th, T * h), kernel(2 * Th + h * s, Th, 4 * T * h)},
      kernel(4 * Th + h * s, 2 * Th, 5 * T * h), "read x and the residual once, write the new residual and the normed output");
  // RoPE in eager PyTorch: q*cos, rotate_half(q) (slice, negate, concatenate), *sin, add.
  const double tq = T * qk * s, tables = 2 * T * hd / 2 * s;
  add("rope", "mul cos, rotate_half, mul sin, add", FusionKind::vertical, 1,
      {kernel(2 * tq + tables / 2, tq, T * qk), kernel(2 * tq, tq, T * qk / 2), kernel(2 * tq + tables / 2, tq, T * qk),
       kernel(3 * tq, tq, T * qk)},
      kernel(2 * tq + tables, tq, 3 * T * qk), "rotate q and k in registers");
  // SwiGLU: SiLU then the multiply (seed 000 counts them apart).
  if (m.mlp != model::MlpKind::gelu) {
    add("silu*mul", "silu, mul", FusionKind::vertical, 1, {kernel(2 * TI, TI, 4 * T * I), kernel(3 * TI, TI, T * I)},
        kernel(3 * TI, TI, 6 * T * I),
        "read gate and up, write the product");
  }
  if (cfg.dit) {
    // DiT AdaLN: LayerNorm then modulate x·(1 + scale) + shift (per-sample vectors).
    add("layernorm+modulate", "layernorm, modulate", FusionKind::vertical, 2, {kernel(2 * Th + 2 * h * s, Th, 7 * T * h), kernel(2 * Th, Th, 2 * T * h)},
        kernel(2 * Th + 2 * h * s, Th, 9 * T * h), "normalise and modulate in one pass");
    add("gate*y+residual", "mul, add", FusionKind::vertical, 2, {kernel(2 * Th, Th, T * h), kernel(3 * Th, Th, T * h)},
        kernel(3 * Th, Th, 2 * T * h),
        "x + gate·y in one pass");
  }
  // Epilogues: work a separate kernel does on the GEMM's output Y[T, n] while it is still in
  // registers. addmm's accumulator (C = beta·C + A·B) takes the bias OR the residual, not both.
  const double Tn = T * h * s;  // the projections back to h (o_proj, down_proj)
  add("gemm+bias(addmm)", "gemm, bias add", FusionKind::epilogue, 2, {kernel(2 * Tn + h * s, Tn, T * h)}, kernel(h * s, 0, 0),
      "torch.addmm: the bias in the accumulator; the residual then needs its own kernel", true);
  add("gemm+residual(addmm)", "gemm, residual add", FusionKind::epilogue, 2, {kernel(3 * Tn, Tn, T * h)}, kernel(Tn, 0, 0),
      "torch.addmm with the residual as C: the bias must then be folded elsewhere", true);
  add("gemm+bias+act+residual", "gemm, bias, activation, residual add", FusionKind::epilogue, 2,
      {kernel(2 * Tn + h * s, Tn, T * h), kernel(2 * Tn, Tn, 8 * T * h), kernel(3 * Tn, Tn, T * h)}, kernel(Tn + h * s, 0, 10 * T * h),
      "a custom epilogue (CUTLASS, Triton, Inductor): only the residual is read");
  return r;
}

BucketWaste bucket_waste(const std::vector<std::int64_t>& buckets, std::int64_t min_len, std::int64_t max_len) {
  if (buckets.empty()) throw InputError("--buckets: expected a list such as 128,256,512,1024");
  if (min_len < 1 || max_len < min_len) {
    throw InputError(fmt::format("--lengths: {}..{} is not a range of positive lengths", min_len, max_len));
  }
  std::vector<std::int64_t> b = buckets;
  std::sort(b.begin(), b.end());
  if (b.front() < 1) throw InputError("--buckets: sizes must be positive");
  if (max_len > b.back()) {
    throw InputError(fmt::format("--lengths: {} exceeds the largest bucket {}", max_len, b.back()));
  }
  // Uniform lengths: sum exactly per bucket span.
  double sum_len = 0, sum_pad = 0;
  std::int64_t lo = min_len;
  for (std::int64_t bucket : b) {
    if (lo > max_len) break;
    if (bucket < lo) continue;
    const std::int64_t hi = std::min(bucket, max_len);
    const double n = static_cast<double>(hi - lo + 1);
    sum_len += (static_cast<double>(lo) + static_cast<double>(hi)) * n / 2;
    sum_pad += static_cast<double>(bucket) * n;
    lo = hi + 1;
  }
  const double count = static_cast<double>(max_len - min_len + 1);
  BucketWaste w;
  w.mean_length = sum_len / count;
  w.mean_padded = sum_pad / count;
  w.waste_fraction = 1 - sum_len / sum_pad;
  return w;
}

}  // namespace ridgeline::analysis
