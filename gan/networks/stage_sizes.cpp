#include "gan/networks/stage_sizes.h"

namespace gantry::gan {

std::vector<int64_t> read_stage_sizes(JsonReader& r, std::string_view key, const std::vector<int64_t>& computed_default,
                                      const std::string& order) {
  const std::string name(key);
  const nlohmann::json& list = r.read(key, nlohmann::json(computed_default));
  if (list.empty()) r.fail(name, "a non-empty list of integers");
  std::vector<int64_t> sizes;
  for (const nlohmann::json& e : list) {
    if (!e.is_number_integer()) r.fail(name, "a non-empty list of integers");
    sizes.push_back(e.get<int64_t>());
  }
  const std::string expected = std::to_string(computed_default.size()) + " positive integers (" + order + ")";
  if (sizes.size() != computed_default.size()) r.fail(name, expected);
  for (int64_t s : sizes)
    if (s <= 0) r.fail(name, expected);
  return sizes;
}

}  // namespace gantry::gan
