#include <gtest/gtest.h>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

TEST(OpCli, MatmulHasTheContractKeys) {
  auto j = run_json("op matmul --m 256 --k 4096 --n 4096 --hw h200");
  for (const char* k : {"flops", "bytes", "intensity_flops_per_byte", "ridge_flops_per_byte", "t_math_s", "t_memory_s",
                        "t_comm_s", "t_lower_s", "t_upper_s", "bound", "attained_flops_per_s", "t_realistic_s"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["flops"].get<double>(), 2.0 * 256 * 4096 * 4096);
  EXPECT_EQ(j["bytes"].get<double>(), 4.0 * 256 * 4096 + 2.0 * 4096 * 4096);
  EXPECT_EQ(j["bound"], "compute");
  // Realistic: the 4.549 us a GEMM costs on Hopper beyond its parts (the gemm class's fixed time,
  // fitted to the H100's kernel curves, the same GH100 on the H200) plus its overlap share,
  // 0.66 of its matrix and memory times added: the FLOPs at the class's 0.9104 of the H200's
  // achievable bf16 matmul rate, 794.5 TFLOP/s (the H100 SXM's measured figure: the same
  // GH100), 2*256*4096^2 / (0.9104 x 794.5e12) = 11.876 us, with the tiling's padding: none
  // here, as the 32 tiles of 256x128 share their K loops over all 132 SMs (stream-K, 132/32
  // each) in one wave; and the bytes at 0.8776 of 4.8 TB/s (the H100's gemm fraction x 0.94):
  // 8.961 us. 0.66 x 20.837 = 13.752 us, above both.
  const double matrix = 2.0 * 256 * 4096 * 4096 / (0.9104 * 794.5e12), memory = (4.0 * 256 * 4096 + 2.0 * 4096 * 4096) / 4.8e12 / 0.8776;
  EXPECT_NEAR(j["t_realistic_s"].get<double>(), 4.549e-6 + 0.66 * (matrix + memory), 1e-15);
}

// How a chip's library spreads fewer GEMM tiles than multiprocessors, in `op matmul --json`:
// m 1024, n 2112, k 7168 (vLLM PR #23280's shape) makes 68 tiles of 256x128. The H100 shares
// them over its 132 SMs (stream-K): useful 1024*2112 / (68*256*128) = 33/34. The A100 splits K
// floor(108/68) = 1 way: 68 tiles in one wave of 108, useful 2162688 / (108*256*128) = 0.611.
TEST(OpCli, MatmulSaysHowFewTilesAreSpread) {
  auto h100 = run_json("op matmul --m 1024 --n 2112 --k 7168 --hw h100-sxm --json");
  EXPECT_EQ(h100["gemm_tiling"]["split"], "stream-k");
  EXPECT_NEAR(h100["gemm_tiling"]["useful"].get<double>(), 33.0 / 34, 1e-12);
  EXPECT_DOUBLE_EQ(h100["gemm_tiling"]["split_k"].get<double>(), 132.0 / 68);
  auto a100 = run_json("op matmul --m 1024 --n 2112 --k 7168 --hw a100-80gb --json");
  EXPECT_EQ(a100["gemm_tiling"]["split"], "split-k");
  EXPECT_EQ(a100["gemm_tiling"]["split_k"].get<double>(), 1);
  EXPECT_NEAR(a100["gemm_tiling"]["useful"].get<double>(), 1024.0 * 2112 / (108 * 256 * 128), 1e-12);
}

// The MI300X's fp16 GEMMs at AMD's measured best rate (hipblaslt-bench, ROCm blog "Measuring
// Max-Achievable FLOPs - Part 2": 654 TFLOP/s; data/hardware/amd/mi300x.yaml), not the chip-wide
// 0.8 of the peak (1046), and its fp8 GEMMs at their own class (gemm_fp8, fitted to AITER's CK and
// PyTorch's hipBLASLt fp8 kernels: matrix 0.4057 of 2614.9 TFLOP/s, memory 0.6493 of 5.3 TB/s,
// 6.618 us, at least 0.89 of the two parts added). Llama-3-70B's gate-up projection at TP 1 over
// 16384 rows: 2 x 16384 x 57344 x 8192 FLOPs in 128 x 57344/128 = 57344 tiles of 128x128, 189
// waves of the 304 CUs (split-K 1), useful 57344 / (189 x 304) = 57344 / 57456.
// fp16: the bytes (3.087 GB at 0.9 of 5.3 TB/s, 647 us) and half the two parts added (the chip's
// overlap) stay under the matrix time; the kernel boundary, 1.536 us, is added: 23.5845 ms.
// fp8: matrix 14.53835 ms; memory 1543503872 B (16384·8192 + 8192·57344 in, 16384·57344 out, a
// byte each) / 3.44129e12 = 0.44852 ms; 0.89 x their sum 13.33832 ms: the matrix binds, + 6.618
// us = 14.54497 ms (AITER's CK kernel: 15.25 ms).
TEST(OpCli, TheMi300xRunsFp16GemmsAtAmdsBestRateAndFp8GemmsAtTheirLibrariesCurve) {
  const double flops = 2.0 * 16384 * 57344 * 8192, useful = 57344.0 / 57456;
  auto fp16 = run_json("op matmul --m 16384 --n 57344 --k 8192 --dtype fp16 --hw mi300x");
  EXPECT_NEAR(fp16["gemm_tiling"]["useful"].get<double>(), useful, 1e-12);
  EXPECT_NEAR(fp16["t_realistic_s"].get<double>(), 1.536e-6 + flops / useful / 654e12, 1e-9);
  auto fp8 = run_json("op matmul --m 16384 --n 57344 --k 8192 --dtype fp8_e4m3 --hw mi300x");
  const double matrix = flops / useful / (0.4057 * 2614.9e12), memory = (16384.0 * 8192 + 8192.0 * 57344 + 16384.0 * 57344) / (0.6493 * 5.3e12);
  EXPECT_GT(matrix, 0.89 * (matrix + memory));
  EXPECT_NEAR(fp8["t_realistic_s"].get<double>(), 6.618e-6 + matrix, 1e-9);  // 14.54497 ms
  // One row (a decode step's): 448 tiles of 16x128 in 2 waves of 304, useful 57344 / (2·304·16·128)
  // = 0.046053, so the matrix part is 2·57344·8192 / 0.046053 at 1060.87 TFLOP/s = 19.232 us; the
  // bytes, 469827584 (8192 + 469762048 in, 57344 out) at 3.44129 TB/s = 136.526 us; 0.89 of the
  // two added, 138.620 us, binds: + 6.618 = 145.238 us (the CK kernel: 147.03 us; the chip's 0.9
  // of the bandwidth priced it at 100 us).
  auto row = run_json("op matmul --m 1 --n 57344 --k 8192 --dtype fp8_e4m3 --hw mi300x");
  const double useful1 = 57344.0 / (2 * 304 * 16 * 128), matrix1 = 2.0 * 57344 * 8192 / useful1 / (0.4057 * 2614.9e12),
               memory1 = (8192.0 + 8192.0 * 57344 + 57344) / (0.6493 * 5.3e12);
  EXPECT_NEAR(row["gemm_tiling"]["useful"].get<double>(), useful1, 1e-12);
  EXPECT_NEAR(row["t_realistic_s"].get<double>(), 6.618e-6 + 0.89 * (matrix1 + memory1), 1e-11);  // 145.238 us
}

// A causal prefill of 2048 tokens, 32 heads of 128, on an H100 (docs/cost-model.md#attention-tiles):
// 16 query tiles a head, 512 in all; tile j sees j + 1 key tiles, 136 a head, 136 x 16384 =
// 2228224 pairs computed for 2048·2049/2 = 2098176, and each tile 280 keys' work more (the
// H100's fit): 16 x 128 x 280 = 573440. Useful 2098176 / 2801664; the rest, 2 x 32 x 256 =
// 16384 FLOPs a pair, at the bf16 peak (989.4 TFLOP/s) is t_matrix_pad.
TEST(OpCli, APrefillsAttentionSaysItsTiles) {
  auto j = run_json("op attention --q-len 2048 --heads 32 --kv-heads 8 --head-dim 128 --causal --hw h100-sxm --json");
  EXPECT_EQ(j["attention_tiling"]["tiles"].get<double>(), 512);
  EXPECT_EQ(j["attention_tiling"]["tile_work_keys"].get<double>(), 280);
  EXPECT_EQ(j["attention_tiling"]["key_tile"].get<double>(), 128);
  EXPECT_NEAR(j["attention_tiling"]["useful"].get<double>(), 2098176.0 / 2801664, 1e-12);
  EXPECT_NEAR(j["t_matrix_pad_s"].get<double>(), 32 * 256.0 * 2 * (2801664 - 2098176) / 989.4e12, 1e-15);
  EXPECT_NE(run("op attention --q-len 2048 --heads 32 --kv-heads 8 --head-dim 128 --causal --hw h100-sxm")
                .out.find("128 queries of a head x 128 keys, computed whole, and 280 keys' work more each: 74.9%"),
            std::string::npos);
  // A decode query has no tiles of its own.
  EXPECT_FALSE(run_json("op attention --q-len 1 --kv-len 4096 --heads 32 --kv-heads 8 --hw h100-sxm --json").contains("attention_tiling"));
}

// The EPYC 9654's file says its stores allocate (x86 write-back memory): c = a + b over
// 4096 x 4096 bf16 reads a and b (2 x 33554432 bytes), stores c (33554432) and reads c's
// lines first (33554432 more): 134217728 bytes over 460.8 GB/s. An H200 moves 100663296.
TEST(OpCli, StoresReadTheirLinesFirstWhereTheChipSaysSo) {
  auto j = run_json("op elementwise --shape 4096,4096 --inputs 2 --outputs 1 --hw epyc-9654");
  EXPECT_EQ(j["bytes"].get<double>(), 134217728.0);
  EXPECT_EQ(j["stored_bytes"].get<double>(), 33554432.0);
  EXPECT_EQ(j["write_allocate_bytes"].get<double>(), 33554432.0);
  EXPECT_NEAR(j["t_memory_s"].get<double>(), 134217728.0 / 460.8e9, 1e-15);
  EXPECT_EQ(j["memory"][0]["bytes"].get<double>(), 134217728.0);
  auto gpu = run_json("op elementwise --shape 4096,4096 --inputs 2 --outputs 1 --hw h200");
  EXPECT_EQ(gpu["bytes"].get<double>(), 100663296.0);
  EXPECT_EQ(gpu["write_allocate_bytes"].get<double>(), 0);
  RunResult r = run("op elementwise --shape 4096,4096 --inputs 2 --outputs 1 --hw epyc-9654");
  EXPECT_NE(r.out.find("lines read before stores"), std::string::npos) << r.out;
}

TEST(OpCli, HumanOutputNamesTheBound) {
  RunResult r = run("op rmsnorm --tokens 4096 --hidden 4096 --hw h200");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("bound: memory"), std::string::npos) << r.out;
}

