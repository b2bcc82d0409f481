#include "ridgeline/analysis/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/measure/kernels.hpp"
#include "ridgeline/ops/attention.hpp"

namespace ridgeline::analysis {

namespace {

using measure::slice_begin;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Inputs in [0.5, 1.5): no cancellation in sums, no overflow in exp.
void fill(std::vector<float>& v, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (auto& x : v) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x = 0.5f + static_cast<float>(s >> 40) / static_cast<float>(1ULL << 24);
  }
}
void fill(std::vector<double>& v, std::uint64_t seed) {
  std::vector<float> f(v.size());
  fill(f, seed);
  std::copy(f.begin(), f.end(), v.begin());
}
// Integers in [lo, hi], from the same stream.
template <class T>
void fill_ints(std::vector<T>& v, std::uint64_t seed, int lo, int hi) {
  std::vector<float> f(v.size());
  fill(f, seed);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<T>(std::min(hi, lo + static_cast<int>((f[i] - 0.5f) * static_cast<float>(hi - lo + 1))));
  }
}
template <class T>
void poison(std::vector<T>& v) {
  std::fill(v.begin(), v.end(), std::numeric_limits<T>::quiet_NaN());
}

double rel_err(double got, double want) {
  if (std::isnan(got)) return std::numeric_limits<double>::infinity();
  return std::abs(got - want) / std::max(std::abs(want), 1e-30);
}

// Indices to check: about 4096 spread over [0, n) and the last one.
template <class F>
double check_sampled(std::size_t n, F err_at) {
  double worst = 0;
  const std::size_t step = std::max<std::size_t>(1, n / 4096);
  for (std::size_t i = 0; i < n; i += step) worst = std::max(worst, err_at(i));
  return std::max(worst, err_at(n - 1));
}

// The memory level a working set sits in: the innermost level that holds it (main memory,
// index 0, otherwise). Capacities of measured cache levels are totals over the cores.
int level_for(const hw::ChipSpec& chip, double ws) {
  for (int l = static_cast<int>(chip.memory.size()) - 1; l >= 1; --l) {
    if (chip.memory[static_cast<std::size_t>(l)].capacity_bytes >= ws) return l;
  }
  return 0;
}

// Largest relative error of 64 spread entries of C = A·B (n x n, row-major) against sums
// in double precision.
template <class TA, class TB, class U>
double check_gemm(int n, const std::vector<TA>& a, const std::vector<TB>& b, const std::vector<U>& c) {
  double worst = 0;
  for (int s = 0; s < 64; ++s) {
    const int i = (s * 7919) % n, j = (s * 104729 + 13) % n;
    double want = 0;
    for (int k = 0; k < n; ++k) want += static_cast<double>(a[static_cast<std::size_t>(i) * n + k]) * b[static_cast<std::size_t>(k) * n + j];
    worst = std::max(worst, rel_err(c[static_cast<std::size_t>(i) * n + j], want));
  }
  return worst;
}

struct Runner {
  const hw::ChipSpec& chip;
  hw::System sys;
  int threads;
  bool quick;
  const std::vector<std::string>& groups;  ///< empty: every group
  ValidationResult& out;

  bool wanted(std::string_view group) const {
    return groups.empty() || std::find(groups.begin(), groups.end(), group) != groups.end();
  }

