#include "distribute/mpi/arrival_notices.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/error.h"

namespace gantry::distribute {

namespace {

constexpr int kNoticeTag = 7;
// Sends not yet taken by the transport, at most: a peer that has not drained this many notices
// is far behind (the collective it is late for times out first), so more would only cost memory.
constexpr size_t kMaxPendingSends = size_t{1} << 16;

}  // namespace

ArrivalNotices::ArrivalNotices(MPI_Comm comm) {
  GANTRY_CHECK(MPI_Comm_dup(comm, &comm_) == MPI_SUCCESS, "MPI: MPI_Comm_dup failed (arrival notices)");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  reached_.assign(static_cast<size_t>(size_), 0);
  incoming_.assign(static_cast<size_t>(size_), 0);
  receives_.assign(static_cast<size_t>(size_), MPI_REQUEST_NULL);
  indices_.resize(static_cast<size_t>(size_));
  for (int p = 0; p < size_; ++p)
    if (p != rank_)
      GANTRY_CHECK(MPI_Irecv(&incoming_[static_cast<size_t>(p)], 1, MPI_INT64_T, p, kNoticeTag, comm_,
                             &receives_[static_cast<size_t>(p)]) == MPI_SUCCESS,
                   "MPI: rank ", rank_, ": MPI_Irecv of arrival notices from rank ", p, " failed");
}

ArrivalNotices::~ArrivalNotices() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || abandoned_ || comm_ == MPI_COMM_NULL) return;
  for (MPI_Request& r : receives_) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);  // a cancelled receive completes locally
  }
  // The transport takes a send at once unless a peer stopped reading; give it up to 2 s, then
  // leave the rest to MPI (their buffers are leaked on purpose: MPI may still read them).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!sent_.empty() && std::chrono::steady_clock::now() < deadline) {
    int done = 0;
    MPI_Test(&sent_.front().request, &done, MPI_STATUS_IGNORE);
    if (done)
      sent_.pop_front();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (!sent_.empty()) {
    for (Sent& s : sent_) MPI_Request_free(&s.request);
    new std::deque<Sent>(std::move(sent_));  // NOLINT: deliberately never freed
  }
  MPI_Comm_free(&comm_);
}

void ArrivalNotices::announce(int64_t sequence) {
  reached_[static_cast<size_t>(rank_)] = sequence;
  while (!sent_.empty()) {  // forget the sends the transport has taken, oldest first
    int done = 0;
    MPI_Test(&sent_.front().request, &done, MPI_STATUS_IGNORE);
    if (!done) break;
    sent_.pop_front();
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_ || sent_.size() >= kMaxPendingSends) continue;
    Sent& s = sent_.emplace_back();
    s.value = sequence;
    if (MPI_Isend(&s.value, 1, MPI_INT64_T, p, kNoticeTag, comm_, &s.request) != MPI_SUCCESS) sent_.pop_back();
  }
  poll();
}

void ArrivalNotices::poll() {
  if (size_ == 1) return;
  // Each completed receive records its notice and is posted again; loop until none completes
  // (several notices from one peer may be queued), bounded by what can have arrived.
  for (int round = 0; round < 64; ++round) {
    int completed = 0;
    if (MPI_Testsome(size_, receives_.data(), &completed, indices_.data(), MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
        completed == MPI_UNDEFINED || completed == 0)
      return;
    for (int i = 0; i < completed; ++i) {
      const size_t p = static_cast<size_t>(indices_[static_cast<size_t>(i)]);
      reached_[p] = std::max(reached_[p], incoming_[p]);
      if (MPI_Irecv(&incoming_[p], 1, MPI_INT64_T, static_cast<int>(p), kNoticeTag, comm_, &receives_[p]) !=
          MPI_SUCCESS)
        receives_[p] = MPI_REQUEST_NULL;  // no more notices from p: it will count as missing
    }
  }
}

std::vector<int> ArrivalNotices::missing(int64_t sequence) {
  poll();
  std::vector<int> late;
  for (int p = 0; p < size_; ++p)
    if (p != rank_ && reached_[static_cast<size_t>(p)] < sequence) late.push_back(p);
  return late;
}

}  // namespace gantry::distribute
