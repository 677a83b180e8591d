// Cost of differentiable augmentation per batch (google-benchmark): drawing the parameters and
// applying DiffAugment's colour + translation + cutout to a batch, forward and backward, at the
// reference DCGAN's batch (64 x 1 x 32 x 32) and at 64 x 3 x 64 x 64. A training step augments
// three batches (D: real and fake; G: fake), so 3x these times is the step's augmentation cost.
#include <benchmark/benchmark.h>

#include "augment/diff_augment.h"
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

}  // namespace
}  // namespace gantry

BENCHMARK_MAIN();
