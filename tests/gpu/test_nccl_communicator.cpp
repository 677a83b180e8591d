// The NCCL communicator (distribute/nccl/): host-side bookkeeping (always runs), collectives
// against closed-form results on every visible GPU, the watchdog, and ReplicaContext's device
// buckets. Tests that need devices skip with the reason.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "distribute/in_process_communicator.h"
#include "distribute/nccl/device_group.h"
#include "distribute/nccl/nccl_communicator.h"
#include "distribute/nccl/nccl_group.h"
#include "distribute/strategy.h"
#include "gpu_test_support.h"
#include "rank_threads.h"
#include "support/collective_checks.h"

namespace gantry::gputest {
namespace {

using distribute::Communicator;
using distribute::ReduceKind;
using CommList = std::vector<std::unique_ptr<Communicator>>;
using namespace std::chrono_literals;

std::vector<Device> all_devices() {
  std::vector<Device> devices;
  for (int d = 0; d < cuda::device_count_or_zero(); ++d) devices.push_back(Device::cuda(d));
  return devices;
}

// A device buffer of rank r's values and its span.
struct DeviceBuffer {
  Tensor t;
  std::span<float> span() const { return {static_cast<float*>(t.raw_data()), size_t(t.numel())}; }
};
DeviceBuffer upload(const std::vector<float>& v, int device) {
  return {ops::from_vector(v, Shape{static_cast<int64_t>(v.size())}, Device::cuda(device))};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// ---- host-side bookkeeping: no device needed

TEST(NcclBookkeeping, RanksAreNumberedProcessByProcess) {
  const std::vector<int> counts = {2, 1, 3};
  auto l0 = distribute::detail::layout_ranks(counts, 0);
  auto l1 = distribute::detail::layout_ranks(counts, 1);
  auto l2 = distribute::detail::layout_ranks(counts, 2);
  EXPECT_EQ(l0.first_rank, 0);
  EXPECT_EQ(l1.first_rank, 2);
  EXPECT_EQ(l2.first_rank, 3);
  EXPECT_EQ(l0.world_size, 6);
  EXPECT_EQ(l2.world_size, 6);
  EXPECT_THROW(distribute::detail::layout_ranks(counts, 3), Error);
  const std::vector<int> with_empty = {2, 0};
  std::string msg = error_of([&] { distribute::detail::layout_ranks(with_empty, 0); });
  EXPECT_NE(msg.find("at least one CUDA device"), std::string::npos) << msg;
}

TEST(NcclBookkeeping, RejectsBadDeviceLists) {
  using distribute::detail::check_nccl_devices;
  EXPECT_NE(error_of([] { check_nccl_devices({}); }).find("at least one"), std::string::npos);
  EXPECT_NE(error_of([] { check_nccl_devices({Device::cpu(0)}); }).find("found cpu:0"),
            std::string::npos);
  const int n = cuda::device_count_or_zero();
  std::string msg = error_of([&] { check_nccl_devices({Device::cuda(n)}); });
  EXPECT_NE(msg.find("cuda:" + std::to_string(n)), std::string::npos) << msg;
  if (n >= 1) {
    msg = error_of([] { check_nccl_devices({Device::cuda(0), Device::cuda(0)}); });
    EXPECT_NE(msg.find("listed twice"), std::string::npos) << msg;
  }
  // the factories validate before touching NCCL
  EXPECT_THROW(distribute::make_nccl_group({Device::cuda(n)}), Error);
  EXPECT_THROW(distribute::make_device_group({Device::cuda(n)}, 1s), Error);
}

// ---- collectives on real devices

class NcclCollectives : public ::testing::Test {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(2); }
};

TEST_F(NcclCollectives, AllReduceSumMeanAndMaxOnEveryGpu) {
  const std::vector<Device> devices = all_devices();
  const int n = static_cast<int>(devices.size());
  CommList comms = distribute::make_nccl_group(devices, 60s);
  ASSERT_EQ(static_cast<int>(comms.size()), n);
  const int len = 1000;
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max}) {
    std::vector<std::vector<float>> got(n);
    run_ranks(n, [&](int r) {
      EXPECT_EQ(comms[r]->rank(), r);
      EXPECT_EQ(comms[r]->size(), n);
      std::vector<float> mine(len);
      for (int i = 0; i < len; ++i) mine[i] = static_cast<float>(r + 1) + 0.5f * i;  // exact
      DeviceBuffer buf = upload(mine, r);
      comms[r]->all_reduce(buf.span(), kind);
      got[r] = buf.t.to_vector();
    });
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i < len; ++i) {
        const float sum = static_cast<float>(n * (n + 1) / 2) + 0.5f * i * n;
        const float want = kind == ReduceKind::Sum ? sum
                           : kind == ReduceKind::Mean ? sum / n
                                                      : static_cast<float>(n) + 0.5f * i;
        ASSERT_NEAR(got[r][i], want, 1e-6f * std::fabs(want))
            << "rank " << r << " element " << i << " kind " << static_cast<int>(kind);
      }
      EXPECT_EQ(got[r], got[0]) << "every rank ends with the same bits";
    }
  }
}

