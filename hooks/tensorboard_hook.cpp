#include "hooks/tensorboard_hook.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "base/error.h"
#include "core/file_io.h"
#include "data/png_header.h"
#include "gan/estimator/gan_estimator.h"
#include "hooks/event_file_writer.h"
#include "hooks/metrics_hook.h"

namespace gantry::hooks {

namespace {

// metrics.jsonl's numbers under their JSON paths joined by '/' (null, a non-finite value, as NaN).
void flatten_numbers(const nlohmann::json& j, const std::string& prefix,
                     std::vector<std::pair<std::string, float>>& out) {
  for (const auto& [key, value] : j.items()) {
    const std::string tag = prefix.empty() ? key : prefix + "/" + key;
    if (value.is_object())
      flatten_numbers(value, tag, out);
    else if (value.is_number())
      out.emplace_back(tag, value.get<float>());
    else if (value.is_null())
      out.emplace_back(tag, std::numeric_limits<float>::quiet_NaN());
  }
}

std::optional<EncodedImage> read_png(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  const std::vector<uint8_t> bytes = read_file(path.string());
  const data::PngHeader header = data::read_png_header(bytes, path.string());
  return EncodedImage{std::string(bytes.begin(), bytes.end()), header.height, header.width, header.channels};
}

void add_histograms(const std::string& network, nn::Module& module, const std::vector<Tensor>& grads,
                    SummaryValues& values) {
  const nn::NamedTensors params = module.named_parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, param] = params[i];
    const std::vector<float> weights = param.to(Device::cpu()).to_vector();
    values.histograms.emplace_back(network + "_weights/" + name, make_value_histogram(weights));
    if (i < grads.size() && grads[i].defined()) {
      const std::vector<float> grad = grads[i].to(Device::cpu()).to_vector();
      values.histograms.emplace_back(network + "_gradients/" + name, make_value_histogram(grad));
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, float>> tensorboard_scalars(gan::GanEstimator& estimator,
                                                               const gan::StepResults& results) {
  std::vector<std::pair<std::string, float>> scalars;
  nlohmann::json line = step_results_json(results);
  line.erase("step");
  flatten_numbers(line, "", scalars);
  gan::Replica& replica = estimator.replica(0);  // every replica holds the same rates and scales
  scalars.emplace_back("learning_rate/generator", static_cast<float>(replica.generator.optimizer->lr()));
  scalars.emplace_back("learning_rate/discriminator", static_cast<float>(replica.discriminator.optimizer->lr()));
  if (replica.generator.scaler.enabled()) scalars.emplace_back("loss_scale/generator", replica.generator.scaler.scale());
  if (replica.discriminator.scaler.enabled())
    scalars.emplace_back("loss_scale/discriminator", replica.discriminator.scaler.scale());
  return scalars;
}

TensorBoardHook::TensorBoardHook(TensorBoardHookOptions options) : options_(std::move(options)) {
  GANTRY_CHECK(!options_.dir.empty(), "TensorBoardHook: expected an event directory, found an empty path");
  GANTRY_CHECK(options_.scalar_every_steps >= 0 && options_.image_every_steps >= 0 &&
                   options_.histogram_every_steps >= 0,
               "TensorBoardHook: expected intervals >= 0, found scalars ", options_.scalar_every_steps, ", images ",
               options_.image_every_steps, ", histograms ", options_.histogram_every_steps);
}

TensorBoardHook::~TensorBoardHook() = default;

std::filesystem::path TensorBoardHook::file() const { return writer_ ? writer_->path() : std::filesystem::path(); }

void TensorBoardHook::begin(gan::GanEstimator& estimator) {
  const bool first_file = event_files_in(options_.dir).empty();
  writer_ = std::make_unique<EventFileWriter>(options_.dir);
  if (!options_.metrics_dir.empty()) {
    metric_files_.emplace(options_.metrics_dir);
    metric_files_->skip_existing();  // an earlier run's file has them
  }
  // Earlier files may hold the steps from this run's first on, written past the checkpoint by an
  // interrupted run: the marker makes TensorBoard drop them (see the header).
  if (!first_file) writer_->write_session_start(estimator.global_step() + 1);
  if (first_file && !options_.samples_dir.empty()) {
    if (std::optional<EncodedImage> real = read_png(options_.samples_dir / "real.png")) {
      SummaryValues values;
      values.images.emplace_back("real", std::move(*real));
      writer_->write_summary(estimator.global_step(), values);
    }
  }
  writer_->flush();
}

void TensorBoardHook::add_sample_grid(int64_t step, SummaryValues& values) {
  if (options_.samples_dir.empty() || step == last_image_step_) return;
  if (std::optional<EncodedImage> grid = read_png(options_.samples_dir / ("step-" + std::to_string(step) + ".png"))) {
    values.images.emplace_back("samples", std::move(*grid));
    last_image_step_ = step;
  }
}

void TensorBoardHook::write_new_metric_values() {
  if (!metric_files_) return;
  std::map<int64_t, SummaryValues> by_step;
  for (MetricValue& m : metric_files_->read_new())
    by_step[m.step].scalars.emplace_back("metrics/" + m.name, static_cast<float>(m.value));
  for (const auto& [step, values] : by_step) writer_->write_summary(step, values);
}

void TensorBoardHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& results) {
  if (!writer_) return;
  const int64_t step = results.step;
  SummaryValues values;
  if (options_.scalar_every_steps > 0 && step % options_.scalar_every_steps == 0) {
    values.scalars = tensorboard_scalars(estimator, results);
    write_new_metric_values();
  }
  if (options_.image_every_steps > 0 && step % options_.image_every_steps == 0) add_sample_grid(step, values);
  if (options_.histogram_every_steps > 0 && step % options_.histogram_every_steps == 0) {
    gan::Replica& replica = estimator.replica(0);
    add_histograms("generator", *replica.generator.module, replica.generator.reducer->gradients(), values);
    add_histograms("discriminator", *replica.discriminator.module, replica.discriminator.reducer->gradients(), values);
  }
  if (values.empty()) return;
  writer_->write_summary(step, values);
  writer_->flush();
}

void TensorBoardHook::end(gan::GanEstimator& estimator) {
  if (!writer_) return;
  // SampleHook's end() writes the last step's grid when no interval did (it runs first).
  SummaryValues values;
  add_sample_grid(estimator.global_step(), values);
  if (!values.empty()) writer_->write_summary(estimator.global_step(), values);
  write_new_metric_values();
  writer_->flush();
  writer_.reset();
}

}  // namespace gantry::hooks
