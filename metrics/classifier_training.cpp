#include "metrics/classifier_training.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>

#include "base/error.h"
#include "core/autograd/grad_mode.h"
#include "core/json_reader.h"
#include "core/ops/ops.h"
#include "data/idx.h"
#include "data/pipeline.h"
#include "data/transforms.h"
#include "nn/adam.h"
#include "nn/lr_schedule.h"
#include "nn/sequential_builder.h"
#include "nn/state_dict.h"

namespace gantry::metrics {

namespace {

constexpr uint64_t kClassifierInitPurpose = 0x434c415353ULL;  // "CLASS"

struct DataSettings {
  std::string train_images, train_labels, test_images, test_labels;
  int64_t pad = 0;
  int parallel_calls = 2;
};

DataSettings read_data(JsonReader& r) {
  DataSettings d;
  GANTRY_CHECK(r.get_string("type", "idx") == "idx", r.key_path("type"), ": expected \"idx\" (the only type so far)");
  d.train_images = r.require_string("train_images");
  d.train_labels = r.require_string("train_labels");
  d.test_images = r.require_string("test_images");
  d.test_labels = r.require_string("test_labels");
  d.pad = r.get_non_negative_int("pad", 0);
  d.parallel_calls = static_cast<int>(r.get_positive_int("num_parallel_calls", 2));
  r.finish();
  return d;
}

data::Transform image_transform(int64_t pad) {
  std::vector<data::Transform> steps;
  if (pad > 0) steps.push_back(data::transforms::pad(pad));
  steps.push_back(data::transforms::scale_to_signed_unit());
  return data::transforms::compose(std::move(steps));
}

// Correct predictions of `logits` (N, K) against `labels` (N,).
int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  const std::vector<float> l = logits.to_vector();
  const Tensor host_labels = labels.to(Device::cpu());
  const int64_t* y = host_labels.data<int64_t>();
  const int64_t n = logits.size(0), k = logits.size(1);
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = l.data() + i * k;
    correct += (std::max_element(row, row + k) - row) == y[i];
  }
  return correct;
}

}  // namespace

nlohmann::json ClassifierReport::to_json() const {
  return {{"test_accuracy", test_accuracy}, {"test_examples", test_examples}, {"steps", steps},
          {"train_seconds", train_seconds}, {"weights", weights}, {"description", description}};
}

