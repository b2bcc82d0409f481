// --emit: launch files of a deployment (docs/deploy.md).
#include "emit.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <filesystem>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/report/launch.hpp"

namespace ridgeline::cli {

void add_emit_flags(CLI::App* app, EmitFlags& f) {
  app->add_option("--emit", f.target,
                  "write the engine's launch files for the deployment: vllm, sglang or trtllm (the engine the simulation ran; docs/deploy.md)")
      ->type_name("ENGINE");
  app->add_option("--emit-dir", f.dir, "directory of the --emit files (default: launch-ENGINE)")->type_name("DIR");
}

std::optional<planning::LaunchTarget> emit_target(const EmitFlags& f) {
  if (f.target.empty()) {
    if (!f.dir.empty()) throw InputError("--emit-dir: the launch files need --emit vllm|sglang|trtllm");
    return std::nullopt;
  }
  const auto t = planning::parse_launch_target(f.target);
  if (!t) {
    throw InputError(fmt::format("--emit: '{}' is not an engine whose launch files can be written: expected vllm, sglang or trtllm "
                                 "(a disaggregated fleet gets its prefill and decode workers in each)", f.target));
  }
  return t;
}

std::string emit_dir(const EmitFlags& f) { return !f.dir.empty() ? f.dir : fmt::format("launch-{}", f.target); }

namespace {

// A model the engine loads: its repository, else what --model gave; a config.json given by path
// names the directory holding it, the checkpoint's (vllm serve DIR, --model-path DIR,
// trtllm-serve DIR: the engines load a local model from its directory, never from the file).
std::string engine_model(const model::ModelConfig& m, const std::string& arg) {
  // A checkpoint's own config.json: its directory, absolute (the launch may run elsewhere), even
  // where `_name_or_path` names a repository (a local fine-tune keeps its base model's name).
  // Another .json: its repository, else its directory too (an engine loads no single file).
  const std::filesystem::path p(arg);
  const bool json_file = p.extension() == ".json";
  if (json_file && (p.filename() == "config.json" || m.hf_repo.empty())) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(p, ec);
    return (ec ? p : abs).parent_path().lexically_normal().string();
  }
  return m.hf_repo.empty() ? arg : m.hf_repo;
}

}  // namespace

planning::LaunchNames launch_names(const model::ModelConfig& m, const std::string& model_arg, const serving::ServeConfig& cfg,
                                   const std::string& draft_arg) {
  planning::LaunchNames n;
  n.model = engine_model(m, model_arg);
  if (cfg.spec.on() && !cfg.spec.mtp && cfg.spec.draft != nullptr) n.draft = engine_model(*cfg.spec.draft, draft_arg);
  return n;
}

namespace {

// Each kind of instance and its command, then the notes: what the terminal shows of a launch.
std::string launch_lines(const nlohmann::json& emitted) {
  std::string text;
  for (const auto& w : emitted["workers"]) {
    text += fmt::format("{} x {} ({} GPUs each):\n", w["instances"].get<std::int64_t>(), w["role"].get<std::string>(),
                        w["gpus_per_instance"].get<std::int64_t>());
    std::string cmd = w["command"].get<std::string>();
    for (std::size_t at = 0; (at = cmd.find('\n', at)) != std::string::npos; at += 3) cmd.replace(at, 1, "\n  ");
    for (const auto& [k, v] : w["env"].items()) text += fmt::format("  export {}={}\n", k, v.get<std::string>());
    text += "  " + cmd + "\n";
  }
  for (const auto& n : emitted["notes"]) text += "note: " + n.get<std::string>() + "\n";
  return text;
}

}  // namespace

Emitted write_launch(planning::LaunchTarget target, const std::string& dir, const model::ModelConfig& m, const serving::ServeConfig& cfg,
                     const planning::LaunchNames& names, const std::vector<std::string>& heading) {
  const planning::LaunchPlan plan = planning::launch_plan(m, cfg, target, names);
  const std::vector<report::LaunchFile> files = report::launch_files(plan, heading);
  report::write_launch_files(dir, files);
  Emitted e;
  nlohmann::json names_json = nlohmann::json::array();
  for (const report::LaunchFile& f : files) {
    e.files.push_back((std::filesystem::path(dir) / f.name).string());
    names_json.push_back(e.files.back());
  }
  nlohmann::json workers = nlohmann::json::array();
  for (const planning::LaunchWorker& w : plan.workers) {
    nlohmann::json env = nlohmann::json::object();
    for (const planning::LaunchArg& v : w.env) env[v.flag] = v.value;
    workers.push_back({{"role", std::string(name(w.role))}, {"instances", w.instances}, {"gpus_per_instance", w.gpus_per_instance},
                       {"env", env}, {"command", report::launch_command(w)}});
  }
  e.json = {{"dir", dir},       {"engine", std::string(name(plan.target))}, {"preset", plan.preset}, {"flags_preset", plan.flags_preset}, {"release", plan.release},
            {"model", plan.model}, {"workers", workers}, {"files", names_json}, {"notes", plan.notes}};
  return e;
}

}  // namespace ridgeline::cli

