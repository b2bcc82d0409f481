// `ridgeline plot roofline` and `ridgeline plot sweep`: SVG charts.
#include <fmt/format.h>

#include <cmath>

#include <array>
#include <memory>
#include <span>

#include "common.hpp"
#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/csv.hpp"
#include "ridgeline/io/embedded.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/profile_file.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "ridgeline/profile/analysis.hpp"
#include "ridgeline/report/result_charts.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::cli {

namespace {
// The output of `infer --json` or `train --json`, read back for a chart.
nlohmann::json read_result_json(const std::string& path) {
  const std::string text = io::read_text_file(path, "the JSON of `ridgeline infer --json` or `train --json`");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw InputError(fmt::format("{}: not JSON: expected the output of `ridgeline infer --json` or `train --json`", path));
  }
}
}  // namespace

void register_plot_breakdown(CLI::App* plot, std::vector<Command>& commands);
void register_plot_memory(CLI::App* plot, std::vector<Command>& commands);
void register_plot_serving(CLI::App* plot, std::vector<Command>& commands);

void register_plot(CLI::App& root, std::vector<Command>& commands) {
  auto* plot = root.add_subcommand("plot", "SVG charts: rooflines with points, sweeps");
  plot->require_subcommand(1);

  register_plot_breakdown(plot, commands);
  register_plot_memory(plot, commands);
  register_plot_serving(plot, commands);

  struct RoofFlags {
    std::string hw = "h100-sxm", dtype, points, profile, from, out;
    bool json = false;
  };
  auto f = std::make_shared<RoofFlags>();
  auto* r = plot->add_subcommand("roofline", "the roofline of one or more chips, with points");
  r->add_option("--hw", f->hw, "chips, comma-separated (catalog names or .yaml files)")->capture_default_str();
  r->add_option("--dtype", f->dtype, "matrix-unit dtypes of the ceilings, comma-separated (the first is drawn in full; default bf16, or fp16 where no chip has bf16)");
  r->add_option("--from", f->from, "place the ops of a result: `infer --json`, `train --json` or `op --json` output");
  r->add_option("--points", f->points, "CSV of points: name,intensity,flops_per_s");
  r->add_option("--profile", f->profile, "place a profile's kernels (Nsight Compute CSV, PyTorch trace, CSV)");
  r->add_option("--out", f->out, "SVG file to write")->required();
  r->add_flag("--json", f->json, "print {\"out\": path, \"points\": n} as JSON");
  commands.push_back({r, [f] {
                        std::vector<hw::ChipSpec> chips;
                        for (const auto& name : split_list(f->hw)) chips.push_back(io::resolve_chip(name));
                        std::vector<DType> dtypes;
                        std::string dtype_flag = f->dtype;
                        if (dtype_flag.empty()) {
                          const bool bf16 = std::any_of(chips.begin(), chips.end(), [](const hw::ChipSpec& c) { return c.peak(hw::Unit::matrix, DType::bf16) > 0; });
                          dtype_flag = bf16 ? "bf16" : "fp16";
                        }
                        for (const auto& d : split_list(dtype_flag)) dtypes.push_back(parse_dtype_or_throw(d, "--dtype"));
                        if (dtypes.empty()) throw InputError("--dtype: empty: expected dtypes such as bf16,fp8");
                        const DType dtype = dtypes.front();
                        // A ceiling no chip has would draw nothing: say so.
                        for (const DType d : dtypes) {
                          const bool any = std::any_of(chips.begin(), chips.end(), [d](const hw::ChipSpec& c) { return c.peak(hw::Unit::matrix, d) > 0; });
                          if (!any) throw InputError(fmt::format("--dtype: {} has no matrix rate on {}: no ceiling to draw", name(d), f->hw));
                        }
                        std::vector<report::ChartPoint> points;
                        if (!f->points.empty()) {
                          auto rows = io::parse_csv(io::read_text_file(f->points, "a CSV of name,intensity,flops_per_s"), f->points);
                          for (size_t i = 0; i < rows.size(); ++i) {
                            if (rows[i].size() < 3) throw InputError(fmt::format("{}: line {}: expected name,intensity,flops_per_s", f->points, i + 1));
                            if (i == 0 && rows[i][1] == "intensity") continue;  // header
                            const std::string where = fmt::format("{}: line {}", f->points, i + 1);
                            points.push_back({rows[i][0], parse_number(rows[i][1], where), parse_number(rows[i][2], where)});
                          }
                        }
                        if (!f->profile.empty()) {
                          profile::Profile p = io::load_profile(f->profile, "");
                          profile::ProfileAnalysis a = profile::analyze(p, chips.front(), dtype);
                          for (const auto& k : a.kernels) {
                            if (!k.unknown) points.push_back({k.name, k.intensity_flops_per_byte, k.attained_flops_per_s});  // unknown: no place
                          }
                        }
                        if (!f->from.empty()) {
                          const nlohmann::json j = read_result_json(f->from);
                          if (j.is_object() && j.contains("ops") && j["ops"].is_array()) {
                            for (const auto& p : report::result_points(j)) points.push_back(p);
                          } else if (j.is_object() && j.contains("intensity_flops_per_byte") && j.contains("attained_flops_per_s")) {
                            const std::string label = j.contains("op") && j["op"].is_object() ? j["op"].value("kind", "op") : "op";
                            points.push_back({label, j["intensity_flops_per_byte"].get<double>(), j["attained_flops_per_s"].get<double>()});
                          } else {
                            throw InputError(fmt::format("{}: no ops: expected the output of `ridgeline infer --json`, `train --json` or `op --json`", f->from));
                          }
                        }
                        std::string title = "Roofline";
                        for (const auto& c : chips) title += " · " + c.display_name;
                        report::write_chart(f->out, report::roofline_svg(chips, dtypes, points, title));
                        emit(f->json, nlohmann::json{{"out", f->out}, {"points", points.size()}}, "wrote " + f->out + "\n");
                      }});

  struct SweepFlags {
    HardwareFlags hw;
    std::string out, series = "4096x4096", a_dtype = "bf16", b_dtype, from = "1", to = "512";
    bool json = false;
  };
  auto g = std::make_shared<SweepFlags>();
  auto* s = plot->add_subcommand("sweep", "attained FLOP/s of a matmul against its batch m (seed 003 Q3)");
  add_hardware_flags(s, g->hw);
  s->add_option("--series", g->series, "KxN[,KxN...]: the weight shapes, one curve each")->capture_default_str();
  s->add_option("--a-dtype", g->a_dtype, "activation dtype")->capture_default_str();
  s->add_option("--b-dtype", g->b_dtype, "weight dtype (default --a-dtype)");
  s->add_option("--from", g->from, "smallest m")->capture_default_str();
  s->add_option("--to", g->to, "largest m")->capture_default_str();
  s->add_option("--out", g->out, "SVG file to write")->required();
  s->add_flag("--json", g->json, "print the curves as JSON");
  commands.push_back({s, [g] {
                        hw::System sys = load_chip_system(g->hw);
                        const auto lo = parse_positive_int(g->from, "--from"), hi = parse_positive_int(g->to, "--to");
                        if (hi < lo || hi > 1'000'000) throw InputError(fmt::format("--to: {} must be in --from {} .. 1000000", hi, lo));
                        std::vector<report::Series> curves;
                        nlohmann::json j = nlohmann::json::array();
                        for (const auto& shape : split_list(g->series)) {
                          auto x = shape.find('x');
                          if (x == std::string::npos) throw InputError(fmt::format("--series: '{}' is not KxN", shape));
                          analysis::OpConfig op;
                          op.kind = analysis::OpKind::matmul;
                          op.k = parse_positive_int(shape.substr(0, x), "--series");
                          op.n = parse_positive_int(shape.substr(x + 1), "--series");
                          op.a_dtype = parse_dtype_or_throw(g->a_dtype, "--a-dtype");
                          op.b_dtype = g->b_dtype.empty() ? *op.a_dtype : parse_dtype_or_throw(g->b_dtype, "--b-dtype");
                          report::Series se;
                          se.label = fmt::format("D={} F={}", op.k, op.n);
                          // At most ~600 points, evenly spaced in m (seed 003 plots m = 1..511).
                          const double steps = std::min(600.0, static_cast<double>(hi - lo + 1));
                          std::int64_t last = 0;
                          for (int i = 0; i < static_cast<int>(steps); ++i) {
                            const double t = steps > 1 ? i / (steps - 1) : 0;
                            const auto m = static_cast<std::int64_t>(std::llround(static_cast<double>(lo) * (1 - t) + static_cast<double>(hi) * t));
                            if (m == last) continue;
                            last = m;
                            op.m = m;
                            analysis::validate(op);
                            hw::ChipSpec c = sys.chip;
                            c.launch_overhead_s = 0;  // the roofline, not the launch floor
                            ops::Cost cost = analysis::op_cost(op, sys);
                            ops::check_supported(cost, c);
                            ops::Estimate e = ops::estimate(cost, c);
                            se.x.push_back(static_cast<double>(m));
                            se.y.push_back(e.attained_flops_per_s);
                          }
                          j.push_back({{"label", se.label}, {"m", se.x}, {"attained_flops_per_s", se.y}});
                          curves.push_back(std::move(se));
                        }
                        report::write_chart(g->out, report::sweep_svg(curves, "batch m (tokens)", "attained FLOP/s",
                                                                                fmt::format("matmul on {}", sys.chip.display_name), false, false));
                        emit(g->json, nlohmann::json{{"out", g->out}, {"series", j}}, "wrote " + g->out + "\n");
                      }});
}


