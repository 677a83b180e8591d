#include "augment/augment.h"

#include "augment/ada_pipeline.h"
#include "augment/diff_augment.h"

namespace gantry::augment {

Tensor augment(const Tensor& x, const AugmentSpec& spec, double p, RngKey key, uint64_t first_example) {
  return spec.pipeline == AugmentPipeline::kAda ? augment_ada(x, spec.ada, p, key, first_example)
                                                : augment(x, spec.policy, p, key, first_example);
}

}  // namespace gantry::augment
