// `search serve` reports: JSON, text, the Pareto chart.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/planning.hpp"
#include "ridgeline/report/error_band.hpp"
#include "ridgeline/report/serving.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/report/text.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

using nlohmann::json;
using planning::Deployment;

namespace {

std::string dtype_or(const std::optional<DType>& d, const char* fallback) { return d ? std::string(name(*d)) : fallback; }

std::string seqs_text(std::int64_t n) { return n > 0 ? fmt::format("{}", n) : "auto"; }
// The running-request limit a deployment ran with: the one searched, or its engine's under its
// drafts (SGLang's 48), else 0 (the engine's own rule).
std::int64_t run_seqs(const Deployment& d) { return serving::draft_request_limit(d.engine, d.max_num_seqs, d.spec_tokens); }


// The instances: "3" replicas, or "1P+2D" (disaggregated prefill and decode instances).
std::string instances(const Deployment& d) {
  return d.prefill > 0 ? fmt::format("{}P+{}D", d.prefill, d.decode) : fmt::format("{}", d.replicas);
}

// The decode instances' TP and EP (their own, or the prefill instances').
std::int64_t decode_tp(const Deployment& d) { return d.decode_tp > 0 ? d.decode_tp : d.tp; }
std::int64_t decode_ep(const Deployment& d) { return d.decode_ep > 0 ? d.decode_ep : d.ep; }

// Decode instances with a TP (or EP) of their own.
bool own_decode_tp(const Deployment& d) { return d.prefill > 0 && decode_tp(d) != d.tp; }
bool own_decode_ep(const Deployment& d) { return d.prefill > 0 && decode_ep(d) != d.ep; }

// "4", or "2/8": the prefill instances' TP and the decode instances' own (EP likewise).
std::string tp_text(const Deployment& d) { return own_decode_tp(d) ? fmt::format("{}/{}", d.tp, d.decode_tp) : fmt::format("{}", d.tp); }
std::string ep_text(const Deployment& d) { return own_decode_ep(d) ? fmt::format("{}/{}", d.ep, d.decode_ep) : fmt::format("{}", d.ep); }

// GPUs of the fleet: each instance's TP x EP.
std::int64_t fleet_gpus(const Deployment& d) {
  if (d.prefill == 0) return d.replicas * d.tp * d.ep;
  return d.prefill * d.tp * d.ep + d.decode * decode_tp(d) * decode_ep(d);
}

// The space tries speculative decoding (the table shows each deployment's draft tokens).
bool speculates(const planning::FleetSpace& s) { return !s.drafts.empty(); }

// The deployment's draft as the user named it ("" without speculation).
std::string draft_name(const planning::FleetSpace& s, const Deployment& d) {
  if (d.spec_tokens == 0 || d.draft >= s.drafts.size()) return "";
  const planning::DraftChoice& c = s.drafts[d.draft];
  return !c.arg.empty() ? c.arg : c.spec.mtp ? std::string("mtp") : c.spec.draft->name;
}

// ", chunked prefill, 2 drafts of mtp, fp8_e4m3 weights": the knobs a deployment sets beside
// its plan, engine and limit (chunking, speculation, dtypes).
std::string knobs_text(const planning::FleetSpace& s, const Deployment& d) {
  std::string k;
  if (d.experts == model::ForwardConfig::Experts::expert) k += ", experts ep";
  if (d.chunked_prefill) k += *d.chunked_prefill ? ", chunked prefill" : ", whole prompts";
  if (d.graph_padding) k += *d.graph_padding ? ", graphs padded" : ", graphs unpadded";
  if (d.spec_tokens > 0) k += fmt::format(", {} drafts", d.spec_tokens);
  if (d.spec_tokens > 0 && s.drafts.size() > 1) k += fmt::format(" of {}", draft_name(s, d));
  if (d.weight_dtype) k += fmt::format(", {} weights", name(*d.weight_dtype));
  if (d.kv_dtype) k += fmt::format(", {} KV", name(*d.kv_dtype));
  return k;
}

// "3 x h100-sxm tp 4" (disaggregated: "1P+2D x h100-sxm tp 2/8") and the engine's knobs.
std::string label(const planning::FleetSpace& s, const Deployment& d) {
  std::string l = fmt::format("{} x {} tp {}", instances(d), s.chips[d.chip].sys.chip.name, tp_text(d));
  if (d.ep > 1 || own_decode_ep(d)) l += fmt::format(" ep {}", ep_text(d));
  return l + fmt::format(", {} {} seqs", serving::name(d.engine), seqs_text(run_seqs(d))) + knobs_text(s, d);
}

std::string s_chip(const planning::FleetSpace& s, const Deployment& d) { return s.chips[d.chip].sys.chip.name; }

std::string slo_text(const serving::Slo& s);

using planning::deployment_class;  // its class in the validation table (docs/serving.md#errors-by-class)

// The SLO as asked and the headroom the search sized fleets with.
std::string space_slo_text(const planning::FleetSpace& space) {
  const serving::Slo& asked = planning::asked_slo(space);
  std::string s = slo_text(asked);
  if (space.margin > 0) s += fmt::format("; sized with a {:.3g}% margin (to {})", 100 * space.margin, slo_text(space.base.slo));
  if (space.margin_band) s += "; each deployment sized for its class's median error (--margin band)";
  return s;
}

// With --margin band: the targets the best deployment was held to, each with the class's
// median error that set it ("ttft_p99 857 ms (TTFT -14%)"). Without: where its spare is less
// than its class's median error, a line saying so.
std::string band_text(const model::ModelConfig& m, const planning::FleetSpace& space, const Deployment& b) {
  const std::string cls = deployment_class(m, space, b);
  const serving::Slo held = planning::band_slo(m, space, b);
  std::string s;
  for (const serving::SloTarget& g : planning::asked_slo(space).targets) {
    const planning::BandLean l = planning::band_lean(cls, g.metric);
    const double e = l.error;
    const std::string of = l.from.empty() ? "" : " of " + l.from;  // a borrowed lean names its pool
    const double spare = b.target_slack[static_cast<std::size_t>(g.metric)];
    if (space.margin_band) {
      s += fmt::format("{}{} {} ({})", s.empty() ? "" : ", ", serving::name(g), t(held.find(g.metric)->limit_s),
                       e < 0 ? fmt::format("{:+.0f}%{}", 100 * e, of) : "as asked");
    } else if (e < 0 && spare < -e) {
      s += fmt::format("{}{}: {:.0f}% to spare, the class runs {:+.0f}%{}", s.empty() ? "" : "; ", serving::name(g.metric), 100 * spare,
                       100 * e, of);
    }
  }
  if (s.empty()) return s;
  return space.margin_band ? "  targets held to (its class's median errors): " + s + "\n"
                           : "  its spare is less than its class's median error (" + s + "): --margin band sizes each deployment for it\n";
}

std::string slo_text(const serving::Slo& s) {
  std::string out;
  for (const serving::SloTarget& g : s.targets) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", serving::name(g), t(g.limit_s));
  return out.empty() ? "none (sustainable load only)" : out;
}

// The SLO as asked: the targets the spare of each deployment is measured against.
using planning::asked_slo;

// {"ttft_p99": 0.857, "tpot_p99": 0.046}: each target's limit in seconds, named as --slo names it.
json targets_json(const serving::Slo& slo) {
  json j = json::object();
  for (const serving::SloTarget& g : slo.targets) j[serving::name(g)] = g.limit_s;
  return j;
}

// {"ttft_p99": {"error": -0.46, "from": "any engine, fp8, MoE"}}: the lean each target of the
// class was held to, and the pooled class it is borrowed from (null: the class's own rows).
json leans_json(const std::string& cls, const serving::Slo& slo) {
  json j = json::object();
  for (const serving::SloTarget& g : slo.targets) {
    const planning::BandLean l = planning::band_lean(cls, g.metric);
    j[serving::name(g)] = {{"error", l.error}, {"from", l.from.empty() ? json(nullptr) : json(l.from)}};
  }
  return j;
}

// {"ttft": 0.59, "tpot": 0.37}: the distance to each target there is.
json slack_by_target(const planning::FleetSpace& s, const Deployment& d) {
  json j = json::object();
  for (const serving::SloTarget& g : asked_slo(s).targets) j[std::string(serving::name(g.metric))] = d.target_slack[static_cast<std::size_t>(g.metric)];
  return j;
}

// Whether a decode batch pads to the next captured graph: the search's choice, or the preset's
// (vLLM's always); null where the engine runs no decode graph (captures none, or runs its ranks
// eagerly: the decode instances' where they are apart).
json graph_padding_json(const planning::FleetSpace& s, const Deployment& d) {
  if (d.graph_padding) return *d.graph_padding;
  const serving::EngineConfig e = serving::engine_preset(d.engine, s.chips[d.chip].sys.chip, d.tp);
  const bool graphs = e.decode_graphs != serving::GraphMode::eager && !serving::ranks_run_eagerly(e, d.prefill > 0 ? decode_ep(d) : d.ep);
  return graphs ? json(!e.graph_exact_sizes) : json(nullptr);
}

json deployment_json(const planning::FleetSpace& s, const Deployment& d, const std::string& prefix) {
  json j{{"hw", s.chips[d.chip].sys.chip.name},
         {"tp", d.tp},
         {"ep", d.ep},
         {"experts", d.experts == model::ForwardConfig::Experts::expert ? "ep" : "tp"},
         {"replicas", d.replicas},
         {"disagg", d.prefill > 0 ? json{{"prefill", d.prefill}, {"decode", d.decode}, {"prefill_tp", d.tp},
                                         {"decode_tp", decode_tp(d)}, {"prefill_ep", d.ep}, {"decode_ep", decode_ep(d)}}
                                  : json(nullptr)},
         {"engine", std::string(serving::name(d.engine))},
         {"weight_dtype", d.weight_dtype ? json(std::string(name(*d.weight_dtype))) : json(nullptr)},
         {"kv_dtype", d.kv_dtype ? json(std::string(name(*d.kv_dtype))) : json(nullptr)},
         {"max_num_seqs", run_seqs(d)},
         {"max_batched_tokens", d.max_batched_tokens},
         {"chunked_prefill", d.chunked_prefill.value_or(serving::engine_preset(d.engine, s.chips[d.chip].sys.chip, d.tp).chunked_prefill)},
         {"graph_padding", graph_padding_json(s, d)},
         {"spec_tokens", d.spec_tokens},
         {"draft", d.spec_tokens > 0 ? json(draft_name(s, d)) : json(nullptr)},
         {"gpus", d.gpus},
         {"usd_per_hour", d.usd_per_hour},
         {"usd_per_million_output_tokens", d.usd_per_million_output_tokens},
         {"usd_per_million_tokens", d.usd_per_million_tokens},
         {"ttft_s", summary_json(d.ttft)},
         {"tpot_s", summary_json(d.tpot)},
         {"e2e_s", summary_json(d.e2e)},
         {"output_tokens_per_s", d.output_tokens_per_s},
         {"input_tokens_per_s", d.input_tokens_per_s},
         {"output_tokens_per_s_per_gpu", d.output_tokens_per_s_per_gpu},
         {"output_tokens_per_s_per_user", d.output_tokens_per_s_per_user},
         {"slo_attainment", d.slo_attainment},
         {"slo_slack", d.slo_slack},
         {"slo_binding", d.slo_binding},
         {"slo_slack_by_target", slack_by_target(s, d)},
         {"kv_utilisation_mean", d.kv_utilisation_mean},
         {"mean_decode_batch", d.mean_decode_batch},
         {"max_qps", d.max_qps > 0 ? json(d.max_qps) : json(nullptr)},
         {"saturation", d.saturation ? json{{"qps", d.saturation->qps > 0 ? json(d.saturation->qps) : json(nullptr)},
                                            {"concurrency", d.saturation->concurrency > 0 ? json(d.saturation->concurrency) : json(nullptr)},
                                            {"output_tokens_per_s_per_gpu", d.saturation->output_tokens_per_s_per_gpu},
                                            {"output_tokens_per_s_per_user", d.saturation->output_tokens_per_s_per_user},
                                            {"ttft_s", summary_json(d.saturation->ttft)},
                                            {"tpot_s", summary_json(d.saturation->tpot)}}
                                     : json(nullptr)},
         {"floor_ttft_s", d.floor_ttft_s},
         {"floor_tpot_s", d.floor_tpot_s},
         {"simulations", d.simulations}};
  if (!prefix.empty()) j["command"] = prefix + " " + deployment_flags(s, d);
  return j;
}

// What widens a space whose every deployment was refused for `reason` before it was simulated.
std::string_view reject_hint(planning::Reject reason) {
  switch (reason) {
    case planning::Reject::layout:
      return "the --tp and --ep values do not divide the model's heads, experts or widths, or the engine would not start with the "
             "limits tried (e.g. vLLM with no CUDA-graph size left for its draft tokens: `serve` with one of them names it)";
    case planning::Reject::dtype: return "a chip has no rate for a dtype of the plan: other --weight-dtype or --kv-dtype";
    case planning::Reject::memory:
      return "the weights and a step's activations leave no KV cache on any layout searched: more chips a replica (a larger --tp), "
             "fp8 or fp4 weights (--weight-dtype), or chips with more memory";
    case planning::Reject::too_long: return "some request does not fit a replica's cache or the model's positions: shorter --prompt or --gen, or more memory";
    case planning::Reject::ttft_floor: return "even alone, a prompt's prefill is beyond the TTFT target: a larger --tp, faster chips or a looser target";
    case planning::Reject::tpot_floor: return "a decode step of one sequence alone is beyond the TPOT target: a larger --tp, faster chips or a looser target";
    case planning::Reject::fleet_size: return "more GPUs than --max-gpus would be needed: raise --max-gpus";
    case planning::Reject::count: break;
  }
  return "";
}

std::string closest_text(const planning::FleetSpace& s, const planning::Closest& c) {
  const Deployment& d = c.deployment;
  const std::string what = c.reason == planning::Reject::fleet_size
                               ? fmt::format("with {} {} ({} GPUs, the most --max-gpus allows) its {} is {}", instances(d),
                                             d.prefill > 0 ? "instances" : "replicas",
                                             fleet_gpus(d), c.binding, t(c.value_s))
                               : fmt::format("its {} floor ({}) is {}", c.binding,
                                             c.binding == "tpot" || c.binding == "itl" ? "a decode step of one sequence alone" : "each prompt prefilled alone",
                                             t(c.value_s));
  return fmt::format("closest: {} x {} tp {}{}, {}{}: {}, against a target of {}\n", d.tp * d.ep, s.chips[d.chip].sys.chip.name, tp_text(d),
                     d.ep > 1 || own_decode_ep(d) ? fmt::format(" ep {}", ep_text(d)) : "", serving::name(d.engine), knobs_text(s, d), what, t(c.target_s));
}

}  // namespace

