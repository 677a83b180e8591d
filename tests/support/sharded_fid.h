// FID of the tiny DCGAN's generated set against uniform-noise images, evaluated on whatever
// strategy is given (one device, in-process replicas, or workers under mpirun): through the
// gathered moments (FID alone) and through the all-gathered features (KID, PR and IS's path).
// Both sides of a multi-worker test run the same code, so their results must agree.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distribute/strategy.h"

namespace gantry::testing {

struct ShardedFid {
  double fid_from_moments = 0;
  double fid_from_features = 0;
  std::vector<float> features;  // (count, D) row-major, the all-gathered set
};

// 96 images in batches of 12 (noise seed 4) through the feature network described in the file
// `network` (metrics::make_feature_network); the real set is 200 uniform-noise images.
ShardedFid sharded_fid(std::unique_ptr<distribute::Strategy> strategy, const std::string& network);

void write_sharded_fid(const ShardedFid& result, const std::string& path);
ShardedFid read_sharded_fid(const std::string& path);

}  // namespace gantry::testing
