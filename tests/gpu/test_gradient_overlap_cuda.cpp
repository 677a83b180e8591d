// Gradient buckets started during backward on GPUs (Note [gradient overlap], Note [nccl async]):
// the reducer over an NCCL pair sums out-of-order buckets correctly with the compute stream
// waiting on completion events; 2-GPU training with one bucket per parameter or two equals
// 2-GPU training with one bucket bit for bit (two ranks: a + b = b + a in every NCCL order)
// and follows 1-GPU training; a NaN gradient on one GPU skips the update on both; host spans
// (the estimator's loss reductions) go through NCCL. Skipped without 2 GPUs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "core/ops/ops.h"
#include "distribute/gradient_reducer.h"
#include "distribute/nccl/nccl_group.h"
#include "distribute/strategy.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "gpu_test_support.h"
#include "rank_threads.h"
#include "support/tiny_gan.h"

namespace gantry::gputest {
namespace {

using namespace std::chrono_literals;
using testing::max_relative_difference;

constexpr size_t kSmallCap = 256;  // the tiny DCGAN: D 3-4 buckets, G 2-3
constexpr size_t kOneBucket = std::numeric_limits<size_t>::max();

TEST(GradientOverlapCuda, ReducerSumsOutOfOrderBucketsOnTheComputeStream) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  auto comms = distribute::make_nccl_group({Device::cuda(0), Device::cuda(1)}, 60s);
  const std::vector<int64_t> sizes{4, 4, 10, 4, 4};  // buckets {4, 3}, {2}, {1, 0} at 32 bytes
  std::vector<std::vector<std::vector<float>>> got(2);
  run_ranks(2, [&](int r) {
    const Device d = Device::cuda(r);
    std::vector<Tensor> params;
    for (int64_t n : sizes) params.push_back(ops::zeros({n}, d));
    distribute::GradientReducer reducer(params, d, 32);
    std::vector<Tensor> grads(sizes.size());
    for (int step = 0; step < 3; ++step) {  // the buffer and events are reused
      reducer.begin(*comms[r]);
      for (size_t i : {2u, 4u, 3u, 1u}) {  // parameter 0 unused
        grads[i] = ops::full({sizes[i]}, 10.0 * r + static_cast<double>(i) + step, d);
        reducer.mark_ready(i, grads[i]);
      }
      reducer.finish_backward();
      ASSERT_TRUE(reducer.wait());
    }
    for (const Tensor& g : reducer.gradients()) got[r].push_back(g.to_vector());
  });
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < sizes.size(); ++i) {
      const float want = i == 0 ? 0.f : 10.f + 2.f * (static_cast<float>(i) + 2.f);  // step 2
      EXPECT_EQ(got[r][i], std::vector<float>(sizes[i], want)) << "rank " << r << " parameter " << i;
    }
}

// The estimator's per-step host reductions (losses, stop flags) go through NCCL on GPUs.
TEST(GradientOverlapCuda, HostSpansAreReducedThroughTheDevice) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  auto comms = distribute::make_nccl_group({Device::cuda(0), Device::cuda(1)}, 60s);
  std::vector<std::vector<float>> sums(2), gathered(2), broadcast(2);
  run_ranks(2, [&](int r) {
    std::vector<float> v{1.f + r, 10.f * r};
    comms[r]->all_reduce(v, distribute::ReduceKind::Sum);
    sums[r] = v;
    std::vector<float> mine{static_cast<float>(r)}, all(2, -1.f);
    comms[r]->all_gather(mine, all);
    gathered[r] = all;
    std::vector<float> b{r == 1 ? 7.f : 0.f};
    comms[r]->broadcast(b, 1);
    broadcast[r] = b;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(sums[r], (std::vector<float>{3.f, 10.f})) << r;
    EXPECT_EQ(gathered[r], (std::vector<float>{0.f, 1.f})) << r;
    EXPECT_EQ(broadcast[r], (std::vector<float>{7.f})) << r;
  }
}

std::vector<float> train_tiny(const gan::GanSpec& spec, std::vector<Device> devices, size_t cap, int64_t batch) {
  std::shared_ptr<distribute::Strategy> strategy = distribute::make_mirrored_strategy(devices, 60s);
  strategy->set_gradient_bucket_bytes(cap);
  gan::GanEstimator est(spec, strategy, 11);
  est.train(testing::blobs(batch), 6);
  if (devices.size() > 1) {
    EXPECT_GE(est.replica(0).discriminator.reducer->plan().buckets.size(), cap == kSmallCap ? 3u : 1u);
  }
  return testing::flat_gan_state(est);
}

void expect_overlap_equivalent(const gan::GanSpec& spec, int64_t batch) {
  const std::vector<Device> two{Device::cuda(0), Device::cuda(1)};
  std::vector<float> many = train_tiny(spec, two, kSmallCap, batch);
  std::vector<float> one = train_tiny(spec, two, kOneBucket, batch);
  std::vector<float> single = train_tiny(spec, {Device::cuda(0)}, kSmallCap, batch);
  ASSERT_FALSE(many.empty());
  EXPECT_TRUE(many == one) << "2 GPUs: small buckets differ from one bucket by "
                           << max_relative_difference(many, one);
  EXPECT_LT(max_relative_difference(many, single), 1e-4) << "2 GPUs against 1";  // Note [equivalence tolerance]
}

TEST(GradientOverlapCuda, MultiBucketTwoGpuTrainingEqualsOneBucketAndOneGpu) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  expect_overlap_equivalent(testing::tiny_dcgan(false), 12);
}

TEST(GradientOverlapCuda, WithSyncBatchNormAndGradientPenalty) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  gan::GanSpec spec = testing::tiny_dcgan(true);
  spec.sync_batch_norm = true;
  spec.terms.push_back(gan::make_wgan_gp_term(10.f));
  expect_overlap_equivalent(spec, 12);
}

TEST(GradientOverlapCuda, ANonFiniteGradientOnOneGpuSkipsTheUpdateOnBoth) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  std::shared_ptr<distribute::Strategy> strategy =
      distribute::make_mirrored_strategy({Device::cuda(0), Device::cuda(1)}, 60s);
  strategy->set_gradient_bucket_bytes(kSmallCap);
  gan::GanEstimator est(testing::tiny_dcgan(false), strategy, 9);
  auto d_params = [&](int r) {
    std::vector<float> v;
    for (const Tensor& p : est.replica(r).discriminator.params) {
      auto x = p.to_vector();
      v.insert(v.end(), x.begin(), x.end());
    }
    return v;
  };
  const std::vector<float> before = d_params(0);
  auto half_nan = [] {  // rows 3..5 (replica 1's shard) are NaN
    data::Batch b = testing::blob_batch(6, 0);
    std::vector<float> v = b.images.to_vector();
    for (size_t i = v.size() / 2; i < v.size(); ++i) v[i] = std::nanf("");
    b.images = ops::from_vector(v, b.images.shape());
    return b;
  };
  est.train(half_nan, 1);
  EXPECT_TRUE(d_params(0) == before);
  EXPECT_TRUE(d_params(1) == before);
}

}  // namespace
}  // namespace gantry::gputest
