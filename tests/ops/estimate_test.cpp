#include "ridgeline/ops/estimate.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "ridgeline/core/error.hpp"
#include "toy_chip.hpp"

namespace ridgeline::ops {
namespace {

using testing::toy_chip;

TEST(Estimate, ComputeBoundOp) {
  Cost c;
  c.add_flops(hw::Unit::matrix, DType::bf16, 1e12);  // 1e12 / 100e12 = 10 ms
  c.add_main_bytes(1e9);                             // 1e9 / 1e12 = 1 ms
  c.launches = 1;                                    // 2 us
  Estimate e = estimate(c, toy_chip());
  EXPECT_DOUBLE_EQ(e.t_matrix_s, 10e-3);
  EXPECT_DOUBLE_EQ(e.t_math_s, 10e-3);
  EXPECT_DOUBLE_EQ(e.t_memory_s, 1e-3);
  EXPECT_DOUBLE_EQ(e.t_launch_s, 2e-6);
  EXPECT_DOUBLE_EQ(e.t_lower_s, 10e-3);
  EXPECT_DOUBLE_EQ(e.t_sum_at_peak_s, 10e-3 + 1e-3 + 2e-6);          // seed 003's upper bound
  EXPECT_DOUBLE_EQ(e.t_upper_s, 10e-3 / 0.8 + 1e-3 / 0.9 + 2e-6);  // no overlap at achievable rates
  EXPECT_DOUBLE_EQ(e.t_realistic_s, 10e-3 / 0.8);  // the matrix term still dominates at 80%
  EXPECT_EQ(e.bound, Bound::compute);
  EXPECT_DOUBLE_EQ(e.intensity_flops_per_byte, 1000.0);  // 1e12 / 1e9
  EXPECT_DOUBLE_EQ(e.ridge_flops_per_byte, 100.0);       // 100e12 / 1e12
  EXPECT_DOUBLE_EQ(e.attained_flops_per_s, 100e12);
  EXPECT_DOUBLE_EQ(e.fraction_of_peak, 1.0);
}

TEST(Estimate, HostTimeOfACallWaitedOnAddsToEveryBound) {
  // The compute-bound op above (10 ms at the peak) waited on with 2 ms of host time a call:
  // lower 12 ms, realistic 10/0.8 + 2 = 14.5 ms, upper 10/0.8 + 1/0.9 + 0.002 + 2 ms; the
  // 1e12 FLOPs over 12 ms attain 83.3 TFLOP/s, 5/6 of the peak.
  Cost c;
  c.add_flops(hw::Unit::matrix, DType::bf16, 1e12);
  c.add_main_bytes(1e9);
  c.launches = 1;
  Estimate e = estimate(c, toy_chip());
  add_host_time(e, 2e-3);
  EXPECT_DOUBLE_EQ(e.t_host_s, 2e-3);
  EXPECT_DOUBLE_EQ(e.t_lower_s, 12e-3);
  EXPECT_DOUBLE_EQ(e.t_realistic_s, 10e-3 / 0.8 + 2e-3);
  EXPECT_DOUBLE_EQ(e.t_upper_s, 10e-3 / 0.8 + 1e-3 / 0.9 + 2e-6 + 2e-3);
  EXPECT_DOUBLE_EQ(e.t_sum_at_peak_s, 10e-3 + 1e-3 + 2e-6 + 2e-3);
  EXPECT_DOUBLE_EQ(e.attained_flops_per_s, 1e12 / 12e-3);
  EXPECT_DOUBLE_EQ(e.attained_total_flops_per_s, 1e12 / 12e-3);
  EXPECT_DOUBLE_EQ(e.fraction_of_peak, 10.0 / 12);
  EXPECT_EQ(e.bound, Bound::compute);  // the device's bound: the host adds time, not a roof
  EXPECT_FALSE(e.host_longer);         // 2 ms of host against 10 ms on the device
  add_host_time(e, 0);
  EXPECT_DOUBLE_EQ(e.t_lower_s, 12e-3);
  add_host_time(e, 9e-3);  // 11 ms of host in all against the device's 10
  EXPECT_DOUBLE_EQ(e.t_lower_s, 21e-3);
  EXPECT_TRUE(e.host_longer);
}

// A kernel class's efficiencies refine the chip-wide ones for realistic and upper only;
// the fixed time per kernel adds to the largest part (and to the sum).
TEST(Estimate, KernelClassEfficiencyAndOverhead) {
  hw::ChipSpec chip = toy_chip();
  auto& gemm = chip.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)];
  gemm.matrix = 0.5;
  gemm.overhead_s = 20e-6;
  Cost c;
  c.add_flops(hw::Unit::matrix, DType::bf16, 1e12);  // 10 ms at peak
  c.add_main_bytes(1e9);                             // 1 ms
  c.launches = 1;                                    // 2 us
  const Estimate g = estimate(c, chip, hw::KernelClass::gemm);
  EXPECT_DOUBLE_EQ(g.t_lower_s, 10e-3);                                     // bounds stay pure roofline
  EXPECT_DOUBLE_EQ(g.t_realistic_s, 20e-6 + 10e-3 / 0.5);                  // overhead + matrix at 50%
  EXPECT_DOUBLE_EQ(g.t_upper_s, 20e-6 + 10e-3 / 0.5 + 1e-3 / 0.9 + 2e-6);  // memory keeps the chip-wide 0.9
  // Any other class keeps the chip-wide figures and no fixed time.
  const Estimate a = estimate(c, chip, hw::KernelClass::attention);
  EXPECT_DOUBLE_EQ(a.t_realistic_s, 10e-3 / 0.8);
  // A launch longer than the kernel on the chip is the realistic time.
  Cost tiny;
  tiny.add_main_bytes(1e3);  // 1 ns
  tiny.launches = 1;         // 2 us
  gemm.overhead_s = 1e-6;
  EXPECT_DOUBLE_EQ(estimate(tiny, chip, hw::KernelClass::gemm).t_realistic_s, 2e-6);
  gemm.overhead_s = 3e-6;
  EXPECT_DOUBLE_EQ(estimate(tiny, chip, hw::KernelClass::gemm).t_realistic_s, 3e-6 + 1e-9 / 0.9);
}

