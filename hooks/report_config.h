// The "hooks.report" config object (strict, defaults written back): its keys are declared in
// report_config.cpp (core/config_key.h) and documented in docs/config.md; the report page is
// hooks/report_hook.h. The page is rewritten at every hooks.save_summary_steps step and at the
// end.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config_key.h"

namespace gantry::hooks {

struct ReportConfig {
  bool enabled = true;
  int64_t max_points = 2000;
  int64_t max_sample_grids = 12;
  int64_t refresh_seconds = 30;
};

// The declared keys of the object (hooks_config_sections() mounts them at "hooks.report").
std::span<const ConfigKey> report_config_keys();

// Reads (and completes with defaults) the object `section`; `path` names it in errors.
ReportConfig parse_report_config(nlohmann::json& section, const std::string& path);

}  // namespace gantry::hooks