std::string deployment_flags(const planning::FleetSpace& s, const Deployment& d) {
  const planning::ChipChoice& c = s.chips[d.chip];
  std::string f = fmt::format("--hw {} --tp {}", shell_word(c.arg.empty() ? c.sys.chip.name : c.arg), d.tp);
  if (d.ep > 1) f += fmt::format(" --ep {}", d.ep);
  if (d.experts == model::ForwardConfig::Experts::expert) f += " --experts ep";
  if (d.weight_dtype) f += fmt::format(" --weight-dtype {}", name(*d.weight_dtype));
  if (d.kv_dtype) f += fmt::format(" --kv-dtype {}", name(*d.kv_dtype));
  f += fmt::format(" --engine {}", serving::name(d.engine));
  if (d.max_num_seqs > 0) f += fmt::format(" --max-num-seqs {}", d.max_num_seqs);
  f += fmt::format(" --max-batched-tokens {}", d.max_batched_tokens);
  // The searched graphs, where serve alone would size them from the sequence limit.
  if (const std::int64_t g = planning::pinned_graph_max_batch(s, d); g > 0) f += fmt::format(" --graph-max-batch {}", g);
  if (d.chunked_prefill) f += fmt::format(" --chunked-prefill {}", *d.chunked_prefill ? "on" : "off");
  if (d.graph_padding) f += fmt::format(" --graph-padding {}", *d.graph_padding ? "on" : "off");
  f += d.prefill > 0 ? fmt::format(" --disagg {}:{}", d.prefill, d.decode) : fmt::format(" --replicas {}", d.replicas);
  if (own_decode_tp(d) || own_decode_ep(d)) {
    f += fmt::format(" --disagg-decode tp={}", decode_tp(d));
    if (own_decode_ep(d)) f += fmt::format(",ep={}", decode_ep(d));
  }
  if (d.spec_tokens > 0 && d.draft < s.drafts.size()) {
    const model::Speculation& sp = s.drafts[d.draft].spec;
    // The draft, these tokens, and the rates of their positions as they were given.
    f += fmt::format(" --draft {} --spec-tokens {} --accept {}", shell_word(draft_name(s, d)), d.spec_tokens,
                     model::accept_arg(sp, d.spec_tokens));
  }
  return f;
}

