// The hierarchical communicator against closed-form results (all-reduce, broadcast from every
// root, all-gather in rank order, barrier), with the cross-process stage played by an
// in-process group: P "processes" of L replicas each, every replica a thread.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "base/error.h"
#include "distribute/hierarchical_communicator.h"
#include "distribute/in_process_communicator.h"
#include "support/collective_checks.h"

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

TEST(HierarchicalCommunicator, ClosedForms) {
  for (std::pair<int, int> shape : {std::pair{1, 1}, {2, 1}, {1, 3}, {2, 2}, {3, 2}}) {
    const int processes = shape.first, local = shape.second;  // the lambda captures them
    on_hierarchy(processes, local, [&](int r, Communicator& c) {
      EXPECT_EQ(testing::check_collectives(c), "") << "rank " << r << " of " << processes << " x " << local;
      EXPECT_EQ(testing::check_typed_collectives(c), "") << "rank " << r << " of " << processes << " x " << local;
    });
  }
}

// Process 1 never joins: process 0's leader fails in the cross stage first (its replicas wait
// twice as long), naming the collective, its global rank and worker, and the cross timeout.
TEST(HierarchicalCommunicator, AStuckProcessIsReportedByTheLeadersCrossStage) {
  std::vector<std::unique_ptr<Communicator>> cross = InProcessCommunicator::create_group(2, std::chrono::milliseconds(200));
  std::shared_ptr<Communicator> cross0 = std::move(cross[0]);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (std::unique_ptr<Communicator>& l : InProcessCommunicator::create_group(2, std::chrono::milliseconds(400)))
    comms.push_back(std::make_unique<HierarchicalCommunicator>(std::move(l), cross0));
  std::string leader_error;
  std::thread other([&] {
    std::vector<float> v(3, 1.f);
    try {
      comms[1]->all_reduce(v, ReduceKind::Sum);
    } catch (const Error&) {
    }
  });
  std::vector<float> v(3, 1.f);
  try {
    comms[0]->all_reduce(v, ReduceKind::Sum);
  } catch (const Error& e) {
    leader_error = e.what();
  }
  other.join();
  EXPECT_NE(leader_error.find("all_reduce: global rank 0 (worker 0), across workers: all_reduce: rank 0 waited "
                              "longer than the timeout of 200 ms"),
            std::string::npos)
      << leader_error;
}

}  // namespace
}  // namespace gantry::distribute
