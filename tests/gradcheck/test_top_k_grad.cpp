// First- and second-order gradchecks of top-k's generator loss (Sinha et al. 2020) w.r.t. the fake
// logits: the loss of the k highest over k, on one shard of a batch (the rows kept are fixed by
// the logits' values, which finite differences do not reorder: they are well apart).
#include <gtest/gtest.h>

#include "gan/objective/top_k_term.h"
#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

TEST(TopKGrad, GeneratorLossOnTheKeptRowsOfAShard) {
  // a global batch of 7 (rows 0..6), this shard rows 2..6; k = 4
  const std::vector<float> global = {0.3f, -1.2f, 2.1f, -0.4f, 1.4f, -2.5f, 0.9f};
  const std::vector<int64_t> kept = gan::top_k_rows(global, 4);
  ASSERT_EQ(kept, (std::vector<int64_t>{0, 2, 4, 6}));
  const losses::LossContext ctx;
  for (const Shape& shape : {Shape{5}, Shape{5, 1}}) {
    SCOPED_TRACE(shape.str());
    Tensor fake = ops::reshape(ops::from_vector(std::vector<float>(global.begin() + 2, global.end()), Shape{5}), shape);
    fake.set_requires_grad(true);
    const std::vector<std::shared_ptr<losses::AdversarialLoss>> kinds = {losses::make_non_saturating(),
                                                                         losses::make_least_squares()};
    for (const auto& loss : kinds) {
      SCOPED_TRACE(loss->name());
      Fn g = [&](const TensorList& in) { return gan::top_k_generator_loss(*loss, in[0], kept, 2, 4, ctx); };
      EXPECT_EQ(check_grad(g, {fake}), "");
      EXPECT_EQ(check_gradgrad(g, {fake}), "");
    }
  }
}

}  // namespace
}  // namespace gantry
