// TensorBoardHook: TensorBoard event files in `dir` (default <model_dir>/tb), written by the
// chief only (hooks run there; docs/outputs.md has the tour):
//   - at every summary step, every scalar of metrics.jsonl under its JSON path ("generator_loss",
//     "discriminator_components/gradient_penalty", "time/compute", ...; same step, same value)
//     plus "learning_rate/{generator,discriminator}" and, when loss scaling is on,
//     "loss_scale/{generator,discriminator}";
//   - at every sample step, the grid SampleHook wrote (samples/step-N.png) as image "samples",
//     and once per directory the real batch (samples/real.png) as image "real" (so it runs after
//     SampleHook, which writes those files);
//   - every histogram_every_steps steps (0: never), histograms of replica 0's weights and last
//     gradients, "{generator,discriminator}_{weights,gradients}/<parameter name>";
//   - at every summary step and at the end, the values appended to metric-<name>.jsonl files
//     (FID and friends; hooks/metric_file_tail.h) as "metrics/<name>" at their own steps.
// Every run (and every resume) starts a new file and never touches the old ones. A resumed run
// first writes a SessionLog START at its first step (checkpoint step + 1): TensorBoard then drops
// what an interrupted run wrote past the checkpoint, as MetricsHook drops those metrics.jsonl
// lines. Records are flushed at every step that wrote one, so TensorBoard sees them live.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gan/estimator/hook.h"
#include "hooks/metric_file_tail.h"

namespace gantry::hooks {

class EventFileWriter;
struct SummaryValues;

struct TensorBoardHookOptions {
  std::filesystem::path dir;            // where the event files go (required)
  int64_t scalar_every_steps = 50;      // the summary interval (0: no scalars)
  int64_t image_every_steps = 0;        // SampleHook's interval (0: no sample images)
  std::filesystem::path samples_dir;    // SampleHook's folder ("" : no images at all)
  int64_t histogram_every_steps = 0;    // 0: no histograms
  std::filesystem::path metrics_dir;    // where metric-*.jsonl files appear ("" : none)
};

// The scalars of one step as the hook writes them (tag, value), metrics.jsonl's first.
std::vector<std::pair<std::string, float>> tensorboard_scalars(gan::GanEstimator& estimator,
                                                               const gan::StepResults& results);

class TensorBoardHook : public gan::Hook {
 public:
  explicit TensorBoardHook(TensorBoardHookOptions options);
  ~TensorBoardHook() override;

  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;
  void end(gan::GanEstimator& estimator) override;

  const TensorBoardHookOptions& options() const { return options_; }
  // The file this run writes (empty before begin()).
  std::filesystem::path file() const;

 private:
  // Adds samples/step-<step>.png as image "samples" to `values` when SampleHook wrote it.
  void add_sample_grid(int64_t step, SummaryValues& values);
  // Writes the metric values appended since the last call, an Event per step.
  void write_new_metric_values();

  TensorBoardHookOptions options_;
  std::unique_ptr<EventFileWriter> writer_;
  std::optional<MetricFileTail> metric_files_;
  int64_t last_image_step_ = -1;
};

}  // namespace gantry::hooks
