#include "gan/step/shard_stager.h"

#include <memory>
#include <vector>

#include "backend/input_stager.h"
#include "distribute/sharding.h"

namespace gantry::gan {

namespace {

// Rows [begin, begin + n) of a contiguous host tensor, as its host address.
const void* host_rows(const Tensor& t, int64_t begin, int64_t n) {
  const int64_t row_bytes = n > 0 ? static_cast<int64_t>(t.nbytes()) / t.size(0) : 0;
  return static_cast<const char*>(t.raw_data()) + begin * row_bytes;
}

// Uploads rows [begin, begin + n) of the batch to `device` and attaches them for `local_replica`.
void stage_rows(data::Batch& batch, int local_replica, int64_t begin, int64_t n, Device device,
                const std::shared_ptr<InputStager>& stager) {
  GANTRY_CHECK(batch.images.device().is_cpu(), "input staging: expected the batch's images on the "
               "CPU, found ", batch.images.str());
  data::DeviceShard shard;
  shard.local_replica = local_replica;
  Shape shape = batch.images.shape();
  shape[0] = n;
  shard.images = Tensor::empty(shape, DType::F32, device);
  StagingItem items[2] = {{host_rows(batch.images, begin, n), shard.images.view()}, {}};
  size_t count = 1;
  if (batch.labels.defined()) {
    shard.labels = Tensor::empty(Shape{n}, batch.labels.dtype(), device);
    items[count++] = {host_rows(batch.labels, begin, n), shard.labels.view()};
  }
  const StagingTicket ticket = stager->stage(std::span<const StagingItem>(items, count));
  shard.ready = [stager, ticket] { stager->wait_on_compute(ticket); };
  batch.on_devices.push_back(std::move(shard));
}

// One stager per local replica that is staged; null for the others.
std::vector<std::shared_ptr<InputStager>> stagers_for(const distribute::Strategy& strategy,
                                                      bool include_cpu) {
  std::vector<std::shared_ptr<InputStager>> stagers;
  for (const Device& d : strategy.local_devices())
    stagers.push_back(include_cpu || !d.is_cpu() ? make_input_stager(d) : nullptr);
  return stagers;
}

}  // namespace

bool staging_helps(const distribute::Strategy& strategy) {
  for (const Device& d : strategy.local_devices())
    if (!d.is_cpu()) return true;
  return false;
}

data::BatchTransform stage_shards(const distribute::Strategy& strategy, bool include_cpu) {
  const std::vector<Device> devices = strategy.local_devices();
  const int first = strategy.first_replica(), replicas = strategy.num_replicas_in_sync();
  auto stagers = stagers_for(strategy, include_cpu);
  return [devices, first, replicas, stagers](data::Batch batch) {
    const std::vector<distribute::Shard> shards = distribute::shard_batch(batch.images.size(0), replicas);
    for (size_t r = 0; r < devices.size(); ++r) {
      if (!stagers[r]) continue;
      const distribute::Shard& s = shards[static_cast<size_t>(first) + r];
      stage_rows(batch, static_cast<int>(r), s.begin, s.size, devices[r], stagers[r]);
    }
    return batch;
  };
}

data::BatchTransform stage_replica_batch(const distribute::Strategy& strategy, int local_replica,
                                         bool include_cpu) {
  const Device device = strategy.local_devices().at(static_cast<size_t>(local_replica));
  GANTRY_CHECK(include_cpu || !device.is_cpu(), "input staging: replica ", local_replica, " is on ",
               device.str(), ", which is not staged (pass include_cpu)");
  std::shared_ptr<InputStager> stager = make_input_stager(device);
  return [device, local_replica, stager](data::Batch batch) {
    stage_rows(batch, local_replica, 0, batch.images.size(0), device, stager);
    return batch;
  };
}

}  // namespace gantry::gan
