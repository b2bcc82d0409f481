#include "ridgeline/measure/host.hpp"

#include <fmt/format.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <new>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <tuple>

#ifdef RIDGELINE_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "ridgeline/core/text.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/measure/kernels.hpp"

namespace ridgeline::measure {

void pin(int cpu) noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

Sample summarize(std::vector<double> v) {
  Sample s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.value = v[v.size() / 2];
  s.spread = v.front() > 0 ? v.back() / v.front() - 1 : 0;
  s.repetitions = static_cast<int>(v.size());
  return s;
}

namespace {

using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double parse_size(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return 0;
  double mult = 1;
  if (s.back() == 'K') mult = 1024;
  else if (s.back() == 'M') mult = 1024.0 * 1024;
  else if (s.back() == 'G') mult = 1024.0 * 1024 * 1024;
  if (mult > 1) s.pop_back();
  return std::atof(s.c_str()) * mult;
}

int count_cpus(const std::string& list) {
  // "0-1,4,6-7"
  int n = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto dash = part.find('-');
    if (dash == std::string::npos) {
      if (!part.empty() && part != "\n") ++n;
    } else {
      n += std::atoi(part.substr(dash + 1).c_str()) - std::atoi(part.substr(0, dash).c_str()) + 1;
    }
  }
  return std::max(1, n);
}

// ---- compute kernels: independent accumulators, long enough to hide FMA latency --------

// Accumulators: latency 4 x 2 ports, with margin. The inner loop must be unrolled for them
// to live in registers (at -O2 GCC would otherwise keep the array in memory and the loop
// would run at the store-forwarding latency, a third of the peak): hence the pragmas.
constexpr int kAcc = 12;

__attribute__((target("avx512f"))) double fma_f64_avx512(long iters) {
  __m512d acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_pd(1.0 + i * 1e-9);
  const __m512d a = _mm512_set1_pd(0.999999999), b = _mm512_set1_pd(1e-9);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_pd(acc[i], a, b);
  }
  __m512d s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_pd(s, acc[i]);
  return _mm512_reduce_add_pd(s);
}

__attribute__((target("avx512f"))) double fma_f32_avx512(long iters) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(1.0f + static_cast<float>(i) * 1e-6f);
  const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512bf16,avx512f"))) double dot_bf16_avx512(long iters) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_setzero_ps();
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, a);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512vnni,avx512f"))) double dot_int8_avx512(long iters) {
  __m512i acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_setzero_si512();
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  __m512i s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_epi32(s, acc[i]);
  return static_cast<double>(_mm512_reduce_add_epi32(s));
}

__attribute__((target("avx2,fma"))) double fma_f64_avx2(long iters) {
  __m256d acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_pd(1.0 + i * 1e-9);
  const __m256d a = _mm256_set1_pd(0.999999999), b = _mm256_set1_pd(1e-9);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_pd(acc[i], a, b);
  }
  double out[4];
  __m256d s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_pd(s, acc[i]);
  _mm256_storeu_pd(out, s);
  return out[0] + out[1] + out[2] + out[3];
}

__attribute__((target("avx2,fma"))) double fma_f32_avx2(long iters) {
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(1.0f + static_cast<float>(i) * 1e-6f);
  const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  float out[8];
  __m256 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_ps(s, acc[i]);
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

struct Kernel {
  DType dtype;
  const char* isa;
  double (*run)(long);
  double flops_per_iter;  // kAcc instructions x lanes x 2
};

std::atomic<double> g_sink{0};

// Runs `k` on `threads` pinned threads for about `seconds`; returns FLOP/s.
double run_peak(const Kernel& k, int threads, double seconds) {
  // Calibrate iterations on one thread.
  long iters = 1 << 14;
  for (;;) {
    auto t0 = Clock::now();
    g_sink = g_sink + k.run(iters);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dt > seconds / 4 || iters > (1L << 36)) {
      iters = static_cast<long>(static_cast<double>(iters) * seconds / std::max(dt, 1e-9));
      break;
    }
    iters *= 4;
  }
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> times(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      pin(t);
      ready++;
      while (!go.load()) {
      }
      auto t0 = Clock::now();
      const double r = k.run(iters);
      times[static_cast<size_t>(t)] = std::chrono::duration<double>(Clock::now() - t0).count();
      g_sink = g_sink + r;
    });
  }
  while (ready.load() < threads) {
  }
  go = true;
  for (auto& th : pool) th.join();
  const double slowest = *std::max_element(times.begin(), times.end());
  return static_cast<double>(threads) * static_cast<double>(iters) * k.flops_per_iter / slowest;
}

