#include "hooks/sample_quality_hook.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <ostream>

#include "core/json_reader.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/estimator/gan_estimator.h"
#include "metrics/density_coverage.h"
#include "metrics/frechet_distance.h"
#include "metrics/generated_features.h"
#include "metrics/inception_score.h"
#include "metrics/intra_class_fid.h"
#include "metrics/kernel_distance.h"
#include "metrics/precision_recall.h"
#include "metrics/real_features.h"
#include "metrics/sequential_feature_network.h"
#include "metrics/statistics_cache.h"
#include "nn/state_dict.h"

namespace gantry::hooks {

namespace {

constexpr ConfigKey kSampleQualityKeys[] = {
    string_key("type", R"("fid")", "`fid`, `kid`, `pr` (precision/recall), `dc` or `density_coverage` (density and "
               "coverage), `intra_fid` (the FID of each class and their mean) or `is` (Inception score)")
        .one_of("fid, kid, pr, dc, density_coverage, intra_fid, is"),
    string_key("name", "", "output file `metric-<name>.jsonl` and best checkpoint `best-<name>.safetensors`")
        .documented_default("the type"),
    int_key("num_fake", "10000", "generated images per evaluation (split over the replicas)").at_least(2),
    int_key("num_real", "", "real images (the first ones of the run's input pipeline), moments cached")
        .at_least(2)
        .documented_default("`num_fake`"),
    int_key("every_steps", "1000", "evaluation interval; 0: only at `at_steps`").at_least(0),
    array_key("at_steps", "[]", "also evaluate at these steps (e.g. a sweep's rungs, docs/sweeps.md)")
        .expecting("a list of steps >= 1, e.g. [100, 300, 900]"),
    int_key("batch_size", "250", "images per generator / feature network call, per replica").at_least(1),
    bool_key("use_ema", "false", "sample the EMA generator (needs `train.generator_ema`)"),
    bool_key("keep_best", "false", "write `checkpoints/best-<name>.safetensors` whenever the value is the best so far"),
    int_key("seed", "0", "noise seed of the generated set (the same set at every evaluation)").at_least(0),
    string_key("cache_dir", R"("")", "where the real statistics are cached").documented_default(R"(`""` (model_dir))"),
    int_key("kid_subsets", "100", "`kid` only: random subsets averaged").at_least(1),
    int_key("kid_subset_size", "1000", "`kid` only: features per subset at most (>= 2)").at_least(2),
    int_key("k", "", "`pr` and `dc` only: k-th nearest neighbour radius").at_least(1).documented_default(
        "3 (`pr`), 5 (`dc`)"),
    int_key("splits", "10", "`is` only: splits of the generated set (at most `num_fake`)").at_least(1),
    any_key("network", "", "the feature network description")
        .expecting(R"(a feature network description, e.g. {"file": "runs/fashion_mnist_classifier/classifier.json"})")
        .documented_default("required"),
};

}  // namespace

std::span<const ConfigKey> sample_quality_keys() { return kSampleQualityKeys; }

SampleQualityOptions parse_sample_quality_options(nlohmann::json& entry, const std::string& path) {
  GANTRY_CHECK(entry.is_object(), path, ": expected {\"type\": \"fid\", ...}, found ", describe_json(entry));
  JsonReader r(entry, path, kSampleQualityKeys);
  SampleQualityOptions o;
  o.type = r.read_string("type");
  o.name = r.read("name", o.type).get<std::string>();
  if (o.type == "density_coverage") o.type = "dc";
  GANTRY_CHECK(!o.name.empty() && o.name.find_first_of("/\\") == std::string::npos, r.key_path("name"),
               ": expected a file-name-safe name, found \"", o.name, "\"");
  o.num_fake = r.read_int("num_fake");
  o.num_real = r.read("num_real", o.num_fake).get<int64_t>();
  o.every_steps = r.read_int("every_steps");
  const nlohmann::json& at_steps = r.read("at_steps");
  for (size_t i = 0; i < at_steps.size(); ++i) {
    GANTRY_CHECK(at_steps[i].is_number_integer() && at_steps[i].get<int64_t>() >= 1, r.key_path("at_steps"), "[", i,
                 "]: expected a step >= 1, found ", describe_json(at_steps[i]));
    o.at_steps.push_back(at_steps[i].get<int64_t>());
  }
  GANTRY_CHECK(o.every_steps > 0 || !o.at_steps.empty(), r.key_path("every_steps"),
               ": expected an interval >= 1, or at_steps to name the steps, found 0 and no at_steps (never evaluated)");
  o.batch_size = r.read_int("batch_size");
  o.use_ema = r.read_bool("use_ema");
  o.keep_best = r.read_bool("keep_best");
  o.seed = static_cast<uint64_t>(r.read_int("seed"));
  o.cache_dir = r.read_string("cache_dir");
  if (o.type == "kid") {
    o.kid_subsets = r.read_int("kid_subsets");
    o.kid_subset_size = r.read_int("kid_subset_size");
  }
  if (o.type == "pr") o.pr_k = r.read("k", o.pr_k).get<int64_t>();
  if (o.type == "dc") o.dc_k = r.read("k", o.dc_k).get<int64_t>();
  if (o.type == "is") {
    o.is_splits = r.read_int("splits");
    GANTRY_CHECK(o.is_splits <= o.num_fake, r.key_path("splits"), ": expected at most num_fake (", o.num_fake,
                 ") splits, found ", o.is_splits);
  }
  GANTRY_CHECK(!(o.keep_best && (o.type == "pr" || o.type == "dc")), r.key_path("keep_best"), ": expected false "
               "for \"", o.type, "\" (", o.type == "pr" ? "precision and recall" : "density and coverage",
               " are two numbers with no single best), found true");
  o.network = r.read("network");
  r.finish();
  return o;
}

bool shares_samples(const SampleQualityOptions& a, const SampleQualityOptions& b) {
  return a.network == b.network && a.num_fake == b.num_fake && a.num_real == b.num_real &&
         a.every_steps == b.every_steps && a.at_steps == b.at_steps && a.batch_size == b.batch_size && a.use_ema == b.use_ema &&
         a.seed == b.seed && a.cache_dir == b.cache_dir;
}

std::vector<std::shared_ptr<SampleQualityHook>> make_sample_quality_hooks(const std::vector<SampleQualityOptions>& entries,
                                                                          const std::filesystem::path& model_dir,
                                                                          const metrics::RealData& real, std::ostream* out) {
  std::vector<std::vector<SampleQualityOptions>> groups;
  for (const SampleQualityOptions& e : entries) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return shares_samples(g[0], e); });
    if (it == groups.end()) {
      groups.push_back({e});
    } else {
      it->push_back(e);
    }
  }
  std::vector<std::shared_ptr<SampleQualityHook>> hooks;
  for (auto& g : groups) hooks.push_back(std::make_shared<SampleQualityHook>(std::move(g), model_dir, real, out));
  return hooks;
}

