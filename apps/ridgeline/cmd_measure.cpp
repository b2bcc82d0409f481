// `ridgeline measure`: this machine's roofline, as a chip file.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "common.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/measure/host.hpp"
#include "ridgeline/measure/likwid.hpp"
#include "ridgeline/report/json.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/report/text.hpp"
#include "ridgeline/report/validation.hpp"
#include "ridgeline/analysis/validation.hpp"
#include "ridgeline/io/hardware_file.hpp"

namespace ridgeline::cli {

void register_measure(CLI::App& root, std::vector<Command>& commands) {
  struct Flags {
    bool json = false, full = false, quick = false;
    std::string out, threads, max_ws, compare;
  };
  auto f = std::make_shared<Flags>();
  auto* m = root.add_subcommand("measure", "measure this machine's compute ceilings and bandwidths into a chip file");
  m->add_flag("--json", f->json, "print the measured chip (hw show form) and the sweep as JSON");
  m->add_flag("--full", f->full, "repeat more and sweep finer (a few minutes); default --quick (~20 s)");
  m->add_flag("--quick", f->quick, "the default: about 20 seconds");
  m->add_option("--out", f->out, "write the chip file here (use it anywhere as --hw FILE)");
  m->add_option("--threads", f->threads, "threads for the all-core figures (default: every CPU)");
  m->add_option("--max-working-set", f->max_ws, "cap the bandwidth sweep (e.g. 64MiB)");
  m->add_option("--compare", f->compare, "likwid: run likwid-bench's matching kernels and print ridgeline / likwid per ceiling");
  commands.push_back({m, [f] {
                        measure::MeasureConfig cfg;
                        if (f->quick && f->full) throw InputError("--quick/--full: choose one");
                        if (!f->compare.empty() && f->compare != "likwid") {
                          throw InputError(fmt::format("--compare: '{}' is not a tool ridgeline compares with: expected likwid", f->compare));
                        }
                        if (!f->compare.empty() && !measure::likwid_available()) {
                          throw InputError("--compare likwid: likwid-bench is not installed (Debian package `likwid`)");
                        }
                        // Before a minute of measuring: where the result goes must take it.
                        if (!f->out.empty()) {
                          check_extension(f->out, "--out", {".yaml", ".yml"});
                          check_output_path(f->out, "--out");
                        }
                        cfg.quick = !f->full;
                        cfg.threads = parse_threads(f->threads);
                        if (!f->max_ws.empty()) {
                          cfg.max_working_set_bytes = parse_quantity(f->max_ws, Quantity::bytes, "--max-working-set", true);
                          if (cfg.max_working_set_bytes < 64 * 1024) throw InputError("--max-working-set: expected at least 64 KiB");
                        }
                        if (isatty(STDERR_FILENO) != 0) {
                          // A progress bar on a terminal; nothing otherwise.
                          cfg.progress = [](int done, int total, const std::string& what) {
                            const int w = 30, filled = total > 0 ? w * done / total : w;
                            std::string bar(static_cast<size_t>(filled), '#');
                            bar.resize(w, '.');
                            std::fprintf(stderr, "\r[%s] %d/%d  %-32s", bar.c_str(), done, total, what.c_str());
                            if (done >= total) std::fprintf(stderr, "\n");
                            std::fflush(stderr);
                          };
                        }
                        measure::MeasureResult r = measure::measure_host(cfg);
                        r.command = std::string("ridgeline measure") + (cfg.quick ? "" : " --full");
                        hw::ChipSpec chip = measure::to_chip(r);
                        const std::string yaml = measure::chip_yaml(chip, r);
                        // What is written must load back through the same reader as every chip file.
                        hw::ChipSpec back = io::parse_chip_yaml(yaml, "measured chip");
                        if (!f->out.empty()) report::write_file_atomically(f->out, yaml);
                        nlohmann::json j = report::chip_json(back);
                        j["measured"] = {{"seconds", r.seconds}, {"isa", nlohmann::json::object()}};
                        for (const auto& p : r.peaks) {
                          j["measured"]["isa"][std::string(name(p.dtype))] = p.isa;
                          j["measured"]["one_core_flops_per_s"][std::string(name(p.dtype))] = p.one_core.value;
                        }
                        if (std::isfinite(r.write_allocate_witness)) j["measured"]["write_allocate_witness"] = r.write_allocate_witness;
                        {
                          const measure::HostInfo& h = r.host;
                          nlohmann::json caches = nlohmann::json::array();
                          for (const auto& c : h.caches) {
                            caches.push_back({{"level", c.level}, {"size_bytes", c.size_bytes}, {"shared_cpus", c.shared_cpus}});
                          }
                          j["host"] = {{"model", h.model}, {"cpus", h.cpus}, {"cores", h.cores}, {"packages", h.packages},
                                       {"numa_nodes", h.numa_nodes}, {"mhz", h.mhz}, {"caches", caches}, {"topology", h.topology},
                                       {"isa", {{"avx2", h.avx2}, {"fma", h.fma}, {"avx512f", h.avx512f}, {"avx512_bf16", h.avx512_bf16},
                                                {"avx512_vnni", h.avx512_vnni}, {"amx", h.amx}}}};
                        }
                        auto point_json = [](const measure::BandwidthPoint& b) {
                          nlohmann::json p = {{"working_set_bytes", b.working_set_bytes}, {"read_Bps", b.read.value}};
                          if (b.write.repetitions > 0) p["write_Bps"] = b.write.value;
                          if (b.copy.repetitions > 0) p["copy_Bps"] = b.copy.value;
                          p["triad_Bps"] = b.triad.value;
                          if (b.write_nt.repetitions > 0) p["write_nt_Bps"] = b.write_nt.value;
                          if (b.copy_nt.repetitions > 0) p["copy_nt_Bps"] = b.copy_nt.value;
                          return p;
                        };
                        auto level_name = [&](int cache) {
                          return cache < 0 ? std::string("DRAM") : fmt::format("L{}", r.host.caches[static_cast<size_t>(cache)].level);
                        };
                        j["sweep"] = nlohmann::json::array();
                        for (const auto& b : r.sweep) j["sweep"].push_back(point_json(b));
                        j["sweep_all_cores"] = nlohmann::json::array();
                        for (const auto& b : r.sweep_all) {
                          auto p = point_json(b);
                          p["level"] = level_name(b.cache);
                          j["sweep_all_cores"].push_back(p);
                        }
                        j["plateaus"] = nlohmann::json::array();
                        for (const auto& p : r.plateaus) {
                          nlohmann::json q = {{"level", level_name(p.cache)}, {"from_bytes", p.from_bytes}, {"to_bytes", p.to_bytes},
                                              {"points", p.points}, {"read_Bps", p.read.value}, {"spread", p.read.spread}};
                          if (p.cache >= 0) q["cache_bytes"] = r.host.caches[static_cast<size_t>(p.cache)].size_bytes;
                          if (p.edge_bytes > 0) q["edge_bytes"] = p.edge_bytes;
                          if (p.cache < 0) q["settled"] = p.settled, q["last_doublings_spread"] = p.last_doublings_spread;
                          j["plateaus"].push_back(q);
                        }
                        // Each level's roof in the chip: the kernel that set it, the spread of its repeated
                        // timings, and whether the figure is unstable.
                        const std::vector<measure::LevelRoof> roofs = measure::level_roofs(r);
                        j["levels"] = nlohmann::json::array();
                        nlohmann::json unstable = nlohmann::json::array();
                        for (const auto& l : roofs) {
                          j["levels"].push_back({{"name", l.name}, {"bandwidth_Bps", l.bandwidth_Bps}, {"kernel", l.kernel}, {"spread", l.spread},
                                                 {"working_set_bytes", l.working_set_bytes}, {"unstable", l.unstable},
                                                 {"why", l.unstable ? nlohmann::json(l.why) : nlohmann::json(nullptr)}});
                          if (l.unstable) unstable.push_back(l.name);
                        }
                        j["unstable_levels"] = unstable;
                        std::string text = fmt::format("{}: {} CPUs{}{}, caches from {}:", r.host.model, r.host.cpus,
                                                       r.host.cores > 0 ? fmt::format(", {} cores", r.host.cores) : "",
                                                       r.host.numa_nodes > 0 ? fmt::format(", {} NUMA node(s)", r.host.numa_nodes) : "",
                                                       r.host.topology);
                        for (const auto& c : r.host.caches) {
                          text += fmt::format(" L{} {} (shared by {})", c.level, format_quantity(c.size_bytes, Quantity::bytes), c.shared_cpus);
                        }
                        text += "\n\n" + report::chip_text(back);
                        text += "\none core: ";
                        for (const auto& p : r.peaks) text += fmt::format("{} {}  ", name(p.dtype), format_quantity(p.one_core.value, Quantity::flop_rate));
                        text += "\nbandwidth sweep, one core (loads + stores counted, no write-allocate; nt: non-temporal stores):\n";
                        text += fmt::format("  {:>10}  {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "set", "read", "write", "copy", "triad",
                                            "nt write", "nt copy");
                        auto bw = [](const measure::Sample& x) {
                          return x.repetitions > 0 ? format_quantity(x.value, Quantity::bandwidth) : std::string("-");
                        };
                        for (const auto& b : r.sweep) {
                          text += fmt::format("  {:>10}  {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n",
                                              format_quantity(b.working_set_bytes, Quantity::bytes), bw(b.read), bw(b.write), bw(b.copy),
                                              bw(b.triad), bw(b.write_nt), bw(b.copy_nt));
                        }
                        text += "plateaus (one core, read):\n";
                        for (const auto& p : r.plateaus) {
                          text += fmt::format("  {:<5} {:>12} over {} .. {} ({} point{}, spread {:.0f}%)", level_name(p.cache),
                                              format_quantity(p.read.value, Quantity::bandwidth), format_quantity(p.from_bytes, Quantity::bytes),
                                              format_quantity(p.to_bytes, Quantity::bytes), p.points, p.points == 1 ? "" : "s", 100 * p.read.spread);
                          if (p.edge_bytes > 0) {
                            text += fmt::format(", falls at {}", format_quantity(p.edge_bytes, Quantity::bytes));
                            if (p.cache >= 0) {
                              text += fmt::format(" (cache {})", format_quantity(r.host.caches[static_cast<size_t>(p.cache)].size_bytes, Quantity::bytes));
                            }
                          }
                          if (p.cache < 0) {
                            text += fmt::format("{} {:.0f}% over the last two doublings{}", p.settled ? ", settled:" : ", NOT settled:",
                                                100 * p.last_doublings_spread, p.settled ? "" : " (a cache past the one reported?)");
                          }
                          text += "\n";
                        }
                        text += fmt::format("all cores ({}):\n", r.all_threads());
                        for (const auto& b : r.sweep_all) {
                          text += fmt::format("  {:<5} {:>10}/core  read {}  copy {}  triad {}", level_name(b.cache),
                                              format_quantity(b.working_set_bytes, Quantity::bytes), bw(b.read), bw(b.copy), bw(b.triad));
                          if (b.write_nt.repetitions > 0) text += fmt::format("  nt write {}  nt copy {}", bw(b.write_nt), bw(b.copy_nt));
                          text += "\n";
                        }
                        text += "roofs (all cores: the best kernel at each level, the spread of its repeated timings):\n";
                        for (const auto& l : roofs) {
                          text += fmt::format("  {:<6} {:>12}  {:<8} {:>10}/thread  spread {:.0f}%{}\n", l.name,
                                              format_quantity(l.bandwidth_Bps, Quantity::bandwidth), l.kernel,
                                              format_quantity(l.working_set_bytes, Quantity::bytes), 100 * l.spread,
                                              l.unstable ? "  UNSTABLE: " + l.why + " (re-measure on a quiet machine, or with --full)" : "");
                        }
                        text += r.write_allocate ? "write-allocate: assumed (x86 write-back memory); the chip's memory roofs (top) count a plain store's line read past L1\n"
                                                 : "write-allocate: none assumed\n";
                        if (std::isfinite(r.write_allocate_witness)) {
                          text += fmt::format("  witness, main memory on all cores: 2 x (nt copy / copy - 1) = {:.2f} lines read per line stored "
                                              "(1 if stores allocate and memory moves every mix at one rate; not used to decide)\n",
                                              r.write_allocate_witness);
                        }
                        text += fmt::format("measured in {:.1f} s{}\n", r.seconds, f->out.empty() ? "" : "; wrote " + f->out);
                        if (!f->compare.empty()) {
                          const int threads = r.all_threads();
                          if (isatty(STDERR_FILENO)) std::cerr << "running likwid-bench ...\n";
                          // Quick: one round per ceiling; full: three, each ridgeline then likwid-bench back to back.
                          const int rounds = cfg.quick ? 1 : 3;
                          const measure::LikwidComparison c = measure::compare_likwid(r, threads, cfg.quick ? 0.3 : 1.0, rounds);
                          nlohmann::json rows = nlohmann::json::array();
                          text += fmt::format("\nagainst likwid-bench ({}), same machine, same threads; each row {}:\n", c.version,
                                              rounds == 1 ? "ridgeline's kernel timed again, then likwid-bench's"
                                                          : fmt::format("the median of {} rounds of ridgeline's kernel timed again, then likwid-bench's",
                                                                        rounds));
                          text += fmt::format("  {:<28} {:>14} {:>14} {:>7}  {}\n", "ceiling", "ridgeline", "likwid-bench", "ratio", "likwid kernel");
                          for (const auto& row : c.rows) {
                            const Quantity q = row.bandwidth ? Quantity::bandwidth : Quantity::flop_rate;
                            nlohmann::json each = nlohmann::json::array();
                            for (const auto& x : row.rounds) each.push_back({{"ridgeline", x.ridgeline}, {"likwid", x.likwid}});
                            rows.push_back({{"ceiling", row.ceiling}, {"likwid_kernel", row.likwid_kernel}, {"ridgeline", row.ridgeline},
                                            {"likwid", row.likwid}, {"ratio", row.ratio}, {"unit", row.bandwidth ? "B/s" : "FLOP/s"},
                                            {"rounds", each}});
                            text += fmt::format("  {:<28} {:>14} {:>14} {:>7.3f}  {}\n", row.ceiling, format_quantity(row.ridgeline, q),
                                                format_quantity(row.likwid, q), row.ratio, row.likwid_kernel);
                          }
                          for (const auto& n : c.notes) text += "  note: " + n + "\n";
                          j["compare"] = {{"tool", "likwid-bench"}, {"version", c.version}, {"rows", rows}, {"notes", c.notes}};
                        }
                        emit(f->json, j, text);
                      }});
}

void register_validate(CLI::App& root, std::vector<Command>& commands) {
  struct Flags {
    bool json = false, full = false, quick = false;
    std::string hw, threads;
    std::vector<std::string> only;
  };
  auto f = std::make_shared<Flags>();
  auto* v = root.add_subcommand("validate", "time real kernels on this machine beside ridgeline's predictions from its measured ceilings");
  v->add_option("--hw", f->hw, "this machine's chip file (from `ridgeline measure --out`); default: measure quickly first");
  v->add_flag("--json", f->json, "JSON on stdout");
  v->add_flag("--full", f->full, "more repetitions and larger GEMMs");
  v->add_flag("--quick", f->quick, "the default: fewer repetitions (CI)");
  v->add_option("--threads", f->threads, "threads (default: every CPU)");
  v->add_option("--only", f->only, "kernel groups to time, comma-separated: stream, norm, fusion, gemm, attention (default: all)")
      ->delimiter(',');
  commands.push_back({v, [f] {
                        if (f->quick && f->full) throw InputError("--quick/--full: choose one");
                        analysis::ValidationConfig cfg;
                        cfg.quick = !f->full;
                        cfg.threads = parse_threads(f->threads);
                        cfg.groups = f->only;
                        analysis::check_groups(cfg.groups);  // before measuring, not after
                        hw::ChipSpec chip;
                        if (!f->hw.empty()) {
                          chip = io::resolve_chip(f->hw);
                          if (chip.kind != "cpu") {
                            throw InputError(fmt::format("--hw {}: a {} chip file: validate times kernels on this CPU, so it needs this "
                                                         "machine's ceilings (ridgeline measure --out host.yaml)", f->hw, chip.kind));
                          }
                        } else {
                          if (isatty(STDERR_FILENO)) std::cerr << "measuring this machine (quick) ...\n";
                          measure::MeasureConfig mc;
                          mc.threads = cfg.threads;
                          chip = measure::to_chip(measure::measure_host(mc));
                        }
                        if (isatty(STDERR_FILENO)) std::cerr << "timing kernels ...\n";
                        const analysis::ValidationResult r = analysis::validate_kernels(chip, cfg);
                        emit(f->json, report::validation_json(chip, r), report::validation_text(chip, r));
                      }});
}

}  // namespace ridgeline::cli
