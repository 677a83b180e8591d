// The op harness on the CPU (Note [op harness] in tests/support/op_harness.h): every case of every
// group against the reference oracle, every operation of the op table reached by a case, and the
// harness itself failing a kernel that is wrong or leaves part of its output unwritten.
#include <gtest/gtest.h>

#include <array>
#include <iostream>
#include <set>
#include <string>

#include "backend/backend_layer.h"
#include "support/op_harness.h"

namespace gantry {
namespace {

using testing::OpCase;

class BackendOps : public ::testing::TestWithParam<std::string> {};

TEST_P(BackendOps, CpuMatchesTheReferenceOracle) {
  int64_t compared = 0;
  const ::testing::AssertionResult result = testing::check_group(GetParam(), Device::cpu(), &compared);
  EXPECT_TRUE(result);
  EXPECT_GT(compared, 0);
  if (result) std::cout << "[  cases   ] " << GetParam() << ": " << result.message() << "\n";
}

INSTANTIATE_TEST_SUITE_P(Groups, BackendOps, ::testing::ValuesIn(testing::op_case_groups()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(BackendOpCoverage, EveryOperationOfTheTableIsReachedByACase) {
  std::array<int64_t, kBackendOpCount> cases_reaching{};
  for (const OpCase& c : testing::op_cases()) {
    const std::array<int64_t, kBackendOpCount> calls = testing::backend_ops_reached(c);
    for (int op = 0; op < kBackendOpCount; ++op) cases_reaching[op] += calls[op] > 0;
  }
  for (int op = 0; op < kBackendOpCount; ++op)
    EXPECT_GT(cases_reaching[op], 0) << "no case of tests/support/op_cases.cpp calls Backend::" << kBackendOpNames[op];
}

TEST(BackendOpCoverage, CaseNamesAreUniqueWithinTheirGroup) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const OpCase& c : testing::op_cases())
    EXPECT_TRUE(seen.insert({c.group, c.name}).second) << c.group << " / " << c.name;
}

// Stands in front of the CPU backend with a broken exp: off by 1e-4 relative, or leaving the
// last element unwritten.
class BrokenExp final : public ForwardingBackend {
 public:
  BrokenExp(Backend& cpu, bool skip_last) : ForwardingBackend(cpu), skip_last_(skip_last) {}
  void unary(UnaryFn fn, const View& x, const View& y) override {
    if (fn.op != UnaryOp::Exp) return inner().unary(fn, x, y);
    const View head{y.data, Shape{y.numel() - 1}, y.dtype, y.device};
    inner().unary(fn, skip_last_ ? View{x.data, head.shape, x.dtype, x.device} : x, skip_last_ ? head : y);
    if (!skip_last_) inner().unary(UnaryFn{UnaryOp::MulScalar, 1.0001f, 0.f}, y, y);
  }

 private:
  bool skip_last_;
};

// The Elementwise group with a broken exp in front of the CPU backend.
::testing::AssertionResult elementwise_with_broken_exp(bool skip_last) {
  BrokenExp broken(backend_for(Device::cpu()), skip_last);
  ScopedBackendLayer layer(DeviceKind::CPU, broken);
  return testing::check_group("Elementwise", Device::cpu());
}

TEST(OpHarness, FailsAKernelOutsideTheTolerance) {
  const ::testing::AssertionResult result = elementwise_with_broken_exp(/*skip_last=*/false);
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("unary Exp random"), std::string::npos) << result.message();
}

TEST(OpHarness, FailsAKernelThatLeavesAnElementUnwritten) {
  const ::testing::AssertionResult result = elementwise_with_broken_exp(/*skip_last=*/true);
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("1 of 1003 elements differ"), std::string::npos) << result.message();
}

}  // namespace
}  // namespace gantry
