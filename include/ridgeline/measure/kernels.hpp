#pragma once
/// The kernels `ridgeline validate` times on this machine (and bench/ benchmarks): fp32
/// streams, norms, softmax, SwiGLU and an elementwise chain, each fused and unfused where
/// seed 000 predicts a saving, plus OpenBLAS GEMMs. Each kernel works on a slice
/// [begin, end) of its rows or elements so that threads can share it (docs/measurement.md).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "ridgeline/measure/host.hpp"

namespace ridgeline::measure {

// Streams (n elements).
double dot(const float* x, const float* y, std::size_t begin, std::size_t end) noexcept;
void axpy(float a, const float* x, float* y, std::size_t begin, std::size_t end) noexcept;
void triad(float* a, const float* b, const float* c, float s, std::size_t begin, std::size_t end) noexcept;
/// y = ((x·a + b)·c + d): four FLOPs per element in one pass.
void chain_fused(const float* x, float* y, std::size_t begin, std::size_t end) noexcept;
/// The same as four passes, each reading and writing a whole array: t = x·a; t = t + b; ...
void chain_step(int step, const float* in, float* out, std::size_t begin, std::size_t end) noexcept;

// Rows (rows x cols, row-major); [begin, end) are rows.
void rmsnorm(const float* x, const float* w, float* y, std::size_t cols, std::size_t begin, std::size_t end) noexcept;
/// y = rmsnorm(x)·w·g in one pass (RMSNorm fused with the following multiply).
void rmsnorm_mul(const float* x, const float* w, const float* g, float* y, std::size_t cols, std::size_t begin,
                 std::size_t end) noexcept;
void softmax(const float* x, float* y, std::size_t cols, std::size_t begin, std::size_t end) noexcept;

// Elementwise pairs (n elements).
void mul(const float* a, const float* b, float* y, std::size_t begin, std::size_t end) noexcept;
void silu(const float* g, float* y, std::size_t begin, std::size_t end) noexcept;
/// y = silu(g)·u in one pass (SwiGLU's activation fused with its multiply).
void swiglu(const float* g, const float* u, float* y, std::size_t begin, std::size_t end) noexcept;

/// Whether OpenBLAS is here (its headers at build time, the library at run time; GEMMs and
/// attention need it). Opening it is deferred to the first call.
bool have_blas() noexcept;
/// Why have_blas() is false: not built with it, the library missing, or an address-space
/// limit too small for the buffers its threads map (where it would hang rather than fail).
std::string blas_missing_reason();
/// The OpenBLAS build and the kernels it chose for this CPU (openblas_get_config(), e.g.
/// "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64"); empty without.
std::string blas_config();
/// Width in bits of the vectors of the kernels OpenBLAS chose (openblas_get_corename()):
/// 512 for SkylakeX, Cooperlake and SapphireRapids; 256 for the AVX and AVX2 cores
/// (Sandybridge, Haswell, Zen, Bulldozer to Excavator); 128 for the SSE ones (Katmai to
/// Bobcat); 0 for Unknown, GENERIC and non-x86 names.
int blas_vector_bits();
/// C = A·B, row-major, m x k times k x n, OpenBLAS on `threads` threads (false without OpenBLAS).
bool sgemm(int m, int n, int k, const float* a, const float* b, float* c, int threads) noexcept;
bool dgemm(int m, int n, int k, const double* a, const double* b, double* c, int threads) noexcept;
/// C = A·Bᵀ (scores Q·Kᵀ), row-major.
bool sgemm_nt(int m, int n, int k, const float* a, const float* b, float* c, int threads) noexcept;
/// Whether the OpenBLAS loaded has cblas_sbgemm: it exists only when OpenBLAS was built
/// with BUILD_BFLOAT16 (Debian's is not; its header declares it all the same), so it is
/// looked up at run time, never linked.
bool have_sbgemm() noexcept;
/// C (fp32) = A·B with A and B in bf16 (the upper half of an fp32's bits), row-major,
/// through cblas_sbgemm on `threads` threads; false where have_sbgemm() is.
bool sbgemm(int m, int n, int k, const std::uint16_t* a, const std::uint16_t* b, float* c, int threads) noexcept;

/// oneDNN (Debian libdnnl2), loaded at run time (dlopen of libdnnl.so.2) the first time it
/// is asked for: a second library for the GEMMs OpenBLAS cannot do here, a bf16 matmul and
/// an int8 (u8·s8 -> s32) GEMM. Its OpenMP workers are created by the thread that calls it,
/// which time_parallel pins to one CPU; unbound, they would all inherit that CPU (75 against
/// 2000 GOP/s for a 1024-cube int8 GEMM on the development VM). So libgomp is loaded with
/// OMP_PROC_BIND=close and OMP_PLACES=threads unless the environment sets them (and both are
/// unset again after, and the loading thread's CPUs, which libgomp pins, given back); where
/// libgomp was loaded before (a Python process with numpy, an OpenMP OpenBLAS) and cannot be
/// told, a thread's first call runs with every CPU of the process so that its workers are
/// not created pinned. Calls are serial: one oneDNN stream serves the process.
struct OnednnInfo {
  bool loaded = false;
  std::string what;  ///< "oneDNN 2.6.3 (OpenMP)", or why it is not there
};
const OnednnInfo& onednn() noexcept;

/// C (fp32) = A·B, A and B bf16 (row-major m x k, k x n), through oneDNN's matmul primitive,
/// set up once for these buffers and run on `threads` threads by run().
class OnednnBf16Matmul {
 public:
  OnednnBf16Matmul(int m, int n, int k, const std::uint16_t* a, const std::uint16_t* b, float* c, int threads) noexcept;
  ~OnednnBf16Matmul();
  OnednnBf16Matmul(const OnednnBf16Matmul&) = delete;
  OnednnBf16Matmul& operator=(const OnednnBf16Matmul&) = delete;
  bool ok() const noexcept { return ok_; }
  /// The implementation oneDNN chose (e.g. "brg:avx512_core_bf16"), or why there is none.
  const std::string& impl() const noexcept { return impl_; }
  bool run() noexcept;

 private:
  struct State;
  State* s_ = nullptr;
  bool ok_ = false;
  std::string impl_;
  int threads_ = 1;
};

/// C (int32) = A·B with A unsigned and B signed 8-bit, row-major, through oneDNN's
/// dnnl_gemm_u8s8s32 on `threads` threads; false without oneDNN or on its error.
bool onednn_gemm_u8s8s32(int m, int n, int k, const std::uint8_t* a, const std::int8_t* b, std::int32_t* c, int threads) noexcept;

/// fp32 -> bf16 rounded to nearest, ties to even (NaN kept a NaN); bf16 -> fp32 exactly.
std::uint16_t to_bf16(float x) noexcept;
float from_bf16(std::uint16_t b) noexcept;

/// Times `body(thread, threads)` run by `threads` threads at once, thread t pinned to CPU t:
/// the median and spread of the slowest thread's seconds per call over `reps` timings of
/// `passes` calls each. One team of threads does the whole job: one untimed call per thread
/// warms up, and every timing starts at a barrier. With `calibrate_s` > 0 a first, discarded
/// timing of `passes` calls sets the count so that a timing lasts about `calibrate_s`.
Sample time_parallel(int threads, int reps, int passes, const std::function<void(int, int)>& body,
                     double calibrate_s = 0);

/// [begin, end) of `n` items for thread t of T.
inline std::size_t slice_begin(std::size_t n, int t, int threads) noexcept {
  return n * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
}

}  // namespace ridgeline::measure
