// The one parser of device lists (strategy.devices, gan_train --devices, gan_bench --devices).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/device.h"

namespace gantry::gan {

// "all" -> one device per CUDA GPU, or every core as its own CPU replica when there is none.
// Otherwise "cpu:0,cpu:1" or a list of names; every device must exist (cpu:N for N below the
// logical CPUs, cuda:N below the GPUs) and appear once. Errors name `path`.
std::vector<Device> parse_devices(const nlohmann::json& value, const std::string& path);

}  // namespace gantry::gan
