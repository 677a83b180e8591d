// Helpers of the CUDA tests: skipping without devices, CPU/CUDA tensor pairs whose outputs start
// as NaN, and the atol + rtol * |ref| comparison. Test support only.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/tensor.h"
#include "support/golden.h"  // Tolerance

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

// Why fewer than `n` CUDA devices are visible ("" when there are enough), and whether that is a
// failure: no device at all on a machine with NVIDIA GPUs.
struct DeviceShortage {
  bool fail = false;
  std::string message;
};
DeviceShortage device_shortage(int n);

enum Side { kCpu = 0, kGpu = 1 };

// The same tensor on the CPU and on cuda:0.
struct Pair {
  Tensor t[2];
  View operator[](Side s) const { return t[s].view(); }
  const View* ptr(Side s) {
    views[s] = t[s].view();
    return &views[s];
  }
  View views[2];
};

// Inputs: the values on both devices.
Pair input(const std::vector<float>& values, const Shape& shape);
Pair input_i64(const std::vector<int64_t>& values, const Shape& shape);
// Deterministic values in [lo, hi) (Philox, keyed by `seed`).
std::vector<float> values(int64_t n, uint64_t seed, float lo = -2.f, float hi = 2.f);
Pair random_input(const Shape& shape, uint64_t seed, float lo = -2.f, float hi = 2.f);
// Outputs: filled with NaN on both devices, so an element a kernel does not write fails.
Pair output(const Shape& shape, DType dtype = DType::F32);

// Element-wise |got - want| <= atol + rtol * |want| with equal shapes; NaN passes only against
// NaN. The message names `what`, the count of failures and the worst element.
::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, Tolerance tol,
                                     const std::string& what = "");
// The pair's CUDA side against its CPU side.
::testing::AssertionResult gpu_matches_cpu(const Pair& p, Tolerance tol,
                                           const std::string& what = "");

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
