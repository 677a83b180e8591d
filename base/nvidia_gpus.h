// Whether this machine has NVIDIA GPUs, independently of CUDA: the driver's device nodes and
// /proc entries. CUDA reporting no device (cudaGetDeviceCount failing or returning 0) is the
// normal state of a machine without a GPU, but on a machine that has one it means a broken
// driver, runtime or container setup. Note [no device on a GPU machine]: there it is an error
// to report, never a reason to skip GPU tests or to fall back quietly.
#pragma once

#include <string>
#include <vector>

namespace gantry {

// The paths that show NVIDIA GPUs here: /dev/nvidia<N> device nodes and the driver's
// /proc/driver/nvidia/gpus/<bus id> folders; empty on a machine without them. `root` prefixes
// both (tests use a folder laid out like a GPU machine).
std::vector<std::string> nvidia_gpu_evidence(const std::string& root = "");

// One line for errors: "this machine has NVIDIA GPUs (/dev/nvidia0, ...)", or "" if it has none.
std::string describe_nvidia_gpu_evidence();

}  // namespace gantry
