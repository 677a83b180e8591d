// Reading a JSON file with errors that name the file: "cannot open" or "not valid JSON: ...".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gantry {

nlohmann::json read_json_file(const std::string& path);

}  // namespace gantry
