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

struct TrainSettings {
  int64_t epochs = 0, batch_size = 0, log_every = 0, max_steps = 0;
  uint64_t seed = 0;
};

// The config's keys (core/config_key.h); configs/fashion_mnist_classifier.json uses them all.
constexpr ConfigKey kTopKeys[] = {
    string_key("out_dir", "", "where the weights, description and report go"),
    object_key("data", "{}", "the labelled images"),
    object_key("optimizer", "{}", "Adam's settings"),
    object_key("train", "{}", "epochs, batch, seed"),
    object_key("network", "{}", "the classifier's layers and feature layer"),
};
constexpr ConfigKey kDataKeys[] = {
    string_key("type", R"("idx")", "the files' format").one_of("idx").expecting(R"("idx" (the only type so far))"),
    string_key("train_images", "", "IDX images to train on").into<&DataSettings::train_images>(),
    string_key("train_labels", "", "their IDX labels").into<&DataSettings::train_labels>(),
    string_key("test_images", "", "IDX images to measure the accuracy on").into<&DataSettings::test_images>(),
    string_key("test_labels", "", "their IDX labels").into<&DataSettings::test_labels>(),
    int_key("pad", "0", "zero padding around each image").at_least(0).into<&DataSettings::pad>(),
    int_key("num_parallel_calls", "2", "decoding threads").at_least(1).into<&DataSettings::parallel_calls>(),
};
constexpr ConfigKey kOptimizerKeys[] = {
    number_key("lr", "1e-3", "Adam's learning rate").in(0, 1).below(1).into<&nn::AdamOptions::lr>(),
    number_key("beta1", "0.9", "first moment decay").in(0, 1).below(1).into<&nn::AdamOptions::beta1>(),
    number_key("beta2", "0.999", "second moment decay").in(0, 1).below(1).into<&nn::AdamOptions::beta2>(),
    object_key("lr_schedule", R"({"type": "constant"})", "nn/lr_schedule.h"),
};
constexpr ConfigKey kTrainKeys[] = {
    int_key("epochs", "2", "passes over the training images").at_least(1).into<&TrainSettings::epochs>(),
    int_key("batch_size", "128", "images per step").at_least(1).into<&TrainSettings::batch_size>(),
    int_key("seed", "0", "keys initialisation and shuffling").at_least(0).into<&TrainSettings::seed>(),
    int_key("log_every_steps", "100", "0: no log").at_least(0).into<&TrainSettings::log_every>(),
    int_key("max_steps", "0", "0: the epochs decide").at_least(0).into<&TrainSettings::max_steps>(),
};
constexpr ConfigKey kNetworkKeys[] = {
    array_key("layers", "[]", "nn/sequential_builder.h"),
    int_key("feature_layer", "", "the child whose output is the feature"),
};

DataSettings read_data(JsonReader& r) {
  DataSettings d;
  r.read("type");
  r.read_into(d);
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
  JsonReader top(config, source, kTopKeys);
  const std::filesystem::path out_dir = top.read_string("out_dir");
  JsonReader data_reader(top.read("data"), source + ".data", kDataKeys);
  const DataSettings data_settings = read_data(data_reader);
  JsonReader opt(top.read("optimizer"), source + ".optimizer", kOptimizerKeys);
  nn::AdamOptions adam;
  opt.read_into(adam);
  nlohmann::json& schedule_config = opt.read("lr_schedule");
  nn::BuiltLrSchedule schedule = nn::make_lr_schedule(schedule_config, opt.key_path("lr_schedule"));
  schedule_config = schedule.resolved;
  opt.finish();
  JsonReader train_reader(top.read("train"), source + ".train", kTrainKeys);
  TrainSettings train;
  train_reader.read_into(train);
  train_reader.finish();

  auto train_set = data::load_idx_dataset(data_settings.train_images, data_settings.train_labels);
  auto test_set = data::load_idx_dataset(data_settings.test_images, data_settings.test_labels);
  const data::Transform transform = image_transform(data_settings.pad);
  const Tensor probe = transform(train_set->get(0)).image;  // (C, H, W)
  const std::vector<int64_t> input_shape{probe.size(0), probe.size(1), probe.size(2)};

  nlohmann::json& network = top.read("network");
  JsonReader net_reader(network, source + ".network", kNetworkKeys);
  nn::BuiltSequential built = nn::build_sequential(net_reader.read("layers"), input_shape, net_reader.key_path("layers"),
                                                   RngKey{train.seed, stream_id(kClassifierInitPurpose)});
  const int64_t feature_layer = net_reader.read_int("feature_layer");
  net_reader.finish();
  GANTRY_CHECK(feature_layer >= 0 && feature_layer < static_cast<int64_t>(built.net->size()),
               source, ".network.feature_layer: expected a child index in [0, ", built.net->size(), "), found ", feature_layer);
  GANTRY_CHECK(built.output_shape.size() == 1, source, ".network.layers: expected (N, classes) logits at the end, "
               "found a per-example output of rank ", built.output_shape.size());
  top.finish();
  nn::Sequential& net = *built.net;
  nn::Adam optimizer(net.parameters(), adam);

  const data::Pipeline input = data::Pipeline(train_set)
                                   .shuffle(train_set->size(), train.seed)
                                   .map(transform, data_settings.parallel_calls)
                                   .batch(train.batch_size, true)
                                   .repeat(train.epochs)
                                   .prefetch(2);
  ClassifierReport report;
  const auto start = std::chrono::steady_clock::now();
  data::Iterator it = input.make_iterator();
  net.train();
  double loss_sum = 0;
  int64_t loss_count = 0;
  while (train.max_steps == 0 || report.steps < train.max_steps) {
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
    if (log && train.log_every > 0 && report.steps % train.log_every == 0) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      *log << "step " << report.steps << " | epoch " << batch->epochs.front() + 1 << "/" << train.epochs << " | loss "
           << std::fixed << std::setprecision(4) << loss_sum / static_cast<double>(loss_count) << " | "
           << std::setprecision(0) << static_cast<double>(report.steps * train.batch_size) / seconds << " images/s"
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
