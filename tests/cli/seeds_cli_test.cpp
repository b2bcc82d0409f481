// Every number of the seed articles, reproduced through the CLI. docs/worked-examples.md
// lists the same commands with their output and explains where a seed's figure differs.
#include <gtest/gtest.h>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

double num(const nlohmann::json& j, const char* key) { return j.at(key).get<double>(); }

// 1. Seed 000: H200 ridge 989/4.8 ~ 206; seed 004: 1979/4.8 ~ 412 is the sparse peak.
TEST(Seeds, H200Ridge) {
  auto j = run_json("hw show h200");
  EXPECT_NEAR(j["ridge_flops_per_byte"]["bf16"].get<double>(), 989.4 / 4.8, 1e-9);  // 206.125
  EXPECT_NEAR(j["sparse_ridge_flops_per_byte"]["bf16"].get<double>(), 2 * 989.4 / 4.8, 1e-9);  // 412.25
  EXPECT_NEAR(j["ridge_flops_per_byte"]["bf16"].get<double>(), 206, 0.5);
  EXPECT_NEAR(j["sparse_ridge_flops_per_byte"]["bf16"].get<double>(), 412, 0.5);
}

// 2. Seed 000: (s,h)x(h,h) GEMM intensity sh/(2s+h): ~1 at s = 1, ~228 at s = 256.
TEST(Seeds, GemmIntensityAndCriticalS) {
  auto s1 = run_json("op matmul --m 1 --k 4096 --n 4096 --hw h200");
  EXPECT_NEAR(num(s1, "intensity_flops_per_byte"), 4096.0 / 4098, 1e-9);  // 0.9995
  EXPECT_EQ(s1["bound"], "memory");
  auto s256 = run_json("op matmul --m 256 --k 4096 --n 4096 --hw h200");
  EXPECT_NEAR(num(s256, "intensity_flops_per_byte"), 256.0 * 4096 / 4608, 1e-9);  // 227.56
  EXPECT_EQ(s256["bound"], "compute");
  // Exact critical s: sh/(2s+h) = R  =>  s = R·h/(h - 2R), R = 989.4/4.8 = 206.125:
  // 844288/3683.75 = 229.19, so 230 tokens.
  auto t = run_json("threshold matmul --k 4096 --n 4096 --hw h200 --solve m");
  const double R = 989.4 / 4.8;
  EXPECT_NEAR(num(t, "critical_m"), R * 4096 / (4096 - 2 * R), 1e-6);
  EXPECT_EQ(t["critical_m_min_int"], 230);
}

// 3. Seed 000: relative times on H200 at h = 4096 (s = 4096 keeps the GEMM compute-bound).
TEST(Seeds, RmsnormAllToAllFlashAgainstGemm) {
  const double s = 4096, h = 4096, R = 989.4 / 4.8;
  auto gemm = run_json("op matmul --m 4096 --k 4096 --n 4096 --hw h200");
  const double t_gemm = num(gemm, "t_lower_s");
  EXPECT_NEAR(t_gemm, 2 * s * h * h / 989.4e12, 1e-15);
  // RMSNorm: seed's 4sh bytes plus the 2h-byte weight: ratio 2R/h·(1 + 1/(2s)) = 0.10066.
  auto norm = run_json("op rmsnorm --tokens 4096 --hidden 4096 --hw h200");
  EXPECT_EQ(norm["bound"], "memory");
  EXPECT_NEAR(num(norm, "t_lower_s") / t_gemm, 2 * R / h * (1 + 1 / (2 * s)), 1e-9);
  EXPECT_NEAR(num(norm, "t_lower_s") / t_gemm, 0.10, 0.005);
  // All-to-all of the (s,h) bf16 activation over cp = 8 on 450 GB/s NVLink:
  // (7/8)·2sh/450e9 + 1 us. The seed drops (cp-1)/cp: 2sh/450e9 / t_gemm = 989.4/(0.45·h) = 0.537.
  auto a2a = run_json("op alltoall --bytes 33554432 --chips 8 --algo direct --hw h200");
  const double t_a2a = num(a2a, "t_lower_s");
  EXPECT_NEAR(t_a2a, 7.0 / 8 * 2 * s * h / 450e9 + 1e-6, 1e-12);
  EXPECT_NEAR((t_a2a - 1e-6) * 8 / 7 / t_gemm, 989.4e12 / (450e9 * h), 1e-9);
  EXPECT_NEAR((t_a2a - 1e-6) * 8 / 7 / t_gemm, 0.53, 0.01);
  // FlashAttention FLOPs 4s²h against 2sh²: matrix-time ratio exactly 2s/h (= 2 here); causal halves it.
  auto fa = run_json("op attention --q-len 4096 --heads 32 --head-dim 128 --hw h200");
  EXPECT_NEAR(num(fa, "t_matrix_s") / t_gemm, 2 * s / h, 1e-9);
  auto fac = run_json("op attention --q-len 4096 --heads 32 --head-dim 128 --causal --hw h200");
  EXPECT_NEAR(num(fac, "t_matrix_s") / t_gemm, (s + 1) / h, 1e-9);  // s(s+1)/2 pairs
}

