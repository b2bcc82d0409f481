// Every op's FLOPs and bytes, derived by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/ops/attention.hpp"
#include "ridgeline/ops/matmul.hpp"
#include "ridgeline/ops/pointwise.hpp"

namespace ridgeline::ops {
namespace {

constexpr hw::GemmSplit kSplitK = hw::GemmSplit::split_k, kStreamK = hw::GemmSplit::stream_k;

double matrix(const Cost& c, DType t) { return c.flops(hw::Unit::matrix, t); }
double vector(const Cost& c, DType t) { return c.flops(hw::Unit::vector, t); }

TEST(Matmul, Bf16ProjectionOfSeed000) {
  // (s,h)x(h,h), s = 256, h = 4096: FLOPs 2sh^2; bytes 2sh + 2h^2 + 2sh = 4sh + 2h^2.
  MatmulShape s{.m = 256, .k = 4096, .n = 4096};
  Cost c = matmul_cost(s);
  EXPECT_EQ(matrix(c, DType::bf16), 2.0 * 256 * 4096 * 4096);     // 8589934592
  EXPECT_EQ(c.main_bytes(), 4.0 * 256 * 4096 + 2.0 * 4096 * 4096); // 37748736
  // intensity sh/(2s+h) = 256*4096/4608 = 227.56
  EXPECT_NEAR(c.total_flops() / c.main_bytes(), 256.0 * 4096 / (2 * 256 + 4096), 1e-9);
  EXPECT_EQ(c.main_store_bytes, 2.0 * 256 * 4096);  // Y is stored: 2097152
  EXPECT_EQ(c.launches, 1);
}

TEST(Matmul, DtypesPerOperand) {
  // int8 x int8 -> int8: BD + DF + BF bytes, int8 compute (seed 003 Q1).
  Cost q = matmul_cost({.m = 8, .k = 64, .n = 32, .a = DType::int8, .b = DType::int8, .out = DType::int8, .compute = DType::int8});
  EXPECT_EQ(q.main_bytes(), 8 * 64 + 64 * 32 + 8 * 32);  // 512 + 2048 + 256
  EXPECT_EQ(matrix(q, DType::int8), 2.0 * 8 * 64 * 32);
  // bf16 activations, int8 weights, bf16 out: 2BD + DF + 2BF (seed 003 Q2).
  Cost w8 = matmul_cost({.m = 8, .k = 64, .n = 32, .a = DType::bf16, .b = DType::int8, .out = DType::bf16, .compute = DType::bf16});
  EXPECT_EQ(w8.main_bytes(), 2 * 8 * 64 + 64 * 32 + 2 * 8 * 32);
  // int4 weights are half a byte each: 64*32/2 = 1024.
  Cost w4 = matmul_cost({.m = 8, .k = 64, .n = 32, .a = DType::bf16, .b = DType::int4, .out = DType::bf16, .compute = DType::bf16});
  EXPECT_EQ(w4.main_bytes(), 2 * 8 * 64 + 1024 + 2 * 8 * 32);
}

TEST(Matmul, DefaultComputeDtype) {
  EXPECT_EQ(default_compute_dtype(DType::int8, DType::int8), DType::int8);
  EXPECT_EQ(default_compute_dtype(DType::bf16, DType::int8), DType::bf16);  // dequantised
  EXPECT_EQ(default_compute_dtype(DType::bf16, DType::int4), DType::bf16);
  EXPECT_EQ(default_compute_dtype(DType::int8, DType::bf16), DType::bf16);
  EXPECT_EQ(default_compute_dtype(DType::fp32, DType::bf16), DType::fp32);
}

TEST(Matmul, PerSampleWeights) {
  // int8[B,D] x int8[B,D,F] -> int8[B,F] (seed 003 Q4): BD + BDF + BF bytes, 2BDF FLOPs.
  const double B = 16, D = 4096, F = 4096;
  Cost c = matmul_cost({.m = 1, .k = D, .n = F, .batch = B, .per_sample_weights = true, .a = DType::int8,
                        .b = DType::int8, .out = DType::int8, .compute = DType::int8});
  EXPECT_EQ(c.main_bytes(), B * D + B * D * F + B * F);
  // intensity 2DF/(D + DF + F) = 2*4096^2/(8192 + 4096^2) = 1.99902
  EXPECT_NEAR(c.total_flops() / c.main_bytes(), 2 * D * F / (D + D * F + F), 1e-12);
}

TEST(Matmul, TilesAddReReads) {
  // m=k=n=1024, tiles bm=128, bk=64, bn=256, bf16: X read ceil(1024/256) = 4 times,
  // W read ceil(1024/128) = 8 times, Y written once: 2*1024^2*(4 + 8 + 1) = 27262976.
  Cost c = matmul_cost({.m = 1024, .k = 1024, .n = 1024, .tile_m = 128, .tile_k = 64, .tile_n = 256});
  EXPECT_EQ(c.main_bytes(), 2.0 * 1024 * 1024 * 13);
  // Without the output term the intensity is bm*bn/(bm+bn) = 128*256/384 (seed 003 footnote).
  double no_out = c.main_bytes() - 2.0 * 1024 * 1024;
  EXPECT_NEAR(c.total_flops() / no_out, 128.0 * 256 / 384, 1e-9);
}

// GEMM tiling (docs/cost-model.md#gemm-shape), by hand.
TEST(GemmTiling, WavesOverTheMultiprocessors) {
  // Megatron's 145B QKV GEMM at TP 8 on an A100 (108 SMs): 2048 x 4608 outputs. 256x128 tiles:
  // 8 x 36 = 288, in ceil(288/108) = 3 waves of 108 tile slots: useful 288/324 = 8/9. 128x256
  // makes 16 x 18 = 288 and 128x128 16 x 36 = 576 in 6 waves (576/648): the same 8/9; the
  // first tile wins the tie.
  const GemmTiling t = gemm_tiling(2048, 4608, 12288, 1, 108, kSplitK);
  EXPECT_EQ(t.tile_m, 256);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.tiles, 288);
  EXPECT_EQ(t.split_k, 1);
  EXPECT_EQ(t.waves, 3);
  EXPECT_NEAR(t.useful, 8.0 / 9, 1e-15);
  // The padded work: the GEMM's FLOPs x (9/8 - 1).
  EXPECT_NEAR(gemm_pad_flops(2048, 4608, 12288, 1, t), 2.0 * 2048 * 4608 * 12288 / 8, 1);
}

TEST(GemmTiling, FewTilesSplitTheirKLoops) {
  // 256 x 4096 outputs on 132 SMs: 1 x 32 = 32 tiles of 256x128; each K loop splits
  // min(floor(132/32), floor(4096/128)) = 4 ways: 128 slices, one wave, useful 32*4/132 = 32/33.
  GemmTiling t = gemm_tiling(256, 4096, 4096, 1, 132, kSplitK);
  EXPECT_EQ(t.tiles, 32);
  EXPECT_EQ(t.split_k, 4);
  EXPECT_EQ(t.waves, 1);
  EXPECT_NEAR(t.useful, 32.0 / 33, 1e-15);
  // A shallow K (256) splits only 256/128 = 2 ways: 256x128's 32 tiles give 64 slices (useful
  // 64/132 = 16/33), so the 128x128 tile wins: 2 x 32 = 64 tiles, split 2 ways, 128 slices in
  // one wave, useful 256*4096*2 / (132*128*128) = 32/33.
  t = gemm_tiling(256, 4096, 256, 1, 132, kSplitK);
  EXPECT_EQ(t.tile_m, 128);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.split_k, 2);
  EXPECT_NEAR(t.useful, 32.0 / 33, 1e-15);
  // One row (decode): every tile narrows to 16 rows; 256x128 -> 16x128 makes 32 tiles split
  // 4 ways as above: useful 1*4096*4 / (132*16*128) = 2/33 (15 of 16 rows padding).
  t = gemm_tiling(1, 4096, 4096, 1, 132, kSplitK);
  EXPECT_EQ(t.tile_m, 16);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_NEAR(t.useful, 2.0 / 33, 1e-15);
  // Batched GEMMs count every batch's tiles: 8 x (1 x 32) = 256 tiles of 256x128 on 132 SMs,
  // 2 waves: useful 256/264 = 32/33.
  t = gemm_tiling(256, 4096, 4096, 8, 132, kSplitK);
  EXPECT_EQ(t.tiles, 256);
  EXPECT_EQ(t.waves, 2);
  EXPECT_NEAR(t.useful, 32.0 / 33, 1e-15);
}

