// Reading config keys through their declarations (core/config_key.h, JsonReader::read): the
// default written back, the type and check applied with errors naming the path, what was
// expected and what was found.
#include <gtest/gtest.h>

#include <functional>

#include "core/json_reader.h"
#include "gan/config/model_config.h"
#include "gan/config/run_config.h"
#include "gan/networks/network_registry.h"
#include "hooks/hook_factory.h"

namespace gantry {
namespace {

constexpr ConfigKey kKeys[] = {
    int_key("steps", "1000", "steps").at_least(0),
    number_key("rate", "0", "a rate").in(0, 1),
    number_key("speed", "500", "a speed").above(0),
    string_key("type", R"("adam")", "kind").one_of("adam, sgd"),
    number_key("lr", R"({"adam": 2e-4, "sgd": 1e-2})", "lr").by("type"),
    int_key("threads", "0", "threads").at_least(0).expecting("0 (all cores) or a positive count"),
    string_key("images", "", "a file"),
    bool_key("flag", "false", "a flag"),
};

std::string error_of(nlohmann::json object, const std::function<void(JsonReader&)>& read) {
  try {
    JsonReader r(object, "sec", kKeys);
    read(r);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigKeys, DefaultsAreWrittenBackWithTheirType) {
  nlohmann::json object = nlohmann::json::object();
  JsonReader r(object, "sec", kKeys);
  EXPECT_EQ(r.read_int("steps"), 1000);
  EXPECT_EQ(r.read_number("rate"), 0.0);
  EXPECT_EQ(r.read_string("type"), "adam");
  EXPECT_EQ(r.read_number("lr"), 2e-4);  // by type
  EXPECT_FALSE(r.read_bool("flag"));
  EXPECT_EQ(r.read("threads", 3).get<int>(), 3);  // a default the resolver computes
  r.finish();
  EXPECT_EQ(object.dump(), R"({"flag":false,"lr":0.0002,"rate":0.0,"steps":1000,"threads":3,"type":"adam"})");

  nlohmann::json sgd = {{"type", "sgd"}, {"steps", 4.0}};
  JsonReader s(sgd, "sec", kKeys);
  EXPECT_EQ(s.read_string("type"), "sgd");
  EXPECT_EQ(s.read_number("lr"), 1e-2);
  EXPECT_EQ(s.read_int("steps"), 4);  // an integral float is an integer
}

// Bound keys (Note [bound keys] in core/config_key.h): each fills its field, converted to the
// field's type, through its declaration (default written back, check applied); unbound keys are
// left to the resolver.
struct Bound {
  int64_t steps = -1;
  int micro = -1;
  uint64_t seed = 0;
  float rate = -1.f;
  bool flag = true;
  std::string mode;
};
void set_mode(Bound& b, const nlohmann::json& v) { b.mode = "mode " + v.get<std::string>(); }
constexpr ConfigKey kBoundKeys[] = {
    int_key("steps", "1000", "steps").at_least(0).into<&Bound::steps>(),
    int_key("micro", "2", "micro").into<&Bound::micro>(),
    int_key("seed", "7", "seed").into<&Bound::seed>(),
    number_key("rate", "0.25", "a rate").in(0, 1).into<&Bound::rate>(),
    bool_key("flag", "false", "a flag").into<&Bound::flag>(),
    string_key("mode", R"("a")", "a mode").one_of("a, b").into<&set_mode>(),
    int_key("unbound", "3", "read by the resolver"),
};

TEST(ConfigKeys, BoundKeysFillTheirFieldsThroughTheirDeclarations) {
  nlohmann::json object = {{"micro", 4.0}, {"mode", "b"}, {"unbound", 3}};
  JsonReader r(object, "sec", kBoundKeys);
  Bound b;
  r.read_into(b);
  EXPECT_EQ(b.steps, 1000);
  EXPECT_EQ(b.micro, 4);
  EXPECT_EQ(b.seed, 7u);
  EXPECT_EQ(b.rate, 0.25f);
  EXPECT_FALSE(b.flag);
  EXPECT_EQ(b.mode, "mode b");
  EXPECT_THROW(r.finish(), Error);  // "unbound" is there but was not read
  EXPECT_EQ(r.read_int("unbound"), 3);
  r.finish();
  EXPECT_EQ(object.dump(), R"({"flag":false,"micro":4.0,"mode":"b","rate":0.25,"seed":7,"steps":1000,"unbound":3})");

  nlohmann::json bad = {{"rate", 2}};
  JsonReader s(bad, "sec", kBoundKeys);
  try {
    s.read_into(b);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "sec.rate: expected a number in [0, 1], found 2");
  }
}

TEST(ConfigKeys, ChecksNameThePathTheExpectationAndTheValue) {
  EXPECT_EQ(error_of({{"steps", -1}}, [](JsonReader& r) { r.read_int("steps"); }),
            "sec.steps: expected a non-negative integer, found -1");
  EXPECT_EQ(error_of({{"steps", 1.5}}, [](JsonReader& r) { r.read_int("steps"); }),
            "sec.steps: expected a non-negative integer, found 1.5");
  EXPECT_EQ(error_of({{"rate", 2}}, [](JsonReader& r) { r.read_number("rate"); }),
            "sec.rate: expected a number in [0, 1], found 2");
  EXPECT_EQ(error_of({{"speed", 0}}, [](JsonReader& r) { r.read_number("speed"); }),
            "sec.speed: expected a number > 0, found 0");
  EXPECT_EQ(error_of({{"type", "sgdm"}}, [](JsonReader& r) { r.read_string("type"); }),
            "sec.type: expected one of adam, sgd, found \"sgdm\"");
  EXPECT_EQ(error_of({{"threads", -1}}, [](JsonReader& r) { r.read_int("threads"); }),
            "sec.threads: expected 0 (all cores) or a positive count, found -1");
  EXPECT_EQ(error_of({{"flag", 1}}, [](JsonReader& r) { r.read_bool("flag"); }),
            "sec.flag: expected true or false, found 1");
  EXPECT_EQ(error_of({}, [](JsonReader& r) { r.read_string("images"); }),
            "sec.images: expected a string, found nothing (the key is required)");
  EXPECT_EQ(error_of({}, [](JsonReader& r) { r.read_int("stpes"); }),
            "sec.stpes: not declared in the section's keys (a bug in its resolver)");
  EXPECT_EQ(error_of({{"stpes", 1}}, [](JsonReader& r) {
              r.read_int("steps");
              r.finish();
            }),
            "sec.stpes: unknown key (accepted keys: flag, images, lr, rate, speed, steps, threads, type)");
}

// Issue 47: an unknown key's error lists every key of the whole section, not only those read so
// far; a declared key the section's other settings leave unused says so, with its doc line.
TEST(ConfigKeys, UnknownKeysListTheWholeSectionAndUnusedOnesSaySo) {
  EXPECT_EQ(error_of({{"type", "sgd"}, {"momentun", 0.9}}, [](JsonReader& r) {
              r.read_string("type");
              r.finish();
            }),
            "sec.momentun: unknown key (accepted keys: flag, images, lr, rate, speed, steps, threads, type)");
  EXPECT_EQ(error_of({{"rate", 0.5}}, [](JsonReader& r) {
              r.read_int("steps");
              r.finish();
            }),
            "sec.rate: not used with this section's other settings (rate: a rate)");
  // Keys another reader of the same object reads: left to it, and listed.
  static constexpr ConfigKey kOther[] = {array_key("terms", "[]", "terms")};
  nlohmann::json object = {{"terms", nlohmann::json::array()}, {"term", 1}};
  JsonReader r(object, "loss");
  r.also_accepts(kOther);
  try {
    r.finish();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "loss.term: unknown key (accepted keys: terms)");
  }
  object.erase("term");
  EXPECT_NO_THROW(r.finish());
}

// Issue 47: the loss section is read by two readers (the adversarial loss and the section's
// own keys); a typo lists both tables' keys, and real_label with a loss that has none says so.
TEST(ConfigKeys, TheLossSectionListsEveryKeyItAccepts) {
  auto loss_error = [](nlohmann::json loss) {
    try {
      gan::resolve_loss_config(loss, {}, "non_saturating");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(loss_error({{"type", "non_saturating"}, {"term", nlohmann::json::array()}}),
            "loss.term: unknown key (accepted keys: auxiliary_classification_weight, lazy_regularization_correction, "
            "path_length, penalties, real_label, terms, type)");
  EXPECT_EQ(loss_error({{"type", "hinge"}, {"real_label", 0.9}}),
            "loss.real_label: not used with this section's other settings (real_label: minimax, non_saturating, "
            "relativistic_average: one-sided label smoothing)");
  EXPECT_EQ(loss_error({{"type", "hinge"}, {"penalties", {{{"type", "r1"}, {"gama", 1}}}}}).rfind(
                "loss.penalties[0].gama: unknown key (accepted keys: ", 0),
            0u);
}

// A default read by another layer than its declaration's (the adversarial loss reads
// real_label itself, losses/registry.cpp) must agree with the declaration.
TEST(ConfigKeys, TheAdversarialLossWritesBackTheDeclaredRealLabel) {
  nlohmann::json loss = {{"type", "non_saturating"}};
  gan::resolve_loss_config(loss, {});
  int found = 0;
  for (const ConfigSection& section : gan::run_config_sections()) {
    for (const ConfigKey& key : section.keys) {
      if (section.path != "loss" || key.name != "real_label") continue;
      EXPECT_EQ(loss["real_label"], nlohmann::json::parse(key.fallback));
      ++found;
    }
  }
  EXPECT_EQ(found, 1);
}

// Every declared default is valid JSON that passes its own key's type and check (each network
// type's keys too).
TEST(ConfigKeys, DeclarationsAreConsistent) {
  std::vector<ConfigSection> sections = gan::run_config_sections();
  for (const ConfigSection& section : hooks::hooks_config_sections()) sections.push_back(section);
  for (const auto& [type, keys] : gan::generator_keys()) sections.push_back({"generator", keys});
  for (const auto& [type, keys] : gan::discriminator_keys()) sections.push_back({"discriminator", keys});
  for (const ConfigSection& section : sections) {
    for (const ConfigKey& key : section.keys) {
      const std::string path = key_path(section, key);
      if (key.fallback.empty()) continue;
      nlohmann::json fallback = nlohmann::json::parse(key.fallback, nullptr, false);
      ASSERT_FALSE(fallback.is_discarded()) << path << ": the default is not JSON: " << key.fallback;
      std::vector<nlohmann::json> defaults;
      if (key.default_by.empty()) defaults.push_back(fallback);
      for (const auto& [variant, value] : fallback.items())
        if (!key.default_by.empty()) defaults.push_back(value);
      for (const nlohmann::json& value : defaults) {
        nlohmann::json object = {{std::string(key.name), value}};
        JsonReader r(object, section.path, section.keys);
        EXPECT_NO_THROW(r.read(key.name)) << path << ": its default fails its check";
      }
    }
  }
}

// The resume check (gan/config/config_changes.h) derives its fixed keys from gan::run_config_sections()
// alone, which cannot list the hooks section's (gan/ does not include hooks/): a resume may
// change every hooks key, and a fixed one there would have to be listed by the check first.
TEST(ConfigKeys, NoHooksKeyIsFixedOnResume) {
  for (const ConfigSection& section : hooks::hooks_config_sections())
    for (const ConfigKey& key : section.keys)
      EXPECT_EQ(key.resume, OnResume::MayChange) << key_path(section, key) << ": fixed, but the resume check cannot see it";
}

}  // namespace
}  // namespace gantry
