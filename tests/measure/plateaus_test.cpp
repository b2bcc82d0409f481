// Finding each memory level's plateau and edge in a one-core bandwidth sweep.
#include <gtest/gtest.h>

#include <cmath>

#include "ridgeline/measure/host.hpp"

namespace ridgeline::measure {
namespace {

BandwidthPoint point(double ws, double read) {
  BandwidthPoint b;
  b.working_set_bytes = ws;
  b.read = {read, 0, 3};
  return b;
}

// A staircase: 16 KiB .. 64 MiB doubling; 200 GB/s up to 32 KiB, 100 up to 1 MiB, 50 up to
// 32 MiB, 20 past it. Caches: L1 48 KiB, L2 1 MiB, L3 32 MiB shared by 2 (one core can
// still fill all of it).
TEST(Plateaus, Staircase) {
  std::vector<BandwidthPoint> sweep;
  for (double ws = 16 * 1024.0; ws <= 64 * 1048576.0; ws *= 2) {
    sweep.push_back(point(ws, ws <= 32 * 1024 ? 200e9 : ws <= 1048576 ? 100e9 : ws <= 32 * 1048576.0 ? 50e9 : 20e9));
  }
  const std::vector<CacheLevel> caches = {{1, 48 * 1024.0, 1, {}}, {2, 1048576.0, 1, {}}, {3, 32 * 1048576.0, 2, {}}};
  const auto p = find_plateaus(sweep, caches);
  ASSERT_EQ(p.size(), 4u);
  // L1: points in [0, 0.75 × 48 KiB = 36 KiB]: 16 and 32 KiB.
  EXPECT_EQ(p[0].cache, 0);
  EXPECT_EQ(p[0].from_bytes, 16 * 1024.0);
  EXPECT_EQ(p[0].to_bytes, 32 * 1024.0);
  EXPECT_EQ(p[0].points, 2);
  EXPECT_EQ(p[0].read.value, 200e9);
  // L2: [1.5 × 48 KiB = 72 KiB, 768 KiB]: 128, 256, 512 KiB.
  EXPECT_EQ(p[1].from_bytes, 128 * 1024.0);
  EXPECT_EQ(p[1].to_bytes, 512 * 1024.0);
  EXPECT_EQ(p[1].read.value, 100e9);
  // L3: [1.5 MiB, 24 MiB]: 2 .. 16 MiB, four points.
  EXPECT_EQ(p[2].points, 4);
  EXPECT_EQ(p[2].read.value, 50e9);
  // Main memory: from 2 × 32 MiB: the 64 MiB point.
  EXPECT_EQ(p[3].cache, -1);
  EXPECT_EQ(p[3].from_bytes, 64 * 1048576.0);
  EXPECT_EQ(p[3].read.value, 20e9);
  // Edges at the geometric means. L1 -> L2: sqrt(200 × 100) = 141.42 crossed between
  // 32 KiB (200) and 64 KiB (100): log(200/141.42) / log(200/100) = 1/2 of the doubling,
  // 32 KiB × 2^0.5 = 46341 bytes. L2 -> L3 likewise: 1 MiB × 2^0.5. L3 -> DRAM: sqrt(50 ×
  // 20) = 31.62 between 32 MiB (50) and 64 MiB (20): f = log(50/31.62) / log(50/20) = 1/2
  // again (the geometric mean is halfway in log), 32 MiB × 2^0.5.
  EXPECT_NEAR(p[0].edge_bytes, 32 * 1024.0 * std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(p[1].edge_bytes, 1048576.0 * std::sqrt(2.0), 1e-3);
  EXPECT_NEAR(p[2].edge_bytes, 32 * 1048576.0 * std::sqrt(2.0), 1e-2);
  EXPECT_EQ(p[3].edge_bytes, 0);  // the last level has no edge
}

// A sweep with no fall between two levels (the data say the cache boundary is invisible)
// gets no edge; a level without points inside it gets no plateau.
TEST(Plateaus, FlatAndMissing) {
  std::vector<BandwidthPoint> sweep = {point(16 * 1024.0, 100e9), point(64 * 1024.0, 100e9), point(256 * 1024.0, 100e9)};
  const std::vector<CacheLevel> caches = {{1, 32 * 1024.0, 1, {}}, {2, 1048576.0, 1, {}}};
  const auto p = find_plateaus(sweep, caches);
  ASSERT_EQ(p.size(), 2u);  // L1 and L2; nothing reaches main memory (2 MiB and up)
  EXPECT_EQ(p[0].cache, 0);
  EXPECT_EQ(p[1].cache, 1);
  EXPECT_EQ(p[1].points, 2);  // 64 and 256 KiB in [48 KiB, 768 KiB]
  EXPECT_EQ(p[0].edge_bytes, 0);
  EXPECT_EQ(p[1].edge_bytes, 0);
}

}  // namespace
}  // namespace ridgeline::measure

namespace ridgeline::measure {
namespace {

// The chip's roofs: the best all-core stream at each level, counted as traffic. With stores
// that allocate, copy moves 3 bytes per 2 it copies and triad 4 per 3, except in L1.
// Rates in GB/s, by hand:
//   L1 (cache 0): read 500, copy 700, triad 600 -> 700 (no read for ownership in L1)
//   L2 (cache 1): read 400, copy 350 x 1.5 = 525, triad 360 x 4/3 = 480 -> 525
//   DRAM:         read 30, copy 30 x 1.5 = 45, triad 42 x 4/3 = 56, nt write 40, nt copy 50 -> 56
// Without write-allocate: L1 700, L2 400, DRAM 50 (the non-temporal copy). A host that
// reports no L1 (its first cache is L2) gets the factor on that first cache: 525.
TEST(ToChip, RoofsCountTheReadForOwnershipPastL1) {
  MeasureResult r;
  r.host.model = "test CPU";
  r.host.cpus = 2;
  r.host.caches = {{1, 48 * 1024.0, 1, {}}, {2, 1048576.0, 1, {}}};
  auto pt = [](int cache, double read, double copy, double triad, double nt_write, double nt_copy) {
    BandwidthPoint b;
    b.cache = cache;
    b.read = {read * 1e9, 0, 3};
    b.copy = {copy * 1e9, 0, 3};
    b.triad = {triad * 1e9, 0, 3};
    if (nt_write > 0) b.write_nt = {nt_write * 1e9, 0, 3}, b.copy_nt = {nt_copy * 1e9, 0, 3};
    return b;
  };
  r.sweep_all = {pt(0, 500, 700, 600, 0, 0), pt(1, 400, 350, 360, 0, 0), pt(-1, 30, 30, 42, 40, 50)};
  r.write_allocate = true;
  hw::ChipSpec c = to_chip(r);
  ASSERT_EQ(c.memory.size(), 3u);
  EXPECT_TRUE(c.write_allocate);
  EXPECT_EQ(c.memory[0].name, "DRAM");
  EXPECT_NEAR(c.memory[0].bandwidth_Bps, 56e9, 1e-3);
  EXPECT_EQ(c.memory[1].name, "L2");
  EXPECT_NEAR(c.memory[1].bandwidth_Bps, 525e9, 1e-3);
  EXPECT_EQ(c.memory[2].name, "L1");
  EXPECT_NEAR(c.memory[2].bandwidth_Bps, 700e9, 1e-3);
  r.write_allocate = false;
  c = to_chip(r);
  EXPECT_FALSE(c.write_allocate);
  EXPECT_NEAR(c.memory[0].bandwidth_Bps, 50e9, 1e-3);
  EXPECT_NEAR(c.memory[1].bandwidth_Bps, 400e9, 1e-3);
  EXPECT_NEAR(c.memory[2].bandwidth_Bps, 700e9, 1e-3);
  r.write_allocate = true;
  r.host.caches = {{2, 1048576.0, 1, {}}, {3, 32 * 1048576.0, 2, {}}};
  r.sweep_all = {pt(0, 400, 350, 360, 0, 0), pt(-1, 30, 30, 42, 40, 50)};
  c = to_chip(r);
  ASSERT_EQ(c.memory.size(), 2u);
  EXPECT_EQ(c.memory[1].name, "L2");
  EXPECT_NEAR(c.memory[1].bandwidth_Bps, 525e9, 1e-3);
}

// A cache level's capacity is what the measuring threads had. A host of 8 CPUs, 4 cores
// with 2 SMT siblings each numbered (i, i + 4) as Linux does on Intel: L2 1 MiB per core
// (CPUs 0 and 4 share instance 0, ...), L3 32 MiB per 4 cores... here two L3 instances of
// 2 cores each (CPUs 0, 1, 4, 5 on instance 0; 2, 3, 6, 7 on instance 1).
//   threads 1: L2 1 instance, L3 1          -> 1 MiB, 32 MiB
//   threads 2 (CPUs 0, 1): L2 2, L3 1       -> 2 MiB, 32 MiB
//   threads 4 (CPUs 0-3): L2 4, L3 2        -> 4 MiB, 64 MiB
//   threads 8: L2 4 (siblings share), L3 2  -> 4 MiB, 64 MiB
// Without the map, threads / shared_cpus rounded up: threads 3 -> L2 ceil(3/2) = 2, L3
// ceil(3/4) = 1.
TEST(ToChip, CapacityIsWhatTheMeasuringThreadsHad) {
  const CacheLevel l2{2, 1048576.0, 2, {0, 1, 2, 3, 0, 1, 2, 3}};
  const CacheLevel l3{3, 32 * 1048576.0, 4, {0, 0, 1, 1, 0, 0, 1, 1}};
  EXPECT_EQ(instances_used(l2, 1), 1);
  EXPECT_EQ(instances_used(l3, 1), 1);
  EXPECT_EQ(instances_used(l2, 2), 2);
  EXPECT_EQ(instances_used(l3, 2), 1);
  EXPECT_EQ(instances_used(l2, 4), 4);
  EXPECT_EQ(instances_used(l3, 4), 2);
  EXPECT_EQ(instances_used(l2, 8), 4);
  EXPECT_EQ(instances_used(l3, 8), 2);
  EXPECT_EQ(instances_used(CacheLevel{2, 1048576.0, 2, {}}, 3), 2);
  EXPECT_EQ(instances_used(CacheLevel{3, 32 * 1048576.0, 4, {}}, 3), 1);

  MeasureResult r;
  r.host.cpus = 8;
  r.host.caches = {l2, l3};
  BandwidthPoint b;
  b.read = {100e9, 0, 3};
  b.cache = 0;
  BandwidthPoint c3 = b;
  c3.cache = 1;
  BandwidthPoint mem = b;
  mem.cache = -1;
  r.sweep_all = {b, c3, mem};
  r.threads = 2;
  hw::ChipSpec chip = to_chip(r);
  ASSERT_EQ(chip.memory.size(), 3u);
  EXPECT_EQ(chip.memory[1].name, "L3");
  EXPECT_DOUBLE_EQ(chip.memory[1].capacity_bytes, 32 * 1048576.0);
  EXPECT_EQ(chip.memory[2].name, "L2");
  EXPECT_DOUBLE_EQ(chip.memory[2].capacity_bytes, 2 * 1048576.0);
  r.threads = 0;  // unset: all 8 CPUs
  chip = to_chip(r);
  EXPECT_DOUBLE_EQ(chip.memory[1].capacity_bytes, 64 * 1048576.0);
  EXPECT_DOUBLE_EQ(chip.memory[2].capacity_bytes, 4 * 1048576.0);
}

}  // namespace
}  // namespace ridgeline::measure
