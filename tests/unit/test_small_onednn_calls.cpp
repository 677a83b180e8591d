// Note [small oneDNN calls] (backend/cpu/onednn_context.h): on a 2-thread budget a small matmul is
// created and run on one thread, so it is the same primitive and gives the same bits as on one
// thread, while a large one gets a primitive of its own; small argument reorders (exact copies)
// run on one thread too, after which the next op must get its two OpenMP threads back.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "base/threads.h"
#include "core/ops/ops.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

TEST(SmallOnednnCalls, SmallMatmulRunsOnOneThreadWhateverTheBudget) {
  const Tensor a = testing::random_input({32, 64}, 1, -1.f, 1.f, false);
  const Tensor b = testing::random_input({64, 48}, 2, -1.f, 1.f, false);
  ASSERT_LT(32 * 64 * 48, cpu::kSmallMatmulMacs);
  std::vector<float> one;
  {
    ThreadBudgetScope budget(1);
    one = ops::matmul(a, b).to_vector();
  }
  const size_t cached = cpu::primitive_cache_size();
  ThreadBudgetScope budget(2);
  EXPECT_EQ(ops::matmul(a, b).to_vector(), one);
  EXPECT_EQ(cpu::primitive_cache_size(), cached) << "the 2-thread call made a primitive of its own";

  const Tensor big_a = testing::random_input({256, 256}, 3, -1.f, 1.f, false);
  const Tensor big_b = testing::random_input({256, 256}, 4, -1.f, 1.f, false);
  ASSERT_GE(256 * 256 * 256, cpu::kSmallMatmulMacs);
  ops::matmul(big_a, big_b);
  EXPECT_GT(cpu::primitive_cache_size(), cached);
}

// A convolution whose small argument reorders ran on one thread: same values as on one thread,
// and the next op applying the budget gets two OpenMP threads again (a reorder that set OpenMP's
// count behind apply_thread_budget's back would leave every later loop on one).
TEST(SmallOnednnCalls, SmallReordersLeaveTheBudgetAsItWas) {
  const Tensor x = testing::random_input({4, 16, 8, 8}, 5, -1.f, 1.f, false);
  const Tensor w = testing::random_input({16, 16, 3, 3}, 6, -1.f, 1.f, false);
  std::vector<float> one;
  {
    ThreadBudgetScope budget(1);
    one = ops::conv2d(x, w, {}, ops::Conv2dOptions::make(1, 1)).to_vector();
  }
  ThreadBudgetScope budget(2);
  const std::vector<float> two = ops::conv2d(x, w, {}, ops::Conv2dOptions::make(1, 1)).to_vector();
  ASSERT_EQ(two.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) ASSERT_NEAR(two[i], one[i], 1e-5f + 1e-5f * std::abs(one[i])) << i;
  cpu::apply_thread_budget();
  EXPECT_EQ(omp_get_max_threads(), 2);
}

}  // namespace
}  // namespace gantry
