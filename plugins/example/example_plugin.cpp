// An example Gantry plugin (docs/plugins.md): an MLP generator, an MLP critic, a loss and an
// objective term, registered by name when gan_train loads the library from the config's
// "plugins" list.
//
//   "generator":     {"type": "example_mlp", "hidden": 256}
//   "discriminator": {"type": "example_mlp_critic", "hidden": 256, "leaky_slope": 0.2, "pool": 2}
//   "loss":          {"type": "example_softplus_hinge", "margin": 1.0,
//                     "terms": [{"type": "example_drift", "epsilon": 0.001}]}
//
// The library links no Gantry library: every Gantry symbol it uses (nn::Linear, ops::softplus,
// the registries, ...) resolves against the gan_train executable that loads it. The critic's
// ops::avg_pool2d is one that gan_train itself never calls: it is there because the apps link
// every Gantry object (apps/CMakeLists.txt), which tests/e2e/test_plugin.cpp relies on.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "gan/config/plugin_api.h"
#include "gan/networks/network_registry.h"
#include "gan/objective/term_registry.h"
#include "gan/step/term_inputs.h"
#include "losses/registry.h"
#include "nn/activation.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/reshape.h"
#include "nn/sequential.h"

namespace example {

using gantry::JsonReader;
using gantry::RngKey;
using gantry::Tensor;
using gantry::gan::BuiltNetwork;
using gantry::gan::NetworkContext;
namespace nn = gantry::nn;
namespace ops = gantry::ops;

int64_t image_elements(const NetworkContext& ctx, const JsonReader& r) {
  GANTRY_CHECK(ctx.image_shape.size() == 3, r.path(), ": expected images (C, H, W), found ",
               ctx.image_shape.size(), " dims");
  GANTRY_CHECK(ctx.num_classes == 0, r.path(), ": this network is unconditional; set "
               "data.use_labels to false");
  return ctx.image_shape[0] * ctx.image_shape[1] * ctx.image_shape[2];
}

int64_t positive(JsonReader& r, const std::string& key, int64_t fallback) {
  const int64_t v = r.get_int(key, fallback);
  GANTRY_CHECK(v > 0, r.key_path(key), ": expected a positive integer, found ", v);
  return v;
}

// Noise (n, noise_dim) -> Linear -> ReLU -> Linear -> Tanh -> images (n, C, H, W).
BuiltNetwork mlp_generator(JsonReader& r, const NetworkContext& ctx) {
  const int64_t hidden = positive(r, "hidden", 256);
  const int64_t pixels = image_elements(ctx, r);
  const int64_t nz = ctx.noise_dim;
  const std::vector<int64_t> image = ctx.image_shape;
  BuiltNetwork b;
  b.noise_shape = gantry::Shape{nz};
  b.fn = [=](gantry::Device, RngKey key) -> nn::ModulePtr {
    auto net = std::make_shared<nn::Sequential>();
    net->push_back(std::make_shared<nn::Linear>(nz, hidden));
    net->push_back(std::make_shared<nn::ReLU>());
    net->push_back(std::make_shared<nn::Linear>(hidden, pixels));
    net->push_back(std::make_shared<nn::Tanh>());
    net->push_back(std::make_shared<nn::Unflatten>(1, image));
    nn::init::apply(*net, "default", key);  // PyTorch's defaults, drawn from this replica's key
    return net;
  };
  return b;
}

// avg_pool2d(pool) -> flatten -> Linear -> LeakyReLU -> Linear: one logit per example.
// A hand-written module: children live in the module registry and forward reads them by
// name, so Cloneable's copy gives a correct clone() and to() (nn/module.h, Note [module
// registry]).
class MlpCritic : public nn::Cloneable<MlpCritic> {
 public:
  MlpCritic(int64_t in, int64_t hidden, double slope, int pool)
      : Cloneable("ExampleMlpCritic"), slope_(slope), pool_(pool) {
    register_module("fc1", std::make_shared<nn::Linear>(in, hidden));
    register_module("fc2", std::make_shared<nn::Linear>(hidden, 1));
  }
  std::string extra_repr() const override {
    return "pool=" + std::to_string(pool_) + ", leaky_slope=" + std::to_string(slope_);
  }

 protected:
  Tensor forward_impl(const Tensor& x) override {  // (n, C, H, W) -> (n, 1)
    Tensor pooled = pool_ > 1 ? ops::avg_pool2d(x, pool_, pool_) : x;
    Tensor h = child("fc1")->forward(ops::flatten(pooled, 1));
    return child("fc2")->forward(ops::leaky_relu(h, static_cast<float>(slope_)));
  }

