// Whether this machine has NVIDIA GPUs, independently of CUDA: the driver's device nodes and
// /proc entries.
//
// Note [no device on a GPU machine]: CUDA reporting no device (cudaGetDeviceCount failing or
// returning 0) is the normal state of a machine without a GPU, and then every GPU test skips with
// CUDA's error as the reason. On a machine that has one (/dev/nvidia<N> or
// /proc/driver/nvidia/gpus/*) it means a broken driver, runtime or container setup: there it is an
// error to report, never a reason to skip GPU tests or to fall back quietly.
// GANTRY_REQUIRE_CUDA_DEVICES then fails a test instead of skipping it, gan_devices prints an ERROR
// and exits 1, and asking for cuda:N says so, so a GPU run is never green having tested nothing.
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
