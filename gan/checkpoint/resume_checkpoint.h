// The checkpoint a run resumes from, found the same way by every worker of a job.
//
// Note [resume without a shared disk]: in a multi-worker job only the chief looks at its
// model_dir. It picks the newest valid checkpoint there (latest_checkpoint) and sends the file's
// bytes to every worker, which parses them as if it had read the file. So workers on node-local
// disks (empty, or holding an older run's files) resume from the chief's state, every worker
// restores the same weights, optimizer state, step, augmentation state and input positions, and
// a failure to read on the chief reaches every worker as the same error instead of a hang.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "distribute/strategy.h"
#include "gan/checkpoint/checkpoint_files.h"

namespace gantry::gan {

// What a run resumes from: model_dir's newest checkpoint that reads back, read (nothing when there
// is none), and the checkpoint files refused on the way (find_latest_checkpoint's `unreadable`:
// all of them when none reads back; Note [damaged checkpoints]), the same on every worker.
struct ResumePoint {
  std::optional<CheckpointFile> checkpoint;
  std::vector<UnreadableCheckpoint> unreadable;
};

// A collective in a multi-worker job: every worker calls it; `warn` gets find_latest_checkpoint's
// warnings (the chief's only, since the others do not look).
ResumePoint resume_checkpoint(distribute::Strategy& strategy, const std::filesystem::path& model_dir,
                              std::ostream* warn = nullptr);

// The checkpoint file at `path`, read by the chief and sent to every worker in the same way: the
// networks a fine-tuning run starts from (train.init_from). A collective; errors name `what`
// (the config key) and the file.
CheckpointFile init_checkpoint(distribute::Strategy& strategy, const std::filesystem::path& path,
                               const std::string& what);

}  // namespace gantry::gan