  // Runs `body` once on `body_threads` threads and measures its output with `check` (the
  // largest relative error against a reference), predicts `cost` at the level `ws` fits in,
  // times `body`, and records the kernel. `stored_bytes` are written by plain stores to
  // lines not read first: where the chip's stores allocate they read those lines too, at
  // every level but L1 (where the stores are done: an L1-resident line is already there).
  // They are the timed kernel's own (axpy updates y in place, where the model's elementwise
  // op writes a new tensor), so they replace the cost's main_store_bytes.
  void record(const std::string& name, const char* group, double ws, ops::Cost cost, double stored_bytes,
              const std::function<void(int, int)>& body, int body_threads, const std::function<double()>& check) {
    if (!wanted(group)) return;
    measure::time_parallel(body_threads, 0, 1, body);
    const double max_err = check();
    KernelCheck k;
    k.name = name;
    k.group = group;
    k.working_set_bytes = ws;
    const int level = level_for(chip, ws);
    k.level = chip.memory[static_cast<std::size_t>(level)].name;
    const bool in_l1 = k.level.rfind("L1", 0) == 0;  // where the stores are done: the lines are there
    const double wa_bytes = chip.write_allocate && !in_l1 ? stored_bytes : 0;
    k.model_bytes = cost.bytes[0];
    k.write_allocate_bytes = wa_bytes;
    cost.bytes[0] = 0;
    cost.main_store_bytes = 0;
    cost.bytes[level] = k.model_bytes + wa_bytes;
    cost.launches = 0;
    const ops::Estimate e = ops::estimate(cost, chip);
    k.flops = e.flops;
    k.bound = e.bound;
    k.predicted_s = e.t_lower_s;
    k.compute_s = e.t_math_s;
    k.memory_s = k.model_bytes / chip.memory[static_cast<std::size_t>(level)].bandwidth_Bps;
    k.checked = max_err <= (group == std::string("gemm") || group == std::string("attention") ? 1e-3 : 1e-4);
    k.max_rel_error = max_err;
    // Each timing lasts about 5 ms (quick) or 20 ms (full), judged from the prediction.
    const double target = quick ? 5e-3 : 20e-3;
    const int passes = static_cast<int>(std::clamp(target / std::max(k.predicted_s, 1e-9), 1.0, 10000.0));
    const measure::Sample s = measure::time_parallel(body_threads, quick ? 5 : 11, passes, body);
    k.measured_s = s.value;
    k.spread = s.spread;
    k.repetitions = s.repetitions;
    k.ratio = k.predicted_s > 0 ? k.measured_s / k.predicted_s : 0;
    // Faster than the roof by more than the noise (at least 5%): the model is wrong there.
    k.above_roof = k.ratio < 1 - std::max(0.05, k.spread);
    out.kernels.push_back(k);
  }

  OpConfig rows_op(OpKind kind, std::size_t rows, std::size_t cols, std::int64_t inputs = 1, std::int64_t outputs = 1,
                   double flops_per_element = 1) const {
    OpConfig op;
    op.kind = kind;
    op.rows = static_cast<std::int64_t>(rows);
    op.cols = static_cast<std::int64_t>(cols);
    op.inputs = inputs;
    op.outputs = outputs;
    op.flops_per_element = flops_per_element;
    op.dtype = DType::fp32;
    op.compute_dtype = DType::fp32;
    return op;
  }
  ops::Cost cost(const OpConfig& op) const { return op_cost(op, sys); }
  // C (n x n, `out`) = A·B, A and B `in`, computed at `in`'s matrix rate.
  static OpConfig square_matmul(int n, DType in, DType out) {
    OpConfig op;
    op.kind = OpKind::matmul;
    op.m = op.k = op.n = n;
    op.dtype = in;
    op.out_dtype = out;
    op.compute_dtype = in;
    return op;
  }

