// base/nvidia_gpus.h: the driver's traces of NVIDIA GPUs, read from a folder laid out like a GPU
// machine and from one without them (Note [no device on a GPU machine]).
#include <gtest/gtest.h>

#include <fstream>

#include "base/nvidia_gpus.h"
#include "support/temp_dir.h"

namespace gantry {
namespace {

TEST(NvidiaGpus, FindsDeviceNodesAndDriverEntries) {
  testing::TempDir root;
  for (const char* name : {"dev/nvidia0", "dev/nvidia1", "dev/nvidiactl", "dev/nvidia-uvm",
                           "dev/nvidia-caps/nvidia-cap1", "dev/nvme0", "dev/null"})
    std::ofstream(root.file(name)) << "";
  std::ofstream(root.file("proc/driver/nvidia/gpus/0000:01:00.0/information")) << "Model: H100";
  const std::vector<std::string> found = nvidia_gpu_evidence(root.str());
  EXPECT_EQ(found, (std::vector<std::string>{root.str() + "/dev/nvidia0", root.str() + "/dev/nvidia1",
                                             root.str() + "/proc/driver/nvidia/gpus/0000:01:00.0"}));
}

TEST(NvidiaGpus, NothingOnAMachineWithoutThem) {
  testing::TempDir root;
  std::ofstream(root.file("dev/nvidiactl")) << "";  // the control node alone is not a GPU
  std::ofstream(root.file("dev/tty0")) << "";
  EXPECT_TRUE(nvidia_gpu_evidence(root.str()).empty());
  EXPECT_TRUE(nvidia_gpu_evidence(root.str() + "/missing").empty());
}

// This machine: the description names the first trace, or is empty exactly when there is none.
TEST(NvidiaGpus, DescriptionAgreesWithTheEvidence) {
  const std::vector<std::string> found = nvidia_gpu_evidence();
  const std::string text = describe_nvidia_gpu_evidence();
  if (found.empty()) {
    EXPECT_EQ(text, "");
  } else {
    EXPECT_NE(text.find(found.front()), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace gantry
