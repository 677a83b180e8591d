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

// Each factory's keys, declared (core/config_key.h): the reader writes their defaults back and
// checks them, and a key of the object that none declares is an error naming it.
constexpr gantry::ConfigKey kHidden = gantry::int_key("hidden", "256", "the hidden layer's width").at_least(1);
constexpr gantry::ConfigKey kGeneratorKeys[] = {kHidden};
constexpr gantry::ConfigKey kCriticKeys[] = {
    kHidden,
    gantry::number_key("leaky_slope", "0.2", "the leaky ReLU's negative slope").at_least(0).below(1),
    gantry::int_key("pool", "2", "average pooling of the images first (1: none)").at_least(1),
};
constexpr gantry::ConfigKey kLossKeys[] = {
    gantry::number_key("margin", "1.0", "the hinge's margin").at_least(0).expecting("a non-negative number"),
};
constexpr gantry::ConfigKey kDriftKeys[] = {
    gantry::number_key("epsilon", "0.001", "the drift penalty's weight").at_least(0).expecting("a non-negative number"),
};

// Noise (n, noise_dim) -> Linear -> ReLU -> Linear -> Tanh -> images (n, C, H, W).
BuiltNetwork mlp_generator(JsonReader& r, const NetworkContext& ctx) {
  const int64_t hidden = r.read_int("hidden");
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
  const int64_t hidden = r.read_int("hidden");
  const double slope = r.read_number("leaky_slope");
  const int64_t pool = r.read_int("pool");
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
  gantry::gan::register_generator("example_mlp", example::kGeneratorKeys, example::mlp_generator);
  gantry::gan::register_discriminator("example_mlp_critic", example::kCriticKeys, example::mlp_critic);
  gantry::losses::register_adversarial_loss(
      "example_softplus_hinge",
      [](gantry::JsonReader& r) {
        return std::make_unique<example::SoftplusHinge>(static_cast<float>(r.read_number("margin")));
      },
      example::kLossKeys);
  gantry::gan::register_objective_term(
      "example_drift", example::kDriftKeys, [](gantry::JsonReader& r) -> gantry::gan::TermPtr {
        return std::make_shared<example::DriftTerm>(static_cast<float>(r.read_number("epsilon")));
      });
}
