// Custom hooks by name, for plugins and C++ users: register a factory, then list instances in
// the config as "hooks": {"custom": [{"type": NAME, ...options}]}. The factory reads its options,
// declared at registration (core/config_key.h), with the JsonReader (strict: unread keys are
// errors naming the path).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "gan/estimator/hook.h"

namespace gantry::hooks {

struct HookContext;

using HookFactory = std::function<std::shared_ptr<gan::Hook>(JsonReader&, const HookContext&)>;

void register_hook(const std::string& name, std::span<const ConfigKey> keys, HookFactory factory);
void register_hook(const std::string& name, HookFactory factory);  // a hook without options
std::vector<std::string> hook_names();
bool has_hook(const std::string& name);
// Builds one "custom" entry; `path` names it in errors (e.g. "hooks.custom[0]").
std::shared_ptr<gan::Hook> make_custom_hook(nlohmann::json& config, const std::string& path,
                                            const HookContext& context);

}  // namespace gantry::hooks
