// Real-data statistics cache: the feature moments of a real data set are computed once per
// (dataset identity, transforms, feature network incl. its weights hash and resize, sample
// count) and stored under a file name holding a hash of those inputs, in model_dir or a user
// cache dir, so runs and resumes reuse them.
//
// The real features themselves (for KID, precision/recall and density/coverage, which need every
// sample) are cached the same way in real-features-<hash>.safetensors (one F32 tensor "features",
// N x D), and the moments of each class (intra-class FID) in real-class-stats-<hash>.safetensors
// (one I64 tensor "class_moments", one row of serialized moments per class).
//
// A cache file is a safetensors file with one tensor "moments" (FeatureMoments::serialize's
// doubles, their bits stored as I64 since safetensors readers here know no F64) and metadata
// "key" (the inputs as JSON) and "checksum" (FNV-1a 64 of the tensor's bytes). A file that does
// not parse, whose checksum or key differs, is reported and rebuilt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/tensor.h"
#include "metrics/feature_moments.h"

namespace gantry::metrics {

struct RealStatisticsKey {
  std::string dataset;     // e.g. the data files with their sizes and modification times
  std::string transforms;  // what is applied to the images (pipeline description)
  std::string network;     // FeatureNetwork::identity()
  int64_t sample_count = 0;

  nlohmann::json to_json() const;
  std::string hash() const;  // 16 hex digits (FNV-1a 64 of to_json().dump())
};

// "path (N bytes, modified T)" for each existing path, else the path alone: a data set's
// identity that changes when a file is replaced.
std::string describe_files(const std::vector<std::string>& paths);

class StatisticsCache {
 public:
  explicit StatisticsCache(std::filesystem::path dir, std::ostream* log = nullptr);

  std::filesystem::path file_for(const RealStatisticsKey& key) const;  // <dir>/real-stats-<hash>.safetensors
  // The cached moments, or nothing when absent or invalid (an invalid file is reported on the log).
  std::optional<FeatureMoments> load(const RealStatisticsKey& key) const;
  void store(const RealStatisticsKey& key, const FeatureMoments& moments) const;  // atomic
  // load, else compute and store.
  FeatureMoments get_or_compute(const RealStatisticsKey& key, const std::function<FeatureMoments()>& compute) const;

  // The real features themselves, for KID and precision/recall (N x D f32: 80 MB for 10k
  // Inception features): <dir>/real-features-<hash>.safetensors, checked as the moments are.
  std::filesystem::path features_file_for(const RealStatisticsKey& key) const;
  std::optional<Tensor> load_features(const RealStatisticsKey& key) const;
  void store_features(const RealStatisticsKey& key, const Tensor& features) const;  // atomic
  Tensor features_or_compute(const RealStatisticsKey& key, const std::function<Tensor()>& compute) const;

  // The moments of each class of the same real images (intra-class FID; the class counts sum to
  // the key's sample_count): <dir>/real-class-stats-<hash>.safetensors, checked as the moments are.
  std::filesystem::path class_moments_file_for(const RealStatisticsKey& key) const;
  std::optional<std::vector<FeatureMoments>> load_class_moments(const RealStatisticsKey& key, int64_t num_classes) const;
  void store_class_moments(const RealStatisticsKey& key, const std::vector<FeatureMoments>& moments) const;  // atomic
  std::vector<FeatureMoments> class_moments_or_compute(const RealStatisticsKey& key, int64_t num_classes,
                                                       const std::function<std::vector<FeatureMoments>()>& compute) const;

 private:
  Tensor read_checked(const std::filesystem::path& file, const char* name, DType dtype, int64_t dim,
                      const RealStatisticsKey& key) const;
  void write_checked(const std::filesystem::path& file, const char* name, const Tensor& t, const RealStatisticsKey& key,
                     const char* format) const;
  void report_invalid(const std::filesystem::path& file, const Error& e) const;

  std::filesystem::path dir_;
  std::ostream* log_;
};

}  // namespace gantry::metrics
