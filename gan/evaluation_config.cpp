#include "gan/evaluation_config.h"

#include "core/json_reader.h"

namespace gantry::gan {

EvaluationConfig resolve_evaluation_config(nlohmann::json& section, bool open_data, int64_t global_batch,
                                           uint64_t seed, const DataShape& train_data) {
  EvaluationConfig c;
  JsonReader eval(section, "evaluation");
  c.every_steps = eval.get_int("every_steps", 0);
  c.steps = eval.get_int("steps", 10);
  GANTRY_CHECK(c.every_steps >= 0 && c.steps >= 1, "evaluation: expected every_steps >= 0 "
               "and steps >= 1, found ", c.every_steps, " and ", c.steps);
  if (c.every_steps > 0 && !open_data) {
    eval.object("data");  // not opened: only the run's own input shape matters here
  } else if (c.every_steps > 0) {
    GANTRY_CHECK(eval.has("data"), "evaluation.data: missing (expected a data section for the held-out input)");
    DataConfig held_out = resolve_data_config(eval.object("data"), "evaluation.data", global_batch, seed + 1);
    GANTRY_CHECK(held_out.shape.image_shape == train_data.image_shape &&
                     held_out.shape.num_classes == train_data.num_classes,
                 "evaluation.data: its images or classes differ from data's");
    c.input = held_out.pipeline;
  }
  eval.finish();
  return c;
}

}  // namespace gantry::gan
