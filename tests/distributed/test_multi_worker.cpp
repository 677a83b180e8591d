// Multi-worker runs under `mpirun -np 2` (tests/mpi/mpi_worker.cpp): the MPI and hierarchical
// communicators against closed forms, 2 workers x 2 replicas training equal to 1 process x 4
// replicas, FID (moments and all-gathered features) on 2 workers equal to one replica, and a
// stuck or dead rank failing the job instead of hanging it (a stuck one named, with its host,
// also among 3 ranks).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <unistd.h>

#include "distribute/strategy.h"
#include "support/run_process.h"
#include "support/sharded_fid.h"
#include "support/temp_dir.h"
#include "support/test_paths.h"
#include "support/tiny_feature_network.h"
#include "support/tiny_gan.h"

namespace gantry::testing {
namespace {

#ifdef GANTRY_WITH_MPI
// As root (CI containers) mpirun needs --allow-run-as-root; --oversubscribe lets 2 processes
// share fewer cores.
ProcessResult mpirun(const std::string& args) {
  return run_process(mpiexec(), "--allow-run-as-root --oversubscribe -np 2 " + mpi_worker() + " " + args);
}

std::vector<float> read_floats(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  std::vector<float> v(static_cast<size_t>(f.tellg()) / sizeof(float));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

std::vector<Device> four_cpus() { return {Device::cpu(0), Device::cpu(1), Device::cpu(2), Device::cpu(3)}; }

TEST(MultiWorker, CommunicatorsMatchClosedForms) {
  ProcessResult r = mpirun("collectives");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 0: collectives ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 1: collectives ok"), std::string::npos) << r.output;
}

// 2 workers x 2 replicas against 1 process x 4 replicas, 20 steps from the same seed. The two
// differ only in summation order ((a+b)+(c+d) against ((a+b)+c)+d), which stays near 1e-6
// relative after 20 Adam steps; 1e-4 is far below what a wrong shard, denominator or a missing
// all-reduce produces (1e-2 and more). Six images per replica: with three, one trajectory met a
// ReLU kink at step 16, where a 1e-7 difference flips a unit and Adam turns it into 0.2.
void expect_two_workers_equal_four_replicas(bool batch_norm, bool sync_bn) {
  TempDir dir("gantry_multi_worker");
  const std::filesystem::path out = dir.path() / "state.bin";
  ProcessResult r = mpirun("train " + out.string() + " 20 24 " + std::to_string(batch_norm) + " " +
                           std::to_string(sync_bn));
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<float> workers = read_floats(out);
  std::vector<float> one_process =
      train_tiny_dcgan(distribute::make_mirrored_strategy(four_cpus()), batch_norm, sync_bn, 24, 20);
  ASSERT_FALSE(workers.empty());
  EXPECT_LT(max_relative_difference(workers, one_process), 1e-4);
}

TEST(MultiWorker, TwoWorkersOfTwoReplicasEqualOneProcessOfFourWithoutBatchNorm) {
  expect_two_workers_equal_four_replicas(false, false);
}

TEST(MultiWorker, TwoWorkersOfTwoReplicasEqualOneProcessOfFourWithSyncBatchNorm) {
  expect_two_workers_equal_four_replicas(true, true);
}

// Gradient buckets started during backward (Note [gradient overlap]) change no bit across
// workers either: one bucket per parameter or two against one bucket, with synchronized batch
// norm (its collectives interleave with the bucket starts on every rank alike).
TEST(MultiWorker, GradientBucketsChangeNoBitAcrossWorkers) {
  TempDir dir("gantry_multi_worker_buckets");
  std::vector<float> states[2];
  const char* caps[2] = {"256", "18446744073709551615"};
  for (int i = 0; i < 2; ++i) {
    const std::filesystem::path out = dir.path() / ("state" + std::to_string(i) + ".bin");
    ProcessResult r = mpirun("train " + out.string() + " 6 12 1 1 " + caps[i]);
    ASSERT_EQ(r.code, 0) << r.output;
    states[i] = read_floats(out);
  }
  ASSERT_FALSE(states[0].empty());
  EXPECT_TRUE(states[0] == states[1]) << "small buckets differ from one bucket, max relative difference "
                                      << max_relative_difference(states[0], states[1]);
}

// 2 workers x 2 replicas evaluate shards of 24 images each in batches of 12, which is where one
// replica's batches are cut too: the same features, so FID equal up to the merge's rounding.
TEST(MultiWorker, FidOnTwoWorkersEqualsOneReplica) {
  TempDir dir;
  const std::string network = write_tiny_feature_network(dir.path());
  const std::filesystem::path out = dir.path() / "fid.txt";
  ProcessResult r = mpirun("metrics " + network + " " + out.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const ShardedFid workers = read_sharded_fid(out.string());
  const ShardedFid one = sharded_fid(distribute::make_one_device_strategy(Device::cpu()), network);
  EXPECT_GT(one.fid_from_moments, 1e-3);
  EXPECT_NEAR(workers.fid_from_moments, one.fid_from_moments, 1e-9 * one.fid_from_moments);
  EXPECT_NEAR(workers.fid_from_features, one.fid_from_features, 1e-9 * one.fid_from_features);
  EXPECT_NEAR(one.fid_from_features, one.fid_from_moments, 1e-9 * one.fid_from_moments);
  ASSERT_EQ(workers.features.size(), one.features.size());
  float worst = 0;
  for (size_t i = 0; i < one.features.size(); ++i) worst = std::max(worst, std::abs(workers.features[i] - one.features[i]));
  EXPECT_LE(worst, 1e-6f);
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// The error names the rank that did not arrive, its host, and which collective it missed
// (Note [arrival notices]).
TEST(MultiWorker, AStuckRankFailsTheOthersWithinTheTimeout) {
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r = mpirun("stall 1000");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.code, 0);
  // Collective #1 exchanges host names, #2 is the all-reduce every rank joins, #3 the stuck one.
  EXPECT_NE(r.output.find("all_reduce: rank 0 waited longer than the timeout of 1000 ms for rank 1 (host " +
                          host_name()),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("from which no sign of this collective (#3 of this communicator) arrived; its last was #2"),
            std::string::npos)
      << r.output;
  EXPECT_LT(seconds, 60) << "the stuck rank sleeps 120 s: the job must end long before";
}

// With 3 ranks, the two that arrive name the third, and only it.
TEST(MultiWorker, AStuckRankIsNamedAmongSeveral) {
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r = run_process(mpiexec(), "--allow-run-as-root --oversubscribe -np 3 " + mpi_worker() +
                                                " stall 1000 2");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.code, 0);
  for (int rank : {0, 1}) {
    const std::string expected = "all_reduce: rank " + std::to_string(rank) +
                                 " waited longer than the timeout of 1000 ms for rank 2 (host " + host_name();
    EXPECT_NE(r.output.find(expected), std::string::npos) << "expected '" << expected << "' in\n" << r.output;
  }
  EXPECT_EQ(r.output.find("for rank 0 ("), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("for rank 1 ("), std::string::npos) << r.output;
  EXPECT_LT(seconds, 60);
}

TEST(MultiWorker, ADeadRankFailsTheJob) {
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r = mpirun("die");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.code, 0) << r.output;
  // Rank 0 is either killed by mpirun or fails in its all-reduce; it must never see it succeed.
  EXPECT_EQ(r.output.find("the all-reduce with a dead rank returned"), std::string::npos) << r.output;
  EXPECT_LT(seconds, 60);
}
#else
TEST(MultiWorker, NeedsMpi) { GTEST_SKIP() << "this build has no MPI support (GANTRY_MPI=OFF or no OpenMPI)"; }
#endif

}  // namespace
}  // namespace gantry::testing