// Programmatic dependent launch (docs/cost-model.md#pdl): an engine that launches its own
// kernels with it hides the chip's pdl_overlap of each one's fixed time, never more than the
// kernel boundary nor than the fixed time itself; cuBLAS's GEMMs and PyTorch's elementwise ops
// (hw::pdl_class) keep theirs. Toy chip: a 1 us boundary, 0.4 us hidden.
TEST(Estimate, ProgrammaticDependentLaunchHidesPartOfTheEnginesOwnKernelsBoundaries) {
  hw::ChipSpec chip = toy_chip();
  chip.efficiency.overhead_s = 1e-6;
  chip.efficiency.pdl_overlap_s = 0.4e-6;
  auto& k = chip.efficiency.kernel;
  k[static_cast<int>(hw::KernelClass::norm)].overhead_s = 2e-6;
  k[static_cast<int>(hw::KernelClass::quant)].overhead_s = 0.3e-6;
  k[static_cast<int>(hw::KernelClass::gemm)].overhead_s = 3e-6;
  const auto fixed = [](const Rates& r, hw::KernelClass c) { return r.achievable[static_cast<int>(c)].overhead_s; };
  const Rates off(chip), on(chip, true);
  EXPECT_DOUBLE_EQ(fixed(off, hw::KernelClass::norm), 2e-6);
  EXPECT_NEAR(fixed(on, hw::KernelClass::norm), 1.6e-6, 1e-18);             // 2 - 0.4
  EXPECT_DOUBLE_EQ(fixed(on, hw::KernelClass::quant), 0);                    // 0.3 < 0.4: all of it
  EXPECT_NEAR(fixed(on, hw::KernelClass::attention_decode), 0.6e-6, 1e-18);  // the chip's 1 - 0.4
  EXPECT_DOUBLE_EQ(fixed(on, hw::KernelClass::gemm), 3e-6);                  // cuBLAS: not launched so
  EXPECT_DOUBLE_EQ(fixed(on, hw::KernelClass::pointwise), 1e-6);             // PyTorch's ops
  EXPECT_DOUBLE_EQ(fixed(on, hw::KernelClass::collective), 1e-6);            // NCCL
  // A class of the engine's own kernels that takes a fixed time from a class that is not:
  // DeepGEMM's grouped GEMMs from gemm_expert, from gemm (cuBLAS, hw::fallback), 3 - 0.4.
  EXPECT_DOUBLE_EQ(fixed(off, hw::KernelClass::gemm_expert_deepgemm), 3e-6);
  EXPECT_NEAR(fixed(on, hw::KernelClass::gemm_expert_deepgemm), 2.6e-6, 1e-18);
  // At most the boundary: with 0.25 us of it, 0.25 of norm's 2 us hidden.
  chip.efficiency.overhead_s = 0.25e-6;
  EXPECT_NEAR(fixed(Rates(chip, true), hw::KernelClass::norm), 1.75e-6, 1e-18);
  // A chip with no measured figure hides nothing.
  chip.efficiency.pdl_overlap_s = 0;
  EXPECT_DOUBLE_EQ(fixed(Rates(chip, true), hw::KernelClass::norm), 2e-6);
}

