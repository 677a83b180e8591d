#include "support/tiny_gan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gan/objective/adversarial_term.h"
#include "losses/adversarial_loss.h"
#include "nn/activation.h"
#include "nn/adam.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/reshape.h"
#include "nn/sequential.h"

namespace gantry::testing {

std::shared_ptr<distribute::Strategy> cpu_strategy(int replicas) {
  if (replicas == 1) return distribute::make_one_device_strategy(Device::cpu());
  std::vector<Device> d;
  for (int i = 0; i < replicas; ++i) d.push_back(Device::cpu(i));
  return distribute::make_mirrored_strategy(d);
}

gan::GanSpec tiny_dcgan(bool batch_norm, int64_t d_channels) {
  using nn::ConvOptions;
  gan::GanSpec spec;
  spec.noise_shape = Shape{8, 1, 1};
  spec.generator_fn = [batch_norm](Device, RngKey key) {
    auto g = std::make_shared<nn::Sequential>();
    g->push_back(std::make_shared<nn::ConvTranspose2d>(8, 8, 4, ConvOptions{1, 0, 1, 0, false}, RngKey{key.seed, 1}));
    if (batch_norm) g->push_back(std::make_shared<nn::BatchNorm2d>(8));
    g->push_back(std::make_shared<nn::ReLU>());
    g->push_back(std::make_shared<nn::ConvTranspose2d>(8, 1, 4, ConvOptions{2, 1, 1, 0, false}, RngKey{key.seed, 2}));
    g->push_back(std::make_shared<nn::Tanh>());
    return std::static_pointer_cast<nn::Module>(g);
  };
  spec.discriminator_fn = [batch_norm, d_channels](Device, RngKey key) {
    auto d = std::make_shared<nn::Sequential>();
    d->push_back(std::make_shared<nn::Conv2d>(1, d_channels, 4, ConvOptions{2, 1, 1, 0, false}, RngKey{key.seed, 3}));
    d->push_back(std::make_shared<nn::LeakyReLU>(0.2));
    d->push_back(std::make_shared<nn::Conv2d>(d_channels, 16, 4, ConvOptions{2, 1, 1, 0, false}, RngKey{key.seed, 4}));
    if (batch_norm) d->push_back(std::make_shared<nn::BatchNorm2d>(16));
    d->push_back(std::make_shared<nn::LeakyReLU>(0.2));
    d->push_back(std::make_shared<nn::Conv2d>(16, 1, 2, ConvOptions{1, 0, 1, 0, false}, RngKey{key.seed, 5}));
    d->push_back(std::make_shared<nn::Flatten>());
    return std::static_pointer_cast<nn::Module>(d);
  };
  spec.terms = gan::make_adversarial_terms(losses::make_non_saturating());
  auto adam = [](const std::vector<Tensor>& params) -> std::unique_ptr<nn::Optimizer> {
    nn::AdamOptions o;
    o.lr = 2e-3;
    o.beta1 = 0.5;
    return std::make_unique<nn::Adam>(params, o);
  };
  spec.generator_optimizer = adam;
  spec.discriminator_optimizer = adam;
  return spec;
}

data::Batch blob_batch(int64_t batch, uint64_t k) {
  data::Batch b;
  Tensor noise = ops::rand({batch, 1, 8, 8}, RngKey{77, k});
  b.images = ops::tanh(ops::mul(ops::add(noise, -0.5f), 3.f)).detach();
  for (int64_t i = 0; i < batch; ++i) {
    b.indices.push_back(i);
    b.epochs.push_back(0);
  }
  return b;
}

gan::BatchSource blobs(int64_t batch, int64_t first) {
  auto next = std::make_shared<uint64_t>(static_cast<uint64_t>(first));
  return [batch, next] { return blob_batch(batch, (*next)++); };
}

std::vector<float> flat_state(nn::Module& module) {
  std::vector<float> out;
  for (auto& [name, t] : module.state_dict())
    if (t.dtype() == DType::F32) {
      std::vector<float> v = t.to_vector();
      out.insert(out.end(), v.begin(), v.end());
    }
  return out;
}

std::vector<float> flat_gan_state(gan::GanEstimator& estimator) {
  std::vector<float> out = flat_state(*estimator.replica(0).generator.module);
  std::vector<float> d = flat_state(*estimator.replica(0).discriminator.module);
  out.insert(out.end(), d.begin(), d.end());
  return out;
}

std::vector<float> train_tiny_dcgan(std::shared_ptr<distribute::Strategy> strategy, bool batch_norm,
                                    bool sync_batch_norm, int64_t batch, int64_t steps) {
  gan::GanSpec spec = tiny_dcgan(batch_norm);
  spec.sync_batch_norm = sync_batch_norm;
  gan::GanEstimator estimator(std::move(spec), std::move(strategy), 7);
  estimator.train(blobs(batch), steps);
  return flat_gan_state(estimator);
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (1e-3 + std::abs(double(b[i]))));
  return worst;
}

}  // namespace gantry::testing
