// Issue 42, reliability of serving inputs: impossible inputs are errors (never confident wrong
// answers), an output never writes through a link or over an input, and memory follows what is
// simulated, not the size of the inputs. Each test names the item of the issue it covers; each
// failed on the behaviour before the fix (the command and what it printed then are quoted).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_harness.hpp"

namespace ridgeline::testing {
namespace {

const std::string kM = "serve --model llama-3.1-8b --hw h100-sxm";

// A fresh directory of its own under the build's test directory.
std::string fresh_dir(const std::string& name) {
  const std::string d = tmp_path(name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Runs `ridgeline ARGS` (through /bin/sh, which execs it) with its address space limited to
// `limit_kb` (0: no limit); returns its exit status and, in max_rss_kb, its peak resident set
// (wait4: this child alone, not the tests' other children).
struct Limited {
  int status = -1;
  long max_rss_kb = 0;
  double seconds = 0;
  std::string out, err;
};
Limited run_limited(const std::string& args, long limit_kb) {
  static int counter = 0;
  const std::string base = tmp_path("limited_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  const std::string cmd = "exec " + std::string(RIDGELINE_BIN) + " " + args + " >" + base + ".out 2>" + base + ".err";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    if (limit_kb > 0) {
      const rlimit rl{static_cast<rlim_t>(limit_kb) * 1024, static_cast<rlim_t>(limit_kb) * 1024};
      setrlimit(RLIMIT_AS, &rl);
    }
    alarm(120);  // a hang fails the test, not the suite
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  Limited r;
  int st = 0;
  rusage ru{};
  wait4(pid, &st, 0, &ru);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.max_rss_kb = ru.ru_maxrss;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

// ---- 1. Simulated time overflows -----------------------------------------------------------

TEST(ServeInputsCli, StepsPastTheSimulatedTimeAreAnError) {
  // At 1000 B/s a step reads at least the 16.06 GB of weights: >= 1.6e7 s, past the 4e6 s a run
  // simulates (int64 picoseconds hold 9.2e6 s). It printed TTFT 1 ps, E2E 3 ps, 3.1 req/s and
  // "sustainable: yes". The first step starts when the scheduler sees the first request, after
  // the server's front end (vLLM's preset: 4 ms).
  expect_bad(kM + " --mem-bw 1000 --qps 1 --requests 3 --gen 3",
             "simulated time overflows: a step of replica 0 (1024 prompt tokens, 0 decoding sequences) starting at 0.004 s");
  expect_bad(kM + " --mem-bw 1000 --qps 1 --requests 3 --gen 3", "past the 4e+06 s (46 days) a run can simulate");
  // 1000 FLOP/s: a 1024-token prefill of 16 GFLOP per token is 1.6e10 s.
  expect_bad(kM + " --peak bf16=1000 --qps 1 --requests 3 --gen 3", "simulated time overflows: a step of replica 0");
  // It "met" the SLO on one replica.
  expect_bad(kM + " --mem-bw 1000 --qps 1 --requests 3 --gen 3 --slo ttft_p99=1s,tpot_p99=50ms --replicas auto",
             "simulated time overflows");
  // A KV transfer of 99999 tokens x 131072 bytes (32 layers x 8 KV heads x 128 x K,V x 2 bytes)
  // at 1000 B/s: 1.31e7 s.
  expect_bad(kM + " --qps 1 --requests 2 --prompt 100000 --gen 2 --disagg 1:1 --disagg-link-bw 1kB/s",
             "simulated time overflows: the KV transfer of request 0 (1.31e+10 bytes at 1e+03 B/s)");
}

TEST(ServeInputsCli, ADtypeTheChipCannotMultiplyIsRefused) {
  // A T4 (sm_75) has no bf16 matrix rate, and Llama-2-7B's checkpoint is bf16; an A100 has no
  // fp8. Both steps were priced at no rate, NaN seconds, and the run said "simulated time
  // overflows: a step of replica 0 (...) lasts -nan s". Now the dtype is named, as `infer`
  // names it, under any engine and disaggregated too.
  const std::string t4 = "serve --model llama-2-7b --hw t4 --concurrency 2 --requests 4 --prompt 200 --gen 20";
  for (const std::string more : {"", " --engine sglang", " --engine trtllm", " --engine static", " --disagg 1:1"}) {
    expect_bad(t4 + more, "--hw t4: the matrix unit has no bf16 rate");
  }
  expect_bad("serve --model llama-3.1-8b --hw a100-80gb --weight-dtype fp8_e4m3 --compute-dtype fp8_e4m3 --qps 1 --requests 3",
             "--hw a100-80gb: the matrix unit has no fp8_e4m3 rate");
  // In fp16, which the T4 multiplies, the run is served.
  EXPECT_EQ(run_json(t4 + " --weight-dtype fp16 --act-dtype fp16")["measured_requests"], 4);
}

TEST(ServeInputsCli, ARunPastTheSimulatedTimeEndsInsteadOfHanging) {
  // At 1e6 B/s a step lasts >= 16060 s: 1000 requests need weeks of steps. The timeline's
  // bucket widths doubled past int64 and the run hung (5 minutes of CPU, killed); now the step
  // that would end past 4e6 s stops it.
  const Limited r = run_limited("serve --model llama-3.1-8b --hw h100-sxm --qps 1 --mem-bw 1e6", 0);  // killed after 120 s
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("simulated time overflows: a step of replica 0"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, 60);
}

// ---- 2. Sustainable only when it is ---------------------------------------------------------

TEST(ServeInputsCli, UsersAndThinkTimeAreAClosedLoopOfTheirOwn) {
  expect_bad(kM + " --users 2 --concurrency 2", "--users: a closed loop of users takes no --qps, --concurrency or --trace");
  expect_bad(kM + " --users 2 --qps 1", "--users: a closed loop of users takes no");
  expect_bad(kM + " --qps 1 --think-time 2s", "--think-time: the pause of each of --users N between requests: give --users");
  expect_bad(kM + " --users 2 --think-time gauss:1s", "--think-time: 'gauss:1s' is not a think time");
  expect_bad(kM + " --users 2 --think-time uniform:3s,1s", "--think-time: 'uniform:3s,1s' has its maximum below its minimum");
  expect_bad(kM + " --users 2 --arrival gamma:2", "--arrival: a closed loop's clients");
  expect_bad(kM + " --users 99999999", "--users: 99999999 is out of range: expected 1 to 16777216");
}

TEST(ServeInputsCli, SeedsOutOfRangeOrAQuantileWithoutSeedsAreRefused) {
  expect_bad(kM + " --qps 1 --requests 10 --seeds 0", "--seeds");
  expect_bad(kM + " --qps 1 --requests 10 --seeds 65", "--seeds: 65 is out of range: expected 1 to 64 runs");
  expect_bad(kM + " --qps 1 --requests 10 --seeds 3 --seed-quantile 0", "--seed-quantile: 0 is out of range");
  expect_bad(kM + " --qps 1 --requests 10 --seeds 3 --seed-quantile 1.5", "--seed-quantile: 1.5 is out of range");
  expect_bad(kM + " --qps 1 --requests 10 --seed-quantile 0.5", "--seed-quantile: a quantile of the seeds needs --seeds N of 2 or more");
  expect_bad(kM + " --qps 1,2 --requests 10 --seeds 2", "--seeds: one rate at a time");
  expect_bad(kM + " --qps 1 --requests 10 --seeds 2 --requests-out x.csv", "--requests-out/--steps-out/--per-request: one seed's run");
  expect_bad("search serve --model llama-3.1-8b --hw h100-sxm --qps 1 --requests 10 --slo ttft_p99=1s --seeds 70", "--seeds: 70 is out of range");
}

TEST(ServeInputsCli, NothingServedIsAnErrorNamingWhy) {
  // Every request rejected printed tables of zeros, "sustainable: yes" and exit 0. The run
  // chooses its window: an empty fleet is flat at every check of its blocks of 1000 / 32 = 31
  // arrivals, at 8 blocks and at 11 (4 x 8 / 3), so 341 warm-up requests and 1000 measured are
  // sent, all rejected on arrival.
  expect_bad(kM + " --qps 1 --prompt 200000",
             "no request can be served: all 1341 were rejected (1341 longer than the model's context of 131072 tokens");
  // One block of 16 tokens holds no request of 1024 + 256.
  expect_bad(kM + " --qps 1 --kv-blocks 1", "all 1341 were rejected (1341 beyond the KV cache of 16 tokens per instance)");
  expect_bad("serve --model llama-3.1-70b --hw h100-sxm --tp 2 --qps 1 --prompt 100000 --requests 20",
             "all 20 were rejected (20 beyond the KV cache of");
  const std::string trace = tmp_path("two_million_out.csv");
  std::ofstream(trace) << "timestamp_s,input_tokens,output_tokens\n0,100,2000000\n";
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --trace " + trace, "all 1 were rejected (1 longer than the model's context");
}

TEST(ServeInputsCli, AServedFractionOfTheOfferedRateIsSaid) {
  // Steps of >= 16060 s (16.06 GB at 1e6 B/s): 3 requests offered within seconds finish over
  // hours, a share A / (A + D) < 1e-3 of the offered rate (A: their arrival span, under 30 s;
  // D >= 2 steps). It printed "sustainable: yes".
  auto j = run_json(kM + " --qps 1 --requests 3 --gen 3 --mem-bw 1e6");
  EXPECT_FALSE(j["sustainable"].get<bool>());
  EXPECT_EQ(j["unsustainable_reason"], "served_fraction");
  EXPECT_LT(j["served_fraction"].get<double>(), 1e-3);
  // A KV transfer of 1023 x 131072 bytes at 1000 B/s takes 1.34e5 s for every request, side by
  // side (no queue): sustainable, but the share of the offered rate served over the run is said.
  // It printed TTFT 134,087 s with "sustainable: yes" and nothing else.
  const std::string disagg = kM + " --qps 1 --requests 10 --disagg 1:1 --disagg-link-bw 1kB/s";
  j = run_json(disagg);
  EXPECT_LT(j["served_fraction"].get<double>(), 1e-3);
  EXPECT_GT(j["ttft_s"]["min"].get<double>(), 1023.0 * 131072 / 1000);
  const RunResult t = run(disagg);
  EXPECT_NE(t.out.find("of the offered rate was served over the run"), std::string::npos) << t.out;
  // A load served in full stays sustainable, its fraction near 1: 200 requests at 5/s over ~40 s,
  // each done in ~2 s, 40 / 42 of the rate at least.
  j = run_json(kM + " --prompt 512 --gen 64 --qps 5 --requests 200");
  EXPECT_TRUE(j["sustainable"].get<bool>());
  EXPECT_GT(j["served_fraction"].get<double>(), 0.9);
  EXPECT_TRUE(j["unsustainable_reason"].is_null());
}

// ---- 3. Flags that are ignored or contradict the output ------------------------------------

TEST(ServeInputsCli, FlagsATraceDoesNotUseAreRefused) {
  const std::string trace = tmp_path("three_requests.csv");
  std::ofstream(trace) << "timestamp_s,input_tokens,output_tokens\n0,100,10\n0.5,200,20\n1.5,300,30\n";
  const std::string t = kM + " --trace " + trace;
  // Accepted before, with arrivals at -158 s, or a rate beyond every other path's 1e7.
  expect_bad(t + " --qps -1", "--qps: -1 is out of range");
  expect_bad(t + " --qps 1e300", "--qps: 1e+300 is out of range");
  // Ignored but echoed as applied.
  expect_bad(t + " --prefix-groups 2 --prefix-tokens 50", "--prefix-groups: a trace gives each request's lengths and prefix");
  expect_bad(t + " --prefix-tokens 50", "--prefix-tokens: a trace gives");
  expect_bad(t + " --prompt 5", "--prompt: a trace gives");
  expect_bad(t + " --arrival gamma:5", "--arrival: a trace's requests arrive at its timestamps");
  // The report said prompt 1024, gen 256 and qps null for a trace.
  auto j = run_json(t);
  EXPECT_TRUE(j["workload"]["prompt"].is_null());
  EXPECT_TRUE(j["workload"]["gen"].is_null());
  EXPECT_TRUE(j["workload"]["qps"].is_null());
  EXPECT_EQ(j["workload"]["trace"], trace);
  EXPECT_EQ(j["workload"]["requests"], 3);
  const RunResult text = run(t);
  EXPECT_NE(text.out.find("workload: trace " + trace + ", lengths from the trace; 3 requests"), std::string::npos) << text.out;
  // search serve's command for its best deployment runs as printed: no --prompt or --gen with
  // a trace (they are refused there).
  const auto fleet = run_json("search serve --model llama-3.1-8b --hw h100-sxm --tp 1 --trace " + trace + " --slo ttft_p99=1s --max-rate off");
  const std::string command = fleet["best"]["command"].get<std::string>();
  EXPECT_EQ(command.find("--prompt"), std::string::npos) << command;
  EXPECT_EQ(run(command.substr(std::string("ridgeline ").size())).status, 0) << command;
  // With --qps the trace's lengths take new arrivals, gamma ones when asked: applied and shown.
  j = run_json(t + " --qps 2 --arrival gamma:2");
  EXPECT_EQ(j["workload"]["qps"], 2);
  EXPECT_NE(j["workload"]["arrival"].get<std::string>().find("gamma arrivals (CV 2) at 2 req/s"), std::string::npos);
}

TEST(ServeInputsCli, FlagsTheLoadDoesNotUseAreRefused) {
  // A 100000-token prefix in 100-token prompts made every prompt 100001 tokens while the report
  // said prompt 100.
  expect_bad(kM + " --qps 1 --requests 5 --prefix-groups 1 --prefix-tokens 100000 --prompt 100",
             "--prefix-tokens: 100000 shared tokens leave no token of its own in a prompt of 100 tokens");
  // uniform:100,300 has mean 200: a 250-token prefix would lengthen most prompts.
  expect_bad(kM + " --qps 1 --requests 5 --prefix-groups 1 --prefix-tokens 250 --prompt uniform:100,300", "prompts of mean 200");
  expect_bad(kM + " --concurrency 2 --requests 5 --arrival gamma:5", "--arrival: a closed loop's clients");
  expect_bad(kM + " --qps 1 --requests 5 --mixed-chunk on", "--mixed-chunk: SGLang's knob");
  EXPECT_EQ(run(kM + " --qps 1 --requests 5 --mixed-chunk on --engine sglang").status, 0);
  // --horizon 0s ran with no horizon at all.
  expect_bad(kM + " --qps 1 --requests 5 --horizon 0s", "--horizon: '0s' would stop the run before it starts");
}

// ---- 4. Duplicates ----------------------------------------------------------------------------

TEST(ServeInputsCli, AValueGivenTwiceIsRefused) {
  // The last one won silently.
  expect_bad(kM + " --qps 1 --requests 5 --slo ttft_p99=1s,ttft_p99=1ns", "--slo: ttft is given a target twice");
  expect_bad(kM + " --qps 1 --requests 5 --slo ttft_p50=1s,ttft_p99=2s", "--slo: ttft is given a target twice");
  expect_bad("search serve --model llama-3.1-8b --hw h100-sxm --qps 1 --requests 50 --slo ttft_p99=1s --price h100-sxm=2.5/h "
             "--price h100-sxm=9/h",
             "--price: h100-sxm is priced twice");
  expect_bad(kM + " --qps 1 --requests 5 --disagg 1:1 --disagg-decode tp=2,tp=4", "--disagg-decode: tp is given twice");
  expect_bad("train --model llama-3.1-8b --hw h100-sxm --gpus 8 --global-batch 64 --tokens 1T --price h100-sxm=2/h --price 3/h",
             "--price: '3/h' prices every chip again");
  expect_bad("train --model llama-3.1-8b --hw h100-sxm --gpus 8 --global-batch 64 --tokens 1T --price h100-sxm=2/h --price h100-sxm=3/h",
             "--price: 'h100-sxm=3/h' prices h100-sxm again");
  // Two identical columns.
  expect_bad("serve --model llama-3.1-8b --hw h200,H200 --qps 1 --requests 5", "--hw: 'h200,H200' names h200 again");
}

// ---- 5. search serve's closest deployment ------------------------------------------------------

TEST(ServeInputsCli, SearchServesClosestDeploymentCountsItsGpus) {
  // A million requests a second outrun even 1024 replicas: the closest is the largest fleet
  // tried, 1024 replicas of one H100 (tp 1), which said gpus 0.
  auto j = run_json("search serve --model llama-3.1-8b --hw h100-sxm --tp 1 --qps 1e6 --requests 2000 --slo ttft_p99=1s");
  ASSERT_TRUE(j["best"].is_null() || j["best"].empty()) << j["best"];
  const auto& c = j["closest"];
  ASSERT_FALSE(c.is_null());
  EXPECT_EQ(c["replicas"], 1024);
  EXPECT_EQ(c["gpus"], 1024);
  // A target below every floor: one replica at tp 8 (the lowest TTFT floor) is 8 GPUs.
  j = run_json("search serve --model llama-3.1-8b --hw h100-sxm --tp 8 --qps 1 --requests 50 --slo ttft_p99=1ns");
  EXPECT_EQ(j["closest"]["reason"], "ttft_floor");
  EXPECT_EQ(j["closest"]["replicas"], 1);
  EXPECT_EQ(j["closest"]["gpus"], 8);
}

// ---- 6. Output paths ----------------------------------------------------------------------------

TEST(ServeInputsCli, AnOutputNeverWritesThroughALinkOrOverAnInput) {
  const std::string d = fresh_dir("outputs_links");
  std::ofstream(d + "/victim.txt") << "victim\n";
  // `ln -s victim.txt sy.csv.tmp` made the CSV land in victim.txt: the temporary was always
  // PATH.tmp, opened following links.
  ASSERT_EQ(symlink("victim.txt", (d + "/sy.csv.tmp").c_str()), 0);
  ASSERT_EQ(run(kM + " --qps 1 --requests 3 --gen 3 --requests-out " + d + "/sy.csv").status, 0);
  EXPECT_EQ(slurp(d + "/victim.txt"), "victim\n");
  std::ifstream rows(d + "/sy.csv");
  int n = 0;
  for (std::string line; std::getline(rows, line);) ++n;
  EXPECT_EQ(n, 4);  // the header and 3 requests
  // Same with --plot (SVG and PNG go through one writer).
  ASSERT_EQ(symlink("victim.txt", (d + "/p.svg.tmp").c_str()), 0);
  ASSERT_EQ(run(kM + " --qps 1 --requests 3 --gen 3 --plot " + d + "/p.svg").status, 0);
  EXPECT_EQ(slurp(d + "/victim.txt"), "victim\n");
  EXPECT_NE(slurp(d + "/p.svg").find("<svg"), std::string::npos);
  // No temporary is left behind: the links planted are all that is there besides the outputs.
  EXPECT_EQ(listing(d), (std::vector<std::string>{"p.svg", "p.svg.tmp", "sy.csv", "sy.csv.tmp", "victim.txt"}));
  // `--trace rt.csv.tmp --requests-out rt.csv` exited 0 and the trace was gone.
  const std::string trace = d + "/rt.csv.tmp", body = "timestamp_s,input_tokens,output_tokens\n0,100,10\n0.5,200,20\n";
  std::ofstream(trace) << body;
  ASSERT_EQ(run(kM + " --trace " + trace + " --requests-out " + d + "/rt.csv").status, 0);
  EXPECT_EQ(slurp(trace), body);
  EXPECT_NE(slurp(d + "/rt.csv").find("id,replica"), std::string::npos);
  // An output that is the trace by another name (a link to it) is refused before anything runs.
  ASSERT_EQ(symlink("rt.csv.tmp", (d + "/alias.csv").c_str()), 0);
  expect_bad(kM + " --trace " + trace + " --requests-out " + d + "/alias.csv", "alias.csv is the --trace file: it would be overwritten");
  EXPECT_EQ(slurp(trace), body);
  // A link at the output's own name is replaced by the file (rename), its target untouched.
  std::ofstream(d + "/other.txt") << "other\n";
  ASSERT_EQ(symlink("other.txt", (d + "/out.csv").c_str()), 0);
  ASSERT_EQ(run(kM + " --qps 1 --requests 2 --gen 2 --requests-out " + d + "/out.csv").status, 0);
  EXPECT_EQ(slurp(d + "/other.txt"), "other\n");
  struct stat st {};
  ASSERT_EQ(lstat((d + "/out.csv").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

// ---- 7. Messages that mislead -------------------------------------------------------------------

TEST(ServeInputsCli, MessagesSayWhatIsWrong) {
  // "10 s is out of range: expected 0 to 10 s".
  expect_bad(kM + " --qps 1 --requests 5 --step-overhead 10s", "expected at least 0 s and less than 10 s");
  // 7200 s and 2 h are one time: both accepted as a horizon and an E2E target ("outside the
  // plausible range 0 to 3600 (base units)" and "unknown unit 'h'" before).
  for (const std::string two_hours : {"7200s", "2h", "120min"}) {
    EXPECT_EQ(run(kM + " --qps 1 --requests 5 --horizon " + two_hours).status, 0) << two_hours;
    EXPECT_EQ(run_json(kM + " --qps 1 --requests 5 --slo e2e_p99=" + two_hours)["slo_met"], true) << two_hours;
  }
  expect_bad(kM + " --qps 1 --requests 5 --horizon 5e6s", "--horizon: '5e6s' is out of range: expected 0 to 4e+06 s (46.3 days)");
  // Elsewhere a time beyond an hour names its range in seconds.
  expect_bad("search infer --model llama-3.1-8b --hw h100-sxm --ttft-max 7200s", "--ttft-max: '7200s' is outside the plausible range 0 s to 3600 s");
  // An unsorted JSON lines trace of 3 lines named row 4; a CSV with blank lines named a row.
  const std::string jsonl = tmp_path("unsorted.jsonl"), csv = tmp_path("blank_lines.csv");
  std::ofstream(jsonl) << "{\"timestamp_s\":1,\"input_tokens\":5,\"output_tokens\":5}\n{\"timestamp_s\":2,\"input_tokens\":5,\"output_tokens\":5}\n"
                          "{\"timestamp_s\":0,\"input_tokens\":5,\"output_tokens\":5}\n";
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --trace " + jsonl, "unsorted.jsonl: line 3: its timestamp is earlier than line 2's");
  std::ofstream(csv) << "timestamp_s,input_tokens,output_tokens\n\n0,100,10\n\n0.5,x,20\n";
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --trace " + csv, "blank_lines.csv: line 5: input_tokens 'x'");
  // The Azure reader took 31 February and year 0000.
  const std::string feb = tmp_path("feb31.csv"), year0 = tmp_path("year0.csv");
  std::ofstream(feb) << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-31 00:00:00,10,5\n";
  std::ofstream(year0) << "TIMESTAMP,ContextTokens,GeneratedTokens\n0000-01-01 00:00:00,10,5\n0000-01-01 00:00:01,10,5\n";
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --trace " + feb, "TIMESTAMP '2023-02-31 00:00:00': expected a day of the month from 1 to 28");
  expect_bad("serve --model llama-3.1-8b --hw h100-sxm --trace " + year0, "expected a date from 1970 on");
  // --replicas auto without --slo complained about --requests-out/--per-request (Python asks
  // for the columns): the missing targets come first.
  expect_bad(kM + " --qps 4 --requests 5 --replicas auto --per-request", "--replicas auto: give the targets to meet with --slo");
  // A number beyond a double in config.json leaked the JSON library's exception text.
  const std::string dir = fresh_dir("model_1e400");
  std::string config = slurp(std::string(RIDGELINE_SOURCE_DIR) + "/data/models/llama/llama-3.1-8b.json");
  const std::size_t theta = config.find("\"rope_theta\"");
  ASSERT_NE(theta, std::string::npos);
  config.replace(theta, config.find(',', theta) - theta, "\"rope_theta\": 1e400");
  std::ofstream(dir + "/config.json") << config;
  const RunResult r = run("infer --model " + dir + "/config.json --hw h100-sxm");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("a number too large for a double ('1e400')"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
}

// ---- 8. Memory that inputs do not need -----------------------------------------------------------

// A trace of 10^7 rows (120 MB: "t,100,10" with t = i / 10 s, a 1e6 s span) and a run that
// takes its first 1000 requests: the file was parsed and kept whole (850 MB); now the rows the
// run takes are read and none is kept. Under 256 MB of address space (what the binary maps
// with its catalog and libraries, and the run) it finishes; its peak resident set stays under
// 64 MB (rows read in 1 MiB windows; the 1000 requests' state is kilobytes).
TEST(ServeInputsCli, ATenMillionRowTraceRunsInBoundedMemory) {
  const std::string d = fresh_dir("big_trace");
  const std::string trace = d + "/ten_million.csv";
  {
    std::FILE* f = std::fopen(trace.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::string buf = "timestamp_s,input_tokens,output_tokens\n";
    char row[48];
    for (long i = 0; i < 10'000'000; ++i) {
      const int n = std::snprintf(row, sizeof row, "%ld.%ld,100,10\n", i / 10, i % 10);
      buf.append(row, static_cast<std::size_t>(n));
      if (buf.size() > (1 << 20)) {
        ASSERT_EQ(std::fwrite(buf.data(), 1, buf.size(), f), buf.size());
        buf.clear();
      }
    }
    ASSERT_EQ(std::fwrite(buf.data(), 1, buf.size(), f), buf.size());
    std::fclose(f);
  }
  const long limit_kb = kAddressSanitized ? 0 : 256 * 1024;
  const Limited r = run_limited(kM + " --trace " + trace + " --requests 1000 --json", limit_kb);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["simulated_requests"], 1000);
  // 1000 requests at 10/s: the last arrives at 99.9 s.
  EXPECT_EQ(j["workload"]["requests"], 1000);
  EXPECT_LT(r.max_rss_kb, kAddressSanitized ? 400 * 1024 : 64 * 1024) << r.max_rss_kb << " kB";
  std::printf("[ measured ] serve --trace (10^7 rows) --requests 1000: %.2f s, peak RSS %ld kB\n", r.seconds, r.max_rss_kb);
  // search serve takes its 500 requests the same way (it held 2 GB).
  const Limited s = run_limited("search serve --model llama-3.1-8b --hw h100-sxm --tp 1 --trace " + trace +
                                    " --requests 500 --slo ttft_p99=1s --max-rate off --json",
                                limit_kb);
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_FALSE(nlohmann::json::parse(s.out)["best"].is_null());
  EXPECT_LT(s.max_rss_kb, kAddressSanitized ? 400 * 1024 : 96 * 1024) << s.max_rss_kb << " kB";
  std::printf("[ measured ] search serve --trace (10^7 rows) --requests 500: %.2f s, peak RSS %ld kB\n", s.seconds, s.max_rss_kb);
  std::filesystem::remove_all(d);
}

TEST(ServeInputsCli, MemoryFollowsWhatIsSimulated) {
  // 2^24 prefix groups and 100 requests: each replica kept a slot for every group id up to the
  // largest drawn (623 MB); now for the groups that occur (at most 100).
  const Limited g = run_limited(kM + " --qps 10 --requests 100 --prompt 512 --gen 16 --prefix-groups 16777216 --prefix-tokens 100",
                                kAddressSanitized ? 0 : 256 * 1024);
  EXPECT_EQ(g.status, 0) << g.err;
  EXPECT_LT(g.max_rss_kb, kAddressSanitized ? 400 * 1024 : 64 * 1024) << g.max_rss_kb << " kB";
  if (kAddressSanitized) GTEST_SKIP() << "the rest sizes runs by the address-space limit";
  // 2^27 requests at 1e7/s arrive in 13.4 s; one replica finishes at most 13.4 s / 0.4 ms (its
  // host time a step) x 1024 sequences / 256 steps each = 134,218 of them: >= 1.34e8 requests
  // in the system at once, > 30 GB. It grew to 13.9 GB before "out of memory"; now refused
  // before the run, in well under a second, saying what it would need.
  const Limited q = run_limited(kM + " --qps 1e7 --requests 134217728", 4 * 1024 * 1024);
  EXPECT_EQ(q.status, 2) << q.err;
  EXPECT_NE(q.err.find("of the 134217728 requests would be in the system at once"), std::string::npos) << q.err;
  EXPECT_LT(q.seconds, 10);
  // Per-request columns are held until the end: 2^26 rows do not fit 4 GB.
  const Limited c = run_limited(kM + " --qps 1000 --requests 67108864 --per-request --json", 4 * 1024 * 1024);
  EXPECT_EQ(c.status, 2) << c.err;
  EXPECT_NE(c.err.find("--per-request: 67108864 requests' columns would need about"), std::string::npos) << c.err;
}

// ---- 9. Profiles faster than the roof ------------------------------------------------------------

TEST(ServeInputsCli, AKernelFasterThanTheRoofIsFlagged) {
  // 1e15 FLOP in 1 ps on an H100 (989 TFLOP/s: 1.01 s at the roof): gap_s -1.01 and nothing
  // else said. Now a warning in the text, in the JSON's warnings and on stderr.
  const std::string csv = tmp_path("above_roof.csv");
  std::ofstream(csv) << "name,duration_us,flops,bytes,count\nfast,0.000001,1e15,1e3,1\n";
  const RunResult t = run("profile " + csv + " --hw h100-sxm");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("warning: 1 kernel ran faster than h100-sxm's roof allows (fast:"), std::string::npos) << t.out;
  EXPECT_NE(t.err.find("ridgeline: warning: 1 kernel ran faster"), std::string::npos) << t.err;
  const auto j = run_json("profile " + csv + " --hw h100-sxm");
  EXPECT_EQ(j["above_roof_kernels"], 1);
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_NE(j["warnings"][0].get<std::string>().find("the counts or the chip are wrong"), std::string::npos);
  const RunResult a = run("advise profile " + csv + " --hw h100-sxm");
  EXPECT_NE(a.err.find("faster than h100-sxm's roof"), std::string::npos) << a.err;
  // A kernel under the roof raises nothing: 2e12 FLOP in 100 ms.
  std::ofstream(csv) << "name,duration_us,flops,bytes,count\nslow,100000,2e12,1e9,1\n";
  EXPECT_EQ(run_json("profile " + csv + " --hw h100-sxm")["warnings"].size(), 0u);
}

}  // namespace
}  // namespace ridgeline::testing
