#include "gan/augment_config.h"

#include <string>

#include "augment/ada_pipeline.h"
#include "nn/value_schedule.h"

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

namespace {

constexpr ConfigKey kAugmentKeys[] = {
    string_key("pipeline", R"("diffaugment")", "diffaugment (the transforms of policy) or ada (those of preset)")
        .one_of("diffaugment, ada"),
    string_key("preset", R"("bgc")", "ada: ADA's transform groups (blit, geom, color, bg, bgc)")
        .documented_default(R"(`"bgc"` with `ada`)"),
    array_key("policy", "[]", "DiffAugment's transforms: color, brightness, saturation, contrast, translation, cutout"),
    number_key("p", R"({"false": 1, "true": 0})", "probability of each transform per example (where adaptive p starts)")
        .in(0, 1)
        .by("adaptive")
        .scheduled(),
    bool_key("adaptive", "false", "ADA's rule adjusts p from E[sign(D(real))]"),
    number_key("target", "0.6", "the E[sign(D(real))] that adaptive p aims at").in(-1, 1),
    int_key("interval", "4", "discriminator updates between adjustments of p").at_least(1),
    number_key("speed_kimg", "500", "thousands of images over which p can move from 0 to 1").above(0),
    number_key("translation_ratio", "0.125", "translation: the largest shift, a fraction of the size").in(0, 1),
    number_key("cutout_ratio", "0.5", "cutout: the erased square's side, a fraction of the size").in(0, 1),
};

// The transforms `policy` (at `path`) names.
augment::AugmentPolicy transforms_of(const nlohmann::json& policy, const std::string& path) {
  augment::AugmentPolicy out;
  for (size_t i = 0; i < policy.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    GANTRY_CHECK(policy[i].is_string(), at, ": expected a transform name (", kTransforms, "), found ",
                 describe_json(policy[i]));
    add_transform(out, policy[i].get<std::string>(), at);
  }
  return out;
}

}  // namespace

std::vector<ConfigSection> augment_config_sections() { return {{"augment", kAugmentKeys}}; }

augment::AugmentPolicy read_augment_policy(JsonReader& reader) {
  augment::AugmentPolicy out = transforms_of(reader.read("policy"), reader.key_path("policy"));
  out.translation_ratio = reader.read_number("translation_ratio");
  out.cutout_ratio = reader.read_number("cutout_ratio");
  return out;
}

augment::AugmentSpec resolve_augment_config(nlohmann::json& section) {
  augment::AugmentSpec spec;
  JsonReader reader(section, "augment", kAugmentKeys);
  const bool ada = reader.read_string("pipeline") == "ada";
  if (ada) {
    spec.pipeline = augment::AugmentPipeline::kAda;
    spec.ada = augment::ada_preset(reader.read_string("preset"), "augment.preset");
  } else {
    GANTRY_CHECK(!reader.has("preset"), "augment.preset: expected only with \"pipeline\": \"ada\" (DiffAugment's "
                 "transforms are named in augment.policy), found it with the diffaugment pipeline");
  }
  const nlohmann::json& policy = reader.read("policy");
  GANTRY_CHECK(!ada || policy.empty(), "augment.policy: expected no DiffAugment policy with \"pipeline\": \"ada\" "
               "(ADA's transforms come from augment.preset), found ", policy.size(), " transform(s)");
  spec.policy = read_augment_policy(reader);
  spec.adaptive.enabled = reader.read_bool("adaptive");
  // DiffAugment applies every transform to every image (p = 1); ADA starts at 0 and adapts.
  const nn::ValueSchedule p = nn::read_value_schedule(reader, "p");
  if (!p.is_constant()) {
    if (spec.adaptive.enabled)
      reader.fail("p", "a number with augment.adaptive true (where ADA's rule starts p), or a schedule without it");
    spec.scheduled_p = p;
  }
  spec.initial_p = p.at(0);
  spec.adaptive.target = reader.read_number("target");
  spec.adaptive.interval = reader.read_int("interval");
  spec.adaptive.speed_kimg = reader.read_number("speed_kimg");
  GANTRY_CHECK(!spec.adaptive.enabled || spec.enabled(), "augment.adaptive: expected a non-empty augment.policy (or ",
               "\"pipeline\": \"ada\") to adapt, found none");
  reader.finish();
  return spec;
}

}  // namespace gantry::gan
