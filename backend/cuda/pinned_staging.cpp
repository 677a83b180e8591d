#include "backend/cuda/pinned_staging.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <utility>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device.h"
#include "base/error.h"

namespace gantry::cuda {

// ---- host-side bookkeeping

StagingSlots::StagingSlots(int slots) : generations_(static_cast<size_t>(slots), 0) {
  GANTRY_CHECK(slots >= 1, "pinned staging: expected at least one slot, found ", slots);
}

StagingTicket StagingSlots::next() {
  StagingTicket ticket{next_slot_, ++counter_};
  generations_[static_cast<size_t>(next_slot_)] = ticket.generation;
  next_slot_ = (next_slot_ + 1) % size();
  return ticket;
}

bool StagingSlots::current(const StagingTicket& ticket) const {
  GANTRY_CHECK(ticket.slot >= 0 && ticket.slot < size(), "pinned staging: ticket of slot ",
               ticket.slot, " does not belong to a stager of ", size(), " slots");
  return generations_[static_cast<size_t>(ticket.slot)] == ticket.generation;
}

size_t staging_bytes(const StagingItem& item) {
  return static_cast<size_t>(item.device.numel()) * dtype_size(item.device.dtype);
}

size_t staging_layout_bytes(std::span<const StagingItem> items, size_t alignment) {
  size_t total = 0;
  for (const StagingItem& item : items)
    total += (staging_bytes(item) + alignment - 1) / alignment * alignment;
  return total;
}

// ---- the CUDA side

namespace {

// Page-locked host memory. Move-only.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    GANTRY_CUDA_CHECK(cudaHostAlloc(&data_, bytes, cudaHostAllocPortable));
  }
  ~PinnedBuffer() {
    if (data_) GANTRY_CUDA_WARN(cudaFreeHost(data_));
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  char* data() const { return static_cast<char*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

struct Slot {
  PinnedBuffer buffer;
  Event uploaded;      // recorded on the copy stream after the slot's uploads
  bool in_use = false;  // uploads were queued from this slot
};

constexpr size_t kAlignment = 256;

}  // namespace

struct PinnedStager::State {
  State(int device, int slots) : device(device), slots(slots), copy_stream(Stream::create(device)),
                                 compute_done(Event::create(device)) {
    for (int i = 0; i < slots; ++i) slot.push_back(Slot{PinnedBuffer(), Event::create(device)});
  }
  int device;
  std::mutex mutex;  // the input pipeline stages while replica threads wait
  StagingSlots slots;
  Stream copy_stream;
  Event compute_done;  // recorded on compute, waited on by the copy stream
  std::vector<Slot> slot;
};

PinnedStager::PinnedStager(int device, int slots) {
  check_device_index(device);
  state_ = std::make_unique<State>(device, slots);
}

PinnedStager::~PinnedStager() {
  if (!state_) return;
  // Pinned slots must outlive the uploads that read them.
  GANTRY_CUDA_WARN(cudaStreamSynchronize(state_->copy_stream.get()));
  // Staged tensors may outlive the copy stream recorded on them (record_stream in stage()).
  device_allocator(state_->device)
      .forget_stream(reinterpret_cast<StreamId>(state_->copy_stream.get()));
}

int PinnedStager::device() const { return state_->device; }

StagingTicket PinnedStager::stage(std::span<const StagingItem> items) {
  State& s = *state_;
  for (const StagingItem& item : items)
    GANTRY_CHECK(item.device.device == Device::cuda(s.device), "pinned staging: expected ",
                 "destinations on cuda:", s.device, ", found ", item.device.device.str());
  std::lock_guard<std::mutex> lock(s.mutex);
  DeviceGuard guard(s.device);
  StagingTicket ticket = s.slots.next();
  Slot& slot = s.slot[static_cast<size_t>(ticket.slot)];
  if (slot.in_use) slot.uploaded.synchronize();  // its previous uploads still read the slot
  const size_t needed = staging_layout_bytes(items, kAlignment);
  if (slot.buffer.bytes() < needed) slot.buffer = PinnedBuffer(needed);

  // The destinations may still be in use on the compute stream (Note [staged batches]).
  cudaStream_t copy = s.copy_stream.get();
  s.compute_done.record(compute_stream(s.device));
  s.compute_done.block(copy);
  size_t offset = 0;
  for (const StagingItem& item : items) {
    const size_t bytes = staging_bytes(item);
    if (bytes == 0) continue;
    std::memcpy(slot.buffer.data() + offset, item.host, bytes);
    GANTRY_CUDA_CHECK(cudaMemcpyAsync(item.device.data, slot.buffer.data() + offset, bytes,
                                      cudaMemcpyHostToDevice, copy));
    // Freed before wait_on_compute, the block must not be reused until the upload is done.
    device_allocator(s.device).record_stream(item.device.data, reinterpret_cast<StreamId>(copy));
    offset += (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  slot.uploaded.record(copy);
  slot.in_use = true;
  return ticket;
}

void PinnedStager::wait_on_compute(const StagingTicket& ticket) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  // A reused slot's earlier uploads completed before reuse (stage() waited for them).
  if (!s.slots.current(ticket)) return;
  DeviceGuard guard(s.device);
  s.slot[static_cast<size_t>(ticket.slot)].uploaded.block(compute_stream(s.device));
}

bool PinnedStager::done(const StagingTicket& ticket) const {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.slots.current(ticket)) return true;
  return s.slot[static_cast<size_t>(ticket.slot)].uploaded.query();
}

size_t PinnedStager::pinned_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  size_t total = 0;
  for (const Slot& slot : state_->slot) total += slot.buffer.bytes();
  return total;
}

}  // namespace gantry::cuda
