// Communication hidden behind compute: values derived by hand (docs/training.md#interference).
#include "ridgeline/analysis/overlap.hpp"

#include <gtest/gtest.h>

#include "ridgeline/analysis/published_mfu.hpp"
#include "toy_chip.hpp"

namespace ridgeline::analysis {
namespace {

// The toy chip with 100 multiprocessors: main memory 1 TB/s at 0.9 achievable, 0.9 TB/s.
hw::ChipSpec chip100() {
  hw::ChipSpec c = testing::toy_chip();
  c.sms = 100;
  return c;
}

TEST(Overlap, InterferenceTakesTheCollectivesSmsOrItsMemoryBandwidth) {
  const hw::ChipSpec c = chip100();
  // A window of 10 s: 2 s of memory-bound kernels, 6 s of compute-bound ones moving 2.7e12
  // bytes (0.45 TB/s: half the achievable 0.9 TB/s), 2 s of communication. A collective of
  // 1 s moving 0.18e12 bytes (0.18 TB/s: 0.2 of 0.9) on 16 of the 100 SMs.
  ComputeWindow w{10, 2, 6, 2.7e12, 2, 0};
  const OverlapComm nccl{1, 0.18e12, 16, false};
  // Compute-bound share 0.6 loses max(16/100, excess) with excess 0.5 + 0.2 - 1 < 0: 0.16;
  // memory-bound share 0.2 loses the collective's 0.2 of the bandwidth:
  // 0.6 x 0.16 + 0.2 x 0.2 = 0.136.
  EXPECT_NEAR(interference_rate(nccl, w, c), 0.136, 1e-12);
  // Compute-bound kernels demanding 0.95 of the bandwidth beside a collective demanding 0.3:
  // 0.25 more than there is, above the SM share: 0.6 x 0.25 + 0.2 x 0.3 = 0.21.
  w.compute_bound_bytes = 0.95 * 0.9e12 * 6;
  const OverlapComm heavy{1, 0.27e12, 16, false};
  EXPECT_NEAR(interference_rate(heavy, w, c), 0.21, 1e-12);
  // A chip without `sms` charges no multiprocessors.
  hw::ChipSpec nosms = c;
  nosms.sms = 0;
  w.compute_bound_bytes = 2.7e12;
  EXPECT_NEAR(interference_rate(nccl, w, nosms), 0.04, 1e-12);
}

TEST(Overlap, HidesWhatTheWindowsFreeLinkTimeHolds) {
  const hw::ChipSpec c = chip100();
  // A 10 s window whose own communication holds the scale-up link 3 s and the network 1 s.
  const ComputeWindow w{10, 0, 7, 0, 3, 1};
  // 9 s on the scale-up link, 8 s of it hideable: the link is free 7 s, so 7 s hide, 2 s
  // wait; each hidden second costs 0.7 x 16/100 = 0.112 s.
  const OverlapCost up = overlap({9, 0, 16, false}, 8, w, 1, c);
  EXPECT_DOUBLE_EQ(up.hidden_s, 7);
  EXPECT_DOUBLE_EQ(up.exposed_s, 2);
  EXPECT_NEAR(up.interference_s, 7 * 0.112, 1e-12);
  // The same on the network: free 9 s, so all 8 hideable seconds hide.
  const OverlapCost net = overlap({9, 0, 16, true}, 8, w, 1, c);
  EXPECT_DOUBLE_EQ(net.hidden_s, 8);
  EXPECT_DOUBLE_EQ(net.exposed_s, 1);
  // --overlap-efficiency 0.5: half of what could hide does.
  const OverlapCost half = overlap({9, 0, 16, true}, 8, w, 0.5, c);
  EXPECT_DOUBLE_EQ(half.hidden_s, 4);
  EXPECT_DOUBLE_EQ(half.exposed_s, 5);
  EXPECT_NEAR(half.interference_s, 4 * 0.112, 1e-12);
  // None: all exposed, nothing charged.
  const OverlapCost none = overlap({9, 0, 16, true}, 8, w, 0, c);
  EXPECT_DOUBLE_EQ(none.hidden_s, 0);
  EXPECT_DOUBLE_EQ(none.exposed_s, 9);
  EXPECT_DOUBLE_EQ(none.interference_s, 0);
}

TEST(Overlap, PublishedMfuByClass) {
  // Llama 3.1 70B on 64 H100 (NeMo 24.09): 14.72 s a step for 128 x 8192 tokens, 4.49e11 model
  // FLOPs a token (3 x the forward's causal matrix FLOPs): 4.49e11 x 1048576 / 14.72 / 64 /
  // 989.4e12 = 0.505.
  const PublishedMfu* r = published_mfu(70.6e9, false, "h100-sxm", DType::bf16);
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(r->mfu, 0.505);
  EXPECT_EQ(published_mfu(70.6e9, false, "h100-sxm", DType::fp8_e4m3)->mfu, 0.338);
  EXPECT_EQ(published_mfu(8.0e9, false, "h100-sxm", DType::bf16)->mfu, 0.528);
  EXPECT_EQ(published_mfu(405e9, false, "h100-sxm", DType::bf16)->mfu, 0.532);
  EXPECT_EQ(published_mfu(70e9, true, "h100-sxm", DType::bf16), nullptr);  // MoE: no entry
  EXPECT_EQ(published_mfu(70e9, false, "b200", DType::bf16), nullptr);
  EXPECT_EQ(published_mfu(0.5e9, false, "h100-sxm", DType::bf16), nullptr);
}

}  // namespace
}  // namespace ridgeline::analysis
