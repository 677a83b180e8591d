// Multi-replica FID evaluation (metrics/generated_features.h, what the metrics hook runs): the
// moments of `count` generated 32x32 RGB images through the FID Inception-v3 (random weights,
// bench/metrics/random_inception.h) on 1 CPU replica with 1 or 2 threads and on 2 CPU replicas
// (cpu:0, cpu:1) splitting 2 threads, one each. The generator is a small DCGAN (its cost is
// negligible next to Inception's 5.7 GFLOP per image).
//
//   gantry_metrics_bench --benchmark_filter=FidReplicas
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "base/threads.h"
#include "distribute/strategy.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/objective/adversarial_term.h"
#include "losses/adversarial_loss.h"
#include "metrics/generated_features.h"
#include "nn/activation.h"
#include "nn/adam.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/sequential.h"
#include "random_inception.h"

namespace gantry {
namespace {

// noise (64, 1, 1) -> 4x4 -> 8x8 -> 16x16 -> (3, 32, 32) in [-1, 1].
gan::GanSpec small_rgb_dcgan() {
  using nn::ConvOptions;
  gan::GanSpec spec;
  spec.noise_shape = Shape{64, 1, 1};
  spec.generator_fn = [](Device, RngKey key) {
    auto g = std::make_shared<nn::Sequential>();
    const int64_t channels[] = {64, 64, 32, 16};
    g->push_back(std::make_shared<nn::ConvTranspose2d>(64, 64, 4, ConvOptions{1, 0, 1, 0, false}, RngKey{key.seed, 1}));
    for (int i = 1; i < 4; ++i) {
      g->push_back(std::make_shared<nn::BatchNorm2d>(channels[i - 1]));
      g->push_back(std::make_shared<nn::ReLU>());
      const int64_t out = i == 3 ? 3 : channels[i];
      g->push_back(std::make_shared<nn::ConvTranspose2d>(channels[i - 1], out, 4, ConvOptions{2, 1, 1, 0, false},
                                                         RngKey{key.seed, static_cast<uint64_t>(1 + i)}));
    }
    g->push_back(std::make_shared<nn::Tanh>());
    return std::static_pointer_cast<nn::Module>(g);
  };
  spec.discriminator_fn = [](Device, RngKey key) {  // never trained here
    auto d = std::make_shared<nn::Sequential>();
    d->push_back(std::make_shared<nn::Conv2d>(3, 1, 32, ConvOptions{1, 0, 1, 0, false}, RngKey{key.seed, 9}));
    return std::static_pointer_cast<nn::Module>(d);
  };
  spec.terms = gan::make_adversarial_terms(losses::make_non_saturating());
  auto adam = [](const std::vector<Tensor>& params) -> std::unique_ptr<nn::Optimizer> {
    return std::make_unique<nn::Adam>(params, nn::AdamOptions{});
  };
  spec.generator_optimizer = adam;
  spec.discriminator_optimizer = adam;
  return spec;
}

// args: replicas, total threads, images, batch per replica
void BM_FidReplicas(benchmark::State& state) {
  const int replicas = static_cast<int>(state.range(0));
  set_num_threads(static_cast<int>(state.range(1)));
  std::vector<Device> devices;
  for (int r = 0; r < replicas; ++r) devices.push_back(Device::cpu(r));
  gan::GanEstimator estimator(small_rgb_dcgan(),
                              replicas == 1 ? distribute::make_one_device_strategy(Device::cpu())
                                            : distribute::make_mirrored_strategy(devices),
                              7);
  std::vector<std::unique_ptr<metrics::FeatureNetwork>> networks;
  for (const Device& d : estimator.strategy().local_devices()) networks.push_back(random_inception().clone_to(d));
  metrics::GeneratedSetOptions options;
  options.count = state.range(2);
  options.batch_size = state.range(3);
  metrics::generated_moments(estimator, networks, options);  // warm-up: primitive creation
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    metrics::FeatureMoments moments = metrics::generated_moments(estimator, networks, options);
    benchmark::DoNotOptimize(moments.count());
  }
  const double images = static_cast<double>(options.count * state.iterations());
  state.counters["images/s"] = benchmark::Counter(images, benchmark::Counter::kIsRate);
  state.counters["cpu_s/image"] = (process_cpu_seconds() - cpu_start) / images;
}

BENCHMARK(BM_FidReplicas)
    ->ArgNames({"replicas", "threads", "images", "batch"})
    ->Args({1, 1, 32, 16})
    ->Args({1, 2, 32, 16})
    ->Args({2, 2, 32, 16})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
}  // namespace gantry
