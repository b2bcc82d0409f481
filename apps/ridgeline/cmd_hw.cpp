// `ridgeline hw list`, `ridgeline hw show NAME|FILE` and `ridgeline hw fit NAME|FILE`.
#include <fmt/format.h>

#include "common.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/embedded.hpp"
#include "ridgeline/io/ert_file.hpp"
#include "ridgeline/analysis/kernel_curves.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/report/curves.hpp"
#include "ridgeline/report/json.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/report/text.hpp"

namespace ridgeline::cli {

void register_hw(CLI::App& root, std::vector<Command>& commands) {
  auto* hw = root.add_subcommand("hw", "the hardware catalog");
  hw->require_subcommand(1);

  auto* list = hw->add_subcommand("list", "list catalog chips");
  auto json_list = std::make_shared<bool>(false);
  list->add_flag("--json", *json_list, "JSON on stdout");
  commands.push_back({list, [json_list] {
                        auto entries = io::catalog();
                        emit(*json_list, report::catalog_json(entries), report::catalog_text(entries));
                      }});

  auto* show = hw->add_subcommand("show", "one chip: peaks, memory, links, ridge points");
  auto flags = std::make_shared<HardwareFlags>();
  auto json_show = std::make_shared<bool>(false);
  auto name = std::make_shared<std::string>();
  show->add_option("name", *name, "catalog name or .yaml file")->required();
  show->add_flag("--json", *json_show, "JSON on stdout");
  show->add_option("--peak", flags->peaks, "override a dense matrix peak, DTYPE=RATE");
  show->add_option("--mem-bw", flags->mem_bw, "override main-memory bandwidth");
  show->add_option("--link-bw", flags->link_bw, "override the communication link bandwidth");
  commands.push_back({show, [flags, json_show, name] {
                        flags->hw = *name;
                        hw::System sys = load_system(*flags);
                        const auto curves = analysis::curve_residuals(sys.chip);
                        nlohmann::json j = report::chip_json(sys.chip);
                        j["kernel_curves"] = report::curves_json(sys.chip, curves);
                        emit(*json_show, j, report::chip_text(sys.chip) + report::curves_text(sys.chip, curves));
                      }});

  auto* fit = hw->add_subcommand("fit", "fit each kernel class's fixed time and fractions to the chip's kernel curves");
  auto fit_name = std::make_shared<std::string>();
  auto fit_out = std::make_shared<std::string>();
  auto json_fit = std::make_shared<bool>(false);
  fit->add_option("name", *fit_name, "catalog name or .yaml file")->required();
  fit->add_option("--out", *fit_out, "write the chip file with the fitted figures to this .yaml");
  fit->add_flag("--json", *json_fit, "JSON on stdout");
  commands.push_back({fit, [fit_name, fit_out, json_fit] {
                        const hw::ChipSpec chip = io::resolve_chip(*fit_name);
                        if (chip.curves.empty()) {
                          throw InputError(fmt::format("{}: the chip has no kernel_curves to fit (docs/hardware.md#kernel-curves)", *fit_name));
                        }
                        const auto fits = analysis::fit_curves(chip);
                        const hw::ChipSpec fitted = analysis::with_curve_fits(chip, fits);
                        std::string text = report::curves_text(fitted, fits);
                        const std::string yaml = report::fitted_efficiency_yaml(fits);
                        if (!yaml.empty()) text += "\nas the chip file's figures:\nefficiency:\n" + yaml;
                        nlohmann::json j;
                        j["chip"] = chip.name;
                        j["kernel_curves"] = report::curves_json(fitted, fits);
                        if (!fit_out->empty()) {
                          check_extension(*fit_out, "--out", {".yaml", ".yml"});
                          report::write_file_atomically(*fit_out, io::chip_yaml(fitted, "", ""));
                          j["out"] = *fit_out;
                          text = "wrote " + *fit_out + "\n\n" + text;
                        }
                        emit(*json_fit, j, text);
                      }});

  auto ert = std::make_shared<ErtImport>();
  auto* imp = hw->add_subcommand("import-ert", "a chip file from the Empirical Roofline Toolkit's roofline.json");
  imp->add_option("file", ert->input, "roofline.json written by ERT")->required();
  add_ert_flags(imp, *ert);
  imp->get_option("--out")->required();
  commands.push_back({imp, [ert] { import_ert(*ert); }});
}

void add_ert_flags(CLI::App* app, ErtImport& f) {
  app->add_option("--capacity", f.capacities, "LEVEL=SIZE for every ERT level (e.g. DRAM=256GB L1=48KiB), repeatable");
  app->add_option("--name", f.name, "chip name (default: ert-<hostname>)");
  app->add_option("--out", f.out, "the .yaml chip file to write");
  app->add_flag("--json", f.json, "JSON on stdout");
}

void import_ert(const ErtImport& ert) {
  io::ErtImportOptions o;
  o.name = ert.name;
  for (const auto& c : ert.capacities) {
    const auto eq = c.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(fmt::format("--capacity: '{}' is not LEVEL=SIZE (e.g. DRAM=256GB)", c));
    for (const auto& seen : o.capacities) {
      if (seen.first == c.substr(0, eq)) throw InputError(fmt::format("--capacity: {} is given twice: give each level once", seen.first));
    }
    const double size = parse_quantity(c.substr(eq + 1), Quantity::bytes, "--capacity " + c, false);
    if (!(size > 0)) throw InputError(fmt::format("--capacity {}: a level of {} bytes: expected a size greater than zero", c, size));
    o.capacities.emplace_back(c.substr(0, eq), size);
  }
  const std::string yaml = io::ert_chip_yaml(io::read_text_file(ert.input, "an ERT roofline.json"), ert.input, o);
  const hw::ChipSpec chip = io::parse_chip_yaml(yaml, ert.out.empty() ? ert.input : ert.out);
  if (!ert.out.empty()) {
    check_extension(ert.out, "--out", {".yaml", ".yml"});
    report::write_file_atomically(ert.out, yaml);
  }
  nlohmann::json j = report::chip_json(chip);
  if (!ert.out.empty()) j["out"] = ert.out;
  emit(ert.json, j, (ert.out.empty() ? std::string() : "wrote " + ert.out + "\n\n") + report::chip_text(chip));
}

}  // namespace ridgeline::cli
