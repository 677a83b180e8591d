#include "gan/config/strategy_config.h"

#include "core/json_reader.h"
#include "gan/config/device_list.h"

namespace gantry::gan {

namespace {

void set_devices(StrategyConfig& c, const nlohmann::json& v) { c.devices = parse_devices(v, "strategy.devices"); }
void set_input(StrategyConfig& c, const nlohmann::json& v) { c.per_replica_input = v == "per_replica_pipelines"; }
void set_timeout(StrategyConfig& c, const nlohmann::json& v) {
  c.collective_timeout = std::chrono::milliseconds(static_cast<int64_t>(v.get<double>() * 1000));
}

constexpr ConfigKey kStrategyKeys[] = {
    string_key("type", R"("one_device")", "how replicas meet: one device, one process, or one process per worker")
        .one_of("one_device, mirrored, multi_worker_mirrored")
        .into<&StrategyConfig::type>(),
    any_key("devices", R"({"one_device": "cpu:0", "mirrored": "all", "multi_worker_mirrored": "all"})",
            "this worker's devices: \"cpu:0,cpu:1\", \"cuda:0,cuda:1\", a list, or \"all\"")
        .by("type")
        .into<&set_devices>(),
    string_key("input", R"("global_batch")", "one pipeline split into shards, or one pipeline per replica")
        .one_of("global_batch, per_replica_pipelines")
        .fixed()
        .into<&set_input>(),
    number_key("collective_timeout_seconds", "300", "how long a collective waits for the other replicas")
        .in(0.001, 1e7)
        .expecting("a number of seconds in [0.001, 1e7]")
        .into<&set_timeout>(),
    bool_key("sync_batch_norm", "false", "batch norm with the statistics of the global batch")
        .into<&StrategyConfig::sync_batch_norm>(),
};

}  // namespace

std::vector<ConfigSection> strategy_config_sections() { return {{"strategy", kStrategyKeys}}; }

StrategyConfig resolve_strategy_config(nlohmann::json& section, int workers) {
  StrategyConfig c;
  JsonReader strat(section, "strategy", kStrategyKeys);
  strat.read_into(c);
  GANTRY_CHECK(c.type == "multi_worker_mirrored" || workers == 1, "an MPI launcher started this process as one "
               "of several, but strategy.type is \"", c.type, "\"; use --set strategy.type=multi_worker_mirrored");
  GANTRY_CHECK(c.type != "one_device" || c.devices.size() == 1, "strategy.devices: the "
               "one_device strategy takes exactly one device, found ", c.devices.size());
  strat.finish();
  return c;
}

}  // namespace gantry::gan
