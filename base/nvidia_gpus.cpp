#include "base/nvidia_gpus.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace gantry {

namespace fs = std::filesystem;

std::vector<std::string> nvidia_gpu_evidence(const std::string& root) {
  std::vector<std::string> found;
  std::error_code ec;
  // /dev/nvidia0, /dev/nvidia1, ...: one node per GPU (not nvidiactl, nvidia-uvm, nvidia-caps).
  for (fs::directory_iterator it(root + "/dev", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 6 && name.starts_with("nvidia") &&
        std::all_of(name.begin() + 6, name.end(), [](unsigned char c) { return std::isdigit(c); }))
      found.push_back(it->path().string());
  }
  ec.clear();
  for (fs::directory_iterator it(root + "/proc/driver/nvidia/gpus", ec), end; !ec && it != end; it.increment(ec))
    found.push_back(it->path().string());
  std::sort(found.begin(), found.end());
  return found;
}

std::string describe_nvidia_gpu_evidence() {
  const std::vector<std::string> found = nvidia_gpu_evidence();
  if (found.empty()) return "";
  std::string text = "this machine has NVIDIA GPUs (";
  for (size_t i = 0; i < found.size(); ++i) text += (i ? ", " : "") + found[i];
  return text + ")";
}

}  // namespace gantry