TEST(GemmTiling, StreamKSharesFewTilesOverEveryMultiprocessor) {
  // 256 x 4096 outputs on 132 SMs: 32 tiles of 256x128, fewer than the SMs. Split-K splits
  // each K loop floor(132/32) = 4 ways (128 of 132 SMs busy, useful 32/33); stream-K shares
  // the tiles' K iterations over all 132, each tile's over min(132/32, floor(4096/128)) =
  // 4.125 of them, in one wave: no SM idles, useful 256*4096 / (32*256*128) = 1.
  GemmTiling t = gemm_tiling(256, 4096, 4096, 1, 132, kStreamK);
  EXPECT_EQ(t.tiles, 32);
  EXPECT_EQ(t.split_k, 4.125);
  EXPECT_EQ(t.waves, 1);
  EXPECT_NEAR(t.useful, 1, 1e-15);
  // vLLM PR #23280's shape (DeepSeek-V3's fused q_a/kv_a projection): m 1024, n 2112, k 7168
  // on 132 SMs. 256x128: 4 x ceil(2112/128) = 68 tiles, work 68*256*128 = 2228224 shared
  // out; 128x256: 8 x 9 = 72 tiles, 72*128*256 = 2359296; 128x128: 8 x 17 = 136 tiles, two
  // waves, 2*132*128*128 = 4325376. 256x128 wins, each tile over 132/68 SMs, useful
  // 1024*2112 / 2228224 = 33/34 (the 17th column of tiles is 64 of 128 wide). Split-K: 68
  // tiles split floor(132/68) = 1 way in one wave of 132: useful 2162688 / (132*256*128) = 1/2.
  t = gemm_tiling(1024, 2112, 7168, 1, 132, kStreamK);
  EXPECT_EQ(t.tile_m, 256);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.tiles, 68);
  EXPECT_DOUBLE_EQ(t.split_k, 132.0 / 68);
  EXPECT_NEAR(t.useful, 33.0 / 34, 1e-15);
  EXPECT_NEAR(gemm_tiling(1024, 2112, 7168, 1, 132, kSplitK).useful, 0.5, 1e-15);
  // A K too shallow to share that far: k 256 lets each tile's loop go over at most
  // floor(256/128) = 2 SMs. 256 x 4096: 256x128 and 128x256 make 32 tiles on 64 SMs (work
  // 132*256*128/2 = 2162688); 128x128 makes 64 tiles on 128 SMs (132*128*128/2 = 1081344):
  // useful 256*4096 / 1081344 = 32/33, split 2, as split-K has it.
  t = gemm_tiling(256, 4096, 256, 1, 132, kStreamK);
  EXPECT_EQ(t.tile_m, 128);
  EXPECT_EQ(t.split_k, 2);
  EXPECT_NEAR(t.useful, 32.0 / 33, 1e-15);
  // As many tiles as SMs or more: waves, as before (8 x 32 = 256 tiles of 256x128 in 2 waves
  // of 132: useful 256/264 = 32/33).
  t = gemm_tiling(256, 4096, 4096, 8, 132, kStreamK);
  EXPECT_EQ(t.waves, 2);
  EXPECT_EQ(t.split_k, 1);
  EXPECT_NEAR(t.useful, 32.0 / 33, 1e-15);
  // GemmPadding for one row, n 4096, k 4096: 32 tiles of 16x128 shared over 132 SMs, work
  // 32*16*128 = 16*4096 for 4096 useful: 2·4096·(16·4096 − 4096) padded FLOPs.
  EXPECT_NEAR(GemmPadding(4096, 4096, 132, kStreamK).flops(1), 2.0 * 4096 * (16 * 4096 - 4096), 1e-3);
}

