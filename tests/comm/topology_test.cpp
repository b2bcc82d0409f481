// Collectives priced on the machine as wired (docs/collectives.md#topology). Every expected
// value is derived by hand from the catalog's figures in the comment beside it.
#include <gtest/gtest.h>

#include "ridgeline/comm/collective.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::comm {
namespace {

hw::System sys_of(const char* chip, int chips, std::array<int, 3> slice = {}) {
  hw::System s;
  s.chip = io::catalog_chip(chip);
  s.chips = chips;
  s.chips_per_node = s.chip.chips_per_node;
  s.slice = slice;
  return s;
}

// Where a group of `size` ranks `stride` apart sits on `s`.
Placement at(const hw::System& s, double size, double stride = 1) { return place(wiring(s), size, stride); }

// The realistic time of a priced collective: its Cost on the chip, as `op` evaluates it.
double realistic(const hw::System& s, const Priced& p) {
  return ops::estimate(p.cost, s.chip, hw::KernelClass::collective).t_realistic_s;
}

TEST(Topology, PlacementFillsADomainFirst) {
  const auto h = sys_of("h100-sxm", 64);
  EXPECT_EQ(at(h, 16).per_domain, 8);      // 16 contiguous ranks: 8 per node
  EXPECT_EQ(at(h, 4, 2).per_domain, 4);    // 4 ranks 2 apart fit one node of 8
  EXPECT_EQ(at(h, 8, 2).per_domain, 4);    // 8 ranks 2 apart: 4 per node
  EXPECT_EQ(at(h, 8, 8).per_domain, 1);    // data parallel over tp 8: one per node
  // TPU v5p slices are the most cubic shapes, x <= y <= z: 16 chips 2x2x4, 64 chips 4x4x4.
  EXPECT_EQ(sys_of("tpu-v5p", 16).torus_slice(), (std::array<int, 3>{2, 2, 4}));
  EXPECT_EQ(sys_of("tpu-v5p", 64).torus_slice(), (std::array<int, 3>{4, 4, 4}));
  EXPECT_EQ(sys_of("tpu-v5e", 256).torus_slice(), (std::array<int, 3>{16, 16, 1}));
  // 16 chips on a v5p 4x4 slice: both axes full, and 4 is a multiple of 4: both wrap.
  const Placement p = at(sys_of("tpu-v5p", 16, {4, 4, 1}), 16);
  EXPECT_EQ(p.extent, (std::array<int, 3>{4, 4, 1}));
  EXPECT_TRUE(p.wrap[0] && p.wrap[1]);
  EXPECT_EQ(p.per_domain, 16);
  // A group 4 apart on that slice runs along y.
  const Placement y = at(sys_of("tpu-v5p", 16, {4, 4, 1}), 4, 4);
  EXPECT_EQ(y.extent, (std::array<int, 3>{1, 4, 1}));
  // v5e wraps only a full 16-chip axis: a 4-chip axis is a line.
  EXPECT_FALSE(at(sys_of("tpu-v5e", 4, {4, 1, 1}), 4).wrap[0]);
}

TEST(Topology, NvlsSendsEachByteOnceEachWay) {
  // 8 H200 all-reduce 16 GiB (17179869184 B) with NVLS: W = N(P+1)/P = 9/8 N per chip over
  // 450 GB/s at the reduction efficiency 0.765: R = 344.25 GB/s. NVLS's chunk pipeline
  // (docs/collectives.md#nvls-chunks): 16 channels x 8 members = 128 pipelines; in 128 KiB
  // chunks, w = 9/8 x 131072 = 147456 B on the wire; fixed 9 us + 1.5 x (w x 128 / R + 6 us);
  // each pipeline's W / (128 w) = 1024 chunks wait 6 us: 6.144 ms. Efficiencies scale the
  // bytes' time only.
  const auto s = sys_of("h200", 8);
  const double n = 17179869184.0, R = 450e9 * 0.765, w = 147456;
  const Priced p = price(wiring(s), at(s, 8), Collective::all_reduce, n, DType::bf16, Algo::automatic);
  EXPECT_EQ(p.algo, Algo::nvls);
  EXPECT_EQ(p.chunk_bytes, 131072);
  EXPECT_TRUE(p.cost.in_switch);
  EXPECT_DOUBLE_EQ(p.up_bytes, n * 9 / 8);
  const double fixed = 9e-6 + 1.5 * (w * 128 / R + 6e-6);
  EXPECT_NEAR(p.latency_s, fixed, 1e-15);
  EXPECT_NEAR(p.chunk_wait_s, 6.144e-3, 1e-15);
  const double t = n * 9 / 8 / R + fixed + 6.144e-3 + 1.3e-6;  // + the H200's kernel boundary
  EXPECT_NEAR(realistic(s, p), t, 1e-12);
  // Bus bandwidth 2(P-1)/P N / t within 1% of the measured 480.70 GB/s (nccl-tests).
  EXPECT_NEAR(1.75 * n / t / 480.7e9, 1.0, 0.01);
  // The ring: 2·7/8 N at 0.816 (measured 367 GB/s).
  const Priced r = price(wiring(s), at(s, 8), Collective::all_reduce, n, DType::bf16, Algo::ring);
  EXPECT_NEAR(1.75 * n / realistic(s, r) / 367e9, 1.0, 0.01);
}

TEST(Topology, NvlsChunksFollowTheBufferAsNcclsDo) {
  // 8 H200, NVLS in each chunk size c (w = 9/8 c on the wire, R = 344.25 GB/s, 128
  // pipelines): time = 9 us + 1.5 (128 w / R + 6 us) + W / R + 6 us x W / (128 w).
  // 4 MiB (W = 4718592): 16 KiB 28.28 + 13.71 + 12 = 53.99 us; 32 KiB 38.56 + 13.71 + 6 =
  // 58.27: 16 KiB, as NCCL (below 8 MiB). 32 MiB: 32 KiB 38.56 + 109.66 + 48 = 196.2;
  // 64 KiB 59.12 + 109.66 + 24 = 192.8: 64 KiB (NCCL: 32 KiB, 1.8% slower by this model).
  // 1 GiB: 128 KiB (as NCCL).
  const auto s = sys_of("h200", 8);
  const Wiring wr = wiring(s);
  const double R = 450e9 * 0.765;
  auto nvls = [&](double n) { return price(wr, at(s, 8), Collective::all_reduce, n, DType::bf16, Algo::nvls); };
  auto by_hand = [&](double n, double c) {
    const double w = 9.0 / 8 * c, W = 9.0 / 8 * n;
    return 9e-6 + 1.5 * (128 * w / R + 6e-6) + W / R + 6e-6 * W / (128 * w);
  };
  const Priced a = nvls(4194304);
  EXPECT_EQ(a.chunk_bytes, 16384);
  EXPECT_NEAR(a.time_s, by_hand(4194304, 16384), 1e-15);
  EXPECT_NEAR(a.time_s, 53.99e-6, 0.01e-6);
  const Priced b = nvls(33554432);
  EXPECT_EQ(b.chunk_bytes, 65536);
  EXPECT_NEAR(b.time_s, by_hand(33554432, 65536), 1e-15);
  EXPECT_LT(b.time_s, by_hand(33554432, 32768));
  EXPECT_EQ(nvls(1073741824).chunk_bytes, 131072);
  // Against nccl-tests on 8 x H200 (NCCL 2.30.7; bus bandwidth 2(P-1)/P N / t, GB/s), within
  // 6% from 2 MiB to 16 GiB with the 1.3 us kernel boundary (2 MiB: 5.5% slow).
  const std::pair<double, double> measured[] = {{2, 91.48},   {8, 182.03},  {16, 242.45},  {64, 369.82},
                                                {256, 442.27}, {1024, 464.0}, {16384, 480.7}};
  for (const auto& [mib, busbw] : measured) {
    const double n = mib * 1048576;
    const double t = nvls(n).time_s + 1.3e-6;
    EXPECT_NEAR(1.75 * n / t / (busbw * 1e9), 1.0, 0.06) << mib << " MiB";
  }
}

TEST(Topology, RingAcrossNodesSharesTheNodesNics) {
  // 4 nodes x 8 H200, 4 GiB all-reduce: each node sends 2·31/32 N over the network, spread
  // over its 8 NICs of 50 GB/s at 0.9: bus bandwidth 8 x 50 x 0.9 = 360 GB/s (measured
  // 364.9 over EFA). NVLink carries 7/8 of it at 450 x 0.816: not the bound.
  const auto s = sys_of("h200", 32);
  const double n = 4294967296.0, w = 2 * 31.0 / 32 * n;
  const Priced p = price(wiring(s), at(s, 32), Collective::all_reduce, n, DType::bf16, Algo::automatic);
  EXPECT_EQ(p.algo, Algo::ring);
  EXPECT_DOUBLE_EQ(p.net_bytes, w / 8);
  EXPECT_DOUBLE_EQ(p.up_bytes, w * 7 / 8);
  EXPECT_EQ(p.link, s.chip.link_index(hw::LinkScope::network));
  // NCCL's Simple protocol: 8.4 us per call, 6 of the 62 steps cross the network (14 us
  // each), 56 stay on NVLink (3.4 us each): 282.8 us.
  EXPECT_EQ(p.proto, Proto::simple);
  EXPECT_NEAR(p.latency_s, 8.4e-6 + 6 * 14e-6 + 56 * 3.4e-6, 1e-15);
  const double t = w / 8 / 50e9 / 0.9 + p.latency_s + 1.3e-6;
  EXPECT_NEAR(realistic(s, p), t, 1e-12);
  EXPECT_NEAR(w / t / 364.9e9, 1.0, 0.03);  // 355.6 GB/s: -2.6%
  // 1 MB: the tree in NCCL's LL protocol wins: 6.8 us, 2·7 NVLink steps of 0.6 us x 1.8
  // (LL across nodes) and 2·log2(4) network steps of 5 us: 41.92 us, for 2N/8 network bytes
  // at LL's share on a tree, 0.92 / 3.8: 22.9 us more. The ring in LL: 83.28 us + 10.8;
  // the tree in LL128: 65.5 + 6.4.
  const Priced small = price(wiring(s), at(s, 32), Collective::all_reduce, 1e6, DType::bf16, Algo::automatic);
  EXPECT_EQ(small.algo, Algo::tree);
  EXPECT_EQ(small.proto, Proto::ll);
  EXPECT_NEAR(small.latency_s, 6.8e-6 + 14 * 0.6e-6 * 1.8 + 4 * 5e-6, 1e-15);
  EXPECT_DOUBLE_EQ(small.net_bytes, 2e6 / 8 / (0.92 / 3.8));
}

TEST(Topology, DataParallelAcrossNodesHasOneNicPerGroup) {
  // DP 4 over TP 8: the group's members are one per node, so each has its own NIC only:
  // 2·3/4 N over 50 GB/s, all 6 steps on the network.
  const auto s = sys_of("h100-sxm", 32);
  const Priced p = price(wiring(s), at(s, 4, 8), Collective::all_reduce, 1e9, DType::bf16, Algo::ring);
  EXPECT_DOUBLE_EQ(p.net_bytes, 1.5e9);
  EXPECT_DOUBLE_EQ(p.up_bytes, 0);
  // NCCL's Simple ring (LL128 would save 54.4 us of latency and lose 2.9 ms to its 0.92):
  // 8.4 us and 14 us per network step.
  EXPECT_EQ(p.proto, Proto::simple);
  EXPECT_NEAR(p.latency_s, 8.4e-6 + 6 * 14e-6, 1e-15);
}

TEST(Topology, FullMeshUsesOneLinkPerPeer) {
  // MI300X: 7 xGMI links of 64 GB/s, one per peer. A pair uses one: 1 GB all-reduce of 2
  // sends N at 64 GB/s (x 0.75, AMD's usable 48 GB/s).
  const auto s = sys_of("mi300x", 8);
  const Priced pair = price(wiring(s), at(s, 2), Collective::all_reduce, 1e9, DType::bf16, Algo::ring);
  EXPECT_EQ(pair.lanes, 1);
  EXPECT_NEAR(ops::estimate(pair.cost, s.chip).t_comm_s, 1e9 / 64e9 + 2e-6, 1e-12);
  // 8 in a ring: the complete graph K8 holds 3 edge-disjoint Hamiltonian cycles, each
  // used both ways: 6 of the 7 links, 2·7/8 N at 6 x 64 GB/s.
  const Priced ring = price(wiring(s), at(s, 8), Collective::all_reduce, 1e9, DType::bf16, Algo::ring);
  EXPECT_EQ(ring.lanes, 6);
  EXPECT_NEAR(ops::estimate(ring.cost, s.chip).t_comm_s, 1.75e9 / (6 * 64e9) + 14e-6, 1e-12);
  // An all-to-all talks to every peer directly: 7 links for 7/8 N.
  const Priced a2a = price(wiring(s), at(s, 8), Collective::all_to_all, 1e9, DType::bf16, Algo::automatic);
  EXPECT_EQ(a2a.lanes, 7);
  EXPECT_NEAR(ops::estimate(a2a.cost, s.chip).t_comm_s, 0.875e9 / (7 * 64e9) + 1e-6, 1e-12);
}

TEST(Topology, TorusAxesAndWraparound) {
  // v5p 4x4: a ring on each axis, both directions (wraparound): 4 of the 6 ICI links of
  // 90 GB/s. 1 GB all-reduce: 2·15/16 GB at 360 GB/s, 2·(3 + 3) steps of 1 us.
  const auto s = sys_of("tpu-v5p", 16, {4, 4, 1});
  const Priced p = price(wiring(s), at(s, 16), Collective::all_reduce, 1e9, DType::bf16, Algo::automatic);
  EXPECT_EQ(p.lanes, 4);
  EXPECT_NEAR(ops::estimate(p.cost, s.chip).t_comm_s, 1.875e9 / 360e9 + 12e-6, 1e-12);
  // Never the data-centre network inside a slice.
  EXPECT_EQ(p.link, s.chip.link_index(hw::LinkScope::node));
  // v5e, a 4-chip axis without wraparound: one link of 45 GB/s; the all-gather of
  // bf16[2048, 8192] (32 MiB) is 3/4 of it, 3 steps, at the ICI's 0.82: 685.7 us against
  // the 680 us measured (How to Scale Your Model).
  const auto e = sys_of("tpu-v5e", 4, {4, 1, 1});
  const double n = 2048.0 * 8192 * 2;
  const Priced ag = price(wiring(e), at(e, 4), Collective::all_gather, n, DType::bf16, Algo::automatic);
  EXPECT_EQ(ag.lanes, 1);
  const double t = 0.75 * n / 45e9 / 0.82 + 3e-6;
  EXPECT_NEAR(realistic(e, ag), t, 1e-12);
  EXPECT_NEAR(t / 680e-6, 1.0, 0.02);
}

TEST(Topology, RackScaleDomainStaysOnNvlink) {
  // GB200 NVL72: 72 GPUs in one NVLink domain: a 64-GPU all-reduce never touches the NICs.
  const auto s = sys_of("gb200-nvl72", 72);
  const Priced p = price(wiring(s), at(s, 64), Collective::all_reduce, 1e9, DType::bf16, Algo::automatic);
  EXPECT_EQ(p.net_bytes, 0);
  EXPECT_EQ(p.algo, Algo::nvls);
  // The same on B200 nodes of 8 leaves the node.
  const auto b = sys_of("b200", 64);
  EXPECT_GT(price(wiring(b), at(b, 64), Collective::all_reduce, 1e9, DType::bf16, Algo::automatic).net_bytes, 0);
}

TEST(Topology, ExplicitAlgorithmsInsideANodeKeepTheTableFormulas) {
  // Inside a switched domain without a library's protocols the table of docs/collectives.md
  // holds as before.
  auto s = sys_of("h100-sxm", 8);
  s.chip.topology.library = hw::CollectiveLibrary::none;
  for (Algo a : {Algo::ring, Algo::tree, Algo::direct}) {
    const ops::Cost flat = collective_cost({Collective::all_reduce, a, 1e8, 8, DType::bf16, 0});
    const Priced p = price(wiring(s), at(s, 8), Collective::all_reduce, 1e8, DType::bf16, a);
    EXPECT_DOUBLE_EQ(p.cost.link_bytes[0], flat.link_bytes[0]);
    EXPECT_DOUBLE_EQ(p.cost.link_steps[0], flat.link_steps[0]);
    EXPECT_DOUBLE_EQ(p.cost.main_bytes(), flat.main_bytes());
  }
}

TEST(Topology, NcclProtocolsBySize) {
  // 8 H200, all-reduce, NCCL's tuner's costs: ring LL 6.6 + 14 x 0.6 = 15 us at half of
  // 450 x 0.816 = 367.2 GB/s; ring LL128 14 + 14 x 1.9 = 40.6 us at 0.92 of it; ring Simple
  // 8.4 + 14 x 3.4 = 56 us at all of it; NVLS its chunk pipeline, 9/8 N at 450 x 0.765 =
  // 344.25 GB/s (NvlsSendsEachByteOnceEachWay).
  const auto s = sys_of("h200", 8);
  const Wiring w = wiring(s);
  auto at8 = [&](double n, Algo a = Algo::automatic) { return price(w, at(s, 8), Collective::all_reduce, n, DType::bf16, a); };
  // 1 MiB: ring LL 15 + 2·7/8·1048576 / 0.5 / 367.2e9 = 15 + 9.99 = 25.0 us; NVLS in 16 KiB
  // chunks 28.28 + 3.43 + 3 = 34.7; LL128 46.0; Simple 61.0.
  const Priced small = at8(1048576);
  EXPECT_EQ(small.algo, Algo::ring);
  EXPECT_EQ(small.proto, Proto::ll);
  EXPECT_NEAR(small.latency_s, 15e-6, 1e-15);
  EXPECT_DOUBLE_EQ(small.up_bytes, 1.75 * 1048576 / 0.5);
  EXPECT_NEAR(small.time_s, 15e-6 + 1.75 * 1048576 / 0.5 / (450e9 * 0.816), 1e-15);
  // 64 MiB: NVLS in 64 KiB chunks 9 + 1.5 (128 x 73728 / 344.25e9 + 6) = 59.12 us fixed,
  // 9/8·67108864 / 344.25e9 = 219.31 us of bytes, 8 chunks per pipeline waiting 6 us = 48:
  // 326.4 us (16 KiB 439.6, 32 KiB 353.9, 128 KiB 343.6); ring Simple 56 + 319.8 = 375.8.
  const Priced big = at8(67108864);
  EXPECT_EQ(big.algo, Algo::nvls);
  EXPECT_EQ(big.proto, Proto::simple);
  EXPECT_EQ(big.chunk_bytes, 65536);
  EXPECT_NEAR(big.time_s, 9e-6 + 1.5 * (128 * 73728 / (450e9 * 0.765) + 6e-6) + 9.0 / 8 * 67108864 / (450e9 * 0.765) + 48e-6, 1e-15);
  EXPECT_NEAR(big.time_s, 326.4e-6, 0.1e-6);
  // The ring forced at 100 MB: Simple (56 + 476.6 us) beats LL128 (40.6 + 518.0).
  const Priced ring = at8(1e8, Algo::ring);
  EXPECT_EQ(ring.proto, Proto::simple);
  EXPECT_NEAR(ring.latency_s, 56e-6, 1e-15);
  // Its Cost carries the fixed costs as steps of NVLink's 1 us: 56.
  EXPECT_NEAR(ring.cost.link_steps[0], 56, 1e-9);
  // The engines' one-shot kernels (direct) keep the link's latency: 2 steps of 1 us.
  EXPECT_NEAR(at8(16384, Algo::direct).latency_s, 2e-6, 1e-15);
  // Every option options() lists, priced alone, is what price weighs: the fastest is chosen.
  Option opts[kMaxOptions];
  const int n = options(w, at(s, 8), Collective::all_reduce, Algo::automatic, opts);
  EXPECT_EQ(n, 7);  // ring in three protocols, NVLS in four chunk sizes
  for (double bytes : {16384.0, 1048576.0, 67108864.0}) {
    double best = 1e300;
    for (int i = 0; i < n; ++i) {
      best = std::min(best, price(w, at(s, 8), Collective::all_reduce, bytes, DType::bf16, opts[i]).time_s);
    }
    EXPECT_EQ(at8(bytes).time_s, best);
  }
}

}  // namespace
}  // namespace ridgeline::comm
