#include "metrics/statistics_cache.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "base/error.h"
#include "core/ops/ops.h"
#include "nn/safetensors.h"

namespace gantry::metrics {

namespace {

uint64_t fnv1a(const void* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const auto* bytes = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

nlohmann::json RealStatisticsKey::to_json() const {
  return {{"dataset", dataset}, {"transforms", transforms}, {"network", network}, {"sample_count", sample_count}};
}

std::string RealStatisticsKey::hash() const {
  const std::string text = to_json().dump();
  return hex(fnv1a(text.data(), text.size()));
}

std::string describe_files(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& p : paths) {
    if (!out.empty()) out += "; ";
    out += p;
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    if (ec) continue;
    const auto time = std::filesystem::last_write_time(p, ec);
    out += " (" + std::to_string(size) + " bytes, modified " +
           std::to_string(ec ? 0 : time.time_since_epoch().count()) + ")";
  }
  return out;
}

StatisticsCache::StatisticsCache(std::filesystem::path dir, std::ostream* log) : dir_(std::move(dir)), log_(log) {
  GANTRY_CHECK(!dir_.empty(), "StatisticsCache: expected a cache directory, found an empty path");
}

std::filesystem::path StatisticsCache::file_for(const RealStatisticsKey& key) const {
  return dir_ / ("real-stats-" + key.hash() + ".safetensors");
}

// The tensor `name` of a cache file, its checksum and key verified; errors name the file.
Tensor StatisticsCache::read_checked(const std::filesystem::path& file, const char* name, DType dtype, int64_t dim,
                                     const RealStatisticsKey& key) const {
  nn::SafetensorsContents c = nn::read_safetensors(file.string());
  const Tensor& t = c.at(name);
  GANTRY_CHECK(t.dtype() == dtype && t.dim() == dim, file.string(), ": expected \"", name, "\" as ",
               to_string(dtype), " with ", dim, " dimensions, found ", t.str());
  GANTRY_CHECK(c.metadata.count("checksum") && c.metadata.at("checksum") == hex(fnv1a(t.raw_data(), t.nbytes())),
               file.string(), ": checksum mismatch (the file is corrupt)");
  GANTRY_CHECK(c.metadata.count("key") && c.metadata.at("key") == key.to_json().dump(), file.string(),
               ": written for other inputs (hash collision or edited file)");
  return t;
}

void StatisticsCache::write_checked(const std::filesystem::path& file, const char* name, const Tensor& t,
                                    const RealStatisticsKey& key, const char* format) const {
  std::filesystem::create_directories(dir_);
  nn::write_safetensors(file.string(), {{name, t}},
                        {{"key", key.to_json().dump()}, {"checksum", hex(fnv1a(t.raw_data(), t.nbytes()))},
                         {"format", format}});
}

void StatisticsCache::report_invalid(const std::filesystem::path& file, const Error& e) const {
  if (log_) *log_ << "real statistics cache: ignoring " << file.string() << " and rebuilding it: " << e.what() << "\n";
}

std::optional<FeatureMoments> StatisticsCache::load(const RealStatisticsKey& key) const {
  const std::filesystem::path file = file_for(key);
  if (!std::filesystem::exists(file)) return std::nullopt;
  try {
    const Tensor bits = read_checked(file, "moments", DType::I64, 1, key);
    std::vector<double> flat(static_cast<size_t>(bits.numel()));
    std::memcpy(flat.data(), bits.data<int64_t>(), bits.nbytes());
    FeatureMoments m = FeatureMoments::deserialize(flat, file.string());
    GANTRY_CHECK(m.count() == key.sample_count, file.string(), ": expected ", key.sample_count, " samples, found ",
                 m.count());
    return m;
  } catch (const Error& e) {
    report_invalid(file, e);
    return std::nullopt;
  }
}

void StatisticsCache::store(const RealStatisticsKey& key, const FeatureMoments& moments) const {
  const std::vector<double> flat = moments.serialize();
  std::vector<int64_t> bits(flat.size());
  std::memcpy(bits.data(), flat.data(), flat.size() * sizeof(double));
  write_checked(file_for(key), "moments", ops::from_vector(bits, Shape{static_cast<int64_t>(bits.size())}), key,
                "gantry feature moments: [dim, count, mean, M2] as f64 bits");
}

FeatureMoments StatisticsCache::get_or_compute(const RealStatisticsKey& key,
                                               const std::function<FeatureMoments()>& compute) const {
  if (std::optional<FeatureMoments> cached = load(key)) return *cached;
  FeatureMoments m = compute();
  store(key, m);
  if (log_) *log_ << "real statistics cached in " << file_for(key).string() << "\n";
  return m;
}

std::filesystem::path StatisticsCache::features_file_for(const RealStatisticsKey& key) const {
  return dir_ / ("real-features-" + key.hash() + ".safetensors");
}

std::optional<Tensor> StatisticsCache::load_features(const RealStatisticsKey& key) const {
  const std::filesystem::path file = features_file_for(key);
  if (!std::filesystem::exists(file)) return std::nullopt;
  try {
    Tensor features = read_checked(file, "features", DType::F32, 2, key);
    GANTRY_CHECK(features.size(0) == key.sample_count, file.string(), ": expected ", key.sample_count,
                 " feature rows, found ", features.size(0));
    return features;
  } catch (const Error& e) {
    report_invalid(file, e);
    return std::nullopt;
  }
}

void StatisticsCache::store_features(const RealStatisticsKey& key, const Tensor& features) const {
  GANTRY_CHECK(features.device().is_cpu() && features.dtype() == DType::F32 && features.dim() == 2 &&
                   features.size(0) == key.sample_count,
               "StatisticsCache::store_features: expected (", key.sample_count, ", D) f32 features on the CPU, found ",
               features.str());
  write_checked(features_file_for(key), "features", features, key, "gantry real features: (N, D) f32");
}

Tensor StatisticsCache::features_or_compute(const RealStatisticsKey& key, const std::function<Tensor()>& compute) const {
  if (std::optional<Tensor> cached = load_features(key)) return *cached;
  Tensor features = compute();
  store_features(key, features);
  if (log_) *log_ << "real features cached in " << features_file_for(key).string() << "\n";
  return features;
}

std::filesystem::path StatisticsCache::class_moments_file_for(const RealStatisticsKey& key) const {
  return dir_ / ("real-class-stats-" + key.hash() + ".safetensors");
}

std::optional<std::vector<FeatureMoments>> StatisticsCache::load_class_moments(const RealStatisticsKey& key,
                                                                               int64_t num_classes) const {
  const std::filesystem::path file = class_moments_file_for(key);
  if (!std::filesystem::exists(file)) return std::nullopt;
  try {
    const Tensor bits = read_checked(file, "class_moments", DType::I64, 2, key);
    GANTRY_CHECK(bits.size(0) == num_classes, file.string(), ": expected ", num_classes, " classes, found ",
                 bits.size(0));
    const auto row = static_cast<size_t>(bits.size(1));
    std::vector<double> flat(row);
    std::vector<FeatureMoments> moments;
    int64_t total = 0;
    for (int64_t c = 0; c < num_classes; ++c) {
      std::memcpy(flat.data(), bits.data<int64_t>() + static_cast<size_t>(c) * row, row * sizeof(double));
      moments.push_back(FeatureMoments::deserialize(flat, file.string() + " class " + std::to_string(c)));
      total += moments.back().count();
    }
    GANTRY_CHECK(total == key.sample_count, file.string(), ": expected ", key.sample_count,
                 " samples over the classes, found ", total);
    return moments;
  } catch (const Error& e) {
    report_invalid(file, e);
    return std::nullopt;
  }
}

void StatisticsCache::store_class_moments(const RealStatisticsKey& key, const std::vector<FeatureMoments>& moments) const {
  GANTRY_CHECK(!moments.empty(), "StatisticsCache::store_class_moments: expected at least one class, found none");
  const size_t row = FeatureMoments::serialized_size(moments[0].dim());
  std::vector<int64_t> bits(row * moments.size());
  for (size_t c = 0; c < moments.size(); ++c) {
    const std::vector<double> flat = moments[c].serialize();
    GANTRY_CHECK(flat.size() == row, "StatisticsCache::store_class_moments: expected every class of dimension ",
                 moments[0].dim(), ", found ", moments[c].dim(), " for class ", c);
    std::memcpy(bits.data() + c * row, flat.data(), row * sizeof(double));
  }
  write_checked(class_moments_file_for(key), "class_moments",
                ops::from_vector(bits, Shape{static_cast<int64_t>(moments.size()), static_cast<int64_t>(row)}), key,
                "gantry feature moments per class: one row [dim, count, mean, M2] of f64 bits per class");
}

std::vector<FeatureMoments> StatisticsCache::class_moments_or_compute(
    const RealStatisticsKey& key, int64_t num_classes, const std::function<std::vector<FeatureMoments>()>& compute) const {
  if (std::optional<std::vector<FeatureMoments>> cached = load_class_moments(key, num_classes)) return *cached;
  std::vector<FeatureMoments> m = compute();
  store_class_moments(key, m);
  if (log_) *log_ << "real class statistics cached in " << class_moments_file_for(key).string() << "\n";
  return m;
}

}  // namespace gantry::metrics
