#include "gan/config/evaluation_config.h"

#include "core/json_reader.h"

namespace gantry::gan {

namespace {

constexpr ConfigKey kEvaluationKeys[] = {
    int_key("every_steps", "0", "held-out losses every N steps (0 = never)")
        .at_least(0)
        .into<&EvaluationConfig::every_steps>(),
    int_key("steps", "10", "global batches per evaluation").at_least(1).into<&EvaluationConfig::steps>(),
    object_key("data", "", "a data section (same keys) for the held-out input")
        .expecting("a data section for the held-out input")
        .documented_default("required when `every_steps` > 0"),
};

}  // namespace

std::vector<ConfigSection> evaluation_config_sections() { return {{"evaluation", kEvaluationKeys}}; }

EvaluationConfig resolve_evaluation_config(nlohmann::json& section, bool open_data, int64_t global_batch,
                                           uint64_t seed, const DataShape& train_data) {
  EvaluationConfig c;
  JsonReader eval(section, "evaluation", kEvaluationKeys);
  eval.read_into(c);
  if (c.every_steps > 0 && !open_data) {
    eval.read("data", nlohmann::json::object());  // not opened: only the run's own input shape matters here
  } else if (c.every_steps > 0) {
    DataConfig held_out = resolve_data_config(eval.read("data"), "evaluation.data", global_batch, seed + 1);
    GANTRY_CHECK(held_out.shape.image_shape == train_data.image_shape &&
                     held_out.shape.num_classes == train_data.num_classes,
                 "evaluation.data: its images or classes differ from data's");
    c.input = held_out.pipeline;
  }
  eval.finish();
  return c;
}

}  // namespace gantry::gan