json fleet_search_json(const model::ModelConfig& m, const planning::FleetSpace& space, const planning::FleetSearchResult& r,
                       const std::string& prefix) {
  json rejected = json::object();
  for (int i = 0; i < static_cast<int>(planning::Reject::count); ++i) {
    if (r.rejected[static_cast<std::size_t>(i)] > 0) rejected[std::string(name(static_cast<planning::Reject>(i)))] = r.rejected[static_cast<std::size_t>(i)];
  }
  json feasible = json::array(), pareto = json::array();
  for (std::size_t i = 0; i < r.feasible.size() && i < static_cast<std::size_t>(space.top); ++i) {
    feasible.push_back(deployment_json(space, r.feasible[i], prefix));
  }
  for (const Deployment& d : r.pareto) pareto.push_back(deployment_json(space, d, prefix));
  json per_chip = json::array();
  for (const Deployment* d : planning::best_per_chip(space, r.feasible)) per_chip.push_back(deployment_json(space, *d, prefix));
  json j{{"model", m.name},
         {"workload", arrival_text(space.base.workload)},
         {"slo", slo_text(asked_slo(space))},
         {"margin", space.margin},
         {"margin_band", space.margin_band},
         {"best_targets", r.best && space.margin_band ? targets_json(planning::band_slo(m, space, *r.best)) : json(nullptr)},
         {"best_target_leans", r.best && space.margin_band ? leans_json(deployment_class(m, space, *r.best), asked_slo(space)) : json(nullptr)},
         {"seeds", {{"count", space.seeds.count}, {"quantile", space.seeds.quantile}}},
         {"best", r.best ? deployment_json(space, *r.best, prefix) : json(nullptr)},
         {"error_band", r.best ? error_band_json(deployment_class(m, space, *r.best)) : json(nullptr)},
         {"best_engine", r.best ? engine_json(planning::serve_config(m, space, *r.best).engine) : json(nullptr)},
         {"feasible", feasible},
         {"pareto", pareto},
         {"pareto_at", std::string(planning::name(space.pareto))},
         {"best_per_chip", per_chip},
         {"ranked_by", r.priced ? "usd_per_hour" : "gpus"},
         {"evaluated", r.evaluated},
         {"left_out", r.left_out},
         {"feasible_count", r.feasible_count},
         {"rejected", rejected},
         {"simulations", r.simulations},
         {"simulated_requests", r.simulated_requests},
         {"elapsed_s", r.elapsed_s},
         {"interrupted", r.interrupted}};
  if (r.closest) {
    const planning::Closest& c = *r.closest;
    json cj = deployment_json(space, c.deployment, "");
    cj["reason"] = std::string(name(c.reason));
    cj["binding"] = c.binding;
    cj["value_s"] = c.value_s;
    cj["target_s"] = c.target_s;
    j["closest"] = cj;
  } else {
    j["closest"] = nullptr;
  }
  return j;
}

