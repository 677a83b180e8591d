// data::State, the saved input position, to and from JSON (pipeline.h).
#include "data/pipeline.h"

#include "base/error.h"
#include "data/pipeline_plan.h"

namespace gantry::data {

using detail::kind_name;

nlohmann::json State::to_json() const {
  nlohmann::json stages_json = nlohmann::json::array();
  for (const StageState& s : stages) {
    nlohmann::json j;
    j["stage"] = kind_name(s.kind);
    switch (s.kind) {
      case StageKind::Source:
        j["next"] = s.a;
        break;
      case StageKind::Shuffle:
        j["draws"] = s.a;
        break;
      case StageKind::Shard:
        j["consumed"] = s.a;
        break;
      case StageKind::Repeat:
        j["epoch"] = s.a;
        j["emitted"] = s.b;
        break;
      default:
        break;
    }
    stages_json.push_back(std::move(j));
  }
  return {{"format", "gantry.input_state"},
          {"version", 1},
          {"pipeline", pipeline},
          {"epoch", epoch},
          {"index_in_epoch", index_in_epoch},
          {"examples", examples},
          {"batches", batches},
          {"stages", stages_json}};
}

namespace {

int64_t get_int(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  GANTRY_CHECK(obj.contains(key), "input state: ", path, ": expected key '", key, "', found none");
  const auto& v = obj.at(key);
  GANTRY_CHECK(v.is_number_integer(), "input state: ", path, ".", key,
               ": expected an integer, found ", v.dump());
  return v.get<int64_t>();
}

void check_keys(const nlohmann::json& obj, std::initializer_list<const char*> allowed,
                const std::string& path) {
  GANTRY_CHECK(obj.is_object(), "input state: ", path, ": expected an object, found ", obj.dump());
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture one
    bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char* k) { return key == k; });
    GANTRY_CHECK(ok, "input state: ", path, ": unknown key '", key, "'");
  }
}

}  // namespace

State State::from_json(const nlohmann::json& json) {
  check_keys(
      json,
      {"format", "version", "pipeline", "epoch", "index_in_epoch", "examples", "batches", "stages"},
      "$");
  GANTRY_CHECK(json.contains("format") && json.at("format") == "gantry.input_state",
               "input state: $.format: expected \"gantry.input_state\", found ",
               json.contains("format") ? json.at("format").dump() : std::string("none"));
  GANTRY_CHECK(get_int(json, "version", "$") == 1, "input state: $.version: expected 1, found ",
               json.at("version").dump());
  GANTRY_CHECK(json.contains("pipeline") && json.at("pipeline").is_string(),
               "input state: $.pipeline: expected a string");
  State s;
  s.pipeline = json.at("pipeline").get<std::string>();
  s.epoch = get_int(json, "epoch", "$");
  s.index_in_epoch = get_int(json, "index_in_epoch", "$");
  s.examples = get_int(json, "examples", "$");
  s.batches = get_int(json, "batches", "$");
  GANTRY_CHECK(json.contains("stages") && json.at("stages").is_array(),
               "input state: $.stages: expected an array");
  const auto& arr = json.at("stages");
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string path = "$.stages[" + std::to_string(i) + "]";
    const auto& j = arr[i];
    GANTRY_CHECK(j.is_object() && j.contains("stage") && j.at("stage").is_string(),
                 "input state: ", path, ": expected an object with a 'stage' name");
    const std::string kind = j.at("stage").get<std::string>();
    StageState st;
    if (kind == "source") {
      check_keys(j, {"stage", "next"}, path);
      st = {StageKind::Source, get_int(j, "next", path), 0};
    } else if (kind == "shuffle") {
      check_keys(j, {"stage", "draws"}, path);
      st = {StageKind::Shuffle, get_int(j, "draws", path), 0};
    } else if (kind == "shard") {
      check_keys(j, {"stage", "consumed"}, path);
      st = {StageKind::Shard, get_int(j, "consumed", path), 0};
    } else if (kind == "repeat") {
      check_keys(j, {"stage", "epoch", "emitted"}, path);
      st = {StageKind::Repeat, get_int(j, "epoch", path), get_int(j, "emitted", path)};
    } else {
      GANTRY_FAIL("input state: ", path,
                  ".stage: expected source, shuffle, shard or repeat, "
                  "found '",
                  kind, "'");
    }
    s.stages.push_back(st);
  }
  return s;
}

}  // namespace gantry::data
