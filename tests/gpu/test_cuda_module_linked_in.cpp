// The gpu tests link the CUDA backend in and call it directly; the registry must then use that
// copy, never open the module as a second one (backend/cuda_module.h). Needs no device: it also
// runs with the unit tests (tests/CMakeLists.txt, host_side.*).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda_module.h"

namespace gantry {
namespace {

TEST(CudaModuleLinkedIn, TheRegistryUsesTheBackendInTheExecutable) {
  std::string why;
  ASSERT_TRUE(cuda_module_available(&why)) << why;
  EXPECT_EQ(&cuda_module().backend(), &cuda::cuda_backend());
  EXPECT_EQ(cuda_module().device_count_or_zero(), cuda::device_count_or_zero());
  std::ifstream maps("/proc/self/maps");
  const std::string mapped{std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>()};
  EXPECT_EQ(mapped.find("libgantry_cuda.so"), std::string::npos) << "the module was opened as well";
}

}  // namespace
}  // namespace gantry
