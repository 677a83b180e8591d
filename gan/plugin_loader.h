// Loads a plugin shared library (gan/plugin_api.h): checks its API version, then calls its
// registration function. Loading the same path twice is a no-op.
#pragma once

#include <string>

namespace gantry::gan {

void load_plugin(const std::string& path);

}  // namespace gantry::gan