// An op of several kernels (Cost::launches) pays each one's fixed time, in the realistic and
// upper times (docs/cost-model.md#kernel-boundaries). Toy chip: 1 TB/s at 0.9, launches 2 us.
TEST(Estimate, AnOpOfSeveralKernelsPaysEachOnesFixedTime) {
  hw::ChipSpec chip = toy_chip();
  chip.efficiency.kernel[static_cast<int>(hw::KernelClass::pointwise)].overhead_s = 3e-6;
  Cost c;
  c.add_main_bytes(1e3);  // 1 ns at the peak
  c.launches = 16;        // 32 us of launches
  const Estimate e = estimate(c, chip, hw::KernelClass::pointwise);
  EXPECT_DOUBLE_EQ(e.t_realistic_s, 16 * 3e-6 + 1e-9 / 0.9);           // 48 us of fixed times, over the 32 us of launches
  EXPECT_DOUBLE_EQ(e.t_upper_s, 16 * 3e-6 + 1e-9 / 0.9 + 16 * 2e-6);  // and the launches summed
  c.launches = 1;
  EXPECT_DOUBLE_EQ(estimate(c, chip, hw::KernelClass::pointwise).t_realistic_s, 3e-6 + 1e-9 / 0.9);
}

// A GEMM's tiling (Cost::matrix_pad_flops) is matrix work at the achievable rate: in the
// realistic and upper times, not in the lower bound or the FLOPs. Toy chip: bf16 100 TFLOP/s,
// matrix efficiency 0.8: 1e12 FLOPs + 0.125e12 padded = 11.25 ms at the peak, 14.0625 ms
// realistic; the lower bound stays 10 ms.
TEST(Estimate, GemmPaddingRunsAtTheAchievableRateOnly) {
  const hw::ChipSpec chip = toy_chip();
  Cost c;
  c.add_flops(hw::Unit::matrix, DType::bf16, 1e12);
  c.matrix_pad_flops = 0.125e12;
  const Estimate e = estimate(c, chip, hw::KernelClass::gemm);
  EXPECT_DOUBLE_EQ(e.t_lower_s, 10e-3);
  EXPECT_DOUBLE_EQ(e.t_matrix_pad_s, 1.25e-3);
  EXPECT_DOUBLE_EQ(e.t_realistic_s, chip.efficiency.overhead_s + 11.25e-3 / 0.8);
  EXPECT_DOUBLE_EQ(e.flops, 1e12);
  // Additive and scaled with the rest.
  Cost twice = c + c;
  EXPECT_DOUBLE_EQ(twice.matrix_pad_flops, 0.25e12);
  EXPECT_DOUBLE_EQ((c * 3).matrix_pad_flops, 0.375e12);
  OpCost compact;
  ASSERT_TRUE(OpCost::compact(c, compact));
  EXPECT_DOUBLE_EQ(compact.expand().matrix_pad_flops, 0.125e12);
}

