// Issue #7: a steady-state training step makes no C++ heap allocation of Gantry's own. This
// binary's operator new counts its calls (and forwards to malloc), and a small model made of
// elementwise ops and reductions (no oneDNN primitive, whose internals allocate) runs forward,
// first- and second-order backward repeatedly: after warm-up, the count must not move.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"

namespace {
std::atomic<long> g_operator_new{0};

[[gnu::noinline]] void* counted_new(std::size_t size) {
  g_operator_new.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }
}  // namespace

void* operator new(std::size_t size) { return counted_new(size); }
void* operator new[](std::size_t size) { return counted_new(size); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }

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
  const long before = g_operator_new.load();
  for (int i = 0; i < 5; ++i) step();
  EXPECT_EQ(g_operator_new.load() - before, 0);
  EXPECT_TRUE(w.grad().defined());
}

}  // namespace
}  // namespace gantry
