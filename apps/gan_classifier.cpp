// gan_classifier --config FILE: trains a domain classifier (metrics/classifier_training.h) whose
// features give a domain FID (gan_eval --network, hooks.metrics[].network), and reports its test
// accuracy and training time.
#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>

#include "apps/app_support.h"
#include "gan/config/run_config.h"
#include "metrics/classifier_training.h"

int main(int argc, char** argv) {
  std::string config_path;
  std::vector<std::string> overrides;
  CLI::App app{"gan_classifier: train a classifier whose features serve domain FID"};
  app.add_option("--config", config_path, "classifier config (configs/fashion_mnist_classifier.json)")->required();
  app.add_option("--set", overrides, "override a config key: key.path=value (repeatable)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return gantry::apps::run_guarded("gan_classifier", [&] {
    nlohmann::json config = gantry::apps::read_json_file(config_path);
    for (const std::string& o : overrides) gantry::gan::apply_override(config, o);
    gantry::metrics::ClassifierReport report = gantry::metrics::train_classifier(config, config_path, &std::cout);
    std::cout << std::fixed << std::setprecision(2) << "test accuracy " << report.test_accuracy * 100 << "% on " << report.test_examples << " images after "
              << report.steps << " steps in " << std::setprecision(1) << report.train_seconds << " s\n"
              << "wrote " << report.weights << " and " << report.description << "\n";
    return 0;
  });
}
