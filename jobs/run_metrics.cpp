#include "jobs/run_metrics.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include "core/json_file.h"
#include "core/ops/ops.h"
#include "gan/checkpoint/checkpoint_files.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/config/plugin_loader.h"
#include "gan/config/run_config.h"
#include "gan/estimator/gan_estimator.h"
#include "metrics/generated_features.h"
#include "metrics/image_files.h"
#include "metrics/intra_class_fid.h"
#include "metrics/real_features.h"
#include "metrics/sequential_feature_network.h"
#include "metrics/statistics_cache.h"

namespace gantry::jobs {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void report(const MetricOptions& options, const std::string& what, int64_t done, int64_t total) {
  if (options.progress) options.progress(what, done, total);
}

// Features of `images` in chunks of 8 network batches, reporting progress after each.
metrics::FeatureBatch features_in_chunks(metrics::FeatureNetwork& network, const Tensor& images, bool logits,
                                         const std::string& what, const MetricOptions& options) {
  std::vector<Tensor> f, l;
  for (int64_t begin = 0; begin < images.size(0); begin += options.batch * 8) {
    const int64_t end = std::min(images.size(0), begin + options.batch * 8);
    metrics::FeatureBatch b =
        metrics::extract_in_batches(network, ops::slice(images, 0, begin, end), options.batch, logits);
    f.push_back(b.features);
    if (b.logits.defined()) l.push_back(b.logits);
    report(options, what, end, images.size(0));
  }
  metrics::FeatureBatch all;
  all.features = ops::concat(f, 0);
  if (!l.empty()) all.logits = ops::concat(l, 0);
  return all;
}

metrics::MetricInputs inputs_for(const MetricOptions& options) {
  metrics::MetricInputs in;
  in.kid.num_subsets = options.kid_subsets;
  in.kid.max_subset_size = options.kid_subset_size;
  in.dc.k = options.dc_k;
  return in;
}

}  // namespace

void check_metric_options(const MetricOptions& options) {
  auto at_least = [&options](const char* name, int64_t value, int64_t lowest) {
    GANTRY_CHECK(value >= lowest, argument_name(name, options.style), ": expected an integer >= ", lowest, ", found ",
                 value);
  };
  at_least("num", options.num, 0);
  at_least("num_real", options.num_real, 0);
  at_least("batch", options.batch, 1);
  at_least("kid_subsets", options.kid_subsets, 1);
  at_least("kid_subset_size", options.kid_subset_size, 2);
  at_least("dc_k", options.dc_k, 1);
}

ImageSet image_set_from_path(const std::string& path, int64_t max_count, const char* argument, ArgumentStyle style) {
  GANTRY_CHECK(max_count >= 0, "image_set_from_path: expected a count >= 0 (0: all), found ", max_count);
  const std::string name = style == ArgumentStyle::Python ? std::string(argument) + " (" + path + ")"
                                                          : argument_name(argument, style) + " " + path;
  return {metrics::load_image_set(path, max_count, name), name};
}

ImageSet image_set_from_array(Tensor images, int64_t max_count, const char* argument, ArgumentStyle style) {
  GANTRY_CHECK(max_count >= 0, "image_set_from_array: expected a count >= 0 (0: all), found ", max_count);
  const std::string name = argument_name(argument, style);
  metrics::check_image_set(images, name);
  if (max_count > 0 && images.size(0) > max_count) images = ops::slice(images, 0, 0, max_count);
  return {images, name};
}

std::unique_ptr<metrics::FeatureNetwork> feature_network_from_file(const std::string& path, const char* what) {
  GANTRY_CHECK(!path.empty(), what, ": expected a feature network description file "
               "(e.g. runs/fashion_mnist_classifier/classifier.json from gan_classifier)");
  nlohmann::json spec = {{"file", path}};
  return metrics::make_feature_network(spec, what);
}

