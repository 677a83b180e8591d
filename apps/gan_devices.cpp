// gan_devices: what this machine offers Gantry — the CPU (cores, the ISA oneDNN uses), CUDA
// devices with memory and compute capability, cuDNN and NCCL versions — or a clear "no CUDA
// device" — and the MPI library for multi-worker runs. Exits 1 when the machine has NVIDIA GPUs
// that CUDA cannot see.
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/app_support.h"
#include "backend/backend.h"
#include "distribute/strategy.h"

int main(int argc, char** argv) {
  CLI::App app{"gan_devices: list the devices and libraries Gantry can use"};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return gantry::apps::run_guarded("gan_devices", [] {
    std::cout << gantry::describe_backends() << gantry::distribute::describe_multi_worker();
    // A GPU CUDA cannot see fails the command (Note [no device on a GPU machine] in
    // base/nvidia_gpus.h).
    return gantry::cuda_device_missing_on_gpu_machine() ? 1 : 0;
  });
}
