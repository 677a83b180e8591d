// All-reduce bandwidth of the CPU communicators (issue #5): in-process groups of 2 and 4
// replicas (threads of this process) and, when started by mpirun with several processes, the
// MPI communicator and the hierarchical one (2 local replicas per process). Sizes span a small
// bucket to the reference DCGAN's generator (1,066,880 parameters) and discriminator (661,248), ngf = ndf = 64.
//   gantry_distribute_bench [--benchmark_filter=...]
//   mpirun -np 2 gantry_distribute_bench        (fixed iterations keep the ranks in step; rank 0 reports)
// Bandwidth is the bus bandwidth of PyTorch/NCCL convention: bytes x 2(n-1)/n per second.
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "distribute/in_process_communicator.h"
#include "distribute/strategy.h"
#ifdef GANTRY_WITH_MPI
#include "distribute/hierarchical_communicator.h"
#include "distribute/mpi/mpi_communicator.h"
#endif

namespace gantry::distribute {
namespace {

constexpr auto kTimeout = std::chrono::minutes(2);

void report_bus_bandwidth(benchmark::State& state, size_t floats, int ranks) {
  const double bytes = static_cast<double>(floats) * sizeof(float) * 2.0 * (ranks - 1) / ranks;
  state.counters["bus_GB/s"] =
      benchmark::Counter(bytes * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// One group per size, shared by the benchmark's threads (thread i is rank i).
Communicator& in_process_rank(int size, int rank) {
  static std::map<int, std::vector<std::unique_ptr<Communicator>>> groups = [] {
    std::map<int, std::vector<std::unique_ptr<Communicator>>> g;
    for (int n : {2, 4}) g[n] = InProcessCommunicator::create_group(n, kTimeout);
    return g;
  }();
  return *groups.at(size).at(rank);
}

void BM_InProcessAllReduce(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const int ranks = state.threads();
  Communicator& comm = in_process_rank(ranks, state.thread_index());
  std::vector<float> data(n, 1.f);
  for (auto _ : state) comm.all_reduce(data, ReduceKind::Sum);
  if (state.thread_index() == 0) report_bus_bandwidth(state, n, ranks);
}
BENCHMARK(BM_InProcessAllReduce)->Arg(1 << 12)->Arg(1 << 20)->Arg(661248)->Arg(1066880)->Threads(2)->Threads(4)->UseRealTime();

#ifdef GANTRY_WITH_MPI
MpiCommunicator& mpi() {
  static MpiCommunicator comm(kTimeout);
  return comm;
}

void BM_MpiAllReduce(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> data(n, 1.f);
  mpi().barrier();
  for (auto _ : state) mpi().all_reduce(data, ReduceKind::Sum);
  report_bus_bandwidth(state, n, mpi().size());
}

// Two local replicas per process (benchmark threads) over the process's MPI communicator.
void BM_HierarchicalAllReduce(benchmark::State& state) {
  static std::vector<std::unique_ptr<Communicator>> comms = [] {
    std::shared_ptr<Communicator> cross(&mpi(), [](Communicator*) {});  // lives as long as the program
    std::vector<std::unique_ptr<Communicator>> c;
    for (auto& local : InProcessCommunicator::create_group(2, kTimeout))
      c.push_back(std::make_unique<HierarchicalCommunicator>(std::move(local), cross));
    return c;
  }();
  const size_t n = static_cast<size_t>(state.range(0));
  Communicator& comm = *comms.at(state.thread_index());
  std::vector<float> data(n, 1.f);
  comm.barrier();
  for (auto _ : state) comm.all_reduce(data, ReduceKind::Sum);
  if (state.thread_index() == 0) report_bus_bandwidth(state, n, comm.size());
}

void register_mpi_benchmarks() {
  for (int64_t n : {int64_t{1} << 12, int64_t{1} << 20, int64_t{661248}, int64_t{1066880}}) {
    const int64_t iterations = n < (1 << 16) ? 2000 : 20;  // fixed: every rank runs the same loop
    benchmark::RegisterBenchmark("BM_MpiAllReduce", BM_MpiAllReduce)->Arg(n)->Iterations(iterations)->UseRealTime();
    benchmark::RegisterBenchmark("BM_HierarchicalAllReduce", BM_HierarchicalAllReduce)
        ->Arg(n)->Iterations(iterations)->Threads(2)->UseRealTime();
  }
}
#endif

class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace
}  // namespace gantry::distribute

int main(int argc, char** argv) {
  using namespace gantry::distribute;
  bool several = launched_as_one_of_several_workers();
  bool chief = true;
#ifdef GANTRY_WITH_MPI
  if (several) {
    chief = mpi().rank() == 0;
    register_mpi_benchmarks();
    // Only the fixed-iteration MPI benchmarks keep the ranks in step.
    static char filter[] = "--benchmark_filter=BM_(Mpi|Hierarchical)";
    std::vector<char*> args(argv, argv + argc);
    args.push_back(filter);
    int n = static_cast<int>(args.size());
    benchmark::Initialize(&n, args.data());
  } else {
    benchmark::Initialize(&argc, argv);
  }
#else
  benchmark::Initialize(&argc, argv);
#endif
  SilentReporter silent;
  if (chief)
    benchmark::RunSpecifiedBenchmarks();
  else
    benchmark::RunSpecifiedBenchmarks(&silent);
  benchmark::Shutdown();
  (void)several;
  return 0;
}
