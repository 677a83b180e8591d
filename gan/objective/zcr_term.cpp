#include "gan/objective/zcr_term.h"

#include <cmath>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "gan/networks/style_generator.h"
#include "gan/step/network_calls.h"
#include "gan/step/term_inputs.h"

namespace gantry::gan {

namespace {

// G(z + dz) for the fake batch's z and labels, under the current grad mode.
Tensor perturbed_fakes(TermInputs& in, float sigma) {
  const GanSpec& spec = in.spec();
  Replica& replica = in.replica();
  const FakeBatch& fake = in.fake();
  const int64_t first = in.shard().first_example;
  const uint64_t offset = static_cast<uint64_t>(first * spec.noise_shape.numel());
  Tensor dz = ops::randn(fake.noise.shape(), key_for(in.keys(), kLatentConsistency), offset, fake.noise.device());
  Tensor z = ops::add(fake.noise, ops::mul(dz, sigma));
  nn::Module& g = *replica.generator.module;
  g.set_rng(key_for(in.keys(), kDropoutG), static_cast<uint64_t>(first));  // as generate() keys G(z)
  if (replica.style) replica.style->set_track_w_avg(false);  // this forward moves no w_avg: Note [w average]
  return run_generator(spec, g, z, fake.labels);
}

class ZcrTerm : public ObjectiveTerm {
 public:
  ZcrTerm(float lambda, float sigma, Network network) : lambda_(lambda), sigma_(sigma), network_(network) {}
  std::string name() const override { return network_ == Network::Discriminator ? "zcr_penalty" : "zcr_generator"; }
  Network network() const override { return network_; }
  Tensor loss(TermInputs& in) const override {
    if (network_ == Network::Generator)
      return losses::consistency_penalty(in.fake_images(), perturbed_fakes(in, sigma_), -lambda_, in.loss_context());
    Tensor seen = in.fake_logits();
    Tensor moved;
    {
      NoGradGuard no_grad;  // D's update: G is a constant
      moved = perturbed_fakes(in, sigma_);
    }
    return losses::consistency_penalty(seen, in.fake_critic()(moved), lambda_, in.loss_context());
  }

 private:
  float lambda_, sigma_;
  Network network_;
};

TermPtr make_zcr(float lambda, float sigma, Network network, const char* lambda_name) {
  GANTRY_CHECK(std::isfinite(lambda) && lambda >= 0.f, "zcr: expected a ", lambda_name, " >= 0, found ", lambda);
  GANTRY_CHECK(std::isfinite(sigma) && sigma > 0.f, "zcr: expected a sigma_noise > 0, found ", sigma);
  return std::make_shared<ZcrTerm>(lambda, sigma, network);
}

}  // namespace

TermPtr make_zcr_term(float lambda_dis, float sigma_noise) {
  return make_zcr(lambda_dis, sigma_noise, Network::Discriminator, "lambda_dis");
}
TermPtr make_zcr_generator_term(float lambda_gen, float sigma_noise) {
  return make_zcr(lambda_gen, sigma_noise, Network::Generator, "lambda_gen");
}

}  // namespace gantry::gan