// A K-looping class's K loop (hw::ClassEfficiency::k_loop_s) is a fixed time of K x k_loop a
// kernel, in the realistic and upper times, not the lower bound; the columns (Cost::loop_k) add
// and scale with the rest and survive the compact form and copies. The toy chip (1 TB/s, 0.9
// of it for memory, a 1 us kernel boundary) with gemm_scaled at 2 ns a column: 1 GB of
// memory-bound GEMM over K = 4096, 1e9 / 0.9e12 = 1111.111 us + 1 us + 4096 x 2 ns (8.192 us).
TEST(Estimate, AKLoopingClassPaysItsKLoopAsAFixedTime) {
  hw::ChipSpec chip = toy_chip();
  chip.efficiency.overhead_s = 1e-6;
  chip.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm_scaled)].k_loop_s = 2e-9;
  Cost c;
  c.add_main_bytes(1e9);
  c.launches = 1;
  c.loop_k = 4096;
  const Estimate e = estimate(c, chip, hw::KernelClass::gemm_scaled);
  EXPECT_DOUBLE_EQ(e.t_lower_s, 1e-3);
  EXPECT_NEAR(e.t_realistic_s, 1e9 / 0.9e12 + 1e-6 + 8.192e-6, 1e-15);
  EXPECT_NEAR(e.t_upper_s, 1e9 / 0.9e12 + 1e-6 + 8.192e-6 + 2e-6, 1e-15);  // and the 2 us launch, summed
  EXPECT_NEAR(e.applied.overhead_s, 9.192e-6, 1e-15);
  EXPECT_EQ(e.applied.k_loop_s, 2e-9);
  // Another class (gemm) takes none of it.
  EXPECT_NEAR(estimate(c, chip, hw::KernelClass::gemm).t_realistic_s, 1e9 / 0.9e12 + 1e-6, 1e-15);
  Cost copy = c, assigned;
  assigned = c;
  EXPECT_EQ(copy.loop_k, 4096);
  EXPECT_EQ(assigned.loop_k, 4096);
  EXPECT_EQ((c + c).loop_k, 8192);
  EXPECT_EQ((c * 3).loop_k, 12288);
  OpCost compact;
  ASSERT_TRUE(OpCost::compact(c, compact));
  EXPECT_EQ(compact.loop_k, 4096);
  EXPECT_EQ(compact.expand().loop_k, 4096);
  const Rates r(chip);
  EXPECT_NEAR(time_parts(compact, r).realistic(r, hw::KernelClass::gemm_scaled), e.t_realistic_s, 1e-15);
}

// A measured matmul rate (maximum achievable matmul FLOPS) is the gemm class's matrix
// efficiency in its dtype: achieved / peak. Other dtypes and classes keep the chip-wide 0.8;
// a class figure of the chip file (calibrate's) replaces it for every dtype.
TEST(Estimate, MeasuredMatmulRateIsTheGemmEfficiencyInItsDtype) {
  hw::ChipSpec chip = toy_chip();  // bf16 100 TFLOP/s, fp8 200 TFLOP/s peaks
  chip.matmul_achievable_flops_per_s[index(DType::fp8_e4m3)] = 140e12;  // 0.7 of the peak
  Cost fp8, bf16;
  fp8.add_flops(hw::Unit::matrix, DType::fp8_e4m3, 2e12);  // 10 ms at the peak
  bf16.add_flops(hw::Unit::matrix, DType::bf16, 1e12);     // 10 ms
  const Estimate g = estimate(fp8, chip, hw::KernelClass::gemm);
  EXPECT_DOUBLE_EQ(g.t_lower_s, 10e-3);                 // the bound stays the peak's
  EXPECT_DOUBLE_EQ(g.t_realistic_s, 2e12 / 140e12);     // at the measured rate: 14.29 ms
  EXPECT_DOUBLE_EQ(g.t_upper_s, 2e12 / 140e12);
  EXPECT_DOUBLE_EQ(g.applied.matrix, 0.7);
  EXPECT_DOUBLE_EQ(estimate(bf16, chip, hw::KernelClass::gemm).t_realistic_s, 10e-3 / 0.8);
  EXPECT_DOUBLE_EQ(estimate(fp8, chip, hw::KernelClass::attention).t_realistic_s, 10e-3 / 0.8);
  // Mixed dtypes: the dtype of most of the matrix time names the rate (fp8's 10 ms over bf16's 5).
  Cost mixed = fp8;
  mixed.add_flops(hw::Unit::matrix, DType::bf16, 0.5e12);
  EXPECT_DOUBLE_EQ(estimate(mixed, chip, hw::KernelClass::gemm).t_realistic_s, 15e-3 / 0.7);
  chip.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].matrix = 0.5;
  EXPECT_DOUBLE_EQ(estimate(fp8, chip, hw::KernelClass::gemm).t_realistic_s, 10e-3 / 0.5);
}

