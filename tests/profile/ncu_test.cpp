// Profile import: the shared Nsight Compute fixture, synthetic pages, the CSV reader.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/csv.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/profile_file.hpp"
#include "ridgeline/profile/analysis.hpp"
#include "ridgeline/report/profile.hpp"

namespace ridgeline {
namespace {

const std::string kFixture = std::string(RIDGELINE_SOURCE_DIR) + "/tests/fixtures/ncu/copy_blocked.csv";

TEST(Csv, QuotesCommasAndLineEnds) {
  auto rows = io::parse_csv("a,\"b,c\",\"say \"\"hi\"\"\"\r\n1,2,3\n\n\"multi\nline\",x,\n", "t.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][1], "b,c");
  EXPECT_EQ(rows[0][2], "say \"hi\"");
  EXPECT_EQ(rows[1][2], "3");
  EXPECT_EQ(rows[2][0], "multi\nline");
  EXPECT_EQ(rows[2][2], "");
  EXPECT_THROW(io::parse_csv("a,\"never closed\n", "t.csv"), InputError);
}

TEST(Ncu, SharedFixtureOnT4) {
  profile::Profile p = io::load_profile(kFixture, "");
  EXPECT_EQ(p.format, "ncu-details");
  ASSERT_EQ(p.launches.size(), 1u);
  const auto& k = p.launches[0];
  // "Duration","ns","21,058,944"; "Memory Throughput","byte/s","196,456,177,859.63".
  EXPECT_DOUBLE_EQ(k.duration_s, 21058944e-9);
  EXPECT_DOUBLE_EQ(k.dram_bytes, 196456177859.63 * 21058944e-9);  // 4.137 GB moved
  EXPECT_FALSE(k.has_flops);  // a copy kernel profiled without the SASS FLOP counters
  EXPECT_FALSE(p.warnings.empty());
  // On a T4 (320 GB/s): 196.46 GB/s is 61.4% of the roof; Nsight Compute itself reports
  // "DRAM Throughput" 61.84% against the 317.7 GB/s it measures as the peak.
  profile::ProfileAnalysis a = profile::analyze(p, io::catalog_chip("t4"), DType::fp16);
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_NEAR(a.kernels[0].fraction_of_roof, 196456177859.63 / 320e9, 1e-12);
  EXPECT_NEAR(a.kernels[0].fraction_of_roof, 0.6184, 0.005);
  EXPECT_EQ(a.kernels[0].bound, ops::Bound::memory);
  // At the roof the 4.137 GB take 12.93 ms: 8.13 ms to gain.
  EXPECT_NEAR(a.kernels[0].gap_s, 21058944e-9 - 196456177859.63 * 21058944e-9 / 320e9, 1e-15);
  EXPECT_FALSE(a.kernels[0].above_roof);
}

TEST(Ncu, RawPageWithCountersUnitsAndToolLines) {
  // Two launches of one GEMM-like kernel: FFMA x2, FADD x1; bytes in Kbyte; time in usecond.
  const char* raw =
      "==PROF== Connected to process 123\n"
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes.sum\","
      "\"sm__sass_thread_inst_executed_op_ffma_pred_on.sum\",\"sm__sass_thread_inst_executed_op_fadd_pred_on.sum\"\n"
      "\"\",\"\",\"usecond\",\"Kbyte\",\"inst\",\"inst\"\n"
      "\"0\",\"sgemm_128x64, tn\",\"10.5\",\"1,000\",\"2,000,000\",\"1000\"\n"
      "==PROF== Disconnected\n"
      "\"1\",\"sgemm_128x64, tn\",\"9.5\",\"1,000\",\"2,000,000\",\"1000\"\n";
  profile::Profile p = io::parse_ncu_csv(raw, "raw.csv");
  EXPECT_EQ(p.format, "ncu-raw");
  ASSERT_EQ(p.launches.size(), 2u);
  EXPECT_EQ(p.launches[0].name, "sgemm_128x64, tn");  // the comma inside the quotes stays
  EXPECT_DOUBLE_EQ(p.launches[0].duration_s, 10.5e-6);
  EXPECT_DOUBLE_EQ(p.launches[0].dram_bytes, 1e6);
  EXPECT_DOUBLE_EQ(p.launches[0].flops_fp32, 2 * 2e6 + 1000);
  // Aggregated on an A100 (19.5 TFLOP/s fp32, 1555 GB/s): 2 calls, 20 us, 8.002 MFLOP, 2 MB.
  profile::ProfileAnalysis a = profile::analyze(p, io::catalog_chip("a100-40gb"), DType::bf16);
  ASSERT_EQ(a.kernels.size(), 1u);
  const auto& k = a.kernels[0];
  EXPECT_EQ(k.count, 2);
  EXPECT_DOUBLE_EQ(k.time_s, 20e-6);
  EXPECT_DOUBLE_EQ(k.flops, 8002000);
  EXPECT_DOUBLE_EQ(k.intensity_flops_per_byte, 8002000.0 / 2e6);
  // Roof at 4.0 FLOP/B: min(19.5e12, 1555e9 x 4.001) = 6.222 TFLOP/s; attained 0.4001 TFLOP/s.
  EXPECT_NEAR(k.fraction_of_roof, (8002000.0 / 20e-6) / (1555e9 * 4.001), 1e-9);
  EXPECT_EQ(k.bound, ops::Bound::memory);
}

TEST(Ncu, DamagedKeyMetricsAreErrorsNotZeros) {
  // A damaged page (found by fuzz_profile and an adversarial run): a duration or a byte
  // count that is negative, zero, not a number, too large to be a time, or in a unit
  // Nsight Compute does not print is an error naming the kernel and the metric, as the CSV
  // importer's are; a good page still reads.
  auto page = [](const std::string& dur, const std::string& unit, const std::string& bytes) {
    return "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes.sum\"\n\"\",\"\",\"" + unit + "\",\"Mbyte\"\n"
           "\"0\",\"k\",\"" + dur + "\",\"" + bytes + "\"\n";
  };
  auto error = [](const std::string& raw) {
    try {
      io::parse_ncu_csv(raw, "neg.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (const char* dur : {"0", "-5", "nan", "fast", "1e300", "1e400"}) {
    const std::string e = error(page(dur, "usecond", "1"));
    EXPECT_NE(e.find("neg.csv: kernel 'k'"), std::string::npos) << dur << ": " << e;
  }
  EXPECT_NE(error(page("10", "parsec", "1")).find("unit 'parsec'"), std::string::npos);
  EXPECT_NE(error(page("10", "usecond", "-196")).find("dram__bytes.sum"), std::string::npos);
  profile::Profile p = io::parse_ncu_csv(page("10", "usecond", "1"), "ok.csv");
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(p.launches[0].duration_s, 10e-6);
  EXPECT_DOUBLE_EQ(p.launches[0].dram_bytes, 1e6);
}

TEST(TorchTrace, DamagedTimesAreErrorsNotDropped) {
  // A kernel event with a negative, non-numeric or absurd duration, or a timestamp of 1e300,
  // is an error naming the event; one without "dur" is an instant, skipped as before.
  for (const char* ev : {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": -3})",
                         R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": "abc"})",
                         R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1e300})",
                         R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e300, "dur": 2, "args": {"device": 0}})"}) {
    try {
      io::parse_torch_trace(std::string("[") + ev + "]", "d.json");
      ADD_FAILURE() << ev;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("d.json: event 1 (kernel 'k')"), std::string::npos) << e.what();
    }
  }
  const profile::Profile ok = io::parse_torch_trace(
      R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 0}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 2}])", "ok.json");
  ASSERT_EQ(ok.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(ok.launches[0].duration_s, 2e-6);
  // Only events without "dur": said so, rather than "no kernel events".
  try {
    io::parse_torch_trace(R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 5}])", "nodur.json");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its 1 GPU kernel events have no \"dur\""), std::string::npos) << e.what();
  }
}

