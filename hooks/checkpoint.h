// Training checkpoints: one safetensors file per saved step under `<model_dir>/checkpoints/`,
// holding everything an exact resume needs (DESIGN.md, "Files a training run writes").
//
// Note [checkpoint layout]: `checkpoints/ckpt-<step>.safetensors` holds
//   generator.<name>                      replica 0's generator state_dict (params + buffers)
//   discriminator.<name>                  replica 0's discriminator state_dict
//   generator_ema.<name>                  the EMA generator, when one is given
//   optimizer.generator.state.<i>.<name>  Optimizer::state_tensors() of G's optimizer
//   optimizer.discriminator.state.<i>.<name>
// and in __metadata__ (all strings):
//   "format": "gantry.checkpoint.v1", "step", "seed" (decimal),
//   "optimizer.generator.type", "optimizer.generator.param_groups" (JSON), same for D,
//   "loss_scale.generator", "loss_scale.discriminator" (JSON, when loss scaling is on),
//   "input_position" (JSON, the pipeline's data::State, when given),
//   "config" (JSON, the resolved run config, when given).
// `checkpoints/latest` is a one-line text file naming the newest checkpoint file.
//
// Note [exact resume]: the estimator's randomness is keyed by (seed, global step, substep)
// (Note [train-step keys]), so weights, buffers, optimizer state, the step, the seed and the
// input position (and the loss scales) are the whole training state: N steps, save, load into a fresh estimator
// built with the same spec and seed, N more steps gives the weights of 2N steps in one go.
// Only replica 0 is saved and every local replica is loaded from it; parameters are identical
// on all replicas anyway, per-replica batch-norm running statistics (which never feed back
// into training) restart from replica 0's.
//
// Writes are atomic (temporary file in the same directory, fsync, rename, fsync of the
// directory), so a crash leaves either the old or the new file, never half of one; `latest` is
// updated the same way after the checkpoint is in place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gan/gan_estimator.h"
#include "nn/module.h"

namespace gantry::hooks {

inline constexpr const char* kCheckpointFormat = "gantry.checkpoint.v1";

struct SaveCheckpointOptions {
  nn::ModulePtr generator_ema;  // saved as generator_ema.* when set (nn::Ema::module_ptr())
  std::string input_position;   // JSON text (data::State::to_json().dump()); "" = none
  std::string config;           // JSON text of the resolved config; "" = none
  int64_t keep_max = 0;         // keep at most this many ckpt-* files (0 = keep all)
};

struct LoadCheckpointOptions {
  nn::ModulePtr generator_ema;  // restored from generator_ema.* when set (required then)
  // The estimator must have been built with the checkpoint's seed (its train-step noise is
  // keyed by it); false accepts another seed (the run then continues differently).
  bool require_same_seed = true;
};

// What load_checkpoint restored, and the metadata the caller applies itself.
struct LoadedCheckpoint {
  std::string path;
  int64_t step = 0;
  uint64_t seed = 0;
  bool has_generator_ema = false;
  nlohmann::json input_position;  // null when the checkpoint has none
  nlohmann::json config;          // null when the checkpoint has none
};

// `<model_dir>/checkpoints`, and the file name of step's checkpoint ("ckpt-<step>.safetensors").
std::filesystem::path checkpoint_dir(const std::filesystem::path& model_dir);
std::string checkpoint_file_name(int64_t step);
// The step of a "ckpt-<step>.safetensors" name, or nothing for any other name.
std::optional<int64_t> checkpoint_step(const std::string& file_name);

// Saves the estimator's state at its current global step (Note [checkpoint layout]) to
// `<model_dir>/checkpoints/ckpt-<step>.safetensors`, points `latest` at it, then deletes the
// oldest checkpoints beyond keep_max (never the one just written). Returns the file's path.
// Call on the chief only (hooks already run only there).
std::filesystem::path save_checkpoint(const std::filesystem::path& model_dir,
                                      gan::GanEstimator& estimator,
                                      const SaveCheckpointOptions& options = {});

// The resolved run config a checkpoint was written with (null when it holds none).
nlohmann::json read_checkpoint_config(const std::filesystem::path& path);

// The checkpoint to resume from: the file `latest` names, if it parses as safetensors; when
// `latest` is missing, unreadable, names a missing file or a torn one (e.g. "header length
// 11336 exceeds the file"), the newest ckpt-*.safetensors that parses, with a warning on `warn`
// (when `latest` existed) naming what was refused and the step resumed from. Nothing when the
// directory holds no valid checkpoint.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& model_dir,
                                                       std::ostream* warn = nullptr);

// Restores a checkpoint into every local replica of `estimator` (both networks and both
// optimizers) and sets its global step. Errors name the file: missing file, corrupt file,
// wrong format, mismatched networks or optimizers, other seed. A failure part-way through
// (after validation, e.g. a network that does not match) leaves the estimator partly restored:
// discard it.
LoadedCheckpoint load_checkpoint(const std::filesystem::path& path, gan::GanEstimator& estimator,
                                 const LoadCheckpointOptions& options = {});

}  // namespace gantry::hooks