TEST(OpCli, SoftmaxExpRunsOnTheSpecialFunctionUnits) {
  // Attention over 8192 tokens, 32 heads of 64, on an H100: QKᵀ and PV are 4·64 FLOPs per
  // pair, 8192² pairs per head: 549.8 GFLOP at 989.4 TFLOP/s = 555.6 us. The softmax's 5 FLOPs
  // per score and the output scaling (32 x (5·8192² + 8192·64) fp32 FLOPs at 66.9 TFLOP/s)
  // take 160.7 us, and its 32·8192² exps run on the special-function units at 3.9 T/s, not
  // at the FMA rate: 518.5 us more. The softmax binds (679.3 us): at head dim 64 the exp,
  // not the matmul, sets the time (FlashAttention-3, section 3.1).
  auto j = run_json("op attention --q-len 8192 --heads 32 --head-dim 64 --hw h100-sxm");
  const double p = 8192.0 * 8192;
  EXPECT_NEAR(j["t_matrix_s"].get<double>(), 4 * 64 * p * 32 / 989.4e12, 1e-12);
  EXPECT_NEAR(j["t_vector_s"].get<double>(), 32 * (5 * p + 8192 * 64) / 66.9e12 + 32 * p * (1 / 3.9e12 - 1 / 66.9e12), 1e-12);
  EXPECT_GT(j["t_vector_s"].get<double>(), j["t_matrix_s"].get<double>());
  // The H100 PCIe: 16 a clock per SM x 114 SMs at the clock of its 51.2 TFLOP/s of fp32
  // (114 x 128 cores x 2 a clock): 51.2 / 16 = 3.2 T/s, an exp 16 fp32 FLOPs' time.
  EXPECT_NEAR(run_json("hw show h100-pcie")["special_function_rate"].get<double>(), 51.2e12 / 16, 1e9);
  auto pcie = run_json("op attention --q-len 8192 --heads 32 --head-dim 64 --hw h100-pcie");
  EXPECT_NEAR(pcie["t_vector_s"].get<double>(), 32 * (5 * p + 8192 * 64) / 51.2e12 + 32 * p * (1 / 3.2e12 - 1 / 51.2e12), 1e-12);
  // The FLOPs counted stay the arithmetic's: an exp is one.
  EXPECT_DOUBLE_EQ(j["flops"].get<double>(), 4 * 64 * p * 32 + 32 * (5 * p + 8192 * 64));
  // B200 keeps Hopper's 16 exps per SM per clock with twice the tensor rate per clock: its
  // file's 4.395 T/s is 2.25 PFLOP/s x 16 / 8192. At head dim 128 (FlashAttention-3's shape:
  // batch 4, 8448 tokens, 16 heads) an exp takes as long as a score's 512 matmul FLOPs, and
  // with the softmax's other 5 FLOPs a score the vector unit binds: t_vector is
  // 4·16·8448² (5/75e12 + 1/4.395e12 - 1/75e12) + the output scaling 4·16·8448·128/75e12.
  auto b = run_json("op attention --batch 4 --q-len 8448 --heads 16 --head-dim 128 --hw b200");
  const double s = 4 * 16 * 8448.0 * 8448;
  EXPECT_NEAR(run_json("hw show b200")["special_function_rate"].get<double>(), 2.25e15 * 16 / 8192, 1e9);
  EXPECT_NEAR(run_json("hw show gb200-nvl72")["special_function_rate"].get<double>(), 2.5e15 * 16 / 8192, 1e9);
  EXPECT_NEAR(b["t_matrix_s"].get<double>(), 512 * s / 2.25e15, 1e-12);
  EXPECT_NEAR(b["t_vector_s"].get<double>(), s * (5 / 75e12 + 1 / 4.395e12 - 1 / 75e12) + 4 * 16 * 8448.0 * 128 / 75e12, 1e-12);
  EXPECT_GT(b["t_vector_s"].get<double>(), b["t_matrix_s"].get<double>());
  // MI300X: fp32 transcendentals at a quarter of the VALU's rate, 16 a clock per 64-lane CU,
  // 304 CUs at 2.1 GHz: 10.2144 T/s; the head-dim-64 case above with its 163.4 TFLOP/s of fp32.
  EXPECT_NEAR(run_json("hw show mi300x")["special_function_rate"].get<double>(), 304 * 16 * 2.1e9, 1e9);
  auto a = run_json("op attention --q-len 8192 --heads 32 --head-dim 64 --hw mi300x");
  EXPECT_NEAR(a["t_vector_s"].get<double>(), 32 * (5 * p + 8192 * 64) / 163.4e12 + 32 * p * (1 / (304 * 16 * 2.1e9) - 1 / 163.4e12), 1e-12);
}

