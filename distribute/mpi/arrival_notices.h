// Which ranks of an MPI communicator have reached a collective: the side channel that lets a
// timeout name the late peers (Note [arrival notices]).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace gantry::distribute {

// Note [arrival notices]: a non-blocking collective that has not completed does not say which
// rank it still waits for (MPI_Test on an MPI_Ialltoallv is all or nothing), so a timeout could
// only blame "the other ranks". Every MPI collective of MpiCommunicator therefore has a sequence
// number (1, 2, ... in call order, the same on every rank since MPI requires every rank to call
// the same collectives in the same order), and a rank that starts collective #s first sends s to
// every other rank: an 8-byte MPI_Isend on a duplicate communicator of its own (so it never
// matches a collective's messages). Each rank keeps one MPI_Irecv posted per peer and, whenever
// it polls a collective, records the highest s each peer announced (messages from one sender on
// one communicator do not overtake each other, so the last one received is the newest). When
// collective #s times out, the peers whose latest notice is below s are the ones that have not
// arrived — as far as this rank can tell: a peer whose notice is lost on a cut link looks the
// same as one that never came, which is why the error says "no sign of it arrived" and names the
// host (a cut link is a fact about hosts). If every peer announced s, they all arrived and the
// exchange itself failed on the way, and the error says that instead.
// Why not something else: an MPI_Iallgather of the sequence numbers completes only when every
// rank has arrived, so it cannot tell who is late; one-sided puts need a progress thread (or
// hardware RDMA) at the target to be visible, which the TCP transport does not give. The cost is
// P - 1 eager 8-byte sends per collective and per rank (nothing is waited on: a send completes
// when the transport has taken it), so this is for CPU workers, whose process count is small;
// the NCCL communicator's collectives do not go through it.
class ArrivalNotices {
 public:
  // Duplicates `comm` (collective over it) and posts one receive per peer.
  explicit ArrivalNotices(MPI_Comm comm);
  ~ArrivalNotices();
  ArrivalNotices(const ArrivalNotices&) = delete;
  ArrivalNotices& operator=(const ArrivalNotices&) = delete;

  // Tells every peer that this rank has reached collective `sequence` (never waits).
  void announce(int64_t sequence);
  // Records the notices that have come in (never waits).
  void poll();
  // The peers whose newest notice is below `sequence` (after a poll), in rank order.
  std::vector<int> missing(int64_t sequence);
  // The newest collective `rank` announced (0: none yet).
  int64_t reached(int rank) const { return reached_[static_cast<size_t>(rank)]; }
  // After a failed collective: leave the requests to MPI_Abort / exit instead of cancelling.
  void abandon() { abandoned_ = true; }

 private:
  struct Sent {
    int64_t value = 0;  // the buffer must live until the send completes
    MPI_Request request = MPI_REQUEST_NULL;
  };
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int64_t> reached_;          // per rank
  std::vector<int64_t> incoming_;         // per rank: the posted receive's buffer
  std::vector<MPI_Request> receives_;     // per rank (MPI_REQUEST_NULL for this rank)
  std::deque<Sent> sent_;                 // deque: elements stay put while others come and go
  std::vector<int> indices_;
  bool abandoned_ = false;
};

}  // namespace gantry::distribute
