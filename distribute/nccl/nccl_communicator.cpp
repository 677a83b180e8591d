#include "distribute/nccl/nccl_communicator.h"

#include <thread>
#include <utility>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "base/error.h"

namespace gantry::distribute {

namespace {

ncclRedOp_t to_nccl(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum: return ncclSum;
    case ReduceKind::Mean: return ncclAvg;
    case ReduceKind::Max: return ncclMax;
  }
  GANTRY_FAIL("nccl: unknown reduction ", static_cast<int>(kind));
}

// The comm stream gets the device's highest priority, so a collective queued while compute
// kernels are running is scheduled as soon as its inputs are ready.
cuda::Stream make_comm_stream(int device) {
  cuda::DeviceGuard guard(device);
  int least = 0, greatest = 0;
  GANTRY_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return cuda::Stream::create(device, greatest);
}

// Spin briefly (collectives of small buckets finish in microseconds), then sleep in growing
// steps up to 1 ms so a long wait costs no core.
void backoff(int spins) {
  if (spins < 64) {
    std::this_thread::yield();
    return;
  }
  int us = spins < 1024 ? 20 : 1000;
  std::this_thread::sleep_for(std::chrono::microseconds(us));
}

}  // namespace

NcclCommunicator::NcclCommunicator(ncclComm_t comm, int device, int rank, int size,
                                   std::chrono::milliseconds timeout,
                                   std::shared_ptr<NcclLocalGroup> group)
    : comm_(comm),
      device_(device),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      group_(std::move(group)),
      stream_(make_comm_stream(device)),
      ready_(cuda::Event::create(device)),
      done_(cuda::Event::create(device)) {
  GANTRY_CHECK(comm_ != nullptr, "nccl communicator: expected an initialised ncclComm_t");
  GANTRY_CHECK(group_ != nullptr, "nccl communicator: expected its local group");
  barrier_scratch_ = static_cast<float*>(
      cuda::cuda_backend().allocate(sizeof(float), Device::cuda(device_)));
  watchdog_ = std::thread([this] { watch(); });
}

NcclCommunicator::~NcclCommunicator() {
  try {
    stop_watchdog();
    cuda::DeviceGuard guard(device_);
    destroy();
    // Nothing of ours is in flight once the comm is finalized or aborted; this only makes sure.
    GANTRY_CUDA_WARN(cudaStreamSynchronize(stream_.get()));
    // Blocks marked with stream_ may outlive it (Note [nccl buffer lifetime]).
    cuda::device_allocator(device_).forget_stream(reinterpret_cast<cuda::StreamId>(stream_.get()));
    cuda::cuda_backend().deallocate(barrier_scratch_, sizeof(float), Device::cuda(device_));
    if (staging_ != nullptr)
      cuda::cuda_backend().deallocate(staging_, staging_bytes_, Device::cuda(device_));
  } catch (const std::exception& e) {
    cuda::detail::warn_message(::gantry::detail::concat("nccl rank ", rank_,
                                                        ": while destroying: ", e.what()));
  }
}

// ---- collectives

void NcclCommunicator::reduce(void* data, size_t count, ncclDataType_t type, size_t element_size,
                              ReduceKind kind) {
  const size_t bytes = count * element_size;
  const bool host = on_host(data, bytes, "all_reduce", "data");
  if (count == 0) return;  // equal lengths on every rank (Note [collectives]): all skip
  void* buf = host ? staging(bytes) : data;
  if (host) upload(data, buf, bytes);
  run("all_reduce", {buf}, [&](cudaStream_t s) {
    return ncclAllReduce(buf, buf, count, type, to_nccl(kind), comm_, s);
  });
  if (host) download(buf, data, bytes);
}

void NcclCommunicator::all_reduce(std::span<int64_t> data, ReduceKind kind) {
  check_integer_reduction(kind, rank_);
  reduce(data.data(), data.size(), ncclInt64, sizeof(int64_t), kind);
}

void NcclCommunicator::broadcast_from(void* data, size_t count, ncclDataType_t type, size_t element_size,
                                      int root) {
  GANTRY_CHECK(root >= 0 && root < size_, "broadcast: root ", root,
               " is not a rank of a group of ", size_);
  const size_t bytes = count * element_size;
  const bool host = on_host(data, bytes, "broadcast", "data");
  if (count == 0) return;
  void* buf = host ? staging(bytes) : data;
  if (host) upload(data, buf, bytes);
  run("broadcast", {buf}, [&](cudaStream_t s) {
    return ncclBroadcast(buf, buf, count, type, root, comm_, s);
  });
  if (host) download(buf, data, bytes);
}

