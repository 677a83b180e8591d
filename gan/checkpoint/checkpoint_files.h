// The checkpoint file format and the files of `<model_dir>/checkpoints/`: one safetensors file
// per saved step (DESIGN.md, "Files a training run writes"), written atomically, found again
// through `latest` (or the newest valid file when `latest` or its file is torn), and read back.
// What goes into a file is gan/checkpoint/estimator_checkpoint.h's business; this file knows the layout,
// so tools such as gan_sample can restore one network without an estimator or optimizer.
//
// Note [checkpoint layout]: `checkpoints/ckpt-<step>.safetensors` holds
//   generator.<name>                      replica 0's generator state_dict (params + buffers)
//   discriminator.<name>                  replica 0's discriminator state_dict
//   generator_ema.<name>                  the EMA generator, when one is given
//   optimizer.generator.state.<i>.<name>  Optimizer::state_tensors() of G's optimizer
//   optimizer.discriminator.state.<i>.<name>
//   term_state.<name>                     replica 0's objective term state (Note [term state])
// (older files hold a few tensors elsewhere; reading them moves those: Note [older checkpoint
// layouts] in checkpoint_files.cpp)
// and in __metadata__ (all strings):
//   "format": "gantry.checkpoint.v1", "step", "seed" (decimal),
//   "optimizer.generator.type", "optimizer.generator.param_groups" (JSON), same for D,
//   "loss_scale.generator", "loss_scale.discriminator" (JSON, when loss scaling is on),
//   "input_position" (JSON, the pipeline's data::State, when given),
//   "config" (JSON, the resolved run config, when given).
// `checkpoints/latest` is a one-line text file naming the newest checkpoint file.
//
// Writes are atomic (temporary file in the same directory, fsync, rename, fsync of the
// directory), so a crash leaves either the old or the new file, never half of one; `latest` is
// updated the same way after the checkpoint is in place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/module.h"
#include "nn/safetensors.h"
#include "nn/state_dict.h"

