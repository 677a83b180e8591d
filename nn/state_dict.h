// Saving and loading module and optimizer state as safetensors.
//
// A module file holds Module::state_dict() (parameters and buffers by dotted name, in their own
// dtypes), so it loads into the equivalent torch.nn module (and a torch state_dict written as
// safetensors loads here). An optimizer file holds Optimizer::state_tensors() with
// __metadata__ {"type": "adam", "param_groups": "<json>"}.
//
// Loading is strict and reports every mismatch at once: missing keys, unexpected keys, wrong
// shapes and unconvertible dtypes, each on its own line, naming the file. Values are written
// into the existing tensors' storage (so optimizers and strategies keep valid handles);
// floating dtypes convert (an f16 file loads into f32 parameters), i64 buffers need i64.
#pragma once

#include <map>
#include <string>

#include "nn/module.h"
#include "nn/optimizer.h"

namespace gantry::nn {

void save_state_dict(const Module& module, const std::string& path,
                     const std::map<std::string, std::string>& metadata = {});
void load_state_dict(Module& module, const std::string& path);
// `source` names the origin in errors.
void load_state_dict(Module& module, const NamedTensors& tensors, const std::string& source);

void save_optimizer_state(const Optimizer& optimizer, const std::string& path);
void load_optimizer_state(Optimizer& optimizer, const std::string& path);

}  // namespace gantry::nn
