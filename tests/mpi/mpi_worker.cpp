// A worker program that tests/distributed/test_multi_worker.cpp runs under `mpirun -np 2`
// (`stall` also with -np 3):
//   collectives          the MPI and hierarchical communicators against closed-form results
//   train OUT STEPS BATCH BATCH_NORM SYNC_BN [BUCKET_BYTES]
//                        trains the tiny DCGAN on 2 local CPU replicas per worker (gradient
//                        buckets capped at BUCKET_BYTES, default 25 MiB); the chief writes the
//                        final state (raw f32) to OUT
//   train_stylegan2 OUT STEPS BATCH
//                        trains tests/support/tiny_stylegan2.h's StyleGAN2 (path length
//                        regularisation on) on 2 local CPU replicas per worker; the chief
//                        writes the final state (raw f32) to OUT
//   metrics NET OUT      the tiny DCGAN's generated set (96 images) through the feature network
//                        described in NET on 2 local CPU replicas per worker: moments gathered
//                        and features all-gathered; the chief writes FID-relevant results to OUT
//                        (tests/support/sharded_fid.h)
//   stall TIMEOUT_MS [STUCK_RANK]
//                        rank STUCK_RANK (default 1) never joins; the others' all-reduce must fail
//                        with the timeout error, which names the stuck rank and its host
//   die                  rank 1 exits without a word; the job must fail
// Exit 0 on success; a failed check prints "FAILED: ..." and aborts the job.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "distribute/mpi/mpi_communicator.h"
#include "distribute/mpi/mpi_runtime.h"
#include "distribute/strategy.h"
#include "support/collective_checks.h"
#include "support/sharded_fid.h"
#include "support/tiny_gan.h"
#include "support/tiny_stylegan2.h"

