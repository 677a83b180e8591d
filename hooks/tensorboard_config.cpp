#include "hooks/tensorboard_config.h"

#include "core/json_reader.h"

namespace gantry::hooks {

TensorBoardConfig parse_tensorboard_config(nlohmann::json& section, const std::string& path) {
  JsonReader reader(section, path);
  TensorBoardConfig c;
  c.enabled = reader.get_bool("enabled", c.enabled);
  c.dir = reader.get_string("dir", c.dir);
  c.histogram_every_steps = reader.get_non_negative_int("histogram_every_steps", c.histogram_every_steps);
  reader.finish();
  return c;
}

std::filesystem::path tensorboard_dir(const TensorBoardConfig& config, const std::filesystem::path& model_dir) {
  if (config.dir.empty()) return model_dir / "tb";
  const std::filesystem::path dir(config.dir);
  return dir.is_absolute() ? dir : model_dir / dir;
}

}  // namespace gantry::hooks
