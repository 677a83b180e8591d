// A trained run's generator, as gan_sample draws from it: the run's config (model_dir/config.json,
// plugins loaded) and a checkpoint's generator or EMA generator on one CPU device, in eval mode.
// Noise comes from a seed (Philox: the same seed gives the same samples on any machine) or from the
// caller; samples are clamped to [-1, 1] as the metrics see them. gan_sample and the Python
// module's Run.sample both call this, so their samples are the same bits.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gan/config/run_config.h"
#include "nn/noise_injection.h"

namespace gantry::jobs {

struct SampleOptions {
  // Class of sample i for a conditional generator: labels[i % labels.size()], or i % classes
  // when empty. Ignored by an unconditional one.
  std::vector<int64_t> labels;
  int64_t batch = 256;          // samples per generator call
  float truncation_psi = 1.0f;  // stylegan2: w = w_avg + psi (w - w_avg)
  int64_t truncation_cutoff = 0;
  // stylegan2: where the noise inputs come from (random, const: the generator's fixed maps, none;
  // nn/noise_injection.h).
  nn::NoiseMode noise_mode = nn::NoiseMode::Random;
};

class RunGenerator {
 public:
  // `step`: that checkpoint (>= 0; a negative one is refused), or none for the latest that reads
  // back (a damaged newest one falls back, reported to `log`). `ema`: the EMA generator (an error
  // when the run has none).
  RunGenerator(const std::filesystem::path& model_dir, std::optional<int64_t> step, bool ema, std::ostream* log);

  // (n, C, H, W) f32 in [-1, 1] from noise keyed by `seed`.
  Tensor sample(int64_t n, uint64_t seed, const SampleOptions& options);
  // The same from the caller's noise (N, noise_shape...) f32, e.g. an interpolation path.
  Tensor sample_from(const Tensor& noise, const SampleOptions& options);

  const Shape& noise_shape() const { return setup_.spec.noise_shape; }
  int64_t num_classes() const { return setup_.num_classes; }
  const std::filesystem::path& checkpoint() const { return checkpoint_; }

 private:
  // Generates from `noise` chunk by chunk; chunk c starts at example `first + c * batch`.
  Tensor generate(int64_t n, const std::function<Tensor(int64_t begin, int64_t count)>& noise,
                  const SampleOptions& options);

  gan::RunSetup setup_;
  std::filesystem::path checkpoint_;
  nn::ModulePtr generator_;
};

// Parses "3,1,4" into class indices in [0, classes), naming `what` in errors.
std::vector<int64_t> parse_labels(const std::string& text, int64_t classes, const char* what);

}  // namespace gantry::jobs