TEST(GemmTiling, StreamKSharesALastWaveUnderHalfFullWithTheOneBeforeIt) {
  // m 2048 x n 2112 x k 7168 on 132 SMs (vLLM PR #23280's shape). 256x128: 8 x 17 = 136
  // tiles, a second wave of 4 (under 66): shared, 136 tiles' work, 136 x 32768 = 4456448
  // for 2048 x 2112 = 4325376 useful (33/34). 128x256: 16 x 9 = 144, shared: 4718592.
  // 128x128: 16 x 17 = 272, a third wave of 8: shared, 4456448, a tie the first tile wins.
  GemmTiling t = gemm_tiling(2048, 2112, 7168, 1, 132, kStreamK);
  EXPECT_EQ(t.tile_m, 256);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.tiles, 136);
  EXPECT_EQ(t.split_k, 1);
  EXPECT_NEAR(t.waves, 136.0 / 132, 1e-15);
  EXPECT_NEAR(t.useful, 33.0 / 34, 1e-15);
  EXPECT_NEAR(GemmPadding(2112, 7168, 132, kStreamK).flops(2048), 2.0 * 7168 * (4456448 - 4325376), 1e-3);
  // Waves whole (the block-scaled kernels' one-wave stream-K, split-K, or K of 512: 8 K tiles
  // of 64, too few to share): 128x128 in 3 waves, 396 x 16384 = 6488064, useful 2/3.
  for (const GemmTiling& w : {gemm_tiling(2048, 2112, 7168, 1, 132, hw::GemmSplit::stream_k_one_wave),
                              gemm_tiling(2048, 2112, 7168, 1, 132, kSplitK), gemm_tiling(2048, 2112, 512, 1, 132, kStreamK)}) {
    EXPECT_EQ(w.waves, 3);
    EXPECT_NEAR(w.useful, 2.0 / 3, 1e-15);
  }
  // A last wave half full or more runs whole: 4096 x 4096 makes 16 x 32 = 512 tiles of
  // 256x128, a fourth wave of 116 (over 66): 4 waves, useful 512/528.
  t = gemm_tiling(4096, 4096, 4096, 1, 132, kStreamK);
  EXPECT_EQ(t.waves, 4);
  EXPECT_NEAR(t.useful, 32.0 / 33, 1e-15);
  // Only the BLAS library's class shares past one wave.
  static_assert(hw::gemm_split_for(hw::GemmSplit::stream_k, hw::KernelClass::gemm) == hw::GemmSplit::stream_k);
  static_assert(hw::gemm_split_for(hw::GemmSplit::stream_k, hw::KernelClass::gemm_scaled_deepgemm) == hw::GemmSplit::stream_k_one_wave);
  static_assert(hw::gemm_split_for(hw::GemmSplit::split_k, hw::KernelClass::gemm_scaled) == hw::GemmSplit::split_k);
}

