#include "jobs/run_generator.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/finite_values.h"
#include "core/json_file.h"
#include "core/ops/ops.h"
#include "gan/checkpoint/checkpoint_files.h"
#include "gan/config/plugin_loader.h"
#include "gan/networks/style_generator.h"
#include "jobs/run_checkpoints.h"

namespace gantry::jobs {

namespace fs = std::filesystem;

std::vector<int64_t> parse_labels(const std::string& text, int64_t classes, const char* what) {
  std::vector<int64_t> labels;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    GANTRY_CHECK(end && *end == '\0' && !item.empty() && v >= 0 && v < classes, what, ": expected class "
                 "indices in [0, ", classes, ") separated by commas, found \"", item, "\"");
    labels.push_back(v);
  }
  return labels;
}

RunGenerator::RunGenerator(const fs::path& model_dir, std::optional<int64_t> step, bool ema, std::ostream* log) {
  nlohmann::json config = read_json_file((model_dir / "config.json").string());
  gan::load_plugins(config);  // the run's own types
  // Sampling runs on one CPU device, whatever strategy trained the run.
  config["strategy"]["type"] = "one_device";
  config["strategy"]["devices"] = "cpu:0";
  // The run's data is not needed to sample: only its image shape and classes, from the config.
  setup_ = gan::resolve_run_config(config, (model_dir / "config.json").string(), {.open_data = false});
  gan::apply_process_settings(setup_);  // the run's thread budget
  checkpoint_ = run_checkpoints(model_dir, step, false, log).front();  // `step`'s, or the latest
  GANTRY_CHECK(!ema || setup_.spec.generator_ema.enabled,
               "ema: this run has no EMA generator (train.generator_ema.type is \"none\")");
  // Only the generator (or its EMA) is built and restored: sampling needs no discriminator,
  // optimizer or estimator. Its initial weights are overwritten by the checkpoint's.
  const gan::CheckpointFile file = gan::read_checkpoint_file(checkpoint_);
  generator_ = setup_.spec.generator_fn(Device::cpu(), RngKey{setup_.train.seed, stream_id(0x67656eULL, 0)});
  gan::load_checkpoint_network(file, ema ? gan::kGeneratorEmaPrefix : gan::kGeneratorPrefix, *generator_);
  generator_->eval();
}

Tensor RunGenerator::generate(int64_t n, const std::function<Tensor(int64_t, int64_t)>& noise,
                              const SampleOptions& options) {
  GANTRY_CHECK(n > 0, "expected a positive number of samples, found ", n);
  GANTRY_CHECK(options.batch > 0, "batch: expected a positive count, found ", options.batch);
  if (setup_.num_classes > 0)
    for (int64_t label : options.labels)
      GANTRY_CHECK(label >= 0 && label < setup_.num_classes, "labels: expected class indices in [0, ",
                   setup_.num_classes, ") for this run, found ", label);
  NoGradGuard no_grad;
  gan::TruncationScope truncation(*generator_, options.truncation_psi, options.truncation_cutoff, "truncation_psi");
  gan::NoiseModeScope noise_mode(*generator_, options.noise_mode, "noise_mode");
  std::vector<Tensor> chunks;
  for (int64_t begin = 0; begin < n; begin += options.batch) {
    const int64_t count = std::min(options.batch, n - begin);
    Tensor z = noise(begin, count);
    if (setup_.num_classes > 0) {
      std::vector<int64_t> l(count);
      for (int64_t i = 0; i < count; ++i)
        l[i] = options.labels.empty() ? (begin + i) % setup_.num_classes
                                      : options.labels[(begin + i) % options.labels.size()];
      chunks.push_back(generator_->forward(z, ops::from_vector(l, Shape{count})));
    } else {
      chunks.push_back(generator_->forward(z));
    }
  }
  // Clamped as the metrics see them (metrics/generated_features.cpp): a generator without a
  // final tanh (stylegan2) overshoots [-1, 1], which the .npy promises and gan_eval --fake checks.
  return ops::clamp(chunks.size() == 1 ? chunks[0] : ops::concat(chunks, 0), -1.0f, 1.0f);
}

Tensor RunGenerator::sample(int64_t n, uint64_t seed, const SampleOptions& options) {
  const Shape& per_example = noise_shape();
  return generate(n, [&](int64_t begin, int64_t count) {
    Shape shape{count};
    for (int64_t d : per_example) shape.push_back(d);
    return ops::randn(shape, RngKey{seed, stream_id(0x73616d706c65ULL)}, static_cast<uint64_t>(begin * per_example.numel()));
  }, options);
}

Tensor RunGenerator::sample_from(const Tensor& noise, const SampleOptions& options) {
  const Shape& per_example = noise_shape();
  bool ok = noise.dim() == per_example.rank() + 1 && noise.dtype() == DType::F32;
  for (int d = 0; ok && d < per_example.rank(); ++d) ok = noise.size(d + 1) == per_example[d];
  GANTRY_CHECK(ok, "noise: expected f32 of shape (N, ", per_example.str(), "), found ", noise.str());
  check_finite(noise, "noise");  // NaN noise would come out as NaN samples, clamped to nothing
  return generate(noise.size(0), [&](int64_t begin, int64_t count) { return ops::slice(noise, 0, begin, begin + count); },
                  options);
}

}  // namespace gantry::jobs
