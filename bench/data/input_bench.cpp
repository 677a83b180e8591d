// Input throughput on Fashion-MNIST at batch 64 with the DCGAN preprocessing (scale to
// [-1, 1], random horizontal flip, pad 28 -> 32), with and without parallel map and prefetch.
// Reports images/s; one iteration is one batch.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>

#include "data/idx.h"
#include "data/pipeline.h"
#include "data/transforms.h"

namespace {

using namespace gantry::data;

const char* kImages = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
const char* kLabels = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";

DatasetPtr fashion_mnist() {
  static DatasetPtr ds =
      std::filesystem::exists(kImages) ? load_idx_dataset(kImages, kLabels) : nullptr;
  return ds;
}

Transform dcgan_preprocess(uint64_t seed) {
  return transforms::compose({transforms::scale_to_signed_unit(),
                              transforms::random_horizontal_flip(seed), transforms::pad(2, -1.0f)});
}

// Args: num_parallel_calls, prefetch buffer (0 = none).
void BM_FashionMnistInput(benchmark::State& state) {
  auto ds = fashion_mnist();
  if (!ds) {
    state.SkipWithError("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
    return;
  }
  const int workers = static_cast<int>(state.range(0));
  const int64_t prefetch = state.range(1);
  Pipeline p = Pipeline(ds)
                   .shuffle(ds->size(), 1)
                   .repeat()
                   .map(dcgan_preprocess(2), workers)
                   .batch(64, true);
  if (prefetch > 0) p = p.prefetch(prefetch);
  Iterator it = p.make_iterator();
  for (auto _ : state) {
    auto batch = it.next();
    benchmark::DoNotOptimize(batch->images.raw_data());
  }
  state.counters["images/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 64), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FashionMnistInput)
    ->ArgNames({"workers", "prefetch"})
    ->Args({1, 0})
    ->Args({1, 2})
    ->Args({2, 2})
    ->Args({4, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// The order stages alone: shuffle + repeat + batch of raw u8 examples, no map.
void BM_FashionMnistNoMap(benchmark::State& state) {
  auto ds = fashion_mnist();
  if (!ds) {
    state.SkipWithError("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
    return;
  }
  Iterator it = Pipeline(ds).shuffle(ds->size(), 1).repeat().batch(64, true).make_iterator();
  for (auto _ : state) {
    auto batch = it.next();
    benchmark::DoNotOptimize(batch->images.raw_data());
  }
  state.counters["images/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 64), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FashionMnistNoMap)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Restoring an iterator mid-epoch (replays the shuffle draws of the epoch).
void BM_RestoreMidEpoch(benchmark::State& state) {
  auto ds = fashion_mnist();
  if (!ds) {
    state.SkipWithError("Fashion-MNIST not installed (Debian package dataset-fashion-mnist)");
    return;
  }
  Pipeline p = Pipeline(ds).shuffle(ds->size(), 1).repeat().batch(64, true);
  Iterator it = p.make_iterator();
  for (int i = 0; i < 900; ++i) it.next();  // 57600 examples into epoch 0
  State saved = it.state();
  for (auto _ : state) {
    Iterator resumed = p.make_iterator(saved);
    benchmark::DoNotOptimize(&resumed);
  }
}
BENCHMARK(BM_RestoreMidEpoch)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