 private:
  double slope_;
  int pool_;
};

BuiltNetwork mlp_critic(JsonReader& r, const NetworkContext& ctx) {
  const int64_t hidden = positive(r, "hidden", 256);
  const double slope = r.get_number("leaky_slope", 0.2);
  GANTRY_CHECK(slope >= 0.0 && slope < 1.0, r.key_path("leaky_slope"), ": expected a value in "
               "[0, 1), found ", slope);
  const int64_t pool = positive(r, "pool", 2);
  GANTRY_CHECK(!ctx.auxiliary_classifier, r.path(), ": no auxiliary classifier output (ACGAN)");
  const int64_t pixels = image_elements(ctx, r);
  const int64_t h = ctx.image_shape[1], w = ctx.image_shape[2];
  GANTRY_CHECK(h % pool == 0 && w % pool == 0, r.key_path("pool"), ": expected a divisor of the image "
               "size ", h, " x ", w, ", found ", pool);
  const int64_t inputs = pixels / (pool * pool);
  BuiltNetwork b;
  b.fn = [=](gantry::Device, RngKey key) -> nn::ModulePtr {
    auto net = std::make_shared<MlpCritic>(inputs, hidden, slope, static_cast<int>(pool));
    nn::init::apply(*net, "default", key);
    return net;
  };
  return b;
}

// A smooth hinge: D minimises softplus(m - r) + softplus(m + f), G minimises -f (as hinge).
class SoftplusHinge : public gantry::losses::AdversarialLoss {
 public:
  explicit SoftplusHinge(float margin) : margin_(margin) {}
  std::string name() const override { return "example_softplus_hinge"; }
  Tensor discriminator_loss(const Tensor& r, const Tensor& f,
                            const gantry::losses::LossContext& ctx) const override {
    using gantry::losses::reduce_examples;
    return ops::add(reduce_examples(ops::softplus(ops::rsub(flat(r), margin_)), ctx),
                    reduce_examples(ops::softplus(ops::add(flat(f), margin_)), ctx));
  }
  Tensor generator_loss(const Tensor& f, const Tensor&, const gantry::losses::LossContext& ctx) const override {
    return ops::neg(gantry::losses::reduce_examples(flat(f), ctx));
  }

 private:
  static Tensor flat(const Tensor& logits) {  // (n,) or (n, 1) -> (n,)
    GANTRY_CHECK(logits.dim() == 1 || (logits.dim() == 2 && logits.size(1) == 1),
                 "example_softplus_hinge: expected logits (n,) or (n, 1), found ", logits.shape().str());
    return ops::reshape(logits, gantry::Shape{logits.size(0)});
  }
  float margin_;
};

// ProGAN's drift penalty (Karras et al. 2018, appendix A.1): epsilon x D(real)^2 keeps the
// critic's outputs near zero, a term of D's objective. It also reports the mean real logit, a
// statistic that appears in the log, metrics.jsonl and TensorBoard as "example/real_logit".
class DriftTerm : public gantry::gan::ObjectiveTerm {
 public:
  explicit DriftTerm(float epsilon) : epsilon_(epsilon) {}
  std::string name() const override { return "drift"; }
  gantry::gan::Network network() const override { return gantry::gan::Network::Discriminator; }
  std::vector<gantry::gan::StatDeclaration> statistics() const override {
    return {{"example/real_logit", gantry::gan::StatReduce::MeanOfElements}};
  }
  Tensor loss(gantry::gan::TermInputs& in) const override {
    Tensor real = in.real_logits();  // D(augment(real)), shared with the other terms
    in.report("example/real_logit", real);
    return ops::mul(gantry::losses::reduce_examples(ops::square(real), in.loss_context()), epsilon_);
  }

 private:
  float epsilon_;
};

}  // namespace example

GANTRY_PLUGIN() {
  gantry::gan::register_generator("example_mlp", example::mlp_generator);
  gantry::gan::register_discriminator("example_mlp_critic", example::mlp_critic);
  gantry::losses::register_adversarial_loss("example_softplus_hinge", [](gantry::JsonReader& r) {
    const double margin = r.get_number("margin", 1.0);
    GANTRY_CHECK(margin >= 0.0, r.key_path("margin"), ": expected a non-negative number, found ", margin);
    return std::make_unique<example::SoftplusHinge>(static_cast<float>(margin));
  });
  gantry::gan::register_objective_term("example_drift", [](gantry::JsonReader& r) -> gantry::gan::TermPtr {
    const double epsilon = r.get_number("epsilon", 0.001);
    GANTRY_CHECK(epsilon >= 0.0, r.key_path("epsilon"), ": expected a non-negative number, found ", epsilon);
    return std::make_shared<example::DriftTerm>(static_cast<float>(epsilon));
  });
}