TEST(TorchTrace, ZeroDurationsAreUnderTheResolution) {
  // A trace in whole microseconds gives "dur": 0 to what ran under one (deepseek-ai/profile-data's
  // train.json: seven 'Memset (Device)' events): a fill of no time, and a kernel counted and not
  // placed (no rate), never an error. Here a kernel of 0, one of 3 us and a fill of 0.
  const profile::Profile p = io::parse_torch_trace(
      R"j({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "tiny", "ts": 0, "dur": 0},
                          {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 3},
                          {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 4, "dur": 0}]})j",
      "z.json");
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_EQ(p.launches[0].name, "k");
  EXPECT_DOUBLE_EQ(p.launches[0].duration_s, 3e-6);
  EXPECT_EQ(p.memset.count, 1.0);
  EXPECT_EQ(p.memset.time_s, 0.0);
  bool said = false;
  for (const std::string& w : p.warnings) said = said || w.find("kernel events of 0 us (shorter than the trace's resolution): 1,") != std::string::npos;
  EXPECT_TRUE(said);
  // Only such kernels (and one without "dur"): nothing to place, and the error counts both.
  try {
    io::parse_torch_trace(R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 0},
                              {"ph": "X", "cat": "kernel", "name": "k", "ts": 1}])", "z0.json");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("z0.json: no GPU kernel event to place: 1 last 0 us, 1 have no \"dur\""), std::string::npos)
        << e.what();
  }
}

TEST(ProfileAnalysis, TheRoofIncludesTheKernelBoundary) {
  // A 17.6 us GEMM of 2 MFLOP and 100 kB on an H100 (bf16 989.4 TFLOP/s, 3.35 TB/s, a 1.3 us
  // kernel boundary): at the roof it would take 1.3 us + max(2.02 ns, 29.85 ns) = 1.32985 us,
  // so reaching it saves 16.27015 us, not the 17.57 us a roof without the boundary claims.
  profile::Profile p;
  profile::KernelLaunch k;
  k.name = "gemm";
  k.duration_s = 17.6e-6;
  k.flops_tensor = 2e6;
  k.dram_bytes = 1e5;
  k.has_flops = k.has_bytes = true;
  p.launches.push_back(k);
  const profile::ProfileAnalysis a = profile::analyze(p, io::catalog_chip("h100-sxm"), DType::bf16);
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(a.kernels[0].t_floor_s, 1.3e-6);
  EXPECT_NEAR(a.kernels[0].t_at_roof_s, 1.3e-6 + 1e5 / 3.35e12, 1e-15);
  EXPECT_NEAR(a.kernels[0].gap_s, 17.6e-6 - 1.3e-6 - 1e5 / 3.35e12, 1e-15);
}

