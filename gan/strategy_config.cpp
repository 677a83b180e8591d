#include "gan/strategy_config.h"

#include "core/json_reader.h"
#include "gan/device_list.h"

namespace gantry::gan {

StrategyConfig resolve_strategy_config(nlohmann::json& section, int workers) {
  StrategyConfig c;
  JsonReader strat(section, "strategy");
  c.type = strat.get_choice("type", "one_device", {"one_device", "mirrored", "multi_worker_mirrored"});
  GANTRY_CHECK(c.type == "multi_worker_mirrored" || workers == 1, "an MPI launcher started this process as one "
               "of several, but strategy.type is \"", c.type, "\"; use --set strategy.type=multi_worker_mirrored");
  c.devices = parse_devices(strat.value("devices", c.type == "one_device" ? nlohmann::json("cpu:0")
                                                                          : nlohmann::json("all")),
                            "strategy.devices");
  GANTRY_CHECK(c.type != "one_device" || c.devices.size() == 1, "strategy.devices: the "
               "one_device strategy takes exactly one device, found ", c.devices.size());
  c.sync_batch_norm = strat.get_bool("sync_batch_norm", false);
  c.per_replica_input =
      strat.get_choice("input", "global_batch", {"global_batch", "per_replica_pipelines"}) == "per_replica_pipelines";
  const double timeout = strat.get_number("collective_timeout_seconds", 300.0);
  GANTRY_CHECK(timeout >= 0.001 && timeout <= 1e7, "strategy.collective_timeout_seconds: expected a number of "
               "seconds in [0.001, 1e7], found ", timeout);
  c.collective_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
  strat.finish();
  return c;
}

}  // namespace gantry::gan