// ---- bandwidth kernels ----------------------------------------------------------------
// Unrolled 8 deep (n is a multiple of 64 doubles) so that the loop's own increment, compare
// and branch do not share the cycle with the loads and stores.

// Eight independent sums: two 64-byte loads per cycle need 2 × the add latency (3–4
// cycles) sums in flight, so that the adds never limit the loads in L1.
__attribute__((target("avx512f"))) double read_avx512(const double* a, size_t n) {
  __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    s0 = _mm512_add_pd(s0, _mm512_load_pd(a + i));
    s1 = _mm512_add_pd(s1, _mm512_load_pd(a + i + 8));
    s2 = _mm512_add_pd(s2, _mm512_load_pd(a + i + 16));
    s3 = _mm512_add_pd(s3, _mm512_load_pd(a + i + 24));
    s4 = _mm512_add_pd(s4, _mm512_load_pd(a + i + 32));
    s5 = _mm512_add_pd(s5, _mm512_load_pd(a + i + 40));
    s6 = _mm512_add_pd(s6, _mm512_load_pd(a + i + 48));
    s7 = _mm512_add_pd(s7, _mm512_load_pd(a + i + 56));
  }
  const __m512d s = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)),
                                  _mm512_add_pd(_mm512_add_pd(s4, s5), _mm512_add_pd(s6, s7)));
  return _mm512_reduce_add_pd(s);
}
__attribute__((target("avx512f"))) void write_avx512(double* a, size_t n, double v) {
  const __m512d x = _mm512_set1_pd(v);
#pragma GCC unroll 8
  for (size_t i = 0; i + 8 <= n; i += 8) _mm512_store_pd(a + i, x);
}
__attribute__((target("avx512f"))) void copy_avx512(double* d, const double* s, size_t n) {
#pragma GCC unroll 8
  for (size_t i = 0; i + 8 <= n; i += 8) _mm512_store_pd(d + i, _mm512_load_pd(s + i));
}
__attribute__((target("avx512f"))) void triad_avx512(double* a, const double* b, const double* c, size_t n, double k) {
  const __m512d kk = _mm512_set1_pd(k);
#pragma GCC unroll 8
  for (size_t i = 0; i + 8 <= n; i += 8) _mm512_store_pd(a + i, _mm512_fmadd_pd(kk, _mm512_load_pd(c + i), _mm512_load_pd(b + i)));
}

// Non-temporal stores: the line goes to memory through the write-combining buffers
// without being read first (no write-allocate) and without displacing the caches.
__attribute__((target("avx512f"))) void write_nt_avx512(double* a, size_t n, double v) {
  const __m512d x = _mm512_set1_pd(v);
#pragma GCC unroll 8
  for (size_t i = 0; i + 8 <= n; i += 8) _mm512_stream_pd(a + i, x);
  _mm_sfence();
}
__attribute__((target("avx512f"))) void copy_nt_avx512(double* d, const double* s, size_t n) {
#pragma GCC unroll 8
  for (size_t i = 0; i + 8 <= n; i += 8) _mm512_stream_pd(d + i, _mm512_load_pd(s + i));
  _mm_sfence();
}
void write_nt_plain(double* a, size_t n, double v) {
  const __m128d x = _mm_set1_pd(v);
  for (size_t i = 0; i + 2 <= n; i += 2) _mm_stream_pd(a + i, x);
  _mm_sfence();
}
void copy_nt_plain(double* d, const double* s, size_t n) {
  for (size_t i = 0; i + 2 <= n; i += 2) _mm_stream_pd(d + i, _mm_load_pd(s + i));
  _mm_sfence();
}

double read_plain(const double* a, size_t n) {
  double s[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += a[i + static_cast<size_t>(k)];
  }
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}
void write_plain(double* a, size_t n, double v) { std::fill(a, a + n, v); }
void copy_plain(double* d, const double* s, size_t n) { std::memcpy(d, s, n * sizeof(double)); }
void triad_plain(double* a, const double* b, const double* c, size_t n, double k) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + k * c[i];
}

struct AlignedFree {
  void operator()(double* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<double, AlignedFree>;
Buffer alloc(size_t n) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (n * sizeof(double) + 63) / 64 * 64));
  if (p == nullptr) throw std::bad_alloc();  // the caller's team stops and rethrows it (time_parallel)
  auto* d = static_cast<double*>(p);
  for (size_t i = 0; i < n; ++i) d[i] = 1.0;
  return Buffer(d);
}

