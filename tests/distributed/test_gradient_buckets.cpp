// The bucket plan and the launch schedule of distribute/gradient_reducer.h: buckets in reverse
// parameter order under the cap, started as soon as they are complete but strictly in order
// whatever order gradients become ready in, unused parameters as zeros at the end of backward,
// and the device-neutral non-finite check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/ops/ops.h"
#include "distribute/gradient_reducer.h"

namespace gantry::distribute {
namespace {

TEST(GradientBuckets, ReverseParameterOrderUnderTheCap) {
  // 4 f32 = 16 bytes each, except parameter 2 (40 bytes, over the cap of 32: a bucket of its own)
  BucketPlan plan = plan_gradient_buckets({4, 4, 10, 4, 4}, 32);
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(plan.buckets[0].params, (std::vector<size_t>{4, 3}));
  EXPECT_EQ(plan.buckets[1].params, (std::vector<size_t>{2}));
  EXPECT_EQ(plan.buckets[2].params, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(plan.offset, (std::vector<size_t>{22, 18, 8, 4, 0}));
  EXPECT_EQ(plan.bucket_of, (std::vector<size_t>{2, 2, 1, 0, 0}));
  EXPECT_EQ(plan.buckets[0].begin, 0u);
  EXPECT_EQ(plan.buckets[0].end, 8u);
  EXPECT_EQ(plan.buckets[1].end, 18u);
  EXPECT_EQ(plan.buckets[2].end, 26u);
  EXPECT_EQ(plan.numel, 26u);
  // the default cap (25 MiB) holds a small network in one bucket
  EXPECT_EQ(plan_gradient_buckets({4, 4, 10, 4, 4}, kDefaultGradientBucketBytes).buckets.size(), 1u);
  // one byte: one bucket per parameter; an empty parameter list: none
  EXPECT_EQ(plan_gradient_buckets({4, 4, 10, 4, 4}, 1).buckets.size(), 5u);
  EXPECT_TRUE(plan_gradient_buckets({}, 32).buckets.empty());
  EXPECT_THROW(plan_gradient_buckets({4}, 0), Error);
}

TEST(GradientBuckets, TheDefaultCapComesFromTheEnvironment) {
  ASSERT_EQ(setenv("GANTRY_GRADIENT_BUCKET_MB", "0.25", 1), 0);
  EXPECT_EQ(default_gradient_bucket_bytes(), size_t{1} << 18);
  ASSERT_EQ(setenv("GANTRY_GRADIENT_BUCKET_MB", "1MB", 1), 0);
  try {
    default_gradient_bucket_bytes();
    ADD_FAILURE() << "a malformed cap was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GANTRY_GRADIENT_BUCKET_MB: expected a positive number of MiB"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("found '1MB'"), std::string::npos) << e.what();
  }
  ASSERT_EQ(setenv("GANTRY_GRADIENT_BUCKET_MB", "0", 1), 0);
  EXPECT_THROW(default_gradient_bucket_bytes(), Error);
  ASSERT_EQ(unsetenv("GANTRY_GRADIENT_BUCKET_MB"), 0);
  EXPECT_EQ(default_gradient_bucket_bytes(), kDefaultGradientBucketBytes);
}

// Rank 1 of 2 whose all-reduce adds 100 (the other rank's contribution) and which records what
// every start saw, so a test can follow the schedule.
class RecordingCommunicator final : public Communicator {
 public:
  int rank() const override { return 1; }
  int size() const override { return 2; }
  std::string name() const override { return "recording"; }
  void all_reduce(std::span<float> data, ReduceKind) override {
    started.emplace_back(data.begin(), data.end());
    for (float& v : data) v += 100.f;
  }
  void all_reduce(std::span<int64_t>, ReduceKind) override {}
  void broadcast(std::span<float>, int) override {}
  void broadcast(std::span<std::byte>, int) override {}
  void all_gather(std::span<const float>, std::span<float>) override {}
  void all_gather(std::span<const std::byte>, std::span<std::byte>) override {}
  void barrier() override {}
  std::vector<std::vector<float>> started;  // the bucket contents at each start, in order
};

std::vector<Tensor> params_of(const std::vector<int64_t>& sizes) {
  std::vector<Tensor> p;
  for (int64_t n : sizes) p.push_back(ops::zeros({n}));
  return p;
}

Tensor filled(int64_t n, float v) { return ops::full({n}, v); }

TEST(GradientReducer, StartsBucketsInOrderAsSoonAsTheyAreComplete) {
  // buckets: {4, 3}, {2}, {1, 0}
  std::vector<Tensor> params = params_of({4, 4, 10, 4, 4});
  GradientReducer reducer(params, Device::cpu(), 32);
  ASSERT_EQ(reducer.plan().buckets.size(), 3u);
  RecordingCommunicator comm;
  reducer.begin(comm);
  std::vector<Tensor> grads(5);
  auto ready = [&](size_t i, float v) {
    grads[i] = filled(params[i].numel(), v);
    reducer.mark_ready(i, grads[i]);
  };
  ready(2, 2.f);  // bucket 1 is complete, but bucket 0 is not started yet: nothing starts
  EXPECT_EQ(reducer.started_buckets(), 0u);
  ready(4, 4.f);
  EXPECT_EQ(reducer.started_buckets(), 0u);
  ready(3, 3.f);  // bucket 0 completes: it starts, then bucket 1 right after it
  EXPECT_EQ(reducer.started_buckets(), 2u);
  ready(1, 1.f);  // parameter 0 is unused: bucket 2 waits for the end of backward
  EXPECT_EQ(reducer.started_buckets(), 2u);
  EXPECT_THROW(reducer.mark_ready(1, grads[1]), Error);  // reported twice
  reducer.finish_backward();
  EXPECT_EQ(reducer.started_buckets(), 3u);
  ASSERT_EQ(comm.started.size(), 3u);
  EXPECT_EQ(comm.started[0], (std::vector<float>{4, 4, 4, 4, 3, 3, 3, 3}));  // params 4 then 3
  EXPECT_EQ(comm.started[1], std::vector<float>(10, 2.f));
  EXPECT_EQ(comm.started[2], (std::vector<float>{1, 1, 1, 1, 0, 0, 0, 0}));  // unused: zeros
  EXPECT_TRUE(reducer.wait());
  const std::vector<Tensor>& sums = reducer.gradients();  // views into the flat buffer
  ASSERT_EQ(sums.size(), params.size());
  for (size_t i = 0; i < sums.size(); ++i) {
    ASSERT_TRUE(sums[i].defined()) << i;
    EXPECT_EQ(sums[i].to_vector(), std::vector<float>(params[i].numel(), 100.f + static_cast<float>(i))) << i;
  }
  EXPECT_FALSE(reducer.active());
  reducer.scale_gradients(0.5f);  // in place, on the flat buffer the views share
  EXPECT_EQ(sums[3].to_vector(), std::vector<float>(4, 51.5f));
}

TEST(GradientReducer, AnEmptyBackwardStartsEveryBucketWithZeros) {
  std::vector<Tensor> params = params_of({4, 4, 10});
  GradientReducer reducer(params, Device::cpu(), 32);
  RecordingCommunicator comm;
  reducer.begin(comm);
  reducer.finish_backward();
  ASSERT_EQ(comm.started.size(), reducer.plan().buckets.size());
  for (const auto& b : comm.started) EXPECT_EQ(b, std::vector<float>(b.size(), 0.f));
  EXPECT_TRUE(reducer.wait());
  EXPECT_EQ(reducer.gradients()[2].to_vector(), std::vector<float>(10, 100.f));
}

TEST(GradientReducer, ReportsUseOutsideAReductionAndWrongGradients) {
  std::vector<Tensor> params = params_of({4, 4});
  GradientReducer reducer(params, Device::cpu(), 32);
  EXPECT_THROW(reducer.mark_ready(0, filled(4, 1.f)), Error);  // before begin
  RecordingCommunicator comm;
  reducer.begin(comm);
  EXPECT_THROW(reducer.mark_ready(2, filled(4, 1.f)), Error);  // no such parameter
  EXPECT_THROW(reducer.mark_ready(0, filled(5, 1.f)), Error);  // wrong shape
  EXPECT_THROW(reducer.wait(), Error);  // buckets never started
  EXPECT_THROW(reducer.wait(), Error);  // the failed wait ended the reduction
  // a new begin drops what a failed step left behind
  reducer.begin(comm);
  reducer.finish_backward();
  EXPECT_TRUE(reducer.wait());
}

TEST(GradientReducer, NonFiniteSumsAreReported) {
  std::vector<Tensor> params = params_of({4, 4});
  GradientReducer reducer(params, Device::cpu(), 16);
  RecordingCommunicator comm;
  reducer.begin(comm);
  reducer.mark_ready(1, filled(4, std::nanf("")));
  reducer.finish_backward();
  EXPECT_FALSE(reducer.wait());
  EXPECT_TRUE(all_finite({filled(3, 1.f), Tensor(), filled(2, -5.f)}));
  EXPECT_FALSE(all_finite({filled(3, 1.f), filled(2, INFINITY)}));
  EXPECT_FALSE(all_finite({filled(2, -INFINITY)}));
  EXPECT_TRUE(all_finite({}));
}

TEST(GradientReducer, BackwardComputesAndSumsTheGradientsOfALoss) {
  // loss = sum(w0 * x) + 3 sum(w2): w1 is unused, so it counts zero
  std::vector<Tensor> params = params_of({4, 4, 2});
  for (Tensor& p : params) p.set_requires_grad(true);
  const Tensor x = ops::from_vector(std::vector<float>{1.f, 2.f, 3.f, 4.f}, Shape{4});
  const Tensor loss = ops::add(ops::sum(ops::mul(params[0], x)), ops::mul(ops::sum(params[2]), 3.f));
  GradientReducer reducer(params, Device::cpu(), 16);
  RecordingCommunicator comm;
  ReplicaContext ctx;
  ctx.device = Device::cpu();
  ctx.communicator = &comm;
  ctx.num_replicas = comm.size();
  reducer.backward(loss, ctx);
  EXPECT_EQ(comm.started.size(), reducer.plan().buckets.size());
  ASSERT_TRUE(reducer.wait());
  EXPECT_EQ(reducer.gradients()[0].to_vector(), (std::vector<float>{101, 102, 103, 104}));
  EXPECT_EQ(reducer.gradients()[1].to_vector(), std::vector<float>(4, 100.f));
  EXPECT_EQ(reducer.gradients()[2].to_vector(), std::vector<float>(2, 103.f));
  reducer.backward(Tensor(), ctx);  // an empty shard: zeros go into every bucket
  ASSERT_TRUE(reducer.wait());
  EXPECT_EQ(reducer.gradients()[0].to_vector(), std::vector<float>(4, 100.f));
}

}  // namespace
}  // namespace gantry::distribute
