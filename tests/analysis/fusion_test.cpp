#include "ridgeline/analysis/fusion.hpp"

#include <gtest/gtest.h>

#include <string>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/model_file.hpp"

namespace ridgeline::analysis {
namespace {

const FusionCandidate& get(const FusionResult& r, const std::string& name) {
  for (const auto& c : r.candidates) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no candidate " + name);
}

TEST(Fusion, BytesSavedPerChain) {
  // Llama-2-7B, 4096 tokens, bf16: T·h·2 = 33554432 bytes, T·I·2 = 90177536 bytes.
  const double Th = 4096.0 * 4096 * 2, TI = 4096.0 * 11008 * 2;
  FusionConfig cfg;
  auto r = analyze_fusion(io::bundled_model("llama-2-7b"), io::catalog_chip("h200"), cfg);
  // SiLU then mul: (read gate, write a) + (read a and up, write out) = 5·T·I·2 -> fused 3·T·I·2.
  const auto& swiglu = get(r, "silu*mul");
  EXPECT_DOUBLE_EQ(swiglu.unfused_bytes, 5 * TI);
  EXPECT_DOUBLE_EQ(swiglu.fused_bytes, 3 * TI);
  EXPECT_EQ(swiglu.unfused_launches, 2);
  EXPECT_EQ(swiglu.fused_launches, 1);
  // Residual add (3·T·h) then RMSNorm (2·T·h + weight) -> one pass of 4·T·h + weight.
  const auto& addnorm = get(r, "residual_add+rmsnorm");
  EXPECT_DOUBLE_EQ(addnorm.unfused_bytes - addnorm.fused_bytes, Th);
  // The full epilogue reads only the residual (and the bias): bias, activation and the
  // residual add as kernels would move 2+2+3 = 7 T·h passes.
  const auto& epi = get(r, "gemm+bias+act+residual");
  EXPECT_DOUBLE_EQ(epi.unfused_bytes, 7 * Th + 4096 * 2);
  EXPECT_DOUBLE_EQ(epi.fused_bytes, Th + 4096 * 2);
  EXPECT_EQ(epi.fused_launches, 0);  // it runs inside the GEMM
  // addmm's either-or: two alternatives, neither counted in the totals.
  EXPECT_TRUE(get(r, "gemm+bias(addmm)").alternative);
  EXPECT_TRUE(get(r, "gemm+residual(addmm)").alternative);
  double total = 0;
  for (const auto& c : r.candidates) total += c.alternative ? 0 : c.saved_per_pass_s;
  EXPECT_DOUBLE_EQ(r.saved_per_pass_s, total);
  EXPECT_GT(r.saved_per_pass_s, 0);
}

TEST(Fusion, BucketPaddingWaste) {
  // Buckets 2 and 4, lengths 1..4 uniform: 1 and 2 pad to 2, 3 and 4 to 4; 10 real tokens in 12.
  BucketWaste w = bucket_waste({4, 2}, 1, 4);
  EXPECT_DOUBLE_EQ(w.mean_length, 2.5);
  EXPECT_DOUBLE_EQ(w.mean_padded, 3.0);
  EXPECT_DOUBLE_EQ(w.waste_fraction, 1.0 / 6);
  // Seed 004's buckets 128..4096 over lengths 1..4096: 2048.5 real for 2732 padded.
  BucketWaste s = bucket_waste({128, 256, 512, 1024, 2048, 4096}, 1, 4096);
  EXPECT_NEAR(s.mean_padded, (128.0 * 128 + 256 * 128 + 512 * 256 + 1024 * 512 + 2048 * 1024 + 4096 * 2048) / 4096, 1e-9);
  EXPECT_THROW(bucket_waste({128}, 1, 200), InputError);
  EXPECT_THROW(bucket_waste({}, 1, 2), InputError);
}

}  // namespace
}  // namespace ridgeline::analysis