TEST(ProfileCsv, LaunchesAreBounded) {
  // Every importer keeps each launch: past the cap (2 million; 2 here) it stops with an error
  // naming the file instead of growing until the allocation fails.
  EXPECT_NO_THROW(io::check_launch_capacity(io::kMaxLaunches - 1, "t.json"));
  EXPECT_THROW(io::check_launch_capacity(io::kMaxLaunches, "t.json"), InputError);
  const std::string three = "name,duration,flops,bytes\na,1e-3,1,1\nb,1e-3,1,1\nc,1e-3,1,1\n";
  EXPECT_EQ(io::parse_generic_csv(three, "g.csv", 3).launches.size(), 3u);
  try {
    io::parse_generic_csv(three, "g.csv", 2);
    ADD_FAILURE() << "no cap";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("g.csv: more than 2 kernel launches"), std::string::npos) << e.what();
  }
}

TEST(ProfileCsv, DurationsCountsAndAmountsAreChecked) {
  // The CSV importer: a zero duration (attained rate infinite, gap negative), a count of 0 or
  // 2.5, an infinite FLOP count are errors naming the line.
  for (const char* row : {"k,0,1e12,1e6,1", "k,1e-3,1e12,1e6,0", "k,1e-3,1e12,1e6,2.5", "k,1e-3,1e400,1e6,1", "k,2e6,1,1,1"}) {
    try {
      io::parse_generic_csv(std::string("name,duration,flops,bytes,count\n") + row + "\n", "g.csv");
      ADD_FAILURE() << row;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("g.csv: line 2"), std::string::npos) << e.what();
    }
  }
}

TEST(Ncu, BadFiles) {
  EXPECT_THROW(io::parse_ncu_csv("", "e.csv"), InputError);
  EXPECT_THROW(io::parse_ncu_csv("a,b,c\n1,2,3\n", "e.csv"), InputError);                      // no Kernel Name
  EXPECT_THROW(io::parse_ncu_csv("\"Kernel Name\",\"x\"\n", "e.csv"), InputError);              // no units row
  EXPECT_THROW(io::parse_generic_csv("name,duration,flops\nk,1,2\n", "g.csv"), InputError);     // no bytes
  EXPECT_THROW(io::parse_generic_csv("name,duration,flops,bytes\nk,-1,2,3\n", "g.csv"), InputError);
  EXPECT_THROW(io::load_profile("/nonexistent.csv", ""), InputError);
}

TEST(GenericCsv, UnitsInTheHeader) {
  auto p = io::parse_generic_csv("name,duration_us,flops,bytes,count\nmatmul,100,2e12,1e9,3\n", "g.csv");
  ASSERT_EQ(p.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(p.launches[0].duration_s, 100e-6);
  EXPECT_EQ(p.launches[0].count, 3);
  // On an H100 at bf16: 3 x 2e12 FLOPs at 989.4 TFLOP/s need 6.064 ms, done in 300 us: above the roof.
  auto a = profile::analyze(p, io::catalog_chip("h100-sxm"), DType::bf16);
  EXPECT_TRUE(a.kernels[0].above_roof);
  // The record stands for 3 launches of these per-launch figures: the totals are 3x each.
  EXPECT_DOUBLE_EQ(a.kernels[0].time_s, 300e-6);
  EXPECT_DOUBLE_EQ(a.kernels[0].flops, 6e12);
  EXPECT_DOUBLE_EQ(a.kernels[0].bytes, 3e9);
  EXPECT_DOUBLE_EQ(a.kernels[0].t_math_s, 6e12 / 989.4e12);
}

}  // namespace
}  // namespace ridgeline

