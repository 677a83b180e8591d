// A device tag: kind and index. Logical CPU devices cpu:0, cpu:1, ... share the host memory
// and exist so CPU replicas can be addressed like GPUs.
#pragma once

#include <string>
#include <string_view>

namespace gantry {

enum class DeviceKind : uint8_t { CPU, CUDA };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;

  static Device cpu(int index = 0) { return {DeviceKind::CPU, index}; }
  static Device cuda(int index = 0) { return {DeviceKind::CUDA, index}; }
  // Parses "cpu", "cpu:1", "cuda:0"; throws naming the text otherwise.
  static Device parse(std::string_view text);

  bool is_cpu() const { return kind == DeviceKind::CPU; }
  bool is_cuda() const { return kind == DeviceKind::CUDA; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace gantry
