#include "gan/objective/bcr_term.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "augment/augment.h"
#include "core/ops/ops.h"
#include "gan/step/multi_level.h"
#include "gan/step/network_calls.h"
#include "gan/step/term_inputs.h"

namespace gantry::gan {

namespace {

class BcrTerm : public ObjectiveTerm {
 public:
  BcrTerm(float lambda_real, float lambda_fake, const augment::AugmentPolicy& policy)
      : lambda_real_(lambda_real), lambda_fake_(lambda_fake) {
    transform_.policy = policy;
    transform_.initial_p = 1.0;
  }
  std::string name() const override { return "bcr_penalty"; }
  Network network() const override { return Network::Discriminator; }
  Tensor loss(TermInputs& in) const override {
    const ShardInput& shard = in.shard();
    Tensor total;
    // the reals first: the order D saw the batches in (TermInputs::real_output)
    if (lambda_real_ > 0.f) {
      Tensor seen = in.real_logits();
      Tensor transformed = logits_transformed(in, in.augmented(shard.real, kAugmentReal), kConsistencyReal, shard.labels);
      total = losses::consistency_penalty(seen, transformed, lambda_real_, in.loss_context());
    }
    if (lambda_fake_ > 0.f) {
      Tensor seen = in.fake_logits();
      Tensor transformed =
          logits_transformed(in, in.augmented(in.fake_images(), kAugmentFake), kConsistencyFake, in.fake().labels);
      Tensor fake = losses::consistency_penalty(seen, transformed, lambda_fake_, in.loss_context());
      total = total.defined() ? ops::add(total, fake) : fake;
    }
    return total;
  }

 private:
  // D's adversarial logits on T(images), T keyed by the global example index in `purpose`'s
  // stream, each level alike (Note [multi-level supervision])
  Tensor logits_transformed(TermInputs& in, const Tensor& images, uint64_t purpose, const Tensor& labels) const {
    const auto levels = std::max<int64_t>(1, static_cast<int64_t>(in.spec().level_noise.size()));
    Tensor t = augmented_levels(images, levels, in.shard().real.size(1), transform_, transform_.initial_p,
                                key_for(in.keys(), purpose), static_cast<uint64_t>(in.shard().first_example));
    return adversarial_logits(in.spec(), run_discriminator(in.spec(), in.discriminator(), t, labels));
  }

  float lambda_real_, lambda_fake_;
  augment::AugmentSpec transform_;
};

}  // namespace

TermPtr make_bcr_term(float lambda_real, float lambda_fake, const augment::AugmentPolicy& policy) {
  GANTRY_CHECK(std::isfinite(lambda_real) && lambda_real >= 0.f, "bcr: expected a lambda_real >= 0, found ", lambda_real);
  GANTRY_CHECK(std::isfinite(lambda_fake) && lambda_fake >= 0.f, "bcr: expected a lambda_fake >= 0, found ", lambda_fake);
  GANTRY_CHECK(policy.any(), "bcr: expected a policy with at least one transform, found none");
  return std::make_shared<BcrTerm>(lambda_real, lambda_fake, policy);
}

}  // namespace gantry::gan