TEST(GemmTiling, TallGemmsPickTheTileWithTheLeastWaves) {
  // 2^30 rows x 4608 columns on 108 SMs (worked in whole numbers) and 2^50 rows (past them:
  // in doubles, exact below 2^53), by hand with R = 2^30 or 2^50: 256x128 makes R/256 x 36
  // tiles, 128x256 R/128 x 18, the same count 36·R/256, in ⌈R/768⌉ waves of 108 x 32768
  // (R/256 = 2^22 or 2^42, one more than a multiple of 3: (R/256 + 2)/3 waves); 128x128
  // makes R/128 x 36 = 72·R/256 tiles in ⌈R/384⌉ = (R/128 + 1)/3 waves of 108 x 16384
  // (R/128 two more than a multiple of 3): work (R/128 + 1) against (R/128 + 4) units, so
  // 128x128 wins, useful R·4608 / ((R/128 + 1)/3 · 108·16384) = (R/128) / (R/128 + 1).
  for (const int e : {30, 50}) {
    const double R = std::ldexp(1.0, e), r128 = R / 128;
    const GemmTiling t = gemm_tiling(R, 4608, 12288, 1, 108, kSplitK);
    EXPECT_EQ(t.tile_m, 128) << e;
    EXPECT_EQ(t.tile_n, 128) << e;
    EXPECT_EQ(t.tiles, 36 * r128) << e;
    EXPECT_EQ(t.split_k, 1) << e;
    EXPECT_EQ(t.waves, (r128 + 1) / 3) << e;
    EXPECT_NEAR(t.useful, r128 / (r128 + 1), 1e-15) << e;
  }
}

TEST(GemmTiling, WithoutMultiprocessorsEveryGemmIsUseful) {
  for (const int sms : {0, -1}) {
    const GemmTiling t = gemm_tiling(2048, 4608, 12288, 1, sms, kSplitK);
    EXPECT_EQ(t.useful, 1);
    EXPECT_EQ(t.tiles, 0);
    EXPECT_EQ(gemm_pad_flops(2048, 4608, 12288, 1, t), 0);
  }
  // Degenerate shapes never divide by zero.
  EXPECT_EQ(gemm_tiling(0, 4608, 12288, 1, 108, kSplitK).useful, 1);
  EXPECT_EQ(gemm_tiling(2048, 4608, 12288, std::numeric_limits<double>::infinity(), 108, kSplitK).useful, 1);
}

