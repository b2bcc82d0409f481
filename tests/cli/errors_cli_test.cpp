// Bad input: exit status 2 and one line naming the flag or file and key.
#include <gtest/gtest.h>

#include <sstream>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {


std::string write_tmp(const std::string& name, const std::string& text) {
  std::string path = std::string(RIDGELINE_TMP_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ErrorsCli, Flags) {
  expect_bad("op matmul --m 0 --k 1 --n 1", "--m");
  expect_bad("op matmul --m -5 --k 1 --n 1", "--m");
  expect_bad("op matmul --m nan --k 1 --n 1", "--m");
  expect_bad("op matmul --m 2.5 --k 1 --n 1", "--m");
  expect_bad("op matmul --m 1e9 --k 1e9 --n 1e9", "overflows 64-bit");
  expect_bad("op matmul --m 1 --k 1 --n 1 --dtype bf17", "--dtype");
  expect_bad("op matmul --m 1 --k 1 --n 1 --hw h300", "h300");
  expect_bad("op matmul --m 1 --k 1 --n 1 --mem-bw 0", "--mem-bw");
  expect_bad("op matmul --m 1 --k 1 --n 1 --mem-bw nan", "--mem-bw");
  expect_bad("op matmul --m 1 --k 1 --n 1 --mem-bw '3 parsecs'", "--mem-bw");
  expect_bad("op matmul --m 1 --k 1 --n 1 --peak bf16", "--peak");
  expect_bad("op matmul --m 1 --k 1 --n 1 --peak bf16=-3", "--peak");
  expect_bad("op matmul --m 1 --k 1 --n 1 --dtype fp4 --hw h100-sxm", "fp4");
  expect_bad("op matmul --m 1 --k 1", "--n");
  expect_bad("op matmul --m 4 --k 4 --n 4 --chips 2", "--shard");
  expect_bad("op allreduce --bytes 1e6 --chips 1", "--chips");
  expect_bad("op allreduce --bytes -1 --chips 2", "--bytes");
  expect_bad("op alltoall --bytes 1e6 --chips 4 --algo tree", "--algo");
  expect_bad("op attention --heads 32 --kv-heads 5", "--kv-heads");
  expect_bad("op attention --heads 32 --q-len 10 --kv-len 5 --causal", "--q-len");
  expect_bad("op flop --m 1", "flop");
  expect_bad("threshold matmul --k 4096 --n 4096 --solve zz", "--solve");
  expect_bad("threshold softmax --hidden 4096 --solve kv-len", "--solve");
  expect_bad("op matmul --m 1 --k 1 --n 1 --chips 0", "--chips");
}

TEST(ErrorsCli, TopologyFlags) {
  // Algorithms the chip or the collective cannot run.
  expect_bad("op allreduce --bytes 1e6 --chips 8 --algo ring2", "--algo");
  expect_bad("op allreduce --bytes 1e6 --chips 8 --algo nvls --hw a100-80gb", "--algo: nvls needs switches that reduce");
  expect_bad("op allreduce --bytes 1e6 --chips 16 --algo nvls --hw h100-sxm", "--algo: nvls reduces inside one NVLink domain");
  expect_bad("op allgather --bytes 1e6 --chips 8 --algo nvls", "--algo: nvls runs all-reduces only");
  expect_bad("op matmul --m 8 --k 8 --n 8 --chips 2 --shard k --algo nvls --hw mi300x", "--algo: nvls");
  expect_bad("op matmul --k 8 --n 8 --chips 2 --shard k --algo nvls --hw a100-80gb --sweep m=8..64", "--algo: nvls needs switches");
  expect_bad("threshold matmul --k 64 --n 64 --chips 2 --shard k --algo nvls --hw a100-80gb --solve m", "--algo: nvls needs switches");
  expect_bad("infer --model llama-3.1-8b --tp 2 --algo nvls --hw a100-80gb", "--algo: nvls needs switches");
  expect_bad("serve --model llama-3.1-8b --tp 2 --algo nvls --hw mi300x --qps 1 --requests 10", "--algo: nvls needs switches");
  // --slice: TPU slices only, a shape of the chip's axes, dividing --chips, within a pod.
  expect_bad("op allreduce --bytes 1e6 --chips 16 --slice 4x4 --hw h100-sxm", "--slice: h100-sxm is not a torus");
  expect_bad("op allreduce --bytes 1e6 --chips 16 --slice 2x2x4 --hw tpu-v5e", "--slice");
  expect_bad("op allreduce --bytes 1e6 --chips 16 --slice 4x3 --hw tpu-v5p", "do not divide --chips 16");
  expect_bad("op allreduce --bytes 1e6 --chips 16 --slice 4xfour --hw tpu-v5p", "--slice");
  expect_bad("op allreduce --bytes 1e6 --chips 16 --slice 0x4 --hw tpu-v5p", "--slice");
  expect_bad("op allreduce --bytes 1e6 --chips 1024 --slice 32x32 --hw tpu-v5e", "more than a tpu-v5e pod's 256");
}

TEST(ErrorsCli, HardwareFiles) {
  expect_bad("hw show /nonexistent/chip.yaml", "/nonexistent/chip.yaml");
  std::string malformed = write_tmp("malformed.yaml", "schema_version: 1\nname: [oops\n");
  expect_bad("hw show " + malformed, "malformed YAML");
  std::string unknown = write_tmp("unknown.yaml", "schema_version: 1\nname: x\nflux_capacitor: 1.21 GW\n");
  expect_bad("hw show " + unknown, "flux_capacitor");
  std::string unitless = write_tmp("unitless.yaml",
                                   "schema_version: 1\nname: x\nvendor: v\nkind: gpu\nmatrix_peak: {bf16: 1 TFLOPS}\n"
                                   "vector_peak: {}\nmemory:\n  - {name: HBM, bandwidth: 3.35, capacity: 1 GB}\n"
                                   "launch_overhead: 1 us\n");
  expect_bad("hw show " + unitless, "memory[0].bandwidth");
  expect_bad("op matmul --m 1 --k 1 --n 1 --hw " + unitless, "memory[0].bandwidth");
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

// Regressions from an adversarial review: each must be a clear error, not a number.
TEST(ErrorsCli, ReviewFindings) {
  expect_bad("block --hw a100-40gb --dtype fp8", "--dtype");
  expect_bad("block --cp 3", "--cp");
  expect_bad("block --chips 64", "--chips");
  expect_bad("fuse --chips 0", "--chips");
  expect_bad("train --chips 4", "--chips");
  expect_bad("op rmsnorm --tokens 8 --hidden 64 --chips 8", "--chips");
  expect_bad("op sendrecv --bytes 1e9 --chips 1", "--chips");
  expect_bad("op elementwise --shape 4,4 --flops-per-element 1e308", "--flops-per-element");
  expect_bad("op matmul --m 1 --k 1 --n 1 --mem-bw 1e-320", "--mem-bw");
  expect_bad("hw show h200 --mem-bw 1e-320", "--mem-bw");
  expect_bad("train --gpus 16 --node-link-bw 1e-300", "--node-link-bw");
  expect_bad("infer --chips 3", "--chips");
  expect_bad("fuse --context 1e9", "--context");
  expect_bad("threshold matmul --k 4096 --hw h200 --solve m", "--n");
  expect_bad("recompute --model llama-3.1-70b --hw h100-sxm --gpus 8", "--budget");
  expect_bad("train --gpus 8 --grad-compression powersgd:1e9", "--grad-compression");
  expect_bad("infer --model gpt3-175b --prompt 2048 --gen 128", "--prompt/--gen");
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

TEST(ErrorsCli, ConflictingFlags) {
  expect_bad("op elementwise --shape 4096,4096 --tokens 5", "--shape");
  expect_bad("threshold matmul --m 5 --k 4096 --n 4096 --solve m", "--m");
  expect_bad("block --model llama-3.1-8b --hidden 8192", "--model");
}

}  // namespace
}  // namespace ridgeline::testing

namespace ridgeline::testing {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Bytes that are not UTF-8 in a chip's name, a kernel's name or a path reach JSON, SVG and
// text as U+FFFD: never an internal error (exit 1) or a raw byte in a document.
TEST(ReliabilityCli, NonUtf8BytesAreReplacedNotAnInternalError) {
  std::string chip = slurp(std::string(RIDGELINE_SOURCE_DIR) + "/data/hardware/nvidia/h100-sxm.yaml");
  const std::size_t at = chip.find("display_name:");
  ASSERT_NE(at, std::string::npos);
  chip.replace(at, chip.find('\n', at) - at, "display_name: bad \xff name");
  std::ofstream(tmp_path("non_utf8_chip.yaml"), std::ios::binary) << chip;
  auto j = run_json("hw show " + tmp_path("non_utf8_chip.yaml"));  // parsing checks the document is UTF-8
  EXPECT_EQ(j["display_name"], "bad " + kReplacement + " name");

  std::ofstream(tmp_path("non_utf8_kernels.csv"), std::ios::binary) << "name,duration_us,flops,bytes,count\nco\xffpy_kernel,10,1e6,4e8,2\n";
  auto p = run_json("profile " + tmp_path("non_utf8_kernels.csv") + " --hw t4");
  EXPECT_NE(p.dump().find("co\xEF\xBF\xBD"), std::string::npos);
  run_json("advise profile " + tmp_path("non_utf8_kernels.csv") + " --hw t4");
  const std::string svg = tmp_path("non_utf8_roofline.svg");
  auto r = run("plot roofline --profile " + tmp_path("non_utf8_kernels.csv") + " --hw t4 --out " + svg);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string body = slurp(svg);
  EXPECT_EQ(body.find('\xff'), std::string::npos);
  EXPECT_NE(body.find(kReplacement), std::string::npos);

  // A model file under a directory whose name is not UTF-8 (printf writes the byte 0xff).
  const std::string dir = tmp_path("non_utf8_dir_");
  ASSERT_EQ(std::system(("mkdir -p \"" + dir + "$(printf '\\377')\" && cp " + std::string(RIDGELINE_SOURCE_DIR) +
                         "/tests/data/models/megatron-145b.json \"" + dir + "$(printf '\\377')/\"").c_str()),
            0);
  run_json("infer --hw h100-sxm --tp 8 --model \"" + dir + "$(printf '\\377')/megatron-145b.json\"");
}

// A result that cannot be written is an error (exit 1, saying why), not exit 0.
TEST(ReliabilityCli, StdoutWriteErrorsFail) {
  // The harness redirects stdout itself: these run the binary directly.
  auto status_and_err = [](const std::string& redirect) {
    const std::string err = tmp_path("stdout_error.err");
    const int rc = std::system((std::string(RIDGELINE_BIN) + " hw show h200 --json " + redirect + " 2>" + err).c_str());
    return std::pair{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(err)};
  };
  for (const char* redirect : {">/dev/full", ">&-"}) {
    const auto [status, err] = status_and_err(redirect);
    EXPECT_EQ(status, 1) << redirect;
    EXPECT_NE(err.find("stdout"), std::string::npos) << redirect << ": " << err;
  }
}

// An output that is also an input (the same inode, however spelt) is refused before anything
// is written, and the input is left as it was.
TEST(ReliabilityCli, OutputNeverOverwritesAnInput) {
  // Each input is named with the extension its output needs, so that only the inode check
  // stands between the command and the input.
  const std::string d = std::string(RIDGELINE_TMP_DIR) + "/";
  const std::string src = std::string(RIDGELINE_SOURCE_DIR);
  auto copy = [&](const std::string& from, const std::string& to) {
    std::ofstream(d + to, std::ios::binary) << slurp(from);
    return d + to;
  };
  const std::string ert = copy(src + "/tests/data/ert/roofline.json", "clobber_ert.yaml");
  const std::string chip = copy(src + "/data/hardware/nvidia/h100-sxm.yaml", "clobber_chip.svg");
  const std::string cfg = copy(src + "/tests/data/models/megatron-145b.json", "clobber_cfg.html");
  // Two GEMMs on one line (5 us + k ms / 0.8 for 989.4e9 k FLOPs): a fit that holds.
  std::ofstream(d + "clobber_profile.yaml") << "name,duration,flops,bytes,count\nsm90_gemm_1,0.001255,9.894e11,3.35e8,3\n"
                                               "sm90_gemm_4,0.005005,3.9576e12,3.35e8,3\n";
  std::ofstream(d + "clobber_points.svg") << "name,intensity,flops_per_s\nk,10,1e12\n";
  const std::string infer_json = d + "clobber_infer.svg";
  std::ofstream(infer_json) << run("infer --model llama-3.1-8b --hw h100-sxm --json").out;
  for (const std::string& args : {
           "hw import-ert " + ert + " --capacity DRAM=256GB --capacity L1=1MiB --capacity L2=8MiB --capacity L3=32MiB --out " + ert,
           "calibrate " + d + "clobber_profile.yaml --hw h100-sxm --out " + d + "clobber_profile.yaml",
           "plot roofline --hw " + chip + " --out " + chip,
           "plot roofline --hw h100-sxm --points " + d + "clobber_points.svg --out " + d + "./clobber_points.svg",
           "plot memory " + infer_json + " --out " + infer_json,
           "report --model " + cfg + " --hw h100-sxm --tp 8 --out " + cfg,
       }) {
    SCOPED_TRACE(args);
    const std::string input = args.substr(args.rfind(' ') + 1);
    const std::string before = slurp(input);
    expect_bad(args, "refusing to overwrite");
    EXPECT_EQ(slurp(input), before);
  }
}

// The format written follows the file's name, or the command refuses it.
TEST(ReliabilityCli, OutputFormatFollowsTheExtension) {
  const std::string d = std::string(RIDGELINE_TMP_DIR) + "/";
  expect_bad("plot roofline --hw h200 --out " + d + "r.pdf", ".svg or .png");
  expect_bad("op matmul --k 64 --n 64 --sweep m=1..64 --plot " + d + "x.txt", "--plot");
  expect_bad("report --model llama-3.1-8b --hw h100-sxm --out " + d + "x.svg", ".html");
  expect_bad("measure --out " + d + "host.txt", ".yaml");
  auto ok = run("plot roofline --hw h200 --out " + d + "R.SVG");
  EXPECT_EQ(ok.status, 0) << ok.err;
}

// `measure` checks where its result goes before measuring for a minute.
TEST(ReliabilityCli, MeasureChecksItsOutputFirst) {
  expect_bad("measure --out /nonexistent/dir/host.yaml", "does not exist");
  const std::string dir = std::string(RIDGELINE_TMP_DIR) + "/measure_dir.yaml";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  expect_bad("measure --out " + dir, "is a directory");
}

// Under a small address-space limit, commands that run no GEMM finish: OpenBLAS (whose start
// maps buffers and spawns a thread per core) is opened only when a GEMM is timed.
TEST(ReliabilityCli, SmallAddressSpaceLimitNeitherHangsNorCrashes) {
  if (kAddressSanitized) GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space";
  const std::string csv = std::string(RIDGELINE_TMP_DIR) + "/small_limit.csv";
  std::ofstream(csv) << "name,duration_us,flops,bytes\ngemm,100,2e12,1e9\n";
  for (const std::string& cmd : {std::string("hw list"), "profile " + csv + " --hw h100-sxm",
                                 std::string("search train --model llama-3.1-8b --hw h100-sxm --gpus 8 --seq 4096 --global-batch 8 --threads 1")}) {
    SCOPED_TRACE(cmd);
    // timeout: a hang fails the test rather than the suite; 150 MB of address space (what the adversarial run used).
    const std::string out = tmp_path("small_limit.out"), err = tmp_path("small_limit.err");
    const int rc = std::system(("ulimit -v 150000; timeout 60 " + std::string(RIDGELINE_BIN) + " " + cmd + " >" + out + " 2>" + err).c_str());
    EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << slurp(err);
    EXPECT_FALSE(slurp(out).empty());
  }
  // A trace's memory is flat in its kernel events: 600,000 launches of 64 kernels with
  // 50-character names (some 250 bytes each when every launch was kept: out of memory here)
  // read in 150 MB, every launch counted.
  {
    const std::string trace = tmp_path("small_limit_trace.json");
    {
      std::ofstream f(trace);
      f << "{\"traceEvents\": [";
      for (int i = 0; i < 600000; ++i) {
        f << (i ? "," : "") << "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void at::native::vectorized_elementwise_kernel_" << i % 64 << "\",\"ts\":" << 2 * i
          << ",\"dur\":1,\"args\":{\"device\":0}}\n";
      }
      f << "]}";
    }
    const std::string out = tmp_path("small_limit_trace.out"), err = tmp_path("small_limit_trace.err");
    const int rc = std::system(("ulimit -v 150000; timeout 60 " + std::string(RIDGELINE_BIN) + " profile " + trace +
                                " --hw h100-sxm --json >" + out + " 2>" + err).c_str());
    EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << slurp(err);
    EXPECT_NE(slurp(out).find("\"launches\": 600000"), std::string::npos) << slurp(out).substr(0, 400);
  }
  // Memory that cannot be had is a clean error (exit 2, one line), never an abort: three
  // million concurrent clients do not fit 150 MB, which serve says before it starts (issue 42).
  const std::string err = tmp_path("small_limit_oom.err");
  const int rc = std::system(("ulimit -v 150000; timeout 60 " + std::string(RIDGELINE_BIN) +
                              " serve --model llama-3.1-8b --hw h100-sxm --concurrency 3000000 --requests 3000000 --prompt 10 --gen 2"
                              " >/dev/null 2>" + err).c_str());
  EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 2);
  EXPECT_NE(slurp(err).find("3e+06 of the 3000000 requests would be in the system at once"), std::string::npos) << slurp(err);
  // validate under 250 MB: OpenBLAS (128 MiB per thread) is not started, which the notes say,
  // rather than its threads waiting forever; measuring first (no --hw) fails cleanly when its
  // bandwidth arrays cannot be allocated, rather than writing through a null pointer.
  const std::string out = tmp_path("small_limit_validate.json");
  const int v = std::system(("ulimit -v 250000; timeout 120 " + std::string(RIDGELINE_BIN) + " validate --hw " +
                             std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/validate-host.yaml --only gemm --json >" + out + " 2>" + err).c_str());
  EXPECT_EQ(WIFEXITED(v) ? WEXITSTATUS(v) : -1, 0) << slurp(err);
  EXPECT_NE(slurp(out).find("OpenBLAS not started"), std::string::npos);
  // (Whether the arrays fit depends on this machine's caches: done, or out of memory; never a crash.)
  const int m = std::system(("ulimit -v 250000; timeout 120 " + std::string(RIDGELINE_BIN) + " validate --only gemm >/dev/null 2>" + err).c_str());
  const int ms = WIFEXITED(m) ? WEXITSTATUS(m) : -1;
  EXPECT_TRUE(ms == 0 || (ms == 2 && slurp(err).find("out of memory") != std::string::npos)) << ms << ": " << slurp(err);
}

// calibrate keeps a fit only within physical fractions and consistent kernels, and writes no
// chip file without one: pointwise kernels at 0.2% of the bandwidth are miscounted, not slow.
TEST(ReliabilityCli, CalibrateRefusesUnphysicalFits) {
  const std::string csv = tmp_path("unphysical.csv");
  // 3.35e7 k bytes (10 k us at 3.35 TB/s) measured at 2 us + 10 k us / 0.002.
  std::ofstream(csv) << "name,duration,flops,bytes,count\nelementwise_1,0.005002,0,3.35e7,2\nelementwise_10,0.050002,0,3.35e8,2\n"
                        "elementwise_100,0.500002,0,3.35e9,2\n";
  auto j = run_json("calibrate " + csv + " --hw h100-sxm");
  EXPECT_NE(j.dump().find("memory fraction 0.002 is below 0.05"), std::string::npos) << j.dump();
  expect_bad("calibrate " + csv + " --hw h100-sxm --out " + tmp_path("unphysical.yaml"), "no kernel class could be fitted");
}

// A trace says which GPU it ran on (Kineto's deviceProperties): without --hw that chip is
// used when the catalog has it; a different --hw, or a device the catalog lacks, is warned
// about on stderr and in the JSON.
TEST(ReliabilityCli, ProfileTakesTheChipFromTheTrace) {
  const std::string torch = std::string(RIDGELINE_SOURCE_DIR) + "/tests/fixtures/torch/";
  // HolisticTraceAnalysis's trace: 'NVIDIA A100-PG509-200' with 42.3 GB: an A100 40GB.
  const std::string a100 = torch + "benchmark_result_493459_1694039959_trace.json.gz";
  auto j = run_json("profile " + a100);
  EXPECT_EQ(j["hw"], "a100-40gb");
  EXPECT_FALSE(j.contains("hw_warning"));
  auto r = run("profile " + a100 + " --hw h100-sxm --json");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.err.find("warning: --hw h100-sxm but the trace ran on NVIDIA A100-PG509-200 (a100-40gb)"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["hw"], "h100-sxm");
  auto amd = run("profile " + torch + "mi250_minitoy_train_ROCm6_2_kineto.json.gz --json");
  EXPECT_EQ(amd.status, 0);
  EXPECT_NE(amd.err.find("which the catalog does not have"), std::string::npos) << amd.err;
  EXPECT_TRUE(nlohmann::json::parse(amd.out).contains("hw_warning"));
  // Text names without return types, template arguments and parameters (they read alike
  // otherwise); JSON keeps the whole name.
  auto text = run("profile " + a100);
  EXPECT_NE(text.out.find("  at::native::elementwise_kernel "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("void at::native::"), std::string::npos);
  EXPECT_NE(j.dump().find("void at::native::elementwise_kernel<128, 2,"), std::string::npos);
}

// A profile's tensor FLOPs under a roof the chip does not have is refused.
TEST(ReliabilityCli, TensorDtypeTheChipLacks) {
  const std::string csv = tmp_path("tensor_dtype.csv");
  std::ofstream(csv) << "name,duration_us,flops,bytes\nk,10,1e9,1e6\n";
  expect_bad("profile " + csv + " --hw h100-sxm --tensor-dtype fp4", "fp4 has no matrix rate on h100-sxm");
  expect_bad("advise profile " + csv + " --hw h100-sxm --tensor-dtype fp4", "--tensor-dtype");
  expect_bad("calibrate " + csv + " --hw a100-80gb --tensor-dtype fp8", "--tensor-dtype");
}

// Flags that used to be ignored, silently changed or half-checked (an adversarial run).
TEST(ReliabilityCli, FlagsThatWereIgnoredOrBent) {
  const std::string t = "train --model llama-3.1-8b --hw h100-sxm --gpus 8 --global-batch 8";
  const std::string s = "search train --model llama-3.1-8b --hw h100-sxm --gpus 8 --seq 4096 --global-batch 8";
  for (auto [args, mention] : std::initializer_list<std::pair<std::string, std::string>>{
           {t + " --seq 1000000", "131072 positions"},
           {t + " --dtype int8", "bf16 or fp8"},
           {t + " --fsdp --zero 1", "FSDP is ZeRO stage 3"},
           {t + " --memory-headroom 0.1", "--recompute auto"},
           {"recompute --model llama-3.1-8b --hw h200 --gpus 8 --tp 8 --recompute full", "--recompute full"},
           {s + " --tp 8 --tp-max 2", "--tp-max 2"},
           {s + " --tp 3", "--tp: 3 does not divide the 8 GPUs"},
           {s + " --fsdp --zero 1", "FSDP"},
           {"search train --model llama-3.1-8b --hw h100-sxm --gpus 1000000000 --seq 4096 --global-batch 8", "2^24"},
           {"op allreduce --bytes 1.5 --chips 2", "whole number"},
           {"op allreduce --bytes '0.5 B' --chips 2", "whole number"},
           {"op matmul --shard k --m 8 --n 8 --k 4097 --chips 3", "4097 does not divide over 3 chips"},
           {"op matmul --m 1 --k 1 --n 1 --mem-bw ''", "--mem-bw: an empty value"},
           {"search infer --model llama-3.1-8b --weight-dtypes ''", "--weight-dtypes: an empty value"},
           {"op matmul --m 1 --k 1 --n 1 --peak bf16=1e15 --peak bf16=2e15", "bf16 is given twice"},
           {"fuse --model llama-3.1-8b --hw h100-sxm --lengths 1..1024", "--lengths: only with --buckets"},
           {"hw import-ert " + std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/ert/roofline.json --capacity DRAM=1GB --capacity DRAM=2GB --out " + std::string(RIDGELINE_TMP_DIR) + "/twice.yaml",
            "DRAM is given twice"},
       }) {
    SCOPED_TRACE(args);
    expect_bad(args, mention);
  }
}

// Outputs that were drawn empty, and messages that named the wrong thing.
TEST(ReliabilityCli, NothingToDrawAndRightMessages) {
  const std::string d = std::string(RIDGELINE_TMP_DIR) + "/";
  expect_bad("plot roofline --dtype fp4 --hw h200 --out " + d + "fp4.svg", "fp4 has no matrix rate on h200");
  std::string doc = run("infer --model llama-3.1-8b --hw h100-sxm --json").out;
  const std::size_t at = doc.find("\"capacity_bytes\":");
  ASSERT_NE(at, std::string::npos);
  doc.replace(at, doc.find(',', at) - at, "\"capacity_bytes\": 0");
  std::ofstream(d + "zero_capacity.json") << doc;
  expect_bad("plot memory " + d + "zero_capacity.json --out " + d + "zero.svg", "capacity_bytes 0");
  expect_bad("op matmul --m 1 --k 1 --n 1 --chips 9223372036854775807", "too large");
  expect_bad("op elementwise --shape 2,3,4 --hw h100-sxm", "'2,3,4' is not ROWS,COLS");
  expect_bad("hw import-ert " + std::string(RIDGELINE_SOURCE_DIR) +
                 "/tests/data/ert/roofline.json --capacity DRAM=0GB --capacity L1=1MB --capacity L2=1MB --capacity L3=1MB --out " + d + "z.yaml",
             "DRAM=0GB: a level of 0 bytes");
}

// CLI11's own messages in ridgeline's form, with the flag a user most likely meant.
// --help names what each option takes (INT, SIZE, DTYPE, TIME, choices...), never CLI11's
// TEXT: every command and subcommand is walked.
TEST(ReliabilityCli, HelpNamesValueKinds) {
  auto subcommands = [](const std::string& help) {
    std::vector<std::string> names;
    const std::size_t at = help.find("Subcommands:");
    if (at == std::string::npos) return names;
    std::istringstream in(help.substr(at));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      if (line.empty() || line[0] != ' ') break;
      std::istringstream words(line);
      std::string w;
      words >> w;
      if (!w.empty()) names.push_back(w);
    }
    return names;
  };
  std::vector<std::string> commands = {""};
  int seen = 0;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const RunResult r = run(commands[i] + (commands[i].empty() ? "--help" : " --help"));
    ASSERT_EQ(r.status, 0) << commands[i] << ": " << r.err;
    ++seen;
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      const std::size_t dash = line.find("--");
      if (dash == std::string::npos || line.find_first_not_of(' ') != dash) continue;
      EXPECT_EQ(line.find(" TEXT"), std::string::npos) << commands[i] << ": " << line;
    }
    for (const std::string& s : subcommands(r.out)) commands.push_back(commands[i].empty() ? s : commands[i] + " " + s);
  }
  EXPECT_GT(seen, 30);  // the top level, 18 commands and the subcommands of hw, op, plot, search, advise
  const RunResult infer = run("infer --help");
  for (const char* shown : {"--tp INT", "--hw CHIP[,CHIP...]=h100-sxm", "--kv-dtype DTYPE", "--algo auto|ring|tree|direct|nvls",
                            "--kernels unfused|merged", "--expert-imbalance FACTOR|auto"}) {
    EXPECT_NE(infer.out.find(shown), std::string::npos) << shown;
  }
  expect_bad("infer --batch", "--batch: a value is required after the flag (INT)");
  // Commands list no flag they refuse: training and the searches take their own counts, a
  // profile one chip; given anyway, the flag is an error that says so.
  for (const char* cmd : {"train", "search train", "search infer", "search serve", "fuse", "block", "profile", "advise profile", "calibrate"}) {
    EXPECT_EQ(run(std::string(cmd) + " --help").out.find("--chips "), std::string::npos) << cmd;
  }
  EXPECT_EQ(run("profile --help").out.find("--slice "), std::string::npos);
  expect_bad("profile " + std::string(RIDGELINE_SOURCE_DIR) + "/tests/fixtures/ncu/copy_blocked.csv --chips 2", "--chips: a profile is placed on one chip");
  expect_bad("search train --model llama-3.1-8b --gpus 8 --global-batch 8 --chips 8", "--chips: training takes --gpus");
}

TEST(ReliabilityCli, ParseErrorsNameTheFlagAndSuggest) {
  expect_bad("infer --gpus 8", "--gpus: not a flag of `infer`: did you mean --chips?");
  expect_bad("infer --bach 8", "did you mean --batch?");
  expect_bad("op matmul --m 1 --m 2 --k 1 --n 1", "--m: given more than once");
  expect_bad("search", "search: a subcommand is required: expected one of train, infer, serve");
  expect_bad("infer --batch", "--batch: a value is required");
  expect_bad("op matmul --m --k 4 --n 4", "--m: took '--k' as its value");
}

// Counts are integers in JSON ("chips": 4, not 4.0); fractions stay fractions.
TEST(ReliabilityCli, JsonCountsAreIntegers) {
  auto j = run_json("infer --model llama-3.1-8b --hw h100-sxm --chips 4");
  EXPECT_TRUE(j["chips"].is_number_integer()) << j["chips"];
  EXPECT_EQ(j["chips"].get<int>(), 4);
  EXPECT_TRUE(j["ttft_s"].is_number_float());
  auto s = run_json("serve --model llama-3.1-8b --hw h100-sxm --qps 5 --requests 50");
  EXPECT_TRUE(s["gpus"].is_number_integer());
  EXPECT_TRUE(s["ttft_s"]["count"].is_number_integer());
}

// A kernel without FLOP or byte counts (or without byte counts) is unknown: no bound, no share of the bound totals,
// no gap (it was "compute-bound, 0.0% of roof" with its whole time as the gap).
TEST(ReliabilityCli, ProfileKernelsWithoutCountsAreUnknown) {
  const std::string csv = tmp_path("unknown_kernel.csv");
  // gemm: 2e12 FLOPs, 1e9 bytes in 5 ms; empty: nothing counted in 1 ms.
  std::ofstream(csv) << "name,duration,flops,bytes\ngemm,5e-3,2e12,1e9\nempty,1e-3,0,0\n";
  auto j = run_json("profile " + csv + " --hw h100-sxm");
  EXPECT_DOUBLE_EQ(j["time_by_bound_s"]["unknown"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(j["time_by_bound_s"]["compute"].get<double>() + j["time_by_bound_s"]["memory"].get<double>(), 5e-3);
  bool seen = false;
  for (const auto& k : j["kernels"]) {
    if (k["name"] != "empty") continue;
    seen = true;
    EXPECT_EQ(k["bound"], "unknown");
    EXPECT_TRUE(k["fraction_of_roof"].is_null());
    EXPECT_EQ(k["gap_s"].get<double>(), 0);
  }
  EXPECT_TRUE(seen);
  auto text = run("profile " + csv + " --hw h100-sxm");
  EXPECT_NE(text.out.find("1 ms unknown: no byte counts, so no intensity"), std::string::npos) << text.out;
}

// A control character in a value is escaped in the message: one line, always.
TEST(ReliabilityCli, MessagesStayOneLine) {
  expect_bad("hw show \"$(printf 'h200\\nsecond')\"", "h200\\nsecond");
  expect_bad("op \"$(printf 'mat\\tmul')\"", "mat\\tmul");
}

}  // namespace
}  // namespace ridgeline::testing
