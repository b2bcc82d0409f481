#include "ridgeline/hw/chip.hpp"

namespace ridgeline::hw {

namespace {

int hex_digit(char ch) noexcept {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

}  // namespace

std::optional<Arch> parse_arch(std::string_view text) noexcept {
  Arch a;
  std::string_view digits;
  if (text.substr(0, 3) == "sm_") {
    // nvcc's spelling: sm_90, sm_100, and the arch-specific sm_90a, sm_100a, sm_100f.
    a.isa = Arch::Isa::cuda;
    digits = text.substr(3);
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
    if (digits.size() < 2 || digits.size() > 3) return std::nullopt;
    for (char ch : digits) {
      if (ch < '0' || ch > '9') return std::nullopt;
    }
    a.minor = digits.back() - '0';
    digits.remove_suffix(1);
  } else if (text.substr(0, 3) == "gfx") {
    // LLVM's AMDGPU processors: gfx<major><minor><stepping>, the minor a digit, the stepping a
    // hex digit; torch's gcnArchName adds target features after a colon (gfx942:sramecc+:xnack-).
    a.isa = Arch::Isa::hip;
    digits = text.substr(3, text.find(':') == std::string_view::npos ? std::string_view::npos : text.find(':') - 3);
    if (digits.size() < 3 || digits.size() > 4) return std::nullopt;
    const char minor = digits[digits.size() - 2];
    const int stepping = hex_digit(digits.back());
    if (minor < '0' || minor > '9' || stepping < 0) return std::nullopt;
    a.minor = minor - '0';
    a.stepping = stepping;
    digits.remove_suffix(2);
  } else {
    return std::nullopt;
  }
  if (digits.empty() || digits.front() == '0') return std::nullopt;  // no major, or a leading zero
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return std::nullopt;
    a.major = a.major * 10 + (ch - '0');
  }
  return a;
}

Arch arch_of(const ChipSpec& c) noexcept { return parse_arch(c.arch).value_or(Arch{}); }

std::string vendor_and_kind(const ChipSpec& c) {
  const bool vowel = !c.vendor.empty() && std::string_view("aeiou").find(c.vendor.front()) != std::string_view::npos;
  return std::string(vowel ? "an " : "a ") + c.vendor + " " + c.kind;
}

bool vendor_is(const ChipSpec& c, std::string_view vendor) noexcept {
  if (c.vendor.size() != vendor.size()) return false;
  for (std::size_t i = 0; i < vendor.size(); ++i) {
    const char ch = c.vendor[i];
    if ((ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch) != vendor[i]) return false;
  }
  return true;
}

bool may_be_nvidia_gpu(const ChipSpec& c) noexcept {
  return c.kind == "gpu" && arch_of(c).isa != Arch::Isa::hip && !vendor_is(c, "amd");
}

bool is_rocm_gpu(const ChipSpec& c) noexcept {
  const Arch a = arch_of(c);
  return c.kind == "gpu" && (a.isa == Arch::Isa::hip || (a.isa == Arch::Isa::none && vendor_is(c, "amd")));
}

bool supports_pdl(const ChipSpec& c) noexcept {
  const Arch a = arch_of(c);
  return c.kind == "gpu" && ((a.isa == Arch::Isa::cuda && a.major >= 9) || (a.isa == Arch::Isa::none && may_be_nvidia_gpu(c)));
}

bool runs_deepgemm(const ChipSpec& c) noexcept {
  const Arch a = arch_of(c);
  if (a.isa == Arch::Isa::none) return vendor_is(c, "nvidia") && c.kind == "gpu" && c.peak(Unit::matrix, DType::fp8_e4m3) > 0;
  return a.isa == Arch::Isa::cuda && (a.major == 9 || a.major == 10);
}

bool is_sm100_family(const ChipSpec& c) noexcept {
  const Arch a = arch_of(c);
  if (a.isa == Arch::Isa::none) return vendor_is(c, "nvidia") && c.kind == "gpu" && c.peak(Unit::matrix, DType::fp4) > 0;
  return a.isa == Arch::Isa::cuda && a.major == 10;
}

bool runs_aiter(const ChipSpec& c) noexcept {
  const Arch a = arch_of(c);
  return a.isa == Arch::Isa::hip && a.major == 9 && (a.minor >= 4 || (a.minor == 0 && a.stepping == 0xa));
}

std::string_view name(Unit u) noexcept { return u == Unit::matrix ? "matrix" : "vector"; }

std::string_view name(KernelClass k) noexcept {
  switch (k) {
    case KernelClass::other: return "other";
    case KernelClass::gemm: return "gemm";
    case KernelClass::attention: return "attention";
    case KernelClass::pointwise: return "pointwise";
    case KernelClass::collective: return "collective";
    case KernelClass::attention_backward: return "attention_backward";
    case KernelClass::attention_decode: return "attention_decode";
    case KernelClass::gemm_expert: return "gemm_expert";
    case KernelClass::norm: return "norm";
    case KernelClass::sampling: return "sampling";
    case KernelClass::allreduce_custom: return "allreduce_custom";
    case KernelClass::gemm_scaled: return "gemm_scaled";
    case KernelClass::gemm_scaled_deepgemm: return "gemm_scaled_deepgemm";
    case KernelClass::gemm_expert_scaled: return "gemm_expert_scaled";
    case KernelClass::deepep_dispatch: return "deepep_dispatch";
    case KernelClass::deepep_combine: return "deepep_combine";
    case KernelClass::gemm_expert_deepgemm: return "gemm_expert_deepgemm";
    case KernelClass::deepep_intranode_dispatch: return "deepep_intranode_dispatch";
    case KernelClass::deepep_intranode_combine: return "deepep_intranode_combine";
    case KernelClass::quant: return "quant";
    case KernelClass::routing: return "routing";
    case KernelClass::routing_compiled: return "routing_compiled";
    case KernelClass::gemm_expert_w4a16: return "gemm_expert_w4a16";
    case KernelClass::gemm_fp8: return "gemm_fp8";
    case KernelClass::attention_decode_mla: return "attention_decode_mla";
    case KernelClass::attention_combine: return "attention_combine";
    case KernelClass::gemm_expert_onestage: return "gemm_expert_onestage";
    case KernelClass::allreduce_norm: return "allreduce_norm";
  }
  return "other";
}

std::string_view name(CurveOp o) noexcept {
  switch (o) {
    case CurveOp::matmul: return "matmul";
    case CurveOp::decode_attention: return "decode_attention";
    case CurveOp::rmsnorm: return "rmsnorm";
    case CurveOp::elementwise: return "elementwise";
    case CurveOp::allreduce: return "allreduce";
    case CurveOp::moe: return "moe";
    case CurveOp::attention: return "attention";
    case CurveOp::alltoall: return "alltoall";
    case CurveOp::group_quant: return "group_quant";
    case CurveOp::attention_combine: return "attention_combine";
  }
  return "matmul";
}

std::string_view name(CurveTiming t) noexcept { return t == CurveTiming::graph ? "graph" : "kernel"; }

std::string_view name(LinkScope s) noexcept {
  switch (s) {
    case LinkScope::node: return "node";
    case LinkScope::network: return "network";
    case LinkScope::host: return "host";
  }
  return "node";
}

std::string_view name(Fabric f) noexcept {
  switch (f) {
    case Fabric::switched: return "switched";
    case Fabric::mesh: return "mesh";
    case Fabric::torus: return "torus";
  }
  return "switched";
}

std::string_view name(CollectiveLibrary l) noexcept { return l == CollectiveLibrary::nccl ? "nccl" : "none"; }

std::array<int, 3> System::torus_slice() const noexcept {
  if (slice[0] > 0) return slice;
  const TopologySpec& t = chip.topology;
  const int axes = t.torus_dims == 2 ? 2 : 3;
  int n = chips < 1 ? 1 : chips;
  if (t.max_slice > 0 && n > t.max_slice) n = t.max_slice;
  // The most cubic shape: peel the smallest factor >= the axes' root off for each axis,
  // the largest axis last (x <= y <= z), as Cloud TPU names slices (2x2x4, 4x4x8).
  std::array<int, 3> d{1, 1, 1};
  int rest = n;
  for (int a = 0; a < axes; ++a) {
    const int left = axes - a;
    if (left == 1) {
      d[a] = rest;
      break;
    }
    int best = 1;
    for (int f = 1; static_cast<long long>(f) * f <= rest; ++f) {
      if (rest % f != 0) continue;
      // The largest factor not above rest^(1/left).
      long long p = 1;
      for (int i = 0; i < left; ++i) p *= f;
      if (p <= rest) best = f;
    }
    d[a] = best;
    rest /= best;
  }
  return d;
}

int System::domain() const noexcept {
  const TopologySpec& t = chip.topology;
  if (t.fabric == Fabric::torus) {
    const auto d = torus_slice();
    return d[0] * d[1] * d[2];
  }
  return t.domain > 0 ? t.domain : chips_per_node;
}

}  // namespace ridgeline::hw
