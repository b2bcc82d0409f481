#pragma once
/// Back-ends for `profile`: JSON and a ranked table.
#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/profile/analysis.hpp"

namespace ridgeline::report {

nlohmann::json profile_json(const profile::Profile& p, const profile::ProfileAnalysis& a);
std::string profile_text(const profile::Profile& p, const profile::ProfileAnalysis& a, const hw::ChipSpec& chip);

}  // namespace ridgeline::report