TEST(GemmTiling, PaddingForAnyRowsIsTheTilingsPadding) {
  // GemmPadding works out once what does not depend on m; at every m, whole or not, it gives
  // the padded FLOPs of gemm_tiling's choice (the step model's lines rely on it), including
  // the shapes whose best tile changes with m and the narrow ones that split K, and past the
  // whole-number range (one multiprocessor, rows by the billions) where it asks gemm_tiling.
  // With a kernel's tile fill too (ClassEfficiency::fill_k).
  for (const double fill : {0.0, 281.0}) {
  for (const hw::GemmSplit split : {kSplitK, kStreamK, hw::GemmSplit::stream_k_one_wave}) {
  for (const int sms : {1, 108, 132, 148, 152, 304}) {
    for (const double n : {64.0, 576.0, 1280.0, 2112.0, 4608.0, 14336.0}) {
      for (const double k : {128.0, 256.0, 8192.0}) {
        const GemmPadding p(n, k, sms, split, fill);
        for (double m = 0.5; m < 2e6; m = m < 300 ? m + 0.5 : m * 1.01) {
          const double want = gemm_pad_flops(m, n, k, 1, sms, split, fill);
          ASSERT_NEAR(p.flops(m), want, 1e-9 * (want + 2 * m * n * k)) << sms << " " << n << " " << k << " " << m << " " << fill;
        }
        for (const double m : {3e9, 1e12}) {
          const double want = gemm_pad_flops(m, n, k, 1, sms, split, fill);
          ASSERT_NEAR(p.flops(m), want, 1e-9 * (want + 2 * m * n * k)) << sms << " " << n << " " << k << " " << m << " " << fill;
        }
      }
    }
  }
  }
  }
  // Padded work for one row, by hand: n 4096, k 4096 on 132 SMs: 32 tiles of 16x128 split 4
  // ways in one wave, 132 slices of 16x128 per 4 = 16 x 4224 of work for 4096 useful:
  // 2·4096·(16·4224 − 4096) FLOPs.
  EXPECT_NEAR(GemmPadding(4096, 4096, 132, kSplitK).flops(1), 2.0 * 4096 * (16 * 4224 - 4096), 1e-3);
  EXPECT_EQ(GemmPadding(4096, 4096, 0, kSplitK).flops(1), 0);
  EXPECT_EQ(GemmPadding(4096, 4096, 132, kSplitK).flops(0), 0);
  EXPECT_EQ(GemmPadding(0, 4096, 132, kSplitK).flops(16), 0);
  EXPECT_EQ(GemmPadding(4096, 4096, 132, kSplitK).flops(std::numeric_limits<double>::infinity()), 0);
}

TEST(GemmTiling, ATilesFillRunsAsMoreColumnsOfK) {
  // Each tile's fill (hw::ClassEfficiency::fill_k) runs as more columns of K over the tiles'
  // work, the padded rows and columns included. 4096 x 7168 x 2048 on 132 SMs, tiles of
  // 256 x 128: 16 x 56 = 896 tiles in 7 whole waves (split-K keeps them whole): 7 x 132 x 256 x
  // 128 = 30277632 outputs of work for 29360128 useful. Without a fill the padding is 2 x 2048 x
  // (30277632 - 29360128) = 3758096384 FLOPs; with 500 columns each, 2 x (2548 x 30277632 -
  // 2048 x 29360128) = 2 x (77147406336 - 60129542144) = 34035728384.
  EXPECT_NEAR(gemm_pad_flops(4096, 7168, 2048, 1, 132, kSplitK), 3758096384.0, 1);
  EXPECT_NEAR(gemm_pad_flops(4096, 7168, 2048, 1, 132, kSplitK, 500), 34035728384.0, 1);
  EXPECT_NEAR(GemmPadding(7168, 2048, 132, kSplitK, 500).flops(4096), 34035728384.0, 1);
  // Untiled (a grouped GEMM's rows, or no multiprocessors): the fill alone, 2 x m x n x fill.
  EXPECT_NEAR(gemm_pad_flops(32768, 512, 7168, 1, GemmTiling{}, 281), 2.0 * 32768 * 512 * 281, 1e-3);
  EXPECT_EQ(gemm_pad_flops(32768, 512, 7168, 1, GemmTiling{}), 0);
}

TEST(Dot, SeedCounts) {
  // n multiplies + n-1 adds; 2n inputs of 2 bytes and one 2-byte result.
  Cost c = dot_cost({.n = 1000, .dtype = DType::bf16});
  EXPECT_EQ(vector(c, DType::fp32), 1999);
  EXPECT_EQ(c.main_bytes(), 4002);
  EXPECT_EQ(c.main_store_bytes, 2);  // the result
}

