// The run configuration of gan_train: one strict JSON document with the sections model_dir,
// plugins, data, generator, discriminator, loss, optimizers, strategy, train, augment and hooks.
// resolve_run_config validates every key (errors name the JSON path), writes every default
// back, and builds what the run needs, one resolver per section (gan/*_config.h). It has no
// process-wide side effects: the app that starts the run applies the thread budget
// (apply_process_settings) and, for a multi-worker job, starts MPI and passes the worker count.
// docs/config.md documents every key.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/conv_math.h"
#include "core/config_key.h"
#include "data/pipeline.h"
#include "distribute/strategy.h"
#include "gan/config/device_list.h"
#include "gan/config/train_config.h"
#include "gan/spec/gan_spec.h"

namespace gantry::gan {

struct RunSetup {
  nlohmann::json resolved;  // the config with every default written back
  std::string model_dir;
  std::vector<std::string> plugins;
  data::Pipeline input;     // yields global batches (images in [-1, 1], labels if used)
  // strategy.input per_replica_pipelines: replica r's (global index) own pipeline, reading a
  // disjoint 1/R of every epoch in batches of its shard size; null for global_batch input.
  bool per_replica_input = false;
  std::function<data::Pipeline(int replica)> replica_input;
  std::vector<int64_t> image_shape;  // (C, H, W) after the transforms
  int64_t num_classes = 0;
  GanSpec spec;
  std::string strategy_type;  // "one_device", "mirrored" or "multi_worker_mirrored"
  std::vector<Device> devices;  // this worker's
  int workers = 1;              // processes of a multi-worker job
  std::chrono::milliseconds collective_timeout{0};
  ConvMath conv_math = ConvMath::F32;  // train.mixed_precision
  TrainSettings train;
  nlohmann::json hooks;  // the hooks section, checked by the hook factory
  // Held-out evaluation ("evaluation" section): every N steps, `eval_steps` batches.
  int64_t eval_every_steps = 0;
  int64_t eval_steps = 0;
  std::optional<data::Pipeline> eval_input;
};

// Applies "key.path=value" overrides (value parsed as JSON, else taken as a string).
void apply_override(nlohmann::json& config, const std::string& assignment);

struct ResolveOptions {
  // false: the data is not opened (no input pipeline); its shape and classes come from the
  // written-back data.image_shape and data.num_classes (for tools like gan_sample).
  bool open_data = true;
  // The processes of the job: 1, or for a multi-worker job the MPI world size (the app asks
  // distribute::worker_count(), which starts MPI). More than one needs multi_worker_mirrored.
  int workers = 1;
};

// `source` names the config (a file name) in errors. Plugins must already be loaded.
RunSetup resolve_run_config(nlohmann::json config, const std::string& source, const ResolveOptions& options = {});

// Every declared section of the run config (core/config_key.h), the top level's path "": the
// resume check (gan/config/config_changes.h) and docs/config.md's tables follow them.
std::vector<ConfigSection> run_config_sections();
// The declaration of the key at `path` ("train.steps"), e.g. to check a value given apart from
// the config (gan_train --steps) against it; undeclared is a bug.
const ConfigKey& run_config_key(const std::string& path);

// The strategy the config asks for (multi-worker: this process's share of the job).
std::shared_ptr<distribute::Strategy> make_strategy(const RunSetup& run);

// The process-wide settings the run asks for (train.threads), applied by the app that starts
// the run, before it builds the strategy.
void apply_process_settings(const RunSetup& run);

}  // namespace gantry::gan