// Each thread's arrays, kept across the sweep (allocating and faulting in hundreds of MB
// for every point would cost more than the measurement), grown as the sizes grow. One block
// of the working set holds the kernel's arrays (one, two or three of n doubles), each 17
// lines (1088 bytes) past the end of the one before: the arrays' i-th elements never share
// their offset within a 4 KiB page (n is a multiple of 512 bytes and 1088 is not), so a load
// of b[i] is never taken for a store to a[i] by the 4 KiB address aliasing of the load/store
// unit. The block is the working set and no more: a 1 GiB read takes 1 GiB, not three.
struct Arena {
  static constexpr size_t kPad = 1088 / sizeof(double);
  Buffer block;
  double *a = nullptr, *b = nullptr, *c = nullptr;
  size_t capacity = 0;  // doubles in the block
  void ensure(size_t n, int arrays) {
    const size_t want = static_cast<size_t>(arrays) * (n + kPad);
    if (want > capacity) {
      block.reset();  // the old block goes before the new one comes: never both at once
      block = alloc(want);
      capacity = want;
    }
    a = block.get();
    b = arrays >= 2 ? a + n + kPad : a;  // (a kernel uses only the arrays it has)
    c = arrays >= 3 ? b + n + kPad : a;
  }
};

// Bytes/s of `op` (write_nt and copy_nt: with non-temporal stores) over a working set of
// `bytes`, on `threads` threads each with its own arrays;
// median of `reps` timings of about 5 ms (time_parallel: one team, pinned, warmed up, each
// timing from a barrier).
Sample bandwidth(Stream op, double bytes, int threads, int reps, bool avx512, std::vector<Arena>& arenas) {
  const int arrays = op == Stream::read || op == Stream::write || op == Stream::write_nt ? 1
                     : op == Stream::copy || op == Stream::copy_nt                       ? 2
                                                                                         : 3;
  const size_t n = std::max<size_t>(64, static_cast<size_t>(bytes / arrays / sizeof(double)) / 64 * 64);
  const double moved = static_cast<double>(n) * sizeof(double) * arrays;  // loads + stores, no write-allocate
  if (arenas.size() < static_cast<size_t>(threads)) arenas.resize(static_cast<size_t>(threads));
  // One call makes `inner` passes, at least 1 MiB moved (a few µs in L1), so that the call
  // around them costs nothing measurable beside a pass of ~30 ns over an L1-sized set.
  const int inner = std::max(1, static_cast<int>(std::ceil(1048576.0 / moved)));
  // Per thread (a line each): the sum the reads return, and the passes made, whose count + 1
  // is the value the writes store: a different one each pass, never zero (on the development
  // VM, non-temporal stores of zeros ran at 2x the rate of any other value: 84-100 GB/s
  // against 40-45 on two cores; docs/measurement.md).
  std::vector<double> sinks(static_cast<size_t>(threads) * 8), calls(static_cast<size_t>(threads) * 8);
  auto body = [&](int t, int) {
    Arena& ar = arenas[static_cast<size_t>(t)];
    ar.ensure(n, arrays);  // first touch on the thread's own CPU (the warm-up call)
    double* a = ar.a;
    double* b = ar.b;
    double* c = ar.c;
    double sink = 0;
    for (int p = 0; p < inner; ++p) {
      const double v = ++calls[static_cast<size_t>(t) * 8];
      switch (op) {
        case Stream::read: sink += avx512 ? read_avx512(a, n) : read_plain(a, n); break;
        case Stream::write: avx512 ? write_avx512(a, n, v) : write_plain(a, n, v); break;
        case Stream::copy: avx512 ? copy_avx512(a, b, n) : copy_plain(a, b, n); break;
        case Stream::write_nt: avx512 ? write_nt_avx512(a, n, v) : write_nt_plain(a, n, v); break;
        case Stream::copy_nt: avx512 ? copy_nt_avx512(a, b, n) : copy_nt_plain(a, b, n); break;
        case Stream::triad: avx512 ? triad_avx512(a, b, c, n, 1.0001) : triad_plain(a, b, c, n, 1.0001); break;
      }
    }
    sinks[static_cast<size_t>(t) * 8] += sink + a[n / 2];
  };
  // A first count guessed at 20 GB/s, set from the first (discarded) timing; past 500 MB one
  // pass lasts 5 ms up to 100 GB/s and needs no calibration.
  const double per_call = moved * inner;
  const int passes = std::max(1, static_cast<int>(5e-3 * 20e9 / per_call));
  const Sample t = time_parallel(threads, reps, passes, body, per_call >= 5e8 ? 0 : 5e-3);
  double sink = 0;
  for (double x : sinks) sink += x;
  g_sink = g_sink + sink;
  Sample rate = t;
  rate.value = t.value > 0 ? per_call * threads / t.value : 0;
  return rate;
}