TEST(OpCli, Collectives) {
  // 1 GB ring all-reduce over 8 H100s on NVLink: 2*7/8 GB = 1.75e9 bytes at 450 GB/s
  // plus NCCL's Simple protocol: 8.4 us and 14 steps x 3.4 us = 56 us.
  auto j = run_json("op allreduce --bytes '1 GB' --chips 8 --hw h100-sxm --algo ring");
  EXPECT_EQ(j["bound"], "comm");
  EXPECT_EQ(j["link"], "NVLink4");
  EXPECT_NEAR(j["t_comm_s"].get<double>(), 1.75e9 / 450e9 + 56e-6, 1e-12);
  EXPECT_EQ(j["collective"]["protocol"], "simple");
  // By default the NVSwitch reduces (NVLS): each chip sends and receives N(P+1)/P = 9/8 GB
  // at the reduction efficiency 0.765 (R = 344.25 GB/s), in 128 KiB chunks (147456 B on the
  // wire) on 16 x 8 pipelines: 9 us + 1.5 (128 x 147456 / R + 6 us) = 100.24 us fixed, and
  // 1.125e9 / (128 x 147456) = 59.6 chunks per pipeline waiting 6 us each: 357.6 us.
  auto nvls = run_json("op allreduce --bytes '1 GB' --chips 8 --hw h100-sxm");
  EXPECT_EQ(nvls["algo"], "nvls");
  const double fixed = 9e-6 + 1.5 * (128 * 147456 / 344.25e9 + 6e-6), waits = 6e-6 * 1.125e9 / (128 * 147456);
  EXPECT_EQ(nvls["collective"]["chunk_bytes"], 131072);
  EXPECT_NEAR(nvls["collective"]["chunk_wait_s"].get<double>(), waits, 1e-15);
  EXPECT_NEAR(nvls["t_comm_s"].get<double>(), 1.125e9 / 450e9 + fixed + waits, 1e-12);
  EXPECT_NEAR(nvls["t_realistic_s"].get<double>(), 1.125e9 / 344.25e9 + fixed + waits + 1.3e-6, 1e-12);
  // 16 chips leave the node: a ring through both nodes. Each node sends 2*15/16 GB over
  // the network, shared by its 8 GPUs' 400 Gb/s NICs: 0.234375 GB per chip at 50 GB/s;
  // NVLink carries the other 7/8 (1.64 GB at 450 GB/s: not the bound). Simple protocol: 8.4
  // us, and of the 30 steps 2 cross the network (14 us) and 28 stay on NVLink (3.4 us).
  auto ib = run_json("op allreduce --bytes '1 GB' --chips 16 --hw h100-sxm");
  EXPECT_EQ(ib["link"], "InfiniBand NDR");
  EXPECT_EQ(ib["algo"], "ring");
  EXPECT_NEAR(ib["t_comm_s"].get<double>(), 2 * 15.0 / 16 * 1e9 / 8 / 50e9 + 8.4e-6 + 2 * 14e-6 + 28 * 3.4e-6, 1e-12);
  // The text names the efficiencies applied: the InfiniBand link's own 0.9 (hardware file),
  // not the chip-wide 0.8; NVLS the switch's 0.765.
  EXPECT_NE(run("op allreduce --bytes '1 GB' --chips 16 --hw h100-sxm").out.find("memory 0.90, link 0.90;"), std::string::npos);
  EXPECT_NE(run("op allreduce --bytes '1 GB' --chips 8 --hw h100-sxm").out.find("memory 0.90, link 0.77;"), std::string::npos);
}

