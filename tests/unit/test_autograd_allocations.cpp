// Issue #7: a steady-state training step makes no C++ heap allocation of Gantry's own. This
// binary's operator new counts its calls (and forwards to malloc), and a small model made of
// elementwise ops and reductions (no oneDNN primitive, whose internals allocate) runs forward,
// first- and second-order backward repeatedly: after warm-up, the count must not move.
#include <gtest/gtest.h>

#include <cstdint>
#include <new>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "instrumentation/counting_operator_new.h"

namespace gantry {
namespace {

Tensor leaf(std::initializer_list<float> values, Shape shape) {
  Tensor t = ops::from_vector(std::vector<float>(values), shape);
  t.set_requires_grad(true);
  return t;
}

TEST(AutogradAllocations, SteadyStateStepMakesNoCppHeapAllocation) {
  Tensor x = leaf({0.5f, -1.f, 2.f, 0.25f, -0.75f, 1.5f}, {2, 3});  // (N, F)
  Tensor w = leaf({0.3f, -0.2f, 0.9f}, {3});
  Tensor b = leaf({0.1f}, {1});
  Tensor target = ops::from_vector(std::vector<float>{0.2f, -0.4f, 0.6f, 0.1f, 0.f, -0.3f}, {2, 3});
  autograd::TensorList first, second;  // kept across steps, as a training loop keeps its lists
  auto step = [&] {
    Tensor h = ops::leaky_relu(ops::add(ops::mul(x, w), b), 0.2f);
    Tensor loss = ops::mean(ops::square(ops::sub(ops::tanh(h), target)), {0, 1});
    // First order, with the on-the-fly report; then a penalty on d loss / d x (create_graph)
    // differentiated again, as WGAN-GP and R1 do.
    size_t reported = 0;
    autograd::grad_into(first, {loss}, {w, b}, {}, /*retain_graph=*/true, false, false,
                        [&reported](size_t, const Tensor&) { ++reported; });
    EXPECT_EQ(reported, 2u);
    autograd::grad_into(first, {loss}, {x}, {}, false, /*create_graph=*/true);
    Tensor penalty = ops::sum(ops::square(first[0]));
    autograd::grad_into(second, {penalty}, {w, b}, {}, /*retain_graph=*/true);
    loss = ops::sum(ops::mul(h, 0.5f));
    loss.backward();
    return ops::sum(second[0]).item();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: pools, scratch lists, caches
  const long before = gantry::instrumentation::operator_new_calls();
  for (int i = 0; i < 5; ++i) step();
  EXPECT_EQ(gantry::instrumentation::operator_new_calls() - before, 0);
  EXPECT_TRUE(w.grad().defined());
}

}  // namespace
}  // namespace gantry

// The replacement covers every form of new (nothrow, aligned, arrays), each released by the
// matching delete, so sanitizers see no mismatched pairs and nothing escapes the count.
TEST(CountingOperatorNew, CountsEveryFormAndAlignsAsAsked) {
  struct alignas(256) Wide {
    float v[4];
  };
  const long before = gantry::instrumentation::operator_new_calls();
  int* plain = new int(1);
  int* nothrow = new (std::nothrow) int(2);
  int* array = new (std::nothrow) int[3];
  Wide* wide = new Wide;
  Wide* wide_nothrow = new (std::nothrow) Wide;
  Wide* wide_array = new Wide[2];
  EXPECT_EQ(gantry::instrumentation::operator_new_calls() - before, 6);
  for (const void* p : {static_cast<const void*>(wide), static_cast<const void*>(wide_nothrow),
                        static_cast<const void*>(wide_array)})
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
  EXPECT_EQ(*plain + *nothrow, 3);
  delete plain;
  delete nothrow;
  delete[] array;
  delete wide;
  delete wide_nothrow;
  delete[] wide_array;
}