// The widest FMA (and dot-product) kernels the CPU has, one per dtype.
std::vector<Kernel> peak_kernels(const HostInfo& h) {
  std::vector<Kernel> kernels;
  if (h.avx512f) {
    kernels.push_back({DType::fp64, "avx512f", fma_f64_avx512, kAcc * 8 * 2.0});
    kernels.push_back({DType::fp32, "avx512f", fma_f32_avx512, kAcc * 16 * 2.0});
    if (h.avx512_bf16) kernels.push_back({DType::bf16, "avx512_bf16 (vdpbf16ps)", dot_bf16_avx512, kAcc * 32 * 2.0});
    if (h.avx512_vnni) kernels.push_back({DType::int8, "avx512_vnni (vpdpbusd)", dot_int8_avx512, kAcc * 64 * 2.0});
  } else if (h.avx2 && h.fma) {
    kernels.push_back({DType::fp64, "avx2+fma", fma_f64_avx2, kAcc * 4 * 2.0});
    kernels.push_back({DType::fp32, "avx2+fma", fma_f32_avx2, kAcc * 8 * 2.0});
  }
  return kernels;
}

}  // namespace

struct CpuDevice::Arrays {
  std::vector<Arena> arenas;
};

CpuDevice::CpuDevice(HostInfo h) : host_(std::move(h)), arrays_(std::make_unique<Arrays>()) {}
CpuDevice::~CpuDevice() = default;

std::vector<PeakKernel> CpuDevice::peak_kernels() const {
  std::vector<PeakKernel> out;
  for (const Kernel& k : measure::peak_kernels(host_)) out.push_back({k.dtype, k.isa});
  return out;
}

double CpuDevice::peak_rate(DType dtype, int workers, double seconds) {
  for (const Kernel& k : measure::peak_kernels(host_)) {
    if (k.dtype == dtype) return run_peak(k, std::max(1, workers), seconds);
  }
  return 0;
}

Sample CpuDevice::stream_rate(Stream kernel, double bytes, int workers, int reps) {
  return bandwidth(kernel, bytes, std::max(1, workers), std::max(1, reps), host_.avx512f, arrays_->arenas);
}

bool CpuDevice::stores_allocate() const {
#if defined(__x86_64__) || defined(__i386__)
  return true;
#else
  return false;  // the rule cited is x86's; elsewhere nothing is assumed
#endif
}

double peak_rate(const HostInfo& h, DType dtype, int threads, double seconds) { return CpuDevice(h).peak_rate(dtype, threads, seconds); }

Sample stream_rate(const HostInfo& h, Stream kernel, double bytes, int threads, int reps) {
  return CpuDevice(h).stream_rate(kernel, bytes, threads, reps);
}

int instances_used(const CacheLevel& c, int threads) {
  threads = std::max(1, threads);
  if (c.instance_of_cpu.size() >= static_cast<size_t>(threads)) {
    std::vector<int> seen(c.instance_of_cpu.begin(), c.instance_of_cpu.begin() + threads);
    std::sort(seen.begin(), seen.end());
    const bool known = seen.front() >= 0;
    if (known) return static_cast<int>(std::unique(seen.begin(), seen.end()) - seen.begin());
  }
  const int shared = std::max(1, c.shared_cpus);
  return (threads + shared - 1) / shared;
}

