// The hierarchical communicator against closed-form results, with the cross-process stage
// played by an in-process group: P "processes" of L replicas each, every replica a thread.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "distribute/hierarchical_communicator.h"
#include "distribute/in_process_communicator.h"

namespace gantry::distribute {
namespace {

// Runs fn(global rank, comm) on processes x local threads.
void on_hierarchy(int processes, int local, const std::function<void(int, Communicator&)>& fn) {
  const auto timeout = std::chrono::seconds(20);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (std::unique_ptr<Communicator>& c : InProcessCommunicator::create_group(processes, timeout)) {
    std::shared_ptr<Communicator> cross = std::move(c);
    for (std::unique_ptr<Communicator>& l : InProcessCommunicator::create_group(local, timeout))
      comms.push_back(std::make_unique<HierarchicalCommunicator>(std::move(l), cross));
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < processes * local; ++r) {
    ASSERT_EQ(comms[r]->rank(), r);
    ASSERT_EQ(comms[r]->size(), processes * local);
    threads.emplace_back([&, r] { fn(r, *comms[r]); });
  }
  for (auto& t : threads) t.join();
}

TEST(HierarchicalCommunicator, AllReduceClosedForms) {
  for (auto [processes, local] : {std::pair{1, 1}, {2, 1}, {1, 3}, {2, 2}, {3, 2}}) {
    const int size = processes * local;
    for (size_t len : {size_t{0}, size_t{1}, size_t{5}, size_t{1001}}) {
      std::vector<std::vector<float>> sums(size), means(size), maxes(size);
      on_hierarchy(processes, local, [&](int r, Communicator& c) {
        for (int repeat = 0; repeat < 3; ++repeat) {
          std::vector<float> v(len);
          for (size_t i = 0; i < len; ++i) v[i] = static_cast<float>(r + 1) * (i + 1);
          std::vector<float> m = v, x = v;
          c.all_reduce(v, ReduceKind::Sum);
          c.all_reduce(m, ReduceKind::Mean);
          c.all_reduce(x, ReduceKind::Max);
          sums[r] = v;
          means[r] = m;
          maxes[r] = x;
        }
      });
      const float rank_sum = size * (size + 1) / 2.0f;
      for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < len; ++i) {
          ASSERT_FLOAT_EQ(sums[r][i], rank_sum * (i + 1)) << processes << "x" << local << " len " << len;
          ASSERT_FLOAT_EQ(means[r][i], rank_sum * (i + 1) / size);
          ASSERT_FLOAT_EQ(maxes[r][i], static_cast<float>(size) * (i + 1));
        }
        EXPECT_EQ(sums[r], sums[0]) << "every rank must hold the same bits";
      }
    }
  }
}

TEST(HierarchicalCommunicator, BroadcastFromEveryRootAllGatherAndBarrier) {
  const int processes = 2, local = 2, size = 4;
  for (int root = 0; root < size; ++root) {
    on_hierarchy(processes, local, [&](int r, Communicator& c) {
      std::vector<float> v(7, static_cast<float>(r));
      c.broadcast(v, root);
      for (float x : v) ASSERT_EQ(x, static_cast<float>(root)) << "rank " << r;
    });
  }
  on_hierarchy(processes, local, [&](int r, Communicator& c) {
    std::vector<float> in{static_cast<float>(r), static_cast<float>(10 * r)};
    std::vector<float> out(2 * size, -1.f);
    c.all_gather(in, out);
    for (int q = 0; q < size; ++q) {  // rank order, whichever process holds the rank
      ASSERT_EQ(out[2 * q], static_cast<float>(q));
      ASSERT_EQ(out[2 * q + 1], static_cast<float>(10 * q));
    }
    c.barrier();
  });
}

}  // namespace
}  // namespace gantry::distribute
