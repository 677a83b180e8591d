// Collectives between CUDA devices through NCCL: one communicator (rank) per device, on spans of
// device memory of that device (or host memory, staged: Note [host spans]). Compiled only in CUDA builds (CMakeLists.txt, as backend/cuda).
// Create them with make_nccl_group (distribute/nccl/nccl_group.h).
//
// Note [nccl stream order]: a collective runs on this rank's own communication stream, ordered
// after everything already queued on the device's compute stream (an event recorded on compute,
// waited on by the comm stream) and before everything queued on compute afterwards (an event
// recorded on the comm stream, waited on by compute). Buffers allocated on the compute stream
// may therefore be freed as soon as the collective returns (Note [stream-ordered reuse]).
//
// Note [nccl buffer lifetime]: NCCL may still read and write a buffer after the call that queued
// the collective returned: a started all-reduce until its wait(), and any collective whose call
// threw (timeout, NCCL error, aborted group: the kernels end once the communicator is aborted,
// not at once). A step that throws abandons its started all-reduces without waiting, and the
// caller may then free the buffers on the compute stream. So the device memory of those
// collectives is marked as used on the comm stream in the caching allocator
// (record_stream_containing: a bucket is a span inside the flat gradient buffer): its free then
// waits for an event recorded on the comm stream before the block is handed out again. A
// collective that returned normally has completed (the host saw its event), so its buffers need
// no mark. The comm stream is forgotten by the allocator (after a synchronize) before it is
// destroyed.
//
// Note [nccl watchdog]: communicators are non-blocking (ncclConfig_t::blocking = 0), so no NCCL
// call can hang the host. Every collective then waits on the host, polling its completion
// event and ncclCommGetAsyncError against a deadline of `timeout`. On expiry, or on an
// asynchronous NCCL error, the communicator is aborted (ncclCommAbort) and the collective
// throws: throw_timeout (naming the collective, the rank and the timeout) or the NCCL error.
// abort() on one rank releases the other ranks of its group in this process at once.
//
// Note [nccl async]: start_all_reduce (Note [asynchronous collectives]) orders and enqueues the
// all-reduce like every collective, records a completion event on the comm stream and returns;
// wait() makes the compute stream wait for that event (the host never waits for the device).
// A watchdog thread per communicator covers what the host no longer polls: it retires the
// in-flight collectives in order as their events complete, and on an NCCL error, an aborted
// group or a collective older than `timeout` it aborts the communicator (ncclCommAbort ends
// the stuck kernels, so a host waiting on the compute stream returns) and keeps the error,
// which the next wait(), collective or check_async_errors() throws. Callers read back one value
// that depends on the results and then call check_async_errors(), so a failed collective never
// goes unnoticed into an update.
//
// Unlike the in-process communicator, sums are formed in NCCL's order (ring or tree, fixed for
// a given topology and configuration), not rank order; every rank still ends with the same bits.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "backend/cuda/device.h"
#include "distribute/communicator.h"

namespace gantry::distribute {

// State shared by the communicators one process created together (make_nccl_group).
struct NcclLocalGroup {
  std::atomic<bool> aborted{false};
};

class NcclCommunicator final : public Communicator {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes ownership of `comm`: an initialised, non-blocking NCCL communicator whose rank
  // `rank` (of `size`) lives on cuda:`device`.
  NcclCommunicator(ncclComm_t comm, int device, int rank, int size,
                   std::chrono::milliseconds timeout, std::shared_ptr<NcclLocalGroup> group);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }
  int device() const { return device_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Spans are device memory of cuda:device() or host memory (checked). They return when the
  // result is in place (the host waits, see Note [nccl watchdog]).
  //
  // Note [host spans]: the estimator reduces a few host values per step (its losses, stop
  // flags, evaluation sums) through the replica's communicator. Host spans travel through a
  // device scratch buffer of this rank: copied up on the comm stream inside the collective and
  // copied back once it has completed. The gradient buckets are device memory and never staged.
  using Communicator::all_reduce;  // every overload stays visible: Note [typed collectives]
  using Communicator::broadcast;
  using Communicator::all_gather;
  void all_reduce(std::span<float> data, ReduceKind kind) override {
    reduce(data.data(), data.size(), ncclFloat32, sizeof(float), kind);
  }
  void all_reduce(std::span<int64_t> data, ReduceKind kind) override;
  void broadcast(std::span<float> data, int root) override {
    broadcast_from(data.data(), data.size(), ncclFloat32, sizeof(float), root);
  }
  void broadcast(std::span<std::byte> data, int root) override {
    broadcast_from(data.data(), data.size(), ncclUint8, 1, root);
  }
  void all_gather(std::span<const float> in, std::span<float> out) override {
    gather(in.data(), in.size(), out.data(), out.size(), ncclFloat32, sizeof(float));
  }
  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    gather(in.data(), in.size(), out.data(), out.size(), ncclUint8, 1);
  }
  void barrier() override;
  // Enqueued after the compute stream's work, not waited for on the host (Note [nccl async]).
  PendingCollective start_all_reduce(std::span<float> data, ReduceKind kind) override;
  void check_async_errors(const char* collective) override;
  // Aborts this rank's NCCL communicator and marks the group failed, which releases the ranks
  // of this process waiting in a collective. Idempotent; the communicator throws on any later
  // use.
  void abort() override;

