// Small helpers shared by the apps: reading JSON files with errors that name the file, and the
// top-level error guard that maps failures to exit codes.
#pragma once

#include <functional>
#include <string>

#include "core/json_file.h"

namespace gantry::apps {

using gantry::read_json_file;
// Runs body; a gantry::Error or std::exception becomes "<app>: error: ..." and exit code 1.
int run_guarded(const char* app, const std::function<int()>& body);

}  // namespace gantry::apps
