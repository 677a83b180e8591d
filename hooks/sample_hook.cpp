#include "hooks/sample_hook.h"

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "core/ops/ops.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/networks/style_generator.h"

namespace gantry::hooks {

SampleHook::SampleHook(std::filesystem::path model_dir, SampleHookOptions options,
                       RealImagesFn real_images)
    : model_dir_(std::move(model_dir)), options_(options), real_images_(std::move(real_images)),
      outputs_(options.log) {
  GANTRY_CHECK(!model_dir_.empty(), "SampleHook: expected a model directory, found an empty path");
  GANTRY_CHECK(options_.every_steps >= 1, "SampleHook: every_steps: expected >= 1, found ",
               options_.every_steps);
  GANTRY_CHECK(options_.rows >= 1 && options_.cols >= 1, "SampleHook: expected a grid of at "
               "least 1 x 1, found ", options_.rows, " x ", options_.cols);
  options_.grid.columns = options_.cols;
}

SampleHook::SampleHook(std::filesystem::path model_dir, SampleHookOptions options, Tensor real_images)
    : SampleHook(std::move(model_dir), options,
                 real_images.defined() ? RealImagesFn([real_images] { return real_images; })
                                       : RealImagesFn()) {}

void SampleHook::draw_fixed_inputs(const gan::GanEstimator& estimator) {
  const gan::GanSpec& spec = estimator.spec();
  const int64_t n = options_.rows * options_.cols;
  Shape shape{n};
  for (int64_t d : spec.noise_shape) shape.push_back(d);
  noise_ = ops::randn(shape, RngKey{options_.seed, stream_id(kSampleNoisePurpose)});  // (n, noise...)
  labels_ = Tensor();
  if (spec.num_classes > 0) {
    std::vector<int64_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = i % spec.num_classes;
    labels_ = ops::from_vector(labels, Shape{n});  // (n,)
  }
}

void SampleHook::begin(gan::GanEstimator& estimator) {
  if (!noise_.defined()) draw_fixed_inputs(estimator);
  std::filesystem::create_directories(samples_dir());
  const std::filesystem::path real = samples_dir() / "real.png";
  if (real_images_ && !std::filesystem::exists(real)) {
    Tensor images = real_images_();  // (N, C, H, W)
    GANTRY_CHECK(images.defined() && images.dim() == 4, "SampleHook: real images: expected "
                 "(N, C, H, W), found ", images.defined() ? images.shape().str() : "none");
    const int64_t n = std::min(images.size(0), options_.rows * options_.cols);
    outputs_.write(real, [&] {
      data::write_image_grid(real.string(), ops::slice(images, 0, 0, n).to(Device::cpu()), options_.grid);
    });
  }
}

std::filesystem::path SampleHook::write_samples(gan::GanEstimator& estimator) {
  if (!noise_.defined()) draw_fixed_inputs(estimator);
  std::filesystem::create_directories(samples_dir());
  gan::TruncationScope truncation(*estimator.replica(0).generator.module, options_.truncation_psi,
                                  options_.truncation_cutoff, "hooks.sample_grid.truncation_psi");
  Tensor images = estimator.predict(noise_, labels_).to(Device::cpu());  // (n, C, H, W)
  const std::filesystem::path path =
      samples_dir() / ("step-" + std::to_string(estimator.global_step()) + ".png");
  data::write_image_grid(path.string(), images, options_.grid);
  last_written_step_ = estimator.global_step();
  return path;
}

void SampleHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& results) {
  if (results.step % options_.every_steps == 0) write_samples_best_effort(estimator);
}

void SampleHook::write_samples_best_effort(gan::GanEstimator& estimator) {
  outputs_.write(samples_dir() / ("step-" + std::to_string(estimator.global_step()) + ".png"),
                 [&] { write_samples(estimator); });
}

void SampleHook::end(gan::GanEstimator& estimator) {
  if (options_.at_end && estimator.global_step() > 0 && estimator.global_step() != last_written_step_)
    write_samples_best_effort(estimator);
}

}  // namespace gantry::hooks