 protected:
  void wait_for(uint64_t ticket) override;

 private:
  using Enqueue = std::function<ncclResult_t(cudaStream_t stream)>;

  // A started collective the watchdog watches (Note [nccl async]).
  struct InFlight {
    uint64_t ticket = 0;
    cuda::Event done;  // recorded on stream_ after the collective
    Clock::time_point deadline;
    const char* collective = "";
  };

  // The typed collectives on `count` elements of `type` (`element_size` bytes each).
  void reduce(void* data, size_t count, ncclDataType_t type, size_t element_size, ReduceKind kind);
  void broadcast_from(void* data, size_t count, ncclDataType_t type, size_t element_size, int root);
  void gather(const void* in, size_t count, void* out, size_t out_count, ncclDataType_t type,
              size_t element_size);
  // Orders, enqueues and waits for one collective (Notes [nccl stream order], [nccl watchdog]);
  // `buffers` is the device memory it reads or writes (Note [nccl buffer lifetime]).
  void run(const char* collective, std::initializer_list<const void*> buffers,
           const Enqueue& enqueue);
  // The allocator's block around `data` is also used on stream_ (Note [nccl buffer lifetime]).
  void mark_used_on_comm_stream(const void* data);
  // Orders the comm stream after compute and enqueues (the first half of run).
  void order_and_enqueue(const char* collective, Clock::time_point deadline, const Enqueue& enqueue);
  void check_usable(const char* collective) const;
  // Whether `data` is host memory (Note [host spans]); device memory must be cuda:device()'s.
  bool on_host(const void* data, size_t count, const char* collective, const char* what) const;
  std::byte* staging(size_t bytes);  // grown once, freed with the communicator
  void upload(const void* host, void* device, size_t bytes);
  void download(const void* device, void* host, size_t bytes);
  void watch();  // the watchdog thread (Note [nccl async])
  // Why the collective at the head of in_flight_ must be given up, or "" while it may finish.
  std::string failure_of(const char* collective, Clock::time_point deadline);
  void stop_watchdog();
  void check_device_span(const void* data, size_t count, const char* collective,
                         const char* what) const;
  // Polls until `done(async_status)` holds; fails fast on an NCCL error or an aborted group
  // and with the timeout error at `deadline`.
  void poll(const char* collective, Clock::time_point deadline,
            const std::function<bool(ncclResult_t async_status)>& done);
  ncclResult_t async_status();  // ncclCommGetAsyncError; ncclInvalidUsage once aborted
  [[noreturn]] void fail_nccl(const char* collective, ncclResult_t status);
  void abort_comm();  // ncclCommAbort once, under mutex_
  void destroy();     // finalize + destroy, or abort when that does not finish in time

  ncclComm_t comm_;  // null once aborted or destroyed
  int device_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<NcclLocalGroup> group_;
  std::mutex mutex_;  // serialises use of comm_ with abort() from another thread
  cuda::Stream stream_;
  cuda::Event ready_;  // recorded on compute, waited on by stream_
  cuda::Event done_;   // recorded on stream_, waited on by compute and polled by the host
  float* barrier_scratch_ = nullptr;  // one float on the device for barrier()
  std::byte* staging_ = nullptr;      // Note [host spans]
  size_t staging_bytes_ = 0;

  // Note [nccl async]; under flight_mutex_ (never held while taking mutex_).
  mutable std::mutex flight_mutex_;
  std::condition_variable flight_cv_;
  std::deque<InFlight> in_flight_;        // in start order
  std::vector<cuda::Event> spare_events_;  // retired completion events, reused
  uint64_t next_ticket_ = 1;
  std::string async_error_;  // the watchdog's verdict; non-empty once it gave up
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace gantry::distribute
