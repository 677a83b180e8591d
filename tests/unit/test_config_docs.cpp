// docs/config.md's key tables against the declared keys (core/config_key.h,
// gan::run_config_sections() and hooks::hooks_config_sections(), which gan/ cannot list, and each
// network type's, gan::generator_keys() and gan::discriminator_keys(), and each lr schedule type's,
// nn::lr_schedule_keys(), each sequential layer type's, nn::sequential_layer_keys(), and each listed
// objective term's, gan::objective_term_keys()): every declared key has a
// row, with its default, in the `| key | default | meaning |` table under its section's heading
// ("## `train`", "### `train.schedule`", "## Top level", "### `generator` type `dcgan`"), and
// every row there is a declared key.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "gan/config/run_config.h"
#include "gan/networks/network_registry.h"
#include "gan/objective/term_registry.h"
#include "hooks/hook_factory.h"
#include "nn/lr_schedule.h"
#include "nn/sequential_builder.h"
#include "support/test_paths.h"

namespace gantry::gan {
namespace {

// The section of a network type's keys: its object's path and the type.
std::string typed_section(const std::string& path, const std::string& type) { return path + " type " + type; }

struct DocRow {
  std::string default_cell;
  int line = 0;
};

// Section -> key -> row, from every key table; a heading names its section by its first `code`
// span ("Top level" is the path ""), a network type's by both, "`generator` type `dcgan`" as
// "generator type dcgan" (typed_section).
std::map<std::string, std::map<std::string, DocRow>> doc_tables(std::istream& markdown) {
  std::map<std::string, std::map<std::string, DocRow>> tables;
  std::string section = "?", line;
  bool in_table = false;
  const std::regex heading(R"(^#{2,3} (.*)$)"), code(R"(`([^`]+)`)"), typed(R"(^`([^`]+)` type `([^`]+)`$)");
  for (int number = 1; std::getline(markdown, line); ++number) {
    std::smatch m;
    if (std::regex_match(line, m, heading)) {
      const std::string text = m[1];
      if (std::regex_match(text, m, typed))
        section = typed_section(m[1], m[2]);
      else
        section = text == "Top level" ? "" : std::regex_search(text, m, code) ? std::string(m[1]) : text;
      in_table = false;
    } else if (line == "| key | default | meaning |") {
      in_table = true;
    } else if (!line.starts_with("|")) {
      in_table = false;
    } else if (in_table && !line.starts_with("|---")) {
      // | `key` | default | meaning...  (the meaning may hold escaped pipes; only two cells count)
      const size_t a = line.find('|', 1), b = line.find('|', a + 1);
      std::string key = line.substr(1, a - 1), cell = line.substr(a + 1, b - a - 1);
      auto trim = [](std::string s) {
        s.erase(0, s.find_first_not_of(' '));
        s.erase(s.find_last_not_of(' ') + 1);
        return s;
      };
      key = trim(key);
      if (key.size() > 2 && key.front() == '`' && key.back() == '`') key = key.substr(1, key.size() - 2);
      tables[section][key] = {trim(cell), number};
    }
  }
  return tables;
}

nlohmann::json parse_or_discarded(const std::string& text) { return nlohmann::json::parse(text, nullptr, false); }

// The JSON in a cell such as `"idx"` or 10000 (discarded when the cell is not one JSON value).
nlohmann::json cell_value(std::string cell) {
  std::erase(cell, '`');
  return parse_or_discarded(cell);
}

// Why `cell` does not document `key`'s default ("" when it does).
std::string default_mismatch(const ConfigKey& key, const std::string& cell) {
  const std::string declared = key.doc_default.empty() ? std::string(key.fallback) : std::string(key.doc_default);
  const std::string why = "docs/config.md gives the default \"" + cell + "\", the declaration " + declared;
  if (!key.doc_default.empty()) return cell == key.doc_default ? "" : why;
  if (key.fallback.empty()) return cell.empty() ? "" : why;
  const nlohmann::json fallback = nlohmann::json::parse(key.fallback);
  if (key.default_by.empty()) return cell_value(cell) == fallback ? "" : why;
  // `v1` (a, b), `v2` (c): the default for each value of the sibling key, which the parentheses may name.
  nlohmann::json documented = nlohmann::json::object();
  const std::regex variant(R"(`([^`]+)` \(([^)]*)\))");
  const std::string by = "`" + std::string(key.default_by) + "` ";
  for (std::sregex_iterator it(cell.begin(), cell.end(), variant), end; it != end; ++it) {
    std::string names = (*it)[2];
    if (names.starts_with(by)) names = names.substr(by.size());
    std::stringstream list(names);
    for (std::string name; std::getline(list, name, ',');)
      documented[name.substr(name.find_first_not_of(' '))] = parse_or_discarded((*it)[1]);
  }
  return documented == fallback ? "" : why;
}

// Every declared section: the run config's, the hooks section's (hooks/ is above gan/) and each
// built-in network type's, named by typed_section.
std::vector<ConfigSection> declared_sections() {
  std::vector<ConfigSection> sections = run_config_sections();
  for (const ConfigSection& section : hooks::hooks_config_sections()) sections.push_back(section);
  for (const auto& [type, keys] : generator_keys()) sections.push_back({typed_section("generator", type), keys});
  for (const auto& [type, keys] : discriminator_keys()) sections.push_back({typed_section("discriminator", type), keys});
  for (const auto& [type, keys] : nn::lr_schedule_keys())
    sections.push_back({typed_section("optimizers.*.lr_schedule", type), keys});
  for (const auto& [type, keys] : nn::sequential_layer_keys()) sections.push_back({typed_section("layers[]", type), keys});
  const std::vector<std::string> listed = objective_term_names();
  for (const auto& [type, keys] : objective_term_keys())
    if (std::find(listed.begin(), listed.end(), type) != listed.end())
      sections.push_back({typed_section("loss.terms[]", type), keys});
  return sections;
}

TEST(ConfigDocs, EveryDeclaredKeyIsDocumentedWithItsDefaultAndNothingElse) {
  std::ifstream file(testing::source_dir() + "/docs/config.md");
  ASSERT_TRUE(file) << "cannot read docs/config.md";
  std::map<std::string, std::map<std::string, DocRow>> docs = doc_tables(file);
  std::map<std::string, std::vector<const ConfigKey*>> declared;  // sections may share a path ("loss")
  for (const ConfigSection& section : declared_sections())
    for (const ConfigKey& key : section.keys) declared[section.path].push_back(&key);
  for (const auto& [path, keys] : declared) {
    std::string heading = path.empty() ? "Top level" : "`" + path + "`";
    if (const size_t type = path.find(" type "); type != std::string::npos)
      heading = "`" + path.substr(0, type) + "` type `" + path.substr(type + 6) + "`";
    ASSERT_TRUE(docs.count(path)) << "docs/config.md: no key table under a heading " << heading;
    for (const ConfigKey* key : keys) {
      const std::string name = path.empty() ? std::string(key->name) : path + "." + std::string(key->name);
      auto row = docs[path].find(std::string(key->name));
      if (row == docs[path].end()) {
        ADD_FAILURE() << name << ": declared, but docs/config.md has no row for it under " << heading;
        continue;
      }
      if (const std::string why = default_mismatch(*key, row->second.default_cell); !why.empty())
        ADD_FAILURE() << name << " (docs/config.md:" << row->second.line << "): " << why;
      docs[path].erase(row);
    }
    for (const auto& [key, row] : docs[path])
      ADD_FAILURE() << (path.empty() ? key : path + "." + key) << ": in docs/config.md:" << row.line
                    << ", but not declared";
    docs.erase(path);
  }
  for (const auto& [path, rows] : docs)
    ADD_FAILURE() << "docs/config.md: a key table under `" << path << "`, a section with no declared keys";
}

}  // namespace
}  // namespace gantry::gan
