#include "distribute/mpi/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <sstream>
#include <thread>
#include <type_traits>

#include "base/error.h"
#include "distribute/mpi/host_identity.h"
#include "distribute/mpi/mpi_runtime.h"

namespace gantry::distribute {

MpiCommunicator::MpiCommunicator(std::chrono::milliseconds timeout) : timeout_(timeout) {
  mpi_world();
  GANTRY_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_) == MPI_SUCCESS, "MPI: MPI_Comm_dup failed");
  // Failures come back as codes (checked below, naming the collective), not as MPI's abort.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  counts_.resize(size_);
  displacements_.resize(size_);
  received_counts_.resize(size_);
  received_displacements_.resize(size_);
  notices_ = std::make_unique<ArrivalNotices>(comm_);
  hosts_.assign(static_cast<size_t>(size_), "unknown host");
  // Every rank's host, for errors (a fixed-size record each; longer names are cut).
  constexpr size_t kRecord = 256;
  std::string mine = describe_this_host();
  mine.resize(kRecord - 1);  // pads with NULs
  std::vector<char> all(kRecord * static_cast<size_t>(size_));
  gather(mine.c_str(), kRecord, all.data(), all.size(), MPI_CHAR);
  for (int r = 0; r < size_; ++r) hosts_[static_cast<size_t>(r)] = std::string(all.data() + kRecord * static_cast<size_t>(r));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After a timeout a request may still be pending on comm_: leave it to MPI_Abort / exit.
  if (!finalized && !failed_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (failed_ && notices_) notices_->abandon();
}

int MpiCommunicator::count(size_t n, const char* collective) const {
  GANTRY_CHECK(n <= static_cast<size_t>(INT_MAX), collective, ": rank ", rank_, ": ", n,
               " values exceed MPI's count limit of ", INT_MAX, "; split the buffer");
  return static_cast<int>(n);
}

void MpiCommunicator::check_usable(const char* collective) const {
  GANTRY_CHECK(!failed_, collective, ": rank ", rank_, ": this MPI communicator is unusable after an earlier "
               "collective failed (its request may still be pending)");
}

void MpiCommunicator::begin(const char* collective) {
  check_usable(collective);
  ++sequence_;
  if (size_ > 1) notices_->announce(sequence_);
}

std::string MpiCommunicator::describe_rank(int r) const {
  return "rank " + std::to_string(r) + " (host " + hosts_[static_cast<size_t>(r)] + ")";
}

void MpiCommunicator::throw_peer_timeout(const char* collective) {
  failed_ = true;
  notices_->abandon();
  const std::vector<int> late = notices_->missing(sequence_);
  std::ostringstream message;
  message << collective << ": rank " << rank_ << " waited longer than the timeout of " << timeout_.count() << " ms for ";
  auto list = [&](const std::vector<int>& ranks) {
    const size_t shown = std::min<size_t>(ranks.size(), 8);
    for (size_t i = 0; i < shown; ++i) message << (i == 0 ? "" : ", ") << describe_rank(ranks[i]);
    if (ranks.size() > shown) message << " and " << ranks.size() - shown << " more";
  };
  if (!late.empty()) {
    list(late);
    message << ", from which no sign of this collective (#"
            << sequence_ << " of this communicator) arrived";
    if (late.size() == 1) {
      const int64_t last = notices_->reached(late[0]);
      message << "; " << (last == 0 ? std::string("none came from it yet") : "its last was #" + std::to_string(last));
    }
    message << ": a rank died or is stuck, or the link to its host is down (rank " << rank_ << " is on host "
            << hosts_[static_cast<size_t>(rank_)] << ")";
  } else {
    std::vector<int> peers;
    for (int p = 0; p < size_; ++p)
      if (p != rank_) peers.push_back(p);
    message << "the data of ";
    list(peers);
    message << ": every rank reached this collective (#" << sequence_ << " of this communicator) but the exchange "
            << "did not complete (a link failed during the transfer; rank " << rank_ << " is on host "
            << hosts_[static_cast<size_t>(rank_)] << ")";
  }
  GANTRY_FAIL(message.str());
}

