#include "hooks/tensorboard_config.h"

#include "core/json_reader.h"

namespace gantry::hooks {

namespace {

constexpr ConfigKey kTensorBoardKeys[] = {
    bool_key("enabled", "true", "write TensorBoard event files (chief only): the scalars of every "
             "`save_summary_steps` step, the sample grids of every `sample_every_steps` step and the real batch once"),
    string_key("dir", R"("")", "where: `\"\"` is `model_dir/tb`; a relative path is under `model_dir`"),
    int_key("histogram_every_steps", "0", "histograms of G's and D's weights and last gradients every N steps; "
            "0 = never (they cost a copy of every parameter)").at_least(0),
};

}  // namespace

std::span<const ConfigKey> tensorboard_config_keys() { return kTensorBoardKeys; }

TensorBoardConfig parse_tensorboard_config(nlohmann::json& section, const std::string& path) {
  JsonReader reader(section, path, kTensorBoardKeys);
  TensorBoardConfig c;
  c.enabled = reader.read_bool("enabled");
  c.dir = reader.read_string("dir");
  c.histogram_every_steps = reader.read_int("histogram_every_steps");
  reader.finish();
  return c;
}

std::filesystem::path tensorboard_dir(const TensorBoardConfig& config, const std::filesystem::path& model_dir) {
  if (config.dir.empty()) return model_dir / "tb";
  const std::filesystem::path dir(config.dir);
  return dir.is_absolute() ? dir : model_dir / dir;
}

}  // namespace gantry::hooks