  // ---- streams: dot, axpy, triad at a working set `ws` in bytes ----------------------
  void streams(double ws, const std::string& where) {
    const std::size_t n2 = static_cast<std::size_t>(ws / 8), n3 = static_cast<std::size_t>(ws / 12);
    const double b2 = static_cast<double>(n2) * 4, b3 = static_cast<double>(n3) * 4;  // bytes of one fp32 array
    {
      std::vector<float> x(n2), y(n2);
      fill(x, 1), fill(y, 2);
      double ref = 0;
      for (std::size_t i = 0; i < n2; ++i) ref += static_cast<double>(x[i]) * y[i];
      std::vector<double> part(static_cast<std::size_t>(threads), kNaN);
      auto body = [&](int t, int T) { part[static_cast<std::size_t>(t)] = measure::dot(x.data(), y.data(), slice_begin(n2, t, T), slice_begin(n2, t + 1, T)); };
      auto check = [&] {
        double got = 0;
        for (double p : part) got += p;
        return rel_err(got, ref);
      };
      OpConfig op;
      op.kind = OpKind::dot;
      op.n = static_cast<std::int64_t>(n2);
      op.dtype = DType::fp32;
      op.compute_dtype = DType::fp32;
      record("dot (" + where + ")", "stream", 2 * b2, cost(op), 0, body, threads, check);
    }
    {
      std::vector<float> x(n2), y(n2), y0;
      fill(x, 3), fill(y, 4);
      y0 = y;
      const float a = 0.75f;
      auto body = [&](int t, int T) { measure::axpy(a, x.data(), y.data(), slice_begin(n2, t, T), slice_begin(n2, t + 1, T)); };
      auto check = [&] { return check_sampled(n2, [&](std::size_t i) { return rel_err(y[i], y0[i] + static_cast<double>(a) * x[i]); }); };
      // y is read before it is written: no write-allocate.
      record("axpy (" + where + ")", "stream", 2 * b2, cost(rows_op(OpKind::elementwise, 1, n2, 2, 1, 2)), 0, body, threads, check);
    }
    {
      std::vector<float> a(n3), b(n3), c(n3);
      fill(b, 5), fill(c, 6);
      poison(a);
      const float s = 1.25f;
      auto body = [&](int t, int T) { measure::triad(a.data(), b.data(), c.data(), s, slice_begin(n3, t, T), slice_begin(n3, t + 1, T)); };
      auto check = [&] { return check_sampled(n3, [&](std::size_t i) { return rel_err(a[i], b[i] + static_cast<double>(s) * c[i]); }); };
      record("triad (" + where + ")", "stream", 3 * b3, cost(rows_op(OpKind::elementwise, 1, n3, 2, 1, 2)), b3, body, threads, check);
    }
  }

