// `ridgeline calibrate FILE`: per-kernel-class efficiencies fitted from measured kernels.
#include <fmt/format.h>

#include <algorithm>

#include <fstream>
#include <memory>

#include "common.hpp"
#include "ridgeline/analysis/calibration.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/io/embedded.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/profile_file.hpp"
#include "ridgeline/report/calibration.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::cli {

namespace {
// A `validate --json` document: a JSON object whose first 64 KiB show a measured kernel
// and no trace events (only the head of the file is read: traces can be hundreds of MB).
bool looks_like_validation(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(1 << 16, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || head[first] != '{') return false;
  return head.find("\"measured_s\"") != std::string::npos && head.find("\"traceEvents\"") == std::string::npos;
}
}  // namespace

void register_calibrate(CLI::App& root, std::vector<Command>& commands) {
  struct Flags {
    HardwareFlags hw;
    bool json = false;
    std::string file, format, dtype, out, name;
  };
  auto f = std::make_shared<Flags>();
  auto* c = root.add_subcommand("calibrate",
                                "fit each kernel class's achievable fractions and fixed time from a profile or a validate run, "
                                "and write them into a chip file");
  add_hardware_flags(c, f->hw);
  hide_flags(c, {"--chips", "--slice"});
  c->add_flag("--json", f->json, "JSON on stdout");
  c->add_option("file", f->file, "a profile (Nsight Compute CSV, PyTorch trace, generic CSV) or `validate --json` output")->required();
  c->add_option("--format", f->format, "ncu, torch, csv or validate (default: detected)");
  c->add_option("--tensor-dtype", f->dtype, "matrix-unit dtype for tensor-core (and generic CSV) FLOPs (default: bf16, else fp16, fp32 or fp64, the first the chip has)");
  c->add_option("--out", f->out, "write the calibrated chip file here (use it anywhere as --hw FILE)");
  c->add_option("--name", f->name, "name of the calibrated chip (default: <chip>-calibrated)");
  commands.push_back({c, [f] {
                        refuse_chips_for_profiles(f->hw);
                        if (!f->format.empty() && f->format != "ncu" && f->format != "torch" && f->format != "csv" &&
                            f->format != "validate") {
                          throw InputError(fmt::format("--format: '{}' is not ncu, torch, csv or validate", f->format));
                        }
                        hw::System sys = load_chip_system(f->hw);
                        const DType t = tensor_dtype(f->dtype, sys.chip);
                        int skipped = 0;
                        std::vector<analysis::CalibrationSample> samples;
                        const bool validation = f->format == "validate" || (f->format.empty() && looks_like_validation(f->file));
                        if (validation) {
                          samples = analysis::samples_from_validation(io::read_text_file(f->file, "validate --json output"),
                                                                      f->file, skipped);
                        } else {
                          profile::Profile p = io::load_profile(f->file, f->format);
                          samples = analysis::samples_from_profile(profile::analyze(p, sys.chip, t), skipped);
                        }
                        if (samples.empty()) {
                          throw InputError(fmt::format("{}: no kernel has a time and FLOPs or bytes: nothing to calibrate", f->file));
                        }
                        const analysis::CalibrationResult r = analysis::calibrate(std::move(samples), skipped);
                        nlohmann::json j = report::calibration_json(r, sys.chip, f->file);
                        std::string text = report::calibration_text(r, sys.chip, f->file);
                        if (!f->out.empty()) {
                          // A chip file needs at least one fit that held; say why none did.
                          if (std::none_of(r.fits.begin(), r.fits.end(), [](const analysis::ClassFit& fit) { return fit.fitted; })) {
                            std::string why;
                            for (int k = 1; k < hw::kKernelClassCount && why.empty(); ++k) {
                              if (!r.fits[k].notes.empty()) why = fmt::format("{}: {}", hw::name(static_cast<hw::KernelClass>(k)), r.fits[k].notes.back());
                            }
                            throw InputError(fmt::format("--out: no kernel class could be fitted from {}, nothing written ({})", f->file,
                                                         why.empty() ? "too few kernels" : why));
                          }
                          hw::ChipSpec chip = analysis::calibrated_chip(sys.chip, r);
                          chip.name = f->name.empty() ? (sys.chip.name + "-calibrated").substr(0, 64) : f->name;
                          chip.display_name = sys.chip.display_name + " (calibrated)";
                          for (int k = 1; k < hw::kKernelClassCount; ++k) {
                            if (!r.fits[k].fitted) continue;
                            chip.sources.push_back(fmt::format("efficiency.{}: fitted by ridgeline calibrate from {} ({} kernels, rms residual {:.1f}%)",
                                                               hw::name(static_cast<hw::KernelClass>(k)), f->file, r.fits[k].samples,
                                                               100 * r.fits[k].rms_residual));
                          }
                          const std::string yaml = io::chip_yaml(chip, "", report::calibration_provenance(r, f->file, "ridgeline calibrate " + f->file));
                          (void)io::parse_chip_yaml(yaml, f->out);  // what is written loads (a bad --name fails here, before writing)
                          check_extension(f->out, "--out", {".yaml", ".yml"});
                          report::write_file_atomically(f->out, yaml);
                          j["out"] = f->out;
                          text += fmt::format("\nwrote {} ({}): --hw {} uses these efficiencies\n", f->out, chip.name, f->out);
                        }
                        emit(f->json, j, text);
                      }});
}

}  // namespace ridgeline::cli
