#include "hooks/report_config.h"

#include "core/json_reader.h"

namespace gantry::hooks {

ReportConfig parse_report_config(nlohmann::json& section, const std::string& path) {
  JsonReader reader(section, path);
  ReportConfig c;
  c.enabled = reader.get_bool("enabled", c.enabled);
  c.max_points = reader.get_int("max_points", c.max_points);
  GANTRY_CHECK(c.max_points >= 4, reader.key_path("max_points"), ": expected an integer >= 4, found ", c.max_points);
  c.max_sample_grids = reader.get_positive_int("max_sample_grids", c.max_sample_grids);
  c.refresh_seconds = reader.get_non_negative_int("refresh_seconds", c.refresh_seconds);
  reader.finish();
  return c;
}

}  // namespace gantry::hooks
