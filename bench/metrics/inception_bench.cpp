// FID Inception-v3 throughput (metrics/inception_v3.h): images/s through the whole feature
// network at 1 and 2 threads, on 299x299 inputs (the network alone) and on 32x32 RGB images
// (resized to 299 first, as a GAN's samples are). Weights are random (He-uniform convs, batch
// norm near the identity), which costs the same as the real ones. The PyTorch anchor running
// the same network is bench/inception_torch.py.
//
//   gantry_metrics_bench --benchmark_min_time=5
//
// cpu_s/image is the process's CPU time (all threads) per image: on a shared, loaded machine it
// stays comparable where images/s does not.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cmath>
#include <memory>
#include <string>

#include "base/threads.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "metrics/inception_v3.h"
#include "random_inception.h"

namespace gantry {

const metrics::InceptionV3& random_inception() {
  static const std::unique_ptr<metrics::InceptionV3> net = [] {
    nn::NamedTensors tensors;
    uint64_t stream = 0;
    for (const auto& [name, shape] : metrics::inception_v3_expected_tensors()) {
      const Tensor u = ops::rand(shape, RngKey{2015, stream++});  // [0, 1)
      const bool conv = name.find("conv.weight") != std::string::npos || name == "fc.weight";
      const double fan_in = static_cast<double>(shape.numel() / shape[0]);
      const bool positive = name.find("bn.weight") != std::string::npos || name.find("running_var") != std::string::npos;
      tensors.emplace_back(name, conv ? (u * 2.f - 1.f) * static_cast<float>(std::sqrt(6.0 / fan_in))
                                      : positive ? u + 0.5f : (u - 0.5f) * 0.2f);
    }
    return std::make_unique<metrics::InceptionV3>(tensors, "random", "random");
  }();
  return *net;
}

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

namespace {

// args: batch, threads, input side (299: no resize)
void BM_InceptionFeatures(benchmark::State& state) {
  const int64_t batch = state.range(0);
  set_num_threads(static_cast<int>(state.range(1)));
  const int64_t side = state.range(2);
  metrics::InceptionV3 net = random_inception();  // a copy: extract() is non-const
  const Tensor images = ops::tanh(ops::randn(Shape{batch, 3, side, side}, RngKey{7, 1}));
  net.extract(images, /*want_logits=*/true);  // warm-up: oneDNN primitive creation
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    metrics::FeatureBatch out = net.extract(images, /*want_logits=*/true);
    benchmark::DoNotOptimize(out.features.data<float>());
  }
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(batch * state.iterations()),
                                                  benchmark::Counter::kIsRate);
  state.counters["cpu_s/image"] =
      (process_cpu_seconds() - cpu_start) / static_cast<double>(batch * state.iterations());
}

BENCHMARK(BM_InceptionFeatures)
    ->ArgNames({"batch", "threads", "side"})
    ->Args({16, 1, 299})
    ->Args({16, 2, 299})
    ->Args({50, 1, 299})
    ->Args({50, 2, 299})
    ->Args({50, 2, 32})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
}  // namespace gantry

BENCHMARK_MAIN();