void register_plot_breakdown(CLI::App* plot, std::vector<Command>& commands) {
  struct Flags {
    std::string input, out;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  auto* b = plot->add_subcommand("breakdown", "time by op kind per phase, from `infer --json` or `train --json` output");
  b->add_option("file", f->input, "a JSON file written by `ridgeline infer --json` or `ridgeline train --json`")->required();
  b->add_option("--out", f->out, "SVG (or PNG) file to write")->required();
  b->add_flag("--json", f->json, "print the bars as JSON");
  commands.push_back({b, [f] {
                        const nlohmann::json j = read_result_json(f->input);
                        size_t bars = 0;
                        report::write_chart(f->out, report::breakdown_svg(j, f->input, &bars));
                        nlohmann::json out = {{"out", f->out}, {"bars", bars}};
                        emit(f->json, out, "wrote " + f->out + "\n");
                      }});
}

void register_plot_memory(CLI::App* plot, std::vector<Command>& commands) {
  struct Flags {
    std::string input, out;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  auto* b = plot->add_subcommand("memory", "memory on one chip by kind against its capacity, from `infer --json` or `train --json` output");
  b->add_option("file", f->input, "a JSON file written by `ridgeline infer --json` or `ridgeline train --json`")->required();
  b->add_option("--out", f->out, "SVG (or PNG) file to write")->required();
  b->add_flag("--json", f->json, "print the bar as JSON");
  commands.push_back({b, [f] {
                        const nlohmann::json j = read_result_json(f->input);
                        nlohmann::json seg;
                        const std::string svg = report::memory_svg(j, f->input, &seg);
                        const nlohmann::json& mem = j.contains("memory") ? j["memory"] : j["memory_per_gpu"];
                        const double cap = mem.contains("capacity_bytes") && mem["capacity_bytes"].is_number() ? mem["capacity_bytes"].get<double>() : 0.0;
                        if (!(cap > 0) || !std::isfinite(cap)) {
                          throw InputError(fmt::format("{}: capacity_bytes {}: expected the chip's memory, a size above zero", f->input, cap));
                        }
                        report::write_chart(f->out, svg);
                        emit(f->json, nlohmann::json{{"out", f->out}, {"segments", seg}, {"capacity_bytes", cap}}, "wrote " + f->out + "\n");
                      }});
}

// Charts of a `serve --json` document: latency CDFs, requests and KV cache over time, and
// (from a --qps sweep) throughput against latency.
void register_plot_serving(CLI::App* plot, std::vector<Command>& commands) {
  struct Chart {
    const char* name;
    const char* help;
    std::string (*draw)(const nlohmann::json&, const std::string&);
  };
  static const Chart charts[] = {
      {"latency", "CDFs of TTFT, TPOT, ITL and E2E, from `serve --json` output",
       [](const nlohmann::json& j, const std::string& w) { return report::serving_latency_svg(j, w); }},
      {"timeline", "running and waiting requests over time, from `serve --json` output", &report::serving_timeline_svg},
      {"kv", "KV cache used over time, from `serve --json` output", &report::serving_kv_svg},
      {"throughput", "p99 TTFT and TPOT against output tokens/s per GPU, from `serve --qps A,B,... --json` output",
       [](const nlohmann::json& j, const std::string& w) { return report::serving_throughput_svg(j, w); }}};
  for (const Chart& c : charts) {
    struct Flags {
      std::string input, out;
      bool json = false;
    };
    auto f = std::make_shared<Flags>();
    auto* b = plot->add_subcommand(c.name, c.help);
    b->add_option("file", f->input, "a JSON file written by `ridgeline serve --json`")->required();
    b->add_option("--out", f->out, "SVG (or PNG) file to write")->required();
    b->add_flag("--json", f->json, "print what was written as JSON");
    commands.push_back({b, [f, draw = c.draw] {
                          const nlohmann::json j = read_result_json(f->input);
                          report::write_chart(f->out, draw(j, f->input));
                          emit(f->json, nlohmann::json{{"out", f->out}}, "wrote " + f->out + "\n");
                        }});
  }
}

}  // namespace ridgeline::cli