TEST_F(NcclCollectives, BroadcastAllGatherAndBarrier) {
  const std::vector<Device> devices = all_devices();
  const int n = static_cast<int>(devices.size());
  CommList comms = distribute::make_nccl_group(devices, 60s);
  const int len = 37, root = n - 1;
  run_ranks(n, [&](int r) {
    std::vector<float> mine(len);
    for (int i = 0; i < len; ++i) mine[i] = 100.f * r + i;
    DeviceBuffer data = upload(mine, r);
    comms[r]->broadcast(data.span(), root);
    std::vector<float> got = data.t.to_vector();
    for (int i = 0; i < len; ++i) ASSERT_EQ(got[i], 100.f * root + i) << "rank " << r;

    DeviceBuffer in = upload(mine, r);
    DeviceBuffer out = upload(std::vector<float>(size_t(len) * n, NAN), r);
    comms[r]->all_gather(in.span(), out.span());
    std::vector<float> all = out.t.to_vector();
    for (int q = 0; q < n; ++q)
      for (int i = 0; i < len; ++i) ASSERT_EQ(all[q * len + i], 100.f * q + i) << "rank " << r;
    comms[r]->barrier();
  });
}

// Note [typed collectives] through host spans (staged, Note [host spans]): int64 reductions
// with ncclInt64, bytes with ncclUint8, and broadcast_blob.
TEST_F(NcclCollectives, TypedCollectivesOnHostSpans) {
  const std::vector<Device> devices = all_devices();
  const int n = static_cast<int>(devices.size());
  CommList comms = distribute::make_nccl_group(devices, 60s);
  run_ranks(n, [&](int r) { EXPECT_EQ(gantry::testing::check_typed_collectives(*comms[r]), "") << "rank " << r; });
}

TEST_F(NcclCollectives, ProcessesExchangeTheIdOverTheirCommunicator) {
  // Two "processes" as threads, one GPU each, with an in-process CPU communicator standing in
  // for MPI: the multi-process path of make_nccl_group end to end.
  auto processes = distribute::InProcessCommunicator::create_group(2, 60s);
  run_ranks(2, [&](int p) {
    CommList mine = distribute::make_nccl_group({Device::cuda(p)}, *processes[p], 60s);
    ASSERT_EQ(mine.size(), 1u);
    EXPECT_EQ(mine[0]->rank(), p);
    EXPECT_EQ(mine[0]->size(), 2);
    DeviceBuffer buf = upload({1.f + p, 10.f * (p + 1)}, p);
    mine[0]->all_reduce(buf.span(), ReduceKind::Sum);
    EXPECT_EQ(buf.t.to_vector(), (std::vector<float>{3.f, 30.f}));
  });
}