SampleQualityHook::SampleQualityHook(std::vector<SampleQualityOptions> group, std::filesystem::path model_dir,
                                     metrics::RealData real, std::ostream* out)
    : model_dir_(std::move(model_dir)), real_(std::move(real)), out_(out), output_(out) {
  GANTRY_CHECK(!model_dir_.empty(), "SampleQualityHook: expected a model directory, found an empty path");
  GANTRY_CHECK(!group.empty(), "SampleQualityHook: expected at least one metric, found none");
  for (SampleQualityOptions& o : group) {
    GANTRY_CHECK(metrics_.empty() || shares_samples(metrics_[0].options, o), "SampleQualityHook: metric ", o.name,
                 " samples differently from ", metrics_[0].options.name, "; give it its own hook");
    for (const Metric& m : metrics_)
      GANTRY_CHECK(m.options.name != o.name, "hooks.metrics: two entries write metric-", o.name,
                   ".jsonl; give one a different \"name\"");
    metrics_.push_back({std::move(o), std::nullopt});
  }
}

std::filesystem::path SampleQualityHook::jsonl_path(size_t metric) const {
  return model_dir_ / ("metric-" + metrics_.at(metric).options.name + ".jsonl");
}

std::filesystem::path SampleQualityHook::best_path(size_t metric) const {
  return gan::checkpoint_dir(model_dir_) / ("best-" + metrics_.at(metric).options.name + ".safetensors");
}

bool SampleQualityHook::needs(const char* type) const {
  return std::any_of(metrics_.begin(), metrics_.end(), [&](const Metric& m) { return m.options.type == type; });
}

namespace {

// Lower is better for fid, kid and intra_fid, higher for the Inception score.
bool improves(const std::string& type, double value, const std::optional<double>& best) {
  if (!best) return true;
  return type == "is" ? value > *best : value < *best;
}

}  // namespace

