// `ridgeline train`: one training step.
#include <fmt/format.h>

#include <memory>

#include "common.hpp"
#include "ridgeline/analysis/advice.hpp"
#include "ridgeline/analysis/training.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/model_file.hpp"
#include "ridgeline/report/html.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/report/training.hpp"

namespace ridgeline::cli {

namespace {
struct Flags {
    HardwareFlags hw;
    bool json = false, fsdp = false, sp = false, dropout = false, uneven = false, offload = false;
    std::string model = "llama-3.1-8b", gpus = "8", gpus_per_node, tp = "1", pp = "1", dp, cp = "1", ep = "1", vpp = "1";
    std::string zero = "0", seq = "2048", micro_batch = "1", global_batch, recompute = "none", dtype = "bf16";
    std::string attention = "flash", node_link_bw, margin = "0.05", budget, cp_algo = "ulysses", compression, headroom;
    std::string expert_imbalance = "1", dp_overlap = "on";
    bool tp_overlap = false;
    OverlapFlags overlap;
};

// train --hw a,b,c: these rows side by side.
constexpr report::Headline kTrainRows[] = {
    {"step time", "/step_time_s", report::Shown::time},
    {"tokens/s", "/tokens_per_s", report::Shown::rate},
    {"MFU", "/mfu", report::Shown::fraction},
    {"exposed comm", "/exposed_comm_s", report::Shown::time},
    {"memory per GPU", "/memory_per_gpu/total_bytes", report::Shown::bytes},
    {"capacity", "/memory_per_gpu/capacity_bytes", report::Shown::bytes},
    {"fits", "/memory_per_gpu/fits", report::Shown::flag},
    {"run days", "/run/days", report::Shown::number},
    {"run GPU-hours", "/run/gpu_hours", report::Shown::rate},
    {"run cost", "/run/usd", report::Shown::usd},
};

void add_train_flags(CLI::App* t, Flags* f) {
  add_hardware_flags(t, f->hw);
  hide_flags(t, {"--chips"});  // training takes --gpus
  t->add_flag("--json", f->json, "JSON on stdout");
  t->add_option("--model", f->model, "bundled model, its Hugging Face repository (ORG/NAME), or config.json")->capture_default_str();
  t->add_option("--gpus", f->gpus, "GPUs")->capture_default_str();
  t->add_option("--gpus-per-node", f->gpus_per_node, "GPUs per node (default: the chip file's)");
  t->add_option("--tp", f->tp, "tensor parallelism")->capture_default_str();
  t->add_option("--pp", f->pp, "pipeline stages")->capture_default_str();
  t->add_option("--dp", f->dp, "data parallelism (default gpus / (tp·pp·cp))");
  t->add_option("--cp", f->cp, "context parallelism")->capture_default_str();
  t->add_option("--cp-algo", f->cp_algo, "ulysses (all-to-all) or ring (K/V passed around)")->capture_default_str();
  t->add_option("--ep", f->ep, "expert parallelism (within data parallelism)")->capture_default_str();
  t->add_option("--expert-imbalance", f->expert_imbalance, "routed tokens of the busiest chip over the mean (1: balanced, up to --ep)")
      ->capture_default_str();
  t->add_option("--vpp", f->vpp, "virtual stages per GPU (interleaved 1F1B)")->capture_default_str();
  t->add_option("--zero", f->zero, "ZeRO stage 0-3")->capture_default_str();
  t->add_flag("--fsdp", f->fsdp, "fully sharded data parallelism (ZeRO-3)");
  t->add_flag("--sequence-parallel", f->sp, "sequence parallelism with tp");
  t->add_option("--dp-overlap", f->dp_overlap,
                "on: data-parallel reductions and gathers overlap the backward and forward (DDP buckets, Megatron's "
                "--overlap-grad-reduce); off: exposed after the backward")
      ->capture_default_str();
  t->add_flag("--tp-overlap", f->tp_overlap,
              "TP gathers and scatters pipelined with the GEMMs (Transformer Engine userbuffers, Megatron --tp-comm-overlap; "
              "with --sequence-parallel)");
  add_overlap_flags(t, f->overlap);
  t->add_option("--seq", f->seq, "sequence length")->capture_default_str();
  t->add_option("--micro-batch", f->micro_batch, "sequences per micro-batch")->capture_default_str();
  t->add_option("--global-batch", f->global_batch, "sequences per step (default dp x micro-batch)");
  t->add_option("--recompute", f->recompute, "none, selective, full or auto (the planner's choice per activation under the memory)")
      ->capture_default_str();
  t->add_flag("--offload", f->offload, "with --recompute auto: activations may also go to host memory and back");
  t->add_option("--dtype", f->dtype, "GEMM dtype: bf16 or fp8")->capture_default_str();
  t->add_option("--attention", f->attention, "flash or naive (scores materialised)")->capture_default_str();
  t->add_option("--node-link-bw", f->node_link_bw, "per-GPU network bandwidth between nodes, per direction");
  t->add_option("--memory-margin", f->margin, "allocator fragmentation margin, a fraction")->capture_default_str();
  t->add_option("--memory-headroom", f->headroom, "with --recompute auto: a fraction of memory to leave free (as search's flag)");
  t->add_flag("--dropout", f->dropout, "keep dropout masks (GPT-3-era runs)");
  t->add_option("--grad-compression", f->compression, "powersgd:RANK (low-rank gradient all-reduce)");
  t->add_flag("--uneven-stages", f->uneven, "allow layers not divisible by pp x vpp (the slowest stage holds the ceiling)");
}

analysis::TrainConfig train_config(const Flags* f, const model::ModelConfig& m) {
                        if (!f->hw.chips.empty()) throw InputError("--chips: training takes --gpus");
                        analysis::TrainConfig c;
                        auto i = [](const std::string& v, const char* flag) { return parse_positive_int(v, flag); };
                        c.gpus = i(f->gpus, "--gpus");
                        if (!f->gpus_per_node.empty()) c.gpus_per_node = i(f->gpus_per_node, "--gpus-per-node");
                        c.tp = i(f->tp, "--tp");
                        c.pp = i(f->pp, "--pp");
                        if (!f->dp.empty()) c.dp = i(f->dp, "--dp");
                        c.cp = i(f->cp, "--cp");
                        if (f->cp_algo == "ring") c.cp_ring = true;
                        else if (f->cp_algo != "ulysses") throw InputError(fmt::format("--cp-algo: '{}' is not ulysses or ring", f->cp_algo));
                        c.ep = i(f->ep, "--ep");
                        c.expert_imbalance = parse_number(f->expert_imbalance, "--expert-imbalance");
                        c.vpp = i(f->vpp, "--vpp");
                        c.zero = static_cast<int>(parse_number(f->zero, "--zero"));
                        if (f->fsdp && f->zero != "0" && f->zero != "3") {
                          throw InputError(fmt::format("--fsdp --zero {}: FSDP is ZeRO stage 3: give one of them", f->zero));
                        }
                        if (f->fsdp) c.zero = 3;
                        c.sequence_parallel = f->sp;
                        if (f->dp_overlap != "on" && f->dp_overlap != "off") {
                          throw InputError(fmt::format("--dp-overlap: '{}' is not on or off", f->dp_overlap));
                        }
                        c.dp_overlap = f->dp_overlap == "on";
                        c.tp_overlap = f->tp_overlap;
                        if (c.tp_overlap && !c.sequence_parallel) {
                          throw InputError("--tp-overlap: TP communication overlap pipelines the all-gathers and reduce-scatters of --sequence-parallel: add it");
                        }
                        apply_overlap_flags(f->overlap, c);
                        c.seq = i(f->seq, "--seq");
                        if (m.max_positions > 0 && c.seq > m.max_positions) {
                          throw InputError(fmt::format("--seq: {} tokens exceed the {} positions of {} (max_position_embeddings)", c.seq,
                                                       m.max_positions, m.name));
                        }
                        c.micro_batch = i(f->micro_batch, "--micro-batch");
                        if (!f->global_batch.empty()) c.global_batch = i(f->global_batch, "--global-batch");
                        if (f->recompute == "none") c.recompute = analysis::Recompute::none;
                        else if (f->recompute == "selective") c.recompute = analysis::Recompute::selective;
                        else if (f->recompute == "full") c.recompute = analysis::Recompute::full;
                        else if (f->recompute == "auto") c.recompute = analysis::Recompute::automatic;
                        else throw InputError(fmt::format("--recompute: '{}' is not none, selective, full or auto", f->recompute));
                        c.offload = f->offload;
                        c.dtype = parse_dtype_or_throw(f->dtype, "--dtype");
                        if (c.dtype != DType::bf16 && c.dtype != DType::fp8_e4m3 && c.dtype != DType::fp8_e5m2) {
                          throw InputError(fmt::format("--dtype: {} is not a training GEMM dtype: expected bf16 or fp8", f->dtype));
                        }
                        if (f->attention == "flash") c.attention = ops::AttentionImpl::flash;
                        else if (f->attention == "naive") c.attention = ops::AttentionImpl::naive;
                        else throw InputError(fmt::format("--attention: '{}' is not flash or naive", f->attention));
                        if (!f->node_link_bw.empty()) {
                          double v = parse_quantity(f->node_link_bw, Quantity::bandwidth, "--node-link-bw", true);
                          if (!(v > 0)) throw InputError("--node-link-bw: must be greater than zero");
                          c.network_bandwidth_Bps = v;
                        }
                        c.memory_margin = parse_number(f->margin, "--memory-margin");
                        if (c.memory_margin < 0 || c.memory_margin > 1) throw InputError("--memory-margin: expected a fraction in [0, 1]");
                        if (!f->headroom.empty()) {
                          if (c.recompute != analysis::Recompute::automatic) {
                            throw InputError("--memory-headroom: only with --recompute auto (the planner's choice under the memory), as --offload");
                          }
                          c.memory_headroom = parse_number(f->headroom, "--memory-headroom");
                        }
                        c.dropout = f->dropout;
                        c.uneven_stages = f->uneven;
                        if (!f->compression.empty()) {
                          if (f->compression.rfind("powersgd:", 0) != 0) {
                            throw InputError(fmt::format("--grad-compression: '{}' is not powersgd:RANK", f->compression));
                          }
                          c.powersgd_rank = parse_positive_int(f->compression.substr(9), "--grad-compression");
                          if (c.powersgd_rank > 4096) throw InputError(fmt::format("--grad-compression: rank {} is above 4096", c.powersgd_rank));
                        }
                        return c;
}
}  // namespace

void register_train(CLI::App& root, std::vector<Command>& commands) {
  auto f = std::make_shared<Flags>();
  auto* t = root.add_subcommand("train", "one training step: step time, MFU/HFU, communication, memory per GPU; with --tokens or --days the whole run");
  add_train_flags(t, f.get());
  auto run_flags = std::make_shared<RunFlags>();
  add_run_flags(t, *run_flags);
  commands.push_back({t, [f, run_flags] {
                        per_chip(f->hw, f->json, kTrainRows, [&] {
                        model::ModelConfig m = io::resolve_model(f->model);
                        analysis::TrainConfig c = train_config(f.get(), m);
                        hw::System sys = load_chip_system(f->hw);
                        report::RunReport run = run_goal(*run_flags, sys.chip, f->hw);
                        auto r = std::make_unique<analysis::TrainResult>();
                        analysis::train(m, sys, c, *r);
                        const report::RunReport* asked = nullptr;
                        if (analysis::wanted(run.goal)) {
                          run.totals = analysis::run_totals(r->step_time_s, r->tokens_per_step, static_cast<double>(c.gpus), run.goal);
                          asked = &run;
                        }
                        emit(f->json, report::training_json(m, sys, c, *r, asked), report::training_text(m, sys, c, *r, asked));
                        });
                      }});

  auto g = std::make_shared<Flags>();
  auto* rc = root.add_subcommand("recompute", "plan activation recomputation and offload per tensor under a memory budget");
  add_train_flags(rc, g.get());
  rc->add_option("--budget", g->budget, "activation memory per layer per micro-batch (default: what the GPU has left)");
  commands.push_back({rc, [g] {
                        if (g->recompute != "none") {
                          throw InputError(fmt::format("--recompute {}: `recompute` chooses per tensor itself; the flag is train's", g->recompute));
                        }
                        model::ModelConfig m = io::resolve_model(g->model);
                        analysis::TrainConfig c = train_config(g.get(), m);
                        hw::System sys = load_chip_system(g->hw);
                        std::optional<double> budget;
                        if (!g->budget.empty()) budget = parse_quantity(g->budget, Quantity::bytes, "--budget", true);
                        analysis::RecomputeResult r = analysis::plan_recompute(m, sys, c, budget);
                        emit(g->json, report::recompute_json(r), report::recompute_text(m, r));
                      }});
}

void register_report_train(CLI::App& root, std::vector<Command>& commands) {
  auto f = std::make_shared<Flags>();
  auto out = std::make_shared<std::string>();
  // `ridgeline report --train ...` arrives here (run() renames it): hidden from the command list.
  auto* r = root.add_subcommand("report-train", "");
  r->group("");
  add_train_flags(r, f.get());
  r->add_option("--out", *out, "HTML file to write")->required();
  commands.push_back({r, [f, out] {
                        model::ModelConfig m = io::resolve_model(f->model);
                        analysis::TrainConfig c = train_config(f.get(), m);
                        hw::System sys = load_chip_system(f->hw);
                        auto res = std::make_unique<analysis::TrainResult>();
                        analysis::train(m, sys, c, *res);
                        const nlohmann::json j = report::training_json(m, sys, c, *res);
                        const std::string html = report::html_report(j, analysis::training_system(sys, c).chip);
                        check_extension(*out, "--out", {".html", ".htm"});
                        report::write_file_atomically(*out, html);
                        emit(f->json, nlohmann::json{{"out", *out}, {"bytes", html.size()}, {"ops", j["ops"].size()}}, "wrote " + *out + "\n");
                      }});
}

void register_advise_train(CLI::App* advise, std::vector<Command>& commands) {
  auto f = std::make_shared<Flags>();
  auto* a = advise->add_subcommand("train", "advice on a training plan (the train flags)");
  add_train_flags(a, f.get());
  commands.push_back({a, [f] {
                        model::ModelConfig m = io::resolve_model(f->model);
                        analysis::TrainConfig c = train_config(f.get(), m);
                        hw::System sys = load_chip_system(f->hw);
                        auto r = std::make_unique<analysis::TrainResult>();
                        analysis::train(m, sys, c, *r);
                        emit_advice(f->json, analysis::advise_training(m, analysis::training_system(sys, c), c, *r));
                      }});
}

}  // namespace ridgeline::cli