  // ---- rows: RMSNorm, softmax, and the fusions seed 000 prices ----------------------
  // `ws` is what the smallest of them (one tensor in, one out) touches.
  void rows_and_fusions(double ws) {
    const std::size_t cols = 4096, rows = std::max<std::size_t>(8, static_cast<std::size_t>(ws / (2 * cols * 4)));
    const std::size_t n = rows * cols;
    const double nb = static_cast<double>(n) * 4;
    std::vector<float> x(n), g(n), w(cols), y(n), tmp(n);
    fill(x, 7), fill(g, 8), fill(w, 9);
    auto row_slices = [&](int t, int T) { return std::pair{slice_begin(rows, t, T), slice_begin(rows, t + 1, T)}; };
    auto norm_ref = [&](std::size_t r) {
      double ss = 0;
      for (std::size_t c = 0; c < cols; ++c) ss += static_cast<double>(x[r * cols + c]) * x[r * cols + c];
      return 1 / std::sqrt(ss / static_cast<double>(cols) + 1e-6);
    };
    auto check_rows = [&](auto want) {
      double worst = 0;
      for (std::size_t r : {std::size_t{0}, rows / 2, rows - 1}) {
        for (std::size_t c = 0; c < cols; ++c) worst = std::max(worst, rel_err(y[r * cols + c], want(r, c)));
      }
      return worst;
    };
    const ops::Cost norm = cost(rows_op(OpKind::rmsnorm, rows, cols));
    const ops::Cost mul = cost(rows_op(OpKind::elementwise, rows, cols, 2, 1, 1));
    {
      poison(y);
      auto body = [&](int t, int T) { auto [b, e] = row_slices(t, T); measure::rmsnorm(x.data(), w.data(), y.data(), cols, b, e); };
      auto check = [&] { return check_rows([&](std::size_t r, std::size_t c) { return x[r * cols + c] * norm_ref(r) * w[c]; }); };
      record("rmsnorm (DRAM)", "norm", 2 * nb, norm, nb, body, threads, check);
    }
    {
      poison(y);
      auto body = [&](int t, int T) { auto [b, e] = row_slices(t, T); measure::softmax(x.data(), y.data(), cols, b, e); };
      auto soft = [&](std::size_t r, std::size_t c) {
        double m = 0, s = 0;
        for (std::size_t k = 0; k < cols; ++k) m = std::max(m, static_cast<double>(x[r * cols + k]));
        for (std::size_t k = 0; k < cols; ++k) s += std::exp(x[r * cols + k] - m);
        return std::exp(x[r * cols + c] - m) / s;
      };
      auto check = [&] {
        double worst = 0;
        for (std::size_t r : {std::size_t{0}, rows - 1}) {
          for (std::size_t c = 0; c < cols; c += 97) worst = std::max(worst, rel_err(y[r * cols + c], soft(r, c)));
        }
        return worst;
      };
      record("softmax (DRAM)", "norm", 2 * nb, cost(rows_op(OpKind::softmax, rows, cols)), nb, body, threads, check);
    }
    // RMSNorm -> mul: unfused writes the normalised tensor and reads it back.
    auto want_nm = [&](std::size_t r, std::size_t c) { return x[r * cols + c] * norm_ref(r) * w[c] * g[r * cols + c]; };
    {
      poison(y);
      auto body = [&](int t, int T) {
        auto [b, e] = row_slices(t, T);
        measure::rmsnorm(x.data(), w.data(), tmp.data(), cols, b, e);
        measure::mul(tmp.data(), g.data(), y.data(), b * cols, e * cols);
      };
      record("rmsnorm -> mul, unfused (DRAM)", "fusion", 4 * nb, norm + mul, 2 * nb, body, threads, [&] { return check_rows(want_nm); });
    }
    {
      poison(y);
      auto body = [&](int t, int T) { auto [b, e] = row_slices(t, T); measure::rmsnorm_mul(x.data(), w.data(), g.data(), y.data(), cols, b, e); };
      // Fused: the sum of the two ops without the intermediate's write and read (and so
      // without its store).
      ops::Cost fused = norm + mul;
      fused.bytes[0] -= 2 * nb;
      fused.main_store_bytes -= nb;
      record("rmsnorm -> mul, fused (DRAM)", "fusion", 3 * nb, fused, nb, body, threads, [&] { return check_rows(want_nm); });
    }
    // SiLU -> mul (SwiGLU's activation): ridgeline's SwiGLU counts 6 FLOPs per element,
    // 5 of them SiLU's.
    const ops::Cost silu = cost(rows_op(OpKind::elementwise, rows, cols, 1, 1, 5));
    auto want_sw = [&](std::size_t i) {
      const double gi = x[i];
      return gi / (1 + std::exp(-gi)) * g[i];
    };
    {
      poison(y);
      auto body = [&](int t, int T) {
        const std::size_t b = slice_begin(n, t, T), e = slice_begin(n, t + 1, T);
        measure::silu(x.data(), tmp.data(), b, e);
        measure::mul(tmp.data(), g.data(), y.data(), b, e);
      };
      auto check = [&] { return check_sampled(n, [&](std::size_t i) { return rel_err(y[i], want_sw(i)); }); };
      record("silu -> mul, unfused (DRAM)", "fusion", 4 * nb, silu + mul, 2 * nb, body, threads, check);
    }
    {
      poison(y);
      auto body = [&](int t, int T) { measure::swiglu(x.data(), g.data(), y.data(), slice_begin(n, t, T), slice_begin(n, t + 1, T)); };
      auto check = [&] { return check_sampled(n, [&](std::size_t i) { return rel_err(y[i], want_sw(i)); }); };
      record("silu -> mul, fused = swiglu (DRAM)", "fusion", 3 * nb, cost(rows_op(OpKind::swiglu, rows, cols)), nb, body, threads, check);
    }
    // An elementwise chain of four ops: four passes through memory, or one.
    auto want_ch = [&](std::size_t i) { return (static_cast<double>(x[i]) * 1.0001 + 0.5) * 0.9999 - 0.25; };
    {
      poison(y);
      auto body = [&](int t, int T) {
        const std::size_t b = slice_begin(n, t, T), e = slice_begin(n, t + 1, T);
        measure::chain_step(0, x.data(), tmp.data(), b, e);
        measure::chain_step(1, tmp.data(), y.data(), b, e);
        measure::chain_step(2, y.data(), tmp.data(), b, e);
        measure::chain_step(3, tmp.data(), y.data(), b, e);
      };
      auto check = [&] { return check_sampled(n, [&](std::size_t i) { return rel_err(y[i], want_ch(i)); }); };
      const ops::Cost step = cost(rows_op(OpKind::elementwise, rows, cols, 1, 1, 1));
      record("elementwise chain x4, unfused (DRAM)", "fusion", 3 * nb, step * 4, 4 * nb, body, threads, check);
    }
    {
      poison(y);
      auto body = [&](int t, int T) { measure::chain_fused(x.data(), y.data(), slice_begin(n, t, T), slice_begin(n, t + 1, T)); };
      auto check = [&] { return check_sampled(n, [&](std::size_t i) { return rel_err(y[i], want_ch(i)); }); };
      record("elementwise chain x4, fused (DRAM)", "fusion", 2 * nb, cost(rows_op(OpKind::elementwise, rows, cols, 1, 1, 4)), nb, body, threads, check);
    }
  }