HostInfo detect_host() {
  HostInfo h;
  const std::string cpuinfo = read_file("/proc/cpuinfo");
  auto field = [&](const std::string& key) {
    auto p = cpuinfo.find(key);
    if (p == std::string::npos) return std::string();
    auto colon = cpuinfo.find(':', p);
    auto nl = cpuinfo.find('\n', p);
    if (colon == std::string::npos || colon > nl) return std::string();
    std::string v = cpuinfo.substr(colon + 1, nl - colon - 1);
    while (!v.empty() && v.front() == ' ') v.erase(v.begin());
    return v;
  };
  h.model = field("model name");
  if (h.model.empty()) h.model = "unknown CPU";
  h.mhz = std::atof(field("cpu MHz").c_str());
  const std::string flags = " " + field("flags") + " ";
  auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  h.avx2 = has("avx2");
  h.fma = has("fma");
  h.avx512f = has("avx512f");
  h.avx512_bf16 = has("avx512_bf16");
  h.avx512_vnni = has("avx512_vnni");
  h.amx = has("amx_tile");
  h.cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#ifdef RIDGELINE_HAVE_HWLOC
  // The topology from hwloc: caches with their sizes and how many CPUs share each, cores,
  // packages and NUMA nodes, whatever the kernel's sysfs layout.
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
    h.topology = "hwloc";
    h.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    h.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    h.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    const hwloc_obj_type_t levels[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE, HWLOC_OBJ_L5CACHE};
    for (int l = 0; l < 5; ++l) {
      hwloc_obj_t obj = hwloc_get_obj_by_type(topo, levels[l], 0);
      if (obj == nullptr || obj->attr == nullptr) continue;
      if (obj->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
      CacheLevel c;
      c.level = static_cast<int>(obj->attr->cache.depth);
      c.size_bytes = static_cast<double>(obj->attr->cache.size);
      c.shared_cpus = std::max(1, hwloc_bitmap_weight(obj->cpuset));
      // Which instance each CPU (by OS index, as pin() takes it) uses.
      const int instances = hwloc_get_nbobjs_by_type(topo, levels[l]);
      for (int k = 0; k < instances; ++k) {
        hwloc_obj_t inst = hwloc_get_obj_by_type(topo, levels[l], static_cast<unsigned>(k));
        if (inst == nullptr || inst->cpuset == nullptr) continue;
        for (int cpu = hwloc_bitmap_first(inst->cpuset); cpu >= 0 && cpu < (1 << 16); cpu = hwloc_bitmap_next(inst->cpuset, cpu)) {
          const auto at = static_cast<size_t>(cpu);
          if (c.instance_of_cpu.size() <= at) c.instance_of_cpu.resize(at + 1, -1);
          c.instance_of_cpu[at] = k;
        }
      }
      if (c.size_bytes > 0) h.caches.push_back(c);
    }
  }
  if (topo != nullptr) hwloc_topology_destroy(topo);
  if (!h.caches.empty()) return h;
#endif
  h.topology = "sysfs";
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    const std::string type = read_file(dir + "type");
    if (type.empty()) break;
    if (type.rfind("Instruction", 0) == 0) continue;
    CacheLevel c;
    c.level = std::atoi(read_file(dir + "level").c_str());
    c.size_bytes = parse_size(read_file(dir + "size"));
    c.shared_cpus = count_cpus(read_file(dir + "shared_cpu_list"));
    // Each CPU's instance, named by the first CPU of its shared_cpu_list.
    for (int cpu = 0; cpu < h.cpus; ++cpu) {
      const std::string list = read_file(fmt::format("/sys/devices/system/cpu/cpu{}/cache/index{}/shared_cpu_list", cpu, i));
      if (list.empty()) break;
      c.instance_of_cpu.push_back(std::atoi(list.c_str()));
    }
    if (c.size_bytes > 0) h.caches.push_back(c);
  }
  return h;
}

std::vector<Plateau> find_plateaus(const std::vector<BandwidthPoint>& sweep, const std::vector<CacheLevel>& caches) {
  std::vector<Plateau> out;
  const int levels = static_cast<int>(caches.size()) + 1;  // the caches, then main memory
  for (int l = 0; l < levels; ++l) {
    const bool memory = l == levels - 1;
    // One core can fill a whole cache instance, shared or not.
    const double below = l == 0 ? 0 : caches[static_cast<size_t>(l - 1)].size_bytes;
    const double cap = memory ? INFINITY : caches[static_cast<size_t>(l)].size_bytes;
    auto pick = [&](double lo, double hi) {
      std::vector<const BandwidthPoint*> pts;
      for (const auto& b : sweep) {
        if (b.working_set_bytes >= lo && b.working_set_bytes <= hi && b.read.repetitions > 0) pts.push_back(&b);
      }
      return pts;
    };
    auto pts = memory ? pick(2 * below, INFINITY) : pick(1.5 * below, 0.75 * cap);
    if (pts.empty()) pts = pick(below * (1 + 1e-9), cap);
    if (pts.empty()) continue;
    Plateau p;
    if (memory) {
      // Main memory's rate is the largest sets': the smaller ones whose read rate is still
      // above it by more than the noise sit in a cache larger than reported.
      const double floor = pts.back()->read.value;
      while (pts.size() > 1 && pts.front()->read.value > (1 + kUnstableSpread) * floor) pts.erase(pts.begin());
      // Settled: the rates from a quarter of the largest set to it (two doublings) agree.
      const double largest = sweep.back().working_set_bytes;
      double lo = INFINITY, hi = 0;
      for (const auto& b : sweep) {
        if (b.working_set_bytes < largest / 4 * (1 - 1e-9) || b.working_set_bytes < 2 * below || b.read.repetitions == 0) continue;
        lo = std::min(lo, b.read.value), hi = std::max(hi, b.read.value);
      }
      p.last_doublings_spread = lo > 0 && std::isfinite(lo) ? hi / lo - 1 : 0;
      p.settled = p.last_doublings_spread <= kUnstableSpread;
    }
    p.cache = memory ? -1 : l;
    p.from_bytes = pts.front()->working_set_bytes;
    p.to_bytes = pts.back()->working_set_bytes;
    p.points = static_cast<int>(pts.size());
    std::vector<double> v;
    for (const auto* b : pts) v.push_back(b->read.value);
    p.read = summarize(v);
    out.push_back(p);
  }
  // The edges: where read crosses the geometric mean of two neighbouring plateaus, between
  // the last point of the first and the first point of the second.
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    const double hi = out[i].read.value, lo = out[i + 1].read.value;
    if (!(hi > lo && lo > 0)) continue;
    const double mid = std::sqrt(hi * lo);
    for (size_t k = 0; k + 1 < sweep.size(); ++k) {
      const auto& x = sweep[k];
      const auto& y = sweep[k + 1];
      if (x.working_set_bytes < out[i].to_bytes || y.working_set_bytes > out[i + 1].from_bytes) continue;
      if (x.read.value >= mid && y.read.value < mid) {
        const double f = std::log(x.read.value / mid) / std::log(x.read.value / y.read.value);
        out[i].edge_bytes = x.working_set_bytes * std::pow(y.working_set_bytes / x.working_set_bytes, f);
        break;
      }
    }
  }
  return out;
}

