#include "distribute/gradient_buckets.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/error.h"

namespace gantry::distribute {

size_t default_gradient_bucket_bytes() {
  const char* env = std::getenv("GANTRY_GRADIENT_BUCKET_MB");
  if (env == nullptr) return kDefaultGradientBucketBytes;
  char* end = nullptr;
  const double mib = std::strtod(env, &end);
  GANTRY_CHECK(*env != '\0' && *end == '\0' && std::isfinite(mib) && mib > 0 && mib < 1e6,
               "GANTRY_GRADIENT_BUCKET_MB: expected a positive number of MiB (e.g. 25 or 0.5), found '",
               env, "'");
  return std::max<size_t>(1, static_cast<size_t>(mib * 1024 * 1024));
}

BucketPlan plan_gradient_buckets(const std::vector<int64_t>& numels, size_t cap_bytes) {
  GANTRY_CHECK(cap_bytes >= 1, "gradient buckets: expected a cap of at least 1 byte, found ", cap_bytes);
  BucketPlan plan;
  plan.offset.resize(numels.size());
  plan.bucket_of.resize(numels.size());
  size_t bucket_bytes = 0;
  for (size_t k = numels.size(); k-- > 0;) {
    GANTRY_CHECK(numels[k] >= 0, "gradient buckets: parameter ", k, " has ", numels[k], " elements");
    const size_t n = static_cast<size_t>(numels[k]);
    const size_t bytes = n * sizeof(float);
    if (plan.buckets.empty() || (bucket_bytes > 0 && bucket_bytes + bytes > cap_bytes)) {
      plan.buckets.push_back({plan.numel, plan.numel, {}});
      bucket_bytes = 0;
    }
    GradientBucket& b = plan.buckets.back();
    plan.offset[k] = plan.numel;
    plan.bucket_of[k] = plan.buckets.size() - 1;
    b.params.push_back(k);
    plan.numel += n;
    b.end = plan.numel;
    bucket_bytes += bytes;
  }
  return plan;
}

}  // namespace gantry::distribute