  // ---- GEMMs through OpenBLAS --------------------------------------------------------
  template <class T>
  void gemm(int n, DType dt) {
    std::vector<T> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
    fill(a, 10), fill(b, 11);
    poison(c);
    auto run = [&] {
      if constexpr (std::is_same_v<T, float>) {
        measure::sgemm(n, n, n, a.data(), b.data(), c.data(), threads);
      } else {
        measure::dgemm(n, n, n, a.data(), b.data(), c.data(), threads);
      }
    };
    auto check = [&] { return check_gemm(n, a, b, c); };
    const OpConfig op = square_matmul(n, dt, dt);
    const double ws = 3.0 * n * n * sizeof(T);
    // OpenBLAS threads itself: one caller.
    record(fmt::format("{} {}", dt == DType::fp32 ? "sgemm" : "dgemm", n), "gemm", ws, cost(op), 0, [&](int, int) { run(); }, 1, check);
  }

  // ---- bf16 GEMMs: bf16 operands, fp32 accumulation and output --------------------------
  // Through OpenBLAS's cblas_sbgemm and through oneDNN's matmul, each where it is here: two
  // libraries' kernels, two rows.
  void bf16_gemm(int n, bool onednn) {
    const std::size_t sz = static_cast<std::size_t>(n) * n;
    std::vector<float> af(sz), bf(sz), c(sz);
    fill(af, 15), fill(bf, 16);
    poison(c);
    std::vector<std::uint16_t> a(sz), b(sz);
    // The reference multiplies the rounded operands: what the kernel was given.
    for (std::size_t i = 0; i < sz; ++i) {
      a[i] = measure::to_bf16(af[i]), af[i] = measure::from_bf16(a[i]);
      b[i] = measure::to_bf16(bf[i]), bf[i] = measure::from_bf16(b[i]);
    }
    auto check = [&] { return check_gemm(n, af, bf, c); };
    const OpConfig op = square_matmul(n, DType::bf16, DType::fp32);
    const double ws = 2.0 * n * n * 2 + 4.0 * n * n;  // A, B in bf16, C in fp32
    if (!onednn) {
      record(fmt::format("sbgemm {}", n), "gemm", ws, cost(op), 0,
             [&](int, int) { measure::sbgemm(n, n, n, a.data(), b.data(), c.data(), threads); }, 1, check);
      return;
    }
    measure::OnednnBf16Matmul mm(n, n, n, a.data(), b.data(), c.data(), threads);
    if (!mm.ok()) {
      out.notes.push_back(fmt::format("bf16 matmul {} skipped: {}", n, mm.impl()));
      return;
    }
    // Every implementation oneDNN chose, once each (it may change with the size).
    if (out.onednn_bf16_impl.find(mm.impl()) == std::string::npos) {
      out.onednn_bf16_impl += (out.onednn_bf16_impl.empty() ? "" : ", ") + mm.impl();
    }
    record(fmt::format("bf16 matmul {} (oneDNN)", n), "gemm", ws, cost(op), 0, [&](int, int) { mm.run(); }, 1, check);
  }

