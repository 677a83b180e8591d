#include "gan/config/augment_config.h"

#include <string>

#include "augment/ada_pipeline.h"
#include "augment/policy_config.h"
#include "nn/value_schedule.h"

namespace gantry::gan {

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
    bool_key("adaptive", "false", "ADA's rule adjusts p from E[sign(D(real))]").into<&augment::AdaptiveSettings::enabled>(),
    number_key("target", "0.6", "the E[sign(D(real))] that adaptive p aims at")
        .in(-1, 1)
        .into<&augment::AdaptiveSettings::target>(),
    int_key("interval", "4", "discriminator updates between adjustments of p")
        .at_least(1)
        .into<&augment::AdaptiveSettings::interval>(),
    number_key("speed_kimg", "500", "thousands of images over which p can move from 0 to 1")
        .above(0)
        .into<&augment::AdaptiveSettings::speed_kimg>(),
    number_key("translation_ratio", "0.125", "translation: the largest shift, a fraction of the size").in(0, 1),
    number_key("cutout_ratio", "0.5", "cutout: the erased square's side, a fraction of the size").in(0, 1),
};

}  // namespace

std::vector<ConfigSection> augment_config_sections() { return {{"augment", kAugmentKeys}}; }

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
  spec.policy = augment::read_augment_policy(reader);
  reader.read_into(spec.adaptive);
  // DiffAugment applies every transform to every image (p = 1); ADA starts at 0 and adapts.
  const nn::ValueSchedule p = nn::read_value_schedule(reader, "p");
  if (!p.is_constant()) {
    if (spec.adaptive.enabled)
      reader.fail("p", "a number with augment.adaptive true (where ADA's rule starts p), or a schedule without it");
    spec.scheduled_p = p;
  }
  spec.initial_p = p.at(0);
  GANTRY_CHECK(!spec.adaptive.enabled || spec.enabled(), "augment.adaptive: expected a non-empty augment.policy (or ",
               "\"pipeline\": \"ada\") to adapt, found none");
  reader.finish();
  return spec;
}

}  // namespace gantry::gan
