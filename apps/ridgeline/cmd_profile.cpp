// `ridgeline profile FILE`: captured kernels on the chip's roofline.
#include <fmt/format.h>

#include <iostream>

#include <memory>

#include "common.hpp"
#include "ridgeline/core/text.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/analysis/advice.hpp"
#include "ridgeline/io/profile_file.hpp"
#include "ridgeline/report/profile.hpp"

namespace ridgeline::cli {

void register_profile(CLI::App& root, std::vector<Command>& commands) {
  struct Flags {
    HardwareFlags hw;
    bool json = false;
    std::string file, format, dtype;
    ErtImport ert;
  };
  auto f = std::make_shared<Flags>();
  auto* c = root.add_subcommand("profile",
                                "place captured kernels (Nsight Compute CSV, PyTorch trace, generic CSV) on the roofline; "
                                "an ERT roofline.json becomes a chip file");
  add_hardware_flags(c, f->hw);
  hide_flags(c, {"--chips", "--slice"});
  c->add_flag("--json", f->json, "JSON on stdout");
  c->add_option("file", f->file, "profile file")->required();
  c->add_option("--format", f->format, "ncu, torch, csv or ert (default: detected)");
  c->add_option("--tensor-dtype", f->dtype, "matrix-unit dtype for tensor-core (and generic CSV) FLOPs (default: bf16, else fp16, fp32 or fp64, the first the chip has)");
  c->add_option("--capacity", f->ert.capacities, "ERT: LEVEL=SIZE for every level (ERT measures no sizes), repeatable");
  c->add_option("--name", f->ert.name, "ERT: chip name (default: ert-<hostname>)");
  c->add_option("--out", f->ert.out, "ERT: the .yaml chip file to write");
  commands.push_back({c, [f, c] {
                        refuse_chips_for_profiles(f->hw);
                        if (f->format == "ert" || (f->format.empty() && io::detect_profile_format(f->file) == "ert")) {
                          f->ert.input = f->file;
                          f->ert.json = f->json;
                          import_ert(f->ert);
                          return;
                        }
                        if (!f->ert.out.empty() || !f->ert.capacities.empty() || !f->ert.name.empty()) {
                          throw InputError("--capacity/--name/--out: only for an ERT roofline.json (--format ert)");
                        }
                        profile::Profile p = io::load_profile(f->file, f->format);
                        std::string warning;
                        hw::System sys = profile_system(f->hw, c->get_option("--hw")->count() > 0, p, warning);
                        DType t = tensor_dtype(f->dtype, sys.chip);
                        profile::ProfileAnalysis a = profile::analyze(p, sys.chip, t);
                        nlohmann::json j = report::profile_json(p, a);
                        if (!a.above_roof_warning.empty()) std::cerr << "ridgeline: warning: " << one_line(a.above_roof_warning) << "\n";
                        if (!warning.empty()) {
                          std::cerr << "ridgeline: warning: " << one_line(warning) << "\n";
                          j["hw_warning"] = warning;
                        }
                        emit(f->json, j, report::profile_text(p, a, sys.chip));
                      }});
}

void register_advise_profile(CLI::App* advise, std::vector<Command>& commands) {
  struct Flags {
    HardwareFlags hw;
    bool json = false;
    std::string file, format, dtype;
  };
  auto f = std::make_shared<Flags>();
  auto* a = advise->add_subcommand("profile", "advice on a captured profile");
  add_hardware_flags(a, f->hw);
  hide_flags(a, {"--chips", "--slice"});
  a->add_flag("--json", f->json, "JSON on stdout");
  a->add_option("file", f->file, "profile file")->required();
  a->add_option("--format", f->format, "ncu, csv or torch (default: detected)");
  a->add_option("--tensor-dtype", f->dtype, "matrix-unit dtype for tensor-core FLOPs (default: bf16, else fp16, fp32 or fp64, the first the chip has)");
  commands.push_back({a, [f, a] {
                        refuse_chips_for_profiles(f->hw);
                        profile::Profile p = io::load_profile(f->file, f->format);
                        std::string warning;
                        hw::System sys = profile_system(f->hw, a->get_option("--hw")->count() > 0, p, warning);
                        if (!warning.empty()) std::cerr << "ridgeline: warning: " << one_line(warning) << "\n";
                        profile::ProfileAnalysis an = profile::analyze(p, sys.chip, tensor_dtype(f->dtype, sys.chip));
                        if (!an.above_roof_warning.empty()) std::cerr << "ridgeline: warning: " << one_line(an.above_roof_warning) << "\n";
                        emit_advice(f->json, analysis::advise_profile(p, an, sys.chip));
                      }});
}

}  // namespace ridgeline::cli