TEST(Estimate, MemoryBoundOpAndRealisticUsesMemoryEfficiency) {
  Cost c;
  c.add_flops(hw::Unit::vector, DType::fp32, 1e9);  // 1e9 / 10e12 = 0.1 ms
  c.add_main_bytes(1e9);                            // 1 ms
  Estimate e = estimate(c, toy_chip());
  EXPECT_EQ(e.bound, Bound::memory);
  EXPECT_EQ(e.compute_unit, hw::Unit::vector);
  EXPECT_DOUBLE_EQ(e.t_lower_s, 1e-3);
  EXPECT_DOUBLE_EQ(e.t_realistic_s, 1e-3 / 0.9);
  EXPECT_DOUBLE_EQ(e.attained_flops_per_s, 1e12);  // 1e9 FLOPs in 1 ms
  EXPECT_DOUBLE_EQ(e.fraction_of_peak, 0.1);       // of the 10e12 vector peak
}

TEST(Estimate, MatrixAndVectorOverlapInTheLowerBoundOnly) {
  Cost c;
  c.add_flops(hw::Unit::matrix, DType::bf16, 1e11);  // 1 ms
  c.add_flops(hw::Unit::vector, DType::fp32, 5e9);   // 0.5 ms
  Estimate e = estimate(c, toy_chip());
  EXPECT_DOUBLE_EQ(e.t_math_s, 1e-3);
  EXPECT_DOUBLE_EQ(e.t_sum_at_peak_s, 1.5e-3);
  EXPECT_DOUBLE_EQ(e.t_upper_s, 1e-3 / 0.8 + 0.5e-3 / 0.5);
  // The attained rate is the matrix unit's (1e11 in 1 ms); all FLOPs together 1.05e11 in 1 ms.
  EXPECT_DOUBLE_EQ(e.attained_flops_per_s, 1e14);
  EXPECT_DOUBLE_EQ(e.attained_total_flops_per_s, 1.05e14);
  EXPECT_DOUBLE_EQ(e.fraction_of_peak, 1.0);
}

// A class's overlap share adds to the matrix part its partner: memory for a GEMM (its tiles
// wait on their loads), vector for attention (its softmax on the warps that issue its
// matmuls). Toy chip: 1e11 bf16 FLOPs on the matrix unit, 1 ms at the peak, 1.25 ms at 0.8;
// 5e9 fp32 vector FLOPs, 0.5 ms, 1 ms at 0.5; 1e9 bytes, 1 ms, 1.111 ms at 0.9. A share of
// 0.7: attention 0.7 x (1.25 + 1) = 1.575 ms, a GEMM 0.7 x (1.25 + 1/0.9) = 1.6528 ms; each
// above the largest part alone (1.25 ms).
TEST(Estimate, AttentionsOverlapShareAddsItsVectorPartAGemmsItsMemory) {
  hw::ChipSpec chip = toy_chip();
  chip.efficiency.kernel[static_cast<int>(hw::KernelClass::attention)].overlap = 0.7;
  chip.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].overlap = 0.7;
  Cost c;
  c.add_flops(hw::Unit::matrix, DType::bf16, 1e11);
  c.add_flops(hw::Unit::vector, DType::fp32, 5e9);
  c.add_main_bytes(1e9);
  const Estimate a = estimate(c, chip, hw::KernelClass::attention);
  EXPECT_DOUBLE_EQ(a.t_realistic_s, 0.7 * (1e-3 / 0.8 + 0.5e-3 / 0.5));
  EXPECT_NEAR(a.t_realistic_s, 1.575e-3, 1e-15);
  EXPECT_TRUE(a.applied.overlap_vector);
  const Estimate g = estimate(c, chip, hw::KernelClass::gemm);
  EXPECT_DOUBLE_EQ(g.t_realistic_s, 0.7 * (1e-3 / 0.8 + 1e-3 / 0.9));
  EXPECT_FALSE(g.applied.overlap_vector);
  // The share is the class's own: attention's decode kernels (a refining class) overlap none.
  EXPECT_DOUBLE_EQ(estimate(c, chip, hw::KernelClass::attention_decode).t_realistic_s, 1e-3 / 0.8);
}