namespace {

// "59%", or "-" without a target on `m`; negative when missed.
std::string spare_text(const serving::Slo& slo, serving::SloMetric m, const Deployment& d) {
  return slo.find(m) ? fmt::format("{:.0f}%", 100 * d.target_slack[static_cast<std::size_t>(m)]) : "-";
}

// The cheapest feasible deployment on each chip: "H100, H200 or B200?" in one table.
std::string per_chip_text(const planning::FleetSpace& space, const planning::FleetSearchResult& r) {
  const serving::Slo& slo = asked_slo(space);
  std::string s = fmt::format("best per chip ({} feasible deployment on each; spare: the distance to each target as asked):\n",
                              r.priced ? "the cheapest" : "the fewest GPUs of any");
  s += fmt::format("  {:<12}{:>5}  {:<18}{:>10}{:>10}{:>9}{:>9}{:>10}{:>7}{:>10}{:>7}\n", "hw", "GPUs", "layout", "weights", "KV", "$/h",
                   "$/M out", "TTFT p99", "spare", "TPOT p99", "spare");
  const std::vector<const Deployment*> best = planning::best_per_chip(space, r.feasible);
  for (std::size_t c = 0; c < space.chips.size(); ++c) {
    const auto it = std::find_if(best.begin(), best.end(), [&](const Deployment* d) { return d->chip == c; });
    if (it == best.end()) {
      s += fmt::format("  {:<12} no feasible deployment\n", space.chips[c].sys.chip.name);
      continue;
    }
    const Deployment& d = **it;
    std::string layout = fmt::format("{} x tp {}", instances(d), tp_text(d));
    if (d.ep > 1 || own_decode_ep(d)) layout += fmt::format(" ep {}", ep_text(d));
    if (d.spec_tokens > 0) layout += fmt::format(" k{}", d.spec_tokens);
    s += fmt::format("  {:<12}{:>5}  {:<18}{:>10}{:>10}{:>9}{:>9}{:>10}{:>7}{:>10}{:>7}\n", space.chips[c].sys.chip.name, d.gpus, layout,
                     dtype_or(d.weight_dtype, "-"), dtype_or(d.kv_dtype, "-"), d.usd_per_hour > 0 ? format_usd(d.usd_per_hour) : "-",
                     d.usd_per_hour > 0 ? format_usd(d.usd_per_million_output_tokens) : "-", t(d.ttft.p99), spare_text(slo, serving::SloMetric::ttft, d),
                     t(d.tpot.p99), spare_text(slo, serving::SloMetric::tpot, d));
  }
  for (const serving::SloTarget& g : slo.targets) {
    if (g.metric == serving::SloMetric::ttft || g.metric == serving::SloMetric::tpot) continue;
    s += fmt::format("  (an {} target too: each row's spare on it is in --json, slo_slack_by_target)\n", serving::name(g.metric));
  }
  return s;
}

}  // namespace

