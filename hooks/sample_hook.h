// SampleHook: fixed-noise sample grids, so successive images show the same latent points.
//
// At begin(), rows x cols noise vectors are drawn once from Philox with a fixed key
// (seed, stream_id(kSampleNoisePurpose)), and for a conditional GAN the labels are fixed too:
// image i gets class i % num_classes (every class appears, in order along the rows). Every N
// steps `<model_dir>/samples/step-<step>.png` is written from estimator.predict(noise, labels)
// (replica 0's generator in eval mode), tiled by data/image_grid with `cols` images per row.
// Once per model_dir, `samples/real.png` shows the first rows x cols real images, for
// comparison (not rewritten by a resumed run). Files are written atomically; a failed write is
// a warning, not the end of the run (Note [output failures]).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include "core/tensor.h"
#include "data/image_grid.h"
#include "gan/estimator/hook.h"
#include "hooks/best_effort_output.h"

namespace gantry::hooks {

// Philox stream purpose of the fixed sample noise.
inline constexpr uint64_t kSampleNoisePurpose = 0x53414d504c45ULL;  // "SAMPLE"

struct SampleHookOptions {
  int64_t every_steps = 200;  // >= 1
  int64_t rows = 8;           // grid of rows x cols samples
  int64_t cols = 8;
  uint64_t seed = 0;          // key of the fixed noise
  bool at_end = true;         // also write the last step's grid (unless written already)
  // Pixel range and padding (GridOptions::columns is set from cols).
  data::GridOptions grid;
  std::ostream* log = nullptr;  // warnings of failed writes (Note [output failures])
  // Truncation of a style-based generator's latents (gan/networks/style_generator.h); psi 1: none.
  float truncation_psi = 1.0f;
  int64_t truncation_cutoff = 0;  // 0: every layer
};

// Produces real images (N, C, H, W) f32 for real.png. It must not consume the training input
// (use a separate iterator, or capture the first batch).
using RealImagesFn = std::function<Tensor()>;

class SampleHook : public gan::Hook {
 public:
  // `real_images` may be empty (no real.png).
  SampleHook(std::filesystem::path model_dir, SampleHookOptions options, RealImagesFn real_images = {});
  SampleHook(std::filesystem::path model_dir, SampleHookOptions options, Tensor real_images);

  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;
  void end(gan::GanEstimator& estimator) override;

  // Writes samples/step-<estimator step>.png now; returns its path.
  std::filesystem::path write_samples(gan::GanEstimator& estimator);

  const Tensor& noise() const { return noise_; }    // (rows x cols, noise...)
  const Tensor& labels() const { return labels_; }  // (rows x cols,) i64 or undefined
  std::filesystem::path samples_dir() const { return model_dir_ / "samples"; }

 private:
  void draw_fixed_inputs(const gan::GanEstimator& estimator);
  // write_samples, with a failed write reported as a warning (Note [output failures]).
  void write_samples_best_effort(gan::GanEstimator& estimator);

  std::filesystem::path model_dir_;
  SampleHookOptions options_;
  RealImagesFn real_images_;
  Tensor noise_, labels_;
  int64_t last_written_step_ = -1;
  BestEffortOutput outputs_;
};

}  // namespace gantry::hooks
