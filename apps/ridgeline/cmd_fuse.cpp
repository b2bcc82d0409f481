// `ridgeline fuse`: what fusion and CUDA graphs save.
#include <fmt/format.h>

#include <memory>

#include "common.hpp"
#include "ridgeline/analysis/fusion.hpp"
#include "ridgeline/analysis/inference.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/model_file.hpp"

namespace ridgeline::cli {

namespace {
std::string t(double s) { return format_quantity(s, Quantity::time); }
std::string size(double b) { return format_quantity(b, Quantity::bytes); }
}  // namespace

void register_fuse(CLI::App& root, std::vector<Command>& commands) {
  struct Flags {
    HardwareFlags hw;
    bool json = false, dit = false;
    std::string model = "llama-3.1-8b", tokens = "4096", tp = "1", batch = "1", context = "1024", buckets, lengths;
  };
  auto f = std::make_shared<Flags>();
  auto* c = root.add_subcommand("fuse", "what vertical fusion, GEMM epilogues and CUDA graphs save");
  add_hardware_flags(c, f->hw);
  hide_flags(c, {"--chips"});
  c->add_flag("--json", f->json, "JSON on stdout");
  c->add_option("--model", f->model, "bundled model, its Hugging Face repository (ORG/NAME), or config.json")->capture_default_str();
  c->add_option("--tokens", f->tokens, "tokens of one forward pass on one chip")->capture_default_str();
  c->add_option("--tp", f->tp, "tensor parallelism")->capture_default_str();
  c->add_flag("--dit", f->dit, "add DiT AdaLN chains (LayerNorm + modulate, gate x residual)");
  c->add_option("--batch", f->batch, "decode batch for the CUDA-graph figures")->capture_default_str();
  c->add_option("--context", f->context, "decode context for the CUDA-graph figures")->capture_default_str();
  c->add_option("--buckets", f->buckets, "CUDA-graph buckets, e.g. 128,256,512,1024,2048,4096");
  c->add_option("--lengths", f->lengths, "sequence lengths, uniform MIN..MAX (with --buckets)");
  commands.push_back({c, [f] {
                        if (!f->hw.chips.empty()) throw InputError("--chips: fuse analyses one chip; --tp sets tensor parallelism");
                        model::ModelConfig m = io::resolve_model(f->model);
                        hw::System sys = load_chip_system(f->hw);
                        analysis::FusionConfig cfg;
                        cfg.tokens = parse_positive_int(f->tokens, "--tokens");
                        cfg.tp = parse_positive_int(f->tp, "--tp");
                        cfg.dit = f->dit;
                        analysis::FusionResult r = analysis::analyze_fusion(m, sys.chip, cfg);

                        // CUDA graphs on a decode step.
                        analysis::InferenceConfig ic;
                        ic.forward.tp = cfg.tp;
                        ic.batch = parse_positive_int(f->batch, "--batch");
                        ic.prompt = parse_positive_int(f->context, "--context");
                        if (ic.prompt > (std::int64_t{1} << 26)) throw InputError(fmt::format("--context: {} is out of range: expected 1 to 67108864", ic.prompt));
                        if (ic.batch > (std::int64_t{1} << 24)) throw InputError(fmt::format("--batch: {} is out of range: expected 1 to 16777216", ic.batch));
                        ic.gen = 2;
                        auto ir = std::make_unique<analysis::InferenceResult>();
                        analysis::infer(m, sys, ic, *ir);

                        nlohmann::json j;
                        j["model"] = m.name;
                        j["hw"] = sys.chip.name;
                        j["tokens"] = cfg.tokens;
                        j["layers"] = r.layers;
                        j["candidates"] = nlohmann::json::array();
                        std::string text = fmt::format("{} on {}, {} tokens per pass, tp {}\n\n", m.name, sys.chip.display_name,
                                                       cfg.tokens, cfg.tp);
                        text += fmt::format("  {:<24} {:>5} {:>11} {:>11} {:>9} {:>11} {:>11} {:>12}\n", "fusion", "kind", "bytes",
                                            "fused", "launches", "time", "fused", "saved/pass");
                        for (const auto& x : r.candidates) {
                          const char* kind = x.kind == analysis::FusionKind::vertical ? "vert" : (x.alternative ? "alt" : "epi");
                          j["candidates"].push_back({{"name", x.name},
                                                     {"chain", x.chain},
                                                     {"kind", x.kind == analysis::FusionKind::vertical ? "vertical" : "epilogue"},
                                                     {"per_layer", x.per_layer},
                                                     {"unfused_bytes", x.unfused_bytes},
                                                     {"fused_bytes", x.fused_bytes},
                                                     {"bytes_saved", x.unfused_bytes - x.fused_bytes},
                                                     {"unfused_launches", x.unfused_launches},
                                                     {"fused_launches", x.fused_launches},
                                                     {"t_unfused_s", x.t_unfused_s},
                                                     {"t_fused_s", x.t_fused_s},
                                                     {"saved_per_pass_s", x.saved_per_pass_s},
                                                     {"saved_in_graph_per_pass_s", x.saved_in_graph_per_pass_s},
                                                     {"note", x.note},
                                                     {"alternative", x.alternative}});
                          text += fmt::format("  {:<24} {:>5} {:>11} {:>11} {:>4} -> {:<2} {:>11} {:>11} {:>12}\n", x.name, kind,
                                              size(x.unfused_bytes), size(x.fused_bytes), x.unfused_launches, x.fused_launches,
                                              t(x.t_unfused_s), t(x.t_fused_s), t(x.saved_per_pass_s));
                        }
                        j["saved_per_pass_s"] = r.saved_per_pass_s;
                        j["saved_in_graph_per_pass_s"] = r.saved_in_graph_per_pass_s;
                        j["launches_saved_per_pass"] = r.launches_saved_per_pass;
                        j["cuda_graphs"] = {{"decode_step_launches", ir->decode_last.launches},
                                            {"launch_overhead_s", ir->launch_overhead_s},
                                            {"decode_step_launch_s", ir->decode_launch_s},
                                            {"decode_step_s", ir->decode_last.t_realistic_s},
                                            {"saved_per_step_s", ir->cuda_graphs_gain_s}};
                        text += fmt::format("\n  (alt: torch.addmm takes the bias or the residual into its accumulator, not both)\n");
                        text += fmt::format("  vertical fusions and the full epilogue together save {} and {:.0f} launches per pass\n",
                                            t(r.saved_per_pass_s), r.launches_saved_per_pass);
                        if (sys.chip.efficiency.overhead_s > 0 || r.saved_in_graph_per_pass_s > 0) {
                          text += fmt::format("  inside a CUDA graph (no launches) they still save {} per pass: the bytes fused away and "
                                              "{:.0f} kernel boundaries of {} (realistic times)\n",
                                              t(r.saved_in_graph_per_pass_s), r.launches_saved_per_pass, t(sys.chip.efficiency.overhead_s));
                        }
                        text += fmt::format("  a decode step (batch {}, context {}) launches {:.0f} kernels, {} of launch overhead;\n"
                                            "  {} them into one launch and save {} of a {} step\n",
                                            ic.batch, ic.prompt, ir->decode_last.launches, t(ir->decode_launch_s),
                                            sys.chip.kind == "gpu" ? "CUDA graphs turn" : "replaying the step as one captured graph would turn",
                                            t(ir->cuda_graphs_gain_s), t(ir->decode_last.t_realistic_s));
                        if (f->buckets.empty() && !f->lengths.empty()) throw InputError("--lengths: only with --buckets (the lengths fall into them)");
                        if (!f->buckets.empty()) {
                          std::vector<std::int64_t> buckets;
                          size_t pos = 0;
                          while (pos <= f->buckets.size()) {
                            size_t comma = f->buckets.find(',', pos);
                            if (comma == std::string::npos) comma = f->buckets.size();
                            buckets.push_back(parse_positive_int(f->buckets.substr(pos, comma - pos), "--buckets"));
                            pos = comma + 1;
                          }
                          auto dots = f->lengths.find("..");
                          if (dots == std::string::npos) throw InputError(fmt::format("--lengths: '{}' is not MIN..MAX", f->lengths));
                          const auto lo = parse_positive_int(f->lengths.substr(0, dots), "--lengths");
                          const auto hi = parse_positive_int(f->lengths.substr(dots + 2), "--lengths");
                          analysis::BucketWaste w = analysis::bucket_waste(buckets, lo, hi);
                          j["buckets"] = {{"mean_length", w.mean_length}, {"mean_padded", w.mean_padded}, {"waste_fraction", w.waste_fraction}};
                          text += fmt::format("  buckets: lengths {}..{} pad to {:.1f} tokens on average for {:.1f} real: {:.1f}% padding\n",
                                              lo, hi, w.mean_padded, w.mean_length, 100 * w.waste_fraction);
                        }
                        emit(f->json, j, text);
                      }});
}

}  // namespace ridgeline::cli
