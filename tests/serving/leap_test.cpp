// Leaps (docs/serving.md#speed): a replica's quiet decode steps run in one loop, only the last
// one's end an event. A run with them and a run without give the same result: every request's
// record exactly (times are whole picoseconds, the same steps at the same times), and every
// reported number to 1e-12 relative — time integrals and sums of step times are the same
// terms added in another order or split at other events (an integral of a constant over a
// span, summed in pieces or at once), which rounds differently in the last bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ridgeline/io/model_file.hpp"
#include "ridgeline/report/serving.hpp"
#include "ridgeline/serving/simulator.hpp"
#include "toy_chip.hpp"

namespace ridgeline::serving {
namespace {

constexpr double kRel = 1e-12;

// Every number of a and b within kRel of each other (wall time apart), every other value equal.
void expect_same(const nlohmann::json& a, const nlohmann::json& b, const std::string& path, int& differences) {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (it.key() == "wall_s" || it.key() == "simulated_requests_per_s") continue;
      if (!b.contains(it.key())) {
        ADD_FAILURE() << path << "." << it.key() << " only with leaps";
        ++differences;
        continue;
      }
      expect_same(*it, b[it.key()], path + "." + it.key(), differences);
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) ADD_FAILURE() << path << "." << it.key() << " only without leaps", ++differences;
    }
    return;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) {
      ADD_FAILURE() << path << ": " << a.size() << " vs " << b.size() << " items";
      ++differences;
      return;
    }
    for (std::size_t i = 0; i < a.size(); ++i) expect_same(a[i], b[i], path + "[" + std::to_string(i) + "]", differences);
    return;
  }
  if (a.is_number_float() || b.is_number_float()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (x == y || std::abs(x - y) <= kRel * std::max(std::abs(x), std::abs(y))) return;
    ADD_FAILURE() << path << ": " << x << " vs " << y;
    ++differences;
    return;
  }
  if (a != b) {
    ADD_FAILURE() << path << ": " << a.dump() << " vs " << b.dump();
    ++differences;
  }
}

struct Case {
  std::string name, model, hw;
  ServeConfig cfg;
};

ServeConfig open_loop(EngineRef kind, const hw::System& sys, double qps, std::int64_t replicas, std::int64_t requests) {
  ServeConfig cfg;
  cfg.engine = engine_preset(kind, sys.chip, 1);
  cfg.workload.qps = qps;
  cfg.workload.requests = requests;
  cfg.workload.prompt = parse_length("lognormal:600,0.6", "--prompt");
  cfg.workload.gen = parse_length("lognormal:200,0.6", "--gen");
  cfg.replicas = replicas;
  cfg.window.on = false;
  cfg.find_max_rate = false;
  return cfg;
}

