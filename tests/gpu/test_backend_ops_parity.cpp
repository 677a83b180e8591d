// The op harness on cuda:0 (Note [op harness] in tests/support/op_harness.h): every case of every
// group, forward, first and second derivatives, against the CPU backend, with every CUDA
// allocation filled with NaN first (the allocator's fill covers the backend's own scratch too).
// Skipped without a CUDA device; the CPU runs the same cases against the reference oracle in the
// unit tests (tests/unit/test_backend_ops.cpp).
#include <gtest/gtest.h>

#include <iostream>

#include "gpu_test_support.h"
#include "support/op_harness.h"

namespace gantry::gputest {
namespace {

class BackendOpsOnCuda : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }
};

TEST_P(BackendOpsOnCuda, MatchTheCpu) {
  NanFilledAllocations nan_fill;
  int64_t compared = 0;
  const ::testing::AssertionResult result = testing::check_group(GetParam(), Device::cuda(0), &compared);
  EXPECT_TRUE(result);
  EXPECT_GT(compared, 0);
  if (result) std::cout << "[  cases   ] " << GetParam() << ": " << result.message() << "\n";
}

INSTANTIATE_TEST_SUITE_P(Groups, BackendOpsOnCuda, ::testing::ValuesIn(testing::op_case_groups()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace gantry::gputest
