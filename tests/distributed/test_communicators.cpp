// Sharding and the in-process communicator against closed-form results; timeouts; strategies.
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <thread>

#include "core/ops/ops.h"
#include "distribute/in_process_communicator.h"
#include "distribute/sharding.h"
#include "distribute/strategy.h"
#include "distribute/text_gather.h"
#include "support/collective_checks.h"

namespace gantry::distribute {
namespace {

TEST(Sharding, SizesDisjointAndCovering) {
  for (int64_t batch : {0, 1, 2, 3, 7, 15, 16, 64, 65, 127}) {
    for (int replicas : {1, 2, 3, 4, 8, 16}) {
      auto shards = shard_batch(batch, replicas);
      ASSERT_EQ(static_cast<int>(shards.size()), replicas);
      int64_t next = 0, lo = batch, hi = 0;
      for (const Shard& s : shards) {
        EXPECT_EQ(s.begin, next) << batch << "/" << replicas;  // contiguous, disjoint
        next += s.size;
        lo = std::min(lo, s.size);
        hi = std::max(hi, s.size);
      }
      EXPECT_EQ(next, batch);  // covering
      EXPECT_LE(hi - lo, 1);
    }
  }
  auto s = shard_batch(15, 2);
  EXPECT_EQ(s[0].size, 7);
  EXPECT_EQ(s[1].size, 8);
  auto tiny = shard_batch(1, 3);  // batch < replicas: empty shards
  EXPECT_EQ(tiny[0].size + tiny[1].size, 0);
  EXPECT_EQ(tiny[2].size, 1);
}

// Runs fn(rank, comm) on `size` threads.
void on_ranks(int size, const std::function<void(int, Communicator&)>& fn,
              std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto comms = InProcessCommunicator::create_group(size, timeout);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back([&, r] { fn(r, *comms[r]); });
  for (auto& t : threads) t.join();
}

TEST(InProcessCommunicator, ClosedForms) {
  for (int size : {1, 2, 3, 4})
    on_ranks(size, [&](int r, Communicator& c) { EXPECT_EQ(testing::check_collectives(c), "") << "rank " << r << " of " << size; });
}

TEST(InProcessCommunicator, TypedCollectives) {
  for (int size : {1, 2, 3, 4})
    on_ranks(size, [&](int r, Communicator& c) {
      EXPECT_EQ(testing::check_typed_collectives(c), "") << "rank " << r << " of " << size;
    });
}

TEST(InProcessCommunicator, BroadcastAndAllGather) {
  on_ranks(3, [](int r, Communicator& c) {
    std::vector<float> v(5, static_cast<float>(r));
    c.broadcast(v, 2);
    for (float x : v) EXPECT_EQ(x, 2.f);
    std::vector<float> in{static_cast<float>(r), static_cast<float>(10 * r)}, out(6);
    c.all_gather(in, out);
    EXPECT_EQ(out, (std::vector<float>{0, 0, 1, 10, 2, 20}));
    c.barrier();
  });
}

TEST(InProcessCommunicator, MismatchedLengthsAreAnError) {
  std::atomic<int> errors{0};
  on_ranks(2, [&](int r, Communicator& c) {
    std::vector<float> v(r == 0 ? 3 : 4);
    try {
      c.all_reduce(v, ReduceKind::Sum);
    } catch (const Error&) {
      errors++;
    }
  });
  EXPECT_EQ(errors.load(), 2);
}

TEST(InProcessCommunicator, AMissingRankTimesOutWithAClearError) {
  std::string message;
  on_ranks(2, [&](int r, Communicator& c) {
    if (r == 1) return;  // this rank "died" before the collective
    std::vector<float> v(4);
    try {
      c.all_reduce(v, ReduceKind::Sum);
    } catch (const Error& e) {
      message = e.what();
    }
  }, std::chrono::milliseconds(200));
  EXPECT_NE(message.find("all_reduce"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 0"), std::string::npos) << message;
  EXPECT_NE(message.find("200 ms"), std::string::npos) << message;
}

TEST(TextGather, EveryRanksTextInRankOrderWhateverItsBytes) {
  const std::vector<std::string> texts{"", "{\"a\": 1}", std::string("\0\xff\x80 bytes", 9)};
  on_ranks(3, [&](int r, Communicator& c) {
    for (int repeat = 0; repeat < 2; ++repeat) EXPECT_EQ(all_gather_text(c, texts[r]), texts) << "rank " << r;
  });
}

TEST(Strategies, MirroredRunsEveryReplicaAndReducesTensors) {
  auto strategy = make_mirrored_strategy({Device::cpu(0), Device::cpu(1), Device::cpu(2)});
  EXPECT_EQ(strategy->num_replicas_in_sync(), 3);
  std::atomic<int> calls{0};
  std::vector<std::vector<float>> results(3);
  strategy->run([&](const ReplicaContext& ctx) {
    calls++;
    Tensor a = ops::full({2}, ctx.global_index + 1.0, ctx.device);
    Tensor b = ops::full({3}, 10.0 * ctx.global_index, ctx.device);
    ctx.all_reduce_sum({a, b});
    std::vector<float> av = a.to_vector(), bv = b.to_vector();
    av.insert(av.end(), bv.begin(), bv.end());
    results[ctx.local_index] = av;
  });
  EXPECT_EQ(calls.load(), 3);
  for (const auto& r : results) EXPECT_EQ(r, (std::vector<float>{6, 6, 30, 30, 30}));
}

TEST(Strategies, ReplicaErrorIsRethrownAndOthersAreReleased) {
  auto strategy = make_mirrored_strategy({Device::cpu(0), Device::cpu(1)});
  EXPECT_THROW(strategy->run([](const ReplicaContext& ctx) {
    if (ctx.local_index == 0) throw Error("replica 0 failed");
    Tensor t = ops::zeros({4}, ctx.device);
    ctx.all_reduce_sum({t});  // would wait forever for replica 0 without the abort
  }), Error);
  // the strategy is usable again afterwards
  strategy->run([](const ReplicaContext& ctx) {
    Tensor t = ops::ones({1}, ctx.device);
    ctx.all_reduce_sum({t});
    EXPECT_EQ(t.item(), 2.f);
  });
}

TEST(Strategies, OneDevice) {
  auto strategy = make_one_device_strategy(Device::cpu());
  int calls = 0;
  strategy->run([&](const ReplicaContext& ctx) {
    ++calls;
    Tensor t = ops::full({2}, 3.0);
    ctx.all_reduce_sum({t});
    EXPECT_EQ(t.to_vector(), (std::vector<float>{3, 3}));
  });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace gantry::distribute