std::string fleet_search_text(const model::ModelConfig& m, const planning::FleetSpace& space, const planning::FleetSearchResult& r,
                              const std::string& prefix) {
  const serving::WorkloadSpec& w = space.base.workload;
  const std::string per_run =
      space.base.window.on
          ? fmt::format("each simulation's requests chosen by the run (to steady state, {} measured per instance)",
                        serving::window_requests_per_instance(space.base))
          : fmt::format("{} requests per simulation",
                        w.arrival == serving::Arrival::trace && !w.open_trace ? static_cast<std::int64_t>(w.trace.size()) : w.requests);
  const std::string seeds =
      space.seeds.count > 1 ? fmt::format("; {} seeds each, sized on {}", space.seeds.count,
                                          space.seeds.quantile >= 1 ? std::string("the worst") : fmt::format("quantile {:g}", space.seeds.quantile))
                            : std::string();
  std::string s = fmt::format("{}: {}, {}; {}{}\nSLO: {}\n", m.name, arrival_text(w), lengths_text(w), per_run, seeds, space_slo_text(space));
  s += fmt::format("{} deployments ({} feasible) in {}: {} simulations, {:.3g} requests simulated ({:.3g} requests/s)\n", r.evaluated,
                   r.feasible_count, t(r.elapsed_s), r.simulations, r.simulated_requests,
                   r.elapsed_s > 0 ? r.simulated_requests / r.elapsed_s : 0);
  if (!r.left_out.empty()) {
    s += fmt::format("left out (the engine does not run on the chip): {}\n", fmt::join(r.left_out, ", "));
  }
  std::string rej, hints;  // the refusals on one line; each with what would widen the space, one a line
  for (int i = 0; i < static_cast<int>(planning::Reject::count); ++i) {
    const auto n = r.rejected[static_cast<std::size_t>(i)];
    if (n == 0) continue;
    const auto reason = static_cast<planning::Reject>(i);
    rej += fmt::format("{}{} {}", rej.empty() ? "" : ", ", name(reason), n);
    hints += fmt::format("  {} ({}): {}\n", name(reason), n, reject_hint(reason));
  }
  if (!rej.empty()) s += "rejected: " + rej + "\n";
  if (r.best && space.chips.size() > 1) s += "\n" + per_chip_text(space, r);
  if (!r.best) {
    const bool slo = space.slo_asked.any() || space.base.slo.any();
    s += slo ? "\nno feasible deployment meets the SLOs\n" : "\nno feasible deployment sustains the load\n";
    if (r.closest) s += closest_text(space, *r.closest);
    if (r.simulations == 0 && r.evaluated > 0) {
      // Nothing ran: what each refusal asks of the space.
      s += fmt::format("every one of the {} deployments was refused before it was simulated:\n{}", r.evaluated, hints);
    }
    return s;
  }
  const Deployment& b = *r.best;
  s += fmt::format("\nbest ({}): {} = {} GPUs", r.priced ? "cheapest" : "fewest GPUs", label(space, b), b.gpus);
  if (b.usd_per_hour > 0) s += fmt::format(", ${}/h, ${} per million output tokens", format_usd(b.usd_per_hour), format_usd(b.usd_per_million_output_tokens));
  s += fmt::format("\n  TTFT p99 {}, TPOT p99 {}; {:.4g} output tok/s ({:.4g} per GPU, {:.4g} per user)", t(b.ttft.p99), t(b.tpot.p99),
                   b.output_tokens_per_s, b.output_tokens_per_s_per_gpu, b.output_tokens_per_s_per_user);
  if (b.max_qps > 0) s += fmt::format("; within the SLO up to {:.4g} req/s", b.max_qps);
  if (!b.slo_binding.empty()) s += fmt::format("; {:.0f}% to spare ({} binds)", 100 * b.slo_slack, b.slo_binding);
  s += "\n";
  if (!prefix.empty()) s += "  " + prefix + " " + deployment_flags(space, b) + "\n";
  s += "  " + error_band_text(deployment_class(m, space, b));
  s += band_text(m, space, b);
  // Its engine's host components, as `serve` on the command above prints them.
  const serving::EngineConfig e = planning::serve_config(m, space, b).engine;
  s += fmt::format("  its engine, {}, on the host as serve prices it:\n", engine_label(e));
  s += engine_host_text(m, e, "    ");
  s += fmt::format("    sources: host: {}; front end: {}\n", e.host_source.empty() ? "none" : e.host_source,
                   e.front_end_source.empty() ? "none" : e.front_end_source);

  // Deployments that differ only in their sequence limit and ran the same are one row, with
  // the range of limits ("64-1024").
  auto same_run = [](const Deployment& a, const Deployment& o) {
    return a.chip == o.chip && a.engine == o.engine && a.tp == o.tp && a.ep == o.ep && a.experts == o.experts && a.weight_dtype == o.weight_dtype &&
           a.kv_dtype == o.kv_dtype && a.max_batched_tokens == o.max_batched_tokens && a.chunked_prefill == o.chunked_prefill && a.graph_padding == o.graph_padding && a.replicas == o.replicas &&
           a.prefill == o.prefill && a.decode == o.decode && a.decode_tp == o.decode_tp && a.decode_ep == o.decode_ep && a.spec_tokens == o.spec_tokens && a.draft == o.draft &&
           a.ttft.p99 == o.ttft.p99 && a.tpot.p99 == o.tpot.p99 && a.output_tokens_per_s == o.output_tokens_per_s && a.max_qps == o.max_qps;
  };
  auto table_rows = [&](const std::vector<Deployment>& v) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < v.size(); ++n) {
      std::size_t j = i + 1;
      while (j < v.size() && same_run(v[i], v[j])) ++j;
      i = j;
    }
    return n;
  };
  auto table = [&](const std::vector<Deployment>& v) {
    // A column of draft tokens per step when the space speculates, with the draft when it
    // tries several.
    const bool spec = speculates(space);
    std::size_t names = 0;
    for (const Deployment& d : v) names = space.drafts.size() > 1 ? std::max(names, draft_name(space, d).size()) : 0;
    const std::string spec_head = !spec ? "" : names > 0 ? fmt::format("  spec {:<{}}", "draft", std::max<std::size_t>(names, 5)) : "  spec";
    // Columns of chunked prefill and of graph padding (on or off) when the space chooses them.
    const bool chunking = !space.chunked_prefill.empty(), padding = !space.graph_padding.empty();
    // The engine column as wide as its longest preset's name and a space (8 at least).
    std::size_t engine_w = 8;
    for (const Deployment& d : v) engine_w = std::max(engine_w, serving::name(d.engine).size() + 1);
    s += fmt::format("  {:<12}{:>4}{:>5}{:>{}}{}{:>10}{:>7}{}{}{:>10}{:>10}{:>8}{:>5}{:>9}{:>9}{:>10}{:>10}{:>9}{:>9}{:>9}{:>7}\n", "hw", "tp", "ep", "engine", engine_w,
                     spec_head, "seqs", "tokens", chunking ? " chunk" : "", padding ? "  pad" : "", "weights", "KV", "rep", "GPUs", "$/h", "$/M out", "TTFT p99", "TPOT p99",
                     "tok/s/G", "tok/s/u", "max qps", "spare");
    for (std::size_t i = 0; i < v.size();) {
      const Deployment& d = v[i];
      std::int64_t lo = run_seqs(d), hi = run_seqs(d);
      std::size_t j = i + 1;
      for (; j < v.size() && same_run(d, v[j]); ++j) lo = std::min(lo, run_seqs(v[j])), hi = std::max(hi, run_seqs(v[j]));
      const std::string seqs = lo == hi ? seqs_text(lo) : fmt::format("{}-{}", seqs_text(lo), seqs_text(hi));
      std::string k = !spec ? "" : d.spec_tokens > 0 ? fmt::format("{:>6}", d.spec_tokens) : "     -";
      if (names > 0) k += fmt::format(" {:<{}}", d.spec_tokens > 0 ? draft_name(space, d) : "-", std::max<std::size_t>(names, 5));
      const std::string chunk = !chunking ? "" : fmt::format("{:>6}", !d.chunked_prefill ? "-" : *d.chunked_prefill ? "on" : "off");
      const std::string pad = !padding ? "" : fmt::format("{:>5}", !d.graph_padding ? "-" : *d.graph_padding ? "on" : "off");
      s += fmt::format("  {:<12}{:>4}{:>5}{:>{}}{}{:>10}{:>7}{}{}{:>10}{:>10}{:>8}{:>5}{:>9}{:>9}{:>10}{:>10}{:>9.4g}{:>9.4g}{:>9}{:>7}\n",
                       space.chips[d.chip].sys.chip.name, tp_text(d), ep_text(d) + (d.experts == model::ForwardConfig::Experts::expert ? "e" : ""),
                       serving::name(d.engine), engine_w, k, seqs, d.max_batched_tokens, chunk, pad,
                       dtype_or(d.weight_dtype, "-"), dtype_or(d.kv_dtype, "-"), instances(d), d.gpus,
                       d.usd_per_hour > 0 ? format_usd(d.usd_per_hour) : "-", d.usd_per_hour > 0 ? format_usd(d.usd_per_million_output_tokens) : "-",
                       t(d.ttft.p99), t(d.tpot.p99), d.output_tokens_per_s_per_gpu, d.output_tokens_per_s_per_user,
                       d.max_qps > 0 ? fmt::format("{:.4g}", d.max_qps) : "-",
                       d.slo_binding.empty() ? std::string("-") : fmt::format("{:.0f}%", 100 * d.slo_slack));
      i = j;
    }
  };
  const std::vector<Deployment> listed(r.feasible.begin(),
                                       r.feasible.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(r.feasible.size(), static_cast<std::size_t>(space.top))));
  const std::size_t rows = table_rows(listed);
  s += fmt::format("\n{} first: the {} {} of {} feasible deployments (--top) on {} row{}{}:\n", r.priced ? "cheapest" : "fewest GPUs", listed.size(),
                   r.priced ? "cheapest" : "smallest", r.feasible_count, rows, rows == 1 ? "" : "s",
                   rows < listed.size() ? " (a row joins those that differ only in their sequence limit and ran the same)" : "");
  table(listed);
  if (space.pareto == planning::ParetoAt::offered) {
    s += "\nPareto front, output tokens/s per GPU against tokens/s per user:\n";
    table(r.pareto);
    return s;
  }
  s += "\nPareto front at each deployment's saturation (the SLO not applied: open loop, the largest rate its fleet sustains in\n"
       "steady state; closed loop, as many clients as its sequence limits hold), output tokens/s per GPU against per user:\n";
  std::size_t lw = 10;
  for (const Deployment& d : r.pareto) lw = std::max(lw, label(space, d).size());
  s += fmt::format("  {:<{}}{:>14}{:>11}{:>11}{:>10}{:>10}\n", "deployment", lw, "load", "tok/s/GPU", "tok/s/user", "TTFT p99", "TPOT p99");
  for (const Deployment& d : r.pareto) {
    const planning::Saturation& x = *d.saturation;
    const std::string load = x.qps > 0 ? fmt::format("{:.4g} req/s", x.qps) : fmt::format("{} clients", x.concurrency);
    s += fmt::format("  {:<{}}{:>14}{:>11.4g}{:>11.4g}{:>10}{:>10}\n", label(space, d), lw, load, x.output_tokens_per_s_per_gpu,
                     x.output_tokens_per_s_per_user, t(x.ttft.p99), t(x.tpot.p99));
  }
  if (r.pareto.empty()) s += "  (no feasible deployment sustained a load beyond the offered one)\n";
  return s;
}