namespace ridgeline {
namespace {

const std::string kTorch = std::string(RIDGELINE_SOURCE_DIR) + "/tests/fixtures/torch/";

// Expected values were read off the files with Python's gzip and json modules, summing
// the kernel events' "dur" (microseconds) and the CUPTI counters as described.
TEST(TorchTrace, KernelEventsAndTimeline) {
  auto p = io::load_profile(kTorch + "benchmark_result_493459_1694039959_trace.json.gz", "");
  EXPECT_EQ(p.format, "torch");
  // One record per kernel name (16 names), standing for its launches (79 in all) at their
  // mean figures.
  EXPECT_EQ(p.launches.size(), 16u);
  double total = 0, launches = 0;
  for (const auto& k : p.launches) {
    total += k.duration_s * k.count;
    launches += k.count;
  }
  EXPECT_EQ(launches, 79);
  EXPECT_NEAR(total, 10728e-6, 1e-12);  // sum of "dur" over the 79 kernels
  // Sorted by start, the GPU waited 15,946,964 us between kernels (58 gaps over 1 us) in a
  // 15,957,634 us span: the benchmark mostly waits on the host.
  EXPECT_NEAR(p.idle_s, 15946964e-6, 1e-6);
  EXPECT_EQ(p.idle_gaps, 58);
  EXPECT_NEAR(p.span_s, 15957634e-6, 1e-6);
  auto a = profile::analyze(p, io::catalog_chip("a100-40gb"), DType::bf16);
  EXPECT_EQ(a.kernels.size(), 16u);
  EXPECT_NEAR(a.total_kernel_time_s, 10728e-6, 1e-12);
}

TEST(TorchTrace, CuptiCountersAndSmallTraces) {
  // 77 profiler ranges; fadd + fmul + 2 ffma = 79,679,454,712 fp32 FLOPs, hadd + hmul + 2 hfma
  // = 551,583,744 fp16 FLOPs, no fp64.
  auto c = io::load_profile(kTorch + "benchmark_result_924719_1679055439_trace.json.gz", "torch");
  double f32 = 0, f16 = 0, f64 = 0, ranges = 0;
  for (const auto& k : c.launches) {
    f32 += k.flops_fp32 * k.count;
    f16 += k.flops_fp16 * k.count;
    f64 += k.flops_fp64 * k.count;
    ranges += k.count;
  }
  EXPECT_EQ(ranges, 77);
  EXPECT_DOUBLE_EQ(f32, 79679454712.0);
  EXPECT_DOUBLE_EQ(f16, 551583744.0);
  EXPECT_DOUBLE_EQ(f64, 0);
  auto t = io::load_profile(kTorch + "triton_example.json.gz", "");
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].name, "triton_poi_fused_add_cos_sin_0");
  EXPECT_DOUBLE_EQ(t.launches[0].duration_s, 1.76e-6);
  auto amd = io::load_profile(kTorch + "mi250_minitoy_train_ROCm6_2_kineto.json.gz", "");
  double amd_launches = 0;  // 14 kernels
  for (const auto& k : amd.launches) amd_launches += k.count;
  EXPECT_EQ(amd_launches, 14);
  // It recorded shapes: the backward's aten::mm [128,5]x[5,128] fp32 gets 2·128·5·128 =
  // 163840 FLOPs and (640 + 640 + 16384)·4 = 70656 bytes.
  bool found = false;
  for (const auto& k : amd.launches) {
    if (k.op != "aten::mm") continue;
    found = true;
    EXPECT_TRUE(k.flops_estimated);
    EXPECT_DOUBLE_EQ(k.flops_tensor, 163840);
    EXPECT_DOUBLE_EQ(k.dram_bytes, 70656);
  }
  EXPECT_TRUE(found);
}

TEST(TorchTrace, EstimatesFromRecordedShapes) {
  // A hand-written trace with record_shapes: an addmm launching a bias copy (2 us) and a GEMM
  // (10 us), and an in-place add. bf16 addmm(bias[256], x[64,512], w[512,256]): 2·64·512·256
  // = 16777216 FLOPs on the matrix unit, bytes 2·(64·512 + 512·256 + 64·256) + 2·256 =
  // 2·(32768 + 131072 + 16384) + 512 = 360960, all on the longer kernel (the GEMM), none on
  // the copy. add_(a[1024,1024], b[1024,1024]) in fp32: 1048576 FLOPs, 3·1048576·4 = 12582912
  // bytes. An op without a model (aten::foo) leaves its kernel without counts.
  auto p = io::parse_torch_trace(R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 0, "dur": 20,
       "args": {"External id": 7, "Input Dims": [[256], [64, 512], [512, 256], [], []],
                "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "ts": 30, "dur": 5,
       "args": {"External id": 8, "Input Dims": [[1024, 1024], [1024, 1024], []], "Input type": ["float", "float", "Scalar"]}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::foo", "ts": 40, "dur": 5,
       "args": {"External id": 9, "Input Dims": [[4]], "Input type": ["float"]}},
      {"ph": "X", "cat": "kernel", "name": "copy_bias", "ts": 1, "dur": 2, "args": {"External id": 7, "device": 0}},
      {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 4, "dur": 10, "args": {"External id": 7, "device": 0}},
      {"ph": "X", "cat": "kernel", "name": "add", "ts": 31, "dur": 3, "args": {"External id": 8, "device": 0}},
      {"ph": "X", "cat": "kernel", "name": "foo", "ts": 41, "dur": 3, "args": {"External id": 9, "device": 0}}]})", "t.json");
  ASSERT_EQ(p.launches.size(), 4u);
  const auto& copy = p.launches[0];
  const auto& gemm = p.launches[1];
  const auto& add = p.launches[2];
  EXPECT_FALSE(copy.has_flops);
  EXPECT_TRUE(gemm.flops_estimated);
  EXPECT_DOUBLE_EQ(gemm.flops_tensor, 16777216);
  EXPECT_DOUBLE_EQ(gemm.dram_bytes, 360960);
  EXPECT_EQ(gemm.op, "aten::addmm");
  EXPECT_DOUBLE_EQ(add.flops_fp32, 1048576);
  EXPECT_DOUBLE_EQ(add.dram_bytes, 12582912);
  EXPECT_FALSE(p.launches[3].has_flops);
  EXPECT_EQ(p.launches[3].op, "aten::foo");
  // bmm fp16 [2,3,8]·[2,8,4]: both operands batched: 2·2·3·8·4 = 384 FLOPs,
  // 2·(3·8 + 8·4 + 3·4)·2 = 272 bytes.
  auto b = io::parse_torch_trace(R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::bmm", "ts": 0, "dur": 5,
       "args": {"External id": 1, "Input Dims": [[2, 3, 8], [2, 8, 4]], "Input type": ["c10::Half", "c10::Half"]}},
      {"ph": "X", "cat": "kernel", "name": "bmm", "ts": 1, "dur": 3, "args": {"External id": 1, "device": 0}}]})", "b.json");
  EXPECT_DOUBLE_EQ(b.launches[0].flops_tensor, 384);
  EXPECT_DOUBLE_EQ(b.launches[0].dram_bytes, 272);
  auto a = profile::analyze(p, io::catalog_chip("h100-sxm"), DType::bf16);
  for (const auto& k : a.kernels) EXPECT_EQ(k.estimated, k.name == "gemm" || k.name == "add") << k.name;
}

