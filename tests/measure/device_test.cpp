// measure_device's sweep on a device whose rates are set by hand (the Device interface a
// GPU back-end would implement): which points it measures, the plateaus, the witness and the
// chip it makes, with no timing noise.
#include <gtest/gtest.h>

#include <cmath>

#include "ridgeline/measure/host.hpp"

namespace ridgeline::measure {
namespace {

constexpr double KiB = 1024, MiB = 1024 * 1024;

// Two workers; L1 32 KiB and L2 1 MiB per worker, L3 8 MiB shared by both. Per worker, a
// read moves 400 / 200 / 100 / 20 GB/s in L1 / L2 / L3 / past it (by the working set per
// worker), copy 0.9x that, triad 0.8x, write 0.5x; non-temporal write 25 and copy 27 GB/s.
// Rates scale with the workers. Peaks: fp64 50, fp32 100 GFLOP/s per worker.
class FakeDevice final : public Device {
 public:
  FakeDevice() {
    host_.model = "fake";
    host_.cpus = 2;
    host_.caches = {{1, 32 * KiB, 1, {}}, {2, 1 * MiB, 1, {}}, {3, 8 * MiB, 2, {}}};
  }
  const HostInfo& info() const override { return host_; }
  std::vector<PeakKernel> peak_kernels() const override { return {{DType::fp64, "fake fma"}, {DType::fp32, "fake fma"}}; }
  double peak_rate(DType dtype, int workers, double) override { return (dtype == DType::fp64 ? 50e9 : 100e9) * workers; }
  Sample stream_rate(Stream kernel, double bytes, int workers, int reps) override {
    ++calls;
    if (reps != 3) ++wrong_reps;
    const double read = bytes <= 32 * KiB ? 400e9 : bytes <= MiB ? 200e9 : bytes <= 8 * MiB ? 100e9 : 20e9;
    double r = read;
    switch (kernel) {
      case Stream::read: break;
      case Stream::copy: r = 0.9 * read; break;
      case Stream::triad: r = 0.8 * read; break;
      case Stream::write: r = 0.5 * read; break;
      case Stream::write_nt: r = 25e9, ++nt_calls; break;
      case Stream::copy_nt: r = 27e9, ++nt_calls; break;
    }
    return {r * workers, 0.01, reps};
  }
  bool stores_allocate() const override { return true; }
  int calls = 0, nt_calls = 0, wrong_reps = 0;

