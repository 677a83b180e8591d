// How a network's gradients are cut into buckets for the all-reduce (Note [gradient buckets]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gantry::distribute {

// PyTorch DDP's default bucket cap.
inline constexpr size_t kDefaultGradientBucketBytes = size_t{25} << 20;

// The cap strategies start with: GANTRY_GRADIENT_BUCKET_MB (MiB, a decimal such as 0.25) when
// set, else kDefaultGradientBucketBytes. A malformed value is an error naming the variable.
size_t default_gradient_bucket_bytes();

// Note [gradient buckets]: parameters are taken in reverse module order (backward finishes the
// last layers first) and packed into one flat buffer in that order; bucket k is a contiguous
// range of it. A bucket takes parameters while its f32 bytes stay within the cap; a parameter
// larger than the cap gets a bucket of its own. The plan depends only on the parameter sizes
// and the cap, so every replica of a network builds the same buckets. Sums are formed per
// element in rank order (Note [collectives]), so the cap changes no result bit.
struct GradientBucket {
  size_t begin = 0, end = 0;   // element range of the flat buffer
  std::vector<size_t> params;  // parameter indices, in descending order
};

struct BucketPlan {
  std::vector<GradientBucket> buckets;  // launch order
  std::vector<size_t> offset;           // per parameter: its first element in the flat buffer
  std::vector<size_t> bucket_of;        // per parameter: its bucket
  size_t numel = 0;                     // elements of the flat buffer
};

// numels: element count of each parameter, in module order. cap_bytes >= 1.
BucketPlan plan_gradient_buckets(const std::vector<int64_t>& numels, size_t cap_bytes);

}  // namespace gantry::distribute
