#include "ridgeline/profile/shapes.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "ridgeline/ops/matmul.hpp"
#include "ridgeline/ops/pointwise.hpp"

namespace ridgeline::profile {

namespace {

std::optional<DType> torch_dtype(const std::string& t) {
  if (t == "float") return DType::fp32;
  if (t == "double") return DType::fp64;
  if (t == "c10::Half") return DType::fp16;
  if (t == "c10::BFloat16") return DType::bf16;
  return std::nullopt;
}

double numel(const std::vector<double>& d) {
  double n = 1;
  for (double x : d) n *= x;
  return n;
}

bool is_one_of(const std::string& op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), std::string_view(op)) != names.end();
}

AtenEstimate from_cost(const ops::Cost& c, bool matrix, DType t) {
  AtenEstimate e;
  e.ok = true;
  e.flops = c.total_flops();
  e.bytes = c.bytes[0];
  e.matrix = matrix;
  e.dtype = t;
  return e;
}

}  // namespace

AtenEstimate estimate_aten(const std::string& op, const std::vector<std::vector<double>>& dims,
                           const std::vector<std::string>& types) noexcept {
  // The first tensor input's dtype is the op's.
  std::optional<DType> t;
  for (size_t i = 0; i < types.size() && i < dims.size() && !t; ++i) {
    if (!dims[i].empty()) t = torch_dtype(types[i]);
  }
  if (!t) return {};
  for (const auto& d : dims) {
    for (double x : d) {
      if (!(x >= 0 && x < 1e12)) return {};
    }
  }
  // `batch` > 1: both operands batched (bmm), each batch its own right-hand matrix.
  auto gemm = [&](double batch, double m, double k, double n, double extra_bytes) {
    ops::MatmulShape s;
    s.batch = batch, s.m = m, s.k = k, s.n = n;
    s.per_sample_weights = batch > 1;
    s.a = s.b = s.out = *t;
    ops::Cost c = ops::matmul_cost(s);
    c.bytes[0] += extra_bytes;
    return from_cost(c, true, *t);
  };
  const double es = bits(*t) / 8.0;
  // GEMMs: mm [m,k]x[k,n]; addmm bias,[m,k],[k,n]; bmm / baddbmm [b,m,k]x[b,k,n];
  // linear x[...,k], w[n,k], bias[n]: m = the product of x's leading dims.
  if (op == "aten::mm" && dims.size() >= 2 && dims[0].size() == 2 && dims[1].size() == 2 && dims[0][1] == dims[1][0]) {
    return gemm(1, dims[0][0], dims[0][1], dims[1][1], 0);
  }
  if (op == "aten::addmm" && dims.size() >= 3 && dims[1].size() == 2 && dims[2].size() == 2 && dims[1][1] == dims[2][0]) {
    return gemm(1, dims[1][0], dims[1][1], dims[2][1], numel(dims[0]) * es);
  }
  if ((op == "aten::bmm" || op == "aten::baddbmm") && dims.size() >= 2) {
    const size_t a = op == "aten::bmm" ? 0 : 1;
    if (dims.size() > a + 1 && dims[a].size() == 3 && dims[a + 1].size() == 3 && dims[a][0] == dims[a + 1][0] &&
        dims[a][2] == dims[a + 1][1]) {
      return gemm(dims[a][0], dims[a][1], dims[a][2], dims[a + 1][2], a == 1 ? numel(dims[0]) * es : 0);
    }
  }
  if (op == "aten::linear" && dims.size() >= 2 && !dims[0].empty() && dims[1].size() == 2 && dims[0].back() == dims[1][1]) {
    const double m = numel(dims[0]) / dims[0].back();
    const double bias = dims.size() >= 3 ? numel(dims[2]) * es : 0;
    return gemm(1, m, dims[1][1], dims[1][0], dims.size() >= 3 && !dims[2].empty() ? bias : 0);
  }
  // Elementwise: every tensor input read once, the output (the broadcast shape: the largest
  // input) written once; one FLOP per output element. In-place ops (trailing _) write
  // their first input.
  if (is_one_of(op, {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_", "aten::div", "aten::div_",
                     "aten::relu", "aten::relu_", "aten::clamp_min", "aten::clamp_min_", "aten::gelu", "aten::silu", "aten::sigmoid",
                     "aten::tanh", "aten::threshold_backward", "aten::neg", "aten::exp", "aten::mse_loss_backward"})) {
    double inputs = 0, out = 0;
    for (const auto& d : dims) {
      if (d.empty()) continue;
      inputs += numel(d);
      out = std::max(out, numel(d));
    }
    if (out <= 0) return {};
    ops::RowsShape s;
    s.rows = 1, s.cols = out, s.dtype = *t, s.compute = *t == DType::fp64 ? DType::fp64 : DType::fp32;
    // elementwise_cost counts `inputs` arrays of the output's size: pass the exact count.
    ops::Cost c = ops::elementwise_cost(s, inputs / out, 1, 1);
    return from_cost(c, false, *t);
  }
  // Reductions over the whole input (sum, mean): read it, n - 1 additions.
  if (is_one_of(op, {"aten::sum", "aten::mean"}) && !dims.empty() && !dims[0].empty()) {
    ops::RowsShape s;
    s.rows = 1, s.cols = numel(dims[0]), s.dtype = *t, s.compute = *t == DType::fp64 ? DType::fp64 : DType::fp32;
    return from_cost(ops::reduction_cost(s), false, *t);
  }
  return {};
}

}  // namespace ridgeline::profile
