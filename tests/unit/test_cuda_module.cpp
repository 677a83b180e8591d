// The CUDA backend is a module opened on first use (backend/cuda_module.h): CPU work never maps
// the CUDA libraries, and a CUDA build's module loads in a test binary (whose exported symbols
// it resolves against) or says why not.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "backend/cuda_module.h"
#include "core/ops/ops.h"
#include "core/tensor.h"

namespace gantry {
namespace {

std::string mapped_files() {
  std::ifstream maps("/proc/self/maps");
  return std::string(std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>());
}

TEST(CudaModule, CpuWorkNeverLoadsIt) {
  Tensor x = ops::randn({4, 8}, RngKey{1, 0});
  x.set_requires_grad(true);
  Tensor w = ops::randn({8, 3}, RngKey{2, 0});
  ops::sum(ops::matmul(x, w)).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(backend_available(DeviceKind::CPU));
  EXPECT_FALSE(cuda_module_loaded());
  const std::string maps = mapped_files();
  for (const char* lib : {"libgantry_cuda", "libcudart", "libcublas", "libcudnn", "libnccl"})
    EXPECT_EQ(maps.find(lib), std::string::npos) << lib << " is mapped after CPU work only";
}

TEST(CudaModule, LoadsInACudaBuildOrSaysTheBuildHasNone) {
  std::string why;
  const bool available = cuda_module_available(&why);
  if (cuda_module_file_name() == nullptr) {
    EXPECT_FALSE(available);
    EXPECT_NE(why.find("-DGANTRY_CUDA=ON"), std::string::npos) << why;
    EXPECT_THROW(backend_for(Device::cuda(0)), Error);
    return;
  }
  // Every symbol resolved at dlopen (RTLD_NOW): the test binary exports what the module needs.
  ASSERT_TRUE(available) << why;
  EXPECT_TRUE(cuda_module_loaded());
  EXPECT_NE(mapped_files().find("libgantry_cuda.so"), std::string::npos);
  if (cuda_module().device_count_or_zero() == 0) {
    try {
      backend_for(Device::cuda(0));
      ADD_FAILURE() << "backend_for(cuda:0) without a device did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gantry
