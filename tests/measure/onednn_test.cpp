// oneDNN's bf16 matmul and int8 GEMM, which validate times beside OpenBLAS's GEMMs: loaded
// at run time, row-major, every dimension different so that a swapped m/n/k shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "ridgeline/measure/kernels.hpp"

namespace ridgeline::measure {
namespace {

// Skipped only where the build had no oneDNN headers; scripts/install-deps.sh installs them
// and the library, so a build that has the headers must load it.
#define REQUIRE_ONEDNN()                                                                   \
  do {                                                                                     \
    if (onednn().what.rfind("oneDNN not built in", 0) == 0) GTEST_SKIP() << onednn().what; \
    ASSERT_TRUE(onednn().loaded) << onednn().what;                                         \
  } while (0)

// oneDNN 2.6 has a bf16 matmul only on CPUs with avx512_core (AVX-512 F, BW, VL, DQ):
// elsewhere validate skips it with a note, and so do these tests.
#define REQUIRE_BF16_MATMUL(ok, impl)                                                                       \
  do {                                                                                                      \
    if (!(ok) && !(__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))) GTEST_SKIP() << (impl); \
    ASSERT_TRUE(ok) << (impl);                                                                              \
  } while (0)

// Runs `f` on a thread of its own, as validate's timing team does: oneDNN's OpenMP workers
// belong to the thread that called it and end with it. Left alive to the process's exit,
// their dynamic TLS (libdnnl is dlopen'ed) is a range LeakSanitizer's tracer faults on.
template <class F>
void on_own_thread(F f) {
  std::thread t(f);
  t.join();
}

TEST(Onednn, Bf16MatmulByHand) {
  REQUIRE_ONEDNN();
  // A (2x3) · B (3x4), values exact in bf16 and every sum exact in fp32:
  //   row (1, 2, 0.5):    2+2+2 = 6,     1-2+0.25 = -0.75, 0+4+0.5 = 4.5, -1+1+1 = 1
  //   row (-1, 0.25, 3): -2+0.25+12 = 10.25, -1-0.25+1.5 = 0.25, 0+0.5+3 = 3.5, 1+0.125+6 = 7.125
  const std::vector<float> af = {1, 2, 0.5f, -1, 0.25f, 3};
  const std::vector<float> bf = {2, 1, 0, -1, 1, -1, 2, 0.5f, 4, 0.5f, 1, 2};
  std::vector<std::uint16_t> a, b;
  for (float x : af) a.push_back(to_bf16(x));
  for (float x : bf) b.push_back(to_bf16(x));
  for (int threads : {1, 2}) {
    std::vector<float> c(8, std::numeric_limits<float>::quiet_NaN());
    bool ok = false, ran = false;
    std::string impl;
    on_own_thread([&] {
      OnednnBf16Matmul mm(2, 4, 3, a.data(), b.data(), c.data(), threads);
      ok = mm.ok(), impl = mm.impl();
      ran = ok && mm.run();
    });
    REQUIRE_BF16_MATMUL(ok, impl);
    EXPECT_FALSE(impl.empty());
    ASSERT_TRUE(ran);
    const std::vector<float> want = {6, -0.75f, 4.5f, 1, 10.25f, 0.25f, 3.5f, 7.125f};
    EXPECT_EQ(c, want) << threads << " threads";
  }
}

TEST(Onednn, Bf16MatmulAgainstADoubleReference) {
  REQUIRE_ONEDNN();
  const int m = 67, n = 45, k = 129;
  std::vector<std::uint16_t> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n);
  std::vector<float> c(static_cast<std::size_t>(m) * n, std::numeric_limits<float>::quiet_NaN());
  std::uint32_t s = 12345;
  auto next = [&] {  // in [0.5, 1.5): positive, so no sum cancels
    s = s * 1664525u + 1013904223u;
    return to_bf16(0.5f + static_cast<float>(s >> 8) / 16777216.0f);
  };
  for (auto& x : a) x = next();
  for (auto& x : b) x = next();
  bool ok = false, ran = false;
  std::string impl;
  on_own_thread([&] {
    OnednnBf16Matmul mm(m, n, k, a.data(), b.data(), c.data(), 2);
    ok = mm.ok(), impl = mm.impl();
    ran = ok && mm.run();
  });
  REQUIRE_BF16_MATMUL(ok, impl);
  ASSERT_TRUE(ran);
  double worst = 0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int p = 0; p < k; ++p) {
        want += static_cast<double>(from_bf16(a[static_cast<std::size_t>(i) * k + p])) * from_bf16(b[static_cast<std::size_t>(p) * n + j]);
      }
      const double got = c[static_cast<std::size_t>(i) * n + j];
      ASSERT_FALSE(std::isnan(got)) << i << "," << j;  // still the poison: not written
      worst = std::max(worst, std::abs(got - want) / want);
    }
  }
  // 129 positive products summed in fp32 (each exact: 8-bit mantissas): a relative error of
  // at most 128 · 2^-24 = 7.6e-6.
  EXPECT_LT(worst, 7.7e-6);
}

