// Trains a domain classifier with the engine (a sequential network, cross-entropy, Adam, the
// input pipeline), whose penultimate layer then serves as a feature network for domain FID
// (metrics/sequential_feature_network.h). Driven by a strict JSON config (gan_classifier
// --config; configs/fashion_mnist_classifier.json):
//
//   "out_dir": "runs/fashion_mnist_classifier"   writes classifier.safetensors (the weights),
//                                                classifier.json (the feature network
//                                                description) and report.json (accuracy, time)
//   "data": {"type": "idx", "train_images", "train_labels", "test_images", "test_labels",
//            "pad": 0, "num_parallel_calls": 2}
//   "network": {"layers": [...], "feature_layer": N}   (nn/sequential_builder.h)
//   "optimizer": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999,   Adam
//                 "lr_schedule": {"type": "constant"}}        (nn/lr_schedule.h)
//   "train": {"epochs": 2, "batch_size": 128, "seed": 0, "log_every_steps": 100,
//             "max_steps": 0}                   (max_steps > 0 stops earlier, e.g. in tests)
//
// Images are scaled to [-1, 1] as gan_train's data, so the classifier sees generated images the
// way it saw real ones.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

namespace gantry::metrics {

struct ClassifierReport {
  double test_accuracy = 0;  // on the test set, in [0, 1]
  int64_t test_examples = 0;
  int64_t steps = 0;
  double train_seconds = 0;  // the training loop's wall time (test evaluation excluded)
  std::string weights;       // path of classifier.safetensors
  std::string description;   // path of classifier.json
  nlohmann::json to_json() const;
};

// `config` is completed with its defaults; `source` names it in errors; progress lines go to `log`.
ClassifierReport train_classifier(nlohmann::json& config, const std::string& source, std::ostream* log);

}  // namespace gantry::metrics
