#include "data/dataset_json.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace gantry::data {

namespace {

std::string short_dump(const nlohmann::json& j) {
  std::string s = j.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

std::optional<std::vector<int64_t>> labels_from_dataset_json(std::string_view text,
                                                             const std::vector<std::string>& members,
                                                             const std::string& where) {
  nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  GANTRY_CHECK(!doc.is_discarded(), where, ": expected JSON, found text that does not parse");
  GANTRY_CHECK(doc.is_object() && doc.contains("labels"), where,
               ": expected an object with a \"labels\" key, found ", short_dump(doc));
  const nlohmann::json& entries = doc.at("labels");
  if (entries.is_null()) return std::nullopt;
  GANTRY_CHECK(entries.is_array(), where, ": labels: expected null or a list of [name, label] pairs, found ",
               short_dump(entries));

  std::map<std::string, size_t> position;
  for (size_t i = 0; i < members.size(); ++i) position.emplace(members[i], i);
  std::vector<std::optional<int64_t>> found(members.size());
  std::vector<bool> seen(members.size(), false);
  size_t labelled = 0;
  for (size_t e = 0; e < entries.size(); ++e) {
    const nlohmann::json& entry = entries[e];
    const std::string key = "labels[" + std::to_string(e) + "]";
    GANTRY_CHECK(entry.is_array() && entry.size() == 2 && entry[0].is_string(), where, ": ", key,
                 ": expected a [name, label] pair, found ", short_dump(entry));
    const std::string name = entry[0].get<std::string>();
    auto it = position.find(name);
    GANTRY_CHECK(it != position.end(), where, ": ", key, ": a label for member \"", name,
                 "\", which is not an image of the dataset");
    GANTRY_CHECK(!seen[it->second], where, ": ", key, ": a second label for member \"", name, "\"");
    seen[it->second] = true;
    const nlohmann::json& label = entry[1];
    if (label.is_null()) continue;
    GANTRY_CHECK(label.is_number_integer() && label.get<int64_t>() >= 0, where, ": ", key, " (member \"", name,
                 "\"): expected a non-negative integer class label, found ", short_dump(label));
    found[it->second] = label.get<int64_t>();
    ++labelled;
  }
  if (labelled == 0) return std::nullopt;
  std::vector<int64_t> labels(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    GANTRY_CHECK(found[i].has_value(), where, ": member \"", members[i], "\" has no label, but ", labelled,
                 " other members have one (every image needs a label, or none)");
    labels[i] = *found[i];
  }
  return labels;
}

std::string dataset_json_text(const std::vector<std::string>& members,
                              const std::optional<std::vector<int64_t>>& labels) {
  nlohmann::json doc;
  if (!labels) {
    doc["labels"] = nullptr;
  } else {
    GANTRY_CHECK(labels->size() == members.size(), "dataset.json: expected one label per member (",
                 members.size(), "), found ", labels->size());
    nlohmann::json entries = nlohmann::json::array();
    for (size_t i = 0; i < members.size(); ++i) entries.push_back({members[i], (*labels)[i]});
    doc["labels"] = std::move(entries);
  }
  return doc.dump();
}

ClassFolders class_folders_of(const std::vector<std::string>& members, const std::string& where) {
  ClassFolders out;
  std::vector<std::string> class_of(members.size());
  const std::string* top_level = nullptr;
  for (size_t i = 0; i < members.size(); ++i) {
    const size_t slash = members[i].find('/');
    if (slash == std::string::npos)
      top_level = &members[i];
    else
      class_of[i] = members[i].substr(0, slash);
  }
  const bool any_in_folder = std::any_of(class_of.begin(), class_of.end(), [](const auto& c) { return !c.empty(); });
  if (!any_in_folder) return out;
  GANTRY_CHECK(top_level == nullptr, where, ": expected images only inside the class sub-folders, found \"",
               top_level ? *top_level : std::string(), "\" at the top level");
  out.classes = class_of;
  std::sort(out.classes.begin(), out.classes.end());
  out.classes.erase(std::unique(out.classes.begin(), out.classes.end()), out.classes.end());
  out.labels.reserve(members.size());
  for (const std::string& c : class_of)
    out.labels.push_back(std::lower_bound(out.classes.begin(), out.classes.end(), c) - out.classes.begin());
  return out;
}

}  // namespace gantry::data