// 4. Seeds 001/003: dot-product intensity (2n-1)/(4n+2) -> 1/2 in bf16.
TEST(Seeds, DotProductIntensity) {
  auto j = run_json("op dot --n 1e8 --dtype bf16 --hw h100-sxm");
  EXPECT_NEAR(num(j, "intensity_flops_per_byte"), 199999999.0 / 400000002.0, 1e-12);
  EXPECT_NEAR(num(j, "intensity_flops_per_byte"), 0.5, 1e-8);
  EXPECT_EQ(j["bound"], "memory");  // 400 MB at 3.35 TB/s = 119 us, far above the 5 us launch
  // A 4 MB dot product is over before the next kernel could be launched.
  EXPECT_EQ(run_json("op dot --n 1e6 --dtype bf16 --hw h100-sxm")["bound"], "launch");
}

// 5. Seed 003 / seed 002 on the TPU v5e.
TEST(Seeds, TpuV5e) {
  // Ridge 1.97e14 / 8.2e11 = 240.2 with the seed's bandwidth; the catalog's 819 GB/s gives 240.5.
  auto hw = run_json("hw show tpu-v5e --mem-bw 8.2e11");
  EXPECT_NEAR(hw["ridge_flops_per_byte"]["bf16"].get<double>(), 240.24, 0.01);
  EXPECT_NEAR(run_json("hw show tpu-v5e")["ridge_flops_per_byte"]["bf16"].get<double>(), 197e12 / 819e9, 1e-9);
  // Q1, int8 matmul with 8.1e11 B/s and 3.94e14 OP/s: 2BD²/(2BD + D²) = R = 486.4 gives
  // B = (R/2)·D/(D - R); D = F = 1e6 -> 243.33, tending to the seed's 243.
  auto q1 = run_json("threshold matmul --k 1e6 --n 1e6 --dtype int8 --hw tpu-v5e --mem-bw 8.1e11 --peak int8=3.94e14 --solve m");
  const double R8 = 3.94e14 / 8.1e11;
  EXPECT_NEAR(num(q1, "critical_m"), R8 / 2 * 1e6 / (1e6 - R8), 1e-3);
  EXPECT_NEAR(num(q1, "critical_m"), 243, 0.5);
  EXPECT_EQ(q1["op"]["compute_dtype"], "int8");
  // Q2, bf16 activations x int8 weights, bf16 compute: 2BD/(4B + D) = R = 240.24 gives
  // B = (R/2)·D/(D - 2R) -> 120.18 for D = 1e6.
  auto q2 = run_json("threshold matmul --a-dtype bf16 --b-dtype int8 --k 1e6 --n 1e6 --hw tpu-v5e --mem-bw 8.2e11 --solve m");
  const double R = 1.97e14 / 8.2e11;
  EXPECT_NEAR(num(q2, "critical_m"), R / 2 * 1e6 / (1e6 - 2 * R), 1e-3);
  EXPECT_NEAR(num(q2, "critical_m"), 120, 0.5);
  EXPECT_EQ(q2["op"]["compute_dtype"], "bf16");
  // Q3 with exact bytes: D = F = 4096 needs B = R·D/(2D - 4R) = 136.09, D = F = 1024 needs 226.31.
  auto big = run_json("threshold matmul --a-dtype bf16 --b-dtype int8 --k 4096 --n 4096 --hw tpu-v5e --mem-bw 8.2e11 --solve m");
  auto small = run_json("threshold matmul --a-dtype bf16 --b-dtype int8 --k 1024 --n 1024 --hw tpu-v5e --mem-bw 8.2e11 --solve m");
  EXPECT_NEAR(num(big, "critical_m"), R * 4096 / (2 * 4096 - 4 * R), 1e-6);
  EXPECT_NEAR(num(small, "critical_m"), R * 1024 / (2 * 1024 - 4 * R), 1e-6);
  EXPECT_GT(num(small, "critical_m") / num(big, "critical_m"), 1.6);  // "almost doubles"
  // Q4, per-sample weights: 2DF/(D + DF + F) ~ 2 and never compute-bound.
  auto q4 = run_json("op matmul --batch 64 --m 1 --k 4096 --n 4096 --per-sample-weights --dtype int8 --hw tpu-v5e");
  EXPECT_NEAR(num(q4, "intensity_flops_per_byte"), 2.0 * 4096 * 4096 / (4096 + 4096.0 * 4096 + 4096), 1e-12);
  auto q4t = run_json("threshold matmul --m 1 --k 4096 --n 4096 --per-sample-weights --dtype int8 --hw tpu-v5e --solve batch");
  EXPECT_TRUE(q4t["critical_batch"].is_null());
}

