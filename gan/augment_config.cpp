#include "gan/augment_config.h"

#include <limits>
#include <string>

#include "augment/ada_pipeline.h"

namespace gantry::gan {

namespace {

constexpr const char* kTransforms = "color, brightness, saturation, contrast, translation, cutout";

// Turns on the transform `name` (at `path`); each may be named once ("color" names three).
void add_transform(augment::AugmentPolicy& policy, const std::string& name, const std::string& path) {
  auto turn_on = [&](bool& flag) {
    GANTRY_CHECK(!flag, path, ": \"", name, "\" repeats a transform the policy already has");
    flag = true;
  };
  if (name == "color") {
    turn_on(policy.brightness);
    turn_on(policy.saturation);
    turn_on(policy.contrast);
  } else if (name == "brightness") {
    turn_on(policy.brightness);
  } else if (name == "saturation") {
    turn_on(policy.saturation);
  } else if (name == "contrast") {
    turn_on(policy.contrast);
  } else if (name == "translation") {
    turn_on(policy.translation);
  } else if (name == "cutout") {
    turn_on(policy.cutout);
  } else {
    GANTRY_FAIL(path, ": expected one of ", kTransforms, ", found \"", name, "\"");
  }
}

}  // namespace

augment::AugmentPolicy read_augment_policy(JsonReader& reader, const nlohmann::json& default_policy) {
  augment::AugmentPolicy out;
  if (!reader.has("policy")) reader.value("policy", default_policy);
  const nlohmann::json& policy = reader.array("policy");
  for (size_t i = 0; i < policy.size(); ++i) {
    const std::string path = reader.key_path("policy") + "[" + std::to_string(i) + "]";
    GANTRY_CHECK(policy[i].is_string(), path, ": expected a transform name (", kTransforms, "), found ",
                 describe_json(policy[i]));
    add_transform(out, policy[i].get<std::string>(), path);
  }
  out.translation_ratio = reader.get_number_in("translation_ratio", 0.125, 0.0, 1.0);
  out.cutout_ratio = reader.get_number_in("cutout_ratio", 0.5, 0.0, 1.0);
  return out;
}

augment::AugmentSpec resolve_augment_config(nlohmann::json& section) {
  augment::AugmentSpec spec;
  JsonReader reader(section, "augment");
  const bool ada = reader.get_choice("pipeline", "diffaugment", {"diffaugment", "ada"}) == "ada";
  if (ada) {
    spec.pipeline = augment::AugmentPipeline::kAda;
    const std::string preset = reader.get_string("preset", "bgc");
    spec.ada = augment::ada_preset(preset, "augment.preset");
  } else {
    GANTRY_CHECK(!reader.has("preset"), "augment.preset: expected only with \"pipeline\": \"ada\" (DiffAugment's "
                 "transforms are named in augment.policy), found it with the diffaugment pipeline");
  }
  const nlohmann::json& policy = reader.array("policy");
  GANTRY_CHECK(!ada || policy.empty(), "augment.policy: expected no DiffAugment policy with \"pipeline\": \"ada\" "
               "(ADA's transforms come from augment.preset), found ", policy.size(), " transform(s)");
  spec.policy = read_augment_policy(reader);
  spec.adaptive.enabled = reader.get_bool("adaptive", false);
  // DiffAugment applies every transform to every image (p = 1); ADA starts at 0 and adapts.
  spec.initial_p = reader.get_number_in("p", spec.adaptive.enabled ? 0.0 : 1.0, 0.0, 1.0);
  spec.adaptive.target = reader.get_number_in("target", 0.6, -1.0, 1.0);
  spec.adaptive.interval = reader.get_positive_int("interval", 4);
  spec.adaptive.speed_kimg =
      reader.get_number_in("speed_kimg", 500.0, std::numeric_limits<double>::min(), std::numeric_limits<double>::infinity(),
                           false);
  GANTRY_CHECK(!spec.adaptive.enabled || spec.enabled(), "augment.adaptive: expected a non-empty augment.policy (or ",
               "\"pipeline\": \"ada\") to adapt, found none");
  reader.finish();
  return spec;
}

}  // namespace gantry::gan
