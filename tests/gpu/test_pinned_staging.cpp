// Pinned staging (backend/cuda/pinned_staging.h): slot bookkeeping on the host (always runs)
// and uploads on a real device (skipped without one).
#include <gtest/gtest.h>

#include <vector>

#include "backend/cuda/pinned_staging.h"
#include "core/ops/ops.h"
#include "gpu_test_support.h"

namespace gantry::gputest {
namespace {

using cuda::StagingItem;
using cuda::StagingSlots;
using cuda::StagingTicket;

TEST(StagingSlots, HandsOutSlotsRoundRobinWithFreshGenerations) {
  StagingSlots slots(2);
  StagingTicket a = slots.next(), b = slots.next();
  EXPECT_EQ(a.slot, 0);
  EXPECT_EQ(b.slot, 1);
  EXPECT_NE(a.generation, b.generation);
  EXPECT_TRUE(slots.current(a));
  EXPECT_TRUE(slots.current(b));
  StagingTicket c = slots.next();  // reuses slot 0: a is no longer what it holds
  EXPECT_EQ(c.slot, 0);
  EXPECT_FALSE(slots.current(a));
  EXPECT_TRUE(slots.current(b));
  EXPECT_TRUE(slots.current(c));
  EXPECT_THROW(slots.current(StagingTicket{2, 1}), Error);
  EXPECT_THROW(StagingSlots(0), Error);
}

TEST(StagingSlots, LayoutAlignsEveryItem) {
  const StagingItem items[] = {{nullptr, View{nullptr, Shape{3}, DType::F32, Device::cuda(0)}},
                               {nullptr, View{nullptr, Shape{2, 300}, DType::U8, Device::cuda(0)}},
                               {nullptr, View{nullptr, Shape{0}, DType::I64, Device::cuda(0)}}};
  EXPECT_EQ(cuda::staging_bytes(items[0]), 12u);
  EXPECT_EQ(cuda::staging_bytes(items[1]), 600u);
  EXPECT_EQ(cuda::staging_layout_bytes(items, 256), 256u + 768u);
}

class PinnedStaging : public ::testing::Test {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }
};

TEST_F(PinnedStaging, UploadsBatchesThatComputeThenSees) {
  cuda::PinnedStager stager(0, 2);
  std::vector<Tensor> uploaded;
  std::vector<StagingTicket> tickets;
  for (int batch = 0; batch < 5; ++batch) {  // more batches than slots: slots are reused
    std::vector<float> images = uniform_values(2 * 3 * 4, 40 + batch);
    std::vector<int64_t> labels = {batch, batch + 1};
    Tensor img = Tensor::empty(Shape{2, 3, 4}, DType::F32, Device::cuda(0));
    Tensor lab = Tensor::empty(Shape{2}, DType::I64, Device::cuda(0));
    const StagingItem items[] = {{images.data(), img.view()}, {labels.data(), lab.view()}};
    tickets.push_back(stager.stage(items));
    images.assign(images.size(), -1.f);  // the host memory may be reused at once
    stager.wait_on_compute(tickets.back());
    Tensor doubled = img * 2.f;  // compute work ordered after the upload
    std::vector<float> want = uniform_values(2 * 3 * 4, 40 + batch);
    std::vector<float> got = doubled.to_vector();
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], 2.f * want[i]) << batch;
    EXPECT_EQ(lab.to_vector(), (std::vector<float>{float(batch), float(batch + 1)}));
    uploaded.push_back(img);
  }
  for (const StagingTicket& t : tickets) EXPECT_TRUE(stager.done(t));
  EXPECT_GE(stager.pinned_bytes(), 2u * (256u + 256u));
}

TEST_F(PinnedStaging, DroppingABatchBeforeWaitingIsSafe) {
  cuda::PinnedStager stager(0, 2);
  std::vector<float> big(1 << 20, 3.f);
  {
    Tensor dst = Tensor::empty(Shape{1 << 20}, DType::F32, Device::cuda(0));
    const StagingItem items[] = {{big.data(), dst.view()}};
    stager.stage(items);
  }  // freed while the upload may run: record_stream keeps the block from reuse until done
  Tensor other = ops::full(Shape{1 << 20}, 7.0, Device::cuda(0));
  std::vector<float> got = other.to_vector();
  EXPECT_EQ(got.front(), 7.f);
  EXPECT_EQ(got.back(), 7.f);
  Tensor cpu = Tensor::empty(Shape{4});
  const StagingItem wrong[] = {{big.data(), cpu.view()}};
  EXPECT_THROW(stager.stage(wrong), Error);
}

}  // namespace
}  // namespace gantry::gputest
