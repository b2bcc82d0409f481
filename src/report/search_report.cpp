#include <fmt/format.h>

#include <algorithm>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/search.hpp"
#include "ridgeline/report/svg.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

using nlohmann::json;

namespace {
std::string count(double n) {
  if (n >= 1e9) return fmt::format("{:.2f}G", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1e4) return fmt::format("{:.1f}k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string plan_label(const analysis::TrainPlan& p) {
  std::string s = fmt::format("tp{} pp{} dp{}", p.tp, p.pp, p.dp);
  if (p.cp > 1) s += fmt::format(" cp{}{}", p.cp, p.cp_ring ? "(ring)" : "");
  if (p.ep > 1) s += fmt::format(" ep{}", p.ep);
  if (p.vpp > 1) s += fmt::format(" vpp{}", p.vpp);
  s += fmt::format(" mb{} {}{} z{}", p.micro_batch, analysis::name(p.recompute), p.sequence_parallel ? " +sp" : "", p.zero);
  return s;
}

std::string dtype_label(const std::optional<DType>& d, const char* dflt) { return d ? std::string(name(*d)) : std::string(dflt); }

std::string plan_label(const analysis::InferPlan& p) {
  std::string s = fmt::format("{} chips: tp{}", p.chips, p.tp);
  if (p.ep > 1) s += fmt::format(" ep{}", p.ep);
  s += fmt::format(" batch {} w {} kv {}", p.batch, dtype_label(p.weight_dtype, "ckpt"), dtype_label(p.kv_dtype, "act"));
  return s;
}

// At most `n` plans of a front, evenly spaced, both ends kept.
template <class Plan>
std::vector<Plan> thin(const std::vector<Plan>& v, size_t n) {
  if (v.size() <= n) return v;
  std::vector<Plan> out;
  for (size_t i = 0; i < n; ++i) out.push_back(v[i * (v.size() - 1) / (n - 1)]);
  return out;
}
constexpr size_t kFrontRows = 12;
std::string thinned(size_t total) {
  return total > kFrontRows ? fmt::format(", {} shown evenly spaced; --json lists all", kFrontRows) : "";
}

// `ref`: the best published MFU of the plans' class; an MFU above it is marked "!".
std::string train_table(const std::vector<analysis::TrainPlan>& plans, const analysis::PublishedMfu* ref) {
  std::string s = fmt::format("  {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>4} {:>4} {:<9} {:>3} {:>3} {:>11} {:>12} {:>7} {:>7} {:>10}\n", "tp",
                              "pp", "dp", "cp", "ep", "vpp", "mb", "zero", "recompute", "sp", "cpr", "step", "tokens/s", "MFU", "hidden",
                              "memory");
  for (const auto& p : plans) {
    const bool above = ref != nullptr && p.mfu > ref->mfu;
    s += fmt::format("  {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>4} {:>4} {:<9} {:>3} {:>3} {:>11} {:>12.0f} {:>5.1f}%{} {:>6.0f}% {:>10}\n", p.tp,
                     p.pp, p.dp, p.cp, p.ep, p.vpp, p.micro_batch, p.zero, analysis::name(p.recompute), p.sequence_parallel ? "y" : "-",
                     p.cp > 1 ? (p.cp_ring ? "rng" : "uly") : "-", t(p.step_time_s), p.tokens_per_s, 100 * p.mfu, above ? "!" : " ",
                     p.step_time_s > 0 ? 100 * p.hidden_comm_s / p.step_time_s : 0.0, size(p.memory_bytes));
  }
  return s;
}

std::string infer_table(const std::vector<analysis::InferPlan>& plans) {
  std::string s = fmt::format("  {:>5} {:>3} {:>3} {:>6} {:>9} {:>9} {:>11} {:>11} {:>11} {:>14} {:>10}\n", "chips", "tp", "ep", "batch",
                              "weights", "kv", "TTFT", "TPOT", "end-to-end", "tok/s/chip", "memory");
  for (const auto& p : plans) {
    s += fmt::format("  {:>5} {:>3} {:>3} {:>6} {:>9} {:>9} {:>11} {:>11} {:>11} {:>14.1f} {:>10}\n", p.chips, p.tp, p.ep, p.batch,
                     dtype_label(p.weight_dtype, "ckpt"), dtype_label(p.kv_dtype, "act"), t(p.ttft_s), t(p.tpot_s), t(p.e2e_s),
                     p.tokens_per_s_per_chip, size(p.memory_bytes));
  }
  return s;
}
}  // namespace

json search_stats_json(const analysis::SearchStats& s) {
  json rejected = json::object();
  for (int r = 0; r < analysis::kRejectCount; ++r) {
    if (s.rejected[r] > 0) rejected[std::string(analysis::name(static_cast<analysis::Reject>(r)))] = s.rejected[r];
  }
  return {{"evaluated", s.evaluated}, {"feasible", s.feasible},       {"rejected", rejected},
          {"timed", s.timed}, {"shapes", s.shapes},       {"elapsed_s", s.elapsed_s},     {"plans_per_s", s.plans_per_s()},
          {"interrupted", s.interrupted}};
}

std::string search_stats_text(const analysis::SearchStats& s, std::string_view shapes) {
  std::string out = fmt::format("{} plans ({} feasible; {} timed, {} {}) in {}: {} plans/s", count(static_cast<double>(s.evaluated)),
                                count(static_cast<double>(s.feasible)), count(static_cast<double>(s.timed)), s.shapes, shapes, t(s.elapsed_s),
                                count(s.plans_per_s()));
  std::string why;
  for (int r = 0; r < analysis::kRejectCount; ++r) {
    if (s.rejected[r] == 0) continue;
    why += fmt::format("{}{} {}", why.empty() ? "" : ", ", analysis::name(static_cast<analysis::Reject>(r)), count(static_cast<double>(s.rejected[r])));
  }
  if (!why.empty()) out += "\n  rejected: " + why;
  if (s.interrupted) out += "\n  INTERRUPTED: the results cover only the plans evaluated before Ctrl-C";
  return out + "\n";
}

std::string train_search_text(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainSearchSpace& space,
                              const analysis::TrainSearchResult& r, const RunReport* run) {
  const auto& b = space.base;
  std::string s = fmt::format("{} on {} x {}, seq {}, global batch {}, {}\n", m.name, b.gpus, sys.chip.display_name, b.seq,
                              b.global_batch, name(b.dtype));
  s += search_stats_text(r.stats, "distinct graphs");
  if (r.best.empty()) return s + "\nno feasible plan: every plan broke a rule above (relax a constraint, add GPUs or memory)\n";
  const char* obj = space.objective == analysis::TrainObjective::step_time ? "step time"
                    : space.objective == analysis::TrainObjective::mfu     ? "MFU"
                                                                             : "tokens/s";
  const analysis::PublishedMfu* ref = mfu_reference(m, sys.chip, b.dtype);
  s += fmt::format("\nbest {} by {}:\n", r.best.size(), obj) + train_table(r.best, ref);
  s += fmt::format("  (hidden: communication hidden behind compute, a share of the step, assuming {} of what can hide does: "
                   "--overlap-efficiency)\n",
                   b.overlap_efficiency >= 1 ? std::string("all") : fmt::format("{:g}", b.overlap_efficiency));
  const analysis::TrainPlan& first = r.best.front();
  if (ref != nullptr && first.mfu > ref->mfu) {
    s += "  ! " + mfu_warning(*ref, first.mfu, first.step_time_s, first.hidden_comm_s, b.overlap_efficiency) + "\n";
  } else if (ref != nullptr) {
    s += fmt::format("  the best published MFU for {} on {}: {:.1f}% ({})\n", ref->size_class, ref->chip, 100 * ref->mfu, ref->run);
  }
  if (run) s += "\nthe first plan's whole run:\n" + run_text(*run, static_cast<double>(b.gpus));
  s += fmt::format("\nPareto front, tokens/s against memory per GPU ({} plans{}):\n", r.pareto.size(), thinned(r.pareto.size())) +
       train_table(thin(r.pareto, kFrontRows), ref);
  return s;
}

json infer_plan_json(const analysis::InferSearchSpace& space, const analysis::InferPlan& p) {
  auto dtype = [](const std::optional<DType>& d) { return d ? json(std::string(name(*d))) : json(nullptr); };
  return json{{"engine", space.engine},
              {"chips", p.chips},
              {"tp", p.tp},
              {"ep", p.ep},
              {"batch", p.batch},
              {"weight_dtype", dtype(p.weight_dtype)},
              {"kv_dtype", dtype(p.kv_dtype)},
              {"prompt", space.base.prompt},
              {"gen", space.base.gen},
              {"ttft_s", p.ttft_s},
              {"tpot_s", p.tpot_s},
              {"e2e_latency_s", p.e2e_s},
              {"output_tokens_per_s", p.output_tokens_per_s},
              {"output_tokens_per_s_per_chip", p.tokens_per_s_per_chip},
              {"memory_bytes", p.memory_bytes}};
}

std::string infer_search_text(const model::ModelConfig& m, const hw::System& sys, const analysis::InferSearchSpace& space,
                              const analysis::InferSearchResult& r) {
  std::string s = fmt::format("{} on up to {} x {}, prompt {}, gen {}{}{}\n", m.name, space.chips_max, sys.chip.display_name, space.base.prompt,
                              space.base.gen, space.ttft_max_s ? ", TTFT <= " + t(*space.ttft_max_s) : "",
                              space.tpot_max_s ? ", TPOT <= " + t(*space.tpot_max_s) : "");
  s += space.engine == "static"
           ? "static batches: each batch prefilled together and decoded to its end (infer's numbers)\n"
           : fmt::format("{} serving continuously: a batch is that many users in flight, each request priced in the engine's steady "
                         "state (docs/serving.md#steady-state)\n",
                         space.engine);
  s += search_stats_text(r.stats, "serving curves");
  if (r.best.empty()) return s + "\nno feasible plan: every plan broke a rule above (relax a latency target, allow more chips or lower precision)\n";
  s += fmt::format("\nbest {} by {}:\n", r.best.size(),
                   space.objective == analysis::InferObjective::latency ? "end-to-end latency" : "output tokens/s per chip") +
       infer_table(r.best);
  s += fmt::format("\nPareto front, output tokens/s per chip against TPOT ({} plans{}):\n", r.pareto.size(), thinned(r.pareto.size())) +
       infer_table(thin(r.pareto, kFrontRows));
  return s;
}

std::string train_pareto_svg(const model::ModelConfig& m, const hw::System& sys, const analysis::TrainSearchResult& r) {
  Series front{"Pareto front", {}, {}, true, true, {}, {}}, best{"best plans", {}, {}, false, true, {}, {}};
  for (const auto& p : r.pareto) {
    front.x.push_back(p.memory_bytes / 1e9);  // GB, as the tables and the datasheets
    front.y.push_back(p.tokens_per_s);
    front.labels.push_back(fmt::format("{}: {:.0f} tokens/s, {}", plan_label(p), p.tokens_per_s, size(p.memory_bytes)));
  }
  for (const auto& p : r.best) {
    best.x.push_back(p.memory_bytes / 1e9);
    best.y.push_back(p.tokens_per_s);
    best.labels.push_back(fmt::format("{}: {:.0f} tokens/s, {}", plan_label(p), p.tokens_per_s, size(p.memory_bytes)));
  }
  return sweep_svg({front, best}, "memory per GPU (GB)", "tokens/s", fmt::format("{} on {}: training plans", m.name, sys.chip.display_name),
                   false, false, {false, false});
}

std::string infer_pareto_svg(const model::ModelConfig& m, const hw::System& sys, const analysis::InferSearchResult& r) {
  // The axes engine vendors publish: output tokens/s per chip against tokens/s per user
  // (1 / TPOT), the front's points tagged with their plan wherever a tag fits beside its point.
  Series front{"Pareto front", {}, {}, true, true, {}, {}}, best{"best plans", {}, {}, false, true, {}, {}};
  auto add = [](Series& se, const analysis::InferPlan& p) {
    se.x.push_back(p.tpot_s > 0 ? 1 / p.tpot_s : 0);
    se.y.push_back(p.tokens_per_s_per_chip);
    se.labels.push_back(fmt::format("{}: {:.1f} tokens/s/chip, {:.1f} tokens/s/user (TPOT {})", plan_label(p), p.tokens_per_s_per_chip,
                                    p.tpot_s > 0 ? 1 / p.tpot_s : 0, t(p.tpot_s)));
  };
  for (const auto& p : r.pareto) {
    add(front, p);
    front.tags.push_back(fmt::format("tp{}{} b{} {}", p.tp, p.ep > 1 ? fmt::format(" ep{}", p.ep) : "", p.batch, dtype_label(p.weight_dtype, "ckpt")));
  }
  for (const auto& p : r.best) add(best, p);
  return sweep_svg({front, best}, "output tokens/s per user (1 / TPOT)", "output tokens/s per chip",
                   fmt::format("{} on {}: serving plans", m.name, sys.chip.display_name), false, false, {false, false});
}

}  // namespace ridgeline::report