void MpiCommunicator::wait(MPI_Request& request, const char* collective) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (int polls = 0;; ++polls) {
    int done = 0;
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      failed_ = true;
      GANTRY_FAIL(collective, ": rank ", rank_, ": MPI reported an error (a rank died, or the ranks passed "
                  "buffers of different lengths)");
    }
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline) throw_peer_timeout(collective);
    if (polls % 4096 == 4095) notices_->poll();  // keeps MPI's queue of unmatched notices short
    // Spin briefly (collectives of a step are short), then stop burning the core.
    if (polls < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

template <typename T>
void MpiCommunicator::reduce(std::span<T> data, ReduceKind kind, std::vector<T>& received) {
  check_usable("all_reduce");
  if (size_ == 1) return;
  begin("all_reduce");
  const MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_INT64_T;
  const int n = count(data.size(), "all_reduce");
  // Rank c owns slice [n*c/size, n*(c+1)/size) (the in-process communicator's split).
  for (int c = 0; c < size_; ++c) {
    displacements_[c] = static_cast<int>(static_cast<int64_t>(n) * c / size_);
    counts_[c] = static_cast<int>(static_cast<int64_t>(n) * (c + 1) / size_) - displacements_[c];
  }
  const int mine = counts_[rank_];
  for (int r = 0; r < size_; ++r) {
    received_counts_[r] = mine;
    received_displacements_[r] = r * mine;
  }
  received.resize(static_cast<size_t>(mine) * size_);
  MPI_Request request;
  // Reduce-scatter: every rank sends slice c to rank c ...
  GANTRY_CHECK(MPI_Ialltoallv(data.data(), counts_.data(), displacements_.data(), type,
                              received.data(), received_counts_.data(), received_displacements_.data(),
                              type, comm_, &request) == MPI_SUCCESS,
               "all_reduce: rank ", rank_, ": MPI_Ialltoallv failed");
  wait(request, "all_reduce");
  // ... which reduces it over ranks in rank order ...
  T* out = data.data() + displacements_[rank_];
  for (int i = 0; i < mine; ++i) {
    T v = received[i];
    for (int r = 1; r < size_; ++r) {
      T x = received[static_cast<size_t>(r) * mine + i];
      v = kind == ReduceKind::Max ? std::max(v, x) : v + x;
    }
    out[i] = kind == ReduceKind::Mean ? v / static_cast<T>(size_) : v;
  }
  // ... and all-gather puts every reduced slice everywhere.
  GANTRY_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data(), counts_.data(),
                               displacements_.data(), type, comm_, &request) == MPI_SUCCESS,
               "all_reduce: rank ", rank_, ": MPI_Iallgatherv failed");
  wait(request, "all_reduce");
}

void MpiCommunicator::all_reduce(std::span<int64_t> data, ReduceKind kind) {
  check_integer_reduction(kind, rank_);
  reduce(data, kind, received_integers_);
}

void MpiCommunicator::broadcast_from(void* data, size_t n, MPI_Datatype type, int root) {
  check_usable("broadcast");
  GANTRY_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is not a rank of a group of ", size_);
  if (size_ == 1) return;
  begin("broadcast");
  MPI_Request request;
  GANTRY_CHECK(MPI_Ibcast(data, count(n, "broadcast"), type, root, comm_, &request) == MPI_SUCCESS,
               "broadcast: rank ", rank_, ": MPI_Ibcast failed");
  wait(request, "broadcast");
}

void MpiCommunicator::gather(const void* in, size_t in_count, void* out, size_t out_count, MPI_Datatype type) {
  check_usable("all_gather");
  GANTRY_CHECK(out_count == in_count * size_, "all_gather: expected an output of ", in_count * size_,
               " values, found ", out_count);
  const int n = count(in_count, "all_gather");
  count(out_count, "all_gather");
  begin("all_gather");
  MPI_Request request;
  GANTRY_CHECK(MPI_Iallgather(in, n, type, out, n, type, comm_, &request) == MPI_SUCCESS,
               "all_gather: rank ", rank_, ": MPI_Iallgather failed");
  wait(request, "all_gather");
}

void MpiCommunicator::barrier() {
  begin("barrier");
  MPI_Request request;
  GANTRY_CHECK(MPI_Ibarrier(comm_, &request) == MPI_SUCCESS, "barrier: rank ", rank_, ": MPI_Ibarrier failed");
  wait(request, "barrier");
}

}  // namespace gantry::distribute
