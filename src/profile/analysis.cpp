#include "ridgeline/profile/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>

namespace ridgeline::profile {

namespace {

// Case-insensitive: does `text` contain `part` (lower case)?
bool has(std::string_view text, std::string_view part) noexcept {
  if (part.size() > text.size()) return false;
  for (std::size_t i = 0; i + part.size() <= text.size(); ++i) {
    std::size_t k = 0;
    while (k < part.size() && std::tolower(static_cast<unsigned char>(text[i + k])) == part[k]) ++k;
    if (k == part.size()) return true;
  }
  return false;
}

bool any(std::string_view text, std::initializer_list<std::string_view> parts) noexcept {
  for (std::string_view p : parts) {
    if (has(text, p)) return true;
  }
  return false;
}

}  // namespace

std::string_view kernel_category(std::string_view name, std::string_view op) noexcept {
  // Library and framework kernel names, first match wins: collectives (NCCL, RCCL, engines'
  // custom all-reduce), copies, attention (FlashAttention, FMHA, paged attention, SDPA),
  // layout transforms, GEMMs and convolutions (cuBLAS and its epilogues, CUTLASS, cuDNN,
  // Tensile's Cijk, Triton matmuls), reductions and pooling, elementwise and norms.
  if (any(name, {"nccl", "rccl", "all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter", "reducescatter",
                 "alltoall", "all_to_all", "cross_device_reduce"})) {
    return "communication";
  }
  if (any(name, {"memcpy", "memset"})) return "memcpy/memset";
  if (any(name, {"flash", "fmha", "attention", "attn", "sdpa", "mha_", "xformers"})) return "attention";
  if (any(name, {"nchwtonhwc", "nhwctonchw", "transpose"})) return "elementwise/norm";
  if (any(name, {"gemm", "gemv", "cublas", "cutlass", "xmma", "wgmma", "matmul", "cijk_", "_mm_", "triton_tem_fused_mm",
                 "triton_tem_fused_addmm", "triton_tem_fused_bmm", "cudnn", "conv", "fprop", "dgrad", "wgrad", "fft2d", "epilogue"})) {
    return "gemm";
  }
  if (any(name, {"reduce", "triton_red", "triton_per", "softmax", "argmax", "topk", "cumsum", "scan", "pool"})) return "reduction";
  if (any(name, {"elementwise", "vectorized", "norm", "triton_poi", "copy", "fill", "cat_", "index", "gelu", "silu", "swiglu",
                 "act_and_mul", "rotary", "rope", "dropout", "unrolled", "where", "embedding", "scatter", "gather"})) {
    return "elementwise/norm";
  }
  // Unrecognised names: what the launching op computes.
  if (any(op, {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::_scaled_mm"})) return "gemm";
  if (any(op, {"attention", "flash"})) return "attention";
  if (any(op, {"aten::sum", "aten::mean", "aten::max", "aten::min", "aten::softmax", "aten::_softmax", "aten::norm"})) return "reduction";
  if (any(op, {"aten::"})) return "elementwise/norm";
  return "other";
}

ProfileAnalysis analyze(const Profile& p, const hw::ChipSpec& chip, DType tensor_dtype) {
  // Aggregate by kernel name, in order of first appearance.
  std::vector<KernelLaunch> agg;
  std::map<std::string, size_t> index;
  for (const auto& k : p.launches) {
    // A record stands for `count` launches of these per-launch figures: totals over them.
    auto [it, fresh] = index.try_emplace(k.name, agg.size());
    if (fresh) {
      KernelLaunch& a = agg.emplace_back();
      a.name = k.name;
      a.count = 0;
    }
    KernelLaunch& a = agg[it->second];
    add_launches(a, k);
    if (a.op.empty()) a.op = k.op;
  }
  ProfileAnalysis r;
  r.chip = chip.name;
  const double bw = chip.main_bandwidth_Bps();
  for (const auto& a : agg) {
    KernelSummary s;
    s.name = a.name;
    s.count = a.count;
    s.time_s = a.duration_s;
    s.bytes = a.dram_bytes;
    s.has_flops = a.has_flops;
    s.has_bytes = a.has_bytes;
    s.estimated = a.flops_estimated;
    s.op = a.op;
    // The roof belongs to where most FLOPs ran: tensor cores at the given dtype, or the
    // vector unit in fp64 / fp32 / fp16.
    struct Part {
      double flops;
      hw::Unit unit;
      DType dtype;
    };
    const Part parts[] = {{a.flops_tensor, hw::Unit::matrix, tensor_dtype},
                          {a.flops_fp64, hw::Unit::vector, DType::fp64},
                          {a.flops_fp32, hw::Unit::vector, DType::fp32},
                          {a.flops_fp16, hw::Unit::vector, DType::fp16}};
    double t_math = 0;
    const Part* main = &parts[2];
    for (const auto& pt : parts) {
      s.flops += pt.flops;
      if (pt.flops > main->flops) main = &pt;
      const double peak = chip.peak(pt.unit, pt.dtype);
      if (pt.flops > 0 && peak > 0) t_math += pt.flops / peak;
    }
    s.unit = main->unit;
    s.dtype = main->dtype;
    const double peak = chip.peak(s.unit, s.dtype);
    const double t_mem = bw > 0 ? s.bytes / bw : 0;
    // Every launch pays the kernel boundary too (docs/cost-model.md#kernel-boundaries): no
    // kernel, however small, gets below it, so no gap claims it.
    s.t_floor_s = s.count * chip.efficiency.overhead_s;
    s.t_at_roof_s = s.t_floor_s + std::max(t_math, t_mem);
    s.t_math_s = t_math;
    s.t_memory_s = t_mem;
    s.intensity_flops_per_byte = s.bytes > 0 ? s.flops / s.bytes : 0;
    s.attained_flops_per_s = s.time_s > 0 ? s.flops / s.time_s : 0;
    s.attained_Bps = s.time_s > 0 ? s.bytes / s.time_s : 0;
    s.bound = t_math >= t_mem ? ops::Bound::compute : ops::Bound::memory;
    if (s.flops > 0 && peak > 0) {
      s.roof_flops_per_s = s.bytes > 0 ? std::min(peak, bw * s.intensity_flops_per_byte) : peak;
      s.fraction_of_roof = s.attained_flops_per_s / s.roof_flops_per_s;
    } else if (bw > 0) {
      // No FLOPs: the roof is the memory bandwidth.
      s.fraction_of_roof = s.attained_Bps / bw;
    }
    s.gap_s = s.time_s - s.t_at_roof_s;
    // Beyond the noise of a profile (1%), faster than the roof means the model is wrong.
    s.above_roof = s.time_s > 0 && s.time_s < 0.99 * s.t_at_roof_s;
    // No byte count: the intensity is unknown, so is the bound (FLOPs alone put a kernel at
    // 0 FLOP/B, which reads compute-bound) and what a roof would save. Nothing counted at all
    // likewise.
    s.unknown = !s.has_bytes || (!(s.has_flops && s.flops > 0) && !(s.bytes > 0));
    // Off the roofline, but FLOPs alone faster than the chip's peak still cannot be: such a
    // kernel keeps its compute floor as the roof's time the warning names.
    if (s.unknown) {
      s.gap_s = s.fraction_of_roof = s.t_floor_s = 0;
      if (!s.above_roof) s.t_at_roof_s = 0;
    }
    r.total_kernel_time_s += s.time_s;
    r.total_launches += s.count;
    if (s.unknown) r.unknown_time_s += s.time_s;
    else r.time_by_bound_s[static_cast<int>(s.bound)] += s.time_s;
    r.kernels.push_back(std::move(s));
  }
  // Time by category: the kernels, and a trace's copies and fills.
  static constexpr std::string_view kCategories[] = {"gemm", "attention", "elementwise/norm", "reduction", "communication",
                                                      "memcpy/memset", "other"};
  for (std::string_view c : kCategories) r.by_category.push_back({std::string(c), 0, 0});
  auto add = [&r](std::string_view category, double time_s, double count) {
    for (TimeShare& c : r.by_category) {
      if (c.name == category) {
        c.time_s += time_s;
        c.count += count;
      }
    }
  };
  for (const KernelSummary& k : r.kernels) add(kernel_category(k.name, k.op), k.time_s, k.count);
  add("memcpy/memset", p.memcpy.time_s + p.memset.time_s, p.memcpy.count + p.memset.count);
  std::erase_if(r.by_category, [](const TimeShare& c) { return c.count == 0; });
  std::stable_sort(r.by_category.begin(), r.by_category.end(), [](const TimeShare& x, const TimeShare& y) { return x.time_s > y.time_s; });
  // Largest gap first; kernels without one (unknown, or at their roof) by time.
  std::stable_sort(r.kernels.begin(), r.kernels.end(), [](const auto& x, const auto& y) { return x.gap_s > y.gap_s || (x.gap_s == y.gap_s && x.time_s > y.time_s); });
  // Faster than the roof: the worst (the least time against its roof's) named.
  const KernelSummary* worst = nullptr;
  for (const KernelSummary& k : r.kernels) {
    if (!k.above_roof) continue;
    ++r.above_roof;
    if (worst == nullptr || k.time_s / k.t_at_roof_s < worst->time_s / worst->t_at_roof_s) worst = &k;
  }
  if (worst != nullptr) {
    r.above_roof_warning = fmt::format(
        "{} kernel{} ran faster than {}'s roof allows ({}: {:.4g} FLOP and {:.4g} bytes in {:.4g} s, the roof's time {:.4g} s): the "
        "counts or the chip are wrong, and so is every figure drawn from them",
        r.above_roof, r.above_roof == 1 ? "" : "s", chip.name, worst->name, worst->flops, worst->bytes, worst->time_s, worst->t_at_roof_s);
  }
  return r;
}

}  // namespace ridgeline::profile
