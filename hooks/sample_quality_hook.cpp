#include "hooks/sample_quality_hook.h"

#include <chrono>
#include <fstream>
#include <iomanip>
#include <ostream>

#include "core/json_reader.h"
#include "gan/gan_estimator.h"
#include "gan/estimator_checkpoint.h"
#include "metrics/frechet_distance.h"
#include "metrics/generated_features.h"
#include "metrics/real_features.h"
#include "metrics/sequential_feature_network.h"
#include "metrics/statistics_cache.h"
#include "nn/state_dict.h"

namespace gantry::hooks {

SampleQualityOptions parse_sample_quality_options(nlohmann::json& entry, const std::string& path) {
  GANTRY_CHECK(entry.is_object(), path, ": expected {\"type\": \"fid\", ...}, found ", describe_json(entry));
  JsonReader r(entry, path);
  SampleQualityOptions o;
  o.type = r.get_choice("type", "fid", {"fid"});
  o.name = r.get_string("name", o.type);
  GANTRY_CHECK(!o.name.empty() && o.name.find_first_of("/\\") == std::string::npos, r.key_path("name"),
               ": expected a file-name-safe name, found \"", o.name, "\"");
  o.num_fake = r.get_int("num_fake", o.num_fake);
  GANTRY_CHECK(o.num_fake >= 2, r.key_path("num_fake"), ": expected an integer >= 2, found ", o.num_fake);
  o.num_real = r.get_int("num_real", o.num_fake);
  GANTRY_CHECK(o.num_real >= 2, r.key_path("num_real"), ": expected an integer >= 2, found ", o.num_real);
  o.every_steps = r.get_positive_int("every_steps", o.every_steps);
  o.batch_size = r.get_positive_int("batch_size", o.batch_size);
  o.use_ema = r.get_bool("use_ema", o.use_ema);
  o.keep_best = r.get_bool("keep_best", o.keep_best);
  o.seed = static_cast<uint64_t>(r.get_non_negative_int("seed", 0));
  o.cache_dir = r.get_string("cache_dir", "");
  GANTRY_CHECK(r.has("network"), r.key_path("network"), ": missing (expected a feature network description, "
               "e.g. {\"file\": \"runs/fashion_mnist_classifier/classifier.json\"})");
  o.network = r.value("network", nlohmann::json::object());
  r.finish();
  return o;
}

SampleQualityHook::SampleQualityHook(SampleQualityOptions options, std::filesystem::path model_dir, metrics::RealData real,
                                     std::ostream* out)
    : options_(std::move(options)), model_dir_(std::move(model_dir)), real_(std::move(real)), out_(out) {
  GANTRY_CHECK(!model_dir_.empty(), "SampleQualityHook: expected a model directory, found an empty path");
}

std::filesystem::path SampleQualityHook::best_path() const {
  return gan::checkpoint_dir(model_dir_) / ("best-" + options_.name + ".safetensors");
}

void SampleQualityHook::begin(gan::GanEstimator& estimator) {
  if (networks_.empty()) {
    nlohmann::json spec = options_.network;
    std::unique_ptr<metrics::FeatureNetwork> first =
        metrics::make_feature_network(spec, "hooks.metrics[" + options_.name + "].network");
    for (const Device& d : estimator.strategy().local_devices()) networks_.push_back(first->clone_to(d));
  }
  // A resumed run keeps the best value of the lines written before.
  std::ifstream in(jsonl_path());
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("value") && j["value"].is_number()) {
      const double v = j["value"].get<double>();
      if (!best_ || v < *best_) best_ = v;
    }
  }
}

void SampleQualityHook::ensure_real_moments() {
  if (real_moments_) return;
  metrics::RealStatisticsKey key;
  key.dataset = real_.identity;
  key.transforms = real_.pipeline.describe();
  key.network = networks_[0]->identity();
  key.sample_count = options_.num_real;
  const metrics::StatisticsCache cache(options_.cache_dir.empty() ? model_dir_ : std::filesystem::path(options_.cache_dir),
                                       out_);
  real_moments_ = cache.get_or_compute(key, [&] {
    metrics::FeatureMoments m;
    m.add(metrics::pipeline_features(real_.pipeline, *networks_[0], options_.num_real, options_.batch_size).features);
    return m;
  });
}

double SampleQualityHook::evaluate(gan::GanEstimator& estimator) {
  const auto start = std::chrono::steady_clock::now();
  const bool chief = estimator.strategy().is_chief();
  if (chief) ensure_real_moments();
  metrics::GeneratedSetOptions g;
  g.count = options_.num_fake;
  g.batch_size = options_.batch_size;
  g.use_ema = options_.use_ema;
  g.seed = options_.seed;
  const metrics::FeatureMoments fake = metrics::generated_moments(estimator, networks_, g);
  if (!chief) return 0;
  const double value = metrics::frechet_distance(*real_moments_, fake).value;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json line = {
      {"step", estimator.global_step()},
      {"metric", options_.type},
      {"value", value},
      {"seconds", seconds},
      {"settings",
       {{"num_fake", options_.num_fake}, {"num_real", options_.num_real}, {"use_ema", options_.use_ema},
        {"seed", options_.seed}, {"replicas", estimator.strategy().num_replicas_in_sync()},
        {"feature_dim", networks_[0]->feature_dim()}, {"network", nlohmann::json::parse(networks_[0]->identity())}}}};
  {
    std::ofstream f(jsonl_path(), std::ios::app);
    GANTRY_CHECK(f.good(), jsonl_path().string(), ": cannot append");
    f << line.dump() << "\n";
  }
  if (out_)
    *out_ << options_.name << " step " << estimator.global_step() << " | " << std::setprecision(6) << value << " ("
          << options_.num_fake << " fakes, " << std::fixed << std::setprecision(1) << seconds << " s)"
          << std::defaultfloat << std::endl;
  if (options_.keep_best && (!best_ || value < *best_)) {
    const nn::Module& g_module = options_.use_ema ? *estimator.generator_ema() : *estimator.replica(0).generator.module;
    std::filesystem::create_directories(gan::checkpoint_dir(model_dir_));
    nn::save_state_dict(g_module, best_path().string(),
                        {{"step", std::to_string(estimator.global_step())},
                         {"metric", options_.name},
                         {"value", std::to_string(value)},
                         {"generator", options_.use_ema ? "ema" : "generator"}});
    if (out_) *out_ << "  new best " << options_.name << ": wrote " << best_path().string() << std::endl;
  }
  if (!best_ || value < *best_) best_ = value;
  return value;
}

void SampleQualityHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& results) {
  if (results.step % options_.every_steps == 0) evaluate(estimator);
}

}  // namespace gantry::hooks
