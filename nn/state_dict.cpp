#include "nn/state_dict.h"

#include <set>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "nn/safetensors.h"

namespace gantry::nn {

namespace {

bool is_float(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

}  // namespace

void save_state_dict(const Module& module, const std::string& path,
                     const std::map<std::string, std::string>& metadata) {
  write_safetensors(path, module.state_dict(), metadata);
}

void load_state_dict(Module& module, const std::string& path) {
  load_state_dict(module, read_safetensors(path).tensors, path);
}

void load_state_dict(Module& module, const NamedTensors& tensors, const std::string& source) {
  NamedTensors own = module.state_dict();
  std::map<std::string, Tensor> given;
  std::vector<std::string> missing, unexpected, wrong;
  for (const auto& [name, t] : tensors) {
    if (!given.emplace(name, t).second) wrong.push_back("'" + name + "': given twice");
  }
  std::set<std::string> known;
  for (const auto& [name, t] : own) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
      continue;
    }
    const Tensor& src = it->second;
    if (src.shape() != t.shape())
      wrong.push_back("'" + name + "': expected shape " + t.shape().str() + ", found " +
                      src.shape().str());
    else if (src.dtype() != t.dtype() && !(is_float(src.dtype()) && is_float(t.dtype())))
      wrong.push_back("'" + name + "': expected dtype " + to_string(t.dtype()) + ", found " +
                      to_string(src.dtype()));
  }
  for (const auto& [name, t] : tensors)
    if (!known.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !wrong.empty()) {
    std::string msg = source + ": state dict does not match " + module.type_name() + ":";
    auto list = [&msg](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      msg += std::string("\n  ") + what + " (" + std::to_string(names.size()) + "):";
      for (const std::string& n : names) msg += " " + n + ",";
      msg.pop_back();
    };
    list("missing keys", missing);
    list("unexpected keys", unexpected);
    for (const std::string& w : wrong) msg += "\n  " + w;
    GANTRY_FAIL(msg);
  }
  NoGradGuard no_grad;
  for (const auto& [name, t] : own) ops::copy_(t, given.at(name));
}

void save_optimizer_state(const Optimizer& optimizer, const std::string& path) {
  write_safetensors(path, optimizer.state_tensors(),
                    {{"type", optimizer.type()},
                     {"param_groups", optimizer.param_groups().dump()}});
}

void load_optimizer_state(Optimizer& optimizer, const std::string& path) {
  SafetensorsContents file = read_safetensors(path);
  auto type = file.metadata.find("type");
  GANTRY_CHECK(type != file.metadata.end() && type->second == optimizer.type(), path,
               ": expected optimizer state of type '", optimizer.type(), "', found '",
               type == file.metadata.end() ? std::string("(none)") : type->second, "'");
  auto groups = file.metadata.find("param_groups");
  GANTRY_CHECK(groups != file.metadata.end(), path, ": __metadata__ has no 'param_groups'");
  nlohmann::json parsed = nlohmann::json::parse(groups->second, nullptr, false);
  GANTRY_CHECK(!parsed.is_discarded(), path, ": __metadata__.param_groups is not valid JSON");
  std::map<std::string, Tensor> tensors(file.tensors.begin(), file.tensors.end());
  optimizer.load_state(tensors, parsed, path);
}

}  // namespace gantry::nn