std::string fleet_pareto_svg(const model::ModelConfig& m, const planning::FleetSpace& space, const planning::FleetSearchResult& r) {
  // At the offered load, or each fleet at its saturation (its own load in the label).
  const bool sat = space.pareto == planning::ParetoAt::saturation;
  Series front{sat ? "Pareto front at saturation" : "Pareto front", {}, {}, true, true, {}, {}}, others{"feasible", {}, {}, false, true, {}, {}},
      best{"best", {}, {}, false, true, {}, {}};
  auto add = [&](Series& se, const Deployment& d) {
    if (sat && !d.saturation) return;
    const double gpu = sat ? d.saturation->output_tokens_per_s_per_gpu : d.output_tokens_per_s_per_gpu;
    const double user = sat ? d.saturation->output_tokens_per_s_per_user : d.output_tokens_per_s_per_user;
    const serving::Summary& ttft = sat ? d.saturation->ttft : d.ttft;
    const serving::Summary& tpot = sat ? d.saturation->tpot : d.tpot;
    const std::string load = !sat ? "" : d.saturation->qps > 0 ? fmt::format(" at {:.4g} req/s", d.saturation->qps)
                                                               : fmt::format(" at {} clients", d.saturation->concurrency);
    se.x.push_back(user);
    se.y.push_back(gpu);
    se.labels.push_back(fmt::format("{}{}: {:.4g} tok/s/GPU, {:.4g} tok/s/user, TTFT p99 {}, TPOT p99 {}", label(space, d), load, gpu, user,
                                    t(ttft.p99), t(tpot.p99)));
  };
  for (const Deployment& d : r.pareto) {
    add(front, d);
    // Read at a glance: "1P+1D × h100-sxm tp 1/2, fp8_e4m3 weights" (it was "1P+1Dxh100-sxm tp1/2").
    std::string tag = fmt::format("{} × {} tp {}", instances(d), s_chip(space, d), tp_text(d));
    if (d.ep > 1) tag += fmt::format(" ep {}", d.ep);
    if (d.experts == model::ForwardConfig::Experts::expert) tag += ", experts ep";
    if (d.weight_dtype) tag += fmt::format(", {} weights", name(*d.weight_dtype));
    if (d.spec_tokens > 0) tag += fmt::format(" k{}", d.spec_tokens) + (space.drafts.size() > 1 ? " " + draft_name(space, d) : "");
    if (d.chunked_prefill && !*d.chunked_prefill) tag += " whole";
    if (d.graph_padding) tag += *d.graph_padding ? " padded" : " unpadded";
    front.tags.push_back(tag);
  }
  for (const Deployment& d : r.feasible) add(others, d);
  if (r.best) add(best, *r.best);
  return sweep_svg({front, others, best}, "output tokens/s per user", "output tokens/s per GPU",
                   fmt::format("{}: serving deployments ({}{})", m.name, arrival_text(space.base.workload), sat ? "; each at its saturation" : ""),
                   false, false, {false, false});
}

}  // namespace ridgeline::report
