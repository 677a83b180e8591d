#include "core/json_file.h"

#include <fstream>
#include <sstream>

#include "base/error.h"

namespace gantry {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  GANTRY_CHECK(in.good(), path, ": cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e999
    GANTRY_FAIL(path, ": not valid JSON: ", e.what());
  }
}

}  // namespace gantry