 private:
  HostInfo host_;
};

TEST(MeasureDevice, SweepPlateausWitnessAndChipFromTheDevice) {
  FakeDevice d;
  MeasureConfig cfg;  // quick: 3 repetitions, doubling steps
  const MeasureResult r = measure_device(d, cfg);
  EXPECT_EQ(r.threads, 2);
  EXPECT_TRUE(r.write_allocate);
  // Peaks: one worker and both.
  ASSERT_EQ(r.peaks.size(), 2u);
  EXPECT_DOUBLE_EQ(r.peaks[0].one_core.value, 50e9);
  EXPECT_DOUBLE_EQ(r.peaks[0].all_cores.value, 100e9);
  EXPECT_EQ(r.peaks[1].isa, "fake fma");
  // One worker: 16 KiB doubling to max(4 x 8 MiB, 64 MiB) = 64 MiB: 2^4 .. 2^16 KiB, 13
  // points; non-temporal kernels from half the last cache, 4 MiB: 4, 8, 16, 32, 64 MiB.
  ASSERT_EQ(r.sweep.size(), 13u);
  EXPECT_DOUBLE_EQ(r.sweep.front().working_set_bytes, 16 * KiB);
  EXPECT_DOUBLE_EQ(r.sweep.back().working_set_bytes, 64 * MiB);
  int with_nt = 0;
  for (const auto& b : r.sweep) with_nt += b.write_nt.repetitions > 0;
  EXPECT_EQ(with_nt, 5);
  // Plateaus (read): L1 over [0, 24 KiB] = 16 KiB: 400; L2 over [48 KiB, 768 KiB] = 64 ..
  // 512 KiB: 200; L3 over [1.5, 6] MiB = 2, 4 MiB: 100; memory from 16 MiB: 20 GB/s.
  ASSERT_EQ(r.plateaus.size(), 4u);
  EXPECT_DOUBLE_EQ(r.plateaus[0].read.value, 400e9);
  EXPECT_EQ(r.plateaus[1].points, 4);
  EXPECT_DOUBLE_EQ(r.plateaus[1].read.value, 200e9);
  EXPECT_DOUBLE_EQ(r.plateaus[2].read.value, 100e9);
  EXPECT_DOUBLE_EQ(r.plateaus[3].read.value, 20e9);
  // Both workers: half each worker's share of each cache (16 KiB, 512 KiB, 8 MiB / 2 / 2 =
  // 2 MiB) and max(2 x 8 MiB, 64 MiB) = 64 MiB past them, non-temporal there only.
  ASSERT_EQ(r.sweep_all.size(), 4u);
  EXPECT_DOUBLE_EQ(r.sweep_all[0].working_set_bytes, 16 * KiB);
  EXPECT_DOUBLE_EQ(r.sweep_all[1].working_set_bytes, 512 * KiB);
  EXPECT_DOUBLE_EQ(r.sweep_all[2].working_set_bytes, 2 * MiB);
  EXPECT_EQ(r.sweep_all[2].cache, 2);
  EXPECT_DOUBLE_EQ(r.sweep_all[3].working_set_bytes, 64 * MiB);
  EXPECT_EQ(r.sweep_all[3].cache, -1);
  EXPECT_DOUBLE_EQ(r.sweep_all[3].read.value, 40e9);
  // Calls: 13 x 4 + 5 x 2 one-worker, 4 x 3 + 1 x 2 both; every one with 3 repetitions.
  EXPECT_EQ(d.calls, 13 * 4 + 5 * 2 + 4 * 3 + 2);
  EXPECT_EQ(d.nt_calls, 5 * 2 + 2);
  EXPECT_EQ(d.wrong_reps, 0);
  // Witness past the caches on both: 2 x (copy_nt / copy - 1) = 2 x (54 / 36 - 1) = 1.
  EXPECT_NEAR(r.write_allocate_witness, 1.0, 1e-12);
  // The chip (stores allocate, counted past L1), all rates x2 workers:
  //   DRAM: read 40, copy 36 x 1.5 = 54, triad 32 x 4/3 = 42.7, nt write 50, nt copy 54 -> 54
  //   L3: read 200, copy 180 x 1.5 = 270, triad 160 x 4/3 = 213.3 -> 270; 1 instance: 8 MiB
  //   L2: read 400, copy 360 x 1.5 = 540 -> 540; 2 instances: 2 MiB
  //   L1: read 800, copy 720, triad 640, no read for ownership -> 800; 2 x 32 KiB
  const hw::ChipSpec c = to_chip(r);
  ASSERT_EQ(c.memory.size(), 4u);
  EXPECT_NEAR(c.memory[0].bandwidth_Bps, 54e9, 1e-3);
  EXPECT_EQ(c.memory[1].name, "L3");
  EXPECT_NEAR(c.memory[1].bandwidth_Bps, 270e9, 1e-3);
  EXPECT_DOUBLE_EQ(c.memory[1].capacity_bytes, 8 * MiB);
  EXPECT_NEAR(c.memory[2].bandwidth_Bps, 540e9, 1e-3);
  EXPECT_DOUBLE_EQ(c.memory[2].capacity_bytes, 2 * MiB);
  EXPECT_NEAR(c.memory[3].bandwidth_Bps, 800e9, 1e-3);
  EXPECT_DOUBLE_EQ(c.memory[3].capacity_bytes, 64 * KiB);
  EXPECT_DOUBLE_EQ(c.peak(hw::Unit::matrix, DType::fp32), 200e9);
}

}  // namespace
}  // namespace ridgeline::measure
