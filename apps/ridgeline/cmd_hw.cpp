// `ridgeline hw list` and `ridgeline hw show NAME|FILE`.
#include "common.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/report/json.hpp"
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
                        emit(*json_show, report::chip_json(sys.chip), report::chip_text(sys.chip));
                      }});
}

}  // namespace ridgeline::cli