// A trace keeps one record per kernel name, whatever the number of events: a record stands
// for `count` launches at their mean figures. Two ops record FLOPs with with_flops: aten::mm
// (id 1, 100 FLOPs) launches gemm for 1 us; aten::bmm (id 2, 300 FLOPs) launches gemm for
// 3 us and a 2 us copy, which gets nothing (the op's FLOPs go to its longest kernel); another
// copy of 4 us has no op. gemm: 2 launches, mean 2 us and (100 + 300) / 2 = 200 FLOPs, op
// aten::mm (its first launch in the file); copy: 2 launches, mean 3 us, no FLOPs, no op. Two
// of four launches have no FLOP count. Device 0 runs [0, 1], [5, 8] and [10, 12] us: gaps of
// 4 and 2 us, 6 us idle in a 12 us span; device 1 runs [20, 24]: a 4 us span. Reading CPU ops
// after their kernels, or spans in windows of one, changes nothing.
TEST(TorchTrace, OneRecordPerKernelNameWhateverTheOrder) {
  const std::string ops = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1, "args": {"External id": 1, "flops": 100}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::bmm", "ts": 4, "dur": 1, "args": {"External id": 2, "flops": 300}})";
  const std::string kernels = R"({"ph": "X", "cat": "kernel", "name": "gemm", "ts": 0, "dur": 1, "args": {"External id": 1, "device": 0}},
      {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 5, "dur": 3, "args": {"External id": 2, "device": 0}},
      {"ph": "X", "cat": "kernel", "name": "copy", "ts": 10, "dur": 2, "args": {"External id": 2, "device": 0}},
      {"ph": "X", "cat": "kernel", "name": "copy", "ts": 20, "dur": 4, "args": {"device": 1}})";
  io::TraceLimits one;
  one.span_window = 1;
  for (const auto& [trace, limits] : {std::pair{"{\"traceEvents\": [" + ops + ", " + kernels + "]}", io::TraceLimits{}},
                                      std::pair{"{\"traceEvents\": [" + kernels + ", " + ops + "]}", io::TraceLimits{}},
                                      std::pair{"{\"traceEvents\": [" + ops + ", " + kernels + "]}", one}}) {
    const profile::Profile p = io::parse_torch_trace(trace, "t.json", limits);
    ASSERT_EQ(p.launches.size(), 2u);
    const auto& gemm = p.launches[0];
    const auto& copy = p.launches[1];
    EXPECT_EQ(gemm.name, "gemm");
    EXPECT_EQ(gemm.count, 2);
    EXPECT_DOUBLE_EQ(gemm.duration_s, 2e-6);
    EXPECT_DOUBLE_EQ(gemm.flops_tensor, 200);
    EXPECT_TRUE(gemm.has_flops);
    EXPECT_EQ(gemm.op, "aten::mm");
    EXPECT_EQ(copy.name, "copy");
    EXPECT_EQ(copy.count, 2);
    EXPECT_DOUBLE_EQ(copy.duration_s, 3e-6);
    EXPECT_FALSE(copy.has_flops);
    EXPECT_EQ(copy.op, "");
    EXPECT_NE(std::find(p.warnings.begin(), p.warnings.end(),
                        "2 of 4 kernels have no FLOP count (profile with with_flops, CUPTI counters or Inductor)"),
              p.warnings.end());
    EXPECT_DOUBLE_EQ(p.idle_s, 6e-6);
    EXPECT_EQ(p.idle_gaps, 2);
    EXPECT_DOUBLE_EQ(p.span_s, 16e-6);
  }
  // Out of order within a window: sorted, the same timeline. More than a window out of order
  // ([5, 8] swept before [0, 1] arrives): the late span only extends the line, so the 4 us
  // gap is not seen: 2 us idle in one gap, the span still 12 us, and a warning says so.
  const std::string shuffled = R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "b", "ts": 5, "dur": 3, "args": {"device": 0}},
      {"ph": "X", "cat": "kernel", "name": "a", "ts": 0, "dur": 1, "args": {"device": 0}},
      {"ph": "X", "cat": "kernel", "name": "c", "ts": 10, "dur": 2, "args": {"device": 0}}]})";
  const profile::Profile in_window = io::parse_torch_trace(shuffled, "s.json");
  EXPECT_DOUBLE_EQ(in_window.idle_s, 6e-6);
  EXPECT_EQ(in_window.idle_gaps, 2);
  EXPECT_TRUE(in_window.warnings.empty() || in_window.warnings.back().find("out of order") == std::string::npos);
  const profile::Profile late = io::parse_torch_trace(shuffled, "s.json", one);
  EXPECT_DOUBLE_EQ(late.idle_s, 2e-6);
  EXPECT_EQ(late.idle_gaps, 1);
  EXPECT_DOUBLE_EQ(late.span_s, 12e-6);
  ASSERT_FALSE(late.warnings.empty());
  EXPECT_NE(late.warnings.back().find("1 kernel spans start more than 1 events out of order"), std::string::npos) << late.warnings.back();
  // What is kept is bounded: distinct names and CPU ops past their limits are errors naming the file.
  io::TraceLimits few;
  few.max_names = 1;
  EXPECT_THROW(
      {
        try {
          io::parse_torch_trace(shuffled, "s.json", few);
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("s.json: more than 1 distinct kernel names"), std::string::npos) << e.what();
          throw;
        }
      },
      InputError);
  few.max_names = 10;
  few.max_cpu_ops = 1;
  EXPECT_THROW(
      {
        try {
          io::parse_torch_trace("{\"traceEvents\": [" + ops + "]}", "o.json", few);
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("o.json: more than 1 CPU ops"), std::string::npos) << e.what();
          throw;
        }
      },
      InputError);
}