// 6. Seeds 002/003 Problem 5: H100 SXM dense ridge 989.4/3.35 = 295.3; 1e15/3.35e12 = 298.5.
TEST(Seeds, H100CriticalBatch) {
  auto hw = run_json("hw show h100-sxm");
  EXPECT_NEAR(hw["ridge_flops_per_byte"]["bf16"].get<double>(), 989.4 / 3.35, 1e-9);
  auto t = run_json("threshold matmul --k 1e6 --n 1e6 --hw h100-sxm --solve m");
  const double R = 989.4 / 3.35;  // BD/(2B + D) = R -> B = R·D/(D - 2R) = 295.52
  EXPECT_NEAR(num(t, "critical_m"), R * 1e6 / (1e6 - 2 * R), 1e-3);
  EXPECT_NEAR(num(t, "critical_m"), 296.5, 1.5);  // the seeds' 295-298
  auto rounded = run_json("hw show h100-sxm --peak bf16=1e15");
  EXPECT_NEAR(rounded["ridge_flops_per_byte"]["bf16"].get<double>(), 298.5, 0.05);
  // Seed 001's 333 is 1e15 / 3e12 (the 3 TB/s of the 2022 announcement).
  auto launch = run_json("hw show h100-sxm --peak bf16=1e15 --mem-bw 3e12");
  EXPECT_NEAR(launch["ridge_flops_per_byte"]["bf16"].get<double>(), 333.3, 0.05);
}

// 7. Seed 003: two chips, matmul sharded on D, partial sums over 4.5e10 B/s, 1.97e14 FLOP/s:
// T_math = BDF/1.97e14, T_comm = 2BF/4.5e10 -> compute-bound iff D > 8755.6.
TEST(Seeds, TwoChipShardedMatmul) {
  auto t = run_json(
      "threshold matmul --m 65536 --n 65536 --shard k --chips 2 --hw tpu-v5e --peak bf16=1.97e14 --link-bw 4.5e10 --solve k");
  // Plus 2 latency steps of 1 us: 1.97e14·2e-6/65536² = 0.09 more; per-chip k = ceil(D/2).
  EXPECT_NEAR(num(t, "critical_k"), 2 * 1.97e14 / 4.5e10, 1.5);
  EXPECT_EQ(t["bound_below"], "comm");
}

