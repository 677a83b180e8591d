// Saving and restoring a GanEstimator's whole training state in a checkpoint file
// (gan/checkpoint/checkpoint_files.h holds the format, Note [checkpoint layout], and the files).
//
// Note [exact resume]: the estimator's randomness is keyed by (seed, global step, substep)
// (Note [train-step keys]), so weights, buffers, optimizer state, the step, the seed and the
// input position (and the loss scales, and the adaptive augmentation probability with its
// statistics, Note [augment state in checkpoints]) are the whole training state: N steps, save, load into a fresh estimator
// built with the same spec and seed, N more steps gives the weights of 2N steps in one go.
// Only replica 0 is saved and every local replica is loaded from it; parameters are identical
// on all replicas anyway, per-replica batch-norm running statistics (which never feed back
// into training) restart from replica 0's.
//
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gan/checkpoint/checkpoint_files.h"
#include "gan/estimator/gan_estimator.h"
#include "nn/module.h"

namespace gantry::gan {

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
  // "term_state.<name>" tensors no term of the estimator declares (a term removed on resume; not
  // restored), and state the estimator declares that the checkpoint lacks (a term added on resume;
  // it keeps its initial values): Note [term state] in gan/spec/objective_term.h.
  std::vector<std::string> dropped_term_state, initialised_term_state;
};

// Saves the estimator's state at its current global step (Note [checkpoint layout]) to
// `<model_dir>/checkpoints/ckpt-<step>.safetensors`, points `latest` at it, then deletes the
// oldest checkpoints beyond keep_max (never the one just written). Returns the file's path.
// Call on the chief only (hooks already run only there).
std::filesystem::path save_checkpoint(const std::filesystem::path& model_dir, GanEstimator& estimator,
                                      const SaveCheckpointOptions& options = {});

// Restores a checkpoint into every local replica of `estimator` (both networks and both
// optimizers) and sets its global step. Errors name the file: missing file, corrupt file,
// wrong format, a non-finite value (naming the tensor), mismatched networks, optimizers or term
// state, other seed. A failure part-way through
// (after validation, e.g. a network that does not match) leaves the estimator partly restored:
// discard it.
LoadedCheckpoint load_checkpoint(const std::filesystem::path& path, GanEstimator& estimator,
                                 const LoadCheckpointOptions& options = {});
// The same from a checkpoint already read (read_checkpoint_file, or a multi-worker run's
// shared_resume_checkpoint).
LoadedCheckpoint load_checkpoint(const CheckpointFile& file, GanEstimator& estimator,
                                 const LoadCheckpointOptions& options = {});

// The transfer-learning start (train.init_from): only the networks of `file` into every local
// replica of `estimator` (G, D) and into `generator_ema` when set (from the file's
// generator_ema.*, or its generator.* when it has none). Optimizers, step, seed, augmentation
// and term state stay as built, as StyleGAN2-ADA's --resume does. Errors name the file and list
// every tensor that does not match.
void load_checkpoint_networks(const CheckpointFile& file, GanEstimator& estimator, const nn::ModulePtr& generator_ema);

}  // namespace gantry::gan