  // ---- int8 GEMM through oneDNN: u8 · s8 -> s32 ------------------------------------------
  void int8_gemm(int n) {
    const std::size_t sz = static_cast<std::size_t>(n) * n;
    std::vector<std::uint8_t> a(sz);
    std::vector<std::int8_t> b(sz);
    std::vector<std::int32_t> c(sz);
    // Small enough that no instruction's pairwise sums saturate (vpmaddubsw, where there is
    // no VNNI, adds two u8·s8 products in 16 bits: 2·63·64 = 8064), so the sums are exact.
    fill_ints(a, 17, 0, 63), fill_ints(b, 18, -64, 63);
    std::fill(c.begin(), c.end(), std::numeric_limits<std::int32_t>::min());  // no sum reaches it: n·63·64 < 2^31
    // Integer sums: exact or wrong.
    auto check = [&] { return check_gemm(n, a, b, c) == 0 ? 0.0 : std::numeric_limits<double>::infinity(); };
    // int32 C: the same four bytes as fp32 (the model has no int32 dtype).
    const OpConfig op = square_matmul(n, DType::int8, DType::fp32);
    const double ws = 2.0 * n * n + 4.0 * n * n;  // A, B in 8 bits, C in 32
    record(fmt::format("int8 gemm {} (oneDNN)", n), "gemm", ws, cost(op), 0,
           [&](int, int) { measure::onednn_gemm_u8s8s32(n, n, n, a.data(), b.data(), c.data(), threads); }, 1, check);
  }

