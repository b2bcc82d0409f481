// Disaggregated prefill and decode: a lone request by hand (prefill, KV transfer, the decode
// instance's steps), rate matching by hand, bad layouts, and a property over engines and
// loads (docs/serving.md#disaggregated-prefill-and-decode).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/model/speculation.hpp"
#include "ridgeline/serving/simulator.hpp"
#include "ridgeline/serving/step_model.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

using testing::kPs;
constexpr double kHost = 0.4e-3 + 1.1e-6;  // vLLM's host time for a step of one request

struct Lone {
  model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  hw::System sys = testing::catalog_system("h100-sxm");
  ServeConfig cfg;
  StepModel step;
  Lone() {
    cfg.engine = engine_preset({EngineKind::vllm, 13}, sys.chip, 1);  // 0.13: the host between steps
    cfg.engine.front_end_s = 0;  // the steps and transfers alone
    cfg.workload.arrival = Arrival::closed;
    cfg.workload.concurrency = 1;
    cfg.workload.requests = 3;
    cfg.workload.prompt.a = 1000;
    cfg.workload.gen.a = 100;
    cfg.workload.prompt.text = "1000";
    cfg.workload.gen.text = "100";
    cfg.disagg.prefill = cfg.disagg.decode = 1;
    model::ForwardConfig f = cfg.forward;
    f.merged_kernels = true;
    step.prepare(m, sys, f);
  }
  double prefill() const {
    model::StepMix p;
    p.add_prefill(1000, 1000, 0);
    p.fused_attention = true;
    return step.time(p, GraphMode::eager) + kHost;  // past vLLM's largest graph, 512 tokens
  }
  double decode(double kv) const {
    model::StepMix d;
    d.add_decode(kv, 0);
    return step.time(d, GraphMode::graph) + kHost;
  }
};

TEST(Disagg, ALoneRequestIsPrefillTransferThenTheDecodeInstancesSteps) {
  // One client. The prefill instance prefills the 1000-token prompt in one step (no token);
  // the KV of 999 tokens, 131,072 bytes each (2·32 layers·8 heads·128·2 bytes), crosses a
  // 100 GB/s link with 10 us latency: 10 us + 999·131072 / 1e11 = 10 us + 1.30941 ms, after
  // the connector posts a descriptor per block of each of the 2·32 K and V regions:
  // 64·ceil(999/16) = 64·63 = 4032 descriptors at 2.4 us, 9.6768 ms; the decode instance
  // computes the last prompt token again (context 1000) for the first token, then 99 steps at
  // contexts 1001..1099. TTFT = prefill + transfer + first step.
  Lone x;
  x.cfg.disagg.link_Bps = 100e9;
  x.cfg.disagg.link_latency_s = 10e-6;
  const ServingResult r = simulate(x.m, x.sys, x.cfg);
  const double transfer = 10e-6 + 4032 * 2.4e-6 + 999.0 * 131072 / 100e9;
  EXPECT_DOUBLE_EQ(r.disagg.descriptors_per_request_mean, 4032);
  double decode = 0;
  for (int kv = 1001; kv <= 1099; ++kv) decode += x.decode(kv);
  EXPECT_EQ(r.gpus, 2);
  EXPECT_NEAR(r.disagg.transfer_s_mean, transfer, 1e-15);
  EXPECT_DOUBLE_EQ(r.disagg.bytes_per_request_mean, 999.0 * 131072);
  EXPECT_NEAR(r.ttft.mean, x.prefill() + transfer + x.decode(1000), 400 * kPs);
  EXPECT_NEAR(r.e2e.mean, x.prefill() + transfer + x.decode(1000) + decode, 400 * kPs);
  EXPECT_NEAR(r.tpot.mean, decode / 99, 10 * kPs);
  EXPECT_EQ(r.prefill_steps, 3);
  EXPECT_EQ(r.decode_steps, 3 * 100);
}

