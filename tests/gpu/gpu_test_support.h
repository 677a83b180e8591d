// Helpers of the CUDA tests: skipping without devices, NaN-filled device allocations and the
// atol + rtol * |ref| comparison. Test support only.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/tensor.h"
#include "support/golden.h"  // Tolerance
#include "support/op_harness.h"  // all_close, uniform_values

// Skips the test (GTEST_SKIP returns from the calling function) unless `n` CUDA devices are
// visible, saying how many there are and why. On a machine with NVIDIA GPUs that CUDA cannot see
// at all it fails instead (Note [no device on a GPU machine]): a GPU run must not be green having
// tested nothing.
#define GANTRY_REQUIRE_CUDA_DEVICES(n)                                                    \
  do {                                                                                    \
    const ::gantry::gputest::DeviceShortage gantry_shortage_ =                            \
        ::gantry::gputest::device_shortage(n);                                            \
    if (gantry_shortage_.fail) GTEST_FAIL() << gantry_shortage_.message;                  \
    if (!gantry_shortage_.message.empty()) GTEST_SKIP() << gantry_shortage_.message;      \
  } while (0)

namespace gantry::gputest {

using ::gantry::testing::Tolerance;
using ::gantry::testing::all_close;
using ::gantry::testing::uniform_values;

// Why fewer than `n` CUDA devices are visible ("" when there are enough), and whether that is a
// failure: no device at all on a machine with NVIDIA GPUs.
struct DeviceShortage {
  bool fail = false;
  std::string message;
};
DeviceShortage device_shortage(int n);

// Turns on the allocator's NaN fill (cuda::set_fill_allocations_with_nan) for the scope.
class NanFilledAllocations {
 public:
  NanFilledAllocations() : previous_(cuda::fill_allocations_with_nan()) {
    cuda::set_fill_allocations_with_nan(true);
  }
  ~NanFilledAllocations() { cuda::set_fill_allocations_with_nan(previous_); }
  NanFilledAllocations(const NanFilledAllocations&) = delete;
  NanFilledAllocations& operator=(const NanFilledAllocations&) = delete;

 private:
  bool previous_;
};

}  // namespace gantry::gputest
