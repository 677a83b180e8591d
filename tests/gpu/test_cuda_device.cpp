// The CUDA backend on a real device: its report of itself and its caching allocator (its kernels
// are the op harness's, tests/gpu/test_backend_ops_parity.cpp). Skipped (with the reason) where no
// CUDA device is visible.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.h"
#include "gpu_test_support.h"

namespace gantry::cuda {
namespace {

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GANTRY_REQUIRE_CUDA_DEVICES(1);
  }

  Backend& backend() { return cuda_backend(); }
};

TEST_F(CudaDeviceTest, ReportsTheDevice) {
  EXPECT_GT(backend().device_count(), 0);
  EXPECT_EQ(backend().kind(), DeviceKind::CUDA);
  EXPECT_THROW(backend().allocate(16, Device::cuda(backend().device_count())), Error);
}

TEST_F(CudaDeviceTest, AllocatorCachesFreedMemory) {
  AllocatorStats before = memory_stats(0);
  void* p = backend().allocate(3 << 20, Device::cuda(0));
  backend().deallocate(p, 3 << 20, Device::cuda(0));
  void* q = backend().allocate(3 << 20, Device::cuda(0));
  EXPECT_EQ(q, p);
  AllocatorStats after = memory_stats(0);
  EXPECT_GE(after.cache_hits, before.cache_hits + 1);
  backend().deallocate(q, 3 << 20, Device::cuda(0));
  synchronize(0);
  empty_cache(0);
}

}  // namespace
}  // namespace gantry::cuda
