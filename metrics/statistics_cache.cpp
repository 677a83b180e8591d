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

std::optional<FeatureMoments> StatisticsCache::load(const RealStatisticsKey& key) const {
  const std::filesystem::path file = file_for(key);
  if (!std::filesystem::exists(file)) return std::nullopt;
  try {
    nn::SafetensorsContents c = nn::read_safetensors(file.string());
    const Tensor& bits = c.at("moments");
    GANTRY_CHECK(bits.dtype() == DType::I64 && bits.dim() == 1, file.string(), ": expected \"moments\" as I64 (S,), found ",
                 bits.str());
    GANTRY_CHECK(c.metadata.count("checksum") && c.metadata.at("checksum") == hex(fnv1a(bits.data<int64_t>(), bits.nbytes())),
                 file.string(), ": checksum mismatch (the file is corrupt)");
    GANTRY_CHECK(c.metadata.count("key") && c.metadata.at("key") == key.to_json().dump(), file.string(),
                 ": written for other inputs (hash collision or edited file)");
    std::vector<double> flat(static_cast<size_t>(bits.numel()));
    std::memcpy(flat.data(), bits.data<int64_t>(), bits.nbytes());
    FeatureMoments m = FeatureMoments::deserialize(flat, file.string());
    GANTRY_CHECK(m.count() == key.sample_count, file.string(), ": expected ", key.sample_count, " samples, found ",
                 m.count());
    return m;
  } catch (const Error& e) {
    if (log_) *log_ << "real statistics cache: ignoring " << file.string() << " and rebuilding it: " << e.what() << "\n";
    return std::nullopt;
  }
}

void StatisticsCache::store(const RealStatisticsKey& key, const FeatureMoments& moments) const {
  std::filesystem::create_directories(dir_);
  const std::vector<double> flat = moments.serialize();
  std::vector<int64_t> bits(flat.size());
  std::memcpy(bits.data(), flat.data(), flat.size() * sizeof(double));
  Tensor t = ops::from_vector(bits, Shape{static_cast<int64_t>(bits.size())});
  nn::write_safetensors(file_for(key).string(), {{"moments", t}},
                        {{"key", key.to_json().dump()},
                         {"checksum", hex(fnv1a(bits.data(), bits.size() * sizeof(int64_t)))},
                         {"format", "gantry feature moments: [dim, count, mean, M2] as f64 bits"}});
}

FeatureMoments StatisticsCache::get_or_compute(const RealStatisticsKey& key,
                                               const std::function<FeatureMoments()>& compute) const {
  if (std::optional<FeatureMoments> cached = load(key)) return *cached;
  FeatureMoments m = compute();
  store(key, m);
  if (log_) *log_ << "real statistics cached in " << file_for(key).string() << "\n";
  return m;
}

}  // namespace gantry::metrics