nlohmann::json compare_image_sets(const ImageSet& real, const ImageSet& fake, const metrics::MetricSelection& selection,
                                  metrics::FeatureNetwork& network, const MetricOptions& options) {
  const auto start = Clock::now();
  check_metric_options(options);
  GANTRY_CHECK(!selection.intra_fid, "intra_fid: expected labelled images, found two image sets without labels "
               "(evaluate a class-conditional run with --model-dir, or Run.evaluate)");
  GANTRY_CHECK(fake.images.defined(), fake.name, ": expected images (N, C, H, W), found none");
  GANTRY_CHECK(real.images.defined() || !selection.needs_real(), "real images are needed for fid, kid, pr and dc; "
               "only is works without");
  metrics::MetricInputs in = inputs_for(options);
  // Too few images on a side would fail deep inside a metric; here the error names the set.
  metrics::check_image_count(selection, in, metrics::ImageSide::Fake, fake.images.size(0), fake.name);
  if (selection.needs_real())
    metrics::check_image_count(selection, in, metrics::ImageSide::Real, real.images.size(0), real.name);
  const metrics::FeatureBatch fake_features =
      features_in_chunks(network, fake.images, selection.is, "fake features", options);
  metrics::FeatureBatch real_features;
  metrics::FeatureMoments real_moments;
  if (selection.needs_real()) {
    real_features = features_in_chunks(network, real.images, false, "real features", options);
    real_moments.add(real_features.features);
    in.real = &real_features;
    in.real_moments = &real_moments;
  }
  in.fake = &fake_features;
  nlohmann::json row = metrics::compute_metrics(selection, in);
  row["num_fake"] = fake_features.features.size(0);
  row["num_real"] = selection.needs_real() ? real_features.features.size(0) : 0;
  row["seconds"] = seconds_since(start);
  return row;
}

namespace {

// What a run's checkpoints are compared with: the reals' features (when a metric needs them) and
// moments (fid; per class for intra_fid).
struct Reals {
  metrics::FeatureBatch features;
  std::optional<metrics::FeatureMoments> moments;
  std::optional<std::vector<metrics::FeatureMoments>> class_moments;
};

// The first num_real images of the run's input, features and moments cached as the hook's.
Reals reals_of_run(const gan::RunSetup& setup, const fs::path& model_dir, const metrics::MetricSelection& selection,
                   metrics::FeatureNetwork& network, const MetricOptions& options, int64_t num_real) {
  const metrics::RealData real_data = metrics::run_real_data(setup);
  metrics::RealStatisticsKey key{real_data.identity, real_data.pipeline.describe(), network.identity(), num_real};
  const metrics::StatisticsCache cache(options.cache_dir.empty() ? model_dir : options.cache_dir, options.log);
  // The real features are computed at most once here, and only when no cache file has them.
  std::optional<Tensor> computed;
  const auto compute_features = [&] {
    if (!computed)
      computed = metrics::pipeline_features(real_data.pipeline, network, num_real, options.batch, false,
                                            [&](int64_t d, int64_t t) { report(options, "real features", d, t); })
                     .features;
    return *computed;
  };
  Reals reals;
  if (selection.needs_real_features()) reals.features.features = cache.features_or_compute(key, compute_features);
  const auto features = [&] {
    return reals.features.features.defined() ? reals.features.features : compute_features();
  };
  if (selection.fid) {
    reals.moments = cache.get_or_compute(key, [&] {
      metrics::FeatureMoments m;
      m.add(features());
      return m;
    });
  }
  if (selection.intra_fid) {
    const int64_t num_classes = setup.spec.num_classes;
    reals.class_moments = cache.class_moments_or_compute(key, num_classes, [&] {
      return metrics::class_moments(features(), metrics::pipeline_labels(real_data.pipeline, num_real), num_classes,
                                    "intra_fid: real features");
    });
  }
  return reals;
}

// A given set: its features once, not cached.
Reals reals_of_set(const ImageSet& set, const metrics::MetricSelection& selection, metrics::FeatureNetwork& network,
                   const MetricOptions& options) {
  Reals reals;
  if (!selection.needs_real()) return reals;
  reals.features = features_in_chunks(network, set.images, false, "real features", options);
  if (selection.fid) reals.moments.emplace().add(reals.features.features);
  return reals;
}

}  // namespace