void NcclCommunicator::gather(const void* in, size_t count, void* out, size_t out_count, ncclDataType_t type,
                              size_t element_size) {
  GANTRY_CHECK(out_count == count * static_cast<size_t>(size_),
               "all_gather: expected an output of ", count * size_, " values, found ", out_count);
  const size_t in_bytes = count * element_size, out_bytes = out_count * element_size;
  const bool host_in = on_host(in, in_bytes, "all_gather", "in");
  const bool host_out = on_host(out, out_bytes, "all_gather", "out");
  if (count == 0) return;
  GANTRY_CHECK(host_in == host_out, "all_gather: nccl rank ", rank_, " expected `in` and `out` both in ",
               "host or both in device memory, found `in` in ", host_in ? "host" : "device", " and `out` in ",
               host_out ? "host" : "device", " memory");
  std::byte* buf = host_in ? staging(in_bytes + out_bytes) : nullptr;
  const void* src = host_in ? buf : in;
  void* dst = host_in ? buf + in_bytes : out;
  if (host_in) upload(in, buf, in_bytes);
  run("all_gather", {src, dst}, [&](cudaStream_t s) {
    return ncclAllGather(src, dst, count, type, comm_, s);
  });
  if (host_out) download(dst, out, out_bytes);
}

// NCCL has no barrier: an all-reduce of one float is one, since no rank's result can be ready
// before every rank contributed.
void NcclCommunicator::barrier() {
  run("barrier", {barrier_scratch_}, [&](cudaStream_t s) {
    return ncclAllReduce(barrier_scratch_, barrier_scratch_, 1, ncclFloat32, ncclSum, comm_, s);
  });
}

PendingCollective NcclCommunicator::start_all_reduce(std::span<float> data, ReduceKind kind) {
  check_device_span(data.data(), data.size(), "all_reduce", "data");
  if (data.empty()) return {};  // equal lengths on every rank: all skip
  const Clock::time_point deadline = Clock::now() + timeout_;
  cuda::DeviceGuard guard(device_);
  mark_used_on_comm_stream(data.data());  // read until wait(): Note [nccl buffer lifetime]
  order_and_enqueue("all_reduce", deadline, [&](cudaStream_t s) {
    return ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, to_nccl(kind), comm_, s);
  });
  InFlight f{0, cuda::Event(), deadline, "all_reduce"};
  {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    if (!spare_events_.empty()) {
      f.done = std::move(spare_events_.back());
      spare_events_.pop_back();
    }
  }
  if (f.done.get() == nullptr) f.done = cuda::Event::create(device_);
  f.done.record(stream_.get());
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    ticket = f.ticket = next_ticket_++;
    in_flight_.push_back(std::move(f));
  }
  flight_cv_.notify_one();
  return PendingCollective(this, ticket);
}

void NcclCommunicator::wait_for(uint64_t ticket) {
  cuda::DeviceGuard guard(device_);
  std::lock_guard<std::mutex> lock(flight_mutex_);
  GANTRY_CHECK(async_error_.empty(), async_error_);
  for (const InFlight& f : in_flight_)
    if (f.ticket == ticket) {
      f.done.block(cuda::compute_stream(device_));  // the device waits, not the host
      return;
    }
  // Retired by the watchdog: its event completed, the result is in place.
}

void NcclCommunicator::check_async_errors(const char* collective) {
  {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    GANTRY_CHECK(async_error_.empty(), async_error_);
  }
  check_usable(collective);
  ncclResult_t async = async_status();
  if (async != ncclSuccess && async != ncclInProgress) fail_nccl(collective, async);
}

void NcclCommunicator::abort() {
  group_->aborted = true;
  abort_comm();
}

// ---- the one path every collective takes

void NcclCommunicator::run(const char* collective, std::initializer_list<const void*> buffers,
                           const Enqueue& enqueue) {
  const Clock::time_point deadline = Clock::now() + timeout_;
  cuda::DeviceGuard guard(device_);
  cudaStream_t compute = cuda::compute_stream(device_);
  try {
    order_and_enqueue(collective, deadline, enqueue);
    done_.record(stream_.get());
    done_.block(compute);
    poll(collective, deadline,
         [this](ncclResult_t async) { return async == ncclSuccess && done_.query(); });
  } catch (...) {
    for (const void* buffer : buffers) mark_used_on_comm_stream(buffer);  // may still be queued
    throw;
  }
}

