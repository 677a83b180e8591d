// Loads a plugin shared library (gan/config/plugin_api.h): checks its API version, then calls its
// registration function. Loading the same path twice is a no-op.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gantry::gan {

void load_plugin(const std::string& path);
// Loads every path in a run config's "plugins" list (before the config is resolved, since the
// plugins' types appear in it). A malformed list is left for resolve_run_config to report.
void load_plugins(const nlohmann::json& config);

}  // namespace gantry::gan