TEST(OpCli, HostOverheadOfACallWaitedOn) {
  // all_reduce_bench.py times one fp32 all-reduce per trial behind a barrier on 8 H200s
  // (stas00/ml-engineering network/benchmarks/results/all-reduce-8xH200.md): from 32 to 256 KiB
  // its calls take 39-40 us while the device time stays within 2 us, 22 us more than the
  // device time on average (docs/collectives.md). With that host time, its 1 MiB row (39.93
  // GB/s busbw, 2 * 7/8 * 1 MiB / 45.96 us) is within 5%, and every bound grows by 22 us.
  const std::string op = "op allreduce --bytes 1MiB --chips 8 --hw h200 --dtype fp32";
  auto plain = run_json(op);
  auto j = run_json(op + " --host-overhead 22us");
  EXPECT_DOUBLE_EQ(j["t_host_s"].get<double>(), 22e-6);
  EXPECT_DOUBLE_EQ(plain["t_host_s"].get<double>(), 0);
  for (const char* k : {"t_lower_s", "t_realistic_s", "t_upper_s"}) EXPECT_NEAR(j[k].get<double>(), plain[k].get<double>() + 22e-6, 1e-15) << k;
  const double busbw = 2 * 7.0 / 8 * 1048576 / j["t_realistic_s"].get<double>();
  EXPECT_NEAR(busbw / 39.93e9, 1, 0.05);
  EXPECT_NE(run(op + " --host-overhead 22us").out.find("t_host               22 us"), std::string::npos);
  expect_bad(op + " --host-overhead 22", "--host-overhead: '22' has no unit");
  expect_bad(op + " --host-overhead -1us", "--host-overhead");
  expect_bad("op matmul --m 1 --k 8 --n 8 --sweep m=1..100 --host-overhead 1us", "--host-overhead");
}

