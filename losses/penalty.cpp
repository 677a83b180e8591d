#include "losses/penalty.h"

#include <cmath>

#include "core/autograd/engine.h"

namespace gantry::losses {

namespace {

using namespace gantry::ops;

// d sum(critic(x)) / dx with history (x is a fresh leaf), one row per example. The result list
// is kept per thread, so a steady-state step allocates none.
Tensor input_gradient(const Critic& critic, const Tensor& x_leaf) {
  Tensor out = critic(x_leaf);
  thread_local autograd::TensorList result;
  autograd::grad_into(result, {sum(out)}, {x_leaf}, {}, /*retain_graph=*/true,
                      /*create_graph=*/true);
  Tensor g = std::move(result[0]);
  result[0] = Tensor();
  return g;
}

Tensor fresh_leaf(const Tensor& x) {
  Tensor leaf = x.detach();
  leaf.set_requires_grad(true);
  return leaf;
}

class WganGp : public Penalty {
 public:
  WganGp(nn::ValueSchedule weight, float target, bool one_sided)
      : weight_(weight), target_(target), one_sided_(one_sided) {
    GANTRY_CHECK(std::isfinite(weight.lowest()) && weight.lowest() >= 0.0, "wgan_gp: expected a weight >= 0, found ", weight.lowest());
    GANTRY_CHECK(target > 0.f, "wgan_gp: expected a positive target, found ", target);
  }
  std::string name() const override { return "gradient_penalty"; }
  Tensor operator()(const Critic& critic, const Tensor& real, const Tensor& fake,
                    const LossContext& ctx) const override {
    GANTRY_CHECK(real.shape() == fake.shape(), "wgan_gp: real ", real.shape().str(), " and fake ",
                 fake.shape().str(), " differ in shape");
    const int64_t n = real.size(0);
    Shape per_example{n};
    for (int d = 1; d < real.dim(); ++d) per_example.push_back(1);
    Tensor alpha = reshape(rand(Shape{n}, ctx.key, ctx.first_example, real.device()), per_example);
    Tensor x_hat = fresh_leaf(add(fake, mul(alpha, sub(real, fake))));
    Tensor norm = norm_per_example(input_gradient(critic, x_hat), 1e-12f);
    Tensor gap = add(norm, -target_);
    if (one_sided_) gap = relu(gap);
    const float weight = static_cast<float>(weight_.at(ctx.images_seen));
    return mul(reduce_examples(square(gap), ctx), weight / (target_ * target_));
  }

 private:
  nn::ValueSchedule weight_;
  float target_;
  bool one_sided_;
};

class R1 : public Penalty {
 public:
  R1(nn::ValueSchedule gamma, int interval) : gamma_(gamma), interval_(interval) {
    GANTRY_CHECK(std::isfinite(gamma.lowest()) && gamma.lowest() >= 0.0, "r1: expected a gamma >= 0, found ", gamma.lowest());
    GANTRY_CHECK(interval >= 1, "r1: expected interval >= 1, found ", interval);
  }
  std::string name() const override { return "r1_penalty"; }
  Tensor operator()(const Critic& critic, const Tensor& real, const Tensor&,
                    const LossContext& ctx) const override {
    if (ctx.step % interval_ != 0) return {};
    const float gamma = static_cast<float>(gamma_.at(ctx.images_seen));
    return zero_centred_gradient_penalty(critic, real, gamma * static_cast<float>(interval_), ctx);
  }

 private:
  nn::ValueSchedule gamma_;
  int interval_;
};

}  // namespace

std::unique_ptr<Penalty> make_wgan_gp(nn::ValueSchedule weight, float target, bool one_sided) {
  return std::make_unique<WganGp>(weight, target, one_sided);
}
std::unique_ptr<Penalty> make_wgan_gp(float weight, float target, bool one_sided) {
  return make_wgan_gp(nn::ValueSchedule(weight), target, one_sided);
}

std::unique_ptr<Penalty> make_r1(nn::ValueSchedule gamma, int interval) {
  return std::make_unique<R1>(gamma, interval);
}
std::unique_ptr<Penalty> make_r1(float gamma, int interval) { return make_r1(nn::ValueSchedule(gamma), interval); }

Tensor zero_centred_gradient_penalty(const Critic& critic, const Tensor& x, float gamma, const LossContext& ctx) {
  Tensor g = input_gradient(critic, fresh_leaf(x));
  static_assert(kMaxRank == 6, "kNonBatchDims lists every dimension but the batch");
  static constexpr int kNonBatchDims[kMaxRank - 1] = {1, 2, 3, 4, 5};  // no vector per step
  ArrayRef<int> dims(kNonBatchDims, static_cast<size_t>(g.dim() - 1));
  return mul(reduce_examples(sum(square(g), dims), ctx), 0.5f * gamma);
}

Tensor consistency_penalty(const Tensor& a, const Tensor& b, float weight, const LossContext& ctx) {
  GANTRY_CHECK(a.shape() == b.shape(), "consistency_penalty: expected two tensors of one shape, found ", a.shape().str(),
               " and ", b.shape().str());
  Tensor squared = square(sub(a, b));
  if (squared.dim() > 1) squared = sum(flatten(squared), {1});  // (n,)
  return mul(reduce_examples(squared, ctx), weight);
}

Tensor auxiliary_classification_loss(const Tensor& class_logits, const Tensor& labels,
                                     float weight, const LossContext& ctx) {
  return mul(reduce_examples(cross_entropy(class_logits, labels, Reduction::None), ctx), weight);
}

}  // namespace gantry::losses
