#include "support/sharded_fid.h"

#include <fstream>
#include <iomanip>

#include "base/error.h"
#include "core/ops/ops.h"
#include "metrics/frechet_distance.h"
#include "metrics/generated_features.h"
#include "metrics/sequential_feature_network.h"
#include "support/tiny_gan.h"

namespace gantry::testing {

ShardedFid sharded_fid(std::unique_ptr<distribute::Strategy> strategy, const std::string& network) {
  nlohmann::json spec = {{"file", network}};
  const std::unique_ptr<metrics::FeatureNetwork> net = metrics::make_feature_network(spec, "network");
  gan::GanEstimator estimator(tiny_dcgan(true), std::move(strategy), 7);
  std::vector<std::unique_ptr<metrics::FeatureNetwork>> nets;
  for (const Device& d : estimator.strategy().local_devices()) nets.push_back(net->clone_to(d));
  metrics::FeatureMoments real;
  real.add(net->extract(ops::add(ops::mul(ops::rand(Shape{200, 1, 8, 8}, RngKey{11, 3}), 2.0f), -1.0f)).features);
  metrics::GeneratedSetOptions options;
  options.count = 96;
  options.batch_size = 12;
  options.seed = 4;
  ShardedFid out;
  out.fid_from_moments = metrics::frechet_distance(real, metrics::generated_moments(estimator, nets, options)).value;
  const metrics::FeatureBatch fake = metrics::gathered_generated_features(estimator, nets, options);
  metrics::FeatureMoments fake_moments;
  fake_moments.add(fake.features);
  out.fid_from_features = metrics::frechet_distance(real, fake_moments).value;
  out.features = fake.features.to_vector();
  return out;
}

void write_sharded_fid(const ShardedFid& result, const std::string& path) {
  std::ofstream f(path);
  f << std::setprecision(17) << result.fid_from_moments << " " << result.fid_from_features << " "
    << result.features.size() << "\n";
  f << std::setprecision(9);
  for (float v : result.features) f << v << "\n";
  GANTRY_CHECK(f.good(), path, ": cannot write");
}

ShardedFid read_sharded_fid(const std::string& path) {
  std::ifstream f(path);
  ShardedFid r;
  size_t n = 0;
  f >> r.fid_from_moments >> r.fid_from_features >> n;
  r.features.resize(n);
  for (float& v : r.features) f >> v;
  GANTRY_CHECK(f.good() || (f.eof() && n == 0), path, ": expected ", n, " features after two FIDs");
  return r;
}

}  // namespace gantry::testing
