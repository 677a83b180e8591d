#include "hooks/report_config.h"

#include "core/json_reader.h"

namespace gantry::hooks {

namespace {

constexpr ConfigKey kReportKeys[] = {
    bool_key("enabled", "true", "keep `model_dir/report.html` up to date (at every `save_summary_steps` step and at "
             "the end)"),
    int_key("max_points", "2000", "points per curve at most (>= 4); longer curves are downsampled keeping spikes")
        .at_least(4),
    int_key("max_sample_grids", "12", "sample grids in the page's strip (inline PNGs), spread evenly over the run, "
            "the latest included").at_least(1),
    int_key("refresh_seconds", "30", "while training the page reloads itself this often; 0 = never").at_least(0),
};

}  // namespace

std::span<const ConfigKey> report_config_keys() { return kReportKeys; }

ReportConfig parse_report_config(nlohmann::json& section, const std::string& path) {
  JsonReader reader(section, path, kReportKeys);
  ReportConfig c;
  c.enabled = reader.read_bool("enabled");
  c.max_points = reader.read_int("max_points");
  c.max_sample_grids = reader.read_int("max_sample_grids");
  c.refresh_seconds = reader.read_int("refresh_seconds");
  reader.finish();
  return c;
}

}  // namespace gantry::hooks
