// bf16 GEMMs in validate: the rounding to bf16, and the whole path through cblas_sbgemm.
// Debian's OpenBLAS is built without BUILD_BFLOAT16, so the library has no cblas_sbgemm;
// this test binary exports one (ENABLE_EXPORTS in tests/CMakeLists.txt), which the run-time
// lookup finds as it would find OpenBLAS's, and validate's own reference check judges it.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "ridgeline/analysis/validation.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/measure/kernels.hpp"

// cblas_sbgemm's ABI (row-major, no transposes here): enums and blasint are ints in a
// 32-bit-index OpenBLAS. A plain loop, fp32 accumulation. It stands in for a library, so
// the sanitizer build neither instruments it nor leaves it unvectorised.
#if defined(__GNUC__) && !defined(__clang__)
#define RIDGELINE_LIBRARY_SPEED __attribute__((optimize("O3"), no_sanitize("address", "undefined")))
#else
#define RIDGELINE_LIBRARY_SPEED __attribute__((no_sanitize("address", "undefined")))
#endif
extern "C" RIDGELINE_LIBRARY_SPEED void cblas_sbgemm(int /*order*/, int /*trans_a*/, int /*trans_b*/, int m, int n, int k, float alpha,
                             const std::uint16_t* a, int lda, const std::uint16_t* b, int ldb, float beta, float* c,
                             int ldc) {
  for (int i = 0; i < m; ++i) {
    float* row = c + static_cast<std::ptrdiff_t>(i) * ldc;
    for (int j = 0; j < n; ++j) row[j] = beta == 0 ? 0.0f : beta * row[j];
    for (int p = 0; p < k; ++p) {
      const float x = alpha * std::bit_cast<float>(static_cast<std::uint32_t>(a[static_cast<std::ptrdiff_t>(i) * lda + p]) << 16);
      const std::uint16_t* brow = b + static_cast<std::ptrdiff_t>(p) * ldb;
      for (int j = 0; j < n; ++j) row[j] += x * std::bit_cast<float>(static_cast<std::uint32_t>(brow[j]) << 16);
    }
  }
}

namespace ridgeline::measure {
namespace {

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);                 // 1.0: sign 0, exponent 127, mantissa 0
  EXPECT_EQ(to_bf16(1.0f + 0x1p-8f), 0x3f80);       // half-way between 1 and 1 + 2^-7: to the even 0x3f80
  EXPECT_EQ(to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);   // half-way between 0x3f81 and 0x3f82: to the even 0x3f82
  EXPECT_EQ(to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // just past half-way: up
  EXPECT_EQ(to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(to_bf16(INFINITY), 0x7f80);
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(NAN))));  // a NaN whose payload is in the low bits stays a NaN
  EXPECT_EQ(from_bf16(0x3f81), 1.0f + 0x1p-7f);
  EXPECT_EQ(to_bf16(3.4e38f), 0x7f80);              // past bf16's largest finite value (0x7f7f): overflows to inf
}

TEST(Sbgemm, ValidateRunsItAgainstTheChipsBf16Rate) {
  if (!have_blas()) GTEST_SKIP() << "built without OpenBLAS";
  ASSERT_TRUE(have_sbgemm());  // this binary's cblas_sbgemm, found at run time
  hw::ChipSpec chip = io::load_chip_file(std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/validate-host.yaml");
  chip.matrix_flops_per_s[index(DType::bf16)] = 20e9;
  analysis::ValidationConfig cfg;
  cfg.quick = true;
  cfg.threads = 1;
  cfg.groups = {"gemm"};  // only the GEMMs: the streams and norms are another test's
  const analysis::ValidationResult r = analysis::validate_kernels(chip, cfg);
  EXPECT_TRUE(r.sbgemm);
  // sbgemm 512: 2·512³ = 268435456 FLOPs at 20 GFLOP/s = 13.4217728 ms. Operands: A and B
  // in bf16 (2 x 524288 bytes) and C in fp32 (1048576): 2 MiB, which the 2 MiB L2 holds,
  // at 200 GB/s: 10.5 us. Compute-bound.
  // sbgemm 128: 4194304 FLOPs = 209.7152 us; 131072 bytes in L1 (1 MiB) at 400 GB/s.
  int found = 0;
  for (const auto& k : r.kernels) EXPECT_EQ(k.group, "gemm") << k.name;  // --only gemm
  for (const auto& k : r.kernels) {
    if (k.name != "sbgemm 512" && k.name != "sbgemm 128") continue;
    ++found;
    const bool big = k.name == "sbgemm 512";
    EXPECT_TRUE(k.checked) << k.name << " error " << k.max_rel_error;
    EXPECT_EQ(k.level, big ? "L2" : "L1") << k.name;
    EXPECT_EQ(k.bound, ops::Bound::compute) << k.name;
    EXPECT_DOUBLE_EQ(k.model_bytes, big ? 2097152.0 : 131072.0) << k.name;
    EXPECT_NEAR(k.predicted_s, big ? 13.4217728e-3 : 209.7152e-6, 1e-15) << k.name;
    EXPECT_GT(k.measured_s, 0) << k.name;
  }
  EXPECT_EQ(found, 2);
  // Without a bf16 rate the chip has nothing to set the GEMM against: skipped, and said so.
  chip.matrix_flops_per_s[index(DType::bf16)] = 0;
  const analysis::ValidationResult none = analysis::validate_kernels(chip, cfg);
  EXPECT_FALSE(none.sbgemm);
  EXPECT_TRUE(std::any_of(none.notes.begin(), none.notes.end(),
                          [](const std::string& n) { return n.find("no bf16 matrix rate") != std::string::npos; }));
}

}  // namespace
}  // namespace ridgeline::measure