void SampleQualityHook::begin(gan::GanEstimator& estimator) {
  if (networks_.empty()) {
    nlohmann::json spec = shared().network;
    std::unique_ptr<metrics::FeatureNetwork> first =
        metrics::make_feature_network(spec, "hooks.metrics[" + shared().name + "].network");
    GANTRY_CHECK(!needs("is") || first->has_logits(), "hooks.metrics[is].network: the Inception score needs "
                 "logits, but the network gives none (a sequential network needs \"logits\": true)");
    for (const Device& d : estimator.strategy().local_devices()) networks_.push_back(first->clone_to(d));
  }
  if (needs("intra_fid")) {
    const int64_t classes = estimator.spec().num_classes;
    GANTRY_CHECK(classes > 0, "hooks.metrics[intra_fid]: expected a class-conditional run (data with labels, "
                 "num_classes > 0), found num_classes = 0");
    GANTRY_CHECK(shared().num_fake >= 2 * classes, "hooks.metrics[intra_fid].num_fake: expected at least 2 per "
                 "class (", 2 * classes, " for ", classes, " classes), found ", shared().num_fake);
    fake_labels_ = metrics::generated_labels(shared().num_fake, classes);
  }
  // A resumed run keeps the best value of the lines written before.
  for (size_t i = 0; i < metrics_.size(); ++i) {
    std::ifstream in(jsonl_path(i));
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("value") && j["value"].is_number()) {
        const double v = j["value"].get<double>();
        if (improves(metrics_[i].options.type, v, metrics_[i].best)) metrics_[i].best = v;
      }
    }
  }
}

void SampleQualityHook::ensure_real_statistics(int64_t num_classes) {
  const SampleQualityOptions& o = shared();
  metrics::RealStatisticsKey key;
  key.dataset = real_.identity;
  key.transforms = real_.pipeline.describe();
  key.network = networks_[0]->identity();
  key.sample_count = o.num_real;
  const metrics::StatisticsCache cache(o.cache_dir.empty() ? model_dir_ : std::filesystem::path(o.cache_dir), out_);
  // The real features are computed at most once, and only when no cache file has what is needed.
  std::optional<Tensor> computed;
  const auto real_features = [&] {
    if (real_features_) return real_features_->features;
    if (!computed) computed = metrics::pipeline_features(real_.pipeline, *networks_[0], o.num_real, o.batch_size).features;
    return *computed;
  };
  if ((needs("kid") || needs("pr") || needs("dc")) && !real_features_)
    real_features_ = metrics::FeatureBatch{cache.features_or_compute(key, real_features), Tensor()};
  if (needs("fid") && !real_moments_) {
    real_moments_ = cache.get_or_compute(key, [&] {
      metrics::FeatureMoments m;
      m.add(real_features());
      return m;
    });
  }
  if (needs("intra_fid") && !real_class_moments_) {
    real_class_moments_ = cache.class_moments_or_compute(key, num_classes, [&] {
      return metrics::class_moments(real_features(), metrics::pipeline_labels(real_.pipeline, o.num_real), num_classes,
                                    "hooks.metrics[intra_fid]: real features");
    });
  }
}

nlohmann::json SampleQualityHook::metric_values(const SampleQualityOptions& o, const metrics::FeatureMoments* fake_moments,
                                                const metrics::FeatureBatch* fake) const {
  if (o.type == "fid") {
    if (fake_moments) return {{"value", metrics::frechet_distance(*real_moments_, *fake_moments).value}};
    metrics::FeatureMoments m;
    m.add(fake->features);
    return {{"value", metrics::frechet_distance(*real_moments_, m).value}};
  }
  if (o.type == "kid") {
    metrics::KernelDistanceOptions k;
    k.num_subsets = o.kid_subsets;
    k.max_subset_size = o.kid_subset_size;
    k.seed = o.seed;
    const metrics::KernelDistance kid = metrics::kernel_distance(real_features_->features, fake->features, k);
    return {{"value", kid.value}, {"kid_std", kid.std}, {"kid_subset_size", kid.subset_size}};
  }
  if (o.type == "pr") {
    metrics::PrecisionRecallOptions p;
    p.k = o.pr_k;
    const metrics::PrecisionRecall pr = metrics::precision_recall(real_features_->features, fake->features, p);
    return {{"value", pr.precision}, {"precision", pr.precision}, {"recall", pr.recall}};
  }
  if (o.type == "dc") {
    metrics::DensityCoverageOptions d;
    d.k = o.dc_k;
    const metrics::DensityCoverage dc = metrics::density_coverage(real_features_->features, fake->features, d);
    return {{"value", dc.density}, {"density", dc.density}, {"coverage", dc.coverage}};
  }
  if (o.type == "intra_fid") {
    const metrics::IntraClassFid f = metrics::intra_class_fid(
        *real_class_moments_,
        metrics::class_moments(fake->features, fake_labels_, static_cast<int64_t>(real_class_moments_->size()),
                               "hooks.metrics[intra_fid]: generated features"));
    return {{"value", f.mean}, {"intra_fid_per_class", f.per_class}};
  }
  const metrics::InceptionScore is = metrics::inception_score(fake->logits, o.is_splits);
  return {{"value", is.mean}, {"is_std", is.std}};
}

