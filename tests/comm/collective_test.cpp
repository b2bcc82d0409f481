#include "ridgeline/comm/collective.hpp"

#include <gtest/gtest.h>

namespace ridgeline::comm {
namespace {

CollectiveShape shape(Collective k, Algo a, double chips) {
  return CollectiveShape{.kind = k, .algo = a, .bytes = 1e6, .chips = chips, .dtype = DType::bf16, .link = 0};
}

TEST(Collective, RingAllReduce) {
  // 2(P-1)/P * N on the wire, 2(P-1) steps (nccl-tests' bus-bandwidth factor).
  auto s = shape(Collective::all_reduce, Algo::ring, 4);
  EXPECT_DOUBLE_EQ(wire_bytes(s), 1.5e6);
  EXPECT_DOUBLE_EQ(latency_steps(s), 6);
  EXPECT_DOUBLE_EQ(bus_factor(s), 1.5);
  ops::Cost c = collective_cost(s);
  EXPECT_DOUBLE_EQ(c.link_bytes[0], 1.5e6);
  // Memory: read what is sent, write what is received (2 x 1.5e6), read the local
  // operand of each reduction (3/4 x 1e6).
  EXPECT_DOUBLE_EQ(c.main_bytes(), 3.75e6);
  // (P-1)/P * N / 2 bytes = 375000 additions, in fp32.
  EXPECT_DOUBLE_EQ(c.flops(hw::Unit::vector, DType::fp32), 375000);
}

TEST(Collective, GatherScatterAllToAllSendRecv) {
  EXPECT_DOUBLE_EQ(wire_bytes(shape(Collective::all_gather, Algo::ring, 4)), 0.75e6);
  EXPECT_DOUBLE_EQ(latency_steps(shape(Collective::all_gather, Algo::ring, 4)), 3);
  EXPECT_DOUBLE_EQ(wire_bytes(shape(Collective::reduce_scatter, Algo::ring, 4)), 0.75e6);
  EXPECT_DOUBLE_EQ(wire_bytes(shape(Collective::all_to_all, Algo::direct, 8)), 7.0 / 8 * 1e6);
  EXPECT_DOUBLE_EQ(latency_steps(shape(Collective::all_to_all, Algo::direct, 8)), 1);
  // A ring all-to-all forwards chunk d over d hops: N/P * P(P-1)/2 = 3.5 N for P = 8.
  EXPECT_DOUBLE_EQ(wire_bytes(shape(Collective::all_to_all, Algo::ring, 8)), 3.5e6);
  EXPECT_DOUBLE_EQ(wire_bytes(shape(Collective::send_recv, Algo::ring, 2)), 1e6);
}

TEST(Collective, AlgorithmsTradeLatencySteps) {
  // Same bandwidth term, fewer latency steps: tree 2 log2 P, direct 2.
  auto tree = shape(Collective::all_reduce, Algo::tree, 8);
  auto direct = shape(Collective::all_reduce, Algo::direct, 8);
  EXPECT_DOUBLE_EQ(latency_steps(tree), 6);
  EXPECT_DOUBLE_EQ(latency_steps(direct), 2);
  EXPECT_DOUBLE_EQ(wire_bytes(tree), wire_bytes(shape(Collective::all_reduce, Algo::ring, 8)));
}

TEST(Collective, OneChipCostsNothing) {
  ops::Cost c = collective_cost(shape(Collective::all_reduce, Algo::ring, 1));
  EXPECT_EQ(c.total_link_bytes(), 0);
  EXPECT_EQ(c.main_bytes(), 0);
}

}  // namespace
}  // namespace ridgeline::comm
