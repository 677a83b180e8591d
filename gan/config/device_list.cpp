#include "gan/config/device_list.h"

#include <algorithm>

#include "backend/backend.h"
#include "backend/cuda_module.h"
#include "base/threads.h"
#include "core/json_reader.h"

namespace gantry::gan {

std::vector<Device> parse_devices(const nlohmann::json& value, const std::string& path) {
  std::vector<Device> devices;
  if (value.is_string() && value.get<std::string>() == "all") {
    if (backend_available(DeviceKind::CUDA)) {
      for (int i = 0; i < backend_for(Device::cuda(0)).device_count(); ++i) devices.push_back(Device::cuda(i));
    } else {
      for (int i = 0; i < hardware_threads(); ++i) devices.push_back(Device::cpu(i));
    }
    return devices;
  }
  std::vector<std::string> names;
  if (value.is_string()) {  // "cpu:0,cpu:1"
    std::string s = value.get<std::string>();
    size_t start = 0;
    while (start <= s.size()) {
      size_t comma = s.find(',', start);
      std::string name = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const size_t first = name.find_first_not_of(' '), last = name.find_last_not_of(' ');  // "cpu:0, cpu:1"
      names.push_back(first == std::string::npos ? "" : name.substr(first, last - first + 1));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (value.is_array()) {
    for (const auto& v : value) {
      GANTRY_CHECK(v.is_string(), path, ": expected device names such as \"cpu:0\", found ", describe_json(v));
      names.push_back(v.get<std::string>());
    }
  } else {
    GANTRY_FAIL(path, ": expected \"all\", a list of devices or \"cpu:0,cpu:1\", found ", describe_json(value));
  }
  GANTRY_CHECK(!names.empty(), path, ": expected at least one device");
  for (const std::string& n : names) {
    GANTRY_CHECK(!n.empty(), path, ": expected device names such as \"cpu:0\", found an empty entry in ",
                 describe_json(value));
    Device d;
    try {
      d = Device::parse(n);
    } catch (const Error& e) {
      GANTRY_FAIL(path, ": ", e.what());
    }
    if (d.is_cuda()) {
      std::string why;
      GANTRY_CHECK(cuda_module_available(&why), path, ": device ", n, " requested, but ", why);
      GANTRY_CHECK(backend_available(DeviceKind::CUDA), path, ": device ", n, " requested, but there is "
                   "no CUDA device on this machine");
      int count = backend_for(d).device_count();
      GANTRY_CHECK(d.index < count, path, ": device ", n, " requested, but this machine has ", count, " CUDA device(s)");
    } else {
      // CPU replicas are logical devices, one per logical CPU (as "all" gives).
      int count = backend_for(d).device_count();
      GANTRY_CHECK(d.index < count, path, ": device ", n, " does not exist: this machine has ", count,
                   " logical CPU(s), so cpu:0", count > 1 ? " to cpu:" + std::to_string(count - 1) : std::string(),
                   " are available");
    }
    GANTRY_CHECK(std::find(devices.begin(), devices.end(), d) == devices.end(), path, ": device ", d.str(),
                 " is listed twice in ", describe_json(value), "; each replica needs its own device");
    devices.push_back(d);
  }
  return devices;
}

}  // namespace gantry::gan