// Kernel names (and, for names no library uses, the launching op) give a category.
TEST(ProfileBreakdown, KernelCategories) {
  const std::pair<const char*, const char*> cases[] = {
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"},
      {"cross_device_reduce_1stage<__nv_bfloat16, 8>", "communication"},
      {"Memcpy DtoD (Device -> Device)", "memcpy/memset"},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >(Flash_fwd_params)", "attention"},
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80", "attention"},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "gemm"},
      {"Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", "gemm"},
      {"cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "gemm"},
      {"void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>", "elementwise/norm"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >", "reduction"},
      {"triton_red_fused_add_mean_pow_0", "reduction"},
      {"void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>", "reduction"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >", "elementwise/norm"},
      {"triton_poi_fused_add_cos_sin_0", "elementwise/norm"},
      {"__missing__", "other"},
  };
  for (const auto& [name, category] : cases) EXPECT_EQ(profile::kernel_category(name, ""), category) << name;
  EXPECT_EQ(profile::kernel_category("kernel_7", "aten::addmm"), "gemm");
  EXPECT_EQ(profile::kernel_category("kernel_7", "aten::_softmax"), "reduction");
  EXPECT_EQ(profile::kernel_category("kernel_7", "aten::mul"), "elementwise/norm");
}

// A trace's time by category, by the CPU op that launched each kernel, and by stream. Kernels:
// gemm 10 us (aten::mm, stream 7), copy_kernel 2 us and gemm 6 us (aten::addmm, streams 7 and
// 8), flash_fwd 4 us (no External id, stream 7); a 3 us memcpy and a 1 us memset on stream 8.
// By category: gemm 16 us (2 launches), attention 4, memcpy/memset 4 (2), elementwise/norm 2.
// By CPU op: aten::mm 10 us, aten::addmm 8 us (2), (no CPU op) 4 us. By stream: 7 has 16 us
// (3), 8 has 10 us (3).
TEST(ProfileBreakdown, ByCategoryCpuOpAndStream) {
  const profile::Profile p = io::parse_torch_trace(R"T({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1, "args": {"External id": 1}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 0, "dur": 1, "args": {"External id": 2}},
      {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 0, "dur": 10, "args": {"External id": 1, "device": 0, "stream": 7}},
      {"ph": "X", "cat": "kernel", "name": "copy_kernel", "ts": 10, "dur": 2, "args": {"External id": 2, "device": 0, "stream": 8}},
      {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 12, "dur": 6, "args": {"External id": 2, "device": 0, "stream": 7}},
      {"ph": "X", "cat": "kernel", "name": "flash_fwd", "ts": 18, "dur": 4, "args": {"device": 0, "stream": 7}},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 22, "dur": 3, "args": {"device": 0, "stream": 8}},
      {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 25, "dur": 1, "args": {"device": 0, "stream": 8}}]})T",
                                                   "b.json");
  auto near = [](const profile::TimeShare& s, const char* name, double us, double count) {
    EXPECT_EQ(s.name, name);
    EXPECT_NEAR(s.time_s, us * 1e-6, 1e-15) << name;
    EXPECT_EQ(s.count, count) << name;
  };
  ASSERT_EQ(p.by_cpu_op.size(), 3u);
  near(p.by_cpu_op[0], "aten::mm", 10, 1);
  near(p.by_cpu_op[1], "aten::addmm", 8, 2);
  near(p.by_cpu_op[2], "(no CPU op)", 4, 1);
  ASSERT_EQ(p.by_stream.size(), 2u);
  near(p.by_stream[0], "stream 7", 20, 3);
  near(p.by_stream[1], "stream 8", 6, 3);
  near(p.memcpy, "memcpy", 3, 1);
  near(p.memset, "memset", 1, 1);
  const auto a = profile::analyze(p, io::catalog_chip("h100-sxm"), DType::bf16);
  ASSERT_EQ(a.by_category.size(), 4u);
  near(a.by_category[0], "gemm", 16, 2);
  near(a.by_category[1], "attention", 4, 1);
  near(a.by_category[2], "memcpy/memset", 4, 2);
  near(a.by_category[3], "elementwise/norm", 2, 1);
}