ClassifierReport train_classifier(nlohmann::json& config, const std::string& source, std::ostream* log) {
  JsonReader top(config, source);
  const std::filesystem::path out_dir = top.require_string("out_dir");
  JsonReader data_reader(top.object("data"), source + ".data");
  const DataSettings data_settings = read_data(data_reader);
  JsonReader opt(top.object("optimizer"), source + ".optimizer");
  nn::AdamOptions adam;
  adam.lr = opt.get_number_in("lr", 1e-3, 0, 1, false);
  adam.beta1 = opt.get_number_in("beta1", 0.9, 0, 1, false);
  adam.beta2 = opt.get_number_in("beta2", 0.999, 0, 1, false);
  nlohmann::json& schedule_config = opt.value("lr_schedule", {{"type", "constant"}});
  nn::BuiltLrSchedule schedule = nn::make_lr_schedule(schedule_config, opt.key_path("lr_schedule"));
  schedule_config = schedule.resolved;
  opt.finish();
  JsonReader train(top.object("train"), source + ".train");
  const int64_t epochs = train.get_positive_int("epochs", 2);
  const int64_t batch_size = train.get_positive_int("batch_size", 128);
  const uint64_t seed = static_cast<uint64_t>(train.get_non_negative_int("seed", 0));
  const int64_t log_every = train.get_non_negative_int("log_every_steps", 100);
  const int64_t max_steps = train.get_non_negative_int("max_steps", 0);
  train.finish();

  auto train_set = data::load_idx_dataset(data_settings.train_images, data_settings.train_labels);
  auto test_set = data::load_idx_dataset(data_settings.test_images, data_settings.test_labels);
  const data::Transform transform = image_transform(data_settings.pad);
  const Tensor probe = transform(train_set->get(0)).image;  // (C, H, W)
  const std::vector<int64_t> input_shape{probe.size(0), probe.size(1), probe.size(2)};

  nlohmann::json& network = top.object("network");
  JsonReader net_reader(network, source + ".network");
  nn::BuiltSequential built = nn::build_sequential(net_reader.array("layers"), input_shape, net_reader.key_path("layers"),
                                                   RngKey{seed, stream_id(kClassifierInitPurpose)});
  const int64_t feature_layer = net_reader.require_int("feature_layer");
  net_reader.finish();
  GANTRY_CHECK(feature_layer >= 0 && feature_layer < static_cast<int64_t>(built.net->size()),
               source, ".network.feature_layer: expected a child index in [0, ", built.net->size(), "), found ", feature_layer);
  GANTRY_CHECK(built.output_shape.size() == 1, source, ".network.layers: expected (N, classes) logits at the end, "
               "found a per-example output of rank ", built.output_shape.size());
  top.finish();
  nn::Sequential& net = *built.net;
  nn::Adam optimizer(net.parameters(), adam);

  const data::Pipeline input = data::Pipeline(train_set)
                                   .shuffle(train_set->size(), seed)
                                   .map(transform, data_settings.parallel_calls)
                                   .batch(batch_size, true)
                                   .repeat(epochs)
                                   .prefetch(2);
  ClassifierReport report;
  const auto start = std::chrono::steady_clock::now();
  data::Iterator it = input.make_iterator();
  net.train();
  double loss_sum = 0;
  int64_t loss_count = 0;
  while (max_steps == 0 || report.steps < max_steps) {
    std::optional<data::Batch> batch = it.next();
    if (!batch) break;
    optimizer.set_lr(schedule.schedule.at(report.steps, adam.lr));
    Tensor loss = ops::cross_entropy(net.forward(batch->images), batch->labels);
    net.zero_grad();
    loss.backward();
    optimizer.step();
    ++report.steps;
    loss_sum += loss.item();
    ++loss_count;
    if (log && log_every > 0 && report.steps % log_every == 0) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      *log << "step " << report.steps << " | epoch " << batch->epochs.front() + 1 << "/" << epochs << " | loss "
           << std::fixed << std::setprecision(4) << loss_sum / static_cast<double>(loss_count) << " | "
           << std::setprecision(0) << static_cast<double>(report.steps * batch_size) / seconds << " images/s"
           << std::defaultfloat << std::endl;
      loss_sum = 0;
      loss_count = 0;
    }
  }
  report.train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  net.eval();
  {
    NoGradGuard no_grad;
    data::Iterator test = data::Pipeline(test_set).map(transform, data_settings.parallel_calls).batch(500).make_iterator();
    int64_t correct = 0;
    while (std::optional<data::Batch> batch = test.next()) {
      correct += count_correct(net.forward(batch->images), batch->labels);
      report.test_examples += batch->size();
    }
    report.test_accuracy = static_cast<double>(correct) / static_cast<double>(report.test_examples);
  }

  std::filesystem::create_directories(out_dir);
  report.weights = (out_dir / "classifier.safetensors").string();
  report.description = (out_dir / "classifier.json").string();
  nn::save_state_dict(net, report.weights);
  const nlohmann::json description = {{"type", "sequential"},
                                      {"input_shape", input_shape},
                                      {"layers", built.resolved},
                                      {"feature_layer", feature_layer},
                                      {"logits", true},
                                      {"weights", "classifier.safetensors"}};
  std::ofstream(report.description) << description.dump(1) << "\n";
  std::ofstream(out_dir / "report.json") << report.to_json().dump(1) << "\n";
  GANTRY_CHECK(std::filesystem::exists(report.description), report.description, ": could not be written");
  return report;
}

}  // namespace gantry::metrics