  // ---- a small naive attention: S = Q·Kᵀ, P = softmax(S), O = P·V per head ----------
  void attention() {
    const int H = 8, S = 256, D = 64;
    const std::size_t qsz = static_cast<std::size_t>(H) * S * D;
    std::vector<float> q(qsz), k(qsz), v(qsz), o(qsz), s(static_cast<std::size_t>(S) * S), p(s.size());
    fill(q, 12), fill(k, 13), fill(v, 14);
    for (auto& x : q) x *= 0.125f;  // 1/sqrt(64), folded into Q
    poison(o);
    auto run = [&] {
      for (int h = 0; h < H; ++h) {
        const std::size_t off = static_cast<std::size_t>(h) * S * D;
        measure::sgemm_nt(S, S, D, q.data() + off, k.data() + off, s.data(), threads);
        measure::softmax(s.data(), p.data(), S, 0, S);
        measure::sgemm(S, D, S, p.data(), v.data() + off, o.data() + off, threads);
      }
    };
    // Reference: one row of two heads in double.
    auto check = [&] {
      double worst = 0;
      for (int h : {0, H - 1}) {
        const std::size_t off = static_cast<std::size_t>(h) * S * D;
        const int r = S / 3;
        std::vector<double> sc(static_cast<std::size_t>(S));
        double m = -1e300, sum = 0;
        for (int j = 0; j < S; ++j) {
          double d = 0;
          for (int c = 0; c < D; ++c) d += static_cast<double>(q[off + static_cast<std::size_t>(r) * D + c]) * k[off + static_cast<std::size_t>(j) * D + c];
          sc[static_cast<std::size_t>(j)] = d;
          m = std::max(m, d);
        }
        for (double& x : sc) sum += (x = std::exp(x - m));
        for (int c = 0; c < D; ++c) {
          double want = 0;
          for (int j = 0; j < S; ++j) want += sc[static_cast<std::size_t>(j)] / sum * v[off + static_cast<std::size_t>(j) * D + c];
          worst = std::max(worst, rel_err(o[off + static_cast<std::size_t>(r) * D + c], want));
        }
      }
      return worst;
    };
    ops::AttentionShape a;
    a.batch = 1;
    a.q_len = a.kv_len = S;
    a.heads = a.kv_heads = H;
    a.head_dim = D;
    a.impl = ops::AttentionImpl::naive;
    a.dtype = DType::fp32;
    a.kv_dtype = DType::fp32;
    a.compute = DType::fp32;
    const double ws = 4.0 * static_cast<double>(qsz) * 4 + 2.0 * static_cast<double>(s.size()) * 4;
    record(fmt::format("naive attention {}x{}x{}x{}", H, S, S, D), "attention", ws, ops::attention_cost(a), 0,
           [&](int, int) { run(); }, 1, check);
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void check_groups(const std::vector<std::string>& groups) {
  for (const std::string& g : groups) {
    if (g != "stream" && g != "norm" && g != "fusion" && g != "gemm" && g != "attention") {
      throw InputError(fmt::format("--only: '{}' is not a kernel group: expected stream, norm, fusion, gemm or attention", g));
    }
  }
}

ValidationResult validate_kernels(const hw::ChipSpec& chip, const ValidationConfig& cfg) {
  if (chip.peak(hw::Unit::matrix, DType::fp32) <= 0 && chip.peak(hw::Unit::vector, DType::fp32) <= 0) {
    throw InputError(fmt::format("--hw {}: no fp32 rate: validate needs the host's measured ceilings (ridgeline measure --out host.yaml)",
                                 chip.name));
  }
  if (chip.memory.empty()) throw InputError(fmt::format("--hw {}: no memory level", chip.name));
  const auto t0 = std::chrono::steady_clock::now();
  ValidationResult out;
  out.threads = cfg.threads > 0 ? cfg.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  out.blas = measure::have_blas();
  hw::System sys;
  sys.chip = chip;
  sys.chip.launch_overhead_s = 0;
  sys.chips = 1;
  check_groups(cfg.groups);
  Runner run{sys.chip, sys, out.threads, cfg.quick, cfg.groups, out};
  if (chip.measured_threads > 0 && chip.measured_threads != out.threads) {
    out.notes.push_back(fmt::format("the ceilings were measured on {} thread{} (the chip's measured.threads) and the kernels run on {}: "
                                    "the roofs are not these threads' rates, so the ratios compare unlike things (measure again with --threads {})",
                                    chip.measured_threads, chip.measured_threads == 1 ? "" : "s", out.threads, out.threads));
  }
  // Working sets: well inside the innermost cache with room (a quarter of its total), and
  // four times the outermost cache (at least 64 MiB, at most 1 GiB) touched by each
  // kernel: main memory. Not less: with 22 MB tensors (twice a 32 MiB L3 over three), the
  // unfused chain's intermediate stayed in the L3 between its passes.
  double inner = 256 * 1024, outer = 0;
  for (std::size_t l = 1; l < chip.memory.size(); ++l) {
    outer = std::max(outer, chip.memory[l].capacity_bytes);
    if (chip.memory[l].capacity_bytes >= 1e6) inner = chip.memory[l].capacity_bytes / 4;
  }
  const double dram = std::clamp(4 * outer, 64.0 * (1 << 20), static_cast<double>(1ULL << 30));
  if (run.wanted("stream")) {
    if (chip.memory.size() > 1) run.streams(inner, "cache");
    run.streams(dram, "DRAM");
  }
  if (run.wanted("norm") || run.wanted("fusion")) run.rows_and_fusions(dram);
  out.blas_config = measure::blas_config();
  if (out.blas && run.wanted("gemm")) {
#if defined(__x86_64__) && defined(__GNUC__)
    // The fp32/fp64 roofs are the widest FMAs' (measure's peaks run AVX-512 where it is);
    // an OpenBLAS that picked narrower kernels cannot reach them where the FMA units issue
    // either width at one rate. Said, not corrected: validate times what the user runs.
    const int bits = measure::blas_vector_bits();
    if (__builtin_cpu_supports("avx512f") && bits > 0 && bits < 512) {
      const bool dynamic = out.blas_config.find("DYNAMIC_ARCH") != std::string::npos;
      const int times = 512 / bits;
      out.notes.push_back(fmt::format("OpenBLAS chose {}-bit kernels on this CPU, which has AVX-512 ({}): where a 512-bit FMA does "
                                      "{}x a {}-bit one's work per cycle, sgemm and dgemm reach at most 1/{} of peaks measured with "
                                      "AVX-512{}",
                                      bits, out.blas_config, times, bits, times,
                                      dynamic ? " (OPENBLAS_CORETYPE=SkylakeX selects its AVX-512 kernels)" : ""));
    }
#endif
    for (int n : cfg.quick ? std::vector<int>{128, 512, 1024} : std::vector<int>{128, 512, 2048}) run.gemm<float>(n, DType::fp32);
    if (chip.peak(hw::Unit::matrix, DType::fp64) > 0) {
      for (int n : cfg.quick ? std::vector<int>{128, 512} : std::vector<int>{128, 512, 1024}) run.gemm<double>(n, DType::fp64);
    }
  }
  if (run.wanted("gemm")) {
    const std::vector<int> sizes = cfg.quick ? std::vector<int>{128, 512} : std::vector<int>{128, 512, 2048};
    // bf16 and int8 only against a rate the chip file has for them; oneDNN is loaded only then.
    const bool bf16_rate = chip.peak(hw::Unit::matrix, DType::bf16) > 0, int8_rate = chip.peak(hw::Unit::matrix, DType::int8) > 0;
    if (!bf16_rate) {
      out.notes.push_back(fmt::format("bf16 GEMMs skipped: --hw {} has no bf16 matrix rate (measure records one where the CPU has vdpbf16ps)", chip.name));
    }
    if (!int8_rate) {
      out.notes.push_back(fmt::format("int8 gemm skipped: --hw {} has no int8 matrix rate (measure records one where the CPU has VNNI)", chip.name));
    }
    out.sbgemm = measure::have_sbgemm() && bf16_rate;
    if (out.sbgemm) {
      for (int n : sizes) run.bf16_gemm(n, false);
    } else if (out.blas && bf16_rate) {
      out.notes.push_back("sbgemm skipped: the OpenBLAS loaded has no cblas_sbgemm (only builds with BUILD_BFLOAT16=1 have it; Debian's does not)");
    }
    if (bf16_rate || int8_rate) {
      const measure::OnednnInfo& dnn = measure::onednn();
      out.onednn = dnn.what;
      if (!dnn.loaded) {
        out.notes.push_back(fmt::format("oneDNN's {} skipped: {}", bf16_rate && int8_rate ? "bf16 matmul and int8 gemm" : bf16_rate ? "bf16 matmul" : "int8 gemm",
                                        dnn.what));
      } else {
        if (bf16_rate) {
          for (int n : sizes) run.bf16_gemm(n, true);
        }
        if (int8_rate) {
          for (int n : sizes) run.int8_gemm(n);
        }
      }
    }
    if (!out.onednn_bf16_impl.empty()) {
      out.notes.push_back(fmt::format("bf16 matmul: {}, implementation {}", out.onednn, out.onednn_bf16_impl));
      // measure times vdpbf16ps, not AMX's tiles: a roof the AMX kernel is not under.
      if (out.onednn_bf16_impl.find("amx") != std::string::npos) {
        out.notes.push_back("oneDNN's bf16 matmul ran on AMX tiles, and the bf16 roof is measure's vdpbf16ps peak: "
                            "its ratios set an AMX kernel against a vector roof (measure does not time AMX yet)");
      }
    }
  }
  if (out.blas && run.wanted("attention")) run.attention();
  if (!out.blas && (run.wanted("gemm") || run.wanted("attention"))) {
    out.notes.push_back(measure::blas_missing_reason() + ": sgemm, dgemm and attention skipped");
  }
  std::vector<double> mem, comp;
  for (const auto& k : out.kernels) (k.bound == ops::Bound::compute ? comp : mem).push_back(k.ratio);
  out.median_ratio_memory = median(mem);
  out.worst_ratio_memory = mem.empty() ? 0 : *std::max_element(mem.begin(), mem.end());
  out.median_ratio_compute = median(comp);
  out.worst_ratio_compute = comp.empty() ? 0 : *std::max_element(comp.begin(), comp.end());
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ridgeline::analysis
