#include "hooks/hook_registry.h"

#include <map>
#include <mutex>

namespace gantry::hooks {

namespace {

struct Entry {
  std::span<const ConfigKey> keys;
  HookFactory factory;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Entry> factories;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: plugins may register during static init
  return *r;
}

}  // namespace

void register_hook(const std::string& name, std::span<const ConfigKey> keys, HookFactory factory) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  GANTRY_CHECK(!registry().factories.count(name), "hook '", name, "' is already registered");
  registry().factories[name] = {keys, std::move(factory)};
}

void register_hook(const std::string& name, HookFactory factory) { register_hook(name, {}, std::move(factory)); }

std::vector<std::string> hook_names() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  std::vector<std::string> names;
  for (auto& [name, f] : registry().factories) names.push_back(name);
  return names;
}

bool has_hook(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return registry().factories.count(name) > 0;
}

std::shared_ptr<gan::Hook> make_custom_hook(nlohmann::json& config, const std::string& path,
                                            const HookContext& context) {
  JsonReader reader(config, path);
  std::string type = reader.read_type();
  HookFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().factories.find(type);
    if (it == registry().factories.end()) {
      std::string known;
      for (auto& [name, f] : registry().factories) known += (known.empty() ? "" : ", ") + name;
      GANTRY_FAIL(reader.key_path("type"), ": unknown hook \"", type, "\" (registered: ",
                  known.empty() ? "none; plugins register hooks" : known, ")");
    }
    factory = it->second.factory;
    reader.add_keys(it->second.keys);
  }
  std::shared_ptr<gan::Hook> hook = factory(reader, context);
  reader.finish();
  GANTRY_CHECK(hook != nullptr, path, ": the factory of hook \"", type, "\" returned no hook");
  return hook;
}

}  // namespace gantry::hooks
