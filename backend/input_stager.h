// Uploading input batches to a device while the previous step runs: the device-neutral seam the
// input pipeline stages through (gan/step/shard_stager.h). On the CPU an upload is a copy made on the
// calling thread; on CUDA devices it goes through pinned host slots and a copy stream that the
// compute stream waits on (backend/cuda/pinned_staging.h, Note [staged batches]).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "backend/view.h"

namespace gantry {

// One upload: device.numel() elements of device.dtype are read from `host` (any host memory).
struct StagingItem {
  const void* host = nullptr;
  View device;  // a whole allocation of the stager's device (e.g. a fresh Tensor::empty)
};

// Which stage() call a batch came from.
struct StagingTicket {
  int slot = -1;
  uint64_t generation = 0;
};

class InputStager {
 public:
  virtual ~InputStager() = default;
  // Queues the uploads of `items` and returns once they are queued; the host memory may be
  // reused as soon as this returns. May be called from any thread (e.g. the prefetch thread).
  virtual StagingTicket stage(std::span<const StagingItem> items) = 0;
  // Orders the device's compute after the ticket's uploads (no host wait where the device can
  // order it itself). Call before the first use of the uploaded tensors, on the thread that
  // computes with them.
  virtual void wait_on_compute(const StagingTicket& ticket) = 0;
};

// The stager for `device` (backend/registry.cpp picks it): copies on the CPU, pinned staging on
// CUDA devices.
std::shared_ptr<InputStager> make_input_stager(Device device);

}  // namespace gantry