double SampleQualityHook::evaluate(gan::GanEstimator& estimator) {
  const auto start = std::chrono::steady_clock::now();
  const bool chief = estimator.strategy().is_chief();
  const SampleQualityOptions& o = shared();
  if (chief) ensure_real_statistics(estimator.spec().num_classes);
  metrics::GeneratedSetOptions g;
  g.count = o.num_fake;
  g.batch_size = o.batch_size;
  g.use_ema = o.use_ema;
  g.seed = o.seed;
  // FID alone needs only the moments (small to gather); the others need the features themselves.
  const bool features_needed = needs("kid") || needs("pr") || needs("dc") || needs("intra_fid") || needs("is");
  std::optional<metrics::FeatureMoments> fake_moments;
  std::optional<metrics::FeatureBatch> fake;
  if (features_needed) {
    fake = metrics::gathered_generated_features(estimator, networks_, g, needs("is"));
  } else {
    fake_moments = metrics::generated_moments(estimator, networks_, g);
  }
  if (!chief) return 0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double first_value = 0;
  for (size_t i = 0; i < metrics_.size(); ++i) {
    Metric& m = metrics_[i];
    nlohmann::json line = {{"step", estimator.global_step()}, {"metric", m.options.type}};
    const nlohmann::json values = metric_values(m.options, fake_moments ? &*fake_moments : nullptr, fake ? &*fake : nullptr);
    line.update(values);
    line["seconds"] = seconds;  // sampling and features, shared by the group's metrics
    nlohmann::json settings = {{"num_fake", o.num_fake}, {"num_real", o.num_real}, {"use_ema", o.use_ema},
                               {"seed", o.seed}, {"replicas", estimator.strategy().num_replicas_in_sync()},
                               {"feature_dim", networks_[0]->feature_dim()},
                               {"network", nlohmann::json::parse(networks_[0]->identity())}};
    if (m.options.type == "kid") settings["kid_subsets"] = m.options.kid_subsets;
    if (m.options.type == "pr") settings["k"] = m.options.pr_k;
    if (m.options.type == "dc") settings["k"] = m.options.dc_k;
    if (m.options.type == "intra_fid") settings["num_classes"] = real_class_moments_->size();
    if (m.options.type == "is") settings["splits"] = m.options.is_splits;
    line["settings"] = settings;
    const double value = values["value"].get<double>();
    if (i == 0) first_value = value;
    const std::filesystem::path path = jsonl_path(i);
    output_.write(path, [&] {
      std::ofstream f(path, std::ios::app);
      GANTRY_CHECK(f.good(), path.string(), ": cannot append");
      f << line.dump() << "\n";
      f.flush();
      GANTRY_CHECK(f.good(), path.string(), ": write failed");
    });
    if (out_) {
      *out_ << m.options.name << " step " << estimator.global_step() << " | " << std::setprecision(6) << value;
      if (m.options.type == "pr") *out_ << " precision, " << values["recall"].get<double>() << " recall";
      if (m.options.type == "dc") *out_ << " density, " << values["coverage"].get<double>() << " coverage";
      if (m.options.type == "intra_fid") *out_ << " mean over " << real_class_moments_->size() << " classes";
      *out_ << " (" << o.num_fake << " fakes, " << std::fixed << std::setprecision(1) << seconds << " s)"
            << std::defaultfloat << std::endl;
    }
    keep_best(estimator, m, value);
  }
  return first_value;
}

void SampleQualityHook::keep_best(gan::GanEstimator& estimator, Metric& m, double value) {
  if (!improves(m.options.type, value, m.best)) return;
  m.best = value;
  if (!m.options.keep_best) return;
  const nn::Module& g_module = m.options.use_ema ? *estimator.generator_ema() : *estimator.replica(0).generator.module;
  const size_t index = static_cast<size_t>(&m - metrics_.data());
  const std::filesystem::path path = best_path(index);
  const bool ok = output_.write(path, [&] {
    std::filesystem::create_directories(gan::checkpoint_dir(model_dir_));
    nn::save_state_dict(g_module, path.string(),
                        {{"step", std::to_string(estimator.global_step())},
                         {"metric", m.options.name},
                         {"value", std::to_string(value)},
                         {"generator", m.options.use_ema ? "ema" : "generator"}});
  });
  if (ok && out_) *out_ << "  new best " << m.options.name << ": wrote " << path.string() << std::endl;
}

void SampleQualityHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& results) {
  const SampleQualityOptions& o = shared();
  if ((o.every_steps > 0 && results.step % o.every_steps == 0) ||
      std::find(o.at_steps.begin(), o.at_steps.end(), results.step) != o.at_steps.end())
    evaluate(estimator);
}

}  // namespace gantry::hooks
