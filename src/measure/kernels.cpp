#include "ridgeline/measure/kernels.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <sys/resource.h>

#include <algorithm>
#include <limits>
#include <cstdio>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "ridgeline/core/text.hpp"

#ifdef RIDGELINE_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>
#endif

namespace ridgeline::measure {

// The loops are plain C++ compiled at -O3 (see src/CMakeLists.txt), cloned for AVX-512,
// AVX2 and baseline x86-64 and picked at load time: the compiler's vectorisation of the
// obvious loop, as a framework's own elementwise kernels would be.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define RIDGELINE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RIDGELINE_CLONES
#endif

RIDGELINE_CLONES double dot(const float* x, const float* y, std::size_t begin, std::size_t end) noexcept {
  // A vector of partial sums (OpenMP SIMD reduction, -fopenmp-simd: no runtime), as any
  // BLAS sdot does; the reordering is the usual one.
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::size_t i = begin; i < end; ++i) s += x[i] * y[i];
  return s;
}

RIDGELINE_CLONES void axpy(float a, const float* __restrict x, float* __restrict y, std::size_t begin, std::size_t end) noexcept {
  for (std::size_t i = begin; i < end; ++i) y[i] += a * x[i];
}

RIDGELINE_CLONES void triad(float* __restrict a, const float* __restrict b, const float* __restrict c, float s, std::size_t begin,
                            std::size_t end) noexcept {
  for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

namespace {
constexpr float kA = 1.0001f, kB = 0.5f, kC = 0.9999f, kD = -0.25f;

// exp(x) in a form the compiler vectorises (libm's expf is a scalar call per element
// without -ffast-math, ~20 instructions behind a call, which made softmax and SiLU 3–5×
// slower than their memory roof; a framework's kernels use a vector exp like this one).
// exp(x) = 2^k · e^r with k = round(x·log2 e) and r = x − k·ln 2 (ln 2 in two parts, Cody
// and Waite, so that r is exact to float precision), |r| ≤ ln2/2 = 0.3466; e^r by its
// Taylor polynomial of degree 6, whose remainder r^7/7! ≤ 0.3466^7/5040 = 1.2e-7 is below
// float's half-ulp; 2^k built in the exponent bits. x is clamped to [−87, 88], where 2^k
// stays a normal float.
inline float vexp(float x) noexcept {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  const float t = x * 1.44269504f;
  const int ki = static_cast<int>(t + __builtin_copysignf(0.5f, t));
  const float k = static_cast<float>(ki);
  const float r = (x - k * 0.693145752f) - k * 1.42860677e-06f;
  const float p =
      1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
  return p * std::bit_cast<float>(static_cast<std::uint32_t>(ki + 127) << 23);
}
}  // namespace

RIDGELINE_CLONES void chain_fused(const float* __restrict x, float* __restrict y, std::size_t begin, std::size_t end) noexcept {
  for (std::size_t i = begin; i < end; ++i) y[i] = (x[i] * kA + kB) * kC + kD;
}

RIDGELINE_CLONES void chain_step(int step, const float* __restrict in, float* __restrict out, std::size_t begin,
                                 std::size_t end) noexcept {
  switch (step) {
    case 0: for (std::size_t i = begin; i < end; ++i) out[i] = in[i] * kA; break;
    case 1: for (std::size_t i = begin; i < end; ++i) out[i] = in[i] + kB; break;
    case 2: for (std::size_t i = begin; i < end; ++i) out[i] = in[i] * kC; break;
    default: for (std::size_t i = begin; i < end; ++i) out[i] = in[i] + kD; break;
  }
}

namespace {
RIDGELINE_CLONES float sum_squares(const float* x, std::size_t n) noexcept {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::size_t i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}
}  // namespace

RIDGELINE_CLONES void rmsnorm(const float* __restrict x, const float* __restrict w, float* __restrict y, std::size_t cols,
                              std::size_t begin, std::size_t end) noexcept {
  for (std::size_t r = begin; r < end; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const float inv = 1.0f / std::sqrt(sum_squares(xr, cols) / static_cast<float>(cols) + 1e-6f);
    for (std::size_t c = 0; c < cols; ++c) yr[c] = xr[c] * inv * w[c];
  }
}

RIDGELINE_CLONES void rmsnorm_mul(const float* __restrict x, const float* __restrict w, const float* __restrict g, float* __restrict y,
                                  std::size_t cols, std::size_t begin, std::size_t end) noexcept {
  for (std::size_t r = begin; r < end; ++r) {
    const float* xr = x + r * cols;
    const float* gr = g + r * cols;
    float* yr = y + r * cols;
    const float inv = 1.0f / std::sqrt(sum_squares(xr, cols) / static_cast<float>(cols) + 1e-6f);
    for (std::size_t c = 0; c < cols; ++c) yr[c] = xr[c] * inv * w[c] * gr[c];
  }
}

RIDGELINE_CLONES void softmax(const float* __restrict x, float* __restrict y, std::size_t cols, std::size_t begin,
                              std::size_t end) noexcept {
  for (std::size_t r = begin; r < end; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = xr[0];
#pragma omp simd reduction(max : m)
    for (std::size_t c = 1; c < cols; ++c) m = std::max(m, xr[c]);
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (std::size_t c = 0; c < cols; ++c) {
      yr[c] = vexp(xr[c] - m);
      s += yr[c];
    }
    const float inv = 1.0f / s;
    for (std::size_t c = 0; c < cols; ++c) yr[c] *= inv;
  }
}

RIDGELINE_CLONES void mul(const float* __restrict a, const float* __restrict b, float* __restrict y, std::size_t begin,
                          std::size_t end) noexcept {
  for (std::size_t i = begin; i < end; ++i) y[i] = a[i] * b[i];
}

RIDGELINE_CLONES void silu(const float* __restrict g, float* __restrict y, std::size_t begin, std::size_t end) noexcept {
  for (std::size_t i = begin; i < end; ++i) y[i] = g[i] / (1.0f + vexp(-g[i]));
}

RIDGELINE_CLONES void swiglu(const float* __restrict g, const float* __restrict u, float* __restrict y, std::size_t begin,
                             std::size_t end) noexcept {
  for (std::size_t i = begin; i < end; ++i) y[i] = g[i] / (1.0f + vexp(-g[i])) * u[i];
}

#ifdef RIDGELINE_HAVE_OPENBLAS
namespace {
// OpenBLAS is opened on first use, not linked: its start spawns a thread per core and maps
// buffers, which every command would pay (and which hangs under a small address-space
// limit) though only `validate` and `measure` run a GEMM. Null members: not found.
struct OpenBlas {
  decltype(&::openblas_get_config) get_config = nullptr;
  decltype(&::openblas_get_corename) get_corename = nullptr;
  decltype(&::openblas_set_num_threads) set_num_threads = nullptr;
  decltype(&::cblas_sgemm) sgemm = nullptr;
  decltype(&::cblas_dgemm) dgemm = nullptr;
  decltype(&::cblas_sbgemm) sbgemm = nullptr;  // only in builds with BUILD_BFLOAT16=1
  bool ok() const noexcept { return get_config && get_corename && set_num_threads && sgemm && dgemm; }
};

std::string& missing_reason() {
  static std::string why;
  return why;
}

// Address space left under RLIMIT_AS, bytes (infinite: no limit).
double address_space_left() noexcept {
  struct rlimit rl {};
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return std::numeric_limits<double>::infinity();
  double used = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long pages = 0;
    if (std::fscanf(f, "%lu", &pages) == 1) used = static_cast<double>(pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
    std::fclose(f);
  }
  return static_cast<double>(rl.rlim_cur) - used;
}

const OpenBlas& openblas() noexcept {
  static const OpenBlas api = [] {
    OpenBlas a;
    void* lib = nullptr;
    // OpenBLAS maps a 128 MiB buffer per thread as it starts, and its threads wait forever
    // when the map fails: under a tight address-space limit it is not started at all.
    const double need = 128.0 * (1 << 20) * static_cast<double>(std::max(1u, std::thread::hardware_concurrency()) + 1);
    if (address_space_left() < need) {
      missing_reason() = fmt::format("OpenBLAS not started: the address-space limit leaves {:.0f} MiB, under the {:.0f} MiB its threads map",
                                     address_space_left() / (1 << 20), need / (1 << 20));
      return a;
    }
    for (const char* so : {"libopenblas.so.0", "libopenblas.so"}) {
      if ((lib = dlopen(so, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (lib == nullptr) missing_reason() = "OpenBLAS was not found at run time (libopenblas.so.0; install libopenblas0)";
    auto find = [&](auto& fn, const char* name) {
      if (lib != nullptr) fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    };
    find(a.get_config, "openblas_get_config");
    find(a.get_corename, "openblas_get_corename");
    find(a.set_num_threads, "openblas_set_num_threads");
    find(a.sgemm, "cblas_sgemm");
    find(a.dgemm, "cblas_dgemm");
    // The process's own first (a test binary exports one), then the library's.
    a.sbgemm = reinterpret_cast<decltype(&::cblas_sbgemm)>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
    if (a.sbgemm == nullptr) find(a.sbgemm, "cblas_sbgemm");
    return a;
  }();
  return api;
}

void set_threads(int threads) noexcept {
  if (openblas().set_num_threads != nullptr) openblas().set_num_threads(threads);
}
}  // namespace

bool have_blas() noexcept { return openblas().ok(); }
std::string blas_missing_reason() {
  if (have_blas()) return {};
  return missing_reason().empty() ? "OpenBLAS lacks a function ridgeline calls (cblas_sgemm, cblas_dgemm, openblas_set_num_threads)" : missing_reason();
}
std::string blas_config() { return have_blas() ? openblas().get_config() : std::string(); }
int blas_vector_bits() {
  if (!have_blas()) return 0;
  // OpenBLAS's x86 core names (driver/others/dynamic.c's corename[]; a build for one target
  // names it in capitals), compared without case. "Unknown" and "GENERIC" stay 0.
  const std::string core = ascii_lower(openblas().get_corename());
  for (const char* c : {"skylakex", "cooperlake", "sapphirerapids"}) {
    if (core == c) return 512;
  }
  for (const char* c : {"sandybridge", "haswell", "zen", "bulldozer", "piledriver", "steamroller", "excavator"}) {
    if (core == c) return 256;
  }
  for (const char* c : {"katmai", "coppermine", "northwood", "prescott", "banias", "atom", "core2", "penryn", "dunnington", "nehalem",
                        "athlon", "opteron", "opteron(sse3)", "barcelona", "nano", "bobcat"}) {
    if (core == c) return 128;
  }
  return 0;
}
bool sgemm(int m, int n, int k, const float* a, const float* b, float* c, int threads) noexcept {
  if (!have_blas()) return false;
  set_threads(threads);
  openblas().sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
  return true;
}
bool dgemm(int m, int n, int k, const double* a, const double* b, double* c, int threads) noexcept {
  if (!have_blas()) return false;
  set_threads(threads);
  openblas().dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
  return true;
}
bool sgemm_nt(int m, int n, int k, const float* a, const float* b, float* c, int threads) noexcept {
  if (!have_blas()) return false;
  set_threads(threads);
  openblas().sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
  return true;
}
bool have_sbgemm() noexcept { return openblas().sbgemm != nullptr; }
bool sbgemm(int m, int n, int k, const std::uint16_t* a, const std::uint16_t* b, float* c, int threads) noexcept {
  const auto fn = openblas().sbgemm;
  if (fn == nullptr) return false;
  set_threads(threads);
  fn(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
  return true;
}
#else
std::string blas_missing_reason() { return "OpenBLAS's headers were not found at build time (install libopenblas-dev and rebuild)"; }
bool have_sbgemm() noexcept { return false; }
bool sbgemm(int, int, int, const std::uint16_t*, const std::uint16_t*, float*, int) noexcept { return false; }
bool have_blas() noexcept { return false; }
std::string blas_config() { return {}; }
int blas_vector_bits() { return 0; }
bool sgemm(int, int, int, const float*, const float*, float*, int) noexcept { return false; }
bool dgemm(int, int, int, const double*, const double*, double*, int) noexcept { return false; }
bool sgemm_nt(int, int, int, const float*, const float*, float*, int) noexcept { return false; }
#endif

std::uint16_t to_bf16(float x) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(std::uint16_t b) noexcept { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

namespace {
// A barrier the team's threads spin on (they are pinned one per CPU, and the caller sleeps in
// join): no futex wake-up between a release and the start of a timing. Past a few thousand
// spins it yields, should there be more threads than CPUs.
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n) {}
  void wait() noexcept {
    const unsigned g = generation_.load(std::memory_order_acquire);
    if (waiting_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      waiting_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    for (int spins = 0; generation_.load(std::memory_order_acquire) == g; ++spins) {
      if (spins > 4096) {
        std::this_thread::yield();
      } else {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
    }
  }

 private:
  std::atomic<int> waiting_{0};
  std::atomic<unsigned> generation_{0};
  const int n_;
};
}  // namespace

Sample time_parallel(int threads, int reps, int passes, const std::function<void(int, int)>& body, double calibrate_s) {
  using Clock = std::chrono::steady_clock;
  threads = std::max(1, threads);
  // One team for all the timings: the threads are created, pinned and warmed once, and each
  // timing starts at a barrier. (A fresh team per timing ran its first ~1 ms measurably
  // slower: 30% on the first of ~10 passes over 8 MB of L3 per thread on two cores, which
  // cost 5 ms timings 5-25%; docs/measurement.md.)
  SpinBarrier barrier(threads);
  std::vector<double> times(static_cast<std::size_t>(threads));
  std::vector<double> per_call;
  // A warm-up that throws (an allocation under a memory limit) stops the whole team after
  // the barrier, and the main thread rethrows it: no thread waits for one that left.
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&](int t) {
    pin(t);
    try {
      body(t, threads);  // warm-up, untimed: first touch on this CPU, the caches, the TLB
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
    barrier.wait();
    if (failed) return;
    int n = std::max(1, passes);
    for (int r = calibrate_s > 0 ? -1 : 0; r < reps; ++r) {
      barrier.wait();
      const auto t0 = Clock::now();
      for (int p = 0; p < n; ++p) body(t, threads);
      times[static_cast<std::size_t>(t)] = std::chrono::duration<double>(Clock::now() - t0).count();
      barrier.wait();
      // Every thread reads the same times (none is written again before the next barrier).
      const double slowest = *std::max_element(times.begin(), times.end());
      if (r < 0) {
        n = static_cast<int>(std::clamp(std::ceil(n * calibrate_s / std::max(slowest, 1e-9)), 1.0, 1e6));
      } else if (t == 0) {
        per_call.push_back(slowest / n);
      }
    }
  };
  std::vector<std::thread> team;
  team.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) team.emplace_back(work, t);
  for (auto& th : team) th.join();
  if (error) std::rethrow_exception(error);
  return summarize(per_call);
}

}  // namespace ridgeline::measure