TEST(Estimate, CommUsesAllLinksOfItsKindAndLatencySteps) {
  Cost c;
  c.link_bytes[0] = 1e8;  // over 2 x 50 GB/s = 100 GB/s: 1 ms
  c.link_steps[0] = 4;    // 4 x 1 us
  Estimate e = estimate(c, toy_chip());
  EXPECT_DOUBLE_EQ(e.t_comm_s, 1e-3 + 4e-6);
  EXPECT_EQ(e.bound, Bound::comm);
  EXPECT_EQ(e.link, 0);
  // The efficiency is a fraction of the bandwidth: the bytes' 1 ms at 0.75, the latency as is.
  EXPECT_DOUBLE_EQ(e.t_realistic_s, 1e-3 / 0.75 + 4e-6);
}

TEST(Estimate, LaunchBoundWhenKernelsAreTiny) {
  Cost c;
  c.add_main_bytes(1e3);  // 1 ns
  c.launches = 3;         // 6 us
  Estimate e = estimate(c, toy_chip());
  EXPECT_EQ(e.bound, Bound::launch);
  EXPECT_DOUBLE_EQ(e.t_lower_s, 6e-6);
}

TEST(Estimate, UnsupportedDtypeIsInfiniteAndNamedByCheck) {
  Cost c;
  c.add_flops(hw::Unit::matrix, DType::fp4, 1e9);
  Estimate e = estimate(c, toy_chip());
  EXPECT_FALSE(e.supported);
  EXPECT_TRUE(std::isinf(e.t_lower_s));
  try {
    check_supported(c, toy_chip());
    FAIL();
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("fp4"), std::string::npos);
  }
}

TEST(Cost, AddsAndScales) {
  Cost a;
  a.add_flops(hw::Unit::matrix, DType::bf16, 2);
  a.add_main_bytes(3);
  a.add_main_stores(1);
  a.launches = 1;
  Cost b = a + a * 2.0;
  EXPECT_EQ(b.total_flops(), 6);
  EXPECT_EQ(b.main_bytes(), 12);       // (3 + 1) x 3
  EXPECT_EQ(b.main_store_bytes, 3);    // 1 x 3
  EXPECT_EQ(b.launches, 3);
  Cost copy;
  copy = b;
  EXPECT_EQ(copy.main_store_bytes, 3);
}

// Where a chip's stores allocate, every byte stored to a line not read first is read too:
// main-memory time is (loads + 2 x stores) / bandwidth; elsewhere (loads + stores) / bandwidth.
TEST(Estimate, WriteAllocateReadsTheStoredLines) {
  Cost c;
  c.add_flops(hw::Unit::vector, DType::fp32, 1e9);  // 0.1 ms on 10e12
  c.add_main_bytes(2e9);                            // two inputs read
  c.add_main_stores(1e9);                           // one output stored
  hw::ChipSpec chip = toy_chip();                   // 1e12 B/s
  const Estimate plain = estimate(c, chip);
  EXPECT_DOUBLE_EQ(plain.t_memory_s, 3e-3);         // 3e9 / 1e12
  EXPECT_DOUBLE_EQ(plain.main_bytes, 3e9);
  EXPECT_EQ(plain.write_allocate_bytes, 0);
  chip.write_allocate = true;
  const Estimate wa = estimate(c, chip);
  EXPECT_DOUBLE_EQ(wa.t_memory_s, 4e-3);            // (2e9 + 1e9 + 1e9) / 1e12
  EXPECT_DOUBLE_EQ(wa.t_memory_level_s[0], 4e-3);
  EXPECT_DOUBLE_EQ(wa.t_lower_s, 4e-3);
  EXPECT_DOUBLE_EQ(wa.main_bytes, 4e9);
  EXPECT_DOUBLE_EQ(wa.write_allocate_bytes, 1e9);
  EXPECT_DOUBLE_EQ(wa.intensity_flops_per_byte, 0.25);  // 1e9 FLOPs / 4e9 bytes moved
  // The compact form an op graph keeps carries the stores and prices them the same.
  OpCost o;
  ASSERT_TRUE(OpCost::compact(c, o));
  EXPECT_EQ(o.main_store_bytes, 1e9);
  const Rates r(chip);
  EXPECT_DOUBLE_EQ(time_parts(o, r).memory, 4e-3);
  EXPECT_DOUBLE_EQ(main_traffic(o, r), 4e9);
  EXPECT_EQ(o.expand().main_store_bytes, 1e9);
  EXPECT_DOUBLE_EQ(time_parts(o.expand(), r).memory, 4e-3);
}

}  // namespace
}  // namespace ridgeline::ops