void NcclCommunicator::mark_used_on_comm_stream(const void* data) {
  cuda::device_allocator(device_).record_stream_containing(
      data, reinterpret_cast<cuda::StreamId>(stream_.get()));
}

void NcclCommunicator::order_and_enqueue(const char* collective, Clock::time_point deadline,
                                         const Enqueue& enqueue) {
  check_usable(collective);
  cudaStream_t compute = cuda::compute_stream(device_);
  ready_.record(compute);  // Note [nccl stream order]
  ready_.block(stream_.get());
  ncclResult_t status = ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    GANTRY_CHECK(comm_ != nullptr, collective, ": nccl rank ", rank_, " was aborted");
    status = enqueue(stream_.get());
  }
  if (status != ncclSuccess && status != ncclInProgress) fail_nccl(collective, status);
  // A non-blocking communicator may still be enqueueing (ncclInProgress): the work is on the
  // stream only once the asynchronous status reads ncclSuccess (a host-side wait for NCCL's
  // enqueue, not for the device).
  poll(collective, deadline, [](ncclResult_t async) { return async == ncclSuccess; });
}

void NcclCommunicator::check_usable(const char* collective) const {
  {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    GANTRY_CHECK(async_error_.empty(), async_error_);
  }
  GANTRY_CHECK(!group_->aborted, collective, ": nccl rank ", rank_,
               " cannot run: its group was aborted after a failure");
}

bool NcclCommunicator::on_host(const void* data, size_t count, const char* collective,
                               const char* what) const {
  if (count == 0) return false;
  cudaPointerAttributes attr{};
  GANTRY_CUDA_CHECK(cudaPointerGetAttributes(&attr, data));
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) return true;
  GANTRY_CHECK(attr.device == device_, collective, ": nccl rank ", rank_, " expected `", what,
               "` in device memory of cuda:", device_, " (or host memory), found memory of cuda:",
               attr.device);
  return false;
}

std::byte* NcclCommunicator::staging(size_t bytes) {
  if (bytes > staging_bytes_) {
    const Device device = Device::cuda(device_);
    if (staging_ != nullptr) cuda::cuda_backend().deallocate(staging_, staging_bytes_, device);
    staging_ = nullptr;
    staging_ = static_cast<std::byte*>(cuda::cuda_backend().allocate(bytes, device));
    staging_bytes_ = bytes;
  }
  return staging_;
}

// Before run(), on the compute stream, which the collective is ordered after (Note [nccl stream
// order]), and not under mutex_: a copy from pageable memory may wait for its stream, and if that
// waits on a stuck collective the watchdog must still be able to take mutex_ and abort it.
void NcclCommunicator::upload(const void* host, void* device, size_t bytes) {
  cuda::DeviceGuard guard(device_);
  GANTRY_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice,
                                    cuda::compute_stream(device_)));
}

// After run(): the collective has completed (polled), so the copy on the idle comm stream is
// the only wait, and a short one.
void NcclCommunicator::download(const void* device, void* host, size_t bytes) {
  cuda::DeviceGuard guard(device_);
  GANTRY_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_.get()));
  GANTRY_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

void NcclCommunicator::check_device_span(const void* data, size_t count, const char* collective,
                                         const char* what) const {
  if (count == 0) return;
  cudaPointerAttributes attr{};
  GANTRY_CUDA_CHECK(cudaPointerGetAttributes(&attr, data));
  GANTRY_CHECK(attr.type == cudaMemoryTypeDevice && attr.device == device_, collective,
               ": nccl rank ", rank_, " expected `", what, "` in device memory of cuda:",
               device_, ", found ",
               attr.type == cudaMemoryTypeDevice ? "memory of another device" : "host memory");
}

void NcclCommunicator::poll(const char* collective, Clock::time_point deadline,
                            const std::function<bool(ncclResult_t)>& done) {
  for (int spins = 0;; ++spins) {
    if (group_->aborted) {
      abort_comm();
      GANTRY_FAIL(collective, ": nccl rank ", rank_,
                  " stopped waiting: another rank of this process failed");
    }
    ncclResult_t async = async_status();
    if (async != ncclSuccess && async != ncclInProgress) fail_nccl(collective, async);
    if (done(async)) return;
    if (Clock::now() >= deadline) {
      abort();
      throw_timeout(collective, rank_, timeout_);
    }
    backoff(spins);
  }
}

// ---- the watchdog of started collectives (Note [nccl async])

