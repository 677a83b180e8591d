// Staging input batches onto a device while the current step runs: page-locked (pinned) host
// slots and asynchronous host-to-device copies on a copy stream of their own.
//
// Note [staged batches]: stage() copies the host bytes into a free pinned slot (on the calling
// thread, e.g. the input pipeline's) and queues the uploads on the copy stream, which first
// waits for the compute stream: the destination blocks were handed out on the compute stream
// and may still be read by kernels queued before (Note [stream-ordered reuse]). The compute
// stream is made to wait for the uploads by wait_on_compute(), without the host waiting, so
// the step that consumes the batch is ordered after its copies and the copies of batch k+1
// overlap step k. A slot is reused only after its previous uploads completed (the host waits
// for that slot's event), so with 2 slots at most one batch waits behind the one being used.
//
// Destinations must be whole allocations of the caching allocator: they are marked as used on
// the copy stream (record_stream), so dropping a staged batch before wait_on_compute is safe.
// All members may be called from different threads.
//
// Host header: no CUDA types in the interface, usable from code compiled without nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/input_stager.h"

namespace gantry::cuda {

using gantry::StagingItem;
using gantry::StagingTicket;

class PinnedStager final : public InputStager {
 public:
  // `slots` batches may be in flight at once (2 = double buffering). Creates the copy stream on
  // `device`; pinned memory is allocated on first use and grows to the largest batch.
  explicit PinnedStager(int device, int slots = 2);
  ~PinnedStager() override;
  PinnedStager(const PinnedStager&) = delete;
  PinnedStager& operator=(const PinnedStager&) = delete;

  int device() const;
  // Queues the uploads of `items` (Note [staged batches]); returns once they are queued. The
  // host memory may be reused as soon as this returns.
  StagingTicket stage(std::span<const StagingItem> items) override;
  // Orders the device's compute stream after the ticket's uploads (no host wait).
  void wait_on_compute(const StagingTicket& ticket) override;
  // True once the ticket's uploads have completed.
  bool done(const StagingTicket& ticket) const;
  // Pinned bytes held (all slots).
  size_t pinned_bytes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Slot bookkeeping without CUDA (tested on the host): round-robin slots, each with the
// generation of the batch it holds.
class StagingSlots {
 public:
  explicit StagingSlots(int slots);
  int size() const { return static_cast<int>(generations_.size()); }
  // The slot the next batch goes to and the ticket it gets.
  StagingTicket next();
  // Whether `ticket` still describes the batch in its slot (false: the slot was reused, which
  // only happens after the ticket's uploads completed).
  bool current(const StagingTicket& ticket) const;

 private:
  std::vector<uint64_t> generations_;
  int next_slot_ = 0;
  uint64_t counter_ = 0;
};

// Bytes of one upload, and the total rounded per item to `alignment` (slot layout).
size_t staging_bytes(const StagingItem& item);
size_t staging_layout_bytes(std::span<const StagingItem> items, size_t alignment = 256);

}  // namespace gantry::cuda