// 8. Seed 003: 1e12 FLOPs take 1e12/9.89e14 = 1.01 ms on an H100 and 1e12/9.18e14 = 1.09 ms on a v6e.
TEST(Seeds, TeraFlopTimes) {
  auto h100 = run_json("op custom --flops 1e12 --hw h100-sxm");
  EXPECT_NEAR(num(h100, "t_math_s"), 1e12 / 989.4e12, 1e-15);
  EXPECT_NEAR(num(h100, "t_math_s"), 1.01e-3, 0.005e-3);
  auto v6e = run_json("op custom --flops 1e12 --hw tpu-v6e");
  EXPECT_NEAR(num(v6e, "t_math_s"), 1e12 / 918e12, 1e-15);
  EXPECT_NEAR(num(v6e, "t_math_s"), 1.1e-3, 0.015e-3);  // the seed rounds the peak to 9.1e14
}

// 9. Seed 004's H200 table and its operation intensities.
TEST(Seeds, H200TableOfSeed004) {
  auto hw = run_json("hw show h200");
  EXPECT_DOUBLE_EQ(hw["sparse_peak_flops_per_s"]["bf16"].get<double>(), 2 * 989.4e12);     // its "1,979"
  EXPECT_DOUBLE_EQ(hw["sparse_peak_flops_per_s"]["fp8_e4m3"].get<double>(), 2 * 1978.9e12); // its "3,958"
  EXPECT_DOUBLE_EQ(hw["links"][0]["bandwidth_Bps"].get<double>(), 450e9);  // 900 GB/s bidirectional
  EXPECT_DOUBLE_EQ(hw["links"][2]["bandwidth_Bps"].get<double>(), 64e9);   // PCIe 5 x16, ~128 bidirectional
  // "GEMM (large) ~1000+": a 4096^3 bf16 GEMM has intensity 2n^3/(3·2n^2) = n/3 = 1365.3.
  auto gemm = run_json("op matmul --m 4096 --k 4096 --n 4096 --hw h200");
  EXPECT_NEAR(num(gemm, "intensity_flops_per_byte"), 4096.0 / 3, 1e-9);
  EXPECT_EQ(gemm["bound"], "compute");
  // "Attention (small batch) ~10": one decode step of 64 query heads over 8 KV heads and a
  // 4096-token cache: 4·64·4096·128 FLOPs over K,V (2·8·4096·128·2 B) + q, o (2·64·128·2 B)
  // = 134217728 / 16809984 = 7.98.
  // (batch 8: one sequence reads 16.8 MB, 3.5 us, less than the 5 us launch.)
  auto attn = run_json("op attention --batch 8 --q-len 1 --kv-len 4096 --heads 64 --kv-heads 8 --head-dim 128 --causal --hw h200");
  const double flops = 4.0 * 64 * 4096 * 128 + 64 * (5.0 * 4096 + 128);  // + softmax on the vector unit
  EXPECT_NEAR(num(attn, "intensity_flops_per_byte"), flops / (2.0 * 8 * 4096 * 128 * 2 + 2.0 * 64 * 128 * 2), 1e-9);
  EXPECT_EQ(attn["bound"], "memory");
  // "Element-wise ops ~1-4": 1 to 4 FLOPs per byte needs 4 to 16 FLOPs per bf16 element in
  // and out (a GELU with 8: 8/4 = 2); a plain bf16 add is 1/6.
  auto gelu = run_json("op elementwise --shape 4096,4096 --inputs 1 --outputs 1 --flops-per-element 8 --hw h200");
  EXPECT_NEAR(num(gelu, "intensity_flops_per_byte"), 2.0, 1e-12);
  auto add = run_json("op elementwise --shape 4096,4096 --inputs 2 --outputs 1 --flops-per-element 1 --hw h200");
  EXPECT_NEAR(num(add, "intensity_flops_per_byte"), 1.0 / 6, 1e-12);
}

}  // namespace
}  // namespace ridgeline::testing