// Kernels whose short names read alike are told apart in the text table: by their CPU op,
// else by a number; JSON keeps every full name.
TEST(ProfileBreakdown, AlikeNamesToldApart) {
  const profile::Profile p = io::parse_torch_trace(R"T({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::sum", "ts": 0, "dur": 1, "args": {"External id": 1}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::mean", "ts": 0, "dur": 1, "args": {"External id": 2}},
      {"ph": "X", "cat": "kernel", "name": "void at::native::reduce_kernel<512, 1, Sum>(int)", "ts": 0, "dur": 4, "args": {"External id": 1}},
      {"ph": "X", "cat": "kernel", "name": "void at::native::reduce_kernel<512, 1, Mean>(int)", "ts": 5, "dur": 3, "args": {"External id": 2}},
      {"ph": "X", "cat": "kernel", "name": "void at::native::copy_kernel<float>(int)", "ts": 9, "dur": 2},
      {"ph": "X", "cat": "kernel", "name": "void at::native::copy_kernel<half>(int)", "ts": 12, "dur": 1}]})T",
                                                   "alike.json");
  const auto h100 = io::catalog_chip("h100-sxm");
  const auto a = profile::analyze(p, h100, DType::bf16);
  const std::string text = report::profile_text(p, a, h100);
  for (const char* name : {"at::native::reduce_kernel [aten::sum] ", "at::native::reduce_kernel [aten::mean] ", "at::native::copy_kernel #1 ",
                           "at::native::copy_kernel #2 "}) {
    EXPECT_NE(text.find(name), std::string::npos) << name << "\n" << text;
  }
}

// The trace is read one event at a time through a 1 MiB sliding buffer: names with escaped
// quotes, backslash runs and braces, an event larger than the buffer, events straddling
// refills, members before and after "traceEvents", non-object elements and a top-level
// array all read as a whole-document parse would; a file reads as its bytes do.
TEST(TorchTrace, StreamingReadsWhatADocumentParseReads) {
  std::string trace = R"({"schemaVersion": 1, "deviceProperties": [{"name": "{not \"an\" event}"}], "traceEvents": [7, "x", )";
  const std::string big(1536 * 1024, 'a');  // one arg of 1.5 MiB: the buffer must grow
  const std::vector<std::string> names = {R"(k\"{[\\)", R"(tail\\)", "plain"};
  const std::vector<std::string> decoded = {"k\"{[\\", "tail\\", "plain"};
  double total_us = 0;
  int n = 0;
  for (int i = 0; i < 30000; ++i) {  // about 3 MB: refills land inside events and strings
    const int k = i % 3;
    const double dur = 1 + i % 7;
    trace += fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "{}", "ts": {}, "dur": {}, "args": {{"device": 0, "note": "}}]\\"}}}}, )",
                         names[k], 10 * i, dur);
    total_us += dur;
    ++n;
    if (i == 12345) trace += R"({"ph": "X", "cat": "cpu_op", "name": "big", "ts": 0, "dur": 1, "args": {"pad": ")" + big + R"("}}, )";
  }
  trace += R"({"ph": "i", "cat": "user", "name": "last"}], "traceName": "t", "trailing": {"a": [1, 2]}})";
  const profile::Profile p = io::parse_torch_trace(trace, "t.json");
  ASSERT_EQ(p.launches.size(), 3u);  // one record per name, in order of first appearance
  double sum = 0;
  for (std::size_t i = 0; i < p.launches.size(); ++i) {
    EXPECT_EQ(p.launches[i].name, decoded[i]) << i;
    EXPECT_EQ(p.launches[i].count, n / 3) << i;
    sum += p.launches[i].duration_s * p.launches[i].count;
  }
  EXPECT_NEAR(sum, total_us * 1e-6, 1e-9);
  // The same bytes from a file, and as a top-level array of events.
  const std::string path = ::testing::TempDir() + "stream_trace.json";
  { std::ofstream(path, std::ios::binary) << trace; }
  const profile::Profile f = io::read_torch_trace(path);
  ASSERT_EQ(f.launches.size(), p.launches.size());
  EXPECT_EQ(f.launches.back().name, p.launches.back().name);
  const profile::Profile a = io::parse_torch_trace(R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 2}])", "a.json");
  ASSERT_EQ(a.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(a.launches[0].duration_s, 2e-6);
  // Truncation anywhere is an error, never a partial result without one.
  for (std::size_t cut : {trace.size() / 3, trace.size() / 2 + 1, trace.size() - 40}) {
    EXPECT_THROW(io::parse_torch_trace(std::string_view(trace).substr(0, cut), "cut.json"), InputError) << cut;
  }
}