MeasureResult measure_device(Device& device, const MeasureConfig& cfg) {
  const auto t0 = Clock::now();
  MeasureResult r;
  r.host = device.info();
  r.write_allocate = device.stores_allocate();
  const HostInfo& h = r.host;
  const int all = cfg.threads > 0 ? cfg.threads : h.cpus;
  r.threads = all;
  const double seconds = cfg.quick ? 0.15 : 0.6;
  const int reps = cfg.quick ? 3 : 7;
  const std::vector<PeakKernel> kernels = device.peak_kernels();
  // The steps, counted first so that the progress callback knows the total.
  // One core: working sets from 16 KiB to 4x the last cache (at least 64 MiB). All cores:
  // the same in full mode, 2x per core in quick mode (with two or more cores sharing it, 4x
  // it or more in all). Main memory far past any cache whatever the topology says: at least
  // kMainMemoryBytes in all, one core and all cores alike (on the development VM hwloc
  // reports 33.5 MB of L3 and sets up to 128 MB still ran partly in cache;
  // docs/measurement.md#main-memory).
  double last = 0;
  for (const auto& c : h.caches) last = std::max(last, c.size_bytes);
  // Past the sweep's own top (4x the last cache) the one-core sets are main memory's plateau
  // alone: read only (the plateaus read it), a second or so in all.
  double read_only_from = std::max(4 * last, 64.0 * 1024 * 1024);
  double one_top = std::max(read_only_from, kMainMemoryBytes);
  double top = std::max({(cfg.quick ? 2 : 4) * last, 64.0 * 1024 * 1024, kMainMemoryBytes / all});
  if (cfg.max_working_set_bytes > 0) top = std::min(top, cfg.max_working_set_bytes), one_top = std::min(one_top, cfg.max_working_set_bytes);
  read_only_from = std::min(read_only_from, one_top);
  const double step = cfg.quick ? 2.0 : std::sqrt(2.0);
  std::vector<double> one_sizes;
  for (double ws = 16 * 1024; ws <= one_top * 1.0001; ws *= step) one_sizes.push_back(ws);
  // All cores: one size inside each cache level (per core share) and one far past the last.
  std::vector<std::pair<double, int>> sizes;
  for (size_t ci = 0; ci < h.caches.size(); ++ci) {
    const auto& c = h.caches[ci];
    const double ws = c.size_bytes / std::max(1, c.shared_cpus) / 2;
    if (ws < top) sizes.emplace_back(ws, static_cast<int>(ci));
  }
  sizes.emplace_back(top, -1);
  const int total = static_cast<int>(kernels.size() + one_sizes.size() + sizes.size());
  int done = 0;
  auto progress = [&](const std::string& what) {
    ++done;
    if (cfg.progress) cfg.progress(done, total, what);
  };

  for (const auto& k : kernels) {
    PeakResult p;
    p.dtype = k.dtype;
    p.isa = k.isa;
    std::vector<double> one, many;
    for (int i = 0; i < reps; ++i) {
      one.push_back(device.peak_rate(k.dtype, 1, seconds / reps));
      many.push_back(device.peak_rate(k.dtype, all, seconds / reps));
    }
    p.one_core = summarize(one);
    p.all_cores = summarize(many);
    r.peaks.push_back(p);
    progress(fmt::format("{} peak", name(k.dtype)));
  }
  // Non-temporal stores apply past the caches: from half the last one.
  const double nt_from = last / 2;
  for (double ws : one_sizes) {
    BandwidthPoint b;
    b.working_set_bytes = ws;
    const int rr = ws > 64e6 ? std::min(reps, 3) : reps;  // at least 3: a spread to report
    b.read = device.stream_rate(Stream::read, ws, 1, rr);
    if (ws > read_only_from * 1.0001) {
      r.sweep.push_back(b);
      progress(fmt::format("one core, {:.0f} KiB (read)", ws / 1024));
      continue;
    }
    b.write = device.stream_rate(Stream::write, ws, 1, rr);
    b.copy = device.stream_rate(Stream::copy, ws, 1, rr);
    b.triad = device.stream_rate(Stream::triad, ws, 1, rr);
    if (ws >= nt_from) {
      b.write_nt = device.stream_rate(Stream::write_nt, ws, 1, rr);
      b.copy_nt = device.stream_rate(Stream::copy_nt, ws, 1, rr);
    }
    r.sweep.push_back(b);
    progress(fmt::format("one core, {:.0f} KiB", ws / 1024));
  }
  for (auto [ws, ci] : sizes) {
    BandwidthPoint b;
    b.working_set_bytes = ws;
    b.cache = ci;
    // At least 3: a spread to report; main memory's roof, whose timings move most, 5 (quick) or 7.
    const int rr = ci < 0 ? std::max(reps, 5) : ws > 64e6 ? std::min(reps, 3) : reps;
    b.read = device.stream_rate(Stream::read, ws, all, rr);
    b.copy = device.stream_rate(Stream::copy, ws, all, rr);
    b.triad = device.stream_rate(Stream::triad, ws, all, rr);
    if (ci < 0) {
      b.write_nt = device.stream_rate(Stream::write_nt, ws, all, rr);
      b.copy_nt = device.stream_rate(Stream::copy_nt, ws, all, rr);
    }
    r.sweep_all.push_back(b);
    progress(fmt::format("{} cores, {:.0f} KiB each", all, ws / 1024));
  }
  r.plateaus = find_plateaus(r.sweep, h.caches);
  if (!r.sweep_all.empty()) {
    const BandwidthPoint& d = r.sweep_all.back();
    if (d.working_set_bytes >= 2 * last && d.copy.value > 0 && d.copy_nt.value > 0) r.write_allocate_witness = 2 * (d.copy_nt.value / d.copy.value - 1);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

MeasureResult measure_host(const MeasureConfig& cfg) {
  CpuDevice cpu(detect_host());
  return measure_device(cpu, cfg);
}

std::vector<LevelRoof> level_roofs(const MeasureResult& r) {
  std::vector<LevelRoof> out;
  const auto& all = r.sweep_all;
  auto roof = [&](const BandwidthPoint& b) {
    const bool l1 = b.cache >= 0 && r.host.caches[static_cast<size_t>(b.cache)].level == 1;
    const bool allocates = r.write_allocate && !l1;
    LevelRoof l;
    l.working_set_bytes = b.working_set_bytes;
    for (const auto& [name, x, traffic] : {std::tuple{"read", &b.read, 1.0}, {"copy", &b.copy, allocates ? 1.5 : 1.0},
                                           {"triad", &b.triad, allocates ? 4.0 / 3 : 1.0}, {"write_nt", &b.write_nt, 1.0},
                                           {"copy_nt", &b.copy_nt, 1.0}}) {
      if (x->repetitions > 0 && x->value * traffic > l.bandwidth_Bps) l.bandwidth_Bps = x->value * traffic, l.kernel = name, l.spread = x->spread;
    }
    if (l.spread > kUnstableSpread) l.unstable = true, l.why = fmt::format("its {} timings spread {:.0f}%", l.kernel, 100 * l.spread);
    return l;
  };
  if (all.empty()) return out;
  LevelRoof memory = roof(all.back());
  memory.name = all.back().cache < 0 ? "DRAM" : "memory";
  for (const Plateau& p : r.plateaus) {
    if (p.cache >= 0 || p.settled || all.back().cache >= 0) continue;
    // The one-core rate still fell over the sweep's last two doublings: a cache past the one
    // reported may hold some of main memory's working set.
    memory.unstable = true;
    memory.why += fmt::format("{}the one-core read rate moved {:.0f}% over the last two doublings (to {})", memory.why.empty() ? "" : "; ",
                              100 * p.last_doublings_spread, format_quantity(r.sweep.back().working_set_bytes, Quantity::bytes));
  }
  out.push_back(memory);
  for (int i = static_cast<int>(all.size()) - 2; i >= 0; --i) {
    const auto& p = all[static_cast<size_t>(i)];
    if (p.cache < 0) continue;
    LevelRoof l = roof(p);
    l.name = fmt::format("L{}", r.host.caches[static_cast<size_t>(p.cache)].level);
    out.push_back(l);
  }
  return out;
}

hw::ChipSpec to_chip(const MeasureResult& r) {
  hw::ChipSpec c;
  c.name = "host";
  c.display_name = r.host.model + fmt::format(" ({} CPUs, measured)", r.host.cpus);
  c.vendor = "host";
  c.kind = "cpu";
  for (const auto& p : r.peaks) {
    c.matrix_flops_per_s[index(p.dtype)] = p.all_cores.value;
    c.vector_flops_per_s[index(p.dtype)] = p.all_cores.value;
  }
  // Each level's roof is the best all-core rate any stream kernel reached there (read, copy,
  // triad and, past the caches, the non-temporal ones), as the Empirical Roofline Toolkit
  // takes its ceilings: a read-only stream does not always saturate a level that mixed
  // loads and stores do. Counted as traffic: where plain stores allocate, copy's store
  // also reads its line (3 bytes moved per 2 counted) and so does triad's (4 per 3), at
  // every level but L1 (named so in the file: validate keys on the name), where the line
  // is already present. Main memory first
  // (past the last cache), then the caches, outermost first.
  c.write_allocate = r.write_allocate;
  const int threads = r.all_threads();
  c.measured_threads = threads;
  const auto& all = r.sweep_all;
  for (const LevelRoof& l : level_roofs(r)) {
    if (c.memory.size() >= static_cast<size_t>(hw::kMaxMemoryLevels)) break;
    double capacity = 0;
    for (const auto& p : all) {
      if (p.cache < 0 || fmt::format("L{}", r.host.caches[static_cast<size_t>(p.cache)].level) != l.name) continue;
      const auto& cache = r.host.caches[static_cast<size_t>(p.cache)];
      capacity = cache.size_bytes * instances_used(cache, threads);
    }
    c.memory.push_back({l.name, l.bandwidth_Bps, capacity});
  }
  // DRAM capacity from /proc/meminfo.
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    double kb = 0;
    std::string unit;
    while (in >> key >> kb >> unit) {
      if (key == "MemTotal:") {
        if (!c.memory.empty()) c.memory[0].capacity_bytes = kb * 1024;
        break;
      }
    }
    if (!c.memory.empty() && c.memory[0].capacity_bytes <= 0) c.memory[0].capacity_bytes = 1e9;
  }
  c.launch_overhead_s = 0;
  c.chips_per_node = 1;
  c.efficiency = {1, 1, 1, 1};  // measured figures are already achieved rates
  c.sources = {"measured on this host by `ridgeline measure`"};
  return c;
}

std::string chip_yaml(const hw::ChipSpec& c, const MeasureResult& r) {
  hw::ChipSpec out = c;
  out.name = "host";
  out.vendor = "host";
  out.kind = "cpu";
  out.sources = {fmt::format("measured on this host by ridgeline measure (medians; each memory level the best of the read, copy, triad and "
                             "non-temporal streams on all cores; bandwidths count loads + stores{})",
                             c.write_allocate ? " and, past L1, the line a plain store reads first" : "")};
  if (c.write_allocate) {
    out.sources.push_back(
        "write_allocate: x86 write-back memory allocates a line on a store miss (Intel SDM vol. 3A, 'Methods of Caching Available', WB; AMD64 APM vol. 2, 'Memory Types', WB)");
  }
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string m = fmt::format("measured:\n  date: \"{}\"\n  command: {}\n  seconds: {:.1f}\n  threads: {}\n", date, io::yaml_quoted(r.command),
                              r.seconds, r.all_threads());
  for (const auto& p : r.peaks) {
    m += fmt::format("  {}_isa: {}\n  {}_spread: {:.3f}\n", name(p.dtype), io::yaml_quoted(p.isa), name(p.dtype), p.all_cores.spread);
  }
  if (std::isfinite(r.write_allocate_witness)) m += fmt::format("  write_allocate_witness: {:.3f}\n", r.write_allocate_witness);
  // Each level's roof: the kernel that set it and its spread; the unstable ones named.
  std::string unstable;
  for (const LevelRoof& l : level_roofs(r)) {
    const std::string key = ascii_lower(l.name);
    m += fmt::format("  {}_kernel: {}\n  {}_spread: {:.3f}\n", key, l.kernel, key, l.spread);
    if (l.unstable) unstable += (unstable.empty() ? "" : ", ") + l.name;
  }
  if (!unstable.empty()) m += fmt::format("  unstable: {}\n", io::yaml_quoted(unstable));
  return io::chip_yaml(out, "", m);
}

}  // namespace ridgeline::measure