void NcclCommunicator::watch() {
  cuda::DeviceGuard guard(device_);
  std::unique_lock<std::mutex> lock(flight_mutex_);
  for (int spins = 0;;) {
    flight_cv_.wait(lock, [this] { return stopping_ || !in_flight_.empty(); });
    if (stopping_) return;
    InFlight& head = in_flight_.front();
    std::string error;
    try {
      if (head.done.query()) {
        spare_events_.push_back(std::move(head.done));
        in_flight_.pop_front();
        spins = 0;
        continue;
      }
      const char* collective = head.collective;
      const Clock::time_point deadline = head.deadline;
      lock.unlock();  // failure_of takes mutex_
      error = failure_of(collective, deadline);
      lock.lock();
    } catch (const std::exception& e) {
      if (!lock.owns_lock()) lock.lock();
      error = e.what();
    }
    if (!error.empty()) {
      async_error_ = error;
      in_flight_.clear();  // the events complete once the abort ended the kernels
      lock.unlock();
      abort();
      lock.lock();
      continue;
    }
    lock.unlock();
    // Nobody waits on the host for the retirement: poll gently (50 us, then 1 ms).
    std::this_thread::sleep_for(std::chrono::microseconds(spins++ < 20 ? 50 : 1000));
    lock.lock();
  }
}

std::string NcclCommunicator::failure_of(const char* collective, Clock::time_point deadline) {
  if (group_->aborted)
    return ::gantry::detail::concat(collective, ": nccl rank ", rank_,
                                    " stopped waiting: another rank of this process failed");
  ncclResult_t async = async_status();
  if (async != ncclSuccess && async != ncclInProgress)
    return ::gantry::detail::concat(collective, ": nccl rank ", rank_, " on cuda:", device_, " failed: ",
                                    cuda::detail::status_text(async),
                                    " (the communicator is aborted; set NCCL_DEBUG=WARN for NCCL's own report)");
  if (Clock::now() < deadline) return "";
  try {
    throw_timeout(collective, rank_, timeout_);
  } catch (const Error& e) {
    return e.what();
  }
}

void NcclCommunicator::stop_watchdog() {
  {
    std::lock_guard<std::mutex> lock(flight_mutex_);
    stopping_ = true;
  }
  flight_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

ncclResult_t NcclCommunicator::async_status() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_ == nullptr) return ncclInvalidUsage;
  ncclResult_t async = ncclSuccess;
  ncclResult_t status = ncclCommGetAsyncError(comm_, &async);
  return status != ncclSuccess ? status : async;
}

void NcclCommunicator::fail_nccl(const char* collective, ncclResult_t status) {
  std::string text = cuda::detail::status_text(status);
  abort();
  GANTRY_FAIL(collective, ": nccl rank ", rank_, " on cuda:", device_, " failed: ", text,
              " (the communicator is aborted; set NCCL_DEBUG=WARN for NCCL's own report)");
}

void NcclCommunicator::abort_comm() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_ == nullptr) return;
  cuda::DeviceGuard guard(device_);
  GANTRY_CUDA_WARN(ncclCommAbort(comm_));
  comm_ = nullptr;
}

// Note [nccl watchdog] applies to teardown too: finalize is non-blocking and polled; a rank
// that cannot flush in time is aborted instead.
void NcclCommunicator::destroy() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (comm_ == nullptr) return;
  if (group_->aborted) {  // a peer failed: flushing could wait for it forever
    GANTRY_CUDA_WARN(ncclCommAbort(comm_));
    comm_ = nullptr;
    return;
  }
  ncclResult_t status = ncclCommFinalize(comm_);
  const Clock::time_point deadline = Clock::now() + timeout_;
  ncclResult_t async = status;
  for (int spins = 0; async == ncclInProgress && Clock::now() < deadline; ++spins) {
    backoff(spins);
    ncclResult_t query = ncclCommGetAsyncError(comm_, &async);
    if (query != ncclSuccess) async = query;
  }
  if (status == ncclSuccess || status == ncclInProgress) status = async;
  if (status == ncclSuccess) {
    GANTRY_CUDA_WARN(ncclCommDestroy(comm_));
  } else {
    cuda::detail::warn_message(::gantry::detail::concat(
        "nccl rank ", rank_, ": finalize did not finish (",
        status == ncclInProgress ? std::string("timed out") : cuda::detail::status_text(status),
        "); aborting the communicator"));
    GANTRY_CUDA_WARN(ncclCommAbort(comm_));
  }
  comm_ = nullptr;
}

}  // namespace gantry::distribute
