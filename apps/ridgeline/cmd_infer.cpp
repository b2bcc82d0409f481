// `ridgeline models` and `ridgeline infer`.
#include <fmt/format.h>

#include <memory>

#include "common.hpp"
#include "ridgeline/analysis/advice.hpp"
#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/report/html.hpp"
#include "ridgeline/report/inference.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/serving/steady_state.hpp"

namespace ridgeline::cli {

namespace {

struct InferFlags {
  HardwareFlags hw;
  ForwardFlags fw;
  bool json = false, cuda_graphs = false, all_ops = false;
  std::string method = "detailed";
  std::string batch = "1", prompt = "128", gen = "128", memory_utilization = "0.9";
  SpecFlags spec;
  model::ModelConfig draft;  // the draft model of --draft (the configuration points at it)
};


}  // namespace

namespace {

void add_infer_flags(CLI::App* app, InferFlags* f) {
  add_hardware_flags(app, f->hw);
  app->add_flag("--json", f->json, "JSON on stdout");
  add_forward_flags(app, f->fw);
  app->add_option("--batch", f->batch, "sequences served together")->capture_default_str();
  app->add_option("--prompt", f->prompt, "prompt tokens per sequence")->capture_default_str();
  app->add_option("--gen", f->gen, "generated tokens per sequence")->capture_default_str();
  app->add_flag("--cuda-graphs", f->cuda_graphs, "replay each decode step as one graph (one launch per step)");
  app->add_option("--memory-utilization", f->memory_utilization,
                  "of the chip's memory, what the engine may use (vLLM's gpu_memory_utilization)")
      ->capture_default_str();
  app->add_flag("--all-ops", f->all_ops, "list every op in the tables, not only those over 0.5% of a phase");
  app->add_option("--method", f->method, "detailed, or quick for seed 001's closed form first")->capture_default_str();
  add_spec_flags(app, f->spec);
}

analysis::InferenceConfig infer_config(InferFlags* f, const model::ModelConfig& m) {
  analysis::InferenceConfig cfg;
  cfg.forward = forward_config(f->fw, f->hw, m);
  cfg.spec = speculation(f->spec, m, f->draft);
  cfg.batch = parse_positive_int(f->batch, "--batch");
  cfg.prompt = parse_positive_int(f->prompt, "--prompt");
  cfg.gen = parse_positive_int(f->gen, "--gen");
  if (m.max_positions > 0 && cfg.prompt + cfg.gen > m.max_positions) {
    throw InputError(fmt::format("--prompt/--gen: {} + {} tokens exceed the {} positions of {} (max_position_embeddings)",
                                 cfg.prompt, cfg.gen, m.max_positions, m.name));
  }
  cfg.cuda_graphs = f->cuda_graphs;
  cfg.memory_utilization = parse_number(f->memory_utilization, "--memory-utilization");
  if (f->method != "detailed" && f->method != "quick") {
    throw InputError(fmt::format("--method: '{}' is not a method: expected detailed or quick", f->method));
  }
  return cfg;
}

}  // namespace

// infer --hw a,b,c: these rows side by side.
constexpr report::Headline kInferRows[] = {
    {"TTFT", "/ttft_s", report::Shown::time},
    {"TPOT", "/tpot_s", report::Shown::time},
    {"end to end", "/e2e_latency_s", report::Shown::time},
    {"output tokens/s", "/output_tokens_per_s", report::Shown::rate},
    {"  per chip", "/output_tokens_per_s_per_chip", report::Shown::rate},
    {"largest batch", "/max_batch", report::Shown::number},
    {"memory per chip", "/memory/total_bytes", report::Shown::bytes},
    {"capacity", "/memory/capacity_bytes", report::Shown::bytes},
    {"fits", "/memory/fits", report::Shown::flag},
};

void register_infer(CLI::App& root, std::vector<Command>& commands) {
  auto* models = root.add_subcommand("models", "the bundled models with their parameter counts");
  auto models_json = std::make_shared<bool>(false);
  models->add_flag("--json", *models_json, "JSON on stdout");
  commands.push_back({models, [models_json] {
                        std::vector<report::ModelRow> rows;
                        for (const auto& n : io::bundled_model_names()) {
                          model::ModelConfig m = io::bundled_model(n);
                          rows.push_back({m, model::count_params(m)});
                        }
                        emit(*models_json, report::models_json(rows), report::models_text(rows));
                      }});

  auto f = std::make_shared<InferFlags>();
  auto* infer = root.add_subcommand("infer", "serving a model: TTFT, TPOT, throughput, memory, what bounds each op");
  add_infer_flags(infer, f.get());
  commands.push_back({infer, [f] {
                        per_chip(f->hw, f->json, kInferRows, [&] {
                        model::ModelConfig m = io::resolve_model(f->fw.model);
                        analysis::InferenceConfig cfg = infer_config(f.get(), m);
                        hw::System sys = load_chip_system(f->hw);
                        auto r = std::make_unique<analysis::InferenceResult>();
                        analysis::infer(m, sys, cfg, *r);
                        // Every kernel's dtype must exist on the chip.
                        for (int i = 0; i < r->prefill_graph.op_count; ++i) ops::check_supported(r->prefill_graph.ops[i].cost.expand(), sys.chip);
                        std::string text = report::inference_text(m, sys, cfg, *r, f->all_ops);
                        if (f->method == "quick") text = report::quick_text(cfg, *r) + "\n" + text;
                        emit(f->json, report::inference_json(m, sys, cfg, *r), text);
                        });
                      }});
}

void register_report_infer(CLI::App& root, std::vector<Command>& commands) {
  auto f = std::make_shared<InferFlags>();
  auto out = std::make_shared<std::string>();
  auto* r = root.add_subcommand("report", "one self-contained HTML page: inputs, headline, charts, sortable op tables "
                                           "(--train: a training step; --serve: a serving run; --fleet: a capacity search)");
  add_infer_flags(r, f.get());
  r->add_option("--out", *out, "HTML file to write")->required();
  r->add_flag("--train")->description("a training step instead (takes the train flags)");
  // Routed before parsing (run.cpp): listed here so that `help report` shows them.
  r->add_flag("--serve")->description("a serving simulation instead (takes the serve flags: `ridgeline help serve`)");
  r->add_flag("--fleet")->description("a capacity search's page instead (takes the search serve flags: `ridgeline help search serve`)");
  commands.push_back({r, [f, out] {
                        model::ModelConfig m = io::resolve_model(f->fw.model);
                        analysis::InferenceConfig cfg = infer_config(f.get(), m);
                        hw::System sys = load_chip_system(f->hw);
                        auto res = std::make_unique<analysis::InferenceResult>();
                        analysis::infer(m, sys, cfg, *res);
                        for (int i = 0; i < res->prefill_graph.op_count; ++i) ops::check_supported(res->prefill_graph.ops[i].cost.expand(), sys.chip);
                        const nlohmann::json j = report::inference_json(m, sys, cfg, *res);
                        const std::string html = report::html_report(j, sys.chip);
                        check_extension(*out, "--out", {".html", ".htm"});
                        report::write_file_atomically(*out, html);
                        emit(f->json, nlohmann::json{{"out", *out}, {"bytes", html.size()}, {"ops", j["ops"].size()}}, "wrote " + *out + "\n");
                      }});
}

void register_advise_infer(CLI::App* advise, std::vector<Command>& commands) {
  auto f = std::make_shared<InferFlags>();
  auto* a = advise->add_subcommand("infer", "advice on a serving plan (the infer flags)");
  add_infer_flags(a, f.get());
  auto engine = std::make_shared<std::string>("vllm");
  a->add_option("--engine", *engine,
                "vllm, sglang or trtllm: advice on the batch as that engine serves the users continuously; static: as infer's static batches")
      ->capture_default_str();
  commands.push_back({a, [f, engine] {
                        const auto kind = serving::parse_engine(*engine);
                        if (!kind) throw InputError(fmt::format("--engine: '{}' is not an engine: expected vllm, sglang, trtllm or static (each optionally @MAJOR.MINOR)", *engine));
                        model::ModelConfig m = io::resolve_model(f->fw.model);
                        analysis::InferenceConfig cfg = infer_config(f.get(), m);
                        hw::System sys = load_chip_system(f->hw);
                        auto r = std::make_unique<analysis::InferenceResult>();
                        analysis::infer(m, sys, cfg, *r);
                        std::unique_ptr<analysis::BatchModel> served;
                        // A --moe-a2a given is the served engine's way too (else the engine's own: serve's rule).
                        std::optional<model::ForwardConfig::MoeA2A> a2a;
                        if (!f->fw.moe_a2a.empty()) a2a = cfg.forward.moe_a2a;
                        if (kind->kind != serving::EngineKind::static_batch) served = std::make_unique<serving::ContinuousBatching>(*kind, a2a);
                        emit_advice(f->json, analysis::advise_inference(m, sys, cfg, *r, served.get()));
                      }});
}

void register_block(CLI::App& root, std::vector<Command>& commands) {
  struct BlockFlags {
    HardwareFlags hw;
    bool json = false;
    std::string seq = "4096", hidden = "4096", intermediate, heads = "32", kv_heads, cp = "8", shapes = "exact", model, dtype = "bf16";
    std::string hidden_given;  // shape flags given explicitly, for the conflict check with --model
  };
  auto f = std::make_shared<BlockFlags>();
  auto* b = root.add_subcommand("block", "one transformer block in units of one (s,h)x(h,h) GEMM (seed 000)");
  add_hardware_flags(b, f->hw);
  hide_flags(b, {"--chips"});
  b->add_flag("--json", f->json, "JSON on stdout");
  b->add_option("--seq", f->seq, "tokens s of the (s,h) activation on each chip (with --cp, attention spans s x cp)")->capture_default_str();
  b->add_option("--hidden", f->hidden, "hidden size h")->capture_default_str();
  b->add_option("--intermediate", f->intermediate, "MLP width (default 8/3 h)");
  b->add_option("--heads", f->heads, "attention heads")->capture_default_str();
  b->add_option("--kv-heads", f->kv_heads, "key/value heads (default --heads)");
  b->add_option("--cp", f->cp, "context-parallel group of the all-to-alls")->capture_default_str();
  b->add_option("--shapes", f->shapes, "seed (every memory-bound op on (s,h), as seed 000) or exact")->capture_default_str();
  b->add_option("--model", f->model, "take h, the MLP width and the heads from a model");
  b->add_option("--dtype", f->dtype, "dtype")->capture_default_str();
  commands.push_back({b, [f, b] {
                        for (const char* flag : {"--hidden", "--intermediate", "--heads", "--kv-heads"}) {
                          if (b->count(flag) > 0) f->hidden_given += (f->hidden_given.empty() ? "" : ", ") + std::string(flag);
                        }
                        if (!f->hw.chips.empty()) throw InputError("--chips: block models one block on one chip; --cp sets the all-to-all group");
                        analysis::BlockConfig cfg;
                        cfg.seq = parse_positive_int(f->seq, "--seq");
                        cfg.cp = parse_positive_int(f->cp, "--cp");
                        cfg.dtype = parse_dtype_or_throw(f->dtype, "--dtype");
                        if (f->shapes == "seed") cfg.seed_shapes = true;
                        else if (f->shapes != "exact") throw InputError(fmt::format("--shapes: '{}' is not seed or exact", f->shapes));
                        if (!f->model.empty()) {
                          if (!f->hidden_given.empty()) {
                            throw InputError(fmt::format("--model: {} sets the shapes: leave out {}", f->model, f->hidden_given));
                          }
                          model::ModelConfig m = io::resolve_model(f->model);
                          cfg.hidden = m.hidden;
                          cfg.intermediate = static_cast<double>(m.intermediate);
                          cfg.heads = m.heads;
                          cfg.kv_heads = m.kv_heads;
                        } else {
                          cfg.hidden = parse_positive_int(f->hidden, "--hidden");
                          cfg.heads = parse_positive_int(f->heads, "--heads");
                          cfg.kv_heads = f->kv_heads.empty() ? cfg.heads : parse_positive_int(f->kv_heads, "--kv-heads");
                          if (!f->intermediate.empty()) cfg.intermediate = static_cast<double>(parse_positive_int(f->intermediate, "--intermediate"));
                        }
                        hw::System sys = load_chip_system(f->hw);
                        analysis::BlockResult r = analysis::block(cfg, sys);
                        emit(f->json, report::block_json(cfg, sys, r), report::block_text(cfg, sys, r));
                      }});
}

}  // namespace ridgeline::cli