TEST(Onednn, Int8GemmByHand) {
  REQUIRE_ONEDNN();
  // A (u8, 2x3) · B (s8, 3x4), exact in int32:
  //   row (1, 2, 3):      1+4-15 = -10,  -1+6+12 = 17,  0-256+3 = -253,  127+0+3 = 130
  //   row (200, 0, 255):  200-1275 = -1075,  -200+1020 = 820,  0+0+255 = 255,  25400+255 = 25655
  const std::vector<std::uint8_t> a = {1, 2, 3, 200, 0, 255};
  const std::vector<std::int8_t> b = {1, -1, 0, 127, 2, 3, -128, 0, -5, 4, 1, 1};
  for (int threads : {1, 2}) {
    std::vector<std::int32_t> c(8, std::numeric_limits<std::int32_t>::min());
    bool ran = false;
    on_own_thread([&] { ran = onednn_gemm_u8s8s32(2, 4, 3, a.data(), b.data(), c.data(), threads); });
    ASSERT_TRUE(ran);
    const std::vector<std::int32_t> want = {-10, 17, -253, 130, -1075, 820, 255, 25655};
    EXPECT_EQ(c, want) << threads << " threads";
  }
}

TEST(Onednn, Int8GemmAgainstAnExactReference) {
  REQUIRE_ONEDNN();
  const int m = 37, n = 53, k = 300;
  std::vector<std::uint8_t> a(static_cast<std::size_t>(m) * k);
  std::vector<std::int8_t> b(static_cast<std::size_t>(k) * n);
  std::vector<std::int32_t> c(static_cast<std::size_t>(m) * n, std::numeric_limits<std::int32_t>::min());
  std::uint32_t s = 777;
  auto next = [&] { return (s = s * 1664525u + 1013904223u) >> 24; };  // 0 .. 255
  for (auto& x : a) x = static_cast<std::uint8_t>(next() % 64);          // 0 .. 63
  for (auto& x : b) x = static_cast<std::int8_t>(static_cast<int>(next() % 128) - 64);  // -64 .. 63
  bool ran = false;
  on_own_thread([&] { ran = onednn_gemm_u8s8s32(m, n, k, a.data(), b.data(), c.data(), 2); });
  ASSERT_TRUE(ran);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      std::int64_t want = 0;
      for (int p = 0; p < k; ++p) want += a[static_cast<std::size_t>(i) * k + p] * b[static_cast<std::size_t>(p) * n + j];
      ASSERT_EQ(c[static_cast<std::size_t>(i) * n + j], want) << i << "," << j;
    }
  }
}

TEST(OpenBlas, SaysWhichKernelsItChose) {
  if (!have_blas()) GTEST_SKIP() << "built without OpenBLAS";
  // Every x86 core a DYNAMIC_ARCH OpenBLAS (Debian's) dispatches to maps to a width; an
  // unknown name (0) would leave validate unable to say why its GEMMs fall short of an
  // AVX-512 peak. A build for one target may be GENERIC: no width to say.
  const int bits = blas_vector_bits();
#if defined(__x86_64__)
  if (blas_config().find("DYNAMIC_ARCH") != std::string::npos) {
    EXPECT_TRUE(bits == 128 || bits == 256 || bits == 512) << blas_config();
  }
#else
  (void)bits;
#endif
  EXPECT_EQ(blas_config().rfind("OpenBLAS ", 0), 0u) << blas_config();
}

}  // namespace
}  // namespace ridgeline::measure