TEST(Pointwise, HandCounts) {
  RowsShape s{.rows = 4, .cols = 8};  // bf16, 32 elements
  Cost ew = elementwise_cost({.rows = 10, .cols = 100}, 2, 1, 1);
  EXPECT_EQ(ew.total_flops(), 1000);
  EXPECT_EQ(ew.main_bytes(), 3 * 1000 * 2);
  Cost red = reduction_cost({.rows = 10, .cols = 100});
  EXPECT_EQ(red.total_flops(), 10 * 99);
  EXPECT_EQ(red.main_bytes(), (1000 + 10) * 2);
  Cost rms = rmsnorm_cost(s);
  EXPECT_EQ(rms.total_flops(), 4 * (4 * 8 + 2));        // 136
  EXPECT_EQ(rms.main_bytes(), (2 * 32 + 8) * 2);        // x in, y out, gamma: 144
  Cost ln = layernorm_cost(s);
  EXPECT_EQ(ln.total_flops(), 4 * (7 * 8 + 2));         // 232
  EXPECT_EQ(ln.main_bytes(), (2 * 32 + 2 * 8) * 2);     // + gamma and beta: 160
  Cost sm = softmax_cost(s);
  EXPECT_EQ(sm.total_flops(), 4 * (5 * 8 - 2));         // 152
  EXPECT_EQ(sm.main_bytes(), 2 * 32 * 2);
  Cost sw = swiglu_cost(s);
  EXPECT_EQ(sw.total_flops(), 6 * 32);
  EXPECT_EQ(sw.main_bytes(), 3 * 32 * 2);               // gate, up in; out
  Cost emb = embedding_cost(s);
  EXPECT_EQ(emb.total_flops(), 0);
  EXPECT_EQ(emb.main_bytes(), 4 * 8 + 2 * 32 * 2);      // int64 ids + rows read + written
  // RoPE on (4, 256) with head_dim 128: cos and sin tables (4, 64) each.
  Cost rope = rope_cost({.rows = 4, .cols = 256}, 128);
  EXPECT_EQ(rope.total_flops(), 3 * 4 * 256);
  EXPECT_EQ(rope.main_bytes(), (2 * 1024 + 2 * 4 * 64) * 2);
  // Stored: each op's output tensor, a new one (2 bytes per element).
  EXPECT_EQ(ew.main_store_bytes, 1000 * 2);  // one output of 10 x 100
  EXPECT_EQ(red.main_store_bytes, 10 * 2);   // one value per row
  EXPECT_EQ(rms.main_store_bytes, 32 * 2);   // y, not gamma
  EXPECT_EQ(ln.main_store_bytes, 32 * 2);
  EXPECT_EQ(sm.main_store_bytes, 32 * 2);
  EXPECT_EQ(sw.main_store_bytes, 32 * 2);    // the product, not gate or up
  EXPECT_EQ(emb.main_store_bytes, 32 * 2);   // the gathered rows
  EXPECT_EQ(rope.main_store_bytes, 1024 * 2);
}

TEST(Ops, RopeAsPyTorchRunsItIsSixteenKernels) {
  // vLLM 0.8's DeepseekScalingRotaryEmbedding.forward, 2 tokens, 16 query heads and one key of
  // 64 RoPE dims, bf16: 2048 query elements, 128 key elements, a 128-element table (a row of 32
  // cos and 32 sin values a token, 64 after the halves are repeated).
  // Reads: the queries' contiguous copy 2048, x·cos 2048 + 128 (the row broadcast), -x2 1024,
  // stack 2048, ·sin 2048 + 128, the sum 4096, the write-back 2048: 7.5 x 2048 + 256; the key
  // the same less the contiguous copy: 6.5 x 128 + 256; the gather 2 x 8 (int64 positions) +
  // 128, the two repeats 64 each: 15360 + 832 + (256 + 256 + 128 + 128) = 16960 elements,
  // 33920 B, and 16 B of positions: 33936 B.
  // Writes: the queries 2048 + 2048 + 1024 + 2048 + 2048 + 2048 + 2048 = 6.5 x 2048, the key 5.5
  // x 128, the gathered row 128 and the two repeated halves 128 each: 13312 + 704 + 384 = 14400
  // elements, 28800 B. FLOPs: a product, half a negation, a product and a sum an element, 3.5 x
  // (2048 + 128) = 7616. Kernels: 1 + 1 + 2 + 5 + 5 + 2 = 16.
  const Cost c = rope_torch_cost({.rows = 2, .cols = 1}, 16, 64);
  EXPECT_DOUBLE_EQ(c.main_bytes() - c.main_store_bytes, 33936);
  EXPECT_DOUBLE_EQ(c.main_store_bytes, 28800);
  EXPECT_DOUBLE_EQ(c.total_flops(), 7616);
  EXPECT_DOUBLE_EQ(c.launches, 16);
}

TEST(Attention, FlashGqa) {
  // batch 2, 1024 x 1024, 16 heads over 4 kv heads, d = 64, bf16, not causal.
  AttentionShape s{.batch = 2, .q_len = 1024, .kv_len = 1024, .heads = 16, .kv_heads = 4, .head_dim = 64};
  Cost c = attention_cost(s);
  const double pairs = 1024.0 * 1024;
  EXPECT_EQ(matrix(c, DType::bf16), 4 * 2 * 16 * pairs * 64);            // QK^T + PV
  EXPECT_EQ(vector(c, DType::fp32), 2 * 16 * (5 * pairs + 1024 * 64));   // softmax + normalise
  // Q and O: 2*16*1024*64*2 bytes each; K and V: 2*4*1024*64*2 each.
  EXPECT_EQ(c.main_bytes(), 2 * 4194304.0 + 2 * 1048576.0);
  EXPECT_EQ(c.main_store_bytes, 4194304.0);  // O only
  EXPECT_EQ(c.launches, 1);
}