TEST(TorchTrace, BadInput) {
  EXPECT_THROW(io::parse_torch_trace("{", "t.json"), InputError);
  EXPECT_THROW(io::parse_torch_trace("{\"traceEvents\": 3}", "t.json"), InputError);
  EXPECT_THROW(io::parse_torch_trace("{\"traceEvents\": []}", "t.json"), InputError);  // no kernels
  EXPECT_THROW(io::parse_torch_trace(std::string("\x1f\x8b\x08\x00garbage", 11), "t.json.gz"), InputError);
  // Inductor's counts are used when present.
  auto p = io::parse_torch_trace(R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "triton_mm", "ts": 0, "dur": 10,
      "args": {"kernel_flop": 2e9, "kernel_num_gb": 0.004, "device": 0}}]})", "t.json");
  EXPECT_DOUBLE_EQ(p.launches[0].flops_tensor, 2e9);
  EXPECT_DOUBLE_EQ(p.launches[0].dram_bytes, 4e6);
}

}  // namespace
}  // namespace ridgeline

namespace ridgeline {
namespace {

// A kernel with FLOPs but no byte count has no intensity: its bound is unknown, not compute
// at 0 FLOP/B. The 924719 trace carries CUPTI FLOP counters and no byte counter, so all of its
// 77 ranges (9.35 s) are unknown-bound and none is compute- or memory-bound.
TEST(ProfileReport, FlopsWithoutBytesAreUnknownBound) {
  const std::string torch = std::string(RIDGELINE_SOURCE_DIR) + "/tests/fixtures/torch/";
  const auto p = io::load_profile(torch + "benchmark_result_924719_1679055439_trace.json.gz", "torch");
  const auto a = profile::analyze(p, io::catalog_chip("a100-40gb"), DType::bf16);
  int with_flops = 0;
  for (const auto& k : a.kernels) {
    EXPECT_FALSE(k.has_bytes) << k.name;
    EXPECT_TRUE(k.unknown) << k.name;
    EXPECT_EQ(k.gap_s, 0) << k.name;
    with_flops += k.has_flops && k.flops > 0 ? 1 : 0;
  }
  EXPECT_GT(with_flops, 0);
  EXPECT_EQ(a.time_by_bound_s[0], 0);
  EXPECT_EQ(a.time_by_bound_s[1], 0);
  EXPECT_NEAR(a.unknown_time_s, a.total_kernel_time_s, 1e-12);
  const nlohmann::json j = report::profile_json(p, a);
  for (const auto& k : j["kernels"]) {
    EXPECT_EQ(k["bound"], "unknown") << k["name"];
    EXPECT_TRUE(k["fraction_of_roof"].is_null());
  }
  const std::string text = report::profile_text(p, a, io::catalog_chip("a100-40gb"));
  EXPECT_EQ(text.find(" compute    0.0%"), std::string::npos) << text;
}

// The 493459 trace: 79 kernels of 10728 us and 16 copies of 39080 us and 3 fills of 8 us (the
// "dur" of its kernel, gpu_memcpy and gpu_memset events): the header counts both, 49816 us on
// the GPU, the sum the category breakdown shares out. Its span is 15957634 us, 15946964 us of
// it idle: busy (15957634 - 15946964) / 15957634 = 0.067%, the headline, on the first line.
TEST(ProfileReport, HeaderAgreesWithTheBreakdownAndTheHeadlineComesFirst) {
  const std::string torch = std::string(RIDGELINE_SOURCE_DIR) + "/tests/fixtures/torch/";
  const auto p = io::load_profile(torch + "benchmark_result_493459_1694039959_trace.json.gz", "");
  const hw::ChipSpec chip = io::catalog_chip("a100-40gb");
  const auto a = profile::analyze(p, chip, DType::bf16);
  double categories = 0;
  for (const auto& c : a.by_category) categories += c.time_s;
  EXPECT_NEAR(categories, 49816e-6, 1e-9);
  const nlohmann::json j = report::profile_json(p, a);
  EXPECT_NEAR(j["gpu_time_s"].get<double>(), 49816e-6, 1e-9);
  EXPECT_NEAR(j["copy_time_s"].get<double>(), 39088e-6, 1e-9);
  const std::string text = report::profile_text(p, a, chip);
  EXPECT_EQ(text.rfind("headline: the GPU is busy 0.1% of the 15.96 s the trace spans", 0), 0u) << text;
  EXPECT_NE(text.find("10.73 ms of kernel time"), std::string::npos) << text;
  EXPECT_NE(text.find("and 39.09 ms in 19 copies and fills: 49.82 ms on the GPU"), std::string::npos) << text;
  EXPECT_NE(text.find("by category (the 49.82 ms on the GPU)"), std::string::npos) << text;
}

}  // namespace
}  // namespace ridgeline