TEST(Disagg, AnInstantLinkCostsNothingButTheLastTokenAgain) {
  // An infinitely fast link without latency, and a connector that posts its descriptors in
  // no time: TTFT is the prefill and the decode instance's step over the last prompt token, exactly.
  Lone x;
  x.cfg.disagg.link_Bps = 1e300;
  x.cfg.disagg.link_latency_s = 0;
  x.cfg.disagg.descriptor_s = 0;
  const ServingResult r = simulate(x.m, x.sys, x.cfg);
  EXPECT_NEAR(r.ttft.mean, x.prefill() + x.decode(1000), 400 * kPs);
}

TEST(Disagg, TheDecodeInstancePullsOnlyWhatItsPrefixCacheLacks) {
  // Three requests one after another, all of one prefix group of 512 tokens (32 blocks). The
  // first finds the decode instance's cache empty: it pulls 999 tokens, 64·63 = 4032
  // descriptors, and its prefix stays cached there. The next two find the 32 blocks (512
  // tokens, under the 999 they need): they pull 999 - 512 = 487 tokens, 64·(63 - 32) = 1984
  // descriptors. Means: (999 + 2·487)/3 tokens of 131,072 bytes, (4032 + 2·1984)/3 = 8000/3
  // descriptors, 1024/3 tokens found.
  Lone x;
  x.cfg.workload.prefix_groups = 1;
  x.cfg.workload.prefix_tokens = 512;
  x.cfg.disagg.link_Bps = 100e9;
  x.cfg.disagg.link_latency_s = 0;
  const ServingResult r = simulate(x.m, x.sys, x.cfg);
  EXPECT_DOUBLE_EQ(r.disagg.bytes_per_request_mean, (999.0 + 2 * 487) / 3 * 131072);
  EXPECT_DOUBLE_EQ(r.disagg.descriptors_per_request_mean, 8000.0 / 3);
  EXPECT_DOUBLE_EQ(r.disagg.decode_hit_tokens_mean, 1024.0 / 3);
  EXPECT_NEAR(r.disagg.transfer_s_mean, (8000.0 / 3) * 2.4e-6 + (999.0 + 2 * 487) / 3 * 131072 / 100e9, 1e-15);
}

TEST(Disagg, RateMatchingByHand) {
  // Prompts of 1000 under the 8192-token budget: 8 a prefill step (8 sequences: host 0.4 ms
  // + 8·1.1 us; 8000 tokens, eager), 8 requests per step time. Decodes: the cache's tokens over 1100 per request
  // (at most 1024 sequences), at context 1000 + 100/2, 100 tokens each.
  Lone x;
  x.cfg.workload.requests = 20;
  const ServingResult r = simulate(x.m, x.sys, x.cfg);
  model::StepMix pre;
  for (int i = 0; i < 8; ++i) pre.add_prefill(1000, 1000, 0);
  pre.fused_attention = true;
  const double prefill_rate = 8 / (x.step.time(pre, GraphMode::eager) + 0.4e-3 + 8 * 1.1e-6);
  const double batch = std::min(1024.0, std::floor(static_cast<double>(r.memory.kv_tokens) / 1100));
  model::StepMix dec;
  for (int i = 0; i < batch; ++i) dec.add_decode(1051, 0);
  dec.fused_attention = true;
  const double decode_rate = batch / (100 * (x.step.time(dec, GraphMode::graph) + 0.4e-3 + batch * 1.1e-6));
  EXPECT_NEAR(r.disagg.prefill_rate, prefill_rate, 1e-9 * prefill_rate);
  EXPECT_NEAR(r.disagg.decode_rate, decode_rate, 1e-9 * decode_rate);
  EXPECT_NEAR(r.disagg.prefill_per_decode, decode_rate / prefill_rate, 1e-9);
}