namespace gantry::gan {

inline constexpr const char* kCheckpointFormat = "gantry.checkpoint.v1";
// The tensor name prefixes of Note [checkpoint layout].
inline constexpr const char* kGeneratorPrefix = "generator.";
inline constexpr const char* kDiscriminatorPrefix = "discriminator.";
inline constexpr const char* kGeneratorEmaPrefix = "generator_ema.";
inline constexpr const char* kGeneratorOptimizerPrefix = "optimizer.generator.";
inline constexpr const char* kDiscriminatorOptimizerPrefix = "optimizer.discriminator.";
inline constexpr const char* kTermStatePrefix = "term_state.";  // Note [term state]

// `<model_dir>/checkpoints`, and the file name of step's checkpoint ("ckpt-<step>.safetensors").
std::filesystem::path checkpoint_dir(const std::filesystem::path& model_dir);
std::string checkpoint_file_name(int64_t step);
// The step of a "ckpt-<step>.safetensors" name, or nothing for any other name.
std::optional<int64_t> checkpoint_step(const std::string& file_name);

// Writes `<model_dir>/checkpoints/ckpt-<step>.safetensors` atomically, points `latest` at it,
// then deletes the oldest checkpoints beyond keep_max (0: keep all; never the one just
// written). `metadata` gets "format" and "step" added. Returns the file's path.
std::filesystem::path write_checkpoint_file(const std::filesystem::path& model_dir, int64_t step,
                                            const nn::NamedTensors& tensors,
                                            std::map<std::string, std::string> metadata, int64_t keep_max);

// A checkpoint file read, its common metadata checked (format, step, seed) and every
// floating-point tensor checked for NaN and infinities; errors name the file (and the tensor).
struct CheckpointFile {
  std::string path;
  nn::SafetensorsContents contents;
  int64_t step = 0;
  uint64_t seed = 0;
  nlohmann::json input_position;  // null when the checkpoint has none
  nlohmann::json config;          // null when the checkpoint has none
};
CheckpointFile read_checkpoint_file(const std::filesystem::path& path);
// The same for a checkpoint file's bytes (e.g. received from the chief); `source` names it in
// errors.
CheckpointFile parse_checkpoint_file(std::span<const std::byte> bytes, const std::string& source);

// __metadata__[key], which must be present (the error names the file and the key).
const std::string& required_metadata(const CheckpointFile& file, const std::string& key);
// __metadata__[key] parsed as JSON; null when absent.
nlohmann::json json_metadata(const CheckpointFile& file, const std::string& key);

// The tensors whose names start with `prefix`, the prefix removed (a network's state_dict).
nn::NamedTensors checkpoint_tensors(const CheckpointFile& file, const std::string& prefix);

// Restores one network's state_dict (prefix kGeneratorPrefix, kGeneratorEmaPrefix, ...) into
// `module`; errors name the file and the network.
void load_checkpoint_network(const CheckpointFile& file, const std::string& prefix, nn::Module& module);

// The resolved run config a checkpoint was written with (null when it holds none).
nlohmann::json read_checkpoint_config(const std::filesystem::path& path);

// Note [damaged checkpoints]: a checkpoint file that does not read back (torn, bytes flipped, a
// non-finite value: read_checkpoint_file's error) might still be repaired, so Gantry never
// deletes or overwrites one. A resume falls back past damaged newer files to the newest one that
// reads back, and moves the damaged ones into checkpoints/set-aside-<k>/ first, so the run's new
// checkpoints of those steps cannot replace them (keep_max never looks into those folders). A
// model_dir whose checkpoint files all fail to read is not an empty one: gan_train refuses it
// (exit 2, each file and why, nothing changed) unless --resume restart asks to start over, which
// moves every file of checkpoints/ aside the same way; gan_sample, gan_eval and the Python
// package refuse it with the same list (latest_checkpoint).

// A checkpoint file that does not read back, and read_checkpoint_file's error (which names it).
struct UnreadableCheckpoint {
  std::filesystem::path path;
  std::string reason;
};

// The checkpoint to resume from: the file `latest` names, if it reads back whole
// (read_checkpoint_file); when `latest` is missing, unreadable, names a missing file or a damaged
// one (e.g. "header length 11336 exceeds the file"), the newest ckpt-*.safetensors that reads
// back, with warnings on `warn` (when `latest` existed) naming what was refused and the step
// resumed from. `unreadable` lists the files refused on the way: newer than `latest`'s choice, or
// every checkpoint file when none reads back (then nothing is printed; the caller refuses).
struct CheckpointSearch {
  std::optional<std::filesystem::path> latest;
  std::vector<UnreadableCheckpoint> unreadable;
};
CheckpointSearch find_latest_checkpoint(const std::filesystem::path& model_dir, std::ostream* warn = nullptr);

// find_latest_checkpoint's choice: nothing when checkpoints/ holds no checkpoint file, and an
// error listing each file and why when it holds some and none reads back.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& model_dir,
                                                       std::ostream* warn = nullptr);

// "<dir>/checkpoints holds 2 checkpoint file(s) and none reads back:\n  <reason>\n  <reason>\n".
std::string describe_unreadable(const std::filesystem::path& model_dir,
                                const std::vector<UnreadableCheckpoint>& unreadable);

// Every regular file directly in `<model_dir>/checkpoints` (not in its folders), sorted.
std::vector<std::filesystem::path> checkpoint_dir_files(const std::filesystem::path& model_dir);

// Moves `files` of `<model_dir>/checkpoints` (and `latest`, when it names one of them) into a new
// folder checkpoints/set-aside-<k>/ (the first k from 1 not taken) and returns it; nothing is
// deleted or overwritten (Note [damaged checkpoints]).
std::filesystem::path set_aside_checkpoints(const std::filesystem::path& model_dir,
                                            const std::vector<std::filesystem::path>& files);

}  // namespace gantry::gan
