// Cost of differentiable augmentation per batch (google-benchmark): drawing the parameters and
// applying DiffAugment's colour + translation + cutout to a batch, forward and backward, at the
// reference DCGAN's batch (64 x 1 x 32 x 32) and at 64 x 3 x 64 x 64. A training step augments
// three batches (D: real and fake; G: fake), so 3x these times is the step's augmentation cost.
// ADA's pipeline ("bgc", p = 1: every transform on for every example, the worst case) is timed
// the same way at 32 x 32 and 64 x 64 RGB, batch 32 and 64, on 1 and 2 threads, and
// grid_sample alone (reflection padding, forward and the input gradient).
#include <benchmark/benchmark.h>

#include "augment/ada_pipeline.h"
#include "augment/diff_augment.h"
#include "base/threads.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"

namespace gantry {
namespace {

augment::AugmentPolicy all_transforms() {
  augment::AugmentPolicy p;
  p.brightness = p.saturation = p.contrast = p.translation = p.cutout = true;
  return p;
}

void BM_AugmentForwardBackward(benchmark::State& state) {
  const Shape shape{64, state.range(0), state.range(1), state.range(1)};
  Tensor x = ops::rand(shape, RngKey{1, 2});
  x.set_requires_grad(true);
  const augment::AugmentPolicy policy = all_transforms();
  int64_t step = 0;
  for (auto _ : state) {
    Tensor y = augment::augment(x, policy, 1.0, RngKey{3, static_cast<uint64_t>(step++)}, 0);
    std::vector<Tensor> g = autograd::grad({ops::sum(y)}, {x});
    benchmark::DoNotOptimize(g[0].view().data);
  }
  state.SetItemsProcessed(state.iterations() * shape[0]);
}
BENCHMARK(BM_AugmentForwardBackward)->Args({1, 32})->Args({3, 64})->Unit(benchmark::kMillisecond);

void BM_Translate2d(benchmark::State& state) {
  const Shape shape{64, state.range(0), state.range(1), state.range(1)};
  Tensor x = ops::rand(shape, RngKey{1, 2});
  std::vector<int64_t> s;
  for (int64_t i = 0; i < shape[0]; ++i) s.insert(s.end(), {i % 5 - 2, i % 3 - 1});
  Tensor shift = ops::from_vector(s, Shape{shape[0], 2});
  for (auto _ : state) benchmark::DoNotOptimize(ops::translate2d(x, shift).view().data);
  state.SetBytesProcessed(state.iterations() * shape.numel() * 2 * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(BM_Translate2d)->Args({1, 32})->Args({3, 64})->Unit(benchmark::kMicrosecond);

// Args: channels, size, batch, threads.
void BM_AdaPipelineForwardBackward(benchmark::State& state) {
  const Shape shape{state.range(2), state.range(0), state.range(1), state.range(1)};
  ThreadBudgetScope threads(static_cast<int>(state.range(3)));
  Tensor x = ops::rand(shape, RngKey{1, 2});
  x.set_requires_grad(true);
  const augment::AdaPipeline ada = augment::ada_preset("bgc");
  int64_t step = 0;
  for (auto _ : state) {
    Tensor y = augment::augment_ada(x, ada, 1.0, RngKey{3, static_cast<uint64_t>(step++)}, 0);
    std::vector<Tensor> g = autograd::grad({ops::sum(y)}, {x});
    benchmark::DoNotOptimize(g[0].view().data);
  }
  state.SetItemsProcessed(state.iterations() * shape[0]);
}
BENCHMARK(BM_AdaPipelineForwardBackward)
    ->ArgNames({"c", "size", "batch", "threads"})
    ->ArgsProduct({{3}, {32, 64}, {32, 64}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

// Args: channels, size, batch, threads. A rotation by 0.3 rad with a slight zoom.
void BM_GridSampleForwardBackward(benchmark::State& state) {
  const Shape shape{state.range(2), state.range(0), state.range(1), state.range(1)};
  ThreadBudgetScope threads(static_cast<int>(state.range(3)));
  Tensor x = ops::rand(shape, RngKey{1, 2});
  x.set_requires_grad(true);
  std::vector<augment::Matrix3> g(static_cast<size_t>(shape[0]), augment::rotate2d(0.3) * augment::scale2d(0.9, 0.9));
  Tensor grid = augment::affine_grid(augment::ada_theta(g, shape[2], shape[3], Device::cpu()), shape[2], shape[3]);
  for (auto _ : state) {
    Tensor y = ops::grid_sample(x, grid, GridPadding::kReflection);
    std::vector<Tensor> gx = autograd::grad({ops::sum(y)}, {x});
    benchmark::DoNotOptimize(gx[0].view().data);
  }
  state.SetItemsProcessed(state.iterations() * shape[0]);
}
BENCHMARK(BM_GridSampleForwardBackward)
    ->ArgNames({"c", "size", "batch", "threads"})
    ->ArgsProduct({{3}, {32, 64}, {64}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gantry

BENCHMARK_MAIN();