TEST(Attention, CausalPairs) {
  AttentionShape s{.q_len = 1024, .kv_len = 1024, .causal = true};
  EXPECT_EQ(attention_pairs(s), 1024.0 * 1025 / 2);  // the lower triangle with its diagonal
  s.q_len = 1;
  s.kv_len = 1000;
  EXPECT_EQ(attention_pairs(s), 1000);  // a decode step sees the whole cache
  s.q_len = 100;                        // 100 new tokens after 900 cached
  EXPECT_EQ(attention_pairs(s), 100.0 * 900 + 100.0 * 101 / 2);
  s.impl = AttentionImpl::naive;        // naive computes the full rectangle, then masks
  EXPECT_EQ(attention_pairs(s), 100.0 * 1000);
}

TEST(Attention, APrefillComputesWholeTilesOf128QueriesBy128Keys) {
  // 1000 prompt tokens under the causal mask: 1000/128 = 7.8125 query tiles. Tile j < 7 ends
  // at query 128(j + 1) and sees key tiles 1..j + 1 (1 + 2 + ... + 7 = 28 of 128 x 128 =
  // 458752 pairs); the last, its 104 queries (the rest of its rows another head's: PackGQA),
  // 8 key tiles: 104 x 1024 = 106496. 565248 computed against 1000·1001/2 = 500500 useful.
  AttentionShape s{.q_len = 1000, .kv_len = 1000, .causal = true};
  AttentionCounts n = attention_counts(s);
  EXPECT_EQ(n.q_tiles, 7.8125);
  EXPECT_EQ(n.tile_waste, 565248 - 500500);
  // A chunk of 300 after 1000 cached: 2.34375 tiles; the first two see ceil(1000/128) = 8 key
  // tiles and 1 and 2 more (19 x 16384 = 311296), the last 44 queries ceil(1300/128) = 11
  // (44 x 1408 = 61952): 373248 against 300·1000 + 300·301/2 = 345150.
  s.q_len = 300, s.kv_len = 1300;
  n = attention_counts(s);
  EXPECT_EQ(n.q_tiles, 2.34375);
  EXPECT_EQ(n.tile_waste, 373248 - 345150);
  // Without the mask, 512 x 512 is 4 x 4 whole tiles: nothing wasted.
  s = {.batch = 2, .q_len = 512, .kv_len = 512};
  n = attention_counts(s);
  EXPECT_EQ(n.q_tiles, 2 * 4);
  EXPECT_EQ(n.tile_waste, 0);
  // A window of 256 over 1000 tokens: tiles 0 and 1 reach key tiles 0..0 and 0..1 (their
  // first queries, at 0 and 128, see from key 0); tile j of 2..6 from key tile j - 2 (its first
  // query, 128j, sees from 128j - 255) to j: 3 each; the last, queries 896-999, from key tile
  // 5 (641) to 7: 3. (1 + 2 + 5 x 3) x 16384 + 104 x 128 x 3 = 294912 + 39936 = 334848
  // computed, against 1 + 2 + ... + 256 and 744 x 256 = 32896 + 190464 = 223360 useful.
  s = {.q_len = 1000, .kv_len = 1000, .window = 256, .causal = true};
  n = attention_counts(s);
  EXPECT_EQ(n.q_tiles, 7.8125);
  EXPECT_EQ(attention_pairs(s), 223360);
  EXPECT_EQ(n.tile_waste, 334848 - 223360);
  // A decode query runs packed, as does a decode kernel's every count; naive attention has no tiles.
  s = {.q_len = 1, .kv_len = 1000, .causal = true};
  EXPECT_EQ(attention_counts(s).q_tiles, 0);
  s = {.q_len = 4, .kv_len = 1000, .causal = true};
  EXPECT_GT(attention_counts(s).q_tiles, 0);
  EXPECT_EQ(decode_attention_counts(s).q_tiles, 0);
  EXPECT_EQ(decode_attention_counts(s).tile_waste, 0);
  EXPECT_EQ(decode_attention_counts(s).pairs, attention_counts(s).pairs);
  s = {.q_len = 1000, .kv_len = 1000, .causal = true, .impl = AttentionImpl::naive};
  EXPECT_EQ(attention_counts(s).q_tiles, 0);
  EXPECT_EQ(attention_counts(s).tile_waste, 0);
  // The cost: 16 heads of 128 with 200 keys' work a tile, over the 1000-token prompt: the
  // waste and 7.8125 x 128 x 200 = 200000 pairs of tile work, at 2 x 16 x (128 + 128) = 8192
  // FLOPs a pair, as time (pad), never as FLOPs.
  s = {.q_len = 1000, .kv_len = 1000, .heads = 16, .kv_heads = 4, .head_dim = 128, .causal = true, .tile_keys = 200};
  const Cost c = attention_cost(s);
  EXPECT_EQ(c.matrix_pad_flops, 8192.0 * (565248 - 500500 + 200000));
  EXPECT_EQ(matrix(c, DType::bf16), 8192.0 * 500500);
}