TEST_F(NcclCollectives, AMissingRankTimesOutWithTheCollectiveRankAndTimeout) {
  CommList comms = distribute::make_nccl_group({Device::cuda(0), Device::cuda(1)}, 300ms);
  DeviceBuffer buf = upload({1.f, 2.f}, 0);
  auto start = std::chrono::steady_clock::now();
  std::string msg = error_of([&] { comms[0]->all_reduce(buf.span(), ReduceKind::Sum); });
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_NE(msg.find("all_reduce"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("300 ms"), std::string::npos) << msg;
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 30s);
  // the group is aborted: rank 1 refuses at once instead of waiting
  DeviceBuffer other = upload({1.f, 2.f}, 1);
  EXPECT_NE(error_of([&] { comms[1]->all_reduce(other.span(), ReduceKind::Sum); }).find("aborted"),
            std::string::npos);
}

TEST_F(NcclCollectives, AbortReleasesTheOtherRanksAtOnce) {
  CommList comms = distribute::make_nccl_group({Device::cuda(0), Device::cuda(1)}, 120s);
  auto* rank1 = static_cast<distribute::NcclCommunicator*>(comms[1].get());
  std::string msg;
  auto start = std::chrono::steady_clock::now();
  run_ranks(2, [&](int r) {
    if (r == 1) {
      std::this_thread::sleep_for(200ms);
      rank1->abort();  // as the strategy does after a failure on this replica
      return;
    }
    DeviceBuffer buf = upload({1.f}, 0);
    msg = error_of([&] { comms[0]->all_reduce(buf.span(), ReduceKind::Sum); });
  });
  EXPECT_NE(msg.find("another rank of this process failed"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

// ---- one device is enough for these

class NcclOneDevice : public ::testing::Test {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }
};

// Host spans are staged through the device (Note [host spans]); the asynchronous all-reduce of
// gradient buckets takes device memory only.
TEST_F(NcclOneDevice, OneRankIsTheIdentityAndHostMemoryIsStagedOrRefused) {
  CommList comms = distribute::make_nccl_group({Device::cuda(0)}, 60s);
  DeviceBuffer buf = upload({1.5f, -2.f}, 0);
  comms[0]->all_reduce(buf.span(), ReduceKind::Sum);
  EXPECT_EQ(buf.t.to_vector(), (std::vector<float>{1.5f, -2.f}));
  std::vector<float> host = {1.f, 3.f};
  comms[0]->all_reduce(host, ReduceKind::Sum);
  EXPECT_EQ(host, (std::vector<float>{1.f, 3.f}));
  std::string msg = error_of([&] { comms[0]->start_all_reduce(host, ReduceKind::Sum); });
  EXPECT_NE(msg.find("host memory"), std::string::npos) << msg;
}

TEST_F(NcclOneDevice, DeviceBucketsNeedADeviceCommunicator) {
  auto comms = distribute::InProcessCommunicator::create_group(2);
  distribute::ReplicaContext ctx{0, 0, 2, Device::cuda(0), comms[0].get()};
  Tensor t = ops::ones(Shape{3}, Device::cuda(0));
  std::string msg = error_of([&] { ctx.all_reduce_sum({t}); });
  EXPECT_NE(msg.find("need a device communicator (nccl)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("in_process"), std::string::npos) << msg;
}

// ---- ReplicaContext's device buckets through NCCL

TEST_F(NcclCollectives, ReplicaBucketsSumAndBroadcastDeviceTensors) {
  CommList comms = distribute::make_nccl_group({Device::cuda(0), Device::cuda(1)}, 60s);
  run_ranks(2, [&](int r) {
    distribute::ReplicaContext ctx{r, r, 2, Device::cuda(r), comms[r].get()};
    Tensor a = ops::full(Shape{2, 3}, 1.0 + r, Device::cuda(r));
    Tensor b = ops::arange(0, 5, 1, Device::cuda(r)) * static_cast<float>(r + 1);
    ctx.all_reduce_sum({a, b});
    EXPECT_EQ(a.to_vector(), std::vector<float>(6, 3.f));
    EXPECT_EQ(b.to_vector(), (std::vector<float>{0.f, 3.f, 6.f, 9.f, 12.f}));
    Tensor c = ops::full(Shape{4}, 5.0 + r, Device::cuda(r));
    ctx.broadcast_from_first({c});  // a smaller list reuses the grown bucket
    EXPECT_EQ(c.to_vector(), std::vector<float>(4, 5.f));
  });
}

}  // namespace
}  // namespace gantry::gputest