namespace ridgeline::cli {

void emit_serve_launch(planning::LaunchTarget target, const std::string& dir, const model::ModelConfig& m, const std::string& model_arg,
                       const serving::ServeConfig& cfg, const std::string& draft_arg, const serving::ServingResult& r, nlohmann::json& j,
                       std::string& text) {
  auto t = [](double s) { return format_quantity(s, Quantity::time); };
  std::vector<std::string> heading{
      fmt::format("ridgeline serve predicts for this fleet: TTFT p99 {}, TPOT p99 {}; {:.4g} output tokens/s ({:.4g} per GPU, {:.4g} GPUs){}.",
                  t(r.ttft.p99), t(r.tpot.p99), r.output_tokens_per_s, r.output_tokens_per_s_per_gpu, r.gpus,
                  cfg.slo.any() ? (r.slo_met ? "; SLO met" : "; SLO not met") : "")};
  const Emitted e = write_launch(target, dir, m, cfg, launch_names(m, model_arg, cfg, draft_arg), heading);
  j["emitted"] = e.json;
  text += fmt::format("\nlaunch files ({} {}) written to {}: {}\n", e.json["engine"].get<std::string>(), e.json["release"].get<std::string>(), dir,
                      fmt::join(e.files, ", "));
  text += launch_lines(e.json);
}

}  // namespace ridgeline::cli

#include "ridgeline/report/planning.hpp"

namespace ridgeline::cli {

void emit_fleet_launches(planning::LaunchTarget target, const std::string& dir, const model::ModelConfig& m, const std::string& model_arg,
                         const planning::FleetSpace& space, const planning::FleetSearchResult& r, const std::string& serve_prefix,
                         nlohmann::json& j, std::string& text) {
  namespace fs = std::filesystem;
  auto t = [](double s) { return format_quantity(s, Quantity::time); };
  nlohmann::json out{{"dir", dir}, {"engine", std::string(name(target))}, {"best", nullptr}, {"pareto", nlohmann::json::array()},
                     {"feasible", nlohmann::json::array()}, {"skipped", nlohmann::json::array()}};
  int written = 0, other_engine = 0;
  // One deployment into DIR/SUB; a deployment on another engine, or one the release cannot
  // launch as simulated, is skipped with its reason.
  auto one = [&](const planning::Deployment& d, const std::string& sub, const char* list) {
    if (d.engine.kind != planning::engine_kind(target)) {
      ++other_engine;
      return;
    }
    const serving::ServeConfig cfg = planning::serve_config(m, space, d);
    std::vector<std::string> heading{
        fmt::format("ridgeline search serve chose this deployment ({}); `{} {}` reproduces its numbers.", list, serve_prefix,
                    report::deployment_flags(space, d)),
        fmt::format("Predicted: TTFT p99 {}, TPOT p99 {}; {:.4g} output tokens/s ({:.4g} per GPU) on {:.4g} GPUs{}.", t(d.ttft.p99), t(d.tpot.p99),
                    d.output_tokens_per_s, d.output_tokens_per_s_per_gpu, d.gpus,
                    d.usd_per_hour > 0 ? fmt::format(", ${:.4g}/h, ${:.4g} per million output tokens", d.usd_per_hour, d.usd_per_million_output_tokens)
                                       : "")};
    const std::string draft_arg = d.spec_tokens > 0 && d.draft < space.drafts.size() ? space.drafts[d.draft].arg : "";
    try {
      const Emitted e = write_launch(target, (fs::path(dir) / sub).string(), m, cfg, launch_names(m, model_arg, cfg, draft_arg), heading);
      ++written;
      nlohmann::json je = e.json;
      if (std::string(list) == "best") out["best"] = je;
      else out[list].push_back(je);
    } catch (const InputError& err) {
      out["skipped"].push_back({{"dir", (fs::path(dir) / sub).string()}, {"reason", err.what()}});
    }
  };
  if (r.best) one(*r.best, "best", "best");
  for (std::size_t i = 0; i < r.pareto.size(); ++i) one(r.pareto[i], fmt::format("pareto/{:02}", i + 1), "pareto");
  const std::size_t listed = std::min<std::size_t>(r.feasible.size(), static_cast<std::size_t>(space.top));
  for (std::size_t i = 0; i < listed; ++i) one(r.feasible[i], fmt::format("feasible/{:02}", i + 1), "feasible");
  j["emitted"] = out;
  text += fmt::format("\nlaunch files ({}) written to {}: {} deployments ({}best, {} of the Pareto front, {} of the {} listed)", name(target), dir,
                      written, out["best"].is_null() ? "no " : "", out["pareto"].size(), out["feasible"].size(), listed);
  if (other_engine > 0) text += fmt::format("; {} on another engine left out", other_engine);
  text += "\n";
  if (!out["best"].is_null()) text += "best, " + launch_lines(out["best"]);
  for (const auto& s : out["skipped"]) text += fmt::format("  skipped {}: {}\n", s["dir"].get<std::string>(), s["reason"].get<std::string>());
}

}  // namespace ridgeline::cli