TEST(Attention, TileCountsEqualTheTilesCountedOneByOne) {
  // The closed forms against a loop over the query tiles: tile j of a chunk of q after p cached
  // holds the queries at positions p + 128j to p + min(q, 128(j + 1)) - 1 and computes its rows
  // x the key tiles (128 keys from key 0) from its first query's first key (key 0, or in a
  // window W the query's position - W + 1) to its last query (every key without the mask).
  for (const double q : {2.0, 100.0, 128.0, 129.0, 1000.0, 4096.0}) {
    for (const double p : {0.0, 1.0, 127.0, 128.0, 1000.0, 5000.0}) {
      for (const double window : {0.0, 1.0, 128.0, 129.0, 256.0, 4096.0}) {
        for (const bool causal : {true, false}) {
          if (window > 0 && !causal) continue;  // a window implies the causal mask
          const AttentionShape s{.q_len = q, .kv_len = p + q, .window = window, .causal = causal};
          double tiles = 0, computed = 0;
          for (double j = 0; j * 128 < q; ++j) {
            const double rows = std::min(128.0, q - 128 * j), first = p + 128 * j, end = p + 128 * j + rows - 1;
            const double lo = window > 0 ? std::max(0.0, first - window + 1) : 0, hi = causal ? end : p + q - 1;
            tiles += rows / 128;
            computed += rows * 128 * (std::floor(hi / 128) - std::floor(lo / 128) + 1);
          }
          const AttentionCounts n = attention_counts(s);
          EXPECT_EQ(n.q_tiles, tiles) << q << " " << p << " " << window << " " << causal;
          EXPECT_EQ(n.tile_waste, computed - attention_pairs(s)) << q << " " << p << " " << window << " " << causal;
        }
      }
    }
  }
}

TEST(Attention, NaiveMaterialisesScoresAndExpandsKv) {
  AttentionShape s{.batch = 2, .q_len = 1024, .kv_len = 1024, .heads = 16, .kv_heads = 4, .head_dim = 64,
                   .impl = AttentionImpl::naive};
  Cost c = attention_cost(s);
  const double q = 4194304, kv = 2097152, expanded = 2.0 * 2 * 16 * 1024 * 64 * 2, scores = 2.0 * 16 * 1024 * 1024 * 2;
  // Q, O; repeat_kv reads K,V and writes them expanded; QK^T and PV read expanded K,V;
  // scores written, read and rewritten by softmax, read by PV.
  EXPECT_EQ(c.main_bytes(), 2 * q + kv + expanded + expanded + 4 * scores);
  // Stored to lines not read: the expanded K,V, the scores once (softmax rewrites them in
  // place), O.
  EXPECT_EQ(c.main_store_bytes, expanded + scores + q);
  EXPECT_EQ(c.launches, 5);
}

TEST(ShardedMatmul, SplitOnKAllReducesPartialSums) {
  // Seed 003: X[B,D]·Y[D,F] split on D over 2 chips; each computes BDF FLOPs... per chip
  // 2*B*(D/2)*F, and sends its bf16 partial sum, 2BF bytes (ring all-reduce over 2).
  analysis::OpConfig op{.kind = analysis::OpKind::matmul, .m = 128, .k = 8192, .n = 256, .chips = 2,
                        .shard = analysis::Shard::k};
  hw::System sys;
  sys.chip.links = {{"ICI", hw::LinkScope::node, 45e9, 1, 1e-6}};
  sys.chips_per_node = 8;
  Cost c = analysis::op_cost(op, sys);
  EXPECT_EQ(matrix(c, DType::bf16), 2.0 * 128 * 4096 * 256);
  EXPECT_EQ(c.link_bytes[0], 2.0 * 128 * 256);
  EXPECT_EQ(c.link_steps[0], 2);  // reduce-scatter step + all-gather step
}

}  // namespace
}  // namespace ridgeline::ops