std::vector<nlohmann::json> evaluate_run(const fs::path& model_dir, const std::vector<fs::path>& checkpoints,
                                         const metrics::MetricSelection& selection, metrics::FeatureNetwork& network,
                                         const MetricOptions& options, const ImageSet& real_set) {
  check_metric_options(options);
  const bool given_reals = real_set.images.defined();
  GANTRY_CHECK(!given_reals || !selection.intra_fid, real_set.name, ": intra_fid needs the run's own labelled images, "
               "found a real image set (image sets carry no labels); leave it out");
  const int64_t num_real = given_reals ? real_set.images.size(0) : options.num_real > 0 ? options.num_real : options.num;
  {
    const metrics::MetricInputs needs = inputs_for(options);
    metrics::check_image_count(selection, needs, metrics::ImageSide::Fake, options.num,
                               argument_name("num", options.style));
    if (selection.needs_real())
      metrics::check_image_count(selection, needs, metrics::ImageSide::Real, num_real,
                                 given_reals ? real_set.name
                                             : argument_name(options.num_real > 0 ? "num_real" : "num", options.style));
  }
  nlohmann::json config = read_json_file((model_dir / "config.json").string());
  gan::load_plugins(config);
  config["strategy"]["type"] = "one_device";  // evaluation runs on one CPU device
  config["strategy"]["devices"] = "cpu:0";
  // A given real set needs no run data (a converted network's may be on another machine).
  gan::RunSetup setup =
      gan::resolve_run_config(config, (model_dir / "config.json").string(), {.open_data = !given_reals});
  gan::apply_process_settings(setup);  // the run's thread budget
  GANTRY_CHECK(!options.ema || setup.spec.generator_ema.enabled, "ema: this run has no EMA generator");
  const int64_t num_classes = setup.spec.num_classes;
  GANTRY_CHECK(!selection.intra_fid || num_classes > 0, "intra_fid: expected a class-conditional run (data with "
               "labels, num_classes > 0), found num_classes = 0 in ", (model_dir / "config.json").string());

  const Reals reals = given_reals ? reals_of_set(real_set, selection, network, options)
                                  : reals_of_run(setup, model_dir, selection, network, options, num_real);
  std::vector<int64_t> fake_labels;
  if (selection.intra_fid) fake_labels = metrics::generated_labels(options.num, num_classes);

  gan::GanEstimator estimator(setup.spec, distribute::make_one_device_strategy(Device::cpu()), setup.train.seed);
  std::vector<nlohmann::json> rows;
  for (const fs::path& checkpoint : checkpoints) {
    const auto start = Clock::now();
    // Sampling needs the networks only, so a checkpoint without optimizer state (a converted
    // official network, scripts/convert_stylegan2_pkl.py) is scored as a training run's is.
    const gan::CheckpointFile file = gan::read_checkpoint_file(checkpoint);
    GANTRY_CHECK(!options.ema || !gan::checkpoint_tensors(file, gan::kGeneratorEmaPrefix).empty(), checkpoint.string(),
                 ": ema: expected the EMA generator's tensors (generator_ema.*), found none");
    gan::load_checkpoint_networks(file, estimator, estimator.generator_ema());
    metrics::GeneratedSetOptions g;
    g.count = options.num;
    g.batch_size = options.batch;
    g.use_ema = options.ema;
    g.seed = options.seed;
    if (options.log) *options.log << "evaluating " << checkpoint.filename().string() << " (" << options.num << " samples)\n";
    const metrics::FeatureBatch fake = metrics::generated_features(estimator, network, g, selection.is);
    metrics::MetricInputs in = inputs_for(options);
    in.real = reals.features.features.defined() ? &reals.features : nullptr;
    in.real_moments = reals.moments ? &*reals.moments : nullptr;
    in.real_class_moments = reals.class_moments ? &*reals.class_moments : nullptr;
    in.fake_labels = selection.intra_fid ? &fake_labels : nullptr;
    in.fake = &fake;
    nlohmann::json row = metrics::compute_metrics(selection, in);
    row["step"] = file.step;
    row["checkpoint"] = checkpoint.string();
    row["generator"] = options.ema ? "ema" : "generator";
    row["num_fake"] = options.num;
    row["num_real"] = num_real;
    row["seconds"] = seconds_since(start);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace gantry::jobs
