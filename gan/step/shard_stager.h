// Note [staged shards]: the input pipeline uploads each local replica's shard of the next batch
// to the replica's device while the current step runs. The stage is a Pipeline::map_batches
// function, so it runs on the prefetch thread; it queues the uploads through the device's
// InputStager (backend/input_stager.h: pinned slots and a copy stream on CUDA) and attaches the
// device tensors to the batch (data::Batch::on_devices). The estimator's replica then orders its
// compute after the upload and uses them instead of copying its slice itself. Shards for CPU
// replicas are not staged unless asked (`include_cpu`, for tests): slicing them is what the
// estimator does anyway, and there is no copy engine to overlap with.
#pragma once

#include "data/pipeline.h"
#include "distribute/strategy.h"

namespace gantry::gan {

// Whether any local replica of `strategy` sits on a device that staging helps (not the CPU).
bool staging_helps(const distribute::Strategy& strategy);

// For global batches: stages every local replica's shard (distribute::shard_batch by global
// replica index).
data::BatchTransform stage_shards(const distribute::Strategy& strategy, bool include_cpu = false);

// For per-replica pipelines: the pipeline of local replica `local_replica` yields its shard;
// stages all of it onto that replica's device.
data::BatchTransform stage_replica_batch(const distribute::Strategy& strategy, int local_replica,
                                         bool include_cpu = false);

}  // namespace gantry::gan