namespace gantry {
namespace {

using distribute::Communicator;
using distribute::ReduceKind;

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "FAILED: " << what << std::endl;
  distribute::mpi_abort_job(1);
  std::exit(1);
}

void expect(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

void check_collectives(Communicator& c, const std::string& label) {
  std::string problem = testing::check_collectives(c);
  expect(problem.empty(), label + " rank " + std::to_string(c.rank()) + ": " + problem);
  problem = testing::check_typed_collectives(c);
  expect(problem.empty(), label + " rank " + std::to_string(c.rank()) + ", typed: " + problem);
}

int collectives() {
  distribute::MpiCommunicator mpi(std::chrono::seconds(30));
  check_collectives(mpi, "mpi");
  auto strategy = distribute::make_multi_worker_mirrored_strategy({Device::cpu(0), Device::cpu(1)},
                                                                 std::chrono::seconds(30));
  expect(strategy->num_replicas_in_sync() == 2 * mpi.size(), "replica count");
  expect(strategy->is_chief() == (mpi.rank() == 0), "chief is rank 0");
  strategy->run([](const distribute::ReplicaContext& ctx) {
    expect(ctx.communicator->rank() == ctx.global_index, "hierarchical rank is the global replica index");
    check_collectives(*ctx.communicator, "hierarchical");
  });
  std::cout << "rank " << mpi.rank() << ": collectives ok" << std::endl;
  return 0;
}

// Every worker must hold the chief's bits after training: compared against rank 0's copy, which
// rank 0 writes to `out` for the test to compare with one process.
int check_and_write_chief_state(const std::vector<float>& state, const std::string& out) {
  distribute::MpiCommunicator mpi(std::chrono::seconds(60));
  std::vector<float> chief = state;
  mpi.broadcast(chief, 0);
  expect(chief == state, "rank " + std::to_string(mpi.rank()) + " differs from the chief after training");
  if (mpi.rank() == 0) {
    std::ofstream f(out, std::ios::binary);
    f.write(reinterpret_cast<const char*>(state.data()), static_cast<std::streamsize>(state.size() * sizeof(float)));
    expect(f.good(), "writing " + out);
  }
  return 0;
}

int train(const std::string& out, int64_t steps, int64_t batch, bool batch_norm, bool sync_bn,
          size_t bucket_bytes) {
  auto strategy = distribute::make_multi_worker_mirrored_strategy({Device::cpu(0), Device::cpu(1)},
                                                                 std::chrono::seconds(60));
  strategy->set_gradient_bucket_bytes(bucket_bytes);
  std::vector<float> state = testing::train_tiny_dcgan(std::move(strategy), batch_norm, sync_bn, batch, steps);
  return check_and_write_chief_state(state, out);
}

int train_stylegan2(const std::string& out, int64_t steps, int64_t batch) {
  auto strategy = distribute::make_multi_worker_mirrored_strategy({Device::cpu(0), Device::cpu(1)},
                                                                 std::chrono::seconds(60));
  std::vector<float> state = testing::train_tiny_stylegan2(std::move(strategy), batch, steps);
  return check_and_write_chief_state(state, out);
}

int metrics(const std::string& network, const std::string& out) {
  auto strategy = distribute::make_multi_worker_mirrored_strategy({Device::cpu(0), Device::cpu(1)},
                                                                 std::chrono::seconds(60));
  const testing::ShardedFid result = testing::sharded_fid(std::move(strategy), network);
  distribute::MpiCommunicator mpi(std::chrono::seconds(60));
  if (mpi.rank() == 0) testing::write_sharded_fid(result, out);
  return 0;
}

int stall(int timeout_ms, int stuck_rank) {
  distribute::MpiCommunicator mpi{std::chrono::milliseconds(timeout_ms)};
  std::vector<float> v(16, 1.f);
  mpi.all_reduce(v, ReduceKind::Sum);  // one that every rank joins
  if (mpi.rank() == stuck_rank) std::this_thread::sleep_for(std::chrono::seconds(120));  // a stuck rank
  try {
    mpi.all_reduce(v, ReduceKind::Sum);
  } catch (const std::exception& e) {
    std::cerr << "rank " << mpi.rank() << ": " << e.what() << std::endl;
    // With several waiting ranks, let each print before the first one's abort ends the job.
    if (mpi.size() > 2) std::this_thread::sleep_for(std::chrono::seconds(2));
    distribute::mpi_abort_job(3);
  }
  fail("the all-reduce with a stuck rank returned");
}

int die() {
  distribute::MpiCommunicator mpi{std::chrono::seconds(120)};
  if (mpi.rank() == 1) _exit(5);  // dies without finalising MPI
  std::vector<float> v(16, 1.f);
  mpi.all_reduce(v, ReduceKind::Sum);
  fail("the all-reduce with a dead rank returned");
}

}  // namespace
}  // namespace gantry

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "collectives") return gantry::collectives();
    if (mode == "train" && (argc == 7 || argc == 8))
      return gantry::train(argv[2], std::atoll(argv[3]), std::atoll(argv[4]), std::atoi(argv[5]) != 0,
                           std::atoi(argv[6]) != 0,
                           argc == 8 ? std::stoull(argv[7]) : gantry::distribute::kDefaultGradientBucketBytes);
    if (mode == "train_stylegan2" && argc == 5) return gantry::train_stylegan2(argv[2], std::atoll(argv[3]), std::atoll(argv[4]));
    if (mode == "metrics" && argc == 4) return gantry::metrics(argv[2], argv[3]);
    if (mode == "stall" && (argc == 3 || argc == 4)) return gantry::stall(std::atoi(argv[2]), argc == 4 ? std::atoi(argv[3]) : 1);
    if (mode == "die") return gantry::die();
  } catch (const std::exception& e) {
    gantry::fail(e.what());
  }
  std::cerr << "usage: gantry_mpi_worker collectives | train OUT STEPS BATCH BATCH_NORM SYNC_BN [BUCKET_BYTES] | stall "
               "TIMEOUT_MS [STUCK_RANK] | die\n";
  return 2;
}
