// The checkpoints of a trained run that gan_sample, gan_eval and the Python package read: one
// step's, every one, or the latest that reads back (Note [damaged checkpoints] in
// gan/checkpoint/checkpoint_files.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <vector>

namespace gantry::jobs {

// The checkpoints of a run to evaluate or sample: `step`'s (a negative one is refused), every one
// (`all_steps`), or the latest that reads back (gan::latest_checkpoint: an error listing each file
// when none does).
std::vector<std::filesystem::path> run_checkpoints(const std::filesystem::path& model_dir,
                                                   std::optional<int64_t> step, bool all_steps,
                                                   std::ostream* log);

}  // namespace gantry::jobs