std::vector<Case> cases() {
  const hw::System h100 = testing::catalog_system("h100-sxm");
  std::vector<Case> out;
  auto add = [&](std::string name, std::string model, ServeConfig cfg) { out.push_back({std::move(name), std::move(model), "h100-sxm", std::move(cfg)}); };
  // Low decode batches on many replicas (what leaps are for), round-robin, each engine.
  add("trtllm-dense-rr", "llama-3.1-8b", open_loop(EngineKind::trtllm, h100, 6, 8, 300));
  add("vllm-dense-rr", "llama-3.1-8b", open_loop(EngineKind::vllm, h100, 6, 8, 300));
  add("sglang-dense-rr", "llama-3.1-8b", open_loop(EngineKind::sglang, h100, 6, 8, 300));
  add("static-dense", "llama-3.1-8b", open_loop(EngineKind::static_batch, h100, 2, 2, 100));
  add("vllm0-dense", "llama-3.1-8b", open_loop(EngineRef{EngineKind::vllm, 6}, h100, 4, 4, 200));
  {
    ServeConfig c = open_loop(EngineKind::vllm, h100, 20, 6, 300);
    c.router = Router::least_loaded;
    add("vllm-least-loaded", "llama-3.1-8b", c);
    c.engine = engine_preset(EngineKind::sglang, h100.chip, 1);
    add("sglang-least-loaded", "llama-3.1-8b", c);
  }
  {
    ServeConfig c = open_loop(EngineKind::vllm, h100, 4, 4, 200);
    c.forward.tp = 2;
    c.engine = engine_preset(EngineKind::vllm, h100.chip, 2);
    add("vllm-moe", "mixtral-8x7b", c);
  }
  add("vllm-gpt-oss-windows", "gpt-oss-120b", open_loop(EngineKind::vllm, h100, 4, 4, 200));
  add("sglang-mistral-window", "mistral-7b", open_loop(EngineKind::sglang, h100, 6, 6, 300));
  {
    // Preemption-prone: a small cache under load, vLLM recomputing and SGLang retracting.
    ServeConfig c = open_loop(EngineKind::vllm, h100, 30, 2, 200);
    c.engine.kv_blocks_override = 600;
    add("vllm-small-kv", "llama-3.1-8b", c);
    c.engine = engine_preset(EngineKind::sglang, h100.chip, 1);
    c.engine.kv_blocks_override = 600;
    add("sglang-small-kv", "llama-3.1-8b", c);
  }
  {
    ServeConfig c = open_loop(EngineKind::trtllm, h100, 6, 8, 300);
    c.horizon_s = 20;
    add("trtllm-horizon", "llama-3.1-8b", c);
  }
  {
    ServeConfig c = open_loop(EngineKind::vllm, h100, 6, 4, 200);
    c.workload.arrival = Arrival::closed;
    c.workload.concurrency = 6;
    c.workload.think = parse_think_time("exp:2s", "--think");
    add("vllm-closed-loop", "llama-3.1-8b", c);
  }
  {
    // One replica, every arrival its own: its leaps stop pricing at the next arrival (open
    // loop) or the next client's request (closed loop).
    add("vllm-one-replica", "llama-3.1-8b", open_loop(EngineKind::vllm, h100, 3, 1, 300));
    ServeConfig c = open_loop(EngineKind::trtllm, h100, 1, 1, 200);
    c.workload.arrival = Arrival::closed;
    c.workload.concurrency = 4;
    c.workload.think = parse_think_time("exp:1s", "--think");
    add("trtllm-one-replica-closed-loop", "llama-3.1-8b", c);
  }
  {
    // The measurement window (opens and closes while replicas leap), warm-up and an SLO.
    ServeConfig c = open_loop(EngineKind::trtllm, h100, 8, 8, 2000);
    c.window.on = true;
    c.slo = parse_slo("ttft_p99=1s,itl_p99=30ms");
    add("trtllm-window-slo", "llama-3.1-8b", c);
  }
  {
    // SGLang's one-token pages take blocks at every step: leaps that take them, with the KV
    // integrals and the trend's marks caught up (a window), a horizon that stops the run ahead
    // of its last advance, and a lean run.
    ServeConfig c = open_loop(EngineKind::sglang, h100, 8, 8, 2000);
    c.window.on = true;
    c.slo = parse_slo("ttft_p99=1s,itl_p99=30ms");
    add("sglang-window-slo", "llama-3.1-8b", c);
    ServeConfig h = open_loop(EngineKind::sglang, h100, 6, 8, 300);
    h.horizon_s = 20;
    add("sglang-horizon", "llama-3.1-8b", h);
    h.horizon_s = 0;
    h.lean = true;
    add("sglang-lean", "llama-3.1-8b", h);
  }
  {
    // Stopped as soon as the SLO is missed (a capacity search's runs), lean.
    ServeConfig c = open_loop(EngineKind::vllm, h100, 40, 2, 400);
    c.slo = parse_slo("tpot_p50=5ms");
    c.stop_when_slo_missed = true;
    c.lean = true;
    add("vllm-stop-slo-lean", "llama-3.1-8b", c);
  }
  {
    ServeConfig c = open_loop(EngineKind::vllm, h100, 6, 4, 300);
    c.router = Router::prefix;
    c.workload.prefix_groups = 8;
    c.workload.prefix_tokens = 400;
    c.workload.warmup = 20;
    add("vllm-prefix-router", "llama-3.1-8b", c);
  }
  return out;
}

TEST(Leap, EveryReportedNumberAndEveryRequestAsWithoutLeaps) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const model::ModelConfig m = io::bundled_model(c.model);
    const hw::System sys = testing::catalog_system(c.hw.c_str());
    std::vector<RequestRecord> recs[2];
    ServingResult res[2];
    for (int on = 0; on < 2; ++on) {
      ServeConfig cfg = c.cfg;
      cfg.leap = on == 1;
      res[on] = simulate(m, sys, cfg, [&](const RequestRecord& r) { recs[on].push_back(r); });
    }
    EXPECT_GT(res[0].steps, 0);
    // The cases reach what they are for.
    EXPECT_TRUE(c.name.find("horizon") == std::string::npos || res[0].horizon_reached);
    EXPECT_TRUE(c.name != "vllm-stop-slo-lean" || res[0].stopped_slo_missed);
    EXPECT_TRUE(c.name.find("window-slo") == std::string::npos || res[0].steady_state.window);
    EXPECT_TRUE(c.name.find("small-kv") == std::string::npos || res[0].preemptions > 0);
    int differences = 0;
    expect_same(report::serving_json(m, sys, c.cfg, res[0]), report::serving_json(m, sys, c.cfg, res[1]), "", differences);
    ASSERT_EQ(recs[0].size(), recs[1].size());
    for (auto& v : recs) std::sort(v.begin(), v.end(), [](const RequestRecord& a, const RequestRecord& b) { return a.id < b.id; });
    for (std::size_t i = 0; i < recs[0].size(); ++i) {
      const RequestRecord &a = recs[0][i], &b = recs[1][i];
      EXPECT_EQ(a.id, b.id);
      EXPECT_EQ(a.replica, b.replica);
      // Whole picoseconds converted alike: equal, not close.
      EXPECT_EQ(a.ttft_s, b.ttft_s) << a.id;
      EXPECT_EQ(a.e2e_s, b.e2e_s) << a.id;
      EXPECT_EQ(a.tpot_s, b.tpot_s) << a.id;
      EXPECT_EQ(a.queue_s, b.queue_s) << a.id;
      EXPECT_EQ(a.preemptions, b.preemptions) << a.id;
      EXPECT_EQ(a.cached_tokens, b.cached_tokens) << a.id;
    }
    EXPECT_EQ(differences, 0);
  }
}

}  // namespace
}  // namespace ridgeline::serving