TEST(OpCli, EveryKindRuns) {
  for (const char* args : {"op dot --n 1000", "op elementwise --shape 4096,4096 --inputs 2 --outputs 1",
                           "op reduction --shape 4096,4096", "op layernorm --tokens 8 --hidden 64",
                           "op rope --tokens 8 --hidden 256 --head-dim 128", "op softmax --tokens 8 --hidden 64",
                           "op swiglu --tokens 8 --hidden 64", "op embedding --tokens 8 --hidden 64",
                           "op attention --heads 8 --q-len 128 --causal --impl naive",
                           "op allgather --bytes 1e6 --chips 4", "op reducescatter --bytes 1e6 --chips 4 --algo tree",
                           "op alltoall --bytes 1e6 --chips 4 --algo direct", "op sendrecv --bytes 1e6",
                           "op custom --flops 1e9 --bytes 1e6", "op matmul --m 64 --k 64 --n 64 --tile 32,32,32",
                           "op matmul --m 64 --k 64 --n 64 --shard n --chips 4"}) {
    auto j = run_json(args);
    EXPECT_GT(j["t_lower_s"].get<double>(), 0) << args;
    EXPECT_LE(j["t_lower_s"].get<double>(), j["t_upper_s"].get<double>()) << args;
  }
}

TEST(OpCli, ThresholdJson) {
  auto j = run_json("threshold matmul --k 4096 --n 4096 --hw h200 --solve m");
  EXPECT_TRUE(j.contains("critical_m"));
  auto never = run_json("threshold attention --heads 32 --kv-heads 8 --q-len 1 --hw h100-sxm --solve kv-len");
  EXPECT_TRUE(never["critical_kv_len"].is_null());  // decode intensity tends to heads/kv_heads = 4
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

TEST(OpCli, ConsistencyFromReview) {
  // Attention runs softmax on the vector unit beside the tensor cores: the attained tensor
  // rate never exceeds the tensor peak.
  auto a = run_json("op attention --heads 32 --q-len 4096 --hw h100-sxm");
  EXPECT_LE(a["attained_flops_per_s"].get<double>(), a["peak_flops_per_s"].get<double>() * (1 + 1e-12));
  EXPECT_LE(a["fraction_of_peak"].get<double>(), 1.0);
  // lower <= realistic <= upper, for a memory-bound and a compute-bound matmul.
  for (const char* args : {"op matmul --m 1 --k 8192 --n 8192", "op matmul --m 1e4 --k 1e4 --n 1e4"}) {
    auto j = run_json(args);
    EXPECT_LE(j["t_lower_s"].get<double>(), j["t_realistic_s"].get<double>()) << args;
    EXPECT_LE(j["t_realistic_s"].get<double>(), j["t_upper_s"].get<double>()) << args;
  }
  auto inf = run_json("infer --model llama-3.1-70b --hw h100-sxm --chips 4 --batch 16 --prompt 2048 --gen 256");
  for (const char* phase : {"prefill", "decode"}) {
    EXPECT_LE(inf[phase]["t_realistic_s"].get<double>(), inf[phase]["t_upper_s"].get<double>() * (1 + 1e-12)) << phase;
  }
  // CUDA graphs never cost time.
  EXPECT_GE(run_json("infer --batch 4096")["launch"]["cuda_graphs_gain_per_step_s"].get<double>(), 0);
  // Solving for the query length of self-attention solves the sequence.
  auto t = run_json("threshold attention --heads 32 --solve q-len --hw h100-sxm");
  EXPECT_FALSE(t["critical_seq"].is_null());
  // No sparse fp64.
  EXPECT_FALSE(run_json("hw show h100-sxm")["sparse_peak_flops_per_s"].contains("fp64"));
}

}  // namespace
}  // namespace ridgeline::testing
