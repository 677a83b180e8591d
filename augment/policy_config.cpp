#include "augment/policy_config.h"

#include <string>

#include "base/error.h"

namespace gantry::augment {

namespace {

constexpr const char* kTransforms = "color, brightness, saturation, contrast, translation, cutout";

// Turns on the transform `name` (at `path`); each may be named once ("color" names three).
void add_transform(AugmentPolicy& policy, const std::string& name, const std::string& path) {
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

// The transforms `policy` (at `path`) names.
AugmentPolicy transforms_of(const nlohmann::json& policy, const std::string& path) {
  AugmentPolicy out;
  for (size_t i = 0; i < policy.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    GANTRY_CHECK(policy[i].is_string(), at, ": expected a transform name (", kTransforms, "), found ",
                 describe_json(policy[i]));
    add_transform(out, policy[i].get<std::string>(), at);
  }
  return out;
}

}  // namespace

AugmentPolicy read_augment_policy(JsonReader& reader) {
  AugmentPolicy out = transforms_of(reader.read("policy"), reader.key_path("policy"));
  out.translation_ratio = reader.read_number("translation_ratio");
  out.cutout_ratio = reader.read_number("cutout_ratio");
  return out;
}

}  // namespace gantry::augment