TEST(Disagg, RateMatchingGivesEachAttentionRankItsOwnBudgetAndLimit) {
  // Mixtral-8x7B at TP 1 over 2 attention data-parallel ranks, the experts whole over them,
  // vLLM 0.13: each rank's EngineCore has the whole 8192-token budget and its own
  // max_num_seqs, here 300. Prompts of 500 and outputs of 100. Prefill: floor(8192 / 500) =
  // 16 prompts a rank, 32 in an instance's step (host 0.4 ms + 32 x 1.1 us), each rank's
  // forward 8000 tokens: eager (past 512). Decode: up to 300 sequences a rank, min(600, the
  // cache's tokens over 600) in a step, at context 500 + 100/2 + 1; each rank's forward half
  // of them: under 512 tokens, one graph (the step's 600 would not be).
  const model::ModelConfig m = io::bundled_model("mixtral-8x7b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  ServeConfig cfg;
  cfg.forward.tp = 1;
  cfg.forward.ep = 2;
  cfg.forward.experts = model::ForwardConfig::Experts::expert;
  cfg.engine = engine_preset({EngineKind::vllm, 13}, sys.chip, 1);
  cfg.engine.max_num_seqs = 300;
  cfg.disagg.prefill = cfg.disagg.decode = 1;
  StepModel step;
  step.prepare(m, sys, engine_forward(cfg.forward, cfg.engine));
  DisaggResult r;
  disagg_rates(m, sys, cfg, 500, 100, r);
  model::StepMix pre;
  for (int i = 0; i < 32; ++i) pre.add_prefill(500, 500, 0);
  pre.fused_attention = true;
  const double prefill_rate = 32 / (step.time(pre, GraphMode::eager) + 0.4e-3 + 32 * 1.1e-6);
  const double batch = std::min(600.0, std::floor(static_cast<double>(serve_memory(m, sys, cfg, true).kv_tokens) / 600));
  ASSERT_GT(batch, 512);  // the whole step past vLLM's largest graph, each rank's forward within it
  model::StepMix dec;
  for (int i = 0; i < batch; ++i) dec.add_decode(551, 0);
  dec.fused_attention = true;
  const double decode_rate = batch / (100 * (step.time(dec, GraphMode::graph) + 0.4e-3 + batch * 1.1e-6));
  EXPECT_NEAR(r.prefill_rate, prefill_rate, 1e-9 * prefill_rate);
  EXPECT_NEAR(r.decode_rate, decode_rate, 1e-9 * decode_rate);
  // Speculating one token with an MTP layer accepted at 0.8: 1.8 tokens a step. The target
  // verifies 2 tokens a sequence at context 552, each rank's forward of 2 x 300 = 600 tokens
  // without graphs; the draft's one pass, a token a sequence at context 551, each rank's 300
  // in one graph (the step's 600 would not be).
  const model::ModelConfig draft = model::mtp_draft(m);
  cfg.spec.k = 1;
  cfg.spec.accept.fill(0.8);
  cfg.spec.draft = &draft;
  cfg.spec.mtp = true;
  DisaggResult sr;
  disagg_rates(m, sys, cfg, 500, 100, sr);
  const double sbatch = std::min(600.0, std::floor(static_cast<double>(serve_memory(m, sys, cfg, true).kv_tokens) / 600));
  ASSERT_GT(sbatch, 512);
  model::StepMix verify, drafts;
  for (int i = 0; i < sbatch; ++i) verify.add_decode(552, 0, 2), drafts.add_decode(551, 0);
  verify.fused_attention = drafts.fused_attention = true;
  StepModel d;
  d.prepare(draft, sys, engine_forward(cfg.forward, cfg.engine));
  const double device = step.time(verify, GraphMode::eager) + d.time(drafts, GraphMode::graph);
  const double spec_rate = sbatch * 1.8 / (100 * (device + 0.4e-3 + sbatch * 1.1e-6));
  EXPECT_NEAR(sr.decode_rate, spec_rate, 1e-9 * spec_rate);
}

TEST(Disagg, LayoutsWithoutAnInstanceAreRefused) {
  Lone x;
  x.cfg.disagg.prefill = 0;
  EXPECT_THROW(simulate(x.m, x.sys, x.cfg), InputError);
  x.cfg.disagg.prefill = 2;
  x.cfg.replicas = 2;
  EXPECT_THROW(simulate(x.m, x.sys, x.cfg), InputError);
}

// Llama-3.1-70B: one client, 1001-token prompts, 10 outputs, over a 100 GB/s link without
// latency; prefill instances at TP `ptp`, decode instances at their own TP `dtp` (vLLM's
// preset there).
ServeConfig own_tp(const hw::System& sys, std::int64_t ptp, std::int64_t dtp) {
  ServeConfig cfg;
  cfg.forward.tp = ptp;
  cfg.engine = engine_preset({EngineKind::vllm, 13}, sys.chip, ptp);  // 0.13: the host between steps
  cfg.engine.front_end_s = 0;  // the steps and transfers alone
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.concurrency = 1;
  cfg.workload.requests = 2;
  cfg.workload.prompt = parse_length("1001", "--prompt");
  cfg.workload.gen = parse_length("10", "--gen");
  cfg.disagg.prefill = cfg.disagg.decode = 1;
  cfg.disagg.link_Bps = 100e9;
  cfg.disagg.link_latency_s = 0;
  cfg.disagg.decode_tp = dtp;
  cfg.disagg.decode_engine = engine_preset({EngineKind::vllm, 13}, sys.chip, dtp);
  return cfg;
}

TEST(Disagg, DecodeInstancesOfTheirOwnTpReceiveTheirShareOfTheKv) {
  // Llama-3.1-70B: 80 layers, 8 KV heads of 128, bf16. At TP 8 a chip holds one head:
  // 80·2·1·128·2 = 40,960 bytes a token; at TP 2 four: 163,840. The request's KV is its 1000
  // tokens but the last. Prefill TP 2 -> decode TP 8: each decode chip receives 1000·40,960
  // bytes, and each of the 2 prefill chips sends 8/2 = 4 such shares: 163,840,000 bytes
  // through the busiest chip, 1.6384 ms at 100 GB/s. Prefill TP 8 -> decode TP 2: each
  // decode chip receives 1000·163,840 = 163,840,000 bytes (the 8 senders share it). Each
  // decode chip posts a descriptor per block of its 2·80 regions: 160·ceil(1000/16) = 160·63 =
  // 10,080, 24.192 ms at 2.4 us: 25.8304 ms a transfer.
  // GPUs: 1·2 + 1·8 = 10 either way.
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  for (auto [ptp, dtp] : {std::pair<std::int64_t, std::int64_t>{2, 8}, {8, 2}}) {
    const ServingResult r = simulate(m, sys, own_tp(sys, ptp, dtp));
    EXPECT_EQ(r.gpus, 10);
    EXPECT_DOUBLE_EQ(r.disagg.bytes_per_request_mean, 163840000.0);
    EXPECT_NEAR(r.disagg.transfer_s_mean, 1.6384e-3 + 10080 * 2.4e-6, 1e-15);
    EXPECT_EQ(r.disagg.decode_tp, dtp);
    // Each kind of instance holds the cache its own plan leaves: the prefill instance that of
    // a replica at its TP, the decode instance that of a replica at its own.
    for (auto [tp, mem] : {std::pair{ptp, r.memory}, {dtp, r.disagg.decode_memory}}) {
      ServeConfig alone;
      alone.forward.tp = tp;
      alone.engine = engine_preset({EngineKind::vllm, 13}, sys.chip, tp);
      EXPECT_EQ(mem.kv_blocks, serve_memory(m, sys, alone).kv_blocks) << tp;
    }
  }
}

TEST(Disagg, DecodeInstancesOfTheirOwnTpStepAtTheirPlan) {
  // Prefill at TP 2, decode at TP 8. The lone request's first token is the prefill of 1001
  // tokens at TP 2, the 1.6384 + 24.192 ms transfer (above), and the decode instance's step over the last
  // prompt token (context 1001) at TP 8; its other 9 tokens are steps at contexts 1002..1010,
  // at TP 8. vLLM's host time is 0.4 ms + 1.1 us a request at either TP.
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  const ServeConfig cfg = own_tp(sys, 2, 8);
  const ServingResult r = simulate(m, sys, cfg);
  StepModel p, d;
  model::ForwardConfig fp = cfg.forward, fd = cfg.forward;
  fd.tp = 8;
  p.prepare(m, sys, engine_forward(fp, cfg.engine));
  d.prepare(m, sys, engine_forward(fd, *cfg.disagg.decode_engine));
  model::StepMix pre;
  pre.add_prefill(1001, 1001, 0);
  pre.fused_attention = true;
  auto decode = [&](double kv) {
    model::StepMix s;
    s.add_decode(kv, 0);
    return d.time(s, GraphMode::graph) + kHost;
  };
  double rest = 0;
  for (int kv = 1002; kv <= 1010; ++kv) rest += decode(kv);
  const double ttft = p.time(pre, GraphMode::eager) + kHost + 1.6384e-3 + 10080 * 2.4e-6 + decode(1001);  // 1001 tokens: eager
  EXPECT_NEAR(r.ttft.mean, ttft, 100 * kPs);
  EXPECT_NEAR(r.tpot.mean, rest / 9, 10 * kPs);
}

TEST(Disagg, TheDecodeInstancesOwnPlanAtThePrefillOnesChangesNothing) {
  Lone x;
  x.cfg.workload.requests = 12;
  x.cfg.workload.concurrency = 4;
  const ServingResult a = simulate(x.m, x.sys, x.cfg);
  x.cfg.disagg.decode_tp = 1;
  x.cfg.disagg.decode_ep = 1;
  x.cfg.disagg.decode_engine = x.cfg.engine;
  const ServingResult b = simulate(x.m, x.sys, x.cfg);
  EXPECT_EQ(a.ttft.mean, b.ttft.mean);
  EXPECT_EQ(a.tpot.p99, b.tpot.p99);
  EXPECT_EQ(a.e2e.max, b.e2e.max);
  EXPECT_EQ(a.disagg.prefill_per_decode, b.disagg.prefill_per_decode);
}

TEST(Disagg, RateMatchingTakesEachSideFromItsOwnInstances) {
  // Prefill at TP 2 and decode at TP 8: the prefill rate of a pair all at TP 2, the decode
  // rate of a pair all at TP 8.
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  DisaggResult mixed, two, eight;
  disagg_rates(m, sys, own_tp(sys, 2, 8), 1000, 200, mixed);
  disagg_rates(m, sys, own_tp(sys, 2, 2), 1000, 200, two);
  disagg_rates(m, sys, own_tp(sys, 8, 8), 1000, 200, eight);
  EXPECT_EQ(mixed.prefill_rate, two.prefill_rate);
  EXPECT_EQ(mixed.decode_rate, eight.decode_rate);
  EXPECT_NE(two.decode_rate, eight.decode_rate);
  EXPECT_DOUBLE_EQ(mixed.prefill_per_decode, eight.decode_rate / two.prefill_rate);
}

TEST(Disagg, DecodePlansThatCannotRunAreRefused) {
  const model::ModelConfig m = io::bundled_model("llama-3.1-70b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  auto message = [&](const ServeConfig& cfg) {
    try {
      validate(m, sys, cfg);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ServeConfig cfg = own_tp(sys, 8, 3);  // 3 divides neither 64 heads nor 8 KV heads
  EXPECT_EQ(message(cfg).rfind("--disagg-decode: ", 0), 0u) << message(cfg);
  cfg = own_tp(sys, 8, 1);  // 141 GB of weights on one 80 GB chip
  EXPECT_NE(message(cfg).find("--disagg-decode: --hw h100-sxm: 1 x h100-sxm leaves no room for the KV cache"), std::string::npos)
      << message(cfg);
  cfg = own_tp(sys, 8, 8);
  cfg.disagg.prefill = cfg.disagg.decode = 0;  // aggregated, with a decode plan
  EXPECT_EQ(message(cfg).rfind("--disagg-decode: ", 0), 0u) << message(cfg);
}

TEST(Disagg, EachDecodeRankServesItsOwnQueueOfKvWaits) {
  // Mixtral prefilled at TP 2, decoded at TP 1 x EP 2: two attention data-parallel ranks on the
  // decode instance, each with its own pool of 100 blocks of 16 tokens (200 over the two).
  // Requests of 1000-token prompts go to rank id mod 2: 0 and 2 to rank 0, 1 and 3 to rank 1,
  // sent 1 ms apart. A prompt's KV needs blocks_for(999) = 63 blocks to be received. Request 0
  // (500 outputs: at most blocks_for(1499) = 94 of its rank's 100, so it fits alone) holds its
  // rank's pool until it ends; request 2 cannot get 63 of the 37 left there before that.
  // Request 1 (10 outputs) ends after 10 decode steps and leaves rank 1 free for request 3.
  // Each rank's queue first come, first served: request 3 does not wait behind request 2, so
  // its first token comes long before request 0's last (one queue over both ranks would hold it
  // behind request 2 until request 0 ends: after it).
  const model::ModelConfig m = io::bundled_model("mixtral-8x7b");
  const hw::System sys = testing::catalog_system("h100-sxm");
  ServeConfig cfg;
  cfg.forward.tp = 2;
  cfg.engine = engine_preset(EngineKind::vllm, sys.chip, 2);
  cfg.engine.front_end_s = 0;
  cfg.engine.prefix_caching = false;
  cfg.disagg.prefill = cfg.disagg.decode = 1;
  cfg.disagg.decode_tp = 1;
  cfg.disagg.decode_ep = 2;
  EngineConfig& de = cfg.disagg.decode_engine.emplace(engine_preset(EngineKind::vllm, sys.chip, 1));
  de.front_end_s = 0;
  de.prefix_caching = false;
  de.kv_blocks_override = 200;
  cfg.workload.arrival = Arrival::trace;
  for (int i = 0; i < 4; ++i) cfg.workload.trace.push_back({0.001 * i, 1000, i == 0 ? 500 : 10, -1, 0});
  cfg.workload.requests = 4;
  cfg.find_max_rate = false;
  std::map<std::int64_t, RequestRecord> seen;
  const ServingResult r = simulate(m, sys, cfg, [&](const RequestRecord& q) { seen[q.id] = q; });
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_LT(seen[3].arrival_s + seen[3].ttft_s, seen[0].arrival_s + seen[0].e2e_s);
  EXPECT_GT(seen[2].arrival_s + seen[2].ttft_s, seen[0].arrival_s + seen[0].e2e_s);  // rank 0's: after request 0
}

TEST(Disagg, ADecodeInstanceRetractsItsLastRequestForBlocksInTransfer) {
  // Found by fuzz_serving: SGLang with 4 drafts and a 16-token cache. A decode instance had
  // taken blocks for a KV still in transfer, leaving its one decoding request 4 free slots
  // for the 5 (4 drafts and the verified token) its step writes; the last request was kept
  // as if it fitted alone and the step overcommitted the cache. It now retracts and
  // prefills again on the decode instance once the cache has room.
  static const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  static const model::ModelConfig draft = model::mtp_draft(m);
  const hw::System sys = testing::catalog_system("h100-sxm");
  ServeConfig cfg;
  cfg.engine = engine_preset(EngineKind::sglang, sys.chip, 1);
  cfg.engine.max_batched_tokens = cfg.engine.max_num_seqs = 16;
  cfg.engine.chunked_prefill = false;
  cfg.engine.kv_blocks_override = 16;
  cfg.workload.requests = 4;
  cfg.workload.seed = 3;
  cfg.workload.prompt = parse_length("uniform:1,27", "--prompt");
  cfg.workload.gen = parse_length("uniform:1,2", "--gen");
  cfg.workload.arrival = Arrival::closed;
  cfg.workload.concurrency = 16;
  cfg.spec.k = 4;
  cfg.spec.accept.fill(0.66);
  cfg.spec.draft = &draft;
  cfg.spec.mtp = true;
  cfg.disagg.prefill = cfg.disagg.decode = 1;
  cfg.disagg.layerwise = true;
  cfg.find_max_rate = false;
  const ServingResult r = simulate(m, sys, cfg);
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_EQ(r.simulated_requests, 4);
  EXPECT_LE(r.kv_utilisation_max, 1.0);
}

RC_GTEST_PROP(Disagg, EveryRequestIsServedAndEveryBlockReturns, ()) {
  // Random engines, instance counts, loads, caches small enough to preempt, with and without
  // shared prefixes, speculation and layer-wise transfers: every request ends with its output.
  static const model::ModelConfig m = io::bundled_model("llama-3.1-8b");
  static const model::ModelConfig draft = model::mtp_draft(m);
  static const hw::System sys = testing::catalog_system("h100-sxm");
  const auto kind = *rc::gen::element(EngineKind::vllm, EngineKind::sglang, EngineKind::trtllm, EngineKind::static_batch);
  ServeConfig cfg;
  cfg.engine = engine_preset(kind, sys.chip, 1);
  // Down to a cache that just holds the longest request with its drafts (3000 + 400 + k).
  cfg.engine.kv_blocks_override = *rc::gen::inRange<std::int64_t>(3440, 30000) / cfg.engine.kv_block;
  cfg.disagg.prefill = *rc::gen::inRange(1, 4);
  cfg.disagg.decode = *rc::gen::inRange(1, 4);
  cfg.disagg.layerwise = *rc::gen::arbitrary<bool>();
  if (*rc::gen::arbitrary<bool>()) {
    // Decode instances of their own: another TP, sequence limit and cache.
    cfg.disagg.decode_tp = *rc::gen::element<std::int64_t>(1, 2, 4);
    EngineConfig& de = cfg.disagg.decode_engine.emplace(engine_preset(kind, sys.chip, cfg.disagg.decode_tp));
    de.kv_blocks_override = *rc::gen::inRange<std::int64_t>(3440, 30000) / de.kv_block;
    de.max_num_seqs = *rc::gen::inRange<std::int64_t>(1, 300);
  }
  cfg.router = *rc::gen::element(Router::round_robin, Router::least_loaded);
  cfg.workload.arrival = Arrival::poisson;
  cfg.workload.qps = *rc::gen::inRange(1, 200);
  cfg.workload.requests = 80;
  cfg.workload.seed = *rc::gen::inRange(1, 1000);
  cfg.workload.prompt = parse_length("uniform:10,3000", "--prompt");
  cfg.workload.gen = parse_length("uniform:1,400", "--gen");
  if (*rc::gen::arbitrary<bool>()) {
    // Shared prefixes: a decode instance that preempts prefills again, looking up the prefix there.
    cfg.workload.prefix_groups = *rc::gen::inRange(1, 6);
    cfg.workload.prefix_tokens = *rc::gen::inRange(1, 600);
    cfg.router = Router::prefix;
  }
  if (*rc::gen::arbitrary<bool>()) {
    cfg.spec.k = *rc::gen::inRange(1, 5);
    cfg.spec.accept.fill(0.6);
    cfg.spec.draft = &draft;
    cfg.spec.mtp = true;
  }
  cfg.find_max_rate = false;
  const ServingResult r = simulate(m, sys, cfg);
  RC_ASSERT(r.unfinished == 0);
  RC_ASSERT(r.rejected == 0);
  const double outputs = r.output_tokens_per_s * r.measured_span_s;
  RC_ASSERT(std::abs(r.generated_tokens - outputs) <= 1e-6 * outputs);
  RC_ASSERT(r.ttft.min > 0);
}

}  // namespace
}  // namespace ridgeline::serving
