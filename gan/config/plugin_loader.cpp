#include "gan/config/plugin_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "base/error.h"
#include "gan/config/plugin_api.h"

namespace gantry::gan {

void load_plugin(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  std::string canonical = std::filesystem::exists(path) ? std::filesystem::canonical(path).string() : path;
  if (loaded.count(canonical)) return;
  GANTRY_CHECK(std::filesystem::exists(path), "plugin ", path, ": file not found");
  void* handle = dlopen(canonical.c_str(), RTLD_NOW | RTLD_GLOBAL);
  GANTRY_CHECK(handle != nullptr, "plugin ", path, ": cannot load: ", dlerror());
  using VersionFn = int (*)();
  using RegisterFn = void (*)();
  auto version = reinterpret_cast<VersionFn>(dlsym(handle, "gantry_plugin_api_version"));
  auto do_register = reinterpret_cast<RegisterFn>(dlsym(handle, "gantry_plugin_register"));
  GANTRY_CHECK(version && do_register, "plugin ", path, ": expected the exported functions "
               "gantry_plugin_api_version and gantry_plugin_register (use GANTRY_PLUGIN() from "
               "gan/config/plugin_api.h), found ", version ? "" : "no version function ",
               do_register ? "" : "no registration function");
  int v = version();
  if (v != GANTRY_PLUGIN_API_VERSION) {
    dlclose(handle);
    GANTRY_FAIL("plugin ", path, ": built for plugin API version ", v, ", but this Gantry provides "
                "version ", GANTRY_PLUGIN_API_VERSION, "; rebuild the plugin against this Gantry");
  }
  do_register();
  loaded.insert(canonical);
}

void load_plugins(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("plugins") || !config["plugins"].is_array()) return;
  for (const auto& p : config["plugins"])
    if (p.is_string()) load_plugin(p.get<std::string>());
}

}  // namespace gantry::gan
