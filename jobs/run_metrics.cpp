#include "jobs/run_metrics.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>

#include "core/json_file.h"
#include "core/ops/ops.h"
#include "gan/checkpoint_files.h"
#include "gan/estimator_checkpoint.h"
#include "gan/gan_estimator.h"
#include "gan/plugin_loader.h"
#include "gan/run_config.h"
#include "metrics/generated_features.h"
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

std::unique_ptr<metrics::FeatureNetwork> feature_network_from_file(const std::string& path, const char* what) {
  GANTRY_CHECK(!path.empty(), what, ": expected a feature network description file "
               "(e.g. runs/fashion_mnist_classifier/classifier.json from gan_classifier)");
  nlohmann::json spec = {{"file", path}};
  return metrics::make_feature_network(spec, what);
}

nlohmann::json compare_image_sets(const Tensor& real, const Tensor& fake, const metrics::MetricSelection& selection,
                                  metrics::FeatureNetwork& network, const MetricOptions& options) {
  const auto start = Clock::now();
  GANTRY_CHECK(options.batch >= 1, "batch: expected >= 1, found ", options.batch);
  GANTRY_CHECK(fake.defined() && fake.dim() == 4, "fake: expected images (N, C, H, W), found ",
               fake.defined() ? fake.shape().str() : std::string("none"));
  GANTRY_CHECK(!selection.intra_fid, "intra_fid: expected labelled images, found two image sets without labels "
               "(evaluate a class-conditional run with --model-dir, or Run.evaluate)");
  GANTRY_CHECK(real.defined() || !selection.needs_real(), "real images are needed for fid, kid, pr and dc; only is "
               "works without");
  const metrics::FeatureBatch fake_features = features_in_chunks(network, fake, selection.is, "fake features", options);
  metrics::FeatureBatch real_features;
  metrics::FeatureMoments real_moments;
  metrics::MetricInputs in = inputs_for(options);
  if (selection.needs_real()) {
    GANTRY_CHECK(real.dim() == 4, "real: expected images (N, C, H, W), found ", real.shape().str());
    real_features = features_in_chunks(network, real, false, "real features", options);
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

std::vector<fs::path> run_checkpoints(const fs::path& model_dir, int64_t step, bool all_steps, std::ostream* log) {
  if (step >= 0) {
    const fs::path p = gan::checkpoint_dir(model_dir) / gan::checkpoint_file_name(step);
    GANTRY_CHECK(fs::exists(p), "step ", step, ": no checkpoint ", p.string());
    return {p};
  }
  if (all_steps) {
    std::vector<std::pair<int64_t, fs::path>> found;
    if (fs::exists(gan::checkpoint_dir(model_dir)))
      for (const auto& e : fs::directory_iterator(gan::checkpoint_dir(model_dir)))
        if (auto s = gan::checkpoint_step(e.path().filename().string())) found.emplace_back(*s, e.path());
    std::sort(found.begin(), found.end());
    GANTRY_CHECK(!found.empty(), "all steps: no checkpoint in ", gan::checkpoint_dir(model_dir).string());
    std::vector<fs::path> paths;
    for (auto& f : found) paths.push_back(f.second);
    return paths;
  }
  auto latest = gan::latest_checkpoint(model_dir, log);
  GANTRY_CHECK(latest.has_value(), model_dir.string(), ": no checkpoint to evaluate");
  return {*latest};
}

std::vector<nlohmann::json> evaluate_run(const fs::path& model_dir, const std::vector<fs::path>& checkpoints,
                                         const metrics::MetricSelection& selection, metrics::FeatureNetwork& network,
                                         const MetricOptions& options) {
  GANTRY_CHECK(options.num >= 2, "num: expected at least 2 samples, found ", options.num);
  GANTRY_CHECK(options.batch >= 1, "batch: expected >= 1, found ", options.batch);
  nlohmann::json config = read_json_file((model_dir / "config.json").string());
  gan::load_plugins(config);
  config["strategy"]["type"] = "one_device";  // evaluation runs on one CPU device
  config["strategy"]["devices"] = "cpu:0";
  gan::RunSetup setup = gan::resolve_run_config(config, (model_dir / "config.json").string());
  gan::apply_process_settings(setup);  // the run's thread budget
  GANTRY_CHECK(!options.ema || setup.spec.generator_ema.enabled, "ema: this run has no EMA generator");
  const int64_t num_classes = setup.spec.num_classes;
  GANTRY_CHECK(!selection.intra_fid || num_classes > 0, "intra_fid: expected a class-conditional run (data with "
               "labels, num_classes > 0), found num_classes = 0 in ", (model_dir / "config.json").string());

  // Real features: the first num_real images of the run's input, moments cached as the hook's.
  const int64_t num_real = options.num_real > 0 ? options.num_real : options.num;
  const metrics::RealData real_data = metrics::run_real_data(setup);
  metrics::RealStatisticsKey key{real_data.identity, real_data.pipeline.describe(), network.identity(), num_real};
  const metrics::StatisticsCache cache(options.cache_dir.empty() ? model_dir : options.cache_dir, options.log);
  // The real features are computed at most once here, and only when no cache file has them.
  std::optional<Tensor> computed_real;
  const auto real_features = [&] {
    if (!computed_real)
      computed_real = metrics::pipeline_features(real_data.pipeline, network, num_real, options.batch, false,
                                                 [&](int64_t d, int64_t t) { report(options, "real features", d, t); })
                          .features;
    return *computed_real;
  };
  metrics::FeatureBatch real;
  std::optional<metrics::FeatureMoments> real_moments;
  if (selection.needs_real_features()) real.features = cache.features_or_compute(key, real_features);
  const auto some_real_features = [&] { return real.features.defined() ? real.features : real_features(); };
  if (selection.fid) {
    real_moments = cache.get_or_compute(key, [&] {
      metrics::FeatureMoments m;
      m.add(some_real_features());
      return m;
    });
  }
  std::optional<std::vector<metrics::FeatureMoments>> real_class_moments;
  std::vector<int64_t> fake_labels;
  if (selection.intra_fid) {
    real_class_moments = cache.class_moments_or_compute(key, num_classes, [&] {
      return metrics::class_moments(some_real_features(), metrics::pipeline_labels(real_data.pipeline, num_real),
                                    num_classes, "intra_fid: real features");
    });
    fake_labels = metrics::generated_labels(options.num, num_classes);
  }

  gan::GanEstimator estimator(setup.spec, distribute::make_one_device_strategy(Device::cpu()), setup.train.seed);
  std::vector<nlohmann::json> rows;
  for (const fs::path& checkpoint : checkpoints) {
    const auto start = Clock::now();
    gan::LoadCheckpointOptions load;
    load.generator_ema = estimator.generator_ema();
    gan::load_checkpoint(checkpoint, estimator, load);
    metrics::GeneratedSetOptions g;
    g.count = options.num;
    g.batch_size = options.batch;
    g.use_ema = options.ema;
    g.seed = options.seed;
    if (options.log) *options.log << "evaluating " << checkpoint.filename().string() << " (" << options.num << " samples)\n";
    const metrics::FeatureBatch fake = metrics::generated_features(estimator, network, g, selection.is);
    metrics::MetricInputs in = inputs_for(options);
    in.real = real.features.defined() ? &real : nullptr;
    in.real_moments = real_moments ? &*real_moments : nullptr;
    in.real_class_moments = real_class_moments ? &*real_class_moments : nullptr;
    in.fake_labels = selection.intra_fid ? &fake_labels : nullptr;
    in.fake = &fake;
    nlohmann::json row = metrics::compute_metrics(selection, in);
    row["step"] = estimator.global_step();
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
